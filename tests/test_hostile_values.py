"""Values at the edges: repeated JSON keys, a plan that names a case twice, files with no event,
numbers beyond what a report can format or draw, lone surrogates, deep nesting. Each is one
located line and an exit code, or a report that says "out of range"; never a traceback."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Callable

import pytest

from reportgen.contract.events import INT64_MAX
from reportgen.contract.validation import read_log
from tests.conftest import FIXTURES
from tests.hostile import invoke
from tests.logbuilder import complete_log, dumps, mismatch_log, training_log, with_envelope

Lines = list[dict]
FIRST_RESULT = 6  # index of the first case_result in complete_log()


def _text(events: Lines) -> bytes:
    return dumps(events).encode()


def _raw_line(index: int, edit: Callable[[str], str]) -> Callable[[Lines], bytes]:
    def build(events: Lines) -> bytes:
        lines = _text(events).decode().splitlines(keepends=True)
        lines[index] = edit(lines[index])
        return "".join(lines).encode()

    return build


def _set(index: int, path: str, value: object) -> Callable[[Lines], bytes]:
    def build(events: Lines) -> bytes:
        target = events[index]
        *parents, last = path.split(".")
        for part in parents:
            target = target[int(part)] if part.isdigit() else target[part]
        target[last] = value
        return _text(events)

    return build


def _duplicate_case(events: Lines) -> bytes:
    plan = events[2]
    plan["matrix"].append(dict(plan["matrix"][0]))
    return _text(events)


def _status(line: str, first: str) -> str:
    return line.replace('"status": "pass"', f'"status": "{first}", "status": "pass"')


HUGE = 10**400

# (name, how to build the file, line, message fragment)
CASES: list[tuple[str, Callable[[Lines], bytes], int, str]] = [
    (
        "repeated key: mismatch then pass",
        _raw_line(FIRST_RESULT, lambda l: _status(l, "mismatch")),
        7,
        "duplicate key 'status' in one JSON object",
    ),
    (
        "repeated key in a nested object",
        _raw_line(FIRST_RESULT, lambda l: l.replace('"mismatched": 0', '"mismatched": 17, "mismatched": 0')),
        7,
        "duplicate key 'mismatched'",
    ),
    (
        "repeated key with space before the colon",
        _raw_line(FIRST_RESULT, lambda l: l.replace('"status": "pass"', '"status" : "mismatch", "status": "pass"')),
        7,
        "duplicate key 'status'",
    ),
    (
        "repeated key hidden by a colon in a string",
        _raw_line(
            FIRST_RESULT,
            lambda l: l.replace('"status": "pass"', '"status" :"mismatch", "status": "pass"').replace(
                '"warnings": []', '"warnings": ["x\\": y"]'
            ),
        ),
        7,
        "duplicate key 'status'",
    ),
    (
        "repeated key in a run_start",
        _raw_line(
            0, lambda l: l.replace('"run_id": "synthetic-tiny-cpu"', '"run_id": "a", "run_id": "synthetic-tiny-cpu"')
        ),
        1,
        "duplicate key 'run_id'",
    ),
    (
        "repeated key in the plan's tolerances",
        _raw_line(2, lambda l: l.replace('"tolerances": {', '"tolerances": {"float32": {"atol": 1, "rtol": 1}, ')),
        3,
        "duplicate key 'float32'",
    ),
    (
        "plan names a case twice",
        _duplicate_case,
        3,
        "matrix lists case 'b1-l16-contiguous-float32-eager' twice (entries 0 and 4)",
    ),
    ("only blank lines", lambda e: b"\n\n\n", 0, "no events: the file holds only blank lines (3)"),
    ("only white space", lambda e: b"  \n\t\r\n", 0, "no events: the file holds only blank lines (2)"),
    ("CR-only line endings", lambda e: _text(e).replace(b"\n", b"\r"), 1, "lines end in a bare CR"),
    (
        "CR-only line endings, as a whole",
        lambda e: _text(e).replace(b"\n", b"\r"),
        0,
        "no events: the file uses bare CR line endings",
    ),
    (
        "CR-only line endings after a good line",
        lambda e: _text(e[:1]) + _text(e[1:]).replace(b"\n", b"\r"),
        2,
        "lines end in a bare CR",
    ),
    (
        "lone surrogate in a message",
        _raw_line(3, lambda l: l.replace('"synthetic warning', '"\\ud800 synthetic warning')),
        4,
        "message: a lone surrogate escape",
    ),
    (
        "lone surrogate in a case key",
        _raw_line(
            FIRST_RESULT, lambda l: l.replace('"case": "b1-l16-contiguous-float32-eager"', '"case": "b1\\udfff"')
        ),
        7,
        "case: a lone surrogate escape",
    ),
    (
        "lone surrogate in a key",
        _raw_line(3, lambda l: l.replace('"category"', '"cat\\ud800"')),
        4,
        "a key: a lone surrogate escape",
    ),
    (
        # A known kind with an unknown key whose value nests past the decoder's depth: the fast
        # decoder skips the key and recursed until Python's limit (a traceback).
        "object nested very deeply under an unknown key",
        _raw_line(
            FIRST_RESULT, lambda l: l.replace('{"', '{"deep": ' + '{"a": ' * 100_000 + "1" + "}" * 100_000 + ', "', 1)
        ),
        7,
        "nested too deeply",
    ),
    (
        "400-digit count",
        _set(FIRST_RESULT, "error_stats.total", HUGE),
        7,
        f"error_stats.total: Expected `int` <= {INT64_MAX}",
    ),
    ("400-digit batch", _set(2, "matrix.0.batch", HUGE), 3, "matrix.0.batch: Expected `int` <="),
    ("400-digit seq", _set(4, "seq", HUGE), 5, "seq: Expected `int` <="),
    (
        "400-digit shape",
        _set(FIRST_RESULT, "outputs.0.shape", [1, HUGE]),
        7,
        "outputs.0.shape.1: Expected `int` <=",
    ),
    (
        "1e400 in a count",
        _raw_line(FIRST_RESULT, lambda l: l.replace('"mismatched": 0', '"mismatched": 1e400')),
        7,
        "error_stats.mismatched",
    ),
    (
        "negative error",
        _set(FIRST_RESULT, "error_stats.max_abs", -1.0),
        7,
        "error_stats.max_abs: Expected `float` >= 0",
    ),
    (
        "timing beyond a billion seconds",
        _set(8, "warm.median_s", 1e300),
        9,
        "warm.median_s: Expected `float` <= 1000000000",
    ),
    (
        "cold time near 1e308",
        _set(8, "cold.seconds", 1.7e308),
        9,
        "cold.seconds: Expected `float` <=",
    ),
]


@pytest.mark.parametrize("name,build,line,fragment", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("command", ["validate", "report"])
def test_bad_value_is_one_located_line(
    tmp_path: Path, command: str, name: str, build, line: int, fragment: str
) -> None:
    log = tmp_path / "events.jsonl"
    log.write_bytes(build(complete_log()))
    args = ["validate", log] if command == "validate" else ["report", log, "--out", tmp_path / "out"]
    out = invoke(args)
    assert out.code == 1, out.output
    assert f"{log}:{line}: error: " in out.line_with(fragment)
    assert not (tmp_path / "out").exists(), "nothing written for an invalid log"


def test_fast_path_still_takes_every_line_of_a_clean_log() -> None:
    """The repeated-key check must not send clean lines to the careful path: it would be slow."""
    lines = _text(complete_log()).splitlines(keepends=True)
    from reportgen.contract import validation

    taken: list[int] = []
    original = validation._Checker.check_line
    try:
        validation._Checker.check_line = lambda self, number, raw, unterminated: (
            taken.append(number) or original(self, number, raw, unterminated)
        )  # type: ignore[method-assign]
        path = FIXTURES / "synthetic_complete.jsonl"
        reading = read_log(path)
    finally:
        validation._Checker.check_line = original  # type: ignore[method-assign]
    assert reading.valid and taken == [], f"lines that took the careful path: {taken} of {len(lines)}"


def _edge_floats(events: Lines) -> Lines:
    for event in events:
        stats = event.get("error_stats")
        if stats:  # a failing cell allowed the least there is (the atol), a passing one all of it
            allowed = 1e-5 if stats["mismatched"] else 1.7e308
            stats.update(max_abs=1.7e308, max_rel=1.7e308, diff_at_worst=1.7e308, allowed_at_worst=allowed)
        if event["kind"] == "timing" and event.get("warm"):
            event["warm"].update(samples_s=[1e9] * 5, min_s=1e9, median_s=1e9, p90_s=1e9, iqr_s=0.0)
            if event.get("cold"):  # a first call that compiled is no faster than a warm call
                event["cold"]["seconds"] = 1e9
    return events


def _edge_losses(events: Lines) -> Lines:
    for event in events:
        if event["kind"] == "train_step":
            # Within the loss tolerance, as loss_within says (validate refuses a log that contradicts itself).
            event.update(loss=1.7e308, reference_loss=1.7e308)
            for grad in event["grads"]:
                grad.update(max_abs=1.7e308, worst_ratio=1.7e308, norm_ratio=1.7e308)
    return events


def _strip(events: Lines) -> Lines:
    return [{k: v for k, v in e.items() if k not in ("schema_version", "seq", "time")} for e in events]


@pytest.mark.parametrize(
    "make,label",
    [
        (lambda: with_envelope(_edge_floats(_strip(mismatch_log()))), "b2-l16-contiguous-float32-compiled"),
        (lambda: with_envelope(_edge_losses(_strip(training_log()))), "at step 0"),
    ],
    ids=["error statistics near 1e308", "losses near 1e308"],
)
def test_values_that_validate_but_cannot_be_drawn_say_out_of_range(tmp_path: Path, make, label: str) -> None:
    log = tmp_path / "run" / "events.jsonl"
    log.parent.mkdir()
    log.write_text(dumps(make()), encoding="utf-8")
    assert invoke(["validate", log]).code == 0
    out = invoke(["report", log, "--out", tmp_path / "out"])
    assert out.code == 0, out.output
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    note = html.split("Out of range, not drawn", 1)[1].split("</span>", 1)[0]
    assert label in note
    assert "1.7e+308" in html, "the tables still give the value"
    site = invoke(["site", log, "--out", tmp_path / "site"])
    assert site.code == 0, site.output


def _site_runs(tmp_path: Path) -> Path:
    runs = tmp_path / "runs"
    for name in ("synthetic_complete", "synthetic_mismatch"):
        (runs / name).mkdir(parents=True)
        shutil.copy(FIXTURES / f"{name}.jsonl", runs / name / "events.jsonl")
    return runs


def test_one_bad_log_in_a_site_is_reported_and_the_rest_written(tmp_path: Path) -> None:
    runs = _site_runs(tmp_path)
    bad = runs / "surrogate" / "events.jsonl"
    bad.parent.mkdir()
    lines = (FIXTURES / "synthetic_complete.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    lines[0] = lines[0].replace('"synthetic-complete"', '"surrogate-\\ud800"')
    bad.write_text("".join(lines), encoding="utf-8")
    out = invoke(["site", runs, "--out", tmp_path / "site"])
    assert out.code == 1
    assert "its first line fails: run_id: a lone surrogate escape" in out.line_with(f"{bad}:1: error:")
    assert "2 runs" in out.stdout
    assert len(list((tmp_path / "site" / "runs").iterdir())) == 2


def test_a_run_that_fails_to_render_is_skipped_and_the_rest_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever goes wrong with one run's page (a bug included), the others are published."""
    from reportgen.publish import site

    real = site.render_report

    def fragile(judged, *args, **kwargs):  # type: ignore[no-untyped-def]
        if judged.run.start.run_id == "synthetic-mismatch":
            raise RuntimeError("simulated failure\nsecond line")
        return real(judged, *args, **kwargs)

    monkeypatch.setattr(site, "render_report", fragile)
    runs = _site_runs(tmp_path)
    out = invoke(["site", runs, "--out", tmp_path / "site"])
    assert out.code == 1
    assert "could not be rendered: RuntimeError: simulated failure second line" in out.line_with(
        "could not be rendered"
    )
    index = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert "synthetic-complete" in index and "synthetic-mismatch" not in index
    assert len(list((tmp_path / "site" / "runs").iterdir())) == 1


