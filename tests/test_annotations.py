"""Annotations for many cells at once, their errors, the owner's-verdict headline and the skeleton writer."""

from __future__ import annotations

import re
import sys
import tomllib
from fnmatch import fnmatchcase
import shlex
from pathlib import Path
from typing import Callable

import pytest
from click.testing import CliRunner

from reportgen.cli import main
from reportgen.contract.validation import read_log
from reportgen.judge.disposition import SYNTHETIC_LEAD
from reportgen.model.annotations import (
    AnnotationError,
    apply_annotations,
    load_annotations,
    parse_annotations,
    read_annotations,
)
from reportgen.model.runmodel import build_run
from reportgen.render.report import build_report, judge_log
from reportgen.render.skeleton import toml_string
from tests import logbuilder as lb

B2_COMPILED = lb.case_key(2, 16, "compiled")
B1_EAGER = lb.case_key(1, 16, "eager")


def _two_cause_log() -> list[dict]:
    """b2 compiled mismatches in 'hidden' (as the mismatch fixture); b1 eager fails to run."""
    events = lb.mismatch_log()
    for e in events:
        if e["kind"] == "case_result" and e["case"] == B1_EAGER:
            for key in ("outputs", "error_stats", "task_metric"):
                e.pop(key, None)
            e.update(status="error", failure={"phase": "run", "type": "RuntimeError", "message": "synthetic"})
    return [e for e in events if not (e["kind"] == "timing" and e.get("case") == B1_EAGER)]


def _write(tmp_path: Path, annotations: str | None = None, events: list[dict] | None = None) -> Path:
    log = tmp_path / "run" / "events.jsonl"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(lb.dumps(events if events is not None else _two_cause_log()), encoding="utf-8")
    if annotations is not None:
        (log.parent / "annotations.toml").write_text(annotations, encoding="utf-8")
    return log


def _report(tmp_path: Path, log: Path) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["report", str(log), "--out", str(tmp_path / "out")])
    return result.exit_code, result.output


# --- pattern entries ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "selector",
    [
        'cases = "b2-*-compiled"',
        'cases = ["nothing-*", "b2-l16-*"]\nmode = "compiled"',
        'mode = "compiled"\nstatus = "mismatch"',
        "shape = [2, 16]\nstatus = ['mismatch']",
        'batch = 2\nlength = 16\ndtype = "float32"\nlayout = "contiguous"\nmode = ["compiled"]',
    ],
)
def test_a_pattern_entry_explains_every_cell_it_selects(tmp_path: Path, selector: str) -> None:
    text = f'[[explain]]\n{selector}\nexplanation = "Reduction order."\nverdict = "accepted"\nreason = "owner reviewed"\n\n[{B1_EAGER}]\nexplanation = "Flaky host."\nverdict = "accepted"\nreason = "rerun passed"\n'
    judged = judge_log(_write(tmp_path, text))
    assert judged.notes[B2_COMPILED].verdict == "accepted"
    assert judged.disposition.outcome == "suitable"
    covered = judged.annotations.covered[0]
    assert B2_COMPILED in covered and B1_EAGER not in covered


def test_an_entry_matching_nothing_is_an_error_with_its_line(tmp_path: Path) -> None:
    text = f'[{B2_COMPILED}]\nexplanation = "x"\n\n# a comment\n[[explain]]\ncases = "b9-*"\nexplanation = "y"\n'
    code, output = _report(tmp_path, _write(tmp_path, text))
    assert code == 1
    assert "annotations.toml:5: [[explain]] #1 (cases b9-*) matches no planned cell" in output
    assert "Traceback" not in output and not (tmp_path / "out" / "report.html").exists()


def test_an_entry_of_a_very_long_pattern_is_named_in_a_line_of_bounded_length(tmp_path: Path) -> None:
    """A hostile pattern of 4,000 characters was printed whole in its error line."""
    pattern = "b9-" + "x" * 4000 + "*"
    code, output = _report(tmp_path, _write(tmp_path, f'[[explain]]\ncases = "{pattern}"\nexplanation = "y"\n'))
    (line,) = [line for line in output.splitlines() if "matches no planned cell" in line]
    assert code == 1 and len(line) < 400 and "... (4010 characters)" in line, line


def test_a_case_key_not_in_the_plan_is_an_error_with_its_line(tmp_path: Path) -> None:
    code, output = _report(tmp_path, _write(tmp_path, '\n\n["b9-l9-contiguous-float32-eager"]\nexplanation = "x"\n'))
    assert code == 1 and "annotations.toml:3: [b9-l9-contiguous-float32-eager] names case" in output


def test_a_misspelled_name_in_a_list_beside_ones_that_match_is_an_error_with_a_suggestion(tmp_path: Path) -> None:
    """`cases = [right, misspelled]` explained the right cell and left the misspelled one's
    unexplained with no word (careless user review, finding 2)."""
    typo = B2_COMPILED.replace("contiguous", "contigous")
    text = f'[[explain]]\ncases = ["{B1_EAGER}", "{typo}"]\nexplanation = "x"\nverdict = "accepted"\nreason = "r"\n'
    code, output = _report(tmp_path, _write(tmp_path, text))
    assert code == 1, output
    assert (
        f"annotations.toml:1: [[explain]] #1 names case {typo!r}, which is not in the plan; did you mean {B2_COMPILED!r}?"
        in output
    ), output


