"""Campaign submissions and tasks that went wrong quietly: two submissions in one second sharing
an id, a ledger left by a refused sbatch, a task whose scratch folder could not be made leaving
no record, a ledger written through a link, an environment's own --export, devices on a target
without any, a Kubernetes claim mounted over the checkout, a Job deadline with no time for
retries, and array indexes past Slurm's default MaxArraySize."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import datetime, timezone
from pathlib import Path

import pytest

import campaign.__main__ as command
from campaign import kubernetes
from campaign.__main__ import main
from campaign.spec import CampaignError, load_campaign
from campaign.tasks import new_campaign_id, split_campaign_id

CAMPAIGN = """\
[campaign]
name = "loc"
destination = "{destination}"
repeats = {repeats}

[[workload]]
plan = "/plans/tiny_encoder.toml"

[[environment]]
name = "cpu-env"
target = "cpu"
python = "{python}"
image = "registry.example/migration-record:cpu"
{extra}
[slurm]
collector_root = "{root}"
scratch = "{scratch}"
"""


def write_campaign(
    tmp_path: Path,
    destination: object = None,
    scratch: object = None,
    repeats: int = 1,
    extra: str = "",
    tail: str = "",
) -> Path:
    path = tmp_path / "campaign.toml"
    path.write_text(
        CAMPAIGN.format(
            destination=destination if destination is not None else tmp_path / "dest",
            scratch=scratch if scratch is not None else tmp_path / "scratch",
            repeats=repeats,
            python=tmp_path / "no-python",
            root=tmp_path,
            extra=extra,
        )
        + tail
    )
    return path


def fake_sbatch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int = 0) -> Path:
    """An sbatch on PATH that records its calls and accepts (prints a job id) or refuses them."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    calls = tmp_path / "sbatch-calls"
    sbatch = bin_dir / "sbatch"
    answer = "echo 4242" if code == 0 else f"echo 'sbatch: error: invalid partition' >&2; exit {code}"
    sbatch.write_text(f'#!/bin/bash\necho "$@" >> {calls}\n{answer}\n')
    sbatch.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    return calls


# ---- campaign ids ---------------------------------------------------------------------------


def test_two_submissions_in_the_same_second_get_two_ids(tmp_path: Path) -> None:
    """The id was NAME-STAMP alone: a second submission in the same second took the first's id,
    so its records replaced the first's and the first's status credited the second's runs."""
    campaign = load_campaign(write_campaign(tmp_path, destination="s3://fleet-runs/nightly"))
    now = datetime(2026, 12, 2, tzinfo=timezone.utc)
    first, second = new_campaign_id(campaign, now), new_campaign_id(campaign, now)
    assert first != second and first.startswith("loc-20261202T000000Z-")
    assert split_campaign_id(first) == ("loc", first[len("loc-") :])
    assert split_campaign_id("loc-20261202T000000Z") == ("loc", "20261202T000000Z")  # an older id
    # Their Kubernetes objects differ too (ConfigMap, Jobs and the campaign-id label).
    names = [
        [item["metadata"]["name"] for item in kubernetes.manifest(campaign, i, {"tasks": []})["items"]]
        for i in (first, second)
    ]
    assert set(names[0]).isdisjoint(names[1])


