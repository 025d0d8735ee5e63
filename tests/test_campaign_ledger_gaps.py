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


def _sbatch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, refuse: str = "", message: str = "invalid partition"
) -> Path:
    """An sbatch on PATH that records its arguments in TMP/sbatch-calls and answers job 4300,
    or refuses a call whose arguments hold ``refuse`` with one line on stderr
    ("sbatch: error: MESSAGE"), exit 1."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    calls = tmp_path / "sbatch-calls"
    refusal = f'[[ "$*" == *{refuse}* ]] && {{ echo "sbatch: error: {message}" >&2; exit 1; }}\n' if refuse else ""
    (bin_dir / "sbatch").write_text(f'#!/bin/bash\necho "$@" >> {calls}\n{refusal}echo 4300\n')
    (bin_dir / "sbatch").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    return calls


def _campaign(tmp_path: Path) -> tuple[Path, Path]:
    """Two environments with other resources (submitted apart): task 0 small, task 1 large."""
    campaign = tmp_path / "campaign.toml"
    campaign.write_text(CAMPAIGN.format(destination=tmp_path / "runs"))
    return campaign, tmp_path / "nightly.sbatch"


def _submitted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Path, Path]:
    """The two-environment campaign submitted (sbatch accepting): the recorded sbatch calls, the
    campaign file, its script and its ledger folder at the destination."""
    calls = _sbatch(tmp_path, monkeypatch)
    campaign, script = _campaign(tmp_path)
    assert main(["submit", str(campaign), "--scheduler", "slurm", "--out", str(script)]) == 0
    return calls, campaign, script, _ledger_folder(tmp_path)


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
    calls, campaign, script, folder = _submitted(tmp_path, monkeypatch)
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
        assert "python -m campaign resume" in err and "submit into another folder or with another campaign name" in err
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
    assert str(tasks[index]["reason"]).startswith("not submitted: sbatch refused submission 1 at 20")
    assert str(tasks[index]["reason"]).endswith(": sbatch failed (1): sbatch: error: invalid partition")
    assert tasks[1 - index]["state"] == "planned"
    assert main(["status", str(tmp_path / "nightly.planned.json")]) == 1
    text = capsys.readouterr().out
    assert "1 not submitted (sbatch refused them)" in text
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
    calls, campaign, script, folder = _submitted(tmp_path, monkeypatch)
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
    assert "move it away to submit or resume here" in err
    assert not calls.exists()
    # status warns in one line naming the file and shows the ledger without it.
    assert main(["status", str(tmp_path / "nightly.planned.json")]) == 1
    captured = capsys.readouterr()
    assert captured.err == (
        f"campaign: warning: {kept}: not a record of a campaign's submissions (no key 'tasks'); status shows the "
        "ledger without it\n"
    )
    assert "   0  failed   tiny/small/r1  attempt s1-r0 exited 3" in captured.out
    # A job or a time that is not text is no record this command wrote either.
    for field, value in (("time", "7"), ("job", "[1]")):
        entry = {"submission": 1, "time": "2026-12-06T00:00:00Z", "tasks": [0], "refused": []}
        entry["jobs"] = [{"job": "4300", "tasks": [0]}]
        raw = json.dumps({"campaign_id": folder.name, "submissions": [entry]})
        kept.write_text(
            raw.replace('"2026-12-06T00:00:00Z"', value) if field == "time" else raw.replace('"4300"', value)
        )
        assert main(resume) == 2
        assert f"({field} is not text)" in capsys.readouterr().err
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


# ---- review: a Kubernetes resume, a submit sbatch refused whole, the script a campaign was submitted with


def test_a_kubernetes_resume_reserves_its_number_but_leaves_its_tasks_resumable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Kubernetes resume only writes a manifest and prints the kubectl command. It recorded its
    tasks as submitted: status then showed the failed task as resubmitted and queued, and a second
    resume submitted nothing (exit 3), though nothing had been created."""
    from tests.test_campaign_ledger import KUBE_CAMPAIGN

    campaign = tmp_path / "campaign.toml"
    campaign.write_text(KUBE_CAMPAIGN.format(destination=tmp_path / "runs"))
    out = tmp_path / "nightly.k8s.json"
    assert main(["submit", str(campaign), "--scheduler", "kubernetes", "--out", str(out)]) == 0
    planned = json.loads((tmp_path / "nightly.planned.json").read_text())
    folder = tmp_path / "runs" / "_campaigns" / planned["campaign_id"]
    (folder / "tasks").mkdir(parents=True)  # the claim, mounted here, as the first pod left it
    (folder / "planned.json").write_text(json.dumps(planned))
    _record(folder, 0, "s1-r0", "failed", 3, [])
    resume = ["resume", str(campaign), "--scheduler", "kubernetes", "--out", str(out)]
    capsys.readouterr()
    assert main(resume) == 0
    said = capsys.readouterr().out
    assert "resuming 1 task(s) not done (0), submission 2" in said
    assert "records submission 2 as written, not created" in said
    recorded = json.loads((tmp_path / "nightly.submission").read_text())
    assert recorded["scheduler"] == "kubernetes" and recorded["wrapper"] == str(out)
    # The submit's manifest is recorded as written too (submission 1, every task).
    assert [(s["submission"], s["tasks"], s.get("printed")) for s in recorded["submissions"]] == [
        (1, [0, 1], True),
        (2, [0], True),
    ]
    task = _status(tmp_path, capsys)[0]
    assert task["state"] == "failed" and task["reason"] == "attempt s1-r0 exited 3"
    # Still resumable, as the next number: 2 stays the first manifest's.
    assert main(resume) == 0
    assert "resuming 1 task(s) not done (0), submission 3" in capsys.readouterr().out
    assert sorted(p.name for p in tmp_path.glob("*.resume*")) == [
        "nightly.k8s.resume2.json",
        "nightly.k8s.resume3.json",
    ]


