"""SIGINT, SIGTERM and SIGHUP end a run, but never in the middle of a log line.

The handler raises ``Aborted`` (a ``BaseException``, so the ``except Exception`` around a cell,
and Dynamo's wrapping of compiler errors, let it through) unless a log line is being written:
then it only notes the signal, and the writer raises once the line is flushed with its sequence
number counted. The signal is also noted, so the places that catch a cell's failure can tell an
interrupt that a library wrapped from a real failure (``check``). Python runs a handler wherever
the main thread is, a weakref callback or a ``__del__`` included, and there an exception is only
printed and dropped: so the next log line raises it again, before anything of that line is
written, and the dropped one is told in one line, not a traceback. While the run is being closed
further signals are noted and ignored, so the closing ``run_end`` is written once.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from types import FrameType
from typing import Any, Iterator

# SIGHUP: the terminal or ssh session the collector ran in went away (the shell's code, 128+1).
EXIT_ABORTED: dict[int, int] = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGHUP: 129}


def _handled(handler: Any) -> dict[int, Any]:
    """``handler`` for each signal that ends a run, returning the ones it replaces. A hangup the
    process was started ignoring stays ignored (``nohup`` leaves it so: the run must outlive the
    terminal it was started from). SIGINT and SIGTERM are handled however they were inherited:
    a shell starts a background job with SIGINT ignored, and ``kill -INT`` must still end it."""
    previous = {}
    for signum in EXIT_ABORTED:
        if signum != signal.SIGHUP or signal.getsignal(signum) is not signal.SIG_IGN:
            previous[signum] = signal.signal(signum, handler)
    return previous


class Aborted(BaseException):
    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


# What the places that catch a cell's failure let through: the run's own end (a signal's
# Aborted, Ctrl-C raised as KeyboardInterrupt, a workload's sys.exit, which aborts the run).
# Anything else workload code raises is that cell's failure, a BaseException that is no
# Exception included (asyncio.CancelledError, a class of the workload's own): it had ended the
# run with a traceback and no run_end.
ENDS_RUN = (Aborted, KeyboardInterrupt, SystemExit)


class _State:
    def __init__(self) -> None:
        self.received: int | None = None  # the first signal
        self.writing = 0  # depth of log writes in progress
        self.raised = False  # the handler raised Aborted: a second signal is only noted
        self.closing = False  # run_end is being written: note signals, raise nothing


STATE = _State()


def _handler(signum: int, frame: FrameType | None) -> None:
    if STATE.received is None:
        STATE.received = signum
    if STATE.writing or STATE.closing or STATE.raised:
        return
    STATE.raised = True  # one Aborted; a second Ctrl-C while it unwinds is only noted
    raise Aborted(signum)


def _unraisable(previous: Any) -> Any:
    def hook(unraisable: Any) -> None:
        if isinstance(unraisable.exc_value, Aborted):
            STATE.raised = False  # nothing is unwinding: a further signal raises at once
            name = signal.Signals(unraisable.exc_value.signum).name
            print(
                f"collector: {name} arrived where Python cannot raise; the run stops at its next log line, or at once on another signal",
                file=sys.stderr,
                flush=True,
            )
            return
        previous(unraisable)

    return hook


# Files the collector made before the run started (the [Neuron] log channel's temporary file):
# removed by the start-up handler, which ends the process with os._exit (no atexit runs).
EARLY_FILES: list[str] = []


def _before_the_run(signum: int, frame: FrameType | None) -> None:
    """Nothing exists to lose yet: one line and the documented code, at once. ``os._exit``
    rather than an exception, which torch's import (C++ static initialisers) may be in the
    middle of and would turn into an abort or a traceback."""
    for path in EARLY_FILES:
        with contextlib.suppress(OSError):
            os.unlink(path)
    name = signal.Signals(signum).name
    os.write(2, f"collector: interrupted before the run started ({name}); nothing was written\n".encode())
    os._exit(EXIT_ABORTED[signum])


def install_early() -> dict[int, Any]:
    """The handlers for the start-up (parsing, checks, torch's import), before any heavy import;
    returns the ones they replace (``restore``)."""
    return _handled(_before_the_run)


def install() -> dict[Any, Any]:
    STATE.__init__()  # type: ignore[misc]
    previous: dict[Any, Any] = dict(_handled(_handler))
    previous["unraisablehook"] = sys.unraisablehook
    sys.unraisablehook = _unraisable(sys.unraisablehook)
    return previous


def restore(previous: dict[Any, Any]) -> None:
    for signum, handler in previous.items():
        if signum == "unraisablehook":
            sys.unraisablehook = handler
        else:
            signal.signal(signum, handler)


def check() -> None:
    """Raise ``Aborted`` if a signal arrived (it may have been caught and wrapped on its way)."""
    if STATE.received is not None:
        STATE.closing = True
        raise Aborted(STATE.received)


def _raise_noted() -> None:
    """Between log lines: raise a noted signal, unless the run is being closed."""
    if not STATE.writing and not STATE.closing:
        check()


@contextlib.contextmanager
def writing_line() -> Iterator[None]:
    """Hold a signal that arrives while one log line is written until the line is complete; one
    that arrived before (its Aborted dropped where Python cannot raise) stops the line unwritten."""
    _raise_noted()
    STATE.writing += 1
    try:
        yield
    finally:
        STATE.writing -= 1
    _raise_noted()


def closing() -> None:
    """The run is being closed: signals from now on are noted, not raised."""
    STATE.closing = True
