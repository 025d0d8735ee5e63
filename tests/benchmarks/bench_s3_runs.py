"""Runs in object storage at 1,000 and 10,000 runs: what listing, fetching and rebuilding cost,
and what per-folder manifests save. Prints the figures docs/campaigns.md quotes.

    python tests/benchmarks/bench_s3_runs.py [--runs 1000 10000] [--site-up-to 1000] [--per-prefix 100]

The store is moto's standalone S3 server on 127.0.0.1 (started and stopped here), so times are
local round trips, far below a real region's (about 20-60 ms a request): read the request
counts as the portable figure and the seconds as this machine's. Runs are the synthetic
fixture logs of bench_site.py (they say so), each with one small artifact object beside it,
spread over day prefixes of --per-prefix runs each, as a campaign per night would leave them.

Measured per size:
  list      listing the whole prefix (what `reportgen site s3://...` does with no manifest)
  fetch     reading every log once, in parallel (what a first build reads; up to --fetch-up-to)
  site      first build and an unchanged rebuild from the bucket, then (the site published)
            a build on a fresh machine with --published (only up to --site-up-to runs)
  manifest  every day folder but the newest closed with `reportgen manifest`
            (reportgen.storage.remote.write_manifest); then list_logs reads the manifests and
            lists only the open folder
"""

from __future__ import annotations

import argparse
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
    # One log per run from bench_site.write_run: each with its own run id (a site keeps one run
    # per id, so copies of one log would count as one run), ten workloads per thousand runs.
    for index in range(runs):
        write_run(scratch, index, runs)

    def put(index: int) -> None:
        body = (scratch / f"bench-{index:05d}" / "events.jsonl").read_bytes()
        prefix = f"runs/day-{index // per_prefix:04d}/bench-{index:05d}"
        client.put_object(Bucket=BUCKET, Key=f"{prefix}/events.jsonl", Body=body)
        client.put_object(Bucket=BUCKET, Key=f"{prefix}/artifacts/inputs.pt", Body=b"\0" * 64)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(put, range(runs)))


def _requests(server, since: int) -> tuple[int, int]:
    seen = server.requests()[since:]
    lists = sum(1 for r in seen if r.method == "GET" and r.path.startswith(f"/{BUCKET}?") and "list-type=2" in r.path)
    gets = sum(1 for r in seen if r.method == "GET" and r.path.startswith(f"/{BUCKET}/"))
    return lists, gets


def _timed(server, func):
    before = len(server.requests())
    start = time.perf_counter()
    value = func()
    elapsed = time.perf_counter() - start
    return value, elapsed, *_requests(server, before)


def bench(server, client, runs: int, per_prefix: int, build_sites: bool, fetch_all_logs: bool) -> None:
    """One size in a bucket of its own (the server, and every bucket with it, goes at the end)."""
    from reportgen.publish.site import build_site
    from reportgen.storage import SITE_STATE_NAME
    from reportgen.storage.remote import Store, list_logs, publish, write_manifest

    global BUCKET
    BUCKET = f"bench-{runs}"
    client.create_bucket(Bucket=BUCKET)
    with tempfile.TemporaryDirectory() as tmp:
        _populate(client, runs, per_prefix, Path(tmp) / "template")
        store = Store()
        logs, elapsed, lists, gets = _timed(server, lambda: list_logs(f"s3://{BUCKET}/runs", store))
        assert len(logs) == runs
        print(
            f"[{runs} runs, {2 * runs} objects] list whole prefix: {elapsed:.2f} s, {lists} LIST requests, {gets} GETs"
        )

        if fetch_all_logs:

            def fetch_all() -> int:
                store.fetch((log.url, log.size) for log in logs)
                return sum(len(log.read_bytes()) for log in logs)

            size, elapsed, lists, gets = _timed(server, fetch_all)
            print(f"[{runs} runs] fetch every log once: {elapsed:.2f} s, {gets} GETs, {size / 1e6:.1f} MB")

        if build_sites:
            site = Path(tmp) / "site"
            result, elapsed, lists, gets = _timed(server, lambda: build_site([f"s3://{BUCKET}/runs"], site))
            print(
                f"[{runs} runs] site, first build from the bucket: {elapsed:.2f} s, {lists} LIST requests, {gets} GETs ({result.runs} runs)"
            )
            result, elapsed, lists, gets = _timed(server, lambda: build_site([f"s3://{BUCKET}/runs"], site))
            print(
                f"[{runs} runs] site, unchanged rebuild: {elapsed:.2f} s, {lists} LIST requests, {gets} GETs, {len(result.written)} files written"
            )
            publish(site, f"s3://{BUCKET}/site", Store(), last=SITE_STATE_NAME)
            fresh = Path(tmp) / "fresh"
            result, elapsed, lists, gets = _timed(
                server, lambda: build_site([f"s3://{BUCKET}/runs"], fresh, published=f"s3://{BUCKET}/site")
            )
            print(
                f"[{runs} runs] site, fresh machine with the published state: {elapsed:.2f} s, {lists} LIST requests, {gets} GETs, {len(result.fetched)} logs fetched"
            )

        prefixes = sorted({log.url.split("/")[4] for log in logs})
        for prefix in prefixes[:-1]:
            write_manifest(f"s3://{BUCKET}/runs/{prefix}", store)
        count, elapsed, lists, gets = _timed(server, lambda: len(list_logs(f"s3://{BUCKET}/runs", Store())))
        assert count == runs, count
        print(
            f"[{runs} runs] manifests ({len(prefixes)} folders of {per_prefix}, newest open): {elapsed:.2f} s, {lists} LIST requests, {gets} GETs"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument(
        "--site-up-to",
        type=int,
        default=1000,
        help="fetch every log and build the site from the bucket only up to this many runs",
    )
    parser.add_argument(
        "--fetch-up-to", type=int, default=1000, help="time reading every log once only up to this many runs"
    )
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
