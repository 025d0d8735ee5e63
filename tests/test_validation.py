"""`reportgen validate`: every kind of bad input gives a located message, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import pytest
from click.testing import CliRunner

from reportgen.cli import main
from reportgen.contract.validation import MAX_LINE_BYTES, read_log
from reportgen.contract.events import SCHEMA_MAJOR, SCHEMA_MINOR, SCHEMA_VERSION
from tests.conftest import FIXTURES
from tests.logbuilder import _warm, complete_log, dumps, generation_log, localized_log, tokens_per_s, training_log

NEWER_MINOR = f"{SCHEMA_MAJOR}.{SCHEMA_MINOR + 1}"  # a minor version newer than this contract's

Lines = list[dict]


def _text(events: Lines) -> bytes:
    return dumps(events).encode()


def _edit(index: int, **changes: object) -> Callable[[Lines], bytes]:
    def build(events: Lines) -> bytes:
        events[index].update(changes)
        return _text(events)

    return build


def _drop_field(index: int, name: str) -> Callable[[Lines], bytes]:
    def build(events: Lines) -> bytes:
        del events[index][name]
        return _text(events)

    return build


def _replace_line(index: int, raw: bytes) -> Callable[[Lines], bytes]:
    def build(events: Lines) -> bytes:
        lines = _text(events).splitlines(keepends=True)
        lines[index] = raw
        return b"".join(lines)

    return build


def _move_result_before_plan(events: Lines) -> bytes:
    result = next(i for i, e in enumerate(events) if e["kind"] == "case_result")
    events.insert(2, events.pop(result))
    for seq, event in enumerate(events):
        event["seq"] = seq
    return _text(events)


def _decreasing_seq(events: Lines) -> bytes:
    for seq, event in enumerate(events):
        event["seq"] = seq * 10
    events[6]["seq"] = 15
    return _text(events)


def _warning_first(events: Lines) -> bytes:
    events[0] = {"schema_version": "1.0", "seq": 0, "time": "t", "kind": "warning", "message": "x"}
    return _text(events)


def _truncate_last(events: Lines) -> bytes:
    text = _text(events[:-1])
    return text + dumps(events[-1:]).encode()[:40]


def _bom(events: Lines) -> bytes:
    return b"\xef\xbb\xbf" + _text(events)


def _long_line(events: Lines) -> bytes:
    lines = _text(events).splitlines(keepends=True)
    lines.insert(3, b'{"x": "' + b"a" * (MAX_LINE_BYTES + 10) + b'"}\n')
    return b"".join(lines)


# (name, how to break the complete synthetic log, line, message fragment, still valid?)
CASES: list[tuple[str, Callable[[Lines], bytes], int, str, bool]] = [
    ("empty file", lambda e: b"", 0, "empty file", False),
    ("not json", _replace_line(4, b"{this is not json\n"), 5, "not valid JSON", False),
    # (json's message ends in "starting at": the column follows it once, not "at at column")
    (
        "cut string",
        _replace_line(4, b'{"a": "cut\n'),
        5,
        "not valid JSON: Unterminated string starting at column 7",
        False,
    ),
    ("array not object", _replace_line(4, b"[1, 2]\n"), 5, "expected a JSON object, got an array", False),
    ("string not object", _replace_line(4, b'"hello"\n'), 5, "got a string", False),
    ("wrong type", _edit(1, backend_family_reason=5), 2, "backend_family_reason", False),
    ("wrong enum", _edit(1, backend_family="tpu"), 2, "backend_family", False),
    ("missing field", _drop_field(2, "tolerances"), 3, "tolerances: required field missing", False),
    ("unknown field", _edit(0, colour="red"), 1, "colour: unknown field", False),
    ("unknown kind", _edit(4, kind="telemetry"), 5, "unknown event kind 'telemetry'", False),
    ("missing kind", _drop_field(4, "kind"), 5, "missing or non-string 'kind'", False),
    ("missing schema version", _drop_field(3, "schema_version"), 4, "missing schema_version", False),
    ("duplicate seq", _edit(5, seq=4), 6, "duplicate seq 4", False),
    ("decreasing seq", _decreasing_seq, 7, "sequence numbers must increase", False),
    ("result before plan", _move_result_before_plan, 3, "before the plan", False),
    ("first not run_start", _warning_first, 1, "first event must be run_start", False),
    ("truncated last line", _truncate_last, 23, "truncated last line", True),
    ("no run end", lambda e: _text(e[:-1]), 22, "no run_end", True),
    (
        "NaN literal",
        _replace_line(4, b'{"kind": "reference", "noise_max_abs": NaN}\n'),
        5,
        "NaN is not valid JSON",
        False,
    ),
    ("Infinity literal", _replace_line(4, b'{"a": -Infinity}\n'), 5, "-Infinity is not valid JSON", False),
    (
        "non-utf8 bytes",
        _replace_line(4, b'{"kind": "warning", "message": "\xff\xfe"}\n'),
        5,
        "not valid UTF-8: byte 0xff",
        False,
    ),
    ("byte-order mark", _bom, 1, "byte-order mark", True),
    ("absurdly long line", _long_line, 4, "line longer than", False),
    ("newer major", _edit(0, schema_version="2.0"), 1, "major version 2", False),
    ("bad version text", _edit(3, schema_version="one"), 4, "not MAJOR.MINOR", False),
    ("case not in plan", _edit(6, case="b9-l9-contiguous-float32-eager"), 7, "not in the plan", False),
    ("second run_end", lambda e: _text(e + [dict(e[-1], seq=99)]), 24, "run_end", False),
    ("deep nesting", _replace_line(4, b"[" * 100000 + b"]" * 100000 + b"\n"), 5, "nested too deeply", False),
    ("huge integer", _replace_line(4, b'{"seq": ' + b"9" * 5000 + b"}\n"), 5, "unreadable JSON value", False),
    ("blank line", _replace_line(4, b"\n"), 5, "blank line", False),
    (
        "NaN via exponent overflow",
        _replace_line(
            6,
            b'{"schema_version":"1.0","seq":6,"time":"t","kind":"reference","shape":"s","device":"cpu","runs":1,"noise_max_abs":1e999}\n',
        ),
        7,
        "finite number",
        False,
    ),
]


@pytest.mark.parametrize("name,build,line,fragment,valid", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_located(tmp_path: Path, name: str, build, line: int, fragment: str, valid: bool) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(build(complete_log()))
    reading = read_log(path)
    located = [p for p in reading.problems if p.line == line and fragment in p.message]
    assert located, f"no problem at line {line} containing {fragment!r}: {[p.format() for p in reading.problems]}"
    # "blank line" is only a warning, but the line it replaced (the first reference) goes missing,
    # which the table marks invalid because nothing else is broken: check the warning alone.
    if name != "blank line":
        assert reading.valid is valid
    for problem in reading.problems:
        assert problem.format().startswith(f"{path}:{problem.line}: ")
        assert "\n" not in problem.format()


def test_truncated_log_keeps_earlier_events(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(_truncate_last(complete_log()))
    reading = read_log(path)
    assert reading.truncated and not reading.complete
    assert len(reading.events) == len(complete_log()) - 1


def test_newer_minor_validates_with_warnings(tmp_path: Path) -> None:
    events = complete_log()
    for event in events:
        event["schema_version"] = NEWER_MINOR
    events[0]["shiny_new_field"] = 1
    events[1]["versions"]["python"]["precision"] = "exact"
    events.insert(3, {"schema_version": NEWER_MINOR, "seq": 2, "time": "t", "kind": "power_draw", "watts": 3})
    for seq, event in enumerate(events):
        event["seq"] = seq
    path = tmp_path / "events.jsonl"
    path.write_bytes(_text(events))
    reading = read_log(path)
    assert reading.valid, [p.format() for p in reading.errors]
    messages = [p.message for p in reading.problems]
    assert any(f"newer than {SCHEMA_VERSION}" in m for m in messages)
    assert any("shiny_new_field" in m for m in messages)
    assert any("versions.python.precision" in m for m in messages)
    assert any("unknown event kind 'power_draw'" in m for m in messages)
    assert reading.complete


def test_newer_major_is_refused_once(tmp_path: Path) -> None:
    events = complete_log()
    for event in events:
        event["schema_version"] = "2.0"
    path = tmp_path / "events.jsonl"
    path.write_bytes(_text(events))
    reading = read_log(path)
    assert not reading.valid
    assert len(reading.problems) == 1
    assert "upgrade reportgen" in reading.problems[0].message


@pytest.mark.parametrize("name", ["synthetic_complete.jsonl", "synthetic_incomplete.jsonl"])
def test_fixtures_are_valid_and_say_synthetic(name: str) -> None:
    reading = read_log(FIXTURES / name)
    assert reading.valid, [p.format() for p in reading.problems]
    assert reading.events[0].origin == "synthetic"
    assert reading.complete is (name == "synthetic_complete.jsonl")


def test_cli_exit_codes_and_format(tmp_path: Path) -> None:
    good = FIXTURES / "synthetic_complete.jsonl"
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"[]\n" * 30)
    runner = CliRunner()
    ok = runner.invoke(main, ["validate", str(good)])
    assert ok.exit_code == 0 and "valid, complete" in ok.output
    fail = runner.invoke(main, ["validate", str(bad), "--max-problems", "5"])
    assert fail.exit_code == 1
    assert f"{bad}:1: error: expected a JSON object" in fail.output
    assert "and 26 more problems" in fail.output  # 30 lines, and "no events" for the file
    usage = runner.invoke(main, ["validate", str(tmp_path / "missing.jsonl")])
    assert usage.exit_code == 2
    assert runner.invoke(main, ["validate"]).exit_code == 2


def test_validate_reads_a_run_folder_as_report_does(tmp_path: Path) -> None:
    """A run folder is its events.jsonl (as report and compare take it), with the same exit codes;
    a folder with no log in it is a usage error naming it."""
    run = tmp_path / "run-1"
    run.mkdir()
    (run / "events.jsonl").write_bytes((FIXTURES / "synthetic_complete.jsonl").read_bytes())
    runner = CliRunner()
    ok = runner.invoke(main, ["validate", str(run)])
    assert ok.exit_code == 0, ok.output
    assert f"{run.resolve() / 'events.jsonl'}: valid, complete" in ok.output
    (run / "events.jsonl").write_bytes(b"[]\n")
    assert runner.invoke(main, ["validate", str(run)]).exit_code == 1
    empty = tmp_path / "empty"
    empty.mkdir()
    usage = runner.invoke(main, ["validate", str(empty)])
    assert usage.exit_code == 2 and f"{empty}: no run log in this folder" in usage.output


def test_cli_json_output(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"schema_version": "1.0"}\n')
    result = CliRunner().invoke(main, ["validate", "--json", str(bad)])
    assert result.exit_code == 1
    data = json.loads(result.output)
    assert data[0]["valid"] is False
    assert data[0]["problems"][0] == {"line": 1, "severity": "error", "message": "missing or non-string 'kind'"}


def test_a_file_that_is_not_json_lines_is_said_so_once(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello world\nthis is not json\n<html>\n" * 50, encoding="utf-8")
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exit_code == 1
    errors = [line for line in result.output.splitlines() if ": error: " in line]
    assert errors == [
        f"{path}:1: error: not a JSON-lines event log: its first line is not valid JSON: Expecting value at column 1"
    ]


def test_a_bad_line_after_good_ones_is_one_error_of_the_log(tmp_path: Path) -> None:
    lines = _text(complete_log()).splitlines(keepends=True)
    lines.insert(2, b"not json\n")
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"".join(lines))
    reading = read_log(path)
    assert [p.message for p in reading.errors][:1] == ["not valid JSON: Expecting value at column 1"]
    assert len(reading.records) > 3, "the rest of the log is still read"


def _first_of(events: Lines, kind: str, case: str | None = None) -> dict:
    return next(e for e in events if e["kind"] == kind and (case is None or e.get("case") == case))


def _passing_mismatched(events: Lines) -> None:
    _first_of(events, "case_result")["error_stats"].update(mismatched=5, max_abs=0.5)


def _metric_below_criterion(events: Lines) -> None:
    _first_of(events, "case_result")["task_metric"].update(value=0.5, passed=True)


def _worst_beyond_allowance(events: Lines) -> None:
    """A pass whose own worst element is outside its allowance (1.10004e-05 against 1.1e-05):
    valid before, and reported 'Suitable'."""
    _first_of(events, "case_result")["error_stats"].update(
        diff_at_worst=1.10004e-05, allowed_at_worst=1.1e-05, max_abs=1.10004e-05
    )


def _more_mismatched_than_judged(events: Lines) -> None:
    result = _first_of(events, "case_result")
    result["status"] = "mismatch"
    result["error_stats"].update(mismatched=2000, diff_at_worst=1e-3, max_abs=1e-3)


def _worst_above_largest(events: Lines) -> None:
    _first_of(events, "case_result")["error_stats"].update(diff_at_worst=1e-05, max_abs=1e-07)


def _metric_failed_though_met(events: Lines) -> None:
    """A task metric called failed whose value meets its criterion, the only failing figure of
    a mismatch: the report blocked on 'task metric' when no figure failed."""
    result = _first_of(events, "case_result")
    result["status"] = "mismatch"
    result["task_metric"].update(value=0.9995, passed=False)


def _mismatch_without_a_failing_figure(events: Lines) -> None:
    _first_of(events, "case_result")["status"] = "mismatch"


def _mismatch_whose_worst_is_within(events: Lines) -> None:
    """From schema 1.2 the worst element is picked among the failing ones when any fails."""
    result = _first_of(events, "case_result")
    result.update(status="mismatch", schema_version="1.2")
    result["error_stats"].update(mismatched=3)


def _noise_beyond(events: Lines, **fields: object) -> None:
    """A 1.5 reference line with the given figures."""
    _first_of(events, "reference").update({"schema_version": "1.5", "deterministic": False, **fields})


def _noise_beyond_identical_runs(events: Lines) -> None:
    """From 1.5: elements beyond the tolerance between two runs that differ by 1e-300 at most."""
    _noise_beyond(events, noise_max_abs=1e-300, noise_beyond_tolerance={"float32": 3})


def _noise_beyond_an_unplanned_dtype(events: Lines) -> None:
    _noise_beyond(events, noise_max_abs=0.5, noise_beyond_tolerance={"float16": 3})


def _noise_beyond_a_deterministic_reference(events: Lines) -> None:
    _noise_beyond(events, noise_max_abs=0.5, noise_beyond_tolerance={"float32": 3}, deterministic=True)


def _noise_beyond_on_an_older_line(events: Lines) -> None:
    _noise_beyond(events, noise_max_abs=0.5, noise_beyond_tolerance={"float32": 3}, schema_version="1.4")


def _criterion_loosened(events: Lines) -> None:
    """A looser criterion written beside one result than the plan declares for its dtype: before,
    the log was valid and `diff` read the cell's pass as 'fixed'."""
    _first_of(events, "case_result")["task_metric"].update(
        value=0.6, criterion={"metric": "cosine_to_reference", "op": ">=", "threshold": 0.5}
    )


