"""Campaigns on a real (one-node) Slurm cluster, with runs kept in a folder and in S3.

The cluster is Debian's slurm-wlm and munge started on 127.0.0.1 by tests/services.py; the
S3 store is moto's standalone server on 127.0.0.1. Both are stopped by the fixtures. A service
that cannot start fails the test with its reason (it is never skipped).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Iterator

import pytest

from tests.services import S3Server, ServiceError, SlurmCluster, slurm_cluster

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


def _interrupting_python(folder: Path) -> Path:
    """An 'interpreter' that runs the collector and sends it SIGTERM once its plan is logged,
    as a scheduler does at a time limit: the task fails and leaves a partial log."""
    wrapper = folder / "python-interrupted"
    wrapper.write_text(
        textwrap.dedent(f"""\
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
        """)
    )
    wrapper.chmod(0o755)
    return wrapper


def _campaign(
    folder: Path, destination: str, environments: list[tuple[str, str]], repeats: int, extra: str = ""
) -> Path:
    envs = "".join(
        f'\n[[environment]]\nname = "{name}"\ntarget = "cpu"\npython = "{python}"\n' for name, python in environments
    )
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
scratch = "{folder / "scratch"}"
"""
    path = folder / "campaign.toml"
    path.write_text(text)
    return path


def _submit(cluster: SlurmCluster, campaign: Path, env: dict[str, str]) -> tuple[str, str]:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "campaign",
            "submit",
            str(campaign),
            "--scheduler",
            "slurm",
            "--out",
            str(campaign.parent / "campaign.sbatch"),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    job = next(line.split()[2] for line in proc.stdout.splitlines() if line.startswith("submitted job "))
    assert f"squeue -j {job}" in proc.stdout and f"sacct -j {job}" in proc.stdout
    return job, proc.stdout


def _task_log(campaign: Path, job: str, task: str) -> str:
    return (campaign.parent / f"slurm-test-logs/slurm-test-{job}_{task}.out").read_text(errors="replace")


def _reportgen(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "reportgen", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )


def test_slurm_campaign_runs_array_and_site_builds(cluster: SlurmCluster, tmp_path: Path) -> None:
    """Three tasks of the tiny workload as a job array; the first is cut short by SIGTERM and
    leaves a partial log; the other two complete; the site shows all three."""
    destination = tmp_path / "shared" / "runs"
    interrupted = _interrupting_python(tmp_path)
    campaign = _campaign(
        tmp_path,
        str(destination),
        [("cut-short", str(interrupted)), ("cpu-a", sys.executable), ("cpu-b", sys.executable)],
        repeats=1,
    )
    job, _ = _submit(cluster, campaign, cluster.env)
    tasks = cluster.wait_for_job(job, TASK_TIMEOUT_S)

    assert sorted(tasks) == ["0", "1", "2"], tasks.keys()
    logs = {t: _task_log(campaign, job, t) for t in tasks}
    assert tasks["0"]["JobState"] == "FAILED", logs["0"]
    assert tasks["0"]["ExitCode"].startswith("143:"), tasks["0"]["ExitCode"]
    for t in ("1", "2"):
        assert tasks[t]["JobState"] == "COMPLETED", logs[t]
    assert "collector exited 143" in logs["0"]

    runs = sorted(p for p in destination.iterdir() if p.name != "_campaigns")
    assert len(runs) == 3 and all((p / "events.jsonl").is_file() for p in runs), runs
    # A complete task cleans its scratch; the failed one keeps its own for a look.
    assert len(list((tmp_path / "scratch").iterdir())) == 1, "complete tasks' scratch folders are cleaned up"

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
    client = boto3.client(
        "s3",
        endpoint_url=s3.endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    )
    client.create_bucket(Bucket="fleet")
    campaign = _campaign(tmp_path, "s3://fleet/nightly", [("cpu", sys.executable)], repeats=2)
    job, _ = _submit(cluster, campaign, env)
    tasks = cluster.wait_for_job(job, TASK_TIMEOUT_S)
    for t, fields in tasks.items():
        assert fields["JobState"] == "COMPLETED", _task_log(campaign, job, t)
    keys = [o["Key"] for o in client.list_objects_v2(Bucket="fleet", Prefix="nightly/")["Contents"]]
    logs = sorted(k for k in keys if k.endswith("/events.jsonl"))
    keys = [o["Key"] for o in client.list_objects_v2(Bucket="fleet", Prefix="nightly/")["Contents"]]
    assert len(logs) == 2, keys
    assert not any((tmp_path / "scratch").iterdir()), "uploaded runs are removed from the node"
    ledger = sorted(k for k in keys if "/_campaigns/" in k)
    assert sum(k.endswith("/planned.json") for k in ledger) == 1 and sum(k.endswith(".log") for k in ledger) == 2, (
        ledger
    )

    site = tmp_path / "site"

    def build() -> tuple[str, list[str]]:
        before = len(s3.requests())
        proc = _reportgen("site", "s3://fleet/nightly", "--out", str(site), env=env)
        assert proc.returncode == 0, proc.stderr
        # Run logs and notes fetched (the campaign ledger's small files are read on each full build).
        gets = [
            r.path
            for r in s3.requests()[before:]
            if r.method == "GET" and r.path.startswith("/fleet/nightly/") and "/_campaigns/" not in r.path
        ]
        return proc.stdout, gets

    out, gets = build()
    assert out.startswith("2 runs,") and "2 fetched from object storage" in out, out
    assert sorted(gets) == sorted(f"/fleet/{k}" for k in logs)

    published = _reportgen("publish", str(site), "s3://fleet/site", env=env)
    assert published.returncode == 0, published.stderr
    index = client.head_object(Bucket="fleet", Key="site/index.html")
    assert index["ContentType"] == "text/html; charset=utf-8"
    css = next(
        k["Key"]
        for k in client.list_objects_v2(Bucket="fleet", Prefix="site/assets/")["Contents"]
        if k["Key"].endswith(".css")
    )
    assert client.head_object(Bucket="fleet", Key=css)["ContentType"] == "text/css; charset=utf-8"
    # The site's state goes up last, beside the pages (a build with --published continues from it).
    assert published.stderr.splitlines()[-1] == "uploaded s3://fleet/site/.reportgen-state.json", published.stderr

    out, gets = build()
    assert "0 fetched from object storage" in out and gets == [], (out, gets)
    again = _reportgen("publish", str(site), "s3://fleet/site", env=env)
    assert again.stdout.startswith("0 uploaded,"), again.stdout

    # An annotation added after the run: that log (and the note) are fetched again, nothing else.
    run_prefix = logs[0].rsplit("/", 1)[0]
    client.put_object(Bucket="fleet", Key=f"{run_prefix}/annotations.toml", Body=b"")
    out, gets = build()
    assert "2 fetched from object storage" in out, out
    # The note is empty as listed: a read bounded by its listed size needs no request.
    assert gets == [f"/fleet/{logs[0]}"]


