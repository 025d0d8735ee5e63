"""The site in headless Chromium: keyboard filter kept in the URL, sorting, dark mode, sticky headers."""

from __future__ import annotations

from pathlib import Path

import pytest

from reportgen.publish.site import build_site
from tests.browser import open_page
from tests.logbuilder import base_events, dumps, finish, with_envelope
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
    page.locator("#matrix details.fold > summary").click()  # the matrix is folded by default
    untested = page.locator(".matrix .status-untested").first.inner_text()
    assert "untested" in untested and "…" in untested, "status as text and symbol, not colour alone"
    context.close()


def _cells(page, key: str) -> list[str]:
    index = page.evaluate(
        f"[...document.querySelectorAll('table.runs thead th')].findIndex(th => th.dataset.key === '{key}')"
    )
    return page.evaluate(
        f"[...document.querySelectorAll('table.runs tbody tr')].map(r => r.cells[{index}].dataset.value ?? r.cells[{index}].textContent.trim())"
    )


@pytest.fixture(scope="module")
def dated_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Synthetic runs started at times whose order differs from their text's first digits."""
    root = tmp_path_factory.mktemp("dated")
    stamps = ["2026-11-29T09:05:00Z", "2026-11-29T10:00:00Z", "2025-12-31T23:59:59Z", "2026-02-01T00:00:00+05:00"]
    for n, (stamp, torch) in enumerate(zip(stamps, ["2.13.0", "2.9.0", "2.10.1", "2.9.0+cpu"])):
        events = base_events()
        events[0].update(run_id=f"dated-{n}", started_at=stamp)
        next(e for e in events if e["kind"] == "environment")["versions"]["torch"] = {
            "value": torch,
            "source": "synthetic fixture",
        }
        path = root / "runs" / f"dated-{n}" / "events.jsonl"
        path.parent.mkdir(parents=True)
        path.write_text(dumps(with_envelope(finish(events))), encoding="utf-8")
    build_site([root / "runs"], root / "site")
    return root / "site"


def test_dates_sort_by_timestamp_and_versions_numerically(dated_site: Path, browser) -> None:
    page, log = open_page(browser, (dated_site / "index.html").as_uri())
    assert log.errors == []
    page.click('th[data-key="date"] button')
    stamps = _cells(page, "date")
    assert len(set(stamps)) > 1
    parsed = page.evaluate("(xs) => xs.map(x => Date.parse(x))", stamps)
    assert parsed == sorted(parsed), "ascending by time, not by the year alone"
    page.click('th[data-key="date"] button')
    assert page.evaluate("(xs) => xs.map(x => Date.parse(x))", _cells(page, "date")) == sorted(parsed, reverse=True)
    # Versions: "2.9.0" sorts before "2.13.0" (numeric parts). The rows are drawn from the row
    # data, so the versions are the runs' own (set in their logs above).
    page.click('th[data-key="torch"] button')
    assert _cells(page, "torch") == ["2.9.0", "2.9.0+cpu", "2.10.1", "2.13.0"]
    page.click('th[data-key="torch"] button')
    assert _cells(page, "torch") == ["2.13.0", "2.10.1", "2.9.0+cpu", "2.9.0"]
    page.close()


def test_totals_legend_and_coloured_dispositions(site: Path, browser) -> None:
    page, _ = open_page(browser, (site / "index.html").as_uri())
    totals = page.inner_text(".totals")
    runs = page.locator("table.runs tbody tr").count()
    counted = page.evaluate(
        "[...document.querySelectorAll('.totals p:first-child .status')].map(s => parseInt(s.textContent.split(':')[1]))"
    )
    # The tallies count measured runs; the synthetic fixtures are named apart ("(N synthetic
    # fixtures not counted)"), so every run is in one or the other.
    synthetic = page.locator("table.runs tbody tr", has_text="synthetic").count()
    assert sum(counted) + synthetic == runs and "Legend" in totals
    if synthetic:
        assert f"({synthetic} synthetic fixture{'s' if synthetic != 1 else ''} not counted)" in totals
    blocked = page.locator("table.runs .disposition-text-blocked").first
    assert blocked.evaluate("e => getComputedStyle(e).color") != page.evaluate("getComputedStyle(document.body).color")
    assert "✖" in blocked.inner_text(), "a symbol, not colour alone"
    page.close()


