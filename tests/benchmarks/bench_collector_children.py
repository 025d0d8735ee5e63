"""Time a full tiny-encoder CPU run spends in its fresh processes, before and after a change.

Usage: python tests/benchmarks/bench_collector_children.py OTHER_TREE [--rounds N]
       python tests/benchmarks/bench_collector_children.py --breakdown

OTHER_TREE holds another version of the ``collector`` package (e.g. one exported with
``git archive REV collector | tar -x -C OTHER_TREE``). Each round runs the whole collector
once from OTHER_TREE and once from this checkout, in that order, in fresh processes; each run's
figure is the CPU time (user + system) of every process the collector started and waited for
(its cold-only, cell and restart processes with their compiler workers), read with
getrusage(RUSAGE_CHILDREN) inside the collector's own process, and the whole run's wall time.
The figure printed is the median ratio this/other over the rounds, with each round's ratio:
on a shared machine the spread between rounds is the noise, so read it before the median.

``--breakdown`` runs this checkout once and prints where the time in fresh processes goes:
each process the collector started (its module, its cells, CPU and wall seconds), the same
summed by kind (cold-only with empty caches, restart with a populated cache, cell process),
and from the run's log, per graph, how many compiles met an empty cache and how long each
compile took. It also times one fresh process that only imports torch and the collector's
run modules: the floor every process pays before it compiles anything.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PLAN = REPO / "collector" / "workloads" / "tiny_encoder.toml"
# Runs the collector's main() in this process, then prints the CPU time of its children.
PROBE = """
import json, resource, runpy, sys
sys.argv = ["collector", *sys.argv[1:]]
try:
    runpy.run_module("collector", run_name="__main__")
except SystemExit as exc:
    code = exc.code
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print("CHILDREN " + json.dumps({"cpu_s": r.ru_utime + r.ru_stime, "code": code}))
"""


# As PROBE, but every fresh process is recorded: module, arguments, CPU (its own and its
# compiler workers', as getrusage sees them once it is waited for) and wall seconds.
BREAKDOWN_PROBE = """
import json, resource, runpy, sys, time
from collector import supervise
from collector.run import children
started = []
plain = supervise.run_child
def recorded(module, argv, *rest, **named):
    before, wall = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    try:
        return plain(module, argv, *rest, **named)
    finally:
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        started.append({"module": module, "argv": list(argv), "cpu_s": cpu, "wall_s": time.perf_counter() - wall})
supervise.run_child = recorded
children.run_child = recorded
sys.argv = ["collector", *sys.argv[1:]]
try:
    runpy.run_module("collector", run_name="__main__")
except SystemExit as exc:
    code = exc.code
