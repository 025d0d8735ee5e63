"""The campaign ledger: every planned task and what became of each attempt.

Layout under the destination (a folder or an s3:// prefix)::

    _campaigns/<campaign-id>/planned.json                   every planned task
    _campaigns/<campaign-id>/tasks/task-<i>.<attempt>.json  one record per attempt (task.sh)
    _campaigns/<campaign-id>/tasks/task-<i>.<attempt>.log   that attempt's output, never overwritten

An attempt is ``s<submission>-r<restart>``: the submission (1, then +1 for each resume) and the
scheduler's retries of that index (Slurm requeues, Kubernetes index failures). A task's state
is its latest attempt's: ``done`` (a run delivered, exit 0), ``failed`` (exit code and the last
lines of its log), ``stopped`` (ended by the scheduler's stop signal), ``running``, ``lost``
(running longer than the campaign's time limit allows, with no final record: the node or the
task died without a word), or ``planned`` (no attempt has written anything: the task may be
waiting in the scheduler's queue, or may never have started; the ledger cannot tell which).
Beside NAME.planned.json, NAME.submission tells two more (campaign/submissions.py): a task sbatch
refused is ``unsubmitted``, and a resubmitted one with no record of that submission yet is
``planned`` again.

A ``done`` record is the task script's word; the run it names is the evidence. ``status``
reads the first line of each named run's log at the destination (``verify_runs``) and the site
reads its runs' logs: a run counts for its task only when its ``run_start`` says a campaign task
wrote it as this task of this campaign, in this attempt, for the planned target
(``credit_problem``). Otherwise the task is ``unverified`` (not done: ``resume`` runs it again).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Protocol

LEDGER_DIR = "_campaigns"
TAIL_LINES = 12
# A tail line is cut to this many characters (a log line of megabytes, printed by status and
# shown on the site, would bury every other task's).
TAIL_LINE_CHARS = 1000
# A failed attempt's log is read from its end, at most this many bytes, whatever its size (a
# collector's output over a long matrix may pass any limit on a whole file).
TAIL_BYTES = 1 << 20
# Attempt records a ledger may hold: ten for each task of the largest campaign (spec.MAX_TASKS,
# 10,000), submissions and the scheduler's retries together. More is refused: status reads
# every one, and memory grows with each (about 1 kB). tasks/ holds a record and a log for each.
MAX_RECORDS = 100_000
MAX_TASK_FILES = 2 * MAX_RECORDS + 1000
# Slack on top of the time limit before a silent running attempt counts as lost.
LOST_AFTER_EXTRA_S = 600
# Bounds on what a ledger may say. A task index, submission or restart is a scheduler's array
# index or count (Slurm and Kubernetes keep them within 32 bits); a time limit, with the slack
# on top, must fit a timedelta (a campaign file's limit was never refused for its size).
MAX_INDEX = 2**31 - 1
MAX_DEADLINE_S = timedelta.max.days * 86400 - LOST_AFTER_EXTRA_S
# What decoding and checking a hostile ledger file can raise: bad JSON or values, a missing
# key, a wrong type, a number too large for int(), nesting too deep for the JSON decoder.
READ_ERRORS = (ValueError, KeyError, TypeError, OverflowError, RecursionError)
# The states of a task that ran and did not finish well, or that sbatch refused (``unsubmitted``,
# known from NAME.submission: campaign/submissions.py): `resume` submits these again. A
# ``planned`` task is not among them: with no record it may still be queued (a pending Slurm
# array task, a Pending pod), and submitting it again would run it twice.
RESUMABLE = ("failed", "stopped", "lost", "unverified", "unsubmitted")
UNRECORDED_WORDS = "no record yet: queued, or never started"
# The states campaign/task.sh writes into an attempt's record; any other is no task record.
RECORDED_STATES = ("running", "done", "failed", "stopped")
# planned.json's "format" (campaign/tasks.py writes it); another is not read.
LEDGER_FORMAT = 1


class LedgerError(ValueError):
    """The ledger cannot be read; the message names the file."""


def strict_json(data: bytes | str) -> Any:
    """Decoded JSON in which no object repeats a key (ValueError otherwise): json.loads keeps
    the last of them, so a record saying "done" and then "failed" would read as failed."""
    return json.loads(data, object_pairs_hook=_unique_keys)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise ValueError(f"the key {key!r} is repeated")
        found[key] = value
    return found


def check_planned(planned: dict[str, Any]) -> None:
    """ValueError when planned.json is not one submit writes: another format, or a task list
    that is empty or names a task twice (status would count it twice, or show a campaign of
    no tasks as finished)."""
    if "format" not in planned:
        raise ValueError("no format")
    if type(planned["format"]) is not int or planned["format"] != LEDGER_FORMAT:  # nor true, nor 1.0
        raise ValueError(f"format {planned['format']!r:.40}, not {LEDGER_FORMAT}")
    tasks = planned.get("tasks")
    if not isinstance(tasks, list) or not tasks:
        raise ValueError("no planned task")
    seen: set[int] = set()
    for task in tasks:
        if not isinstance(task, dict):
            raise ValueError("a task is not a JSON object")
        index = whole_number(task.get("task"), "task", MAX_INDEX)
        if index in seen:
            raise ValueError(f"task {index} is listed twice")
        seen.add(index)


@dataclass(frozen=True)
class Attempt:
    task: int
    attempt: str
    submission: int
    restart: int
    state: str
    exit_code: int | None
    node: str
    job_id: str
    started: str
    ended: str | None
    runs: tuple[str, ...]
    log: str
    tail: tuple[str, ...] = ()

    @property
    def order(self) -> tuple[int, int]:
        return (self.submission, self.restart)


@dataclass(frozen=True)
class TaskStatus:
    task: int
    label: str
    environment: str
    state: str
    attempts: tuple[Attempt, ...] = field(default_factory=tuple)
    reason: str = ""
    target: str | None = None  # the planned target (planned.json), which its run must record

    @property
    def latest(self) -> Attempt | None:
        return self.attempts[-1] if self.attempts else None

    def as_json(self) -> dict[str, Any]:
        latest = self.latest
        return {
            "task": self.task,
            "label": self.label,
            "environment": self.environment,
            "state": self.state,
            "reason": self.reason,
            "runs": list(latest.runs) if latest else [],
            "exit_code": latest.exit_code if latest else None,
            "attempts": [
                {
                    "attempt": a.attempt,
                    "state": a.state,
                    "exit_code": a.exit_code,
                    "node": a.node,
                    "job_id": a.job_id,
                    "started": a.started,
                    "ended": a.ended,
                    "runs": list(a.runs),
                    "log": a.log,
                    "tail": list(a.tail),
                }
                for a in self.attempts
            ],
        }


@dataclass(frozen=True)
class Ledger:
    campaign: str
    campaign_id: str
    scheduler: str
    destination: str
    tasks: tuple[TaskStatus, ...]

    def counts(self) -> dict[str, int]:
        found: dict[str, int] = {}
        for task in self.tasks:
            found[task.state] = found.get(task.state, 0) + 1
        return dict(sorted(found.items()))

    def not_done(self) -> list[int]:
        """Every task neither done nor still running (an unverified one too: no run of it shows
        it done), those with no record yet included."""
        return [t.task for t in self.tasks if t.state not in ("done", "running")]

    def resumable(self) -> list[int]:
        """The tasks that ran and did not finish well, or sbatch refused (RESUMABLE): what
        `resume` submits again."""
        return [t.task for t in self.tasks if t.state in RESUMABLE]

    def retrying(self) -> list[int]:
        """The tasks the scheduler runs again itself (a failed attempt with retries left)."""
        return [t.task for t in self.tasks if t.state == "retrying"]

    def unrecorded(self) -> list[int]:
        """The tasks no attempt has written a record for: queued or never started. Only the
        scheduler's queue tells which, so `resume` submits them again only when asked."""
        return [t.task for t in self.tasks if t.state == "planned"]

    def next_submission(self) -> int:
        return 1 + max((a.submission for t in self.tasks for a in t.attempts), default=1)