def test_a_very_long_misspelled_name_gets_no_suggestion_and_no_wait(tmp_path: Path) -> None:
    """Suggesting a planned name for one of 20,000 characters compared them character by
    character, for seconds a name (second review of this round, finding 4)."""
    typo = B2_COMPILED + "x" * 20_000
    text = f'[[explain]]\ncases = ["{B1_EAGER}", "{typo}"]\nexplanation = "x"\nverdict = "accepted"\nreason = "r"\n'
    code, output = _report(tmp_path, _write(tmp_path, text))
    # Refused without a suggestion: no name is compared with one of that length.
    assert code == 1 and "which is not in the plan" in output and "did you mean" not in output, output


def test_field_selectors_that_match_nothing_are_an_error(tmp_path: Path) -> None:
    code, output = _report(tmp_path, _write(tmp_path, '[[explain]]\ndtype = "bfloat16"\nexplanation = "x"\n'))
    assert code == 1 and "annotations.toml:1: [[explain]] #1 (dtype bfloat16) matches no planned cell" in output


@pytest.mark.parametrize(
    "second,fragment",
    [
        (
            'verdict = "change-needed"\nchange = "precision"',
            "(verdict accepted) and [[explain]] #1 (verdict change-needed (precision))",
        ),
        ("", "(verdict accepted) and [[explain]] #1 (verdict none)"),
    ],
)
def test_two_entries_giving_one_cell_different_verdicts_is_an_error(tmp_path: Path, second: str, fragment: str) -> None:
    text = f'[{B2_COMPILED}]\nexplanation = "x"\nverdict = "accepted"\nreason = "r"\n\n[[explain]]\nmode = "compiled"\nexplanation = "y"\n{second}\n'
    code, output = _report(tmp_path, _write(tmp_path, text))
    assert code == 1
    assert (
        "annotations.toml:1 and " in output
        and ":6: cell 'b2-l16-contiguous-float32-compiled'" in output
        and fragment in output
    )


def test_two_entries_agreeing_on_the_verdict_are_fine(tmp_path: Path) -> None:
    text = f'[{B2_COMPILED}]\nexplanation = "x"\nverdict = "accepted"\nreason = "r"\n\n[[explain]]\nmode = ["compiled", "eager"]\nexplanation = "y"\nverdict = "accepted"\nreason = "s"\n'
    judged = judge_log(_write(tmp_path, text))
    assert judged.notes[B2_COMPILED].entries == (0, 1) and judged.disposition.outcome == "suitable"


@pytest.mark.parametrize(
    "text,fragment,line",
    [
        ('[[explain]]\nexplanation = "x"\n', "needs at least one selector", 1),
        ('[[explain]]\nstatus = "broken"\nexplanation = "x"\n', "unknown status", 2),
        ('[[explain]]\ncases = "b*"\nexplanation = "x"\ncolour = "red"\n', "colour", 4),
        ('[[explain]]\ncases = "b*"\n', "explanation", 1),
        ('[[explain]]\ncases = "b*"\nexplanation = ""\n', "explanation", 3),
        ('[explain]\ncases = "b*"\nexplanation = "x"\n', "[explain] must be written [[explain]]", 1),
        ('[[explain]]\nshape = [2]\nexplanation = "x"\n', "shape", 2),
        # A review: true, "2" and 2.0 were taken as whole numbers (shape [[true, 16]] selected
        # (1, 16), batch = "2" accepted the mismatching cell); 2.0 read "Input should be a valid list".
        ('[[explain]]\nshape = [[true, 16]]\nexplanation = "x"\n', "shape.0.0: Input should be a valid integer", 2),
        ('[[explain]]\nbatch = "2"\nexplanation = "x"\n', "batch.0: Input should be a valid integer", 2),
        ('[[explain]]\nbatch = 2.0\nexplanation = "x"\n', "batch.0: Input should be a valid integer", 2),
        ('[[explain]]\nlength = [16, false]\nexplanation = "x"\n', "length.1: Input should be a valid integer", 2),
        (
            '[[explain]]\ncases = "b*"\nexplanation = "x"\nverdict = "acepted"\nreason = "r"\n',
            "verdict: 'acepted' is none of 'accepted', 'change-needed'; did you mean 'accepted'?",
            4,
        ),
    ],
)
def test_malformed_pattern_entries_are_clear_errors(tmp_path: Path, text: str, fragment: str, line: int) -> None:
    """Each at the line of the key at fault, where it is written (a review: a misspelt verdict was
    said at the entry's header, in pydantic's words), else at the entry's header."""
    code, output = _report(tmp_path, _write(tmp_path, text))
    assert code == 1 and fragment in output and f"annotations.toml:{line}: " in output and "Traceback" not in output


