"""`reportgen validate` on generation and localisation lines whose fields contradict each
other, or the request and the result they belong to. Each log here is a synthetic one
(tests/logbuilder) edited by hand, and says so in its run_start."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Callable

import pytest
from click.testing import CliRunner

from reportgen.cli import main
from tests.logbuilder import dumps, generation_log, localized_log

Lines = list[dict]
SHORT, LONG = "b1-l96-contiguous-float32-eager", "b1-l240-contiguous-float32-eager"
DIVERGED = "b1-l240-contiguous-float32-compiled"  # generation_log's mismatching cell


def _first(events: Lines, kind: str, case: str | None = None) -> dict:
    return next(e for e in events if e["kind"] == kind and (case is None or e.get("case") == case))


def _request(events: Lines, length: int) -> dict:
    return next(e for e in events if e["kind"] == "request" and e["length"] == length)


def _line_of(events: Lines, event: dict) -> int:
    return next(i for i, e in enumerate(events) if e is event) + 1


def _renumbered(events: Lines) -> Lines:
    for seq, event in enumerate(events):
        event["seq"] = seq
    return events


def _validate(tmp_path: Path, events: Lines) -> tuple[int, list[str], Path]:
    """The exit code and the error lines of `reportgen validate`."""
    path = tmp_path / "events.jsonl"
    path.write_text(dumps(events), encoding="utf-8")
    result = CliRunner().invoke(main, ["validate", str(path)])
    return result.exit_code, [line for line in result.output.splitlines() if ": error: " in line], path


def test_the_logs_these_tests_edit_are_valid(tmp_path: Path) -> None:
    for build in (generation_log, localized_log):
        code, errors, _ = _validate(tmp_path, build())
        assert code == 0 and not errors, errors


def _timed_mismatch(events: Lines) -> dict:
    """The mismatching cell's generation given the timings of the passing cell beside it."""
    diverged = _first(events, "generation", DIVERGED)
    diverged["timing"] = copy.deepcopy(_first(events, "generation", LONG)["timing"])
    return diverged


def test_timings_on_a_cell_that_did_not_pass_are_an_error(tmp_path: Path) -> None:
    """Before: a generation event carrying timings for a cell whose case_result says mismatch
    validated, and the page showed tokens/s of a failing cell. The collector times a passing
    cell only (collector/run/generation_cells.py): now it is an error at the generation line."""
    events = generation_log()
    diverged = _timed_mismatch(events)
    code, errors, path = _validate(tmp_path, events)
    result = _first(events, "case_result", DIVERGED)
    assert code == 1
    assert errors == [
        f"{path}:{_line_of(events, diverged)}: error: generation {DIVERGED!r}: timing is recorded, but its "
        f"case_result on line {_line_of(events, result)} says status mismatch: the collector times a passing "
        "cell only; the log contradicts itself"
    ]


def test_timings_before_a_result_that_did_not_pass_are_an_error(tmp_path: Path) -> None:
    """Before: the same timings, with the result moved after its generation line, validated.
    Now the result's line names the generation line that timed it."""
    events = generation_log()
    diverged = _timed_mismatch(events)
    result = _first(events, "case_result", DIVERGED)
    events.remove(result)
    events.insert(events.index(diverged) + 1, result)
    _renumbered(events)
    code, errors, path = _validate(tmp_path, events)
    assert code == 1
    assert errors == [
        f"{path}:{_line_of(events, result)}: error: case_result {DIVERGED!r}: status mismatch, but the generation "
        f"event on line {_line_of(events, diverged)} carries timings, which the collector measures for a passing "
        "cell only; the log contradicts itself"
    ]


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (
            lambda events: _first(events, "generation", SHORT).update(bucket=512),
            "bucket is 512, but the request that serves this cell (line {request}) padded it to bucket 128",
        ),
        (
            lambda events: _first(events, "generation", SHORT).update(truncated=True),
            "truncated is true, but the request that serves this cell (line {request}) was padded",
        ),
        (
            lambda events: _first(events, "generation", SHORT).update(request_length=99),
            "request_length is 99, but the plan's cell is a request of 96 tokens",
        ),
    ],
    ids=["bucket", "truncated", "request-length"],
)
def test_a_generation_that_contradicts_its_request_or_its_cell_is_an_error(
    tmp_path: Path, edit: Callable[[Lines], None], said: str
) -> None:
    """Before: a generation line saying bucket 512 where its request was padded to 128, saying
    truncated of a request that was padded, or a request length of 99 for a 96-token cell
    validated, and the page showed them. The collector writes the cell's length and the
    bucket and truncation its request's routing decided: now each is an error at the line."""
    events = generation_log()
    edit(events)
    code, errors, path = _validate(tmp_path, events)
    line = _line_of(events, _first(events, "generation", SHORT))
    request = _line_of(events, next(e for e in events if e["kind"] == "request" and SHORT in e["cases"]))
    assert code == 1
    said = said.format(request=request)
    assert errors == [f"{path}:{line}: error: generation {SHORT!r}: {said}; the log contradicts itself"]


