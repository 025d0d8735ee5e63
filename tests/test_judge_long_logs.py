"""The judge's shortcuts for long logs give what reading every cell one by one gives: failure
groups and task-metric fields."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reportgen.contract.events import PlannedCell
from reportgen.model.groups import failure_groups, metric_values, where_text
from reportgen.model.runmodel import CellRecord, RunModel, read_run
from tests.logbuilder import base_events, dumps, finish, with_envelope

Events = list[dict[str, Any]]


def _run(tmp_path: Path, events: Events) -> RunModel:
    path = tmp_path / "events.jsonl"
    path.write_text(dumps(with_envelope(finish(events))), encoding="utf-8")
    reading, builder = read_run(path)
    assert reading.valid, [p.format() for p in reading.problems]
    return builder.build(reading)


def _cell(n: int, mode: str = "compiled", **facts: Any) -> CellRecord:
    planned = PlannedCell(case=f"b1-l{n}-contiguous-float32-{mode}", batch=1, length=n, layout="contiguous", dtype="float32", mode=mode)
    return CellRecord(planned=planned, **facts)


def test_failure_groups_are_the_cells_grouped_by_their_own_where_text() -> None:
    # Cells alike in mode, dtype, status, failure kind and worst output whose text still differs
    # (per-output statistics, a zero count with a failed task metric, training), around cells
    # that share their text.
    alike = {"status": "mismatch", "mismatched": 3, "total": 512, "max_abs": 0.5, "worst_output": "hidden"}
    zero = {**alike, "mismatched": 0}
    cells = [
        _cell(1, **alike),
        _cell(2, **zero, task_metric={"name": "cosine", "value": 0.5, "passed": False}),
        _cell(3, **zero),
        _cell(4, **alike, per_output=[{"name": "hidden", "mismatched": 3}, {"name": "pooled", "mismatched": 0}]),
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
    run = _run(tmp_path, events)
    metrics = [c.task_metric for c in run.cells if c.task_metric is not None]
    assert len(metrics) == len(results) and not any(isinstance(m, dict) for m in metrics)  # Structs, from the fast path
    for name in ("value", "passed", "name", "criterion", "not_a_field"):
        assert metric_values(metrics, name) == [m.get(name) for m in metrics]
    assert metric_values(metrics, "passed")[:2] == [None, False]
    dicts = [{"name": "cosine", "value": 0.5}, {"name": "cosine", "value": None, "passed": False}]
    assert metric_values(dicts, "passed") == [None, False]
    assert metric_values(dicts, "value") == [0.5, None]
