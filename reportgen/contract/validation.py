"""Read a JSON-lines run log defensively and check it against the event contract.

A log is untrusted input: it may be truncated by a crash, hand-edited, written by somebody
else's collector or by a newer version of ours. Reading never raises for bad content; every
problem becomes a located ``Problem`` and the events that did validate are kept, so a log that
stops early is still usable up to its last good line.
"""

from __future__ import annotations

import contextlib
import gc
import io
import json
import os
import stat
from bisect import bisect_left, bisect_right
from itertools import accumulate, compress, repeat
from operator import attrgetter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, BinaryIO, Callable, Iterator, Literal, Union

import msgspec
from pydantic import Field, TypeAdapter, ValidationError

from reportgen.contract.events import (
    CASE_KINDS,
    EVENT_MODELS,
    RESULT_KINDS,
    SCHEMA_MAJOR,
    SCHEMA_MINOR,
    SCHEMA_VERSION,
    Envelope,
    Plan,
    RunEnd,
)
from reportgen.contract.linecheck import KEY_MARK, cell_decoder, encode, fill_defaults, plan_decoder
from reportgen.storage.local import DEFAULT_MAX_LOG_BYTES, NotReadable, describe_size, open_regular

# Versions of this major that the current models read as they are (a minor bump only adds
# optional fields): such lines take the fast path; others get the careful per-line check.
READABLE_VERSIONS = frozenset(f"{SCHEMA_MAJOR}.{minor}" for minor in range(SCHEMA_MINOR + 1))

MAX_LINE_BYTES = 8 * 1024 * 1024
UTF8_BOM = b"\xef\xbb\xbf"

Severity = Literal["error", "warning"]
# Per-cell kinds: msgspec Struct mirrors of the models (linecheck), one line or a block of
# lines at a time. The other kinds (a few lines a log): the models themselves.
_CELL_LINE = cell_decoder(READABLE_VERSIONS)
_CELL_BLOCK = cell_decoder(READABLE_VERSIONS, lines=True)
_MODEL_LINE = TypeAdapter(
    Annotated[Union[tuple(model for kind, model in EVENT_MODELS.items() if kind not in CASE_KINDS)], Field(discriminator="kind")]  # type: ignore[misc]
).validator.validate_json
# The plan (one line, but tens of thousands of cells in a long matrix): its mirror first.
_PLAN_LINE = plan_decoder(READABLE_VERSIONS)
_FAST_ERRORS = (msgspec.ValidationError, msgspec.DecodeError, UnicodeDecodeError)
# A colon written as the escape \u003a would hide a repeated key from the key count
# (linecheck.same_keys): bytes holding the prefix \u003 take the per-line checks.
_COUNT_UNSAFE = b"\\u003"
_ESCAPE = b"\\"  # looked for first: most blocks hold no escape at all
# A block is cut down to these bytes before its lines, key marks, escapes and line joins are
# counted (see _read_whole_lines and _read_block): every byte JSON gives a structural meaning
# except the quote, and the line breaks and backslash.
_MARKS = b"\n\r:\\{}[],"
_NOT_MARKS = bytes(sorted(set(range(256)) - set(_MARKS)))
# In a block's halves (which have no cut-down bytes, see _joined): each newline stands between
# } and {, counted first with the envelope's first key as the collector writes it (a longer
# needle is found in a fraction of the time), else as }\n{.
_LINE_JOIN = b'}\n{"schema_version": "'
BLOCK_BYTES = 1 << 16  # 64 KiB: a block and the Structs made from it stay in the CPU cache while it is checked
CHUNK_BYTES = 8 * BLOCK_BYTES  # read at a time into one buffer (a local log's bytes are not kept once checked)
SMALL_BLOCK_LINES = 16  # a block that fails is halved down to this, then checked line by line
_PLUS_ONE = (1).__add__
_KIND, _CASE, _SEQ = attrgetter("kind"), attrgetter("case"), attrgetter("seq")
_RESULT = "case_result"


@dataclass(frozen=True)
class Problem:
    """One located finding; line 0 means the file as a whole."""

    file: str
    line: int
    severity: Severity
    message: str

    def format(self) -> str:
        return f"{self.file}:{self.line}: {self.severity}: {self.message}"


class LogChanged(NotReadable):
    """A local log's lines, read again to build an event, are not the bytes that were checked:
    the file was replaced, cut short or rewritten while its report was being built."""


class Reread:
    """Where a local log's checked lines are read again when an event is built from them.

    A long log is read a chunk at a time and its bytes are not kept: the few events a report
    shows in full are read again from the file. It must be the same file (device and inode),
    not shorter, and not rewritten in place (the same size with another modification time);
    a log still being appended to is read again as it was. The block read again must hold the
    lines and key marks counted when it was checked. Otherwise LogChanged says so.
    """

    __slots__ = ("path", "ident", "size", "mtime_ns")

    def __init__(self, path: str | Path, st: os.stat_result) -> None:
        self.path, self.ident, self.size, self.mtime_ns = path, (st.st_dev, st.st_ino), st.st_size, st.st_mtime_ns

    def read(self, offset: int, length: int) -> bytes:
        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
            try:
                st = os.fstat(fd)
                if (st.st_dev, st.st_ino) != self.ident or not stat.S_ISREG(st.st_mode):
                    raise LogChanged(f"{self.path}: replaced by another file while its report was built; build the report again")
                if st.st_size < self.size or (st.st_size == self.size and st.st_mtime_ns != self.mtime_ns):
                    raise LogChanged(f"{self.path}: cut short or rewritten while its report was built; build the report again")
                data = os.pread(fd, length, offset)
            finally:
                os.close(fd)
        except OSError as exc:
            raise LogChanged(f"{self.path}: cannot be read again while its report is built ({exc.strerror or exc}); build the report again") from None
        return data


