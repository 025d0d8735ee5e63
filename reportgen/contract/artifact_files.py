"""The files a log's artifact events name beside it, checked against what the log says of them.

The collector saves a run's weights, inputs and reference outputs under the run's folder and
logs each file's path (relative to that folder), size and sha256 (collector/run/setup.py,
reference.py). A log is often moved without them, so a file that is not there is no finding.
A file that is there is read only when it lies inside the run folder, is a regular file of the
size the log recorded and at most MAX_BYTES: then its sha256 must be the one the log gives it.
The reader (contract.validation) makes a file of other bytes an error of the log, and the
comparison of two runs' saved reference outputs (model.artifacts) reads only a file that passed.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from reportgen.storage.local import describe_size

MAX_BYTES = 1 << 30  # one file read to its end, at most
MAX_LOG_BYTES = 2 << 30  # all the files of one log together, at most (each file is hashed once)
SHOWN = 120  # characters of a logged path a message shows

# Why a file was not read: its path names a place "outside" its run folder, or it is a link
# there ("linked"), "absent" (no regular file there), "unreadable" (the path names no file this
# system can open), "large" (over MAX_BYTES, or past what one log's files may cost), or it is
# not the file the log names: of another "size", or other bytes ("sha256").
Finding = Literal["outside", "linked", "absent", "unreadable", "large", "size", "sha256"]


@dataclass(frozen=True)
class FileProblem:
    """Why a logged file was not read, in words, and which kind of reason it is."""

    why: str
    finding: Finding

    @property
    def contradicts(self) -> bool:
        """The file beside the log is not the one the log names: its size or bytes differ."""
        return self.finding in ("size", "sha256")


def _shown(logged: str) -> str:
    """A logged path as a message shows it: clipped, so a hostile path makes no huge line."""
    return logged if len(logged) <= SHOWN else f"{logged[: SHOWN - 1]}…"


class FileChecks:
    """The files one log names beside it, each read at most once, MAX_LOG_BYTES in all: a log
    that names one large file in a thousand artifact events costs one read of it, not a
    thousand."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.left = MAX_LOG_BYTES
        self.digests: dict[Path, str] = {}

    def check(self, logged: str, size: int, sha256: str) -> Path | FileProblem:
        """The logged file, when it lies inside the run folder and has the size and sha256
        logged; else why not. A path that leads out of the run folder (``..``, an absolute
        path, a link) is not read. Never raises."""
        shown = _shown(logged)
        try:
            root = self.run_dir.resolve()
            named = root / logged
            if not Path(os.path.normpath(named)).is_relative_to(root):
                return FileProblem(f"{shown} names a place outside its run folder", "outside")
            path = named.resolve()
            if not path.is_relative_to(root):
                return FileProblem(f"{shown} links to a file outside its run folder, which is not read", "linked")
            if not path.is_file():
                return FileProblem(f"{shown} is not beside the log", "absent")
            actual = path.stat().st_size
            if actual != size:
                return FileProblem(f"{shown} is {actual} bytes, the log recorded {size}", "size")
            digest = self.digests.get(path)
            if digest is None:
                if actual > MAX_BYTES:
                    return FileProblem(
                        f"{shown} is {describe_size(actual)}, more than the {describe_size(MAX_BYTES)} read here",
                        "large",
                    )
                if actual > self.left:
                    return FileProblem(
                        f"{shown} would pass the {describe_size(MAX_LOG_BYTES)} read for one log's files", "large"
                    )
                with path.open("rb") as handle:
                    digest = hashlib.file_digest(handle, "sha256").hexdigest()
                self.left -= actual
                self.digests[path] = digest
        except (OSError, ValueError, RuntimeError) as exc:  # a name too long, a NUL, a link loop, a file gone
            return FileProblem(f"{shown} cannot be read ({getattr(exc, 'strerror', None) or exc})", "unreadable")
        if digest != sha256:
            return FileProblem(f"{shown} does not match the sha256 in the log", "sha256")
        return path


def checked_file(run_dir: Path, logged: str, size: int, sha256: str) -> Path | FileProblem:
    """One logged file checked on its own (FileChecks.check)."""
    return FileChecks(run_dir).check(logged, size, sha256)
