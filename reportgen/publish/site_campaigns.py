"""Campaign pages of the site: every planned task, with the runs of its attempts.

A campaign's ledger (reportgen/storage/ledgers.py) lists every task it planned. The site shows
each one: a task whose latest attempt delivered a complete run links that run (when the run's own
log says it is this task's: campaign.ledger.credit_problem; another is linked as not this
task's, with the reason); earlier attempts' runs are linked as superseded by it; a task with no complete run is **untested**, with the
reason its ledger gives (failed before writing a log with exit code N and the last lines of its
log, stopped by the scheduler, lost, no record yet: queued or never started), never left out. Data only; the template
campaign.html.j2 formats it.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field, replace

from campaign.ledger import Attempt, Ledger, TaskStatus, credit_problem
from reportgen.publish.summary import RunSummary

# Task states the ledger gives, in the reader's words.
STATE_WORDS = {
    "done": "done",
    "failed": "untested: the task failed",
    "stopped": "untested: stopped by the scheduler",
    "running": "untested: still running when the ledger was last written",
    "lost": "untested: lost (started, never finished)",
    "retrying": "untested: failed, run again by the scheduler itself",
    "planned": "untested: no record yet (queued, or never started)",
}


@dataclass(frozen=True)
class RunLink:
    run_id: str
    href: str | None  # None: the run is not on this site (not delivered, or not given to `site`)
    superseded_by: str | None = None
    complete: bool | None = None
    foreign: str | None = None  # why its log does not say it is the run of this task (credit_problem)


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
    tasks = tuple(_task(task, by_run, ledger) for task in ledger.tasks)
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


def _link(run_id: str, by_run: dict[str, RunSummary], ledger: Ledger, task: TaskStatus, attempt: Attempt) -> RunLink:
    summary = by_run.get(run_id)
    if summary is None:
        return RunLink(run_id, None)
    foreign = credit_problem(run_id, summary.started_as, ledger.campaign_id, task.task, attempt.attempt, task.target)
    return RunLink(run_id, f"runs/{summary.slug}/index.html", None, summary.complete, foreign)


def _task(task: TaskStatus, by_run: dict[str, RunSummary], ledger: Ledger) -> TaskRow:
    # Each attempt's runs, linked; the current run is the newest attempt's run whose log is
    # complete on this site and says it is this task's (campaign.ledger.credit_problem).
    linked = [[_link(run_id, by_run, ledger, task, attempt) for run_id in attempt.runs] for attempt in task.attempts]
    current = next((link for links in reversed(linked) for link in links if link.complete and not link.foreign), None)
    attempts = tuple(
        AttemptRow(
            attempt,
            tuple(
                replace(link, superseded_by=current.run_id)
                if current is not None and link.run_id != current.run_id and not link.foreign
                else link
                for link in links
            ),
        )
        for attempt, links in zip(task.attempts, linked)
    )
    untested = current is None
    state = task.state if untested or task.state == "done" else "done"
    words = STATE_WORDS.get(state, state) if untested else "done"
    reason = task.reason
    foreign = [link.foreign for links in linked for link in links if link.foreign]
    if untested and task.state == "done":
        named = ", ".join(task.latest.runs) if task.latest else "no run"
        words, reason = (
            ("untested: its run's log does not say it is this task's", "; ".join(foreign))
            if foreign
            else ("untested: its run is not on this site", f"the ledger names {named}")
        )
    return TaskRow(task.task, task.label, task.environment, state, words, reason, untested, current, attempts)
