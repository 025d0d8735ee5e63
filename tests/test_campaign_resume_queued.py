"""`resume` and tasks that have no ledger record yet.

A task writes its first record only when it starts. Until then it may simply be waiting in the
scheduler's queue (a pending Slurm array task, a Pending pod), which the campaign tool cannot
see. Before, `status` called such a task "planned (never started)" and said `resume` submits
it, and `resume` did: a nightly `status || resume` on scarce capacity submitted every queued
task a second time. Now `resume` submits again only the tasks that ran and did not finish well,
and the unrecorded ones only when asked (--include-unrecorded).

The ledger records are written as campaign/task.sh writes them, with the helpers of
test_campaign_ledger.py (a done task's run is a synthetic log from tests/logbuilder.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from campaign.__main__ import main
from tests.test_campaign_ledger import KUBE_CAMPAIGN, _fake_sbatch, _record


def _slurm_campaign(tmp_path: Path, repeats: int) -> tuple[Path, Path]:
    """A Slurm campaign of ``repeats`` tasks into a folder destination: (campaign file, --out)."""
    campaign = tmp_path / "campaign.toml"
    text = KUBE_CAMPAIGN.format(destination=tmp_path / "runs").replace('[kubernetes]\nvolume_claim = "runs"\n', "")
    campaign.write_text(text.replace("repeats = 2", f"repeats = {repeats}"))
    return campaign, tmp_path / "nightly.sbatch"


def _submitted(tmp_path: Path, campaign: Path, script: Path) -> Path:
    """Submit (to the fake sbatch) and return the ledger folder, its tasks/ folder made."""
    assert main(["submit", str(campaign), "--scheduler", "slurm", "--out", str(script)]) == 0
    planned = json.loads((tmp_path / "nightly.planned.json").read_text())
    folder = tmp_path / "runs" / "_campaigns" / planned["campaign_id"]
    (folder / "tasks").mkdir()
    (tmp_path / "sbatch-calls").unlink()
    return folder


def _one_of_each(folder: Path) -> None:
    """Task 0 failed, 1 stopped, 2 lost, 3 unverified (its run is not there), 4 done, 5 no record."""
    _record(folder, 0, "s1-r0", "failed", 3, [])
    _record(folder, 1, "s1-r0", "stopped", 143, [])
    _record(folder, 2, "s1-r0", "running", None, [], started="2001-01-01T00:00:00Z")
    _record(folder, 3, "s1-r0", "done", 0, ["never-delivered"], deliver=False)
    _record(folder, 4, "s1-r0", "done", 0, ["r4"])


def test_status_says_a_task_without_a_record_may_be_queued_and_resume_leaves_it_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _fake_sbatch(tmp_path, monkeypatch)
    campaign, script = _slurm_campaign(tmp_path, 6)
    folder = _submitted(tmp_path, campaign, script)
    _one_of_each(folder)
    capsys.readouterr()
    assert main(["status", str(folder)]) == 1
    out = capsys.readouterr().out
    lines = {int(line.split()[0]): line for line in out.splitlines() if line[:4].strip().isdigit()}
    assert [lines[i].split()[1] for i in range(6)] == ["failed", "stopped", "lost", "unverified", "done", "planned"]
    assert "no record yet: queued, or never started" in lines[5]
    assert "never started" not in "".join(lines[i] for i in range(5))
    (hint,) = [line for line in out.splitlines() if line.startswith("not done:")]
    assert hint.startswith("not done: 5 task(s); `python -m campaign resume CAMPAIGN --scheduler slurm`")
    assert "submits again the 4 failed, stopped, lost or unverified" in hint
    assert "1 with no record yet (queued, or never started) are left out by resume unless given" in hint
    assert "--include-unrecorded" in hint and "`squeue`" in hint
    assert "submits exactly those" not in out
    assert main(["status", str(folder), "--format", "json"]) == 1
    assert json.loads(capsys.readouterr().out)["tasks"][5]["reason"] == "no record yet: queued, or never started"


def test_resume_submits_only_the_tasks_that_ran_and_did_not_finish_unless_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _fake_sbatch(tmp_path, monkeypatch)
    campaign, script = _slurm_campaign(tmp_path, 6)
    folder = _submitted(tmp_path, campaign, script)
    _one_of_each(folder)
    capsys.readouterr()
    resume = ["resume", str(campaign), "--scheduler", "slurm", "--out", str(script)]
    assert main(resume) == 0
    out = capsys.readouterr().out
    assert "resuming 4 task(s) not done (0, 1, 2, 3), submission 2" in out
    assert "left out: 1 task(s) with no record yet (5), queued or never started" in out
    assert "--include-unrecorded submits them too" in out
    assert "--array=0-3 " in (tmp_path / "sbatch-calls").read_text()
    # Asked (the queue shows task 5 is not waiting): it is submitted too.
    (tmp_path / "sbatch-calls").unlink()
    assert main([*resume, "--include-unrecorded"]) == 0
    out = capsys.readouterr().out
    assert "resuming 5 task(s) not done (0, 1, 2, 3, 5), submission 3" in out and "left out" not in out
    assert "--array=0-3,5 " in (tmp_path / "sbatch-calls").read_text()


def test_resume_with_only_unrecorded_tasks_left_submits_nothing_and_exits_3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Right after submit every task is queued and has no record: a resume must not submit them
    all again; it says why in one line and exits 3, which a CI job can tell from 0 and 1."""
    _fake_sbatch(tmp_path, monkeypatch)
    campaign, script = _slurm_campaign(tmp_path, 3)
    folder = _submitted(tmp_path, campaign, script)
    _record(folder, 0, "s1-r0", "done", 0, ["r0"])
    capsys.readouterr()
    resume = ["resume", str(campaign), "--scheduler", "slurm", "--out", str(script)]
    assert main(resume) == 3
    captured = capsys.readouterr()
    assert captured.out.count("\n") == 1 and captured.err == ""
    assert "nothing submitted: the 2 task(s) left (1, 2) have no record yet, queued or never started" in captured.out
    assert "`squeue`" in captured.out and "--include-unrecorded" in captured.out
    assert (
        not (tmp_path / "sbatch-calls").exists()
        and '"submission": 2' not in (tmp_path / "nightly.submission").read_text()
    )
    # A dry run says the same; asked, the two are submitted.
    assert main([*resume, "--dry-run"]) == 3
    capsys.readouterr()
    assert main([*resume, "--include-unrecorded"]) == 0
    assert "resuming 2 task(s) not done (1, 2), submission 2" in capsys.readouterr().out
    assert "--array=1-2 " in (tmp_path / "sbatch-calls").read_text()
    # Every task done or still running: nothing to resume, exit 0 as before.
    _record(folder, 1, "s2-r0", "done", 0, ["r1"])
    _record(folder, 2, "s2-r0", "running", None, [], started="2999-01-01T00:00:00Z")
    assert main(resume) == 0 and "nothing to resume" in capsys.readouterr().out


