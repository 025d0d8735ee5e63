"""The shared assets: small, our own, and no chart library (the charts are inline SVG)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from reportgen.render.report import build_report, judge_log
from reportgen.render.templating import ASSET_SOURCES, templates_dir
from tests.conftest import REPO

SAMPLE_LOGS = sorted((REPO / "sample_runs").glob("*/events.jsonl"))


def test_the_assets_are_our_own_small_files() -> None:
    assets = templates_dir() / "assets"
    assert sorted(p.name for p in assets.iterdir()) == sorted(ASSET_SOURCES), "nothing vendored beside them"
    for name in ASSET_SOURCES:
        assert (assets / name).stat().st_size < 32 * 1024, name


@pytest.mark.parametrize("log", SAMPLE_LOGS, ids=lambda p: p.parent.name)
def test_a_report_draws_its_charts_with_no_script(log: Path, tmp_path: Path) -> None:
    build_report(log, tmp_path)
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    view = judge_log(log).view
    figures = list(view.correctness_figures) + list(view.timing_figures)
    assert page.count('<svg class="chart"') == len(figures), "every chart is in the page as it loads"
    scripts = re.findall(r"<script[^>]*>", page)
    assert all(re.fullmatch(r'<script src="assets/print-[0-9a-f]{10}\.js">', s) for s in scripts), scripts
    total = sum(p.stat().st_size for p in tmp_path.rglob("*") if p.is_file())
    assert total < 1024 * 1024, f"{total} bytes"
