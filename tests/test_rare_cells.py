"""Rare cells reach the judge's problems and the view's region rows (behaviour, on a fixture)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from msgspec import convert

from reportgen.contract.events import OutputStats
from reportgen.contract.validation import read_log
from reportgen.judge.judgement import judge
from reportgen.model.runmodel import LAYOUT_NOT_ACHIEVED, RunModel, build_run, forget
from reportgen.render.sections import problems
from tests.conftest import FIXTURES


def _run() -> RunModel:
    return build_run(read_log(FIXTURES / "synthetic_mismatch.jsonl"))


OUTSIDE = {
    "name": "out",
    "mismatched": 1,
    "total": 4,
    "max_abs": 0.5,
    "max_rel": None,
    "region": "mask",
    "outside": {"count": 2, "beyond_tolerance": 1, "max_abs": 0.1, "max_rel": 0.2, "nonfinite": 0},
}


@pytest.mark.parametrize(
    "change",
    [{"status": "untested", "untested_reason": LAYOUT_NOT_ACHIEVED}, {"status": "skipped"}, {"status": "error"}],
    ids=["layout-not-achieved", "skipped", "error"],
)
def test_a_rare_last_cell_is_among_the_problems_and_counted(change: dict) -> None:
    run = _run()
    before = run.counts()[change["status"]]
    run.cells[-1] = replace(run.cells[-1], **change)
    forget(run)
    assert run.cells[-1] in judge(run).problems
    assert run.counts()[change["status"]] == before + 1
    assert run.with_status(change["status"])[-1] is run.cells[-1]


def test_a_judged_region_on_the_last_cell_is_a_region_row() -> None:
    run = _run()
    assert not problems.region_views(run.cells), "the fixture declares no judged region"
    run.cells[-1] = replace(run.cells[-1], per_output=convert([OUTSIDE], list[OutputStats]))
    forget(run)
    rows = problems.region_views(run.cells)
    assert [(r.case, r.output, r.region) for r in rows] == [(run.cells[-1].case, "out", "mask")]
    assert rows[0].outside.startswith("2 element(s); 1 beyond the tolerance")
