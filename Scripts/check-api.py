#!/usr/bin/env python3
"""Fails when the public API changed by accident since the baseline commit named in API/baseline.

    python3 Scripts/check-api.py herald
        Herald and HeraldTesting, with `swift package diagnose-api-breaking-changes`.
    python3 Scripts/check-api.py bridge SCRATCH [SWIFT_BUILD_ARGUMENTS...]
        HeraldPostgres (Bridges/HeraldPostgres), whose debug build is already in SCRATCH. SwiftPM's
        command cannot clone a baseline for a package in a subfolder, so the baseline is dumped with
        `swift-api-digester -dump-sdk` from a `git worktree` of the baseline commit, built in the same
        SCRATCH folder with the same arguments (so that only Herald and the bridge compile again).

Both also check API/allowed-breaks.txt: each commit since the baseline that adds a line to it must
add an entry under a `### Breaking` heading of CHANGELOG.md (as must uncommitted changes).

What the digester reports about `@_spi` declarations and declarations whose name starts with an
underscore is printed but does not fail: neither is public API (README.md, "Public API").

Baselines are kept between runs in $HERALD_API_CACHE (default ~/.cache/herald-api), one folder per
toolchain and commit: the first run dumps them (about 50 s for Herald, a bridge build for the
bridge), later runs reuse them.
"""

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASELINE_FILE = ROOT / "API" / "baseline"
ALLOWLIST = ROOT / "API" / "allowed-breaks.txt"
CHANGELOG = "CHANGELOG.md"
BREAKAGE = re.compile(r"API breakage: (\S+) (\S+)")


def run(command, **options):
    return subprocess.run(command, cwd=options.pop("cwd", ROOT), text=True, **options)


def git(*arguments):
    return run(["git", *arguments], capture_output=True, check=True).stdout


def fail(message):
    print(f"check-api: FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def baseline_commit():
    lines = [line.strip() for line in BASELINE_FILE.read_text().splitlines()]
    names = [line for line in lines if line and not line.startswith("#")]
    if len(names) != 1:
        fail(f"{BASELINE_FILE.relative_to(ROOT)}: expected one commit, found {len(names)} lines")
    name = names[0]
    found = run(["git", "rev-parse", "--verify", "--quiet", f"{name}^{{commit}}"], capture_output=True)
    if found.returncode != 0:
        fail(f"the baseline commit {name} is not in this clone's history")
    return found.stdout.strip()


def cache_folder(commit):
    version = run(["swift", "--version"], capture_output=True).stdout.splitlines()[0]
    toolchain = hashlib.sha1(version.encode()).hexdigest()[:12]
    base = Path(os.environ.get("HERALD_API_CACHE", Path.home() / ".cache" / "herald-api"))
    return base / toolchain, base / toolchain / commit


# MARK: - What the digester says


def spi_declarations(dumps):
    """The qualified names (`Type.member(label:)`) of every @_spi declaration in the digester's dumps."""
    names = set()

    def walk(node, path, inherited):
        name = node.get("printedName", node.get("name", ""))
        spi = inherited or bool(node.get("spi_group_names"))
        qualified = ".".join(path + [name])
        if spi:
            names.add(qualified)
        child_path = path + [name] if node.get("kind") == "TypeDecl" else path
        for child in node.get("children", []):
            walk(child, child_path, spi)

    for dump in dumps:
        root = json.loads(Path(dump).read_text())["ABIRoot"]
        for child in root.get("children", []):
            walk(child, [], False)
    return names


def is_underscored(name):
    return any(part.startswith("_") and len(part) > 1 for part in name.split("(")[0].split("."))


def judge(output, dumps, what):
    """Splits the digester's breakages into those that fail and those that are not public API."""
    spi = spi_declarations(dumps)
    failing, ignored = [], []
    for line in output.splitlines():
        match = BREAKAGE.search(line)
        if not match:
            continue
        message = line[match.start() :].strip()
        name = match.group(2)
        if is_underscored(name):
            ignored.append(f"{message}   (underscored: not public API)")
        elif name in spi:
            ignored.append(f"{message}   (@_spi: not public API)")
        else:
            failing.append(message)
    for message in ignored:
        print(f"check-api: {what}: ignored: {message}")
    if failing:
        listed = "\n".join(f"  {message}" for message in failing)
        fail(
            f"{what}: {len(failing)} breaking change(s) to the public API since the baseline:\n{listed}\n"
            "If a break is intended, add its line (from `API breakage:` on) to API/allowed-breaks.txt and "
            "an entry under `### Breaking` in CHANGELOG.md, in the same commit."
        )
    print(f"check-api: {what}: no breaking change to the public API")


# MARK: - Herald and HeraldTesting


def digester_allowlist(folder):
    """API/allowed-breaks.txt without its comments, which the digester would not skip."""
    lines = [line for line in ALLOWLIST.read_text().splitlines() if line.strip() and not line.startswith("#")]
    path = Path(folder) / "allowed-breaks.txt"
    path.write_text("".join(line + "\n" for line in lines))
    return path


def check_herald(commit):
    _, folder = cache_folder(commit)
    command = [
        "swift", "package", "diagnose-api-breaking-changes", commit,
        "--products", "Herald", "HeraldTesting",
        "--baseline-dir", str(folder.parent),
    ]  # fmt: skip
    print("check-api: " + " ".join(command), flush=True)
    with tempfile.TemporaryDirectory(prefix="herald-api-") as temporary:
        command += ["--breakage-allowlist-path", str(digester_allowlist(temporary))]
        result = run(command, capture_output=True)
    output = result.stdout + result.stderr
    print("\n".join(line for line in output.splitlines() if not line.startswith("[")))
    if result.returncode != 0 and not BREAKAGE.search(output):
        fail(f"the comparison itself failed (exit {result.returncode}); see the output above")
    judge(output, sorted(folder.glob("*.json")), "Herald, HeraldTesting")


# MARK: - The bridge


def bridge_dump(scratch, output):
    modules = modules_folder(scratch)
    # The C modules that the bridge's dependencies import (swift-atomics' shims, NIO's, BoringSSL's):
    # the module maps SwiftPM generated beside the build, and those the packages ship.
    maps = sorted(modules.parent.glob("*.build/module.modulemap"))
    maps += sorted(path for path in (scratch / "checkouts").glob("*/Sources/**/module.modulemap"))
    command = [
        "swift-api-digester", "-dump-sdk", "-module", "HeraldPostgres", "-o", str(output),
        "-I", str(modules), "-avoid-location", "-avoid-tool-args", "-abort-on-module-fail",
        *[argument for path in maps for argument in ("-Xcc", f"-fmodule-map-file={path}")],
    ]  # fmt: skip
    result = run(command, capture_output=True)
    if result.returncode != 0:
        fail(f"swift-api-digester -dump-sdk failed (exit {result.returncode}):\n{result.stdout}{result.stderr}")


def modules_folder(scratch):
    found = sorted(Path(scratch).glob("*/debug/Modules/HeraldPostgres.swiftmodule"))
    if not found:
        fail(f"no debug build of HeraldPostgres in {scratch}: build the bridge first")
    return found[0].parent


def check_bridge(commit, scratch, build_arguments):
    scratch = Path(scratch).resolve()
    _, folder = cache_folder(commit)
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="herald-api-") as temporary:
        current = Path(temporary) / "current.json"
        bridge_dump(scratch, current)
        baseline = folder / "HeraldPostgres.json"
        if not baseline.exists():
            tree = Path(temporary) / "baseline"
            print(f"check-api: building HeraldPostgres at {commit[:12]} in a worktree, for its baseline", flush=True)
            git("worktree", "add", "--detach", str(tree), commit)
            try:
                built = run(
                    ["swift", "build", "--package-path", str(tree / "Bridges" / "HeraldPostgres"),
                     "--scratch-path", str(scratch), "--target", "HeraldPostgres", *build_arguments],
                )  # fmt: skip
                if built.returncode != 0:
                    fail(f"the baseline's build failed (exit {built.returncode})")
                partial = baseline.with_suffix(".partial")
                bridge_dump(scratch, partial)
                partial.rename(baseline)
            finally:
                git("worktree", "remove", "--force", str(tree))
        command = [
            "swift-api-digester", "-diagnose-sdk", "-input-paths", str(baseline), "-input-paths", str(current),
            "-breakage-allowlist-path", str(digester_allowlist(temporary)),
            "-compiler-style-diags", "-disable-fail-on-error",
        ]  # fmt: skip
        result = run(command, capture_output=True)
        output = result.stdout + result.stderr
        print(output.strip() or "check-api: the digester printed nothing")
        if result.returncode != 0:
            fail(f"swift-api-digester -diagnose-sdk failed (exit {result.returncode})")
        judge(output, [baseline], "HeraldPostgres")