FAULTY = REPO / "tests" / "workloads" / "faulty.toml"


def test_slurm_campaign_ledger_fail_time_limit_requeue_resume(cluster: SlurmCluster, tmp_path: Path) -> None:
    """Three tasks: one fails before it writes a log (exit 3), one outlives its time limit and is
    requeued, one succeeds. The ledger says exactly that; every attempt's log and run is kept;
    resume then submits only what is not done."""
    no_device = tmp_path / "python-no-device"
    no_device.write_text(
        "#!/bin/bash\necho 'collector: --target cpu: stand-in for a host without its device' >&2\nexit 3\n"
    )
    no_device.chmod(0o755)
    slow_first = tmp_path / "python-slow-first"
    # The first attempt hangs in a cell until Slurm's stop signal; the requeued one runs normally.
    slow_first.write_text(
        f'#!/bin/bash\n[ "${{SLURM_RESTART_COUNT:-0}}" = 0 ] && export FAULTY=hang@1\nexec {sys.executable} "$@"\n'
    )
    slow_first.chmod(0o755)
    destination = tmp_path / "shared" / "runs"
    campaign = tmp_path / "campaign.toml"
    campaign.write_text(f"""\
[campaign]
name = "slurm-test"
destination = "{destination}"

[[workload]]
plan = "{FAULTY}"
args = ["--modes", "eager", "--warm", "2", "--cold", "off"]

[[environment]]
name = "no-device"
target = "cpu"
python = "{no_device}"

[[environment]]
name = "time-limit"
target = "cpu"
python = "{slow_first}"

[[environment]]
name = "ok"
target = "cpu"
python = "{sys.executable}"

[slurm]
time = "00:03:00"
stop_lead_s = 60
collector_root = "{REPO}"
scratch = "{tmp_path / "scratch"}"
""")
    job, _ = _submit(cluster, campaign, cluster.env)
    tasks = cluster.wait_for_job(job, TASK_TIMEOUT_S)
    assert tasks["0"]["ExitCode"].startswith("3:") and tasks["2"]["JobState"] == "COMPLETED", tasks
    assert tasks["1"]["ExitCode"].startswith("143:"), (tasks["1"], _task_log(campaign, job, "1"))
    cluster.run("scontrol", "requeue", f"{job}_1")
    tasks = cluster.wait_for_job(job, TASK_TIMEOUT_S)
    assert tasks["1"]["JobState"] == "COMPLETED", _task_log(campaign, job, "1")

    planned = campaign.parent / "slurm-test.planned.json"
    status = subprocess.run(
        [sys.executable, "-m", "campaign", "status", str(planned), "--format", "json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert status.returncode == 1, status.stderr  # one task is not done
    ledger = json.loads(status.stdout)
    states = {t["task"]: t["state"] for t in ledger["tasks"]}
    assert states == {0: "failed", 1: "done", 2: "done"}, ledger
    failed = ledger["tasks"][0]
    assert failed["exit_code"] == 3 and any(
        "stand-in for a host without its device" in line for line in failed["attempts"][-1]["tail"]
    )
    requeued = ledger["tasks"][1]["attempts"]
    assert [(a["attempt"], a["state"], a["exit_code"]) for a in requeued] == [
        ("s1-r0", "stopped", 143),
        ("s1-r1", "done", 0),
    ]
    # Every attempt's run is in the destination: the aborted one and the complete one.
    runs = {a["runs"][0] for a in requeued}
    assert len(runs) == 2 and all((destination / r / "events.jsonl").is_file() for r in runs)
    aborted = (destination / requeued[0]["runs"][0] / "events.jsonl").read_text()
    assert '"status": "aborted"' in aborted
    first = json.loads(aborted.splitlines()[0])
    assert (
        first["scheduled"]["attempt"] == "s1-r0"
        and first["scheduled"]["task_index"] == 1
        and first["scheduled"]["job_id"] == f"{job}_1"
    )
    logs = sorted(p.name for p in (destination / "_campaigns" / ledger["campaign_id"] / "tasks").glob("*.log"))
    assert logs == ["task-0.s1-r0.log", "task-1.s1-r0.log", "task-1.s1-r1.log", "task-2.s1-r0.log"]
    # Slurm's own output file was appended to by the requeued attempt, not overwritten.
    slurm_out = _task_log(campaign, job, "1")
    assert "(s1-r0)" in slurm_out and "(s1-r1)" in slurm_out

    # The site shows the task that failed before writing a log as untested, with its reason.
    site = tmp_path / "site"
    built = _reportgen("site", str(destination), "--out", str(site))
    assert built.returncode == 0, built.stderr
    assert built.stdout.startswith("3 runs,"), built.stdout  # the aborted attempt, the requeued one, the ok one
    index = (site / "index.html").read_text()
    assert "3 planned task(s), 2 done, 1 untested" in index and "task 0 faulty/no-device/r1: the task failed" in index
    (page,) = (site / "campaigns").glob("*/index.html")
    html = page.read_text()
    assert "exit 3" in html and "stand-in for a host without its device" in html and "superseded by" in html

    resumed = subprocess.run(
        [
            sys.executable,
            "-m",
            "campaign",
            "resume",
            str(campaign),
            "--scheduler",
            "slurm",
            "--dry-run",
            "--out",
            str(campaign.parent / "campaign.sbatch"),
        ],
        cwd=REPO,
        env=cluster.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming 1 task(s) not done (0), submission 2" in resumed.stdout and "--array=0 " in resumed.stdout


def test_every_submission_passes_sbatch_test_only(cluster: SlurmCluster, tmp_path: Path) -> None:
    """Slurm's own check of the wrapper and each submission's options (devices through GRES are
    left out: the test node has no GRES, and Slurm rightly refuses them there)."""
    from campaign import slurm
    from campaign.spec import load_campaign

    campaign = _campaign(
        tmp_path,
        str(tmp_path / "runs"),
        [("a", sys.executable), ("b", sys.executable)],
        repeats=2,
        extra="max_parallel = 3",
    )
    text = campaign.read_text().replace('name = "b"', 'name = "b"\ncpus = 1\nmemory = "100M"')
    campaign.write_text(text)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "campaign",
            "submit",
            str(campaign),
            "--scheduler",
            "slurm",
            "--dry-run",
            "--out",
            str(tmp_path / "t.sbatch"),
        ],
        cwd=REPO,
        env=cluster.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    subs = slurm.submissions(load_campaign(campaign))
    assert len(subs) == 2 and [s.options[0] for s in subs] == ["--array=0,2%2", "--array=1,3%1"]
    for sub in subs:
        checked = subprocess.run(
            ["sbatch", "--test-only", *sub.options, str(tmp_path / "t.sbatch")],
            env=cluster.env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert checked.returncode == 0 and "to start at" in checked.stderr, (sub.options, checked.stderr)
