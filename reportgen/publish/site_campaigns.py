"""Campaign pages of the site: every planned task, with the runs of its attempts.

A campaign's ledger (reportgen/storage/ledgers.py) lists every task it planned. The site shows
each one: a task whose latest attempt delivered a complete run links that run; earlier attempts'
runs are linked as superseded by it; a task with no complete run is **untested**, with the
reason its ledger gives (failed before writing a log with exit code N and the last lines of its
log, stopped by the scheduler, lost, never started), never left out. Data only; the template
campaign.html.j2 formats it.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

from campaign.ledger import Attempt, Ledger, TaskStatus
from reportgen.publish.summary import RunSummary

# Task states the ledger gives, in the reader's words.
STATE_WORDS = {
    "done": "done",
    "failed": "untested: the task failed",
    "stopped": "untested: stopped by the scheduler",
    "running": "untested: still running when the ledger was last written",
    "lost": "untested: lost (started, never finished)",
    "planned": "untested: never started",
}


@dataclass(frozen=True)
class RunLink:
    run_id: str
    href: str | None  # None: the run is not on this site (not delivered, or not given to `site`)
    superseded_by: str | None = None
    complete: bool | None = None


@dataclass(frozen=True)
class AttemptRow:
    """One attempt as the ledger recorded it, with its runs linked into this site."""

    record: Attempt
    runs: tuple[RunLink, ...]


@dataclass(frozen=True)
class TaskRow:
    task: int
    label: str
    environment: str
    state: str
    words: str
    reason: str
    untested: bool
    current: RunLink | None
    attempts: tuple[AttemptRow, ...]


@dataclass(frozen=True)
class CampaignPage:
    campaign: str
    campaign_id: str
    slug: str
    scheduler: str
    destination: str
    tasks: tuple[TaskRow, ...]
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def href(self) -> str:
        return f"campaigns/{self.slug}/index.html"

    @property
    def untested(self) -> int:
        return sum(1 for t in self.tasks if t.untested)


def campaign_slug(campaign_id: str) -> str:
    """An ASCII slug that is also a safe page name: readable part plus a hash of the id."""
    readable = re.sub(r"[^A-Za-z0-9._-]+", "-", campaign_id).strip("-._")[:80] or "campaign"
    return f"{readable}-{hashlib.sha256(campaign_id.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"


def campaign_pages(ledgers: list[Ledger], summaries: list[RunSummary]) -> list[CampaignPage]:
    by_run = {s.run_id: s for s in summaries}
    return [_page(ledger, by_run) for ledger in ledgers]


def _page(ledger: Ledger, by_run: dict[str, RunSummary]) -> CampaignPage:
    tasks = tuple(_task(task, by_run) for task in ledger.tasks)
    counts: dict[str, int] = {}
    for task in tasks:
        key = "done" if not task.untested else "untested"
        counts[key] = counts.get(key, 0) + 1
    return CampaignPage(
        ledger.campaign,
        ledger.campaign_id,
        campaign_slug(ledger.campaign_id),
        ledger.scheduler,
        ledger.destination,
        tasks,
        dict(sorted(counts.items())),
    )


def _link(run_id: str, by_run: dict[str, RunSummary], superseded_by: str | None = None) -> RunLink:
    summary = by_run.get(run_id)
    if summary is None:
        return RunLink(run_id, None, superseded_by)
    return RunLink(run_id, f"runs/{summary.slug}/index.html", superseded_by, summary.complete)


def _task(task: TaskStatus, by_run: dict[str, RunSummary]) -> TaskRow:
    # The current run: the newest attempt's run whose log is complete on this site.
    current: RunLink | None = None
    for attempt in reversed(task.attempts):
        for run_id in attempt.runs:
            link = _link(run_id, by_run)
            if link.complete:
                current = link
                break
        if current is not None:
            break
    attempts = []
    for attempt in task.attempts:
        runs = []
        for run_id in attempt.runs:
            superseded = current.run_id if current is not None and run_id != current.run_id else None
            runs.append(_link(run_id, by_run, superseded))
        attempts.append(AttemptRow(attempt, tuple(runs)))
    untested = current is None
    state = task.state if untested or task.state == "done" else "done"
    words = STATE_WORDS.get(state, state) if untested else "done"
    reason = task.reason
    if untested and task.state == "done":
        words, reason = (
            "untested: its run is not on this site",
            f"the ledger names {', '.join(task.latest.runs) if task.latest else 'no run'}",
        )
    return TaskRow(task.task, task.label, task.environment, state, words, reason, untested, current, tuple(attempts))
