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


def test_the_minilm_run_shows_the_owners_explanations_where_they_are_and_which_lines_need_a_verdict(tmp_path: Path) -> None:
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
    assert refused.exit_code == 3 and "--out annotations.new.toml" in refused.output and "5 failed cell(s)" in refused.output
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
