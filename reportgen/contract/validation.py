"""Read a JSON-lines run log defensively and check it against the event contract.

A log is untrusted input: it may be truncated by a crash, hand-edited, written by somebody
else's collector or by a newer version of ours. Reading never raises for bad content; every
problem becomes a located ``Problem`` and the events that did validate are kept, so a log that
stops early is still usable up to its last good line.

Each line is read once, by msgspec, into the mirror of its kind's Struct (contract.fast), with
the duplicate-key check of fast.same_keys (which a line that writes a colon as an escape
fails too); only a line that fails those takes the careful path, which parses it with the
standard library and converts it to its kind's Struct (contract.events), saying what is
wrong and where. The event a consumer reads is that
Struct: the line decoded again when it is asked for (LoggedEvent.event).
"""

from __future__ import annotations

import contextlib
import functools
import gc
import json
import os
import re
from bisect import bisect_left
from itertools import compress, repeat
from operator import attrgetter, is_
from dataclasses import dataclass, field
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Callable, Iterator, Literal, Union, get_args, get_origin

import msgspec
from msgspec import UNSET
from msgspec.structs import force_setattr

from collector.visible import visible
from reportgen.contract.artifact_files import FileChecks
from reportgen.contract.consistency import (
    CONTENT_RECIPES,
    FIGURE_KINDS,
    FigureChecks,
    device_facts_disagreement,
    family_disagreement,
)
from reportgen.contract.events import (
    CASE_KINDS,
    EVENT_MODELS,
    RESULT_KINDS,
    RUN_ID_PATTERN,
    SCHEMA_MAJOR,
    SHA256_PATTERN,
    SCHEMA_MINOR,
    SCHEMA_VERSION,
    Envelope,
    Event,
    RunEnd,
    absent,
)
from reportgen.contract.fast import KINDS, PLANNED_DEFAULTS, same_keys
from reportgen.contract.times import unplaceable
from reportgen.storage.local import (
    DEFAULT_MAX_LOG_BYTES,
    NotReadable,
    Reread,
    describe_size,
    open_log,
    reread_of,
    shown,
)

# Versions of this major that the current Structs read as they are (a minor bump only adds
# optional fields): such lines take the fast path; others get the careful per-line check.
READABLE_VERSIONS = frozenset(f"{SCHEMA_MAJOR}.{minor}" for minor in range(SCHEMA_MINOR + 1))

MAX_LINE_BYTES = 8 * 1024 * 1024
NAMED_FIELDS = 20  # a newer line's unknown fields named in its warning; the rest are counted
UTF8_BOM = b"\xef\xbb\xbf"

Severity = Literal["error", "warning"]

# Any line into the mirror of its kind's Struct (contract/fast.py), whatever its minor version.
_LINE = msgspec.json.Decoder(Union[tuple(KINDS.values())]).decode
_AS_STRUCT = _LINE  # an event the careful path accepted, as the mirror the fast path gives
_EVENT = msgspec.json.Decoder(Event).decode  # an accepted line as its kind's Struct
# RecursionError: msgspec skips an unknown key's value recursively, so a value nested past
# Python's limit raises it; the careful path then names the line.
_FAST_ERRORS = (msgspec.ValidationError, msgspec.DecodeError, UnicodeDecodeError, RecursionError)
CHUNK_BYTES = 1 << 19  # read at a time (a local log's bytes are not kept once checked)


# A log is untrusted: a file of millions of bad lines, or of lines quoting a value of a
# megabyte, must not hold a finding per line, or a megabyte per finding, in memory. The first
# MAX_KEPT_PROBLEMS errors and as many warnings are kept (every command prints far fewer; a
# log's warnings never crowd out its errors); the rest are counted. Nor may it keep every
# command busy for half an hour: a file of tiny bad or blank lines under the size limit holds
# hundreds of millions of them, so reading stops at the error past MAX_KEPT_PROBLEMS, the blank
# line past MAX_BLANK_LINES (a collector writes none), or past MAX_BLANK_LINES lines in a row
# that hold no event (each a warning only: a kind or schema this reportgen does not read).
MAX_KEPT_PROBLEMS = 10_000
MAX_BLANK_LINES = 100_000
MAX_MESSAGE_CHARS = 2_000


def bounded_message(message: str) -> str:
    """A finding's message, cut at MAX_MESSAGE_CHARS with the length it had."""
    if len(message) <= MAX_MESSAGE_CHARS:
        return message
    return f"{message[:MAX_MESSAGE_CHARS]}... (cut: {len(message):,} characters)"


@dataclass(frozen=True)
class Problem:
    """One located finding; line 0 means the file as a whole."""

    file: str
    line: int
    severity: Severity
    message: str

    def format(self) -> str:
        """One line, whatever the message quotes from the log (a newline in a key is shown as
        <U+000A>, so it cannot start a line of its own that a script reads as another finding)."""
        return f"{shown(self.file)}:{self.line}: {self.severity}: {visible(self.message, keep=chr(9))}"


class LoggedEvent(msgspec.Struct, gc=False):
    """One accepted line: where it is, what it is, and its event, built on first use.

    A report shows a few hundred cells of a long log in full, so most events are never built:
    a line the fast path accepted keeps its bytes (a log in object storage) or, for a local
    log, where they are in the file (see Reread).
    """

    line: int
    kind: str
    case: str | None
    data: bytes | Reread | None = None  # the line's bytes, or the file to read them again from
    parsed: Any = None  # the event's Struct (contract.events), once built
    start: int = 0  # with a Reread: the line's bytes in the file are [start:end]
    end: int = 0

    @property
    def raw(self) -> bytes | None:
        """The line's bytes until its event is built (None after)."""
        data = self.data
        if type(data) is Reread:
            return data.line(self.start, self.end)
        return data  # type: ignore[return-value]

    @property
    def event(self) -> Envelope:
        if self.parsed is None:
            raw = self.raw
            assert raw is not None
            self.parsed = _EVENT(raw)
            self.data = None
        return self.parsed


