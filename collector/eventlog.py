"""Append-only JSON-lines writer: every line is written whole, fsynced, then counted.

A device crash or kill -9 therefore leaves a log whose every written line is whole; the
report generator reads it up to its last line and marks the rest of the matrix untested.
A line that cannot be written whole (a full disk, a file-size limit) is cut off again, so the
file keeps only whole lines, and the error is raised (``OutOfSpace`` for a lack of space).
A SIGINT or SIGTERM that arrives during a write takes effect once the line is counted
(``collector.interrupt``), so no sequence number is ever written twice.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from collector import interrupt

SCHEMA_VERSION = "1.7"
# The longest line the event contract reads (reportgen.contract.validation.MAX_LINE_BYTES).
MAX_LINE_BYTES = 8 * 1024 * 1024
SPACE_ERRNOS = {errno.ENOSPC, errno.EFBIG, errno.EDQUOT}
EXIT_OUT_OF_SPACE = 4  # the collector's exit code, and a fresh process's, for a lack of space
OUT_OF_SPACE_LINE = "collector: out of space in a fresh process"  # what a fresh process says then


class OutOfSpace(Exception):
    """A file of the run could not be written for lack of space or a file-size limit."""

    def __init__(self, path: Path, cause: BaseException) -> None:
        super().__init__(f"{path}: {space_words(cause) or cause}")
        self.path = path
        self.cause = cause


# What a child program (a compiler: g++ for Inductor, neuronx-cc) says when it runs out of space
# or meets a file-size limit: it reaches the collector only as the text of an exception.
SPACE_WORDS = ("No space left on device", "File size limit exceeded", "Disk quota exceeded")


def message_of(exc: BaseException, limit: int | None = 4000) -> str:
    """An exception's message, at most ``limit`` characters (None: all); what workload code raised may have a
    ``__str__`` that raises in turn, which must not end the run."""
    try:
        return str(exc)[:limit]
    except interrupt.ENDS_RUN:
        raise
    except BaseException as inner:
        return f"(its message could not be read: str() raised {type(inner).__name__})"


def space_words(exc: BaseException | None) -> str | None:
    """Why the exception is a lack of space, from its chain: an out-of-space OSError's strerror,
    or a child program's words for it in a message; None when it is not one."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in SPACE_ERRNOS:
            return exc.strerror or os.strerror(exc.errno)
        said = message_of(exc, None)
        words = next((words for words in SPACE_WORDS if words in said), None)
        if words is not None:
            return words
        exc = exc.__cause__ or exc.__context__
    return None


def is_out_of_space(exc: BaseException) -> bool:
    return space_words(exc) is not None


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def finite_or_none(value: float | None) -> float | None:
    """JSON has no NaN or Infinity: a value that is not a finite number is written as null."""
    if value is None or not math.isfinite(value):
        return None
    return float(value)


class EventLog:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._size = os.fstat(self._fd).st_size  # bytes of whole lines
        self._seq = 0
        self.kinds_written: list[str] = []

    def write(self, kind: str, **fields: Any) -> None:
        if self._fd is None:
            raise ValueError(f"{self.path} is closed")
        line = {"schema_version": SCHEMA_VERSION, "seq": self._seq, "time": utc_now(), "kind": kind}
        line.update({k: v for k, v in fields.items() if v is not None})
        data = (json.dumps(line, allow_nan=False, sort_keys=False, ensure_ascii=False) + "\n").encode("utf-8")
        if len(data) > MAX_LINE_BYTES:  # reportgen would skip it: never write a line it refuses
            raise ValueError(
                f"a {kind} event of {len(data):,} bytes is longer than the event contract's line limit of {MAX_LINE_BYTES:,} bytes"
            )
        with interrupt.writing_line():
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(self._fd, view) :]
                os.fsync(self._fd)
            except OSError as exc:
                with contextlib.suppress(OSError):
                    os.ftruncate(self._fd, self._size)
                if is_out_of_space(exc):
                    raise OutOfSpace(self.path, exc) from exc
                raise
            self._size += len(data)
            self._seq += 1
            self.kinds_written.append(kind)

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)
