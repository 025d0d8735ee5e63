"""diff says what its count of code and data changes covers. Before, a review changed a helper
module that only the compiled path imported, from another folder, and diff read "code and data
changes: 0" while the compiled cell's error moved from 4.8e-7 to 3.1e-5: no log identifies code
first run in a fresh process, and nothing said so."""

from __future__ import annotations

from tests.conftest import REPO
from tests.hostile import invoke

RUNS = [
    REPO / "sample_runs" / "tiny-encoder-cpu-20261205T124447Z-43ef64",
    REPO / "sample_runs" / "tiny-encoder-cpu-20261206T150111Z-1dd183",
]
SCOPE = (
    "code first run later or only in a fresh process (a compiled or device-only branch that imports more) is in neither"
)


def test_diff_text_and_markdown_say_what_the_code_and_data_count_covers() -> None:
    text = invoke(["diff", *map(str, RUNS)]).output
    line = next(row for row in text.splitlines() if row.startswith("code and data changes: "))
    assert (
        "of what the logs identify: the plan, the module that defines the workload and the local files it imports"
        in line
    )
    assert SCOPE in line, line
    markdown = invoke(["diff", *map(str, RUNS), "--format", "md"]).output
    assert "**Code and data changed (5):**" in markdown and "Code and data, of what the logs identify" in markdown
    assert SCOPE in markdown
