"""Every chart is computed once as plain geometry (reportgen/render/charts.py) and drawn as inline
SVG by one macro: these tests read the drawn SVG back and hold it to the data.

What a reader relies on: every point inside the plot, a log axis labelled at decades, an
interval's ends on both sides of its point, each point's title giving its exact values, and a
chart that still draws (or says why not) for no data, one point, equal values or a huge range.
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path

import pytest

from reportgen.publish.frame import history_frame
from reportgen.publish.summary import summarize
from reportgen.judge.ratio_words import judgeable
from reportgen.render.charts import DRAWABLE, Scale, linear, logarithmic, ratio_figure, trend_figures
from reportgen.render.report import ReportInputError, judge_log
from reportgen.render.sections.common import fmt_time
from tests.chartsvg import DrawnChart, chart_markup, parse_chart
from tests.conftest import FIXTURES, REPO
from tests.hostile import invoke
from tests.logbuilder import complete_log, dumps, training_log

LOGS = sorted(FIXTURES.glob("*.jsonl")) + sorted((REPO / "sample_runs").glob("*/events.jsonl"))


def _inside(chart: DrawnChart) -> None:
    """Every point, bar, tick and reference line lies in the plot box, inside the viewBox."""
    left, top, right, bottom = chart.plot
    assert 0 <= left < right <= chart.width and 0 <= top < bottom <= chart.height, chart.plot
    for p in chart.points:
        assert left - 0.1 <= p.x <= right + 0.1 and top - 0.1 <= p.y <= bottom + 0.1, (chart.id, p)
        if p.whisker:
            assert all(left - 0.1 <= end <= right + 0.1 or top - 0.1 <= end <= bottom + 0.1 for end in p.whisker), p
    for b in chart.bars:
        assert left - 0.1 <= b.x and b.x + b.width <= right + 0.1, (chart.id, b)
        assert top - 0.1 <= b.y and b.y + b.height <= bottom + 0.1, (chart.id, b)
    for at, _, _ in chart.y_ticks:
        assert top - 0.1 <= at <= bottom + 0.1, (chart.id, at)
    for at, _, _ in chart.x_ticks:
        assert left - 0.1 <= at <= right + 0.1, (chart.id, at)
    for x1, y1, x2, y2, _ in chart.rules:
        assert left - 0.1 <= min(x1, x2) and max(x1, x2) <= right + 0.1 and top - 0.1 <= min(y1, y2) <= bottom + 0.1


def _decades(ticks: list[tuple[float, str, str]]) -> list[int]:
    """The powers of ten a log axis is labelled at, checked to be equally spaced."""
    powers = [round(math.log10(float(label))) for _, label, _ in ticks]
    assert all(float(label) == 10.0**n for (_, label, _), n in zip(ticks, powers)), ticks
    steps = {round(b[0] - a[0], 0) for a, b in zip(ticks, ticks[1:])}
    assert len(steps) <= 1 or max(steps) - min(steps) <= 1, ticks  # coordinates rounded to 0.1
    return powers


def _accessible(chart: DrawnChart) -> None:
    assert chart.role == "img" and chart.title and chart.desc
    assert all(p.title for p in chart.points) and all(b.title for b in chart.bars)


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.parent.name if p.name == "events.jsonl" else p.stem)
def test_every_report_chart_draws_inside_its_box_with_titles(log: Path) -> None:
    try:
        view = judge_log(log).view
    except ReportInputError:
        pytest.skip("an invalid log has no report")
    for figure in list(view.correctness_figures) + list(view.timing_figures):
        chart = parse_chart(chart_markup(figure))
        _inside(chart)
        _accessible(chart)
        if figure.chart.y.log:
            _decades(chart.y_ticks)
        for p in chart.points:
            if p.whisker and p.mark == "dash":  # a median between its quartiles
                low, high = sorted(p.whisker)
                assert low - 0.1 <= p.y <= high + 0.1, p


def test_warm_latency_draws_each_sample_and_each_median_with_its_values() -> None:
    log = max((REPO / "sample_runs").glob("tiny-encoder-cpu-*/events.jsonl"))
    view = judge_log(log).view
    figure = next(f for f in view.timing_figures if f.id == "fig-warm-latency")
    chart = parse_chart(chart_markup(figure))
    passed = [c for c in judge_log(log).run.cells if c.status == "pass" and c.warm and c.warm.samples_s]
    medians = [p for p in chart.points if p.mark == "dash"]
    samples = [p for p in chart.points if p.mark == "speck"]
    assert len(medians) == len(passed), "one median per timed cell"
    assert len(samples) == sum(len(c.warm.samples_s) for c in passed)  # type: ignore[union-attr]
    for cell in passed:
        (median,) = [p for p in medians if p.title.startswith(f"{cell.case}: median ")]
        number, unit = median.title.split("median ")[1].split(",")[0].split(" ")
        shown = float(number) * (1e3 if unit == "s" else 1.0)
        assert shown == pytest.approx(statistics.median(cell.warm.samples_s) * 1e3, rel=1e-3)  # type: ignore[union-attr]


def test_a_long_warm_series_is_drawn_at_evenly_spaced_ranks_within_the_budget(tmp_path: Path) -> None:
    """--warm 1000 does not make a page of megabytes: past SAMPLE_BUDGET dots each cell is drawn
    at evenly spaced ranks, its fastest and slowest among them, and the caption says so; the
    median and quartiles still come from every sample."""
    from reportgen.render.charts import SAMPLE_BUDGET
    from tests.logbuilder import dumps, timing_log, with_envelope

    log = tmp_path / "events.jsonl"
    log.write_text(dumps(with_envelope(timing_log("synthetic-long-series", samples=1000))), encoding="utf-8")
    judged = judge_log(log)
    figure = next(f for f in judged.view.timing_figures if f.id == "fig-warm-latency")
    chart = parse_chart(chart_markup(figure))
    timed = [c for c in judged.run.cells if c.warm and c.warm.samples_s]
    samples = [p for p in chart.points if p.mark == "speck"]
    assert len(timed) > 1 and len(samples) <= max(SAMPLE_BUDGET, 9 * len(timed))
    assert "evenly spaced ranks" in figure.caption and "Every warm sample" not in figure.caption
    for cell in timed:
        drawn = [p for p in samples if p.title.startswith(f"{cell.case}: ")]
        assert len(drawn) == len(samples) // len(timed)
        every = cell.warm.samples_s  # type: ignore[union-attr]
        titles = {p.title for p in drawn}
        assert {f"{cell.case}: {fmt_time(min(every))}", f"{cell.case}: {fmt_time(max(every))}"} <= titles
    short = tmp_path / "short.jsonl"
    short.write_text(dumps(with_envelope(timing_log("synthetic-short-series", samples=30))), encoding="utf-8")
    figure = next(f for f in judge_log(short).view.timing_figures if f.id == "fig-warm-latency")
    assert figure.caption.startswith("Every warm sample per cell")


def test_warm_latency_takes_a_log_axis_only_when_its_cells_lie_decades_apart(tmp_path: Path) -> None:
    """The tiny-encoder sample's eager cells take hundreds of ms and its compiled ones about one:
    on a linear axis the fast cells lay flat on zero. Its axis is logarithmic, labelled at
    decades, and every median stands clear of the axis; a run of like times stays linear."""
    from tests.logbuilder import dumps, timing_log, with_envelope

    # The 2026-12-02 run, made on a loaded host: its eager cells took hundreds of ms. (On a quiet
    # host, as the later run was made, they take a fraction of a millisecond, as compiled ones do.)
    log = REPO / "sample_runs" / "tiny-encoder-cpu-20261202T053312Z-ecd07d" / "events.jsonl"
    figure = next(f for f in judge_log(log).view.timing_figures if f.id == "fig-warm-latency")
    chart = parse_chart(chart_markup(figure))
    assert figure.chart.y.log and "log scale" in figure.chart.y.title
    _decades(chart.y_ticks)
    bottom = chart.plot[3]
    heights = [p.y for p in chart.points if p.mark == "dash"]
    # On the linear axis these charts had (0 to 600 ms), a 1 ms median stood 0.4 px above it.
    assert heights and all(bottom - y >= 10 for y in heights), "no median lies flat on the axis"
    alike = tmp_path / "events.jsonl"
    alike.write_text(dumps(with_envelope(timing_log("synthetic-alike"))), encoding="utf-8")
    figure = next(f for f in judge_log(alike).view.timing_figures if f.id == "fig-warm-latency")
    assert not figure.chart.y.log and figure.chart.y.title == "ms per call"


def test_warm_latency_caption_claims_no_synchronisation_the_log_denies(tmp_path: Path) -> None:
    """A log whose timing lines say the device was not synchronised: the chart claims nothing
    about it (the report's timing section states each line's own record)."""
    from tests.logbuilder import dumps, timing_log, with_envelope

    events = timing_log("synthetic-unsynchronised")
    for event in events:
        if event["kind"] == "timing":
            event["synchronized"] = False
    log = tmp_path / "events.jsonl"
    log.write_text(dumps(with_envelope(events)), encoding="utf-8")
    judged = judge_log(log)
    figure = next(f for f in judged.view.timing_figures if f.id == "fig-warm-latency")
    assert "synchronised" not in figure.caption


def test_every_trend_chart_draws_and_the_geomean_interval_brackets_its_point() -> None:
    runs = sorted((REPO / "sample_runs").glob("tiny-encoder-cpu-*/events.jsonl"))
    history = history_frame([summarize(judge_log(log)) for log in runs])
    ids = list(dict.fromkeys(history["run_id"]))
    figures = trend_figures(
        history,
        list(dict.fromkeys(history["case"]))[:4],
        "p",
        {ids[1]: (1.05, 0.98, 1.2, "7 cells", ""), ids[-1]: (0.9, 0.8, 0.95, "3 cells", "")},
    )
    assert {f.id for f in figures} == {
        "p-trend-warm",
        "p-trend-cold",
        "p-trend-compile",
        "p-trend-geomean",
        "p-trend-passed",
    }
    for figure in figures:
        chart = parse_chart(chart_markup(figure))
        _inside(chart)
        _accessible(chart)
    geomean = parse_chart(chart_markup(next(f for f in figures if f.id == "p-trend-geomean")))
    assert [p.title.split(": ")[1].split(" over")[0] for p in geomean.points] == ["1.05x", "0.9x"]
    # A tight interval: hover read "1.235x over 14 cells, interval 1.23 to 1.23", its ratio
    # outside its own ends (three fixed digits), where the page said 1.234x to 1.235x.
    tight = trend_figures(history, [], "t", {ids[-1]: (1.23452, 1.23441, 1.23463, "3 cells", "")})
    (point,) = parse_chart(chart_markup(next(f for f in tight if f.id == "t-trend-geomean"))).points
    assert point.title.endswith("1.235x over 3 cells, interval 1.234 to 1.235"), point.title
    for p in geomean.points:
        assert p.whisker is not None
        low, high = p.whisker  # y grows downwards: the low end lies below the point
        assert low > p.y > high, p
    (rule,) = geomean.rules
    one = next(at for at, label, _ in geomean.y_ticks if label == "1")
    assert rule[1] == rule[3] == one, "the line at 1 sits on the tick labelled 1"
    passed = parse_chart(chart_markup(next(f for f in figures if f.id == "p-trend-passed")))
    assert len(passed.bars) == len(ids)


def test_some_logs_draw_every_kind_of_chart() -> None:
    drawn = set()
    for log in LOGS:
        try:
            view = judge_log(log).view
        except ReportInputError:
            continue
        drawn |= {f.id for f in list(view.correctness_figures) + list(view.timing_figures)}
    assert drawn >= {"fig-warm-latency", "fig-cold-warm", "fig-error-allowance", "fig-loss-curves"}, drawn


NAMES = ("base", "cand")


def test_a_ratio_chart_with_no_points_is_not_drawn_and_out_of_range_ones_are_named() -> None:
    assert ratio_figure("eager", [], NAMES) is None
    figure = ratio_figure(
        "eager", [("inf", math.inf, None, None), ("zero", 0.0, None, None), ("big", 2e300, 1.0, 3e300)], NAMES
    )
    assert figure is not None and set(figure.out_of_range) == {"inf", "zero", "big"}
    assert parse_chart(chart_markup(figure)).points == []


def test_a_ratio_charts_hover_states_its_interval_as_the_tables_do() -> None:
    """A change of a few parts in ten thousand read "1, interval 1 to 1" on hover beside a table
    row "1.001 | 1.0006 to 1.0012 | slower": the hover gives as many digits as the table."""
    figure = ratio_figure("eager", [("slow", 1.000901, 1.0006, 1.0012)], NAMES)
    assert figure is not None
    (point,) = parse_chart(chart_markup(figure)).points
    assert point.title.endswith("base 1.001, interval 1.0006 to 1.0012"), point.title


@pytest.mark.parametrize(
    "points",
    [
        [("one", 1.25, 1.1, 1.4)],
        [("a", 2.0, None, None), ("b", 2.0, None, None), ("c", 2.0, None, None)],
        [("tiny", 1e-290, 1e-295, 1e-280), ("huge", 1e290, 1e280, 1e295)],
        [("below", 0.5, 0.2, 0.9), ("across", 1.1, 0.7, 1.6)],
    ],
    ids=["one point", "all equal", "huge range", "usual"],
)
def test_ratio_charts_draw_any_drawable_data(points: list[tuple[str, float, float | None, float | None]]) -> None:
    figure = ratio_figure("compiled", points, NAMES)
    assert figure is not None and figure.out_of_range == ()
    chart = parse_chart(chart_markup(figure))
    _inside(chart)
    _accessible(chart)
    assert len(chart.points) == len(points)
    powers = _decades(chart.x_ticks)
    assert len(powers) <= 11, "a huge range is labelled at every n-th decade"
    ordered = sorted(points, key=lambda p: (p[1], p[0]))
    for drawn, (case, ratio, low, high) in zip(sorted(chart.points, key=lambda p: p.y), ordered):
        assert drawn.title.startswith(f"{case}: cand / base "), "smallest ratio first, at the top"
        shown = drawn.title.split("cand / base ")[1].split(", ")
        # Beyond the widest ratio judged, the hover says so in the tables' words.
        assert shown[0] == "out of range" if not judgeable(ratio) else float(shown[0]) == pytest.approx(ratio, rel=1e-2)
        if low is None:
            assert drawn.whisker is None and "no interval" in drawn.title
        else:
            lo, hi = drawn.whisker  # type: ignore[misc]
            assert lo <= drawn.x <= hi and lo < hi, drawn
            ends = shown[1].removeprefix("interval ").split(" to ")
            for end, value in zip(ends, (low, high)):
                assert end == "out of range" if not judgeable(value) else float(end) == pytest.approx(value, rel=1e-2)
    (rule,) = chart.rules
    one = [at for at, label, _ in chart.x_ticks if label == "1"]
    assert rule[0] == rule[2] and one in ([], [rule[0]]), "the dashed line stands at a ratio of 1"


def test_scales_for_empty_single_equal_and_extreme_values() -> None:
    for values in ([], [3.0], [2.0, 2.0, 2.0], [0.0], [-1e300, 1e300], [5e-324, 1.0]):
        scale = linear(values, 300.0, 20.0, to_zero=True)
        assert scale.lo < scale.hi and math.isfinite(scale.hi - scale.lo), values
        ticks = scale.ticks()
        assert 2 <= len(ticks) <= 12 and all(20.0 <= t.at <= 300.0 for t in ticks), (values, ticks)
        assert all(20.0 <= scale(v) <= 300.0 for v in values)
    for values in ([], [1.0], [7.0, 7.0], [1 / DRAWABLE, DRAWABLE]):
        scale = logarithmic(values, 300.0, 20.0)
        assert scale.lo < scale.hi and len(scale.ticks()) <= 11
        assert all(20.0 <= scale(v) <= 300.0 for v in values)


@pytest.mark.parametrize(
    "values",
    [[0.0, 5e-324], [5e-324], [-5e-324, 5e-324], [2.0**63, 2.0**63 + 2048.0], [1e300, 1e300]],
    ids=["subnormal over zero", "one subnormal", "subnormal either side", "lost to precision", "huge and equal"],
)
def test_a_span_that_is_zero_subnormal_or_lost_to_precision_still_gets_an_axis(values: list[float]) -> None:
    for to_zero in (False, True):
        scale = linear(values, 300.0, 20.0, to_zero=to_zero)
        assert scale.lo < scale.hi and math.isfinite(scale.hi - scale.lo), values
        ticks = scale.ticks()
        assert 2 <= len(ticks) <= 12 and all(20.0 <= t.at <= 300.0 for t in ticks), (values, ticks)
        assert all(20.0 <= scale(v) <= 300.0 for v in values)
    top = float(2**63 - 1)
    made = Scale(top - 0.5, top + 0.5, 64.0, 624.0)  # one float at both ends: made directly, as the loss chart did
    assert made.lo < made.hi and 64.0 <= made(top) <= 624.0


def _loss_chart(tmp_path: Path, events: list[dict]) -> DrawnChart:
    log = tmp_path / "events.jsonl"
    log.write_text(dumps(events), encoding="utf-8")
    figure = next(f for f in judge_log(log).view.correctness_figures if f.id == "fig-loss-curves")
    chart = parse_chart(chart_markup(figure))
    _inside(chart)
    return chart


def test_a_loss_chart_draws_subnormal_losses_against_a_zero_reference(tmp_path: Path) -> None:
    events = training_log()
    for event in events:
        if event["kind"] == "train_step":
            event.update(loss=5e-324, reference_loss=0.0)
    chart = _loss_chart(tmp_path, events)
    assert chart.points and len({p.y for p in chart.points}) == 1, "a loss of 5e-324 sits at zero beside its reference"
    assert len(chart.y_ticks) >= 2


def test_a_loss_chart_is_never_drawn_for_steps_near_int64_max(tmp_path: Path) -> None:
    """Steps numbered near 2**63 once reached the loss chart (which placed them apart); a cell's
    steps must now be the plan's, 0 to steps - 1, so such a log is refused before any chart."""
    from reportgen.render.report import ReportInputError

    events = training_log()
    top = 2**63 - 1
    for event in events:
        if event["kind"] == "train_step":
            event["step"] = top - 2 + event["step"]
    with pytest.raises(ReportInputError, match="past the plan's 3 step"):
        _loss_chart(tmp_path, events)


