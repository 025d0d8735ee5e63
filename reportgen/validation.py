"""Read a JSON-lines run log defensively and check it against the event contract.

A log is untrusted input: it may be truncated by a crash, hand-edited, written by somebody
else's collector or by a newer version of ours. Reading never raises for bad content; every
problem becomes a located ``Problem`` and the events that did validate are kept, so a log that
stops early is still usable up to its last good line.
"""

from __future__ import annotations

import contextlib
import gc
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Literal

from pydantic import TypeAdapter, ValidationError

from reportgen.events import (
    EVENT_MODELS,
    RESULT_KINDS,
    SCHEMA_MAJOR,
    SCHEMA_MINOR,
    SCHEMA_VERSION,
    Envelope,
    Event,
    Plan,
    RunEnd,
)

MAX_LINE_BYTES = 8 * 1024 * 1024
UTF8_BOM = b"\xef\xbb\xbf"

Severity = Literal["error", "warning"]
_EVENT_ADAPTER: TypeAdapter[Any] = TypeAdapter(Event)


@dataclass(frozen=True)
class Problem:
    """One located finding; line 0 means the file as a whole."""

    file: str
    line: int
    severity: Severity
    message: str

    def format(self) -> str:
        return f"{self.file}:{self.line}: {self.severity}: {self.message}"


@dataclass
class LogReading:
    """Everything learnt from one log: the valid events in order, and the problems."""

    path: str
    events: list[Envelope] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    truncated: bool = False
    refused: bool = False

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def valid(self) -> bool:
        return not self.errors

    @property
    def run_end(self) -> RunEnd | None:
        ends = [e for e in self.events if isinstance(e, RunEnd)]
        return ends[0] if ends else None

    @property
    def complete(self) -> bool:
        end = self.run_end
        return end is not None and end.status == "complete" and not self.truncated


class _NonFiniteLiteral(ValueError):
    pass


def _refuse_constant(name: str) -> float:
    raise _NonFiniteLiteral(name)


class _Checker:
    """Stateful line-by-line checks: envelope, model, sequence and ordering rules."""

    def __init__(self, reading: LogReading) -> None:
        self.reading = reading
        self.last_seq: int | None = None
        self.seq_lines: dict[int, int] = {}
        self.kind_lines: dict[str, int] = {}
        self.planned_cases: set[str] | None = None
        self.result_lines: dict[str, int] = {}

    def problem(self, line: int, severity: Severity, message: str) -> None:
        self.reading.problems.append(Problem(self.reading.path, line, severity, message))

    def check_line(self, number: int, raw: bytes, unterminated: bool) -> None:
        """The careful path for a line the fast path did not accept: says what is wrong."""
        if number == 1 and raw.startswith(UTF8_BOM):
            raw = raw[len(UTF8_BOM):]
            self.problem(1, "warning", "file starts with a UTF-8 byte-order mark; ignored")
        if not raw.strip():
            self.problem(number, "warning", "blank line ignored")
            return
        event = self._slow_validate(number, raw, unterminated)
        if event is not None:
            self.check_order(number, event)

    def _slow_validate(self, number: int, raw: bytes, unterminated: bool) -> Envelope | None:
        obj = self._parse_json(number, raw, unterminated)
        if obj is None:
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
        try:
            return json.loads(text, parse_constant=_refuse_constant)
        except _NonFiniteLiteral as exc:
            self.problem(number, "error", f"{exc} is not valid JSON; write null for a value that is not a finite number")
        except json.JSONDecodeError as exc:
            if unterminated:
                self.reading.truncated = True
                self.problem(number, "warning", "truncated last line (no newline, incomplete JSON); ignored, the run is incomplete")
            else:
                self.problem(number, "error", f"not valid JSON: {exc.msg} at column {exc.colno}")
        except RecursionError:
            self.problem(number, "error", "not valid JSON: nested too deeply")
        except ValueError as exc:
            self.problem(number, "error", f"unreadable JSON value: {str(exc).split(';')[0]}")
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

    def check_order(self, number: int, event: Envelope) -> None:
        self._check_seq(number, event.seq)
        kind = event.kind  # type: ignore[attr-defined]
        seen = self.kind_lines
        if not self.reading.events and kind != "run_start":
            self.problem(number, "error", f"the first event must be run_start, not {kind}")
        if "run_end" in seen:
            self.problem(number, "error", f"{kind} after run_end (line {seen['run_end']})")
        if kind in ("run_start", "plan", "environment", "run_end") and kind in seen:
            self.problem(number, "error", f"second {kind} (the first is on line {seen[kind]})")
            return
        if kind in RESULT_KINDS and "plan" not in seen:
            self.problem(number, "error", f"{kind} before the plan: tolerances must be declared before any result")
        if isinstance(event, Plan):
            self.planned_cases = {cell.case for cell in event.matrix}
        case = getattr(event, "case", None)
        if case is not None and self.planned_cases is not None and case not in self.planned_cases:
            self.problem(number, "error", f"{kind} names case {case!r}, which is not in the plan")
        if kind == "case_result":
            if case in self.result_lines:
                self.problem(number, "error", f"second case_result for {case!r} (the first is on line {self.result_lines[case]})")
            self.result_lines[case] = number
        seen.setdefault(kind, number)
        self.reading.events.append(event)
        self.reading.lines.append(number)

    def _check_seq(self, number: int, seq: int) -> None:
        last = self.last_seq
        if last is None or seq > last:
            self.seq_lines[seq] = number
            self.last_seq = seq
        elif seq in self.seq_lines:
            self.problem(number, "error", f"duplicate seq {seq} (also on line {self.seq_lines[seq]})")
        else:
            self.problem(number, "error", f"seq {seq} after {last}: sequence numbers must increase")
            self.seq_lines[seq] = number

    def finish(self, line_count: int) -> None:
        if self.reading.refused:
            return
        if line_count == 0:
            self.problem(0, "error", "empty file: no events")
            return
        if not self.reading.events:
            return
        if self.reading.run_end is None:
            self.problem(line_count, "warning", "no run_end: the run is incomplete; cells without a result are untested")


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


