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

import contextlib
import errno
import io
import json
import os
import re
import shutil
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Iterable, Iterator, NamedTuple

from collector.visible import visible
from reportgen.storage import SITE_STATE_NAME

DEFAULT_MAX_LOG_BYTES = 1 << 30  # 1 GiB: far above any real run (200,000 events is ~100 MB)
MAX_SIDE_FILE_BYTES = 16 << 20  # annotations and the site's state file
LOG_SUFFIX = ".jsonl"
RUN_LOG_NAME = "events.jsonl"
ANNOTATIONS_NAME = "annotations.toml"
MAX_SIZE_LIMIT = 1 << 50  # 1024T: the largest limit a size option takes (and still an index-sized int)
# Opening never waits (a FIFO swapped in would wait for a writer) nor leaks into a child process.
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_READ_PIECE = 16 << 20  # what read_bounded reads at a time past a file's size when it grows
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)


class NotReadable(Exception):
    """An entry that is not read, and why (one line)."""


class UnsafeOutput(Exception):
    """Writing or removing this path would reach outside the output folder."""


@dataclass(frozen=True)
class Skipped:
    path: Path | str  # a local path, or an object's URL (a Path would write s3://b/k as s3:/b/k)
    reason: str

    def format(self) -> str:
        return f"{shown(self.path)}: skipped: {self.reason}"


def shown(path: object) -> str:
    """A path for one line of output: a newline or other hidden character in a folder's name is
    written as <U+XXXX>, so the name cannot begin a line of its own (a forged FILE:LINE)."""
    return visible(str(path), keep="")


Signature = tuple[int, int, int, int, int]  # st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns


def signature(st: os.stat_result) -> Signature:
    """What stat says about a file's identity and last change: the inputs of a no-op check."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class Stats(NamedTuple):
    """What stat said about a log and the annotations file that may sit beside it."""

    log: Signature
    notes_path: str  # where annotations would be read from
    notes: Signature | None  # None: there is none there


@dataclass(frozen=True)
class LogEntry:
    """A log to read, and the annotations file beside it that may be read (or None).

    ``stats`` is what stat said about the log and its annotations when they were found (local
    logs only): a cheap way to tell that neither changed since an earlier look."""

    path: Path
    annotations: Path | None
    stats: Stats | None = field(default=None, compare=False)


@dataclass
class Found:
    logs: list[LogEntry] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    # Every folder that was listed and every location that was named, with what stat said then:
    # while none of them changes (and no log or annotations file does), a new search would
    # find the same logs.
    watched: list[tuple[str, Signature]] = field(default_factory=list)
    # The output folder, when a search met it inside a folder given (or was given it): its
    # logs were left out, not missing.
    output_met: bool = False
    # Inspection logs (python -m collector inspect) met in a folder: not run logs, left out.
    inspections: list[Path] = field(default_factory=list)
    # What listing an object store said, each "warning: ...": a manifest not used, a folder left out.
    warnings: list[str] = field(default_factory=list)

    @property
    def paths(self) -> list[Path]:
        return [entry.path for entry in self.logs]


def parse_size(text: str) -> int:
    """'500M', '2G', '1048576' -> bytes (powers of 1024); ValueError for anything else, and
    for a size past MAX_SIZE_LIMIT (no file is that large; a read of it cannot be asked for)."""
    match = _SIZE.match(text)
    if not match:
        raise ValueError(f"{text!r} is not a size like 200M or 2G")
    number, unit = float(match.group(1)), match.group(2).lower()
    size = number * 1024 ** " kmgt".index(unit or " ")
    if size > MAX_SIZE_LIMIT:
        raise ValueError(f"{text!r} is larger than the largest limit, 1024T")
    return int(size)


def describe_size(count: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= scale:
            return f"{count / scale:.3g} {unit}"
    return f"{count} bytes"


def _type_name(mode: int) -> str:
    if stat.S_ISREG(mode):
        return "a file"
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


# The option that sets a run log's size limit, named where a log is refused for its size; the
# other files read (annotations, state, ledgers, inspection logs) have fixed limits.
LOG_LIMIT_OPTION = "--max-log-size"


def _check_regular(st: os.stat_result, max_bytes: int, option: str | None = None) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise NotReadable(f"{_type_name(st.st_mode)}, not a regular file; only regular files are read")
    if st.st_size > max_bytes:
        size, limit = describe_size(st.st_size), describe_size(max_bytes)
        if size == limit:  # just past the limit: the rounded sizes would read as equal
            size, limit = f"{st.st_size:,} bytes", f"{max_bytes:,} bytes"
        raise NotReadable(f"{size}, larger than the limit of {limit}" + (f" ({option})" if option else ""))


def open_regular(
    path: str | Path, max_bytes: int = DEFAULT_MAX_LOG_BYTES, option: str | None = LOG_LIMIT_OPTION
) -> BinaryIO:
    """Open a regular file of at most max_bytes for reading; NotReadable (or OSError) otherwise.

    The type is checked before opening (opening a FIFO would wait for a writer) and again on
    the open descriptor, so an entry swapped in between is caught too. ``option`` names the
    command-line option that sets max_bytes, for the message (a run log's, unless told otherwise).
    """
    _check_regular(os.stat(path), max_bytes, option)
    fd = os.open(path, _READ_FLAGS)
    try:
        _check_regular(os.fstat(fd), max_bytes, option)
    except BaseException:
        os.close(fd)
        raise
    # From here the FileIO owns the descriptor and is the one to close it: closing ``fd`` as
    # well (a Ctrl-C landing in the reader's set-up) would close it twice, the second time
    # whatever file had been given that number since (read as "Bad file descriptor").
    raw = io.FileIO(fd, "rb")
    try:
        return _RegularReader(raw)
    except BaseException:
        raw.close()
        raise


# A kernel file can look regular and still make a reader wait (/proc/kmsg): opened without
# blocking, its read gives nothing to read yet, which no regular file does.
WOULD_WAIT = "its reads would wait (a kernel file that only looks like a regular one)"


class _RegularReader(io.BufferedReader):
    """A regular file's reader that refuses, as NotReadable, a read that would wait."""

    def read(self, size: int | None = -1) -> bytes:
        try:
            data = super().read(size)
        except BlockingIOError:
            data = None
        if data is None:
            raise NotReadable(WOULD_WAIT)
        return data


# A JSON side file this tool writes in an output folder (a site's state, its quick record) holds
# over a hundred bytes per list or object; one of nested empty lists ("[],[],...") decodes to
# about 25 times its size in memory (a forged 250 MB state took a build to 6.5 GB).
BYTES_PER_CONTAINER = 32


def bounded_json(data: bytes) -> Any:
    """A side file's JSON (UTF-8), refused with ValueError, before it is decoded, where it holds
    more lists and objects than one a build writes could (BYTES_PER_CONTAINER)."""
    containers = data.count(b"[") + data.count(b"{")
    if containers > len(data) // BYTES_PER_CONTAINER + 1_000:
        raise ValueError(
            f"{containers:,} lists and objects in {len(data):,} bytes, more than a file this tool writes holds"
        )
    return json.loads(data.decode("utf-8"))


def read_bounded(path: str | Path, max_bytes: int, option: str | None = None) -> bytes:
    """The bytes of a regular file of at most max_bytes (also if it grows while read).

    The first read asks for the size the file has (and a byte more, to see it grew), the rest in
    pieces: one read of max_bytes would reserve that much memory first, whatever the file holds."""
    with open_regular(path, max_bytes, option) as stream:
        data = stream.read(min(os.fstat(stream.fileno()).st_size, max_bytes) + 1)
        while len(data) <= max_bytes:
            more = stream.read(min(max_bytes + 1 - len(data), _READ_PIECE))
            if not more:
                break
            data += more
    if len(data) > max_bytes:
        raise NotReadable(f"grew past the limit of {describe_size(max_bytes)} while being read")
    return data


def open_log(path: Any, max_bytes: int) -> BinaryIO:
    """A local log (a regular file within the limit, see ``open_regular``), or a log in object
    storage (anything with ``open_stream``, see reportgen.storage) whose listed size is within it."""
    opener = getattr(path, "open_stream", None)
    if opener is None:
        return open_regular(path, max_bytes)
    size = getattr(path, "size", 0)
    if size > max_bytes:
        raise NotReadable(
            f"{describe_size(size)}, larger than the limit of {describe_size(max_bytes)} (--max-log-size)"
        )
    return opener()


class LogChanged(NotReadable):
    """A local log's lines, read again to build an event, are not the bytes that were checked:
    the file was replaced, cut short or rewritten while its report was being built."""


class Reread:
    """Where a local log's checked lines are read again when an event is built from them.

    A long log is read a chunk at a time and its bytes are not kept: the few events a report
    shows in full are read again from the file. It must be the same file (device and inode),
    not shorter, and not rewritten in place (the same size with another modification time);
    a log still being appended to is read again as it was. The line read again must still be
    one whole line. Otherwise LogChanged says so.
    """

    __slots__ = ("path", "ident", "size", "mtime_ns")

    def __init__(self, path: str | Path, st: os.stat_result) -> None:
        self.path, self.ident, self.size, self.mtime_ns = path, (st.st_dev, st.st_ino), st.st_size, st.st_mtime_ns

    def read(self, offset: int, length: int) -> bytes:
        try:
            fd = os.open(self.path, _READ_FLAGS)
            try:
                st = os.fstat(fd)
                if (st.st_dev, st.st_ino) != self.ident or not stat.S_ISREG(st.st_mode):
                    raise LogChanged(
                        f"{self.path}: replaced by another file while its report was built; build the report again"
                    )
                if st.st_size < self.size or (st.st_size == self.size and st.st_mtime_ns != self.mtime_ns):
                    raise LogChanged(
                        f"{self.path}: cut short or rewritten while its report was built; build the report again"
                    )
                return os.pread(fd, length, offset)
            finally:
                os.close(fd)
        except OSError as exc:
            raise LogChanged(
                f"{self.path}: cannot be read again while its report is built ({exc.strerror or exc}); build the report again"
            ) from None

    def line(self, start: int, end: int) -> bytes:
        """The line checked at [start:end]: still a whole line (its newline after it, none in it)."""
        data = self.read(start, end - start + 1)
        if len(data) != end - start + 1 or not data.endswith(b"\n") or b"\n" in data[:-1]:
            raise LogChanged(
                f"{self.path}: changed while its report was built (the line at byte {start} differs from the one checked); build the report again"
            )
        return data[:-1]


def reread_of(path: Any, stream: BinaryIO) -> Reread | None:
    """How to read a local log's lines again (None for a log in object storage: its chunks are kept)."""
    if getattr(path, "open_stream", None) is not None:
        return None
    try:
        return Reread(path, os.fstat(stream.fileno()))
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return None


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _vet_stat(
    path: str | Path, root: Path | None, follow: bool, max_bytes: int, option: str | None = None
) -> tuple[str | None, os.stat_result | None, bool]:
    """(why the entry is not read or None, the stat of the file that is read, whether path is a symlink)."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        return f"cannot read it: {exc.strerror}", None, False
    linked = stat.S_ISLNK(st.st_mode)
    if linked:
        target = Path(os.path.realpath(path))
        if not target.exists():
            return f"a dangling symlink (to {os.readlink(path)})", None, True
        if root is not None and not follow and not _inside(target, root):
            return f"a symlink to {target}, outside {root}; not followed (--follow-symlinks reads it)", None, True
        try:
            st = os.stat(path)
        except OSError as exc:
            return f"cannot read it: {exc.strerror}", None, True
    try:
        _check_regular(st, max_bytes, option)
    except NotReadable as exc:
        return str(exc), None, linked
    return None, st, linked


def annotations_beside(log: Path, root: Path | None = None, follow: bool = False) -> tuple[Path | None, str | None]:
    """The annotations file next to a log if there is one that may be read, else why not.

    root is the folder the log was found in (default: the log's own folder). Returns
    (path, None) for a usable file, (None, reason) for one that is not read, (None, None)
    when there is none.
    """
    path, reason, _ = _annotations_stat(log, root, follow)
    return path, reason


def _annotations_stat(
    log: Path, root: Path | None, follow: bool, listed: bool | None = None
) -> tuple[Path | None, str | None, os.stat_result | None]:
    """annotations_beside, with the stat of the file; ``listed`` says whether the folder's
    listing named one (None: look)."""
    candidate = log.parent / ANNOTATIONS_NAME
    if listed is False or (listed is None and not os.path.lexists(candidate)):
        return None, None, None
    base = root if root is not None else Path(os.path.realpath(log.parent))
    reason, st, _ = _vet_stat(candidate, base, follow, MAX_SIDE_FILE_BYTES)
    return (candidate, None, st) if reason is None else (None, reason, None)


INSPECTION_SUFFIX = ".inspection.jsonl"  # the name python -m collector inspect gives its log
_FIRST_LINE_BYTES = 64 * 1024


def is_inspection_log(path: str | Path, max_bytes: int = DEFAULT_MAX_LOG_BYTES) -> bool:
    """Whether path is a regular file whose first line is an inspection_start event: the log
    `python -m collector inspect` writes, which is no run log (its first line alone is read)."""
    try:
        with open_regular(path, max_bytes) as stream:
            event = json.loads(stream.readline(_FIRST_LINE_BYTES))
    except (NotReadable, OSError, ValueError, RecursionError):  # a hostile first line: not an inspection log
        return False
    return isinstance(event, dict) and event.get("kind") == "inspection_start"


def inspection_note(path: object) -> str:
    """One line for an inspection log given where a run log goes."""
    return (
        f"{shown(path)}: an inspection log (python -m collector inspect), not a run log: "
        "give it to reportgen plan-check --inspection or reportgen report --inspection"
    )


def find_logs(
    paths: list[Path], follow_symlinks: bool = False, max_bytes: int = DEFAULT_MAX_LOG_BYTES, output: Path | None = None
) -> Found:
    """Logs named directly, run directories, or folders searched for *.jsonl logs.

    A path named directly is the caller's choice and is followed wherever it points (it must
    still be a regular file within the size limit). Inside a folder, only entries that end in
    .jsonl are candidates; those that are not read are listed in ``skipped`` with the reason.
    ``output``, the folder a site is built into, is never searched: a site inside a folder of
    runs holds copies of their logs, which are not runs of their own. Nor is an inspection log
    met in a folder (named *.inspection.jsonl, with an inspection_start first): it is listed in
    ``inspections``, neither read as a run nor skipped.
    """
    found = Found()
    try:
        st = os.stat(output) if output is not None else None
    except OSError:
        st = None  # not built yet: nothing in it to leave out
    outside = {(st.st_dev, st.st_ino)} if st is not None else set()
    seen: set[str] = set()

    def add(path: Path, root: Path | None, folder_real: str | None = None, notes_listed: bool | None = None) -> None:
        reason, st, linked = _vet_stat(path, root, follow_symlinks, max_bytes, LOG_LIMIT_OPTION)
        if reason is not None or st is None:
            found.skipped.append(Skipped(path, reason or "cannot read it"))
            return
        if root is not None and path.name.endswith(INSPECTION_SUFFIX) and is_inspection_log(path, max_bytes):
            found.inspections.append(path)
            return
        # The real path without asking the file system again when the walk knows it: a plain
        # file in a folder reached through no symlink.
        real = (
            os.path.join(folder_real, path.name) if folder_real is not None and not linked else os.path.realpath(path)
        )
        if real in seen:
            return
        seen.add(real)
        notes, why_not, notes_st = _annotations_stat(path, root, follow_symlinks, notes_listed)
        if why_not is not None:
            found.skipped.append(Skipped(path.parent / ANNOTATIONS_NAME, why_not))
        stats = Stats(
            signature(st),
            os.path.abspath(path.parent / ANNOTATIONS_NAME),
            signature(notes_st) if notes_st is not None else None,
        )
        found.logs.append(LogEntry(Path(real), notes, stats))

    for path in paths:
        try:
            found.watched.append((os.path.abspath(path), signature(os.lstat(path))))
        except OSError:
            pass  # add() says why it is not read
        if not os.path.isdir(path):
            add(path, None)
            continue
        root = Path(os.path.realpath(path))
        if os.path.lexists(path / RUN_LOG_NAME):
            found.watched.append((os.path.abspath(path), signature(os.stat(path))))
            add(path / RUN_LOG_NAME, root)
            continue
        for candidate, kind, folder_real, notes_listed in _walk(path, root, follow_symlinks, found, outside):
            if kind == "dir":
                found.skipped.append(Skipped(candidate, "a folder, not a file; only regular files are read"))
            else:
                add(candidate, root, folder_real, notes_listed)
    found.logs.sort(key=lambda entry: entry.path)
    return found


# The hidden name campaign/task.sh moves a run in under before renaming it: a copy in progress,
# or one cut short, is never read as a run.
DELIVERING = re.compile(r"\..+\.partial-\d+")


def _walk(
    top: Path, root: Path, follow: bool, found: Found, outside: set[tuple[int, int]]
) -> list[tuple[Path, str, str | None, bool]]:
    """Entries named *.jsonl under top, in a stable order; folders visited once each, and
    none of those ``outside`` (device and inode) entered.

    Each comes with the real path of its folder when the walk reached it through no symlink
    (else None), and whether that folder holds an entry named like annotations."""
    out: list[tuple[Path, str, str | None, bool]] = []
    visited: set[tuple[int, int]] = set(outside)
    stack: list[tuple[Path, str | None]] = [(top, str(root))]
    while stack:
        folder, folder_real = stack.pop()
        try:
            st = os.stat(folder)
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            found.skipped.append(Skipped(folder, f"cannot list it: {exc.strerror}"))
            continue
        if (st.st_dev, st.st_ino) in outside:
            found.output_met = True
        if (st.st_dev, st.st_ino) in visited:
            continue
        visited.add((st.st_dev, st.st_ino))
        found.watched.append((os.path.abspath(folder), signature(st)))
        if any(entry.name == SITE_STATE_NAME for entry in entries):
            # A site reportgen built: its runs/ hold copies of logs, which would be read as runs
            # beside their originals (a run id given twice, the copy taken instead).
            found.skipped.append(
                Skipped(folder, f"a site reportgen built (it holds {SITE_STATE_NAME}): its logs are copies, not read")
            )
            continue
        notes_listed = any(entry.name == ANNOTATIONS_NAME for entry in entries)
        subfolders = []
        for entry in entries:
            path = folder / entry.name
            is_link = entry.is_symlink()
            try:
                is_dir = entry.is_dir(follow_symlinks=True)
            except OSError:
                is_dir = False
            if is_dir and is_link:
                target = Path(os.path.realpath(path))
                if not follow:
                    if not _inside(target, root):
                        found.skipped.append(
                            Skipped(
                                path,
                                f"a symlink to the folder {target}, outside {root}; not followed (--follow-symlinks reads it)",
                            )
                        )
                    continue  # a link inside the root: its logs are found through the real path
            if is_dir and DELIVERING.fullmatch(entry.name):
                found.skipped.append(
                    Skipped(
                        path,
                        "a run a campaign task is delivering, or whose delivery was cut short; not read "
                        "(once no task delivers, remove one cut short: its run is in that task's scratch folder)",
                    )
                )
                continue
            if entry.name.endswith(LOG_SUFFIX):
                out.append((path, "dir" if is_dir else "file", folder_real, notes_listed))
            if is_dir and not entry.name.endswith(LOG_SUFFIX):
                subfolders.append(
                    (path, os.path.join(folder_real, entry.name) if folder_real is not None and not is_link else None)
                )
        stack.extend(reversed(subfolders))
    return out


def _check_parents(root: Path, path: Path, create: bool = True) -> bool:
    """Refuse any folder between root and path that is a symlink or not a folder; create the
    missing ones, or (``create`` False) stop at the first missing one. True when all exist."""
    relative = path.relative_to(root)
    current = root
    for part in relative.parts[:-1]:
        if part in ("", ".", ".."):
            raise UnsafeOutput(f"{path}: refusing a path with {part!r} in it")
        current = current / part
        try:
            st = os.lstat(current)
        except FileNotFoundError:
            if not create:
                return False  # write_inside makes it, and what is below it
            os.mkdir(current)
            continue
        if stat.S_ISLNK(st.st_mode):
            raise UnsafeOutput(f"{current} is a symlink; refusing to write through it (it may lead outside {root})")
        if not stat.S_ISDIR(st.st_mode):
            raise UnsafeOutput(f"{current} is {_type_name(st.st_mode)} where a folder is needed")
    return True


def _replaceable(path: Path) -> os.stat_result | None:
    """What is at path (None: nothing), refusing a folder, FIFO or device there: write_inside
    replaces only a plain file or a symlink."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
        raise UnsafeOutput(f"{path} is {_type_name(st.st_mode)}; refusing to replace it")
    return st


def same_file(path: Path, other: Path) -> bool:
    """Whether ``path`` exists and is the file ``other`` is (by device and inode: a hard link or
    a path through a symlinked folder is caught too)."""
    try:
        return os.path.samefile(path, other)
    except OSError:
        return False


def refuse_unwritable(root: Path, paths: Iterable[Path], inputs: Iterable[Path] = ()) -> None:
    """Raise UnsafeOutput for the first of ``paths`` (each under root) that write_inside would
    refuse, or that is one of the command's ``inputs`` (it would be replaced by what was read
    from it), before anything is written: a command then stops with nothing half-written."""
    sources = list(inputs)
    for path in paths:
        if (source := next((i for i in sources if same_file(path, i)), None)) is not None:
            raise UnsafeOutput(f"{path} is the input {source}: writing there would replace it; give another --out")
        if _check_parents(root, path, create=False):
            _replaceable(path)


def make_folder(folder: Path) -> None:
    """``folder`` and its parents, made where missing; an entry there that is no folder (a file, a
    device such as /dev/null, a FIFO) is NotADirectoryError saying so, not "File exists"."""
    try:
        os.makedirs(folder, exist_ok=True)
    except FileExistsError:
        raise NotADirectoryError(
            errno.ENOTDIR, "it exists and is not a folder; name a folder to write", str(folder)
        ) from None


def write_inside(root: Path, path: Path, data: bytes) -> bool:
    """Write data at path, which lies under root, unless it holds exactly these bytes already.

    True when written. A symlink at path is replaced by a plain file (the link itself is in
    the output folder; its target is left alone), and so is a file with other hard links (a
    snapshot made with ``cp -al`` or ``rsync --link-dest``, a link to a file elsewhere: writing
    into it would change them too); a folder, FIFO or device there is refused.
    """
    make_folder(root)
    _check_parents(root, path)
    st = _replaceable(path)
    if st is not None:
        if stat.S_ISLNK(st.st_mode):
            os.unlink(path)
        elif st.st_size == len(data):
            with open_regular(path, len(data)) as stream:
                if stream.read() == data:
                    return False
        if not stat.S_ISLNK(st.st_mode) and st.st_nlink > 1:
            os.unlink(path)
    try:
        fd = os.open(
            path,
            os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0),
            0o644,
        )
        try:
            with os.fdopen(fd, "wb") as stream:
                stream.write(data)
        except OSError:
            # A full disk or a quota stops a page part-way: leave no half file (the old one was
            # already truncated), so the next build writes it whole.
            with contextlib.suppress(OSError):
                os.unlink(path)
            raise
    except OSError as exc:  # "cannot write <file>: No space left on device", not a bare reason
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    return True