def _tokens_tampered(events: Lines) -> None:
    gen = next(e for e in events if e["kind"] == "generation" and e["steps_agreeing"] == len(e["tokens"][0]))
    gen["tokens"] = [[t + 1 if i >= 2 else t for i, t in enumerate(row)] for row in gen["tokens"]]


def _tokens_empty(events: Lines) -> None:
    gen = _first_of(events, "generation")
    gen.update(tokens=[], reference_tokens=[])


def _tokens_rows_doubled(events: Lines) -> None:
    """Two sequences' tokens for a cell of one: the batch's tokens/s would count them twice."""
    gen = _first_of(events, "generation")
    gen.update(tokens=gen["tokens"] * 2, reference_tokens=gen["reference_tokens"] * 2)


def _decode_steps_inflated(events: Lines) -> None:
    """64 decode steps over tokens of 7 (the plan says 6): the page read '7 of 65 steps agree'."""
    _first_of(events, "generation")["decode_steps"] = 64


def _decode_steps_unplanned(events: Lines) -> None:
    """A plan declaring 4 decode steps over generation events (and tokens) of 6."""
    _first_of(events, "plan")["generation"]["decode_steps"] = 4
    for event in events:
        if event["kind"] == "generation":
            event["decode_steps"] = 6


def _decode_series_short(events: Lines) -> None:
    """A decode series of 3 steps a repetition beside decode_steps 6: tokens/s over 3 steps."""
    timing = next(e for e in events if e["kind"] == "generation" and e.get("timing"))["timing"]
    reps = timing["repetitions"]
    samples = timing["decode_token"]["samples_s"]
    each = len(samples) // reps
    timing["decode_token"] = _warm([x for r in range(reps) for x in samples[r * each : r * each + 3]])
    timing["tokens_per_s"] = tokens_per_s(timing)


