"""The local Python files a workload module imports, found by reading its source, never by
running it (``run_start`` is written before the workload is loaded).

Every ``import a.b`` and ``from a import b`` in the module, wherever it stands (in a function,
under an ``if``, in a ``try``), is looked up in the module's own folder; a relative import
(``from . import b``, ``from .pkg import b``) in the importing file's folder, climbing one folder
per extra dot. So is ``importlib.import_module("a.b")`` or ``__import__("a")`` with a literal
name, and a literal string ``"name.py"`` naming a file beside the importing one (a module that
loads a sibling by its path). Each file found is hashed and read in turn.

Never followed: a name with no file in the folder (an installed package, the standard library,
torch: those are the environment's versions, not the workload's code), a file outside the
module's folder (a relative import climbing above it, a symlink pointing out of it), a file in
an installed-packages or standard-library folder below it, anything but a regular file, a file
already listed (an import cycle). Bounds: at most MAX_FILES files and MAX_DEPTH imports away
from the module; a file found beyond them is listed with why it is not hashed, so the list says
it is incomplete. A file larger than MAX_PARSE_BYTES, or one that does not parse, is hashed and
its own imports are not read.

Standard library only: it runs on the device host.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import site
import stat
import sys
import sysconfig
import warnings
from collections import deque
from pathlib import Path
from typing import Any, Iterator

ROLE = "workload_import"
MAX_FILES = 256
MAX_DEPTH = 16
MAX_PARSE_BYTES = 2 << 20
LOADERS = ("import_module", "__import__")
LONGEST_LITERAL = 255  # a string literal longer than this names no file


def installed_dirs() -> list[Path]:
    """The standard library's and the installed packages' folders of this interpreter."""
    paths = sysconfig.get_paths()
    found = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if paths.get(key)}
    found.update(getattr(site, "getsitepackages", lambda: [])())
    found.update(p for p in sys.path if p and Path(p).name in ("site-packages", "dist-packages"))
    return sorted({Path(os.path.realpath(p)) for p in found})


def workload_imports(module: Path) -> list[dict[str, Any]]:
    """The provenance entries (role ``workload_import``) of the local files ``module`` imports,
    directly or through each other, in the order they were found."""
    return _Scan(Path(os.path.abspath(module))).entries()


def imports_digest(entries: list[dict[str, Any]]) -> str:
    """One sha256 of what ``workload_imports`` found: a fresh child compares it with the run's."""
    listed = [[e["path"], e.get("sha256") or e.get("unknown_reason")] for e in entries]
    return hashlib.sha256(json.dumps(listed).encode("ascii")).hexdigest()