LOCK_NAME = ".reportgen-lock"  # held while a command writes an output folder (hidden: never published)


class OutputBusy(Exception):
    """Another command is writing the output folder now."""


BUSY = "is being written by another command now"

try:  # flock, for the output folder's locks; where the platform has none, nothing is locked
    import fcntl
except ImportError:  # pragma: no cover - not on the platforms CI runs
    fcntl = None  # type: ignore[assignment]


def _hold_folder(out_dir: Path) -> int:
    """A descriptor of the folder ``out_dir`` holding its exclusive lock (-1 where the folder
    cannot be opened); OutputBusy at once where another command holds it. A --out that is a
    link to a folder is that folder, as the writes have always taken it: the lock is the
    folder's."""
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(out_dir, flags)
    except OSError:
        return -1
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise OutputBusy(f"{shown(out_dir)} {BUSY}; wait for it to finish, or give another --out") from None
    return fd


def _remove_made(out_dir: Path, made: Path | None, leaving: tuple[str, ...] = ()) -> None:
    """The folders made for ``out_dir`` (up to ``made``, the first that was missing) removed
    again where the command wrote nothing into them: ``out_dir`` holds ``leaving`` at most (each
    removed with it)."""
    if made is None:
        return
    with contextlib.suppress(OSError):
        if set(os.listdir(out_dir)) - set(leaving):
            return
        for name in leaving:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(out_dir / name)
        folder = out_dir
        while True:
            os.rmdir(folder)
            if folder == made:
                break
            folder = folder.parent


