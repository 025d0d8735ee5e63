"""The whole `reportgen report LOG` command, this checkout against another tree, fresh processes.

Usage: python tests/benchmarks/bench_report_command.py OTHER_TREE [--log LOG] [--rounds 7]

OTHER_TREE holds another version of the project (e.g. ``git archive REV | tar -x -C OTHER_TREE``).
Each round runs ``python -m reportgen report LOG`` once from each tree (the order turns each
round) between two runs of a plain ``python -c`` script that json.loads each line of LOG in
text mode; the figure is CPU time (user + system of the process and what it waited for). It
prints each round, the median ratio this/other (a change that cuts the command's imports or
its first-report work shows here: goal < 1.0 for a change meant to speed it up), and each
tree's median ratio to the json.loads script (the large-log benchmark's whole-command figure,
goal <= 1.0). One command from each tree runs first, outside the rounds, so that whatever the
command caches between runs (compiled templates, and each tree's bytecode, kept as an installed
package keeps it) is there for both trees' later runs alike.
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
DEFAULT_LOG = sorted((REPO / "sample_runs").glob("tiny-encoder-cpu-*/events.jsonl"))[-1]
JSON_SCRIPT = (
    "import json, sys\nwith open(sys.argv[1], encoding='utf-8') as f:\n    for line in f:\n        json.loads(line)\n"
)


# Bytecode cached as an installed package has it (each tree's in a folder of its own under the
# benchmark's temporary one, filled by the commands run before the rounds), not compiled from
# source on every start: PYTHONDONTWRITEBYTECODE removed.
CACHES: dict[Path, str] = {}


def cpu(argv: list[str], tree: Path) -> float:
    """CPU seconds of one whole command run from ``tree`` (its package first on the path)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONPATH=str(tree), PYTHONPYCACHEPREFIX=CACHES[tree])
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, cwd=tree, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("other", type=Path, help="a folder holding another version of the project")
    parser.add_argument("--log", type=Path, default=DEFAULT_LOG)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    if not (args.other / "reportgen" / "__main__.py").is_file():
        parser.error(f"{args.other} holds no reportgen package")
    trees = {"this": REPO, "other": args.other.resolve()}
    log = str(args.log.resolve())
    ratios: list[float] = []
    to_plain: dict[str, list[float]] = {"this": [], "other": []}
    with tempfile.TemporaryDirectory(prefix="bench-report-command-") as tmp:

        def report(out: str) -> list[str]:
            return [sys.executable, "-m", "reportgen", "report", log, "--out", str(Path(tmp) / out)]

        for name, tree in trees.items():  # fills each tree's bytecode cache, outside the rounds
            CACHES[tree] = str(Path(tmp) / f"pycache-{name}")
            cpu(report(f"first-{name}"), tree)
        for i in range(args.rounds):
            plain = cpu([sys.executable, "-c", JSON_SCRIPT, log], REPO)
            took = {}
            for name in ("other", "this") if i % 2 == 0 else ("this", "other"):
                took[name] = cpu(report(f"{name}-{i}"), trees[name])
            plain = (plain + cpu([sys.executable, "-c", JSON_SCRIPT, log], REPO)) / 2
            ratios.append(took["this"] / took["other"])
            for name, seconds in took.items():
                to_plain[name].append(seconds / plain)
            print(
                f"round {i + 1}: other {took['other']:.2f} s, this {took['this']:.2f} s CPU, json.loads script {plain:.2f} s; this/other {ratios[-1]:.2f}",
                flush=True,
            )
    print(
        f"reportgen report, this/other: median {statistics.median(ratios):.2f} (range {min(ratios):.2f}-{max(ratios):.2f}) over {args.rounds} rounds"
    )
    for name, values in to_plain.items():
        print(
            f"{name}: reportgen report / python -c json.loads script, median {statistics.median(values):.2f} (range {min(values):.2f}-{max(values):.2f}); goal <= 1.0"
        )
    print(
        f"log {args.log} ({args.log.stat().st_size / 1e6:.1f} MB); machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