def test_each_explanation_is_shown_once_with_its_cells_in_html_and_markdown(tmp_path: Path) -> None:
    explanation = (
        "Reduction **order** differs.\\n\\nSecond paragraph ![pixel](https://tracker.example/p.png) <img src=x>."
    )
    text = f'[[explain]]\nstatus = ["mismatch", "error"]\nexplanation = "{explanation}"\nverdict = "accepted"\nreason = "owner reviewed"\n'
    build_report(_write(tmp_path, text), tmp_path / "out")
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    md = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert html.count("Reduction <strong>order</strong> differs.") == 1
    entry = html.split('id="explanation-1"', 1)[1].split("</article>", 1)[0]
    assert B2_COMPILED in entry and B1_EAGER in entry and "covers 2 cell(s), 2 not passing" in entry
    assert html.count('href="#explanation-1"') == 2, "each failed cell links to the one explanation"
    # The Markdown carries the text itself, once, with markup escaped: no image a viewer would fetch.
    assert md.count("Reduction \\*\\*order\\*\\* differs.") == 1
    assert "> Second paragraph \\!\\[pixel\\](https://tracker.example/p.png) \\<img src=x\\>." in md
    assert not re.search(r"(?<!\\)!(?<!\\)\[|(?<!\\)<img", md), "no unescaped image or tag"
    assert "see the HTML report" not in md
    section = md.split("### Explanations", 1)[1]
    assert B2_COMPILED in section and B1_EAGER in section


def test_the_old_one_case_tables_still_work_and_read_annotations_keeps_lines(tmp_path: Path) -> None:
    path = tmp_path / "a.toml"
    path.write_text(
        f'# c\n\n[{B2_COMPILED}]\nexplanation = "x"\n\n[[explain]]\ncases = "b1-*"\nexplanation = "y"\n',
        encoding="utf-8",
    )
    parsed = read_annotations(path)
    assert [(e.label, e.line) for e in parsed.entries] == [(f"[{B2_COMPILED}]", 3), ("[[explain]] #1", 6)]
    with pytest.raises(AnnotationError, match="a.toml:3: .* which is not in the plan"):
        load_annotations(path, [])


# --- the owner's verdict ------------------------------------------------------------------------


def test_blocked_only_for_verdicts_says_so_and_groups_the_cells_by_cause(tmp_path: Path) -> None:
    log = _write(tmp_path)
    result = build_report(log, tmp_path / "out")
    assert result.disposition.headline.startswith(
        "Blocked: 1 mismatch and 1 errored cell need the owner's verdict (on cpu"
    )
    md = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    owner = md.split("### What the owner must decide", 1)[1].split("### Scope", 1)[0]
    assert (
        "**compiled · float32 · worst element in hidden**: 1 cell(s); 17 element(s) outside the tolerance per cell (of 1024)"
        in owner
    )
    assert "**eager · float32 · error in run: RuntimeError**: 1 cell(s)" in owner
    assert "reportgen annotate events.jsonl" in owner
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert (
        "Blocked: 1 mismatch and 1 errored cell need the owner&#39;s verdict" in html
        and "What the owner must decide" in html
    )


def test_other_blocking_reasons_keep_the_plain_headline(tmp_path: Path) -> None:
    events = _two_cause_log()
    events = [e for e in events if e["kind"] != "run_end"]  # incomplete: not only a matter of verdicts
    result = build_report(_write(tmp_path, events=events), tmp_path / "out")
    assert result.disposition.headline.startswith("Blocked pending compatibility evidence")
    # The cells awaiting a verdict are still grouped up front, without claiming they are all that blocks.
    md = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    owner = md.split("### What the owner must decide", 1)[1].split("### Scope", 1)[0]
    assert "Every blocking reason above is a missing explanation or verdict" not in owner
    assert "**compiled · float32 · worst element in hidden**: 1 cell(s)" in owner


# --- the skeleton -------------------------------------------------------------------------------


def test_annotate_writes_a_skeleton_one_entry_per_cause_with_facts_and_no_verdict(tmp_path: Path) -> None:
    log = _write(tmp_path)
    result = CliRunner().invoke(main, ["annotate", str(log)])
    assert result.exit_code == 0, result.output
    assert "2 entries for 2 failed cell(s)" in result.output
    path = log.parent / "annotations.toml"
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    entries = data["explain"]
    assert [e["cases"] for e in entries] == [[B1_EAGER], [B2_COMPILED]]
    assert all("verdict" not in e for e in entries)
    assert "17 element(s) outside the tolerance per cell (of 1024)" in entries[1]["explanation"]
    assert "lowest task metric cosine" in entries[1]["explanation"] or "lowest task metric" in entries[1]["explanation"]
    assert "error in run: RuntimeError" in entries[0]["explanation"]
    # The skeleton loads as it is: the cells are explained, still without a verdict.
    judged = judge_log(log)
    assert judged.disposition.headline.startswith("Blocked: 1 mismatch and 1 errored cell need the owner's verdict")
    assert any("explained, awaiting verdict" in r.message for r in judged.disposition.reasons)


def test_annotate_never_overwrites_without_force(tmp_path: Path) -> None:
    log = _write(tmp_path, annotations="# mine\n")
    path = log.parent / "annotations.toml"
    result = CliRunner().invoke(main, ["annotate", str(log)])
    assert result.exit_code == 3 and "already exists" in result.output and "--force" in result.output
    assert path.read_text(encoding="utf-8") == "# mine\n"
    forced = CliRunner().invoke(main, ["annotate", str(log), "--force"])
    assert forced.exit_code == 0 and "[[explain]]" in path.read_text(encoding="utf-8")
    assert [p.name for p in log.parent.iterdir() if p.name.startswith(".annotations-")] == []


