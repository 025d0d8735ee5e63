"""Local files and folders: the one place that decides which entries are run logs and reads
them, and the one place that writes into an output folder.

Folders handed to reportgen are untrusted: an entry named like a log may be a FIFO, a device,
a folder, a dangling symlink or a symlink to somewhere else on the machine. Only regular files
are read, none larger than a size limit, and a symlink is followed only when its target stays
inside the folder that was given (or when the caller asks to follow symlinks). Every entry
that looks like a log but is not read is returned with the reason, for the caller to print.

Writing goes through ``write_inside`` and ``remove_inside``: nothing is written through a
symlink or into a folder that leads outside the output folder, and nothing outside it is
ever removed.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

DEFAULT_MAX_LOG_BYTES = 1 << 30  # 1 GiB: far above any real run (200,000 events is ~100 MB)
MAX_SIDE_FILE_BYTES = 16 << 20  # annotations and the site's state file
LOG_SUFFIX = ".jsonl"
RUN_LOG_NAME = "events.jsonl"
ANNOTATIONS_NAME = "annotations.toml"
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)


class NotReadable(Exception):
    """An entry that is not read, and why (one line)."""


class UnsafeOutput(Exception):
    """Writing or removing this path would reach outside the output folder."""


@dataclass(frozen=True)
class Skipped:
    path: Path
    reason: str

    def format(self) -> str:
        return f"{self.path}: skipped: {self.reason}"


@dataclass(frozen=True)
class LogEntry:
    """A log to read, and the annotations file beside it that may be read (or None)."""

    path: Path
    annotations: Path | None


@dataclass
class Found:
    logs: list[LogEntry] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)

    @property
    def paths(self) -> list[Path]:
        return [entry.path for entry in self.logs]


def parse_size(text: str) -> int:
    """'500M', '2G', '1048576' -> bytes (powers of 1024); ValueError for anything else."""
    match = _SIZE.match(text)
    if not match:
        raise ValueError(f"{text!r} is not a size like 200M or 2G")
    number, unit = float(match.group(1)), match.group(2).lower()
    return int(number * 1024 ** " kmgt".index(unit or " "))


def describe_size(count: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= scale:
            return f"{count / scale:.3g} {unit}"
    return f"{count} bytes"


def _type_name(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _check_regular(st: os.stat_result, max_bytes: int) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise NotReadable(f"{_type_name(st.st_mode)}, not a regular file; only regular files are read")
    if st.st_size > max_bytes:
        raise NotReadable(f"{describe_size(st.st_size)}, larger than the limit of {describe_size(max_bytes)} (--max-log-size)")


def open_regular(path: str | Path, max_bytes: int = DEFAULT_MAX_LOG_BYTES) -> BinaryIO:
    """Open a regular file of at most max_bytes for reading; NotReadable (or OSError) otherwise.

    The type is checked before opening (opening a FIFO would wait for a writer) and again on
    the open descriptor, so an entry swapped in between is caught too.
    """
    _check_regular(os.stat(path), max_bytes)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        _check_regular(os.fstat(fd), max_bytes)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def read_bounded(path: str | Path, max_bytes: int) -> bytes:
    """The bytes of a regular file of at most max_bytes (also if it grows while read)."""
    with open_regular(path, max_bytes) as stream:
        data = stream.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise NotReadable(f"grew past the limit of {describe_size(max_bytes)} while being read")
    return data


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _vet(path: Path, root: Path | None, follow: bool, max_bytes: int) -> str | None:
    """Why the entry at path (found under root) is not read, or None when it is read."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        return f"cannot read it: {exc.strerror}"
    if stat.S_ISLNK(st.st_mode):
        target = Path(os.path.realpath(path))
        if not target.exists():
            return f"a dangling symlink (to {os.readlink(path)})"
        if root is not None and not follow and not _inside(target, root):
            return f"a symlink to {target}, outside {root}; not followed (--follow-symlinks reads it)"
        try:
            st = os.stat(path)
        except OSError as exc:
            return f"cannot read it: {exc.strerror}"
    try:
        _check_regular(st, max_bytes)
    except NotReadable as exc:
        return str(exc)
    return None


def annotations_beside(log: Path, root: Path | None = None, follow: bool = False) -> tuple[Path | None, str | None]:
    """The annotations file next to a log if there is one that may be read, else why not.

    root is the folder the log was found in (default: the log's own folder). Returns
    (path, None) for a usable file, (None, reason) for one that is not read, (None, None)
    when there is none.
    """
    candidate = log.parent / ANNOTATIONS_NAME
    if not os.path.lexists(candidate):
        return None, None
    base = root if root is not None else Path(os.path.realpath(log.parent))
    reason = _vet(candidate, base, follow, MAX_SIDE_FILE_BYTES)
    return (candidate, None) if reason is None else (None, reason)


