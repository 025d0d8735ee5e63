"""Invisible and reordering characters in a log's text are shown visibly (``<U+202E>``) on every
page, in every Markdown output and on the terminal; slugs stay ASCII; an escape sequence never
reaches the terminal whole (collector.visible, applied by the templates and the command lines)."""

from __future__ import annotations

import json
import unicodedata
from html.parser import HTMLParser
from pathlib import Path

import pytest

from collector.__main__ import main as collector_main
from collector.visible import terminal, visible
from tests.conftest import REPO
from tests.hostile import invoke
from tests.logbuilder import _cells, dumps, timing_log

# Right-to-left override, zero widths, isolates, a line separator, BOM, a tag character, and
# terminal escapes: a colour, a screen clear and a title change ended by BEL.
HIDDEN = "\u202e\u200b\u200d\u2066\u2069\u2028\ufeff\U000e0041\x1b[31m\x1b[2J\x1b]0;owned\x07"
HIDDEN_CHARS = {c for c in HIDDEN if unicodedata.category(c) in ("Cc", "Cf", "Zl")}
WORKLOAD = f"tiny-{HIDDEN}redocne"


def _log(path: Path, run: str, scale: float) -> Path:
    # A run id holds no control character (the contract refuses one); every other hidden kind.
    events = timing_log(f"run-{run}-{''.join(c for c in HIDDEN if unicodedata.category(c) != 'Cc')}", scale=scale)
    events[0].update(workload=WORKLOAD, origin_note=f"synthetic {HIDDEN} fixture")
    for warning in _cells(events, "warning"):
        warning["message"] = f"warned {HIDDEN}"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps(events), encoding="utf-8")
    return path


def _raw_hidden(text: str) -> set[str]:
    return {c for c in text if c in HIDDEN_CHARS}


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


# What CommonMark with tables makes of Markdown text, and the folding our summary template writes;
# anything else was raw HTML from a log let through.
MARKDOWN_TAGS = {
    "p",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "code",
    "pre",
    "em",
    "strong",
    "ul",
    "ol",
    "li",
    "blockquote",
    "br",
    "hr",
    "a",
    "details",
    "summary",
}


def _no_live_markup(md: str) -> None:
    """The Markdown rendered as a permissive viewer would (raw HTML on) has no tag of its own."""
    from markdown_it import MarkdownIt

    parser = _Tags()
    parser.feed(MarkdownIt("commonmark", {"html": True}).enable("table").render(md))
    for tag, attrs in parser.tags:
        assert tag in MARKDOWN_TAGS, (tag, attrs)
        assert not any(name.startswith("on") for name in attrs), (tag, attrs)
        assert not (attrs.get("href") or "").lower().startswith(("javascript:", "data:")), attrs


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    root = tmp_path_factory.mktemp("invisible")
    a = _log(root / "runs" / f"a-{HIDDEN}" / "events.jsonl", "a", 1.0)
    b = _log(root / "runs" / "b" / "events.jsonl", "b", 1.3)
    said = [
        invoke(["report", a, "--out", root / "report", "--format", "html,md,md-summary"]),
        invoke(["site", root / "runs", "--out", root / "site"]),
        invoke(["compare", a, b, "--out", root / "compare"]),
        invoke(["diff", a, b, "--format", "md"]),
        invoke(["diff", a, b]),
        invoke(["validate", a, b]),
    ]
    return {"root": root, "said": said}