def _top_k_unmeasured(events: Lines) -> None:
    gen = _first_of(events, "generation")
    gen["top_k_overlap"] = [None] * len(gen["top_k_overlap"])


def _loss_outside(events: Lines) -> None:
    _first_of(events, "train_step").update(loss=9.0)


def _grads_mismatched(events: Lines) -> None:
    _first_of(events, "train_step")["grads"][0]["mismatched"] = 4


def _localized_loosely(events: Lines) -> None:
    """The localisation judged its modules with atol and rtol 1, a criterion the cell never had:
    the page said 'judged with the cell's tolerance (atol 1, rtol 1)' beside a criteria table of 1e-05."""
    _first_of(events, "localization").update(atol=1.0, rtol=1.0)


def _median_faster_than_measured(events: Lines) -> None:
    """A median a tenth of what the samples give: before, it validated and every page, the
    history and diff read the logged median, a time that was never measured."""
    warm = _first_of(events, "timing")["warm"]
    warm["median_s"] /= 10


def _decode_p90_hidden(events: Lines) -> None:
    """A generation cell's decode p90 set to its median: the page's 'p90 per token' hid the tail."""
    decode = next(e for e in events if e["kind"] == "generation" and e.get("timing"))["timing"]["decode_token"]
    decode["p90_s"] = decode["median_s"]


