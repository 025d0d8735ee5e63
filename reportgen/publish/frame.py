"""Runs as one tidy table: a row per planned cell per run, for notebooks, history and trends.

    >>> import reportgen
    >>> cells = reportgen.load_cells(["runs/"])          # logs, run folders or folders of runs
    >>> steady = cells[(cells.status == "pass") & (cells.warm_stability == "stable") & ~cells.performance_stopped]
    >>> steady.groupby(["target", "case"]).warm_median_s.median()

Every figure comes from the run's log as reportgen read and judged it: a cell without a
result is ``untested``, a figure the log does not hold is missing (``NaN`` / ``<NA>``), never 0.
Only logs that validate are loaded; a log that does not raises ``ReportInputError`` naming it.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from reportgen.judge.backend_docs import version_keys
from reportgen.judge.timing_stability import (
    figure_caveats,
    SERIES_COLUMN,
    TOTALS,
    generation_before,
    generation_timing,
    generation_wait_unread,
    generation_waited,
    generation_warm,
    series_flag,
    stability_word,
)
from reportgen.model.runmodel import STATUS_ORDER

if TYPE_CHECKING:
    import pandas as pd

    from reportgen.publish.summary import CellSummary, RunSummary
    from reportgen.render.report import JudgedRun

VERSIONS = version_keys()  # python, torch, then each target's packages (its constraint file)

# Column name -> pandas dtype; the order is the frame's column order.
COLUMNS: dict[str, str] = {
    "run_id": "string",
    "workload": "string",
    "target": "string",
    "intended_target": "string",
    "backend_family": "string",
    **{f"{name}_version": "string" for name in VERSIONS},
    # NaT where the log's started_at is not an ISO time that pandas can hold (years 1677-2262).
    "started_at": "datetime64[ns, UTC]",
    "synthetic": "bool",
    # Where the plan says the weights come from (synthetic: measured, of no trained model;
    # pretrained; none); <NA> where the log does not say. Not ``synthetic``, a hand-written fixture.
    "weights_origin": "string",
    "run_complete": "bool",
    "disposition": "string",
    # Mismatching cells without a verdict stop the run's performance acceptance: no timing of
    # the run is a performance result, stable or not.
    "performance_stopped": "bool",
    "case": "string",
    "batch": "Int64",
    "length": "Int64",
    "layout": "string",
    "dtype": "string",
    "mode": "string",
    "repeat_of": "string",
    "status": "category",
    "mismatched": "Int64",
    "total": "Int64",
    "max_abs": "float64",
    "fallback_ops": "Int64",
    "graph_breaks": "Int64",
    "recompile_limit_hit": "bool",
    "cold_s": "float64",
    "warm_median_s": "float64",
    "warm_iqr_s": "float64",
    # The warm series' classification (judge/timing_stability): 'stable', 'unstable' or
    # 'unclassified'; only a stable series' median decides anything.
    "warm_stability": "string",
    # The timed calls fed another layout than the cell's ('warm', 'cold', ';'-separated; empty:
    # none): such a figure is not the cell's.
    "timing_layout_missed": "string",
    "warm_samples": "Int64",
    # A passing generation cell's two warm series (time to first token; decode per token): the
    # median of its first run's series and that series' classification, as warm_stability's.
    "first_token_median_s": "float64",
    "first_token_stability": "string",
    "decode_token_median_s": "float64",
    "decode_token_stability": "string",
    "log": "string",
    "result_line": "Int64",
}


def cell_rows(judged: JudgedRun) -> list[dict[str, object]]:
    """One plain row per planned cell of a judged run (the frame's rows, before typing)."""
    run = judged.run
    env = run.environment
    versions = {name: run.version(name) for name in VERSIONS}
    common = {
        "run_id": run.start.run_id,
        "workload": run.start.workload,
        "target": run.start.target,
        "intended_target": getattr(run.plan, "intended_target", None) if run.plan else None,
        "backend_family": env.backend_family if env else None,
        **{f"{name}_version": value for name, value in versions.items()},
        "started_at": run.start.started_at,
        "synthetic": run.synthetic,
        "weights_origin": (getattr(run.plan, "weights_origin", None) or None) if run.plan else None,
        "run_complete": run.complete,
        "disposition": judged.disposition.outcome,
        "performance_stopped": bool(judged.disposition.performance_stopped),
        "log": str(judged.log),
    }
    generating = {c.case for c in run.cells_with("generation")}  # their series are read from their events
    rows = []
    for cell in run.cells:
        # The flat warm facts are the last warm series'; a passing cell's only, as details.csv,
        # the page and index.parquet give them (an untested or failing cell's count for nothing).
        timed = cell.warm_median_s is not None and cell.status == "pass"
        planned = cell.planned
        rows.append(
            {
                **common,
                "case": planned.case,
                "batch": planned.batch,
                "length": planned.length,
                "layout": planned.layout,
                "dtype": planned.dtype,
                "mode": planned.mode,
                "repeat_of": planned.repeat_of,
                "status": cell.status,
                "mismatched": cell.mismatched,
                "total": cell.total,
                "max_abs": cell.max_abs,
                "fallback_ops": len(cell.fallback_items) if cell.fallback_status == "measured" else None,
                "graph_breaks": len(cell.graph_break_reasons) if cell.compiled else None,
                "recompile_limit_hit": cell.recompile_limit_hit,
                "cold_s": cell.cold_s if cell.status == "pass" else None,
                "warm_median_s": cell.warm_median_s if timed else None,
                "warm_iqr_s": cell.warm_iqr_s if timed else None,
                "warm_stability": stability_word(
                    cell.warm_samples,
                    cell.warm_waited,
                    cell.warm_before,
                    cell.warm_logged,
                    unread=cell.warm_wait_unread,
                )
                if timed
                else None,
                "timing_layout_missed": ";".join(cell.timing_layout_missed),
                "warm_samples": len(cell.warm_samples) if timed else None,
                **_generation_columns(cell.case in generating and cell.status == "pass", cell),
                "result_line": cell.result_line,
            }
        )
    return rows


def _generation_columns(generates: bool, cell: Any) -> dict[str, object]:
    """first_token_* and decode_token_* of one cell (None for a cell that is no passing generation cell)."""
    found: dict[str, object] = {}
    timing = generation_timing(cell) if generates else None
    waited = generation_waited(timing)
    for series, prefix in SERIES_COLUMN.items():
        warm = generation_warm(cell, series) if generates else None
        found[f"{prefix}_median_s"] = warm.median_s if warm is not None else None
        # A decode series' repetitions' whole decode times too, as index.parquet and diff read it.
        decode = timing if timing is not None and series == "decode_token" else None
        found[f"{prefix}_stability"] = (
            stability_word(
                warm.samples_s,
                waited,
                generation_before(timing, series),
                repetitions=decode.repetitions if decode is not None else None,
                totals_before=generation_before(decode, TOTALS) if decode is not None else None,
                unread=generation_wait_unread(timing),
            )
            if warm is not None
            else None
        )
    return found


def cells_frame(rows: Iterable[dict[str, object]]) -> pd.DataFrame:
    """Type plain rows into the documented columns (empty input gives an empty, typed frame)."""
    return _typed(rows, COLUMNS)


def _typed(rows: Iterable[dict[str, object]], columns: dict[str, str]) -> pd.DataFrame:
    import pandas as pd

    frame = pd.DataFrame(list(rows), columns=list(columns))
    for column, dtype in columns.items():
        if dtype.startswith("datetime"):
            # A log's started_at is untrusted text: one that is not an ISO time within pandas'
            # range (1677-2262) is missing (NaT), and the run is placed last, not a failed build.
            when = pd.to_datetime(frame[column], utc=True, format="ISO8601", errors="coerce")
            held = when.between(pd.Timestamp.min.tz_localize("UTC"), pd.Timestamp.max.tz_localize("UTC"))
            frame[column] = when.where(held).astype(dtype)
        elif dtype == "category":
            frame[column] = pd.Categorical(frame[column], categories=STATUS_ORDER)
        elif dtype == "bool":
            frame[column] = frame[column].astype(bool)
        else:
            frame[column] = frame[column].astype(dtype)
    return frame


HISTORY_COLUMNS: dict[str, str] = {
    "run_id": "string",
    "started_at": "datetime64[ns, UTC]",
    "target": "string",
    "case": "string",
    "status": "category",
    "warm_median_s": "float64",
    "warm_q1_s": "float64",
    "warm_q3_s": "float64",
    "cold_s": "float64",
    "compile_s": "float64",
    "cold_condition": "string",
    "compile_cache": "string",
    "caveats": "string",
    "cold_caveats": "string",
    "compile_caveats": "string",
}


UNJUDGED_WAIT = "CPU wait not recorded: contention not judged"


def _caveats(summary: RunSummary, cell: CellSummary, figure: float | None, call: str = "") -> str:
    """Why a point of the trend (``figure``: the cell's warm median, cold call or compile time;
    ``call``: 'warm' or 'cold', the timed call it is of) is not a performance result on its own
    ('' when none, and where the cell has no such figure)."""
    if figure is None:
        return ""
    flags = []
    if summary.synthetic:
        flags.append("synthetic fixture, not a measurement")
    if summary.performance_stopped:
        flags.append("performance acceptance stopped in this run")
    flags += figure_caveats(
        cell.cpu_fallback, cell.recompile_limit, [call] if call and call in cell.layout_missed else ()
    )
    return "; ".join(flags)


def history_frame(summaries: Iterable[RunSummary]) -> pd.DataFrame:
    """The site's stored run summaries as cells over time (what the workload trend charts read).

    Timings are present only for cells that passed (the summaries keep no other timing); the
    warm quartiles come from the kept warm samples.
    """
    import numpy as np

    rows: list[dict[str, Any]] = []
    series: dict[int, list[tuple[int, list[float]]]] = {}  # by length: (row, warm samples)
    for s in summaries:
        for case, cell in s.cells.items():
            # A warm series that decides nothing (unstable) leaves a gap in the trend, named in its caveats.
            unsteady = series_flag(
                cell.warm_samples_s,
                cell.warm_waited,
                before=cell.warm_before,
                logged=cell.warm_logged,
                unread=cell.warm_wait_unread,
            )
            if cell.warm_samples_s and not unsteady:
                series.setdefault(len(cell.warm_samples_s), []).append((len(rows), cell.warm_samples_s))
            rows.append(
                {
                    "run_id": s.run_id,
                    "started_at": s.started_at,
                    "target": s.target,
                    "case": case,
                    "status": cell.status,
                    "warm_median_s": None if unsteady else cell.warm_median_s,
                    "warm_q1_s": None,
                    "warm_q3_s": None,
                    "cold_s": cell.cold_s,
                    "compile_s": cell.compile_s,
                    "cold_condition": cell.cold_condition,
                    "compile_cache": cell.compile_cache,
                    "caveats": "; ".join(
                        filter(
                            None,
                            (
                                _caveats(s, cell, cell.warm_median_s, "warm"),
                                f"{unsteady}: warm point left out" if unsteady else "",
                                # A log that did not record the loop's CPU wait (before 1.4, or a
                                # host that could not read it): contention was not judged.
                                UNJUDGED_WAIT
                                if cell.warm_samples_s and cell.warm_waited is None and not unsteady
                                else "",
                            ),
                        )
                    ),
                    # The cold-call and compile trends' points, by the warm point's rule (its
                    # stability aside: a cold call or compile time is one measurement).
                    "cold_caveats": _caveats(s, cell, cell.cold_s, "cold"),
                    "compile_caveats": _caveats(s, cell, cell.compile_s),
                }
            )
    # The quartiles pandas' Series.quantile gives (numpy's linear method), for all the series
    # of one length at once: a site of long runs holds tens of thousands.
    for group in series.values():
        quartiles = np.quantile(np.array([samples for _, samples in group], dtype="float64"), (0.25, 0.75), axis=1)
        for (row, _), q1, q3 in zip(group, quartiles[0].tolist(), quartiles[1].tolist()):
            rows[row]["warm_q1_s"], rows[row]["warm_q3_s"] = q1, q3
    return _typed(rows, HISTORY_COLUMNS)


def load_cells(paths: Iterable[str | Path] | str | Path) -> pd.DataFrame:
    """Read, validate and judge every log under ``paths`` (logs, run folders or folders of runs);
    one row per planned cell per run. Never a frame quietly without some runs: a path that does
    not exist raises FileNotFoundError naming it, and any other entry that is not read (a FIFO,
    a log past the size limit, a link out of its folder) or a log that is not valid raises
    ReportInputError saying which and why, as ``reportgen site`` fails for them, and so does a
    folder that holds no log."""
    from reportgen.render.report import ReportInputError, judge_log
    from reportgen.storage.local import find_logs, shown

    given = [Path(p) for p in ([paths] if isinstance(paths, (str, Path)) else paths)]
    found = find_logs(given)
    for skipped in found.skipped:
        if not os.path.lexists(skipped.path):
            raise FileNotFoundError(errno.ENOENT, "reportgen.load_cells: no such file or folder", str(skipped.path))
    if found.skipped:
        raise ReportInputError("\n".join(s.format() for s in found.skipped))
    # A folder that holds no log (an empty or mistyped one), as `reportgen validate` refuses it.
    logs = [Path(os.path.realpath(entry.path)) for entry in found.logs]  # as find_logs reached them
    empty = [p for p in given if p.is_dir() and not any(log.is_relative_to(os.path.realpath(p)) for log in logs)]
    if empty or not given:
        where = ", ".join(shown(p) for p in empty) or "the paths given (none)"
        raise ReportInputError(f"reportgen.load_cells: no run log (*.jsonl) in {where}")
    rows: list[dict[str, object]] = []
    for entry in found.logs:
        rows.extend(cell_rows(judge_log(entry.path, entry.annotations, beside=False)))
    return cells_frame(rows)