def test_annotate_force_replaces_a_regular_file_keeping_its_mode_and_nothing_else(tmp_path: Path) -> None:
    """--force swaps a regular file for the skeleton, with that file's permissions (mkstemp's
    0600 would hide it on a shared folder); a symlink or a FIFO at --out is refused, untouched."""
    import os
    import stat

    log = _write(tmp_path)
    kept = tmp_path / "shared.toml"
    kept.write_text("# old\n", encoding="utf-8")
    kept.chmod(0o644)
    assert CliRunner().invoke(main, ["annotate", str(log), "--out", str(kept), "--force"]).exit_code == 0
    assert "[[explain]]" in kept.read_text(encoding="utf-8") and stat.S_IMODE(kept.stat().st_mode) == 0o644
    fresh = tmp_path / "fresh.toml"
    assert CliRunner().invoke(main, ["annotate", str(log), "--out", str(fresh), "--force"]).exit_code == 0
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o666 & ~_umask()
    target = tmp_path / "target.txt"
    target.write_text("someone else's\n", encoding="utf-8")
    link, pipe = tmp_path / "link.toml", tmp_path / "pipe.toml"
    link.symlink_to(target)
    os.mkfifo(pipe)
    for path in (link, pipe):
        result = CliRunner().invoke(main, ["annotate", str(log), "--out", str(path), "--force"])
        assert result.exit_code != 0 and "not a regular file" in result.output, result.output
    assert link.is_symlink() and target.read_text(encoding="utf-8") == "someone else's\n"
    assert stat.S_ISFIFO(os.lstat(pipe).st_mode)


def _umask() -> int:
    import os

    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_annotations_saved_with_a_byte_order_mark_are_read() -> None:
    text = '[b2-l16-contiguous-float32-compiled]\nexplanation = "rounding"\nverdict = "accepted"\nreason = "owner"\n'
    plain, marked = parse_annotations(text, "a.toml"), parse_annotations("\ufeff" + text, "a.toml")
    assert marked == plain and len(plain.entries) == 1


def test_a_site_says_the_annotations_not_the_log_are_invalid(tmp_path: Path) -> None:
    from reportgen.publish.site import build_site

    log = _write(tmp_path, annotations="[b2-l16-contiguous-float32-compiled]\nverdict = 7\n")
    result = build_site([log.parent], tmp_path / "site")
    (rejected,) = result.rejected
    assert "a valid run log whose annotations are not valid" in rejected and "annotations.toml" in rejected
    assert "not a valid run log" not in rejected


def test_annotate_to_another_path_and_with_nothing_to_annotate(tmp_path: Path) -> None:
    log = _write(tmp_path, events=lb.complete_log())
    result = CliRunner().invoke(main, ["annotate", str(log)])
    assert result.exit_code == 0 and "nothing to annotate" in result.output
    assert not (log.parent / "annotations.toml").exists()
    log = _write(tmp_path)
    out = tmp_path / "elsewhere.toml"
    assert CliRunner().invoke(main, ["annotate", str(log), "--out", str(out)]).exit_code == 0
    assert out.is_file() and not (log.parent / "annotations.toml").exists()
    # The run folder works as well as its log; a folder without a log is a usage error.
    assert CliRunner().invoke(main, ["annotate", str(log.parent)]).exit_code == 0
    assert (log.parent / "annotations.toml").is_file()
    assert CliRunner().invoke(main, ["annotate", str(tmp_path)]).exit_code == 2


