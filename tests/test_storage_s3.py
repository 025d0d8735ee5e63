"""reportgen against S3: listing rules, validate/report/diff/site from s3://, incremental publish.

The store is moto's standalone server on 127.0.0.1 (tests/services.py), started for this module
and stopped at its end; if it cannot start, the tests fail with the reason.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.services import S3Server, free_port

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).parent / "fixtures"
ENCODER_RUNS = sorted((REPO / "sample_runs").glob("tiny-encoder-*"))


def _bucket(client: Any, name: str) -> str:
    client.create_bucket(Bucket=name)
    return name


def _put_tree(client: Any, bucket: str, prefix: str, folder: Path) -> None:
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            client.put_object(
                Bucket=bucket, Key=f"{prefix}/{path.relative_to(folder).as_posix()}", Body=path.read_bytes()
            )


def _reportgen(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """reportgen in a fresh process (what a user runs); env replaces the environment."""
    return subprocess.run(
        [sys.executable, "-m", "reportgen", *args],
        cwd=REPO,
        env=env or dict(os.environ),
        capture_output=True,
        text=True,
        timeout=300,
    )


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """reportgen in this process (faster); same exit code and streams as a CompletedProcess."""
    from click.testing import CliRunner

    from reportgen.cli import main

    result = CliRunner().invoke(main, list(args), env=env)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return subprocess.CompletedProcess(args, result.exit_code, result.stdout, result.stderr)


def test_requests_are_counted_by_our_proxy_whatever_the_server_logs(client: Any, s3: S3Server) -> None:
    # The counts below come from the proxy in tests/services.py, not from the server's access
    # log, whose format (and colour codes) change between moto and Werkzeug releases.
    bucket = _bucket(client, "counted")
    body = bytes(range(256)) * 64
    before = len(s3.requests())
    client.put_object(Bucket=bucket, Key="a/b.bin", Body=body)
    assert client.head_object(Bucket=bucket, Key="a/b.bin")["ContentLength"] == len(body)
    assert client.get_object(Bucket=bucket, Key="a/b.bin")["Body"].read() == body
    client.list_objects_v2(Bucket=bucket, Prefix="a/")
    seen = [(r.method, r.path.split("?", 1)[0]) for r in s3.requests()[before:]]
    assert seen == [
        ("PUT", "/counted/a/b.bin"),
        ("HEAD", "/counted/a/b.bin"),
        ("GET", "/counted/a/b.bin"),
        ("GET", "/counted"),
    ]
    assert s3.requests()[-1].path.startswith("/counted?") and "prefix=a%2F" in s3.requests()[-1].path
    # A missing key passes the server's 404 through unchanged.
    with pytest.raises(client.exceptions.NoSuchKey):
        client.get_object(Bucket=bucket, Key="a/missing")


def test_listing_follows_the_local_rule(client: Any) -> None:
    from reportgen.storage.remote import RemoteError, Store, list_logs

    bucket = _bucket(client, "listing")
    log = (FIXTURES / "synthetic_complete.jsonl").read_bytes()
    for key in (
        "runs/a/events.jsonl",
        "runs/b/events.jsonl",
        "runs/b/artifacts/x.pt",
        "runs/loose.jsonl",
        "runs2/c/events.jsonl",
    ):
        client.put_object(Bucket=bucket, Key=key, Body=log)
    client.put_object(Bucket=bucket, Key="runs/a/annotations.toml", Body=b"")
    store = Store()
    urls = [l.url for l in list_logs("s3://listing/runs", store)]
    assert urls == [
        "s3://listing/runs/a/events.jsonl",
        "s3://listing/runs/b/events.jsonl",
        "s3://listing/runs/loose.jsonl",
    ]
    (run_a,) = list_logs("s3://listing/runs/a/", store)
    assert run_a.annotations is not None and run_a.annotations.url == "s3://listing/runs/a/annotations.toml"
    assert run_a.size == len(log) and run_a.etag
    (named,) = list_logs("s3://listing/runs/b/events.jsonl", store)
    assert named.annotations is None
    assert list_logs("s3://listing/nothing-here", store) == []
    with pytest.raises(RemoteError, match="cannot read: not found"):
        list_logs("s3://listing/runs/zzz.jsonl", store)
    with pytest.raises(RemoteError, match="'..' parts"):
        list_logs("s3://listing/runs/../x", store)
    assert store.fetched == []  # listing reads no object
    # A review: a key the listing gives with a '..' part was read as it stands; a store that
    # normalises paths would serve another object under it. It is a warning, and not read.
    client.put_object(Bucket=bucket, Key="dots/../evil/events.jsonl", Body=log)
    client.put_object(Bucket=bucket, Key="dots/good/events.jsonl", Body=log)
    urls = [l.url for l in list_logs("s3://listing/dots", store)]
    assert urls == ["s3://listing/dots/good/events.jsonl"]
    assert store.warnings == [
        "warning: s3://listing/dots/../evil/events.jsonl: a key with an empty, '.' or '..' part; not read"
    ]


def test_validate_report_diff_read_s3(client: Any, tmp_path: Path) -> None:
    bucket = _bucket(client, "commands")
    for run in ENCODER_RUNS:
        _put_tree(client, bucket, f"runs/{run.name}", run)
    client.put_object(Bucket=bucket, Key="bad/events.jsonl", Body=b'{"schema_version": "1.0", "kind": "run_start"\n')

    validated = _cli("validate", "s3://commands/runs")
    assert validated.returncode == 0, validated.stderr
    assert validated.stdout.count("s3://commands/runs/") >= len(ENCODER_RUNS) and "valid, complete" in validated.stdout
    invalid = _cli("validate", "s3://commands/bad")
    assert invalid.returncode == 1 and "s3://commands/bad/events.jsonl:1:" in invalid.stdout

    first = f"s3://commands/runs/{ENCODER_RUNS[0].name}"
    out = tmp_path / "report"
    reported = _cli("report", first, "--out", str(out))
    assert reported.returncode == 0, reported.stderr
    assert (out / "report.html").is_file() and (out / "report.md").is_file()
    local = _cli("report", str(ENCODER_RUNS[0] / "events.jsonl"), "--out", str(tmp_path / "local"))
    assert local.returncode == 0, local.stderr
    assert (out / "report.md").read_text() == (tmp_path / "local" / "report.md").read_text()

    diffed = _cli("diff", first, f"s3://commands/runs/{ENCODER_RUNS[1].name}/events.jsonl", "--json")
    assert diffed.returncode == 0, diffed.stderr
    assert '"before"' in diffed.stdout
    many = _cli("report", "s3://commands/runs", "--out", str(tmp_path / "many"))
    assert many.returncode == 2 and f"expected one run log, found {len(ENCODER_RUNS)}" in many.stderr


def test_site_from_s3_fetches_only_changed_logs_and_writes_nothing_else(
    client: Any, s3: S3Server, tmp_path: Path
) -> None:
    bucket = _bucket(client, "sitebuild")
    for run in ENCODER_RUNS:
        _put_tree(client, bucket, f"runs/{run.name}", run)
    home, tmp = tmp_path / "home", tmp_path / "tmp"
    home.mkdir()
    tmp.mkdir()
    env = {**os.environ, "HOME": str(home), "TMPDIR": str(tmp), "XDG_CACHE_HOME": str(home / ".cache")}
    site = tmp_path / "site"

    before = len(s3.requests())
    first = _reportgen("site", "s3://sitebuild/runs", "--out", str(site), env=env)
    assert first.returncode == 0, first.stderr
    assert f"{len(ENCODER_RUNS)} fetched from object storage" in first.stdout
    # The listing gave every size and ETag: each log is one GET, never preceded by a HEAD.
    methods = [(r.method, r.path) for r in s3.requests()[before:]]
    # Two LISTs: the prefix's _manifests/ folder (none here), then the prefix itself.
    assert "HEAD" not in [m for m, _ in methods] and len(methods) == 2 + len(ENCODER_RUNS), methods
    second = _reportgen("site", "s3://sitebuild/runs", "--out", str(site), env=env)
    assert "0 files written, 0 fetched from object storage" in second.stdout, second.stdout
    # Nothing but the output folder was written: no download cache, no temporary files.
    # Nothing but the compiled templates, in Jinja's own per-user cache folder under the temp
    # directory (reportgen.render.templating; REPORTGEN_TEMPLATE_CACHE=off turns it off).
    assert list(home.rglob("*")) == []
    left = [p for p in tmp.rglob("*") if not (p.parent == tmp and p.name.startswith("_jinja2-cache-") and p.is_dir())]
    assert left and all(
        p.parent.name.startswith("_jinja2-cache-") and p.name.startswith("__reportgen_") and p.suffix == ".cache"
        for p in left
    ), left

    # Replace one log with other bytes of the same run: only that one is fetched again.
    changed = ENCODER_RUNS[0]
    body = (changed / "events.jsonl").read_bytes()
    client.put_object(
        Bucket=bucket, Key=f"runs/{changed.name}/events.jsonl", Body=body.replace(b'"seq": 0,', b'"seq":  0,', 1)
    )
    before = len(s3.requests())
    # Which logs it fetches again, not what a fresh process writes: in this process.
    third = _cli("site", "s3://sitebuild/runs", "--out", str(site), env=env)
    assert "1 fetched from object storage" in third.stdout, third.stdout
    gets = [r.path for r in s3.requests()[before:] if r.method == "GET" and r.path.startswith("/sitebuild/runs/")]
    assert gets == [f"/sitebuild/runs/{changed.name}/events.jsonl"]
    assert all(r.method != "HEAD" for r in s3.requests()[before:])


def test_publish_is_incremental_with_content_types(client: Any, tmp_path: Path) -> None:
    bucket = _bucket(client, "published")
    site = tmp_path / "site"
    built = _cli("site", *map(str, ENCODER_RUNS), "--out", str(site))
    assert built.returncode == 0, built.stderr
    (site / "link.html").symlink_to(site / "index.html")
    first = _cli("publish", str(site), "s3://published/reports/")
    assert first.returncode == 0, first.stderr
    keys = {o["Key"] for o in client.list_objects_v2(Bucket=bucket)["Contents"]}
    # Hidden files stay behind, but for the site's state, which goes up last.
    files = {
        p.relative_to(site).as_posix()
        for p in site.rglob("*")
        if p.is_file() and not p.is_symlink() and not p.name.startswith(".")
    }
    files.add(".reportgen-state.json")
    assert keys == {f"reports/{f}" for f in files}
    assert first.stdout.startswith(f"{len(files)} uploaded, 0 unchanged")
    assert first.stderr.splitlines()[-1] == "uploaded s3://published/reports/.reportgen-state.json"
    types = {key.rsplit(".", 1)[1]: client.head_object(Bucket=bucket, Key=key)["ContentType"] for key in keys}
    assert types["html"] == "text/html; charset=utf-8" and types["md"] == "text/markdown; charset=utf-8"
    assert types["js"] == "text/javascript; charset=utf-8" and types["css"] == "text/css; charset=utf-8"

    again = _cli("publish", str(site), "s3://published/reports")
    assert again.stdout.startswith(f"0 uploaded, {len(files)} unchanged"), again.stdout

    # One run removed from the site: the index changes; --delete removes the run's stale pages.
    shutil.rmtree(site)
    _cli("site", str(ENCODER_RUNS[0]), "--out", str(site))
    third = _cli("publish", str(site), "s3://published/reports", "--delete")
    assert third.returncode == 0, third.stderr
    keys = {o["Key"] for o in client.list_objects_v2(Bucket=bucket)["Contents"]}
    files = {p.relative_to(site).as_posix() for p in site.rglob("*") if p.is_file() and not p.name.startswith(".")} | {
        ".reportgen-state.json"
    }
    assert keys == {f"reports/{f}" for f in files}
    assert "deleted" in third.stdout and "0 deleted" not in third.stdout


def test_unreachable_store_is_one_line_exit_2(tmp_path: Path, client: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    env = {
        "AWS_ENDPOINT_URL_S3": f"http://127.0.0.1:{free_port()}",
        "AWS_MAX_ATTEMPTS": "1",
        "AWS_RETRY_MODE": "standard",
    }
    for args in (
        ("site", "s3://nobucket/runs", "--out", str(tmp_path / "s")),
        ("publish", str(REPO / "sample_runs"), "s3://nobucket/x"),
    ):
        proc = _cli(*args, env=env)
        assert proc.returncode == 2, proc.stderr
        assert "Traceback" not in proc.stderr and proc.stderr.strip().count("\n") == 0, proc.stderr
        assert "cannot list" in proc.stderr
    missing_bucket = _cli("publish", str(REPO / "sample_runs"), "s3://no-such-bucket/x")
    assert missing_bucket.returncode == 2 and "Traceback" not in missing_bucket.stderr, missing_bucket.stderr
    assert "s3://no-such-bucket/x: cannot list: not found" in missing_bucket.stderr
    site_missing = _cli("site", "s3://no-such-bucket/runs", "--out", str(tmp_path / "s2"))
    assert site_missing.returncode == 2 and "cannot list: not found" in site_missing.stderr, site_missing.stderr
    root_delete = _cli("publish", str(REPO / "sample_runs"), "s3://bucket/", "--delete")
    assert root_delete.returncode == 2 and "--delete needs a prefix" in root_delete.stderr
    not_s3 = _cli("publish", str(REPO / "sample_runs"), "gs://bucket/x")
    assert not_s3.returncode == 2 and "s3://bucket/prefix" in not_s3.stderr


def test_compare_reads_s3_like_local(client: Any, tmp_path: Path) -> None:
    bucket = _bucket(client, "compare")
    for run in ENCODER_RUNS:
        _put_tree(client, bucket, f"runs/{run.name}", run)
    cpu, cuda = (next(r for r in ENCODER_RUNS if f"-{t}-" in r.name) for t in ("cpu", "cuda"))
    remote = _cli(
        "compare",
        f"s3://compare/runs/{cpu.name}",
        f"s3://compare/runs/{cuda.name}",
        "--out",
        str(tmp_path / "remote"),
        "--format",
        "md,json",
    )
    assert remote.returncode == 0, remote.stderr
    local = _cli("compare", str(cpu), str(cuda), "--out", str(tmp_path / "local"), "--format", "md,json")
    assert remote.stdout.splitlines()[0] == local.stdout.splitlines()[0]
    import json

    remote_data, local_data = (
        json.loads((tmp_path / side / "compare.json").read_text()) for side in ("remote", "local")
    )
    assert remote_data["geomean"] == local_data["geomean"]
    assert [c["timing"] for c in remote_data["cells"]] == [c["timing"] for c in local_data["cells"]]
    assert "saved tensors of a log in object storage are not fetched" in remote_data["cells"][0]["reference"]["text"]
    many = _cli("compare", "s3://compare/runs", str(cuda), "--out", str(tmp_path / "many"))
    assert many.returncode == 2 and "expected one run log" in many.stderr


def _fleet(client: Any, bucket: str, runs: range, scratch: Path) -> None:
    """Synthetic run logs (each says it is synthetic) under runs/bench-<n>/events.jsonl."""
    from concurrent.futures import ThreadPoolExecutor

    from tests.benchmarks.bench_site import write_run

    for index in runs:
        write_run(scratch, index, 1000)

    def put(index: int) -> None:
        key = f"runs/bench-{index:05d}/events.jsonl"
        client.put_object(Bucket=bucket, Key=key, Body=(scratch / f"bench-{index:05d}" / "events.jsonl").read_bytes())

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(put, runs))


def _split(requests: list[Any], bucket: str) -> dict[str, list[str]]:
    """The requests by kind: LIST pages, GETs of objects, HEADs and writes."""
    kinds: dict[str, list[str]] = {"LIST": [], "GET": [], "HEAD": [], "write": []}
    for r in requests:
        if r.method == "GET" and r.path.startswith(f"/{bucket}?") and "list-type=2" in r.path:
            kinds["LIST"].append(r.path)
        elif r.method in ("GET", "HEAD"):
            kinds[r.method].append(r.path)
        else:
            kinds["write"].append(f"{r.method} {r.path}")
    return kinds


@pytest.mark.parametrize(
    "runs", [pytest.param(25, id="25-runs"), pytest.param(1000, id="1000-runs", marks=pytest.mark.slow)]
)
def test_a_fresh_machine_continues_the_published_site(client: Any, s3: S3Server, tmp_path: Path, runs: int) -> None:
    import math

    bucket = _bucket(client, f"fleet-{runs}")
    _fleet(client, bucket, range(runs), tmp_path / "logs")
    published = f"s3://{bucket}/site"

    # The first machine builds everything and publishes: pages first, the state last.
    first = _cli("site", f"s3://{bucket}/runs", "--out", str(tmp_path / "first"), "--published", published)
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith(f"{runs} runs") and f"{runs} fetched from object storage" in first.stdout
    shown = _cli("publish", str(tmp_path / "first"), published)
    assert shown.returncode == 0, shown.stderr
    uploaded = [line.split(" ", 1)[1] for line in shown.stderr.splitlines() if line.startswith("uploaded ")]
    assert uploaded[-1] == f"{published}/.reportgen-state.json"

    # A fresh machine (an empty output folder) builds again: it reads the state in the bucket
    # and lists the runs, and fetches no log and renders no run page.
    before = len(s3.requests())
    fresh = _cli("site", f"s3://{bucket}/runs", "--out", str(tmp_path / "fresh"), "--published", published)
    assert fresh.returncode == 0, fresh.stderr
    assert "warning" not in fresh.stderr and fresh.stdout.startswith(f"{runs} runs")
    seen = _split(s3.requests()[before:], bucket)
    # S3 answers 1,000 keys a page; one more LIST finds no per-folder manifest (runs/_manifests/).
    assert len(seen["LIST"]) == 1 + math.ceil(runs / 1000), seen["LIST"]
    assert seen["GET"] == [f"/{bucket}/site/.reportgen-state.json"]
    assert seen["HEAD"] == [] and seen["write"] == []
    assert not (tmp_path / "fresh" / "runs").exists() and not (tmp_path / "fresh" / "workloads").exists()
    assert (tmp_path / "fresh" / "index.parquet").is_file()

    # One more run lands; the next fresh machine fetches that log and renders its page, and the
    # page of the run it follows on the same workload and target (whose "next run" link now
    # names it): one more log, no other. Publishing with --delete keeps every page published before.
    _fleet(client, bucket, range(runs, runs + 1), tmp_path / "logs")
    before = len(s3.requests())
    third = _cli("site", f"s3://{bucket}/runs", "--out", str(tmp_path / "third"), "--published", published)
    assert third.returncode == 0, third.stderr
    seen = _split(s3.requests()[before:], bucket)
    assert seen["GET"][:2] == [
        f"/{bucket}/site/.reportgen-state.json",
        f"/{bucket}/runs/bench-{runs:05d}/events.jsonl",
    ], seen["GET"]
    assert len(seen["GET"]) == 3 and seen["GET"][2].endswith("/events.jsonl"), seen["GET"]
    assert seen["HEAD"] == [] and len([p for p in (tmp_path / "third" / "runs").iterdir()]) == 2
    # Built again before publishing: the new run's page is in the folder, so it is not fetched again.
    before = len(s3.requests())
    rebuilt = _cli("site", f"s3://{bucket}/runs", "--out", str(tmp_path / "third"), "--published", published)
    assert rebuilt.returncode == 0 and "0 fetched from object storage" in rebuilt.stdout, (
        rebuilt.stdout + rebuilt.stderr
    )
    assert _split(s3.requests()[before:], bucket)["GET"] == [f"/{bucket}/site/.reportgen-state.json"]
    again = _cli("publish", str(tmp_path / "third"), published, "--delete")
    assert again.returncode == 0, again.stderr
    deleted = [line for line in again.stderr.splitlines() if line.startswith("deleted ")]
    assert all("/index-rows-" in line for line in deleted), deleted  # the old row data only
    keys = {
        o["Key"]
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix="site/runs/")
        for o in page.get("Contents", [])
    }
    assert len({key.split("/")[2] for key in keys}) == runs + 1
    # A build given fewer runs than the published site lists says so (a review: the index
    # published next listed one run of four, with no word).
    partial = _cli(
        "site", f"s3://{bucket}/runs/bench-00000", "--out", str(tmp_path / "partial"), "--published", published
    )
    assert partial.returncode == 0, partial.stderr
    assert f"warning: {runs} run(s) the site published at {published} lists are not among RUNS" in partial.stderr
    assert "this build's index leaves them out" in partial.stderr


def _escaping_state() -> bytes:
    import json

    from reportgen.publish.site import _fingerprint

    # This tool's fingerprint, so the rest is checked: a slug that would lead out of the folder.
    run = {"slug": "../../outside-0123abcd", "workload_slug": "w-0123abcd", "outcome": "suitable", "counts": {}}
    return json.dumps({"fingerprint": _fingerprint(), "runs": {"0" * 64: run}}).encode()


@pytest.mark.parametrize(
    "body, reason",
    [
        (b'{"fingerprint": ', "Expecting value"),
        (b"[1, 2, 3]", "not a JSON object"),
        (None, "runs.0000000000000000000000000000000000000000000000000000000000000000.slug"),
        (b" " * 5000, "larger than the limit"),
    ],
    ids=["bad-json", "wrong-type", "slug-outside", "huge"],
)
def test_a_bad_published_state_is_one_warning_and_a_full_build(
    client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: bytes | None, reason: str
) -> None:
    import reportgen.publish.site as site_module

    monkeypatch.setattr(site_module, "MAX_STATE_BYTES", 4096)  # "huge", without uploading 256 MiB
    bucket = _bucket(client, f"planted-{len(reason)}")
    _put_tree(client, bucket, f"runs/{ENCODER_RUNS[0].name}", ENCODER_RUNS[0])
    client.put_object(
        Bucket=bucket, Key="site/.reportgen-state.json", Body=body if body is not None else _escaping_state()
    )
    out = tmp_path / "work" / "site"
    built = _cli("site", f"s3://{bucket}/runs", "--out", str(out), "--published", f"s3://{bucket}/site")
    assert built.returncode == 0, built.stderr
    warnings = [line for line in built.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1 and reason in warnings[0] and "doing a full build" in warnings[0], built.stderr
    assert "Traceback" not in built.stderr and "1 fetched from object storage" in built.stdout
    assert [p.name for p in (tmp_path / "work").iterdir()] == ["site"]  # nothing beside the output folder


def test_manifests_stand_in_for_listing_closed_folders(
    client: Any, s3: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    import reportgen.storage.remote as remote
    from reportgen.storage.remote import Store, list_logs

    bucket = _bucket(client, "manifested")
    log = (FIXTURES / "synthetic_complete.jsonl").read_bytes()
    keys = [f"runs/day-{day}/run-{n}/events.jsonl" for day in range(3) for n in range(3)] + [
        "runs/day-2/run-0/artifacts/x.pt",
        "runs/loose.jsonl",
    ]
    for key in keys:
        client.put_object(Bucket=bucket, Key=key, Body=log)
    listed = {l.url: (l.etag, l.size) for l in list_logs("s3://manifested/runs", Store())}
    assert len(listed) == 10

    closed = _cli("manifest", "s3://manifested/runs/day-0", "s3://manifested/runs/day-1/")
    assert closed.returncode == 0, closed.stderr
    assert closed.stdout.splitlines() == [
        "s3://manifested/runs/_manifests/day-0.json: 3 objects under s3://manifested/runs/day-0/",
        "s3://manifested/runs/_manifests/day-1.json: 3 objects under s3://manifested/runs/day-1/",
    ]
    # A folder that holds nothing (a typo, runs not yet delivered) or a folder of manifests is
    # not closed: its manifest would hide every run delivered there later.
    for wrong, words in (("runs/day-9", "holds no object"), ("runs/_manifests", "a folder of manifests")):
        refused = _cli("manifest", f"s3://manifested/{wrong}")
        assert refused.returncode == 2 and words in refused.stderr and refused.stderr.count("\n") == 1, refused.stderr
    before = len(s3.requests())
    store = Store()
    assert {
        l.url: (l.etag, l.size) for l in list_logs("s3://manifested/runs", store)
    } == listed and store.warnings == []
    seen = _split(s3.requests()[before:], bucket)
    # _manifests/, the folder names under runs/, the one open folder; a GET per manifest; no HEAD.
    assert len(seen["LIST"]) == 3 and "delimiter=%2F" in seen["LIST"][1] and "prefix=runs%2Fday-2%2F" in seen["LIST"][2]
    assert sorted(seen["GET"]) == ["/manifested/runs/_manifests/day-0.json", "/manifested/runs/_manifests/day-1.json"]
    assert seen["HEAD"] == [] and seen["write"] == []

    # Planted manifests: each is one warning, and its folder is listed instead.
    planted = {
        "day-0": b"{not json",
        "day-1": json.dumps(
            {"format": 1, "objects": {"../../elsewhere/events.jsonl": {"etag": "abc", "size": 3}}}
        ).encode(),
    }
    assert _cli("manifest", "s3://manifested/runs/day-2").returncode == 0
    monkeypatch.setattr(remote, "MAX_MANIFEST_BYTES", 300)  # "huge": day-2's manifest is larger than this
    for name, body in planted.items():
        client.put_object(Bucket=bucket, Key=f"runs/_manifests/{name}.json", Body=body)
    store = Store()
    assert {l.url: (l.etag, l.size) for l in list_logs("s3://manifested/runs", store)} == listed
    assert len(store.warnings) == 3 and all("listing s3://manifested/runs/day-" in w for w in store.warnings), (
        store.warnings
    )
    assert "not a plain path inside the folder" in store.warnings[1] and "larger than the limit" in store.warnings[2]


def test_a_manifest_that_understates_a_size_bounds_the_read(client: Any, s3: S3Server) -> None:
    """A manifest that checks out is believed about which objects there are, never about how
    much to download: a log listed at 100 bytes is read with one ranged GET of at most 101
    (it was one GET of the whole object, whatever its size, past --max-log-size too), and the
    mismatch is one located line."""
    from reportgen.storage.remote import Store, list_logs

    bucket = _bucket(client, "understated")
    log = (FIXTURES / "synthetic_complete.jsonl").read_bytes()
    client.put_object(Bucket=bucket, Key="runs/day-0/run/events.jsonl", Body=log)
    client.put_object(Bucket=bucket, Key="runs/day-0/run/annotations.toml", Body=b"# " + b"x" * 4000 + b"\n")
    assert _cli("manifest", "s3://understated/runs/day-0").returncode == 0
    manifest = json.loads(client.get_object(Bucket=bucket, Key="runs/_manifests/day-0.json")["Body"].read())
    for info in manifest["objects"].values():
        info["size"] = 100
    client.put_object(Bucket=bucket, Key="runs/_manifests/day-0.json", Body=json.dumps(manifest).encode())
    out = _cli("validate", "s3://understated/runs")
    assert out.returncode == 1, out.stdout + out.stderr
    message = "s3://understated/runs/day-0/run/events.jsonl: holds more than the 100 bytes listed for it"
    assert message in out.stdout + out.stderr
    # What was asked of the store: at most one byte past the size listed, for the log and for
    # its annotations alike.
    store = Store()
    asked: list[tuple[Any, Any]] = []
    read = store.fs.cat_file

    def spy(path: str, **options: Any) -> bytes:
        if "/run/" in path:  # the run's objects, not the manifest
            asked.append((options.get("start"), options.get("end")))
        return read(path, **options)

    store.fs.cat_file = spy
    (found,) = list_logs("s3://understated/runs", store)
    assert found.annotations is not None
    for obj in (found, found.annotations):
        with pytest.raises(OSError, match="holds more than the 100 bytes listed"):
            obj.read_bytes()
    assert asked == [(0, 101), (0, 101)]


def test_fetch_is_parallel_and_bounded() -> None:
    """Store.fetch reads many objects at once, never more than FETCH_WORKERS in flight."""
    import threading
    import time

    from reportgen.storage.remote import FETCH_WORKERS, Store

    class Counting:
        def __init__(self) -> None:
            self.lock, self.now, self.most = threading.Lock(), 0, 0

        def cat_file(
            self, path: str, max_concurrency: int | None = None, start: int | None = None, end: int | None = None
        ) -> bytes:
            with self.lock:
                self.now += 1
                self.most = max(self.most, self.now)
            time.sleep(0.02)
            with self.lock:
                self.now -= 1
            if path.endswith("missing"):
                raise FileNotFoundError(path)
            return path.encode()[start:end]

    store = Store.__new__(Store)  # no s3fs client: a stand-in that counts overlapping reads
    store.fs, store.fetched, store.uploaded, store._held, store._listings, store.warnings = (
        Counting(),
        [],
        [],
        {},
        {},
        [],
    )
    urls = [f"s3://b/runs/{n}" for n in range(40)] + ["s3://b/runs/missing"]
    store.fetch((url, len(url.removeprefix("s3://"))) for url in urls)
    assert 1 < store.fs.most <= FETCH_WORKERS == 8
    assert store.read("s3://b/runs/7") == b"b/runs/7" and store.open("s3://b/runs/8", 8).read() == b"b/runs/8"
    with pytest.raises(OSError, match="not found"):
        store.read("s3://b/runs/missing")  # the error was held, and is raised where it is read
    assert len(store.fetched) == len(urls)


@pytest.mark.parametrize("name", ["n\nl.html", os.fsdecode(b"bad\xff.html")], ids=["line-break", "not-utf8"])
def test_publish_refuses_a_file_name_no_key_can_hold_before_uploading_anything(tmp_path: Path, name: str) -> None:
    """A file named with a line break split publish's message over two lines, and one whose name
    is not UTF-8 failed with UnicodeEncodeError after part of the folder was uploaded."""
    from reportgen.storage.remote import RemoteError, publish

    class Recording:
        put_urls: list[str] = []

        def list(self, url: str) -> dict[str, Any]:
            return {}

        def put(self, url: str, data: bytes) -> None:
            self.put_urls.append(url)

    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("<p>ok</p>")
    (site / name).write_text("<p>odd</p>")
    store = Recording()
    with pytest.raises(RemoteError, match="rename it \\(nothing was uploaded\\)") as raised:
        publish(site, "s3://bucket/site", store)  # type: ignore[arg-type]
    assert "\n" not in str(raised.value) and store.put_urls == []


@pytest.mark.slow
def test_an_endpoint_that_never_answers_is_given_up_on_in_about_half_a_minute(tmp_path: Path, client: Any) -> None:
    """An endpoint that takes the connection and never answers kept `reportgen validate` waiting
    for many minutes (s3fs retried botocore's retries of 15 s reads); it is given up on with one
    line, exit 2."""
    import socket
    import threading
    import time

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept_and_say_nothing() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept_and_say_nothing, daemon=True)
    thread.start()
    try:
        started = time.monotonic()
        env = {"AWS_ENDPOINT_URL_S3": f"http://127.0.0.1:{server.getsockname()[1]}", "AWS_MAX_ATTEMPTS": ""}
        proc = _cli("validate", "s3://silent/runs", env=env)
        took = time.monotonic() - started
    finally:
        stop.set()
        thread.join()
        for connection in held:
            connection.close()
        server.close()
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip().count("\n") == 0 and "s3://silent/runs" in proc.stderr, proc.stderr
    assert took < 60, f"took {took:.0f} s"
