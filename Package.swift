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
        .library(name: "Herald", targets: ["Herald"]),
        .library(name: "HeraldTesting", targets: ["HeraldTesting"]),
    ],
    targets: [
        .target(name: "Herald", swiftSettings: swiftSettings),
        .target(name: "HeraldTesting", dependencies: ["Herald"], swiftSettings: swiftSettings),
        .executableTarget(
            name: "herald-runloop-probe",
            dependencies: ["Herald"],
            path: "Tests/RunLoopProbe",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "herald-demo",
            dependencies: ["Herald"],
            swiftSettings: swiftSettings
        ),
        // The soak: not a product; `swift run -c release herald-soak --count N`.
        .executableTarget(
            name: "herald-soak",
            dependencies: ["Herald"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HeraldTests",
            // HeraldTesting: the async cancel tests race a cancel on the main-actor stand-in.
            dependencies: ["Herald", "HeraldTesting", "herald-runloop-probe", "herald-demo"],
            exclude: [],
            swiftSettings: swiftSettings
        ),
        // The Swift blocks of README.md and the DocC articles, compiled and run as tests;
        // Scripts/check-doc-snippets.py keeps them identical to the documents.
        .testTarget(
            name: "DocSnippetTests",
            dependencies: ["Herald", "HeraldTesting"],
            swiftSettings: swiftSettings
        ),
        // The README's Quick Start, as a user pastes it into main.swift.
        .executableTarget(
            name: "herald-quick-start",
            dependencies: ["Herald"],
            path: "Examples/QuickStart",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HeraldTestingTests",
            dependencies: ["HeraldTesting", "Herald"],
            swiftSettings: swiftSettings
        ),
    ],
    swiftLanguageModes: [.v6]
)
