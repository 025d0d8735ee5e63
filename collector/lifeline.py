"""A child of the collector ends when the collector does, however it ends (kill -9 included).

Two layers, both set up by the child itself as the first thing it does (stdlib only, before
torch is imported):

* on Linux the kernel sends the child SIGTERM when its parent dies (``PR_SET_PDEATHSIG``);
* everywhere, the child watches a pipe whose write end only the parent holds: end of file on it
  means the parent is gone, whatever ended it.

Either way the child ends its whole process group with SIGKILL: it leads that group (the parent
starts it in a new session), so compiler workers and whatever the workload started go with it.

A compile-cache folder the collector makes carries ``IN_USE`` (the pid of the collector that
owns it) from the moment it exists. A folder still marked by a process that is gone was being
written by a run that was killed: its contents are never trusted, and the next run removes it.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import re
import shutil
import signal
import stat
import sys
import tempfile
import threading
import time
from pathlib import Path

PIPE_ENV = "COLLECTOR_LIFELINE_FD"
PARENT_ENV = "COLLECTOR_PARENT_PID"
IN_USE = "IN_USE"
CACHE_PREFIXES = ("collector-cache-", "collector-cold-")
# A backend's log channel's temporary file (the neuron adapter's [Neuron] channel), named by the
# collector process that made it and tempfile.mkstemp's eight random characters, and made
# readable by its owner only: the sweep removes no file a user named alike.
BACKEND_LOG_PREFIX = "collector-backendlog-"
BACKEND_LOG = re.compile(rf"{BACKEND_LOG_PREFIX}(\d{{1,10}})-[a-z0-9_]{{8}}\.log")
_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36


def for_child() -> tuple[int, int, dict[str, str]]:
    """(read end, write end, environment) for a child: pass the read end to it (``pass_fds``),
    close it here once the child is started, and keep the write end open while it runs."""
    read_end, write_end = os.pipe()  # both non-inheritable: no other child of ours holds them
    return read_end, write_end, {PIPE_ENV: str(read_end), PARENT_ENV: str(os.getpid())}


def watch_parent() -> None:
    """In a child: end this process group when the parent that started it dies.

    Does nothing in a process the collector did not start this way."""
    fd_text = os.environ.pop(PIPE_ENV, None)
    parent = int(os.environ.pop(PARENT_ENV, "0") or 0)
    if fd_text is None or os.getpgrp() != os.getpid():
        return  # not a child leading its own group: ending "its group" would end someone else
    fd = int(fd_text)
    os.set_inheritable(fd, False)  # the workload's own children need not hold it
    signal.signal(signal.SIGTERM, _end_group)
    _die_with_parent(signal.SIGTERM)
    if os.getppid() != parent:  # the parent died before the lines above took effect
        _end_group()
    threading.Thread(target=_wait_for_eof, args=(fd,), name="collector-lifeline", daemon=True).start()


def _die_with_parent(signum: int) -> None:
    """Ask the kernel for ``signum`` when the parent dies (Linux only; elsewhere the pipe serves)."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signum), 0, 0, 0)


def adopt_orphans(adopt: bool = True) -> None:
    """Make this process the one its orphaned descendants are given to, or (``adopt`` False) no
    longer (Linux only): a process the workload started in the background (``sleep 600 &`` in a
    shell that then ended) is then this process's child, and end_left_children finds it, where
    it had gone to init and outlived the run."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_CHILD_SUBREAPER, int(adopt), 0, 0, 0)


def _wait_for_eof(fd: int) -> None:
    with contextlib.suppress(OSError):
        while os.read(fd, 4096):  # the parent never writes: only the end of the pipe comes
            pass
    _end_group()


def _end_group(signum: int | None = None, frame: object = None) -> None:
    """SIGKILL to this process's group, itself included (it leads the group)."""
    with contextlib.suppress(OSError):
        os.killpg(os.getpgrp(), signal.SIGKILL)
    os._exit(128 + signal.SIGKILL)


def mark_in_use(folder: Path) -> None:
    """Mark a cache folder as written by this process until the run removes it (a folder left
    unmarked, on a full disk, is only never swept: it is still never reused)."""
    with contextlib.suppress(OSError):
        (folder / IN_USE).write_text(f"{os.getpid()}\n", encoding="utf-8")


_PROCESS_TEMP: list[Path] = []


def process_temp() -> Path:
    """This process's temp dir for a run, for what compiles keep below the temp dir (Inductor's
    precompiled headers, the compiler's temporary files): made on first use below the temp dir
    as a cache folder marked in use (a later run sweeps it if this process is killed), and
    removed when the process exits, not when a run ends: Inductor keeps paths below the temp dir
    for the life of the process, and a second run of one process whose first run's temp dir was
    removed met those paths in its compiles (a C++ compile error)."""
    if not _PROCESS_TEMP:
        folder = Path(tempfile.mkdtemp(prefix=CACHE_PREFIXES[0]))
        mark_in_use(folder)
        atexit.register(shutil.rmtree, folder, True)
        _PROCESS_TEMP.append(folder)
    return _PROCESS_TEMP[0]


def made_temp() -> list[Path]:
    """This process's temp dir where process_temp made one, else none."""
    return list(_PROCESS_TEMP)


