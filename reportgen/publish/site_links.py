"""The links a run page on the site carries to its neighbours: the previous and next run of
the same workload on the same target, and every comparison page the run is a side of.

They depend on other runs, so a run page whose links changed is rendered again even when its
own log did not change (site.py keeps each page's links key in the state file).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field

from reportgen.publish.site_compare import ComparisonLink
from reportgen.publish.site_rows import shown_stamp, utc_stamp
from reportgen.publish.summary import RunSummary


@dataclass(frozen=True)
class Link:
    label: str
    href: str  # relative to the run page (runs/<slug>/index.html)
    note: str = ""


@dataclass(frozen=True)
class RunLinks:
    scope: str  # "tiny-encoder on cpu": what previous and next are taken within
    previous: Link | None = None
    next: Link | None = None
    comparisons: tuple[Link, ...] = field(default_factory=tuple)

    @property
    def key(self) -> str:
        """Changes exactly when the links shown change."""
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()


def _run_link(summary: RunSummary) -> Link:
    return Link(
        summary.run_id, f"../{summary.slug}/index.html", f"started {shown_stamp(utc_stamp(summary.started_at))} UTC"
    )


def run_links(summaries: list[RunSummary], comparisons: list[ComparisonLink]) -> dict[str, RunLinks]:
    """Each run's links by its page slug. Runs on another target are never a neighbour: a
    history is per target, as on the workload page."""
    histories: dict[tuple[str, str], list[RunSummary]] = {}
    for s in sorted(summaries, key=lambda s: s.sort_key):
        histories.setdefault((s.workload, s.target), []).append(s)
    sides: dict[str, list[Link]] = {}
    for c in sorted(comparisons, key=lambda c: c.href):
        label = f"{c.candidate_target} against {c.baseline_target}"
        for run_id, role in ((c.baseline, "baseline"), (c.candidate, "candidate")):
            sides.setdefault(run_id, []).append(Link(label, f"../../{c.href}", f"this run is the {role}"))
    links = {}
    for (workload, target), history in histories.items():
        for n, s in enumerate(history):
            links[s.slug] = RunLinks(
                scope=f"{workload} on {target}",
                previous=_run_link(history[n - 1]) if n > 0 else None,
                next=_run_link(history[n + 1]) if n + 1 < len(history) else None,
                comparisons=tuple(sides.get(s.run_id, [])),
            )
    return links
