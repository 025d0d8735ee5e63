"""Text that becomes markup: annotation Markdown (images, links), chart labels, and the
Content-Security-Policy every page carries. Nothing from a log or an annotations file can load
anything, point at the reader's files or leave the report folder."""

from __future__ import annotations

import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reportgen.render.markdown import render_markdown
from reportgen.render.templating import md_code, md_code_cell, md_escape
from tests.conftest import FIXTURES
from tests.hostile import invoke
from tests.logbuilder import complete_log, dumps

HOSTILE_CASE = '<a href="https://evil.example/">x</a>-compiled'


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[dict[str, str | None]] = []
        self.images: list[dict[str, str | None]] = []
        self.handlers: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.links.append(dict(attrs))
        if tag == "img":
            self.images.append(dict(attrs))
        self.handlers += [name for name, _ in attrs if name.lower().startswith("on")]


def _parse(html: str) -> _Links:
    parser = _Links()
    parser.feed(html)
    return parser


# (name, Markdown, href that may appear (None: no link at all), text the reader still sees)
MARKDOWN: list[tuple[str, str, str | None, str]] = [
    (
        "remote image",
        "![pixel](https://evil.example/pixel.png)",
        None,
        "image not shown: pixel, https://evil.example/pixel.png",
    ),
    ("image beside the log", "![plot](plot.png)", None, "image not shown: plot, plot.png"),
    ("image as a data URL", "![x](data:image/png;base64,AAAA)", None, "![x](data:image/png;base64,AAAA)"),
    (
        "reference-style image",
        "![p][i]\n\n[i]: https://evil.example/p.png",
        None,
        "image not shown: p, https://evil.example/p.png",
    ),
    ("absolute local path", "[passwords](/etc/passwd)", None, "[passwords](/etc/passwd)"),
    ("file URL", "[passwords](file:///etc/passwd)", None, "file:///etc/passwd"),
    ("file autolink", "<file:///etc/passwd>", None, "file:///etc/passwd"),
    ("out of the report folder", "[up](../../../etc/passwd)", None, "../../../etc/passwd"),
    ("out, percent-encoded", "[up](%2e%2e/%2e%2e/secret)", None, "%2e%2e/%2e%2e/secret"),
    ("windows drive", "[c](C:\\Windows\\win.ini)", None, "C:\\Windows\\win.ini"),
    ("protocol-relative", "[x](//evil.example/x)", None, "//evil.example/x"),
    ("javascript", "[x](javascript:alert(1))", None, "javascript:alert(1)"),
    ("reference to a local path", "[r][1]\n\n[1]: /etc/passwd", None, "[r][1]"),
    ("raw HTML image", '<img src="https://evil.example/p.png" onerror="alert(1)">', None, "&lt;img"),
    ("external link", "[docs](https://example.org/guide)", "https://example.org/guide", "docs"),
    ("external autolink", "<https://example.org/a>", "https://example.org/a", "https://example.org/a"),
    ("relative link inside", "[notes](notes.md#top)", "notes.md#top", "notes"),
    ("fragment", "[cell](#case-1)", "#case-1", "cell"),
]


@pytest.mark.parametrize("name,text,href,visible", MARKDOWN, ids=[m[0] for m in MARKDOWN])
def test_annotation_markdown_loads_nothing_and_links_only_where_safe(
    name: str, text: str, href: str | None, visible: str
) -> None:
    html = str(render_markdown(text))
    parsed = _parse(html)
    assert parsed.images == [] and parsed.handlers == [], html
    assert visible in html, html
    if href is None:
        assert parsed.links == [], html
    else:
        assert [link["href"] for link in parsed.links] == [href], html
        for link in parsed.links:
            if href.startswith("https://"):
                assert link["rel"] == "noopener noreferrer" and "external" in (link.get("class") or ""), html
            else:
                assert "rel" not in link, html


def _rename_case(events: list[dict], old: str, new: str) -> list[dict]:
    text = json.dumps(events).replace(json.dumps(old)[1:-1], json.dumps(new)[1:-1])
    return json.loads(text)


def hostile_run(folder: Path, case: str = HOSTILE_CASE) -> Path:
    """A synthetic run whose case key carries markup and whose annotations try every load."""
    folder.mkdir(parents=True, exist_ok=True)
    events = complete_log()
    events = _rename_case(events, "b2-l16-contiguous-float32-compiled", case)
    for event in events:
        if event.get("case") == case and event["kind"] == "case_result":
            event["status"] = "mismatch"
            event["error_stats"].update(mismatched=3, max_abs=1e-2, diff_at_worst=1e-2)
        if event["kind"] == "run_start":
            event["run_id"] = "hostile-markup"
    (folder / "events.jsonl").write_text(dumps(events), encoding="utf-8")
    notes = "\n".join(f"{m[1]}\n" for m in MARKDOWN)
    (folder / "annotations.toml").write_text(
        f"[{json.dumps(case)}]\nexplanation = {json.dumps(notes)}\n", encoding="utf-8"
    )
    return folder / "events.jsonl"