def _compiled_otherwise(events: Lines) -> None:
    """A compiled cell whose call was given max-autotune while the plan declares the defaults:
    before, it validated and the criteria table said 'compile options: default'."""
    _first_of(events, "plan")["compile_options"] = {
        "dynamic": False,
        "mode": "default",
        "fullgraph": False,
        "backend_options": {},
    }
    _first_of(events, "compile")["compile_options"] = {
        "dynamic": False,
        "mode": "max-autotune",
        "fullgraph": False,
        "backend_options": {},
    }


def _ttft_sample_dropped(events: Lines) -> None:
    """One repetition's time to first token left out (the slow one, say) and its figures remade."""
    timing = next(e for e in events if e["kind"] == "generation" and e.get("timing"))["timing"]
    timing["ttft_warm"] = _warm(timing["ttft_warm"]["samples_s"][:-1])


def _tokens_per_s_doubled(events: Lines) -> None:
    """Twice the decode rate the samples give: the page's tokens/s column read it as measured."""
    timing = next(e for e in events if e["kind"] == "generation" and e.get("timing"))["timing"]
    timing["tokens_per_s"] *= 2


def _repetitions_redeclared(events: Lines) -> None:
    """The plan says 10 warm repetitions; every loop timed the 5 it first declared. A comparison
    then named 'warm repetitions now 10' as a criterion change that was never measured."""
    _first_of(events, "plan")["warm_repetitions"] = 10


