"""Plotly figure specs (plain JSON data) for the report; the page draws them with one bundle.

Figures are returned as dicts, never as HTML: the template embeds them with ``|tojson`` inside
``<script type="application/json">`` and ``report.js`` calls ``Plotly.newPlot``. The JSON engine
is pinned so the output does not depend on whether orjson happens to be installed. Every
figure (a report's, a comparison's, the site's trends) is built here, as plain data in the form
plotly writes (``_figure``): one path, and no plotly import to draw a page.
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass
from functools import lru_cache
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from reportgen.model.runmodel import CellRecord
from reportgen.render.labels import human

if TYPE_CHECKING:  # plotly is imported where a figure is first made: commands that draw none skip it
    import plotly.graph_objects as go

LAYOUT: dict[str, Any] = {
    "template": "none",
    "margin": {"l": 60, "r": 20, "t": 40, "b": 120},
    "height": 420,
    "font": {"family": "system-ui, sans-serif", "size": 12},
    "paper_bgcolor": "rgba(0,0,0,0)",
    "plot_bgcolor": "rgba(0,0,0,0)",
}
MODE_COLOURS = {"eager": "#1f77b4", "compiled": "#d62728"}
_COLD, _WARM = attrgetter("cold"), attrgetter("warm")


# The largest magnitude drawn (and the smallest above zero on a log axis): a value that
# validates but lies beyond cannot be drawn by a browser's doubles without overflow, so it is
# left out of the chart and named under it as out of range (the tables show the number).
DRAWABLE = 1e300


@dataclass(frozen=True)
class Figure:
    id: str
    title: str
    caption: str
    spec: dict[str, Any]
    out_of_range: tuple[str, ...] = ()


def _plotly() -> Any:
    """plotly's figure classes, imported on first use, its JSON writer set to the stdlib engine."""
    import plotly.graph_objects as go
    import plotly.io as pio

    pio.json.config.default_engine = "json"
    return go


def _spec(fig: go.Figure) -> dict[str, Any]:
    import plotly.io as pio

    return json.loads(pio.to_json(fig, validate=False, pretty=False, engine="json"))


# plotly's "none" template as plotly writes it out (tests/test_chart_specs.py checks it against
# plotly): written here so that a report's charts are made without importing plotly, a third
# of a small report's command time.
NONE_TEMPLATE = '{"data": {"scatter": [{"type": "scatter"}]}}'


@lru_cache(maxsize=None)
def _template(name: str) -> str:
    """A layout template by name, as plotly writes it out (JSON text, parsed afresh for each figure)."""
    if name == "none":
        return NONE_TEMPLATE
    return json.dumps(_spec(_plotly().Figure(layout={"template": name}))["layout"]["template"])


def _figure(layout: dict[str, Any], traces: list[dict[str, Any]]) -> dict[str, Any]:
    """A report chart's spec as plain data: what ``_spec(go.Figure(layout=..., data=...))`` gives
    for the same layout and traces (each trace naming its ``type``). Speed: plotly's property
    checks cost more than the rest of a report's charts; tests/test_chart_specs.py checks that
    plotly reads each spec back unchanged."""
    layout = {**layout, "template": json.loads(_template(layout["template"]))}
    # As plotly's JSON writer does: a NaN or infinite number is written as null.
    spec: dict[str, Any] = json.loads(json.dumps({"data": traces, "layout": layout}), parse_constant=lambda _: None)
    return spec


def _hline(layout: dict[str, Any], y: float, line: dict[str, Any], text: str | None) -> None:
    """A horizontal line across the plot with a label at its right end, or none (plotly's add_hline)."""
    layout.setdefault("shapes", []).append(
        {"type": "line", "xref": "x domain", "x0": 0, "x1": 1, "yref": "y", "y0": y, "y1": y, "line": line}
    )
    if text is None:
        return
    layout.setdefault("annotations", []).append(
        {
            "text": text,
            "showarrow": False,
            "xref": "x domain",
            "x": 1,
            "xanchor": "right",
            "yref": "y",
            "y": y,
            "yanchor": "bottom",
        }
    )


