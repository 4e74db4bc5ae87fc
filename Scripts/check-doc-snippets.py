#!/usr/bin/env python3
"""Checks that every Swift code block in the README and the DocC articles is compiled.

Each document's ```swift blocks must equal, in order, the snippet regions of the Swift files that
compile them (the table below). A region runs from `// snippet: begin` to `// snippet: end`;
`// snippet: pause` and `// snippet: resume` leave out compiled context in between (a block that
declares a type and then uses it is split so that the uses can sit in a function). A file without
markers is one region, whole. Each part is compared with its common indentation removed and
blank lines left out. (Types that several documents declare under one name are nested in a
namespace enum in their compiled copies, which the indentation rule makes invisible.)

`--write` copies the compiled regions into the documents instead, for example after
`swift format` has reformatted the compiled copies.

It also fails on a block that throws away an observation token (`_ = ….observe(` and the like):
the observation would end at once.

Usage: python3 Scripts/check-doc-snippets.py [--write]   (exit status 1 and a diff on any mismatch)
"""
import difflib
import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# document -> the Swift files that hold its blocks, in the order the blocks appear.
SOURCES = {
    "README.md": ["Examples/QuickStart/main.swift"],  # the Quick Start, its only Swift block
    "Sources/Herald/Herald.docc/Guarantees.md": [],
    "Sources/Herald/Herald.docc/Herald.md": ["Tests/DocSnippetTests/HeraldArticle.swift"],
    "Sources/Herald/Herald.docc/ThreadingAndDelivery.md": ["Tests/DocSnippetTests/ThreadingAndDelivery.swift"],
    "Sources/Herald/Herald.docc/ObservingNotifications.md": ["Tests/DocSnippetTests/ObservingNotifications.swift"],
    "Sources/Herald/Herald.docc/MigratingFromNotificationCenter.md": [
        "Tests/DocSnippetTests/MigratingFromNotificationCenter.swift"
    ],
    "Sources/HeraldTesting/HeraldTesting.docc/TestingCodeThatUsesHerald.md": [
        "Tests/DocSnippetTests/Testing/ProfileViewModel.swift",
        "Tests/DocSnippetTests/Testing/RenamingTest.swift",
        "Tests/DocSnippetTests/TestingCodeThatUsesHerald.swift",
    ],
    "Sources/HeraldTesting/HeraldTesting.docc/HeraldTesting.md": ["Tests/DocSnippetTests/HeraldTestingArticle.swift"],
    # Compiled with Xcode 26's defaults (default main-actor isolation) by the fixture package.
    "Sources/Herald/Herald.docc/AppModulesWithDefaultIsolation.md": [
        "Examples/AppFixture/Sources/AppFixture/Notifications.swift",
        "Examples/AppFixture/Sources/AppFixture/App.swift",
    ],
    "Sources/HeraldTesting/HeraldTesting.docc/TestingAppModulesWithDefaultIsolation.md": [
        "Examples/AppFixture/Tests/AppFixtureTests/AppFixtureTests.swift",
        "Examples/AppFixture/Tests/AppFixtureXCTests/AppFixtureXCTests.swift",
    ],
    # The HeraldPostgres bridge, a package of its own: its test target compiles the snippets, and
    # `swift package dump-package` (in Scripts/postgres-test.sh) checks the example manifest.
    "Bridges/HeraldPostgres/README.md": [
        "Bridges/HeraldPostgres/Examples/ServicePackage/Package.swift",
        "Bridges/HeraldPostgres/Examples/TwoTerminals/Instance.swift",
        "Bridges/HeraldPostgres/Tests/HeraldPostgresTests/DocSnippets.swift",
    ],
    "Bridges/HeraldPostgres/Sources/HeraldPostgres/HeraldPostgres.docc/AcrossProcessesWithPostgreSQL.md": [
        "Bridges/HeraldPostgres/Examples/TwoTerminals/Instance.swift",
        "Bridges/HeraldPostgres/Tests/HeraldPostgresTests/DocSnippets.swift",
    ],
}

DISCARDED_TOKEN = re.compile(r"(^|[\s;(])_\s*=\s*[^\n]*\.(observe|forward|record)\(")


