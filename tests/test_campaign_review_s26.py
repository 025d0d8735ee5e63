"""Review fixes: resume and an edited campaign file, ledger files read only as written, sbatch
options that would move the tasks' output, Slurm times sbatch refuses, and standard output
that cannot be written.

sbatch is a script on PATH that records its arguments (tests/test_campaign_ledger_gaps.py);
ledger records are written by hand as the task script writes them (tests/test_campaign_ledger.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import pytest

from campaign.__main__ import main
from reportgen.publish.site import build_site
from tests.test_campaign_ledger import _planned, _record
from tests.test_campaign_ledger_gaps import _submitted

REPO = Path(__file__).resolve().parent.parent


def _one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err, captured.err
    return captured.err


# ---- 1. resume and a campaign file edited since the submission --------------------------------


def _edit(campaign: Path, old: str, new: str) -> None:
    text = campaign.read_text()
    assert old in text
    campaign.write_text(text.replace(old, new, 1))


def test_resume_refuses_a_file_that_plans_more_tasks_than_the_ledger(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: with repeats raised from 1 to 3, resume submitted the one failed task, exit 0, and
    the four tasks the file added never ran."""
    calls, campaign, script, folder = _submitted(tmp_path, monkeypatch)
    _record(folder, 0, "s1-r0", "failed", 3, [])
    _record(folder, 1, "s1-r0", "done", 0, ["r1"])
    calls.unlink()
    _edit(campaign, 'destination = "', 'repeats = 3\ndestination = "')
    capsys.readouterr()
    assert main(["resume", str(campaign), "--scheduler", "slurm", "--out", str(script)]) == 2
    err = _one_line_error(capsys)
    assert "no longer plans the tasks of nightly-" in err
    assert "(the campaign file plans 6 task(s), nightly.planned.json 2)" in err
    assert not calls.exists()
    # Dry or not, the same.
    assert main(["resume", str(campaign), "--scheduler", "slurm", "--out", str(script), "--dry-run"]) == 2
    assert "plans 6 task(s), nightly.planned.json 2" in _one_line_error(capsys)


@pytest.mark.parametrize(
    ("old", "new", "says"),
    [
        (
            '[[environment]]\nname = "small"',
            '[[workload]]\nplan = "/plans/other.toml"\n\n[[environment]]\nname = "small"',
            "the campaign file plans 4 task(s), nightly.planned.json 2",
        ),
        ("/runs", "/elsewhere", "the destination is '"),
        ("cpus = 8", "cpus = 16", "environment large asks the scheduler for other resources"),
    ],
    ids=["another-workload", "another-destination", "done-task-environment"],
)
def test_resume_refuses_an_edited_file_when_every_task_is_done(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], old: str, new: str, says: str
) -> None:
    """Before: with every recorded task done, resume said "nothing to resume" and exited 0 for
    an edited file; the tasks it added never ran, and a nightly job saw success."""
    calls, campaign, script, folder = _submitted(tmp_path, monkeypatch)
    _record(folder, 0, "s1-r0", "done", 0, ["r0"])
    _record(folder, 1, "s1-r0", "done", 0, ["r1"])
    resume = ["resume", str(campaign), "--scheduler", "slurm", "--out", str(script)]
    capsys.readouterr()
    assert main(resume) == 0  # unchanged: nothing to resume
    assert "every task is done or still running; nothing to resume" in capsys.readouterr().out
    _edit(campaign, old, new)
    calls.unlink()
    assert main(resume) == 2
    err = _one_line_error(capsys)
    assert "no longer plans the tasks of nightly-" in err and says in err, err
    assert not calls.exists()


