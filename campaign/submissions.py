"""NAME.submission: what each submission of a campaign asked the scheduler for.

A task writes its first ledger record only when it starts, so the ledger in the destination
cannot tell a task waiting in the queue from one the scheduler never accepted. This file, beside
NAME.planned.json where `submit` and `resume` run, can: the scheduler and the script (or
manifest) the campaign was submitted with, and for each submission (1 by submit, then +1 by each
resume) its time, the tasks it asked for, the job that took each, and the tasks sbatch refused
with sbatch's reason. `status NAME.planned.json` and `resume` read it (``with_submissions``):

- a task whose latest submission sbatch refused, and which has no record of it, is
  ``unsubmitted`` (not submitted): `resume` submits it again; unless sbatch's answer says it
  timed out, when it may have queued the task anyway: that task is ``planned`` (it may be
  queued), and `resume` leaves it out unless --include-unrecorded;
- a task resubmitted, with no record of its latest submission yet, is ``planned``, as any task
  with no record yet (it may be queued): `resume` leaves it out unless --include-unrecorded;
- a Kubernetes resume only writes a manifest (the user creates it): its submission is recorded
  as ``printed``, which reserves its number but changes no task's state.

`submit` records nothing when sbatch refused every call (nothing was queued: submit again).
An older version wrote ``<campaign-id> <number>`` alone, and only from `resume`: its number is
read, and the campaign counts as accepted by the scheduler (its job unknown).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from campaign.ledger import MAX_INDEX, READ_ERRORS, UNRECORDED_WORDS, Ledger, LedgerError, strict_json, whole_number
from campaign.spec import MAX_PLANNED_BYTES, CampaignError, read_regular
from campaign.tasks import write_file

FORMAT = 1


@dataclass(frozen=True)
class Submission:
    number: int
    time: str
    tasks: tuple[int, ...]  # every task it asked for
    jobs: dict[int, str] = field(default_factory=dict)  # task -> the job that took it
    refused: dict[int, str] = field(default_factory=dict)  # task -> sbatch's reason
    printed: bool = False  # a manifest written for the user to create (Kubernetes), not submitted

    def as_json(self) -> dict[str, Any]:
        return {
            "submission": self.number,
            "time": self.time,
            "tasks": list(self.tasks),
            "jobs": [{"job": job, "tasks": [t for t, j in self.jobs.items() if j == job]} for job in _once(self.jobs)],
            "refused": [
                {"reason": why, "tasks": [t for t, r in self.refused.items() if r == why]}
                for why in _once(self.refused)
            ],
            **({"printed": True} if self.printed else {}),
        }


@dataclass(frozen=True)
class Submissions:
    """A campaign's submissions as NAME.submission records them (``last``: the highest number it
    gave out; ``earlier``: the number an older version's file held, which that version wrote only
    from `resume`, so the campaign was accepted; ``scheduler`` and ``wrapper``: what it was
    submitted to and with, None when unknown)."""

    campaign_id: str
    last: int
    submissions: tuple[Submission, ...] = ()
    scheduler: str | None = None
    wrapper: str | None = None
    earlier: int = 0

    def accepted(self) -> str | None:
        """What says the scheduler accepted this campaign, or may have ('job 4300'; the job unknown
        from an older version's file, or when sbatch timed out), None when nothing does."""
        job = next((job for s in self.submissions for job in s.jobs.values()), None)
        if job is not None:
            return f"job {job}"
        if self.earlier:
            return f"job unknown: an earlier version's resume recorded submission {self.earlier}"
        timed_out = next((s for s in self.submissions if any(map(may_have_queued, s.refused.values()))), None)
        if timed_out is not None:
            return (
                f"job unknown: sbatch timed out or was stopped on submission {timed_out.number}, and may have queued it"
            )
        printed = next((s for s in self.submissions if s.printed), None)
        if printed is not None:
            return f"its manifest written for kubectl create on submission {printed.number}, which may have created it"
        return None

    def added(self, submission: Submission) -> Submissions:
        """These submissions with ``submission`` in place of one with its number, or added."""
        kept = [s for s in self.submissions if s.number != submission.number]
        return replace(self, last=max(self.last, submission.number), submissions=(*kept, submission))


def now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _once(values: dict[int, str]) -> list[str]:
    return list(dict.fromkeys(values.values()))


def may_have_queued(reason: str) -> bool:
    """Whether sbatch's refusal leaves it unknown if the job was queued: sbatch can exit non-zero
    after the controller queued the job ("Socket timed out on send/recv operation"), and one
    stopped (it took too long, or Ctrl-C) may have queued it ("it may have queued the job")."""
    return "timed out" in reason.lower() or "may have queued" in reason.lower()


def read_submissions(path: Path) -> Submissions | None:
    """NAME.submission (None when there is none); LedgerError naming it when it is not one."""
    try:
        data = read_regular(path, MAX_PLANNED_BYTES)
    except (FileNotFoundError, NotADirectoryError):  # none here (writing there then fails, saying why)
        return None
    except (CampaignError, OSError) as exc:
        raise LedgerError(f"{path}: cannot read it ({getattr(exc, 'strerror', None) or exc})") from None
    try:
        words = data.decode("utf-8").split()
        if len(words) == 2 and words[1].isascii() and words[1].isdigit():  # an older version's
            number = max(1, min(int(words[1]), MAX_INDEX - 1))
            return Submissions(words[0], number, earlier=number)
        raw = strict_json(data)
        if not isinstance(raw, dict) or not isinstance(raw["campaign_id"], str):
            raise ValueError("not a JSON object with a campaign_id")
        found = tuple(_submission(item) for item in raw["submissions"])
        earlier = whole_number(raw.get("earlier_version_submission", 0), "earlier_version_submission", MAX_INDEX)
        last = max((s.number for s in found), default=earlier)
        scheduler, wrapper = raw.get("scheduler"), raw.get("wrapper")
        if scheduler not in (None, "slurm", "kubernetes") or not isinstance(wrapper, (str, type(None))):
            raise ValueError("scheduler or wrapper is not one")
        return Submissions(
            raw["campaign_id"], min(max(last, earlier), MAX_INDEX - 1), found, scheduler, wrapper, earlier
        )
    except (*READ_ERRORS, UnicodeDecodeError) as exc:
        detail = f"no key {exc}" if isinstance(exc, KeyError) else str(exc)
        raise LedgerError(f"{path}: not a record of a campaign's submissions ({detail})") from None


def _submission(raw: Any) -> Submission:
    tasks = tuple(_indexes(raw["tasks"]))
    jobs = {t: _text(item["job"], "job") for item in raw["jobs"] for t in _indexes(item["tasks"])}
    refused = {t: _text(item["reason"], "reason") for item in raw["refused"] for t in _indexes(item["tasks"])}
    number = whole_number(raw["submission"], "submission", MAX_INDEX)
    return Submission(number, _text(raw["time"], "time"), tasks, jobs, refused, raw.get("printed") is True)


def _text(value: Any, what: str) -> str:
    """A field this file writes as text (a job id, sbatch's line, a time): ValueError otherwise."""
    if not isinstance(value, str):
        raise ValueError(f"{what} is not text")
    return value


def _indexes(value: Any) -> list[int]:
    if not isinstance(value, list):
        raise ValueError("tasks is not a list of task indexes")
    return [whole_number(item, "task", MAX_INDEX) for item in value]


def write_submissions(path: Path, found: Submissions) -> None:
    """Write NAME.submission whole (raises OSError)."""
    document = {
        "format": FORMAT,
        "campaign_id": found.campaign_id,
        "scheduler": found.scheduler,
        "wrapper": found.wrapper,
        **({"earlier_version_submission": found.earlier} if found.earlier else {}),
        "submissions": [s.as_json() for s in sorted(found.submissions, key=lambda s: s.number)],
    }
    write_file(path, (json.dumps(document, indent=1) + "\n").encode("utf-8"))


def with_submissions(ledger: Ledger, found: Submissions | None) -> Ledger:
    """The ledger with what NAME.submission knows and its records cannot: a task whose latest
    submission has no record of it yet is ``unsubmitted`` when sbatch refused it, else it may be
    queued (``planned``, saying when it was resubmitted, or that sbatch timed out)."""
    unrecorded = _unrecorded_submissions(ledger, found)
    tasks = []
    for task in ledger.tasks:
        last = unrecorded.get(task.task)
        line = last.refused.get(task.task) if last is not None else None
        if last is not None and line is not None and may_have_queued(line):
            why = f"sbatch failed on submission {last.number} at {last.time} but may have queued it ({line}); {UNRECORDED_WORDS}"
            task = replace(task, state="planned", reason=why)
        elif last is not None and line is not None:
            why = f"not submitted: sbatch refused submission {last.number} at {last.time}: {line}"
            task = replace(task, state="unsubmitted", reason=why)
        elif last is not None and last.number > 1:
            task = replace(task, state="planned", reason=f"resubmitted as {_when(last, task.task)}; {UNRECORDED_WORDS}")
        tasks.append(task)
    return replace(ledger, tasks=tuple(tasks))


def resubmitted(ledger: Ledger, found: Submissions | None, indexes: list[int]) -> str:
    """Which of these tasks were resubmitted, or sbatch timed out on, and have no record of it
    yet, and when: a clause for `resume`'s message ('' when none was)."""
    unrecorded = _unrecorded_submissions(ledger, found)
    groups: dict[tuple[str, bool], list[str]] = {}
    for index in indexes:
        last = unrecorded.get(index)
        if last is None:
            continue
        if index in last.refused:
            if may_have_queued(last.refused[index]):
                groups.setdefault((f"submission {last.number} at {last.time}", True), []).append(str(index))
        elif last.number > 1:
            groups.setdefault((_when(last, index), False), []).append(str(index))
    return "; ".join(
        (
            f"{when} of task{'s' if len(group) > 1 else ''} {', '.join(group)} may be queued (sbatch timed out or was stopped)"
            if timed_out
            else f"task {group[0]} was resubmitted as {when} and has no record yet"
            if len(group) == 1
            else f"tasks {', '.join(group)} were resubmitted as {when} and have no record yet"
        )
        for (when, timed_out), group in groups.items()
    )


def _unrecorded_submissions(ledger: Ledger, found: Submissions | None) -> dict[int, Submission]:
    """Each task's latest submission, where the ledger has no record of it (a Kubernetes
    manifest written for the user to create is none: its tasks keep their state)."""
    if found is None or found.campaign_id != ledger.campaign_id:
        return {}
    latest: dict[int, Submission] = {}
    for submission in sorted(found.submissions, key=lambda s: s.number):
        if not submission.printed:
            latest.update(dict.fromkeys(submission.tasks, submission))
    return {
        task.task: latest[task.task]
        for task in ledger.tasks
        if task.task in latest and (task.latest is None or task.latest.submission < latest[task.task].number)
    }


def _when(submission: Submission, index: int) -> str:
    job = submission.jobs.get(index)
    return f"submission {submission.number} at {submission.time}{f' (job {job})' if job else ''}"
