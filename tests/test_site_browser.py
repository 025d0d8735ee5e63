"""The site in headless Chromium: keyboard filter kept in the URL, sorting, dark mode, sticky headers."""

from __future__ import annotations

from pathlib import Path

import pytest

from reportgen.publish.site import build_site
from tests.browser import open_page
from tests.test_site import _fixture_dir

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("site")
    build_site([_fixture_dir(root)], root / "site")
    return root / "site"


def test_filter_by_keyboard_keeps_state_in_url(site: Path, browser) -> None:
    page, log = open_page(browser, (site / "index.html").as_uri())
    assert log.errors == [] and log.failed == []
    total = page.locator("table.runs tbody tr").count()
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "filter", "the filter is the first stop for the keyboard"
    page.keyboard.type("cg-solver")
    assert page.locator("table.runs tbody tr:not([hidden])").count() == 1 < total
    assert "q=cg-solver" in page.url
    reopened, _ = open_page(browser, page.url)
    assert reopened.input_value("#filter") == "cg-solver"
    assert reopened.locator("table.runs tbody tr:not([hidden])").count() == 1
    page.close()
    reopened.close()


def test_sort_by_column(site: Path, browser) -> None:
    page, _ = open_page(browser, (site / "index.html").as_uri())
    page.click('th[data-key="workload"] button')
    names = page.locator("table.runs tbody tr td:first-child").all_inner_texts()
    assert names == sorted(names)
    assert "sort=workload" in page.url
    page.click('th[data-key="workload"] button')
    assert page.locator("table.runs tbody tr td:first-child").all_inner_texts() == sorted(names, reverse=True)
    page.close()


def test_dark_mode_sticky_headers_and_text_statuses(site: Path, browser) -> None:
    context = browser.new_context(color_scheme="dark")
    page = context.new_page()
    page.goto((site / "index.html").as_uri())
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background == "rgb(22, 24, 28)"
    assert page.evaluate("getComputedStyle(document.querySelector('thead th')).position") == "sticky"
    run = next((site / "runs").glob("synthetic-incomplete-*"))
    page.goto((run / "index.html").as_uri())
    untested = page.locator(".matrix .status-untested").first.inner_text()
    assert "untested" in untested and "…" in untested, "status as text and symbol, not colour alone"
    context.close()
