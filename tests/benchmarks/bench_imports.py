"""What a command costs before it does anything: whole commands in fresh processes, as ratios.

    python tests/benchmarks/bench_imports.py [--rounds 5] [--runs 1000]

Each round runs, in turn (the order reversed every other round, so a load that rises or falls
during a round weighs on all alike), every command below as a fresh process and reads its CPU
time (user + system, with anything it waited for). Printed: the median of each round's ratio,
its range, and its goal:

* ``reportgen --help`` / ``python -c "import click"``: goal <= 2.0 (the CLI itself adds little);
* a no-change ``reportgen site sample_runs`` (a second build into the same folder: the no-op
  check returns before anything that renders is imported) / ``reportgen --help``: goal <= 1.5;
* with ``--runs N`` (e.g. 1000), the same for N generated local runs (synthetic fixtures, as
  bench_site.py makes them): goal <= 3.0. The first build of those runs takes minutes.

The figures are ratios because this machine is shared: absolute times move with its load.

Every command runs with bytecode caching on (``PYTHONDONTWRITEBYTECODE`` removed, the cache in
a temporary ``PYTHONPYCACHEPREFIX``) and once before the rounds, as an installed package runs:
without a cache each command compiles the project's modules from source on every start, which
weighs on the command that imports more of them (the site build) and is not what a user waits for.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))


ENV = dict(os.environ)


def cpu(argv: list[str]) -> float:
    """CPU seconds of one whole command in a fresh process (and of whatever it waited for)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(argv, cwd=REPO, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode(errors='replace')[-1000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=0, help="also N generated local runs (goal <= 3x --help)")
    args = parser.parse_args()
    py = sys.executable
    with tempfile.TemporaryDirectory(prefix="bench-imports-") as tmp:
        ENV.pop("PYTHONDONTWRITEBYTECODE", None)
        ENV["PYTHONPYCACHEPREFIX"] = f"{tmp}/pycache"
        commands = {
            "click": [py, "-c", "import click"],
            "help": [py, "-m", "reportgen", "--help"],
            "site": [py, "-m", "reportgen", "site", str(REPO / "sample_runs"), "--out", f"{tmp}/site"],
        }
        cpu(commands["site"])  # the first build; every later one finds nothing changed
        if args.runs:
            from tests.benchmarks.bench_site import _backdate, write_run

            many = Path(tmp) / "many"
            for index in range(args.runs):
                write_run(many, index, args.runs)
            _backdate(many)
            commands["site_many"] = [py, "-m", "reportgen", "site", str(many), "--out", f"{tmp}/site-many"]
            cpu(commands["site_many"])
        for argv in commands.values():  # every module's bytecode cached, every site built twice
            cpu(argv)
        seconds: dict[str, list[float]] = {name: [] for name in commands}
        for round_ in range(args.rounds):
            order = list(commands) if round_ % 2 == 0 else list(reversed(commands))
            for name in order:
                seconds[name].append(cpu(commands[name]))
            print(
                f"round {round_ + 1}: " + ", ".join(f"{name} {seconds[name][-1]:.3f} s" for name in commands),
                flush=True,
            )
    goals = [
        ("reportgen --help / python -c 'import click'", "help", "click", 2.0),
        ("no-change reportgen site sample_runs / reportgen --help", "site", "help", 1.5),
    ]
    if args.runs:
        goals.append(
            (f"no-change reportgen site ({args.runs} local runs) / reportgen --help", "site_many", "help", 3.0)
        )
    ok = True
    for label, top, bottom, goal in goals:
        ratios = [a / b for a, b in zip(seconds[top], seconds[bottom])]
        median = statistics.median(ratios)
        ok = ok and median <= goal
        print(
            f"{label}: median {median:.2f} (range {min(ratios):.2f}-{max(ratios):.2f}, {args.rounds} rounds, CPU time); goal <= {goal}{'' if median <= goal else '  ABOVE GOAL'}"
        )
    print(
        f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end; bytecode cached, as installed"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
