"""Time a full tiny-encoder CPU run spends in its fresh processes, before and after a change.

Usage: python tests/benchmarks/bench_collector_children.py OTHER_TREE [--rounds N]

OTHER_TREE holds another version of the ``collector`` package (e.g. one exported with
``git archive REV collector | tar -x -C OTHER_TREE``). Each round runs the whole collector
once from OTHER_TREE and once from this checkout, in that order, in fresh processes; each run's
figure is the CPU time (user + system) of every process the collector started and waited for
(its cold-only, cell and restart processes with their compiler workers), read with
getrusage(RUSAGE_CHILDREN) inside the collector's own process, and the whole run's wall time.
The figure printed is the median ratio this/other over the rounds, with each round's ratio:
on a shared machine the spread between rounds is the noise, so read it before the median.
"""

from __future__ import annotations

import argparse
import json
import os
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


def one_run(tree: Path, out: Path) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    args = ["--workload", str(PLAN), "--target", "cpu", "--out", str(out), "--warm", "5"]
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=tree, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    line = next((l for l in done.stdout.splitlines() if l.startswith("CHILDREN ")), None)
    if line is None or json.loads(line[9:])["code"] not in (0, None):
        raise SystemExit(f"the run from {tree} failed: {done.stderr[-2000:]}")
    return {"children_cpu_s": json.loads(line[9:])["cpu_s"], "wall_s": wall}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("other", type=Path, help="a folder holding the other collector package")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
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
        print(f"{key}: this/other median {statistics.median(values):.2f} (rounds: {', '.join(f'{v:.2f}' for v in values)}); goal <= 0.50")


if __name__ == "__main__":
    main()
