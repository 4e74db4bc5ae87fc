// swift-tools-version:6.1
import PackageDescription

// Herald's benchmarks live in their own package so that the library manifest stays dependency-free.
//
//   swift package --package-path Benchmarks benchmark                 # package-benchmark suite
//   swift run -c release --package-path Benchmarks herald-compare     # side-by-side comparison
let package = Package(
    name: "HeraldBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Herald", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", exact: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/OpenCombine/OpenCombine", exact: "0.14.0"),
    ],
    targets: [
        .executableTarget(
            name: "HeraldBenchmarks",
            dependencies: [
                .product(name: "Herald", package: "Herald"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/HeraldBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // Allocation counting (an interposed malloc) and memory readings for herald-compare.
        .target(name: "CHeraldCompareSupport"),
        .executableTarget(
            name: "herald-compare",
            dependencies: [
                "CHeraldCompareSupport",
                .product(name: "Herald", package: "Herald"),
                .product(name: "OpenCombine", package: "OpenCombine"),
                .product(name: "OpenCombineDispatch", package: "OpenCombine"),
            ],
            // Every loop compiled here (the timing loops, and Herald's posting-thread loop, which is
            // specialised here) starts on a 64-byte boundary: on the AMD host, a loop of calls
            // measured up to a fifth slower at some addresses than at others, so that an unrelated
            // edit moved rows (see Results/README.md).
            swiftSettings: [.unsafeFlags(["-Xllvm", "-x86-experimental-pref-innermost-loop-alignment=6"])]
        ),
    ],
    swiftLanguageModes: [.v6]
)
