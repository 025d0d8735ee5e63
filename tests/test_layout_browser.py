"""Layout that holds: phone width, a 1280 px and a 1400 px window, print, keyboard (real pages of
the sample runs: the index, every run report, every workload history, every comparison)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser import open_page

pytestmark = pytest.mark.browser


def _pages(site: Path) -> list[Path]:
    return [
        site / "index.html",
        *sorted(site.glob("runs/*/index.html")),
        *sorted(site.glob("workloads/*/index.html")),
        *sorted(site.glob("comparisons/*/index.html")),
    ]


# The report's folded sections, opened: their tables are measured as a reader who opens them sees them.
OPEN_FOLDS = "() => document.querySelectorAll('details.fold').forEach(d => { d.open = true; })"

# Each table's region: the nearest box that scrolls sideways (a .scroll box, or at phone width a
# table that is its own box), else the table. Returned per table: its class, the region's left and
# right edges, the main column's content edges, whether the region needs sideways scrolling, and
# the narrowest cell.
TABLE_REGIONS = """() => {
  const main = document.querySelector('main');
  const box = main.getBoundingClientRect();
  const style = getComputedStyle(main);
  const left = box.left + parseFloat(style.paddingLeft), right = box.right - parseFloat(style.paddingRight);
  return [...main.querySelectorAll('table')].filter(t => t.offsetParent !== null).map(t => {
    let region = t;
    for (let e = t; e && e !== main; e = e.parentElement) {
      const o = getComputedStyle(e).overflowX;
      if (o === 'auto' || o === 'scroll') { region = e; break; }
    }
    const r = region.getBoundingClientRect();
    const cells = [...t.querySelectorAll('th, td')].filter(c => c.offsetParent !== null).map(c => c.getBoundingClientRect().width);
    return {table: t.className || t.querySelector('caption, th')?.textContent.slice(0, 40) || '?', left: r.left, right: r.right,
            column: [left, right], scrolls: region.scrollWidth > region.clientWidth + 1, narrowest: cells.length ? Math.min(...cells) : 999};
  });
}"""


def test_every_page_readable_at_phone_width(sample_site: Path, browser) -> None:
    """At 390 px no page scrolls sideways; a wide table scrolls inside its own region, which stays
    in the column, and its cells keep a readable width (never one character per line)."""
    page = browser.new_page(viewport={"width": 390, "height": 844})
    wide, outside, narrow = [], [], []
    for path in _pages(sample_site):
        name = path.relative_to(sample_site).as_posix()
        page.goto(path.as_uri())
        page.wait_for_load_state("load")
        page.evaluate(OPEN_FOLDS)
        if page.evaluate("document.documentElement.scrollWidth") > 390:
            wide.append(name)
        for t in page.evaluate(TABLE_REGIONS):
            if t["left"] < t["column"][0] - 1 or t["right"] > t["column"][1] + 1:
                outside.append((name, t["table"], round(t["right"])))
            if t["narrowest"] < 60:  # 4 em at 15 px: a word, not a letter, per line
                narrow.append((name, t["table"], round(t["narrowest"])))
    page.close()
    assert wide == [], "pages that scroll sideways at 390 px"
    assert outside == [], "tables (or their scrolling regions) past the column at 390 px"
    assert narrow == [], "table cells narrower than 60 px at 390 px"


def test_no_table_past_its_column_at_1400(sample_site: Path, browser) -> None:
    """At 1400 px every table stays in its column, and the index and history tables fit it
    without sideways scrolling."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    outside, scrolling = [], []
    for path in _pages(sample_site):
        name = path.relative_to(sample_site).as_posix()
        page.goto(path.as_uri())
        page.wait_for_load_state("load")
        page.evaluate(OPEN_FOLDS)
        assert page.evaluate("document.documentElement.scrollWidth") <= 1400, name
        for t in page.evaluate(TABLE_REGIONS):
            if t["right"] > t["column"][1] + 1:
                outside.append((name, t["table"], round(t["right"] - t["column"][1])))
            if t["scrolls"] and t["table"] in ("runs", "history"):
                scrolling.append((name, t["table"]))
    page.close()
    assert outside == [], outside
    assert scrolling == [], "index and history tables that need sideways scrolling at 1400 px"


def test_on_a_phone_the_disposition_headline_starts_on_the_first_screen(sample_site: Path, browser) -> None:
    """A review: at 375 x 740 the breadcrumb, the title, the banners and the contents list filled
    the first screen of 31 of the 40 run pages, the disposition below it. On a phone the
    disposition comes before the contents; its headline starts on the first screen."""
    page = browser.new_page(viewport={"width": 375, "height": 740})
    late = []
    for path in sorted(sample_site.glob("runs/*/index.html")):
        page.goto(path.as_uri())
        page.wait_for_load_state("load")
        top = page.evaluate("document.querySelector('#disposition .headline').getBoundingClientRect().top")
        if top > 740 - 60:
            late.append((path.parent.name, round(top)))
    page.close()
    assert late == [], late


