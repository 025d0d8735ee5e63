"""Runs in object storage at 1,000 and 10,000 runs: what listing, fetching and rebuilding cost,
and what a per-prefix manifest would save. Prints the figures docs/campaigns.md quotes.

    python tests/benchmarks/bench_s3_runs.py [--runs 1000 10000] [--site-up-to 1000] [--per-prefix 100]

The store is moto's standalone S3 server on 127.0.0.1 (started and stopped here), so times are
local round trips, far below a real region's (about 20-60 ms a request): read the request
counts as the portable figure and the seconds as this machine's. Runs are the synthetic
fixture logs of bench_site.py (they say so), each with one small artifact object beside it,
spread over day prefixes of --per-prefix runs each, as a campaign per night would leave them.

Measured per size:
  list      listing the whole prefix (what every `reportgen site s3://...` does today)
  fetch     reading every log once (what a first build reads; only up to --fetch-up-to runs)
  site      first build and an unchanged rebuild from the bucket (only up to --site-up-to runs)
  manifest  the idea for 100,000 runs: one small JSON per day prefix, written once the prefix
            is closed, listing its runs' keys, ETags and sizes; a rebuild reads the manifests
            and lists only the open prefix. Prototype code in this script, not in reportgen.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_site import write_run  # noqa: E402
from tests.services import s3_server  # noqa: E402

BUCKET = "bench"


def _populate(client, runs: int, per_prefix: int, scratch: Path) -> None:
    write_run(scratch, 0)
    template = (scratch / "bench-00000" / "events.jsonl").read_text(encoding="utf-8")

    def put(index: int) -> None:
        body = template.replace("bench-00000", f"bench-{index:05d}").replace('"workload-0"', f'"workload-{index % 10}"')
        prefix = f"runs/day-{index // per_prefix:04d}/bench-{index:05d}"
        client.put_object(Bucket=BUCKET, Key=f"{prefix}/events.jsonl", Body=body.encode())
        client.put_object(Bucket=BUCKET, Key=f"{prefix}/artifacts/inputs.pt", Body=b"\0" * 64)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(put, range(runs)))


def _requests(server, since: int) -> tuple[int, int]:
    lines = server.requests()[since:]
    lists = sum(1 for r in lines if r.startswith(f"GET /{BUCKET}?") and "list-type=2" in r)
    gets = sum(1 for r in lines if r.startswith(f"GET /{BUCKET}/"))
    return lists, gets


def _timed(server, func):
    before = len(server.requests())
    start = time.perf_counter()
    value = func()
    elapsed = time.perf_counter() - start
    return value, elapsed, *_requests(server, before)


def _write_manifests(store, per_prefix_runs: dict[str, list]) -> None:
    for prefix, logs in per_prefix_runs.items():
        manifest = {"format": 1, "runs": [{"key": log.url, "etag": log.etag, "size": log.size} for log in logs]}
        store.fs.pipe_file(f"{BUCKET}/{prefix}/manifest.json", json.dumps(manifest).encode())


def _read_manifests(store, prefixes: list[str], open_prefix: str) -> int:
    from reportgen.storage.remote import list_logs

    count = 0
    for prefix in prefixes:
        if prefix == open_prefix:
            count += len(list_logs(f"s3://{BUCKET}/{prefix}", store))
        else:
            count += len(json.loads(store.fs.cat_file(f"{BUCKET}/{prefix}/manifest.json"))["runs"])
    return count


def bench(server, client, runs: int, per_prefix: int, build_sites: bool, fetch_all_logs: bool) -> None:
    """One size in a bucket of its own (the server, and every bucket with it, goes at the end)."""
    from reportgen.publish.site import build_site
    from reportgen.storage.remote import Store, list_logs

    global BUCKET
    BUCKET = f"bench-{runs}"
    client.create_bucket(Bucket=BUCKET)
    with tempfile.TemporaryDirectory() as tmp:
        _populate(client, runs, per_prefix, Path(tmp) / "template")
        store = Store()
        logs, elapsed, lists, gets = _timed(server, lambda: list_logs(f"s3://{BUCKET}/runs", store))
        assert len(logs) == runs
        print(f"[{runs} runs, {2 * runs} objects] list whole prefix: {elapsed:.2f} s, {lists} LIST requests, {gets} GETs")

        if fetch_all_logs:
            def fetch_all() -> int:
                return sum(len(log.read_bytes()) for log in logs)

            size, elapsed, lists, gets = _timed(server, fetch_all)
            print(f"[{runs} runs] fetch every log once: {elapsed:.2f} s, {gets} GETs, {size / 1e6:.1f} MB")

        if build_sites:
            site = Path(tmp) / "site"
            result, elapsed, lists, gets = _timed(server, lambda: build_site([f"s3://{BUCKET}/runs"], site))
            print(f"[{runs} runs] site, first build from the bucket: {elapsed:.2f} s, {lists} LIST requests, {gets} GETs ({result.runs} runs)")
            result, elapsed, lists, gets = _timed(server, lambda: build_site([f"s3://{BUCKET}/runs"], site))
            print(f"[{runs} runs] site, unchanged rebuild: {elapsed:.2f} s, {lists} LIST requests, {gets} GETs, {len(result.written)} files written")

        by_prefix: dict[str, list] = {}
        for log in logs:
            by_prefix.setdefault("runs/" + log.url.split("/")[4], []).append(log)
        prefixes = sorted(by_prefix)
        _write_manifests(store, by_prefix)
        count, elapsed, lists, gets = _timed(server, lambda: _read_manifests(store, prefixes, prefixes[-1]))
        assert count == runs, count
        print(f"[{runs} runs] manifests ({len(prefixes)} prefixes of {per_prefix}, newest listed): {elapsed:.2f} s, {lists} LIST requests, {gets} GETs")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--site-up-to", type=int, default=1000, help="fetch every log and build the site from the bucket only up to this many runs")
    parser.add_argument("--fetch-up-to", type=int, default=1000, help="time reading every log once only up to this many runs")
    parser.add_argument("--per-prefix", type=int, default=100)
    args = parser.parse_args()
    import os

    import boto3

    with tempfile.TemporaryDirectory() as tmp, s3_server(Path(tmp) / "s3") as server:
        os.environ.update({k: v for k, v in server.env.items() if k.startswith("AWS_")})
        client = boto3.client("s3", endpoint_url=server.endpoint, region_name="us-east-1")
        for runs in args.runs:
            bench(server, client, runs, args.per_prefix, runs <= args.site_up_to, runs <= args.fetch_up_to)
    return 0


if __name__ == "__main__":
    sys.exit(main())
