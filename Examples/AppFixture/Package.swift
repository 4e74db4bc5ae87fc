// swift-tools-version:6.2
import PackageDescription

// An app module as Xcode 26 builds a new app target: default main-actor isolation and
// "approachable concurrency" (NonisolatedNonsendingByDefault, InferIsolatedConformances), in
// Swift 6 mode, depending on Herald by path. `.ci/run` builds it with warnings as errors and runs
// its tests.
let appSettings: [SwiftSetting] = [
    .defaultIsolation(MainActor.self),
    .enableUpcomingFeature("NonisolatedNonsendingByDefault"),
    .enableUpcomingFeature("InferIsolatedConformances"),
]

let testDependencies: [Target.Dependency] = [
    "AppFixture",
    .product(name: "Herald", package: "Herald"),
    .product(name: "HeraldTesting", package: "Herald"),
]

let package = Package(
    name: "AppFixture",
    platforms: [.macOS(.v15), .iOS(.v18)],
    dependencies: [.package(name: "Herald", path: "../..")],
    targets: [
        .target(
            name: "AppFixture",
            dependencies: [.product(name: "Herald", package: "Herald")],
            swiftSettings: appSettings
        ),
        .testTarget(
            name: "AppFixtureTests",
            dependencies: testDependencies,
            swiftSettings: appSettings
        ),
        // An XCTest-only test target: nothing in it imports Testing.
        .testTarget(
            name: "AppFixtureXCTests",
            dependencies: testDependencies,
            swiftSettings: appSettings
        ),
    ]
)