def test_pages_and_markdown_show_hidden_characters_visibly(outputs: dict[str, object]) -> None:
    root: Path = outputs["root"]  # type: ignore[assignment]
    written = [
        p
        for p in root.rglob("*")
        if p.is_file() and p.suffix in (".html", ".md", ".js") and "runs" != p.parts[len(root.parts)]
    ]
    pages = {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8") for p in written}
    for name in (
        "report/report.html",
        "report/report.md",
        "report/report-summary.md",
        "site/index.html",
        "compare/compare.md",
    ):
        assert name in pages, sorted(pages)
    for name, text in pages.items():
        assert _raw_hidden(text) == set(), (name, sorted(f"U+{ord(c):04X}" for c in _raw_hidden(text)))
    assert "&lt;U+202E&gt;" in pages["report/report.html"] and "&lt;U+202E&gt;" in pages["site/index.html"]
    assert "U+202E" in pages["report/report.md"] and "U+200B" in pages["compare/compare.md"]
    assert any("U+202E" in text for name, text in pages.items() if name.startswith("site/") and name.endswith(".js")), (
        "the index's rows script"
    )


def test_markdown_outputs_have_no_live_markup(outputs: dict[str, object]) -> None:
    root: Path = outputs["root"]  # type: ignore[assignment]
    said = outputs["said"]
    mds = [p.read_text(encoding="utf-8") for p in (root / "report").glob("*.md")] + [
        p.read_text(encoding="utf-8") for p in (root / "compare").glob("*.md")
    ]
    mds.append(said[3].stdout)  # type: ignore[index]
    assert len(mds) >= 4 and "U+202E" in said[3].stdout  # type: ignore[index]
    for md in mds:
        _no_live_markup(md)


def test_slugs_stay_ascii(outputs: dict[str, object]) -> None:
    site: Path = outputs["root"] / "site"  # type: ignore[operator]
    names = [p.relative_to(site).as_posix() for p in site.rglob("*")]
    assert len(names) > 5 and all(n.isascii() for n in names), [n for n in names if not n.isascii()]


def test_terminal_output_escapes_control_and_reordering_characters(outputs: dict[str, object]) -> None:
    for said in outputs["said"]:  # type: ignore[attr-defined]
        assert said.code in (0, 1), said.output
        assert _raw_hidden(said.output) == set(), said.output
    # The escape sequences of the workload name and warnings (a run id holds none: refused).
    assert any("<U+001B>[31m" in said.output for said in outputs["said"]), outputs["said"]  # type: ignore[attr-defined]


def test_a_refusal_message_escapes_what_it_quotes(tmp_path: Path) -> None:
    bad = tmp_path / f"bad-{HIDDEN}.jsonl"
    bad.write_text(json.dumps({"schema_version": f"1.0{HIDDEN}", "seq": 0}) + "\n", encoding="utf-8")
    for args in (["validate", bad], ["report", bad, "--out", tmp_path / "out"]):
        out = invoke(args)
        assert out.code == 1 and "error" in out.output
        assert _raw_hidden(out.output) == set() and "<U+001B>" in out.output, out.output


def test_the_collector_escapes_a_modules_text_on_the_terminal(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "evil.py").write_text(f"raise ImportError({HIDDEN!r})\n", encoding="utf-8")
    plan = tmp_path / "evil.toml"
    plan.write_text(
        (REPO / "tests" / "workloads" / "faulty.toml").read_text(encoding="utf-8").replace('"faulty.py"', '"evil.py"'),
        encoding="utf-8",
    )
    code = collector_main(
        ["--workload", str(plan), "--target", "cpu", "--out", str(tmp_path / "runs"), "--cold", "off"]
    )
    err = capfd.readouterr().err
    assert code == 2 and "raised on import: ImportError" in err
    assert _raw_hidden(err) == set() and "<U+202E>" in err and "<U+001B>[2J" in err, err


def test_the_hidden_class_covers_every_control_and_format_character() -> None:
    """The class in collector.visible is written out; it must hold every Cc, Cf, Cs, Zl and Zp
    code point this Python knows (it may hold more: format characters of later Unicode)."""
    missing = [
        f"U+{cp:04X}"
        for cp in range(0x110000)
        if unicodedata.category(chr(cp)) in ("Cc", "Cf", "Cs", "Zl", "Zp") and visible(chr(cp), keep="") == chr(cp)
    ]
    assert missing == []
    assert visible("a\tb\nc") == "a\tb\nc" and terminal("\x1b[2J") == "<U+001B>[2J"
    assert visible("tiny-\u202eredocne") == "tiny-<U+202E>redocne" and visible("plain é 名") == "plain é 名"


@pytest.mark.parametrize("brk", ["\n", "\r\n", "\r", "\u2028", "\x85"], ids=["LF", "CRLF", "CR", "LS", "NEL"])
def test_a_line_break_in_a_log_value_forges_no_line_of_diff_s_text(tmp_path: Path, brk: str) -> None:
    """A model revision (or version, or collector string) holding a line break put it raw into
    `reportgen diff`'s text: the log could write lines that read as diff's own ('FORGED: no
    criteria changed'). Every value stays on its own line, the break shown."""
    from click.testing import CliRunner

    from reportgen.cli import main
    from tests.logbuilder import base_events, dumps, with_envelope

    logs = []
    for name, revision in (("before", "tiny v1"), ("after", f"tiny v1{brk}FORGED: no criteria changed")):
        events = base_events()
        events[0]["run_id"] = f"run-{name}"
        next(e for e in events if e["kind"] == "plan")["model_revision"] = revision
        log = tmp_path / name / "events.jsonl"
        log.parent.mkdir()
        log.write_text(dumps(with_envelope(events)), encoding="utf-8")
        logs.append(log)
    done = CliRunner().invoke(main, ["diff", str(logs[0]), str(logs[1])])
    assert done.exit_code == 0, done.output
    assert not any(line.startswith("FORGED") for line in done.output.splitlines()), done.output
    assert "FORGED: no criteria changed" in done.output  # shown, on the criterion's own line


# Characters a page shows as nothing or as a plain space that are no control or format
# character: default-ignorable ones (a combining grapheme joiner, Hangul fillers, variation
# selectors, the Khmer inherent vowels) and the braille blank.
UNSEEN = "\u034f\u115f\u1160\u17b4\u180b\u3164\ufe0f\uffa0\U000e0101\u2800"


def test_characters_a_page_shows_as_nothing_or_a_space_are_shown_visibly() -> None:
    """A review: a case key with U+034F (or U+3164, U+FE0F, U+00A0, ...) appended read exactly as
    the key without it on every page and on the terminal; only Cc and Cf characters were shown."""
    spaces = [chr(cp) for cp in range(0x110000) if unicodedata.category(chr(cp)) == "Zs" and cp != 0x20]
    assert spaces and all(visible(c) == f"<U+{ord(c):04X}>" for c in spaces)
    assert all(visible(c) == f"<U+{ord(c):04X}>" for c in UNSEEN)
    assert visible("plain é 名 a b") == "plain é 名 a b"


@pytest.mark.parametrize(
    "key",
    [
        "b1-l16-contiguous-float32-eager\u034f",
        "b2-l16-contiguous-float32-eager ",
        "b2-l16\u00a0-contiguous-float32-eager",
    ],
)
def test_a_case_key_that_reads_as_another_is_refused(tmp_path: Path, key: str) -> None:
    """The b2 eager cell renamed to read as the b1 one (an invisible character added), or as its
    own key in the collector's form with a space added: validate said valid, and the timings
    table showed two rows of the same name (the form check judges only keys in the form)."""
    sample = REPO / "sample_runs" / "tiny-encoder-cpu-20261206T150111Z-1dd183" / "events.jsonl"
    log = tmp_path / "run" / "events.jsonl"
    log.parent.mkdir()
    log.write_text(
        sample.read_text(encoding="utf-8").replace('"b2-l16-contiguous-float32-eager"', json.dumps(key)),
        encoding="utf-8",
    )
    result = invoke(["validate", log])
    assert result.code == 1
    assert "on a page: it adds a space or a character no page shows, so two cells would read alike" in result.output
    assert visible(key, keep="") in result.output


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("cell a b", "cell a  b"),
        ("x ", "x  "),
        ("x", " x"),
        ("cell a b", "cell a\tb"),
        ("cell a b", "cell a\u00a0b"),
        ("cell a b", "cell a\u2800b"),
        ("cell a b", "cell a\u3164b"),
        ("cell ab", "cell a\u3164b"),  # a filler some fonts draw as nothing
        ("cell ab", "cell a\u1160b"),
    ],
)
def test_two_keys_alike_but_for_runs_of_spaces_are_refused(tmp_path: Path, first: str, second: str) -> None:
    """A second review: keys in no collector's form that differ only in runs of spaces passed,
    and a browser shows 'cell a b' and 'cell a  b' alike."""
    sample = REPO / "sample_runs" / "tiny-encoder-cpu-20261206T150111Z-1dd183" / "events.jsonl"
    text = sample.read_text(encoding="utf-8")
    text = text.replace('"b2-l16-contiguous-float32-eager"', json.dumps(first))
    text = text.replace('"b2-l16-noncontiguous-float32-eager"', json.dumps(second))
    log = tmp_path / "run" / "events.jsonl"
    log.parent.mkdir()
    log.write_text(text, encoding="utf-8")
    result = invoke(["validate", log])
    assert result.code == 1 and "so two cells would read alike" in result.output


def test_ascii_text_shows_its_controls_but_those_kept() -> None:
    """ASCII text takes a shorter path (a CSV of 50,000 rows scanned once): the same words."""
    from collector.visible import visible

    assert visible("a\x1b[2J\tb\nc\r\x7f", "\t\n") == "a<U+001B>[2J\tb\nc<U+000D><U+007F>"
    assert visible("x\ty\n", "") == "x<U+0009>y<U+000A>"
    assert visible("plain", "") == "plain" and visible("caf\u00e9\x07") == "caf\u00e9<U+0007>"
