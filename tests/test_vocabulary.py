"""One vocabulary on every page: no raw token of the contract's enumerations where a reader
reads (run reports, workload histories, comparisons, diffs, in HTML and Markdown), and the
verdict words of the run report on the comparison too."""

from __future__ import annotations

import re
import typing
from html.parser import HTMLParser
from pathlib import Path

import pytest
import msgspec

from reportgen.contract import events as ev
from reportgen.judge.comparison import CellSide
from reportgen.publish.diff import diff_command
from reportgen.render.compare_view import _status_text
from tests.conftest import REPO

SAMPLES = REPO / "sample_runs"


def _literals(annotation: object, found: set[str]) -> None:
    if typing.get_origin(annotation) is typing.Literal:
        found.update(a for a in typing.get_args(annotation) if isinstance(a, str))
    for arg in typing.get_args(annotation):
        _literals(arg, found)


def raw_tokens() -> set[str]:
    return _enumerated() | {"min_median"}  # a timing-stability rule's name, as the log keeps it


def _enumerated() -> set[str]:
    """Every snake_case value an enumerated field of the contract can take. Event kinds are left
    out: a report names the event a fact came from (``case_result on log line 33``) so that a
    reader can find it in the log."""
    found: set[str] = set()
    for obj in vars(ev).values():
        if isinstance(obj, type) and issubclass(obj, msgspec.Struct) and obj is not msgspec.Struct:
            for field in msgspec.structs.fields(obj):
                _literals(field.type, found)
            config = obj.__struct_config__
            if config.tag_field not in (None, "kind") and isinstance(config.tag, str):
                found.add(config.tag)  # a tag other than the event's kind: a value of its field
        elif typing.get_origin(obj) is typing.Literal:
            _literals(obj, found)
    return {token for token in found if "_" in token}


class _Text(HTMLParser):
    """What a reader sees of a page: text outside scripts and styles."""

    def __init__(self) -> None:
        super().__init__()
        self.hidden = 0
        self.parts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self.hidden += 1
        for name, value in attrs:  # tooltips are read too
            if name in ("title", "aria-label") and value:
                self.parts.append(value)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self.hidden -= 1

    def handle_data(self, data: str) -> None:
        if not self.hidden:
            self.parts.append(data)


