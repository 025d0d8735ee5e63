"""The view's shortcuts over every cell give what the plain pass over every cell gives."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
from msgspec import convert

from reportgen.contract.lines import OutputStatsLine
from reportgen.contract.validation import read_log
from reportgen.judge.disposition import decide, scope_label
from reportgen.judge.judgement import judge, waiting_cells
from reportgen.model.runmodel import LAYOUT_NOT_ACHIEVED, LAYOUT_NOT_MEASURED, STATUS_ORDER, RunModel, build_run, forget
from reportgen.render.sections import common, matrix, problems, tally
from reportgen.render.sections import disposition as first_section
from tests.conftest import FIXTURES, REPO

LOGS = sorted(FIXTURES.glob("*.jsonl")) + sorted((REPO / "sample_runs").glob("*/events.jsonl"))


def _run(log: Path) -> RunModel:
    reading = read_log(log)
    if not reading.valid:
        pytest.skip("an invalid log has no report")
    return build_run(reading)


def _plain_problem_cells(run: RunModel) -> list:
    return [
        c
        for c in run.cells
        if c.status in ("mismatch", "nonfinite", "error", "skipped")
        or c.untested_reason in (LAYOUT_NOT_ACHIEVED, LAYOUT_NOT_MEASURED)
    ]


def _plain_op_cells(run: RunModel) -> tuple[dict[str, int], list, list]:
    measured = [c for c in run.cells if c.executed_status == "measured"]
    unmeasured = [c for c in run.cells if c.executed_status is not None and c.executed_status != "measured"]
    per_op: Counter[str] = Counter()
    for c in measured:
        per_op.update(c.executed_items)
    return dict(per_op), measured, unmeasured


def _check(run: RunModel) -> None:
    decide(run, {})
    for statuses in [(s,) for s in STATUS_ORDER] + [
        ("mismatch", "nonfinite"),
        ("mismatch", "nonfinite", "error", "skipped"),
        ("pass", "untested"),
    ]:
        assert run.with_status(*statuses) == tuple(c for c in run.cells if c.status in statuses), statuses
    assert run.counts() == {s: len([c for c in run.cells if c.status == s]) for s in STATUS_ORDER}
    judged = judge(run)
    assert list(judged.problems) == _plain_problem_cells(run)
    per_op, measured, unmeasured = tally.op_cells(run)
    expected = _plain_op_cells(run)
    assert (per_op, measured, unmeasured) == expected and list(per_op) == list(expected[0])
    assert tally.cell_tally(run).measured_modes == {c.planned.mode for c in measured}
    # Every cell with per-output statistics is looked through, in plan order.
    regions = problems.region_views(judged.flagged)
    plain = [(c.case, o["name"]) for c in run.cells for o in c.per_output or [] if o.get("outside") is not None][
        : common.DETAIL_CAP
    ]
    assert [(r.case, r.output) for r in regions] == plain


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.parent.name if p.name == "events.jsonl" else p.stem)
def test_shortcuts_agree_with_the_plain_pass(log: Path) -> None:
    _check(_run(log))


def test_shortcuts_agree_on_rare_cells() -> None:
    """A layout not achieved, a skip and an error next to mismatches; judged regions on one cell."""
    base = _run(FIXTURES / "synthetic_mismatch.jsonl")
    assert base.counts()["mismatch"] and not base.counts()["untested"], "the shortcut path is the one tried"
    _check(base)
    outside = convert(
        [
            {
                "name": "out",
                "mismatched": 1,
                "total": 4,
                "max_abs": 0.5,
                "max_rel": None,
                "region": "mask",
                "outside": {"count": 2, "beyond_tolerance": 1, "max_abs": 0.1, "max_rel": 0.2, "nonfinite": 0},
            }
        ],
        list[OutputStatsLine],
    )
    for change in (
        {"status": "untested", "untested_reason": LAYOUT_NOT_ACHIEVED},
        {"status": "skipped"},
        {"status": "error"},
        {"per_output": outside},
    ):
        run = _run(FIXTURES / "synthetic_mismatch.jsonl")
        run.cells[-1] = replace(run.cells[-1], **change)
        forget(run)
        _check(run)
        if "status" in change:
            assert run.cells[-1] in judge(run).problems
        else:
            assert [r.case for r in problems.region_views(judge(run).flagged)] == [run.cells[-1].case]


def _plain_scope_lines(groups, run, with_status):  # type: ignore[no-untyped-def]
    rows = []
    for g in groups:
        if not with_status:
            rows.append(common.Row(g.label, common.list_text([scope_label(c) for c in g.cells], run)))
            continue
        by_status: dict[str, list[str]] = {}
        for c in g.cells:
            by_status.setdefault(c.status, []).append(scope_label(c))
        text = "; ".join(
            f"{status}: {common.list_text(by_status[status], run)}" for status in STATUS_ORDER if status in by_status
        )
        rows.append(common.Row(g.label, text))
    return rows


def _plain_waiting(run: RunModel, blocking: list) -> list:
    waiting = {case for r in blocking for case in r.cases}
    return [c for c in run.cells if c.case in waiting]


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.parent.name if p.name == "events.jsonl" else p.stem)
def test_scope_lines_matrix_and_waiting_cells_agree_with_the_plain_pass(log: Path) -> None:
    run = _run(log)
    disposition = decide(run, {})
    for side, with_status in ((disposition.scope.passed, False), (disposition.scope.not_passed, True)):
        assert first_section.scope_lines(side, run, with_status) == _plain_scope_lines(side, run, with_status)
    blocking = [r for r in disposition.reasons if r.outcome == "blocked"]
    assert waiting_cells(run, blocking) == _plain_waiting(run, blocking)
    keys = [(c.planned.batch, c.planned.length, bool(c.planned.repeat_of)) for c in run.cells]
    row_keys = list(dict.fromkeys(keys))
    shown = set(row_keys[: common.DETAIL_CAP])
    assert list(matrix._shown_cells(run.cells, keys, row_keys)) == [
        (c, k) for c, k in zip(run.cells, keys) if k in shown
    ]


def test_the_shortcuts_on_a_long_run_and_a_mixed_group() -> None:
    """Rows of one cell each past the cap; rows shared by cells; one reason naming the failed cells."""
    from reportgen.judge.disposition import Reason, ScopeGroup, failed_cases

    run = _run(FIXTURES / "synthetic_mismatch.jsonl")
    cells = run.cells
    n = common.DETAIL_CAP + 7
    distinct = [(i, 1, False) for i in range(n)]
    shared = [(i % 5, 1, i % 2 == 0) for i in range(n)]
    many = [cells[i % len(cells)] for i in range(n)]
    for keys in (distinct, shared):
        row_keys = list(dict.fromkeys(keys))
        shown = set(row_keys[: common.DETAIL_CAP])
        assert list(matrix._shown_cells(many, keys, row_keys)) == [(c, k) for c, k in zip(many, keys) if k in shown]
    group = ScopeGroup(
        "float32",
        "contiguous",
        "eager",
        tuple(replace(c, status=("mismatch", "error", "untested")[i % 3]) for i, c in enumerate(many)),
    )
    assert first_section.scope_lines((group,), run, True) == _plain_scope_lines((group,), run, True)
    assert first_section.scope_lines((group,), run, False) == _plain_scope_lines((group,), run, False)
    decide(run, {})
    failed = failed_cases(run)
    assert failed, "the fixture has failed cells"
    for blocking in (
        [Reason("mismatch", "blocked", "", failed, needs_verdict=True)],
        [Reason("mismatch", "blocked", "", failed[1:], needs_verdict=True)],
        [Reason("mismatch", "blocked", "", failed), Reason("untested-cells", "blocked", "", (cells[0].case,))],
    ):
        assert waiting_cells(run, blocking) == _plain_waiting(run, blocking)