def test_a_site_whose_trend_has_subnormal_cold_and_compile_times_is_built(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    for n in (1, 2):
        events = complete_log()
        for event in events:
            if event["kind"] == "run_start":
                event.update(run_id=f"denormal-{n}", started_at=f"2026-01-0{n}T00:00:00Z")
            elif event["kind"] == "timing" and event["cold"]["cache_condition"] == "eager_no_compile":
                # (a compiled cell's first call from an empty cache below its warm calls would
                # contradict its log)
                event["cold"]["seconds"] = 5e-324
            elif event["kind"] == "compile":
                event["compile_first_result_s"] = 5e-324
        (runs / f"run{n}").mkdir(parents=True)
        (runs / f"run{n}" / "events.jsonl").write_text(dumps(events), encoding="utf-8")
    out = invoke(["site", runs, "--out", tmp_path / "site"])
    assert out.code == 0, out.stdout + out.stderr
    pages = [p.read_text(encoding="utf-8") for p in (tmp_path / "site").rglob("*.html")]
    assert any("trend-cold" in page for page in pages) and any("trend-compile" in page for page in pages)


def test_a_zero_time_on_the_cold_vs_warm_chart_is_named_as_a_zero_not_out_of_range(tmp_path: Path) -> None:
    events = complete_log()
    timing = next(e for e in events if e["kind"] == "timing")
    timing["cold"]["seconds"] = 0.0  # a coarse timer: legal, and no place on a log axis
    log = tmp_path / "events.jsonl"
    log.write_text(dumps(events), encoding="utf-8")
    figure = next(f for f in judge_log(log).view.timing_figures if f.id == "fig-cold-warm")
    assert figure.zero_on_log == (timing["case"],) and figure.out_of_range == ()
    out = invoke(["report", log, "--out", tmp_path / "out"])
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    note = html.split("Zero, cannot be drawn on a log axis", 1)[1].split("</span>", 1)[0]
    assert out.code == 0 and timing["case"] in note and "Out of range, not drawn" not in html


def test_a_log_axis_over_hundreds_of_decades_is_labelled_up_to_the_top_of_its_data() -> None:
    scale = logarithmic([1e-321, 1e12], 300.0, 20.0)
    powers = _decades([(t.at, t.label, t.full) for t in scale.ticks()])
    assert len(powers) <= 11 and max(powers) >= 12, powers


def test_cold_and_compile_trend_points_of_a_synthetic_or_stopped_run_are_hollow(tmp_path: Path) -> None:
    """Before: the warm trend drew a synthetic run's point, or that of a run whose performance
    acceptance was stopped, hollow and said why on hover, while the cold-call and compile trends
    drew the same runs' points filled, like measured results, with no word of either."""
    from tests.logbuilder import mismatch_log, timing_log

    def measured(events: list[dict], run_id: str, day: int) -> list[dict]:
        events[0].update(run_id=run_id, origin="measured", started_at=f"2026-01-0{day}T00:00:00Z")
        events[0].pop("origin_note", None)
        return events

    logs = []
    for day, events in enumerate(
        (
            measured(timing_log("one", seed=1), "measured-1", 1),
            measured(mismatch_log(), "stopped-2", 2),  # a mismatch, no verdict: performance acceptance stopped
            timing_log("synthetic-3", seed=3),
            measured(timing_log("four", seed=4), "measured-4", 4),
        ),
        start=1,
    ):
        if day == 3:
            events[0]["started_at"] = "2026-01-03T00:00:00Z"
        log = tmp_path / str(day) / "events.jsonl"
        log.parent.mkdir()
        log.write_text(dumps(events), encoding="utf-8")
        logs.append(log)
    history = history_frame([summarize(judge_log(log)) for log in logs])
    case = "b1-l16-contiguous-float32-compiled"
    figures = {f.id: f for f in trend_figures(history, [case], "p")}
    for key in ("cold", "compile"):
        figure = figures[f"p-trend-{key}"]
        (series,) = figure.chart.series
        by_run = {p.title.split(", ")[0].split(": ", 1)[1][:10]: p for p in series.points}
        assert set(by_run) == {"2026-01-01", "2026-01-02", "2026-01-03", "2026-01-04"}
        assert [by_run[d].hollow for d in sorted(by_run)] == [False, True, True, False], key
        assert "performance acceptance stopped in this run" in by_run["2026-01-02"].title
        assert "synthetic fixture, not a measurement" in by_run["2026-01-03"].title
        assert "not a measurement" not in by_run["2026-01-01"].title + by_run["2026-01-04"].title
        assert "A hollow marker is not a performance result on its own" in figure.caption
        drawn = parse_chart(chart_markup(figure))
        _inside(drawn)