def _generation_repetitions_redeclared(events: Lines) -> None:
    _first_of(events, "plan")["warm_repetitions"] = 4


@pytest.mark.parametrize(
    ("build", "edit", "kind", "fragment"),
    [
        (
            complete_log,
            _repetitions_redeclared,
            "timing",
            "warm holds 5 warm repetition(s), but the plan declares warm_repetitions 10",
        ),
        (
            generation_log,
            _generation_repetitions_redeclared,
            "generation",
            "timing.repetitions is 5 warm repetition(s), but the plan declares warm_repetitions 4",
        ),
        (complete_log, _passing_mismatched, "case_result", "status pass, but error_stats counts 5 of"),
        (generation_log, _tokens_per_s_doubled, "generation", "repetitions of 6 steps give"),
        (complete_log, _compiled_otherwise, "compile", 'mode "max-autotune" against "default"'),
        (generation_log, _ttft_sample_dropped, "generation", "timing.ttft_warm holds 4 samples, one per repetition"),
        (
            complete_log,
            _median_faster_than_measured,
            "timing",
            "warm.median_s is 0.000102, but its 5 samples_s give 0.00102",
        ),
        (generation_log, _decode_p90_hidden, "generation", "timing.decode_token.p90_s is "),
        (complete_log, _metric_below_criterion, "case_result", "value 0.5 does not meet its criterion >= 0.999"),
        (complete_log, _criterion_loosened, "case_result", "is not the plan's task criterion for this cell's dtype"),
        (
            complete_log,
            _noise_beyond_identical_runs,
            "reference",
            "the runs differ by at most 1e-300, within its atol",
        ),
        (complete_log, _noise_beyond_a_deterministic_reference, "reference", "of a reference called deterministic"),
        (complete_log, _noise_beyond_on_an_older_line, "reference", "a figure of schema 1.5, on a 1.4 line"),
        (
            complete_log,
            _noise_beyond_an_unplanned_dtype,
            "reference",
            "names 'float16', a dtype the plan gives no tolerance",
        ),
        (complete_log, _worst_beyond_allowance, "case_result", "|diff| 1.10004e-05 exceeds its allowance 1.1e-05"),
        (
            complete_log,
            _more_mismatched_than_judged,
            "case_result",
            "counts 2000 elements outside the tolerance of 512",
        ),
        (complete_log, _worst_above_largest, "case_result", "diff_at_worst 1e-05 is larger than max_abs 1e-07"),
        (complete_log, _metric_failed_though_met, "case_result", "passed is false, but its value 0.9995 meets"),
        (
            complete_log,
            _mismatch_without_a_failing_figure,
            "case_result",
            "status mismatch, but no figure beside it fails",
        ),
        (complete_log, _mismatch_whose_worst_is_within, "case_result", "|diff| 2e-07 is within its allowance 0.00012"),
        (generation_log, _tokens_tampered, "generation", "tokens agree with reference_tokens for 2 leading step"),
        (generation_log, _tokens_empty, "generation", "tokens hold 0 row(s), but the plan's cell is a batch of 1"),
        (
            generation_log,
            _tokens_rows_doubled,
            "generation",
            "tokens hold 2 row(s), but the plan's cell is a batch of 1",
        ),
        (generation_log, _top_k_unmeasured, "generation", "top_k_passed is true, but no top-k overlap measured"),
        (generation_log, _decode_steps_inflated, "generation", "tokens hold 7 step(s) a request, but decode_steps 64"),
        (generation_log, _decode_steps_unplanned, "generation", "decode_steps is 6, but the plan declares 4"),
        (
            generation_log,
            _decode_series_short,
            "generation",
            "timing.decode_token holds 3 step(s) a repetition, but decode_steps is 6",
        ),
        (training_log, _loss_outside, "train_step", "loss 9.0 against reference_loss 1.1 is outside"),
        (training_log, _grads_mismatched, "case_result", "status pass, but train_step 0 counts 4 mismatched"),
        (localized_log, _localized_loosely, "localization", "the plan's tolerance for this cell's dtype is atol 1e-05"),
    ],
)
def test_figures_that_contradict_their_status_are_an_error(
    tmp_path: Path, build, edit, kind: str, fragment: str
) -> None:  # type: ignore[no-untyped-def]
    """A pass (or a flag) the same line's figures contradict is no evidence: an error at that line."""
    events = build()
    edit(events)
    path = tmp_path / "events.jsonl"
    path.write_bytes(_text(events))
    reading = read_log(path)
    errors = [p for p in reading.problems if p.severity == "error"]
    assert not reading.valid and errors, "a self-contradicting log validated"
    assert kind in errors[0].message and fragment in errors[0].message and "contradicts itself" in errors[0].message
    assert events[errors[0].line - 1]["kind"] == kind


