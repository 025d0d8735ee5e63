"""Campaign submission, as a careless user and a slow cluster meet it (a review of campaigns):

* two environments whose names differ past the part a long campaign name left them got one
  Kubernetes Job name, and `kubectl create` would refuse the second Job: its tasks never run;
* an sbatch that never answered kept `submit` waiting forever, and a submit stopped then left
  its ledger with nothing to say it may be queued, so a second submit was let through;
* a second Kubernetes `submit` with the same --out replaced the first campaign's planned file,
  which resume and status read, though its Jobs may have been created.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from campaign import kubernetes, slurm
from campaign.__main__ import main
from campaign.spec import CampaignError, load_campaign
from campaign.submissions import read_submissions
from tests.test_campaign_review_fixes import fake_sbatch, write_campaign

LONG = "a" * 63  # the longest campaign name (a Kubernetes label value)


def _two_environments(tmp_path: Path, first: str, second: str) -> Path:
    path = write_campaign(tmp_path, destination="s3://fleet-runs/n")
    text = path.read_text(encoding="utf-8").replace('name = "loc"', f'name = "{LONG}"')
    environment = text[text.index("[[environment]]") : text.index("[slurm]")]
    text = text.replace(environment, environment.replace("cpu-env", first) + environment.replace("cpu-env", second))
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("submission", [1, 2, 12])
def test_environments_told_apart_late_in_their_names_get_jobs_of_their_own(tmp_path: Path, submission: int) -> None:
    campaign = load_campaign(_two_environments(tmp_path, "x" * 30 + "1", "x" * 30 + "2"))
    document = kubernetes.manifest(campaign, f"{LONG}-20261206T211223Z-cbcb4e", {"tasks": []}, submission=submission)
    names = [item["metadata"]["name"] for item in document["items"] if item["kind"] == "Job"]
    assert len(names) == 2 and len(set(names)) == 2, names
    assert all(len(name) <= 62 for name in names)  # a pod name '<job>-0' stays a DNS label
    assert names[0].endswith(("x1-t211223z-cbcb4e", f"x1-t211223z-cbcb4e-s{submission}"))


def test_environments_cut_for_a_long_resume_end_in_a_digest_of_their_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Environments of 40 characters that differ only in the last, in Jobs of 101 tasks resumed a
    tenth time (the pod index and the submission mark leave 39 characters): a second review found
    the resume refused, with advice (rename one) that would make resume refuse the changed plan."""
    path = _two_environments(tmp_path, "y" * 39 + "1", "y" * 39 + "2")
    path.write_text(path.read_text(encoding="utf-8").replace("repeats = 1", "repeats = 101"), encoding="utf-8")
    campaign = load_campaign(path)
    document = kubernetes.manifest(campaign, f"{LONG}-20261206T211223Z-cbcb4e", {"tasks": []}, submission=10)
    names = [item["metadata"]["name"] for item in document["items"] if item["kind"] == "Job"]
    assert len(set(names)) == 2 and all(len(name) <= 59 for name in names), names
    assert all(name.startswith("y" * 32 + "-") and name.endswith("-t211223z-cbcb4e-s10") for name in names)
    # Names that still meet (here forced) are refused before anything is written.
    monkeypatch.setattr(kubernetes, "_cut", lambda campaign, environment, keep: "same")
    with pytest.raises(CampaignError, match="give the same Job name 'same-t211223z-cbcb4e-s10'"):
        kubernetes.manifest(campaign, f"{LONG}-20261206T211223Z-cbcb4e", {"tasks": []}, submission=10)


