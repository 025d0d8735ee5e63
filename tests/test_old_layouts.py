"""Logs written before layouts were measured are judged by what they measured.

A planned non-contiguous cell of such a log whose recorded host inputs are contiguous, or
that ran on a device without recording what the model received, is untested for its layout
("layout not measured"): the headline, the scope and comparisons do not count it as a pass.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from reportgen.cli import main
from reportgen.judge.comparison import JudgedSide, compare_runs
from reportgen.model.runmodel import LAYOUT_NOT_MEASURED
from reportgen.render.report import judge_log
from tests.conftest import REPO

SAMPLES = REPO / "sample_runs"
HEAT_OLD = SAMPLES / "heat-solver-cpu-20261129T225430Z-4f1eea" / "events.jsonl"
CUDA_OLD = SAMPLES / "tiny-encoder-cuda-20261129T225259Z-866a85" / "events.jsonl"
CPU_OLD = SAMPLES / "tiny-encoder-cpu-20261129T225221Z-23a8e6" / "events.jsonl"


def _unmeasured(log: Path) -> list[str]:
    return [c.case for c in judge_log(log).run.cells if c.untested_reason == LAYOUT_NOT_MEASURED]


def test_heat_solver_contiguous_host_inputs_are_not_noncontiguous_passes() -> None:
    judged = judge_log(HEAT_OLD)
    run = judged.run
    # The batch-1 "noncontiguous" cells recorded contiguous host inputs: untested.
    assert sorted(_unmeasured(HEAT_OLD)) == sorted(
        c.case for c in run.cells if c.planned.layout == "noncontiguous" and c.planned.batch == 1
    )
    # The batch-4 ones fed a non-contiguous host tensor on the CPU: still passes.
    batch4 = [c for c in run.cells if c.planned.layout == "noncontiguous" and c.planned.batch == 4]
    assert batch4 and all(c.status == "pass" for c in batch4)
    assert judged.disposition.outcome == "blocked"
    assert any(r.rule == "layout-not-measured" for r in judged.disposition.reasons)
    passed_nonc = [g for g in judged.disposition.scope.passed if g.layout == "noncontiguous"]
    assert all(m.planned.batch == 4 for g in passed_nonc for m in g.cells)
    assert passed_nonc


def test_cuda_sample_counts_no_noncontiguous_pass() -> None:
    judged = judge_log(CUDA_OLD)
    run = judged.run
    nonc = [c for c in run.cells if c.planned.layout == "noncontiguous"]
    assert len(nonc) == 7
    assert all(c.status == "untested" and c.untested_reason == LAYOUT_NOT_MEASURED for c in nonc)
    assert all(c.measured_status == "pass" for c in nonc), "what the log measured is kept"
    assert not any(g.layout == "noncontiguous" for g in judged.disposition.scope.passed)
    assert "noncontiguous" not in judged.disposition.headline


def test_cuda_page_says_layout_not_measured(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["report", str(CUDA_OLD), "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    text = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "Layout not measured: 7 cell(s)" in text
    assert "7 planned non-contiguous cell(s) are untested for that layout" in text


def test_comparison_does_not_compare_unmeasured_layouts() -> None:
    base, cand = judge_log(CPU_OLD), judge_log(CUDA_OLD)
    comparison = compare_runs(*(JudgedSide(j.run, j.notes, j.disposition) for j in (base, cand)))
    for cell in comparison.cells:
        if cell.layout == "noncontiguous":
            assert not cell.correct_on_both
            assert cell.timing is None


def test_a_log_that_measured_the_layout_keeps_its_pass(tmp_path: Path) -> None:
    """The same CUDA log, its cells saying the model received the planned layout: passes."""
    lines = []
    for line in CUDA_OLD.read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        if event["kind"] == "run_start":  # edited: no longer a measurement
            event.update(origin="synthetic", origin_note="the H200 sample with layout_achieved written in by a test")
        if event["kind"] == "case_result" and "noncontiguous" in event["case"]:
            event["layout_achieved"], event["layout_fed"] = True, "noncontiguous"
        lines.append(json.dumps(event))
    log = tmp_path / "events.jsonl"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    run = judge_log(log).run
    assert all(c.status == "pass" for c in run.cells if c.planned.layout == "noncontiguous")


def test_site_index_follows(tmp_path: Path) -> None:
    """The site's index rows for the old H200 and heat-solver runs are blocked, not suitable."""
    result = CliRunner().invoke(
        main, ["site", str(CUDA_OLD.parent), str(HEAT_OLD.parent), "--out", str(tmp_path / "site")]
    )
    assert result.exit_code == 0, result.output
    rows = json.loads((tmp_path / "site" / "index.json").read_text(encoding="utf-8"))
    runs = rows["runs"] if isinstance(rows, dict) else rows
    outcomes = {r["run_id"]: r["outcome"] for r in runs}
    assert outcomes == {CUDA_OLD.parent.name: "blocked", HEAT_OLD.parent.name: "blocked"}