def read_log(path: str | Path) -> LogReading:
    """Read and check one log file; never raises, an unreadable file is a problem too."""
    reading = LogReading(path=str(path))
    checker = _Checker(reading)
    try:
        count = _check_stream(checker, path)
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


def _check_stream(checker: _Checker, path: str | Path) -> int:
    with paused_gc():
        return _read_lines(checker, path)


def _read_lines(checker: _Checker, path: str | Path) -> int:
    """Check line by line; a line without a newline can only be the last (or an oversize one).

    Most lines of a real log are valid, so each is first handed to pydantic-core, which parses
    and validates it in one pass; only a line it rejects takes the careful path that explains.
    """
    validate = _EVENT_ADAPTER.validate_json
    accept = checker.check_order
    number = 0
    with open(path, "rb") as stream:
        readline = stream.readline
        while chunk := readline(MAX_LINE_BYTES + 1):
            number += 1
            if chunk[-1:] == b"\n":
                raw, unterminated = chunk[:-1].rstrip(b"\r"), False
            elif len(chunk) > MAX_LINE_BYTES:
                while chunk and chunk[-1:] != b"\n":
                    chunk = readline(MAX_LINE_BYTES)
                checker.problem(number, "error", f"line longer than {MAX_LINE_BYTES} bytes; skipped")
                continue
            else:
                raw, unterminated = chunk, True
            if checker.reading.refused:
                continue
            try:
                event = validate(raw)
            except ValidationError:
                event = None
            if event is not None and event.schema_version == SCHEMA_VERSION:
                accept(number, event)
            else:
                checker.check_line(number, raw, unterminated)
    return number


def validate_files(paths: list[str], as_json: bool, max_problems: int) -> tuple[str, int]:
    """Check logs for ``reportgen validate``: the text to print and the exit code (0 or 1)."""
    readings = [read_log(path) for path in paths]
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
        "events": len(reading.events),
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
        f"{reading.path}: {state}, {completeness}, {len(reading.events)} events, "
        f"{len(reading.errors)} errors, {len(reading.problems) - len(reading.errors)} warnings"
    )
    return "\n".join(lines)