class LineBlock:
    """Whole lines of the log's bytes, ``data[begin:stop]``: a line's bytes are cut out when
    asked for (the line offsets of a block are worked out on the first ask). With ``source``
    (a local log), ``data`` is not kept: [begin:stop] are offsets in the file, read again on
    the first ask and held to the ``lines`` and ``marks`` (newlines, colons) counted when checked."""

    __slots__ = ("data", "begin", "stop", "_starts", "source", "lines", "marks")

    def __init__(self, data: bytes | None, begin: int, stop: int, source: Reread | None = None, lines: int = 0, marks: int = 0) -> None:
        self.data, self.begin, self.stop = data, begin, stop
        self._starts: list[int] | None = None
        self.source, self.lines, self.marks = source, lines, marks

    def line(self, index: int) -> bytes:
        if self._starts is None:
            if self.data is None:
                self._read_again()
            self._starts = _line_starts(self.data, self.begin, self.stop)  # type: ignore[arg-type]
        return self.data[self._starts[index]:self._starts[index + 1] - 1]  # type: ignore[index]

    def _read_again(self) -> None:
        data = self.source.read(self.begin, self.stop - self.begin)  # type: ignore[union-attr]
        if len(data) != self.stop - self.begin or not data.endswith(b"\n") or data.count(b"\n") != self.lines or data.count(KEY_MARK) != self.marks:
            raise LogChanged(f"{self.source.path}: changed while its report was built (the bytes at {self.begin}-{self.stop} differ from those checked); build the report again")  # type: ignore[union-attr]
        self.data, self.begin, self.stop = data, 0, len(data)


def _line_starts(data: bytes, begin: int, stop: int) -> list[int]:
    """Where each line of ``data[begin:stop]`` (whole lines) starts, and ``stop``."""
    return list(accumulate(map(_PLUS_ONE, map(len, data[begin:stop - 1].split(b"\n"))), initial=begin))


class LoggedEvent(msgspec.Struct, gc=False):
    """One accepted line: where it is, what it is, and its event, built on first use.

    A per-cell event that validated as it stands keeps only where its bytes are until
    something asks for the event: a long log's report shows a few hundred cells in full, so
    most of its events are never built as objects (nor, for a local log, read again: see
    Reread). Made only when asked for (see EventLines).
    """

    line: int
    kind: str
    case: str | None
    # The line's bytes; or the log's bytes holding it at [start:end]; or the LineBlock
    # holding it as line number ``start`` of the block.
    data: bytes | LineBlock | None = None
    parsed: Envelope | None = None
    start: int = 0
    end: int = -1

    @property
    def raw(self) -> bytes | None:
        """The line's bytes until its event is built (None after)."""
        data = self.data
        if type(data) is LineBlock:
            return data.line(self.start)
        if data is None or self.end < 0:
            return data
        return data[self.start:self.end]

    @property
    def event(self) -> Envelope:
        if self.parsed is None:
            raw = self.raw
            assert raw is not None
            self.parsed = EVENT_MODELS[self.kind].model_validate_json(raw)
            self.data = None
        return self.parsed


# Called with each accepted event and, for a per-cell line, its validated fields as a dict
# (None otherwise), so a consumer can index the log in the same pass that reads it.
# Its validated fields are a mirror Struct (linecheck), which reads like that dict.
EventSink = Callable[[LoggedEvent, "dict[str, Any] | None"], None]
# Called instead with a block of accepted per-cell events: their line numbers, Structs,
# kinds and cases, in order (their LoggedEvents are made when asked for: see EventLines).
BlockSink = Callable[[Any, list[Any], list[str], list[Any]], None]


class EventLines:
    """The accepted events in line order, as LoggedEvents made when first asked for.

    A long log is nearly all per-cell lines accepted a block at a time; a block is kept as
    columns (its line numbers, kinds, cases, and where its bytes are) rather than one object
    per line, so reading it makes and frees no per-line object. ``at(line)`` and iteration make
    a line's LoggedEvent and keep it, so every caller gets the same one (and the event it built).
    """

    __slots__ = ("_parts", "_firsts", "_made", "_count")

    def __init__(self) -> None:
        # A part is a LoggedEvent (a line accepted on its own) or a block: (numbers, kinds,
        # cases, data, starts, ends) as accept_cell_lines has them, numbers increasing.
        self._parts: list[Any] = []
        self._firsts: list[int] = []
        self._made: dict[int, LoggedEvent] = {}
        self._count = 0

    def append(self, record: LoggedEvent) -> None:
        self._parts.append(record)
        self._firsts.append(record.line)
        self._made[record.line] = record
        self._count += 1

    def add_block(self, numbers: Any, kinds: list[str], cases: list[Any], data: Any, starts: Any, ends: Any) -> None:
        self._parts.append((numbers, kinds, cases, data, starts, ends))
        self._firsts.append(numbers[0])
        self._count += len(kinds)

    def __len__(self) -> int:
        return self._count

    @property
    def made(self) -> int:
        """How many LoggedEvents exist so far (lines accepted on their own, and lines asked for)."""
        return len(self._made)

    def __iter__(self) -> Iterator[LoggedEvent]:
        for part in self._parts:
            if type(part) is LoggedEvent:
                yield part
            else:
                for index, number in enumerate(part[0]):
                    yield self._make(part, index, number)

    def cases_with(self, kind: str) -> set[Any]:
        """The cases named by the accepted events of this kind (read from the columns: no record made)."""
        found: set[Any] = set()
        for part in self._parts:
            if type(part) is LoggedEvent:
                if part.kind == kind:
                    found.add(part.case)
            elif kind in part[1]:
                found.update(compress(part[2], map(kind.__eq__, part[1])))
        return found

    def at(self, line: int) -> LoggedEvent:
        """The accepted event on this line (KeyError if none was accepted there)."""
        record = self._made.get(line)
        if record is not None:
            return record
        at = bisect_right(self._firsts, line) - 1
        part = self._parts[at] if at >= 0 else None
        if part is None or type(part) is LoggedEvent:
            raise KeyError(line)
        numbers = part[0]
        index = bisect_left(numbers, line)
        if index >= len(numbers) or numbers[index] != line:
            raise KeyError(line)
        return self._make(part, index, line)

    def _make(self, part: tuple[Any, ...], index: int, number: int) -> LoggedEvent:
        record = self._made.get(number)
        if record is None:
            numbers, kinds, cases, data, starts, ends = part
            record = self._made[number] = LoggedEvent(number, kinds[index], cases[index], data, None, starts[index], -1 if ends is None else ends[index])
        return record


