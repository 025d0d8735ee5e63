"""Build a site of 1,000 generated runs from scratch, then add one run; print both times.

    python tests/benchmarks/bench_site.py [--runs 1000] [--keep DIR]

The incremental add should cost under a tenth of the full build. The runs are synthetic
fixtures (they say so), spread over ten workloads.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from reportgen.publish.site import build_site  # noqa: E402
from tests.logbuilder import base_events, dumps, finish, with_envelope  # noqa: E402


def write_run(root: Path, index: int) -> None:
    events = base_events()
    workload = f"workload-{index % 10}"
    events[0].update(run_id=f"bench-{index:05d}", workload=workload, started_at=f"2026-01-{1 + index // 100:02d}T00:{index % 60:02d}:00Z")
    next(e for e in events if e["kind"] == "plan")["workload"] = workload
    for event in events:
        if event["kind"] == "timing" and event.get("warm"):
            event["warm"]["median_s"] *= 1 + (index % 7) / 100
    path = root / f"bench-{index:05d}" / "events.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(dumps(with_envelope(finish(events))), encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--keep", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        where = args.keep or Path(tmp)
        runs = where / "runs"
        for i in range(args.runs):
            write_run(runs, i)
        start = time.perf_counter()
        build_site([runs], where / "site")
        full = time.perf_counter() - start
        write_run(runs, args.runs)
        start = time.perf_counter()
        result = build_site([runs], where / "site")
        add = time.perf_counter() - start
        print(f"full build of {args.runs} runs: {full:.2f} s")
        print(f"adding one run: {add:.2f} s ({len(result.written)} files written)")
        print(f"ratio {add / full:.3f} (target < 0.1)")
        return 0 if add / full < 0.1 else 1


if __name__ == "__main__":
    sys.exit(main())