def _struct_of(event: Envelope) -> Any:
    """An event as its mirror (every field present: the event does not say which the line left out)."""
    return _AS_STRUCT(msgspec.json.encode(event))


def fields_of(record: LoggedEvent) -> Any:
    """An accepted event's fields as the mirror the reader gave its sink (decoded again)."""
    raw = record.raw
    return _struct_of(record.event) if raw is None else _AS_STRUCT(raw)


# Called with each accepted event and its validated fields: the line's mirror Struct (an
# instance of the kind's Struct whose left-out optional fields are UNSET, contract.fast), so a
# consumer can index the log in the same pass that reads it.
EventSink = Callable[[LoggedEvent, Any], None]


class EventLines(list[LoggedEvent]):
    """The accepted events in line order."""

    __slots__ = ()

    def cases_with(self, kind: str) -> set[Any]:
        """The cases named by the accepted events of this kind."""
        return {record.case for record in self if record.kind == kind}

    def at(self, line: int) -> LoggedEvent:
        """The accepted event on this line (KeyError if none was accepted there)."""
        index = bisect_left(self, line, key=_LINE_OF)
        if index == len(self) or self[index].line != line:
            raise KeyError(line)
        return self[index]


_LINE_OF = attrgetter("line")


@dataclass
class LogReading:
    """Everything learnt from one log: the valid events in order, and the problems."""

    path: str
    records: EventLines = field(default_factory=EventLines)
    problems: list[Problem] = field(default_factory=list)
    end_record: LoggedEvent | None = None
    end_status: str | None = None
    truncated: bool = False
    refused: bool = False
    # Findings past MAX_KEPT_PROBLEMS, counted, not kept.
    more_errors: int = 0
    more_warnings: int = 0
    # The artifact paths whose file lies beside the log but was not read (too large, linked from
    # outside the run folder, unreadable): their hashes are the log's word only.
    unchecked_files: list[str] = field(default_factory=list)

    @property
    def run_end(self) -> RunEnd | None:
        return None if self.end_record is None else self.end_record.event  # type: ignore[return-value]

    @property
    def events(self) -> list[Envelope]:
        """Every accepted event as its Struct (builds them all: for short logs)."""
        return [record.event for record in self.records]

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def error_count(self) -> int:
        """Every error found, those past MAX_KEPT_PROBLEMS too."""
        return len(self.errors) + self.more_errors

    @property
    def warning_count(self) -> int:
        return len(self.problems) - len(self.errors) + self.more_warnings

    @property
    def valid(self) -> bool:
        return not self.errors and not self.more_errors

    @property
    def complete(self) -> bool:
        return self.end_status == "complete" and not self.truncated


_UNPARSED = object()  # what _parse_json gives for a line it could not read as JSON


class _NonFiniteLiteral(ValueError):
    pass


def _refuse_constant(name: str) -> float:
    raise _NonFiniteLiteral(name)