@dataclass
class LogReading:
    """Everything learnt from one log: the valid events in order, and the problems."""

    path: str
    records: EventLines = field(default_factory=EventLines)
    problems: list[Problem] = field(default_factory=list)
    run_end: RunEnd | None = None
    truncated: bool = False
    refused: bool = False

    @property
    def events(self) -> list[Envelope]:
        """Every accepted event as a model instance (builds them all: for short logs)."""
        return [record.event for record in self.records]

    @property
    def lines(self) -> list[int]:
        return [record.line for record in self.records]

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def valid(self) -> bool:
        return not self.errors

    @property
    def complete(self) -> bool:
        end = self.run_end
        return end is not None and end.status == "complete" and not self.truncated


class _SeqLines:
    """The line of each seq seen: a line checked on its own in a dict; the lines of a block
    accepted together as the block's seqs (increasing, and above every seq before them) and
    line numbers, looked up only when a seq comes again."""

    def __init__(self) -> None:
        self.single: dict[int, int] = {}
        self.firsts: list[int] = []
        self.blocks: list[tuple[list[int], Any]] = []

    def __setitem__(self, seq: int, line: int) -> None:
        self.single[seq] = line

    def add_block(self, seqs: list[int], lines: range | list[int]) -> None:
        """``seqs`` increasing: kept as a range when they are consecutive (no int kept per line)."""
        first = seqs[0]
        self.firsts.append(first)
        self.blocks.append((range(first, first + len(seqs)) if seqs[-1] - first == len(seqs) - 1 else seqs, lines))

    def get(self, seq: int) -> int | None:
        line = self.single.get(seq)
        at = bisect_right(self.firsts, seq) - 1
        if line is not None or at < 0:
            return line
        seqs, lines = self.blocks[at]
        index = bisect_left(seqs, seq)
        return lines[index] if index < len(seqs) and seqs[index] == seq else None


class _NonFiniteLiteral(ValueError):
    pass


def _refuse_constant(name: str) -> float:
    raise _NonFiniteLiteral(name)


