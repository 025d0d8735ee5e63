"""What the ledger did not know about its own submissions.

A task writes its first record only when it starts, so the destination's ledger cannot tell a
task waiting in the queue from one the scheduler never accepted. NAME.submission, beside
NAME.planned.json, records each submission: the tasks it asked for, the job that took each, and
the ones sbatch refused. Before, it held only the last submission number, and:

- a second `resume` submitted again a task the first had resubmitted and that was still queued
  (its only record was the failed attempt before);
- a second `submit` with the same --out replaced NAME.tasks, so the first campaign's queued
  tasks refused to run and wrote no record;
- a campaign over environments submitted apart, one refused by sbatch and one accepted, left
  the refused environment's tasks looking queued: `status` said "no record yet", `resume` left
  them out, and `submit` exited 0.

sbatch is a script on PATH that records its arguments (as in test_campaign_ledger.py).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from campaign import slurm as slurm_module
from campaign.__main__ import main
from tests.test_campaign_ledger import _record

CAMPAIGN = """\
[campaign]
name = "nightly"
destination = "{destination}"

[[workload]]
plan = "/plans/tiny.toml"

[[environment]]
name = "small"
target = "cpu"
python = "/usr/bin/python3"
cpus = 4

[[environment]]
name = "large"
target = "cpu"
python = "/usr/bin/python3"
cpus = 8
"""


def _sbatch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, refuse: str = "") -> Path:
    """An sbatch on PATH that records its arguments in TMP/sbatch-calls and answers job 4300,
    or refuses a call whose arguments hold ``refuse`` with one line on stderr, exit 1."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    calls = tmp_path / "sbatch-calls"
    refusal = (
        f'[[ "$*" == *{refuse}* ]] && {{ echo "sbatch: error: invalid partition" >&2; exit 1; }}\n' if refuse else ""
    )
    (bin_dir / "sbatch").write_text(f'#!/bin/bash\necho "$@" >> {calls}\n{refusal}echo 4300\n')
    (bin_dir / "sbatch").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    return calls


def _campaign(tmp_path: Path) -> tuple[Path, Path]:
    """Two environments with other resources (submitted apart): task 0 small, task 1 large."""
    campaign = tmp_path / "campaign.toml"
    campaign.write_text(CAMPAIGN.format(destination=tmp_path / "runs"))
    return campaign, tmp_path / "nightly.sbatch"


def _ledger_folder(tmp_path: Path) -> Path:
    planned = json.loads((tmp_path / "nightly.planned.json").read_text())
    folder = tmp_path / "runs" / "_campaigns" / planned["campaign_id"]
    (folder / "tasks").mkdir(exist_ok=True)
    return folder


