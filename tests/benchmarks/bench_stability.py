"""Per-series cost of the warm-series classifier (collector/stability.py), printed as figures.

    python tests/benchmarks/bench_stability.py [--repeat 7] [--number 20000]

A report classifies every timed cell of a log; it needs the verdict of each and the checks
(every figure and note) only of the series it names. The collector logs every series' full
form. So each series shape is timed both ways: ``classify`` alone (the verdict), and
``classify(...).to_dict()`` (every check built). Beside them, json.loads of one timing line as
the large-log benchmark writes it: the per-line reference a report's speed is judged against.
Best of ``--repeat`` runs of ``--number`` calls each (timeit), in microseconds per call.
Figures only: tests/benchmarks/bench_large_log.py gives the whole-report figure.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import timeit
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from collector.stability import classify  # noqa: E402
from tests.logbuilder import large_log  # noqa: E402


def shapes() -> dict[str, tuple[float, ...]]:
    rng = random.Random(1)
    steady = tuple(1e-3 * (1 + rng.gauss(0, 0.01)) for _ in range(30))
    return {
        "5 samples, stable (the large log's)": (0.001, 0.00101, 0.00102, 0.00103, 0.0010400000000000001),
        "30 samples, stable": steady,
        "30 samples, two modes (unstable)": tuple(v * (1.5 if i % 3 == 0 else 1.0) for i, v in enumerate(steady)),
    }


def per_call(stmt: Callable[[], object], repeat: int, number: int) -> float:
    return min(timeit.repeat(stmt, number=number, repeat=repeat)) / number * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--number", type=int, default=20_000)
    args = parser.parse_args()
    line = next(json.dumps(e) for e in large_log(1, 0) if e.get("kind") == "timing").encode()
    print(
        f"json.loads of one timing line ({len(line)} bytes): {per_call(lambda: json.loads(line), args.repeat, args.number):.2f} us"
    )
    for name, series in shapes().items():
        verdict = per_call(lambda s=series: classify(s), args.repeat, args.number)
        full = per_call(lambda s=series: classify(s).to_dict(), args.repeat, args.number)
        print(
            f"{name}: verdict {verdict:.2f} us, with every check (to_dict) {full:.2f} us  [{classify(series).verdict}]"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
