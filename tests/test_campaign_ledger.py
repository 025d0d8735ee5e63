"""Run identity, the campaign ledger, `status`, `resume`, and a stopped task that still delivers.

The ledger is what a platform team reads to know what is left to do: every planned task with
its latest attempt (done, failed with its exit code and log, stopped, running, lost, or never
started). These tests write ledger records as campaign/task.sh does (the task-script tests in
test_campaign.py check that it writes them), and run task.sh itself where the behaviour under
a signal matters.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import pytest
from click.testing import CliRunner

from campaign.__main__ import main
from collector.facts import scheduled_task
from reportgen.cli import main as reportgen_main
from tests import logbuilder

REPO = Path(__file__).resolve().parent.parent


def test_collector_records_the_task_it_runs_as() -> None:
    env = {
        "MIGRATION_RECORD_CAMPAIGN": "nightly",
        "MIGRATION_RECORD_CAMPAIGN_ID": "nightly-20261202T000000Z",
        "MIGRATION_RECORD_ENVIRONMENT": "trn2-sdk-2.33",
        "MIGRATION_RECORD_TASK_INDEX": "7",
        "MIGRATION_RECORD_SCHEDULER": "slurm",
        "MIGRATION_RECORD_JOB_ID": "4242_7",
        "MIGRATION_RECORD_ATTEMPT": "s1-r1",
    }
    task = scheduled_task(env)
    assert task is not None
    assert task["campaign_id"] == "nightly-20261202T000000Z" and task["task_index"] == 7 and task["attempt"] == "s1-r1"
    assert task["node"]  # the host name, read on the node
    assert scheduled_task({**env, "MIGRATION_RECORD_TASK_INDEX": "7; rm"})["task_index"] is None  # type: ignore[index]
    assert scheduled_task({**env, "MIGRATION_RECORD_TASK_INDEX": "\u0663"})["task_index"] is None  # type: ignore[index]
    assert scheduled_task({}) is None  # not run by a campaign: nothing claimed


def test_report_names_the_campaign_task(tmp_path: Path) -> None:
    events = logbuilder.with_envelope(logbuilder.complete_log())
    for event in events:  # a 1.2 collector writes every line as 1.2
        event["schema_version"] = "1.2"
    events[0]["scheduled"] = {
        "campaign": "nightly",
        "campaign_id": "nightly-20261202T000000Z",
        "environment": "trn2-sdk-2.33",
        "task_index": 3,
        "scheduler": "slurm",
        "job_id": "4242_3",
        "attempt": "s2-r0",
        "node": "node-17",
    }
    log = tmp_path / "events.jsonl"
    log.write_text(logbuilder.dumps(events))
    result = CliRunner().invoke(reportgen_main, ["report", str(log), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    expected = "nightly (nightly-20261202T000000Z): environment trn2-sdk-2.33, task 3, attempt s2-r0, slurm job 4242_3, node node-17"
    assert expected in (tmp_path / "out" / "report.md").read_text().replace("\\_", "_")  # Markdown escapes _
    assert expected in (tmp_path / "out" / "report.html").read_text()


# ---- the ledger -----------------------------------------------------------------------------


CAMPAIGN_ID = "nightly-20261202T000000Z"


def _planned(destination: Path, count: int, deadline_s: int = 3600) -> Path:
    campaign_id = CAMPAIGN_ID
    planned = {
        "format": 1,
        "campaign": "nightly",
        "campaign_id": campaign_id,
        "scheduler": "slurm",
        "destination": str(destination),
        "deadline_s": deadline_s,
        "tasks": [
            {
                "task": i,
                "label": f"tiny_encoder/cpu/r{i + 1}",
                "environment": "cpu",
                "target": "cpu",
                "sdk": None,
                "plan": "/p.toml",
                "args": [],
                "repeat": i + 1,
            }
            for i in range(count)
        ],
    }
    folder = destination / "_campaigns" / campaign_id
    (folder / "tasks").mkdir(parents=True)
    (folder / "planned.json").write_text(json.dumps(planned))
    return folder


def _record(
    folder: Path,
    task: int,
    attempt: str,
    state: str,
    code: int | None,
    runs: list[str],
    started: str = "2026-12-02T00:00:00Z",
    log: str = "",
    deliver: bool = True,
) -> None:
    """An attempt's record, as task.sh writes it; with ``deliver``, each run it names is
    delivered beside the ledger (complete when the attempt is done), its log saying it is this
    attempt's run, as the collector's is (unless the run is there already)."""
    submission, restart = (int(part[1:]) for part in attempt.split("-"))
    destination = folder.parent.parent
    for run in runs if deliver else []:
        if not (destination / run).exists():
            _run(destination, run, complete=state == "done", scheduled=_scheduled(folder.name, task, attempt))
    name = f"task-{task}.{attempt}"
    record = {
        "task": task,
        "attempt": attempt,
        "submission": submission,
        "restart": restart,
        "state": state,
        "exit_code": code,
        "node": "node-1",
        "job_id": f"42_{task}",
        "started": started,
        "ended": None if state == "running" else "2026-12-02T00:05:00Z",
        "runs": runs,
        "log": f"{name}.log",
    }
    (folder / "tasks" / f"{name}.json").write_text(json.dumps(record))
    (folder / "tasks" / f"{name}.log").write_text(log)


def _ledger_of_five(destination: Path) -> Path:
    folder = _planned(destination, 5)
    _record(folder, 0, "s1-r0", "done", 0, ["tiny-encoder-cpu-1"])
    _record(
        folder,
        1,
        "s1-r0",
        "failed",
        3,
        [],
        log="collector: --target neuron: no neuron device on this host\ntask 1 (s1-r0): collector exited 3\n",
    )
    _record(folder, 2, "s1-r0", "stopped", 143, ["tiny-encoder-cpu-2a"])  # killed at its time limit ...
    _record(folder, 2, "s1-r1", "done", 0, ["tiny-encoder-cpu-2b"])  # ... requeued, then complete
    _record(folder, 3, "s1-r0", "running", None, [], started="2026-01-01T00:00:00Z")  # a node that died
    return folder  # task 4: never started


def test_status_says_what_became_of_every_planned_task(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _ledger_of_five(tmp_path / "runs")
    assert main(["status", str(folder)]) == 1  # not every task is done
    out = capsys.readouterr().out
    assert "5 task(s): 2 done, 1 failed, 1 lost, 1 planned" in out
    lines = {int(line.split()[0]): line for line in out.splitlines() if line[:4].strip().isdigit()}
    assert "done" in lines[0] and "run tiny-encoder-cpu-1" in lines[0]
    assert "failed" in lines[1] and "exited 3" in lines[1]
    assert "| collector: --target neuron: no neuron device on this host" in out  # the log's last lines
    assert "done" in lines[2] and "tiny-encoder-cpu-2b" in lines[2]  # the latest attempt decides
    assert "lost" in lines[3] and "never finished" in lines[3]
    assert "planned" in lines[4] and "no record yet: queued, or never started" in lines[4]
    assert main(["status", str(folder), "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["counts"] == {"done": 2, "failed": 1, "lost": 1, "planned": 1}
    task2 = data["tasks"][2]
    assert [a["attempt"] for a in task2["attempts"]] == ["s1-r0", "s1-r1"] and task2["attempts"][0][
        "state"
    ] == "stopped"
    assert (
        data["tasks"][1]["exit_code"] == 3
        and data["tasks"][1]["attempts"][0]["tail"][-1] == "task 1 (s1-r0): collector exited 3"
    )


def _another(**changes: object) -> Callable[[Path], None]:
    """Deliver task 0's run with run_start.scheduled (or run_start) changed."""

    def make(destination: Path) -> None:
        scheduled: dict[str, object] | None = {**_scheduled(CAMPAIGN_ID, 0, "s1-r0"), **changes}
        if changes.get("scheduled") is None and "scheduled" in changes:
            scheduled = None
        _run(destination, "tiny-encoder-cpu-1", scheduled=scheduled)
        if "target" in changes:
            log = destination / "tiny-encoder-cpu-1" / "events.jsonl"
            lines = log.read_text().splitlines(keepends=True)
            lines[0] = json.dumps({**json.loads(lines[0]), "target": changes["target"]}, sort_keys=True) + "\n"
            log.write_text("".join(lines))

    return make