def _status(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[int, dict[str, object]]:
    capsys.readouterr()
    assert main(["status", str(tmp_path / "nightly.planned.json"), "--format", "json"]) == 1
    return {task["task"]: task for task in json.loads(capsys.readouterr().out)["tasks"]}


# ---- 1. a resubmitted task still queued ---------------------------------------------------------


def test_a_second_resume_leaves_out_a_task_the_first_resubmitted_that_has_no_record_yet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls = _sbatch(tmp_path, monkeypatch)
    campaign, script = _campaign(tmp_path)
    assert main(["submit", str(campaign), "--scheduler", "slurm", "--out", str(script)]) == 0
    folder = _ledger_folder(tmp_path)
    _record(folder, 0, "s1-r0", "failed", 3, [])
    _record(folder, 1, "s1-r0", "done", 0, ["r1"])
    resume = ["resume", str(campaign), "--scheduler", "slurm", "--out", str(script)]
    calls.unlink()
    assert main(resume) == 0
    assert "resuming 1 task(s) not done (0), submission 2" in capsys.readouterr().out
    assert "--array=0 " in calls.read_text()
    # Task 0 is queued as submission 2: its only record is still the failed one of submission 1.
    calls.unlink()
    assert main(resume) == 3
    said = capsys.readouterr().out
    assert said.count("\n") == 1 and "nothing submitted: the 1 task(s) left (0) have no record yet" in said
    assert "task 0 was resubmitted as submission 2 at 20" in said and "(job 4300)" in said
    assert "--include-unrecorded" in said and not calls.exists()
    # status says the same, the failed attempt of submission 1 still listed.
    task = _status(tmp_path, capsys)[0]
    assert task["state"] == "planned" and len(task["attempts"]) == 1  # type: ignore[arg-type]
    assert "resubmitted as submission 2 at 20" in str(task["reason"]) and "no record yet" in str(task["reason"])
    # Asked, it is submitted again; once submission 3 has written a failed record, resume takes
    # it without being asked.
    assert main([*resume, "--include-unrecorded"]) == 0
    assert "resuming 1 task(s) not done (0), submission 3" in capsys.readouterr().out
    _record(folder, 0, "s3-r0", "failed", 3, [])
    assert main(resume) == 0
    assert "resuming 1 task(s) not done (0), submission 4" in capsys.readouterr().out


# ---- 2. a second submit of the same campaign beside the first -----------------------------------


def test_a_second_submit_beside_a_submitted_campaign_is_refused_and_replaces_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls = _sbatch(tmp_path, monkeypatch)
    campaign, script = _campaign(tmp_path)
    # A dry run first, then the real submit: the dry run's files are replaced, as before.
    assert main(["submit", str(campaign), "--scheduler", "slurm", "--dry-run", "--out", str(script)]) == 0
    assert main(["submit", str(campaign), "--scheduler", "slurm", "--out", str(script)]) == 0
    first_id = json.loads((tmp_path / "nightly.planned.json").read_text())["campaign_id"]
    written = {path.name: path.read_bytes() for path in tmp_path.glob("nightly.*")}
    calls.unlink()
    capsys.readouterr()
    for scheduler, dry in [("slurm", []), ("slurm", ["--dry-run"]), ("kubernetes", [])]:
        code = main(["submit", str(campaign), "--scheduler", scheduler, *dry, "--out", str(script)])
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
        assert f"campaign {first_id} was submitted from these files (job 4300)" in err
        assert "python -m campaign resume" in err and "another --out" in err
        assert {path.name: path.read_bytes() for path in tmp_path.glob("nightly.*")} == written
    assert not calls.exists()
    assert [p.name for p in (tmp_path / "runs" / "_campaigns").iterdir()] == [first_id]


# ---- 3. one environment's sbatch refused, another's accepted ------------------------------------


@pytest.mark.parametrize("refused", ["small", "large"])
def test_tasks_sbatch_refused_are_recorded_never_submitted_and_resume_submits_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], refused: str
) -> None:
    """Whichever environment's call is refused (the first or the second), the other's tasks are
    submitted, and the refused ones are known never submitted."""
    cpus = "4" if refused == "small" else "8"
    calls = _sbatch(tmp_path, monkeypatch, refuse=f"--cpus-per-task={cpus}")
    campaign, script = _campaign(tmp_path)
    index = 0 if refused == "small" else 1
    assert main(["submit", str(campaign), "--scheduler", "slurm", "--out", str(script)]) == 1
    captured = capsys.readouterr()
    assert "invalid partition" in captured.err
    assert "1 of 2 task(s) not submitted" in captured.err and "python -m campaign resume" in captured.err
    assert len(calls.read_text().splitlines()) == 2  # both environments were tried
    assert (_ledger_folder(tmp_path) / "planned.json").is_file()  # the accepted tasks write it
    tasks = _status(tmp_path, capsys)
    assert tasks[index]["state"] == "unsubmitted"
    assert "never submitted" in str(tasks[index]["reason"]) and "invalid partition" in str(tasks[index]["reason"])
    assert tasks[1 - index]["state"] == "planned"
    assert main(["status", str(tmp_path / "nightly.planned.json")]) == 1
    text = capsys.readouterr().out
    assert "1 never submitted (sbatch refused them)" in text
    # resume submits the refused task (no --include-unrecorded needed), and not the queued one.
    _sbatch(tmp_path, monkeypatch)
    calls.unlink()
    assert main(["resume", str(campaign), "--scheduler", "slurm", "--out", str(script)]) == 0
    assert f"resuming 1 task(s) not done ({index}), submission 2" in capsys.readouterr().out
    assert f"--array={index} " in calls.read_text()
    assert _status(tmp_path, capsys)[index]["state"] == "planned"  # queued now, not refused


