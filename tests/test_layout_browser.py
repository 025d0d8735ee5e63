"""Layout that holds: phone width, a 1280 px window, print, keyboard (real pages of the sample runs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reportgen.publish.site import build_site
from tests.browser import open_page
from tests.conftest import REPO

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def sample_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("samples") / "site"
    build_site([REPO / "sample_runs"], out)
    return out


def _pages(site: Path) -> list[Path]:
    return [site / "index.html", *sorted(site.glob("runs/*/index.html")), *sorted(site.glob("workloads/*/index.html"))]


def test_no_page_scrolls_sideways_at_phone_width(sample_site: Path, browser) -> None:
    page = browser.new_page(viewport={"width": 390, "height": 844})
    wide = []
    for path in _pages(sample_site):
        page.goto(path.as_uri())
        page.wait_for_load_state("load")
        if page.evaluate("document.documentElement.scrollWidth") > 390:
            wide.append(path.relative_to(sample_site).as_posix())
    page.close()
    assert wide == []


def test_index_fits_a_1280_window_with_every_count_column(sample_site: Path, browser) -> None:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto((sample_site / "index.html").as_uri())
    page.wait_for_load_state("load")
    box = page.evaluate("(() => { const s = document.querySelector('table.runs').closest('.scroll'); return [s.scrollWidth, s.clientWidth]; })()")
    assert box[0] <= box[1], "the index table needs no sideways scroll at 1280 px"
    last = page.locator("table.runs thead th").last
    assert last.bounding_box()["x"] + last.bounding_box()["width"] <= 1280
    page.close()


def test_tables_never_scroll_vertically_and_take_keyboard_focus(sample_site: Path, browser) -> None:
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    for path in _pages(sample_site)[:3]:
        page.goto(path.as_uri())
        boxes = page.evaluate("[...document.querySelectorAll('.scroll')].map(s => [getComputedStyle(s).maxHeight, getComputedStyle(s).overflowY, s.tabIndex])")
        assert boxes, path
        for max_height, overflow_y, tab_index in boxes:
            assert max_height == "none" and overflow_y != "scroll" and tab_index == 0
    page.close()


def test_print_shows_every_row_and_opens_folded_sections(sample_site: Path, browser) -> None:
    run = next(p for p in _pages(sample_site) if "MiniLM" in p.as_posix() and "/runs/" in p.as_posix())
    page, log = open_page(browser, run.as_uri())
    assert log.errors == []
    folded = page.locator("details:not([open])").count()
    page.emulate_media(media="print")
    page.evaluate("window.dispatchEvent(new Event('beforeprint'))")
    assert folded == 0 or page.locator("details:not([open])").count() == 0
    assert page.evaluate("[...document.querySelectorAll('.scroll')].every(s => getComputedStyle(s).overflowX === 'visible')")
    assert page.evaluate("getComputedStyle(document.querySelector('.crumbs')).display") == "none", "navigation is not printed"
    page.evaluate("window.dispatchEvent(new Event('afterprint'))")
    assert page.locator("details:not([open])").count() == folded
    page.close()
