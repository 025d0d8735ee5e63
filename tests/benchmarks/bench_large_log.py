"""Validate and render a 200,000-event log; report the time as a ratio to plain json.loads.

    python tests/benchmarks/bench_large_log.py [--events 200000] [--keep DIR]

Both are measured in the same run on the same file: json.loads of every line, against
read_log (validation) + the run model + the disposition + the HTML and Markdown report. The
target is a ratio of at most 2. The generated log is synthetic and says so.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from reportgen.report import build_report  # noqa: E402
from tests.logbuilder import base_events, case_key, finish, with_envelope  # noqa: E402


def make_log(path: Path, target_events: int) -> int:
    events = base_events()
    head = [e for e in events if e["kind"] in ("run_start", "environment", "plan")]
    cell_events = [e for e in events if e.get("case") == case_key(1, 16, "compiled") and e["kind"] != "profile"]
    plan = head[2]
    cells = max(1, (target_events - 4) // len(cell_events))
    plan["matrix"] = []
    body = []
    for i in range(cells):
        batch, length = 1 + i // 512, 1 + i % 512
        case = case_key(batch, length, "compiled")
        plan["matrix"].append({"case": case, "batch": batch, "length": length, "layout": "contiguous", "dtype": "float32", "mode": "compiled"})
        for template in cell_events:
            event = dict(template, case=case)
            body.append(event)
    lines = with_envelope(finish(head + body))
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
    parser.add_argument("--keep", type=Path, help="write the log and report here instead of a temp dir")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        where = args.keep or Path(tmp)
        where.mkdir(parents=True, exist_ok=True)
        log = where / "events.jsonl"
        count = make_log(log, args.events)
        plain = min(time_json(log) for _ in range(3))
        ours = time_ours(log, where / "report")
        html = (where / "report" / "report.html").stat().st_size
        print(f"{count} events, {log.stat().st_size / 1e6:.1f} MB")
        print(f"json.loads of every line: {plain:.2f} s")
        print(f"validate + judge + render html and md: {ours:.2f} s")
        print(f"ratio {ours / plain:.2f} (target <= 2); report.html {html / 1e6:.2f} MB")
        return 0 if ours / plain <= 2 else 1


if __name__ == "__main__":
    sys.exit(main())
