"""Print one of the two commands of README.md's "The two commands" section, as written there.

    python3 .ci/readme_commands.py 1    # build the report site from the sample runs
    python3 .ci/readme_commands.py 2    # install the test dependencies and run the tests

.ci/run and .ci/newcomer run what this prints, so CI runs the README's commands themselves,
never a copy that could drift. Standard library only: it runs before anything is installed.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"
SECTION = "## The two commands"


def commands(text: str) -> list[str]:
    """The shell commands of the section, one per ```sh block, in order."""
    if SECTION not in text:
        raise ValueError(f"README.md has no {SECTION!r} section")
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^```sh\n(.*?)^```$", section, re.MULTILINE | re.DOTALL)
    found = [block.strip() for block in blocks]
    if len(found) != 2 or any("\n" in command or not command for command in found):
        raise ValueError(f"README.md's {SECTION!r} must hold two ```sh blocks of one line each, found {found!r}")
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in ("1", "2"):
        print("usage: readme_commands.py 1|2", file=sys.stderr)
        return 2
    try:
        print(commands(README.read_text(encoding="utf-8"))[int(argv[0]) - 1])
    except (OSError, ValueError) as exc:
        print(f"readme_commands.py: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
