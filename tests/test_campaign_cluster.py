"""Campaigns on a real (one-node) Slurm cluster, with runs kept in a folder and in S3.

The cluster is Debian's slurm-wlm and munge started on 127.0.0.1 by tests/services.py; the
S3 store is moto's standalone server on 127.0.0.1. Both are stopped by the fixtures. A service
that cannot start fails the test with its reason (it is never skipped).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Iterator

import pytest

from tests.services import S3Server, ServiceError, SlurmCluster, s3_server, slurm_cluster

REPO = Path(__file__).resolve().parent.parent
PLAN = REPO / "collector" / "workloads" / "tiny_encoder.toml"
# Eager cells only, few warm samples, no cold-start processes: a task takes seconds.
SHORT = ["--modes", "eager", "--warm", "3", "--cold", "off"]
TASK_TIMEOUT_S = 420

# Minutes of daemons and collector runs: outside the quick loop (-m "not slow"), run by CI.
pytestmark = [pytest.mark.slurm, pytest.mark.slow]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    try:
        with slurm_cluster(tmp_path_factory.mktemp("slurm")) as running:
            yield running
    except ServiceError as exc:
        pytest.fail(f"could not start the test Slurm cluster: {exc}", pytrace=False)


@pytest.fixture
def s3(tmp_path: Path) -> Iterator[S3Server]:
    try:
        with s3_server(tmp_path / "s3") as running:
            yield running
    except ServiceError as exc:
        pytest.fail(f"could not start the S3 server: {exc}", pytrace=False)


def _interrupting_python(folder: Path) -> Path:
    """An 'interpreter' that runs the collector and sends it SIGTERM once its plan is logged,
    as a scheduler does at a time limit: the task fails and leaves a partial log."""
    wrapper = folder / "python-interrupted"
    wrapper.write_text(textwrap.dedent(f"""\
        #!/bin/bash
        out=""
        prev=""
        for arg in "$@"; do [ "$prev" = "--out" ] && out="$arg"; prev="$arg"; done
        {sys.executable} "$@" &
        pid=$!
        for _ in $(seq 1200); do
            if grep -qs '"kind": "plan"' "$out"/*/events.jsonl; then kill -TERM "$pid"; break; fi
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        wait "$pid"
        """))
    wrapper.chmod(0o755)
    return wrapper


def _campaign(folder: Path, destination: str, environments: list[tuple[str, str]], repeats: int, extra: str = "") -> Path:
    envs = "".join(f'\n[[environment]]\nname = "{name}"\ntarget = "cpu"\npython = "{python}"\n' for name, python in environments)
    text = f"""\
[campaign]
name = "slurm-test"
destination = "{destination}"
repeats = {repeats}
{extra}
[[workload]]
plan = "{PLAN}"
args = {json.dumps(SHORT)}
{envs}
[slurm]
time = "00:20:00"
collector_root = "{REPO}"
scratch = "{folder / 'scratch'}"
"""
    path = folder / "campaign.toml"
    path.write_text(text)
    return path


def _submit(cluster: SlurmCluster, campaign: Path, env: dict[str, str]) -> tuple[str, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "collector.campaign", str(campaign), "--scheduler", "slurm", "--out", str(campaign.parent / "campaign.sbatch")],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    job = next(line.split()[2] for line in proc.stdout.splitlines() if line.startswith("submitted job "))
    assert f"squeue -j {job}" in proc.stdout and f"sacct -j {job}" in proc.stdout
    return job, proc.stdout


def _task_log(campaign: Path, job: str, task: str) -> str:
    return (campaign.parent / f"slurm-test-logs/slurm-test-{job}_{task}.out").read_text(errors="replace")


def _reportgen(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "reportgen", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)


def test_slurm_campaign_runs_array_and_site_builds(cluster: SlurmCluster, tmp_path: Path) -> None:
    """Three tasks of the tiny workload as a job array; the first is cut short by SIGTERM and
    leaves a partial log; the other two complete; the site shows all three."""
    destination = tmp_path / "shared" / "runs"
    interrupted = _interrupting_python(tmp_path)
    campaign = _campaign(tmp_path, str(destination), [("cut-short", str(interrupted)), ("cpu-a", sys.executable), ("cpu-b", sys.executable)], repeats=1)
    job, _ = _submit(cluster, campaign, cluster.env)
    tasks = cluster.wait_for_job(job, TASK_TIMEOUT_S)

    assert sorted(tasks) == ["0", "1", "2"], tasks.keys()
    logs = {t: _task_log(campaign, job, t) for t in tasks}
    assert tasks["0"]["JobState"] == "FAILED", logs["0"]
    assert tasks["0"]["ExitCode"].startswith("143:"), tasks["0"]["ExitCode"]
    for t in ("1", "2"):
        assert tasks[t]["JobState"] == "COMPLETED", logs[t]
    assert "collector exited 143" in logs["0"]

    runs = sorted(p for p in destination.iterdir())
    assert len(runs) == 3 and all((p / "events.jsonl").is_file() for p in runs), runs
    assert not any((tmp_path / "scratch").iterdir()), "task scratch folders are cleaned up"

    site = tmp_path / "site"
    built = _reportgen("site", str(destination), "--out", str(site))
    assert built.returncode == 0, built.stderr
    assert built.stdout.startswith("3 runs,"), built.stdout
    state = json.loads((site / ".reportgen-state.json").read_text())
    completeness = sorted(s["complete"] for s in state["runs"].values())
    assert completeness == [False, True, True], completeness
    partial = next(s for s in state["runs"].values() if not s["complete"])
    page = (site / "runs" / partial["slug"] / "index.html").read_text()
    assert "incomplete" in page.lower()


def test_slurm_campaign_into_s3_then_site_and_publish(cluster: SlurmCluster, s3: S3Server, tmp_path: Path) -> None:
    """Runs land in an s3:// prefix (each task uploads with `reportgen publish`); the site is
    built from the bucket and published back; a second build fetches nothing."""
    import boto3

    env = {**cluster.env, **{k: v for k, v in s3.env.items() if k.startswith("AWS_")}}
    client = boto3.client("s3", endpoint_url=s3.endpoint, aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1")
    client.create_bucket(Bucket="fleet")
    campaign = _campaign(tmp_path, "s3://fleet/nightly", [("cpu", sys.executable)], repeats=2)
    job, _ = _submit(cluster, campaign, env)
    tasks = cluster.wait_for_job(job, TASK_TIMEOUT_S)
    for t, fields in tasks.items():
        assert fields["JobState"] == "COMPLETED", _task_log(campaign, job, t)
    keys = [o["Key"] for o in client.list_objects_v2(Bucket="fleet", Prefix="nightly/")["Contents"]]
    logs = sorted(k for k in keys if k.endswith("/events.jsonl"))
    assert len(logs) == 2, keys
    assert not any((tmp_path / "scratch").iterdir()), "uploaded runs are removed from the node"

    site = tmp_path / "site"

    def build() -> tuple[str, list[str]]:
        before = len(s3.requests())
        proc = _reportgen("site", "s3://fleet/nightly", "--out", str(site), env=env)
        assert proc.returncode == 0, proc.stderr
        gets = [r.path for r in s3.requests()[before:] if r.method == "GET" and r.path.startswith("/fleet/nightly/")]
        return proc.stdout, gets

    out, gets = build()
    assert out.startswith("2 runs,") and "2 fetched from object storage" in out, out
    assert sorted(gets) == sorted(f"/fleet/{k}" for k in logs)

    published = _reportgen("publish", str(site), "s3://fleet/site", env=env)
    assert published.returncode == 0, published.stderr
    index = client.head_object(Bucket="fleet", Key="site/index.html")
    assert index["ContentType"] == "text/html; charset=utf-8"
    css = next(k["Key"] for k in client.list_objects_v2(Bucket="fleet", Prefix="site/assets/")["Contents"] if k["Key"].endswith(".css"))
    assert client.head_object(Bucket="fleet", Key=css)["ContentType"] == "text/css; charset=utf-8"
    assert not any(k["Key"].endswith(".reportgen-state.json") for k in client.list_objects_v2(Bucket="fleet", Prefix="site/")["Contents"])

    out, gets = build()
    assert "0 fetched from object storage" in out and gets == [], (out, gets)
    again = _reportgen("publish", str(site), "s3://fleet/site", env=env)
    assert again.stdout.startswith("0 uploaded,"), again.stdout

    # An annotation added after the run: that log (and the note) are fetched again, nothing else.
    run_prefix = logs[0].rsplit("/", 1)[0]
    client.put_object(Bucket="fleet", Key=f"{run_prefix}/annotations.toml", Body=b"")
    out, gets = build()
    assert "2 fetched from object storage" in out, out
    assert sorted(gets) == sorted([f"/fleet/{logs[0]}", f"/fleet/{run_prefix}/annotations.toml"])
