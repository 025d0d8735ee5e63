"""Helpers for the hostile-input tables: run a command with a deadline, snapshot a folder tree."""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from click.testing import CliRunner

from reportgen.cli import main

DEADLINE_S = 60


@contextlib.contextmanager
def deadline(seconds: int) -> Iterator[None]:
    """Fail instead of hanging: SIGALRM interrupts even a blocking open() of a FIFO."""

    def fire(signum: int, frame: object) -> None:
        raise TimeoutError(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, fire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@dataclass
class Outcome:
    code: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def line_with(self, fragment: str) -> str:
        """The one output line that holds fragment (the message is a single line)."""
        lines = [line for line in self.output.splitlines() if fragment in line]
        assert lines, f"no line with {fragment!r} in:\n{self.output}"
        return lines[0]


def invoke(args: list[str], seconds: int = DEADLINE_S) -> Outcome:
    """Run `reportgen ARGS` in this process: no traceback, no hang, an exit code."""
    with deadline(seconds):
        result = CliRunner().invoke(main, [str(a) for a in args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError("reportgen raised:\n" + "".join(traceback.format_exception(result.exception)))
    assert "Traceback" not in result.output
    return Outcome(result.exit_code, result.stdout, result.stderr)


def snapshot(root: Path) -> dict[str, tuple[str, bytes | str | None]]:
    """Every entry under root, without following symlinks: (type, content or link target)."""
    found: dict[str, tuple[str, bytes | str | None]] = {}
    for folder, dirs, files in os.walk(root, followlinks=False):
        for name in dirs + files:
            path = Path(folder) / name
            st = os.lstat(path)
            key = str(path.relative_to(root))
            if stat.S_ISLNK(st.st_mode):
                found[key] = ("link", os.readlink(path))
            elif stat.S_ISREG(st.st_mode):
                found[key] = ("file", path.read_bytes())
            elif stat.S_ISDIR(st.st_mode):
                found[key] = ("dir", None)
            else:
                found[key] = ("special", None)
    return found
