"""The vendored chart bundle: the file we say we ship, able to draw every chart we make, light pages."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from plotly.offline import get_plotlyjs_version

from reportgen.render.report import build_report, judge_log
from reportgen.render.templating import PLOTLY_BUNDLE, templates_dir
from tests.conftest import FIXTURES, REPO

SAMPLE_LOGS = sorted((REPO / "sample_runs").glob("*/events.jsonl"))
ALL_LOGS = sorted(FIXTURES.glob("*.jsonl")) + SAMPLE_LOGS


def test_vendored_bundle_is_the_recorded_file() -> None:
    data = (templates_dir() / "assets" / "vendor" / PLOTLY_BUNDLE.file).read_bytes()
    assert hashlib.sha256(data).hexdigest() == PLOTLY_BUNDLE.sha256
    assert f"v{PLOTLY_BUNDLE.version}" in data[:200].decode("ascii", "replace")
    readme = (templates_dir() / "assets" / "vendor" / "README.md").read_text(encoding="utf-8")
    assert PLOTLY_BUNDLE.sha256 in readme and PLOTLY_BUNDLE.file in readme
    assert (templates_dir() / "assets" / "vendor" / "plotly-LICENSE.txt").is_file()


def test_bundle_matches_the_plotly_version_figures_are_written_for() -> None:
    assert get_plotlyjs_version() == PLOTLY_BUNDLE.version


@pytest.mark.parametrize("log", ALL_LOGS, ids=lambda p: p.parent.name if p.name == "events.jsonl" else p.stem)
def test_every_trace_type_drawn_is_in_the_bundle(log: Path) -> None:
    judged = judge_log(log)
    figures = list(judged.view.correctness_figures) + list(judged.view.timing_figures)
    used = {trace.get("type", "scatter") for fig in figures for trace in fig.spec.get("data", [])}
    assert used <= PLOTLY_BUNDLE.trace_types, used - PLOTLY_BUNDLE.trace_types


@pytest.mark.parametrize("log", SAMPLE_LOGS, ids=lambda p: p.parent.name)
def test_a_standalone_report_folder_stays_under_2_mb(log: Path, tmp_path: Path) -> None:
    build_report(log, tmp_path)
    total = sum(p.stat().st_size for p in tmp_path.rglob("*") if p.is_file())
    assert total < 2 * 1024 * 1024, f"{total} bytes"