def test_resume_refuses_an_edited_file_when_the_only_tasks_left_have_no_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: exit 3 (only unrecorded tasks left), as for the file as submitted."""
    calls, campaign, script, _folder = _submitted(tmp_path, monkeypatch)
    _edit(campaign, 'destination = "', 'repeats = 2\ndestination = "')
    capsys.readouterr()
    assert main(["resume", str(campaign), "--scheduler", "slurm", "--out", str(script)]) == 2
    assert "plans 4 task(s), nightly.planned.json 2" in _one_line_error(capsys)


# ---- 2. ledger files read only as the campaign writes them ------------------------------------


def _damage_record(text: str) -> Callable[[Path], None]:
    def damage(folder: Path) -> None:
        (folder / "tasks" / "task-0.s1-r0.json").write_text(text)

    return damage


def _damage_planned(edit: Callable[[dict[str, Any]], object]) -> Callable[[Path], None]:
    def damage(folder: Path) -> None:
        planned = json.loads((folder / "planned.json").read_text())
        edit(planned)
        (folder / "planned.json").write_text(json.dumps(planned))

    return damage


def _repeat_planned_key(folder: Path) -> None:
    text = (folder / "planned.json").read_text()
    (folder / "planned.json").write_text(text.replace("{", '{"scheduler": "kubernetes", ', 1))


RECORD = (
    '{"task": 0, "attempt": "s1-r0", "submission": 1, "restart": 0, "state": "%s", "exit_code": 0, '
    '"node": "node-1", "job_id": "42_0", "started": "2026-12-02T00:00:00Z", "ended": "2026-12-02T00:05:00Z", '
    '"runs": [], "log": "task-0.s1-r0.log"%s}\n'
)

# (what is wrong, how to make it so, the file named, what the line says, whether the site reads it too)
DAMAGED = [
    (
        "record-key-twice",
        _damage_record(RECORD % ("done", ', "state": "failed"')),
        "tasks/task-0.s1-r0.json",
        "not a task record (the key 'state' is repeated)",
        True,
    ),
    (
        "record-unknown-state",
        _damage_record(RECORD % ("done\\u001b[31m", "")),
        "tasks/task-0.s1-r0.json",
        "not a task record (state 'done\\x1b[31m' is none of running, done, failed, stopped)",
        True,
    ),
    (
        "no-tasks",
        _damage_planned(lambda p: p.update(tasks=[])),
        "planned.json",
        "not a campaign's planned tasks (no planned task)",
        True,
    ),
    (
        "task-twice",
        _damage_planned(lambda p: p.update(tasks=[*p["tasks"], p["tasks"][0]])),
        "planned.json",
        "not a campaign's planned tasks (task 0 is listed twice)",
        True,
    ),
    (
        "format-2",
        _damage_planned(lambda p: p.update(format=2)),
        "planned.json",
        "not a campaign's planned tasks (format 2, not 1)",
        True,
    ),
    (
        "format-true",
        _damage_planned(lambda p: p.update(format=True)),
        "planned.json",
        "not a campaign's planned tasks (format True, not 1)",
        True,
    ),
    (
        "planned-key-twice",
        _repeat_planned_key,
        "planned.json",
        "not a campaign's planned tasks (the key 'scheduler' is repeated)",
        True,
    ),
]


@pytest.mark.parametrize(("damage", "name", "says", "site"), [d[1:] for d in DAMAGED], ids=[d[0] for d in DAMAGED])
def test_status_refuses_a_ledger_file_the_campaign_never_writes(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    damage: Callable[[Path], None],
    name: str,
    says: str,
    site: bool,
) -> None:
    """Before: a repeated key was read as its last value, an unknown state as failed ("exited
    0"), an empty task list as a finished campaign of 0 tasks (exit 0), a task listed twice was
    counted twice, and any format was read."""
    folder = _planned(tmp_path / "runs", 2)
    _record(folder, 0, "s1-r0", "done", 0, ["r0"])
    damage(folder)
    capsys.readouterr()
    assert main(["status", str(folder)]) == 2
    assert f"campaign: {folder}/{name}: {says}" in _one_line_error(capsys)
    if site:  # the site reads the ledger with the same reader: it skips it, naming the file
        result = build_site([tmp_path / "runs"], tmp_path / "site")
        assert any(f"{name}: {says}" in line for line in result.rejected), result.rejected


def test_a_submission_record_with_a_repeated_key_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls, campaign, script, folder = _submitted(tmp_path, monkeypatch)
    _record(folder, 0, "s1-r0", "failed", 3, [])
    submission = tmp_path / "nightly.submission"
    submission.write_text(submission.read_text().replace("{", '{"campaign_id": "other", ', 1))
    calls.unlink()
    capsys.readouterr()
    assert main(["resume", str(campaign), "--scheduler", "slurm", "--out", str(script)]) == 2
    assert "not a record of a campaign's submissions (the key 'campaign_id' is repeated)" in _one_line_error(capsys)
    assert not calls.exists()


# ---- 3. sbatch options and times sbatch would take otherwise, or refuse -------------------------

CAMPAIGN = """\
[campaign]
name = "nightly"
destination = "s3://fleet-runs/nightly"

[[workload]]
plan = "/plans/tiny.toml"

[[environment]]
name = "cpu"
target = "cpu"
python = "/usr/bin/python3"
{environment}
[slurm]
time = "{time}"
{slurm}
"""


def _listed(tmp_path: Path, environment: str = "", slurm: str = "", time: str = "02:00:00") -> int:
    path = tmp_path / "campaign.toml"
    path.write_text(CAMPAIGN.format(environment=environment, slurm=slurm, time=time))
    return main(["submit", str(path), "--scheduler", "slurm", "--list"])


def test_sbatch_options_that_move_the_tasks_output_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: an --output or --error in an sbatch list was taken, and overrode the wrapper's
    own, so the task output was not where submit said it goes."""
    for option in ("--output=/tmp/x.log", "--error=/tmp/e.log", "--ou=/tmp/x.log", "--er=/tmp/e.log", "--output"):
        for where, table in (("environment[0].sbatch", "environment"), ("slurm.sbatch", "slurm")):
            assert _listed(tmp_path, **{table: f'sbatch = ["{option}"]'}) == 2, (option, where)
            err = _one_line_error(capsys)
            assert f"{where}: '{option}': the campaign sets sbatch's --output itself" in err, err
    for option in (
        "--exclude=node-1",
        "--exclusive",
        "--open-mode=append",
        "--overcommit",
        "--requeue",
        "--time-min=10",
    ):
        assert _listed(tmp_path, environment=f'sbatch = ["{option}"]') == 0, option
        capsys.readouterr()


def test_sbatch_options_the_ledger_relies_on_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A review: sbatch = ["--time=3-00:00:00"] ran tasks for three days while planned.json's
    deadline said one hour, so status called a running task lost and resume would submit it
    again; --signal=B:USR1@60 killed the task script with its record left 'running';
    --no-requeue and --open-mode=truncate broke what the ledger and the docs promise."""
    for option, taken in (
        ("--time=3-00:00:00", "--time"),
        ("--ti=30", "--time"),
        ("--signal=B:USR1@60", "--signal"),
        ("--no-requeue", "--no-requeue"),
        ("--open-mode=truncate", "--open-mode"),
    ):
        for where, table in (("environment[0].sbatch", "environment"), ("slurm.sbatch", "slurm")):
            assert _listed(tmp_path, **{table: f'sbatch = ["{option}"]'}) == 2, (option, where)
            err = _one_line_error(capsys)
            assert f"{where}: '{option}': the campaign sets sbatch's {taken} itself (" in err, err


def test_a_slurm_time_with_sixty_minutes_or_seconds_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: "99999:99:99" was taken, and every sbatch call refused it."""
    for time in ("99999:99:99", "10:60", "02:60:00", "02:00:60", "1-00:60", "1-00:00:60"):
        assert _listed(tmp_path, time=time) == 2, time
        err = _one_line_error(capsys)
        assert f"slurm.time: minutes and seconds after a ':' run from 00 to 59, got '{time}'" in err, err
    for time in ("600", "90:30", "1-23", "99:59:59", "1-00:59", "1-00:59:59"):  # each form sbatch takes
        assert _listed(tmp_path, time=time) == 0, time
        capsys.readouterr()


# ---- 4. standard output that cannot be written ---------------------------------------------------


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
def test_output_to_a_full_disk_is_one_line_and_exit_1(tmp_path: Path) -> None:
    """Before: `status ... > /dev/full` printed a traceback (OSError, errno 28)."""
    folder = _planned(tmp_path / "runs", 2)
    campaign = tmp_path / "campaign.toml"
    campaign.write_text(CAMPAIGN.format(environment="", slurm="", time="02:00:00"))
    with open("/dev/full", "w") as full:
        for args in (
            ["status", str(folder)],
            ["status", str(folder), "--format", "json"],
            ["submit", str(campaign), "--scheduler", "slurm", "--list"],
            # A review: argparse drops a help text it cannot write and exits 0.
            ["--help"],
            ["status", "--help"],
            ["submit", "--help"],
        ):
            done = subprocess.run(
                [sys.executable, "-m", "campaign", *args],
                stdout=full,
                stderr=subprocess.PIPE,
                text=True,
                cwd=REPO,
                timeout=120,
                check=False,
            )
            assert (done.returncode, done.stderr) == (
                1,
                "campaign: cannot write to standard output: No space left on device\n",
            ), args