@pytest.mark.parametrize("destination_there", [False, True])
def test_a_submit_sbatch_refused_whole_records_nothing_and_is_submitted_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], destination_there: bool
) -> None:
    """sbatch refused every call: submit removed the ledger it wrote but recorded the tasks as
    refused, so status called the removed destination not mounted, or (the destination there)
    resume submitted the tasks of a campaign whose planned.json was gone."""
    calls = _sbatch(tmp_path, monkeypatch, refuse="sbatch")
    campaign, script = _campaign(tmp_path)
    if destination_there:
        (tmp_path / "runs").mkdir()
    submit = ["submit", str(campaign), "--scheduler", "slurm", "--out", str(script)]
    capsys.readouterr()
    assert main(submit) == 1
    err = capsys.readouterr().err
    assert "campaign: nothing submitted (sbatch refused every call): submit again once the cause is fixed" in err
    assert "task(s) not submitted" not in err
    assert not (tmp_path / "nightly.submission").exists()
    assert (
        not list((tmp_path / "runs").rglob("planned.json")) if destination_there else not (tmp_path / "runs").exists()
    )
    # Nothing says the campaign was submitted: resume submits none of it; submit again does.
    _sbatch(tmp_path, monkeypatch)
    calls.unlink()
    code = main(["resume", str(campaign), "--scheduler", "slurm", "--out", str(script)])
    assert code == 3 and not calls.exists()  # never submitted: nothing to resume, with or without the folder
    assert main(submit) == 0
    assert len(calls.read_text().splitlines()) == 2


def test_sbatch_timed_out_may_have_queued_the_tasks_so_they_are_not_resubmitted_unasked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """sbatch can exit non-zero after the controller queued the job: such tasks were recorded as
    never submitted, and resume would have run them twice."""
    timeout = "Batch job submission failed: Socket timed out on send/recv operation"
    calls = _sbatch(tmp_path, monkeypatch, refuse="sbatch", message=timeout)
    campaign, script = _campaign(tmp_path)
    capsys.readouterr()
    assert main(["submit", str(campaign), "--scheduler", "slurm", "--out", str(script)]) == 1
    err = capsys.readouterr().err
    assert "campaign: 2 of 2 task(s) may be queued though sbatch failed (it timed out or was stopped)" in err
    assert "not submitted" not in err and "nothing submitted" not in err
    assert (_ledger_folder(tmp_path) / "planned.json").is_file()  # the ledger stays
    for task in _status(tmp_path, capsys).values():
        assert task["state"] == "planned"
        assert str(task["reason"]).startswith("sbatch failed on submission 1 at 20")
        assert str(task["reason"]).endswith(
            f"but may have queued it (sbatch failed (1): sbatch: error: {timeout}); no record yet: queued, or never started"
        )
    resume = ["resume", str(campaign), "--scheduler", "slurm", "--out", str(script)]
    _sbatch(tmp_path, monkeypatch)
    calls.unlink()
    assert main(resume) == 3
    said = capsys.readouterr().out
    assert "(submission 1 at 20" in said and "of tasks 0, 1 may be queued (sbatch timed out or was stopped)" in said
    assert "submission submission" not in said
    assert not calls.exists()
    # A second submit over these files is refused: the timed-out tasks may be reading them.
    tasks = (tmp_path / "nightly.tasks").read_bytes()
    assert main(["submit", str(campaign), "--scheduler", "slurm", "--out", str(script)]) == 2
    assert (
        "job unknown: sbatch timed out or was stopped on submission 1, and may have queued it"
        in capsys.readouterr().err
    )
    assert (tmp_path / "nightly.tasks").read_bytes() == tasks and not calls.exists()
    assert main([*resume, "--include-unrecorded"]) == 0
    assert len(calls.read_text().splitlines()) == 2