class Reader(Protocol):
    def __call__(self, name: str, tail: int = 0) -> bytes | None:
        """A file's bytes under the ledger folder (None if absent), within the side-file limit;
        with ``tail``, only its last ``tail`` + 1 bytes at most, whatever its size."""


Lister = Callable[[str], list[str]]  # the file names in a sub-folder of the ledger folder


def read_ledger(planned: dict[str, Any], read: Reader, names: Lister, now: datetime | None) -> Ledger:
    """Join the planned tasks with every attempt record found under the ledger folder.

    ``now`` decides when a silent running attempt counts as lost: the clock for `status`;
    None for a page that must depend only on the ledger (the newest time it records)."""
    try:
        check_planned(planned)
    except READ_ERRORS as exc:
        raise LedgerError(f"planned.json: not a campaign's planned tasks ({exc})") from None
    deadline = deadline_seconds(planned.get("deadline_s"))
    retries = whole_number(planned.get("retries", 0), "retries", MAX_INDEX)
    by_task: dict[int, list[Attempt]] = {}
    records = [name for name in names("tasks") if name.endswith(".json")]
    if len(records) > MAX_RECORDS:
        raise LedgerError(f"tasks/: {len(records):,} task records, more than the {MAX_RECORDS:,} a ledger may hold")
    for name in records:
        attempt = _attempt(name, read(f"tasks/{name}"))
        if attempt is not None:
            by_task.setdefault(attempt.task, []).append(attempt)
    if now is None:
        stamps = (
            parse_time(stamp) for found in by_task.values() for a in found for stamp in (a.started, a.ended or "")
        )
        now = max((s for s in stamps if s is not None), default=datetime(1970, 1, 1, tzinfo=timezone.utc))
    statuses = []
    for task in planned["tasks"]:
        index = whole_number(task["task"], "task", MAX_INDEX)
        attempts = sorted(by_task.get(index, []), key=lambda a: a.order)
        attempts = [_with_tail(a, read) for a in attempts]
        state, reason = _state(attempts, deadline, now, retries)
        statuses.append(
            TaskStatus(
                index,
                str(task.get("label", index)),
                str(task.get("environment", "")),
                state,
                tuple(attempts),
                reason,
                task["target"] if isinstance(task.get("target"), str) else None,
            )
        )
    return Ledger(
        str(planned.get("campaign", "")),
        str(planned.get("campaign_id", "")),
        str(planned.get("scheduler", "")),
        str(planned.get("destination", "")),
        tuple(statuses),
    )


