"""Child-process supervision: start ``python -m MODULE`` in a fresh interpreter with its own
compile caches, relay its marker lines as they come, and end its whole process group when it
is done, runs past its time, or the collector stops (with collector.lifeline, even after
SIGKILL of the collector)."""

from __future__ import annotations

import collections
import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

from collector import lifeline

COLD_MARKER = "COLLECTOR_COLD_RESULT "


def run_cold(
    argv_tail: list[str], cache_env: Callable[[Path], dict[str, str]], timeout: float, keep_in: Path | None = None
) -> dict[str, Any]:
    """Run ``python -m collector.coldstart ...`` in a new process with new empty cache dirs
    (or with the caches in ``keep_in``, see ``run_child``).

    Both are needed: a new process alone may reuse the persistent compile cache, and a new
    cache dir inside a process that already compiled the graph is far from cold.

    Returns the child's result line, ``{"timed_out_after_s": timeout}`` when it ran past
    ``timeout`` (its whole process group is ended, compiler workers included), or
    ``{"error": ...}`` when it printed no result.
    """
    found: dict[str, Any] = {}

    def on_line(line: str) -> bool:
        if line.startswith(COLD_MARKER):
            found.update(json.loads(line[len(COLD_MARKER) :]))
        return False

    ended = run_child("collector.coldstart", argv_tail, cache_env, timeout, on_line, keep_in)
    if ended.timed_out:
        return {"timed_out_after_s": timeout}
    if found:
        return found
    return {"error": ended.error()}


def marker_stream() -> Any:
    """In a fresh child: a private copy of stdout for its marker lines, with stdout itself
    (print, C libraries, compilers) sent to stderr, so nothing the workload writes, even a
    line left unfinished, can run into a marker line and hide it from the parent."""
    sys.stdout.flush()
    markers = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)
    return markers


class ChildEnd:
    """How a child process ended: its exit code, whether it ran past its time, its stderr tail."""

    def __init__(self, returncode: int | None, timed_out: bool, tail: list[str]) -> None:
        self.returncode = returncode
        self.timed_out = timed_out
        self.tail = tail

    def exited(self) -> str:
        """'exited N: <its last lines>', or 'exited N with no output'."""
        said = " | ".join(self.tail[-3:])[:500]
        return f"exited {self.returncode}: {said}" if said.strip() else f"exited {self.returncode} with no output"

    def error(self) -> str:
        return f"the fresh process {self.exited()}"


def run_child(
    module: str,
    argv_tail: list[str],
    cache_env: Callable[[Path], dict[str, str]],
    timeout: float,
    on_line: Callable[[str], bool],
    keep_in: Path | None = None,
) -> ChildEnd:
    """Run ``python -m MODULE ...`` in a new interpreter with new, empty compile-cache dirs;
    with ``keep_in``, its caches (and temp dir) live there instead and are kept after it ends,
    so a later process can be pointed at what this one compiled.

    Each line the child prints on stdout goes to ``on_line`` as it comes; ``on_line`` returns
    True when the line shows progress, which gives the child ``timeout`` seconds more. A child
    silent past its time (or the run interrupted) has its whole process group ended: it leads
    its own group, so compiler workers go with it.
    """
    package_parent = str(Path(__file__).resolve().parent.parent)
    kept = contextlib.nullcontext(str(keep_in)) if keep_in is not None else None
    with kept or tempfile.TemporaryDirectory(prefix="collector-cold-") as cache_dir:
        lifeline.mark_in_use(Path(cache_dir))
        env = dict(os.environ)
        env.update(cache_env(Path(cache_dir)))
        # Inductor keeps precompiled headers under its default dir below the temp dir, which
        # TORCHINDUCTOR_CACHE_DIR does not move: a new temp dir makes that empty too. The child
        # lists every cache dir before its call, so what was not empty is recorded either way.
        (Path(cache_dir) / "tmp").mkdir(parents=True, exist_ok=True)
        env["TMPDIR"] = str(Path(cache_dir) / "tmp")
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_parent, env.get("PYTHONPATH")]))
        env["COLLECTOR_CACHE_DIR"] = cache_dir
        env["COLLECTOR_LAUNCH_WALL"] = repr(time.time())
        # The child ends its group when this process dies, even by SIGKILL (collector.lifeline).
        read_end, write_end, lifeline_env = lifeline.for_child()
        env.update(lifeline_env)
        try:
            # -P: the working folder is not put first on the child's path, so a folder there
            # named like a package (a ``collector/`` of the user's) cannot stand in for this one.
            child = subprocess.Popen(
                [sys.executable, "-P", "-m", module, *argv_tail],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,
                pass_fds=(read_end,),
            )
        except BaseException:
            os.close(write_end)
            raise
        finally:
            os.close(read_end)
        lines: queue.Queue[str | None] = queue.Queue()
        tail: collections.deque[str] = collections.deque(maxlen=20)
        readers = [
            threading.Thread(target=_pump, args=(child.stdout, lines.put, True), daemon=True),
            threading.Thread(target=_pump, args=(child.stderr, tail.append, False), daemon=True),
        ]
        for reader in readers:
            reader.start()
        timed_out = False
        try:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    line = lines.get(timeout=max(0.0, min(1.0, deadline - time.monotonic())))
                except queue.Empty:
                    if child.poll() is not None:  # exited; a worker it left may hold the pipe open
                        end_group(child, only_stragglers=True)
                    if time.monotonic() >= deadline:
                        timed_out = True
                        end_group(child)
                        break
                    continue
                if line is None:
                    break
                if on_line(line.rstrip("\n")):
                    deadline = time.monotonic() + timeout
            if not timed_out:
                child.wait()
        except BaseException:
            end_group(child)
            raise
        finally:
            end_group(child, only_stragglers=True)
            os.close(write_end)
            for reader in readers:
                reader.join(timeout=5.0)
    return ChildEnd(None if timed_out else child.returncode, timed_out, [t.rstrip() for t in tail if t.strip()])


def _pump(stream: Any, put: Callable[[Any], None], say_end: bool) -> None:
    """Hand each line of ``stream`` to ``put``; then None, the end of the stream, if ``say_end``."""
    try:
        for line in stream:
            put(line)
    except (OSError, ValueError):
        pass
    finally:
        if say_end:
            put(None)


def end_group(child: subprocess.Popen[str], grace: float = 5.0, only_stragglers: bool = False) -> None:
    """End the child's process group: SIGTERM, then SIGKILL after ``grace`` seconds.

    With ``only_stragglers`` (the child already exited) only processes left in its group are
    killed, at once.
    """
    try:
        os.killpg(child.pid, signal.SIGKILL if only_stragglers else signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        pass
    if only_stragglers:
        return
    try:
        child.wait(timeout=grace)  # its output pipes are read by their own threads
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        child.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass
