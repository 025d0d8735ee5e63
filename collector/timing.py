"""Warm repetitions with device synchronisation, and the cold first call in a fresh process."""

from __future__ import annotations

import json
import os
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


def time_warm(call: Callable[[], Any], synchronize: Callable[[], None], warmup: int, repetitions: int) -> list[float]:
    """Seconds per call, the device synchronised before the clock starts and before it stops."""
    for _ in range(warmup):
        call()
    synchronize()
    samples = []
    for _ in range(repetitions):
        synchronize()
        start = time.perf_counter()
        call()
        synchronize()
        samples.append(time.perf_counter() - start)
    return samples


def run_cold(argv_tail: list[str], cache_env: Callable[[Path], dict[str, str]], timeout: float) -> dict[str, Any]:
    """Run ``python -m collector.coldstart ...`` in a new process with new empty cache dirs.

    Both are needed: a new process alone may reuse the persistent compile cache, and a new
    cache dir inside a process that already compiled the graph is far from cold.
    """
    package_parent = str(Path(__file__).resolve().parent.parent)
    with tempfile.TemporaryDirectory(prefix="collector-cold-") as cache_dir:
        env = dict(os.environ)
        env.update(cache_env(Path(cache_dir)))
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_parent, env.get("PYTHONPATH")]))
        env["COLLECTOR_LAUNCH_WALL"] = repr(time.time())
        done = subprocess.run(
            [sys.executable, "-m", "collector.coldstart", *argv_tail],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    for line in reversed(done.stdout.splitlines()):
        if line.startswith(COLD_MARKER):
            return json.loads(line[len(COLD_MARKER):])
    tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
    return {"error": f"cold-start process exited {done.returncode}: {' | '.join(tail)[:500]}"}