def plain(text: str) -> str:
    """Text for a chart label or legend: plotly reads <a href>, <b>, <br> and entities in
    labels as markup, so they are escaped; the chart shows the characters, never a live link."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _hover_text(text: str) -> str:
    """Plain text inside a hover template, where %{...} would also be read as a placeholder."""
    return plain(text).replace("%{", "%\u200b{")


def _drawable(value: float | None, log_axis: bool = False) -> bool:
    if value is None:
        return True
    if not math.isfinite(value) or abs(value) > DRAWABLE:
        return False
    return not (log_axis and 0 < value < 1 / DRAWABLE)


def warm_latency(cells: list[CellRecord]) -> Figure | None:
    timed = [(c, warm) for c, warm in zip(cells, map(_WARM, cells)) if warm]  # each cell's events looked up once
    if not timed:
        return None
    # Scatter traces only (no box trace): the page's plotly bundle is then the basic one, a
    # fifth smaller than the one that draws boxes. Each cell has its own place on the x axis,
    # its samples and its median with quartile whiskers drawn over one another there.
    layout = {
        **LAYOUT,
        "title": {"text": "Warm latency per cell (ms)"},
        "yaxis": {"title": {"text": "ms per call"}, "rangemode": "tozero"},
        "showlegend": True,
    }
    traces = []
    for mode in ("eager", "compiled"):
        group = [(c, warm) for c, warm in timed if c.planned.mode == mode and warm.samples_s]
        if not group:
            continue
        colour = MODE_COLOURS[mode]
        xs = [plain(c.case) for c, warm in group for _ in warm.samples_s]
        ys = [s * 1e3 for _, warm in group for s in warm.samples_s]
        traces.append(
            {
                "type": "scatter",
                "x": xs,
                "y": ys,
                "name": f"{mode} samples",
                "legendgroup": mode,
                "mode": "markers",
                "marker": {"color": colour, "size": 4, "opacity": 0.45},
                "hovertemplate": "%{x}<br>%{y:.4g} ms<extra></extra>",
            }
        )
        quartiles = [_quartiles_ms(warm.samples_s) for _, warm in group]
        traces.append(
            {
                "type": "scatter",
                "x": [plain(c.case) for c, _ in group],
                "y": [q[1] for q in quartiles],
                "name": f"{mode} median",
                "legendgroup": mode,
                "mode": "markers",
                "marker": {
                    "color": colour,
                    "size": 18,
                    "symbol": "line-ew-open",
                    "line": {"width": 3, "color": colour},
                },
                "error_y": {
                    "type": "data",
                    "symmetric": False,
                    "array": [q[2] - q[1] for q in quartiles],
                    "arrayminus": [q[1] - q[0] for q in quartiles],
                    "color": colour,
                    "thickness": 2,
                    "width": 6,
                },
                "customdata": [[q[0], q[2]] for q in quartiles],
                "hovertemplate": "%{x}<br>median %{y:.4g} ms<br>quartiles %{customdata[0]:.4g}-%{customdata[1]:.4g} ms<extra></extra>",
            }
        )
    caption = "Every warm sample per cell (dots), with its median (bar) and quartiles (whiskers), device synchronised at each boundary."
    return Figure("fig-warm-latency", "Warm latency", caption, _figure(layout, traces))


def _quartiles_ms(samples: list[float]) -> tuple[float, float, float]:
    """First quartile, median and third quartile in ms, as the collector computes its IQR."""
    ordered = sorted(s * 1e3 for s in samples)
    if len(ordered) < 2:
        return ordered[0], ordered[0], ordered[0]
    q1, median, q3 = statistics.quantiles(ordered, n=4, method="inclusive")
    return q1, median, q3


def cold_vs_warm(cells: list[CellRecord]) -> Figure | None:
    both = [
        (c, cold, warm) for c, cold, warm in zip(cells, map(_COLD, cells), map(_WARM, cells)) if cold and warm
    ]  # events looked up once
    if not both:
        return None
    layout = {
        **LAYOUT,
        "title": {"text": "Cold first call vs warm median (s, log scale)"},
        "yaxis": {"type": "log", "title": {"text": "seconds"}},
        "barmode": "group",
    }
    cases = [plain(c.case) for c, _, _ in both]
    traces = [
        {
            "type": "bar",
            "x": cases,
            "y": [cold.seconds for _, cold, _ in both],
            "name": "cold first call",
            "marker": {"color": "#9467bd"},
            "customdata": [human(cold.cache_condition) for _, cold, _ in both],
            "hovertemplate": "%{x}<br>cold %{y:.4g} s<br>%{customdata}<extra></extra>",
        },
        {
            "type": "bar",
            "x": cases,
            "y": [warm.median_s for _, _, warm in both],
            "name": "warm median",
            "marker": {"color": "#2ca02c"},
        },
    ]
    return Figure(
        "fig-cold-warm",
        "Cold vs warm",
        "Cold: the first call with the cache condition stated in the table. Warm: median of the declared repetitions.",
        _figure(layout, traces),
    )


def judged_ratio(cell: CellRecord) -> tuple[float | None, str, bool]:
    """The largest |diff| / allowance over every quantity that judged the cell, which one, and
    whether that difference was itself not finite.

    Inference cells: the outputs' elementwise comparison (in the judged region). Training
    cells: the loss at each step, every gradient at each step and every updated parameter, each
    by its own tolerance or declared rule. Above 1 exactly when the cell failed on one of them;
    None when nothing was compared. A non-finite difference counts as infinitely far.
    """
    best: tuple[float | None, str, bool] = (None, "", False)

    def take(value: float | None, what: str) -> None:
        nonlocal best
        nonfinite = value is None
        ratio = math.inf if value is None else value
        if best[0] is None or ratio > best[0] or (ratio == best[0] and nonfinite and not best[2]):
            best = (ratio, what, nonfinite)

    result = cell.result
    stats = result.error_stats if result else None
    if stats is not None:
        allowed, diff, where = stats.allowed_at_worst, stats.diff_at_worst, stats.worst_output or "outputs"
        if allowed is None:
            take(None, where)  # a NaN or Inf in the reference at the worst element
        elif allowed > 0:
            take(None if diff is None else diff / allowed, where)
        elif stats.mismatched == 0 and diff == 0:
            take(0.0, where)
    if not cell.trained:  # no train_step or train_result event: nothing more judged it
        return best
    for step in cell.train_steps:
        for grad in step.grads:
            take(grad.worst_ratio, f"gradient of {grad.name} at step {step.step}")
    train_result = cell.train_result
    if train_result is not None:
        for param in train_result.params:
            take(param.worst_ratio, f"updated {param.name}" + (f" ({param.rule})" if param.rule else ""))
    return best


def _short(case: str, limit: int = 28) -> str:
    """A short axis label; the full case key is in the hover text."""
    return case if len(case) <= limit else case[: limit // 2 - 1] + "…" + case[-(limit // 2) :]


def _short_labels(cases: list[str]) -> list[str]:
    """Short, still unique axis labels (full keys where shortening would merge two cells)."""
    short = [_short(c) for c in cases]
    seen: dict[str, set[str]] = {}
    for label, case in zip(short, cases):
        seen.setdefault(label, set()).add(case)
    return [label if len(seen[label]) == 1 else case for label, case in zip(short, cases)]


def _decades(low: int, high: int) -> dict[str, Any]:
    """A log axis labelled at each power of ten, written as 10^n."""
    values = [10.0**n for n in range(low, high + 1)]
    return {
        "tickvals": values,
        "ticktext": [f"1e{n}" if n not in (0, 1) else str(int(10**n)) for n in range(low, high + 1)],
    }


def error_vs_allowance(cells: list[CellRecord]) -> Figure | None:
    rows, out_of_range = [], []
    for c in cells:
        ratio, what, nonfinite = judged_ratio(c)
        if ratio is None:
            continue
        drawn = 1e6 if nonfinite else ratio
        if _drawable(drawn, log_axis=True):
            rows.append((c.case, drawn, c.status, what, nonfinite))
        else:
            out_of_range.append(c.case)
    if not rows and not out_of_range:
        return None
    ys = [r[1] for r in rows]
    # Plotly cannot autorange log-scale bars well (their base is 0): set the decades shown.
    positive = [y for y in ys if y > 0] or [1.0]
    low, high = math.floor(math.log10(min(positive))) - 1, math.ceil(math.log10(max(max(positive), 1.0))) + 1
    yaxis = {
        "type": "log",
        "range": [low - 0.2, high + 0.2],
        "title": {"text": "largest |diff| / allowance"},
        **_decades(low, high),
    }
    xaxis = {"title": {"text": "cell (full key on hover)"}, "tickangle": -40}
    layout = {
        **LAYOUT,
        "title": {"text": "Largest error over its allowance, in the quantity that judged each cell"},
        "yaxis": yaxis,
        "xaxis": xaxis,
    }
    hover = [
        _hover_text(f"{r[0]}: {r[2]}; largest in {r[3]}")
        + ("<br>not finite (drawn at 1e6)" if r[4] else "<br>%{y:.3g} × allowance")
        + "<extra></extra>"
        for r in rows
    ]
    bars = {
        "type": "bar",
        "x": [plain(label) for label in _short_labels([r[0] for r in rows])],
        "y": ys,
        "marker": {"color": ["#d62728" if r[1] > 1 else "#1f77b4" for r in rows]},
        "name": "largest |diff| / allowance",
        "hovertemplate": hover,
    }
    _hline(layout, 1.0, {"dash": "dash", "color": "#888"}, "allowance")
    caption = (
        "Above 1 (red): outside the declared tolerance in that quantity. For training cells the quantity is the worst of the loss, "
        "every gradient and every updated parameter, each by its own tolerance or declared rule. A zero difference has no bar on the log scale; a non-finite one is drawn at 1e6."
    )
    return Figure("fig-error-allowance", "Error vs allowance", caption, _figure(layout, [bars]), tuple(out_of_range))


# Distinct colours per shape (colour-blind-safe first); modes are told apart by the line's dash.
SHAPE_COLOURS = ("#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#f0e442", "#000000")
MODE_DASH = {"eager": "solid", "compiled": "dash"}


def loss_curves(cells: list[CellRecord]) -> Figure | None:
    trained = [c for c in cells if c.trained and c.train_steps]
    if not trained:
        return None
    layout = {
        **LAYOUT,
        "title": {"text": "Training loss per step: reference, eager, compiled"},
        "xaxis": {"title": {"text": "step"}, "dtick": 1},
        "yaxis": {"title": {"text": "loss"}},
        "margin": {**LAYOUT["margin"], "b": 60},
    }
    traces: list[dict[str, Any]] = []
    shapes_done: set[str] = set()
    out_of_range: list[str] = []

    def points(c: CellRecord, values: list[float | None], label: str) -> list[float | None]:
        bad = [s.step for s, v in zip(c.train_steps, values) if not _drawable(v)]
        if bad:
            out_of_range.append(f"{label} at step {', '.join(map(str, bad))}")
        return [v if _drawable(v) else None for v in values]

    colours: dict[str, str] = {}
    for c in trained:
        shape = c.case.rsplit("-", 1)[0] if not c.planned.repeat_of else c.case
        colour = colours.setdefault(shape, SHAPE_COLOURS[len(colours) % len(SHAPE_COLOURS)])
        steps = [s.step for s in c.train_steps]
        if shape not in shapes_done:
            shapes_done.add(shape)
            traces.append(
                {
                    "type": "scatter",
                    "x": steps,
                    "y": points(c, [s.reference_loss for s in c.train_steps], f"{shape} reference"),
                    "name": plain(f"{shape} reference"),
                    "mode": "markers",
                    "marker": {"symbol": "circle-open", "size": 10, "color": colour},
                }
            )
        traces.append(
            {
                "type": "scatter",
                "x": steps,
                "y": points(c, [s.loss for s in c.train_steps], c.case),
                "name": plain(f"{shape} {c.planned.mode}"),
                "mode": "lines+markers",
                "line": {"color": colour, "dash": MODE_DASH.get(c.planned.mode, "solid")},
            }
        )
    return Figure(
        "fig-loss-curves",
        "Loss curves",
        "Loss at each step from identical weights, inputs and seeds; one colour per shape, solid eager and dashed compiled, open circles the CPU reference.",
        _figure(layout, traces),
        tuple(out_of_range),
    )


def correctness_figures(cells: list[CellRecord]) -> list[Figure]:
    return [f for f in (loss_curves(cells), error_vs_allowance(cells)) if f is not None]


def timing_figures(cells: list[CellRecord]) -> list[Figure]:
    """Only cells whose correctness passed are timed, so only they are drawn."""
    passed = [c for c in cells if c.status == "pass"]
    return [f for f in (warm_latency(passed), cold_vs_warm(passed)) if f is not None]


# Distinct colours for the cells of a trend chart (colour-blind-safe first, then more).
TREND_COLOURS = SHAPE_COLOURS


def _caveats_per_case(history: Any, cases: list[str], order: list[str]) -> dict[str, list[str]]:
    """Per case and run, why its timing is not a performance result on its own ('' when none)."""
    found: dict[tuple[str, str], str] = {}
    if "caveats" in history:
        for row in history[history["case"].isin(cases)][["run_id", "case", "caveats"]].itertuples(index=False):
            if isinstance(row.caveats, str) and row.caveats:
                found[(row.case, row.run_id)] = row.caveats
    return {case: [found.get((case, run), "") for run in order] for case in cases}


def trend_figures(
    history: Any,
    cases: list[str],
    prefix: str,
    geomeans: dict[str, tuple[float, float | None, float | None, int]] | None = None,
) -> list[Figure]:
    """Charts over the runs of one workload on one target, oldest first, from a history frame.

    ``history`` is ``reportgen.publish.frame.history_frame`` of those runs. Timings exist only
    for cells that passed, so a run where a cell did not pass leaves a gap, never a zero.
    ``geomeans`` maps a run id to its geometric mean against the previous run (ratio, interval
    low and high, cells covered), as the run-to-run diff judged it.
    """
    if history.empty:
        return []
    runs = history[["run_id", "started_at"]].drop_duplicates().sort_values(["started_at", "run_id"])
    labels = {r.run_id: f"{r.started_at:%Y-%m-%d %H:%M:%S}" for r in runs.itertuples()}
    order = list(labels)
    figures: list[Figure] = []
    xaxis = {
        "title": {"text": "run (started, UTC)"},
        "type": "category",
        "categoryorder": "array",
        "categoryarray": [labels[r] for r in order],
    }
    base = {**LAYOUT, "xaxis": xaxis, "margin": {**LAYOUT["margin"], "b": 110}, "showlegend": True}

    def per_case(column: str) -> dict[str, Any]:
        table = history[history["case"].isin(cases)].pivot_table(
            index="run_id", columns="case", values=column, aggfunc="first"
        )
        return {
            case: [
                None
                if run not in table.index or case not in table or table.at[run, case] != table.at[run, case]
                else float(table.at[run, case])
                for run in order
            ]
            for case in cases
        }

    xs = [labels[r] for r in order]
    warm, q1, q3 = per_case("warm_median_s"), per_case("warm_q1_s"), per_case("warm_q3_s")
    caveats = _caveats_per_case(history, cases, order)
    if any(v is not None for values in warm.values() for v in values):
        layout = {
            **base,
            "title": {"text": "Warm median per cell over runs (ms; band: interquartile range)"},
            "yaxis": {"title": {"text": "ms per call"}, "rangemode": "tozero"},
        }
        traces: list[dict[str, Any]] = []
        for n, case in enumerate(cases):
            colour = TREND_COLOURS[n % len(TREND_COLOURS)]
            ms = lambda values: [None if v is None else v * 1e3 for v in values]  # noqa: E731
            traces.append(
                {
                    "type": "scatter",
                    "x": xs,
                    "y": ms(q3[case]),
                    "mode": "lines",
                    "line": {"width": 0, "color": colour},
                    "showlegend": False,
                    "hoverinfo": "skip",
                    "legendgroup": case,
                }
            )
            traces.append(
                {
                    "type": "scatter",
                    "x": xs,
                    "y": ms(q1[case]),
                    "mode": "lines",
                    "line": {"width": 0, "color": colour},
                    "fill": "tonexty",
                    "opacity": 0.25,
                    "showlegend": False,
                    "hoverinfo": "skip",
                    "legendgroup": case,
                }
            )
            flags = caveats[case]
            traces.append(
                {
                    "type": "scatter",
                    "x": xs,
                    "y": ms(warm[case]),
                    "mode": "lines+markers",
                    "name": plain(_short(case)),
                    "line": {"color": colour},
                    "legendgroup": case,
                    "marker": {
                        "symbol": ["circle-open" if f else "circle" for f in flags],
                        "size": [10 if f else 6 for f in flags],
                    },
                    "customdata": [f"<br>{f}" if f else "" for f in flags],
                    "hovertemplate": f"{_hover_text(case)}<br>%{{x}}<br>%{{y:.4g}} ms%{{customdata}}<extra></extra>",
                }
            )
        figures.append(
            Figure(
                f"{prefix}-trend-warm",
                "Warm median over runs",
                "Median of the declared warm repetitions per run, with its interquartile band; only runs where the cell passed and its warm timing was stable (an unstable one decides nothing: a gap). A hollow marker is not a performance result on its own: that run's performance acceptance was stopped or the cell had CPU fallback (hover says which).",
                _figure(layout, traces),
            )
        )
    for column, key, title, caption in (
        (
            "cold_s",
            "cold",
            "Cold first call per cell over runs (s)",
            "The first call with the cache condition each report states; only runs where the cell passed.",
        ),
        (
            "compile_s",
            "compile",
            "Compile + first result per cell over runs (s)",
            "From each run's compile event; only runs where the cell passed.",
        ),
    ):
        values = per_case(column)
        if not any(v is not None for vs in values.values() for v in vs):
            continue
        layout = {**base, "title": {"text": title}, "yaxis": {"title": {"text": "seconds"}, "rangemode": "tozero"}}
        traces = [
            {
                "type": "scatter",
                "x": xs,
                "y": values[case],
                "mode": "lines+markers",
                "name": plain(_short(case)),
                "line": {"color": TREND_COLOURS[n % len(TREND_COLOURS)]},
                "hovertemplate": f"{_hover_text(case)}<br>%{{x}}<br>%{{y:.4g}} s<extra></extra>",
            }
            for n, case in enumerate(cases)
        ]
        figures.append(Figure(f"{prefix}-trend-{key}", title, caption, _figure(layout, traces)))
    if geomeans:
        layout = {
            **base,
            "title": {"text": "Geometric mean of warm ratios against the previous run"},
            "yaxis": {"title": {"text": "after / before"}, "type": "log"},
            "showlegend": False,
        }
        points = [(labels[r], *geomeans[r]) for r in order if r in geomeans]
        trace = {
            "type": "scatter",
            "x": [p[0] for p in points],
            "y": [p[1] for p in points],
            "mode": "lines+markers",
            "name": "geometric mean",
            "line": {"color": TREND_COLOURS[0]},
            "error_y": {
                "type": "data",
                "symmetric": False,
                "array": [(p[3] - p[1]) if p[3] is not None else 0 for p in points],
                "arrayminus": [(p[1] - p[2]) if p[2] is not None else 0 for p in points],
            },
            "customdata": [p[4] for p in points],
            "hovertemplate": "%{x}<br>%{y:.3f}x over %{customdata} cells<extra></extra>",
        }
        _hline(layout, 1.0, {"dash": "dot", "color": "#777"}, None)
        figures.append(
            Figure(
                f"{prefix}-trend-geomean",
                "Geometric mean against the previous run",
                "Per run, the geometric mean of its warm ratios against the run before it (above 1: slower), with the 95% interval; only cells stable, unflagged and timed in both runs.",
                _figure(layout, [trace]),
            )
        )
    passed = history[history["status"] == "pass"].groupby("run_id").size()
    planned = history.groupby("run_id").size()
    layout = {
        **base,
        "title": {"text": "Cells that passed, per run"},
        "yaxis": {"title": {"text": "cells"}, "rangemode": "tozero"},
        "showlegend": False,
    }
    bars = {
        "type": "bar",
        "x": xs,
        "y": [int(passed.get(r, 0)) for r in order],
        "name": "passed",
        "marker": {"color": "#1b7f3b"},
        "customdata": [int(planned.get(r, 0)) for r in order],
        "hovertemplate": "%{x}<br>%{y} of %{customdata} cells passed<extra></extra>",
    }
    figures.append(
        Figure(
            f"{prefix}-trend-passed",
            "Cells that passed",
            "Every planned cell counts; untested cells count as not passed.",
            _figure(layout, [bars]),
        )
    )
    return figures


def ratio_figure(
    mode: str, points: list[tuple[str, float, float | None, float | None]], names: tuple[str, str]
) -> Figure | None:
    """Per-cell warm ratios of one mode with their intervals, smallest ratio first, on a log
    axis around 1. ``points``: (case, ratio, interval low, interval high); ``names``: the
    baseline's and the candidate's names, which the title and the axis carry."""
    rows, out_of_range = [], []
    for case, ratio, low, high in sorted(points, key=lambda p: (p[1], p[0])):
        if all(_drawable(v, log_axis=True) and (v is None or v > 0) for v in (ratio, low, high)):
            rows.append((case, ratio, low, high))
        else:
            out_of_range.append(case)
    if not rows and not out_of_range:
        return None
    base, cand = (plain(n) for n in names)
    ratio_name = f"{cand} / {base}"
    layout = {
        **LAYOUT,
        "title": {"text": f"Warm ratio per {mode} cell: {ratio_name} (95% interval)"},
        "xaxis": {"type": "log", "title": {"text": f"{ratio_name} (below 1: {cand} faster)"}},
        "yaxis": {
            "type": "category",
            "automargin": True,
            "autorange": "reversed",
            "title": {"text": "cell, smallest ratio first"},
        },
        "height": max(200, 60 + 24 * len(rows)),
        "margin": {**LAYOUT["margin"], "l": 20, "b": 60},
        "showlegend": False,
    }
    layout.setdefault("shapes", []).append(
        {
            "type": "line",
            "xref": "x",
            "x0": 1,
            "x1": 1,
            "yref": "y domain",
            "y0": 0,
            "y1": 1,
            "line": {"dash": "dash", "color": "#888"},
        }
    )
    labels = _short_labels([r[0] for r in rows])
    hover = [
        _hover_text(f"{r[0]}: {ratio_name} {r[1]:.3g}")
        + (
            _hover_text(f", interval {r[2]:.3g} to {r[3]:.3g}")
            if r[2] is not None and r[3] is not None
            else ", no interval (too few samples)"
        )
        + "<extra></extra>"
        for r in rows
    ]
    trace = {
        "type": "scatter",
        "mode": "markers",
        "x": [r[1] for r in rows],
        "y": [plain(label) for label in labels],
        "name": ratio_name,
        "marker": {"color": MODE_COLOURS.get(mode, "#444"), "size": 8},
        "error_x": {
            "type": "data",
            "symmetric": False,
            "array": [(r[3] - r[1]) if r[3] is not None else 0 for r in rows],
            "arrayminus": [(r[1] - r[2]) if r[2] is not None else 0 for r in rows],
        },
        "hovertemplate": hover,
    }
    caption = (
        f"Each {mode} cell timed on both sides: the warm ratio {ratio_name} and its 95% interval, sorted. Left of the dashed line "
        f"{cand} is faster, right of it slower; an interval that crosses it decides nothing. Unstable timings are drawn too: the table says which decide nothing."
    )
    return Figure(
        f"fig-ratio-{mode}", f"Warm ratio per {mode} cell", caption, _figure(layout, [trace]), tuple(out_of_range)
    )