class _Checker:
    """Stateful line-by-line checks: envelope, model, sequence and ordering rules."""

    def __init__(self, reading: LogReading, sink: EventSink | None) -> None:
        self.reading = reading
        self.sink = sink
        self.keep = reading.records.append
        self.last_seq = -1
        self.seq_lines: dict[int, int] = {}
        self.kind_lines: dict[str, int] = {}
        self.planned_cases: dict[str, str] | None = None  # each planned case to itself
        self.result_lines: dict[str, int] = {}
        self.in_body = False  # after the plan, before run_end: where per-cell results belong
        self.first_content_seen = False
        self.start_refused = False  # the first line was a run_start refused for a field
        self.blank_lines = 0
        self.saw_cr = False
        self.figures = FigureChecks()
        self.figures.warn = self.warning
        self.encoded = bytearray()  # same_keys' buffer: this reader's own
        self.version: str | None = None  # run_start's schema_version, once read
        self.errors_kept = self.warnings_kept = 0  # findings kept, each up to MAX_KEPT_PROBLEMS
        self.artifacts: list[tuple[int, str, int, str]] = []  # each artifact's line, path, bytes and sha256
        self.reading_lines = True  # until the last line is read: too many findings then stop the reading
        self.kept_at_unread, self.unread_run = -1, 0  # the lines read in a row that gave no event

    def error(self, line: int, message: str) -> None:
        self.figures.erred = True  # a refused line may have been a result run_end counts
        if self.errors_kept >= MAX_KEPT_PROBLEMS:
            if self.reading_lines:
                self._stop(line, f"more than {MAX_KEPT_PROBLEMS:,} errors")
            else:
                self.reading.more_errors += 1
            return
        self.errors_kept += 1
        self.reading.problems.append(Problem(self.reading.path, line, "error", bounded_message(message)))

    def _stop(self, line: int, why: str) -> None:
        """Read no further, and say why on ``line``, where the reading stopped."""
        if not self.reading.refused:
            self.reading.refused = True
            self.reading.problems.append(
                Problem(self.reading.path, line, "error", f"{why}: the rest of the file is not read")
            )

    def warning(self, line: int, message: str) -> None:
        if self.warnings_kept >= MAX_KEPT_PROBLEMS:
            self.reading.more_warnings += 1
            return
        self.warnings_kept += 1
        self.reading.problems.append(Problem(self.reading.path, line, "warning", bounded_message(message)))

    def check_line(self, number: int, raw: bytes, unterminated: bool) -> None:
        """The careful path for a line the fast path did not accept: says what is wrong."""
        if number == 1 and raw.startswith(UTF8_BOM):
            raw = raw[len(UTF8_BOM) :]
            self.warning(1, "file starts with a UTF-8 byte-order mark; ignored")
        if not raw.strip():
            self.blank_lines += 1
            if self.blank_lines > MAX_BLANK_LINES:
                self._stop(number, f"more than {MAX_BLANK_LINES:,} blank lines, not a log the collector wrote")
            else:
                self.warning(number, "blank line ignored")
            return
        event = self._slow_validate(number, raw, unterminated)
        if event is not None:
            self.accept_model(number, event)
        elif (kept := len(self.reading.records)) != self.kept_at_unread:
            self.kept_at_unread, self.unread_run = kept, 1
        else:
            # Lines that each say only a warning (a kind or a schema this reportgen does not read)
            # are no error: a file of millions of them, with no event between, is no log.
            self.unread_run += 1
            if self.unread_run > MAX_BLANK_LINES:
                self._stop(number, f"more than {MAX_BLANK_LINES:,} lines in a row hold no event this reportgen reads")

    def _slow_validate(self, number: int, raw: bytes, unterminated: bool) -> Envelope | None:
        problems = len(self.reading.problems)
        obj = self._parse_json(number, raw, unterminated)
        # The first non-blank line of the file (the fast path accepts lines without this check).
        first = not self.first_content_seen and not self.reading.records
        self.first_content_seen = True
        if obj is _UNPARSED:
            if first and not unterminated and len(self.reading.problems) > problems:
                # Not one event log gone bad but some other file: say so once, read no further.
                why = self.reading.problems.pop().message
                self.reading.refused = True
                # "... is not valid JSON: ...", or "...: run_id: a lone surrogate escape ...".
                said = f"is {why}" if why.startswith("not ") else f"fails: {why}"
                self.error(number, f"not a JSON-lines event log: its first line {said}")
            return None
        if not isinstance(obj, dict):
            self.error(number, f"expected a JSON object, got {_json_type(obj)}")
            return None
        minor = self._check_version(number, obj)
        if minor is None:
            return None
        kind = obj.get("kind")
        model = EVENT_MODELS.get(kind) if isinstance(kind, str) else None
        if model is None:
            self._report_unknown_kind(number, kind, minor)
            return None
        event = self._validate_model(number, model, obj, newer=minor > SCHEMA_MINOR)
        # A run_start refused for a field is the run's first line still: the lines after it are
        # not told that the log lacks one (a second, misleading error per line).
        self.start_refused = self.start_refused or (event is None and first and kind == "run_start")
        return event

    def _parse_json(self, number: int, raw: bytes, unterminated: bool) -> Any:
        """The line's JSON value, or _UNPARSED once its problem is reported (a line holding
        ``null`` is a value like any other: the caller says it is not an object)."""
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            self.error(number, f"not valid UTF-8: byte 0x{raw[exc.start]:02x} at column {exc.start + 1}")
            return _UNPARSED
        if "\r" in text:
            self.saw_cr = True
        try:
            obj = json.loads(text, parse_constant=_refuse_constant, object_pairs_hook=unique_keys)
        except _NonFiniteLiteral as exc:
            self.error(number, f"{exc} is not valid JSON; write null for a value that is not a finite number")
        except DuplicateKey as exc:
            self.error(
                number,
                f"duplicate key {exc} in one JSON object: the line is ambiguous (a reader could take either value)",
            )
        except json.JSONDecodeError as exc:
            if "\r" in text.rstrip("\r"):
                self.error(number, "lines end in a bare CR (\\r): events must be separated by LF (\\n) line endings")
            elif unterminated:
                self.reading.truncated = True
                self.warning(
                    number,
                    "truncated last line (no newline, incomplete JSON); ignored, the run is incomplete",
                )
            else:
                at = "" if exc.msg.endswith(" at") else " at"  # json's "Unterminated string starting at"
                self.error(number, f"not valid JSON: {exc.msg}{at} column {exc.colno}")
        except RecursionError:
            self.error(number, "not valid JSON: nested too deeply")
        except ValueError as exc:
            self.error(number, f"unreadable JSON value: {str(exc).split(';')[0]}")
        else:
            where = lone_surrogate(obj)
            if where is None:
                return obj
            self.error(number, f"{where}: a lone surrogate escape (\\ud800-\\udfff) is not Unicode text")
        return _UNPARSED

    def _check_version(self, number: int, obj: dict[str, Any]) -> int | None:
        version = obj.get("schema_version")
        if not isinstance(version, str):
            self.error(number, 'missing schema_version (a string like "1.0")')
            return None
        try:
            major, minor = (int(part) for part in version.split("."))
        except ValueError:
            self.error(number, f"schema_version {version!r} is not MAJOR.MINOR")
            return None
        if major != SCHEMA_MAJOR:
            self.reading.refused = True
            self.error(
                number,
                f"schema_version {version} has major version {major}; this reportgen reads "
                f"{SCHEMA_MAJOR}.x only (upgrade reportgen to read newer logs)",
            )
            return None
        if minor > SCHEMA_MINOR and f"minor:{minor}" not in self.kind_lines:
            self.kind_lines[f"minor:{minor}"] = number
            self.warning(
                number,
                f"schema_version {version} is newer than {SCHEMA_VERSION}; fields and kinds "
                "this reportgen does not know are ignored",
            )
        return minor

    def _report_unknown_kind(self, number: int, kind: Any, minor: int) -> None:
        if not isinstance(kind, str):
            self.error(number, "missing or non-string 'kind'")
        elif minor > SCHEMA_MINOR:
            self.warning(number, f"unknown event kind {kind!r} from a newer schema; skipped")
        else:
            known = ", ".join(sorted(KINDS))
            self.error(number, f"unknown event kind {kind!r} (known: {known})")

    def _validate_model(self, number: int, model: type[Envelope], obj: dict[str, Any], newer: bool) -> Envelope | None:
        """The line as its kind's Struct, or its first error, located; a line of a newer minor
        has the fields this reader does not know dropped, with a warning that names them."""
        if (where := non_finite_at(obj)) is not None:
            self.error(
                number,
                f"{obj['kind']}: {where}: a number too large for a float; write null for a value that is not a finite number",
            )
            return None
        # Each value only as its own JSON type, as the fast path and the JSON Schema take it
        # (the string "5" is not an integer). A newer minor's line that names fields this
        # reader does not know has them all found in one walk and dropped, then is converted
        # again.
        dropped: list[list[Any]] = []
        while True:
            try:
                event = msgspec.convert(obj, model)
                break
            except msgspec.ValidationError as exc:
                message, path = _located(obj, model, str(exc))
            if newer and not dropped and message.startswith(_UNKNOWN_FIELD):
                unknown_fields(obj, model, [], dropped)
                for unknown in dropped:
                    _drop_path(obj, unknown)
                if dropped:
                    continue
            self.error(number, f"{obj['kind']}: {_format_error(message, path)}")
            return None
        if dropped:
            names = ", ".join(map(_format_loc, dropped[:NAMED_FIELDS]))
            more = f" and {len(dropped) - NAMED_FIELDS:,} more" if len(dropped) > NAMED_FIELDS else ""
            self.warning(number, f"{obj['kind']}: fields from a newer schema ignored: {names}{more}")
        return event

    def read_line(self, number: int, raw: bytes, offset: int, reread: Reread | None) -> bool:
        """One whole line (no newline) that starts at ``offset`` in the file: accepted as the
        Struct of its kind when it decodes as one with no key repeated, else the careful path.
        True once the log is refused (nothing more is read)."""
        try:
            struct = _LINE(raw)
        except _FAST_ERRORS:
            struct = None
        if struct is None or struct.schema_version not in READABLE_VERSIONS or not same_keys(raw, struct, self.encoded):
            self.check_line(number, raw.rstrip(b"\r"), unterminated=False)
            return self.reading.refused
        kind, seq = struct.kind, struct.seq
        case = getattr(struct, "case", None)
        planned = self.planned_cases
        if planned is not None and case is not None and case is not UNSET:
            case = planned.get(case, case)  # the plan's own string: none kept per line
        elif case is UNSET:
            case = None
        if reread is None:
            record = LoggedEvent(number, kind, case, raw)
        else:
            record = LoggedEvent(number, kind, case, reread, None, offset, offset + len(raw))
        # Nearly every line of a long log: the next per-cell event of a planned cell, not a
        # second result. The rules of check_order, which says what is wrong otherwise.
        if (
            seq > self.last_seq
            and self.in_body
            and kind in CASE_KINDS
            and case in planned  # type: ignore[operator]  # in_body: the plan was read, planned is set
            and (kind != "case_result" or case not in self.result_lines)
        ):
            self.seq_lines[seq] = number
            self.last_seq = seq
            if kind == "case_result":
                self.result_lines[case] = number  # type: ignore[index]
            if kind in FIGURE_KINDS and (why := self.figures.check(kind, struct, number)) is not None:
                self._contradiction(number, kind, struct, why)
            elif struct.schema_version != self.version:
                self._other_version(number, kind, struct)
            self.keep(record)
            if self.sink is not None:
                self.sink(record, struct)
        else:
            self.check_order(number, seq, record, struct)
        return self.reading.refused

    def accept_model(self, number: int, event: Envelope) -> None:
        """An event the careful path accepted: the rules read it as the Struct the fast path gives."""
        struct = _struct_of(event)
        record = LoggedEvent(number, event.kind, getattr(event, "case", None), parsed=event)
        self.check_order(number, event.seq, record, struct)

    def check_order(self, number: int, seq: int, record: LoggedEvent, data: Any) -> None:
        """Sequence and ordering rules; the event is kept either way, errors are recorded."""
        if seq > self.last_seq:
            self.seq_lines[seq] = number
            self.last_seq = seq
        else:
            self._seq_problem(number, seq)
        kind, case = record.kind, record.case
        if self.in_body and kind in CASE_KINDS:
            if case not in self.planned_cases:  # type: ignore[operator]
                self.error(number, f"{kind} names case {case!r}, which is not in the plan")
            if kind == "case_result":
                self._check_single_result(number, case)  # type: ignore[arg-type]
        elif not self._check_structure(number, record, data):
            return
        if (kind in FIGURE_KINDS or kind == "plan") and (why := self.figures.check(kind, data, number)) is not None:
            self._contradiction(number, kind, data, why)
        elif data.schema_version != self.version:
            self._other_version(number, kind, data)
        self.keep(record)
        if self.sink is not None:
            self.sink(record, data)

    def _check_structure(self, number: int, record: LoggedEvent, data: Any) -> bool:
        """The rules about where a kind may appear; False drops a second singleton event."""
        seen, kind, case = self.kind_lines, record.kind, record.case
        if not self.reading.records and kind != "run_start" and not self.start_refused:
            self.error(number, f"the first event must be run_start, not {kind}")
        if "run_end" in seen:
            self.error(number, f"{kind} after run_end (line {seen['run_end']})")
        if kind in ("run_start", "plan", "environment", "run_end") and kind in seen:
            self.error(number, f"second {kind} (the first is on line {seen[kind]})")
            return False
        if kind in RESULT_KINDS and "plan" not in seen:
            self.error(
                number,
                f"{kind} before the plan: tolerances and comparison rules must be declared before any result",
            )
        if kind == "run_start" and (why := unplaceable(data.started_at)) is not None:
            self.warning(
                number,
                f"run_start: started_at {data.started_at[:40]!r} {why}; a site's history places this run last, with no time",
            )
        if kind == "run_start" and (cut := _own_files_missing(data)):
            self.warning(number, cut)
        if kind == "run_start" and (twice := _listed_twice(data)):
            self.error(number, twice)
        if kind == "artifact":
            self.artifacts.append((number, data.path, data.bytes, data.sha256))
        if kind == "artifact" and isinstance(recipe := data.content_recipe, str) and recipe not in CONTENT_RECIPES:
            # A newer collector may hash by a newer recipe: read, but its hashes are of another kind.
            self.warning(
                number,
                f"artifact: content_recipe {recipe[:60]!r} is not a recipe this reportgen knows "
                f"({', '.join(CONTENT_RECIPES)}): its content hashes are not comparable with hashes of those",
            )
        if kind == "environment" and (
            why := family_disagreement(data.backend_family, data.device_type)
            or device_facts_disagreement(data.backend_family, data.device)
        ):
            # A relabelled run would count as evidence for the family's target: not evidence.
            self.error(number, f"environment: {why}; the log contradicts itself")
        if kind == "run_start":
            self.version = data.schema_version
        elif kind == "plan":
            self.planned_cases = {cell.case: cell.case for cell in fill_defaults(data.matrix)}
        elif kind == "run_end":
            self.reading.end_record, self.reading.end_status = record, data.status
        if case is not None and self.planned_cases is not None and case not in self.planned_cases:
            self.error(number, f"{kind} names case {case!r}, which is not in the plan")
        if kind == "case_result":
            self._check_single_result(number, case)  # type: ignore[arg-type]
        seen.setdefault(kind, number)
        self.in_body = "plan" in seen and "run_end" not in seen
        return True

    def _contradiction(self, number: int, kind: str, data: Any, why: str) -> None:
        """A line whose figures contradict its own status or flags is an error: not evidence."""
        case = getattr(data, "case", None)
        where = f"{kind} {case!r}" if isinstance(case, str) else kind
        self.error(number, f"{where}: {why}; the log contradicts itself")

    def _other_version(self, number: int, kind: str, data: Any) -> None:
        """One collector writes every line of its log in its own schema version
        (collector/eventlog.py; a fresh process's events are written by the run's own log): a
        line of another version than run_start's, each a version this reader knows, was not
        written with it. A line of a newer minor than this reader's is read as far as it is
        understood, with its warning."""
        version, started = data.schema_version, self.version
        if started is None or version not in READABLE_VERSIONS or started not in READABLE_VERSIONS:
            return
        self._contradiction(
            number,
            kind,
            data,
            f"schema_version is {version}, but run_start's is {started}: one collector writes its whole log in one version",
        )

    def _check_single_result(self, number: int, case: str) -> None:
        if case in self.result_lines:
            self.error(number, f"second case_result for {case!r} (the first is on line {self.result_lines[case]})")
        self.result_lines[case] = number

    def _seq_problem(self, number: int, seq: int) -> None:
        first = self.seq_lines.get(seq)
        if first is not None:
            self.error(number, f"duplicate seq {seq} (also on line {first})")
        else:
            self.error(number, f"seq {seq} after {self.last_seq}: sequence numbers must increase")
            self.seq_lines[seq] = number

    def finish(self, line_count: int) -> None:
        self.reading_lines = False
        if self.reading.refused:
            return
        if line_count == 0:
            self.error(0, "empty file: no events")
            return
        if not self.reading.records:
            self.error(0, f"no events: {self._what_it_is(line_count)}")
            return
        if self.reading.end_record is None:
            self.warning(line_count, "no run_end: the run is incomplete; cells without a result are untested")

    def check_files(self, run_dir: Path) -> None:
        """Each artifact's file that lies beside the log must have the bytes the log gives it
        (contract.artifact_files): a file of another size or sha256 is not the one the log
        names, and a reader that took the log's hashes (compare's "same weights by content")
        would vouch for a file nobody measured. A file that is not there is no finding (logs
        travel without their artifacts); one too large to read is said unchecked."""
        files = FileChecks(run_dir)
        # The smallest files first: files that spend one log's read budget cannot keep a small
        # one (the reference outputs a comparison reads) from being checked. Said in line order.
        checked = {
            index: files.check(logged, size, sha256)
            for index, (_, logged, size, sha256) in sorted(enumerate(self.artifacts), key=lambda item: item[1][2])
        }
        for index, (line, logged, _, _) in enumerate(self.artifacts):
            found = checked[index]
            if isinstance(found, Path) or found.finding in ("outside", "absent"):
                continue
            if found.contradicts:
                self.error(
                    line,
                    f"artifact: {found.why}: the file beside the log is not the one it names, so the log is not "
                    "evidence for it",
                )
            else:
                self.warning(line, f"artifact: {found.why}: its sha256 was not checked")
                self.reading.unchecked_files.append(logged)

    def _what_it_is(self, line_count: int) -> str:
        """What a file that holds no event is, in a few words."""
        if self.blank_lines == line_count:
            return f"the file holds only blank lines ({line_count})"
        if self.saw_cr:
            return "the file uses bare CR line endings, so it reads as one line that is not JSON"
        if self.reading.truncated and line_count == 1:
            return "the file holds one incomplete line"
        return f"none of its {line_count} lines is a valid event"


