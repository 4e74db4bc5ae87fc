#!/usr/bin/env bash
# Builds Herald's DocC documentation with the toolchain's own docc, no plugin:
# extract the symbol graphs with the compiler, then `docc convert --warnings-as-errors`.
# Also checks that the landing page's Topics name every public top-level symbol.
set -euo pipefail
cd "$(dirname "$0")/.."
scratch=.build-docs
graphs="$scratch/symbol-graphs"
mkdir -p "$graphs"  # kept between runs: the compiler only rewrites graphs when it recompiles
swift build --scratch-path "$scratch" --target Herald \
    -Xswiftc -emit-symbol-graph \
    -Xswiftc -emit-symbol-graph-dir -Xswiftc "$graphs" \
    -Xswiftc -emit-extension-block-symbols \
    -Xswiftc -symbol-graph-minimum-access-level -Xswiftc public
docc convert Sources/Herald/Herald.docc \
    --additional-symbol-graph-dir "$graphs" \
    --output-dir "$scratch/Herald.doccarchive" \
    --fallback-display-name Herald \
    --fallback-bundle-identifier org.swift.herald \
    --warnings-as-errors

# Every public top-level type and protocol must appear in the landing page's Topics.
missing=$(python3 - "$graphs/Herald.symbols.json" Sources/Herald/Herald.docc/Herald.md <<'PY'
import json, re, sys
graph = json.load(open(sys.argv[1]))
landing = open(sys.argv[2]).read()
kinds = {"swift.struct", "swift.class", "swift.enum", "swift.protocol", "swift.actor", "swift.typealias", "swift.func", "swift.var"}
names = sorted({s["pathComponents"][0] for s in graph["symbols"]
                if s["kind"]["identifier"] in kinds and len(s["pathComponents"]) == 1
                and s["accessLevel"] == "public" and not s["pathComponents"][0].startswith("_")})
linked = set(re.findall(r"``([A-Za-z_][A-Za-z0-9_]*)", landing))
print(" ".join(n for n in names if n not in linked))
PY
)
if [ -n "$missing" ]; then
    echo "error: Herald.docc/Herald.md does not list these public symbols under ## Topics: $missing" >&2
    exit 1
fi
echo "Documentation built at $scratch/Herald.doccarchive with every public symbol under Topics"