def test_a_kubernetes_resume_leaves_out_pending_pods_tasks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    campaign = tmp_path / "campaign.toml"
    campaign.write_text(KUBE_CAMPAIGN.format(destination=tmp_path / "runs"))
    out = tmp_path / "nightly.k8s.json"
    assert main(["submit", str(campaign), "--scheduler", "kubernetes", "--out", str(out)]) == 0
    (tmp_path / "runs").mkdir()  # the claim, mounted here; no pod has written a record yet
    capsys.readouterr()
    assert main(["resume", str(campaign), "--scheduler", "kubernetes", "--out", str(out)]) == 3
    said = capsys.readouterr().out
    assert said.count("\n") == 1 and "have no record yet" in said and "`kubectl get pods`" in said
    assert not list(tmp_path.glob("*.resume*"))


def test_a_resume_dry_run_says_its_submission_number_is_not_reserved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A dry run printed submit commands for a number it did not reserve: a later resume took
    the same number, so the record, log and object names of the two would be the same."""
    _fake_sbatch(tmp_path, monkeypatch)
    campaign, script = _slurm_campaign(tmp_path, 2)
    folder = _submitted(tmp_path, campaign, script)
    _record(folder, 0, "s1-r0", "failed", 1, [])
    capsys.readouterr()
    resume = ["resume", str(campaign), "--scheduler", "slurm", "--out", str(script)]
    assert main([*resume, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "submission 2 is not reserved; a later resume may take the same number" in out
    assert "MIGRATION_RECORD_SUBMISSION=2" in out  # the command shown ...
    assert main(resume) == 0  # ... and the real resume does take 2, as the dry run said it may
    out = capsys.readouterr().out
    assert "submission 2" in out and "not reserved" not in out
    # The help says so too, and names the new option and exit code.
    with pytest.raises(SystemExit):
        main(["resume", "--help"])
    helptext = " ".join(capsys.readouterr().out.split())
    assert "the submission number shown is not reserved" in helptext
    assert "--include-unrecorded" in helptext and "squeue" in helptext and "3 nothing submitted" in helptext


def test_a_kubernetes_resume_leaves_out_tasks_their_job_retries_until_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A task whose last attempt ended with retries left (backoff_limit_per_index) is run again
    by its Job: resume leaves it out, as it does a queued task, and submits it when asked (a
    second review: once the Job was deleted, no resume could bring such a task back)."""
    campaign = tmp_path / "campaign.toml"
    campaign.write_text(
        KUBE_CAMPAIGN.format(destination=tmp_path / "runs").replace(
            'volume_claim = "runs"\n', 'volume_claim = "runs"\nbackoff_limit_per_index = 2\n'
        )
    )
    out = tmp_path / "nightly.k8s.json"
    assert main(["submit", str(campaign), "--scheduler", "kubernetes", "--out", str(out)]) == 0
    planned = json.loads((tmp_path / "nightly.planned.json").read_text())
    assert planned["retries"] == 2
    folder = tmp_path / "runs" / "_campaigns" / planned["campaign_id"]  # as the first pod writes it
    (folder / "tasks").mkdir(parents=True)
    (folder / "planned.json").write_text(json.dumps(planned))
    _record(folder, 0, "s1-r0", "stopped", 143, [])  # the Job retries it (1 of 2) ...
    _record(folder, 1, "s1-r0", "done", 0, ["r1"])
    capsys.readouterr()
    resume = ["resume", str(campaign), "--scheduler", "kubernetes", "--out", str(out)]
    assert main(resume) == 3
    said = capsys.readouterr().out
    assert (
        "nothing submitted: the 1 task(s) left (0) ended with retries left, which their Job runs again itself" in said
    )
    # ... unless the Job is gone: asked, resume submits it.
    assert main([*resume, "--include-unrecorded"]) == 0
    assert "resuming 1 task(s) not done (0), submission 2" in capsys.readouterr().out
