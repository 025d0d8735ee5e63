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


def _drawn(page, chart: str) -> dict:  # type: ignore[no-untyped-def]
    """The chart's box on screen and what it holds."""
    return page.evaluate(
        """id => { const c = document.getElementById(id); const r = c.getBoundingClientRect();
          return {width: r.width, height: r.height, series: c.querySelectorAll('g.series').length,
                  points: c.querySelectorAll('g.point').length, whiskers: c.querySelectorAll('.whisker').length,
                  bars: c.querySelectorAll('rect.bar').length}; }""",
        chart,
    )


def test_report_opens_offline_and_draws_charts(tmp_path: Path, browser) -> None:
    build_report(FIXTURES / "synthetic_complete.jsonl", tmp_path)
    page, log = open_page(browser, (tmp_path / "report.html").as_uri())
    assert log.errors == [] and log.failed == []
    assert all(url.startswith("file://") for url in log.requests), log.requests
    _open_timings(page)
    page.locator("#fig-warm-latency").scroll_into_view_if_needed()
    warm = _drawn(page, "fig-warm-latency")
    assert warm["width"] > 300 and warm["height"] > 150, warm
    assert warm["series"] == 4, "eager and compiled warm samples are drawn, each with its median"
    assert warm["whiskers"] >= 2, "each median has its quartile whiskers"
    assert _drawn(page, "fig-cold-warm")["bars"] >= 2
    page.close()


def test_hostile_log_executes_nothing(tmp_path: Path, browser) -> None:
    build_report(FIXTURES / "synthetic_hostile.jsonl", tmp_path)
    page, log = open_page(browser, (tmp_path / "report.html").as_uri())
    assert page.evaluate("typeof window.__xss") == "undefined"
    assert log.dialogs == [] and log.errors == []
    assert page.locator("img").count() == 0
    assert "window.__xss=1" in page.inner_text("body"), "the payload is visible as text"
    page.close()


def test_the_page_fetches_nothing_for_its_charts(tmp_path: Path, browser) -> None:
    """The charts are in the page as it loads: no script or library is fetched to draw them, and
    the folded section's charts show as soon as it is opened."""
    build_report(FIXTURES / "synthetic_complete.jsonl", tmp_path)
    page = browser.new_page(viewport={"width": 1400, "height": 300})
    requested: list[str] = []
    page.on("request", lambda r: requested.append(r.url.rsplit("/", 1)[-1]))
    page.goto((tmp_path / "report.html").as_uri())
    page.wait_for_load_state("load")
    assert sorted(name.split("-")[0] for name in requested) == ["print", "report", "report.html"], requested
    assert not page.locator("#fig-cold-warm").is_visible(), "section 7 is folded"
    assert not page.locator("table.matrix").is_visible(), "section 3 is folded"
    assert page.locator("#problems h2").is_visible() and page.locator("#problems details.fold").count() == 0, (
        "section 5, the evidence the decision cites, stays open"
    )
    _open_timings(page)
    assert page.locator("#fig-cold-warm").is_visible()
    assert _drawn(page, "fig-cold-warm")["height"] > 100
    assert len(requested) == 3, "opening a section fetches nothing"
    page.close()


def test_printing_shows_every_chart(tmp_path: Path, browser) -> None:
    build_report(FIXTURES / "synthetic_complete.jsonl", tmp_path)
    page = browser.new_page(viewport={"width": 1400, "height": 300})
    page.goto((tmp_path / "report.html").as_uri())
    page.wait_for_load_state("load")
    page.emulate_media(media="print")
    page.evaluate("window.dispatchEvent(new Event('beforeprint'))")
    heights = page.evaluate(
        "() => Array.from(document.querySelectorAll('svg.chart'), c => c.getBoundingClientRect().height)"
    )
    assert len(heights) >= 2 and all(h > 100 for h in heights), heights
    page.close()


def test_dark_mode_charts_have_dark_grids_and_light_text(tmp_path: Path, browser) -> None:
    build_report(FIXTURES / "synthetic_complete.jsonl", tmp_path)
    colours = {}
    for scheme in ("light", "dark"):
        context = browser.new_context(color_scheme=scheme, viewport={"width": 1400, "height": 900})
        page = context.new_page()
        page.goto((tmp_path / "report.html").as_uri())
        _open_timings(page)
        page.locator("#fig-warm-latency").scroll_into_view_if_needed()
        colours[scheme] = page.evaluate(
            """() => { const c = document.getElementById('fig-warm-latency'); const s = e => getComputedStyle(e);
              return {grid: s(c.querySelector('.grid path')).stroke, tick: s(c.querySelector('text.tick')).fill,
                      eager: s(c.querySelector('.tone-eager circle')).fill, bg: s(document.body).backgroundColor}; }"""
        )
        context.close()
    assert colours["dark"]["grid"] == "rgb(58, 61, 68)", colours
    assert colours["dark"]["tick"] == "rgb(230, 230, 230)", colours
    assert colours["light"]["tick"] == "rgb(27, 27, 27)", colours
    assert colours["dark"]["eager"] != colours["light"]["eager"], "the series colours follow the scheme"