class _Checker:
    """Stateful line-by-line checks: envelope, model, sequence and ordering rules."""

    def __init__(self, reading: LogReading, sink: EventSink | None, block_sink: BlockSink | None = None) -> None:
        self.reading = reading
        self.sink = sink
        self.block_sink = block_sink
        self.last_seq = -1
        self.seq_lines = _SeqLines()
        self.kind_lines: dict[str, int] = {}
        self.planned_cases: dict[str, str] | None = None  # each planned case to itself
        self.result_lines: dict[str, int] = {}
        self.in_body = False  # after the plan, before run_end: where per-cell results belong
        self.first_content_seen = False
        self.blank_lines = 0
        self.saw_cr = False

    def problem(self, line: int, severity: Severity, message: str) -> None:
        self.reading.problems.append(Problem(self.reading.path, line, severity, message))

    def check_line(self, number: int, raw: bytes, unterminated: bool) -> None:
        """The careful path for a line the fast path did not accept: says what is wrong."""
        if number == 1 and raw.startswith(UTF8_BOM):
            raw = raw[len(UTF8_BOM):]
            self.problem(1, "warning", "file starts with a UTF-8 byte-order mark; ignored")
        if not raw.strip():
            self.blank_lines += 1
            self.problem(number, "warning", "blank line ignored")
            return
        event = self._slow_validate(number, raw, unterminated)
        if event is not None:
            self.accept_model(number, event)

    def _slow_validate(self, number: int, raw: bytes, unterminated: bool) -> Envelope | None:
        problems = len(self.reading.problems)
        obj = self._parse_json(number, raw, unterminated)
        # The first non-blank line of the file (the fast path accepts lines without this check).
        first = not self.first_content_seen and not self.reading.records
        self.first_content_seen = True
        if obj is None:
            if first and not unterminated and len(self.reading.problems) > problems:
                # Not one event log gone bad but some other file: say so once, read no further.
                why = self.reading.problems.pop().message
                self.reading.refused = True
                self.problem(number, "error", f"not a JSON-lines event log: its first line is {why}")
            return None
        if not isinstance(obj, dict):
            self.problem(number, "error", f"expected a JSON object, got {_json_type(obj)}")
            return None
        minor = self._check_version(number, obj)
        if minor is None:
            return None
        kind = obj.get("kind")
        model = EVENT_MODELS.get(kind) if isinstance(kind, str) else None
        if model is None:
            self._report_unknown_kind(number, kind, minor)
            return None
        return self._validate_model(number, model, obj, newer=minor > SCHEMA_MINOR)

    def _parse_json(self, number: int, raw: bytes, unterminated: bool) -> Any:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            self.problem(number, "error", f"not valid UTF-8: byte 0x{raw[exc.start]:02x} at column {exc.start + 1}")
            return None
        if "\r" in text:
            self.saw_cr = True
        try:
            obj = json.loads(text, parse_constant=_refuse_constant, object_pairs_hook=_unique_keys)
        except _NonFiniteLiteral as exc:
            self.problem(number, "error", f"{exc} is not valid JSON; write null for a value that is not a finite number")
        except _DuplicateKey as exc:
            self.problem(number, "error", f"duplicate key {exc} in one JSON object: the line is ambiguous (a reader could take either value)")
        except json.JSONDecodeError as exc:
            if "\r" in text.rstrip("\r"):
                self.problem(number, "error", "lines end in a bare CR (\\r): events must be separated by LF (\\n) line endings")
            elif unterminated:
                self.reading.truncated = True
                self.problem(number, "warning", "truncated last line (no newline, incomplete JSON); ignored, the run is incomplete")
            else:
                self.problem(number, "error", f"not valid JSON: {exc.msg} at column {exc.colno}")
        except RecursionError:
            self.problem(number, "error", "not valid JSON: nested too deeply")
        except ValueError as exc:
            self.problem(number, "error", f"unreadable JSON value: {str(exc).split(';')[0]}")
        else:
            where = _lone_surrogate(obj)
            if where is None:
                return obj
            self.problem(number, "error", f"{where}: a lone surrogate escape (\\ud800-\\udfff) is not Unicode text")
        return None

    def _check_version(self, number: int, obj: dict[str, Any]) -> int | None:
        version = obj.get("schema_version")
        if not isinstance(version, str):
            self.problem(number, "error", "missing schema_version (a string like \"1.0\")")
            return None
        try:
            major, minor = (int(part) for part in version.split("."))
        except ValueError:
            self.problem(number, "error", f"schema_version {version!r} is not MAJOR.MINOR")
            return None
        if major != SCHEMA_MAJOR:
            self.reading.refused = True
            self.problem(
                number,
                "error",
                f"schema_version {version} has major version {major}; this reportgen reads "
                f"{SCHEMA_MAJOR}.x only (upgrade reportgen to read newer logs)",
            )
            return None
        if minor > SCHEMA_MINOR and f"minor:{minor}" not in self.kind_lines:
            self.kind_lines[f"minor:{minor}"] = number
            self.problem(
                number,
                "warning",
                f"schema_version {version} is newer than {SCHEMA_VERSION}; fields and kinds "
                "this reportgen does not know are ignored",
            )
        return minor

    def _report_unknown_kind(self, number: int, kind: Any, minor: int) -> None:
        if not isinstance(kind, str):
            self.problem(number, "error", "missing or non-string 'kind'")
        elif minor > SCHEMA_MINOR:
            self.problem(number, "warning", f"unknown event kind {kind!r} from a newer schema; skipped")
        else:
            known = ", ".join(sorted(EVENT_MODELS))
            self.problem(number, "error", f"unknown event kind {kind!r} (known: {known})")

    def _validate_model(self, number: int, model: type[Envelope], obj: dict[str, Any], newer: bool) -> Envelope | None:
        try:
            return model.model_validate(obj)
        except ValidationError as exc:
            errors = exc.errors(include_url=False)
        extras = [e for e in errors if e["type"] == "extra_forbidden"]
        if newer and extras and len(extras) == len(errors):
            for err in extras:
                _drop_path(obj, err["loc"])
            names = ", ".join(_format_loc(e["loc"]) for e in extras)
            self.problem(number, "warning", f"{obj['kind']}: fields from a newer schema ignored: {names}")
            return self._validate_model(number, model, obj, newer=False)
        for err in errors:
            self.problem(number, "error", f"{obj['kind']}: {_format_error(err)}")
        return None

    def accept_model(self, number: int, event: Envelope) -> None:
        record = LoggedEvent(number, event.kind, getattr(event, "case", None), parsed=event)  # type: ignore[attr-defined]
        self.check_order(number, event.seq, record, None)

    def accept_cell_lines(self, numbers: range | list[int], structs: list[Any], data: bytes | LineBlock, starts: Any, ends: Any | None) -> None:
        """Per-cell lines that passed the mirror check, kept as places in ``data`` (see
        EventLines; ``ends`` None: ``data`` is a LineBlock), their Structs to the sink.

        Nearly every line of a long log is one of these, in order, for a planned cell, with
        at most one case_result per cell: checked here for the whole block at once; when
        that check fails, each line takes ``check_order``, which says what is wrong.
        """
        kinds, seqs = list(map(_KIND, structs)), list(map(_SEQ, structs))
        planned = self.planned_cases
        # Each case as the plan's own string (None: not planned), so that the columns kept
        # hold no string of their own and the cells are found by identity.
        cases = list(map(planned.get, map(_CASE, structs))) if planned is not None else []
        is_result = list(map(_RESULT.__eq__, kinds))
        results = list(compress(cases, is_result))
        if (
            self.in_body
            and planned is not None
            and seqs[0] > self.last_seq
            and _increasing(seqs)
            and all(cases)  # every case planned (a planned '' takes the careful path)
            and len(set(results)) == len(results)
            and self.result_lines.keys().isdisjoint(results)
        ):
            self.seq_lines.add_block(seqs, numbers)
            self.last_seq = seqs[-1]
            if results:
                self.result_lines.update(zip(results, compress(numbers, is_result)))
            reading = self.reading
            reading.records.add_block(numbers, kinds, cases, data, starts, ends)
            if self.block_sink is not None:
                self.block_sink(numbers, structs, kinds, cases)
            elif self.sink is not None:
                for number, struct in zip(numbers, structs):
                    self.sink(reading.records.at(number), struct)
            return
        cases = list(map(_CASE, structs))
        for record, struct in zip(map(LoggedEvent, numbers, kinds, cases, repeat(data), repeat(None), starts, repeat(-1) if ends is None else ends), structs):
            self.check_order(record.line, struct.seq, record, struct)

    def _keep(self, record: LoggedEvent, data: dict[str, Any] | None) -> None:
        self.reading.records.append(record)
        if self.sink is not None:
            self.sink(record, data)

    def check_order(self, number: int, seq: int, record: LoggedEvent, data: dict[str, Any] | None) -> None:
        """Sequence and ordering rules; the event is kept either way, errors are recorded."""
        if seq > self.last_seq:
            self.seq_lines[seq] = number
            self.last_seq = seq
        else:
            self._seq_problem(number, seq)
        kind, case = record.kind, record.case
        if self.in_body and kind in CASE_KINDS:
            if case not in self.planned_cases:  # type: ignore[operator]
                self.problem(number, "error", f"{kind} names case {case!r}, which is not in the plan")
            if kind == "case_result":
                self._check_single_result(number, case)  # type: ignore[arg-type]
        elif not self._check_structure(number, record):
            return
        self._keep(record, data)

    def _check_structure(self, number: int, record: LoggedEvent) -> bool:
        """The rules about where a kind may appear; False drops a second singleton event."""
        seen, kind, case = self.kind_lines, record.kind, record.case
        if not self.reading.records and kind != "run_start":
            self.problem(number, "error", f"the first event must be run_start, not {kind}")
        if "run_end" in seen:
            self.problem(number, "error", f"{kind} after run_end (line {seen['run_end']})")
        if kind in ("run_start", "plan", "environment", "run_end") and kind in seen:
            self.problem(number, "error", f"second {kind} (the first is on line {seen[kind]})")
            return False
        if kind in RESULT_KINDS and "plan" not in seen:
            self.problem(number, "error", f"{kind} before the plan: tolerances and comparison rules must be declared before any result")
        if isinstance(record.parsed, Plan):
            self.planned_cases = {case: case for case in map(_CASE, record.parsed.matrix)}
        elif isinstance(record.parsed, RunEnd):
            self.reading.run_end = record.parsed
        if case is not None and self.planned_cases is not None and case not in self.planned_cases:
            self.problem(number, "error", f"{kind} names case {case!r}, which is not in the plan")
        if kind == "case_result":
            self._check_single_result(number, case)  # type: ignore[arg-type]
        seen.setdefault(kind, number)
        self.in_body = "plan" in seen and "run_end" not in seen
        return True

    def _check_single_result(self, number: int, case: str) -> None:
        if case in self.result_lines:
            self.problem(number, "error", f"second case_result for {case!r} (the first is on line {self.result_lines[case]})")
        self.result_lines[case] = number

    def _seq_problem(self, number: int, seq: int) -> None:
        first = self.seq_lines.get(seq)
        if first is not None:
            self.problem(number, "error", f"duplicate seq {seq} (also on line {first})")
        else:
            self.problem(number, "error", f"seq {seq} after {self.last_seq}: sequence numbers must increase")
            self.seq_lines[seq] = number

    def finish(self, line_count: int) -> None:
        if self.reading.refused:
            return
        if line_count == 0:
            self.problem(0, "error", "empty file: no events")
            return
        if not self.reading.records:
            self.problem(0, "error", f"no events: {self._what_it_is(line_count)}")
            return
        if self.reading.run_end is None:
            self.problem(line_count, "warning", "no run_end: the run is incomplete; cells without a result are untested")


    def _what_it_is(self, line_count: int) -> str:
        """What a file that holds no event is, in a few words."""
        if self.blank_lines == line_count:
            return f"the file holds only blank lines ({line_count})"
        if self.saw_cr:
            return "the file uses bare CR line endings, so it reads as one line that is not JSON"
        if self.reading.truncated and line_count == 1:
            return "the file holds one incomplete line"
        return f"none of its {line_count} lines is a valid event"