# A done record is the task script's word; the run it names must say it is the task's.
NOT_THE_TASKS_RUN = [
    (
        "another-campaign",
        _another(campaign_id="weekly-20261201T000000Z"),
        "its log says campaign 'weekly-20261201T000000Z'",
    ),
    ("another-task", _another(task_index=3), "its log says task 3, not task 0"),
    ("task-false", _another(task_index=False), "its log says task False, not task 0"),  # false == 0 in Python
    ("another-attempt", _another(attempt="s2-r0"), "its log says attempt 's2-r0', not 's1-r0'"),
    ("another-target", _another(target="cuda"), "its log says target 'cuda', the task planned 'cpu'"),
    ("no-campaign", _another(scheduled=None), "its log does not say a campaign task wrote it"),
    ("not-delivered", lambda destination: None, "no log at "),
    (
        "not-a-log",
        lambda d: (d / "tiny-encoder-cpu-1").mkdir() or (d / "tiny-encoder-cpu-1" / "events.jsonl").write_text("[1]\n"),
        "its first line is not a run_start",
    ),
]


@pytest.mark.parametrize(("make", "why"), [c[1:] for c in NOT_THE_TASKS_RUN], ids=[c[0] for c in NOT_THE_TASKS_RUN])
def test_a_done_record_counts_only_with_a_run_whose_log_says_it_is_the_tasks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make: Callable[[Path], None], why: str
) -> None:
    """Before, status called task 0 done on its record alone, whatever the named run's log said
    (or whether it was there), and resume left it out."""
    destination = tmp_path / "runs"
    folder = _planned(destination, 1)
    make(destination)
    _record(folder, 0, "s1-r0", "done", 0, ["tiny-encoder-cpu-1"], deliver=False)
    assert main(["status", str(folder)]) == 1
    out = capsys.readouterr().out
    assert "1 task(s): 1 unverified" in out and why in out and "not done: 1 task(s)" in out, out
    assert main(["status", str(folder), "--format", "json"]) == 1
    task = json.loads(capsys.readouterr().out)["tasks"][0]
    assert task["state"] == "unverified" and why in task["reason"]