class DuplicateKey(ValueError):
    pass


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKey(repr(key))
            seen.add(key)
    return obj


# json.loads joins an escaped surrogate pair into one character: a surrogate left in its text is lone.
_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogate(obj: Any) -> str | None:
    """The location of the first string (key or value) holding a lone surrogate, or None."""
    for where, value in _walk(obj):
        if where and isinstance(where[-1], str) and _SURROGATE.search(where[-1]):  # a dict's key
            return f"{_format_loc(where[:-1], '(line)')}: a key"
        if isinstance(value, str) and _SURROGATE.search(value):
            return _format_loc(where, "(line)")
    return None


def _json_type(value: Any) -> str:
    """What json.loads made of a line that is not an object (only these types, never subclasses)."""
    return {list: "an array", str: "a string", type(None): "null", bool: "a boolean"}.get(type(value), "a number")


_UNKNOWN_FIELD = "Object contains unknown field "
_PATH_PART = re.compile(r"\.([^.\[]+)|(\[[^\]]*\])")
_MISSING_FIELD = "Object missing required field "
_AT = " - at `$"


def _located(obj: dict[str, Any], model: type[Envelope], error: str) -> tuple[str, list[Any]]:
    """msgspec's message and the path it names, as keys and indexes into ``obj``. msgspec writes
    a dict's key as ``[...]``: each is found by converting again with that dict cut to one
    entry at a time (the first whose error is at the same place is the one)."""
    message, _, where = error.partition(_AT)
    parts = _parts(where)
    path: list[Any] = []
    for index, part in enumerate(parts):
        if part == "[...]":
            path.append(_failing_key(obj, model, path, parts[: index + 1]))
        elif part.startswith("["):
            path.append(int(part[1:-1]))
        else:
            path.append(part)
    return message, path


