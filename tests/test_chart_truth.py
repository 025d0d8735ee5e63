"""Charts never contradict a cell's status: each plots the quantity that judged the cell."""

from __future__ import annotations

from pathlib import Path

import pytest

from reportgen.render.charts import error_vs_allowance
from reportgen.render.report import ReportInputError, judge_log
from tests.chartsvg import DrawnChart, chart_markup, parse_chart
from tests.conftest import FIXTURES, REPO

LOGS = sorted(FIXTURES.glob("*.jsonl")) + sorted((REPO / "sample_runs").glob("*/events.jsonl"))


def drawn_ratios(chart: DrawnChart) -> dict[str, float | None]:
    """Per cell, whether its bar rises above the allowance line (1) as the page draws it: the
    bar's top against the line's height (None: no bar, a zero difference on the log axis)."""
    (line,) = chart.rules
    assert line[4] == "allowance"
    return {b.title.split(": ", 1)[0]: (None if b.height == 0 else (2.0 if b.y < line[1] else 0.5)) for b in chart.bars}


def failed_on_compared_quantity(cell) -> bool:
    """From the log's own counts, not from any ratio: did an element fall outside its allowance?"""
    stats = cell.result.error_stats if cell.result else None
    if cell.train_steps or cell.train_result:
        return (
            any(not s.loss_within for s in cell.train_steps)
            or any(g.mismatched for s in cell.train_steps for g in s.grads)
            or any(p.mismatched for p in (cell.train_result.params if cell.train_result else []))
        )
    return bool(stats and (stats.mismatched or stats.diff_at_worst is None))


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.parent.name if p.name == "events.jsonl" else p.stem)
def test_plotted_ratio_is_above_one_exactly_when_the_cell_failed_on_it(log: Path) -> None:
    try:
        judged = judge_log(log)
    except ReportInputError:
        pytest.skip("an invalid log has no chart")
    cells = judged.run.cells
    figure = error_vs_allowance(cells, judged.judgement.allowance)
    if figure is None:
        pytest.skip("no cell was compared elementwise")
    chart = parse_chart(chart_markup(figure))
    compared = [c for c in cells if c.result is not None and (c.result.error_stats is not None or c.train_steps)]
    assert len(chart.bars) + len(figure.out_of_range) == len(compared), "one bar per compared cell"
    drawn = drawn_ratios(chart)
    for cell in compared:
        if cell.case in figure.out_of_range:
            continue
        above = (drawn[cell.case] or 0) > 1
        assert above == failed_on_compared_quantity(cell), (cell.case, cell.status, drawn[cell.case])
        if cell.status == "pass":
            assert not above, cell.case


def test_training_cells_that_failed_on_parameters_are_drawn_above_the_line(tmp_path: Path) -> None:
    # The synthetic training fixture, with one updated parameter of the compiled cell outside
    # its tolerance while every loss stays within: the loss alone would be drawn under 1.
    import json

    lines = [
        json.loads(line) for line in (FIXTURES / "synthetic_training.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    for event in lines:
        if event["kind"] == "train_result" and event["case"].endswith("compiled"):
            event["params"][0].update(mismatched=2, worst_ratio=7.5)
        if event["kind"] == "case_result" and event["case"].endswith("compiled"):
            event["status"] = "mismatch"
    log = tmp_path / "events.jsonl"
    log.write_text("".join(json.dumps(e) + "\n" for e in lines), encoding="utf-8")
    judged = judge_log(log)
    figure = error_vs_allowance(judged.run.cells, judged.judgement.allowance)
    assert figure is not None
    drawn = drawn_ratios(parse_chart(chart_markup(figure)))
    failed = [c for c in judged.run.cells if c.status == "mismatch"]
    assert failed and all((drawn[c.case] or 0) > 1 for c in failed), "the loss alone would have drawn them under 1"
    assert "7.5 × allowance" in next(
        b.title for b in parse_chart(chart_markup(figure)).bars if b.title.startswith(failed[0].case)
    )


def test_a_difference_where_the_allowance_is_zero_is_drawn_beyond_it(tmp_path: Path) -> None:
    # atol = 0 and a reference of 0 at the worst element: the allowance there is 0, and the
    # compiled cell's difference of 1e-6 put it outside. The chart left the failed cell out
    # (no bar, not listed as out of range): a chart that showed only passing cells.
    import json

    lines = [
        json.loads(line) for line in (FIXTURES / "synthetic_complete.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    failed = "b1-l16-contiguous-float32-compiled"
    for event in lines:
        if event["kind"] == "plan":
            event["tolerances"]["float32"]["atol"] = 0.0
        if event["kind"] == "case_result" and event["case"] == failed:
            event["error_stats"].update(allowed_at_worst=0.0, diff_at_worst=1e-6, max_abs=1e-6, mismatched=1)
            event["status"] = "mismatch"
    log = tmp_path / "events.jsonl"
    log.write_text("".join(json.dumps(e) + "\n" for e in lines), encoding="utf-8")
    judged = judge_log(log)
    assert [c.case for c in judged.run.cells if c.status == "mismatch"] == [failed]
    figure = error_vs_allowance(judged.run.cells, judged.judgement.allowance)
    assert figure is not None
    chart = parse_chart(chart_markup(figure))
    assert drawn_ratios(chart)[failed] == 2.0, "drawn above the allowance line"
    title = next(b.title for b in chart.bars if b.title.startswith(failed))
    assert "beyond a zero allowance" in title and "not finite" not in title
    assert "where the allowance is zero" in figure.caption


def test_a_training_difference_beyond_a_zero_allowance_is_not_called_not_finite(tmp_path: Path) -> None:
    """A second review: the collector writes worst_ratio null for a finite gradient difference
    where the allowance is zero (its max_abs finite), and the chart called it "not finite"."""
    import json

    lines = [
        json.loads(line) for line in (FIXTURES / "synthetic_training.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    compiled = next(e["case"] for e in lines if e["kind"] == "train_step" and e["case"].endswith("compiled"))
    step = [e for e in lines if e["kind"] == "train_step" and e["case"] == compiled][-1]
    step["grads"][0].update(mismatched=1, worst_ratio=None, max_abs=1e-3, max_rel=None)
    for event in lines:
        if event["kind"] == "case_result" and event["case"] == compiled:
            event["status"] = "mismatch"
    log = tmp_path / "events.jsonl"
    log.write_text("".join(json.dumps(e) + "\n" for e in lines), encoding="utf-8")
    judged = judge_log(log)
    figure = error_vs_allowance(judged.run.cells, judged.judgement.allowance)
    assert figure is not None
    title = next(b.title for b in parse_chart(chart_markup(figure)).bars if b.title.startswith(compiled))
    assert "beyond a zero allowance" in title and "not finite" not in title, title
