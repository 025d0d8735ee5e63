"""What produced a log: the collector's version and git state, the sha256 of every file it
read to decide what to run (the workload module and the local files it imports, its plan, the
constraint data, the adapter), and (0.24.0 on) of each file of its own code and data.

Git is asked, never required: a copy of the collector without git or without ``.git`` records
its commit and dirty flag as unknown with the reason; its own files' hashes still tell two
copies' code apart, file by file.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path
from typing import Any

from collector import __version__

COLLECTOR_DIR = Path(__file__).resolve().parent
GIT_TIMEOUT_S = 10
SOURCE_ROLE = "collector_source"  # a file of the collector's own code or data
EXAMPLES = "workloads"  # the example workloads: a run hashes the one it ran as its workload_module
DOCUMENT = ".md"  # the collector's documents: no run reads them
MAX_SOURCE_FILES = 2000  # files of its own the collector hashes, at most; beyond, one entry says so
MAX_SOURCE_BYTES = 64 << 20  # a larger file of its folder is listed, not hashed


def _fact(value: str | None, source: str, reason: str = "") -> dict[str, str]:
    return {"value": value, "source": source} if value is not None else {"unknown_reason": reason or "not read"}


def _git(*args: str) -> tuple[str | None, str]:
    """git's output in the collector's folder, or None and why not."""
    try:
        done = subprocess.run(
            # --no-optional-locks: git status must not refresh (write) the checkout's index; a
            # git killed by the timeout or a file-size limit would leave index.lock behind.
            ["git", "--no-optional-locks", "-C", str(COLLECTOR_DIR), *args],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        return None, "git is not installed on this host"
    except subprocess.TimeoutExpired:
        return None, f"git did not answer within {GIT_TIMEOUT_S} s"
    except OSError as exc:
        return None, f"git could not be run: {exc.strerror or exc}"
    if done.returncode != 0:
        first = (done.stderr.strip().splitlines() or ["no message"])[0][:200]
        return None, f"git {args[0]} failed: {first} (a copy of the collector outside a git checkout?)"
    return done.stdout.strip(), ""


def git_state() -> tuple[dict[str, str], dict[str, str]]:
    """(commit, dirty) as facts: dirty is "true" when tracked files differ from the commit, or
    the collector's folder holds a file the commit does not (ignored files aside). A checkout
    that does not track the collector's folder (a copy placed inside another repository) says
    nothing of the collector: its commit is unknown, with the reason."""
    commit, why = _git("rev-parse", "HEAD")
    if commit is None:
        return _fact(None, "", why), _fact(None, "", f"no commit: {why}")
    tracked, why = _git("ls-files", "--", ".")
    if not tracked:
        why = (
            why
            or "the git checkout around the collector's folder does not track it (a copy inside another repository?)"
        )
        return _fact(None, "", why), _fact(None, "", f"no commit: {why}")
    status, why = _git("status", "--porcelain", "--untracked-files=no")
    untracked, why_untracked = _git("ls-files", "--others", "--exclude-standard", "--", ".")
    dirty = (
        _fact(None, "", why or why_untracked)
        if status is None or untracked is None
        else _fact(
            "true" if status or untracked else "false",
            "git status --porcelain --untracked-files=no (the whole checkout: a change anywhere in it);"
            " git ls-files --others --exclude-standard (the collector's folder)",
        )
    )
    return _fact(commit, "git rev-parse HEAD"), dirty


def file_entry(role: str, path: Path) -> dict[str, Any]:
    """One file the run read, with its sha256 (or why it could not be read)."""
    try:
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        return {"role": role, "path": str(path), "sha256": digest.hexdigest()}
    except OSError as exc:
        return {"role": role, "path": str(path), "unknown_reason": f"cannot read: {exc.strerror or exc}"}


def source_files() -> list[Path]:
    """Each file in the collector's folder but its documents, its workloads folder (a run hashes
    the workload it ran as its workload_module) and bytecode caches: its Python code and data,
    and whatever else lies there (a compiled module, a stray file, a workload placed elsewhere
    in it), by its path below the folder. A folder linked into it is
    walked as its own (once: a link loop is not followed again)."""
    found: list[Path] = []
    seen: set[str] = set()
    for folder, dirs, names in os.walk(COLLECTOR_DIR, followlinks=True):
        real = os.path.realpath(folder)
        if real in seen:
            dirs[:] = []
            continue
        seen.add(real)
        here = Path(folder)
        top = here == COLLECTOR_DIR
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not (top and d == EXAMPLES))
        found += [here / name for name in sorted(names) if not name.endswith(DOCUMENT) and (here / name).is_file()]
    return found


def source_entries() -> list[dict[str, Any]]:
    """The provenance entries of the collector's own files (role collector_source), each hashed
    (or why not: too large, unreadable), at most MAX_SOURCE_FILES and one more that says how many
    were left out."""
    files = source_files()
    entries = []
    for path in files[:MAX_SOURCE_FILES]:
        try:
            size = path.stat().st_size
        except OSError as exc:
            entries.append(
                {"role": SOURCE_ROLE, "path": str(path), "unknown_reason": f"cannot read: {exc.strerror or exc}"}
            )
            continue
        if size > MAX_SOURCE_BYTES:
            why = f"not hashed: {size} bytes, over the {MAX_SOURCE_BYTES} the collector hashes of a file of its own"
            entries.append({"role": SOURCE_ROLE, "path": str(path), "unknown_reason": why})
        else:
            entries.append(file_entry(SOURCE_ROLE, path))
    if len(files) > MAX_SOURCE_FILES:
        left = f"not hashed: {len(files) - MAX_SOURCE_FILES} more files beyond the first {MAX_SOURCE_FILES}"
        entries.append({"role": SOURCE_ROLE, "path": str(COLLECTOR_DIR), "unknown_reason": left})
    return entries


def provenance(files: list[tuple[str, Path]], entries: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The run_start ``provenance`` field: ``files`` hashed here, then each file of the
    collector's own (source_entries: the adapter and descriptor again, as files of its folder),
    then ``entries`` hashed already (the workload module's local imports, collector/localimports.py)."""
    commit, dirty = git_state()
    return {
        "collector_version": __version__,
        "git_commit": commit,
        "git_dirty": dirty,
        "files": [file_entry(role, path) for role, path in files] + source_entries() + list(entries or []),
    }