def test_a_long_status_wraps_in_its_cell(sample_site: Path, browser) -> None:
    """A review: a status that says more than a word ("passes under a changed criterion: ...",
    "untested: layout not measured") stayed on one line, so a comparison's cell-by-cell table was
    about 3,000 px wide at 1400 px and, printed, lost the candidate's columns; the MiniLM run's
    matrix lost two columns, a mismatch among them. Every status in a table cell wraps."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    wide = []
    for path in _pages(sample_site):
        page.goto(path.as_uri())
        page.wait_for_load_state("load")
        page.evaluate(OPEN_FOLDS)
        widest = page.evaluate(
            "Math.max(0, ...[...document.querySelectorAll('td .status')].map(s => s.getBoundingClientRect().width))"
        )
        if widest > 500:
            wide.append((path.relative_to(sample_site).as_posix(), round(widest)))
    page.close()
    assert wide == [], wide


@pytest.mark.parametrize("width", [1400, 390])
def test_index_rows_are_one_short_line(sample_site: Path, browser, width: int) -> None:
    """An index row is a short label, not the headline: at most 60 px tall at either width (the
    headline and the scope open from the disposition cell)."""
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.goto((sample_site / "index.html").as_uri())
    page.wait_for_load_state("load")
    heights = page.evaluate(
        "[...document.querySelectorAll('table.runs tbody tr')].map(r => r.getBoundingClientRect().height)"
    )
    assert len(heights) == len(list(sample_site.glob("runs/*/index.html")))
    assert max(heights) <= 60, heights
    label = page.locator("table.runs tbody tr td details summary").first
    assert label.inner_text().count(",") == 2, "outcome, cells passed of all, ran on"
    label.click()
    assert (
        page.locator("table.runs tbody tr td details[open] p")
        .first.inner_text()
        .startswith(("Suitable", "Blocked", "Requires"))
    )
    page.close()


@pytest.mark.parametrize("width", [390, 1400])
def test_chart_legend_below_the_plot_and_titles_inside(sample_site: Path, browser, width: int) -> None:
    """Every chart of a history page and of a comparison: its box never passes the page's
    column (on a phone the chart keeps a readable width and scrolls inside that box), its tick
    labels are at least 10 px tall, its legend sits below the plot (never over it), its title
    and every axis label stay inside the drawn chart, and the plot keeps a readable height."""
    pages = [
        next(sample_site.glob("workloads/tiny-encoder-*/index.html")),
        min(sample_site.glob("comparisons/tiny-encoder-*/index.html")),
    ]
    for path in pages:
        page, log = open_page(browser, path.as_uri())
        page.set_viewport_size({"width": width, "height": 900})
        page.reload()
        charts = page.evaluate("""() => [...document.querySelectorAll('svg.chart')].map(c => {
          const box = e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
          const fig = c.closest('figure');
          const legend = fig.querySelector('.legend');
          return {id: c.id, chart: box(c), figure: box(fig), plot: box(c.querySelector('.axis path')),
                  region: box(c.closest('.scroll')), title: box(fig.querySelector('.chart-title')),
                  legend: legend ? box(legend) : null, texts: [...c.querySelectorAll('text')].map(box),
                  tick: Math.min(...[...c.querySelectorAll('text.tick')].map(t => t.getBoundingClientRect().height))};
        })""")
        assert log.errors == [] and charts, path
        assert page.evaluate("document.documentElement.scrollWidth") <= width, "nothing scrolls sideways"
        for c in charts:
            chart, figure, plot, title, legend = c["chart"], c["figure"], c["plot"], c["title"], c["legend"]
            region = c["region"]
            assert region[0] >= figure[0] - 1 and region[2] <= figure[2] + 1 and region[2] <= width, c["id"]
            assert chart[0] >= region[0] - 1 and (chart[2] <= region[2] + 1 or width == 390), c["id"]
            assert c["tick"] >= 10, (c["id"], "tick labels too small to read", c["tick"])
            assert title[0] >= figure[0] - 1 and title[2] <= figure[2] + 1, "the title is not clipped"
            for text in c["texts"]:  # tick labels and axis titles: inside the drawn chart
                assert text[0] >= chart[0] - 1 and text[2] <= chart[2] + 1, (c["id"], text, chart)
                assert text[1] >= chart[1] - 1 and text[3] <= chart[3] + 1, (c["id"], text, chart)
            if legend is not None:
                assert legend[1] >= plot[3] and legend[1] >= chart[3] - 1, "the legend is below the plot, not over it"
                assert legend[2] <= figure[2] + 1
            assert plot[3] - plot[1] >= (50 if width == 390 else 100), "the plotting area keeps its height"
        page.close()


def test_index_fits_a_1280_window_with_every_count_column(sample_site: Path, browser) -> None:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto((sample_site / "index.html").as_uri())
    page.wait_for_load_state("load")
    box = page.evaluate(
        "(() => { const s = document.querySelector('table.runs').closest('.scroll'); return [s.scrollWidth, s.clientWidth]; })()"
    )
    assert box[0] <= box[1], "the index table needs no sideways scroll at 1280 px"
    last = page.locator("table.runs thead th").last
    assert last.bounding_box()["x"] + last.bounding_box()["width"] <= 1280
    page.close()


def test_tables_never_scroll_vertically_and_take_keyboard_focus(sample_site: Path, browser) -> None:
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    for path in _pages(sample_site)[:3]:
        page.goto(path.as_uri())
        boxes = page.evaluate(
            "[...document.querySelectorAll('.scroll')].map(s => [getComputedStyle(s).maxHeight, getComputedStyle(s).overflowY, s.tabIndex])"
        )
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
    assert page.evaluate(
        "[...document.querySelectorAll('.scroll')].every(s => getComputedStyle(s).overflowX === 'visible')"
    )
    assert page.evaluate("getComputedStyle(document.querySelector('.crumbs')).display") == "none", (
        "navigation is not printed"
    )
    page.evaluate("window.dispatchEvent(new Event('afterprint'))")
    assert page.locator("details:not([open])").count() == folded
    page.close()
