"""Variables the neuron adapter sets before torch is imported (torch autoloads torch_neuronx).

The neuron descriptor's ``before_torch`` hook: standard library only, loaded by its path
(``collector.descriptors.hook_module``), so ``python -m collector`` can apply them before the
first ``import torch``. Each setting is recorded with who set it (the environment event's
``backend_settings``); see shared/reference/torchneuron-2.33-notes.md sections 3, 4 and 7.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import tempfile
from typing import Any, MutableMapping

from collector import interrupt
from collector.lifeline import BACKEND_LOG_PREFIX

# Always this value for the run: a compile failure must raise, never run eager and pass as compiled.
PINNED = {
    "TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION": (
        "1",
        "compile failures raise instead of silently running eager (the documented 2.33 default is "
        "True, an earlier source had False, so the collector pins it)",
    ),
}
# Set when the user has not chosen: the documented default is not confirmed for 2.33.
DEFAULTED = {
    "NEURON_LAUNCH_BLOCKING": (
        "0",
        "asynchronous execution, as a server runs; the collector synchronises the device at every timing boundary",
    ),
}
LOG_FILE = "TORCH_NEURONX_LOG_FILE"

_applied: list[dict[str, Any]] | None = None


def apply(environ: MutableMapping[str, str] | None = None, log_file: str | None = None) -> list[dict[str, Any]]:
    """Set the variables once per process and return what each one is and who set it."""
    global _applied
    if _applied is not None:
        return _applied
    environ = os.environ if environ is None else environ
    late = "torch_neuronx" in sys.modules
    late_note = (
        "; torch_neuronx was already imported when it was set, so whether the runtime read it is not measured"
        if late
        else ""
    )
    settings = []
    for name, (value, note) in PINNED.items():
        before = environ.get(name)
        environ[name] = value
        if before == value:
            settings.append({"name": name, "value": value, "set_by": "environment", "note": note})
        else:
            was = f" (was {before!r})" if before is not None else ""
            settings.append({"name": name, "value": value, "set_by": "collector", "note": note + was + late_note})
    for name, (value, note) in DEFAULTED.items():
        if name in environ:
            settings.append(
                {"name": name, "value": environ[name], "set_by": "environment", "note": "kept as set by the user"}
            )
        else:
            environ[name] = value
            settings.append({"name": name, "value": value, "set_by": "collector", "note": note + late_note})
    if LOG_FILE in environ:
        settings.append(
            {
                "name": LOG_FILE,
                "value": environ[LOG_FILE],
                "set_by": "environment",
                "note": "the [Neuron] log channel; copied into the run directory at the end",
            }
        )
    else:
        if log_file is None:
            # Named by this process: a run's sweep removes it once the process is gone (kill -9).
            handle, log_file = tempfile.mkstemp(prefix=f"{BACKEND_LOG_PREFIX}{os.getpid()}-", suffix=".log")
            os.close(handle)
            # The collector's own file: copied into the run at its end, removed when this process
            # exits (also when the run never started: exit 3, an interrupt while torch imports).
            atexit.register(_remove, log_file)
            interrupt.EARLY_FILES.append(log_file)  # a signal while torch imports exits without atexit
        environ[LOG_FILE] = log_file
        settings.append(
            {
                "name": LOG_FILE,
                "value": log_file,
                "set_by": "collector",
                "note": "the [Neuron] log channel; copied into the run directory at the end" + late_note,
            }
        )
    _applied = settings
    return settings


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def reset_for_tests() -> None:
    global _applied
    _applied = None
