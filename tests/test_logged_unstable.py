"""A warm series the collector that measured it classified unstable decides nothing, even where
this reportgen's rules call its samples stable (outside review of comparisons, finding 3): the
report read "stable after 3 warm series" and diff "faster" over a log whose last allowed series
said "unstable timing". The two halves share one classifier; a collector with a rule this
reportgen lacks disagrees with it in an honest log."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from reportgen.cli import main
from reportgen.publish.frame import history_frame
from reportgen.publish.summary import summarize
from reportgen.render.report import judge_log
from tests.test_timing_notes_named import _copy

RUNNER = CliRunner()
CASE = "b1-l16-contiguous-float32-compiled-repeat"  # its last series is attempt 3 of 3 in the sample
SAID = "the collector that measured it classified it unstable (drift); these rules call its samples stable"


def _said_unstable(event: dict[str, Any]) -> None:
    if event["kind"] == "timing" and event.get("case") == CASE and event.get("warm"):
        stability = event["stability"]
        if stability["attempt"] == stability["attempts_allowed"]:
            stability.update(verdict="unstable", reasons=["drift"], flag="unstable timing")


def _diff_line(before: Path, after: Path) -> str:
    """The diff's line of CASE."""
    text = RUNNER.invoke(main, ["diff", str(before), str(after)]).output
    return next(line for line in text.splitlines() if line.startswith(f"  {CASE}: "))


def _compared_cell(tmp_path: Path, before: Path, after: Path) -> dict[str, Any]:
    """compare.json's entry of CASE."""
    out = tmp_path / "cmp"
    assert (
        RUNNER.invoke(main, ["compare", str(before), str(after), "--out", str(out), "--format", "json"]).exit_code == 0
    )
    (cell,) = [c for c in json.loads((out / "compare.json").read_text(encoding="utf-8"))["cells"] if c["case"] == CASE]
    return cell  # type: ignore[no-any-return]


def test_the_report_counts_it_undecided_and_says_why(tmp_path: Path) -> None:
    run = _copy(tmp_path, "said", _said_unstable)
    assert RUNNER.invoke(main, ["validate", str(run)]).exit_code == 0
    judged = judge_log(run / "events.jsonl")
    assert "performance undecided for 1 of 14 timed cells" in judged.disposition.headline
    out = tmp_path / "report"
    assert RUNNER.invoke(main, ["report", str(run), "--out", str(out), "--format", "md"]).exit_code == 0
    rows = [
        line
        for line in (out / "report.md").read_text(encoding="utf-8").splitlines()
        if line.startswith(f"| `{CASE}` |")
    ]
    assert any(SAID in row and "unstable timing after 3 warm series" in row for row in rows), rows


def test_diff_compare_and_the_trend_decide_nothing_from_it(tmp_path: Path) -> None:
    before, after = _copy(tmp_path, "before"), _copy(tmp_path, "after", _said_unstable)
    line = _diff_line(before, after)
    assert "no verdict: unstable timing" in line and SAID in line, line
    cell = _compared_cell(tmp_path, before, after)
    timing = cell["timing"]
    assert timing["verdict"] == "unstable timing" and not timing["in_geomean"], timing
    assert timing["flags"] == [f"unstable timing: {SAID} on the candidate"], timing
    frame = history_frame([summarize(judge_log(p / "events.jsonl")) for p in (before, after)])
    point = {r.run_id: r for r in frame.itertuples() if r.case == CASE}
    assert point["after"].warm_median_s != point["after"].warm_median_s  # NaN: left out of the trend
    assert SAID in point["after"].caveats
    assert point["before"].warm_median_s == point["before"].warm_median_s


UNREAD = "the collector that measured it could not classify it (a timer too coarse for the call); these rules call its samples stable"


def _said_unclassified(event: dict[str, Any]) -> None:
    if event["kind"] == "timing" and event.get("case") == CASE and event.get("warm"):
        stability = event["stability"]
        if stability["attempt"] == stability["attempts_allowed"]:
            stability.update(verdict="unclassified", reasons=[], flag=None, note="a timer too coarse for the call")


def test_a_series_its_collector_could_not_classify_decides_nothing_either(tmp_path: Path) -> None:
    """Outside review: a series the log calls 'unclassified' read 'slower' in diff and compare,
    'stable' in details.csv, and counted in the geometric mean: only a logged 'unstable' was kept."""
    before, after = _copy(tmp_path, "before"), _copy(tmp_path, "after", _said_unclassified)
    assert RUNNER.invoke(main, ["validate", str(after)]).exit_code == 0
    line = _diff_line(before, after)
    assert "no verdict: timing not classified" in line and UNREAD in line, line
    cell = _compared_cell(tmp_path, before, after)
    assert not cell["timing"]["in_geomean"], cell["timing"]
    report = tmp_path / "report"
    assert RUNNER.invoke(main, ["report", str(after), "--out", str(report), "--format", "md"]).exit_code == 0
    row = next(
        line
        for line in (report / "details.csv").read_text(encoding="utf-8").splitlines()
        if line.startswith(f"{CASE},")
    )
    assert ",unclassified," in row, row
    frame = history_frame([summarize(judge_log(p / "events.jsonl")) for p in (before, after)])
    point = {r.run_id: r for r in frame.itertuples() if r.case == CASE}
    assert point["after"].warm_median_s != point["after"].warm_median_s  # NaN: left out of the trend


def test_a_rule_named_like_a_verdict_is_read_as_a_rule(tmp_path: Path) -> None:
    """A logged unstable series whose first rule a log named 'unclassified' read 'could not
    classify it (drift)': the verdict is kept apart from the rules' names."""

    def named(event: dict[str, Any]) -> None:
        _said_unstable(event)
        stability = event.get("stability") or {}
        if event.get("case") == CASE and stability.get("verdict") == "unstable":
            stability["reasons"] = ["unclassified", "drift"]

    before, after = _copy(tmp_path, "before"), _copy(tmp_path, "after", named)
    line = _diff_line(before, after)
    assert "classified it unstable (unclassified, drift)" in line and "could not classify" not in line, line
