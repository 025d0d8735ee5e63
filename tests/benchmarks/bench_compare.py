"""Interval computation's share of a `reportgen compare` of a 1,000-cell pair.

    python tests/benchmarks/bench_compare.py [--cells 1000] [--samples 30] [--repeats 5] [--replicates 1]

Builds two synthetic 1,000-cell logs (they say so), 30 warm samples a cell, then times in one
interleaved loop: the whole comparison (read and validate both logs, judge, compare, write
HTML, Markdown and JSON) and the interval computation alone on the same samples (every cell's
rank-based interval plus the geometric mean). Target: the intervals take under 10% of the
comparison's time. With --replicates N, each side is N logs (the interval is then the
hierarchical bootstrap over runs and samples) and the same figures are printed, with no target
(about 3 ms a cell for 3 runs a side of 30 samples on the shared 2-core development machine).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from reportgen.judge.intervals import geometric_mean, ratio_intervals, replicate_intervals  # noqa: E402
from reportgen.render.compare import build_comparison  # noqa: E402
from tests.logbuilder import _warm, dumps, large_log  # noqa: E402


def write_log(path: Path, cells: int, samples: int, scale: float, seed: int, run_id: str) -> list[list[float]]:
    rng = random.Random(seed)
    events = large_log(cells)
    events[0].update(run_id=run_id, origin_note="Synthetic benchmark log; not a measurement.")
    plan_at = next(i for i, e in enumerate(events) if e["kind"] == "plan")
    events.insert(
        plan_at + 1,
        dict(events[plan_at], kind="artifact", role="inputs", path="artifacts/inputs.pt", bytes=1024, sha256="0" * 64),
    )
    for key in [
        k
        for k in events[plan_at + 1]
        if k not in ("schema_version", "seq", "time", "kind", "role", "path", "bytes", "sha256")
    ]:
        del events[plan_at + 1][key]
    for seq, event in enumerate(events):
        event["seq"] = seq
    drawn = []
    for event in events:
        if event["kind"] == "timing" and event.get("warm"):
            kept = [1e-3 * scale * (1 + 0.05 * rng.random()) for _ in range(samples)]
            event["warm"] = _warm(kept)
            drawn.append(kept)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps(events), encoding="utf-8")
    return drawn


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cells", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--replicates", type=int, default=1, help="Runs a side (the bootstrap interval when above 1).")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        sides: dict[str, list[list[list[float]]]] = {"base": [], "cand": []}
        for n in range(args.replicates):
            sides["base"].append(
                write_log(
                    root / f"base{n}" / "events.jsonl", args.cells, args.samples, 1.0, 1 + 10 * n, f"bench-baseline-{n}"
                )
            )
            sides["cand"].append(
                write_log(
                    root / f"cand{n}" / "events.jsonl",
                    args.cells,
                    args.samples,
                    1.1,
                    2 + 10 * n,
                    f"bench-candidate-{n}",
                )
            )
        pairs = list(
            zip(*(list(zip(*runs)) for runs in (sides["base"], sides["cand"])))
        )  # per cell: (each run's samples a side)
        base_logs = [root / f"base{n}" for n in range(args.replicates)]
        cand_logs = [root / f"cand{n}" for n in range(args.replicates)]
        whole, intervals = [], []
        for repeat in range(args.repeats):
            start = time.perf_counter()
            result = build_comparison(
                base_logs if args.replicates > 1 else base_logs[0],
                cand_logs if args.replicates > 1 else cand_logs[0],
                root / f"out-{repeat}",
                ("html", "md", "json"),
            )
            whole.append(time.perf_counter() - start)
            start = time.perf_counter()
            geometric_mean(
                replicate_intervals(pairs) if args.replicates > 1 else ratio_intervals([(a[0], b[0]) for a, b in pairs])
            )
            intervals.append(time.perf_counter() - start)
        timed = len(result.comparison.timed)
        data = json.loads((root / "out-0" / "compare.json").read_text(encoding="utf-8"))
    share = statistics.median(intervals) / statistics.median(whole)
    print(
        f"comparison of a {args.cells}-cell pair ({timed} cells timed, {args.replicates} run(s) a side, {args.samples} samples a run): median {statistics.median(whole):.3f} s over {args.repeats} runs"
    )
    print(f"interval computation alone: median {statistics.median(intervals) * 1e3:.1f} ms")
    print(f"headline: {data['headline']}")
    if args.replicates > 1:  # the bootstrap costs more than the rank interval; its figure, no target
        print(f"share {share:.3f} (replicates: a hierarchical bootstrap per cell; no target)")
        return 0
    print(f"share {share:.3f} (target < 0.10)")
    return 0 if share < 0.10 else 1


if __name__ == "__main__":
    sys.exit(main())
