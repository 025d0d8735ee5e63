"""One read, no repetition: identical rows collapsed, human labels, a table of contents."""

from __future__ import annotations

from pathlib import Path

from reportgen.render.labels import LABELS
from reportgen.render.report import build_report, judge_log
from reportgen.render.view import Row, collapse_rows
from tests.conftest import REPO

MINILM = next((REPO / "sample_runs").glob("all-MiniLM*/events.jsonl"))


def test_identical_rows_become_one_row_with_a_count() -> None:
    rows = [Row(f"c{i}", "not applicable on cpu", f"a{i}") for i in range(36)]
    assert collapse_rows(rows) == [Row("all 36 cells", "not applicable on cpu", "")]
    mixed = rows[:5] + [Row("odd", "measured: none", "x")]
    assert collapse_rows(mixed) == [Row("5 cells", "not applicable on cpu", ""), Row("odd", "measured: none", "x")]
    assert collapse_rows(rows[:2]) == rows[:2], "two rows keep their own links"


def test_the_sample_report_has_no_repeated_fallback_rows_and_no_raw_tokens(tmp_path: Path) -> None:
    judged = judge_log(MINILM)
    values = [row.value for row in judged.view.fallback]
    assert len(values) == len(set(values)), "each distinct finding once"
    build_report(MINILM, tmp_path)
    for name in ("report.html", "report.md"):
        text = (tmp_path / name).read_text(encoding="utf-8").replace("\\_", "_")
        for token in ("not_applicable", "fresh_process_empty_cache", "eager_no_compile", "compiled_in_process"):
            assert token not in text, (name, token)
        assert LABELS["eager_no_compile"] in text or LABELS["fresh_process_empty_cache"] in text


def test_contents_link_every_section_in_both_formats(tmp_path: Path) -> None:
    from reportgen.render.view import SECTIONS

    build_report(MINILM, tmp_path)
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    for element_id, title, slug in SECTIONS:
        assert f'<section id="{element_id}"' in html and f"<h2>{title}</h2>" in html
        assert f'href="#{element_id}"' in html
        assert f"\n## {title}\n" in md and f"]({'#' + slug})" in md
        # GitHub's heading anchor: lower case, punctuation dropped, spaces as hyphens.
        assert slug == "".join(ch for ch in title.lower() if ch.isalnum() or ch in " -").replace(" ", "-")


def test_unknown_versions_are_short_with_the_probe_text_kept(tmp_path: Path) -> None:
    from reportgen.render.view import short_reason

    assert (
        short_reason(
            "dpkg-query -W -f ${Version} aws-neuronx-runtime-lib exited 1: dpkg-query: no packages found matching aws-neuronx-runtime-lib"
        )
        == "not installed"
    )
    assert short_reason("/sys/module/neuron/version unreadable: No such file or directory") == "not found on this host"
    judged = judge_log(next((REPO / "sample_runs").glob("tiny-encoder-cpu*/events.jsonl")))
    unknown = [r for r in judged.view.versions if r.value.startswith("unknown")]
    assert unknown and all(len(r.value) <= 70 and r.detail for r in unknown)
    build_report(next((REPO / "sample_runs").glob("tiny-encoder-cpu*/events.jsonl")), tmp_path)
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "no packages found matching" in md.split("## 3.")[0], "the probe's words are kept, folded"


def test_a_compile_in_a_running_process_is_not_called_already_compiled() -> None:
    """compiled_in_process marks a compile (or cold call) in a process that was not fresh: in a
    fresh child the second shape of a cache-check group compiles there for the first time."""
    assert "already compiled" not in LABELS["compiled_in_process"]
    assert "not fresh" in LABELS["compiled_in_process"]
