// swift-tools-version:6.0
// Package.swift of a service that uses the bridge, with Herald checked out beside it.
import PackageDescription

let package = Package(
    name: "MyService",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Herald", path: "../Herald"),
        .package(name: "HeraldPostgres", path: "../Herald/Bridges/HeraldPostgres"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
    ],
    targets: [
        .executableTarget(
            name: "MyService",
            dependencies: [
                .product(name: "Herald", package: "Herald"),
                .product(name: "HeraldPostgres", package: "HeraldPostgres"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        )
    ]
)