def _cell_relabelled(events: Lines) -> None:
    """The first cell keeps its key (float32 eager) but measured bfloat16 compiled."""
    cell = _first_of(events, "plan")["matrix"][0]
    assert cell["case"].endswith("-float32-eager")
    cell.update(dtype="bfloat16", mode="compiled")
    _first_of(events, "plan")["tolerances"]["bfloat16"] = {"atol": 1e-2, "rtol": 1e-2, "source": "synthetic"}


def _repeat_unmarked(events: Lines) -> None:
    """A cell named as a cache check that repeats nothing."""
    cell = _first_of(events, "plan")["matrix"][1]
    for event in events:
        if event.get("case") == cell["case"]:
            event["case"] += "-repeat"
    cell["case"] += "-repeat"


@pytest.mark.parametrize(
    ("edit", "fragment"),
    [
        (_cell_relabelled, "fields are batch 1, length 16, contiguous, bfloat16, compiled"),
        (_repeat_unmarked, "b1-l16-contiguous-float32-compiled-repeat"),
    ],
)
def test_a_case_key_in_the_collector_s_form_that_names_other_fields_is_an_error(
    tmp_path: Path, edit: Callable[[Lines], None], fragment: str
) -> None:
    """Pages show a cell by its key: a key that names other fields than the cell measured would
    show one cell's result under another's name. Keys in another collector's form are free."""
    events = complete_log()
    edit(events)
    path = tmp_path / "events.jsonl"
    path.write_bytes(_text(events))
    reading = read_log(path)
    errors = [p for p in reading.errors if "collector's form" in p.message]
    assert len(errors) == 1 and fragment in errors[0].message and "contradicts itself" in errors[0].message
    assert events[errors[0].line - 1]["kind"] == "plan"
    # The same cells under keys of another form are not judged.
    events = complete_log()
    edit(events)
    renamed = {c["case"]: f"cell-{i}" for i, c in enumerate(_first_of(events, "plan")["matrix"])}
    for event in events:
        if event.get("case") in renamed:
            event["case"] = renamed[event["case"]]
    for cell in _first_of(events, "plan")["matrix"]:
        cell["case"] = renamed.get(cell["case"], cell["case"])
    path.write_bytes(_text(events))
    assert not [p for p in read_log(path).problems if "collector's form" in p.message]


@pytest.mark.parametrize(("family", "device_type", "warned"), [("neuron-native", "cpu", True), ("cpu", "cpu", False)])
def test_a_backend_family_its_device_type_contradicts_is_an_error(
    tmp_path: Path, family: str, device_type: str, warned: bool
) -> None:
    """The backend descriptors say which families each device records: a cpu device that claims
    a neuron family was relabelled or misread, and validate refuses it at the environment line
    (a warning let the site count it as a run on neuron)."""
    events = complete_log()
    env = _first_of(events, "environment")
    env.update(backend_family=family, device_type=device_type)
    path = tmp_path / "events.jsonl"
    path.write_bytes(_text(events))
    reading = read_log(path)
    found = [p for p in reading.problems if "backend_family" in p.message]
    assert reading.valid is not warned
    if warned:
        assert [(p.severity, p.line) for p in found] == [("error", events.index(env) + 1)]
        assert "belongs to the neuron backend, but device_type is 'cpu'" in found[0].message
    else:
        assert found == []


@pytest.mark.parametrize(
    ("fixture", "refused"), [("synthetic_fallback.jsonl", True), ("synthetic_complete.jsonl", False)]
)
def test_an_accelerator_family_whose_device_count_is_the_hosts_cpus_is_an_error(
    tmp_path: Path, fixture: str, refused: bool
) -> None:
    """A review: a CPU log relabelled neuron throughout (family, device type, versions) kept the
    device facts the collector records only where no device adapter answered (the count read by
    os.cpu_count(), the name from /proc/cpuinfo), validated, and counted as a neuron run. Such a
    count under an accelerator's family is an error at the environment line; under cpu it is
    what the cpu target records."""
    events = [json.loads(line) for line in (FIXTURES / fixture).read_text(encoding="utf-8").splitlines()]
    env = _first_of(events, "environment")
    env["device"]["device_count"] = {"value": "2", "source": "os.cpu_count()"}
    path = tmp_path / "events.jsonl"
    path.write_bytes(_text(events))
    found = [p for p in read_log(path).problems if "os.cpu_count()" in p.message]
    if refused:
        assert [(p.severity, p.line) for p in found] == [("error", events.index(env) + 1)]
        assert "backend_family 'neuron-native' is the neuron backend's, but device.device_count was read by" in (
            found[0].message
        )
    else:
        assert found == []


def _errors_of(tmp_path: Path, events: Lines) -> list[str]:
    path = tmp_path / "events.jsonl"
    path.write_bytes(_text(events))
    return [f"{p.line}: {p.severity}: {p.message}" for p in read_log(path).errors]


