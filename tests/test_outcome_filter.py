"""The run page's outcome filter: "hide passed cells" and one outcome at a time, by CSS alone;
every cell stays in the page (a browser without :has(), or print, shows them all)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reportgen.render.report import build_report
from tests.browser import open_page
from tests.conftest import FIXTURES


def test_the_page_holds_every_cell_and_the_controls(tmp_path: Path) -> None:
    build_report(FIXTURES / "synthetic_mismatch.jsonl", tmp_path)
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert 'name="outcome-matrix" value="not-pass"' in html and 'name="outcome-problems" value="not-pass"' in html, (
        "a control in each section"
    )
    assert 'value="mismatch"> only <span aria-hidden="true">' in html and 'value="error"' not in html, (
        "only outcomes the run has"
    )
    assert html.count('<td><a href="#b') == 4, "every cell is in the page: nothing is left out for the filter"
    css = next((tmp_path / "assets").glob("report-*.css")).read_text(encoding="utf-8")
    assert "@supports not selector(:has(a)) { .outcome-filter { display: none; } }" in css


def _shown(page: Any, selector: str) -> int:
    return int(
        page.evaluate(f"""Array.from(document.querySelectorAll({selector!r})).filter(e => {{
        const s = getComputedStyle(e); return e.getClientRects().length > 0 && s.visibility !== 'hidden'; }}).length""")
    )


@pytest.mark.browser
def test_hide_passed_and_one_outcome_in_a_browser(tmp_path: Path, browser: Any) -> None:
    build_report(FIXTURES / "synthetic_mismatch.jsonl", tmp_path)
    page, log = open_page(browser, (tmp_path / "report.html").as_uri(), wait_ms=200)
    assert log.errors == []
    cells, rows = "table.matrix td > a", "table.matrix tbody tr"
    assert not page.locator(rows).first.is_visible(), "the matrix is folded by default"
    assert page.locator('#matrix input[value="not-pass"]').is_visible(), "its counts and filter are not"
    page.locator("#matrix details.fold > summary").click()
    assert (_shown(page, cells), _shown(page, rows)) == (4, 2)
    page.locator('#matrix input[value="not-pass"]').check()
    assert _shown(page, cells) == 1 and _shown(page, rows) == 1, "only the mismatching cell and its row"
    assert _shown(page, "article.problem") == 1
    page.locator('#matrix input[value="mismatch"]').check()
    assert _shown(page, cells) == 1 and _shown(page, rows) == 1
    page.locator('#problems input[value="mismatch"]').check()
    assert _shown(page, "article.problem") == 1
    page.locator('#matrix input[value="all"]').check()
    assert (_shown(page, cells), _shown(page, rows)) == (4, 2)
    page.locator('#matrix input[value="not-pass"]').check()
    page.emulate_media(media="print")
    assert _shown(page, cells) == 4, "print shows every cell, whatever the screen was filtered to"
    page.close()
