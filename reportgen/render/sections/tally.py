"""Figures over every cell gathered in one pass, for the record, the matrix and the operators rows."""

from __future__ import annotations

from dataclasses import dataclass, field
from operator import itemgetter

from reportgen.model.runmodel import CellRecord, RunModel, per_run


def fallback_summary(run: RunModel) -> tuple[list[str], list[str]]:
    """The ops that fell back anywhere, and every fallback status recorded."""
    tally = cell_tally(run)
    return sorted(tally.fallback_ops), sorted(tally.fallback_states)


TimedFact = tuple[str, tuple[str, ...] | None, tuple[str, ...], bool]  # see CellRecord.timed


@dataclass
class CellTally:
    """Figures over every cell that the record and the matrix show, gathered in one pass
    (a long log has tens of thousands of cells: one loop costs less than a pass per figure)."""

    columns: dict[tuple[str, str, str, str], int] = field(
        default_factory=dict
    )  # cells per (dtype, layout, mode, status): columns first seen first, each column's statuses first seen first
    row_keys: list[tuple[int, int, bool]] = field(
        default_factory=list
    )  # each cell's matrix row: (batch, length, is a repeat)
    fallback_states: set[str] = field(default_factory=set)
    fallback_ops: set[str] = field(default_factory=set)
    ran: int = 0  # cells with a result that is not a skip
    layout_checked: int = 0  # of those, cells whose layout at the model call was measured
    layout_missed: int = 0  # of those, cells that did not receive their planned layout
    timing_layout_missed: int = 0  # cells whose timed calls were fed another layout
    timed: dict[TimedFact, int] = field(default_factory=dict)  # timing facts (shared tuples), first seen first
    nonfinite: int = 0  # cells with a NaN or Inf output element
    measured: list[CellRecord] = field(default_factory=list)  # cells whose executed ops were measured
    unmeasured: list[CellRecord] = field(
        default_factory=list
    )  # cells that could not list them (not applicable, unmeasured)
    measured_modes: set[str] = field(default_factory=set)  # the modes of the measured cells
    op_lists: dict[tuple[str, ...], int] = field(
        default_factory=dict
    )  # measured cells per executed op list (shared tuples), first seen first
    with_result: int = 0  # cells with a case_result
    warned: list[CellRecord] = field(default_factory=list)  # cells with warnings


@per_run
def cell_tally(run: RunModel) -> CellTally:
    """The run's CellTally, worked out once per run."""
    return count_cells(run.cells)


def count_cells(cells: list[CellRecord]) -> CellTally:
    tally = CellTally()
    row_keys, timed, op_lists = tally.row_keys, tally.timed, tally.op_lists
    measured, unmeasured, warned = tally.measured, tally.unmeasured, tally.warned
    add_state, add_ops, add_mode = tally.fallback_states.add, tally.fallback_ops.update, tally.measured_modes.add
    ran = layout_checked = layout_missed = timing_layout_missed = nonfinite = with_result = 0
    # Speed (tests/test_view_tally.py holds each figure to one counted on its own, for plans
    # whose columns follow each other and for plans that alternate them): a column's statuses
    # are counted in its own small dict, looked up only when the column changes from the
    # previous cell's; a run of cells with the same timing facts or op list (shared tuples) is
    # counted by one number, added when the run ends (the counts stay first seen first).
    per_column: dict[tuple[str, str, str], dict[str, int]] = {}
    statuses: dict[str, int] = {}
    dtype: str | None = None
    layout: str | None = None
    mode: str | None = None
    state: str | None = None
    facts: tuple[TimedFact, ...] | None = None
    ops: tuple[str, ...] | None = None  # None until the first measured cell: no cell's list is it
    same_facts = same_ops = 0
    for c in cells:
        p = c.planned
        if p.dtype != dtype or p.layout != layout or p.mode != mode:
            dtype, layout, mode = p.dtype, p.layout, p.mode
            statuses = per_column.setdefault((dtype, layout, mode), {})
        status = c.status
        statuses[status] = statuses.get(status, 0) + 1
        row_keys.append((p.batch, p.length, bool(p.repeat_of)))
        if c.fallback_status is not state:
            state = c.fallback_status
            if state is not None:
                add_state(state)
        if c.fallback_items:
            add_ops(c.fallback_items)
        if c.result_line is not None:
            with_result += 1
            if c.measured_status not in (None, "skipped"):
                ran += 1
                if c.layout_achieved is not None:
                    layout_checked += 1
                    if c.layout_achieved is False:
                        layout_missed += 1
        if c.warnings:
            warned.append(c)
        if c.timing_layout_missed:
            timing_layout_missed += 1
        if c.timed:
            if c.timed is facts:
                same_facts += 1
            else:
                for fact in facts or ():
                    timed[fact] = timed.get(fact, 0) + same_facts
                facts, same_facts = c.timed, 1
        if c.output_nonfinite:
            nonfinite += 1
        executed = c.executed_status
        if executed == "measured":
            measured.append(c)
            add_mode(p.mode)
            if c.executed_items is ops:
                same_ops += 1
            else:
                if same_ops and ops is not None:  # same_ops > 0: ops is a cell's list
                    op_lists[ops] = op_lists.get(ops, 0) + same_ops
                ops, same_ops = c.executed_items, 1
        elif executed is not None:
            unmeasured.append(c)
    for fact in facts or ():
        timed[fact] = timed.get(fact, 0) + same_facts
    if same_ops and ops is not None:
        op_lists[ops] = op_lists.get(ops, 0) + same_ops
    tally.columns = {(*column, status): n for column, counted in per_column.items() for status, n in counted.items()}
    tally.ran, tally.layout_checked, tally.layout_missed = ran, layout_checked, layout_missed
    tally.timing_layout_missed, tally.nonfinite, tally.with_result = timing_layout_missed, nonfinite, with_result
    return tally


@per_run
def distinct_rows(run: RunModel) -> list[tuple[int, int, bool]]:
    """The matrix's row keys, each once, first seen first (worked out once per run)."""
    return list(dict.fromkeys(cell_tally(run).row_keys))


_IS_REPEAT = itemgetter(2)


@per_run
def op_cells(run: RunModel) -> tuple[dict[str, int], list[CellRecord], list[CellRecord]]:
    """Per executed op the number of cells that ran it; the cells measured and not (worked out once per run)."""
    tally = cell_tally(run)
    per_op: dict[str, int] = {}
    # Cells share their op list (runmodel keeps each distinct list once): the tally counts
    # the lists, and here their ops.
    for items, n in tally.op_lists.items():
        for op in items:
            per_op[op] = per_op.get(op, 0) + n
    return per_op, tally.measured, tally.unmeasured