def dedent(lines):
    lines = [line.rstrip() for line in lines]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    indents = [len(line) - len(line.lstrip(" ")) for line in lines if line]
    cut = min(indents) if indents else 0
    return [line[cut:] for line in lines]


def blocks_of(document):
    blocks, current = [], None
    for line in open(os.path.join(ROOT, document), encoding="utf-8").read().splitlines():
        stripped = line.strip()
        if current is None and stripped.startswith("```swift"):
            current = []
        elif current is not None and stripped.startswith("```"):
            blocks.append(dedent(current))
            current = None
        elif current is not None:
            current.append(line)
    return blocks


def regions_of(source):
    text = open(os.path.join(ROOT, source), encoding="utf-8").read().splitlines()
    if not any("// snippet:" in line for line in text):
        return [dedent(text)]
    regions, parts, part = [], None, None
    for number, line in enumerate(text, 1):
        marker = line.strip()
        if marker == "// snippet: begin":
            parts, part = [], []
        elif marker == "// snippet: pause":
            parts.append(dedent(part))
            part = None
        elif marker == "// snippet: resume":
            part = []
        elif marker == "// snippet: end":
            parts.append(dedent(part))
            joined = []
            for piece in parts:
                joined += ([""] if joined else []) + piece
            regions.append(joined)
            parts = part = None
        elif marker.startswith("// snippet:"):
            sys.exit(f"{source}:{number}: unknown marker {marker!r}")
        elif part is not None:
            part.append(line)
    return regions


def write_blocks(document, regions):
    """Replaces the ```swift blocks of `document`, in order, with `regions`."""
    path = os.path.join(ROOT, document)
    lines = open(path, encoding="utf-8").read().split("\n")
    out, index, inside = [], 0, False
    for line in lines:
        stripped = line.strip()
        if not inside and stripped.startswith("```swift"):
            inside = True
            out.append(line)
            indent = line[: len(line) - len(line.lstrip())]
            out += [(indent + r if r else "") for r in regions[index]]
            index += 1
        elif inside and stripped.startswith("```"):
            inside = False
            out.append(line)
        elif not inside:
            out.append(line)
    open(path, "w", encoding="utf-8").write("\n".join(out))


def main():
    if "--write" in sys.argv[1:]:
        for document, sources in SOURCES.items():
            regions = [region for source in sources for region in regions_of(source)]
            if len(blocks_of(document)) != len(regions):
                sys.exit(f"{document}: the number of blocks and regions differ; fix that by hand first")
            write_blocks(document, regions)
        print("documents rewritten from their compiled copies")
        return 0
    failures = 0
    checked = 0
    for document, sources in SOURCES.items():
        if not os.path.exists(os.path.join(ROOT, document)):
            print(f"missing document {document}")
            failures += 1
            continue
        blocks = blocks_of(document)
        regions = [region for source in sources for region in regions_of(source)]
        for index, block in enumerate(blocks, 1):
            for line in block:
                if DISCARDED_TOKEN.search(line):
                    print(f"{document}, block {index}: throws away an observation token: {line.strip()}")
                    failures += 1
        if len(blocks) != len(regions):
            print(f"{document}: {len(blocks)} swift blocks, but {len(regions)} compiled regions in {', '.join(sources)}")
            failures += 1
        for index, (block, region) in enumerate(zip(blocks, regions), 1):
            checked += 1
            # Blank lines do not count: a paused region cannot hold the blank line between its parts.
            if [line for line in block if line] != [line for line in region if line]:
                failures += 1
                print(f"{document}, block {index} differs from its compiled copy ({', '.join(sources)}):")
                for line in difflib.unified_diff(region, block, "compiled", "document", lineterm=""):
                    print("    " + line)
    # Every catalog article must be listed, so that a new article cannot skip the check.
    articles = glob.glob(os.path.join(ROOT, "Sources", "*", "*.docc", "*.md"))
    articles += glob.glob(os.path.join(ROOT, "Bridges", "*", "Sources", "*", "*.docc", "*.md"))
    for article in articles:
        relative = os.path.relpath(article, ROOT)
        if relative not in SOURCES and any(l.strip().startswith("```swift") for l in open(article, encoding="utf-8")):
            print(f"{relative} has swift blocks but no compiled copy: add it to SOURCES")
            failures += 1
    print(f"doc snippets: {checked} blocks compared, {failures} problems")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
