"""Section 3, Matrix: one row per shape, one column per dtype, layout and mode, each cell's status."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from reportgen.model.runmodel import COLUMN, RunModel, shape_label, STATUS_ORDER
from reportgen.render.sections.common import anchor, DETAIL_CAP, SYMBOLS
from reportgen.render.sections.tally import distinct_rows, cell_tally


@dataclass
class StatusCell:
    case: str
    status: str
    symbol: str
    anchor: str
    note: str = ""  # why an untested cell is untested, when the log says
    failing: str = ""  # what a failed cell failed on ("outputs", "updated parameters", ...)
    # The matrix cell is the cell's place on the page (its anchor's element): no other section
    # has an entry for it (an untested cell, a pass without a timing row), so links land here.
    target: bool = False


@dataclass
class MatrixView:
    columns: list[str]
    rows: list[tuple[str, list[StatusCell | None]]]
    counts: list[tuple[str, str, int]]  # status counts (the group table's columns)
    by_group: list[dict[str, Any]]
    truncated: int = 0
    # The header: status counts, except that non-finite counts every cell whose outputs hold a
    # NaN or Inf (whatever its status), labelled so.
    header: list[tuple[str, str, str, int]] = field(default_factory=list)
    # Of those, the cells whose status is not non-finite: their NaN or Inf lies where they are
    # not judged (outside a judged region, or where the reference holds the same).
    nonfinite_unjudged: int = 0


def matrix_view(run: RunModel, failing: dict[str, str] | None = None) -> MatrixView:
    """Shape rows by dtype/layout/mode columns; the first DETAIL_CAP rows, counts over all."""
    tally = cell_tally(run)
    # The tally's counts are grouped by column, columns first seen first: so are these.
    columns = list(dict.fromkeys(combo[:3] for combo in tally.columns))
    keys = tally.row_keys
    row_keys = distinct_rows(run)
    grid: dict[tuple[int, int, bool], dict[tuple[str, str, str], StatusCell]] = {}
    shown = set(row_keys[:DETAIL_CAP])
    for c, key in zip(run.cells, keys):
        if key not in shown:
            continue
        grid.setdefault(key, {})[COLUMN(c)] = StatusCell(
            c.case,
            c.status,
            SYMBOLS[c.status],
            anchor(c.case),
            c.untested_reason or "",
            (failing or {}).get(c.case, ""),
        )
    counts = run.counts()
    return MatrixView(
        columns=[" · ".join(column) for column in columns],
        rows=[(_row_name(key), [grid[key].get(column) for column in columns]) for key in row_keys[:DETAIL_CAP]],
        counts=[(s, SYMBOLS[s], counts[s]) for s in STATUS_ORDER],
        header=[
            (s, SYMBOLS[s], "cells with non-finite outputs", tally.nonfinite)
            if s == "nonfinite"
            else (s, SYMBOLS[s], s, counts[s])
            for s in STATUS_ORDER
        ],
        by_group=_status_by_group(run),
        truncated=len(row_keys) - min(len(row_keys), DETAIL_CAP),  # the rows are distinct
        nonfinite_unjudged=max(0, tally.nonfinite - counts["nonfinite"]),
    )


def _row_name(key: tuple[int, int, bool]) -> str:
    return shape_label(key[0], key[1]) + (" repeat (cache check)" if key[2] else "")


def _status_by_group(run: RunModel) -> list[dict[str, Any]]:
    """Status counts per dtype and mode, over every cell."""
    groups: dict[tuple[str, str], Counter[str]] = {}
    for (dtype, _, mode, status), n in cell_tally(run).columns.items():
        groups.setdefault((dtype, mode), Counter())[status] += n
    return [
        {"group": f"{dtype} · {mode}", "counts": [(s, SYMBOLS[s], counts[s]) for s in STATUS_ORDER]}
        for (dtype, mode), counts in sorted(groups.items())
    ]


def mark_targets(matrix: MatrixView, elsewhere: set[str]) -> None:
    """Make each shown cell that no other section gives an element (``elsewhere``: the anchors
    the page's other sections define) its own link target, so no link to it lands nowhere."""
    for _, cells in matrix.rows:
        for cell in cells:
            if cell is not None and cell.anchor not in elsewhere:
                cell.target = True
