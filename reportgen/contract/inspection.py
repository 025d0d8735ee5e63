"""Reading an inspection log (``python -m collector inspect``): every line checked, or a clear error.

An inspection log is untrusted input like a run log: a line that is not JSON, names a kind an
inspection log does not hold, or breaks its model is an error naming the file and line. Nothing
in it is a measurement on a device.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from reportgen.contract.events import INSPECTION_MODELS, SCHEMA_MAJOR, Inspection, InspectionEnd, InspectionStart
from reportgen.contract.validation import DuplicateKey, error_location, lone_surrogate, non_finite_at, unique_keys
from reportgen.storage.local import NotReadable, read_bounded

MAX_INSPECTION_BYTES = 64 * 1024 * 1024
# The key the collector gives an inspected shape: batch, length and layout.
_SHAPE_KEY = re.compile(r"b(\d+)-l(\d+)-(contiguous|noncontiguous)")


class InspectionError(ValueError):
    """The inspection log cannot be used; the message names the file and line."""


@dataclass
class InspectionLog:
    path: str
    start: InspectionStart
    shapes: list[Inspection] = field(default_factory=list)
    end: InspectionEnd | None = None


def read_inspection(path: Path, max_bytes: int = MAX_INSPECTION_BYTES) -> InspectionLog:
    """The inspection log at path, read like every other input: a regular file only (a FIFO
    would wait for a writer, a device never ends) and no more than max_bytes."""
    try:
        text = read_bounded(path, max_bytes).decode("utf-8")
    except NotReadable as exc:
        raise InspectionError(f"{path}: not read: {exc}") from None
    except OSError as exc:
        raise InspectionError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise InspectionError(f"{path}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    log: InspectionLog | None = None
    seq = -1
    shapes: set[tuple[int, int, str]] = set()
    # Lines end at LF only: str.splitlines() also ends a line at U+2028, U+0085, \x1c and more,
    # which the collector writes as they are inside a JSON string (ensure_ascii=False).
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        event = _event(path, number, line)
        if isinstance(event, InspectionStart):
            if log is not None:
                raise InspectionError(f"{path}:{number}: a second inspection_start")
            log = InspectionLog(str(path), event)
        elif log is None:
            raise InspectionError(f"{path}:{number}: the first event must be inspection_start, not {event.kind}")
        elif log.end is not None:
            raise InspectionError(f"{path}:{number}: {event.kind} after inspection_end")
        elif event.seq <= seq:
            raise InspectionError(f"{path}:{number}: seq {event.seq} after seq {seq}: the collector counts up")
        elif isinstance(event, InspectionEnd):
            if event.shapes_inspected != len(log.shapes) or event.shapes_planned < event.shapes_inspected:
                raise InspectionError(
                    f"{path}:{number}: inspection_end counts {event.shapes_inspected} shape(s) inspected of "
                    f"{event.shapes_planned} planned, but the log holds {len(log.shapes)} inspection(s)"
                )
            log.end = event
        else:
            _check_shape(path, number, event, shapes)
            log.shapes.append(event)
        seq = event.seq
    if log is None:
        raise InspectionError(
            f"{path}: no inspection_start: not an inspection log (python -m collector inspect writes one)"
        )
    return log


def _check_shape(path: Path, number: int, event: Inspection, seen: set[tuple[int, int, str]]) -> None:
    """A shape's key names its own batch, length and layout, and no shape (batch, length and
    layout, as plan-check reads them) is inspected twice, whatever its key says; ``seen``: the
    shapes of the lines before (one set: a check of every earlier line is quadratic)."""
    named = _SHAPE_KEY.fullmatch(event.shape)
    if named is not None and named.groups() != (str(event.batch), str(event.length), event.layout):
        raise InspectionError(
            f"{path}:{number}: inspection {event.shape[:80]!r} has batch {event.batch}, length {event.length}, "
            f"{event.layout}: its key names another shape"
        )
    shape = (event.batch, event.length, event.layout)
    if shape in seen:
        raise InspectionError(
            f"{path}:{number}: shape batch {event.batch}, length {event.length}, {event.layout} is inspected a second time"
        )
    seen.add(shape)


def _event(path: Path, number: int, line: str) -> InspectionStart | Inspection | InspectionEnd:
    try:
        data = json.loads(line, object_pairs_hook=unique_keys)
    except DuplicateKey as exc:
        # As in a run log: a reader could take either value (json.loads keeps the last, which
        # hid a refused first one).
        raise InspectionError(
            f"{path}:{number}: duplicate key {exc} in one JSON object: the line is ambiguous"
        ) from None
    except ValueError as exc:
        raise InspectionError(f"{path}:{number}: not JSON: {exc}") from None
    except RecursionError:
        raise InspectionError(f"{path}:{number}: not JSON: nested too deeply") from None
    if not isinstance(data, dict):
        raise InspectionError(f"{path}:{number}: expected a JSON object")
    kind = data.get("kind")
    model = INSPECTION_MODELS.get(kind) if isinstance(kind, str) else None
    if model is None:
        raise InspectionError(
            f"{path}:{number}: kind {kind!r} is not one of an inspection log's ({', '.join(INSPECTION_MODELS)})"
        )
    version = data.get("schema_version")
    if not isinstance(version, str) or version.split(".", 1)[0] != str(SCHEMA_MAJOR):
        raise InspectionError(f"{path}:{number}: schema_version {version!r}: this reader reads {SCHEMA_MAJOR}.x")
    if (where := lone_surrogate(data)) is not None:
        raise InspectionError(
            f"{path}:{number}: {kind}.{where}: a lone surrogate escape (\\ud800-\\udfff) is not Unicode text"
        )
    if (where := non_finite_at(data)) is not None:
        raise InspectionError(f"{path}:{number}: {kind}.{where}: not a finite number")
    try:
        return msgspec.convert(data, model)  # type: ignore[return-value]
    except msgspec.ValidationError as exc:
        message, where = error_location(str(exc))
        raise InspectionError(f"{path}:{number}: {kind}{'.' + where if where else ''}: {message}") from None
