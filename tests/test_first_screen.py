"""Section 1 and the md-summary: the owner's explanations up front, a "Next" worked out from what
the annotations already say, identifiers shown as code, never as literal backticks."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from click.testing import CliRunner

from reportgen.cli import main
from reportgen.judge.judgement import gist
from reportgen.judge.nextstep import Words
from reportgen.render.report import build_report, judge_log
from tests.conftest import REPO

MINILM = REPO / "sample_runs" / "all-MiniLM-L6-v2-cpu-20261129T225806Z-4b4a2f"


def _minilm(tmp_path: Path, keep_entries: int | None = None) -> Path:
    """The blocked MiniLM sample run (its owner explained every mismatch, gave no verdict) in a
    folder of its own; ``keep_entries``: only the first entries of its annotations kept."""
    run = tmp_path / MINILM.name
    run.mkdir()
    shutil.copy(MINILM / "events.jsonl", run / "events.jsonl")
    text = (MINILM / "annotations.toml").read_text(encoding="utf-8")
    if keep_entries is not None:
        entries = re.split(r"\n(?=\[)", text)
        text = "\n".join(entries[: keep_entries + 1]) + "\n"
    (run / "annotations.toml").write_text(text, encoding="utf-8")
    return run / "events.jsonl"


def _section_1(text: str, end: str) -> str:
    return text.split(end, 1)[0]


def test_the_minilm_run_shows_the_owners_explanations_where_they_are_and_which_lines_need_a_verdict(
    tmp_path: Path,
) -> None:
    log = _minilm(tmp_path)
    build_report(log, tmp_path / "out", ("html", "md", "md-summary"))
    md = _section_1((tmp_path / "out" / "report.md").read_text(encoding="utf-8"), "## 2. ")
    owner = md.split("### What the owner must decide", 1)[1]
    # Each group of cells awaiting a verdict carries the owner's words and where they are written.
    assert owner.count("Owner's explanation (awaiting verdict;") == 3
    assert "values at padded token positions (attention mask 0)" in owner
    assert "`annotations.toml lines 5, 11, 20`" in owner and "`annotations.toml line 14`" in owner
    # Entries that differ only in their figures are one explanation, not ten cards.
    assert "3 entries alike but for their figures" in owner
    # Every mismatch is explained: Next says which lines need a verdict, not to run annotate again.
    next_line = next(line for line in md.splitlines() if line.startswith("**Next:"))
    assert "give a verdict in `annotations.toml` at lines 2, 5, 8, 11, 14, 17, 20" in next_line
    assert "reportgen annotate" not in next_line
    # Code is code: no escaped (literal) backtick anywhere in section 1.
    assert "\\`" not in md
    summary = (tmp_path / "out" / "report-summary.md").read_text(encoding="utf-8")
    assert "Awaiting the owner's verdict" in summary and "padded token positions" in summary
    assert "`annotations.toml lines 2, 8, 17`" in summary and "\\`" not in summary
    html = _section_1((tmp_path / "out" / "report.html").read_text(encoding="utf-8"), '<section id="record">')
    head = html.split('<section id="disposition"', 1)[1]
    assert "`" not in head, "a backtick shown literally in section 1"
    assert "<code>annotations.toml</code> at lines 2, 5, 8, 11, 14, 17, 20" in head
    assert "<code>last_hidden_state</code>" in head and "<code>annotations.toml lines 5, 11, 20</code>" in head


def test_next_names_annotate_beside_the_file_for_cells_it_does_not_explain(tmp_path: Path) -> None:
    log = _minilm(tmp_path, keep_entries=2)
    judged = judge_log(log)
    step = judged.view.next_step
    assert (f"reportgen annotate {log.name} --out annotations.new.toml", True) in step.parts
    assert "explain the 5 cell(s) no entry covers" in str(step) and "(never over it)" in str(step)
    groups = judged.view.verdict_groups
    assert sum(g.unexplained for g in groups) == 5 and sum(e.cells for g in groups for e in g.explanations) == 2


def test_next_names_annotate_when_there_is_no_annotations_file(tmp_path: Path) -> None:
    log = _minilm(tmp_path)
    (log.parent / "annotations.toml").unlink()
    step = judge_log(log).view.next_step
    assert (f"reportgen annotate {log.name}", True) in step.parts
    assert "--out" not in str(step)


def test_annotate_writes_beside_never_over_and_only_what_is_not_explained(tmp_path: Path) -> None:
    log = _minilm(tmp_path, keep_entries=2)
    mine = (log.parent / "annotations.toml").read_text(encoding="utf-8")
    refused = CliRunner().invoke(main, ["annotate", str(log)])
    assert (
        refused.exit_code == 3
        and f"--out {log.parent / 'annotations.new.toml'}" in refused.output
        and "5 failed cell(s)" in refused.output
    )
    beside = log.parent / "annotations.new.toml"
    written = CliRunner().invoke(main, ["annotate", str(log), "--out", str(beside)])
    assert written.exit_code == 0, written.output
    assert "for 5 failed cell(s) (2 failed cell(s) left out" in written.output
    assert (log.parent / "annotations.toml").read_text(encoding="utf-8") == mine
    new = beside.read_text(encoding="utf-8")
    assert "b4-l128-contiguous-bfloat16-eager" not in new and "b4-l128-contiguous-float32-compiled" not in new
    assert "b4-l512-contiguous-bfloat16-eager" in new
    # Written again, the file beside is not replaced either.
    again = CliRunner().invoke(main, ["annotate", str(log), "--out", str(beside)])
    assert again.exit_code == 3 and beside.read_text(encoding="utf-8") == new


def test_annotate_with_every_failed_cell_explained_says_where_the_verdicts_go(tmp_path: Path) -> None:
    log = _minilm(tmp_path)
    result = CliRunner().invoke(main, ["annotate", str(log), "--out", str(log.parent / "annotations.new.toml")])
    assert result.exit_code == 0 and "every failed cell is explained in" in result.output
    assert not (log.parent / "annotations.new.toml").exists()


def test_words_keep_code_apart_from_text_a_value_never_opens_a_span() -> None:
    assert Words.marked("run `a b` now").parts == (("run ", False), ("a b", True), (" now", False))
    assert Words.marked("an odd ` backtick").parts == (("an odd ` backtick", False),)
    assert gist("First **bold** one. Second `x` two. Third.") == "First bold one. Second `x` two."


def test_a_long_log_keeps_report_md_under_a_pull_request_and_the_summary_counts_true(tmp_path: Path) -> None:
    """450 cells, a third of them mismatching: report.md under 65,536 characters with the rest
    in details.csv (linked), and the summary says how many shape rows it shows of how many."""
    from tests import logbuilder as lb

    log = tmp_path / "events.jsonl"
    log.write_text(lb.dumps(lb.large_log(450, mismatch_every=3)), encoding="utf-8")
    build_report(log, tmp_path / "out", ("html", "md", "md-summary"))
    md = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert len(md) < 65_536
    assert "every cell is in [details.csv](details.csv)" in md and (tmp_path / "out" / "details.csv").is_file()
    # Said in the first screen's banner and once in section 7 (with its cells), not per cell.
    assert md.count("Performance acceptance stopped") == 2
    summary = (tmp_path / "out" / "report-summary.md").read_text(encoding="utf-8")
    assert "Matrix (showing 60 of 450 shape rows)" in summary and "390 more shape rows" in summary
    matrix = summary.split("Matrix (showing", 1)[1].split("</details>", 1)[0]
    assert len([line for line in matrix.splitlines() if line.startswith("| ") and not line.startswith("| shape")]) == 60


def test_times_are_in_ms_below_a_second_and_in_s_above_with_four_significant_digits() -> None:
    from reportgen.render.sections.common import fmt_time

    assert [fmt_time(x) for x in (0.0004175, 0.3715, 0.99994, 0.99996, 1.0, 12.345678, None)] == [
        "0.4175 ms",
        "371.5 ms",
        "999.9 ms",
        "1 s",
        "1 s",
        "12.35 s",
        "not measured",
    ]  # 0.99996 s is not "1000 ms"


def test_one_vocabulary_for_verdicts_in_the_report(tmp_path: Path) -> None:
    """'awaiting verdict', 'accepted', 'change needed': never 'no verdict' or 'change-needed'."""
    log = _minilm(tmp_path)
    build_report(log, tmp_path / "out", ("html", "md"))
    for name in ("report.html", "report.md"):
        text = (tmp_path / "out" / name).read_text(encoding="utf-8")
        assert "awaiting verdict" in text, name
        assert "explained, no verdict" not in text and "change-needed)" not in text, name
        assert "until these mismatches are explained" not in text, name


def test_the_owners_code_spans_stay_code_in_report_md(tmp_path: Path) -> None:
    log = _minilm(tmp_path)
    build_report(log, tmp_path / "out", ("md",))
    md = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    explanations = md.split("### Explanations", 1)[1]
    assert "`artifacts/inputs.pt`" in explanations and "\\`" not in md
    assert "\\*\\*padded\\*\\*" in explanations, "other markup stays escaped"


def test_sections_outside_the_decision_are_folded_in_html(tmp_path: Path) -> None:
    log = _minilm(tmp_path)
    build_report(log, tmp_path / "out", ("html",))
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    for section in ("record", "criteria", "fallback-compile", "evidence"):
        body = html.split(f'<section id="{section}">', 1)[1].split("</section>", 1)[0]
        assert '<details class="fold"><summary>' in body.split("</h2>", 1)[1][:40], section
    first = html.split('<section id="disposition"', 1)[1].split("</section>", 1)[0]
    assert 'class="fold"' not in first


def test_explanations_that_differ_only_in_figures_are_one_card_that_names_every_entry(tmp_path: Path) -> None:
    log = _minilm(tmp_path)
    build_report(log, tmp_path / "out", ("html", "md"))
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert html.count('<article class="annotation"') == 1
    # Each entry keeps an anchor, so every problem cell's link to its explanation still lands.
    for index in range(1, 11):
        assert f'id="explanation-{index}"' in html
    md = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    explanations = md.split("### Explanations", 1)[1].split("### Warnings", 1)[0]
    assert explanations.count("#### ") == 1 and "9 more entries say the same but for their figures" in explanations
    assert "Covers 10 cell(s), 7 not passing" in explanations


def test_a_status_names_the_quantity_that_failed(tmp_path: Path) -> None:
    """The classifier's mismatches are in its updated parameters, not its outputs: the matrix
    and each problem say so beside the status."""
    log = REPO / "sample_runs" / "tiny-classifier-training-cpu-20261129T225724Z-9e86db" / "events.jsonl"
    build_report(log, tmp_path / "out", ("html", "md"))
    md = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    matrix = md.split("## 3. Matrix", 1)[1].split("## 4.", 1)[0]
    assert "✘ mismatch (updated parameters)" in matrix
    assert "| failed on | updated parameters |" in md
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert "mismatch (updated parameters)</span>" in html


def test_next_names_a_dozen_lines_and_counts_the_rest() -> None:
    from reportgen.judge.nextstep import _verdict_step

    class State:
        file = "annotations.toml"
        unexplained = 0
        needs_verdict_lines = tuple(range(2, 2 + 3 * 40, 3))

    text = str(_verdict_step(State(), "events.jsonl", "", "reportgen report"))
    assert "lines 2, 5, 8, 11, 14, 17, 20, 23, 26, 29, 32, 35 and 28 more entries:" in text


def test_a_workload_page_opens_with_each_target_s_latest_disposition(sample_site: Path) -> None:
    """Before: a workload page opened with a run count and a timing summary: no disposition,
    no hardware, and no word that no run is evidence for neuron."""
    page = next((sample_site / "workloads").glob("tiny-encoder-*")) / "index.html"
    html = page.read_text(encoding="utf-8")
    found = re.search(r'<p class="latest-per-target">(.*?)</p>', html, re.S)
    assert found is not None and html.index("latest-per-target") < html.index("<table")
    text = re.sub(r"<[^>]+>", "", found.group(1))
    assert "cpu: ✔ Suitable" in text and "(AMD EPYC)" in text
    assert "cuda: ✖ Blocked" in text and "(NVIDIA H200)" in text
    assert "No run on neuron: nothing here is evidence for it." in text


def test_a_forged_device_name_on_a_workload_page_s_first_line_is_bounded(tmp_path: Path) -> None:
    import json

    source = REPO / "sample_runs" / "tiny-encoder-cuda-20261129T225259Z-866a85" / "events.jsonl"
    lines = []
    for line in source.read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        if event["kind"] == "environment":
            event["device"]["device_name"]["value"] = "NVIDIA H200 " + "A" * 60_000
        lines.append(json.dumps(event))
    run = tmp_path / "runs" / source.parent.name
    run.mkdir(parents=True)
    (run / "events.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    from reportgen.publish.site import build_site

    build_site([tmp_path / "runs"], tmp_path / "site")
    html = next((tmp_path / "site" / "workloads").glob("*/index.html")).read_text(encoding="utf-8")
    found = re.search(r'<p class="latest-per-target">(.*?)</p>', html, re.S)
    assert found is not None and "NVIDIA H200 AAA" in found.group(1) and len(found.group(1)) < 1_000
