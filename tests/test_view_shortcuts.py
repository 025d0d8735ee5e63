"""The view's shortcuts over every cell give what the plain pass over every cell gives."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from reportgen.contract.validation import read_log
from reportgen.judge.disposition import decide
from reportgen.model.runmodel import LAYOUT_NOT_ACHIEVED, RunModel, build_run
from reportgen.render import view
from tests.conftest import FIXTURES, REPO

LOGS = sorted(FIXTURES.glob("*.jsonl")) + sorted((REPO / "sample_runs").glob("*/events.jsonl"))


def _run(log: Path) -> RunModel:
    reading = read_log(log)
    if not reading.valid:
        pytest.skip("an invalid log has no report")
    return build_run(reading)


def _plain_problem_cells(run: RunModel) -> list:
    return [c for c in run.cells if c.status in ("mismatch", "nonfinite", "error", "skipped") or c.untested_reason == LAYOUT_NOT_ACHIEVED]


def _plain_op_cells(run: RunModel) -> tuple[dict[str, int], list, list]:
    measured = [c for c in run.cells if c.executed_status == "measured"]
    unmeasured = [c for c in run.cells if c.executed_status is not None and c.executed_status != "measured"]
    per_op: Counter[str] = Counter()
    for c in measured:
        per_op.update(c.executed_items)
    return dict(per_op), measured, unmeasured


def _check(run: RunModel) -> None:
    decide(run, {})
    assert view._problem_cells(run) == _plain_problem_cells(run)
    per_op, measured, unmeasured = view._op_cells(run)
    expected = _plain_op_cells(run)
    assert (per_op, measured, unmeasured) == expected and list(per_op) == list(expected[0])
    assert view._modes(measured) == ", ".join(sorted({c.planned.mode for c in measured}))
    # Every cell with per-output statistics is looked through, in plan order.
    regions = view._regions(run)
    plain = [(c.case, o["name"]) for c in run.cells for o in c.per_output or [] if o.get("outside") is not None][: view.DETAIL_CAP]
    assert [(r.case, r.output) for r in regions] == plain


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.parent.name if p.name == "events.jsonl" else p.stem)
def test_shortcuts_agree_with_the_plain_pass(log: Path) -> None:
    _check(_run(log))


def test_shortcuts_agree_on_rare_cells() -> None:
    """A layout not achieved, a skip and an error next to mismatches; judged regions on one cell."""
    base = _run(FIXTURES / "synthetic_mismatch.jsonl")
    assert base.counts()["mismatch"] and not base.counts()["untested"], "the shortcut path is the one tried"
    _check(base)
    outside = [{"name": "out", "mismatched": 1, "total": 4, "max_abs": 0.5, "region": "mask", "outside": {"count": 2, "beyond_tolerance": 1, "max_abs": 0.1, "max_rel": 0.2, "nonfinite": 0}}]
    for change in ({"status": "untested", "untested_reason": LAYOUT_NOT_ACHIEVED}, {"status": "skipped"}, {"status": "error"}, {"per_output": outside}):
        run = _run(FIXTURES / "synthetic_mismatch.jsonl")
        run.cells[-1] = replace(run.cells[-1], **change)
        run.derived.clear()
        _check(run)
        if "status" in change:
            assert run.cells[-1] in view._problem_cells(run)
        else:
            assert [r.case for r in view._regions(run)] == [run.cells[-1].case]
