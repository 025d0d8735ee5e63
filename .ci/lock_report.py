"""Turn `pip install --dry-run --report` JSON into the pinned lines of constraints.txt.

Reads the report named on the command line and prints one `name==version` line per package
pip chose, sorted by name, leaving out the project itself. Local version labels (torch's
`+cpu`) are dropped so that the pin matches the same release from any index.
"""

from __future__ import annotations

import json
import re
import sys


def pins(report: dict) -> list[str]:
    lines = []
    for item in report["install"]:
        meta = item["metadata"]
        name = re.sub(r"[-_.]+", "-", meta["name"]).lower()
        if name == "migration-record":
            continue
        lines.append(f"{name}=={meta['version'].split('+', 1)[0]}")
    return sorted(lines)


def main(path: str) -> None:
    with open(path, encoding="utf-8") as handle:
        report = json.load(handle)
    print("\n".join(pins(report)))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: lock_report.py REPORT.json")
    main(sys.argv[1])