def test_submit_refuses_a_ledger_folder_that_is_already_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls = fake_sbatch(tmp_path, monkeypatch)
    monkeypatch.setattr(command, "new_campaign_id", lambda campaign: "loc-20261202T000000Z-aaaaaa")
    earlier = tmp_path / "dest" / "_campaigns" / "loc-20261202T000000Z-aaaaaa"
    earlier.mkdir(parents=True)
    (earlier / "planned.json").write_text('{"earlier": true}\n')
    out = tmp_path / "o" / "loc.sbatch"
    assert main(["submit", str(write_campaign(tmp_path)), "--scheduler", "slurm", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{earlier}: already there" in err
    assert (earlier / "planned.json").read_text() == '{"earlier": true}\n'
    assert not calls.exists() and not out.parent.exists()


# ---- a submission sbatch refused ------------------------------------------------------------


def test_a_refused_submission_leaves_no_ledger_in_the_destination(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """planned.json was written before sbatch ran and stayed when sbatch refused: a site built
    from the destination then listed a campaign that was never submitted."""
    fake_sbatch(tmp_path, monkeypatch, code=1)
    path = write_campaign(tmp_path)
    out = tmp_path / "o" / "loc.sbatch"
    assert main(["submit", str(path), "--scheduler", "slurm", "--out", str(out)]) == 1
    assert "invalid partition" in capsys.readouterr().err
    assert not (tmp_path / "dest").exists()  # nor the folders made for it
    assert out.is_file()  # the script stays, to be submitted by hand
    fake_sbatch(tmp_path, monkeypatch, code=0)
    assert main(["submit", str(path), "--scheduler", "slurm", "--out", str(out)]) == 0
    assert len(list((tmp_path / "dest" / "_campaigns").glob("loc-*/planned.json"))) == 1


# ---- a task whose scratch folder cannot be made ---------------------------------------------


def _run_task(script: Path, path: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": path, "SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_JOB_ID": "1"}
    return subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=60)


def test_a_task_without_its_scratch_folder_is_failed_in_the_ledger(tmp_path: Path) -> None:
    """task.sh went on after `mkdir -p` of its scratch failed: the collector never ran, and
    neither a record nor a log reached the ledger (status said planned, not failed)."""
    (tmp_path / "notadir").write_text("a file, where the scratch folder would be\n")
    path = write_campaign(tmp_path, scratch=tmp_path / "notadir" / "scratch")
    script = tmp_path / "loc.sbatch"
    assert main(["submit", str(path), "--scheduler", "slurm", "--dry-run", "--out", str(script)]) == 0
    (tmp_path / "dest").mkdir()  # the shared folder, as a submit finds it mounted
    proc = _run_task(script, "/usr/bin:/bin")
    assert proc.returncode == 2, proc.stderr
    (ledger,) = (tmp_path / "dest" / "_campaigns").iterdir()
    record = json.loads((ledger / "tasks" / "task-0.s1-r0.json").read_text())
    assert record["state"] == "failed" and record["exit_code"] == 2 and record["ended"] and record["runs"] == []
    log = (ledger / "tasks" / record["log"]).read_text()
    assert "cannot create the scratch folder" in log and "nothing is run" in log
    assert json.loads((ledger / "planned.json").read_text())["campaign_id"] == ledger.name
    assert sorted(p.name for p in (ledger / "tasks").iterdir()) == ["task-0.s1-r0.json", "task-0.s1-r0.log"]
    # status shows it failed, with the log's last lines.
    assert command._load_ledger(str(ledger)).tasks[0].state == "failed"


def _s3_task_without_scratch(tmp_path: Path, env: dict[str, str]) -> Path:
    """Runs task 0 of an s3:// campaign whose scratch folder cannot be made (a fake `aws s3 cp
    --recursive --only-show-errors FROM TO/` copies into ./bucket); its ledger folder there."""
    (tmp_path / "notadir").write_text("a file\n")
    bucket = tmp_path / "bucket"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    aws = bin_dir / "aws"
    aws.write_text(f'#!/bin/bash\nto="{bucket}/${{6#s3://}}"\nmkdir -p "$to" && cp -R "$5"/. "$to"\n')
    aws.chmod(0o755)
    path = write_campaign(tmp_path, destination="s3://fleet-runs/nightly", scratch=tmp_path / "notadir" / "scratch")
    path.write_text(path.read_text().replace("repeats = 1\n", 'repeats = 1\nupload = "aws"\n'))
    script = tmp_path / "loc.sbatch"
    assert main(["submit", str(path), "--scheduler", "slurm", "--dry-run", "--out", str(script)]) == 0
    full = {"PATH": f"{bin_dir}:/usr/bin:/bin", "SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_JOB_ID": "1", **env}
    proc = subprocess.run(["bash", str(script)], env=full, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    (ledger,) = (bucket / "fleet-runs" / "nightly" / "_campaigns").iterdir()
    return ledger


def test_a_task_without_its_scratch_folder_uploads_its_failed_record(tmp_path: Path) -> None:
    """An s3:// destination: the record and log go up from a temporary folder, then removed."""
    ledger = _s3_task_without_scratch(tmp_path, {})
    record = json.loads((ledger / "tasks" / "task-0.s1-r0.json").read_text())
    assert record["state"] == "failed" and record["exit_code"] == 2
    assert "cannot create the scratch folder" in (ledger / "tasks" / record["log"]).read_text()
    assert (ledger / "planned.json").is_file()


def test_a_task_whose_tmpdir_is_unusable_too_still_uploads_its_failed_record(tmp_path: Path) -> None:
    """Before: with TMPDIR the very folder that failed, the fallback `mktemp -d` failed as well,
    and an s3:// destination got neither record nor log (status: no record yet)."""
    ledger = _s3_task_without_scratch(tmp_path, {"TMPDIR": str(tmp_path / "notadir")})
    record = json.loads((ledger / "tasks" / "task-0.s1-r0.json").read_text())
    assert record["state"] == "failed" and record["exit_code"] == 2


# ---- links on the ledger's path ---------------------------------------------------------------


@pytest.mark.parametrize("level", ["_campaigns", "id"])
def test_submit_never_writes_the_ledger_through_a_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], level: str
) -> None:
    """dest/_campaigns (or the id's folder) a link to another folder: submit wrote the ledger
    there, where status and the site (which refuse links) never read it."""
    calls = fake_sbatch(tmp_path, monkeypatch)
    campaign_id = "loc-20261202T000000Z-bbbbbb"
    monkeypatch.setattr(command, "new_campaign_id", lambda campaign: campaign_id)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    link = tmp_path / "dest" / "_campaigns"
    if level == "id":
        link.mkdir(parents=True)
        link = link / campaign_id
    else:
        link.parent.mkdir()
    link.symlink_to(elsewhere)
    out = tmp_path / "o" / "loc.sbatch"
    assert main(["submit", str(write_campaign(tmp_path)), "--scheduler", "slurm", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{link}: a link" in err
    assert list(elsewhere.iterdir()) == [] and not calls.exists() and not out.parent.exists()


# ---- the campaign file ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tail", "where"),
    [
        ('sbatch = ["--partition=p1", "--export=NONE"]\n', "environment[0].sbatch: '--export=NONE'"),
        ('sbatch = ["--export"]\n', "environment[0].sbatch: '--export'"),
        ('sbatch = ["--exp=ALL"]\n', "environment[0].sbatch: '--exp=ALL'"),
        ('sbatch = ["--export-file=vars"]\n', "environment[0].sbatch: '--export-file=vars'"),
    ],
    ids=["export-none", "export", "prefix", "export-file"],
)
def test_an_export_in_an_sbatch_list_is_refused(tmp_path: Path, tail: str, where: str) -> None:
    """sbatch keeps the last --export it is given: an environment's own replaced the one a
    resume passes its submission number in, and the resumed attempt overwrote attempt 1's record."""
    with pytest.raises(CampaignError, match="sets sbatch's --export itself") as info:
        load_campaign(write_campaign(tmp_path, destination="s3://fleet-runs/n", extra=tail))
    assert where in str(info.value) and "\n" not in str(info.value)
    campaign_wide = write_campaign(tmp_path, destination="s3://fleet-runs/n", tail=tail)
    with pytest.raises(CampaignError, match=r"slurm\.sbatch: '--exp"):
        load_campaign(campaign_wide)
    # Other options, --exclusive among them, still pass.
    load_campaign(write_campaign(tmp_path, destination="s3://fleet-runs/n", extra='sbatch = ["--exclusive"]\n'))


def test_devices_on_a_target_without_devices_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`devices` on a cpu environment asked for nothing, yet turned off the whole-node default."""
    path = write_campaign(tmp_path, destination="s3://fleet-runs/n", extra="devices = 4\n")
    assert main(["submit", str(path), "--scheduler", "slurm", "--dry-run", "--out", str(tmp_path / "x.sbatch")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "environment[0].devices: target 'cpu' has no device" in err
    assert not (tmp_path / "x.sbatch").exists()
    path.write_text(path.read_text().replace('target = "cpu"', 'target = "cuda"'))
    assert load_campaign(path).environments[0].devices == 4


# ---- Kubernetes -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "destination", ["/opt/migration-record", "/opt", "/etc", "/usr", "/usr/local/runs", "/srv/checkout"]
)
def test_kubernetes_refuses_a_claim_mounted_over_the_checkout_or_the_system(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], destination: str
) -> None:
    tail = '\n[kubernetes]\nvolume_claim = "runs"\n'
    if destination == "/srv/checkout":  # the image's checkout below the destination
        tail += 'workdir = "/srv/checkout/migration-record"\n'
    path = write_campaign(tmp_path, destination=destination, tail=tail)
    out = tmp_path / "jobs.json"
    assert main(["submit", str(path), "--scheduler", "kubernetes", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "campaign.destination" in err, err
    assert not out.exists()


def test_kubernetes_accepts_a_claim_of_its_own(tmp_path: Path) -> None:
    path = write_campaign(tmp_path, destination="/mnt/runs", tail='\n[kubernetes]\nvolume_claim = "runs"\n')
    pod = kubernetes.manifest(load_campaign(path), "loc-20261202T000000Z-cccccc", {"tasks": []})["items"][1]
    assert {"name": "runs", "mountPath": "/mnt/runs"} in pod["spec"]["template"]["spec"]["containers"][0][
        "volumeMounts"
    ]


def test_kubernetes_job_deadline_leaves_time_for_each_retry(tmp_path: Path) -> None:
    """The Job's deadline was (task + grace) x rounds: an index retried (backoff_limit_per_index)
    had no time left, and the Job failed at its deadline with the retry still running."""
    tail = "\n[kubernetes]\nbackoff_limit_per_index = 3\ndeadline_s = 3600\n"
    path = write_campaign(tmp_path, destination="s3://fleet-runs/n", repeats=10, tail=tail)
    job = kubernetes.manifest(load_campaign(path), "loc-20261202T000000Z-dddddd", {"tasks": []})["items"][1]
    assert job["spec"]["parallelism"] == 10 and job["spec"]["backoffLimitPerIndex"] == 3
    assert job["spec"]["activeDeadlineSeconds"] == (3600 + 120) * 1 * (3 + 1)
    assert kubernetes.job_deadline_s(2**31, 10_000, 1, 2**31) == (1 << 63) - 1  # an int64 at most


# ---- Slurm's MaxArraySize -------------------------------------------------------------------


@pytest.mark.parametrize(("repeats", "warned"), [(1002, True), (1001, False)])
def test_array_indexes_past_slurms_default_max_array_size_are_warned_of(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], repeats: int, warned: bool
) -> None:
    path = write_campaign(tmp_path, destination="s3://fleet-runs/n", repeats=repeats)
    assert main(["submit", str(path), "--scheduler", "slurm", "--dry-run", "--out", str(tmp_path / "x.sbatch")]) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if "MaxArraySize" in line]
    if warned:
        assert len(lines) == 1 and "largest array index is 1001" in lines[0] and "MaxArraySize of 1001" in lines[0]
    else:
        assert lines == []


def test_a_folder_ledger_file_is_replaced_whole_and_planned_tasks_are_written_once(tmp_path: Path) -> None:
    """A review: each task copied the ledger into the destination with `cp -R`, which truncates
    and rewrites a file in place: a full disk left a record of 0 bytes (status then exited 2 for
    the whole campaign, a site dropped its page), and status read planned.json half rewritten by
    a starting task. A file is now copied under a hidden name and renamed; planned.json, once there,
    is left alone."""
    import os

    path = write_campaign(tmp_path)  # its python is missing: each task fails, delivering its ledger
    script = tmp_path / "loc.sbatch"
    assert main(["submit", str(path), "--scheduler", "slurm", "--dry-run", "--out", str(script)]) == 0
    (tmp_path / "dest").mkdir()
    assert _run_task(script, "/usr/bin:/bin").returncode != 0
    (ledger,) = (tmp_path / "dest" / "_campaigns").iterdir()
    record = ledger / "tasks" / "task-0.s1-r0.json"
    witness = tmp_path / "witness"
    record.unlink()
    witness.write_text("SENTINEL\n")
    os.link(witness, record)  # a file rewritten in place would show through this link
    planned = ledger / "planned.json"
    os.utime(planned, ns=(1_000_000_000, 1_000_000_000))
    assert _run_task(script, "/usr/bin:/bin").returncode != 0
    assert witness.read_text() == "SENTINEL\n", "the record was rewritten in place"
    assert json.loads(record.read_text())["state"] == "failed"
    assert planned.stat().st_mtime_ns == 1_000_000_000, "planned.json was written again"
    assert not [p.name for p in (ledger / "tasks").iterdir() if p.name.startswith(".")]


@pytest.mark.parametrize("name", ["campaign.toml", "loc.tasks", "loc.task.sh", "loc.planned.json", "loc.submission"])
def test_out_may_not_name_a_file_the_submission_keeps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    """A review: `--out campaign.toml` replaced the campaign file (resume reads it) with the
    sbatch wrapper, exit 0; `--out loc.tasks` put the wrapper and the task list on one path."""
    path = write_campaign(tmp_path)
    before = path.read_text()
    out = tmp_path / name
    assert main(["submit", str(path), "--scheduler", "slurm", "--dry-run", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--out {out}: that is the" in err, err
    assert path.read_text() == before


def test_a_stop_lead_sbatch_cannot_take_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A review: stop_lead_s = 70000 was accepted and written as --signal=B:TERM@70000, which
    sbatch refuses (its lead is 0 to 65535 s)."""
    path = write_campaign(tmp_path, tail='time = "2-00:00:00"\nstop_lead_s = 70000\n')
    assert main(["submit", str(path), "--scheduler", "slurm", "--dry-run", "--out", str(tmp_path / "x.sbatch")]) == 2
    assert "slurm.stop_lead_s: must be at most 65535, got 70000" in capsys.readouterr().err


def test_a_second_submit_or_resume_at_once_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A review: two submits at once into one --out both read no submission, both submitted, and
    the tasks of the one whose files the other then replaced read "no record yet" for ever (two
    resumes took one submission number alike). One command at a time holds the folder's lock."""
    import fcntl
    import os

    fake_sbatch(tmp_path, monkeypatch)
    path = write_campaign(tmp_path)
    out = tmp_path / "o" / "loc.sbatch"
    out.parent.mkdir()
    fd = os.open(out.parent, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # another command, running
        for command in ("submit", "resume"):
            assert main([command, str(path), "--scheduler", "slurm", "--out", str(out)]) == 2
            err = capsys.readouterr().err
            assert err.count("\n") == 1 and "another submit or resume is running in this folder" in err, err
        assert not (out.parent / "loc.planned.json").exists()
    finally:
        os.close(fd)
    assert main(["submit", str(path), "--scheduler", "slurm", "--out", str(out)]) == 0  # once it has ended


def test_a_scratch_folder_that_takes_no_record_still_leaves_one_in_the_ledger(tmp_path: Path) -> None:
    """A review: on a full node-local scratch disk `mkdir` still worked, the record could not be
    written there, and the task exited 4 with no record in the ledger ("no record yet: queued, or
    never started" for ever; resume left it out). The ledger moves to the destination in place."""
    path = write_campaign(tmp_path)  # its python is missing: the task fails
    script = tmp_path / "loc.sbatch"
    assert main(["submit", str(path), "--scheduler", "slurm", "--dry-run", "--out", str(script)]) == 0
    (tmp_path / "dest").mkdir()
    campaign_id = json.loads((tmp_path / "loc.planned.json").read_text())["campaign_id"]
    scratch_ledger = tmp_path / "scratch" / f"{campaign_id}-0-s1-r0" / "ledger"
    # Every write of a record there fails: a folder stands where its temporary file goes.
    (scratch_ledger / "task-0.s1-r0.json.tmp").mkdir(parents=True)
    proc = _run_task(script, "/usr/bin:/bin")
    assert proc.returncode != 0
    (ledger,) = (tmp_path / "dest" / "_campaigns").iterdir()
    record = json.loads((ledger / "tasks" / "task-0.s1-r0.json").read_text())
    assert record["state"] == "failed" and record["exit_code"] == proc.returncode, record
    log = (ledger / "tasks" / record["log"]).read_text()
    assert "the scratch folder took no record" in log and "collector exited" in log, log
    assert command._load_ledger(str(ledger)).tasks[0].state == "failed"
