#!/usr/bin/env python3
"""Counts the test functions that take a heavy slot, per test target and in all.

A test function is heavy when its own `@Test(...)` traits name `.heavy`, `.heavy(weight:)` (or
`.heavyAlone`, the trait of earlier versions: an older tree counts the same way), or when it is declared inside a type (or an extension of a type) whose
`@Suite(...)` traits do: the trait is recursive, so nested suites count too. A type is looked up
in its own test target (two targets may each have a suite of the same name). A parameterized
test counts once. Run from the repository root:

    scripts/count-heavy-tests.py            # heavy and all test functions, by target and in all
    scripts/count-heavy-tests.py --files    # also each file with heavy tests

To compare with another commit: `git worktree add /tmp/other COMMIT` and run it there.
"""

import pathlib
import re
import sys

HEAVY = re.compile(r"\.heavy(Alone)?\b")
TYPE_DECLARATION = re.compile(r"\b(struct|class|enum|actor|extension)\s+([A-Za-z_][A-Za-z0-9_.]*)")
KEYWORDS = {"func", "var", "let", "subscript", "init"}


def code_only(text):
    """The source with comments and string literals blanked (braces in them are not code)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out.append(" " * (end - i))
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
        elif text[i] in '"#' and re.match(r'#*"', text[i:i + 8]):
            end = string_end(text, i)
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def string_end(text, i):
    """The index after the string literal starting at `i` (raw `#"..."#` and multi-line ones too,
    interpolations with strings of their own inside)."""
    n = len(text)
    hashes = len(text[i:i + 8]) - len(text[i:i + 8].lstrip("#"))
    # `"""` opens a multi-line literal only when the line ends after it (`#""""#` is `""`).
    multiline = re.match(r'"""[ \t]*\n', text[i + hashes:i + hashes + 80])
    quotes = '"""' if multiline else '"'
    closing = quotes + "#" * hashes
    interpolation = "\\" + "#" * hashes + "("
    j = i + hashes + len(quotes)
    while j < n and not text.startswith(closing, j):
        if text.startswith(interpolation, j):
            j += len(interpolation)
            depth = 1
            while j < n and depth:
                if text[j] in '"#' and re.match(r'#*"', text[j:j + 8]):
                    j = string_end(text, j)
                    continue
                depth += {"(": 1, ")": -1}.get(text[j], 0)
                j += 1
        elif text[j] == "\\" and hashes == 0:
            j += 2
        else:
            j += 1
    return min(n, j + len(closing))


def attribute_arguments(code, start):
    """The text of `@Name(...)` starting at the parenthesis `start`, and the index after it."""
    depth = 0
    for j in range(start, len(code)):
        if code[j] == "(":
            depth += 1
        elif code[j] == ")":
            depth -= 1
            if depth == 0:
                return code[start:j + 1], j + 1
    return code[start:], len(code)


def scan(code):
    """('type', name, kind, heavy) for each declared type, ('test', heavy, enclosing type names) for each test."""
    events = []
    pending_suite_heavy = None  # traits of an `@Suite` waiting for its type
    pending_test = None  # heavy flag of an `@Test` waiting for its `func`
    scopes = []  # (type name, depth of its declaration)
    depth = 0
    i, n = 0, len(code)
    while i < n:
        c = code[i]
        if code.startswith("@Suite", i):
            i += len("@Suite")
            heavy = False
            if i < n and code[i] == "(":
                args, i = attribute_arguments(code, i)
                heavy = bool(HEAVY.search(args))
            pending_suite_heavy = heavy
            continue
        if code.startswith("@Test", i) and not code[i + 5:i + 6].isalnum():
            i += len("@Test")
            heavy = False
            if i < n and code[i] == "(":
                args, i = attribute_arguments(code, i)
                heavy = bool(HEAVY.search(args))
            pending_test = heavy
            continue
        match = TYPE_DECLARATION.match(code, i)
        if match and match.group(2) not in KEYWORDS and (i == 0 or not (code[i - 1].isalnum() or code[i - 1] == "_")):
            events.append(("type", match.group(2), match.group(1), bool(pending_suite_heavy)))
            pending_suite_heavy = None
            # The type's body opens one level deeper; the brace that brings `depth` back closes it.
            scopes.append((match.group(2), depth))
            i = match.end()
            continue
        if code.startswith("func ", i) and pending_test is not None:
            events.append(("test", pending_test, [s[0] for s in scopes]))
            pending_test = None
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            while scopes and scopes[-1][1] >= depth:
                scopes.pop()
        i += 1
    return events


def main():
    root = pathlib.Path("Tests")
    files = sorted(root.rglob("*.swift"))
    parsed = {path: scan(code_only(path.read_text())) for path in files}
    heavy_types = {(path.parts[1], e[1]) for path, events in parsed.items() for e in events
                   if e[0] == "type" and e[3] and e[2] != "extension"}
    by_target = {}
    heavy_files = {}
    for path, events in parsed.items():
        target = path.parts[1]
        for event in events:
            if event[0] != "test":
                continue
            heavy = event[1] or any((target, name) in heavy_types for name in event[2])
            total, heavies = by_target.get(target, (0, 0))
            by_target[target] = (total + 1, heavies + heavy)
            if heavy:
                heavy_files[str(path)] = heavy_files.get(str(path), 0) + 1
    print(f"{'target':<26} {'heavy':>6} {'tests':>6}")
    for target, (total, heavies) in sorted(by_target.items()):
        print(f"{target:<26} {heavies:>6} {total:>6}")
    all_tests = sum(t for t, _ in by_target.values())
    all_heavy = sum(h for _, h in by_target.values())
    print(f"{'all':<26} {all_heavy:>6} {all_tests:>6}")
    if "--files" in sys.argv[1:]:
        print()
        for path, count in sorted(heavy_files.items()):
            print(f"{count:>4}  {path}")


if __name__ == "__main__":
    main()
