// swift-tools-version:6.0
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "Herald",
    platforms: [
        .macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2),
    ],
    products: [
        .library(name: "Herald", targets: ["Herald"])
    ],
    targets: [
        .target(name: "Herald", swiftSettings: swiftSettings),
        .executableTarget(
            name: "herald-runloop-probe",
            dependencies: ["Herald"],
            path: "Tests/RunLoopProbe",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HeraldTests",
            dependencies: ["Herald", "herald-runloop-probe"],
            exclude: [],
            swiftSettings: swiftSettings
        ),
    ],
    swiftLanguageModes: [.v6]
)
