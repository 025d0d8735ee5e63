"""A report names the schema its log was written in and the reportgen that judged it: the same
log judged by two reportgen versions may read differently, and a page must say which judged it.
Before, a report named the collector that wrote the log and the constraint file it was judged
with, but neither the log's event schema nor reportgen's own version (a review found only
``<meta name="generator" content="reportgen">``)."""

from __future__ import annotations

from pathlib import Path

from reportgen import __version__
from tests.conftest import REPO
from tests.hostile import invoke

RUN = REPO / "sample_runs" / "tiny-encoder-cpu-20261206T150111Z-1dd183"
OLD = REPO / "sample_runs" / "tiny-encoder-cpu-20261130T101022Z-393b16"


def test_a_report_names_the_log_s_event_schema_and_the_reportgen_that_judged_it(tmp_path: Path) -> None:
    for run, schema in ((RUN, "1.7"), (OLD, "1.1")):
        out = tmp_path / run.name
        assert invoke(["report", run, "--out", out]).code == 0
        text = (out / "report.md").read_text(encoding="utf-8")
        assert f"| collector event schema | {schema} |" in text, text
        assert f"| judged by | reportgen {__version__} |" in text, text
        page = (out / "report.html").read_text(encoding="utf-8")
        assert f"reportgen {__version__}" in page and ">collector event schema<" in page