def test_an_error_inside_a_map_names_the_entry_by_its_key(tmp_path: Path) -> None:
    """msgspec locates an error in a dict's value as ``[...]``: the careful path finds the key
    (here the second entry, after one that is fine) and leaves the line as it was."""
    events = complete_log()
    assert list(events[1]["versions"])[:2] == ["python", "torch"]
    events[1]["versions"]["torch"]["unknown_reason"] = "both given"
    assert _errors_of(tmp_path, events) == [
        "2: error: environment: versions.torch: a fact has either a value or an unknown_reason, not both or neither"
    ]


def test_a_number_beyond_a_float_is_an_error_at_its_field(tmp_path: Path) -> None:
    """1e400 is JSON, but no float holds it: json.loads reads infinity, which no field takes
    (a NonNegative bound alone would)."""
    events = complete_log()
    path = tmp_path / "events.jsonl"
    path.write_bytes(_text(events).replace(b'"max_abs": 2e-07', b'"max_abs": 1e400', 1))
    assert [f"{p.line}: {p.severity}: {p.message}" for p in read_log(path).errors] == [
        "7: error: case_result: error_stats.max_abs: a number too large for a float; "
        "write null for a value that is not a finite number"
    ]


def test_a_number_nested_nearly_as_deep_as_json_allows_is_one_located_error(tmp_path: Path) -> None:
    """The search for a number beyond a float walks with its own stack: a line nested just
    short of what json.loads refuses left it no room to recurse (a RecursionError traceback about
    977 levels deep in `reportgen validate`). Each depth is one error on its line, or the line's own "nested too deeply"."""
    events = complete_log()
    for event in events:
        event["schema_version"] = NEWER_MINOR  # an unknown field of a newer minor is let through
    head = _text(events).split(b"\n")
    for depth in range(850, 1000):  # the window sits wherever the caller's own stack leaves it
        line = head[1][:-1] + b', "extra": ' + b"[" * depth + b"1e400" + b"]" * depth + b"}"
        path = tmp_path / f"deep{depth}.jsonl"
        path.write_bytes(b"\n".join([head[0], line, *head[2:]]))
        errors = [p.message for p in read_log(path).errors if p.line == 2]
        assert len(errors) == 1, (depth, errors)
        assert "a number too large for a float" in errors[0] or "nested too deeply" in errors[0], (depth, errors)


@pytest.mark.parametrize(
    "index,field,value",
    [(3, "schema_version", "1.0\n"), (4, "sha256", "0" * 64 + "\n")],
    ids=["schema_version", "sha256"],
)
def test_a_pattern_matches_the_whole_value_not_before_a_final_newline(
    tmp_path: Path, index: int, field: str, value: str
) -> None:
    """Python's ``$`` also matches before a final newline; the contract's patterns do not."""
    events = complete_log()
    events[index][field] = value
    errors = _errors_of(tmp_path, events)
    assert len(errors) == 1 and errors[0].startswith(f"{index + 1}: error: {events[index]['kind']}: {field}: "), errors


@pytest.mark.parametrize("bad", [0, 637, 999])
def test_the_failing_entry_of_a_long_map_is_named(tmp_path: Path, bad: int) -> None:
    """The entry is found by halving the map (a line may hold a map of any size), and every
    entry is put back: the other entries are still read (one error only)."""
    events = complete_log()
    events[1]["versions"] = {f"tool{i}": {"value": str(i)} for i in range(1000)}
    events[1]["versions"][f"tool{bad}"]["unknown_reason"] = "both given"
    events[1]["versions"]["tool500"] = {"value": None, "unknown_reason": "not read"}
    assert _errors_of(tmp_path, events) == [
        f"2: error: environment: versions.tool{bad}: a fact has either a value or an unknown_reason, not both or neither"
    ]


def test_a_newer_minor_s_fields_are_dropped_wherever_they_are_in_one_pass(tmp_path: Path) -> None:
    """In a list of objects, in one member of a union tagged by status, at the top: each is
    named in the one warning of its line, and the line is read."""
    events = complete_log()
    for event in events:
        event["schema_version"] = NEWER_MINOR
    result = next(i for i, e in enumerate(events) if e["kind"] == "case_result")
    events[result]["outputs"][0]["checksum"] = "c"
    operators = next(i for i, e in enumerate(events) if e["kind"] == "operators")
    events[operators]["fallback"]["since"] = NEWER_MINOR
    events[operators]["executed"]["source"] = "profiler"
    events[operators]["energy"] = 1
    path = tmp_path / "events.jsonl"
    path.write_bytes(_text(events))
    reading = read_log(path)
    assert reading.valid and reading.complete, [p.format() for p in reading.errors]
    warnings = {p.line: p.message for p in reading.problems if "newer schema" in p.message}
    assert warnings == {
        result + 1: "case_result: fields from a newer schema ignored: outputs.0.checksum",
        operators + 1: "operators: fields from a newer schema ignored: energy, executed.source, fallback.since",
    }