@pytest.mark.parametrize(
    "case", [HOSTILE_CASE, "</svg><script>alert(1)</script><svg>-compiled"], ids=["link", "script"]
)
def test_chart_labels_are_plain_text(tmp_path: Path, case: str) -> None:
    from tests.chartsvg import page_charts

    log = hostile_run(tmp_path / "run", case)
    out = invoke(["report", log, "--out", tmp_path / "out"])
    assert out.code == 0, out.output
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    charts = page_charts(html)  # each parses as XML on its own: the label closed no element
    assert "fig-error-allowance" in charts
    texts = [t for chart in charts.values() for t in chart.texts]
    assert any(t.startswith(case + ":") for t in texts), "the case key is in the charts, as the text it is"
    assert "alert(1)</script>" not in html and "<script>alert" not in html
    parser = _Links()
    parser.feed(html)
    assert not any("evil.example" in (link.get("href") or "") for link in parser.links), "never a live link"
    assert len(re.findall(r"<script", html)) == 1, "only the page's own print script"


CSP = re.compile(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">')


def test_every_page_carries_a_content_security_policy(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    hostile_run(runs / "hostile")
    for name in ("synthetic_complete", "synthetic_mismatch"):
        (runs / name).mkdir()
        shutil.copy(FIXTURES / f"{name}.jsonl", runs / name / "events.jsonl")
    (runs / "site.toml").write_text(
        '[[compare]]\nbaseline = "synthetic-complete"\ncandidate = "synthetic-mismatch"\n', encoding="utf-8"
    )
    out = invoke(["site", runs, "--out", tmp_path / "site"])
    assert out.code == 0, out.output
    pages = sorted((tmp_path / "site").rglob("*.html"))
    assert any("comparisons" in str(p) for p in pages) and any("workloads" in str(p) for p in pages)
    assert invoke(["report", runs / "hostile" / "events.jsonl", "--out", tmp_path / "report"]).code == 0
    pages.append(tmp_path / "report" / "report.html")
    for page in pages:
        found = CSP.findall(page.read_text(encoding="utf-8"))
        assert len(found) == 1, page
        rules = dict((part.split(" ", 1) + [""])[:2] for part in (p.strip() for p in found[0].split(";")) if part)
        assert rules["default-src"] == "'none'", page
        assert rules["script-src"] == "'self'", "no inline script, no event handler attribute, no eval"
        for directive in ("img-src", "style-src", "font-src", "connect-src"):
            assert "http" not in rules.get(directive, "") and "*" not in rules.get(directive, ""), (page, directive)


MD_SPECIAL = "\\`*_{}[]<>|#!~"


@given(st.text(alphabet=st.sampled_from(list(MD_SPECIAL + " \t\n\r\u00a0ab·é`")), max_size=40))
def test_markdown_table_text_escapes_every_special_character_and_joins_lines(text: str) -> None:
    """Each character Markdown reads as markup gets one backslash; whitespace runs become one space."""
    flat = " ".join(text.split())
    assert md_escape(text) == "".join("\\" + ch if ch in MD_SPECIAL else ch for ch in flat)
    code, cell = md_code(text), md_code_cell(text)
    assert "\n" not in code and "\\|" not in code.replace(flat, "") and cell == code.replace("|", "\\|")


def test_a_pipe_in_a_case_key_shows_as_itself_in_and_out_of_tables(tmp_path: Path) -> None:
    """Inside a code span nothing is an escape: out of a table a case key's | is written as it
    is; in a table cell it is written \\|, which the table reads as a | of the cell."""
    from markdown_it import MarkdownIt

    from reportgen.render.report import build_report
    from tests.logbuilder import dumps, large_log

    events = large_log(3, mismatch_every=1)
    old = next(e["case"] for e in events if e["kind"] == "case_result")
    for event in events:
        if event.get("case") == old:
            event["case"] = "a|b"
        for planned in event.get("matrix", []):
            if planned["case"] == old:
                planned["case"] = "a|b"
    log = tmp_path / "events.jsonl"
    log.write_text(dumps(events), encoding="utf-8")
    build_report(log, tmp_path / "out", formats=("md",))
    md = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    html = MarkdownIt("commonmark").enable("table").render(md)
    assert "<code>a|b</code>" in html and "<code>a\\|b</code>" not in html
    assert re.search(r"<h[1-6][^>]*>[^<]*<code>a\|b</code>", html), "a heading names the cell"
    assert re.search(r"<td><code>a\|b</code></td>", html), "a table row names the cell in one cell"
