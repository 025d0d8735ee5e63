"""The report in a real browser: opens from file://, draws its charts, runs no log text."""

from __future__ import annotations

from pathlib import Path

import pytest

from reportgen.render.report import build_report
from tests.browser import open_page
from tests.conftest import FIXTURES

pytestmark = pytest.mark.browser


def _open_timings(page) -> None:  # type: ignore[no-untyped-def]
    """Section 7 is folded by default: open it as a reader would."""
    page.locator("#timings details.fold > summary").click()


def test_report_opens_offline_and_draws_charts(tmp_path: Path, browser) -> None:
    build_report(FIXTURES / "synthetic_complete.jsonl", tmp_path)
    page, log = open_page(browser, (tmp_path / "report.html").as_uri())
    assert log.errors == [] and log.failed == []
    assert all(url.startswith("file://") for url in log.requests), log.requests
    _open_timings(page)
    page.locator("#fig-warm-latency").scroll_into_view_if_needed()
    page.wait_for_selector("#fig-warm-latency .main-svg", timeout=10_000)
    traces = page.locator("#fig-warm-latency .scatterlayer .trace").count()
    assert traces == 4, "eager and compiled warm samples are drawn, each with its median"
    assert page.locator("#fig-warm-latency .errorbar").count() >= 2, "each median has its quartile whiskers"
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


def test_chart_bundle_loads_only_when_a_chart_comes_near(tmp_path: Path, browser) -> None:
    build_report(FIXTURES / "synthetic_complete.jsonl", tmp_path)
    page = browser.new_page(viewport={"width": 1400, "height": 300})
    requested: list[str] = []
    page.on("request", lambda r: requested.append(r.url))
    page.goto((tmp_path / "report.html").as_uri())
    page.wait_for_load_state("load")
    page.wait_for_timeout(300)
    assert not any("plotly" in url for url in requested), "no chart near the top: bundle not parsed yet"
    assert page.locator(".main-svg").count() == 0
    assert not page.locator("#fig-cold-warm").is_visible(), "section 7 is folded"
    assert not page.locator("table.matrix").is_visible(), "section 3 is folded"
    assert page.locator("#problems h2").is_visible() and page.locator("#problems details.fold").count() == 0, (
        "section 5, the evidence the decision cites, stays open"
    )
    _open_timings(page)
    # Opening the folded section draws its charts, even those still far below the window.
    assert page.evaluate(
        "() => document.getElementById('fig-cold-warm').getBoundingClientRect().top > window.innerHeight + 100"
    )
    page.wait_for_selector("#fig-cold-warm .main-svg", timeout=10_000)
    assert sum("plotly" in url for url in requested) == 1, "loaded once, from the report's own folder"
    assert all(url.startswith("file://") for url in requested)
    page.close()


def test_printing_draws_every_chart(tmp_path: Path, browser) -> None:
    build_report(FIXTURES / "synthetic_complete.jsonl", tmp_path)
    page = browser.new_page(viewport={"width": 1400, "height": 300})
    page.goto((tmp_path / "report.html").as_uri())
    page.wait_for_load_state("load")
    page.evaluate("window.dispatchEvent(new Event('beforeprint'))")
    charts = page.locator("div.chart").count()
    assert charts >= 2
    # A function, not a string: the page's Content-Security-Policy forbids evaluating strings.
    page.wait_for_function(
        f"() => document.querySelectorAll('div.chart.js-plotly-plot').length === {charts}", timeout=10_000
    )
    page.close()


def test_dark_mode_charts_have_dark_grids_and_light_text(tmp_path: Path, browser) -> None:
    build_report(FIXTURES / "synthetic_complete.jsonl", tmp_path)
    context = browser.new_context(color_scheme="dark", viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.goto((tmp_path / "report.html").as_uri())
    _open_timings(page)
    page.locator("#fig-warm-latency").scroll_into_view_if_needed()
    page.wait_for_selector("#fig-warm-latency .main-svg", timeout=10_000)
    grid = page.evaluate("getComputedStyle(document.querySelector('#fig-warm-latency .ygrid')).stroke")
    tick = page.evaluate("getComputedStyle(document.querySelector('#fig-warm-latency .ytick text')).fill")
    assert grid == "rgb(58, 61, 68)", grid
    assert tick == "rgb(221, 221, 221)", tick
    context.close()
