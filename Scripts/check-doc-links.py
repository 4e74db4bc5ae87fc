#!/usr/bin/env python3
"""Finds doc links in comments that point at nothing: ``Type``, ``Type/member(label:)``.

DocC checks the links of public declarations when it builds the catalog (Scripts/build-docs.sh);
the comments of internal code are never built, so a link there goes stale silently when the type
or member it names is renamed or removed. This script reads every `///` and `//` comment of the
given source folders (default: Sources/Herald Sources/HeraldTesting) and checks each link: a
type it names is declared there, and each member it names is declared, with the same argument
labels, in a file that declares or extends the type before it. A link that names a member alone
(``isCancelled``, relative to the enclosing type) must name one declared somewhere.

    python3 Scripts/check-doc-links.py [FOLDER ...]

Links that start with a module's name (``Swift/Equatable``) are left to DocC. Exit status 1 when
a link is stale.
"""

import re
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Links that start with a module's name, which DocC resolves (``Swift/Equatable``).
MODULES = {"Swift", "Foundation", "Dispatch", "Synchronization", "_Concurrency", "Herald", "HeraldTesting"}
LINK = re.compile(r"``([A-Za-z_][A-Za-z0-9_]*(?:/[^`\s]+)?)``")
TYPE = re.compile(r"\b(?:class|struct|enum|protocol|actor|typealias|extension)\s+([A-Za-z_][A-Za-z0-9_]*)")
MEMBER = re.compile(
    r"\b(?:func|var|let|case|associatedtype|typealias|class|struct|enum|actor|protocol)\s+"
    r"`?([A-Za-z_][A-Za-z0-9_]*)`?|\b(init|subscript)\b\s*[<(]"
)


def strip_comments(text):
    """The code without comments and string literals, so that a name in a comment declares nothing."""
    text = re.sub(r'"""[\s\S]*?"""', '""', text)
    text = re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)
    text = re.sub(r"/\*[\s\S]*?\*/", "", text)
    return re.sub(r"//[^\n]*", "", text)


def labels_of(text, start):
    """The argument labels of the declaration whose parameter list opens at text[start] == '('."""
    text = text.replace("->", "  ")  # a function type's arrow is not a closing angle bracket
    depth, end = 0, start
    for end in range(start, len(text)):
        if text[end] in "([<":
            depth += 1
        elif text[end] in ")]>":
            depth -= 1
            if depth == 0:
                break
    inner = text[start + 1 : end]
    parts, depth, current = [], 0, ""
    for character in inner:
        if character in "([<{":
            depth += 1
        elif character in ")]>}":
            depth -= 1
        if character == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += character
    if current.strip():
        parts.append(current)
    labels = []
    for part in parts:
        colon, depth = None, 0
        for index, character in enumerate(part):
            depth += character in "([<{"
            depth -= character in ")]>}"
            if character == ":" and depth == 0:
                colon = index
                break
        if colon is None:  # an enum case's unlabelled associated value
            labels.append("_")
            continue
        head = part[:colon].split()
        head = [word for word in head if not word.startswith("@") and word not in ("inout", "borrowing", "consuming")]
        labels.append(head[0] if head else "_")
    return labels


def declarations(folders):
    """The files that declare or extend each type, and each member's (file, labels) declarations."""
    types, members = defaultdict(set), defaultdict(set)
    for folder in folders:
        for path in sorted(Path(folder).rglob("*.swift")):
            code = strip_comments(path.read_text())
            for name in TYPE.findall(code):
                types[name].add(path)
            for match in MEMBER.finditer(code):
                name = match.group(1) or match.group(2)
                after = match.end() if match.group(2) else match.end()
                rest = code[after : after + 400]
                generic = re.match(r"\s*<", rest)
                if generic:  # skip a generic parameter clause
                    depth = 0
                    for index, character in enumerate(rest):
                        depth += character == "<"
                        depth -= character == ">"
                        if depth == 0 and character == ">":
                            rest = rest[index + 1 :]
                            break
                if match.group(2):  # `init(` or `subscript(`: the match ended at the bracket
                    rest = code[match.end() - 1 : match.end() + 400]
                paren = re.match(r"\s*\(", rest)
                if paren:
                    offset = code.find(rest[paren.end() - 1 :], match.start())
                    members[name].add((path, tuple(labels_of(code, offset))))
                else:
                    members[name].add((path, None))
    return types, members


def stale_links(folders):
    types, members = declarations(folders)
    problems = []
    for folder in folders:
        for path in sorted(Path(folder).rglob("*.swift")):
            for number, line in enumerate(path.read_text().splitlines(), start=1):
                comment = line.split("//", 1)
                if len(comment) < 2:
                    continue
                for link in LINK.findall(comment[1]):
                    parts = link.split("/")
                    if parts[0] in MODULES:
                        continue  # a symbol of a module: DocC's to check, where it builds
                    if parts[0] not in types:
                        name = parts[0].split("(")[0]
                        if parts[0][0].isupper():
                            problems.append(f"{path.relative_to(ROOT)}:{number}: ``{link}``: no type {name} is declared")
                        elif name not in members:  # a member of the enclosing type, named alone
                            problems.append(f"{path.relative_to(ROOT)}:{number}: ``{link}``: no {name} is declared")
                        continue
                    owner = parts[0]
                    for part in parts[1:]:
                        # DocC's disambiguation (`-swift.method`, `-(N.Type,_)`, a hash) is DocC's to check.
                        if "(" in part and ")" in part:
                            part = part[: part.index(")", part.index("(")) + 1]
                        part = re.sub(r"-[^()]*$", "", part) if "(" not in part else part
                        name = part.split("(")[0]
                        files = types.get(owner, set())
                        found = {labels for file, labels in members.get(name, set()) if file in files}
                        if "(" in part:
                            wanted = tuple(label for label in part[part.index("(") + 1 : part.index(")")].split(":") if label)
                            if wanted not in found:
                                signature = name + "(" + "".join(label + ":" for label in wanted) + ")"
                                problems.append(f"{path.relative_to(ROOT)}:{number}: ``{link}``: {owner} has no {signature}")
                                break
                        elif not found and name not in types:
                            problems.append(f"{path.relative_to(ROOT)}:{number}: ``{link}``: {owner} has no {name}")
                            break
                        owner = name
    return problems


def main(arguments):
    folders = [ROOT / folder for folder in (arguments or ["Sources/Herald", "Sources/HeraldTesting"])]
    problems = stale_links(folders)
    for problem in problems:
        print(problem)
    print(f"check-doc-links: {len(problems)} stale link(s) in {', '.join(str(f.relative_to(ROOT)) for f in folders)}")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main(sys.argv[1:])
