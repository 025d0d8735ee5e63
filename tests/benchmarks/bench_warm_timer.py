"""Does the collector's warm median agree with torch.utils.benchmark.Timer on the same op?

    python tests/benchmarks/bench_warm_timer.py [--rounds 15] [--size 256] [--window 0.2]

Load on a shared 2-core machine comes and goes, so both must measure the same stretch of time
the same way. In each round the collector takes its warm samples (as many as a calibration
says fill ``--window`` seconds), and Timer gets exactly the time those took: it times single
calls (``timeit(1)``) until that window is spent, so both report a median of single calls,
which a burst of load cannot shift as it shifts a block's mean. The two run one straight after
the other, the order alternating between rounds (Timer, when first, gets the last window).
The figure is the ratio of the medians over the rounds (collector over Timer), with the median
and range of the per-round ratios. Target: within 5% of 1; the exit code is 1 outside it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.utils.benchmark as benchmark

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from collector.timing import time_warm, timed_sample, warm_stats  # noqa: E402

TOLERANCE = 0.05


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--window", type=float, default=0.2, help="seconds each side measures per round")
    args = parser.parse_args()
    torch.set_num_threads(1)
    a = torch.randn(args.size, args.size)
    b = torch.randn(args.size, args.size)
    timer = benchmark.Timer(stmt="torch.mm(a, b)", globals={"torch": torch, "a": a, "b": b}, num_threads=1)
    # The collector's own sampler with the default scope (the model call only).
    sample, _, _ = timed_sample(
        lambda feed: torch.mm(a, b), {}, {}, dict, lambda host: host, lambda: None, {}, device_is_host=True
    )
    # Calibrate: how many of the collector's samples fill the window.
    start = time.perf_counter()
    calibration = time_warm(sample, warmup=3, repetitions=20)
    spent = time.perf_counter() - start
    reps = max(5, round(args.window / (spent / 23)))
    del calibration
    window = args.window

    def collector_round() -> tuple[float, float]:
        nonlocal window
        start = time.perf_counter()
        median = warm_stats(time_warm(sample, warmup=3, repetitions=reps))["median_s"]
        window = time.perf_counter() - start  # Timer's window: exactly the collector's, this round
        return median, window

    def timer_round() -> tuple[float, float]:
        # Timer's measurements of one call each, for as long as the collector's window: the
        # median of single calls, as the collector's is (a block of many calls averages in
        # whatever the machine's load stole from it, which a median of single calls leaves out).
        start = time.perf_counter()
        for _ in range(3):
            timer.timeit(1)
        times = []
        while not times or time.perf_counter() - start < window:
            times.append(timer.timeit(1).raw_times[0])
        return statistics.median(times), time.perf_counter() - start

    ours, theirs, windows = [], [], []
    for i in range(args.rounds):
        if i % 2:
            (t, t_s), (o, o_s) = timer_round(), collector_round()
        else:
            (o, o_s), (t, t_s) = collector_round(), timer_round()
        ours.append(o)
        theirs.append(t)
        windows.append((o_s, t_s))
    ratio = statistics.median(ours) / statistics.median(theirs)
    per_round = [o / t for o, t in zip(ours, theirs)]
    print(
        f"{args.rounds} interleaved rounds, window {args.window:.2f} s each side "
        f"(measured: collector {statistics.median(w[0] for w in windows):.2f} s, Timer {statistics.median(w[1] for w in windows):.2f} s; {reps} collector samples)"
    )
    print(
        f"collector warm median {statistics.median(ours) * 1e6:.1f} us, "
        f"torch.utils.benchmark.Timer median {statistics.median(theirs) * 1e6:.1f} us"
    )
    print(
        f"ratio of medians {ratio:.3f} (per round: median {statistics.median(per_round):.3f}, "
        f"range {min(per_round):.3f}-{max(per_round):.3f}); target {1 - TOLERANCE:.2f}-{1 + TOLERANCE:.2f}"
    )
    ok = abs(ratio - 1) <= TOLERANCE
    print(f"agree within {TOLERANCE:.0%}" if ok else f"DISAGREE by more than {TOLERANCE:.0%}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