print("STARTED " + json.dumps({"code": code, "started": started}))
"""
IMPORT_FLOOR = "import torch, torch._dynamo, torch._inductor.codecache; import collector.cellproc, collector.coldstart"


def _arg(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1] if name in argv else ""


def breakdown() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-children-") as tmp:
        out = Path(tmp) / "run"
        args = ["--workload", str(PLAN), "--target", "cpu", "--out", str(out), "--warm", "5"]
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", BREAKDOWN_PROBE, *args], cwd=REPO, capture_output=True, text=True, check=False
        )
        wall = time.perf_counter() - start
        line = next((l for l in done.stdout.splitlines() if l.startswith("STARTED ")), None)
        if line is None:
            raise SystemExit(f"the run failed: {done.stderr[-2000:]}")
        started = json.loads(line[8:])["started"]
        log = next(out.glob("*/events.jsonl"))
        events = [json.loads(l) for l in log.read_text(encoding="utf-8").splitlines()]
    kinds: dict[str, list[float]] = {}
    print(f"{len(started)} fresh processes in a full tiny-encoder run ({wall:.1f} s wall in all):")
    seen_cold: set[str] = set()
    for child in started:
        case = _arg(child["argv"], "--case") or _arg(child["argv"], "--cases")
        if child["module"] == "collector.cellproc":
            kind = (
                "cell process (compiles from the cold calls' caches, checks, warm timing)"
                if "--cold-taken" in child["argv"]
                else "cell process (its first call the cold one)"
            )
        elif case in seen_cold:  # a cell's second cold-only process is its restart
            kind = "restart with a populated cache"
        else:
            kind = "cold-only, empty caches"
            seen_cold.add(case)
        kinds.setdefault(kind, []).append(child["cpu_s"])
        print(
            f"  {child['module']:<20} {case[:60]:<60} {child['cpu_s']:6.1f} s CPU {child['wall_s']:6.1f} s wall  ({kind})"
        )
    total = sum(c["cpu_s"] for c in started)
    for kind, cpus in kinds.items():
        print(f"  {kind}: {len(cpus)} processes, {sum(cpus):.1f} s CPU ({sum(cpus) / total:.0%})")
    floor = []
    for _ in range(3):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([sys.executable, "-c", IMPORT_FLOOR], cwd=REPO, check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        floor.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
    print(
        f"  a fresh process that only imports torch and the collector: {statistics.median(floor):.1f} s CPU (median of 3); "
        f"{len(started)} processes pay {len(started) * statistics.median(floor):.1f} s of the {total:.1f} s before compiling anything"
    )
    compiles: dict[str, list[str]] = {}
    for e in events:
        if e["kind"] == "compile":
            compiles.setdefault(e["case"], []).append(
                f"{e.get('cache_condition')} {e.get('compile_first_result_s', 0):.2f} s (hits {e.get('cache_hits')}, misses {e.get('cache_misses')})"
            )
        cold = e.get("cold") if e["kind"] == "timing" else None
        if cold:
            compiles.setdefault(e["case"], []).append(
                f"cold call {cold.get('cache_condition')} {cold.get('seconds', 0):.2f} s"
            )
    print("per compiled cell, from the log (compile events and cold calls):")
    for case, seen in compiles.items():
        from_scratch = sum(1 for s in seen if "fresh_process_empty_cache" in s)
        print(f"  {case}: {from_scratch} from an empty cache; " + "; ".join(seen))
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end")


def one_run(tree: Path, out: Path) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    args = ["--workload", str(PLAN), "--target", "cpu", "--out", str(out), "--warm", "5"]
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], cwd=tree, env=env, capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - start
    line = next((l for l in done.stdout.splitlines() if l.startswith("CHILDREN ")), None)
    if line is None or json.loads(line[9:])["code"] not in (0, None):
        raise SystemExit(f"the run from {tree} failed: {done.stderr[-2000:]}")
    return {"children_cpu_s": json.loads(line[9:])["cpu_s"], "wall_s": wall}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("other", type=Path, nargs="?", help="a folder holding the other collector package")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--breakdown", action="store_true", help="one run of this checkout: where its time in fresh processes goes"
    )
    args = parser.parse_args()
    if args.breakdown:
        breakdown()
        return
    if args.other is None:
        parser.error("give OTHER_TREE, or --breakdown")
    ratios: dict[str, list[float]] = {"children_cpu_s": [], "wall_s": []}
    with tempfile.TemporaryDirectory(prefix="bench-children-") as tmp:
        for round_ in range(1, args.rounds + 1):
            other = one_run(args.other.resolve(), Path(tmp) / f"other-{round_}")
            this = one_run(REPO, Path(tmp) / f"this-{round_}")
            print(f"round {round_}: other {other}, this {this}", flush=True)
            for key in ratios:
                ratios[key].append(this[key] / other[key])
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end")
    for key, values in ratios.items():
        print(
            f"{key}: this/other median {statistics.median(values):.2f} (rounds: {', '.join(f'{v:.2f}' for v in values)}); goal <= 0.50"
        )


if __name__ == "__main__":
    main()