def _readable(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    if path.suffix != ".html":
        return text
    parser = _Text()
    parser.feed(text)
    return " ".join(parser.parts)


def _raw_in(text: str, tokens: set[str]) -> dict[str, str]:
    pattern = re.compile(
        r"(?<![\w-])(" + "|".join(map(re.escape, sorted(tokens, key=len, reverse=True))) + r")(?![\w-])"
    )
    return {m.group(1): text[max(0, m.start() - 60) : m.end() + 30] for m in pattern.finditer(text)}


def test_the_token_list_holds_what_pages_used_to_show() -> None:
    tokens = raw_tokens()
    assert {"eager_no_compile", "fresh_process_empty_cache", "not_applicable", "reference_output"} <= tokens
    assert "case_result" not in tokens
    assert _raw_in("cold call: eager_no_compile.", tokens) == {"eager_no_compile": "cold call: eager_no_compile."}
    assert _raw_in("b1-l16-eager_no_compile-x and host_to_device_extra", tokens) == {}


def test_no_raw_token_on_any_sample_page(sample_site: Path) -> None:
    tokens = raw_tokens()
    pages = [p for p in sorted(sample_site.rglob("*")) if p.suffix in (".html", ".md")]
    kinds = {p.relative_to(sample_site).parts[0] for p in pages}
    assert {"index.html", "runs", "workloads", "comparisons"} <= kinds, kinds
    committed = sorted((SAMPLES / "comparisons").rglob("*.md"))
    assert committed
    readable = {str(p): _readable(p) for p in [*pages, *committed]}  # each page parsed once, read three times
    found = {name: raw for name, text in readable.items() if (raw := _raw_in(text, tokens))}
    assert found == {}
    # Times as fmt_time writes them: a second or more in s, never "1234 ms".
    long_ms = {name: m.group(0) for name, text in readable.items() if (m := LONG_MS.search(text))}
    assert long_ms == {}
    # One of a thing is singular, in text and in chart tooltips ("0.54x over 1 cell").
    one_plural = {name: m.group(0) for name, text in readable.items() if (m := ONE_PLURAL.search(text))}
    assert one_plural == {}


LONG_MS = re.compile(r"(?<![\w.])\d{4,}(?:\.\d+)? ms\b")
ONE_PLURAL = re.compile(r"(?<![\w.,])1 (?:cells|ratios|runs)\b")


def test_diff_times_in_ms_or_s() -> None:
    from reportgen.publish.diff import RunDiff, TimingChange, format_diff
    from reportgen.render.templating import render_md

    diff = RunDiff(
        before="a",
        after="b",
        disposition=("x", "x"),
        timings=[TimingChange("b1-l16-eager", 2.5, 0.0042, ratio=0.00168)],
    )
    for text in (format_diff(diff), render_md("diff.md.j2", diff=diff, workload="w", targets_differ="")):
        assert "2.5 s" in text and "4.2 ms" in text and not LONG_MS.search(text), text


@pytest.mark.parametrize("fmt", ["text", "md"])
def test_no_raw_token_in_the_diff_of_sample_runs(fmt: str) -> None:
    tokens = raw_tokens()
    for workload in ("tiny-encoder-cpu", "all-MiniLM-L6-v2-cpu", "tiny-classifier-training-cpu"):
        runs = sorted(SAMPLES.glob(f"{workload}-2026*"))
        assert len(runs) >= 2, workload
        text, _, _ = diff_command(runs[0], runs[-1], fmt=fmt)
        assert _raw_in(text, tokens) == {}, workload
        assert "unexplained" not in text


def test_comparison_status_in_the_reports_verdict_words() -> None:
    explained = CellSide(status="mismatch", explained=True, failing="updated parameters")
    assert _status_text(explained) == "mismatch in updated parameters, awaiting verdict"
    assert (
        _status_text(CellSide(status="mismatch", explained=True, verdict="accepted", failing="outputs"))
        == "mismatch in outputs, accepted"
    )
    assert _status_text(
        CellSide(status="nonfinite", explained=True, verdict="change-needed", failing="non-finite outputs")
    ) == ("non-finite outputs, change needed")
    assert _status_text(CellSide(status="mismatch", failing="loss")) == "mismatch in loss, not explained"
    assert _status_text(CellSide(status="pass")) == "pass"
    assert _status_text(CellSide(status="untested", explained=True)) == "untested, explained", (
        "only a failure waits for a verdict"
    )


def test_references_do_not_agree_by_bytes_that_differ() -> None:
    """A "yes" beside "saved reference outputs differ in bytes" (distance not measured) claimed
    what nothing measured: such rows say "not measured"."""
    md = (SAMPLES / "comparisons" / "tiny-encoder-cpu-vs-cuda" / "compare.md").read_text(encoding="utf-8")
    rows = [line for line in md.splitlines() if "differ in bytes" in line and "not measured" in line]
    assert rows
    assert all("| yes |" not in row for row in rows), rows


def test_training_comparison_names_what_failed_beside_the_output_figures(tmp_path: Path) -> None:
    """The shipped training pair: the cells failed on their updated parameters while their
    outputs matched; the comparison says so rather than "mismatch (explained)" beside "0/4 mismatched"."""
    from click.testing import CliRunner

    from reportgen.cli import main

    cpu = next(SAMPLES.glob("tiny-classifier-training-cpu-20261129*"))
    cuda = next(SAMPLES.glob("tiny-classifier-training-cuda-*"))
    result = CliRunner().invoke(main, ["compare", str(cpu), str(cuda), "--out", str(tmp_path), "--format", "md"])
    assert result.exit_code == 0, result.output
    md = (tmp_path / "compare.md").read_text(encoding="utf-8")
    assert "mismatch in updated parameters, awaiting verdict" in md and "outputs 0/4 mismatched" in md
    assert "(explained)" not in md and "until the mismatches are explained" not in md