# ---- NAME.submission itself -----------------------------------------------------------------


def test_a_submission_file_that_is_not_one_is_a_one_line_error_and_an_older_one_gives_its_number(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls = _sbatch(tmp_path, monkeypatch)
    campaign, script = _campaign(tmp_path)
    assert main(["submit", str(campaign), "--scheduler", "slurm", "--out", str(script)]) == 0
    folder = _ledger_folder(tmp_path)
    _record(folder, 0, "s1-r0", "failed", 3, [])
    resume = ["resume", str(campaign), "--scheduler", "slurm", "--out", str(script)]
    kept = tmp_path / "nightly.submission"
    # Damaged: said in one line (exit 2), nothing submitted; a record of it would be lost.
    kept.write_text('{"campaign_id": "' + folder.name + '", "submissions": [{"submission": "two"}]}\n')
    calls.unlink()
    capsys.readouterr()
    assert main(resume) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{kept}: not a record of a campaign's submissions" in err
    assert not calls.exists()
    # An older version's file (the id and the last number alone) still gives the next number.
    kept.write_text(f"{folder.name} 6\n")
    assert main(resume) == 0
    assert "resuming 1 task(s) not done (0), submission 7" in capsys.readouterr().out


def test_an_environment_that_asks_slurm_for_no_cpus_is_warned_about(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Slurm gives a task that asks for no CPUs the cluster's default, often one: its reference,
    compiles and timed calls shared it, and only a later comparison named the CPU difference.
    An environment with devices is not given a whole node, so cpus is its only CPU request."""
    _sbatch(tmp_path, monkeypatch)
    campaign, out = _campaign(tmp_path)
    text = campaign.read_text().replace("cpus = 4\n", "devices = 1\n").replace("cpus = 8\n", "devices = 1\ncpus = 8\n")
    campaign.write_text(text.replace('target = "cpu"', 'target = "cuda"'))
    assert main(["submit", str(campaign), "--scheduler", "slurm", "--out", str(out), "--dry-run"]) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if "asks for no CPUs" in line]
    assert warnings == [
        "campaign: warning: environment small asks for no CPUs (no cpus, no whole node): Slurm gives each task the "
        "cluster's default, often 1 CPU, for the reference, the compiles and the timed calls; set cpus"
    ]
    campaign.write_text(
        text.replace('target = "cpu"', 'target = "cuda"').replace("devices = 1\n", "devices = 1\ncpus = 2\n", 1)
    )
    assert main(["submit", str(campaign), "--scheduler", "slurm", "--out", str(out), "--dry-run"]) == 0
    assert "asks for no CPUs" not in capsys.readouterr().err


def test_a_resume_that_plans_otherwise_says_what_differs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Resumed from another checkout, a relative plan path names another file, and the refusal
    said only that "the campaign file no longer plans the tasks", though the file was unchanged."""
    _sbatch(tmp_path, monkeypatch)
    campaign, script = _campaign(tmp_path)
    campaign.write_text(campaign.read_text().replace('plan = "/plans/tiny.toml"', 'plan = "plans/tiny.toml"'))
    monkeypatch.setattr(slurm_module, "collector_root", lambda _campaign: "/checkouts/a")
    assert main(["submit", str(campaign), "--scheduler", "slurm", "--out", str(script)]) == 0
    _record(_ledger_folder(tmp_path), 0, "s1-r0", "failed", 3, [])
    resume = ["resume", str(campaign), "--scheduler", "slurm", "--out", str(script)]
    monkeypatch.setattr(slurm_module, "collector_root", lambda _campaign: "/checkouts/b")
    capsys.readouterr()
    assert main(resume) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no longer plans the tasks of nightly-" in err
    assert "(task 0's plan is '/checkouts/b/plans/tiny.toml' here, '/checkouts/a/plans/tiny.toml' in the ledger" in err
    assert "another checkout than /checkouts/b?" in err
    monkeypatch.setattr(slurm_module, "collector_root", lambda _campaign: "/checkouts/a")
    campaign.write_text(campaign.read_text().replace("cpus = 4", "cpus = 6"))
    assert main(resume) == 2
    assert "(environment small asks the scheduler for other resources or another image)" in capsys.readouterr().err