def test_a_second_submit_names_the_script_and_scheduler_the_campaign_was_submitted_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The refusal suggested resuming with the new --out (no such script: sbatch refused it and
    the task read as unsubmitted) and the scheduler given, and "another --out", which in the same
    folder is refused again (the files are named after the campaign)."""
    calls = _sbatch(tmp_path, monkeypatch)
    campaign, script = _campaign(tmp_path)
    assert main(["submit", str(campaign), "--scheduler", "slurm", "--out", str(script)]) == 0
    recorded = json.loads((tmp_path / "nightly.submission").read_text())
    assert recorded["scheduler"] == "slurm" and recorded["wrapper"] == str(script)
    _record(_ledger_folder(tmp_path), 0, "s1-r0", "failed", 3, [])
    other = tmp_path / "second.sbatch"
    calls.unlink()
    capsys.readouterr()
    for scheduler in ("slurm", "kubernetes"):
        assert main(["submit", str(campaign), "--scheduler", scheduler, "--out", str(other)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1
        assert f"resume {campaign} --scheduler slurm --out {script}`" in err
        assert "submit into another folder or with another campaign name" in err and "another --out" not in err
    # A resume with that --out is refused in one line naming the script; nothing is recorded.
    before = (tmp_path / "nightly.submission").read_text()
    assert main(["resume", str(campaign), "--scheduler", "slurm", "--out", str(other)]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"campaign: {other}: not a file, so sbatch cannot resubmit campaign {recorded['campaign_id']} from it; it "
        f"was submitted with {script}: resume with --out {script}\n"
    )
    # A script there that is not the campaign's (a dry run's, say) is refused too.
    other.write_text("#!/bin/bash\n")
    assert main(["resume", str(campaign), "--scheduler", "slurm", "--out", str(other)]) == 2
    assert (
        f"{other}: not the script campaign {recorded['campaign_id']} was submitted with; resume with --out {script}"
        in capsys.readouterr().err
    )
    assert not calls.exists() and (tmp_path / "nightly.submission").read_text() == before
    assert _status(tmp_path, capsys)[0]["state"] == "failed"
    assert main(["resume", str(campaign), "--scheduler", "slurm", "--out", str(script)]) == 0
    assert f"--array=0 --exclusive --cpus-per-task=4 {script}" in calls.read_text()


def test_an_older_versions_submission_file_says_the_campaign_was_accepted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An earlier version wrote NAME.submission (`<id> <number>`) only from resume, so that
    campaign was accepted: a second submit replaced its files. The refusal names the scheduler
    it was submitted to, not the one given."""
    calls, campaign, script, folder = _submitted(tmp_path, monkeypatch)
    (tmp_path / "nightly.submission").write_text(f"{folder.name} 2\n")
    written = {path.name: path.read_bytes() for path in tmp_path.glob("nightly.*")}
    calls.unlink()
    capsys.readouterr()
    for scheduler in ("slurm", "kubernetes"):
        assert main(["submit", str(campaign), "--scheduler", scheduler, "--out", str(script)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1
        assert (
            f"campaign {folder.name} was submitted from these files (job unknown: an earlier version's resume recorded submission 2)"
            in err
        )
        assert f"resume {campaign} --scheduler slurm --out {script}`" in err
    assert {path.name: path.read_bytes() for path in tmp_path.glob("nightly.*")} == written
    assert not calls.exists() and [p.name for p in (tmp_path / "runs" / "_campaigns").iterdir()] == [folder.name]
    # resume reads it, and keeps it counted as accepted when it writes the file anew.
    _record(folder, 0, "s1-r0", "failed", 3, [])
    assert main(["resume", str(campaign), "--scheduler", "slurm", "--out", str(script)]) == 0
    assert "submission 3" in capsys.readouterr().out
    assert json.loads((tmp_path / "nightly.submission").read_text())["earlier_version_submission"] == 2


def test_campaign_level_sbatch_cpu_options_and_mincpus_ask_for_cpus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The campaign's [slurm] sbatch options are the script's header, which every submission
    reads, and --mincpus asks for CPUs too: neither was seen, and the warning was wrong."""
    _sbatch(tmp_path, monkeypatch)
    campaign, out = _campaign(tmp_path)
    text = campaign.read_text().replace('target = "cpu"', 'target = "cuda"').replace("cpus = 4\n", "devices = 1\n")
    text = text.replace("cpus = 8\n", 'devices = 1\nsbatch = ["--mincpus=8"]\n')
    dry = ["submit", str(campaign), "--scheduler", "slurm", "--out", str(out), "--dry-run"]
    campaign.write_text(text)
    assert main(dry) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if "asks for no CPUs" in line]
    assert len(warnings) == 1 and "environment small asks for no CPUs" in warnings[0]
    campaign.write_text(text.replace("[[workload]]", '[slurm]\nsbatch = ["--cpus-per-task=16"]\n\n[[workload]]'))
    assert main(dry) == 0
    assert "#SBATCH --cpus-per-task=16" in out.read_text()
    assert "asks for no CPUs" not in capsys.readouterr().err


def test_ctrl_c_while_sbatch_runs_is_one_line_and_records_that_it_may_have_queued_the_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C while sbatch waited on a slow controller gave a traceback and no NAME.submission: a
    later submit took a new campaign id, though the job may have been queued. Now: one line,
    exit 130, no further sbatch, and the tasks recorded as ones that may be queued."""
    import campaign.slurm as slurm_module

    calls = _sbatch(tmp_path, monkeypatch)
    campaign, script = _campaign(tmp_path)
    ran: list[list[str]] = []

    def interrupted(args: list[str], **kwargs: object) -> object:
        ran.append(args)
        raise KeyboardInterrupt

    monkeypatch.setattr(slurm_module.subprocess, "run", interrupted)
    capsys.readouterr()
    assert main(["submit", str(campaign), "--scheduler", "slurm", "--out", str(script)]) == 130
    err = capsys.readouterr().err
    assert "Traceback" not in err and "interrupted (Ctrl-C) while sbatch ran" in err
    assert len(ran) == 1, "no further sbatch after Ctrl-C"
    assert not calls.exists()
    recorded = json.loads((tmp_path / "nightly.submission").read_text())
    reasons = {tuple(item["tasks"]): item["reason"] for sub in recorded["submissions"] for item in sub["refused"]}
    # The group sbatch was running for may be queued; the group never given to it is not.
    assert len(reasons) == 2, recorded
    asked, never = sorted(reasons, key=lambda tasks: "may have queued" not in reasons[tasks])
    assert "may have queued the job" in reasons[asked] and "before sbatch ran" in reasons[never], reasons
    assert "1 of 2 task(s) may be queued though sbatch failed (it timed out or was stopped)" in err
    assert "1 of 2 task(s) not submitted" in err
    # resume sends the group never given to sbatch, and it alone.
    monkeypatch.undo()
    calls = _sbatch(tmp_path, monkeypatch)
    assert main(["resume", str(campaign), "--scheduler", "slurm", "--out", str(script)]) == 0
    assert len(calls.read_text().splitlines()) == 1
    # Anywhere else, Ctrl-C is one line and 130 too.
    capsys.readouterr()
    monkeypatch.setattr("campaign.__main__._main", lambda argv: (_ for _ in ()).throw(KeyboardInterrupt))
    assert main(["status", str(campaign)]) == 130
    assert capsys.readouterr().err == "campaign: interrupted\n"