def test_an_sbatch_that_never_answers_is_stopped_and_its_tasks_recorded_as_possibly_queued(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_sbatch(tmp_path, monkeypatch)
    (tmp_path / "bin" / "sbatch").write_text("#!/bin/bash\nexec sleep 60\n")
    monkeypatch.setattr(slurm, "SBATCH_TIMEOUT_S", 0.5)
    path = write_campaign(tmp_path)
    out = tmp_path / "out" / "loc.sbatch"
    out.parent.mkdir()
    assert main(["submit", str(path), "--scheduler", "slurm", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "sbatch timed out: no answer in 0.5 s, so it was stopped; it may have queued the job" in err
    found = read_submissions(out.with_name("loc.submission"))
    assert (
        found is not None
        and found.accepted() == "job unknown: sbatch timed out or was stopped on submission 1, and may have queued it"
    )
    # A second submit over these files is refused: the first one's tasks may be queued.
    assert main(["submit", str(path), "--scheduler", "slurm", "--out", str(out)]) == 2
    assert "may have queued it" in capsys.readouterr().err


def test_a_second_kubernetes_submit_over_the_same_files_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_campaign(tmp_path, destination="s3://fleet-runs/n")
    out = tmp_path / "loc.k8s.json"
    assert main(["submit", str(path), "--scheduler", "kubernetes", "--out", str(out)]) == 0
    planned = (tmp_path / "loc.planned.json").read_bytes()
    first = json.loads(planned)["campaign_id"]
    capsys.readouterr()
    assert main(["submit", str(path), "--scheduler", "kubernetes", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"campaign {first} was submitted from these files" in err and "kubectl create" in err
    assert (tmp_path / "loc.planned.json").read_bytes() == planned  # resume and status still find it
    # A dry run's files stay replaceable, as a Slurm dry run's are.
    other = tmp_path / "dry"
    other.mkdir()
    for _ in range(2):
        assert (
            main(["submit", str(path), "--scheduler", "kubernetes", "--dry-run", "--out", str(other / "x.json")]) == 0
        )


def test_sbatch_s_answer_is_kept_as_one_escaped_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: sbatch's whole answer was the job id, a newline and an escape sequence included,
    printed and written to NAME.submission."""
    fake_sbatch(tmp_path, monkeypatch)
    (tmp_path / "bin" / "sbatch").write_text("#!/bin/bash\nprintf '12\\x1b[2J;cluster\\n34\\n'\n")
    out = tmp_path / "out" / "loc.sbatch"
    out.parent.mkdir()
    assert main(["submit", str(write_campaign(tmp_path)), "--scheduler", "slurm", "--out", str(out)]) == 0
    assert "submitted job 12<U+001B>[2J (" in capsys.readouterr().out
    found = read_submissions(out.with_name("loc.submission"))
    assert found is not None and found.accepted() == "job 12<U+001B>[2J"


@pytest.mark.parametrize("scheduler", ["slurm", "kubernetes"])
def test_printed_commands_name_the_files_as_one_word_on_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], scheduler: str
) -> None:
    """Before: `--out "my runs/a\\nb.sbatch"` printed "wrote my runs/a", then a line of its own,
    and a "ledger:" command that split at the space."""
    import shlex

    folder = tmp_path / "my runs"
    folder.mkdir()
    out = folder / "a\nb.json"
    argv = ["submit", str(write_campaign(tmp_path, destination="s3://fleet-runs/n")), "--scheduler", scheduler]
    assert main([*argv, "--dry-run", "--out", str(out)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith(f"wrote {folder}/a<U+000A>b.json: ")
    assert all(line.split(" ")[0].rstrip(":") in ("wrote", "submit", "follow", "ledger") for line in printed), printed
    submit = next(line for line in printed if line.startswith("submit:  "))
    assert submit.split("  ")[1].endswith(f"'{folder}/a<U+000A>b.json'")
    if scheduler == "kubernetes":  # a Slurm dry run submits nothing, so it names no ledger
        ledger = next(line for line in printed if line.startswith("ledger:  python -m campaign status "))
        words = shlex.split(ledger.removeprefix("ledger:  "))
        assert words == ["python", "-m", "campaign", "status", f"{folder}/loc.planned.json"]


@pytest.mark.parametrize("kind", ["missing", "folder", "fifo"])
def test_a_plan_that_is_no_file_here_is_warned_about_for_what_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    """Before: a plan at /dev/zero or a FIFO was "not on this host", though it is, as no file."""
    import os

    plan = tmp_path / "plans" / "tiny_encoder.toml"
    plan.parent.mkdir()
    if kind == "folder":
        plan.mkdir()
    elif kind == "fifo":
        os.mkfifo(plan)
    path = write_campaign(tmp_path)
    path.write_text(path.read_text(encoding="utf-8").replace("/plans/tiny_encoder.toml", str(plan)), encoding="utf-8")
    out = tmp_path / "out" / "loc.sbatch"
    out.parent.mkdir()
    assert main(["submit", str(path), "--scheduler", "slurm", "--dry-run", "--out", str(out)]) == 0
    said = "is not on this host" if kind == "missing" else "is here but no regular file (a folder, FIFO or device)"
    assert f"campaign: warning: {plan} {said}; it must be a plan file on the compute nodes" in capsys.readouterr().err


def test_an_interpreter_older_than_3_11_is_one_line_and_exit_2() -> None:
    """A docs review: on Python 3.10, `python -m campaign --help` ended in a traceback
    (No module named 'tomllib'). The interpreter's version is stood in for here."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", "import sys; sys.version_info = (3, 10, 12); import campaign.__main__"],
        cwd=Path(__file__).resolve().parent.parent,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [f"campaign: needs Python 3.11 or newer, this is 3.10 ({sys.executable})"]