class _Scan:
    def __init__(self, module: Path) -> None:
        self.module = module
        self.root = module.parent
        self.real_root = Path(os.path.realpath(self.root))
        # An installed-packages folder the workload's own folder lies strictly inside (a workload
        # shipped in a package) does not stop the scan; one below the workload's folder, or the
        # workload's folder itself, does.
        self.blocked = [d for d in installed_dirs() if not (self.real_root != d and self.real_root.is_relative_to(d))]

    def entries(self) -> list[dict[str, Any]]:
        """Breadth first from the module: each file is hashed and its imports read from the same
        bytes when it is taken from the queue (which holds paths only)."""
        seen = {os.path.realpath(self.module)}
        found: list[dict[str, Any]] = []
        queue: deque[tuple[Path, int]] = deque([(self.module, 0)])
        cut: dict[str, Any] | None = None
        while queue:
            path, depth = queue.popleft()
            if depth == 0:
                text = _hashed(path)[1]  # the module: its own workload_module entry hashes it
            else:
                entry, text = _hashed(path)
                found.append(entry)
            if text is None or cut is not None:
                continue
            for candidate in self._imported(path, text):
                real = self._local(candidate)
                if real is None or real in seen:
                    continue
                seen.add(real)
                if len(seen) - 1 > MAX_FILES:
                    cut = _entry_unknown(
                        candidate,
                        f"not hashed: the collector hashes at most {MAX_FILES} local files a workload "
                        "module imports; this one and any found after it are not",
                    )
                    break
                if depth + 1 > MAX_DEPTH:
                    found.append(
                        _entry_unknown(
                            candidate,
                            f"not hashed: {depth + 1} imports away from the workload module, beyond the "
                            f"collector's limit of {MAX_DEPTH}",
                        )
                    )
                else:
                    queue.append((candidate, depth + 1))
        return found + ([cut] if cut is not None else [])

    def _local(self, candidate: Path) -> str | None:
        """The real path of ``candidate`` when it is a regular file inside the workload's folder
        and in no installed-packages folder, else None."""
        try:
            real = Path(os.path.realpath(candidate))
            if not real.is_relative_to(self.real_root) or any(real.is_relative_to(d) for d in self.blocked):
                return None
            return str(real) if stat.S_ISREG(os.stat(real).st_mode) else None
        except (OSError, ValueError):
            return None

    def _imported(self, path: Path, text: bytes) -> Iterator[Path]:
        """The files ``path``'s imports name, those that exist, in the order they appear."""
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # invalid escapes and the like: not ours to say
                tree = ast.parse(text, filename=str(path))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return
        folder = path.parent
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield from self._chain(self.root, alias.name.split("."))[0]
            elif isinstance(node, ast.ImportFrom):
                yield from self._from(folder, node)
            elif isinstance(node, ast.Call):
                name = _loaded_name(node)
                if name is not None:
                    yield from self._chain(self.root, name.split("."))[0]
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                sibling = _sibling(folder, node.value)
                if sibling is not None and sibling.is_relative_to(self.root):
                    yield sibling

    def _from(self, folder: Path, node: ast.ImportFrom) -> Iterator[Path]:
        """``from [.]*module import names``: the module's files, and each name that is a module
        of the package it names."""
        if node.level:
            base = folder
            for _ in range(node.level - 1):
                if base == self.root:
                    return  # above the workload's folder: not followed
                base = base.parent
            if not base.is_relative_to(self.root):
                return
            if base != self.root:  # the workload module is the package over its own folder
                yield base / "__init__.py"
        else:
            base = self.root
        files, package = self._chain(base, node.module.split(".") if node.module else [])
        yield from files
        if package is not None:
            for alias in node.names:
                if alias.name != "*":
                    yield from self._chain(package, [alias.name])[0]

    @staticmethod
    def _chain(base: Path, parts: list[str]) -> tuple[list[Path], Path | None]:
        """The files importing ``parts`` below ``base`` runs (each package's ``__init__.py``,
        then the module), and the folder of the last part when it is a package (else None)."""
        files: list[Path] = []
        here = base
        for part in parts:
            if not part.isidentifier():
                return files, None
            folder = here / part
            if os.path.isfile(folder / "__init__.py"):
                files.append(folder / "__init__.py")
            elif os.path.isfile(here / f"{part}.py"):
                files.append(here / f"{part}.py")
                return files, None  # a module: what follows is a name inside it
            elif not os.path.isdir(folder):
                return files, None  # not here: installed, built in, or missing
            here = folder  # a package (or a folder without __init__.py)
        return files, here


def _loaded_name(node: ast.Call) -> str | None:
    """The literal absolute name in ``importlib.import_module("a.b")`` or ``__import__("a")``."""
    func = node.func
    called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
    if called not in LOADERS or not node.args:
        return None
    first = node.args[0]
    if isinstance(first, ast.Constant) and isinstance(first.value, str) and not first.value.startswith("."):
        return first.value
    return None


def _sibling(folder: Path, text: str) -> Path | None:
    """A literal ``"name.py"`` (or ``"sub/name.py"``) as a path from the importing file's folder."""
    if not text.endswith(".py") or len(text) > LONGEST_LITERAL or "\x00" in text or not text.isprintable():
        return None
    if os.path.isabs(text):
        return None
    return Path(os.path.normpath(folder / text))


def _entry_unknown(path: Path, reason: str) -> dict[str, Any]:
    return {"role": ROLE, "path": str(path), "unknown_reason": reason}


def _hashed(path: Path) -> tuple[dict[str, Any], bytes | None]:
    """The file's entry with its sha256 (or why it cannot be read), and its bytes when they are
    few enough to read its imports from. Opened without blocking and checked to be a regular
    file on the open handle: a FIFO put there after the first check blocks nothing."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return _entry_unknown(path, "cannot read: not a regular file"), None
            digest = hashlib.sha256()
            kept = bytearray()
            size = 0
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
                size += len(block)
                if size <= MAX_PARSE_BYTES:
                    kept += block
    except OSError as exc:
        return _entry_unknown(path, f"cannot read: {exc.strerror or exc}"), None
    entry = {"role": ROLE, "path": str(path), "sha256": digest.hexdigest()}
    return entry, bytes(kept) if size <= MAX_PARSE_BYTES else None
