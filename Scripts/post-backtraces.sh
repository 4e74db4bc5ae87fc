#!/usr/bin/env bash
# Prints the two backtraces of ARCHITECTURE.md ("The walk of a post"): one taken inside a custom
# DeliveryExecutor.enqueue reached from hub.post, one inside the handler that the drain job calls.
# A debug build of a throwaway package that uses this checkout; frames demangled, addresses and
# runtime/thunk frames dropped. Usage: bash Scripts/post-backtraces.sh
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
work=${WALK_DIR:-$(mktemp -d)}
[[ -n ${WALK_DIR:-} ]] || trap 'rm -rf "$work"' EXIT
mkdir -p "$work/Sources/walk"
cat > "$work/Package.swift" <<SWIFT
// swift-tools-version: 6.0
import PackageDescription
let package = Package(
    name: "walk",
    dependencies: [.package(path: "$repo")],
    targets: [.executableTarget(name: "walk", dependencies: [.product(name: "Herald", package: "$(basename "$repo")")])]
)
SWIFT
cat > "$work/Sources/walk/main.swift" <<'SWIFT'
import Dispatch
import Foundation
import Herald

struct Ping: TypedNotification { let n: Int }

final class PrintingExecutor: DeliveryExecutor {
    let queue = DispatchQueue(label: "walk")
    let key = DispatchSpecificKey<Bool>()
    init() { queue.setSpecific(key: key, value: true) }
    var isCurrent: Bool { DispatchQueue.getSpecific(key: key) == true }
    func enqueue(_ job: @escaping @Sendable () -> Void) {
        print("== enqueue")
        Thread.callStackSymbols.forEach { print($0) }
        queue.async(execute: job)
    }
}

let hub = NotificationHub()
let done = DispatchSemaphore(value: 0)
let token = hub.observe(Ping.self, on: .executor(PrintingExecutor())) { _ in
    print("== handler")
    Thread.callStackSymbols.forEach { print($0) }
    done.signal()
}
hub.post(Ping(n: 1))
done.wait()
withExtendedLifetime(token) {}
SWIFT
swift build --package-path "$work" -c debug >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
"$work/.build/debug/walk" > "$work/stacks.txt"
# Symbolise the frames of the walk binary (addr2line), demangle them, and keep Herald's and the
# test's frames: the runtime, thunks and libdispatch's internals are left out.
python3 - "$work" "$repo" <<'PY'
import re, subprocess, sys
work, repo = sys.argv[1], sys.argv[2]
binary = f"{work}/.build/debug/walk"
last = ""
for line in open(f"{work}/stacks.txt"):
    if line.startswith("=="):
        print(line.strip())
        last = ""
        continue
    m = re.search(r"/walk\(\+(0x[0-9a-f]+)\)", line)
    if not m:
        if "libdispatch" in line and last != "libdispatch":
            print("libdispatch")
            last = "libdispatch"
        continue
    out = subprocess.run(["addr2line", "-f", "-e", binary, hex(int(m.group(1), 16) - 1)], capture_output=True, text=True).stdout.split("\n")
    name = subprocess.run(["swift", "demangle", "--simplified", "--compact"], input=out[0], capture_output=True, text=True).stdout.strip()
    where = out[1].split(" ")[0].replace(repo + "/Sources/Herald/", "").replace(work + "/Sources/walk/", "walk/")
    if re.search(r"thunk|partial apply|merged|protocol witness|withUnsafePointer|\$defer|^\?\?|swift_|^_start", name) or "Thread.callStackSymbols" in name:
        continue
    last = name
    print(f"{name[:60]:<62}{where.split(':')[0].replace('walk/main.swift', 'the program')}")
PY
