"""report-summary.md fits a pull-request comment for any log, and says what the report says."""

from __future__ import annotations

from pathlib import Path

import pytest

from reportgen.render.report import SUMMARY_LIMIT, SUMMARY_NAME, ReportInputError, build_report, judge_log
from tests.conftest import FIXTURES, REPO
from tests.logbuilder import dumps, large_log

SAMPLES = sorted((REPO / "sample_runs").glob("*/events.jsonl"))


@pytest.mark.parametrize(
    "log",
    [*sorted(FIXTURES.glob("*.jsonl")), *SAMPLES],
    ids=lambda p: p.parent.name if p.name == "events.jsonl" else p.stem,
)
def test_summary_carries_the_headline_and_counts(log: Path, tmp_path: Path) -> None:
    try:
        judged = judge_log(log)  # judged once here, for the skip and for what the summary must say
    except ReportInputError:
        pytest.skip("an invalid log has no report")
    build_report(log, tmp_path, ("md-summary",))
    text = (tmp_path / SUMMARY_NAME).read_text(encoding="utf-8")
    assert len(text) < SUMMARY_LIMIT
    assert judged.disposition.headline.split(" (")[0] in text
    for name, count in judged.run.counts().items():
        if count:
            assert f": **{count}**" in text, name


@pytest.mark.slow
def test_the_large_benchmark_log_fits(tmp_path: Path) -> None:
    # The large-log benchmark's shape (50,000 cells, 200,000 events), a third mismatching.
    log = tmp_path / "events.jsonl"
    log.write_text(dumps(large_log(50_000, mismatch_every=3)), encoding="utf-8")
    build_report(log, tmp_path / "out", ("md-summary",))
    text = (tmp_path / "out" / SUMMARY_NAME).read_text(encoding="utf-8")
    assert len(text) < SUMMARY_LIMIT
    assert "more" in text, "long lists say how many were left out"


def test_a_thousand_errors_with_4_kb_messages_fit(tmp_path: Path) -> None:
    events = large_log(1_000)
    for event in events:
        if event["kind"] == "case_result":
            event.update(
                status="error",
                error_stats=None,
                failure={"phase": "run", "type": "RuntimeError", "message": "x" * 4096},
            )
    log = tmp_path / "events.jsonl"
    log.write_text(dumps(events), encoding="utf-8")
    build_report(log, tmp_path / "out", ("md-summary",))
    text = (tmp_path / "out" / SUMMARY_NAME).read_text(encoding="utf-8")
    assert len(text) < SUMMARY_LIMIT
    assert "x" * 1000 not in text, "failure text is cut on the summary; the full text is in the report"


def test_a_synthetic_fixture_s_summary_says_so_on_its_first_line(tmp_path: Path) -> None:
    """A pull-request comment's first line is what a notification shows: a synthetic fixture's
    summary leads with it, as the line `reportgen report` prints, before any disposition."""
    build_report(FIXTURES / "synthetic_complete.jsonl", tmp_path, ("md-summary",))
    first = (tmp_path / SUMMARY_NAME).read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith("### Synthetic fixture, not a measurement (evidence of nothing): Suitable"), first