# A task record is a few hundred bytes, and each of its texts short: task.sh writes a host name,
# a job id, two timestamps, a log's file name and the run folders made. Longer is no record
# task.sh wrote (a 15 MB node name, hard-linked 200 times, took a site build to 12 GB).
MAX_RECORD_BYTES = 64 << 10
MAX_TEXT = {"attempt": 100, "node": 255, "job_id": 255, "started": 64, "ended": 64, "log": 255}


def _text(raw: dict[str, Any], key: str) -> str:
    text = str(raw[key])
    if len(text) > MAX_TEXT[key]:
        raise ValueError(f"{key} is longer than {MAX_TEXT[key]} characters")
    return text


def _attempt(name: str, data: bytes | None) -> Attempt | None:
    if data is None:
        return None
    try:
        if len(data) > MAX_RECORD_BYTES:
            raise ValueError(f"{len(data):,} bytes, more than a record holds ({MAX_RECORD_BYTES:,})")
        raw = strict_json(data)
        if not isinstance(raw, dict):
            raise ValueError("not a JSON object")
        if raw["state"] not in RECORDED_STATES:
            raise ValueError(f"state {raw['state']!r:.60} is none of {', '.join(RECORDED_STATES)}")
        return Attempt(
            task=whole_number(raw["task"], "task", MAX_INDEX),
            attempt=_text(raw, "attempt"),
            submission=whole_number(raw["submission"], "submission", MAX_INDEX),
            restart=whole_number(raw["restart"], "restart", MAX_INDEX),
            state=raw["state"],
            exit_code=None if raw["exit_code"] is None else whole_number(raw["exit_code"], "exit_code", MAX_INDEX),
            node=_text(raw, "node"),
            job_id=_text(raw, "job_id"),
            started=_text(raw, "started"),
            ended=None if raw["ended"] is None else _text(raw, "ended"),
            runs=_names(raw["runs"], "runs"),  # each name is checked where it is looked for (unverified)
            log=_text(raw, "log"),
        )
    except READ_ERRORS as exc:
        raise LedgerError(f"tasks/{name}: not a task record ({exc})") from None