def error_location(error: str) -> tuple[str, str]:
    """msgspec's message of an error and where it is, dotted (``matrix.0.batch``; "" for the
    object itself; a dict's key is ``[...]``)."""
    message, _, where = error.partition(_AT)
    return message, ".".join(part.strip("[]") if part != "[...]" else part for part in _parts(where))


def _parts(where: str) -> list[str]:
    """msgspec's path after ``$``, e.g. ``.matrix[0].batch``, as its parts: matrix, [0], batch."""
    return [name or index for name, index in _PATH_PART.findall(where.rstrip("`"))]


def _failing_key(obj: dict[str, Any], model: type[Envelope], path: list[Any], where: list[str]) -> Any:
    """The key of the dict at ``path`` in ``obj`` whose value fails at ``where`` (msgspec's
    path up to this dict's ``[...]``): msgspec stops at the first such entry, so it is the
    last of the shortest run of leading entries that still fails there, found by halving
    (a few conversions, however many entries). ``obj`` is left as it was."""
    container: Any = obj
    for part in path:
        container = container[part]
    entries = list(container.items())

    def fails_with(count: int) -> bool:
        container.clear()
        container.update(entries[:count])
        try:
            msgspec.convert(obj, model)
        except msgspec.ValidationError as exc:
            return _parts(str(exc).partition(_AT)[2])[: len(where)] == where
        return False

    low, high = 0, len(entries)  # fails with ``high`` entries; not with ``low``
    try:
        if not fails_with(high):
            return "[...]"
        while high - low > 1:
            middle = (low + high) // 2
            low, high = (low, middle) if fails_with(middle) else (middle, high)
    finally:
        container.clear()
        container.update(entries)
    return entries[high - 1][0]