def test_annotate_refuses_an_invalid_log(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    log.write_text('{"kind": "run_start"}\n', encoding="utf-8")
    result = CliRunner().invoke(main, ["annotate", str(log)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert not (tmp_path / "annotations.toml").exists()


@pytest.mark.parametrize(
    "text", ['quote " back \\ slash', "line\nbreak\ttab", "del \x7f nul \x00", "ünïcode ☃ 😀", "]] [[explain]]\n# x"]
)
def test_toml_strings_round_trip_hostile_text(text: str) -> None:
    assert tomllib.loads(f"v = {toml_string(text)}\n")["v"] == text


def test_a_cell_failing_only_its_task_criterion_is_grouped_as_such(tmp_path: Path) -> None:
    events = lb.mismatch_log()
    for e in events:
        if e["kind"] == "case_result" and e["case"] == B2_COMPILED:
            e["error_stats"].update(mismatched=0, diff_at_worst=1e-5)  # the worst element within its allowance
    result = build_report(_write(tmp_path, events=events), tmp_path / "out")
    assert result.disposition.headline.startswith("Blocked: 1 mismatch needs the owner's verdict")
    md = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "**compiled · float32 · task criterion not met; no element outside the tolerance**" in md


def test_a_failing_figure_never_reads_as_its_limit(tmp_path: Path) -> None:
    """0.99899996 against '>= 0.999' read '0.999 (>= 0.999): not met' at six digits, and a worst
    |diff| of 1.10004e-05 against 1.1e-05 read '|diff| 1.1e-05, allowed 1.1e-05': a failure
    shown as if it met its limit."""
    events = lb.mismatch_log()
    for e in events:
        if e["kind"] == "case_result" and e["case"] == B2_COMPILED:
            e["task_metric"].update(value=0.99899996, passed=False)
            e["error_stats"].update(diff_at_worst=1.10004e-05, allowed_at_worst=1.1e-05)
    build_report(_write(tmp_path, events=events), tmp_path / "out")
    md = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "cosine\\_to\\_reference = 0.99899996 (\\>= 0.999): not met" in md
    assert "\\|diff\\| 1.10004e-05, allowed 1.1e-05" in md
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert "1.00004 × allowance" in html and "; 1 × allowance" not in html


def test_a_training_group_names_the_updated_parameters_outside_the_tolerance(tmp_path: Path) -> None:
    events = lb.training_log()
    for e in events:
        if e["kind"] == "train_result" and e["case"].endswith("compiled"):
            e["params"][0].update(mismatched=5)
        if e["kind"] == "case_result" and e["case"].endswith("compiled"):
            e["status"] = "mismatch"
    log = _write(tmp_path, events=events)
    assert CliRunner().invoke(main, ["annotate", str(log)]).exit_code == 0
    (entry,) = tomllib.loads((log.parent / "annotations.toml").read_text(encoding="utf-8"))["explain"]
    name = events[[e["kind"] for e in events].index("train_result")]["params"][0]["name"]
    assert f"only in updated {name}" in entry["explanation"]
    assert f"updated parameter elements outside the tolerance: {name} 5 of" in entry["explanation"]
    assert "loss value(s) of the steps outside the tolerance" in entry["explanation"]


# --- long runs ------------------------------------------------------------------------------------


def _calls_while(work: Callable[[], object]) -> int:
    """Python and C function calls made while ``work`` runs: a count of operations, not a time."""
    calls = 0

    def count(frame: object, event: str, arg: object) -> None:
        nonlocal calls
        if event in ("call", "c_call"):
            calls += 1

    sys.setprofile(count)
    try:
        work()
    finally:
        sys.setprofile(None)
    return calls


def test_annotations_of_a_long_run_are_matched_in_time_linear_in_its_cells(tmp_path: Path) -> None:
    """``annotate`` lists every failed cell's key in one entry (16,667 keys for the benchmark's
    long log, whose report then took 7 minutes) and a [case] table names one cell: each cell is
    looked up, not compared with every key of every entry."""
    log = _write(tmp_path, events=lb.large_log(3000, mismatch_every=3))
    run = build_run(read_log(log))
    failed = [c.case for c in run.cells if c.status == "mismatch"]
    assert len(failed) == 1000
    skeleton = 'explanation = "x"\ncases = [' + ", ".join(toml_string(c) for c in failed) + "]\n"
    tables = "".join(f'[{toml_string(c)}]\nexplanation = "y"\n' for c in failed[:500])
    text = tables + "[[explain]]\n" + skeleton + '[[explain]]\ncases = "b1-*"\nexplanation = "z"\n'
    notes = parse_annotations(text, "annotations.toml")
    assert len(notes.entries) == 502
    applied = apply_annotations(notes, run.cells)
    b1 = {c.case for c in run.cells if fnmatchcase(c.case, "b1-*")}
    assert set(applied.by_case) == set(failed) | b1 and len(b1) == 512
    for case in (failed[0], failed[600], next(iter(b1 - set(failed)))):
        expected = ((failed.index(case),) if case in failed[:500] else ()) + ((500,) if case in failed else ())
        assert applied.by_case[case].entries == expected + ((501,) if case in b1 else ())
    calls = _calls_while(lambda: apply_annotations(notes, run.cells))
    # Per cell and pattern entry a few calls, per [case] table a few: some 10,000 calls in all,
    # where comparing every cell with every key made millions.
    assert calls < 20 * (2 * len(run.cells) + len(notes.entries)), calls


def test_the_skeleton_of_a_run_failing_at_many_sizes_is_one_report_reads(tmp_path: Path) -> None:
    """The failure groups name the sizes their cells were judged over: a group over thousands of
    shapes gives their range, not every size, so the skeleton ``annotate`` writes stays within
    what an explanation may hold and the report reads it."""
    from reportgen.model.annotations import MAX_EXPLANATION_CHARS

    events = lb.large_log(3000, mismatch_every=3)
    for number, event in enumerate(e for e in events if e["kind"] == "case_result" and e["status"] == "mismatch"):
        event["error_stats"].update(total=1000 + number, mismatched=1)
    log = _write(tmp_path, events=events)
    made = CliRunner().invoke(main, ["annotate", str(log)])
    assert made.exit_code == 0, made.output
    skeleton = tomllib.loads((log.parent / "annotations.toml").read_text(encoding="utf-8"))
    [entry] = skeleton["explain"]
    assert "1000 sizes from 1000 to 1999" in entry["explanation"]
    assert len(entry["explanation"]) < MAX_EXPLANATION_CHARS
    code, output = _report(tmp_path, log)
    # A synthetic fixture: the printed disposition says so first.
    assert output.startswith(f"{SYNTHETIC_LEAD}: Blocked: 1000 mismatches need the owner's verdict"), output
    assert (tmp_path / "out" / "report.html").is_file() and "annotations.toml" not in output


def test_the_command_annotate_suggests_runs_as_printed_from_where_it_ran(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Beside an existing annotations.toml, annotate suggested `reportgen annotate events.jsonl
    --out annotations.new.toml`: from any other folder the log was not found, and the new file
    went to the current folder, where no report reads it (careless user review, finding 4). The
    report's next step named the log by its file name alone too."""
    log = _write(tmp_path / "runs", annotations="# mine\n")
    monkeypatch.chdir(tmp_path)
    relative = log.relative_to(tmp_path)
    result = CliRunner().invoke(main, ["annotate", str(relative)])
    assert result.exit_code == 3, result.output
    suggested = re.search(r"`reportgen annotate ([^`]+)`", result.output)
    assert suggested is not None, result.output
    again = CliRunner().invoke(main, ["annotate", *shlex.split(suggested.group(1))])
    assert again.exit_code == 0, again.output
    assert (log.parent / "annotations.new.toml").is_file() and not (tmp_path / "annotations.new.toml").exists()
    report = CliRunner().invoke(main, ["report", str(relative), "--out", "out", "--format", "md"])
    assert report.exit_code == 0, report.output
    assert f"reportgen annotate {relative}" in (tmp_path / "out" / "report.md").read_text(encoding="utf-8")


def test_every_cell_failed_and_accepted_is_not_suitable_over_nothing(tmp_path: Path) -> None:
    # The owner accepted every mismatch: no rule stands in the way, but no cell passed either.
    log = tmp_path / "events.jsonl"
    log.write_text(lb.dumps(lb.large_log(4, mismatch_every=1)), encoding="utf-8")
    (tmp_path / "annotations.toml").write_text(
        '[[explain]]\nmode = ["eager", "compiled"]\nexplanation = "drift"\nverdict = "accepted"\nreason = "task metric holds"\n',
        encoding="utf-8",
    )
    result = CliRunner().invoke(main, ["report", str(log), "--out", str(tmp_path / "out"), "--fail-on", "change"])
    assert result.exit_code == 3, result.output
    text = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "Suitable for the tested" not in text
    assert "No planned cell passed, so nothing here is evidence that the path is suitable." in text


def test_a_printed_command_never_reads_a_path_as_an_option(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run folder named -x: the report's next step said `reportgen annotate -x/events.jsonl`,
    which a shell passes as an option (second review of this round, finding 7)."""
    log = _write(tmp_path / "-x", annotations="# mine\n")
    monkeypatch.chdir(tmp_path)
    report = CliRunner().invoke(main, ["report", "./-x/run/events.jsonl", "--out", "out", "--format", "md"])
    assert report.exit_code == 0, report.output
    assert "reportgen annotate ./-x/run/events.jsonl" in (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    refused = CliRunner().invoke(main, ["annotate", "./-x/run/events.jsonl"])
    assert refused.exit_code == 3 and "--out ./-x/run/annotations.new.toml" in refused.output, refused.output
    assert log.is_file()


@pytest.mark.parametrize(
    "text,message",
    [
        (
            '[b1-l16]\nexplanaton = "x"\n',
            "a.toml:2: [b1-l16] explanaton: unknown key; did you mean 'explanation'?",
        ),
        (
            '[[explian]]\ncases = ["b1-l16"]\nexplanation = "x"\n',
            "a.toml:1: [[explian]] is no entry: a pattern entry is written [[explain]], one cell's [CASE]; did you mean [[explain]]?",
        ),
        (
            '\n[b1-l16]\nexplanation = "x"\nverdict = "accepted"\n',
            "a.toml:2: [b1-l16] verdict 'accepted' needs a reason",
        ),
    ],
    ids=["misspelt-required-key", "misspelt-entry-header", "check-without-prefix"],
)
def test_a_misspelt_key_or_header_is_named_with_the_one_meant(text: str, message: str) -> None:
    """Before: 'explanation: Field required' (the misspelt key never named), '[explian] must be a
    table with an explanation' (no line, no suggestion), and 'Value error, verdict ...' (the
    validation library's prefix)."""
    with pytest.raises(AnnotationError) as caught:
        parse_annotations(text, "a.toml")
    assert str(caught.value) == message


MULTI_LINE = '[[explain]]\nexplanation = """\nverdict = "accepted" was what we said\n"""\ncases = "b*"\nverdict = "acepted"\nreason = "r"\n'
THREE_QUOTES_IN_ONE_LINE = (
    '[[explain]]\ncases = "b*"\nexplanation = "use \'\'\' to quote"\nverdict = "acepted"\nreason = "r"\n\n'
    '[[explain]]\ncases = "c*"\nexplanation = "closing \'\'\' here"\nverdict = "accepted"\nreason = "r"\n'
)


@pytest.mark.parametrize("text", [MULTI_LINE, THREE_QUOTES_IN_ONE_LINE], ids=["multi-line", "quotes-in-one-line"])
def test_a_key_s_line_is_never_taken_from_inside_a_string(text: str) -> None:
    """A review: an explanation whose text holds 'verdict = ...' on a line of its own made the
    error name that line; and (a later review) a one-line string holding three quotes made it
    name a line of the next entry. Past a line with three quotes the entry's header is named."""
    from reportgen.model.annotations import AnnotationError, parse_annotations

    with pytest.raises(AnnotationError) as caught:
        parse_annotations(text, "a.toml")
    assert str(caught.value).startswith("a.toml:1: [[explain]] #1 verdict: 'acepted' is none of"), str(caught.value)


def test_an_annotations_error_names_a_folder_with_a_newline_on_one_line(tmp_path: Path) -> None:
    """A review: a run folder named 'bad<newline>name' split the error into two lines, the second
    starting 'name/annotations.toml:1:' (a folder name can forge output lines). Shown as <U+000A>."""
    import shutil

    from tests.conftest import FIXTURES

    run = tmp_path / "bad\nname"
    run.mkdir()
    shutil.copy(FIXTURES / "synthetic_complete.jsonl", run / "events.jsonl")
    (run / "annotations.toml").write_text('[nosuchcell]\nexplanation = "x"\n', encoding="utf-8")
    result = CliRunner().invoke(main, ["report", str(run), "--out", str(tmp_path / "out")])
    assert result.exit_code != 0
    lines = result.output.splitlines()
    assert not any(line.startswith("name") for line in lines), lines
    assert any("bad<U+000A>name" in line and "nosuchcell" in line for line in lines), lines


def test_a_groups_task_metric_is_its_worst_for_the_criterions_direction(tmp_path: Path) -> None:
    """A review: under a '<=' criterion the group line gave the lowest value, the best cell's,
    reading "met" while another cell of the group failed (and `annotate` wrote it into the
    owner's explanation). Under '<=' the highest is given; without a criterion, the range."""
    events = lb.base_events()
    plan = next(e for e in events if e["kind"] == "plan")
    criterion = {"metric": "max_abs_diff", "op": "<=", "threshold": 0.003}
    plan["tolerances"]["float32"]["task"] = criterion
    failing = {lb.case_key(1, 16, "compiled"): (0.0027, True), lb.case_key(2, 16, "compiled"): (0.0037, False)}
    for result in (e for e in events if e["kind"] == "case_result"):
        value, passed = failing.get(result["case"], (0.0001, True))
        result["task_metric"] = {"name": "max_abs_diff", "value": value, "criterion": criterion, "passed": passed}
        if result["case"] in failing:
            result["status"] = "mismatch"
            result["error_stats"].update(max_abs=3.2e-3, mismatched=17, diff_at_worst=3.2e-3, allowed_at_worst=1.1e-5)
    events = [e for e in events if not (e["kind"] == "timing" and e["case"] in failing)]
    log = tmp_path / "events.jsonl"
    log.write_text(lb.dumps(lb.with_envelope(lb.finish(events))), encoding="utf-8")
    md = build_report(log, tmp_path / "out").written
    text = (tmp_path / "out" / "report.md").read_text(encoding="utf-8").replace("\\", "")
    assert "highest task metric max_abs_diff = 0.0037 (criterion <= 0.003: not met)" in text, md
    assert "lowest task metric max_abs_diff = 0.0027" not in text


def test_annotate_says_whether_the_explained_cells_have_their_verdicts(tmp_path: Path) -> None:
    """A review: with every failed cell explained and decided, annotate still said "give each
    entry a verdict there". It says which: all decided, or how many await a verdict."""
    events = lb.mismatch_log()  # one failed cell
    case = next(e["case"] for e in events if e["kind"] == "case_result" and e["status"] == "mismatch")
    explained = f'[{case}]\nexplanation = "Reduction order."\n'
    log = _write(tmp_path, annotations=explained, events=events)
    said = CliRunner().invoke(main, ["annotate", str(log)]).output
    assert "every failed cell is explained in" in said and "1 of them await a verdict there" in said, said
    (log.parent / "annotations.toml").write_text(
        explained + 'verdict = "accepted"\nreason = "owner"\n', encoding="utf-8"
    )
    said = CliRunner().invoke(main, ["annotate", str(log)]).output
    assert "every failed cell is explained and has a verdict in" in said and "await" not in said, said


def test_a_verdict_beside_the_skeletons_placeholder_is_refused(tmp_path: Path) -> None:
    """A review: uncommenting the skeleton's verdict (and a reason) while its explanation still
    read "Why: (the owner writes the cause here)" turned the run Suitable, the page quoting the
    placeholder as the owner's explanation. The entry is refused at its line until the cause is written."""
    events = lb.mismatch_log()
    log = _write(tmp_path, events=events)
    assert CliRunner().invoke(main, ["annotate", str(log)]).exit_code == 0
    skeleton = (log.parent / "annotations.toml").read_text(encoding="utf-8")
    assert "Why: (the owner writes the cause here)" in skeleton
    decided = re.sub(r"(?m)^# verdict = \"accepted\".*$", 'verdict = "accepted"\nreason = "owner reviewed"', skeleton)
    assert decided != skeleton
    (log.parent / "annotations.toml").write_text(decided, encoding="utf-8")
    code, output = _report(tmp_path, log)
    assert code != 0 and "write the cause in the explanation first" in output, output
    (log.parent / "annotations.toml").write_text(
        decided.replace("(the owner writes the cause here)", "Reduction order differs."), encoding="utf-8"
    )
    assert _report(tmp_path, log)[0] == 0


def test_the_stop_names_the_kind_of_cells_that_hold_it(tmp_path: Path) -> None:
    """'mismatching', 'errored', or both, as the run holds them (a review: a run of mismatches
    alone read 'mismatching or errored')."""
    mixed = judge_log(_write(tmp_path))  # one mismatch and one errored cell, no verdict
    assert len(mixed.disposition.performance_stopped) == 2
    assert mixed.disposition.stopped_kind == "mismatching or errored"
    (tmp_path / "m").mkdir()
    only = judge_log(_write(tmp_path / "m", events=lb.mismatch_log()))
    assert only.disposition.stopped_kind == "mismatching" and only.disposition.performance_stopped


@pytest.mark.parametrize("renamed", ["b2-l16-contiguous-float32-compiled[0]", "b*-compiled", "b2?-compiled"])
def test_the_skeleton_names_a_key_with_wildcard_characters_as_itself(tmp_path: Path, renamed: str) -> None:
    """A review: annotate wrote a key such as 'b2-...-compiled[0]' into `cases` as it is, a
    pattern that matches no cell (the next report refused the skeleton the tool had written),
    and 'b*-compiled' one that covered the passing b1 compiled cell too."""
    text = (lb.FIXTURES / "synthetic_mismatch.jsonl").read_text(encoding="utf-8")
    failing = "b2-l16-contiguous-float32-compiled"
    run = tmp_path / "run"
    run.mkdir()
    log = run / "events.jsonl"
    log.write_text(text.replace(f'"{failing}"', f'"{renamed}"'), encoding="utf-8")
    runner = CliRunner()
    assert runner.invoke(main, ["annotate", str(log)]).exit_code == 0
    skeleton = (run / "annotations.toml").read_text(encoding="utf-8")
    (entry,) = tomllib.loads(skeleton)["explain"]
    assert [c for c in ("b1-l16-contiguous-float32-compiled", renamed) if fnmatchcase(c, entry["cases"][0])] == [
        renamed
    ]
    report = runner.invoke(main, ["report", str(log), "--out", str(tmp_path / "out")])
    assert report.exit_code == 0, report.output
    assert "matches no planned cell" not in report.output


@pytest.mark.parametrize("quotes", ['"""', "'''"])
def test_a_header_written_inside_a_multi_line_string_is_no_entry_s_line(tmp_path: Path, quotes: str) -> None:
    """A review: an entry given as an inline array on line 1 was said to be on line 6, where a
    multi-line string's text held '[[explain]]' (the one header-like line counted as its header)."""
    text = (
        'explain = [ { cases = ["b9-l16-contiguous-float32-compiled"], explanation = "typo in the case" } ]\n\n'
        f'["b2-l16-contiguous-float32-compiled"]\nexplanation = {quotes}\nNotes copied from the ticket:\n'
        f"[[explain]]\n{quotes}\n"
    )
    code, output = _report(tmp_path, _write(tmp_path, text))
    assert code == 1 and "matches no planned cell" in output
    assert "annotations.toml:6:" not in output


def test_a_skeleton_of_many_escaped_keys_names_its_cells_rather_than_searching(tmp_path: Path) -> None:
    """A second review: each escaped key ('...[[]0]') counted as a wildcard pattern, so the
    skeleton of a run of 2,400 failed cells so named passed the report's limit on pattern tests
    and the report refused it, advising names without wildcards, which such keys cannot be."""
    import json

    events = lb.large_log(2400, 1)
    text = "".join(json.dumps(e) + "\n" for e in events)
    for case in sorted({e["case"] for e in events if "case" in e}, key=len, reverse=True):
        text = text.replace(f'"{case}"', f'"{case}[0]"')
    run = tmp_path / "run"
    run.mkdir()
    (run / "events.jsonl").write_text(text, encoding="utf-8")
    runner = CliRunner()
    assert runner.invoke(main, ["annotate", str(run / "events.jsonl")]).exit_code == 0
    report = runner.invoke(main, ["report", str(run / "events.jsonl"), "--out", str(tmp_path / "out")])
    assert report.exit_code == 0, report.output[-500:]
    assert "patterns and field selectors" not in report.output


def test_an_entry_s_line_is_counted_as_toml_counts_lines(tmp_path: Path) -> None:
    """A second review: a U+2028 inside a string ended a line for str.splitlines (TOML ends lines
    at LF only), so every later error named the line after its own."""
    text = (
        '[[explain]]\ncases = ["b1-l16-contiguous-float32-eager"]\nexplanation = "x\u2028"\nverdict = "accepted"\n'
        'reason = "r"\n\n[[explain]]\nbatch = 2.5\nexplanation = "y"\n'
    )
    code, output = _report(tmp_path, _write(tmp_path, text))
    assert code == 1 and "annotations.toml:8: [[explain]] #2 batch.0" in output, output


def test_a_case_table_s_key_is_the_key_itself_even_with_bracketed_characters(tmp_path: Path) -> None:
    """A third review: a ["cell[*]x"] table was read as the pattern's key 'cell*x' and refused as
    'names case cell[*]x, which is not in the plan'."""
    text = (lb.FIXTURES / "synthetic_mismatch.jsonl").read_text(encoding="utf-8")
    failing = "b2-l16-contiguous-float32-compiled"
    run = tmp_path / "run"
    run.mkdir()
    (run / "events.jsonl").write_text(text.replace(f'"{failing}"', '"cell[*]x"'), encoding="utf-8")
    (run / "annotations.toml").write_text(
        '["cell[*]x"]\nexplanation = "Reviewed: the compiled kernel rounds differently."\nverdict = "accepted"\nreason = "within the task\'s needs"\n',
        encoding="utf-8",
    )
    code, output = _report(tmp_path, run / "events.jsonl")
    assert code == 0 and "not in the plan" not in output, output
