"""Validate and render a 200,000-event log; report the time as a ratio to plain json.loads.

    python tests/benchmarks/bench_large_log.py [--events 200000] [--mismatch-every N] [--keep DIR]

Both are measured in the same run on the same file, each the best of three: json.loads of
every line, against ``build_report`` (validation, the run model, the disposition, the HTML and
Markdown report and details.csv, and freeing it all). The target is a ratio of at most 2;
the exit code is 1 above it. The generated log is synthetic and says so.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from reportgen.render.report import build_report  # noqa: E402
from tests.logbuilder import large_log  # noqa: E402

EVENTS_PER_CELL = 4  # case_result, operators, compile, timing


def make_log(path: Path, target_events: int, mismatch_every: int) -> int:
    cells = max(1, (target_events - 4) // EVENTS_PER_CELL)
    lines = large_log(cells, mismatch_every)
    with open(path, "w", encoding="utf-8") as handle:
        for line in lines:
            handle.write(json.dumps(line) + "\n")
    return len(lines)


def time_json(path: Path) -> float:
    start = time.perf_counter()
    with open(path, "rb") as handle:
        for line in handle:
            json.loads(line)
    return time.perf_counter() - start


def time_ours(path: Path, out: Path) -> float:
    start = time.perf_counter()
    build_report(path, out)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--mismatch-every", type=int, default=0, metavar="N", help="make every Nth cell mismatch (0: all pass)")
    parser.add_argument("--keep", type=Path, help="write the log and report here instead of a temp dir")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        where = args.keep or Path(tmp)
        where.mkdir(parents=True, exist_ok=True)
        log = where / "events.jsonl"
        count = make_log(log, args.events, args.mismatch_every)
        plain = min(time_json(log) for _ in range(3))
        # A new folder each time: the report skips rewriting files whose bytes are unchanged.
        ours = min(time_ours(log, where / f"report-{i}") for i in range(3))
        html = (where / "report-0" / "report.html").stat().st_size
        print(f"{count} events, {log.stat().st_size / 1e6:.1f} MB")
        print(f"json.loads of every line: {plain:.2f} s")
        print(f"validate + judge + render html and md: {ours:.2f} s")
        print(f"ratio {ours / plain:.2f} (target <= 2); report.html {html / 1e6:.2f} MB")
        return 0 if ours / plain <= 2 else 1


if __name__ == "__main__":
    sys.exit(main())
