#!/usr/bin/env bash
# Builds the DocC documentation of the modules that .spi.yml names as `documentation_targets` (the
# ones the Swift Package Index builds: Herald and HeraldTesting) with the toolchain's own docc, no
# plugin: extract the symbol graphs with the compiler, then `docc convert --warnings-as-errors`.
# Also checks that each landing page's Topics name every public top-level symbol of its module.
#
# `Scripts/build-docs.sh --module NAME SOURCES GRAPHS` instead builds one other catalog, the module
# NAME's in SOURCES/NAME.docc, from symbol graphs that a build already wrote to GRAPHS (the
# HeraldPostgres bridge's: Scripts/postgres-test.sh emits them during its test build, so that the
# bridge and postgres-nio are not built a second time).
set -euo pipefail
cd "$(dirname "$0")/.."
scratch=.build-docs
graphs="$scratch/symbol-graphs"
sources=Sources
if [[ ${1:-} == --module ]]; then
    modules=("$2")
    sources=$3
    graphs=$4
else
    # The modules: the `documentation_targets` of .spi.yml (its flow form `[A, B]` or a block list
    # of `- A` lines), so that CI builds exactly what the Swift Package Index builds.
    names=$(python3 - .spi.yml <<'PY'
import re, sys
text = open(sys.argv[1]).read()
found = re.search(r"documentation_targets:[ \t]*\[([^\]]*)\]", text)
if found:
    names = [name.strip().strip("'\"") for name in found.group(1).split(",")]
else:
    block = re.search(r"documentation_targets:[ \t]*\n((?:[ \t]*-[ \t]*\S+[ \t]*\n)+)", text)
    names = [line.strip()[1:].strip().strip("'\"") for line in block.group(1).splitlines()] if block else []
if not names or not all(names):
    sys.exit(".spi.yml: no documentation_targets found")
print("\n".join(names))
PY
)
    mapfile -t modules <<<"$names"
    echo "Documentation targets in .spi.yml: ${modules[*]}"
    mkdir -p "$graphs"  # kept between runs: the compiler only rewrites graphs when it recompiles
    # `swift build` takes one --target: build each (the later ones reuse what the earlier built).
    for module in "${modules[@]}"; do
        swift build --scratch-path "$scratch" --target "$module" \
            -Xswiftc -emit-symbol-graph \
            -Xswiftc -emit-symbol-graph-dir -Xswiftc "$graphs" \
            -Xswiftc -emit-extension-block-symbols \
            -Xswiftc -symbol-graph-minimum-access-level -Xswiftc public
    done
fi

for module in "${modules[@]}"; do
    # Each catalog gets only its own module's graphs (and its extensions of other modules).
    own="$scratch/graphs-$module"
    rm -rf "$own" && mkdir -p "$own"
    cp "$graphs/$module.symbols.json" "$own/"
    cp "$graphs/$module@"*.symbols.json "$own/" 2>/dev/null || true
    docc convert "$sources/$module/$module.docc" \
        --additional-symbol-graph-dir "$own" \
        --output-dir "$scratch/$module.doccarchive" \
        --fallback-display-name "$module" \
        --fallback-bundle-identifier "org.swift.$module" \
        --warnings-as-errors

    # Every public top-level type, protocol and function must appear in the landing page's Topics.
    missing=$(python3 - "$own/$module.symbols.json" "$sources/$module/$module.docc/$module.md" <<'PY'
import json, re, sys
graph = json.load(open(sys.argv[1]))
landing = open(sys.argv[2]).read()
kinds = {"swift.struct", "swift.class", "swift.enum", "swift.protocol", "swift.actor", "swift.typealias", "swift.func", "swift.var"}
names = sorted({s["pathComponents"][0] for s in graph["symbols"]
                if s["kind"]["identifier"] in kinds and len(s["pathComponents"]) == 1
                and s["accessLevel"] == "public" and not s["pathComponents"][0].startswith("_")})
linked = set(re.findall(r"``([A-Za-z_][A-Za-z0-9_]*)", landing))
print(" ".join(n for n in names if n.split("(")[0] not in linked))
PY
)
    if [ -n "$missing" ]; then
        echo "error: $module.docc/$module.md does not list these public symbols under ## Topics: $missing" >&2
        exit 1
    fi
    echo "Documentation of $module built at $scratch/$module.doccarchive with every public symbol under Topics"
done
