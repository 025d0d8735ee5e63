"""A report's charts are written as plain data, in the form plotly itself writes them.

Plotly's figure classes check every property, which cost more than the rest of a report's
charts; the report builds the specs directly instead. These tests hold each spec to what
plotly writes for it: plotly reads it back (checking every property) and writes it unchanged.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
import pytest

from reportgen.publish.frame import history_frame
from reportgen.publish.summary import summarize
from reportgen.render.charts import LAYOUT, _figure, _hline, _spec, trend_figures
from reportgen.render.report import ReportInputError, judge_log
from tests.conftest import FIXTURES, REPO

LOGS = sorted(FIXTURES.glob("*.jsonl")) + sorted((REPO / "sample_runs").glob("*/events.jsonl"))


def _text(spec: dict[str, Any]) -> str:
    """As the page embeds it (1 and 1.0 told apart)."""
    return json.dumps(spec, sort_keys=True, ensure_ascii=False)


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.parent.name if p.name == "events.jsonl" else p.stem)
def test_plotly_reads_every_report_chart_back_unchanged(log: Path) -> None:
    try:
        view = judge_log(log).view
    except ReportInputError:
        pytest.skip("an invalid log has no report")
    figures = list(view.correctness_figures) + list(view.timing_figures)
    for figure in figures:
        again = _spec(go.Figure(figure.spec))  # raises on any property plotly does not know
        assert _text(again) == _text(figure.spec), figure.id


def test_plotly_reads_every_trend_chart_back_unchanged() -> None:
    """The site's trend charts over a workload's sample runs, with a geometric-mean chart (its
    line at 1 drawn as plotly's add_hline draws it)."""
    runs = sorted((REPO / "sample_runs").glob("tiny-encoder-cpu-*/events.jsonl"))
    history = history_frame([summarize(judge_log(log)) for log in runs])
    ids = list(dict.fromkeys(history["run_id"]))
    figures = trend_figures(
        history,
        list(dict.fromkeys(history["case"]))[:4],
        "p",
        {ids[1]: (1.05, 0.98, None, 7), ids[-1]: (0.9, None, 0.95, 3)},
    )
    assert {f.id for f in figures} == {
        "p-trend-warm",
        "p-trend-cold",
        "p-trend-compile",
        "p-trend-geomean",
        "p-trend-passed",
    }
    for figure in figures:
        again = _spec(go.Figure(figure.spec))
        assert _text(again) == _text(figure.spec), figure.id
    geomean = next(f for f in figures if f.id == "p-trend-geomean")
    fig = go.Figure(layout=geomean.spec["layout"])
    fig.add_hline(y=1.0, line={"dash": "dot", "color": "#777"})
    assert fig.layout.shapes[0].to_plotly_json() == geomean.spec["layout"]["shapes"][0]


def test_some_logs_draw_every_kind_of_chart() -> None:
    drawn = set()
    for log in LOGS:
        try:
            view = judge_log(log).view
        except ReportInputError:
            continue
        drawn |= {f.id for f in list(view.correctness_figures) + list(view.timing_figures)}
    assert drawn >= {"fig-warm-latency", "fig-cold-warm", "fig-error-allowance", "fig-loss-curves"}, drawn


def test_a_spec_is_what_plotly_writes_for_the_same_figure() -> None:
    """Traces, the template by name, a horizontal line with its label, and numbers that are
    not finite (plotly writes them as null)."""
    layout = {
        **LAYOUT,
        "title": {"text": "t <b>&"},
        "yaxis": {"type": "log", "range": [-1.2, 2.2]},
        "scattermode": "group",
    }
    values = [1, 2.5, math.nan, math.inf, -math.inf, None, 1e-310]
    ours = dict(layout)
    _hline(ours, 1.0, {"dash": "dash", "color": "#888"}, "allowance")
    spec = _figure(
        ours,
        [
            {
                "type": "bar",
                "x": list("abcdefg"),
                "y": values,
                "marker": {"color": ["#d62728"] * 7},
                "name": "n",
                "hovertemplate": ["%{y}"] * 7,
            },
            {
                "type": "scatter",
                "x": ["a"],
                "y": [1.0],
                "name": "eager",
                "mode": "markers",
                "marker": {"symbol": "line-ew-open"},
                "error_y": {"type": "data", "symmetric": False, "array": [0.5], "arrayminus": [0.25]},
            },
            {
                "type": "scatter",
                "x": [1, 2],
                "y": [math.nan, 3.0],
                "mode": "lines+markers",
                "line": {"color": "#000000", "dash": "dash"},
            },
        ],
    )
    fig = go.Figure(layout=layout)
    fig.add_trace(
        go.Bar(x=list("abcdefg"), y=values, marker={"color": ["#d62728"] * 7}, name="n", hovertemplate=["%{y}"] * 7)
    )
    fig.add_trace(
        go.Scatter(
            x=["a"],
            y=[1.0],
            name="eager",
            mode="markers",
            marker={"symbol": "line-ew-open"},
            error_y={"type": "data", "symmetric": False, "array": [0.5], "arrayminus": [0.25]},
        )
    )
    fig.add_trace(
        go.Scatter(x=[1, 2], y=[math.nan, 3.0], mode="lines+markers", line={"color": "#000000", "dash": "dash"})
    )
    fig.add_hline(y=1.0, line={"dash": "dash", "color": "#888"}, annotation_text="allowance")
    assert _text(spec) == _text(_spec(fig))
