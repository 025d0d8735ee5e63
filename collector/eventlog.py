"""Append-only JSON-lines writer: every line is flushed and fsynced as it is written.

A device crash or kill -9 therefore leaves a log whose every written line is whole; the
report generator reads it up to its last line and marks the rest of the matrix untested.
"""

from __future__ import annotations

import json
import math
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

SCHEMA_VERSION = "1.1"


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
        self._file = open(path, "a", encoding="utf-8", newline="\n")
        self._seq = 0
        self.kinds_written: list[str] = []

    def write(self, kind: str, **fields: Any) -> None:
        # The number is taken before the line is written: a signal handler that writes the
        # aborted run_end between the write and the count would otherwise reuse it.
        seq, self._seq = self._seq, self._seq + 1
        line = {"schema_version": SCHEMA_VERSION, "seq": seq, "time": utc_now(), "kind": kind}
        line.update({k: v for k, v in fields.items() if v is not None})
        text = json.dumps(line, allow_nan=False, sort_keys=False, ensure_ascii=False)
        self._file.write(text + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())
        self.kinds_written.append(kind)

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()