ANNOTATIONS: list[tuple[str, str, int, str]] = [
    (
        "TOML nested very deeply",
        "[b2-l16-contiguous-float32-compiled]\nexplanation = 'x'\nx = " + "[" * 100_000 + "]" * 100_000 + "\n",
        1,
        "nested too deeply",
    ),
    ("TOML lone surrogate", '[b2-l16-contiguous-float32-compiled]\nexplanation = "\\ud800"\n', 1, "not valid TOML"),
    ("not UTF-8", "[b2-l16-contiguous-float32-compiled]\nexplanation = '\udcff'\n", 1, "not UTF-8 text"),
    (
        "Markdown nested very deeply",
        "[b2-l16-contiguous-float32-compiled]\nexplanation = '''"  # within an explanation's 20,000 characters
        + ">" * 9_000
        + " deep\n"
        + "- " * 2_500
        + "x\n"
        + "[" * 5_000
        + "'''\n",
        0,
        "",
    ),
]


@pytest.mark.parametrize("name,text,code,fragment", ANNOTATIONS, ids=[a[0] for a in ANNOTATIONS])
def test_annotations_at_the_edges(tmp_path: Path, name: str, text: str, code: int, fragment: str) -> None:
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(FIXTURES / "synthetic_mismatch.jsonl", run / "events.jsonl")
    (run / "annotations.toml").write_bytes(text.encode("utf-8", "surrogateescape"))
    out = invoke(["report", run / "events.jsonl", "--out", tmp_path / "out"])
    assert out.code == code, out.output
    if fragment:
        assert out.line_with(fragment).startswith(f"{run / 'annotations.toml'}: ")
    else:
        assert (tmp_path / "out" / "report.html").is_file()


def test_json_output_of_validate_survives_a_surrogate(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    log.write_bytes(CASES[11][1](complete_log()))
    out = invoke(["validate", "--json", log])
    assert out.code == 1
    assert json.loads(out.stdout)[0]["valid"] is False


def _nan_in_reference(events: Lines) -> Lines:
    """What the collector writes (schema 1.2) for a NaN in the reference at the worst element."""
    for event in events:
        stats = event.get("error_stats")
        if stats and event.get("case") == "b2-l16-contiguous-float32-compiled":
            stats.update(max_abs=None, max_rel=None, diff_at_worst=None, allowed_at_worst=None)
    return events


def test_a_null_allowance_at_the_worst_element_validates_and_renders(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    log.write_text(dumps(with_envelope(_nan_in_reference(_strip(mismatch_log())))), encoding="utf-8")
    assert invoke(["validate", log]).code == 0
    out = invoke(["report", log, "--out", tmp_path / "out"])
    assert out.code == 0, out.output
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert "allowed not finite" in html
