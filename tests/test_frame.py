"""reportgen.load_cells: one typed row per planned cell per run, figures from the logs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest

import reportgen
from reportgen.publish.frame import COLUMNS
from reportgen.render.report import ReportInputError, judge_log
from tests.conftest import FIXTURES, REPO


def test_columns_and_dtypes_are_the_documented_ones() -> None:
    frame = reportgen.load_cells([REPO / "sample_runs"])
    assert list(frame.columns) == list(COLUMNS)
    for column, dtype in COLUMNS.items():
        assert str(frame[column].dtype) == dtype, column
    assert list(frame["status"].cat.categories) == ["pass", "mismatch", "nonfinite", "error", "skipped", "untested"]


def test_one_row_per_planned_cell_with_the_logged_figures() -> None:
    log = FIXTURES / "synthetic_mismatch.jsonl"
    frame = reportgen.load_cells([log])
    judged = judge_log(log)
    assert len(frame) == len(judged.run.cells)
    assert frame["synthetic"].all(), "the fixture says it is synthetic and the frame keeps that"
    lines = log.read_text(encoding="utf-8").splitlines()
    for row in frame.itertuples():
        if pd.isna(row.result_line):
            assert row.status == "untested"
            continue
        event = json.loads(lines[int(row.result_line) - 1])
        assert event["kind"] == "case_result" and event["case"] == row.case and event["status"] == row.status
        stats = event.get("error_stats")
        if stats and stats["mismatched"] is not None:
            assert row.mismatched == stats["mismatched"] and row.total == stats["total"]


def test_untested_cells_have_no_figures_not_zeros() -> None:
    frame = reportgen.load_cells([FIXTURES / "synthetic_incomplete.jsonl"])
    untested = frame[frame.status == "untested"]
    assert len(untested) > 0
    assert untested["warm_median_s"].isna().all() and untested["mismatched"].isna().all()


def test_no_rows_are_an_empty_typed_frame() -> None:
    from reportgen.publish.frame import cells_frame

    frame = cells_frame([])  # load_cells refuses a folder with no log (below)
    assert frame.empty and list(frame.columns) == list(COLUMNS)
    assert str(frame["started_at"].dtype) == COLUMNS["started_at"]


def test_each_warm_median_carries_the_stability_the_report_gives_it() -> None:
    """An unstable series' median decides nothing; the frame says which medians those are, as
    the run's pages do (the shipped CPU run has unstable series)."""
    from reportgen.judge.timing_stability import timed_cells

    run_dir = REPO / "sample_runs" / "tiny-encoder-cpu-20261202T053312Z-ecd07d"
    frame = reportgen.load_cells([run_dir])
    judged = judge_log(run_dir / "events.jsonl")
    verdicts = {j.case: j.stability.verdict for j in timed_cells(judged.run)}
    timed = frame[frame.warm_median_s.notna()]
    assert dict(zip(timed.case, timed.warm_stability)) == verdicts
    assert "unstable" in verdicts.values() and "stable" in verdicts.values()
    assert frame[frame.warm_median_s.isna()].warm_stability.isna().all()


def test_each_row_says_whether_its_runs_performance_acceptance_is_stopped(tmp_path: Path) -> None:
    """Before: a run whose mismatches have no verdict gave its passing cells' warm medians as
    'stable' with nothing beside them, so the documented filter took them as results."""
    from tests.logbuilder import dumps, fallback_log, mismatch_log

    for name, events in (("stopped", mismatch_log()), ("passing", fallback_log())):
        (tmp_path / name).mkdir()
        (tmp_path / name / "events.jsonl").write_text(dumps(events), encoding="utf-8")
    stopped, passing = (reportgen.load_cells([tmp_path / name]) for name in ("stopped", "passing"))
    assert (stopped.status == "mismatch").any() and (stopped.warm_stability == "stable").any()
    assert stopped.performance_stopped.all() and not passing.performance_stopped.any()
    assert str(stopped.performance_stopped.dtype) == "bool"


def test_a_path_that_does_not_exist_is_named_not_skipped(tmp_path: Path) -> None:
    """A notebook user who mistypes a folder gets an error naming it, not a frame without its runs."""
    missing = tmp_path / "nope"
    with pytest.raises(FileNotFoundError) as raised:
        reportgen.load_cells([missing, REPO / "sample_runs"])
    assert raised.value.filename == str(missing) and "no such file or folder" in str(raised.value)


def test_an_entry_that_is_not_read_is_named_not_skipped(tmp_path: Path) -> None:
    """A FIFO or a device among the paths (or inside a folder of runs) is not a run: the frame
    would quietly lack it, so load_cells raises naming it, as `reportgen site` exits 1."""
    fifo = tmp_path / "runs" / "stuck.jsonl"
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    with pytest.raises(ReportInputError) as raised:
        reportgen.load_cells([tmp_path / "runs", REPO / "sample_runs"])
    assert str(raised.value) == f"{fifo}: skipped: a FIFO (named pipe), not a regular file; only regular files are read"
    with pytest.raises(ReportInputError, match="a character device"):
        reportgen.load_cells("/dev/null")


def test_a_folder_that_holds_no_log_is_named_not_an_empty_frame(tmp_path: Path) -> None:
    """A review: load_cells of an empty folder returned an empty frame with no word, where
    `reportgen validate` and `site` refuse it; beside a folder of runs it went unseen."""
    empty = tmp_path / "empty"
    empty.mkdir()
    for paths in (empty, [empty, REPO / "sample_runs" / "heat-solver-cpu-20261206T150437Z-d2f898"]):
        with pytest.raises(ReportInputError) as raised:
            reportgen.load_cells(paths)
        assert str(raised.value) == f"reportgen.load_cells: no run log (*.jsonl) in {empty}"
    with pytest.raises(ReportInputError, match="none"):
        reportgen.load_cells([])
    run = REPO / "sample_runs" / "heat-solver-cpu-20261206T150437Z-d2f898"
    assert len(reportgen.load_cells(run)) > 0
    # A folder of runs named through '..' or a link holds its runs too (a review of the first version).
    (tmp_path / "linked").symlink_to(run)
    assert len(reportgen.load_cells(tmp_path / "linked")) == len(reportgen.load_cells(empty / ".." / "linked")) > 0


def test_the_weights_origin_is_a_column_apart_from_synthetic() -> None:
    """Runs of made-up weights are measured, not fixtures: the frame tells them apart as the
    site's index does. Before, only `synthetic` (a hand-written fixture) was a column."""
    frame = reportgen.load_cells([REPO / "sample_runs"])
    origins = dict(frame.groupby("workload")["weights_origin"].first())
    assert origins["all-MiniLM-L6-v2"] == "pretrained"
    assert origins["tiny-encoder"] == "synthetic"
    assert not frame.loc[frame.workload == "tiny-encoder", "synthetic"].any(), "measured, not a fixture"
