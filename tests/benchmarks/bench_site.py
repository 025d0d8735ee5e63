"""The site at 1,000 and 10,000 generated runs: full build, no-op rebuild, one run added, index size.

    python tests/benchmarks/bench_site.py [--runs 1000,10000] [--keep DIR] [--repeat 5]

For each size it prints, with its target:

* the full build (wall and CPU seconds), every log judged and every page rendered;
* the rebuild with nothing changed (median of --repeat, wall), which should return after the
  stat check: target under 0.05 s at 1,000 runs. Printed beside it, as a ratio measured in the
  same rounds, the time of a bare loop that stats each log once (the floor of any stat-based
  check), because this machine is shared and absolute times move with its load;
* adding one run (wall), with the files written: target under a tenth of the full build;
* the bytes of index.html and of the row data its script reads: target under 1 MB each.

The runs are synthetic fixtures (they say so), with run ids shaped like the collector's
(<workload>-<target>-<time>-<hex>), a hundred runs per workload. Logs are generated from one
rendered template per workload and timing factor, then dated a minute back: the no-op check
never trusts a file changed within the last 3 s (a collector's logs are older than that by the
time a site is built), so a fresh file would be hashed, as it should be.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from reportgen.publish.site import build_site  # noqa: E402
from tests.logbuilder import base_events, dumps, finish, scaled_warm, with_envelope  # noqa: E402

RUN_ID, STARTED = "@@RUN_ID@@", "2099-12-31T23:59:59Z"
_TEMPLATES: dict[tuple[str, int], str] = {}


def _workload(index: int, runs: int) -> str:
    return f"workload-{index % max(1, runs // 100):03d}"


def _template(workload: str, factor: int) -> str:
    key = (workload, factor)
    if key not in _TEMPLATES:
        events = base_events()
        events[0].update(run_id=RUN_ID, workload=workload, started_at=STARTED)
        next(e for e in events if e["kind"] == "plan")["workload"] = workload
        for event in events:
            if event["kind"] == "timing" and event.get("warm"):
                event["warm"] = scaled_warm(event["warm"], 1 + factor / 100)
        _TEMPLATES[key] = dumps(with_envelope(finish(events)))
    return _TEMPLATES[key]


def write_run(root: Path, index: int, runs: int = 1000) -> None:
    """One synthetic run log under root/bench-<index>/events.jsonl."""
    workload = _workload(index, runs)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(1767225600 + index * 2221))
    run_id = f"{workload}-cpu-{stamp.replace('-', '').replace(':', '')}-{index:06x}"
    text = _template(workload, index % 7).replace(RUN_ID, run_id).replace(STARTED, stamp)
    path = root / f"bench-{index:05d}" / "events.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(text, encoding="utf-8")


def _backdate(root: Path, seconds: int = 60) -> None:
    then = time.time_ns() - seconds * 1_000_000_000
    for folder, _, files in os.walk(root):
        for name in files:
            os.utime(os.path.join(folder, name), ns=(then, then))
        os.utime(folder, ns=(then, then))


def _timed(func):  # type: ignore[no-untyped-def]
    wall, cpu = time.perf_counter(), time.process_time()
    value = func()
    return value, time.perf_counter() - wall, time.process_time() - cpu


def bench(where: Path, runs: int, repeat: int) -> bool:
    logs, site = where / f"runs-{runs}", where / f"site-{runs}"
    _, generated, _ = _timed(lambda: [write_run(logs, i, runs) for i in range(runs)])
    _backdate(logs)
    print(f"\n{runs} runs (logs generated in {generated:.1f} s)", flush=True)
    result, full, full_cpu = _timed(lambda: build_site([logs], site))
    assert result.runs == runs and not result.rejected, result.rejected[:3]
    print(f"  full build:           {full:8.2f} s wall, {full_cpu:.2f} s CPU")

    paths = [str(p) for p in sorted(logs.glob("*/events.jsonl"))]
    noop, floor = [], []
    for _ in range(repeat):  # interleaved: the machine's load moves both alike
        result, seconds, _ = _timed(lambda: build_site([logs], site))
        assert result.written == [] and result.runs == runs, result.written[:3]
        noop.append(seconds)
        _, seconds, _ = _timed(lambda: [os.stat(p) for p in paths])
        floor.append(seconds)
    ratios = [a / b for a, b in zip(noop, floor)]
    target = " (target < 0.05 s)" if runs <= 1000 else f" (target < 0.05 s per 1,000 runs: {0.05 * runs / 1000:.2f} s)"
    noop_ok = statistics.median(noop) < 0.05 * max(1, runs / 1000)
    print(
        f"  no-op rebuild:        {statistics.median(noop):8.3f} s median of {repeat} (range {min(noop):.3f}-{max(noop):.3f}){target}"
    )
    print(
        f"    = {statistics.median(ratios):.1f}x a bare loop stating each log once (range {min(ratios):.1f}-{max(ratios):.1f})"
    )

    write_run(logs, runs, runs)
    _backdate(logs / f"bench-{runs:05d}")
    result, add, add_cpu = _timed(lambda: build_site([logs], site))
    written = sorted(str(p.relative_to(site)).split("/")[0] for p in result.written)
    kinds = {k: written.count(k) for k in dict.fromkeys(written)}
    print(
        f"  adding one run:       {add:8.2f} s wall, {add_cpu:.2f} s CPU; ratio to the full build {add / full:.3f} (target < 0.1)"
    )
    print(f"    files written: {len(result.written)} ({', '.join(f'{k}: {n}' for k, n in kinds.items())})")

    index = (site / "index.html").stat().st_size
    rows = next(site.glob("index-rows-*.js")).stat().st_size
    print(f"  index.html:           {index:8d} bytes (target < 1,000,000)")
    print(
        f"  row data (its script): {rows:7d} bytes (target < 1,000,000); index.json {(site / 'index.json').stat().st_size} bytes for download"
    )
    return noop_ok and add / full < 0.1 and index < 1_000_000 and rows < 1_000_000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", default="1000,10000", help="comma-separated site sizes (default 1000,10000)")
    parser.add_argument("--keep", type=Path, help="build here and keep the logs and sites")
    parser.add_argument("--repeat", type=int, default=5, help="no-op rebuilds per size (default 5)")
    args = parser.parse_args()
    sizes = [int(n) for n in args.runs.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        where = args.keep or Path(tmp)
        where.mkdir(parents=True, exist_ok=True)
        ok = [bench(where, n, args.repeat) for n in sizes]
    print("\nall targets met" if all(ok) else "\nsome target missed")
    return 0 if all(ok) else 1


if __name__ == "__main__":
    sys.exit(main())
