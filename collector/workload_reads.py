"""What the workload read while it loaded and built its model and inputs, beyond what run_start
hashed: the files it opened through Python and the packages it imported, with their versions.

run_start hashes the plan, the workload module and the local files it imports, read from its
source before it runs. A workload can read more: a config or data file, a module it imports
after changing ``sys.path``, a tokenizer or model folder in a cache. And it runs on packages
(transformers, say) whose version decides what it computes as much as torch's does. Each is a
change a comparison of two runs has to name before it says faster or slower.

An audit hook (``sys.addaudithook``; it cannot be removed, so it does nothing outside a watch)
notes every file opened for reading while the main process loads the workload module, builds
the model, makes the inputs and runs the reference (the cells, and the fresh processes that
compile and time them, come after: a file first read there is not seen). A file read by native
code without Python's ``open`` (a Rust tokenizer reading its JSON, say) raises no audit event
and is not seen: the event says what was watched. Left out: files the run hashed already, the interpreter's own and installed packages'
files (their versions stand for them), the run's own folders, ``/proc``,
``/sys`` and ``/dev`` (a module imported from its cached bytecode is named by its source). The
packages are the installed distributions of
every top-level module loaded in the process when the inputs are made (the standard library and
the collector aside): what the workload ran on, torch included, whoever imported it first.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import site
import stat
import sys
import sysconfig
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from collector.provenance import file_entry

ROLE = "workload_read"
MAX_FILES = 200  # files listed one by one; the rest are counted
MAX_HASH_BYTES = 1 << 30  # a larger file is listed with its size, not hashed
MAX_HASH_TOTAL = 4 << 30  # and past this many bytes hashed in all, every further file too
WATCHED = (
    "files opened for reading through Python (open, io.open_code, os.open) while the main process loaded "
    "the workload module, built the model, made the inputs and ran the reference; the installed distributions "
    "of every top-level module loaded in that process by then"
)

_active: _Watch | None = None
_paused: _Watch | None = None
_hooked = False


class _Watch:
    def __init__(self) -> None:
        self.opened: dict[str, None] = {}  # in order, once each (installed files left out as opened)
        self.beyond = 0  # opens past the bound on ``opened`` (not told apart: a file opened twice counts twice)
        self.installed = _installed()
        self.skipped = tuple(str(p) + os.sep for p in self.installed)


def _hook(event: str, args: tuple[Any, ...]) -> None:
    watch = _active
    if watch is None or event not in ("open", "os.open"):
        return
    path, mode, flags = (args + (None, None, None))[:3]
    if isinstance(path, int) or path is None:
        return  # an open file descriptor: its file was opened (and seen) before
    if isinstance(mode, str) and any(c in mode for c in "wax+"):
        return
    if isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR):
        return
    name = os.path.abspath(os.fsdecode(path))
    if name.endswith(".pyc"):
        # A module imported from its cached bytecode opens no source: the source it was
        # compiled from stands for it (a bytecode file with none, it alone).
        try:
            name = importlib.util.source_from_cache(name)
        except ValueError:
            pass
    if name.startswith(watch.skipped) or name in watch.opened:
        return  # the interpreter's and installed packages' files (their versions name them)
    if len(watch.opened) < 10 * MAX_FILES:  # a workload that opens files in a loop stays bounded
        watch.opened[name] = None
    else:
        watch.beyond += 1


def start() -> None:
    """Begin noting what the workload reads, or go on after ``pause`` (in the main process)."""
    global _active, _paused, _hooked
    if not _hooked:
        sys.addaudithook(_hook)
        _hooked = True
    if _active is None:
        _active = _paused or _Watch()
    _paused = None


def pause() -> None:
    """Stop noting until ``start`` (the collector's own reads in between are not the workload's)."""
    global _active, _paused
    _paused, _active = _active, None


def discard() -> None:
    """Forget any watch (a run that ended early; the next run in this process starts afresh)."""
    global _active, _paused
    _active = _paused = None


def stop(known: Iterable[Path], skip: Iterable[Path]) -> dict[str, Any] | None:
    """End the watch: the ``workload_reads`` event's fields (None when no watch ran). ``known``:
    files the run hashed already (the collector's own among them: any other file in its folder
    the workload read is the workload's); ``skip``: folders of the run's own (its output, caches)."""
    global _active, _paused
    watch, _active, _paused = _active, None, None
    if watch is None:
        return None
    known_paths = {_resolved(p) for p in known}
    skipped = [_resolved(p) for p in skip] + watch.installed
    files: list[dict[str, Any]] = []
    more, hashed = watch.beyond, 0
    for name in watch.opened:
        path = _resolved(Path(name))
        if path in known_paths or any(path.is_relative_to(s) for s in skipped):
            continue
        try:
            if not stat.S_ISREG(path.stat().st_mode):
                continue
        except OSError:
            continue  # a file the workload looked for and did not find
        known_paths.add(path)
        if len(files) == MAX_FILES:
            more += 1
            continue
        files.append(_entry(path, MAX_HASH_TOTAL - hashed))
        hashed += _hashed_bytes(files[-1], path)
    return {"files": files, "files_more": more, "packages": _packages(set(sys.modules)), "watched": WATCHED}


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return path.absolute()


def _installed() -> list[Path]:
    """Where the standard library and installed packages live, and the kernel's pseudo-file
    systems: not the whole prefix, which on a system Python is /usr, where a workload's own
    folder may lie (/usr/src/app)."""
    paths = sysconfig.get_paths()
    roots = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if paths.get(key)}
    roots.update(p for p in site.getsitepackages() if p)
    if user := site.getusersitepackages():
        roots.add(user)
    roots.update(("/proc", "/sys", "/dev"))
    # As given and resolved: an open names the path as the workload wrote it (a link in a venv).
    return list(dict.fromkeys([*(Path(os.path.abspath(r)) for r in roots), *(_resolved(Path(r)) for r in roots)]))


def _entry(path: Path, left: int) -> dict[str, Any]:
    """The file as run_start lists the files it read (provenance.file_entry), unless it is too
    large to hash, or more than the ``left`` bytes of the run's budget for these files."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        return {"role": ROLE, "path": str(path), "unknown_reason": f"cannot read: {exc.strerror or exc}"}
    if size > MAX_HASH_BYTES:
        why = f"{size} bytes, more than the {MAX_HASH_BYTES} the collector hashes of one file"
    elif size > left:
        why = f"{size} bytes, past the {MAX_HASH_TOTAL} the collector hashes of the files a workload reads"
    else:
        return file_entry(ROLE, path)
    return {"role": ROLE, "path": str(path), "unknown_reason": why}


def _hashed_bytes(entry: dict[str, Any], path: Path) -> int:
    """The bytes ``entry`` hashed (0 where it was not hashed)."""
    if "sha256" not in entry:
        return 0
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _packages(modules: set[str]) -> dict[str, str]:
    """distribution -> version for the top-level modules loaded in this process."""
    tops = {name.partition(".")[0] for name in modules}
    tops -= set(sys.stdlib_module_names) | {"collector", "__main__"}
    owners = importlib.metadata.packages_distributions()
    found: dict[str, str] = {}
    for top in sorted(tops):
        for dist in owners.get(top, ()):
            try:
                found[dist] = importlib.metadata.version(dist)
            except importlib.metadata.PackageNotFoundError:
                continue
    return dict(sorted(found.items()))
