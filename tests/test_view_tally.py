"""The view's one-pass tally over every cell equals each figure worked out on its own."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace
from itertools import chain
from pathlib import Path

import pytest

from reportgen.contract.validation import read_log
from reportgen.model.runmodel import RunModel, build_run
from reportgen.model.runmodel import shape_label
from reportgen.render.sections import common, record
from reportgen.render.sections.tally import CellTally, count_cells
from tests.conftest import FIXTURES, REPO

LOGS = sorted(FIXTURES.glob("*.jsonl")) + sorted((REPO / "sample_runs").glob("*/events.jsonl"))


def _separately(run: RunModel) -> CellTally:
    cells = run.cells
    ran = [c for c in cells if c.result_line is not None and c.measured_status not in (None, "skipped")]
    checked = [c for c in ran if c.layout_achieved is not None]
    return CellTally(
        columns=dict(Counter((c.planned.dtype, c.planned.layout, c.planned.mode, c.status) for c in cells)),
        row_keys=[(c.planned.batch, c.planned.length, bool(c.planned.repeat_of)) for c in cells],
        fallback_states={c.fallback_status for c in cells} - {None},
        fallback_ops=set(chain.from_iterable(c.fallback_items for c in cells)),
        ran=len(ran),
        layout_checked=len(checked),
        layout_missed=len([c for c in checked if c.layout_achieved is False]),
        timing_layout_missed=len([c for c in cells if c.timing_layout_missed]),
        timed=dict(Counter(chain.from_iterable(c.timed for c in cells))),
        nonfinite=len([c for c in cells if c.output_nonfinite]),
        measured=[c for c in cells if c.executed_status == "measured"],
        unmeasured=[c for c in cells if c.executed_status is not None and c.executed_status != "measured"],
        measured_modes={c.planned.mode for c in cells if c.executed_status == "measured"},
        op_lists=dict(Counter(c.executed_items for c in cells if c.executed_status == "measured")),
        with_result=len([c for c in cells if c.result_line is not None]),
        warned=[c for c in cells if c.warnings],
    )


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.parent.name if p.name == "events.jsonl" else p.stem)
def test_the_tally_equals_each_figure_counted_on_its_own(log: Path) -> None:
    reading = read_log(log)
    if not reading.valid:
        pytest.skip("an invalid log has no report")
    run = build_run(reading)
    expected = _separately(run)
    tally = count_cells(run.cells)
    assert tally == expected
    assert list(tally.timed) == list(expected.timed) and list(tally.op_lists) == list(expected.op_lists), (
        "first seen first"
    )
    # The columns first seen first, and each column's statuses first seen first (the matrix
    # lists its columns in that order).
    seen = list(dict.fromkeys(key[:3] for key in expected.columns))
    assert list(tally.columns) == sorted(expected.columns, key=lambda key: seen.index(key[:3]))  # a stable sort


def test_the_rare_facts_are_counted() -> None:
    """Layouts not achieved (at the model call and in timed calls), skips, fallback and NaN outputs."""
    run = build_run(read_log(FIXTURES / "synthetic_fallback.jsonl"))
    cells = run.cells
    cells[0] = replace(cells[0], layout_achieved=False, timing_layout_missed=("warm",), output_nonfinite=3)
    cells[1] = replace(cells[1], layout_achieved=True, measured_status="skipped")
    cells[2] = replace(cells[2], layout_achieved=True, fallback_status=None, fallback_items=("aten::x",))
    tally = count_cells(cells)
    assert tally == _separately(run)
    assert (tally.layout_missed, tally.timing_layout_missed, tally.nonfinite) == (1, 1, 1)
    assert "aten::x" in tally.fallback_ops


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.parent.name if p.name == "events.jsonl" else p.stem)
def test_the_shapes_line_lists_each_planned_shape_once(log: Path) -> None:
    """The record's shapes come from the matrix's distinct rows: each (batch, length) once,
    whether or not a cache check repeats it."""

    reading = read_log(log)
    if not reading.valid:
        pytest.skip("an invalid log has no report")
    run = build_run(reading)
    row = next(r for r in record.record_rows(run, "") if r.label == "Input shapes (batch, length)")
    shapes = {(c.planned.batch, c.planned.length) for c in run.cells}
    assert row.value == common.list_text(shapes, run, lambda shape: shape_label(*shape), ordered=True)


def test_a_shape_planned_again_as_a_cache_check_is_listed_once() -> None:

    run = build_run(read_log(REPO / "sample_runs" / "tiny-encoder-cpu-20261130T101022Z-393b16" / "events.jsonl"))
    assert any(c.planned.repeat_of for c in run.cells), "the sample plans a cache check"
    row = next(r for r in record.record_rows(run, "") if r.label == "Input shapes (batch, length)")
    names = re.findall(r"\(\d+, \d+\)", row.value)
    assert names and len(names) == len(set(names)) == len({(c.planned.batch, c.planned.length) for c in run.cells})
    assert "repeat" not in row.value
