// swift-tools-version:6.0
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "HeraldPostgres",
    platforms: [
        .macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2),
    ],
    products: [
        .library(name: "HeraldPostgres", targets: ["HeraldPostgres"])
    ],
    dependencies: [
        .package(name: "Herald", path: "../.."),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.5.3"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.0.4"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.6.0"),
    ],
    targets: [
        .target(
            name: "HeraldPostgres",
            dependencies: [
                .product(name: "Herald", package: "Herald"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        // The README's usage example, compiled as written.
        .executableTarget(
            name: "herald-postgres-example",
            dependencies: [
                "HeraldPostgres",
                .product(name: "Herald", package: "Herald"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            path: "Examples/TwoTerminals",
            swiftSettings: swiftSettings
        ),
        // A hub in a process of its own, for the tests across processes.
        .executableTarget(
            name: "herald-postgres-peer",
            dependencies: [
                "HeraldPostgres",
                .product(name: "Herald", package: "Herald"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        // A poster or a reader of the durable-mode chaos run (Scripts/durable-chaos.sh), each in a
        // process of its own, killed and restarted.
        .executableTarget(
            name: "herald-postgres-durable-peer",
            dependencies: [
                "HeraldPostgres",
                .product(name: "Herald", package: "Herald"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // The bridge against raw postgres-nio NOTIFY → LISTEN: latency and burst throughput, each
        // receiver in a process of its own. It lives here, not in the Benchmarks package, so that
        // Benchmarks (and its CI smoke run) does not build postgres-nio and swift-crypto.
        .executableTarget(
            name: "herald-postgres-bench",
            dependencies: [
                "HeraldPostgres",
                .product(name: "Herald", package: "Herald"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HeraldPostgresTests",
            dependencies: [
                "HeraldPostgres",
                .product(name: "Herald", package: "Herald"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
    ],
    swiftLanguageModes: [.v6]
)
