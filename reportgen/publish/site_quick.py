"""The no-op check of `reportgen site`: is there anything to do at all?

Most rebuilds find nothing changed. Rather than hash every log to learn that, the build
compares what ``stat`` says now with what the previous build recorded in
``.reportgen-quick.json``:

* each log and its annotations.toml: device, inode, size, mtime_ns and ctime_ns;
* each folder that was searched for logs, and each location named on the command line (a
  folder's times change whenever an entry in it is added, removed or renamed, so an unchanged
  folder would list the same entries);
* each object-store log as listed (ETag and size: the listing is the object store's stat);
* the templates and the tool's own files (stat, as above: the judge's constraint data and the
  code, which a source checkout changes without a new version), the tool's version, the size
  limit and the symlink option;
* the bytes of the site configuration, and the stat of the state file the build left;
* the pages that build wrote are still there (plain files, not links).

When all of that matches, the build returns: no log is read, nothing is rendered or written.
When anything differs, the build goes the careful way (the state file, checked as untrusted
input; a log's content hash whenever its stat differs from the recorded one) and writes a new
record at the end.

Trade-off, as in make, rsync and git: a file rewritten in place with the same size, inode,
mtime and ctime is taken as unchanged. ctime cannot be set by a program, so that takes a
rewrite within one tick of the file system's clock after the file was stat'ed. To close that
window a file (or folder) changed less than ``RACY_NS`` before the build began is never
trusted: the record the build writes has no signature (and not that log's stat), so the
next build hashes it again. A deleted ``.reportgen-quick.json``, or a deleted
``.reportgen-state.json``, forces the careful way.

The record also keeps the stat of the state file the same build wrote: the state is a cache of
that build, and its summaries are reused only while the file is that one (no record, or a state
file changed since, and every log is judged again, with a warning).

The record sits in the output folder, so it is untrusted input like the state file: it is
read only when it is a plain file within a size limit, checked field by field (page names
only as this tool makes them, messages without control characters); when it does not check
out it is ignored with a warning. A record that checks out can at most make the build do
nothing: the fast path writes, removes and renders nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Iterator
from typing import Any

from reportgen import __version__
from reportgen.render.locations import templates_dir
from reportgen.storage import SITE_STATE_NAME, is_remote
from reportgen.storage.local import (
    MAX_SIDE_FILE_BYTES,
    Found,
    LogEntry,
    NotReadable,
    Signature,
    UnsafeOutput,
    bounded_json,
    read_bounded,
    remove_inside,
    shown,
    signature,
)

QUICK_NAME = ".reportgen-quick.json"
STATE_NAME = SITE_STATE_NAME  # the state file this record vouches for (site.py)
QUICK_FORMAT = 1
RACY_NS = 3_000_000_000  # coarser than any file system's clock tick (FAT: 2 s)
MAX_QUICK_BYTES = 256 << 20

_SLUG = r"[A-Za-z0-9_][A-Za-z0-9._-]{0,95}-[0-9a-f]{8}"
PAGE_NAME = re.compile(
    r"^(?:index\.(?:html|csv|json|parquet)|index-rows-[0-9a-f]{10}\.js|assets/[A-Za-z0-9][A-Za-z0-9._-]*"
    rf"|(?:runs|workloads|comparisons|campaigns)/{_SLUG}/index\.html)$"
)
# Printed as they are on the next build: no terminal control sequence can hide in one.
_MESSAGE = r"^[^\x00-\x08\x0b-\x1f\x7f-\x9f]*$"

_Sig = tuple[int, int, int, int, int]
_HEX = re.compile(r"[0-9a-f]{64}")
_KEY = re.compile(r"(?:[0-9a-f]{64})?")
_MESSAGE_RE = re.compile(_MESSAGE)


class RecordError(ValueError):
    """What is wrong with a record, and where (dotted, as in logs.0.1)."""


@dataclass(frozen=True)
class _Record:
    """The last build's record, checked field by field. Checked by hand with the standard
    library rather than a schema library: the no-op build is the common one, and it should
    cost little more than starting the command (pydantic's import alone costs several times
    that, msgspec's a sixth of it)."""

    signature: str | None  # None: this build cannot be skipped next time, but known keys can be used
    watched: list[tuple[str, _Sig]]
    # log, its content key ("" when none), its stat, where annotations would be, their stat
    logs: list[tuple[str, str, _Sig, str, _Sig | None]]
    remote: list[tuple[str, str]]
    runs: int
    pages: list[str]
    messages: list[str]
    state: _Sig | None = None  # the stat of the state file the same build wrote; None: none


_FIELDS = ("format", "signature", "watched", "logs", "remote", "runs", "pages", "messages")
_OPTIONAL = ("state",)  # absent from a record written before it was kept


def _int(value: Any, where: str, low: int, high: int) -> int:
    if type(value) is not int or not low <= value <= high:
        raise RecordError(f"{where}: expected an integer from {low} to {high}")
    return value


def _text(value: Any, where: str, pattern: re.Pattern[str] | None = None) -> str:
    if type(value) is not str:
        raise RecordError(f"{where}: expected a string")
    if pattern is not None and pattern.fullmatch(value) is None:
        raise RecordError(f"{where}: string should match pattern '{pattern.pattern}'")
    return value


def _items(value: Any, where: str, length: int | None = None) -> list[Any]:
    if type(value) is not list or (length is not None and len(value) != length):
        raise RecordError(f"{where}: expected a list" + (f" of {length} items" if length is not None else ""))
    return value


def _sig(value: Any, where: str) -> _Sig:
    items = _items(value, where, 5)
    return tuple(_int(v, f"{where}.{i}", -(2**63), 2**64) for i, v in enumerate(items))  # type: ignore[return-value]


def _parse_record(data: bytes) -> _Record:
    try:
        obj = bounded_json(data)
    except ValueError as exc:
        raise RecordError(f"top level: Invalid JSON: {exc}") from None
    if type(obj) is not dict:
        raise RecordError("top level: expected an object")
    unknown = sorted(set(obj) - set(_FIELDS) - set(_OPTIONAL))
    missing = [name for name in _FIELDS if name not in obj]
    if unknown or missing:
        raise RecordError(f"{(unknown or missing)[0]}: {'unknown field' if unknown else 'missing field'}")
    _int(obj["format"], "format", QUICK_FORMAT, QUICK_FORMAT)
    logs = []
    for i, row in enumerate(_items(obj["logs"], "logs")):
        path, key, sig, notes, notes_sig = _items(row, f"logs.{i}", 5)
        logs.append(
            (
                _text(path, f"logs.{i}.0"),
                _text(key, f"logs.{i}.1", _KEY),
                _sig(sig, f"logs.{i}.2"),
                _text(notes, f"logs.{i}.3"),
                None if notes_sig is None else _sig(notes_sig, f"logs.{i}.4"),
            )
        )
    return _Record(
        signature=None if obj["signature"] is None else _text(obj["signature"], "signature", _HEX),
        watched=[
            (_text(p, f"watched.{i}.0"), _sig(sig, f"watched.{i}.1"))
            for i, (p, sig) in (
                (i, _items(row, f"watched.{i}", 2)) for i, row in enumerate(_items(obj["watched"], "watched"))
            )
        ],
        logs=logs,
        remote=[
            (_text(a, f"remote.{i}.0"), _text(b, f"remote.{i}.1"))
            for i, (a, b) in (
                (i, _items(row, f"remote.{i}", 2)) for i, row in enumerate(_items(obj["remote"], "remote"))
            )
        ],
        runs=_int(obj["runs"], "runs", 0, 10**9),
        pages=[_text(page, f"pages.{i}", PAGE_NAME) for i, page in enumerate(_items(obj["pages"], "pages"))],
        messages=[_text(m, f"messages.{i}", _MESSAGE_RE) for i, m in enumerate(_items(obj["messages"], "messages"))],
        state=None if obj.get("state") is None else _sig(obj["state"], "state"),
    )


CONFIG_NAME = "site.toml"


class SiteConfigError(ValueError):
    """The site configuration cannot be used; the message names the file and the problem."""


def find_site_config(paths: list[Path], follow: bool = False) -> Path | None:
    """A site.toml directly inside one of the folders given to `reportgen site` (the first found),
    whatever it is: one that is not a regular file (a FIFO, a link to a device) is refused where
    it is read, as --config refuses it, not taken as absent (its pages would vanish unsaid). A
    link to a file outside that folder is refused unless ``follow`` (--follow-symlinks), as a
    log or an annotations.toml linked from outside is not read."""
    for path in paths:
        candidate = path / CONFIG_NAME
        if path.is_dir() and os.path.lexists(candidate):
            if candidate.is_symlink() and not follow:
                target = Path(os.path.realpath(candidate))
                if not target.is_relative_to(os.path.realpath(path)):
                    raise SiteConfigError(
                        f"{shown(candidate)}: a symlink to {shown(target)}, outside {shown(path)}; not followed "
                        "(--follow-symlinks reads it, or give it with --config)"
                    )
            return candidate
    return None


def config_bytes(path: Path | None) -> bytes | None:
    if path is None:
        return None
    try:
        return read_bounded(path, MAX_SIDE_FILE_BYTES)
    except (NotReadable, OSError):
        return None


@dataclass
class SiteResult:
    runs: int = 0
    written: list[Path] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # entries that are not read, and why
    warnings: list[str] = field(default_factory=list)
    fetched: list[str] = field(default_factory=list)  # objects read from object storage


@dataclass
class Quick:
    """The no-op check of one build, made before anything that renders is imported."""

    started_ns: int
    config_path: Path | None
    check: QuickCheck
    remote: Found | None
    result: SiteResult
    unchanged: bool


def quick_start(paths: list[Path | str], out_dir: Path, config: Path | None, max_bytes: int, follow: bool) -> Quick:
    """Is there anything to do? ``unchanged``: no (``result`` is the whole build's result).
    Else ``build_site`` goes on from here, with the remote listing already made."""
    started_ns = time.time_ns()
    config_path = (
        config if config is not None else find_site_config([Path(p) for p in paths if not is_remote(p)], follow)
    )
    result = SiteResult()
    check = QuickCheck.start(paths, out_dir, config_path, config_bytes(config_path), max_bytes, follow, started_ns)
    remote_paths = [p for p in paths if is_remote(p)]
    remote = None
    if remote_paths:  # the object-store code (and s3fs behind it) only for s3:// locations
        from reportgen.storage.sources import find_runs

        remote = find_runs(remote_paths, None, follow, max_bytes)
    outcome = check.unchanged(remote, result.warnings)
    if outcome is not None:
        result.runs, result.rejected = outcome.runs, outcome.messages
    return Quick(started_ns, config_path, check, remote, result, outcome is not None)


@dataclass
class Outcome:
    """What an unchanged build reports: the previous build's run count and messages."""

    runs: int
    messages: list[str] = field(default_factory=list)


def _racy(sig: Signature | None, started_ns: int) -> bool:
    return sig is not None and sig[3] >= started_ns - RACY_NS


def tool_folders() -> list[Path]:
    """The folders whose files decide how a log is judged and drawn: the reportgen package,
    the templates, the collector package (reportgen judges with its stability classifier, plan
    schema and descriptors, and its built-in backend descriptors lie in it) and the backend
    folders MIGRATION_RECORD_BACKENDS names (descriptors, adapters and constraints)."""
    import collector
    from collector.descriptors import BUILTIN_DIR, plugin_dirs

    package, templates = Path(__file__).resolve().parents[1], templates_dir()
    folders = [package] if templates.is_relative_to(package) else [templates, package]
    device = Path(collector.__file__).resolve().parent
    backends = [folder for folder in (BUILTIN_DIR, *plugin_dirs()) if not folder.resolve().is_relative_to(device)]
    return folders + [device] + [folder for folder in backends if folder.is_dir()]


def tool_files(folder: Path) -> Iterator[os.DirEntry[str]]:
    """Every file under one of tool_folders, in a stable order, bytecode caches aside."""
    stack = [str(folder)]
    while stack:
        with os.scandir(stack.pop()) as found:
            entries = sorted(found, key=lambda e: e.name)
        for entry in entries:
            if entry.is_dir():
                if entry.name != "__pycache__":
                    stack.append(entry.path)
            elif entry.is_file():
                yield entry


def _template_sigs(started_ns: int) -> list[tuple[str, Signature]] | None:
    """Every tool file's stat (tool_folders); None when one changed too recently to be trusted."""
    out: list[tuple[str, Signature]] = []
    for folder in tool_folders():
        for entry in tool_files(folder):
            sig = signature(entry.stat())
            if _racy(sig, started_ns):
                return None
            out.append((entry.path, sig))
    return out


@dataclass
class QuickCheck:
    """The inputs of one build that are compared without reading any log."""

    out_dir: Path
    base: str | None  # digest of the inputs but the state file; None: a template changed too recently
    started_ns: int
    previous: _Record | None = None  # the last build's record, once read (checked)
    _known: dict[str, tuple[str, Signature, str, Signature | None]] | None = None

    @classmethod
    def start(
        cls,
        paths: list[Path | str],
        out_dir: Path,
        config: Path | None,
        config_bytes: bytes | None,
        max_bytes: int,
        follow: bool,
        started_ns: int,
    ) -> QuickCheck:
        locations = [p if isinstance(p, str) and p.startswith("s3://") else os.path.abspath(p) for p in paths]
        templates = _template_sigs(started_ns)
        if templates is None:
            return cls(out_dir, None, started_ns)
        digest = hashlib.sha256(
            json.dumps([QUICK_FORMAT, __version__, max_bytes, follow, locations, templates]).encode()
        )
        digest.update(b"\0config\0")
        if config is not None:
            digest.update(
                os.path.abspath(config).encode("utf-8", "surrogateescape")
                + b"\0"
                + hashlib.sha256(config_bytes or b"").digest()
            )
        return cls(out_dir, digest.hexdigest(), started_ns)

    def signature(self) -> str | None:
        """The digest of every input compared as a whole, with the state file as it is now."""
        if self.base is None:
            return None
        try:
            state: Signature | None = signature(os.lstat(self.out_dir / STATE_NAME))
        except OSError:
            state = None
        return hashlib.sha256(f"{self.base}:{json.dumps(state)}".encode()).hexdigest()

    # --- the fast path -------------------------------------------------------------------

    def unchanged(self, remote: Found | None, warnings: list[str]) -> Outcome | None:
        """The previous build's outcome when nothing it depended on changed, else None."""
        record = self.previous = _load(self.out_dir, warnings)
        signature_now = self.signature()
        if record is None or signature_now is None or record.signature != signature_now:
            return None
        for path, sig in record.watched:
            if not _same(path, sig, os.stat):
                return None
        listed = {path for path, _ in record.watched}  # a new entry in one of these changed its stat
        for path, _, log_sig, notes, notes_sig in record.logs:
            if not _same(path, log_sig, os.stat):
                return None
            if notes_sig is None:
                if os.path.dirname(notes) not in listed and os.path.lexists(notes):
                    return None
            elif not _same(notes, notes_sig, os.stat):
                return None
        objects: list[tuple[str, str]] = []
        if remote is not None:
            from reportgen.storage.remote import RemoteLog

            objects = [(str(e.path), e.path.change_key) for e in remote.logs if isinstance(e.path, RemoteLog)]
        if objects != [tuple(r) for r in record.remote] or (remote is not None and remote.skipped):
            return None
        out = os.fspath(self.out_dir) + os.sep
        for page in record.pages:
            try:
                if not stat.S_ISREG(os.lstat(out + page).st_mode):
                    return None
            except OSError:
                return None
        return Outcome(record.runs, list(record.messages))

    def known_key(self, entry: LogEntry) -> str | None:
        """The content key the last build took for this local log, when stat says neither it
        nor its annotations changed since (the trade-off above); None: hash it."""
        if self.previous is None or entry.stats is None:
            return None
        if self._known is None:
            self._known = {
                path: (key, log_sig, notes, notes_sig)
                for path, key, log_sig, notes, notes_sig in self.previous.logs
                if key
            }
        known = self._known.get(str(entry.path))
        if known is None or known[1:] != (entry.stats.log, entry.stats.notes_path, entry.stats.notes):
            return None
        return known[0]

    def vouches_for_state(self) -> bool:
        """Whether the state file is the one the last build wrote: its record holds the file's
        stat (inode, size, mtime and ctime; ctime cannot be set by a program). The state is a
        cache: one edited by hand, or without a record, is not to be reused."""
        if self.previous is None or self.previous.state is None:
            return False
        return _same(os.fspath(self.out_dir / STATE_NAME), self.previous.state, os.lstat)

    def forget(self, warnings: list[str]) -> None:
        """Remove the record before anything else is written: a build that stops half-way
        leaves none, so the next one goes the careful way."""
        path = self.out_dir / QUICK_NAME
        if os.path.lexists(path):
            try:
                remove_inside(self.out_dir, path)
            except (UnsafeOutput, OSError) as exc:
                warnings.append(
                    f"reportgen site: warning: could not remove {path}: {getattr(exc, 'strerror', None) or exc}"
                )

    # --- the record ----------------------------------------------------------------------

    def record(
        self,
        found: Found,
        keys: dict[str, str],
        runs: int,
        pages: list[str],
        messages: list[str],
        clean: bool = True,
    ) -> None:
        """Write the record for the next build, after the state file, whose stat it keeps (the
        next build reuses that state's summaries only while the file is unchanged). Each local
        log's stat is kept with its content key unless it changed too recently to trust. The
        signature that lets the next build skip everything is left out when it could not be
        trusted: the build warned (``clean`` false: the next one says it again), a template,
        folder or log changed too recently, an entry was skipped, or a message holds control
        characters."""
        from reportgen.render.templating import write_text
        from reportgen.storage.remote import RemoteLog

        logs: list[tuple[str, str, Signature, str, Signature | None]] = []
        remote: list[tuple[str, str]] = []
        trusted = (
            clean
            and self.base is not None
            and bool(found.logs)
            and not found.skipped
            and all(re.match(_MESSAGE, m) for m in messages)
        )
        for entry in found.logs:
            if isinstance(entry.path, RemoteLog):
                remote.append((str(entry.path), entry.path.change_key))
                continue
            stats = entry.stats
            if stats is None or _racy(stats.log, self.started_ns) or _racy(stats.notes, self.started_ns):
                trusted = False
                continue
            logs.append((str(entry.path), keys.get(str(entry.path), ""), stats.log, stats.notes_path, stats.notes))
        if any(_racy(sig, self.started_ns) for _, sig in found.watched):
            trusted = False
        try:
            state: Signature | None = signature(os.lstat(self.out_dir / STATE_NAME))
        except OSError:
            state = None
        # The signature covers the state file this build left: a planted or edited state file
        # changes it, and the next build reads and checks that file (and, as its stat is not the
        # one kept here, does not reuse its summaries).
        data: dict[str, Any] = {
            "format": QUICK_FORMAT,
            "signature": self.signature() if trusted else None,
            "watched": found.watched if trusted else [],
            "logs": logs,
            "remote": remote if trusted else [],
            "runs": runs,
            "pages": sorted(set(pages)) if trusted else [],
            "messages": messages if trusted else [],
            "state": state,
        }
        write_text(self.out_dir / QUICK_NAME, json.dumps(data, separators=(",", ":")) + "\n", self.out_dir)


def _same(path: str, sig: tuple[int, ...], look: Any) -> bool:
    try:
        return signature(look(path)) == tuple(sig)
    except OSError:
        return False


def _load(out_dir: Path, warnings: list[str]) -> _Record | None:
    path = out_dir / QUICK_NAME
    try:
        st = os.lstat(path)
    except OSError:
        return None
    try:
        if stat.S_ISLNK(st.st_mode):
            raise NotReadable("a symlink; it must be a plain file in the output folder")
        return _parse_record(read_bounded(path, MAX_QUICK_BYTES))
    except (NotReadable, OSError, ValueError, RecursionError) as exc:
        reason = " ".join(str(exc).split())
        warnings.append(f"reportgen site: warning: ignoring {path} ({reason[:300]}); checking every input")
        return None