@contextlib.contextmanager
def output_lock(out_dir: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``out_dir`` (its LOCK_NAME file, made if missing, never through
    a link) while a command writes it; OutputBusy at once where another holds it. Two builds
    writing one folder at once each removed the other's stale pages from a state the other
    never saw: run pages no later build knew of were left in it for good. The lock is taken
    on a descriptor opened for reading, so an up-to-date site on read-only storage still
    builds (on a read-only file system nothing can write it at the same time, and no lock is
    made there). The folder itself is held too, as folder_lock holds it for a report or a
    comparison: neither writes into a site being built, nor a build into a folder a report is
    writing. Folders this call made for ``out_dir`` are removed again when the command wrote
    nothing into them. Where the platform has no flock, nothing is locked."""
    if fcntl is None:  # pragma: no cover - not on the platforms CI runs
        yield
        return
    made = _first_missing(out_dir)
    make_folder(out_dir)
    lock = out_dir / LOCK_NAME
    nofollow = os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        try:
            fd = os.open(lock, os.O_RDONLY | nofollow)
        except FileNotFoundError:
            try:
                fd = os.open(lock, os.O_RDONLY | os.O_CREAT | os.O_EXCL | nofollow, 0o644)
            except FileExistsError:  # another command made it just now
                fd = os.open(lock, os.O_RDONLY | nofollow)
    except OSError as exc:
        if exc.errno == errno.EROFS:  # nothing can write this folder, this command included
            yield
            return
        reason = "a symlink; never followed" if exc.errno == errno.ELOOP else exc.strerror
        raise OSError(exc.errno, reason, str(lock)) from None
    folder_fd = -1
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise OutputBusy(
                f"{shown(out_dir)} {BUSY} (it holds {LOCK_NAME} there); wait for it to finish, or give another --out"
            ) from None
        folder_fd = _hold_folder(out_dir)
        try:
            yield
        finally:
            _remove_made(out_dir, made, (LOCK_NAME,))  # the command wrote nothing (or stopped)
    finally:
        if folder_fd >= 0:
            os.close(folder_fd)
        os.close(fd)


@contextlib.contextmanager
def folder_lock(out_dir: Path) -> Iterator[None]:
    """Hold an exclusive lock on the folder ``out_dir`` itself (made if missing) while a report or
    a comparison writes it, leaving no file behind: OutputBusy at once where another command
    holds it (two reports into one --out at once left one run's details.csv beside the other's
    pages, both exiting 0). Folders this call made are removed again when nothing was written
    into them. Where the platform has no flock, nothing is locked."""
    if fcntl is None:  # pragma: no cover - not on the platforms CI runs
        yield
        return
    made = _first_missing(out_dir)
    make_folder(out_dir)
    fd = _hold_folder(out_dir)
    try:
        yield
    finally:
        _remove_made(out_dir, made)  # the command wrote nothing (or stopped): leave nothing
        if fd >= 0:
            os.close(fd)


def _first_missing(path: Path) -> Path | None:
    """The outermost folder of ``path`` (itself included) that does not exist yet; None if it does."""
    missing = None
    for folder in (path, *path.parents):
        if os.path.lexists(folder):
            break
        missing = folder
    return missing


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


def replaceable(path: Path) -> os.stat_result | None:
    """What ``replace_file`` would replace at ``path``: None when nothing is there, else the
    regular file's stat. A link (dangling or not), folder, device or pipe is an OSError naming
    ``path``: never replaced, never written through. Folders above ``path`` may be links."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    if not stat.S_ISREG(st.st_mode):
        raise OSError(
            errno.EINVAL,
            "not a regular file (a directory, link, device or pipe); only a file is replaced",
            str(path),
        )
    return st


def replace_file(path: Path, data: bytes, mode: int | None = None) -> None:
    """Write ``path`` whole or not at all: a new file beside it, renamed over it, with ``mode``,
    else the mode of the file it replaces, else what the umask gives. Only a regular file is
    replaced: a FIFO named by mistake would wait for a reader for ever, and a link or a device is
    not written through (as root, /dev/null would be swapped for a file). OSError names ``path``."""
    st = replaceable(path)
    if st is None:
        if mode is None:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
    else:
        mode = stat.S_IMODE(st.st_mode) if mode is None else mode
    temp = None
    try:
        fd, temp = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(temp, mode)  # mkstemp's 0600 would hide the file from a shared folder's other users
        os.replace(temp, path)
        temp = None
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    finally:
        if temp is not None and os.path.exists(temp):
            os.unlink(temp)