def unknown_fields(value: Any, kind: Any, path: list[Any], found: list[list[Any]]) -> None:
    """Adds to ``found`` the path of every key in ``value`` (as json.loads read it) that names
    no field of the Struct ``kind`` says is there, at any depth: what a newer minor adds. A
    value of another shape than its type is left for the conversion to refuse."""
    while get_origin(kind) is Annotated:
        kind = get_args(kind)[0]
    origin, args = get_origin(kind), get_args(kind)
    if origin in (Union, UnionType):  # the member of the value's shape (a tagged one by its tag)
        if isinstance(value, dict):
            members = [a for a in args if _is_struct(a) or get_origin(a) is dict]
            tags = {a.__struct_config__.tag: a for a in members if _is_struct(a) and a.__struct_config__.tag_field}
            if tags:
                field_name = next(iter(tags.values())).__struct_config__.tag_field
                tag = value.get(field_name)
                members = [tags[tag]] if isinstance(tag, str) and tag in tags else []
        else:
            members = [a for a in args if isinstance(value, list) and get_origin(a) is list]
        if len(members) == 1:
            unknown_fields(value, members[0], path, found)
    elif _is_struct(kind) and isinstance(value, dict):
        fields = _field_types(kind)
        tag = kind.__struct_config__.tag_field
        for key, item in value.items():
            if key in fields:
                unknown_fields(item, fields[key], [*path, key], found)
            elif key != tag:
                found.append([*path, key])
    elif origin is list and isinstance(value, list):
        for index, item in enumerate(value):
            unknown_fields(item, args[0], [*path, index], found)
    elif origin is dict and isinstance(value, dict):
        for key, item in value.items():
            unknown_fields(item, args[1], [*path, key], found)


