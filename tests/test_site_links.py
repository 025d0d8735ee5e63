"""In-page links of the sample site: each lands on exactly one element."""

from __future__ import annotations

import re
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner

from reportgen.cli import main
from tests.conftest import REPO

SAMPLE = REPO / "sample_runs" / "tiny-encoder-cpu-20261206T150111Z-1dd183"


class _Links(HTMLParser):
    """Every in-page link and every element id of one page."""

    def __init__(self) -> None:
        super().__init__()
        self.fragments: list[str] = []
        self.ids: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for key, value in attrs:
            if key == "href" and value and value.startswith("#") and len(value) > 1:
                self.fragments.append(value[1:])
            elif key == "id" and value:
                self.ids.append(value)


def test_every_in_page_link_of_the_sample_site_lands_on_one_element(sample_site: Path) -> None:
    # A matrix cell or a listed case links to the cell's details: its problem entry, or for a
    # passed cell its timing row (a passed cell's link led nowhere before).
    links = 0
    for page in sorted(sample_site.rglob("*.html")):
        parser = _Links()
        parser.feed(page.read_text(encoding="utf-8"))
        ids = Counter(parser.ids)
        assert not [i for i, n in ids.items() if n > 1], f"{page}: an id used twice"
        dead = sorted({f for f in parser.fragments if f not in ids})
        assert not dead, f"{page.relative_to(sample_site)}: {len(dead)} in-page link(s) lead nowhere: {dead[:5]}"
        links += len(parser.fragments)
    assert links > 500, "the sample site's pages link their cells"


def _dead_links(page: str) -> tuple[list[str], list[str]]:
    parser = _Links()
    parser.feed(page)
    ids = Counter(parser.ids)
    return sorted({f for f in parser.fragments if f not in ids}), [i for i, n in ids.items() if n > 1]


@pytest.mark.parametrize("lines", [12, 30])
def test_an_untested_cell_s_links_land_on_its_matrix_cell(tmp_path: Path, lines: int) -> None:
    """Before: the disposition's and the matrix's links to an untested cell (here: of a run that
    stopped early) led nowhere, as no section gives such a cell an entry (33 dead links on the
    page of this log's first 30 lines). Its matrix cell is now its element, and says why."""
    kept = (SAMPLE / "events.jsonl").read_text(encoding="utf-8").splitlines()[:lines]
    log = tmp_path / "events.jsonl"
    log.write_text("\n".join(kept) + "\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["report", str(log), "--out", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    page = (tmp_path / "r" / "report.html").read_text(encoding="utf-8")
    dead, twice = _dead_links(page)
    assert dead == [] and twice == []
    untested = re.search(r'<td id="([^"]+)"><span title="\1"><span class="status status-untested">', page)
    assert untested is not None and f'href="#{untested.group(1)}"' in page
