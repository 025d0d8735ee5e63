"""diff, compare and the site's history say what their code and data changes cover. Before, a
review changed a helper module that only the compiled path imported, from another folder, and
diff read "code and data changes: 0" while the compiled cell's error moved from 4.8e-7 to
3.1e-5: no log identifies code first run in a fresh process, and nothing said so. A later
review found the sentence in diff's text and Markdown only, and listing less than the items
under it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.conftest import REPO
from tests.hostile import invoke

RUNS = [
    REPO / "sample_runs" / "tiny-encoder-cpu-20261205T124447Z-43ef64",
    REPO / "sample_runs" / "tiny-encoder-cpu-20261206T150111Z-1dd183",
]
SCOPE = (
    "code first run later or only in a fresh process (a compiled or device-only branch that imports more) is in neither"
)


def test_diff_text_markdown_and_json_say_what_the_code_and_data_count_covers() -> None:
    text = invoke(["diff", *map(str, RUNS)]).output
    line = next(row for row in text.splitlines() if row.startswith("code and data changes: "))
    assert (
        "of what the logs identify: the collector (its version, git state, event schema and, from 0.24.0, each of its "
        "own files by sha256), its backend" in line
    )
    # A later review: the constraint rules and the saved files, counted among the items, were not named.
    assert "descriptor and constraint rules" in line and "the saved weights, inputs and reference outputs" in line
    assert "the plan, the module that defines the workload and the local files it imports" in line
    assert SCOPE in line, line
    markdown = invoke(["diff", *map(str, RUNS), "--format", "md"]).output
    assert "**Code and data changed (5):**" in markdown and "Code and data, of what the logs identify" in markdown
    assert SCOPE in markdown
    data = json.loads(invoke(["diff", *map(str, RUNS), "--format", "json"]).output)
    assert SCOPE in data["code_scope"]


def test_compare_and_the_site_s_history_say_it_too(tmp_path: Path) -> None:
    assert invoke(["compare", *map(str, RUNS), "--out", str(tmp_path / "c")]).code == 0
    for page in ("compare.md", "compare.html"):
        assert SCOPE in (tmp_path / "c" / page).read_text(encoding="utf-8"), page
    runs = tmp_path / "runs"
    for run in RUNS:
        shutil.copytree(run, runs / run.name)
    assert invoke(["site", str(runs), "--out", str(tmp_path / "site")]).code == 0
    (page,) = (tmp_path / "site" / "workloads").glob("tiny-encoder*/index.html")
    history = page.read_text(encoding="utf-8")
    assert SCOPE in history
