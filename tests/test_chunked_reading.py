"""A log is read a chunk at a time, and a local log's bytes are not kept once checked.

Reading with chunks far smaller than a line (so that every line is carried across chunks)
must give what one chunk gives: the same problems at the same lines, the same
events, and every event's bytes read again from the file as they were checked. A log that
changes under a report stops it with a clear message instead of showing other bytes.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reportgen.cli import main
from reportgen.contract import validation
from reportgen.contract.validation import read_log
from reportgen.storage.local import LogChanged, Reread
from reportgen.model.runmodel import read_run
from reportgen.render.report import ReportInputError, build_report
from tests.conftest import FIXTURES
from tests.logbuilder import dumps, large_log
from tests.test_fast_path_agrees import HOSTILE, _case_result_at, _summary

SMALL_CHUNKS = (7, 300, 4096)  # smaller than a key, than a line, than a few lines


def _read(path: Path, chunk: int, monkeypatch: pytest.MonkeyPatch, **kwargs: Any) -> Any:
    """Read in chunks of ``chunk`` bytes: into one reused buffer (a local log), and again as
    a log in object storage is read (each chunk kept); both must agree, and are returned as one."""
    with monkeypatch.context() as patch:
        patch.setattr(validation, "CHUNK_BYTES", chunk)
        local = read_log(path, **kwargs)
        patch.setattr(validation, "reread_of", lambda path, stream: None)
        kept = read_log(path, **kwargs)
    assert _summary(kept) == _summary(local)
    _raw_lines_match(kept, path, kwargs.get("max_bytes"))
    return local


def _raw_lines_match(reading: Any, path: Path, limit: int | None = None) -> None:
    lines = path.read_bytes()[:limit].split(b"\n")
    for record in reading.records:
        if record.parsed is None:
            assert record.raw == lines[record.line - 1], record.line


@pytest.fixture(scope="module")
def long_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("chunks") / "events.jsonl"
    path.write_text(dumps(large_log(400, mismatch_every=3)), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def short_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Forty cells (about 30 KB): every line is still carried across many chunks of each size,
    at a tenth of the long log's cost in 7-byte reads."""
    path = tmp_path_factory.mktemp("chunks") / "events.jsonl"
    path.write_text(dumps(large_log(40, mismatch_every=3)), encoding="utf-8")
    return path


