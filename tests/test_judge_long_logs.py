"""The judge's shortcuts for long logs give what reading every cell one by one gives: failure
groups, task-metric fields, the scope's groups, the flagged cells the rules pick from, and the
finding's counts."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from msgspec import convert


from reportgen.contract.events import OutputStats, PlannedCell, TaskMetric
from reportgen.judge import disposition as d
from reportgen.judge.nextstep import _failed_by_mode_dtype, finding
from reportgen.model.groups import failure_groups, metric_values, where_text
from reportgen.model.runmodel import CellRecord, RunModel, forget, read_run
from tests.logbuilder import base_events, case_key, dumps, finish, with_envelope

Events = list[dict[str, Any]]


def _run(tmp_path: Path, events: Events) -> RunModel:
    path = tmp_path / "events.jsonl"
    path.write_text(dumps(with_envelope(finish(events))), encoding="utf-8")
    reading, builder = read_run(path)
    assert reading.valid, [p.format() for p in reading.problems]
    return builder.build(reading)


def _cell(n: int, mode: str = "compiled", **facts: Any) -> CellRecord:
    planned = PlannedCell(
        case=f"b1-l{n}-contiguous-float32-{mode}",
        batch=1,
        length=n,
        layout="contiguous",
        dtype="float32",
        mode=mode,
        repeat_of=None,
    )
    return CellRecord(planned=planned, case=planned.case, **facts)


def test_failure_groups_are_the_cells_grouped_by_their_own_where_text() -> None:
    # Cells alike in mode, dtype, status, failure kind and worst output whose text still differs
    # (per-output statistics, a zero count with a failed task metric, training), around cells
    # that share their text.
    alike = {"status": "mismatch", "mismatched": 3, "total": 512, "max_abs": 0.5, "worst_output": "hidden"}
    zero = {**alike, "mismatched": 0}
    cells = [
        _cell(1, **alike),
        _cell(2, **zero, task_metric=convert({"name": "cosine", "value": 0.5, "passed": False}, TaskMetric)),
        _cell(3, **zero),
        _cell(
            4,
            **alike,
            per_output=convert(
                [
                    {"name": "hidden", "mismatched": 3, "total": 8, "max_abs": 0.5, "max_rel": 0.1},
                    {"name": "pooled", "mismatched": 0, "total": 8, "max_abs": 0.0, "max_rel": 0.0},
                ],
                list[OutputStats],
            ),
        ),
        _cell(5, **alike, trained=True, loss_off=True),
        _cell(6, **alike),
        _cell(7, "eager", **alike),
        _cell(8, status="error", failure_kind="compile: RuntimeError"),
        _cell(9, **{**alike, "status": "nonfinite"}),
        _cell(10, status="error", failure_kind="compile: RuntimeError"),
        _cell(11, **zero),
    ]
    expected: dict[tuple[str, str, str], list[str]] = {}
    for c in cells:
        expected.setdefault((c.planned.mode, c.planned.dtype, where_text(c)), []).append(c.case)
    got = [(g.mode, g.dtype, g.where, g.cases) for g in failure_groups(None, cells)]  # type: ignore[arg-type]
    assert got == [(*key, cases) for key, cases in expected.items()]
    assert len(got) == 8


def test_metric_values_read_the_fast_paths_structs_as_get_does(tmp_path: Path) -> None:
    events = base_events()
    results = [e for e in events if e["kind"] == "case_result"]
    del results[0]["task_metric"]["passed"]
    results[1]["task_metric"].update(value=None, criterion=None, passed=False)
    results[1]["status"] = "mismatch"  # as the collector decides it: a pass with passed false contradicts itself
    run = _run(tmp_path, events)
    metrics = [c.task_metric for c in run.cells if c.task_metric is not None]
    assert len(metrics) == len(results) and not any(isinstance(m, dict) for m in metrics)  # Structs, from the fast path
    for name in ("value", "passed", "name", "criterion", "not_a_field"):
        assert metric_values(metrics, name) == [m.get(name) for m in metrics]
    assert metric_values(metrics, "passed")[:2] == [None, False]
    dicts = [{"name": "cosine", "value": 0.5}, {"name": "cosine", "value": None, "passed": False}]
    assert metric_values(dicts, "passed") == [None, False]
    assert metric_values(dicts, "value") == [0.5, None]


def test_scope_groups_are_each_sides_cells_by_column_in_plan_order() -> None:
    # Columns that come back after another, a side whose first cell of a column comes later
    # than the other side's, a cache check.
    plan = [
        ("float32", "contiguous", "eager", "pass"),
        ("float32", "contiguous", "compiled", "mismatch"),
        ("float32", "contiguous", "eager", "error"),
        ("bfloat16", "noncontiguous", "eager", "pass"),
        ("float32", "contiguous", "compiled", "pass"),
        ("float32", "contiguous", "eager", "pass"),
        ("bfloat16", "noncontiguous", "eager", "untested"),
        ("float32", "contiguous", "compiled", "pass"),
    ]
    cells = []
    for n, (dtype, layout, mode, status) in enumerate(plan, start=1):
        planned = PlannedCell(
            case=f"c{n}", batch=n, length=16, layout=layout, dtype=dtype, mode=mode, repeat_of="c1" if n == 8 else None
        )
        cells.append(CellRecord(planned=planned, case=planned.case, status=status))
    expected: tuple[dict[tuple[str, str, str], list[tuple[str, str]]], ...] = ({}, {})
    for c in cells:
        label = c.shape_label + (" repeat (cache check)" if c.planned.repeat_of else "")
        side = expected[0] if c.status == "pass" else expected[1]
        side.setdefault((c.planned.dtype, c.planned.layout, c.planned.mode), []).append((label, c.status))
    got = d._scope_pass(cells)
    words = [
        [((g.dtype, g.layout, g.mode), [(d.scope_label(c), c.status) for c in g.cells]) for g in side] for side in got
    ]
    assert words == [list(side.items()) for side in expected]
    assert [(g.mode, [(d.scope_label(c), c.status) for c in g.cells]) for g in got[1]] == [
        ("compiled", [("(2, 16)", "mismatch")]),
        ("eager", [("(3, 16)", "error")]),
        ("eager", [("(7, 16)", "untested")]),
    ]
    assert all(c is cells[int(c.case[1:]) - 1] for side in got for g in side for c in g.cells)  # the cells themselves


FLAGGED = [
    # (fact set on one cell, its value, the rule and the reason's rule that names that cell)
    ("cold_check_failed", True, d.rule_mismatches, "cold-mismatch"),
    ("cold_full_caches", ("/tmp/cache",), d.rule_cold_cache, "cold-cache"),
    ("fallback_items", ("aten::foo",), d.rule_fallback, "cpu-fallback"),
    ("graph_break_reasons", ("data-dependent branch",), d.rule_compiled_path, "graph-breaks"),
    ("recompiles_seen", True, d.rule_compiled_path, "recompiles"),
    ("recompiled", True, d.rule_compiled_path, "recompiles"),
    ("recompile_limit_hit", True, d.rule_compiled_path, "recompile-limit"),
    ("eager_after_recompile_limit", True, d.rule_compiled_path, "recompile-limit"),
    (
        "per_output",
        convert(
            [
                {
                    "name": "hidden",
                    "mismatched": 0,
                    "total": 8,
                    "max_abs": 0.0,
                    "max_rel": 0.0,
                    "region": "[:, 1:]",
                    "outside": {"count": 4, "max_abs": None, "max_rel": None, "beyond_tolerance": 2, "nonfinite": 0},
                }
            ],
            list[OutputStats],
        ),
        d.rule_notes,
        "judged-regions",
    ),
]


@pytest.mark.parametrize(("fact", "value", "rule", "reason"), FLAGGED, ids=[f[0] for f in FLAGGED])
def test_a_fact_on_one_cell_reaches_its_rule_through_the_flagged_cells(
    tmp_path: Path, fact: str, value: Any, rule: Any, reason: str
) -> None:
    run = _run(tmp_path, base_events())
    assert [r for r in rule(run, {}) if r.rule == reason] == []
    cell = run.cells[len(run.cells) // 2]
    setattr(cell, fact, value)
    forget(run)  # the flagged cells are kept per run, and the run was changed
    assert d.flagged(run) == [cell]
    assert [r.cases for r in rule(run, {}) if r.rule == reason] == [(cell.case,)]


def test_a_cell_untested_for_its_layout_that_mismatched_is_said_in_the_finding(tmp_path: Path) -> None:
    """A MiniLM run's headline read '7 cell(s) differ from the reference' while its log held 10
    mismatches: three were untested for their planned layout, and only counted as untested."""
    events = base_events()
    for e in events:
        if e["kind"] == "case_result" and e["case"] == case_key(1, 16, "compiled"):
            e.update(status="mismatch", layout_achieved=False)
            e["error_stats"].update(mismatched=3, max_abs=0.5, diff_at_worst=0.5)
    run = _run(tmp_path, events)
    text = finding(run, d.decide(run, {}))
    assert (
        "1 of 4 planned cell(s) untested (1 of them differ from the reference beyond tolerance at the layout they received)"
        in text
    )


def test_the_findings_counts_from_the_scope_are_the_failed_cells_counts(tmp_path: Path) -> None:
    events = base_events()
    statuses = {
        case_key(1, 16, "compiled"): "mismatch",
        case_key(1, 16, "eager"): "nonfinite",
        case_key(2, 16, "compiled"): "error",
    }
    for e in events:
        if e["kind"] == "case_result" and e["case"] in statuses:
            e["status"] = statuses[e["case"]]
            if statuses[e["case"]] == "mismatch":
                e["error_stats"].update(mismatched=3, max_abs=0.5, diff_at_worst=0.5)
            if statuses[e["case"]] == "error":
                e["failure"] = {"phase": "compile", "type": "RuntimeError", "message": "boom"}
    run = _run(tmp_path, events)
    disposition = d.decide(run, {})
    failed = [c for c in run.cells if c.status in d.FAILED]
    assert len(failed) == 2
    assert _failed_by_mode_dtype(disposition.scope) == Counter((c.planned.mode, c.planned.dtype) for c in failed)
    assert finding(run, disposition).startswith(
        "2 cell(s) differ from the reference beyond tolerance (compiled/float32: 1, eager/float32: 1)"
    )
