"""The checks that let a block of lines be read in one call hold for any writer's key order.

The reader counts the joins between lines (``}`` newline ``{``) in the block cut down to its
structural bytes (spaces, quotes and text dropped): a log whose lines start with another key
is read in blocks all the same, and reads as the careful path reads it; so does a block whose
lines are padded, or one where a comma the cut-down keeps is all that shows an event spanning
two lines.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reportgen.contract import validation
from reportgen.contract.validation import _increasing, read_log
from tests.logbuilder import dumps, large_log
from tests.test_fast_path_agrees import _summary, careful_only


def _kind_first(line: bytes) -> bytes:
    event = json.loads(line)
    return json.dumps({"kind": event.pop("kind"), **event}).encode()


@pytest.fixture(scope="module")
def reordered() -> list[bytes]:
    lines = dumps(large_log(600, mismatch_every=4)).encode("utf-8").split(b"\n")
    return [_kind_first(line) if line else line for line in lines]


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    decoded: list[int] = []
    block = validation._CELL_BLOCK

    def decode(raw: Any) -> Any:
        structs = block(raw)
        decoded.append(len(structs))
        return structs

    monkeypatch.setattr(validation, "_CELL_BLOCK", decode)
    return decoded


def test_lines_that_start_with_another_key_are_read_in_blocks(reordered: list[bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"\n".join(reordered))
    careful = careful_only(monkeypatch, path)
    decoded = _counting(monkeypatch)
    fast = read_log(path)
    assert fast.valid and _summary(fast) == _summary(careful)
    assert sum(decoded) > 0.9 * len(reordered)  # nearly every line in a block call


@pytest.mark.parametrize("joined", [b"", b" "])
def test_two_events_on_one_line_are_found_with_either_key_order(joined: bytes, reordered: list[bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = dumps(large_log(600, mismatch_every=4)).encode("utf-8").split(b"\n")
    for source in (lines, reordered):
        text = list(source)
        at = 1500
        text[at] = text[at] + joined + text.pop(at + 1)
        path = tmp_path / "events.jsonl"
        path.write_bytes(b"\n".join(text))
        fast, careful = read_log(path), careful_only(monkeypatch, path)
        assert _summary(fast) == _summary(careful)
        assert [p.line for p in fast.errors] == [at + 1]


@pytest.mark.parametrize(
    ("seqs", "increasing"),
    [([7], True), ([1, 2, 3], True), ([1, 3, 4], True), ([1, 1, 2], False), ([3, 2, 1], False),
     ([1, 3, 2, 4], False), ([0, 1, 3, 2, 4], False), ([2, 2], False), ([5, 4, 6, 7], False)],
)
def test_a_block_s_seqs_rise_strictly_or_it_takes_the_line_checks(seqs: list[int], increasing: bool) -> None:
    """The consecutive-run shortcut agrees with the pairwise comparison, including runs whose
    ends are as far apart as a consecutive run's but whose middle is out of order."""
    assert _increasing(seqs) is increasing
    assert increasing == all(a < b for a, b in zip(seqs, seqs[1:]))


def _split_between_outputs(lines: list[bytes], at: int) -> None:
    """A case_result with two outputs, cut after the first output's ``},`` so the event spans
    two lines; the next event moves onto its second line, so the block still holds as many
    objects as newlines, and the cut's newline stands after a } and before a {."""
    event = json.loads(lines[at])
    event["outputs"] = [event["outputs"][0], {**event["outputs"][0], "name": "second"}]
    text = json.dumps(event, sort_keys=True).encode()
    cut = text.index(b'}, {"dtype"') + 2
    lines[at], lines[at + 1] = text[:cut], text[cut + 1 :] + b" " + lines[at + 1]


def _string_line(lines: list[bytes], at: int) -> None:
    """A line holding a string that looks like braces: cut down, the block's joins and count
    of values agree with its newlines, and only the reading of values as objects refuses it."""
    lines.insert(at + 1, b'"{}"')


def _padded(lines: list[bytes], at: int) -> None:
    lines[at] = b" \t" + lines[at] + b"  "


def _crlf(lines: list[bytes], at: int) -> None:
    lines[at] = lines[at] + b"\r"


@pytest.mark.parametrize(("change", "valid"), [(_split_between_outputs, False), (_string_line, False), (_padded, True), (_crlf, True)])
def test_a_block_s_line_joins_read_as_the_careful_path_reads_them(change: Any, valid: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An event cut between two objects of an array is not one object per line, though every
    newline has a } before it and a { after it once the comma is overlooked; spaces and tabs
    around an event, or a CR before its newline, leave it one object per line."""
    lines = dumps(large_log(600, mismatch_every=4)).encode("utf-8").split(b"\n")
    at = next(i for i in range(1500, len(lines)) if b'"kind": "case_result"' in lines[i])
    change(lines, at)
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"\n".join(lines))
    careful = careful_only(monkeypatch, path)
    decoded = _counting(monkeypatch)
    fast = read_log(path)
    assert _summary(fast) == _summary(careful)
    assert fast.valid is valid
    assert sum(decoded) > 0.9 * len(lines)  # the rest of the log still read in blocks