def whole_number(value: Any, key: str, most: int) -> int:
    """A count or index the ledger holds: a JSON integer from 0 to ``most``, never a float
    (Infinity, 1e308) or a bool that int() would turn into a number."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= most:
        raise ValueError(f"{key} is not a whole number from 0 to {most}")
    return value


def deadline_seconds(value: Any) -> float:
    """The campaign's time limit per task in seconds (``deadline_s``; absent or null: none),
    checked so that the time after which a silent attempt counts as lost is a timedelta."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= MAX_DEADLINE_S:
        raise ValueError(f"deadline_s is not a number of seconds from 0 to {MAX_DEADLINE_S}")
    return value


def _names(value: Any, key: str) -> tuple[str, ...]:
    """A list of strings (a string is not one: it would read as its letters)."""
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError(f"{key} is not a list of strings")
    return tuple(value)


def _with_tail(attempt: Attempt, read: Reader) -> Attempt:
    if attempt.state in ("done", "running"):
        return attempt
    if "/" in attempt.log or attempt.log in ("", ".", ".."):
        # task.sh names the log beside its record: a path elsewhere is not read, and said so.
        return _tail_note(attempt, f"(its record names the log {attempt.log[:80]!r}, not a file beside it: not read)")
    data = read(f"tasks/{attempt.log}", tail=TAIL_BYTES)
    if data is None:
        return _tail_note(attempt, f"(its log tasks/{attempt.log[:80]} is not in the ledger)")
    lines = _last_lines(data)
    return Attempt(**{**attempt.__dict__, "tail": tuple(_cut(line) for line in lines)})


def _tail_note(attempt: Attempt, note: str) -> Attempt:
    return Attempt(**{**attempt.__dict__, "tail": (note,)})


def _last_lines(data: bytes) -> list[str]:
    """The last TAIL_LINES lines of a log read from its end (TAIL_BYTES + 1 bytes: more than
    TAIL_BYTES when the log is longer). A line begun before the bytes read is dropped, or, when
    it is the only one, marked and shown by its end (where a failure says what it was)."""
    if len(data) > TAIL_BYTES:
        first, data = data[:1], data[1:]
        if first != b"\n":  # the first line read is the end of a longer one
            end = data.find(b"\n")
            if 0 <= end < len(data) - 1:
                data = data[end + 1 :]
            else:
                data = b"[...] " + data.rstrip(b"\n")[-(TAIL_LINE_CHARS - len("[...] ")) :]
    return data.decode("utf-8", "replace").splitlines()[-TAIL_LINES:]


def _cut(line: str) -> str:
    if len(line) <= TAIL_LINE_CHARS:
        return line
    return f"{line[:TAIL_LINE_CHARS]} [... {len(line) - TAIL_LINE_CHARS:,} more characters]"