def test_a_run_named_by_a_hostile_record_is_not_read_outside_the_destination(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    destination = tmp_path / "runs"
    folder = _planned(destination, 3)
    _run(tmp_path, "outside", scheduled=_scheduled(CAMPAIGN_ID, 0, "s1-r0"))  # beside the destination
    _record(folder, 0, "s1-r0", "done", 0, ["../outside"], deliver=False)
    _record(folder, 1, "s1-r0", "done", 0, ["."], deliver=False)
    (destination / "linked").symlink_to(tmp_path / "outside")
    _record(folder, 2, "s1-r0", "done", 0, ["linked"], deliver=False)
    assert main(["status", str(folder), "--format", "json"]) == 1
    tasks = json.loads(capsys.readouterr().out)["tasks"]
    assert [t["state"] for t in tasks] == ["unverified"] * 3
    assert "not a run folder name" in tasks[0]["reason"] and "not a run folder name" in tasks[1]["reason"]
    assert "no log at" in tasks[2]["reason"]


def test_the_site_links_a_run_as_a_tasks_only_when_its_log_says_so(tmp_path: Path) -> None:
    from reportgen.publish.site import build_site

    destination = tmp_path / "runs"
    folder = _planned(destination, 2)
    _record(folder, 0, "s1-r0", "done", 0, ["tiny-encoder-cpu-1"])
    _record(folder, 1, "s1-r0", "done", 0, ["tiny-encoder-cpu-1"], deliver=False)  # task 0's run, credited to 1
    result = build_site([destination], tmp_path / "site")
    assert result.runs == 1 and not result.warnings, result.warnings
    assert "2 planned task(s), 1 done, 1 untested" in (tmp_path / "site" / "index.html").read_text()
    (page,) = (tmp_path / "site" / "campaigns").glob("*/index.html")
    rows = page.read_text().split("<tr")[2:]
    assert "untested" not in rows[0] and 'href="../../runs/' in rows[0]
    assert "untested: its run&#39;s log does not say it is this task&#39;s" in rows[1]
    assert "not this task's run: run tiny-encoder-cpu-1: its log says task 0, not task 1" in rows[1]


def test_status_of_a_bad_ledger_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _ledger_of_five(tmp_path / "runs")
    (folder / "tasks" / "task-0.s1-r0.json").write_text('{"task": "zero"')
    assert main(["status", str(folder)]) == 2
    err = capsys.readouterr().err
    # The record is named with its ledger folder (status may be given NAME.planned.json elsewhere).
    assert err.startswith(f"campaign: {folder}/tasks/task-0.s1-r0.json: not a task record") and err.count("\n") == 1
    assert main(["status", str(tmp_path / "nothing.json")]) == 2
    assert "not a campaign's planned tasks" in capsys.readouterr().err


def test_a_task_record_that_is_no_file_is_named_not_read_as_no_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A review: a task record swapped for a FIFO (or a folder) read as "no record yet: queued, or
    never started", so resume would submit the task again. It is named, in one line, and status
    exits 2 without waiting on the FIFO."""
    folder = _ledger_of_five(tmp_path / "runs")
    record = folder / "tasks" / "task-0.s1-r0.json"
    record.unlink()
    os.mkfifo(record)
    assert main(["status", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("campaign: ") and "task-0.s1-r0.json" in err and "FIFO" in err and err.count("\n") == 1
    record.unlink()
    record.mkdir()
    assert main(["status", str(folder)]) == 2
    err = capsys.readouterr().err
    assert "task-0.s1-r0.json" in err and "a folder, not a regular file" in err and err.count("\n") == 1


def test_status_reads_a_ledger_as_untrusted_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """status reads within the side-file limit, follows no link and takes no campaign id as a
    path: each is one line on stderr and exit 2 (or the linked record counts as missing)."""
    from reportgen.storage.local import MAX_SIDE_FILE_BYTES

    folder = _ledger_of_five(tmp_path / "runs")
    # A record linked in from elsewhere is not read: task 0 has no attempt of its own.
    record = folder / "tasks" / "task-0.s1-r0.json"
    outside = tmp_path / "outside.json"
    record.rename(outside)
    record.symlink_to(outside)
    assert main(["status", str(folder), "--format", "json"]) == 1
    assert json.loads(capsys.readouterr().out)["tasks"][0]["state"] == "planned"
    # A record past the limit is refused by its size, not read into memory.
    with open(folder / "tasks" / "task-1.s1-r0.json", "r+b") as record_file:
        record_file.truncate(MAX_SIDE_FILE_BYTES + 1)
    assert main(["status", str(folder)]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith("campaign: ")
        and "task-1.s1-r0.json" in err
        and "16,777,217 bytes, larger than the limit" in err
        and err.count("\n") == 1
    )
    # So is a planned file past the limit, and a campaign id that would lead out of the ledger.
    huge = tmp_path / "huge.planned.json"
    with open(huge, "wb") as stream:
        stream.truncate(MAX_SIDE_FILE_BYTES + 1)
    assert main(["status", str(huge)]) == 2
    assert "huge.planned.json: not a campaign's planned tasks" in capsys.readouterr().err
    planned = json.loads((folder / "planned.json").read_text())
    planned["campaign_id"] = "../../../elsewhere"
    escaping = tmp_path / "escaping.planned.json"
    escaping.write_text(json.dumps(planned))
    assert main(["status", str(escaping)]) == 2
    assert "escaping.planned.json: not a campaign's planned tasks" in capsys.readouterr().err


def _edit_planned(**changes: object) -> Callable[[Path], None]:
    def edit(folder: Path) -> None:
        planned = json.loads((folder / "planned.json").read_text())
        planned.update(changes)
        (folder / "planned.json").write_text(json.dumps(planned))  # Infinity and NaN as Python writes them

    return edit


def _edit_record(**changes: object) -> Callable[[Path], None]:
    def edit(folder: Path) -> None:
        record = folder / "tasks" / "task-0.s1-r0.json"
        record.write_text(json.dumps({**json.loads(record.read_text()), **changes}))

    return edit


def _write(name: str, text: str) -> Callable[[Path], None]:
    def edit(folder: Path) -> None:
        (folder / name).write_text(text)

    return edit


# (what is wrong, how to make it so, the start of the one line status prints after "campaign: ")
HOSTILE_LEDGERS: list[tuple[str, Callable[[Path], None], str]] = [
    ("planned task index Infinity", _edit_planned(tasks=[{"task": float("inf")}]), "planned.json: not a campaign's"),
    ("planned task index 1e308", _edit_planned(tasks=[{"task": 1e308}]), "planned.json: not a campaign's"),
    ("planned task index negative", _edit_planned(tasks=[{"task": -1}]), "planned.json: not a campaign's"),
    ("planned nested too deep", _write("planned.json", "[" * 100_000), "planned.json: not a campaign's"),
    ("deadline_s a string", _edit_planned(deadline_s="abc"), "planned.json: not a campaign's"),
    ("deadline_s NaN", _edit_planned(deadline_s=float("nan")), "planned.json: not a campaign's"),
    ("deadline_s past timedelta", _edit_planned(deadline_s=10**20), "planned.json: not a campaign's"),
    ("record task Infinity", _edit_record(task=float("inf")), "tasks/task-0.s1-r0.json: not a task record"),
    ("record task 1e308", _edit_record(task=1e308), "tasks/task-0.s1-r0.json: not a task record"),
    ("record submission true", _edit_record(submission=True), "tasks/task-0.s1-r0.json: not a task record"),
    ("record runs a string", _edit_record(runs="abc"), "tasks/task-0.s1-r0.json: not a task record"),
    ("record nested too deep", _write("tasks/task-0.s1-r0.json", "[" * 100_000), "tasks/task-0.s1-r0.json: not a"),
    # A 15 MB node name, hard-linked 200 times, took a site build to 12 GB and a 3 GB page.
    ("record node of 300 characters", _edit_record(node="n" * 300), "tasks/task-0.s1-r0.json: not a task record"),
    ("record log of 300 characters", _edit_record(log="l" * 300), "tasks/task-0.s1-r0.json: not a task record"),
    ("record of 70 kB", _edit_record(extra=" " * 70_000), "tasks/task-0.s1-r0.json: not a task record"),
]


@pytest.mark.parametrize("make,start", [h[1:] for h in HOSTILE_LEDGERS], ids=[h[0] for h in HOSTILE_LEDGERS])
def test_status_of_a_hostile_ledger_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make: Callable[[Path], None], start: str
) -> None:
    """Each field a ledger's reader relies on is checked where the file is read: a value int()
    or timedelta cannot take, or JSON too deep to decode, is the ledger's own one-line error."""
    folder = _ledger_of_five(tmp_path / "runs")  # task 3 is an attempt still running: its deadline is used
    make(folder)
    assert main(["status", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("campaign: ") and start in err and err.count("\n") == 1, err


def test_a_log_line_of_megabytes_is_cut_in_the_tail(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A failed attempt whose log ends in one 5 MB line printed all of it, and the site's page
    held it too. The log is read from its end (TAIL_BYTES), so the line's start is not read
    and is marked so; what is shown is the line's end, where the failure is said (it showed
    the line's middle, a megabyte before its end)."""
    from campaign.ledger import TAIL_LINE_CHARS

    folder = _planned(tmp_path / "runs", 1)
    ending = "RuntimeError: the last words"
    _record(folder, 0, "s1-r0", "failed", 1, [], log="collector: started\n" + "y" * 5_000_000 + ending + "\n")
    assert main(["status", str(folder)]) == 1
    out = capsys.readouterr().out
    (cut,) = [line for line in out.splitlines() if "yyy" in line]
    shown = "[...] " + ("y" * TAIL_LINE_CHARS + ending)[-(TAIL_LINE_CHARS - 6) :]
    assert cut == f"        | {shown}"
    assert "collector: started" not in out
    assert main(["status", str(folder), "--format", "json"]) == 1
    assert json.loads(capsys.readouterr().out)["tasks"][0]["attempts"][0]["tail"][-1] == cut.removeprefix("        | ")


def test_a_failed_attempt_s_log_past_the_side_file_limit_shows_its_last_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A failed task whose log grew past 16 MiB made status refuse the whole ledger; its last
    lines are what status shows, read from the log's end."""
    from reportgen.storage.local import MAX_SIDE_FILE_BYTES

    folder = _ledger_of_five(tmp_path / "runs")
    log = folder / "tasks" / "task-1.s1-r0.log"
    with open(log, "r+b") as stream:
        stream.truncate(MAX_SIDE_FILE_BYTES + 1)  # a sparse file: no 16 MiB written
        stream.seek(0, 2)
        stream.write(b"\ncell 49999 of 50000\ntask 1 (s1-r0): collector exited 3\n")
    assert main(["status", str(folder)]) == 1
    out = capsys.readouterr().out
    assert "5 task(s): 2 done, 1 failed, 1 lost, 1 planned" in out
    assert "        | cell 49999 of 50000\n        | task 1 (s1-r0): collector exited 3\n" in out
    assert "\x00" not in out and "[...]" not in out, "the part line at the start of the bytes read is dropped"


@pytest.mark.parametrize("most", [3, 4])
def test_a_ledger_of_more_records_than_it_may_hold_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], most: int
) -> None:
    """A million attempt records were each read and held (about 1 kB apiece), and the folder's
    names listed whole first. The bounds are lowered here: the ledger of five holds five records
    and five logs."""
    from campaign import ledger
    from reportgen.storage import ledgers

    folder = _ledger_of_five(tmp_path / "runs")
    monkeypatch.setattr(ledger, "MAX_RECORDS", most)
    monkeypatch.setattr(ledgers, "MAX_RECORDS", most)
    monkeypatch.setattr(ledgers, "MAX_TASK_FILES", 2 * most + 2)  # 3: 8 names listed, then refused; 4: all 10
    assert main(["status", str(folder)]) == 2
    err = capsys.readouterr().err
    expected = (
        f"campaign: {folder / 'tasks'}: more than 8 files; a ledger holds at most 3 task records, each with its log"
        if most == 3
        else f"campaign: {folder}/tasks/: 5 task records, more than the 4 a ledger may hold"
    )
    assert err == expected + "\n"


def test_a_record_named_with_a_line_break_makes_one_line_of_status_and_of_the_site(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from reportgen.publish.site import build_site

    folder = _ledger_of_five(tmp_path / "runs")
    (folder / "tasks" / "a\xff\nforged line.json").write_text("[1, 2")
    assert main(["status", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "a\xff<U+000A>forged line.json: not a task record" in err, err
    result = build_site([tmp_path / "runs"], tmp_path / "site")
    (problem,) = [r for r in result.rejected if "campaign ledger not read" in r]
    assert "\n" not in problem and "<U+000A>forged line.json" in problem


def test_status_takes_the_longest_time_limit_a_timedelta_holds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from campaign.ledger import MAX_DEADLINE_S

    folder = _ledger_of_five(tmp_path / "runs")
    _edit_planned(deadline_s=MAX_DEADLINE_S)(folder)
    assert main(["status", str(folder), "--format", "json"]) == 1
    assert json.loads(capsys.readouterr().out)["tasks"][3]["state"] == "running"  # not lost within the limit


def test_a_hostile_ledger_is_listed_and_the_site_built(tmp_path: Path) -> None:
    from reportgen.publish.site import build_site

    destination = tmp_path / "runs"
    _run(destination, "tiny-encoder-cpu-1")
    (destination / "_campaigns").mkdir()
    for number, (_, make, _) in enumerate(HOSTILE_LEDGERS):  # every one in its own ledger folder
        folder = _ledger_of_five(tmp_path / "made")
        make(folder)
        folder.rename(destination / "_campaigns" / f"bad-{number:02}")
        shutil.rmtree(tmp_path / "made")
    result = build_site([destination], tmp_path / "site")
    assert result.runs == 1
    for number in range(len(HOSTILE_LEDGERS)):
        assert any(f"bad-{number:02}: campaign ledger not read: " in w for w in result.rejected), (
            number,
            result.rejected,
        )
    assert not (tmp_path / "site" / "campaigns").exists()


def test_status_shows_log_text_inert(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _planned(tmp_path / "runs", 1)
    _record(folder, 0, "s1-r0", "failed", 1, [], log="\x1b]0;owned\x07\x1b[2Jgone\u202eevil\n")
    main(["status", str(folder)])
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\u202e" not in out and "<U+001B>" in out and "<U+202E>" in out


def _fake_sbatch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An sbatch on PATH that records its arguments in TMP/sbatch-calls and answers job 4300."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sbatch").write_text(f'#!/bin/bash\necho "$@" >> {tmp_path}/sbatch-calls\necho 4300\n')
    (bin_dir / "sbatch").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")


def test_resume_submits_exactly_the_tasks_not_done(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _fake_sbatch(tmp_path, monkeypatch)
    destination = tmp_path / "runs"
    campaign = tmp_path / "campaign.toml"
    campaign.write_text(f"""\
[campaign]
name = "nightly"
destination = "{destination}"
repeats = 5

[[workload]]
plan = "/plans/tiny.toml"

[[environment]]
name = "cpu"
target = "cpu"
python = "/usr/bin/python3"
""")
    script = tmp_path / "nightly.sbatch"
    assert main(["submit", str(campaign), "--scheduler", "slurm", "--out", str(script)]) == 0
    planned = json.loads((tmp_path / "nightly.planned.json").read_text())
    folder = destination / "_campaigns" / planned["campaign_id"]
    assert json.loads((folder / "planned.json").read_text()) == planned  # a folder destination has it at once
    capsys.readouterr()
    (folder / "tasks").mkdir()
    # Task 0 done; 1 failed; 2 requeued and done; 3 still running (recently); 4 never started.
    _record(folder, 0, "s1-r0", "done", 0, ["r0"])
    _record(folder, 1, "s1-r0", "failed", 3, [])
    _record(folder, 2, "s1-r0", "stopped", 143, ["r2a"])
    _record(folder, 2, "s1-r1", "done", 0, ["r2b"])
    _record(folder, 3, "s1-r0", "running", None, [], started=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    (tmp_path / "sbatch-calls").unlink()
    assert main(["resume", str(campaign), "--scheduler", "slurm", "--out", str(script)]) == 0
    out = capsys.readouterr().out
    # Task 4 has no record: it may still be queued, so it is left out.
    assert (
        "resuming 1 task(s) not done (1), submission 2" in out and "left out: 1 task(s) with no record yet (4)" in out
    )
    assert (tmp_path / "sbatch-calls").read_text().split() == [
        "--parsable",
        "--export=ALL,MIGRATION_RECORD_SUBMISSION=2",
        "--array=1",
        str(script),
    ]
    # Everything done or running: nothing to resume.
    _record(folder, 1, "s2-r0", "done", 0, ["r1"])
    _record(folder, 4, "s2-r0", "done", 0, ["r4"])
    (tmp_path / "sbatch-calls").unlink()
    assert main(["resume", str(campaign), "--scheduler", "slurm", "--out", str(script)]) == 0
    assert "nothing to resume" in capsys.readouterr().out and not (tmp_path / "sbatch-calls").exists()


# ---- a stopped task still delivers its run ------------------------------------------------------


COLLECTOR_STANDIN = """\
#!/bin/bash
# Stands in for the collector: writes a partial log, and on SIGTERM ends it with an aborted
# run_end and exits 143, as the collector does (tests/test_collector_robust.py checks that).
out=""; prev=""
for arg in "$@"; do [ "$prev" = "--out" ] && out="$arg"; prev="$arg"; done
run="$out/tiny-encoder-cpu-stopped"
mkdir -p "$run"
echo '{"kind": "run_start"}' > "$run/events.jsonl"
trap 'echo "{\\"kind\\": \\"run_end\\", \\"status\\": \\"aborted\\"}" >> "$run/events.jsonl"; echo stopped >&2; exit 143' TERM
echo started > "{ready}"
for _ in $(seq 600); do sleep 0.1; done
exit 0
"""


def _task_stopped_once(tasks: Path, env: dict[str, str], flag: Path, never: str) -> tuple[int, str, float]:
    """task.sh run on ``tasks``, sent SIGTERM once ``flag`` exists (``never``: the failure when it
    does not come): its exit code, standard error, and the seconds from the signal to its end."""
    proc = subprocess.Popen(
        ["bash", str(REPO / "campaign" / "task.sh"), str(tasks)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not flag.exists():
            assert time.monotonic() < deadline and proc.poll() is None, never
            time.sleep(0.02)
        stopped_at = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
        return proc.returncode, err, time.monotonic() - stopped_at
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_stopped_pod_delivers_an_aborted_run_within_its_grace_period(tmp_path: Path) -> None:
    """A Kubernetes pod stop, emulated: SIGTERM to task.sh (PID 1 of the container) while the
    collector runs. The run must be ended, delivered and recorded as stopped within the grace
    period (the manifest's default is 120 s; here it must take seconds)."""
    ready = tmp_path / "ready"
    python = tmp_path / "python"
    python.write_text(COLLECTOR_STANDIN.replace("{ready}", str(ready)))
    python.chmod(0o755)
    destination = tmp_path / "runs"
    destination.mkdir()  # the claim's mount path, there in the pod
    campaign_id = "nightly-20261202T000000Z"
    tasks = tmp_path / "tasks"
    tasks.write_text(f"0\t5 tiny_encoder/cpu/r1 cpu cpu {python} /plans/tiny.toml\n")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("SLURM_")},
        "JOB_COMPLETION_INDEX": "0",
        "JOB_NAME": "nightly-cpu",
        "MIGRATION_RECORD_RESTART": "1",
        "MIGRATION_RECORD_CAMPAIGN": "nightly",
        "MIGRATION_RECORD_CAMPAIGN_ID": campaign_id,
        "MIGRATION_RECORD_SCHEDULER": "kubernetes",
        "MIGRATION_RECORD_SUBMISSION": "1",
        "DESTINATION": str(destination),
        "UPLOAD": "folder",
        "COLLECTOR_ROOT": str(tmp_path),
        "SCRATCH": str(tmp_path / "scratch"),
    }
    code, err, took = _task_stopped_once(tasks, env, ready, "the task never started its collector")
    assert code == 143, err
    assert took < 10, f"took {took:.1f} s from SIGTERM to exit"
    log = (destination / "tiny-encoder-cpu-stopped" / "events.jsonl").read_text()
    assert '"status": "aborted"' in log  # the collector was told, and its aborted run delivered
    record = json.loads((destination / "_campaigns" / campaign_id / "tasks" / "task-5.s1-r1.json").read_text())
    assert (
        record["state"] == "stopped" and record["exit_code"] == 143 and record["runs"] == ["tiny-encoder-cpu-stopped"]
    )
    assert record["job_id"] == "nightly-cpu" and record["attempt"] == "s1-r1"
    assert (
        "stopped by the scheduler (TERM)"
        in (destination / "_campaigns" / campaign_id / "tasks" / record["log"]).read_text()
    )


def test_a_requeued_attempt_keeps_the_first_attempts_log(tmp_path: Path) -> None:
    """Slurm requeues under the same job and index; every attempt writes its own files."""
    python = tmp_path / "python"
    python.write_text(
        '#!/bin/bash\nout=""; prev=""\nfor a in "$@"; do [ "$prev" = --out ] && out=$a; prev=$a; done\n'
        'mkdir -p "$out/run-$SLURM_RESTART_COUNT" && echo \'{}\' > "$out/run-$SLURM_RESTART_COUNT/events.jsonl"\n'
        'echo "attempt $SLURM_RESTART_COUNT"\nexit $((1 - SLURM_RESTART_COUNT))\n'
    )
    python.chmod(0o755)
    destination = tmp_path / "runs"
    destination.mkdir()  # the shared folder every node mounts
    tasks, base = _task_env(tmp_path, destination, python)
    for restart in (0, 1):
        proc = subprocess.run(
            ["bash", str(REPO / "campaign" / "task.sh"), str(tasks)],
            env={**base, "SLURM_RESTART_COUNT": str(restart)},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 1 - restart, proc.stderr
    ledger = destination / "_campaigns" / "c-1" / "tasks"
    assert (
        "attempt 0" in (ledger / "task-0.s1-r0.log").read_text()
        and "attempt 1" in (ledger / "task-0.s1-r1.log").read_text()
    )
    states = {p.name: json.loads(p.read_text())["state"] for p in ledger.glob("*.json")}
    assert states == {"task-0.s1-r0.json": "failed", "task-0.s1-r1.json": "done"}
    assert (destination / "run-0").is_dir() and (destination / "run-1").is_dir()  # both attempts' runs kept


def test_help_lists_subcommands() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "campaign", "status", "--help"], cwd=REPO, capture_output=True, text=True
    )
    assert proc.returncode == 0 and "--format" in proc.stdout


# ---- the site shows every planned task ----------------------------------------------------------


def _scheduled(campaign_id: str, task: int, attempt: str) -> dict[str, object]:
    """run_start.scheduled as the collector writes it for a campaign task (collector/facts.py)."""
    return {
        "campaign": "nightly",
        "campaign_id": campaign_id,
        "environment": "cpu",
        "task_index": task,
        "scheduler": "slurm",
        "job_id": f"42_{task}",
        "attempt": attempt,
        "node": "node-1",
    }


def _run(destination: Path, run_id: str, complete: bool = True, scheduled: dict[str, object] | None = None) -> None:
    events = logbuilder.complete_log() if complete else logbuilder.incomplete_log()
    events[0] = {**events[0], "run_id": run_id, **({"scheduled": scheduled} if scheduled else {})}
    folder = destination / run_id
    folder.mkdir(parents=True)
    (folder / "events.jsonl").write_text(logbuilder.dumps(logbuilder.with_envelope(events)))


def test_site_shows_planned_tasks_untested_and_attempts_superseded(tmp_path: Path) -> None:
    from reportgen.publish.site import build_site

    destination = tmp_path / "runs"
    # The records deliver their runs: tiny-encoder-cpu-1, tiny-encoder-cpu-2a (incomplete: the
    # attempt stopped at its time limit) and tiny-encoder-cpu-2b (the requeued attempt).
    folder = _ledger_of_five(destination)
    out = tmp_path / "site"
    result = build_site([destination], out)
    assert result.runs == 3 and not result.warnings, result.warnings
    index = (out / "index.html").read_text()
    assert "5 planned task(s), 2 done, 3 untested" in index
    assert (
        "task 1 tiny_encoder/cpu/r2: the task failed" in index
        and "task 4 tiny_encoder/cpu/r5: no record yet (queued, or never started)" in index
    )
    (page,) = (out / "campaigns").glob("*/index.html")
    html = page.read_text()
    rows = html.split("<tr")[2:]  # after the header row
    assert len(rows) == 5
    assert (
        "untested: the task failed" in rows[1] and "exited 3" in rows[1] and "no neuron device on this host" in rows[1]
    )
    assert "superseded by <code>tiny-encoder-cpu-2b</code>" in rows[2] and "done" in rows[2]
    assert "untested: lost" in rows[3] and "untested: no record yet (queued, or never started)" in rows[4]
    assert 'href="../../runs/' in rows[0]  # the done task links its run's page
    # Rebuilt unchanged: the same bytes; a new record changes the page.
    before = html
    build_site([destination], out)
    assert page.read_text() == before
    _record(folder, 1, "s2-r0", "done", 0, ["tiny-encoder-cpu-1b"])
    build_site([destination], out)
    assert "5 planned task(s), 3 done, 2 untested" in (out / "index.html").read_text()


def test_a_bad_ledger_is_an_input_skipped_the_site_still_built(tmp_path: Path) -> None:
    """The site is built without the campaign, and the command says so with exit 1 (some input
    skipped), as for a log it cannot read; before, it exited 0 and the campaign's untested
    tasks were gone from the site without a failing exit code."""
    from reportgen.publish.site import build_site

    destination = tmp_path / "runs"
    folder = _ledger_of_five(destination)
    (folder / "tasks" / "task-0.s1-r0.json").write_text("[1, 2")
    result = build_site([destination], tmp_path / "site")
    assert result.runs == 3  # the runs its records delivered
    assert any("campaign ledger not read" in w and "not a task record" in w for w in result.rejected), result.rejected
    assert not (tmp_path / "site" / "campaigns").exists()
    proc = CliRunner().invoke(reportgen_main, ["site", str(destination), "--out", str(tmp_path / "site2")])
    assert proc.exit_code == 1 and "campaign ledger not read" in proc.output, proc.output
    assert (tmp_path / "site2" / "index.html").is_file()


def test_status_reads_a_ledger_in_s3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A campaign whose destination is s3:// keeps its ledger there: status lists and reads it
    (moto's server on 127.0.0.1, stopped at the end)."""
    import boto3

    from tests.services import s3_server

    folder = _ledger_of_five(tmp_path / "runs")
    planned = json.loads((folder / "planned.json").read_text())
    planned["destination"] = "s3://fleet/runs"
    planned_file = tmp_path / "nightly.planned.json"
    planned_file.write_text(json.dumps(planned))
    with s3_server(tmp_path / "s3") as s3:
        for key, value in s3.env.items():
            if key.startswith("AWS_"):
                monkeypatch.setenv(key, value)
        client = boto3.client("s3", endpoint_url=s3.endpoint, region_name="us-east-1")
        client.create_bucket(Bucket="fleet")
        for path in sorted((tmp_path / "runs").rglob("*")):  # the ledger and the runs it names
            if path.is_file():
                key = f"runs/{path.relative_to(tmp_path / 'runs').as_posix()}"
                client.put_object(Bucket="fleet", Key=key, Body=path.read_bytes())
        assert main(["status", str(planned_file)]) == 1
        out = capsys.readouterr().out
        assert "5 task(s): 2 done, 1 failed, 1 lost, 1 planned" in out
        assert "| collector: --target neuron: no neuron device on this host" in out  # its log's end, one ranged GET
        # An object past the side-file limit (by the listing's size) is an error, not a download.
        monkeypatch.setattr("reportgen.storage.ledgers.MAX_SIDE_FILE_BYTES", 200)
        assert main(["status", str(planned_file)]) == 2
        err = capsys.readouterr().err
        assert "larger than the limit of 200 bytes" in err and err.count("\n") == 1
        monkeypatch.undo()
        for key, value in s3.env.items():
            if key.startswith("AWS_"):
                monkeypatch.setenv(key, value)
        planned["destination"] = "s3://no-such-bucket/runs"
        planned_file.write_text(json.dumps(planned))
        assert main(["status", str(planned_file)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("campaign: s3://no-such-bucket/runs/_campaigns/") and err.count("\n") == 1


def test_status_reads_an_s3_ledger_folder_given_by_its_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: 'status s3://BUCKET/PREFIX/_campaigns/<id>' (the help offers the ledger folder)
    read the URL as a local path and failed with 's3:/...: not a campaign's planned tasks'."""
    import boto3

    from tests.services import s3_server

    folder = _ledger_of_five(tmp_path / "runs")
    planned = json.loads((folder / "planned.json").read_text())
    planned["destination"] = "s3://fleet/runs"
    (folder / "planned.json").write_text(json.dumps(planned))
    url = f"s3://fleet/runs/_campaigns/{planned['campaign_id']}"
    with s3_server(tmp_path / "s3") as s3:
        for key, value in s3.env.items():
            if key.startswith("AWS_"):
                monkeypatch.setenv(key, value)
        client = boto3.client("s3", endpoint_url=s3.endpoint, region_name="us-east-1")
        client.create_bucket(Bucket="fleet")
        for path in sorted((tmp_path / "runs").rglob("*")):
            if path.is_file():
                key = f"runs/{path.relative_to(tmp_path / 'runs').as_posix()}"
                client.put_object(Bucket="fleet", Key=key, Body=path.read_bytes())
        assert main(["status", url + "/"]) == 1
        assert "5 task(s): 2 done, 1 failed, 1 lost, 1 planned" in capsys.readouterr().out
        # A planned.json that names another folder is refused, as is a folder with none.
        assert main(["status", "s3://fleet/runs/_campaigns/other"]) == 2
        err = capsys.readouterr().err
        assert "planned.json: no such object" in err and err.count("\n") == 1
        client.copy_object(
            Bucket="fleet",
            Key="runs/_campaigns/moved/planned.json",
            CopySource={"Bucket": "fleet", "Key": f"runs/_campaigns/{planned['campaign_id']}/planned.json"},
        )
        assert main(["status", "s3://fleet/runs/_campaigns/moved"]) == 2
        assert "whose ledger folder is not s3://fleet/runs/_campaigns/moved" in capsys.readouterr().err
        # A bucket that is not there is said as such (a review: "planned.json: no such object").
        assert main(["status", "s3://no-such-bucket-zz/nightly/_campaigns/x"]) == 2
        err = capsys.readouterr().err
        assert "no such object" not in err and "s3://no-such-bucket-zz/nightly/_campaigns/x: cannot list" in err, err


KUBE_CAMPAIGN = """\
[campaign]
name = "nightly"
destination = "{destination}"
repeats = 2

[[workload]]
plan = "collector/workloads/tiny_encoder.toml"

[[environment]]
name = "cpu"
target = "cpu"
python = "/usr/bin/python3"
image = "registry.example/migration-record:cpu"

[kubernetes]
volume_claim = "runs"
"""


def test_resume_runs_the_ledgers_plan_on_the_scheduler_it_was_submitted_to(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Kubernetes resume builds its tasks from the campaign file: one edited since the
    submission (another plan, other args) is refused rather than run under the old ledger's
    labels; and a campaign is resumed on the scheduler it was submitted to."""
    campaign = tmp_path / "campaign.toml"
    text = KUBE_CAMPAIGN.format(destination=tmp_path / "runs")
    campaign.write_text(text)
    out = tmp_path / "nightly.k8s.json"
    assert main(["submit", str(campaign), "--scheduler", "kubernetes", "--out", str(out)]) == 0
    capsys.readouterr()
    (tmp_path / "runs").mkdir()  # the claim, mounted on this host at the path the pods mount it
    campaign.write_text(text.replace("tiny_encoder.toml", 'minilm.toml"\nargs = ["--modes=eager"]\n#'))
    resume = ["resume", str(campaign), "--scheduler", "kubernetes", "--include-unrecorded", "--out", str(out)]
    assert main(resume) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no longer plans the tasks of nightly-" in err and "nightly.planned.json" in err
    assert not list(tmp_path.glob("*.resume*"))
    campaign.write_text(text)  # as submitted: resumed
    assert main(resume) == 0
    (resumed,) = tmp_path.glob("nightly.k8s.resume2.json")
    assert "tiny_encoder.toml" in resumed.read_text() and "minilm" not in resumed.read_text()
    capsys.readouterr()
    assert (
        main(["resume", str(campaign), "--scheduler", "slurm", "--dry-run", "--out", str(tmp_path / "n.sbatch")]) == 2
    )
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "was submitted to kubernetes; resume it with --scheduler kubernetes" in err
    # And a Slurm submission is not resumed as Kubernetes Jobs.
    other = tmp_path / "slurm"
    other.mkdir()
    assert main(["submit", str(campaign), "--scheduler", "slurm", "--dry-run", "--out", str(other / "n.sbatch")]) == 0
    capsys.readouterr()
    assert main(["resume", str(campaign), "--scheduler", "kubernetes", "--out", str(other / "n.k8s.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "was submitted to slurm; resume it with --scheduler slurm" in err
    assert not (other / "n.k8s.json").exists()


def test_a_destination_not_mounted_here_is_an_error_not_a_campaign_never_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before, status on a host where the destination was not mounted said every task was
    planned (never started), and resume submitted every task again, the done ones too."""
    _fake_sbatch(tmp_path, monkeypatch)
    campaign = tmp_path / "campaign.toml"
    campaign.write_text(
        KUBE_CAMPAIGN.format(destination=tmp_path / "fsx" / "runs").replace('[kubernetes]\nvolume_claim = "runs"\n', "")
    )
    script = tmp_path / "nightly.sbatch"
    assert main(["submit", str(campaign), "--scheduler", "slurm", "--out", str(script)]) == 0
    planned = json.loads((tmp_path / "nightly.planned.json").read_text())
    folder = tmp_path / "fsx" / "runs" / "_campaigns" / planned["campaign_id"]
    (folder / "tasks").mkdir()
    _record(folder, 0, "s1-r0", "done", 0, ["r0"])
    _record(folder, 1, "s1-r0", "done", 0, ["r1"])
    capsys.readouterr()
    (tmp_path / "fsx").rename(tmp_path / "unmounted")
    (tmp_path / "sbatch-calls").unlink()
    for command in (
        ["status", str(tmp_path / "nightly.planned.json")],
        ["resume", str(campaign), "--scheduler", "slurm", "--out", str(script)],
    ):
        assert main(command) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "is not a folder on this host (not mounted here?)" in err, err
    assert not (tmp_path / "sbatch-calls").exists()
    (tmp_path / "unmounted").rename(tmp_path / "fsx")
    assert main(["resume", str(campaign), "--scheduler", "slurm", "--out", str(script)]) == 0
    assert "every task is done or still running; nothing to resume" in capsys.readouterr().out


def test_status_after_a_dry_run_says_planned_not_unmounted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Right after `submit --dry-run` nothing was submitted and nothing has made the destination:
    status said it was not mounted here (exit 2). With no submission recorded beside the planned
    tasks, every task is planned and none started (exit 1, as for a queued campaign)."""
    _fake_sbatch(tmp_path, monkeypatch)
    campaign = tmp_path / "campaign.toml"
    campaign.write_text(
        KUBE_CAMPAIGN.format(destination=tmp_path / "fsx" / "runs").replace('[kubernetes]\nvolume_claim = "runs"\n', "")
    )
    assert (
        main(["submit", str(campaign), "--scheduler", "slurm", "--dry-run", "--out", str(tmp_path / "n.sbatch")]) == 0
    )
    capsys.readouterr()
    assert not (tmp_path / "fsx").exists()
    assert main(["status", str(tmp_path / "nightly.planned.json")]) == 1
    out = capsys.readouterr()
    assert "no record yet: queued, or never started" in out.out, out
    # Said, since a planned file copied alone to a host where the destination is not mounted
    # reads the same way (second review of this round, finding 6).
    assert "no submission is recorded beside nightly.planned.json: nothing was submitted from it" in out.err
    # A destination that is there but no folder is not mounted as one: still the error.
    (tmp_path / "fsx").mkdir()
    (tmp_path / "fsx" / "runs").write_text("", encoding="utf-8")
    assert main(["status", str(tmp_path / "nightly.planned.json")]) == 2
    assert "is not a folder on this host (not mounted here?)" in capsys.readouterr().err


def test_a_newline_in_a_ledger_record_starts_no_line_of_status(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Before: a run named with a newline in a done record printed a second line that read as
    # another task's ("   4  done ...").
    folder = _planned(tmp_path / "runs", 2)
    _record(folder, 0, "s1-r0", "done", 0, ["tiny-encoder-cpu-1\n   1  done     forged"])
    main(["status", str(folder)])
    out = capsys.readouterr().out
    task_lines = [line for line in out.splitlines() if line[:4].strip().isdigit()]
    assert len(task_lines) == 2 and "tiny-encoder-cpu-1<U+000A>   1  done     forged" in task_lines[0]
    assert "planned" in task_lines[1]


def test_a_ledger_planning_more_tasks_than_a_campaign_may_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """planned.json was not held to the 10,000 tasks submit allows: a 16 MB file of a million
    tasks took status 12 s and 490 MB, and a site build 1.5 GB."""
    from campaign.spec import MAX_TASKS
    from reportgen.publish.site import build_site

    folder = _planned(tmp_path / "runs", MAX_TASKS + 1, deadline_s=60)
    assert main(["status", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{MAX_TASKS + 1:,} tasks, more than the {MAX_TASKS:,}" in err
    result = build_site([tmp_path / "runs"], tmp_path / "site")
    assert any("more than the 10,000 a campaign may plan" in r for r in result.rejected), result.rejected


@pytest.mark.parametrize(
    ("scheduler", "edit"),
    [
        ("kubernetes", lambda t: t.replace("registry.example/migration-record:cpu", "registry.example/other-sdk:2.34")),
        ("kubernetes", lambda t: t.replace('python = "/usr/bin/python3"', 'python = "/usr/bin/python3"\ncpus = 4')),
        ("slurm", lambda t: t + '\n[slurm]\npartition = "other"\n'),
        ("kubernetes", lambda t: t.replace('volume_claim = "runs"', 'volume_claim = "other-claim"')),
        ("kubernetes", lambda t: t.replace('volume_claim = "runs"', 'volume_claim = "runs"\nnamespace = "other"')),
    ],
    ids=["another-image", "other-cpus", "another-partition", "another-claim", "another-namespace"],
)
def test_resume_refuses_an_environment_changed_since_the_submission(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], scheduler: str, edit: Callable[[str], str]
) -> None:
    """A resume built its tasks from the campaign file: another image, other devices or another
    partition under the same environment name ran the resumed replicates on other hardware or
    another SDK than their siblings, while the ledger recorded the same environment."""
    campaign = tmp_path / "campaign.toml"
    text = KUBE_CAMPAIGN.format(destination=tmp_path / "runs")
    if scheduler == "slurm":
        text = text.replace('[kubernetes]\nvolume_claim = "runs"\n', "")
    campaign.write_text(text)
    out = tmp_path / ("nightly.k8s.json" if scheduler == "kubernetes" else "nightly.sbatch")
    assert main(["submit", str(campaign), "--scheduler", scheduler, "--dry-run", "--out", str(out)]) == 0
    (tmp_path / "runs").mkdir(exist_ok=True)
    capsys.readouterr()
    campaign.write_text(edit(text))
    resume = ["resume", str(campaign), "--scheduler", scheduler, "--dry-run", "--include-unrecorded", "--out", str(out)]
    assert main(resume) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no longer plans the tasks of nightly-" in err, err
    campaign.write_text(text)  # as submitted: resumed
    assert main(resume) == 0


def test_two_resumes_before_any_task_starts_take_two_submission_numbers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The number came only from the records tasks had written: two resumes whose tasks had not
    started both took submission 2, so their attempts shared record, log and scratch names."""
    _fake_sbatch(tmp_path, monkeypatch)
    campaign = tmp_path / "campaign.toml"
    campaign.write_text(
        KUBE_CAMPAIGN.format(destination=tmp_path / "runs").replace('[kubernetes]\nvolume_claim = "runs"\n', "")
    )
    script = tmp_path / "nightly.sbatch"
    assert main(["submit", str(campaign), "--scheduler", "slurm", "--out", str(script)]) == 0
    resume = ["resume", str(campaign), "--scheduler", "slurm", "--include-unrecorded", "--out", str(script)]
    assert main([*resume, "--dry-run"]) == 0 and "submission 2" in capsys.readouterr().out  # a dry run takes none
    assert main(resume) == 0 and "submission 2" in capsys.readouterr().out
    assert main(resume) == 0 and "submission 3" in capsys.readouterr().out
    calls = (tmp_path / "sbatch-calls").read_text().splitlines()
    assert "MIGRATION_RECORD_SUBMISSION=2" in calls[-2] and "MIGRATION_RECORD_SUBMISSION=3" in calls[-1]


def test_two_ledgers_of_one_campaign_id_make_one_page_and_name_the_second(tmp_path: Path) -> None:
    """Two ledgers with the same campaign id (a copied folder) made one page, the second written
    over the first, with no word of it."""
    from reportgen.publish.site import build_site

    first = _ledger_of_five(tmp_path / "runs")
    copy = tmp_path / "runs" / "_campaigns" / "copy-of-nightly"
    shutil.copytree(first, copy)
    result = build_site([tmp_path / "runs"], tmp_path / "site")
    assert len(list((tmp_path / "site" / "campaigns").iterdir())) == 1
    (named,) = [r for r in result.rejected if "is another ledger's" in r]  # the copy, not the ledger at its id
    assert named.endswith(
        "_campaigns/copy-of-nightly: campaign ledger not read: its campaign id 'nightly-20261202T000000Z' is another ledger's"
    )


def test_a_done_record_naming_hostile_runs_is_checked_within_bounds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run name too long for the file system gave a traceback; a record naming one run 2,000
    times, its log's first line 8 MiB, took status 36 s (millions of names: hours)."""
    from reportgen.storage import ledgers

    destination = tmp_path / "runs"
    folder = _planned(destination, 2)
    _record(folder, 0, "s1-r0", "done", 0, ["x" * 300], deliver=False)
    (destination / "a").mkdir()
    (destination / "a" / "events.jsonl").write_bytes(b"[" + b" " * (9 << 20))  # no line end in 8 MiB
    _record(folder, 1, "s1-r0", "done", 0, ["a"] * 2000, deliver=False)
    read: list[int] = []
    real = ledgers._first_line

    def counted(piece: Any, budget: Any) -> bytes:
        data = real(piece, budget)
        read.append(len(data))
        return data

    monkeypatch.setattr(ledgers, "_first_line", counted)
    assert main(["status", str(folder), "--format", "json"]) == 1
    tasks = json.loads(capsys.readouterr().out)["tasks"]
    assert [t["state"] for t in tasks] == ["unverified", "unverified"]
    assert "longer than 255 bytes" in tasks[0]["reason"]
    assert "first line is longer than" in tasks[1]["reason"] and len(read) == 1  # the one name, read once


def _task_env(tmp_path: Path, destination: Path, python: Path, path: str | None = None) -> tuple[Path, dict[str, str]]:
    """A tasks file of one task run by ``python``, and a Slurm task's environment for task.sh."""
    tasks = tmp_path / "tasks"
    tasks.write_text(f"0\t0 w/cpu/r1 cpu cpu {python} /p.toml\n")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("SLURM_")},
        "SLURM_ARRAY_TASK_ID": "0",
        "SLURM_ARRAY_JOB_ID": "42",
        "MIGRATION_RECORD_CAMPAIGN": "c",
        "MIGRATION_RECORD_CAMPAIGN_ID": "c-1",
        "DESTINATION": str(destination),
        "UPLOAD": "folder",
        "COLLECTOR_ROOT": str(tmp_path),
        "SCRATCH": str(tmp_path / "scratch"),
        **({"PATH": path} if path else {}),
    }
    return tasks, env


WRITES_A_RUN = (
    '#!/bin/bash\nout=""; prev=""\nfor a in "$@"; do [ "$prev" = --out ] && out=$a; prev=$a; done\n'
    'mkdir -p "$out/run-a" && echo \'{"kind": "run_start"}\' > "$out/run-a/events.jsonl"\n'
    'echo ran > "$(dirname "$0")/ran"\nexit 0\n'
)


def test_a_task_on_a_node_without_the_destination_runs_nothing_and_makes_nothing(tmp_path: Path) -> None:
    """A review: a node without the shared folder mounted made it afresh on its own disk, ran the
    task and reported it delivered (exit 0): the campaign's ledger never heard of it."""
    python = tmp_path / "python"
    python.write_text(WRITES_A_RUN)
    python.chmod(0o755)
    destination = tmp_path / "fsx" / "runs"
    tasks, env = _task_env(tmp_path, destination, python)
    proc = subprocess.run(
        ["bash", str(REPO / "campaign" / "task.sh"), str(tasks)], env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2, proc.stderr
    assert f"the destination {destination} is not a folder on this node (not mounted here?)" in proc.stderr
    assert not (tmp_path / "fsx").exists() and not (tmp_path / "ran").exists()


def test_a_delivery_cut_short_leaves_no_part_of_the_run_in_the_destination(tmp_path: Path) -> None:
    """A review: `mv` of a run onto a full disk left its events.jsonl cut mid-line in the
    destination (a site then published a complete run as an incomplete, blocked one), and the
    log then said 'no run directory was written'. The run goes under a hidden name first; a
    copy cut short is removed, the run left in the scratch folder, and the failure said."""
    python = tmp_path / "python"
    python.write_text(WRITES_A_RUN)
    python.chmod(0o755)
    destination = tmp_path / "runs"
    destination.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # mv that fails as a copy onto a full disk does, once its target is a run: half a file there.
    (bin_dir / "mv").write_text(
        '#!/bin/bash\ncase "$2" in *.partial-*) mkdir -p "$2"; printf \'{"ki\' > "$2/events.jsonl"; '
        'echo "mv: No space left on device" >&2; exit 1;; esac\nexec /bin/mv "$@"\n'
    )
    (bin_dir / "mv").chmod(0o755)
    tasks, env = _task_env(tmp_path, destination, python, f"{bin_dir}:{os.environ['PATH']}")
    proc = subprocess.run(
        ["bash", str(REPO / "campaign" / "task.sh"), str(tasks)], env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 1, proc.stderr
    left = sorted(p.name for p in destination.iterdir())
    assert left == ["_campaigns"], left
    assert "could not deliver" in proc.stderr and "(left in place)" in proc.stderr
    assert "no run directory was written" not in proc.stderr
    assert (tmp_path / "scratch" / "c-1-0-s1-r0" / "runs" / "run-a" / "events.jsonl").is_file()
    record = json.loads((destination / "_campaigns" / "c-1" / "tasks" / "task-0.s1-r0.json").read_text())
    assert record["state"] == "failed" and record["runs"] == []


def test_a_stop_while_the_task_sets_up_is_recorded_as_a_stop(tmp_path: Path) -> None:
    """A review: task.sh trapped TERM only after writing its running record, so a job cancelled
    as it started died at once: its record read 'no record yet' (or 'running', then lost) and no
    'stopped' was ever written. The stop is trapped first, recorded, and no collector runs."""
    python = tmp_path / "python"
    python.write_text(WRITES_A_RUN)
    python.chmod(0o755)
    destination = tmp_path / "runs"
    destination.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    started = tmp_path / "copying"
    # cp, as the first delivery of the ledger runs it: slow, as an upload is.
    (bin_dir / "cp").write_text(f'#!/bin/bash\ntouch "{started}"\nsleep 1\nexec /bin/cp "$@"\n')
    (bin_dir / "cp").chmod(0o755)
    tasks, env = _task_env(tmp_path, destination, python, f"{bin_dir}:{os.environ['PATH']}")
    code, err, _ = _task_stopped_once(tasks, env, started, "the task never reached its ledger")
    assert code == 143, err
    assert "stopped before the collector started; nothing is run" in err
    assert not (tmp_path / "ran").exists()
    record = json.loads((destination / "_campaigns" / "c-1" / "tasks" / "task-0.s1-r0.json").read_text())
    assert record["state"] == "stopped" and record["exit_code"] == 143 and record["ended"]


def test_a_run_a_task_is_still_delivering_is_not_read_as_a_run(tmp_path: Path) -> None:
    """A review: the hidden name task.sh moves a run in under was read as a run all the same, so
    a site built during a delivery (or after one cut short) published half a log. It is named as
    skipped, and the finished runs beside it are read."""
    from reportgen.storage.local import find_logs

    sample = REPO / "sample_runs" / "tiny-encoder-cpu-20261206T150111Z-1dd183"
    dest = tmp_path / "dest"
    partial = dest / ".tiny-encoder-cpu-x.partial-4242"
    partial.mkdir(parents=True)
    (partial / "events.jsonl").write_bytes((sample / "events.jsonl").read_bytes()[:20000])
    shutil.copytree(sample, dest / sample.name)
    found = find_logs([dest])
    assert [p.path.parent.name for p in found.logs] == [sample.name]
    assert [(s.path, s.reason) for s in found.skipped] == [
        (
            partial,
            "a run a campaign task is delivering, or whose delivery was cut short; not read "
            "(once no task delivers, remove one cut short: its run is in that task's scratch folder)",
        )
    ]


def test_a_failed_kubernetes_task_with_retries_left_is_not_resubmitted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A review: a Kubernetes task that failed with backoff_limit_per_index retries left read
    'failed', and resume would submit it again while the Job controller retried the index itself:
    two runs of one task. Such a task reads 'retrying'; once its retries are spent, 'failed'."""
    folder = _planned(tmp_path / "runs", 3)
    planned = json.loads((folder / "planned.json").read_text())
    planned.update(scheduler="kubernetes", retries=2)
    (folder / "planned.json").write_text(json.dumps(planned))
    _record(folder, 0, "s1-r0", "failed", 3, [])  # one failure: the Job retries it
    _record(folder, 1, "s1-r0", "failed", 3, [])
    _record(folder, 1, "s1-r1", "failed", 3, [])
    _record(folder, 1, "s1-r2", "failed", 3, [])  # the last retry failed too
    _record(folder, 2, "s1-r0", "done", 0, ["tiny-encoder-cpu-done"])
    assert main(["status", str(folder)]) == 1
    out = capsys.readouterr().out
    lines = {int(line.split()[0]): line for line in out.splitlines() if line[:4].strip().isdigit()}
    assert "retrying" in lines[0] and "the scheduler runs it again itself (retry 1 of 2)" in lines[0], lines[0]
    assert "failed" in lines[1] and "retry" not in lines[1]
    assert (
        "1 that ended with retries left are run again by their Job itself: resume leaves them out unless given "
        "--include-unrecorded, once `kubectl get pods` shows the Job gone" in out
    ), out
    from campaign.ledger import read_ledger
    from reportgen.storage.ledgers import folder_access

    ledger = read_ledger(planned, *folder_access(folder), now=None)
    assert ledger.resumable() == [1] and ledger.retrying() == [0]
    # A ledger written before retries were recorded: a failure is a failure, as before.
    del planned["retries"]
    assert read_ledger(planned, *folder_access(folder), now=None).resumable() == [0, 1]


def test_status_of_a_slurm_campaign_with_stopped_tasks_says_a_requeued_one_runs_again_by_itself(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A review: after `scontrol requeue`, status said the task was stopped and to resume it, and
    resume ran it a second time beside Slurm's own requeue. The ledger cannot tell a requeue's
    stop from a time limit's: status says so."""
    folder = _ledger_of_five(tmp_path / "runs")
    _record(folder, 4, "s1-r0", "stopped", 143, ["tiny-encoder-cpu-4"])
    assert main(["status", str(folder)]) == 1
    out = capsys.readouterr().out
    assert "of the 1 stopped, one Slurm requeued (scontrol requeue, a preemption) runs again by itself" in out


def test_a_record_naming_a_log_elsewhere_says_it_was_not_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A review: a failed task's record naming its log '../../etc/passwd' (or a log missing from
    the ledger) showed no lines and no word why; nothing outside the ledger is read still."""
    folder = _ledger_of_five(tmp_path / "runs")
    record = folder / "tasks" / "task-1.s1-r0.json"
    data = json.loads(record.read_text())
    data["log"] = "../../etc/passwd"
    record.write_text(json.dumps(data))
    assert main(["status", str(folder)]) == 1
    out = capsys.readouterr().out
    assert "| (its record names the log '../../etc/passwd', not a file beside it: not read)" in out
    assert "root:" not in out
    data["log"] = "gone.log"
    record.write_text(json.dumps(data))
    assert main(["status", str(folder)]) == 1
    assert "| (its log tasks/gone.log is not in the ledger)" in capsys.readouterr().out