def _owner_gone(folder: Path) -> bool:
    """Whether ``folder`` is marked in use by a process that no longer exists."""
    try:
        pid = int((folder / IN_USE).read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return False  # no marker: not one of ours, or being made right now
    return _gone(pid)


def _made_by_mkstemp(path: Path) -> bool:
    """A regular file (not a link) of this user's, readable and writable by its owner only, as
    tempfile.mkstemp makes it."""
    try:
        info = path.lstat()
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and info.st_uid == os.getuid() and stat.S_IMODE(info.st_mode) == 0o600


def _gone(pid: int) -> bool:
    """Whether no process ``pid`` exists (one that exists as another user's is not gone). A
    marker or name is anyone's text: 0 and below name process groups, not a process, and a
    number past the kernel's range no process; neither is taken for ours."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OverflowError:
        return False
    except PermissionError:
        return False  # alive, someone else's
    return False


def sweep_left_behind(parent: Path | None = None) -> list[Path]:
    """Remove the cache folders under the temp dir that a killed collector or child left; they
    are never reused, and a half-written compile cache must not be mistaken for a cold one.
    Returns the folders removed."""
    parent = Path(tempfile.gettempdir()) if parent is None else parent
    removed = []
    with contextlib.suppress(OSError):
        for entry in parent.iterdir():
            if (
                entry.name.startswith(CACHE_PREFIXES)
                and not entry.is_symlink()
                and entry.is_dir()
                and _owner_gone(entry)
            ):
                shutil.rmtree(entry, ignore_errors=True)
                removed.append(entry)
            # A backend log channel's file (collector/backends/neuronenv.py) names its process instead.
            elif (
                (named := BACKEND_LOG.fullmatch(entry.name)) is not None
                and _made_by_mkstemp(entry)
                and _gone(int(named[1]))
            ):
                with contextlib.suppress(OSError):
                    entry.unlink()
                    removed.append(entry)
    return removed


# A child that torch starts for its own compiles (Inductor's compile-worker pool), ended by
# torch at exit: not the workload's to leave behind.
_TORCH_WORKER = b"torch/_inductor/compile_worker"


def _stat(pid: int | str) -> list[bytes] | None:
    """The fields of a process's /proc stat after its command (state, parent, ...); None where
    it cannot be read (gone, or not Linux)."""
    with contextlib.suppress(OSError, ValueError):
        with open(f"/proc/{pid}/stat", "rb") as handle:
            raw = handle.read()
        # pid (comm) state ppid ...: comm may hold spaces and parentheses, so after the last ')'
        return raw[raw.rindex(b")") + 2 :].split()
    return None


def _parents() -> dict[int, int]:
    """Each process's parent (Linux /proc; an empty map elsewhere)."""
    found: dict[int, int] = {}
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if entry.name.isdigit() and (fields := _stat(entry.name)) is not None and len(fields) > 1:
                found[int(entry.name)] = int(fields[1])
    return found


def children() -> set[int]:
    """The pids whose parent is this process (Linux /proc; an empty set elsewhere)."""
    me = os.getpid()
    return {pid for pid, parent in _parents().items() if parent == me}


def _descendants(roots: set[int]) -> list[int]:
    """Every process below ``roots`` (their children, theirs, ...), the deepest last."""
    below: dict[int, list[int]] = {}
    for pid, parent in _parents().items():
        below.setdefault(parent, []).append(pid)
    found: list[int] = []
    todo = sorted(roots)
    while todo:
        pid = todo.pop(0)
        kids = sorted(below.get(pid, ()))
        found += [k for k in kids if k not in found]
        todo += kids
    return found


def end_left_children(before: set[int], grace: float = 2.0) -> list[str]:
    """End the children of this process that were not there before the run (``before``) and
    are not torch's compile workers: what the workload started in this process and left
    running. SIGTERM, then SIGKILL after ``grace`` seconds; each is reaped. Returns each one as
    'PID (command)', for the line that says so."""
    left = [found for pid in sorted(children() - before) if (found := _left(pid)) is not None]
    # Their own children too (a shell's `sleep 600`), which ending the shell would leave to us
    # (adopt_orphans) after this look: ended with them, the deepest last.
    left += [found for pid in _descendants({pid for pid, _ in left}) if (found := _left(pid)) is not None]
    for pid, _ in left:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for pid, _ in left:
        while not _ended(pid):
            if time.monotonic() > deadline:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, 0)
                break
            time.sleep(0.05)
    return [f"{pid} ({command})" for pid, command in left]


def _left(pid: int) -> tuple[int, str] | None:
    """(pid, command) of a process left running, None for one that exited (a child of ours is
    reaped here) or is torch's compile worker."""
    fields = _stat(pid)
    if not fields:
        return None
    if fields[0] == b"Z":  # exited, not yet reaped: reaped here
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        return None
    with contextlib.suppress(OSError):
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            command = handle.read().replace(b"\0", b" ").strip()
        if _TORCH_WORKER in command:
            return None
        return pid, command.decode("utf-8", "replace")[:120]
    return None


def _ended(pid: int) -> bool:
    """Whether ``pid`` has ended: reaped here where it is (or has become) our child, else gone
    from /proc (a grandchild, or a zombie whose parent reaps it)."""
    try:
        done, _status = os.waitpid(pid, os.WNOHANG)
        return bool(done)
    except ChildProcessError:
        fields = _stat(pid)
        return not fields or fields[0] == b"Z"
