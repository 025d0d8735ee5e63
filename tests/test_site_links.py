"""In-page links of the sample site: each lands on exactly one element."""

from __future__ import annotations

from collections import Counter
from html.parser import HTMLParser
from pathlib import Path


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
