"""Section 8, Profiles, artifacts and provenance; and the per-cell table behind a capped report (details.csv)."""

from __future__ import annotations

import os
from datetime import datetime, timezone
from collections.abc import Mapping
from typing import Any

from reportgen._version import __version__
from reportgen.model.provenance import code_and_data, installed_words
from reportgen.model.runmodel import CellRecord, RunModel
from reportgen.contract.times import utc_time
from reportgen.render.sections.common import capped_facts, fact_rows, Row


def generated_at(run: RunModel) -> str:
    """The page's date, with what it is: from SOURCE_DATE_EPOCH when set ('generated ...'), else
    the log's own end or start ('run finished ...'), never the wall clock, so the same log gives
    the same bytes; it read 'generated' beside a time the report was not made at."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch and epoch.isdigit():
        return "generated " + datetime.fromtimestamp(int(epoch), timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    if run.end is not None:
        return f"run {'finished' if run.end.status == 'complete' else 'aborted'} {to_the_second(run.end.finished_at)}"
    return f"run started {to_the_second(run.start.started_at)} (no end recorded)"


def to_the_second(stamp: str) -> str:
    """An ISO time from the log shown to the second in UTC ('2026-11-29 23:05:30 UTC'); text
    that is not an ISO time is shown as it is."""
    when = utc_time(stamp)
    return stamp if when is None else when.strftime("%Y-%m-%d %H:%M:%S UTC")


def provenance_rows(run: RunModel, judged_with: str = "") -> list[Row]:
    rows = [
        Row("run id", run.start.run_id, "run_start"),
        Row("written by", run.start.collector, "run_start"),
        Row("origin", run.start.origin + (f": {run.start.origin_note}" if run.start.origin_note else ""), "run_start"),
        Row("command", " ".join(run.start.command), "run_start"),
        Row(
            "started / finished",
            f"{run.start.started_at} / {run.end.finished_at if run.end else 'no run_end'}",
            "run_start, run_end",
        ),
        Row("log file", os.path.basename(run.path), ""),
    ]
    rows += [Row(item.key, item.value, item.where) for item in code_and_data(run)]
    if judged_with:
        rows.append(Row("judged with", judged_with, "this report"))
    rows.append(Row("judged by", f"reportgen {__version__}", "this report"))
    task = run.start.scheduled
    if task is not None:
        where = ", ".join(
            part
            for part in (
                f"environment {task.environment}" if task.environment else "",
                f"task {task.task_index}" if task.task_index is not None else "",
                f"attempt {task.attempt}" if task.attempt else "",
                f"{task.scheduler} job {task.job_id}" if task.scheduler or task.job_id else "",
                f"node {task.node}" if task.node else "",
            )
            if part
        )
        rows.append(
            Row(
                "campaign task",
                f"{task.campaign} ({task.campaign_id})" + (f": {where}" if where else ""),
                "run_start.scheduled",
            )
        )
    if run.environment:
        rows += [Row(f"device {r.label}", r.value, r.source) for r in fact_rows(run.environment.device)]
        env = [Row(f"env {k}", v, "environment.env_vars") for k, v in sorted(run.environment.env_vars.items())]
        rows += capped_facts(env, "env vars", run)
        rows += [
            Row(f"installed {a.name}", installed_words(a), "environment.artifacts") for a in run.environment.artifacts
        ]
    return rows


DETAIL_COLUMNS = (
    "case",
    "batch",
    "length",
    "layout",
    "dtype",
    "mode",
    "status",
    "mismatched",
    "total",
    "max_abs",
    "cold_s",
    "cold_cache_condition",
    "warm_median_s",
    "warm_stability",
    "first_token_median_s",
    "first_token_stability",
    "decode_token_median_s",
    "decode_token_stability",
    "timing_layout_missed",
    "peak_device_memory_bytes",
    "log_line",
    "failure",
    "warnings",
    "performance_stopped",
)


def detail_rows(
    run: RunModel,
    stability: Mapping[str, str] | None = None,
    stopped: bool = False,
    series: Mapping[str, tuple[Any, ...]] | None = None,
) -> list[tuple[Any, ...]]:
    """One flat row per planned cell (DETAIL_COLUMNS): the full table behind a capped report.

    ``log_line`` is the line of the cell's case_result (empty for an untested cell), which
    holds the mismatch figures; the times (of a passing cell only: an untested or failing cell's
    figures count for nothing and stay in its log) come from the cell's timing event, each beside its
    scope: the cold call's cache condition, and the warm series' stability as the judge
    classified it (``stability``: case -> 'stable', 'unstable' or 'unclassified'; only a stable
    median decides anything), a generation cell's two warm series as the judge gives them
    (``series``: case -> first token's median and word, decode per token's median and word), and
    the timed calls fed another layout than the cell's
    (``timing_layout_missed``: 'warm', 'cold' or both, ';'-separated; such a figure is not the
    cell's). ``failure`` and ``warnings`` (one a line) are the full texts that
    the page cuts (``clip``). ``performance_stopped`` (``stopped``: the judge's
    ``Disposition.performance_stopped`` is not empty) is the same on every row of a run: True
    when mismatching or errored cells without a verdict stop its performance acceptance, so that none of
    its timings, stable or not, is a performance result.
    """
    verdicts = stability or {}
    columns = series or {}
    return [detail_row(c, verdicts.get(c.case), stopped, columns.get(c.case)) for c in run.cells]


def detail_row(
    c: CellRecord, stability: str | None = None, stopped: bool = False, series: tuple[Any, ...] | None = None
) -> tuple[Any, ...]:
    """One cell's row of DETAIL_COLUMNS (see ``detail_rows``)."""
    p = c.planned
    # A passing cell's timings only, as the page and index.parquet give them: a cell the judge
    # calls untested (its layout not measured) or failing has none that counts (the log keeps them).
    cold = c.cold_s if c.status == "pass" else None
    warm = c.warm_median_s if c.status == "pass" else None
    return (
        p.case,
        p.batch,
        p.length,
        p.layout,
        p.dtype,
        p.mode,
        c.status,
        c.mismatched,
        c.total,
        c.max_abs,
        cold,
        c.cold_condition if cold is not None else None,
        warm,
        stability if warm is not None else None,
        *(series or (None, None, None, None)),
        ";".join(c.timing_layout_missed),
        c.peak_device_bytes,
        c.result_line,
        c.failure_text or "",
        "\n".join(c.warnings) if c.warnings else "",
        stopped,
    )