def test_a_newer_line_s_many_unknown_fields_are_named_a_few_and_counted(tmp_path: Path) -> None:
    """A warning is one line a reader can read: 100,000 unknown fields named the first 20 and
    counted the rest (the whole list made a warning of about 800 KB)."""
    events = complete_log()
    for event in events:
        event["schema_version"] = NEWER_MINOR
    events[1].update({f"extra{k}": k for k in range(100_000)})
    path = tmp_path / "events.jsonl"
    path.write_bytes(_text(events))
    reading = read_log(path)
    assert reading.valid, [p.format() for p in reading.errors]
    (warning,) = [p.message for p in reading.problems if "newer schema" in p.message]
    named = ", ".join(sorted(f"extra{k}" for k in range(100_000))[:20])  # in the order of its other warnings
    assert warning == f"environment: fields from a newer schema ignored: {named} and 99,980 more"


def test_a_newer_minor_line_with_a_tag_of_the_wrong_type_is_an_error(tmp_path: Path) -> None:
    events = complete_log()
    for event in events:
        event["schema_version"] = NEWER_MINOR
    operators = next(i for i, e in enumerate(events) if e["kind"] == "operators")
    events[operators]["executed"] = {"status": ["measured"], "items": []}
    errors = _errors_of(tmp_path, events)
    assert len(errors) == 1 and errors[0].startswith(f"{operators + 1}: error: operators: executed"), errors


def test_a_plan_before_compile_options_declares_the_defaults(tmp_path: Path) -> None:
    """A plan event without compile_options (older logs) declared torch.compile's defaults: a
    compile event giving them is consistent, one giving dynamic=True is not."""
    defaults = {"dynamic": False, "mode": "default", "fullgraph": False, "backend_options": {}}
    for dynamic, valid in ((False, True), (True, False)):
        events = complete_log()
        assert "compile_options" not in _first_of(events, "plan")
        _first_of(events, "compile")["compile_options"] = {**defaults, "dynamic": dynamic}
        path = tmp_path / f"{dynamic}.jsonl"
        path.write_bytes(_text(events))
        reading = read_log(path)
        assert reading.valid is valid, [p.message for p in reading.problems]
        if not valid:
            assert "dynamic true against false" in reading.errors[0].message


def test_compile_options_without_backend_options_read_as_none_given(tmp_path: Path) -> None:
    """backend_options may be left out (it defaults to none): before, a plan or compile event
    that left it out ended every command in a TypeError traceback. And a backend told 1 was
    not told true: the two are not the same options."""
    bare = {"dynamic": False, "mode": "default", "fullgraph": False}
    cases = [
        (bare, bare, None),
        (bare, {**bare, "backend_options": {}}, None),
        (
            {**bare, "backend_options": {"x": True}},
            {**bare, "backend_options": {"x": 1}},
            'backend_options {"x":1} against {"x":true}',
        ),
    ]
    for n, (planned, given, error) in enumerate(cases):
        events = complete_log()
        _first_of(events, "plan")["compile_options"] = planned
        _first_of(events, "compile")["compile_options"] = given
        path = tmp_path / f"{n}.jsonl"
        path.write_bytes(_text(events))
        reading = read_log(path)
        assert reading.valid is (error is None), [p.message for p in reading.problems]
        if error is not None:
            assert error in reading.errors[0].message, reading.errors[0].message
        result = CliRunner().invoke(main, ["validate", str(path)])
        assert "Traceback" not in result.output and result.exit_code == (0 if error is None else 1), result.output


def test_a_finding_is_one_line_whatever_the_log_quotes(tmp_path: Path) -> None:
    """Before: a key holding newlines printed lines of its own, one of them a forged
    'FILE: valid, complete, ...' that a script reading validate's output took as a verdict."""
    events = complete_log()
    _first_of(events, "environment")["x\nforged.jsonl: valid, complete, 1 events, 0 errors, 0 warnings\n"] = 1
    path = tmp_path / "events.jsonl"
    path.write_bytes(_text(events))
    (problem,) = [p for p in read_log(path).problems if p.severity == "error"]
    line = problem.format()
    assert "\n" not in line and "x<U+000A>forged.jsonl" in line


@pytest.mark.parametrize("run_id", ["two\nlines", "tab\there", "bell\x07", "ends-with-newline\n"])
def test_a_run_id_with_a_control_character_is_refused(tmp_path: Path, run_id: str) -> None:
    # A run id names the run on every line of diff, status and the site: a newline split them.
    events = complete_log()
    _first_of(events, "run_start")["run_id"] = run_id
    path = tmp_path / "events.jsonl"
    path.write_bytes(_text(events))
    reading = read_log(path)
    errors = [p.message for p in reading.problems if p.severity == "error"]
    assert not reading.valid and errors == [
        "run_start: run_id: holds a control character (a tab, a newline, an escape): a run id names the run on every line that shows it"
    ], errors  # and no 'the first event must be run_start' after it