class _DuplicateKey(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(repr(key))
            seen.add(key)
    return obj


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _lone_surrogate(obj: Any, where: str = "") -> str | None:
    """The location of the first string (key or value) holding a lone surrogate, or None."""
    if isinstance(obj, str):
        return (where or "(line)") if _has_surrogate(obj) else None
    if isinstance(obj, dict):
        for key, value in obj.items():
            path = f"{where}.{key}" if where else str(key)
            if _has_surrogate(key):
                return f"{where or '(line)'}: a key"
            found = _lone_surrogate(value, path)
            if found:
                return found
    elif isinstance(obj, list):
        for index, value in enumerate(obj):
            found = _lone_surrogate(value, f"{where}.{index}" if where else str(index))
            if found:
                return found
    return None


def _json_type(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return "a number"


def _format_loc(loc: tuple[Any, ...]) -> str:
    return ".".join(str(part) for part in loc) or "(event)"


def _format_error(err: Any) -> str:
    where = _format_loc(err["loc"])
    if err["type"] == "missing":
        return f"{where}: required field missing"
    if err["type"] == "extra_forbidden":
        return f"{where}: unknown field"
    return f"{where}: {err['msg']}"


def _drop_path(obj: Any, loc: tuple[Any, ...]) -> None:
    for part in loc[:-1]:
        obj = obj[part]
    obj.pop(loc[-1], None)


def read_log(path: str | Path, sink: EventSink | None = None, max_bytes: int = DEFAULT_MAX_LOG_BYTES, block_sink: BlockSink | None = None, records: EventLines | None = None) -> LogReading:
    """Read and check one log file; never raises, an unreadable file is a problem too.

    ``sink``, when given, sees each accepted event as it is read (see ``EventSink``). Only a
    regular file of at most ``max_bytes`` is read (not a FIFO, a device or a folder).
    ``records`` (empty) receives the accepted events, for a consumer that holds it already.
    """
    reading = LogReading(path=str(path), records=EventLines() if records is None else records)
    checker = _Checker(reading, sink, block_sink)
    try:
        count = _check_stream(checker, path, max_bytes)
    except NotReadable as exc:
        checker.problem(0, "error", f"not read: {exc}")
        return reading
    except OSError as exc:
        checker.problem(0, "error", f"cannot read the file: {exc.strerror or exc}")
        return reading
    checker.finish(count)
    return reading


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic collector while many long-lived objects are built.

    Hundreds of thousands of event objects make it rescan an ever larger heap. They hold no
    reference cycles, so afterwards they are moved out of its reach (``gc.freeze``) rather than
    scanned once more; reference counting still frees them.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.freeze()
            gc.enable()


def _check_stream(checker: _Checker, path: str | Path, max_bytes: int) -> int:
    with _open_log(path, max_bytes) as stream, paused_gc():
        return _read_lines(checker, stream, max_bytes, _reread_of(path, stream))


def _reread_of(path: Any, stream: Any) -> Reread | None:
    """How to read a local log's lines again (None for a log in object storage: its chunks are kept)."""
    if getattr(path, "open_stream", None) is not None:
        return None
    try:
        return Reread(path, os.fstat(stream.fileno()))
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return None


def _read_lines(checker: _Checker, stream: Any, max_bytes: int, reread: Reread | None = None) -> int:
    """Check line by line; a line without a newline can only be the last.

    The log is read CHUNK_BYTES at a time; the whole lines of a chunk are checked and the part
    line at its end is carried into the next. Most lines of a real log are valid per-cell
    events, so blocks of whole lines (up to BLOCK_BYTES, far below the line limit) are first
    handed to msgspec, which parses and validates them against the Struct mirrors of the
    models (linecheck) in one call. A block is taken when it holds exactly one JSON object per
    line (it starts with {, ends with }, msgspec reads one object per newline, and every
    newline inside it stands between } and {, with at most spaces or tabs around it: see
    _joined; so no value spans two lines and no line holds two) and the count of its colons shows no
    repeated key. A block that fails any of these is halved, down to a few lines checked one
    at a time the same way, and the few other lines (run_start, plan, ...) against the
    models, with the same key count; only a line these checks do not accept takes the careful
    path that explains. A local log's bytes are not kept once checked (see Reread).
    """
    reuse = reread is not None and hasattr(stream, "readinto")
    buf = bytearray(CHUNK_BYTES) if reuse else b""
    number = base = total = held = 0  # held: the bytes at the start of buf carried from the last chunk
    skipping = False  # inside a line longer than MAX_LINE_BYTES, until its newline
    while True:
        want = min(CHUNK_BYTES, max_bytes + 1 - total) if total <= max_bytes else 0
        if reuse:  # one buffer for the whole log: no fresh memory per chunk, nothing kept
            if held + want > len(buf):
                buf.extend(bytes(held + want - len(buf)))
            with memoryview(buf) as view:
                got = (stream.readinto(view[held:held + want]) or 0) if want else 0
        else:  # a log in object storage: its chunks are kept for the events built later
            part = stream.read(want) if want else b""
            buf, got = buf[:held] + part, len(part)
        total += got
        over = total > max_bytes
        if over:
            got -= total - max_bytes
        size = held + got
        final = over or got == 0
        begin = 0
        if skipping:
            cut = buf.find(b"\n", 0, size) + 1
            begin = cut if cut else size
            skipping = not cut
        end = buf.rfind(b"\n", begin, size) + 1
        if end:
            done = _read_whole_lines(checker, buf, begin, end, number, base, reread)
            if done is None:
                return number  # refused: nothing more is read
            number = done
        carry_from = max(end, begin)  # the part line at the end moves to the front
        base += carry_from
        held = size - carry_from
        if reuse:
            if held and carry_from:
                buf[:held] = buf[carry_from:size]
        else:
            buf = buf[carry_from:size]
        if final:
            break
        if held > MAX_LINE_BYTES:
            number += 1
            checker.problem(number, "error", f"line longer than {MAX_LINE_BYTES} bytes; skipped")
            base += held
            held, skipping = 0, True
    if over:
        checker.problem(number + 1, "error", f"the file grew past the limit of {describe_size(max_bytes)} while being read; the rest is not read")
        return number + 1
    if held and not skipping:
        number += 1
        if held > MAX_LINE_BYTES:
            checker.problem(number, "error", f"line longer than {MAX_LINE_BYTES} bytes; skipped")
        else:
            checker.check_line(number, bytes(buf[:held]), unterminated=True)
    return number


def _read_whole_lines(checker: _Checker, data: bytes | bytearray, begin: int, limit: int, number: int, base: int, reread: Reread | None) -> int | None:
    """Check the whole lines ``data[begin:limit]`` (which ends in a newline) after line ``number``;
    ``base`` is where ``data`` starts in the file. The new line count, or None once the log is refused.

    Each block is copied out once, and one pass over the copy keeps only the bytes of _MARKS
    (``bytes.translate``), where its newlines, colons, backslashes and line joins are then
    counted in a tenth of the bytes. That costs less than two counts and two searches over
    the block."""
    with memoryview(data) as view:
        while begin < limit:
            stop = data.rfind(b"\n", begin, min(begin + BLOCK_BYTES, limit)) + 1
            if stop <= 0:  # no whole line in reach: a line longer than a block
                stop = data.find(b"\n", begin, limit) + 1
            block = bytes(view[begin:stop])
            marks = block.translate(None, _NOT_MARKS)
            lines = marks.count(b"\n")
            if not _read_block(checker, block, 0, len(block), number, lines, base + begin, reread, marks):
                return None
            number += lines
            begin = stop
    return number


def _read_block(checker: _Checker, data: bytes, begin: int, stop: int, number: int, lines: int, base: int = 0, reread: Reread | None = None, marks: bytes | None = None) -> bool:
    """Whole lines ``data[begin:stop]`` after line ``number``: one call to msgspec when the
    block passes (see _read_lines); else each half on its own, down to a few lines that are
    checked one at a time. False once the log is refused. ``marks``: the whole of ``data``
    cut down to the bytes of _MARKS, when the caller has it."""
    structs = None
    colons = 0
    escaped = (_ESCAPE in marks) if marks is not None else data.find(_ESCAPE, begin, stop) >= 0
    if (
        data[begin] == 123  # {
        and data[stop - 2] == 125  # }
        and _joined(data, begin, stop, lines, marks)
        and stop - begin <= MAX_LINE_BYTES
        and (not escaped or data.find(_COUNT_UNSAFE, begin, stop) < 0)
    ):
        try:
            structs = _CELL_BLOCK(memoryview(data)[begin:stop])
        except _FAST_ERRORS:
            structs = None
        if structs is not None:
            colons = marks.count(KEY_MARK) if marks is not None else data.count(KEY_MARK, begin, stop)
            if not (len(structs) == lines and colons == encode(structs).count(KEY_MARK)):
                structs = None
    if structs is not None:
        where = LineBlock(data, begin, stop) if reread is None else LineBlock(None, base + begin, base + stop, reread, lines, colons)
        checker.accept_cell_lines(range(number + 1, number + lines + 1), structs, where, range(lines), None)
        return True
    middle = data.find(b"\n", begin + (stop - begin) // 2, stop - 1) + 1
    if lines > SMALL_BLOCK_LINES and begin < middle < stop:
        first = data.count(b"\n", begin, middle)
        return _read_block(checker, data, begin, middle, number, first, base, reread) and _read_block(checker, data, middle, stop, number + first, lines - first, base, reread)
    starts = _line_starts(data, begin, stop)
    ends = [at - 1 for at in starts[1:]]
    del starts[-1]
    return _check_block(checker, data, starts, ends, number + 1, base, reread)


def _joined(data: bytes, begin: int, stop: int, lines: int, marks: bytes | None) -> bool:
    """Whether each newline of ``data[begin:stop]`` but the last stands between a } and a {:
    in the block's bytes, or, when given, in ``marks`` (the block cut down to _MARKS).

    The check in ``marks`` is as strict as the one in the bytes, given the rest of
    _read_block's checks: the block starts with { and ends with }, msgspec reads it as
    objects only (the Struct union refuses any other value), as many as it has newlines, and
    msgspec refuses a raw control byte (a newline) inside a string. Each }\n{ in ``marks``
    uses its own newline, so every newline but the last is one. Around such a newline the
    dropped bytes hold no token of a value: inside an object or array the token after a key
    or value is one of ``,:]}``, all kept, and the } may be text in a string only if such a
    token follows it. So the newline lies between two objects at the top level, where only
    whitespace can stand; \r is kept, so that whitespace is spaces or tabs."""
    if marks is not None:
        return marks.count(b"}\n{") == lines - 1
    return data.count(_LINE_JOIN, begin, stop) == lines - 1 or data.count(b"}\n{", begin, stop) == lines - 1


def _increasing(seqs: list[int]) -> bool:
    """Whether the seqs rise strictly: usually a run of consecutive numbers (one comparison
    of lists in C), else compared pairwise."""
    first = seqs[0]
    if seqs[-1] - first == len(seqs) - 1 and seqs == list(range(first, first + len(seqs))):
        return True
    return all(map(int.__lt__, seqs, seqs[1:]))


def _check_block(checker: _Checker, data: bytes, starts: list[int], ends: list[int], number: int, base: int = 0, reread: Reread | None = None) -> bool:
    """One line at a time; False once the log is refused (nothing more is read)."""
    pending: list[tuple[int, Any, int, int]] = []

    def flush() -> None:
        if pending:
            numbers, structs, begins, stops = zip(*pending)
            if reread is None:
                checker.accept_cell_lines(list(numbers), list(structs), data, begins, stops)
            else:  # consecutive lines (any other line flushes first): read again as one block
                first, last = begins[0], stops[-1] + 1
                where = LineBlock(None, base + first, base + last, reread, len(numbers), data.count(KEY_MARK, first, last))
                checker.accept_cell_lines(list(numbers), list(structs), where, range(len(numbers)), None)
            pending.clear()

    for begin, stop in zip(starts, ends):
        if stop - begin > MAX_LINE_BYTES:
            flush()
            checker.problem(number, "error", f"line longer than {MAX_LINE_BYTES} bytes; skipped")
            number += 1
            continue
        raw = bytes(memoryview(data)[begin:stop])
        try:
            struct = _CELL_LINE(raw)
        except _FAST_ERRORS:
            struct = None
        if struct is not None and _COUNT_UNSAFE not in raw and raw.count(KEY_MARK) == encode(struct).count(KEY_MARK):
            pending.append((number, struct, begin, stop))
            number += 1
            continue
        flush()
        if struct is None:
            event = _other_line(raw)
            if event is not None:
                checker.accept_model(number, event)
                number += 1
                continue
        checker.check_line(number, raw.rstrip(b"\r"), unterminated=False)
        if checker.reading.refused:
            return False
        number += 1
    flush()
    return True


def _open_log(path: Any, max_bytes: int) -> BinaryIO:
    """A local log (a regular file within the limit, see storage.local), or a log in object
    storage (anything with ``open_stream``, see reportgen.storage) whose listed size is within it."""
    opener = getattr(path, "open_stream", None)
    if opener is None:
        return open_regular(path, max_bytes)
    size = getattr(path, "size", 0)
    if size > max_bytes:
        raise NotReadable(f"{describe_size(size)}, larger than the limit of {describe_size(max_bytes)} (--max-log-size)")
    return opener()  # type: ignore[no-any-return]


def _other_line(raw: bytes) -> Envelope | None:
    """A line that is not per-cell, accepted in one call with no key repeated; None leaves it
    to the careful path, which says what is wrong. A plan is checked against its mirror
    first (then only the fields around its matrix are built through the model), else against
    the models."""
    try:
        plan = _PLAN_LINE(raw)
    except _FAST_ERRORS:
        plan = None
    if plan is not None and _COUNT_UNSAFE not in raw and raw.count(KEY_MARK) == encode(plan).count(KEY_MARK):
        built = _plan_model(plan)
        if built is not None:
            return built
    try:
        event = _MODEL_LINE(raw)
    except ValidationError:
        return None
    if event.schema_version in READABLE_VERSIONS and _unique_keys_in(raw, event):
        return event  # type: ignore[no-any-return]
    return None


def _plan_model(plan: Any) -> Plan | None:
    """The Plan model of a plan line its mirror accepted: every field but the matrix through
    the model (with the first cell, as the matrix may not be empty); the matrix is the
    mirror's own PlannedCellLine Structs, with the model's defaults filled in (fill_defaults),
    which read as the cells' models do."""
    fields = {name: value for name in plan.__struct_fields__ if name != "matrix" and (value := getattr(plan, name)) is not msgspec.UNSET}
    data = msgspec.to_builtins(fields)
    data["kind"], data["matrix"] = plan.kind, [msgspec.to_builtins(plan.matrix[0])]
    try:
        model = Plan.model_validate(data)
    except ValidationError:
        return None
    return model.model_copy(update={"matrix": fill_defaults(plan.matrix)})


def _unique_keys_in(raw: bytes, event: Envelope) -> bool:
    """Whether a line that validated as ``event`` has no repeated key: the colon count of
    linecheck.same_keys against the event written again with the fields it was given, or,
    for a line with a \\u003 escape, a second parse."""
    if _COUNT_UNSAFE in raw:
        return _unique_json(raw)
    return raw.count(KEY_MARK) == event.__pydantic_serializer__.to_json(event, exclude_unset=True).count(KEY_MARK)


def _unique_json(chunk: bytes) -> bool:
    """Whether a line that validated has no repeated key (a second parse; for the few lines that are not per-cell)."""
    try:
        json.loads(chunk, object_pairs_hook=_unique_keys)
    except ValueError:
        return False
    return True


def validate_files(paths: list[str], as_json: bool, max_problems: int, max_bytes: int = DEFAULT_MAX_LOG_BYTES) -> tuple[str, int]:
    """Check logs for ``reportgen validate``: the text to print and the exit code (0 or 1)."""
    readings = [read_log(path, max_bytes=max_bytes) for path in paths]
    code = 0 if all(r.valid for r in readings) else 1
    if as_json:
        return json.dumps([_reading_summary(r) for r in readings], indent=2), code
    return "\n".join(_format_reading(r, max_problems) for r in readings), code


def _reading_summary(reading: LogReading) -> dict[str, Any]:
    return {
        "file": reading.path,
        "valid": reading.valid,
        "complete": reading.complete,
        "truncated": reading.truncated,
        "events": len(reading.records),
        "problems": [
            {"line": p.line, "severity": p.severity, "message": p.message} for p in reading.problems
        ],
    }


def _format_reading(reading: LogReading, max_problems: int) -> str:
    shown = reading.problems if max_problems <= 0 else reading.problems[:max_problems]
    lines = [p.format() for p in shown]
    hidden = len(reading.problems) - len(shown)
    if hidden:
        lines.append(f"{reading.path}: ... and {hidden} more problems (--max-problems 0 shows all)")
    state = "valid" if reading.valid else "INVALID"
    completeness = "complete" if reading.complete else "incomplete"
    lines.append(
        f"{reading.path}: {state}, {completeness}, {len(reading.records)} events, "
        f"{len(reading.errors)} errors, {len(reading.problems) - len(reading.errors)} warnings"
    )
    return "\n".join(lines)