# MARK: - The allowlist and the CHANGELOG


def added_lines(diff):
    """(line number in the new file, text) of each line a unified diff with -U0 adds."""
    lines, number = [], 0
    for line in diff.splitlines():
        hunk = re.match(r"@@ -\S+ \+(\d+)(?:,\d+)? @@", line)
        if hunk:
            number = int(hunk.group(1))
        elif line.startswith("+") and not line.startswith("+++"):
            lines.append((number, line[1:]))
            number += 1
    return lines


def breaking_entries(changelog, diff):
    """The lines a diff adds to CHANGELOG.md inside a `### Breaking` section."""
    section, inside = None, set()
    for number, line in enumerate(changelog.splitlines(), start=1):
        if line.startswith("## ") or line.startswith("### "):
            section = line.strip()
        elif section == "### Breaking":
            inside.add(number)
    return [text for number, text in added_lines(diff) if number in inside and text.strip()]


def allowed(diff):
    return [text for _, text in added_lines(diff) if text.strip() and not text.startswith("#")]


def check_allowlist(commit):
    allowlist = str(ALLOWLIST.relative_to(ROOT))
    changes = [
        (sha, git("diff", "-U0", f"{sha}^", sha, "--", allowlist),
         git("show", f"{sha}:{CHANGELOG}"), git("diff", "-U0", f"{sha}^", sha, "--", CHANGELOG))
        for sha in git("rev-list", f"{commit}..HEAD", "--", allowlist).split()
    ]  # fmt: skip
    changes.append(
        ("the uncommitted changes", git("diff", "-U0", "HEAD", "--", allowlist),
         (ROOT / CHANGELOG).read_text(), git("diff", "-U0", "HEAD", "--", CHANGELOG))
    )  # fmt: skip
    for name, diff, changelog, changelog_diff in changes:
        added = allowed(diff)
        if added and not breaking_entries(changelog, changelog_diff):
            fail(
                f"{name[:12]} adds {len(added)} line(s) to {allowlist} but no entry under `### Breaking` "
                f"in {CHANGELOG}: a user must read about every intended break"
            )
    print(f"check-api: {allowlist}: every added break has a `### Breaking` entry in {CHANGELOG}")


def main(arguments):
    if not arguments or arguments[0] not in ("herald", "bridge") or (arguments[0] == "bridge" and len(arguments) < 2):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    commit = baseline_commit()
    check_allowlist(commit)
    if arguments[0] == "herald":
        check_herald(commit)
    else:
        check_bridge(commit, arguments[1], arguments[2:])


if __name__ == "__main__":
    main(sys.argv[1:])
