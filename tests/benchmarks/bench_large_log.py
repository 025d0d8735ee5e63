"""Validate, judge and render a 200,000-event log; CPU time as a ratio to a plain json.loads loop.

    python tests/benchmarks/bench_large_log.py [--events 200000] [--mismatch-every N] [--rounds 5] [--keep DIR]

For each log shape (every cell passing, and a mismatch every 3 cells; or only the one
``--mismatch-every`` names), the two are timed in interleaved rounds on the same file: json.loads
of every line, and ``build_report`` (validation, the run model, the disposition, the HTML and
Markdown report and details.csv). Each round's ratio is the report's CPU time over the json
loop's, so load on a shared machine that comes and goes hits both sides of a round alike; the
order alternates between rounds. Prints the median and range of the per-round ratios. Target:
a median of at most 1.0; the exit code is 1 above it. The generated log is synthetic and says so.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from reportgen.render.report import build_report  # noqa: E402
from tests.logbuilder import large_log  # noqa: E402

EVENTS_PER_CELL = 4  # case_result, operators, compile, timing
TARGET = 1.0


def make_log(path: Path, target_events: int, mismatch_every: int) -> int:
    cells = max(1, (target_events - 4) // EVENTS_PER_CELL)
    lines = large_log(cells, mismatch_every)
    with open(path, "w", encoding="utf-8") as handle:
        for line in lines:
            handle.write(json.dumps(line) + "\n")
    return len(lines)


def cpu_json(path: Path) -> float:
    start = time.process_time()
    with open(path, "rb") as handle:
        for line in handle:
            json.loads(line)
    return time.process_time() - start


def cpu_report(path: Path, out: Path) -> float:
    start = time.process_time()
    build_report(path, out)
    return time.process_time() - start


def measure(where: Path, events: int, mismatch_every: int, rounds: int) -> float:
    log = where / f"events-m{mismatch_every}.jsonl"
    count = make_log(log, events, mismatch_every)
    gc.collect()
    ratios = []
    for i in range(rounds):
        # A new folder each time: the report skips rewriting files whose bytes are unchanged.
        out = where / f"report-m{mismatch_every}-{i}"
        if i % 2:
            ours = cpu_report(log, out)
            plain = cpu_json(log)
        else:
            plain = cpu_json(log)
            ours = cpu_report(log, out)
        ratios.append(ours / plain)
        print(f"  round {i + 1}: json {plain:.2f} s CPU, report {ours:.2f} s CPU, ratio {ours / plain:.2f}", flush=True)
    html = (where / f"report-m{mismatch_every}-0" / "report.html").stat().st_size
    median = statistics.median(ratios)
    shape = f"mismatch every {mismatch_every}" if mismatch_every else "every cell passing"
    print(f"{count} events ({shape}), {log.stat().st_size / 1e6:.1f} MB; report.html {html / 1e6:.2f} MB")
    print(f"validate + judge + render / json.loads loop, CPU time over {rounds} interleaved rounds: "
          f"median {median:.2f} (range {min(ratios):.2f}-{max(ratios):.2f}); target <= {TARGET}")
    return median


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--mismatch-every", type=int, default=None, metavar="N", help="only this shape: every Nth cell mismatches (0: all pass); default both 0 and 3")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds per shape (at least 5)")
    parser.add_argument("--keep", type=Path, help="write the logs and reports here instead of a temp dir")
    args = parser.parse_args()
    if args.rounds < 5:
        parser.error("--rounds must be at least 5")
    shapes = [args.mismatch_every] if args.mismatch_every is not None else [0, 3]
    with tempfile.TemporaryDirectory() as tmp:
        where = args.keep or Path(tmp)
        where.mkdir(parents=True, exist_ok=True)
        medians = [measure(where, args.events, every, args.rounds) for every in shapes]
    ok = all(m <= TARGET for m in medians)
    print("within target" if ok else f"ABOVE target {TARGET}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