def find_logs(paths: list[Path], follow_symlinks: bool = False, max_bytes: int = DEFAULT_MAX_LOG_BYTES) -> Found:
    """Logs named directly, run directories, or folders searched for *.jsonl logs.

    A path named directly is the caller's choice and is followed wherever it points (it must
    still be a regular file within the size limit). Inside a folder, only entries that end in
    .jsonl are candidates; those that are not read are listed in ``skipped`` with the reason.
    """
    found = Found()
    seen: set[Path] = set()

    def add(path: Path, root: Path | None) -> None:
        reason = _vet(path, root, follow_symlinks, max_bytes)
        if reason is not None:
            found.skipped.append(Skipped(path, reason))
            return
        real = Path(os.path.realpath(path))
        if real in seen:
            return
        seen.add(real)
        notes, why_not = annotations_beside(path, root, follow_symlinks)
        if why_not is not None:
            found.skipped.append(Skipped(path.parent / ANNOTATIONS_NAME, why_not))
        found.logs.append(LogEntry(real, notes))

    for path in paths:
        if not os.path.isdir(path):
            add(path, None)
            continue
        root = Path(os.path.realpath(path))
        if os.path.lexists(path / RUN_LOG_NAME):
            add(path / RUN_LOG_NAME, root)
            continue
        for candidate, kind in _walk(path, root, follow_symlinks, found):
            if kind == "dir":
                found.skipped.append(Skipped(candidate, "a folder, not a file; only regular files are read"))
            else:
                add(candidate, root)
    found.logs.sort(key=lambda entry: entry.path)
    return found


def _walk(top: Path, root: Path, follow: bool, found: Found) -> list[tuple[Path, str]]:
    """Entries named *.jsonl under top, in a stable order; folders visited once each."""
    out: list[tuple[Path, str]] = []
    visited: set[tuple[int, int]] = set()
    stack = [top]
    while stack:
        folder = stack.pop()
        try:
            st = os.stat(folder)
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            found.skipped.append(Skipped(folder, f"cannot list it: {exc.strerror}"))
            continue
        if (st.st_dev, st.st_ino) in visited:
            continue
        visited.add((st.st_dev, st.st_ino))
        subfolders = []
        for entry in entries:
            path = Path(entry.path)
            is_link = entry.is_symlink()
            try:
                is_dir = entry.is_dir(follow_symlinks=True)
            except OSError:
                is_dir = False
            if is_dir and is_link:
                target = Path(os.path.realpath(path))
                if not follow:
                    if not _inside(target, root):
                        found.skipped.append(Skipped(path, f"a symlink to the folder {target}, outside {root}; not followed (--follow-symlinks reads it)"))
                    continue  # a link inside the root: its logs are found through the real path
            if entry.name.endswith(LOG_SUFFIX):
                out.append((path, "dir" if is_dir else "file"))
            if is_dir and not entry.name.endswith(LOG_SUFFIX):
                subfolders.append(path)
        stack.extend(reversed(subfolders))
    return out


def _check_parents(root: Path, path: Path) -> None:
    """Create the folders between root and path; refuse any that is a symlink or not a folder."""
    relative = path.relative_to(root)
    current = root
    for part in relative.parts[:-1]:
        if part in ("", ".", ".."):
            raise UnsafeOutput(f"{path}: refusing a path with {part!r} in it")
        current = current / part
        try:
            st = os.lstat(current)
        except FileNotFoundError:
            os.mkdir(current)
            continue
        if stat.S_ISLNK(st.st_mode):
            raise UnsafeOutput(f"{current} is a symlink; refusing to write through it (it may lead outside {root})")
        if not stat.S_ISDIR(st.st_mode):
            raise UnsafeOutput(f"{current} is {_type_name(st.st_mode)} where a folder is needed")


def write_inside(root: Path, path: Path, data: bytes) -> bool:
    """Write data at path, which lies under root, unless it holds exactly these bytes already.

    True when written. A symlink at path is replaced by a plain file (the link itself is in
    the output folder; its target is left alone); a folder, FIFO or device there is refused.
    """
    root.mkdir(parents=True, exist_ok=True)
    _check_parents(root, path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    if st is not None:
        if stat.S_ISLNK(st.st_mode):
            os.unlink(path)
        elif not stat.S_ISREG(st.st_mode):
            raise UnsafeOutput(f"{path} is {_type_name(st.st_mode)}; refusing to replace it")
        elif st.st_size == len(data):
            with open_regular(path, len(data)) as stream:
                if stream.read() == data:
                    return False
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0), 0o644)
    with os.fdopen(fd, "wb") as stream:
        stream.write(data)
    return True


def remove_inside(root: Path, path: Path) -> None:
    """Remove a file or folder tree at path, which must lie under root (a symlink: the link)."""
    resolved_root = Path(os.path.realpath(root))
    parent = Path(os.path.realpath(path.parent))
    if not _inside(parent, resolved_root) or path.name in ("", ".", ".."):
        raise UnsafeOutput(f"{path} is outside {root}; not removed")
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(path)  # rmtree never follows symlinks inside the tree
    else:
        os.unlink(path)