def _state(attempts: list[Attempt], deadline_s: float, now: datetime, retries: int = 0) -> tuple[str, str]:
    if not attempts:
        return "planned", UNRECORDED_WORDS
    latest = attempts[-1]
    if latest.state == "running":
        started = parse_time(latest.started)
        if deadline_s and started and now - started > timedelta(seconds=deadline_s + LOST_AFTER_EXTRA_S):
            return "lost", f"attempt {latest.attempt} started {latest.started} on {latest.node} and never finished"
        return "running", f"attempt {latest.attempt} on {latest.node} since {latest.started}"
    if latest.state == "done":
        return "done", f"run {', '.join(latest.runs)}"
    ended = (
        f"attempt {latest.attempt} was stopped by the scheduler (exit {latest.exit_code})"
        if latest.state == "stopped"
        else f"attempt {latest.attempt} exited {latest.exit_code}"
    )
    if latest.restart < retries:
        # The Job runs this index again itself (a retry of it, not a resume): submitted again
        # now, it would run twice.
        return "retrying", f"{ended}; the scheduler runs it again itself (retry {latest.restart + 1} of {retries})"
    return ("stopped" if latest.state == "stopped" else "failed"), ended


# What a run's first line must say to be the evidence of a done task (campaign/task.sh exports
# them; collector/facts.py writes them into run_start.scheduled).
def credit_problem(
    run: str, start: Any, campaign_id: str, task: int, attempt: str | None, target: str | None
) -> str | None:
    """Why ``run``, whose log begins with the run_start ``start`` (a dict, or the reason no
    run_start could be read, as a string), is not the run that ``attempt`` of ``task`` of the
    campaign ``campaign_id`` delivered for ``target``; None when its log says it is."""
    if isinstance(start, str):
        return f"run {run}: {start}"
    scheduled = start.get("scheduled") if isinstance(start, dict) else None
    if not isinstance(scheduled, dict):
        return f"run {run}: its log does not say a campaign task wrote it"
    said = (scheduled.get("campaign_id"), scheduled.get("task_index"), scheduled.get("attempt"))
    if said[0] != campaign_id:
        return f"run {run}: its log says campaign {said[0]!r}, not {campaign_id!r}"
    if type(said[1]) is not int or said[1] != task:  # a JSON true is no task 1, nor false task 0
        return f"run {run}: its log says task {said[1]!r}, not task {task}"
    if attempt is not None and said[2] != attempt:
        return f"run {run}: its log says attempt {said[2]!r}, not {attempt!r}"
    if target is not None and start.get("target") != target:
        return f"run {run}: its log says target {start.get('target')!r}, the task planned {target!r}"
    return None


StartReader = Callable[[str], Any]  # a run name -> its run_start (a dict), or why none was read
RUNS_CHECKED = 16  # run names of one done record read at most


def verify_runs(ledger: Ledger, read_start: StartReader) -> Ledger:
    """The ledger with each done task checked against its runs' logs: a task none of whose
    named runs is its own by its log (credit_problem) is ``unverified``, with the reasons."""
    tasks = []
    for task in ledger.tasks:
        latest = task.latest
        if task.state == "done" and latest is not None:
            # Each name once, and at most RUNS_CHECKED of them (an attempt delivers one run, or a
            # few): a record naming thousands is checked no further than that.
            names = list(dict.fromkeys(latest.runs))
            problems = []
            for run in names[:RUNS_CHECKED]:
                problem = credit_problem(
                    run, read_start(run), ledger.campaign_id, task.task, latest.attempt, task.target
                )
                if problem is None:
                    break
                problems.append(problem)
            else:
                if not names:
                    problems = [f"attempt {latest.attempt} says done and names no run"]
                elif len(names) > RUNS_CHECKED:
                    problems.append(f"and {len(names) - RUNS_CHECKED:,} more run names, not checked")
                shown = problems[:3] + ([f"{len(problems) - 3:,} more"] if len(problems) > 3 else [])
                task = replace(task, state="unverified", reason="; ".join(_cut(p) for p in shown))
        tasks.append(task)
    return replace(ledger, tasks=tuple(tasks))


def parse_time(text: str) -> datetime | None:
    try:
        return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    except ValueError:
        return None