def test_a_truncated_request_and_its_generation_are_valid(tmp_path: Path) -> None:
    """A request longer than the largest bucket, truncated to it by the plan's policy: the
    generation says that bucket and truncated (what the collector writes), and validates."""
    events = generation_log()
    request = _request(events, 240)
    request.update(bucket=128, outcome="truncated", reason="240 tokens are above the largest bucket 128: truncated")
    for case in request["cases"]:
        _first(events, "generation", case).update(bucket=128, truncated=True)
    code, errors, _ = _validate(tmp_path, events)
    assert code == 0 and not errors, errors


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"outcome": "truncated"}, "outcome truncated for length 96 and bucket 128"),
        ({"bucket": 64}, "outcome padded for length 96 and bucket 64"),
        ({"bucket": None}, "outcome padded with bucket null"),
    ],
    ids=["truncated-to-a-longer-bucket", "padded-to-a-shorter-bucket", "padded-to-none"],
)
def test_a_request_whose_outcome_its_length_and_bucket_contradict_is_an_error(
    tmp_path: Path, changes: dict, said: str
) -> None:
    """Before: a request of 96 tokens "truncated" to a bucket of 128 (or "padded" to 64, or to
    no bucket) validated. A request is padded to a bucket at least its length, truncated to a
    shorter one, and has none when refused (collector/generation.py, route): now the line is
    refused, saying which."""
    events = generation_log()
    request = _request(events, 96)
    request.update(changes)
    code, errors, path = _validate(tmp_path, events)
    assert code == 1
    assert errors[0].startswith(f"{path}:{_line_of(events, request)}: error: request: (event): {said}: "), errors


def test_a_cell_named_by_two_requests_is_an_error(tmp_path: Path) -> None:
    """Before: a second request naming a cell another request serves validated, and which
    bucket served the cell was anyone's guess. The collector routes each request once: now the
    second is an error."""
    events = generation_log()
    first = _request(events, 96)
    second = dict(first, length=100, reason="100 tokens padded to the 128 bucket")
    events.insert(events.index(first) + 1, second)
    _renumbered(events)
    code, errors, path = _validate(tmp_path, events)
    assert code == 1
    assert errors == [
        f"{path}:{_line_of(events, second)}: error: request: cases names {SHORT!r}, which the request on line "
        f"{_line_of(events, first)} serves already: a cell is served by one request; the log contradicts itself"
    ]


@pytest.mark.parametrize(
    ("view", "changes", "said"),
    [
        (
            "local",
            {"diff_at_worst": 1e-2, "max_abs": 1e-2},
            "module 'blocks.3' local counts no element outside the tolerance, but its worst element's "
            "|diff| 0.01 exceeds its allowance 1e-05",
        ),
        (
            "accumulated",
            {"mismatched": 17},
            "module 'blocks.3' accumulated counts 17 elements outside the tolerance of 16 judged",
        ),
    ],
    ids=["matching-beyond-allowance", "more-mismatched-than-judged"],
)
def test_a_localised_module_whose_figures_contradict_each_other_is_an_error(
    tmp_path: Path, view: str, changes: dict, said: str
) -> None:
    """Before: a localised module counting no element outside the tolerance while its worst
    element's |diff| was beyond its allowance validated (the same figures in a case_result were
    already refused), and the page sent the reader to another module as the error's source.
    Now a module's figures are held to a case_result's rules."""
    events = localized_log()
    localization = _first(events, "localization")
    module = next(m for m in localization["modules"] if m["name"] == "blocks.3")
    module[view].update(changes)
    code, errors, path = _validate(tmp_path, events)
    assert code == 1
    assert errors == [
        f"{path}:{_line_of(events, localization)}: error: localization {localization['case']!r}: {said}; "
        "the log contradicts itself"
    ]
