"""Warm repetitions with device synchronisation (what the clock covers follows timing.scope),
and the cold first call in a fresh process."""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

COLD_MARKER = "COLLECTOR_COLD_RESULT "


def warm_stats(samples: list[float]) -> dict[str, Any]:
    ordered = sorted(samples)
    if len(ordered) >= 2:
        q1, _, q3 = statistics.quantiles(ordered, n=4, method="inclusive")
        p90 = statistics.quantiles(ordered, n=10, method="inclusive")[-1]
    else:
        q1 = q3 = p90 = ordered[0]
    return {
        "samples_s": samples,
        "min_s": ordered[0],
        "median_s": statistics.median(ordered),
        "p90_s": p90,
        "iqr_s": q3 - q1,
    }


def time_warm(sample: Callable[[], float], warmup: int, repetitions: int) -> list[float]:
    """Seconds per sample; ``sample`` times itself (see ``timed_sample``)."""
    for _ in range(warmup):
        sample()
    return [sample() for _ in range(repetitions)]


def scope_problem(scope: dict[str, Any], training: bool) -> str | None:
    """Why the collector cannot honour the plan's timing.scope, or None when it can."""
    asked = [k for k in ("preprocessing", "host_to_device", "output_retrieval") if scope.get(k)]
    if training and asked:
        return (f"timing.scope: {', '.join(asked)} cannot be timed for a training plan (its timings are one "
                "full training step on inputs already on the device); set them to false")
    return None


def timed_sample(
    call_with: Callable[[dict[str, Any]], Any],
    device_inputs: dict[str, Any],
    host_inputs: dict[str, Any],
    prepare: Callable[[], dict[str, Any]],
    to_device: Callable[[dict[str, Any]], dict[str, Any]],
    synchronize: Callable[[], None],
    scope: dict[str, Any],
    device_is_host: bool,
) -> tuple[Callable[[], float], list[str], list[str]]:
    """One timed sample per call, honouring the plan's timing.scope; also what it times.

    Each stage inside the region has its own clock, bounded by a device synchronisation, and
    the sample is their sum: preprocessing (``prepare``: the workload's make_inputs and cast,
    fresh each sample), host-to-device copies, the model call, copying outputs to the host.
    A stage outside the region that must still run (copying freshly prepared inputs) runs
    off the clock. Returns (sample, stages timed, notes on how they were done).
    """
    prep, h2d, back = bool(scope.get("preprocessing")), bool(scope.get("host_to_device")), bool(scope.get("output_retrieval"))
    region = (["preprocessing"] if prep else []) + (["host_to_device"] if h2d else []) + ["model_call"] + (["output_retrieval"] if back else [])
    notes = []
    if device_is_host and h2d:
        notes.append("host_to_device: no copy is made, the device is the host")
    if device_is_host and back:
        notes.append("output_retrieval: no copy is made, the device is the host")
    if prep and not h2d and not device_is_host:
        notes.append("freshly prepared inputs are copied to the device off the clock")

    def sample() -> float:
        total = 0.0
        synchronize()
        host = host_inputs
        if prep:
            start = time.perf_counter()
            host = prepare()
            total += time.perf_counter() - start
        inputs = device_inputs
        if prep or h2d:
            start = time.perf_counter()
            inputs = to_device(host)
            synchronize()
            if h2d:
                total += time.perf_counter() - start
        start = time.perf_counter()
        outputs = call_with(inputs)
        synchronize()
        total += time.perf_counter() - start
        if back:
            start = time.perf_counter()
            _to_host(outputs)
            synchronize()
            total += time.perf_counter() - start
        return total

    return sample, region, notes


def _to_host(outputs: Any) -> Any:
    if isinstance(outputs, dict):
        return {k: _to_host(v) for k, v in outputs.items()}
    if isinstance(outputs, (list, tuple)):
        return [_to_host(v) for v in outputs]
    to = getattr(outputs, "to", None)
    return to("cpu") if to is not None else outputs


def plain_sample(call: Callable[[], Any], synchronize: Callable[[], None]) -> Callable[[], float]:
    """The whole ``call`` on the clock, the device synchronised before and after."""

    def sample() -> float:
        synchronize()
        start = time.perf_counter()
        call()
        synchronize()
        return time.perf_counter() - start

    return sample


def run_cold(argv_tail: list[str], cache_env: Callable[[Path], dict[str, str]], timeout: float) -> dict[str, Any]:
    """Run ``python -m collector.coldstart ...`` in a new process with new empty cache dirs.

    Both are needed: a new process alone may reuse the persistent compile cache, and a new
    cache dir inside a process that already compiled the graph is far from cold.

    The child leads its own process group: past ``timeout`` seconds (or when the run is
    interrupted) the whole group is ended, compiler workers included, and the result says
    ``timed_out_after_s``.
    """
    package_parent = str(Path(__file__).resolve().parent.parent)
    with tempfile.TemporaryDirectory(prefix="collector-cold-") as cache_dir:
        env = dict(os.environ)
        env.update(cache_env(Path(cache_dir)))
        # Inductor keeps precompiled headers under its default dir below the temp dir, which
        # TORCHINDUCTOR_CACHE_DIR does not move: a new temp dir makes that empty too. The child
        # lists every cache dir before its call, so what was not empty is recorded either way.
        (Path(cache_dir) / "tmp").mkdir()
        env["TMPDIR"] = str(Path(cache_dir) / "tmp")
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_parent, env.get("PYTHONPATH")]))
        env["COLLECTOR_LAUNCH_WALL"] = repr(time.time())
        child = subprocess.Popen(
            [sys.executable, "-m", "collector.coldstart", *argv_tail],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            stdout, stderr = child.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            end_group(child)
            return {"timed_out_after_s": timeout}
        except BaseException:
            end_group(child)
            raise
        finally:
            end_group(child, only_stragglers=True)
    for line in reversed(stdout.splitlines()):
        if line.startswith(COLD_MARKER):
            return json.loads(line[len(COLD_MARKER):])
    tail = (stderr or stdout).strip().splitlines()[-3:]
    return {"error": f"cold-start process exited {child.returncode}: {' | '.join(tail)[:500]}"}


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
        child.communicate(timeout=grace)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        child.communicate(timeout=grace)
    except subprocess.TimeoutExpired:
        pass
