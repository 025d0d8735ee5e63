"""A tiny MLP whose workload functions fail on request, for the collector's robustness tests.

``FAULTY=<phase>@<batch>`` makes one phase fail at the cells of that batch size:

* ``inputs``: ``make_inputs`` raises;
* ``reference``: ``run_model`` raises on the reference model (float64 parameters);
* ``run``: ``run_model`` raises on a cell's model (float32 parameters);
* ``compare``: ``task_metric`` raises;
* ``metric-key``: ``task_metric`` reads an output the model does not return (a KeyError);
* ``metric-mapping``: ``task_metric`` returns a mapping instead of a number;
* ``write``: ``run_model`` on a cell's model writes into its input after the call (the
  reference's does not), so the cell's later calls are fed other values;
* ``warm``: ``run_model`` raises from the fourth call of a cell's model on (its warm timing);
* ``cancelled``: ``run_model`` on a cell's model raises asyncio.CancelledError, a
  BaseException that is no Exception; ``unprintable``: an exception whose ``__str__`` raises;
  ``warn-many``: it issues 120,000 warnings before returning; ``warn-then-raise``: one warning, then
  a RuntimeError; ``no-mapping``: ``run_model`` returns None; ``build-cancelled`` (the number is
  ignored): ``build_model`` raises asyncio.CancelledError;
* ``big-weights``: the model carries a 1 MB buffer (a weights file larger than the log);
* ``cold-hang``: in the cold-start child only, ``build_model`` starts a grandchild that sleeps
  (its pid written to ``FAULTY_PIDFILE``) and then sleeps itself, past any cold timeout;
* ``child-crash``: in a fresh child process of the run only, ``build_model`` exits with 7;
* ``reshape``: every second call of the reference model at that batch keeps only the first position
  of ``y`` (an output whose shape changes between two calls with the same inputs);
* ``hang``: ``run_model`` sleeps for 10 minutes on a cell's model (a run that outlasts its
  scheduler's time limit);
* ``nan-at`` / ``inf-at`` (the number is a flat index, not a batch size): every call of the
  model, the reference's included, puts a NaN or +Inf at that element of ``y``, so the output
  equals the reference there exactly and is within tolerance everywhere else;
* ``chdir`` (the number is ignored): ``build_model`` changes the working directory to
  ``FAULTY_CHDIR``, as a careless workload might;
* ``spawn`` (the number is ignored): in the collector's own process, ``build_model`` starts two
  sleeping processes, one in a session of its own, and leaves them running (their pids written
  to ``FAULTY_PIDFILE``).

* ``background`` (the number is ignored): in the collector's own process, ``build_model``
  runs a shell that starts a sleeping process in the background and ends, and a shell that
  runs a sleep and waits for it (pids written to ``FAULTY_PIDFILE`` by the sleeps' shells);
* ``thread`` (the number is ignored): in the collector's own process, ``build_model`` starts
  a thread that is no daemon and sleeps for ten minutes; ``pool``: a thread pool's task does.

``FAULTY_PRINT=1`` makes ``build_model`` and every ``run_model`` call print to standard output.

Transfer and compile failures are injected by the tests at the collector's seams (a test
backend's compiler, the transfer function), since a workload module does not control them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Any

import torch
from torch import nn

MODEL_REVISION = "faulty v1 (synthetic test workload)"
TASK_METRIC = "max_abs_to_reference"


def _fault() -> tuple[str, int] | None:
    spec = os.environ.get("FAULTY", "")
    if "@" not in spec:
        return None
    phase, batch = spec.split("@", 1)
    return phase, int(batch)


def _fails(phase: str, batch: int) -> bool:
    return _fault() == (phase, batch)


def _in_cold_child() -> bool:
    return sys.argv[0].endswith(("coldstart.py", "cellproc.py"))  # a fresh process of the run


def build_model() -> nn.Module:
    fault = _fault()
    if fault is not None and fault[0] == "build-cancelled":
        import asyncio

        raise asyncio.CancelledError("injected CancelledError in build_model")
    if fault is not None and fault[0] == "cold-hang" and _in_cold_child():
        sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        with open(os.environ["FAULTY_PIDFILE"], "w", encoding="utf-8") as handle:
            handle.write(f"{os.getpid()} {sleeper.pid}\n")
        time.sleep(600)
    if fault is not None and fault[0] == "child-crash" and _in_cold_child():
        os._exit(7)  # a fresh process that dies without a word, as a crashing compiler would
    if fault is not None and fault[0] == "spawn" and not _in_cold_child():
        sleepers = [
            subprocess.Popen(["sleep", "600"]),
            subprocess.Popen(["sleep", "601"], start_new_session=True),
        ]
        with open(os.environ["FAULTY_PIDFILE"], "a", encoding="utf-8") as handle:
            handle.write(" ".join(str(p.pid) for p in sleepers) + "\n")
    if fault is not None and fault[0] == "background" and not _in_cold_child():
        pidfile = os.environ["FAULTY_PIDFILE"]
        subprocess.run(["sh", "-c", f'sleep 602 & echo $! >> "{pidfile}"'], check=True)
        subprocess.Popen(["sh", "-c", f'sleep 603 & echo $! >> "{pidfile}"; wait'])
    if fault is not None and fault[0] == "thread" and not _in_cold_child():
        import threading

        threading.Thread(target=time.sleep, args=(600,), name="faulty-heartbeat").start()
    if fault is not None and fault[0] == "pool" and not _in_cold_child():
        from concurrent.futures import ThreadPoolExecutor

        _POOL.append(ThreadPoolExecutor(thread_name_prefix="faulty-pool"))
        _POOL[0].submit(time.sleep, 600)
    if fault is not None and fault[0] == "chdir":
        os.chdir(os.environ["FAULTY_CHDIR"])
    if os.environ.get("FAULTY_PRINT"):
        print("faulty: build_model")
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4))
    if fault is not None and fault[0] == "big-weights":
        model.register_buffer("ballast", torch.zeros(256 * 1024))
    return model.eval()


def make_inputs(batch: int, length: int, layout: str) -> dict[str, torch.Tensor]:
    if _fails("inputs", batch):
        raise ValueError(f"injected inputs failure at batch {batch}")
    generator = torch.Generator().manual_seed(batch * 1000 + length)
    return {"x": torch.randn(batch, length, 8, generator=generator)}


_calls: dict[int, int] = {}
_POOL: list[Any] = []  # the thread pool the ``pool`` fault keeps busy


class _Unprintable(RuntimeError):
    def __str__(self) -> str:
        raise ValueError("this exception cannot be printed")


def run_model(model: nn.Module, inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    if os.environ.get("FAULTY_PRINT"):
        print("faulty: run_model")
    batch = inputs["x"].shape[0]
    is_reference = next(model.parameters()).dtype == torch.float64
    if is_reference and _fails("reference", batch):
        raise RuntimeError(f"injected reference failure at batch {batch}")
    if not is_reference and _fails("hang", batch):
        time.sleep(600)
    if not is_reference and _fails("run", batch):
        raise RuntimeError(f"injected run failure at batch {batch}")
    if not is_reference and _fails("cancelled", batch):
        import asyncio

        raise asyncio.CancelledError(f"injected CancelledError (a BaseException) at batch {batch}")
    if not is_reference and _fails("no-mapping", batch):
        return None  # type: ignore[return-value]  # what a careless run_model returns
    if not is_reference and _fails("warn-then-raise", batch):
        import warnings

        warnings.warn(f"injected warning before the failure at batch {batch}", stacklevel=1)
        raise RuntimeError(f"injected run failure after a warning at batch {batch}")
    if not is_reference and _fails("unprintable", batch):
        raise _Unprintable()
    if not is_reference and _fails("warn-many", batch):
        import warnings

        for i in range(120_000):
            warnings.warn(f"injected warning {i} at batch {batch}", stacklevel=1)
    if not is_reference and _fails("warm", batch):
        _calls[id(model)] = _calls.get(id(model), 0) + 1
        if _calls[id(model)] > 3:
            raise RuntimeError(f"injected failure during warm timing at batch {batch}")
    if is_reference and _fails("reshape", batch):
        _calls[id(model)] = _calls.get(id(model), 0) + 1
        if _calls[id(model)] % 2 == 0:
            return {"y": model(inputs["x"])[:, :1]}
    if not is_reference and _fails("write", batch):
        y = model(inputs["x"])
        inputs["x"].mul_(1e6)  # after the call: the first call's outputs are right, later calls' inputs are not
        return {"y": y}
    fault = _fault()
    if fault is not None and fault[0] in ("nan-at", "inf-at"):
        y = model(inputs["x"]).clone()
        y.view(-1)[fault[1]] = float("nan") if fault[0] == "nan-at" else float("inf")
        return {"y": y}
    return {"y": model(inputs["x"])}


def task_metric(
    outputs: dict[str, torch.Tensor], reference: dict[str, torch.Tensor], inputs: dict[str, torch.Tensor]
) -> float:
    batch = inputs["x"].shape[0]
    if _fails("compare", batch):
        raise ArithmeticError(f"injected compare failure at batch {batch}")
    if _fails("metric-key", batch):
        return float((outputs["logits"].double() - reference["y"].double()).abs().max())
    if _fails("metric-mapping", batch):
        return {"max_abs": 0.0}  # type: ignore[return-value]
    return float((outputs["y"].double() - reference["y"].double()).abs().max())
