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
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from reportgen.storage.local import describe_size

MAX_BYTES = 1 << 30

# Why a file was not read: "outside" its run folder, "absent" (no regular file there),
# "unreadable" (the path names no file this system can open), "large" (over MAX_BYTES), or
# it is not the file the log names: of another "size", or other bytes ("sha256").
Finding = Literal["outside", "absent", "unreadable", "large", "size", "sha256"]


@dataclass(frozen=True)
class FileProblem:
    """Why a logged file was not read, in words, and which kind of reason it is."""

    why: str
    finding: Finding

    @property
    def contradicts(self) -> bool:
        """The file beside the log is not the one the log names: its size or bytes differ."""
        return self.finding in ("size", "sha256")


def checked_file(run_dir: Path, logged: str, size: int, sha256: str) -> Path | FileProblem:
    """The logged file, when it lies inside ``run_dir`` and has the size and sha256 logged;
    else why not. Never raises."""
    try:
        root = run_dir.resolve()
        path = (root / logged).resolve()
        if not path.is_relative_to(root):
            return FileProblem(f"{logged} lies outside its run directory", "outside")
        if not path.is_file():
            return FileProblem(f"{logged} is not beside the log", "absent")
        actual = path.stat().st_size
        if actual != size:
            return FileProblem(f"{logged} is {actual} bytes, the log recorded {size}", "size")
        if actual > MAX_BYTES:
            return FileProblem(
                f"{logged} is {describe_size(actual)}, more than the {describe_size(MAX_BYTES)} read here", "large"
            )
        with path.open("rb") as handle:
            digest = hashlib.file_digest(handle, "sha256")
    except (OSError, ValueError) as exc:  # a name too long, a NUL in it, a file gone meanwhile
        return FileProblem(f"{logged} cannot be read ({getattr(exc, 'strerror', None) or exc})", "unreadable")
    if digest.hexdigest() != sha256:
        return FileProblem(f"{logged} does not match the sha256 in the log", "sha256")
    return path