@functools.cache
def _field_types(kind: Any) -> dict[str, Any]:
    """A Struct's fields by the name a line writes, with their types (resolved once)."""
    return {f.encode_name: f.type for f in msgspec.structs.fields(kind)}


def _is_struct(kind: Any) -> bool:
    return isinstance(kind, type) and issubclass(kind, msgspec.Struct)


def _walk(obj: Any) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """Every value in what json.loads read, with its keys and indexes, in the order written.
    Walked with a stack of its own: a line nested nearly as deep as json.loads allows leaves
    no room for recursion here."""
    pending: list[tuple[tuple[Any, ...], Any]] = [((), obj)]
    while pending:
        where, value = pending.pop()
        yield where, value
        if isinstance(value, dict):
            pending.extend(((*where, key), item) for key, item in reversed(value.items()))
        elif isinstance(value, list):
            pending.extend(((*where, index), item) for index, item in reversed(list(enumerate(value))))


def non_finite_at(obj: Any) -> str | None:
    """Where a number that is not finite is in what json.loads read (infinity, for a literal
    beyond a float's range; NaN, where its constants are let through), or None."""
    for where, value in _walk(obj):
        if isinstance(value, float) and value - value != 0:
            return _format_loc(where)
    return None


def _format_loc(loc: Any, whole: str = "(event)") -> str:
    return ".".join(str(part) for part in loc) or whole


def _format_error(message: str, path: list[Any]) -> str:
    if message.startswith(_MISSING_FIELD):
        return f"{_format_loc([*path, message[len(_MISSING_FIELD) :].strip('`')])}: required field missing"
    if message.startswith(_UNKNOWN_FIELD):
        return f"{_format_loc([*path, message[len(_UNKNOWN_FIELD) :].strip('`')])}: unknown field"
    if message.startswith(_PATTERN) and (said := _PATTERN_WORDS.get(message[len(_PATTERN) :])):
        return f"{_format_loc(path)}: {said}"
    return f"{_format_loc(path)}: {message}"


# What a pattern of the contract asks, in words, where msgspec would quote the regular expression.
_PATTERN = "Expected `str` matching regex "
_PATTERN_WORDS = {  # keyed as msgspec quotes a pattern (its repr)
    repr(
        RUN_ID_PATTERN
    ): "holds a control character (a tab, a newline, an escape): a run id names the run on every line that shows it",
    repr(SHA256_PATTERN): "expected 64 lowercase hexadecimal digits (a sha256)",
}


def _drop_path(obj: Any, loc: list[Any]) -> None:
    for part in loc[:-1]:
        obj = obj[part]
    obj.pop(loc[-1], None)


def read_log(
    path: str | Path,
    sink: EventSink | None = None,
    max_bytes: int = DEFAULT_MAX_LOG_BYTES,
    records: EventLines | None = None,
) -> LogReading:
    """Read and check one log file; never raises, an unreadable file is a problem too.

    ``sink``, when given, sees each accepted event as it is read (see ``EventSink``). Only a
    regular file of at most ``max_bytes`` is read (not a FIFO, a device or a folder).
    ``records`` (empty) receives the accepted events, for a consumer that holds it already.
    """
    reading = LogReading(path=str(path), records=EventLines() if records is None else records)
    checker = _Checker(reading, sink)
    try:
        with open_log(path, max_bytes) as stream, paused_gc():
            count = _read_lines(checker, stream, max_bytes, reread_of(path, stream))
    except NotReadable as exc:
        checker.error(0, f"not read: {exc}")
        return reading
    except OSError as exc:
        checker.error(0, f"cannot read the file: {exc.strerror or exc}")
        return reading
    checker.finish(count)
    if getattr(path, "open_stream", None) is None:  # a log in object storage: its files are not fetched
        checker.check_files(Path(path).parent)
    return reading


# The collector version from which run_start lists each file of the collector's own
# (collector/provenance.py, role collector_source): a log of it without one was cut.
OWN_FILES_FROM = (0, 24)


def _own_files_missing(start: Any) -> str:
    """Why a run_start whose collector hashes its own files lists none ('' when it lists them, or
    its collector is older): a comparison then cannot tell that code by its files."""
    prov = start.provenance
    if absent(prov):
        return ""
    version = re.match(r"(\d+)\.(\d+)", prov.collector_version or "")
    if version is None or (int(version[1]), int(version[2])) < OWN_FILES_FROM:
        return ""
    if any(entry.role == "collector_source" for entry in prov.files or ()):
        return ""
    return (
        f"run_start: provenance names collector {prov.collector_version[:40]!r}, which lists each file of its own "
        "(role collector_source), and lists none: the code that wrote this log cannot be told by its files"
    )


def _listed_twice(start: Any) -> str:
    """A file run_start's provenance lists twice under one role ('' when none is): a collector
    hashes each file it lists once, so a second entry was not written by it, and a comparison
    would line up one of the two by chance."""
    prov = start.provenance
    if absent(prov):
        return ""
    seen: dict[tuple[str, str], Any] = {}
    for entry in prov.files or ():
        # One file of each of these roles a run (collector/run/setup.py), however its path is
        # spelt ('a/./b' is 'a/b'); any other file once by its path.
        key = (entry.role, "" if entry.role in ONE_A_RUN else os.path.normpath(entry.path))
        first = seen.setdefault(key, entry)
        if first is not entry and first.path != entry.path and entry.role in ONE_A_RUN:
            return (
                f"run_start: provenance lists two files as {entry.role} ({first.path[:160]!r} and "
                f"{entry.path[:160]!r}): a run reads one; the log contradicts itself"
            )
        if first is not entry:
            how = "with the same hash" if first == entry else "with another hash"
            return (
                f"run_start: provenance lists {entry.role} {entry.path[:160]!r} twice, {how}: the collector "
                "lists each file once; the log contradicts itself"
            )
    return ""


