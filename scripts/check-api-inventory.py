#!/usr/bin/env python3
"""Checks the Firebase Swift API inventory in docs/compatibility.md against the compile test.

The inventory is the `## Firebase Swift API inventory` section: tables with the columns
`| API | Firebase declaration | Status | Notes |`, one row per Firebase API, its ID in backticks.
The compile test is Tests/FirebaseAPITests/*.swift, where each use of a `same` row is preceded by a
`// API: <ID>` comment.

Fails (exit 1) when an ID is duplicated, a status is not one of same/different/missing/n/a, a `same`
row has no marker, a marker names an unknown or non-`same` row, or README.md lacks the counts line.
Standard library only.
"""

import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INVENTORY = ROOT / "docs" / "compatibility.md"
TESTS = ROOT / "Tests" / "FirebaseAPITests"
README = ROOT / "README.md"
SECTION = "## Firebase Swift API inventory"
HEADER = ["API", "Firebase declaration", "Status", "Notes"]
STATUSES = ["same", "different", "missing", "n/a"]
MARKER = re.compile(r"^\s*//\s*API:\s*(.+?)\s*$")


def split_row(line):
    """The cells of a Markdown table row (backslash-escaped pipes stay in their cell)."""
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|") and not body.endswith("\\|"):
        body = body[:-1]
    return [cell.strip().replace("\\|", "|") for cell in re.split(r"(?<!\\)\|", body)]


def parse_inventory(text, errors):
    """[(id, status, line number)] of every row of every inventory table."""
    lines = text.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == SECTION)
    except StopIteration:
        errors.append(f"{INVENTORY.relative_to(ROOT)}: no '{SECTION}' section")
        return []
    rows = []
    in_table = False
    for number, line in enumerate(lines[start + 1:], start=start + 2):
        if line.startswith("## "):
            break
        if not line.lstrip().startswith("|"):
            in_table = False
            continue
        cells = split_row(line)
        if not in_table:
            if cells != HEADER:
                errors.append(f"compatibility.md:{number}: table header must be '| {' | '.join(HEADER)} |', is {line.strip()!r}")
            in_table = True
            continue
        if all(re.fullmatch(r":?-+:?", cell) for cell in cells):
            continue
        if len(cells) != 4:
            errors.append(f"compatibility.md:{number}: expected 4 cells, found {len(cells)}: {line.strip()!r}")
            continue
        match = re.fullmatch(r"`([^`]+)`", cells[0])
        if not match:
            errors.append(f"compatibility.md:{number}: the API cell must be one ID in backticks, is {cells[0]!r}")
            continue
        rows.append((match.group(1).strip(), cells[2], number))
    return rows


def main():
    errors = []
    rows = parse_inventory(INVENTORY.read_text(encoding="utf-8"), errors)
    if not rows and not errors:
        errors.append("the inventory has no rows")

    status_of = {}
    for api, status, number in rows:
        if status not in STATUSES:
            errors.append(f"compatibility.md:{number}: `{api}` has status {status!r}; must be one of {', '.join(STATUSES)}")
        if api in status_of:
            errors.append(f"compatibility.md:{number}: duplicate ID `{api}`")
            continue
        status_of[api] = status

    markers = Counter()
    files = sorted(TESTS.glob("*.swift")) if TESTS.is_dir() else []
    if not files:
        errors.append(f"no Swift files in {TESTS.relative_to(ROOT)}")
    for path in files:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            match = MARKER.match(line)
            if not match:
                continue
            api = match.group(1)
            where = f"{path.relative_to(ROOT)}:{number}"
            if api not in status_of:
                errors.append(f"{where}: marker names unknown API `{api}`")
            elif status_of[api] != "same":
                errors.append(f"{where}: marker names `{api}`, whose status is {status_of[api]!r}, not 'same'")
            markers[api] += 1

    for api, status in status_of.items():
        if status == "same" and markers[api] == 0:
            errors.append(f"`{api}` is 'same' but no '// API: {api}' marker in {TESTS.relative_to(ROOT)}/*.swift")

    counts = Counter(status for status in status_of.values())
    print(" · ".join(f"{status} {counts[status]}" for status in STATUSES))
    expected = (
        f"Firebase Swift API: {counts['same']} same, {counts['different']} different, "
        f"{counts['missing']} missing, {counts['n/a']} not applicable"
    )
    if expected not in README.read_text(encoding="utf-8"):
        errors.append(f"README.md must contain the line fragment:\n    {expected}")

    if errors:
        for error in errors:
            print(f"error: {error}", file=sys.stderr)
        print(f"check-api-inventory: {len(errors)} problem(s)", file=sys.stderr)
        return 1
    print(f"check-api-inventory: {len(status_of)} APIs, {sum(markers.values())} markers, OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