@pytest.mark.parametrize("chunk", SMALL_CHUNKS)
@pytest.mark.parametrize("log", sorted(FIXTURES.glob("*.jsonl")), ids=lambda p: p.name)
def test_every_fixture_reads_the_same_in_small_chunks(log: Path, chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    whole = read_log(log)
    small = _read(log, chunk, monkeypatch)
    assert _summary(small) == _summary(whole)
    _raw_lines_match(small, log)


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_line_reads_the_same_in_small_chunks(
    name: str, short_log: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = _mutated_near(short_log.read_bytes().split(b"\n"), name, 80)
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"\n".join(lines))
    whole = read_log(path)
    for chunk in SMALL_CHUNKS:
        small = _read(path, chunk, monkeypatch)
        assert _summary(small) == _summary(whole), chunk
        _raw_lines_match(small, path)


def _mutated_near(lines: list[bytes], name: str, at: int) -> list[bytes]:
    """The first case_result at or after line ``at`` that the change applies to, changed
    (some changes need a passing cell's line)."""
    index = _case_result_at(lines, at)
    while True:
        changed = list(lines)
        try:
            HOSTILE[name](changed, index)
        except AssertionError:
            index = _case_result_at(lines, index + 2)
            continue
        return changed


# Slow (half a minute on 2 cores) and only compares two ways of reading one log: out of the fast subset.
@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    chunk=st.integers(min_value=1, max_value=6000),
    name=st.sampled_from(sorted(HOSTILE)),
    at=st.integers(min_value=5, max_value=1200),
    cut=st.integers(min_value=0, max_value=400),
)
def test_any_chunk_size_reads_as_one_chunk(
    chunk: int, name: str, at: int, cut: int, long_log: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a hostile line anywhere, and the file cut short anywhere (a truncated last line)."""
    lines = _mutated_near(long_log.read_bytes().split(b"\n"), name, at)
    data = b"\n".join(lines)
    path = tmp_path / "events.jsonl"
    path.write_bytes(data[: len(data) - cut])
    assert _summary(_read(path, chunk, monkeypatch)) == _summary(read_log(path))


@pytest.mark.parametrize("chunk", SMALL_CHUNKS)
def test_lines_longer_than_the_limit_are_skipped_whether_ended_or_last(
    chunk: int, long_log: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = long_log.read_bytes().split(b"\n")[:60]
    lines[30] = b'{"kind": "' + b"x" * 5000 + b'"}'
    lines.append(b"y" * 5000)  # the last line: too long and unterminated
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"\n".join(lines))
    monkeypatch.setattr(validation, "MAX_LINE_BYTES", 2000)
    whole = read_log(path)
    small = _read(path, chunk, monkeypatch)
    assert _summary(small) == _summary(whole)
    too_long = [p.line for p in small.errors if "longer than 2000 bytes" in p.message]
    assert {31, len(lines)} <= set(too_long), small.problems  # (the long plan line is over the lowered limit too)


@pytest.mark.parametrize("chunk", SMALL_CHUNKS)
def test_a_size_limit_inside_a_chunk_reads_as_with_one_chunk(
    chunk: int, long_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    size = long_log.stat().st_size
    for limit in (size // 3, size // 3 + 1, size - 1):
        with monkeypatch.context() as patch:
            patch.setattr(
                validation, "open_log", lambda path, max_bytes: open(path, "rb")
            )  # past the size check: as if it grew
            whole = read_log(long_log, max_bytes=limit)
            small = _read(long_log, chunk, monkeypatch, max_bytes=limit)
        assert _summary(small) == _summary(whole), limit
        assert any("grew past the limit" in p.message for p in small.errors)


def test_a_local_log_keeps_no_bytes_once_checked(long_log: Path) -> None:
    reading, builder = read_run(long_log)
    run = builder.build(reading)
    cells = [r for r in reading.records if r.kind in ("case_result", "timing")]
    assert cells and all(type(r.data) is Reread for r in cells), "nothing kept before an event is asked for"
    failed = next(c for c in run.cells if c.status == "mismatch")
    assert failed.result is not None and failed.result.status == "mismatch"
    assert [r.line for r in cells if r.parsed is not None] == [failed.result_line], (
        "only that cell's result was read again"
    )


def _judged_then_changed(path: Path, change: Any) -> Any:
    reading, builder = read_run(path)
    run = builder.build(reading)
    change(path)
    return run


def _rewrite_one_byte(path: Path) -> None:
    before = path.stat()
    data = bytearray(path.read_bytes())
    at = data.index(b'"status": "mismatch"', len(data) // 2)
    data[at + 11 : at + 19] = b"passxxxx"  # same length, same line and colon counts
    path.write_bytes(bytes(data))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))  # a second later


def _truncate(path: Path) -> None:
    with open(path, "r+b") as handle:
        handle.truncate(path.stat().st_size // 4)


def _replace(path: Path) -> None:
    other = path.with_name("other.jsonl")
    other.write_bytes(path.read_bytes())
    os.replace(other, path)


@pytest.mark.parametrize(
    "change", [_truncate, _replace, _rewrite_one_byte], ids=["cut short", "replaced", "rewritten in place"]
)
def test_a_log_changed_while_its_report_is_built_stops_the_report(change: Any, long_log: Path, tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(long_log.read_bytes())
    run = _judged_then_changed(path, change)
    late = [c for c in run.cells if c.status == "mismatch"][-1]
    with pytest.raises(LogChanged, match="build the report again"):
        late.result


def test_a_report_on_a_log_that_changes_under_it_says_so_and_writes_nothing(
    long_log: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(long_log.read_bytes())
    real = Reread.read

    def cut_then_read(self: Any, offset: int, length: int) -> bytes:
        _truncate(path)
        return real(self, offset, length)

    monkeypatch.setattr(Reread, "read", cut_then_read)
    with pytest.raises(ReportInputError, match="while its report was built; build the report again"):
        build_report(path, tmp_path / "out")
    result = CliRunner().invoke(main, ["report", str(path), "--out", str(tmp_path / "cli")])
    assert result.exit_code not in (0, 2) and "Traceback" not in result.output
    assert "build the report again" in result.output
    assert not (tmp_path / "cli" / "report.html").exists()


def test_a_log_appended_to_while_its_report_is_built_reads_as_checked(long_log: Path, tmp_path: Path) -> None:
    """A run still being logged: lines added after the check leave the checked ones as they were."""
    path = tmp_path / "events.jsonl"
    path.write_bytes(long_log.read_bytes())

    def append(p: Path) -> None:
        with open(p, "ab") as handle:
            handle.write(b'{"more": 1}\n')

    run = _judged_then_changed(path, append)
    changed = [c for c in run.cells if c.status == "mismatch"][-1]
    assert changed.result is not None and changed.result.status == "mismatch"
