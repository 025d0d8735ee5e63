"""What the host was doing around one warm loop: the facts a reader needs to trust its samples.

Each value is a ``collector.facts`` fact: its value and where it was read, or why it could not
be read; none is left out. Read before the loop (and the load average and the accelerator's
clocks and temperature again after it), so a busy or throttled host shows beside the samples
it disturbed. The accelerator's own readings come from the backend adapter
(``Backend.accelerator_condition``).

Over the loop itself (warm-up calls included), the time this process's threads ran on a CPU and
the time they were ready to run but waited for one (Linux's per-thread schedstat, in
nanoseconds), and the loop's wall time: a host whose other work takes the CPUs makes every
sample slower alike, which no rule on the samples can see; the time waited, per second of the
loop, can (collector/stability.py, rule "contention"). Not seen: contention for caches and
memory bandwidth, and time a hypervisor gave the CPU to another machine (steal).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Callable

import torch

from collector.facts import Fact, known, unknown

GOVERNOR = "/sys/devices/system/cpu/cpu{}/cpufreq/scaling_governor"


def load_average() -> Fact:
    try:
        one, five, fifteen = os.getloadavg()
    except (OSError, AttributeError) as exc:  # not every platform has it
        return unknown(f"os.getloadavg() unavailable: {exc}")
    return known(f"{one:.2f} {five:.2f} {fifteen:.2f}", "os.getloadavg() (1, 5, 15 minutes)")


def allowed_cpus() -> list[int] | None:
    getter = getattr(os, "sched_getaffinity", None)
    if getter is None:
        return None
    try:
        return sorted(getter(0))
    except OSError:
        return None


def cpu_ranges(cpus: list[int]) -> str:
    """[0, 1, 2, 5] as "0-2,5"."""
    parts: list[str] = []
    start = prev = cpus[0]
    for cpu in [*cpus[1:], None]:
        if cpu is not None and cpu == prev + 1:
            prev = cpu
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if cpu is not None:
            start = prev = cpu
    return ",".join(parts)


def affinity(cpus: list[int] | None) -> Fact:
    if cpus is None:
        return unknown("os.sched_getaffinity is not available on this platform")
    if not cpus:
        return unknown("os.sched_getaffinity(0) returned no CPU")
    return known(f"{len(cpus)} CPUs: {cpu_ranges(cpus)}", "os.sched_getaffinity(0)")


def governor(cpus: list[int] | None, read: Callable[[str], str] | None = None) -> Fact:
    """The frequency governor of each CPU this process may run on, grouped when they differ."""
    read = read or (lambda path: Path(path).read_text(encoding="utf-8", errors="replace").strip())
    found: dict[str, list[int]] = {}
    failures: list[str] = []
    for cpu in cpus if cpus else [0]:
        path = GOVERNOR.format(cpu)
        try:
            value = read(path)
        except OSError as exc:
            failures.append(f"{path}: {exc.strerror or exc}")
            continue
        found.setdefault(value or "(empty)", []).append(cpu)
    if not found:
        return unknown(
            f"not readable ({failures[0]}{f', and {len(failures) - 1} more' if len(failures) > 1 else ''}); "
            "a VM or container often hides cpufreq"
        )
    if len(found) == 1:
        return known(next(iter(found)), GOVERNOR.format("N"))
    text = "; ".join(f"{value} on CPUs {cpu_ranges(cpus_of)}" for value, cpus_of in found.items())
    return known(text, GOVERNOR.format("N"))


def torch_threads() -> Fact:
    try:
        return known(
            f"{torch.get_num_threads()} intra-op, {torch.get_num_interop_threads()} inter-op",
            "torch.get_num_threads(), torch.get_num_interop_threads()",
        )
    except Exception as exc:  # a fact to record, never a crash of the run
        return unknown(f"torch thread counts unreadable: {type(exc).__name__}: {exc}")


TASKS = "/proc/self/task"
CPU_TIME_SOURCE = (
    "/proc/self/task/*/schedstat, summed over this process's threads during the warm loop (warm-up calls included)"
)


ThreadTimes = tuple[int, dict[str, tuple[int, int]]]


def thread_times() -> ThreadTimes | str:
    """The monotonic clock (ns) and, per thread of this process, (nanoseconds on a CPU,
    nanoseconds ready to run but waiting for one) since it started; or why they cannot be read."""
    now = time.perf_counter_ns()
    try:
        threads = os.listdir(TASKS)
    except OSError as exc:
        return f"{TASKS} not readable ({exc.strerror or exc}): not Linux, or /proc not mounted"
    found: dict[str, tuple[int, int]] = {}
    for thread in threads:
        try:
            with open(f"{TASKS}/{thread}/schedstat", "rb") as handle:
                ran, waited = handle.read().split()[:2]
            found[thread] = (int(ran), int(waited))
        except (OSError, ValueError):
            continue  # a thread that ended meanwhile, or a kernel without schedstat
    if not found:
        return f"{TASKS}/*/schedstat not readable: the kernel keeps no per-thread scheduler times"
    return now, found


CPU_TIME_KEYS = ("cpu_run_s", "cpu_wait_s", "loop_wall_s")


def cpu_time(before: ThreadTimes | str, after: ThreadTimes | str) -> dict[str, Fact]:
    """cpu_run_s, cpu_wait_s and loop_wall_s over the loop: what this process's threads ran and
    waited between the two readings, and the wall time between them. A thread started during the
    loop counts from its start (as does one whose id was reused: its counts fell); one that ended
    during it is not counted (its counts went with it)."""
    if isinstance(before, str) or isinstance(after, str):
        why = before if isinstance(before, str) else after
        assert isinstance(why, str)
        return {key: unknown(why) for key in CPU_TIME_KEYS}
    (start, threads_before), (end, threads_after) = before, after
    ran = waited = 0
    for thread, (ran_after, waited_after) in threads_after.items():
        ran_before, waited_before = threads_before.get(thread, (0, 0))
        if ran_after < ran_before or waited_after < waited_before:  # another thread under a reused id
            ran_before = waited_before = 0
        ran += ran_after - ran_before
        waited += waited_after - waited_before
    if ran == 0:
        # The kernel adds a running thread's time to schedstat at a scheduler tick or a switch:
        # a loop shorter than a tick that no switch interrupted reads nothing, though it ran.
        why = (
            f"schedstat counted no time on a CPU over the loop ({(end - start) / 1e6:.3g} ms): the kernel "
            "adds a running thread's time at a scheduler tick or a switch, and the loop saw neither"
        )
        return {key: unknown(why) for key in CPU_TIME_KEYS}
    return {
        "cpu_run_s": known(f"{ran / 1e9:.6f}", CPU_TIME_SOURCE),
        "cpu_wait_s": known(f"{waited / 1e9:.6f}", CPU_TIME_SOURCE),
        "loop_wall_s": known(f"{(end - start) / 1e9:.6f}", "time.perf_counter_ns() at the two schedstat readings"),
    }


def waited(host: dict[str, Fact]) -> tuple[float, float] | None:
    """(seconds the threads waited for a CPU, seconds the loop took) from a loop's facts; None
    when unknown."""
    wait, wall = host.get("cpu_wait_s", {}).get("value"), host.get("loop_wall_s", {}).get("value")
    return (float(wait), float(wall)) if wait is not None and wall is not None else None


def before_loop(backend: Any) -> dict[str, Fact]:
    """The host's condition just before a warm loop."""
    cpus = allowed_cpus()
    count = os.cpu_count()
    condition = {
        "load_avg_before": load_average(),
        "cpu_count": known(count, "os.cpu_count()") if count else unknown("os.cpu_count() returned None"),
        "cpu_affinity": affinity(cpus),
        "torch_threads": torch_threads(),
        "cpu_governor": governor(cpus),
    }
    condition.update({f"{k}_before": v for k, v in accelerator(backend).items()})
    return condition


def after_loop(backend: Any, condition: dict[str, Fact], threads_before: ThreadTimes | str) -> dict[str, Fact]:
    """``condition`` with the threads' CPU time over the loop (``threads_before``: thread_times()
    just before it), and the load average and the accelerator's readings just after it."""
    after = cpu_time(threads_before, thread_times())
    after["load_avg_after"] = load_average()
    after.update({f"{k}_after": v for k, v in accelerator(backend).items()})
    return {**condition, **after}


def accelerator(backend: Any) -> dict[str, Fact]:
    reader = getattr(backend, "accelerator_condition", None)
    if reader is None:
        return {
            "accelerator": unknown(
                f"target {getattr(backend, 'name', '?')}: its adapter reads no accelerator condition"
            )
        }
    try:
        return dict(reader())
    except Exception as exc:  # a failing query is recorded, never fatal
        return {"accelerator": unknown(f"accelerator condition query failed: {type(exc).__name__}: {exc}")}