def test_workload_trends_draw_offline(tmp_path: Path, browser) -> None:
    from tests.test_site import _history_runs

    build_site([_history_runs(tmp_path)], tmp_path / "site")
    page_path = next((tmp_path / "site" / "workloads").glob("*/index.html"))
    page, log = open_page(browser, page_path.as_uri())
    assert log.errors == [] and all(url.startswith("file://") for url in log.requests)
    chart = page.locator("svg.chart").first
    chart.scroll_into_view_if_needed()
    box = chart.bounding_box()
    assert box is not None and box["width"] > 300 and box["height"] > 150, box
    assert page.locator("svg.chart").count() >= 3
    assert page.locator("svg.chart g.point").count() >= 3, "points drawn on the trends"
    page.close()


@pytest.fixture(scope="module")
def big_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The index of 10,000 runs shaped like real ones (the index only: no run pages)."""
    from tests.test_site_scale import _write_index, many_summaries

    return _write_index(tmp_path_factory.mktemp("big") / "site", many_summaries(10_000))


def test_ten_thousand_runs_filter_sort_and_page_from_the_row_data(big_index: Path, browser) -> None:
    import json

    records = json.loads((big_index / "index.json").read_text(encoding="utf-8"))
    page, log = open_page(browser, (big_index / "index.html").as_uri())
    assert log.errors == [] and all(url.startswith("file://") for url in log.requests)
    assert page.inner_text("#shown") == "10000"
    assert page.locator("table.runs tbody tr").count() == 200, "drawn a page at a time"
    assert page.locator("#first-rows").is_hidden(), "the note for readers without scripts"
    hrefs = page.evaluate(
        "[...document.querySelectorAll('table.runs tbody tr td:nth-child(2) a')].map(a => a.getAttribute('href'))"
    )
    assert hrefs == [r["page"] for r in records[:200]]
    page.click("#more")
    assert page.locator("table.runs tbody tr").count() == 400
    page.fill("#filter", "workload-007 cuda")
    expected = [r for r in records if "workload-007" in r["run_id"] and "cuda" in r["run_id"]]
    assert page.inner_text("#shown") == str(len(expected)) and page.locator("table.runs tbody tr").count() == len(
        expected
    )
    page.click('th[data-key="date"] button')
    stamps = _cells(page, "date")
    assert [page.evaluate("(x) => Date.parse(x)", x) for x in stamps] == sorted(
        page.evaluate("(x) => Date.parse(x)", x) for x in stamps
    )
    assert "q=workload-007+cuda" in page.url and "sort=date" in page.url
    reopened, _ = open_page(browser, page.url)
    assert reopened.inner_text("#shown") == str(len(expected)) and _cells(reopened, "date") == stamps
    page.close()
    reopened.close()


def test_rows_drawn_by_the_script_are_the_rows_written_in_the_page(big_index: Path, browser) -> None:
    """The newest rows as index.html writes them (no script) and as site.js draws them."""
    script = "[...document.querySelectorAll('table.runs tbody tr')].slice(0, 100).map(r => r.outerHTML.replace(/>\\s+</g, '><').trim())"
    context = browser.new_context(java_script_enabled=False)
    static = context.new_page()
    static.goto((big_index / "index.html").as_uri())
    assert static.locator("#first-rows").is_visible(), "without scripts the page says it lists the newest rows only"
    assert static.locator("table.runs tbody tr").count() == 100
    context.close()
    page, _ = open_page(browser, (big_index / "index.html").as_uri())
    drawn = page.evaluate(script)
    page.close()
    # The same page without scripts: read its rows through a scripted page that parses its HTML.
    html = (big_index / "index.html").read_text(encoding="utf-8")
    parser = browser.new_page()
    written = parser.evaluate(
        "(html) => { const d = new DOMParser().parseFromString(html, 'text/html'); return [...d.querySelectorAll('table.runs tbody tr')].slice(0, 100).map(r => r.outerHTML.replace(/>\\s+</g, '><').trim()); }",
        html,
    )
    parser.close()
    assert len(written) == 100 and drawn == written
