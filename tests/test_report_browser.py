"""The report in a real browser: opens from file://, draws its charts, runs no log text."""

from __future__ import annotations

from pathlib import Path

import pytest

from reportgen.render.report import build_report
from tests.browser import open_page
from tests.conftest import FIXTURES

pytestmark = pytest.mark.browser


def test_report_opens_offline_and_draws_charts(tmp_path: Path, browser) -> None:
    build_report(FIXTURES / "synthetic_complete.jsonl", tmp_path)
    page, log = open_page(browser, (tmp_path / "report.html").as_uri())
    assert log.errors == [] and log.failed == []
    assert all(url.startswith("file://") for url in log.requests), log.requests
    page.wait_for_selector("#fig-warm-latency .main-svg", timeout=10_000)
    boxes = page.locator("#fig-warm-latency .boxlayer .trace").count()
    assert boxes == 2, "eager and compiled warm samples are drawn"
    assert page.locator("#fig-cold-warm .main-svg").count() >= 1
    page.close()


def test_hostile_log_executes_nothing(tmp_path: Path, browser) -> None:
    build_report(FIXTURES / "synthetic_hostile.jsonl", tmp_path)
    page, log = open_page(browser, (tmp_path / "report.html").as_uri())
    assert page.evaluate("typeof window.__xss") == "undefined"
    assert log.dialogs == [] and log.errors == []
    assert page.locator("img").count() == 0
    assert "window.__xss=1" in page.inner_text("body"), "the payload is visible as text"
    page.close()
