"""The fast check of a line (its msgspec mirror and the duplicate-key count) accepts nothing
the careful path refuses.

A hostile line is put inside a log of many cells and the log is read twice: as reportgen reads
it, and with the mirror check turned off, so that each line takes the careful per-line path
that explains. Both must give the same problems at the same lines and keep the same events.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reportgen.contract import validation
from reportgen.contract.validation import LogReading, read_log
from tests.logbuilder import dumps, large_log
from tests.mutations import mutate

DEEP = 150  # a line number among the per-cell results


def _refuse(raw: Any) -> Any:
    raise msgspec.DecodeError("fast checks off")


def careful_only(monkeypatch: pytest.MonkeyPatch, path: Path) -> LogReading:
    """Read ``path`` with the mirror check refusing: every line goes through ``_Checker.check_line``."""
    with monkeypatch.context() as patch:
        patch.setattr(validation, "_LINE", _refuse)
        return read_log(path)


def _case_result_at(lines: list[bytes], at: int) -> int:
    """The index of the first case_result line at or after line number ``at``."""
    return next(i for i in range(at - 1, len(lines)) if b'"kind": "case_result"' in lines[i])


def _replace(old: bytes, new: bytes) -> Callable[[list[bytes], int], None]:
    def mutate(lines: list[bytes], index: int) -> None:
        assert old in lines[index], old
        lines[index] = lines[index].replace(old, new, 1)

    return mutate


def _seq_of_previous(lines: list[bytes], index: int) -> None:
    previous = msgspec.json.decode(lines[index - 1])["seq"]
    event = msgspec.json.decode(lines[index])
    lines[index] = lines[index].replace(b'"seq": %d' % event["seq"], b'"seq": %d' % previous, 1)


def _seq_of_an_early_line(lines: list[bytes], index: int) -> None:
    early = json.loads(lines[_case_result_at(lines, 20)])["seq"]
    current = json.loads(lines[index])["seq"]
    lines[index] = lines[index].replace(b'"seq": %d' % current, b'"seq": %d' % early, 1)


def _two_objects_on_one_line(lines: list[bytes], index: int) -> None:
    # The next line is joined onto this one: one line with two events, the line count one less.
    lines[index] = lines[index] + b" " + lines.pop(index + 1)


def _object_across_two_lines(lines: list[bytes], index: int) -> None:
    lines[index : index + 1] = lines[index].split(b', "status"', 1)
    lines[index + 1] = b'"status"' + lines[index + 1]


def _second_result(lines: list[bytes], index: int) -> None:
    earlier = json.loads(lines[_case_result_at(lines, 10)])["case"]
    lines[index] = json.dumps({**json.loads(lines[index]), "case": earlier}).encode()


def _both(*mutations: Callable[[list[bytes], int], None]) -> Callable[[list[bytes], int], None]:
    def mutate(lines: list[bytes], index: int) -> None:
        for one in mutations:
            one(lines, index)

    return mutate


ESCAPED_COLON = _replace(b'"worst_output": "hidden"', b'"worst_output": "hid\\u003aden"')
REPEATED_STATUS = _replace(b'"status": "pass"', b'"status": "mismatch", "status": "pass"')


HOSTILE: dict[str, Callable[[list[bytes], int], None]] = {
    "repeated key": REPEATED_STATUS,
    # One colon more in the raw line (the repeated key), one more in the encoding (the escape):
    "repeated key beside an escaped colon": _both(REPEATED_STATUS, ESCAPED_COLON),
    "escaped colon, no repeated key (valid)": ESCAPED_COLON,
    "escaped colon and a repeated key": _replace(
        b'"worst_output": "hidden"', b'"worst_output": "hid\\u003aden", "worst_output": "hidden"'
    ),
    "other escapes only (valid)": _replace(b'"worst_output": "hidden"', b'"worst_output": "hid\\"d\\\\en\\u00e9"'),
    "unknown field": _replace(b'"status": "pass"', b'"status": "pass", "bonus": 1'),
    "NaN literal": _replace(b'"max_abs": 2e-07', b'"max_abs": NaN'),
    "lone surrogate": _replace(b'"worst_output": "hidden"', b'"worst_output": "\\ud800"'),
    "integer as a string (refused: the schema says integer)": _replace(b'"mismatched": 0', b'"mismatched": "0"'),
    "unknown status": _replace(b'"status": "pass"', b'"status": "fine"'),
    "repeated seq": _seq_of_previous,
    "seq of an early line": _seq_of_an_early_line,
    "case not in the plan": _replace(b'"case": "', b'"case": "unplanned-'),
    "second case_result for a cell": _second_result,
    "two events on one line": _two_objects_on_one_line,
    "one event across two lines": _object_across_two_lines,
    "newer minor version (valid, with a warning)": _replace(b'"schema_version": "1.0"', b'"schema_version": "1.9"'),
    "another major version": _replace(b'"schema_version": "1.0"', b'"schema_version": "2.0"'),
}


@pytest.fixture(scope="module")
def long_lines() -> list[bytes]:
    lines = dumps(large_log(100, mismatch_every=5)).encode("utf-8").split(b"\n")
    assert len(lines) > DEEP + 100
    return lines


def _summary(reading: LogReading) -> tuple[Any, ...]:
    problems = [(p.line, p.severity, p.message) for p in reading.problems]
    return problems, [(r.line, r.kind, r.case) for r in reading.records], reading.refused, reading.truncated


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_line_deep_in_a_long_log_reads_as_the_careful_path_reads_it(
    name: str, long_lines: list[bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = list(long_lines)
    HOSTILE[name](lines, _case_result_at(lines, DEEP))
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"\n".join(lines))
    fast, careful = read_log(path), careful_only(monkeypatch, path)
    assert _summary(fast) == _summary(careful)
    bad = [p.line for p in fast.errors]
    if "(valid" in name:
        assert fast.valid, fast.problems[:3]
    else:
        assert bad and all(DEEP <= line <= DEEP + 8 for line in bad), fast.problems[:5]


def test_an_untouched_long_log_reads_the_same_both_ways(
    long_lines: list[bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"\n".join(long_lines))
    fast = read_log(path)
    assert fast.valid and _summary(fast) == _summary(careful_only(monkeypatch, path))


@st.composite
def mutated_long_log_lines(draw: st.DrawFn, lines: list[bytes]) -> tuple[int, bytes]:
    """One per-cell line of the long log, near DEEP, with one change somewhere in its fields
    (tests/mutations.py): its index and its new bytes."""
    index = draw(st.integers(DEEP - 1, DEEP + 6))
    return index, mutate(draw, json.loads(lines[index])).encode("utf-8", "surrogatepass")


# Slow (half a minute on 2 cores) and only compares two ways of reading one log: out of the fast subset.
@pytest.mark.slow
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_any_change_to_a_line_deep_in_a_long_log_reads_as_the_careful_path_reads_it(
    data: st.DataObject, long_lines: list[bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = list(long_lines)
    index, line = data.draw(mutated_long_log_lines(lines))
    lines[index] = line
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"\n".join(lines))
    assert _summary(read_log(path)) == _summary(careful_only(monkeypatch, path))
