"""The comparison page's view model: the Comparison as rows of text both templates render.

Decides wording, number formats and order; knows no HTML.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

from reportgen.judge.backend_docs import version_keys
from reportgen.judge.comparison import (
    CellComparison,
    CellTiming,
    CellSide,
    Comparison,
    SeriesTiming,
    Side,
    compile_cost_text,
)
from reportgen.judge.intervals import CONFIDENCE
from reportgen.judge.ratio_words import estimate_text, export_ratio, interval_text, ratio_number
from reportgen.judge.timing_stability import (
    FLAG as STABILITY_FLAG,
    SERIES_COLUMN,
    UNCLASSIFIED_FLAG,
    UNCLASSIFIED_SYMBOL,
)
from reportgen.render.charts import Figure, ratio_figure
from reportgen.render.labels import human, status_words
from reportgen.render.memory import NOT_MEASURED, bytes_text
from reportgen.render.view import DETAIL_CAP, SYMBOLS, Row, anchor, fmt
from reportgen.render.sections.common import FACTS_SHOWN, clip, fmt_time

VERDICT_SYMBOLS = {
    "faster": "▼",
    "slower": "▲",
    "no clear difference": "≈",
    "unstable timing": "≋",
    UNCLASSIFIED_FLAG: UNCLASSIFIED_SYMBOL,
    "flagged, not judged": "⚑",
}
CHANGED_SYMBOL = "≠"  # a pass under a criterion the other run did not declare: never shown as a plain pass
VERSION_KEYS = version_keys()  # python, torch, then each target's packages (its constraint file)
COMPARE_DETAILS = "compare-details.csv"  # every compared cell, one row each (the pages show DETAIL_CAP rows per table)

METHOD = (
    "Warm ratio = the candidate's warm time over the baseline's (below 1: the candidate is faster), "
    "estimated from every kept warm sample: the median of all pairwise log time ratios "
    f"(Hodges-Lehmann), with the {CONFIDENCE:.0%} interval of order statistics that the Mann-Whitney "
    "rank test puts around it, widened where a loop's consecutive thirds disagree or where the "
    "timer's smallest step between samples is coarse beside the median. It is not the ratio of the "
    "two warm medians shown, which can lie "
    "outside the interval for a skewed or bimodal series. A cell is 'slower' when the whole "
    "interval lies above 1, 'faster' when it lies below 1, otherwise 'no clear difference': the "
    "noise decides, not a fixed percentage. With one run a side "
    "the interval covers sampling within the two runs only. With replicates (several runs a "
    "side) it comes from a hierarchical bootstrap (fixed seed) over runs and then each run's "
    "samples, of the difference between the sides' mean log run medians, so it includes the "
    "variation between runs; a side's warm median shown is then the geometric mean of its runs' "
    "medians, so the ratio is of the two figures shown. A side whose runs' medians spread over more than a fifth "
    "of their middle reads 'unstable timing: the runs disagree' and decides nothing. "
    "A cell whose warm series, in any run, is not stable reads 'unstable timing' and decides "
    "nothing: no interval, and its ratio is of the two medians shown; a cell whose ratio carries another flag (a changed host, "
    "criterion or timing scope, CPU fallback) reads 'flagged, not judged'. The geometric mean covers the cells timed on "
    "both sides without a flag and with stable series; its interval combines the cells' "
    "intervals in log space."
)


@dataclass(frozen=True)
class SideView:
    role: str
    run_id: str
    target: str
    family: str
    device: str
    disposition: str
    synthetic: bool
    complete: bool


@dataclass(frozen=True)
class CellRow:
    case: str
    anchor: str
    shape: str
    layout: str
    dtype: str
    mode: str
    status: tuple[tuple[str, str, str], tuple[str, str, str]]  # (status, label, symbol): baseline, candidate
    errors: tuple[str, str]
    task: tuple[str, str]
    reference_agree: str
    reference_anchor: str
    criteria: str = ""  # "judged under a changed criterion: ..." when the two runs' criteria for it differ


@dataclass(frozen=True)
class TimingRow:
    case: str
    anchor: str
    warm: tuple[str, str]
    ratio: str
    interval: str
    verdict: str
    symbol: str
    samples: str
    cold: str
    compile: str
    flags: str
    in_geomean: bool
    memory: str = "not measured"  # peak device memory, baseline → candidate
    cell_shown: bool = True  # its correctness row is on the page (the table is capped)
    series: str = ""  # a generation cell's series in words ("decode per token"); "": the cell's warm series


@dataclass(frozen=True)
class CompareView:
    title: str
    headline: str
    baseline: SideView
    candidate: SideView
    names: tuple[str, str]  # "baseline (cpu)", "candidate (cuda)": every figure's column names its side
    notes: list[str]
    honesty: str
    criteria: list[str]  # every criterion the two runs declared differently, shown before any result
    version_changes: list[tuple[str, str, str]]  # (version, baseline, candidate), shown before any result
    code_and_data: list[tuple[str, str, str]]  # (item, baseline, candidate), shown before any result
    code_scope: str  # what the code-and-data items cover (judge.changes.CODE_SCOPE)
    host: list[tuple[str, str, str]]  # (host fact, baseline, candidate), shown before any result
    host_unknown: str  # where a run recorded no host facts: a host change cannot be ruled out
    interval_scope: str  # what variation the intervals cover
    replicates: tuple[tuple[str, ...], tuple[str, ...]]
    versions: list[tuple[str, str, str]]
    cells: list[CellRow]
    references: list[tuple[str, str, str, str]]
    task_metric: str
    timings: list[TimingRow]
    not_timed: list[tuple[str, str]]
    generation: list[TimingRow]  # generation cells' warm series (first token, decode per token), one row each
    verdict_counts: list[tuple[str, str, int]]
    geomean: list[Row]
    speedups: list[tuple[str, str, str]]
    not_comparable: list[tuple[str, str]]
    method: str
    # A long pair's tables are capped at DETAIL_CAP rows each (a page is bounded in bytes);
    # how many each holds in all, and the file that holds every cell.
    totals: dict[str, int]
    details: str = COMPARE_DETAILS
    cap: int = DETAIL_CAP
    # Where each side's run page is (a site), or "" (a standalone comparison names its logs only).
    figures: tuple[Figure, ...] = ()  # per-cell warm ratios with intervals, eager and compiled apart
    run_hrefs: dict[str, str] = field(default_factory=dict)  # run id -> its page, replicates too
    downloads: tuple[tuple[str, str], ...] = ()  # (file name, what it holds), written beside the page
    # The cold first call's and the compile's ratios are of one call a side, with no host figures
    # read around them and no stability rule: said above the table that shows them.
    one_call_note: str = (
        "The cold first call and compile ratios are of one call on each side, with no host figures read around "
        "those calls and no stability rule applied: a busy host at that moment moves them, and they decide nothing "
        "beyond those calls."
    )


def _side_view(side: Side) -> SideView:
    return SideView(
        side.role, side.run_id, side.target, side.family, side.device, side.disposition, side.synthetic, side.complete
    )


def _errors(side: CellSide) -> str:
    if side.max_abs is None and side.mismatched is None:
        return "not measured"
    # Named "outputs": beside a status that failed on something else (updated parameters, loss)
    # a bare "0/4 mismatched" would read as a contradiction.
    mismatched = (
        f"outputs {side.mismatched}/{side.total} mismatched"
        if side.mismatched is not None
        else "output mismatches not measured"
    )
    where = f"; {side.diverges}" if side.diverges and side.status != "pass" else ""
    return f"{mismatched}, max abs {fmt(side.max_abs, digits=3)}, max rel {fmt(side.max_rel, digits=3)}{where}"


def _task(side: CellSide) -> str:
    if side.task_value is None and side.task_metric is None:
        return "not measured"
    verdict = {True: "met", False: "not met", None: "no criterion"}[side.task_passed]
    return f"{fmt(side.task_value, digits=6)} ({verdict})"


def _status_text(side: CellSide) -> str:
    return status_words(side.status, side.failing, side.explained, side.verdict)


def _cell_row(cell: CellComparison) -> CellRow:
    statuses = tuple((s.status, _status_text(s), SYMBOLS.get(s.status, "?")) for s in (cell.baseline, cell.candidate))
    changed = "; ".join(cell.changed_criteria)
    if changed and cell.candidate.status == "pass":
        statuses = (statuses[0], ("changed", f"passes under a changed criterion: {changed}", CHANGED_SYMBOL))
    agree = {True: "yes", False: "no", None: "not measured"}[cell.reference.agree]
    return CellRow(
        case=cell.case,
        anchor=anchor(cell.case),
        shape=cell.shape,
        layout=cell.layout,
        dtype=cell.dtype,
        mode=cell.mode + (" (cache check)" if cell.repeat_of else ""),
        status=statuses,  # type: ignore[arg-type]
        errors=(_errors(cell.baseline), _errors(cell.candidate)),
        task=(_task(cell.baseline), _task(cell.candidate)),
        reference_agree=agree,
        reference_anchor=_reference_anchor(cell.reference.key),
        criteria="; ".join(
            filter(
                None,
                (
                    f"judged under a changed criterion: {changed}" if changed else "",
                    f"status not the same in every run of a side: {cell.replicate_statuses}"
                    if cell.replicate_statuses
                    else "",
                ),
            )
        ),
    )


def _reference_anchor(key: str) -> str:
    return "ref-" + anchor(key).removeprefix("case-")


def _reference_rows(comparison: Comparison) -> list[tuple[str, str, str, str]]:
    """One row per set of inputs: (anchor, input key, agree, how it is known)."""
    rows: dict[str, tuple[str, str, str, str]] = {}
    for cell in comparison.cells:
        ref = cell.reference
        rows.setdefault(
            ref.key,
            (
                _reference_anchor(ref.key),
                ref.key,
                {True: "yes", False: "no", None: "not measured"}[ref.agree],
                ref.text,
            ),
        )
    return list(rows.values())


def _ratio(value: float | None) -> str:
    return "not measured" if value is None else ratio_number(value, unit="x")


def _speedup(value: float | None, flag: str | None) -> str:
    """A compiled-over-eager speedup, or why none is given where both cells passed: an unstable
    or unclassified series (with its symbol), or a stopped performance acceptance."""
    if flag in (STABILITY_FLAG, UNCLASSIFIED_FLAG):
        return f"{VERDICT_SYMBOLS[flag]} {flag}"
    return flag or _ratio(value)


def _memory(cell: CellComparison) -> str:
    """Peak device memory over the warm series on each side, or "not measured" when neither side has it."""
    sides = [cell.baseline.peak_memory_bytes, cell.candidate.peak_memory_bytes]
    if sides == [None, None]:
        return NOT_MEASURED
    return " → ".join(NOT_MEASURED if b is None else bytes_text(b) for b in sides)


def _cold_text(cell: CellComparison) -> str:
    """The cold first call's ratio with both times and the cache condition in words; where the
    two sides' conditions differ, each side's condition instead of a ratio."""
    timing = cell.timing
    assert timing is not None
    b, c = cell.baseline, cell.candidate
    if timing.cold_ratio is not None:
        return f"{_ratio(timing.cold_ratio)} ({fmt_time(b.cold_s)} → {fmt_time(c.cold_s)}, {human(b.cold_condition or '') or 'cache condition not recorded'})"
    if b.cold_condition and c.cold_condition and b.cold_condition != c.cold_condition:
        return f"not compared: baseline {human(b.cold_condition)}, candidate {human(c.cold_condition)}"
    return timing.cold_note


def _interval(judged: CellTiming | SeriesTiming) -> str:
    warm = judged.warm
    if warm.low is None or warm.high is None:
        return judged.no_interval
    return "{} to {}".format(*interval_text(warm.low, warm.high))


def _series_row(cell: CellComparison, series: SeriesTiming) -> TimingRow:
    """One generation series' ratio, as a timing row without the cell's cold, compile and memory."""
    warm = series.warm
    return TimingRow(
        case=cell.case,
        anchor=anchor(cell.case),
        warm=(fmt_time(series.baseline_median_s), fmt_time(series.candidate_median_s)),
        ratio=estimate_text(warm.ratio, warm.low, warm.high),
        interval=_interval(series),
        verdict=series.verdict,
        symbol=VERDICT_SYMBOLS[series.verdict],
        samples=f"{warm.baseline_samples} / {warm.candidate_samples}",
        cold="",
        compile="",
        flags="; ".join(series.flags) or "none",
        in_geomean=series.in_geomean,
        memory="",
        series=series.words,
    )


def _timing_row(cell: CellComparison) -> TimingRow:
    timing = cell.timing
    assert timing is not None
    warm = timing.warm
    interval = _interval(timing)
    cold = _cold_text(cell)
    compile_text = "not compiled" if cell.mode != "compiled" else _ratio(timing.compile_ratio)
    b, c = cell.baseline, cell.candidate
    if timing.compile_ratio is None and b.compile_s is not None and c.compile_s is not None and cell.mode == "compiled":
        compile_text = f"not compared: baseline {b.compile_cache} ({fmt_time(b.compile_s)}), candidate {c.compile_cache} ({fmt_time(c.compile_s)})"
    if timing.compile_ratio is not None:
        compile_text = f"{_ratio(timing.compile_ratio)} ({fmt_time(cell.baseline.compile_s)} → {fmt_time(cell.candidate.compile_s)})"
        if cell.repeat_of:
            compile_text += ", cache check: first call of a shape compiled before"
    return TimingRow(
        case=cell.case,
        anchor=anchor(cell.case),
        warm=(fmt_time(timing.medians[0]), fmt_time(timing.medians[1])),
        ratio=estimate_text(warm.ratio, warm.low, warm.high),
        interval=interval,
        verdict=timing.verdict,
        symbol=VERDICT_SYMBOLS[timing.verdict],
        samples=f"{warm.baseline_samples} / {warm.candidate_samples}",
        cold=cold,
        compile=compile_text,
        flags="; ".join(timing.flags) or "none",
        in_geomean=timing.in_geomean,
        memory=_memory(cell),
    )


def _geomean_rows(comparison: Comparison) -> list[Row]:
    geo = comparison.geomean
    stop = comparison.timing_stop
    if stop is not None:  # the reason, not "not measured": no timing of the pair is compared
        return [Row("geometric mean of warm ratios", stop.note), Row("compile + first result per new shape", stop.note)]
    if geo is None:
        return [
            Row(
                "geometric mean of warm ratios",
                comparison.geomean_unpooled
                or "not measured: no cell timed on both sides without a flag and with stable series",
            )
        ]
    interval = (
        "not available (too few samples)"
        if geo.low is None or geo.high is None
        else "{} to {}".format(*interval_text(geo.low, geo.high))
    )
    return [
        Row(
            f"geometric mean of warm ratios ({comparison.candidate.short_name} / {comparison.baseline.short_name})",
            estimate_text(geo.ratio, geo.low, geo.high),
        ),
        Row(f"{geo.confidence:.0%} interval", interval),
        Row("verdict", geo.verdict),
        Row("variation the interval covers", comparison.interval_scope),
        Row("cells covered", comparison.geomean_coverage),
        *_compile_rows(comparison),
    ]


def _compile_rows(comparison: Comparison) -> list[Row]:
    """Compile + first result per new shape, one row per cache outcome (a miss compiles from
    scratch, a hit reads a cache: one median over both would describe neither)."""
    cost = comparison.compile_cost
    if not cost.shapes:
        return [
            Row("compile + first result per new shape", "not measured: no compiled new shape correct on both sides")
        ]
    rows = []
    for group, text in zip(cost.by_cache, compile_cost_text(cost, comparison.baseline, comparison.candidate)):
        rows.append(
            Row(
                f"compile + first result per new shape, {group.cache}",
                text.split(": ", 1)[1] + f" ({cost.shapes} compiled shape(s) correct on both)",
            )
        )
    return rows


def _ratio_figures(comparison: Comparison) -> tuple[Figure, ...]:
    """One chart per mode of every timed cell's warm ratio (the tables cap at DETAIL_CAP rows;
    a chart draws every cell). A cache check is drawn with the compiled cells it belongs to."""
    names = (comparison.baseline.short_name, comparison.candidate.short_name)
    figures = []
    for mode in ("eager", "compiled"):
        points = [
            (c.case, c.timing.warm.ratio, c.timing.warm.low, c.timing.warm.high)
            for c in comparison.timed
            if c.mode == mode and c.timing is not None
        ]
        # A ratio the table says decides nothing is drawn hollow, whichever side of 1 it lies.
        undecided = {c.case: c.timing.verdict for c in comparison.timed if c.timing is not None and c.timing.flags}
        figure = ratio_figure(mode, points, names, undecided) if points else None
        if figure is not None:
            figures.append(figure)
    return tuple(figures)


def _honesty(comparison: Comparison) -> str:
    parts = []
    for side in (comparison.baseline, comparison.candidate):
        parts.append(f"the {side.role} ran on {side.family} ({side.device})")
    text = "Each side is evidence for the machine it ran on and nothing else: " + ", ".join(parts) + "."
    text += "".join(f" Neither run is a {hardware} result." for hardware in comparison.hardware_not_run)
    notes = dict.fromkeys(s.adapter_note for s in (comparison.baseline, comparison.candidate) if s.adapter_note)
    return " ".join([text, *notes])


def _version_rows(base: dict[str, str], cand: dict[str, str], keys: list[str]) -> list[tuple[str, str, str]]:
    """The versions table: the first FACTS_SHOWN packages, clipped, then a row counting the rest
    (a valid log may record thousands; each log keeps them all), as a report page shows them."""
    where = "each run's log"
    rows = [
        (clip(k, where=where), clip(base.get(k, "unknown"), where=where), clip(cand.get(k, "unknown"), where=where))
        for k in keys[:FACTS_SHOWN]
    ]
    if len(keys) > FACTS_SHOWN:
        rows.append(("more versions", f"first {FACTS_SHOWN} of {len(keys):,} shown; all in {where}", ""))
    return rows


def build_compare_view(comparison: Comparison) -> CompareView:
    b, c = comparison.baseline, comparison.candidate
    keys = [k for k in VERSION_KEYS if k in b.versions or k in c.versions]
    keys += sorted(k for k in set(b.versions) | set(c.versions) if k not in keys)
    counts = comparison.verdict_counts()
    # Each table shows its first DETAIL_CAP rows. The references table lists the cells' inputs
    # in cell order, so the first DETAIL_CAP cells' inputs are among its rows on the page; a
    # timing row links to its cell's row only when that row is on the page.
    cells = [_cell_row(cell) for cell in comparison.cells[:DETAIL_CAP]]
    references = _reference_rows(comparison)
    timed = comparison.timed
    # A generation cell compared by its generation series is not listed as untimed.
    not_timed = [
        (cell.case, cell.timing_note) for cell in comparison.cells if cell.timing is None and not cell.generation
    ]
    shown_cells = {row.case for row in cells}
    timings = [_timing_row(cell) for cell in timed[:DETAIL_CAP]]
    timings = [row if row.case in shown_cells else replace(row, cell_shown=False) for row in timings]
    series = [_series_row(cell, s) for cell in comparison.generation for s in cell.generation]
    generation = [row if row.case in shown_cells else replace(row, cell_shown=False) for row in series[:DETAIL_CAP]]
    return CompareView(
        title=f"Comparison: {comparison.workload}, candidate {c.label} against baseline {b.label}",
        headline=comparison.headline,
        baseline=_side_view(b),
        candidate=_side_view(c),
        names=(b.short_name, c.short_name),
        notes=comparison.notes,
        honesty=_honesty(comparison),
        criteria=[c.text for c in comparison.criteria],
        version_changes=comparison.versions,
        code_and_data=comparison.code_and_data,
        code_scope=comparison.code_scope,
        host=comparison.host,
        host_unknown=comparison.host_unknown,
        interval_scope=comparison.interval_scope,
        replicates=(b.replicates or (b.run_id,), c.replicates or (c.run_id,)),
        versions=_version_rows(b.versions, c.versions, keys),
        cells=cells,
        references=references[:DETAIL_CAP],
        task_metric=", ".join(
            dict.fromkeys(
                row
                for cell in comparison.cells
                for row in (cell.baseline.task_metric, cell.candidate.task_metric)
                if row
            )
        )
        or "not recorded",
        timings=timings,
        not_timed=not_timed[:DETAIL_CAP],
        generation=generation,
        # "timing not classified" only where a series was too short to classify.
        verdict_counts=[
            (name, VERDICT_SYMBOLS[name], count) for name, count in counts.items() if count or name != UNCLASSIFIED_FLAG
        ],
        geomean=_geomean_rows(comparison),
        speedups=[
            (
                f"{s.shape} {s.layout} {s.dtype}",
                _speedup(s.baseline, s.baseline_flag),
                _speedup(s.candidate, s.candidate_flag),
            )
            for s in comparison.speedups[:DETAIL_CAP]
        ],
        not_comparable=[(n.case, n.reason) for n in comparison.not_comparable[:DETAIL_CAP]],
        method=METHOD,
        figures=_ratio_figures(comparison),
        totals={
            "cells": len(comparison.cells),
            "references": len(references),
            "not_comparable": len(comparison.not_comparable),
            "timings": len(timed),
            "not_timed": len(not_timed),
            "generation": len(series),
            "speedups": len(comparison.speedups),
        },
    )


DETAIL_HEADER = (
    "case",
    "shape",
    "layout",
    "dtype",
    "mode",
    "repeat_of",
    "comparable",
    "baseline_status",
    "baseline_explained",
    "baseline_mismatched",
    "baseline_total",
    "baseline_max_abs",
    "baseline_max_rel",
    "baseline_task_value",
    "baseline_task_passed",
    "candidate_status",
    "candidate_explained",
    "candidate_mismatched",
    "candidate_total",
    "candidate_max_abs",
    "candidate_max_rel",
    "candidate_task_value",
    "candidate_task_passed",
    # The correctness criteria that changed between the runs and apply to the cell ("; "): a
    # status under one is not the same test (the pages say "passes under a changed criterion").
    "changed_criteria",
    "references_agree",
    "reference_inputs",
    "reference_how",
    "baseline_warm_median_s",
    "candidate_warm_median_s",
    "warm_ratio",
    "interval_low",
    "interval_high",
    "verdict",
    "baseline_samples",
    "candidate_samples",
    "baseline_cold_s",
    "candidate_cold_s",
    "cold_ratio",
    "cold_note",
    "baseline_compile_s",
    "candidate_compile_s",
    "compile_ratio",
    "baseline_compiled_speedup",
    "candidate_compiled_speedup",
    "in_geomean",
    "flags",
    "timing_note",
    # A generation cell's two warm series, each judged as a cell's warm ratio is (empty for
    # other cells): time to first token (warm), then decode time per token.
    *(
        f"{prefix}_{column}"
        for prefix in SERIES_COLUMN.values()
        for column in (
            "baseline_median_s",
            "candidate_median_s",
            "ratio",
            "interval_low",
            "interval_high",
            "verdict",
            "in_geomean",
            "flags",
        )
    ),
)


# A side's timing figures, given where its cell passed only.
PASSING_FIGURES = ("warm_median_s", "cold_s", "compile_s")


def _passed(side: Any, figure: Any) -> Any:
    """A side's timing figure where its cell passed; None else, as details.csv and the pages
    give it (a cell judged untested, its layout not measured, has no timing that counts)."""
    return figure if side.status == "pass" else None


def detail_rows(comparison: Comparison) -> list[tuple[Any, ...]]:
    """Every compared cell (and every cell that could not be compared, with the reason), one
    row each, with every figure the pages show for it, unrounded: None where nothing was
    measured. A compiled cell's row (not a cache check's) carries its shape's
    compiled-over-eager speedups, as the speedup table pairs them."""
    speedups = {(s.shape, s.layout, s.dtype): s for s in comparison.speedups}
    rows: list[tuple[Any, ...]] = []
    for cell in comparison.cells:
        b, c, timing = cell.baseline, cell.candidate, cell.timing
        warm = timing.warm if timing is not None else None
        speedup = (
            speedups.get((cell.shape, cell.layout, cell.dtype))
            if cell.mode == "compiled" and cell.repeat_of is None
            else None
        )
        rows.append(
            (
                cell.case,
                cell.shape,
                cell.layout,
                cell.dtype,
                cell.mode,
                cell.repeat_of,
                "yes",
                b.status,
                b.explained,
                b.mismatched,
                b.total,
                b.max_abs,
                b.max_rel,
                b.task_value,
                b.task_passed,
                c.status,
                c.explained,
                c.mismatched,
                c.total,
                c.max_abs,
                c.max_rel,
                c.task_value,
                c.task_passed,
                "; ".join(cell.changed_criteria) or None,
                cell.reference.agree,
                cell.reference.key or None,
                cell.reference.text or None,
                *(timing.medians if timing else (_passed(b, b.warm_median_s), _passed(c, c.warm_median_s))),
                *(
                    (
                        export_ratio(warm.ratio),
                        warm.low,
                        warm.high,
                        timing.verdict,
                        warm.baseline_samples,
                        warm.candidate_samples,
                    )
                    if warm and timing
                    else (None,) * 6
                ),
                _passed(b, b.cold_s),
                _passed(c, c.cold_s),
                export_ratio(timing.cold_ratio) if timing else None,
                timing.cold_note if timing else None,
                _passed(b, b.compile_s),
                _passed(c, c.compile_s),
                export_ratio(timing.compile_ratio) if timing else None,
                export_ratio(speedup.baseline) if speedup else None,
                export_ratio(speedup.candidate) if speedup else None,
                timing.in_geomean if timing is not None else None,
                "; ".join(timing.flags) if timing is not None else None,
                cell.timing_note or None,
                *(figure for name in SERIES_COLUMN for figure in _series_details(cell, name)),
            )
        )
    for other in comparison.not_comparable:
        rows.append((other.case, *([None] * 5), f"no: {other.reason}", *([None] * (len(DETAIL_HEADER) - 7))))
    return rows


def _series_details(cell: CellComparison, name: str) -> tuple[Any, ...]:
    """The columns of one generation series of a compared cell (all None when it has none)."""
    series = next((s for s in cell.generation if s.series == name), None)
    if series is None:
        return (None,) * 8
    warm = series.warm
    return (
        series.baseline_median_s,
        series.candidate_median_s,
        export_ratio(warm.ratio),
        warm.low,
        warm.high,
        series.verdict,
        series.in_geomean,
        "; ".join(series.flags),
    )


def comparison_data(comparison: Comparison) -> dict[str, Any]:
    """The comparison for machines: every figure unrounded, plus each cell's verdict."""
    data = asdict(comparison)
    for cell, raw in zip(comparison.cells, data["cells"]):
        for role in ("baseline", "candidate"):
            if raw[role]["diverges"] is None:  # only localised cells (1.2 logs) carry where they diverge
                del raw[role]["diverges"]
            for figure in PASSING_FIGURES:  # as compare-details.csv gives them (_passed)
                raw[role][figure] = _passed(getattr(cell, role), raw[role][figure])
        if cell.timing is not None:
            raw["timing"]["verdict"] = cell.timing.verdict
            raw["timing"]["in_geomean"] = cell.timing.in_geomean
            for key in ("cold_ratio", "compile_ratio"):
                raw["timing"][key] = export_ratio(raw["timing"][key])
            if raw["timing"]["warm"] is not None:
                raw["timing"]["warm"]["ratio"] = export_ratio(raw["timing"]["warm"]["ratio"])
        if not cell.generation:  # only generation cells (1.2 logs) carry series ratios
            del raw["generation"]
        if not cell.replicate_statuses:  # only a cell whose replicates disagree carries their statuses
            del raw["replicate_statuses"]
        for series, item in zip(cell.generation, raw.get("generation", [])):
            item["verdict"] = series.verdict
            item["in_geomean"] = series.in_geomean
            item["warm"]["ratio"] = export_ratio(item["warm"]["ratio"])
    for speedup in data["speedups"]:  # as the page shows them: beyond judging, no figure
        speedup["baseline"], speedup["candidate"] = (
            export_ratio(speedup["baseline"]),
            export_ratio(speedup["candidate"]),
        )
    if comparison.geomean is not None:
        data["geomean"]["cells"] = comparison.geomean_cells  # its "ratios" count a generation cell's two
        data["geomean"]["verdict"] = comparison.geomean.verdict
    for mean, raw_mean in zip(comparison.geomean_series, data["geomean_series"]):
        raw_mean["verdict"] = mean.verdict  # each series' own, where the ratios are not pooled
    data["verdict_counts"] = comparison.verdict_counts()
    data["interval_scope"] = comparison.interval_scope
    data["unstable_cells"] = [c.case for c in comparison.unstable]
    data["unclassified_cells"] = [c.case for c in comparison.unclassified]
    data["method"] = METHOD
    return data
