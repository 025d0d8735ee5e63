"""Does the collector's warm median agree with torch.utils.benchmark.Timer on the same op?

    python tests/benchmarks/bench_warm_timer.py [--rounds 15] [--size 256]

Single rounds differ by up to 15% on a shared 2-core machine, so the two timers run in
interleaved rounds and the medians of the rounds are compared. Prints the ratio; exits 1 when
it is off by more than 5%.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import torch
import torch.utils.benchmark as benchmark

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from collector.timing import time_warm, timed_sample, warm_stats  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--reps", type=int, default=30)
    args = parser.parse_args()
    torch.set_num_threads(1)
    a = torch.randn(args.size, args.size)
    b = torch.randn(args.size, args.size)
    timer = benchmark.Timer(stmt="torch.mm(a, b)", globals={"torch": torch, "a": a, "b": b}, num_threads=1)
    ours, theirs = [], []
    # The collector's own sampler with the default scope (the model call only).
    sample, _, _ = timed_sample(lambda feed: torch.mm(a, b), {}, {}, dict, lambda host: host, lambda: None, {}, device_is_host=True)
    for _ in range(args.rounds):
        samples = time_warm(sample, warmup=3, repetitions=args.reps)
        ours.append(warm_stats(samples)["median_s"])
        theirs.append(timer.blocked_autorange(min_run_time=0.2).median)
    ratio = statistics.median(ours) / statistics.median(theirs)
    print(f"collector warm median {statistics.median(ours) * 1e6:.1f} us, "
          f"torch.utils.benchmark.Timer median {statistics.median(theirs) * 1e6:.1f} us, ratio {ratio:.3f}")
    ok = abs(ratio - 1) <= 0.05
    print("agree within 5%" if ok else "DISAGREE by more than 5%")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