# The roles of which a run reads one file each (collector/run/setup.py, _files_read).
ONE_A_RUN = frozenset({"plan", "workload_module", "constraint_rules", "backend_adapter", "backend_descriptor"})


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


def _read_lines(checker: _Checker, stream: Any, max_bytes: int, reread: Reread | None = None) -> int:
    """Check line by line, CHUNK_BYTES read at a time (the part line at a chunk's end is
    carried into the next); a line without a newline can only be the last. Returns the
    number of lines read."""
    number = base = total = 0  # base: where ``held`` starts in the file
    read = checker.read_line
    held = b""
    skipping = False  # inside a line longer than MAX_LINE_BYTES, until its newline
    while True:
        want = min(CHUNK_BYTES, max_bytes + 1 - total) if total <= max_bytes else 0
        part = stream.read(want) if want else b""
        total += len(part)
        over = total > max_bytes
        if over:
            part = part[: len(part) - (total - max_bytes)]
        data = held + part if held else part
        begin = 0
        if skipping:
            cut = data.find(b"\n") + 1
            begin = cut if cut else len(data)
            skipping = not cut
        end = data.rfind(b"\n", begin) + 1
        if end:
            offset = base + begin
            for raw in data[begin : end - 1].split(b"\n"):
                number += 1
                if len(raw) > MAX_LINE_BYTES:
                    checker.error(number, f"line longer than {MAX_LINE_BYTES} bytes; skipped")
                    if checker.reading.refused:
                        return number
                elif read(number, raw, offset, reread):
                    return number  # refused: nothing more is read
                offset += len(raw) + 1
            begin = end
        held = data[begin:]
        base += begin
        if over or not part:
            break
        if len(held) > MAX_LINE_BYTES:
            number += 1
            checker.error(number, f"line longer than {MAX_LINE_BYTES} bytes; skipped")
            base += len(held)
            held, skipping = b"", True
    if over:
        checker.error(
            number + 1,
            f"the file grew past the limit of {describe_size(max_bytes)} while being read; the rest is not read",
        )
        return number + 1
    if held and not skipping:
        number += 1
        if len(held) > MAX_LINE_BYTES:
            checker.error(number, f"line longer than {MAX_LINE_BYTES} bytes; skipped")
        else:
            checker.check_line(number, held, unterminated=True)
    return number


def fill_defaults(matrix: list[Any]) -> list[Any]:
    """A plan mirror's matrix made into the run's planned cells, in place: each optional field
    a cell's line left out (UNSET) takes the definition's default, so the cells read as
    PlannedCell's do (``repeat_of`` None). Done after the duplicate-key check, which needs the line's keys
    exactly; one decode serves both (a long plan's matrix holds tens of thousands of cells)."""
    for name, default in PLANNED_DEFAULTS.items():
        for cell in compress(matrix, map(is_, map(attrgetter(name), matrix), repeat(UNSET))):
            force_setattr(cell, name, default)  # the cells are frozen; none is shared yet
    return matrix


def validate_files(
    paths: list[str], as_json: bool, max_problems: int, max_bytes: int = DEFAULT_MAX_LOG_BYTES
) -> Iterator[tuple[str, bool]]:
    """Check logs for ``reportgen validate``, one at a time: each log's text to print (``as_json``:
    its JSON object) and whether it is valid. A log's findings are let go before the next log
    is read: a folder of many logs full of findings holds one log's at a time."""
    for path in paths:
        reading = read_log(path, max_bytes=max_bytes)
        if as_json:
            yield json.dumps(_reading_summary(reading), indent=2), reading.valid
        else:
            yield _format_reading(reading, max_problems), reading.valid


def _reading_summary(reading: LogReading) -> dict[str, Any]:
    return {
        "file": reading.path,
        "valid": reading.valid,
        "complete": reading.complete,
        "truncated": reading.truncated,
        "events": len(reading.records),
        "problems": [{"line": p.line, "severity": p.severity, "message": p.message} for p in reading.problems],
        # Found past the first MAX_KEPT_PROBLEMS, counted only (absent when none).
        **(
            {"more_errors": reading.more_errors, "more_warnings": reading.more_warnings}
            if reading.more_errors or reading.more_warnings
            else {}
        ),
    }


def _format_reading(reading: LogReading, max_problems: int) -> str:
    # Errors first: a long log's warnings must not push its one error out of the lines shown.
    ordered = sorted(reading.problems, key=lambda p: p.severity != "error")
    listed = ordered if max_problems <= 0 else ordered[:max_problems]
    lines = [p.format() for p in listed]
    hidden = len(reading.problems) - len(listed)
    uncounted = reading.more_errors + reading.more_warnings
    if hidden:
        shows = (
            "--max-problems 0 shows all"
            if not uncounted
            else f"--max-problems 0 shows the first {MAX_KEPT_PROBLEMS:,} errors and {MAX_KEPT_PROBLEMS:,} warnings"
        )
        lines.append(f"{shown(reading.path)}: ... and {hidden + uncounted} more problems ({shows})")
    elif uncounted:
        lines.append(f"{shown(reading.path)}: ... and {uncounted} more problems, counted, not kept")
    state = "valid" if reading.valid else "INVALID"
    completeness = "complete" if reading.complete else "incomplete"
    lines.append(
        f"{shown(reading.path)}: {state}, {completeness}, {len(reading.records)} events, "
        f"{reading.error_count} errors, {reading.warning_count} warnings"
    )
    return "\n".join(lines)
