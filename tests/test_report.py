"""`reportgen report`: dispositions from the fixtures, both formats, annotations, safety, bytes."""

from __future__ import annotations

import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner

from reportgen.cli import main
from reportgen.render.report import build_report, judge_log
from tests.conftest import FIXTURES, REPO

# fixture -> (outcome, rules that must be among the reasons, change categories)
EXPECTED = {
    "synthetic_complete.jsonl": ("suitable", {"synthetic"}, []),
    "synthetic_incomplete.jsonl": ("blocked", {"incomplete-run", "untested-cells"}, []),
    "synthetic_fallback.jsonl": ("change", {"cpu-fallback"}, ["operator"]),
    "synthetic_float64.jsonl": ("change", {"precision"}, ["precision"]),
    "synthetic_mismatch.jsonl": ("blocked", {"mismatch"}, []),
    "synthetic_compile_failure.jsonl": ("blocked", {"error"}, []),
    "synthetic_wrong_target.jsonl": ("blocked", {"wrong-target"}, []),
}
HEADLINES = {
    "suitable": "Suitable for the tested fixed-shape path",
    "change": "Requires a change",
    "blocked": "Blocked pending compatibility evidence",
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_dispositions_in_both_formats(tmp_path: Path, name: str) -> None:
    outcome, rules, changes = EXPECTED[name]
    result = build_report(FIXTURES / name, tmp_path)
    assert result.disposition.outcome == outcome
    assert rules <= {r.rule for r in result.disposition.reasons}
    assert result.disposition.changes == changes
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    # A run blocked only for missing verdicts says so ("Blocked: 1 mismatch needs the owner's verdict").
    assert result.disposition.headline.startswith(HEADLINES[outcome].split(" pending")[0])
    for text in (html, md):
        assert result.disposition.headline.replace("'", "&#39;") in text or result.disposition.headline in text
        assert "Synthetic fixture" in text, "a synthetic log shows the banner"
    for reason in result.disposition.reasons:
        for case in reason.cases:
            assert case in html and case.replace("_", "\\_") in md


def test_sections_in_design_order(tmp_path: Path) -> None:
    build_report(FIXTURES / "synthetic_complete.jsonl", tmp_path)
    for path in ("report.html", "report.md"):
        text = (tmp_path / path).read_text(encoding="utf-8")
        heads = [
            text.index(h)
            for h in (
                "1. Disposition",
                "2. Compatibility record",
                "3. Matrix",
                "4. Numerical criteria",
                "5. Mismatches and errors",
                "6. Fallback and compile findings",
                "7. Timings",
                "8. Profiles, artifacts and provenance",
            )
        ]
        assert heads == sorted(heads), path


def test_untested_cells_are_marked_untested(tmp_path: Path) -> None:
    build_report(FIXTURES / "synthetic_incomplete.jsonl", tmp_path)
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert html.count('class="status status-untested"') >= 2 + 1  # two cells plus the count line
    assert "… untested" in md and "Incomplete run" in md


def test_mismatch_stops_performance_acceptance(tmp_path: Path) -> None:
    build_report(FIXTURES / "synthetic_mismatch.jsonl", tmp_path)
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    timings = html.split('id="timings"', 1)[1].split("</section>", 1)[0]
    assert "Performance acceptance stopped" in timings
    table = timings.split("<table", 1)[1].split("</table>", 1)[0]
    assert "b2-l16-contiguous-float32-compiled" not in table, "no timings for a cell that did not pass"
    assert "17 of 1024" in html


def _annotate(tmp_path: Path, text: str) -> Path:
    log = tmp_path / "events.jsonl"
    shutil.copy(FIXTURES / "synthetic_mismatch.jsonl", log)
    (tmp_path / "annotations.toml").write_text(text, encoding="utf-8")
    return log


@pytest.mark.parametrize(
    "entry,outcome",
    [
        (
            'explanation = "Known reduction-order drift."\nverdict = "accepted"\nreason = "task criterion reviewed by owner"\n',
            "suitable",
        ),
        (
            'explanation = "LayerNorm in float32 on device is not enough."\nverdict = "change-needed"\nchange = "precision"\n',
            "change",
        ),
        ('explanation = "Looking into it."\n', "blocked"),
    ],
)
def test_annotations_change_the_disposition_only_as_designed(tmp_path: Path, entry: str, outcome: str) -> None:
    log = _annotate(tmp_path, "[b2-l16-contiguous-float32-compiled]\n" + entry)
    before = log.read_bytes()
    judged = judge_log(log)
    assert judged.disposition.outcome == outcome
    assert log.read_bytes() == before, "the log is never modified"


def test_annotation_markdown_has_no_raw_html_or_script_links(tmp_path: Path) -> None:
    entry = 'explanation = """See <script>alert(1)</script> and [bad](javascript:alert(1)) and [doc](https://example.org/x) and [rel](notes.md)."""\n'
    log = _annotate(tmp_path, "[b2-l16-contiguous-float32-compiled]\n" + entry)
    build_report(log, tmp_path / "out")
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    explanation = html.split('class="explanation"', 1)[1].split("</div>", 1)[0]
    assert "<script>" not in explanation and "&lt;script&gt;" in explanation
    assert 'href="javascript:' not in explanation
    assert 'href="https://example.org/x"' in explanation and 'href="notes.md"' in explanation


@pytest.mark.parametrize(
    "text,fragment",
    [
        ("[b1]\nverdict = 'accepted'\n", "explanation"),
        ("[b1]\nexplanation = 'x'\nverdict = 'accepted'\n", "needs a reason"),
        ("[b1]\nexplanation = 'x'\nverdict = 'change-needed'\n", "needs change"),
        ("[b1\n", "not valid TOML"),
        ("b1 = 3\n", "must be a table"),
    ],
)
def test_bad_annotations_are_a_clear_error(tmp_path: Path, text: str, fragment: str) -> None:
    log = _annotate(tmp_path, text)
    result = CliRunner().invoke(main, ["report", str(log), "--out", str(tmp_path / "out")])
    assert result.exit_code == 1
    assert fragment in result.output and "Traceback" not in result.output
    assert not (tmp_path / "out" / "report.html").exists()


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.scripts: list[dict[str, str | None]] = []
        self.handlers: list[tuple[str, str]] = []
        self.imgs = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "script":
            self.scripts.append(dict(attrs))
        if tag == "img":
            self.imgs += 1
        self.handlers += [(tag, name) for name, _ in attrs if name.lower().startswith("on")]


def test_hostile_log_is_escaped_everywhere(tmp_path: Path) -> None:
    build_report(FIXTURES / "synthetic_hostile.jsonl", tmp_path)
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    parser = _Tags()
    parser.feed(html)
    assert parser.handlers == [] and parser.imgs == 0
    for attrs in parser.scripts:
        assert attrs.get("type") == "application/json" or (attrs.get("src") or "").startswith("assets/"), attrs
    assert "window.__xss" in html, "the payload is shown, as text"
    assert "<script>window.__xss" not in html
    # Render the Markdown the way a permissive viewer would (raw HTML allowed): the escaped
    # payload must come out as text, and every table row keeps its column count.
    from markdown_it import MarkdownIt

    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    viewer = _Tags()
    viewer.feed(MarkdownIt("commonmark", {"html": True}).enable("table").render(md))
    assert viewer.scripts == [] and viewer.imgs == 0 and viewer.handlers == []
    tables = re.findall(r"(?m)^(\|.*\|\n\|[-|]+\|\n(?:\|.*\|\n)*)", md)
    assert len(tables) >= 6
    for table in tables:
        lines = table.splitlines()
        width = len(re.findall(r"(?<!\\)\|", lines[1]))
        for line in lines[2:]:
            assert len(re.findall(r"(?<!\\)\|", line)) == width, line


def test_rendering_is_deterministic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    for out in ("a", "b"):
        build_report(FIXTURES / "synthetic_mismatch.jsonl", tmp_path / out)
    files_a = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    files_b = sorted(p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*") if p.is_file())
    assert files_a == files_b
    for rel in files_a:
        assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes(), rel
    # The log's end, said as such: it read 'generated' beside a time no report was made at.
    assert "· run finished 2026-01-01 00:10:00 UTC" in (tmp_path / "a" / "report.html").read_text(encoding="utf-8")


def test_source_date_epoch_sets_generated_at(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    build_report(FIXTURES / "synthetic_complete.jsonl", tmp_path)
    assert "generated 2026-01-01 00:00:00 UTC" in (tmp_path / "report.md").read_text(encoding="utf-8")


def test_cli_exit_codes(tmp_path: Path) -> None:
    runner = CliRunner()
    fallback = str(FIXTURES / "synthetic_fallback.jsonl")
    assert (
        runner.invoke(main, ["report", fallback, "--out", str(tmp_path / "a"), "--fail-on", "blocked"]).exit_code == 0
    )
    refused = runner.invoke(main, ["report", fallback, "--out", str(tmp_path / "b"), "--fail-on", "change"])
    assert refused.exit_code == 3 and "Requires a change: operator" in refused.output
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"schema_version": "1.0"}\n', encoding="utf-8")
    invalid = runner.invoke(main, ["report", str(bad), "--out", str(tmp_path / "c")])
    assert invalid.exit_code == 1 and f"{bad}:1: error" in invalid.output
    assert not (tmp_path / "c").exists()
    assert runner.invoke(main, ["report", fallback, "--out", str(tmp_path / "d"), "--format", "pdf"]).exit_code == 2
    md_only = runner.invoke(main, ["report", fallback, "--out", str(tmp_path / "e"), "--format", "md"])
    assert md_only.exit_code == 0 and sorted(p.name for p in (tmp_path / "e").iterdir()) == [
        ".reportgen-report.json",
        "details.csv",
        "report.md",
    ]


def test_not_measured_is_never_zero(tmp_path: Path) -> None:
    build_report(FIXTURES / "synthetic_complete.jsonl", tmp_path)
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    # The fixture records no process start-up time: it must read "not measured", not 0.
    assert "not measured" in md


def test_an_aborted_run_says_so_once_and_dates_its_end_as_an_abort(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A review: an interrupted run's banner read 'Incomplete run. Incomplete run: the run was
    aborted: received SIGINT', and its header 'run finished ...' for a run that was aborted."""
    from tests.logbuilder import base_events, dumps, finish, with_envelope

    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    log = tmp_path / "events.jsonl"
    log.write_text(
        dumps(with_envelope(finish(base_events(), status="aborted", reason="received SIGINT"))), encoding="utf-8"
    )
    build_report(log, tmp_path / "out")
    md = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert "> **Incomplete run.** The run was aborted: received SIGINT. Cells without a result" in md, md[:800]
    assert "Incomplete run. Incomplete run" not in md and "Incomplete run.</strong> Incomplete" not in html
    assert "· run aborted " in html and "run finished" not in html
    # A reason that ends a sentence itself is not given a second period (a review of the first version).
    log.write_text(
        dumps(with_envelope(finish(base_events(), status="aborted", reason="workload error: bad input."))),
        encoding="utf-8",
    )
    build_report(log, tmp_path / "again")
    md = (tmp_path / "again" / "report.md").read_text(encoding="utf-8")
    assert "The run was aborted: workload error: bad input. Cells" in md and ".." not in md.split("Cells")[0][-200:]


def test_float64_cells_not_required_say_what_they_computed_in(tmp_path: Path) -> None:
    """A review: a neuron run of float64 cells whose plan does not require float64 read "Suitable
    ... in float64" with nothing tying the log's own "computing in float32" warning to the
    backend's float64-as-float32 constraint (plan-check asks about it before the run). A note says
    it; where the backend computes float64 as float64 (the heat solver on cpu), nothing is said."""
    from tests.logbuilder import dumps, edited_sample, float64_log

    sources = {
        "neuron-native": float64_log(),
        "cpu": edited_sample("heat-solver-cpu-20261206T150437Z-d2f898", "heat-no-requirement", "requirement removed"),
    }
    notes: dict[str, list[str]] = {}
    for family, events in sources.items():
        for event in events:
            if event["kind"] == "plan":
                event["requirements"] = []
        log = tmp_path / family / "events.jsonl"
        log.parent.mkdir()
        log.write_text(dumps(events), encoding="utf-8")
        judged = judge_log(log)
        assert judged.disposition.outcome == "suitable", judged.disposition.headline
        notes[family] = [r.message for r in judged.disposition.reasons if r.rule == "precision"]
    assert (
        len(notes["neuron-native"]) == 1
        and "4 float64 cell(s) passed on a backend where float64 runs as float32" in (notes["neuron-native"][0])
    )
    assert notes["cpu"] == []


def test_an_input_fed_in_another_dtype_than_declared_gets_a_note(tmp_path: Path) -> None:
    """A review: a plan declared a mask bool while make_inputs built int64; the log recorded
    int64 beside the declared bool and the report said nothing (the seed keeps integer
    ids and boolean masks in their intended types). A note names the input and the cells; the
    shipped run, which feeds what it declares, gets none."""
    from tests.logbuilder import dumps, edited_sample

    events = edited_sample("tiny-encoder-cpu-20261206T150111Z-1dd183", "encoder-int-mask", "mask fed as int64")
    for event in events:  # the plan declares what the workload does not feed
        if event["kind"] == "plan":
            event["declared_inputs"]["attention_mask"]["dtype"] = "int64"
    log = tmp_path / "run" / "events.jsonl"
    log.parent.mkdir()
    log.write_text(dumps(events), encoding="utf-8")
    judged = judge_log(log)
    notes = [r for r in judged.disposition.reasons if r.rule == "declared-inputs"]
    assert len(notes) == 1 and notes[0].outcome == "note"
    assert notes[0].message.startswith(
        "The plan declares input attention_mask as int64, but 14 cell(s) received it as bool"
    )
    shipped = judge_log(REPO / "sample_runs" / "tiny-encoder-cpu-20261206T150111Z-1dd183" / "events.jsonl")
    assert not [r for r in shipped.disposition.reasons if r.rule == "declared-inputs"]
