"""What produced a run: the collector's version and git state, the files it read, and the
identity of its weights and inputs, as items a report lists and a diff compares.

Each item is (key, value, where): the key is stable across hosts (a file's role, not its
path), so two runs' items line up; ``where`` names the log field (and the path on the host).
"""

from __future__ import annotations

from dataclasses import dataclass

from reportgen.contract import events as ev
from reportgen.model.runmodel import RunModel

NOT_RECORDED = "not recorded (log before schema 1.2)"


@dataclass(frozen=True)
class Item:
    key: str
    value: str
    where: str


def _fact(fact: ev.Fact) -> str:
    return fact.value if fact.value is not None else f"unknown: {fact.unknown_reason}"


def _artifact_hashes(artifact: ev.Artifact) -> str:
    content = (
        f"content sha256 {artifact.content_sha256} ({artifact.content_recipe or 'recipe not named'})"
        if artifact.content_sha256
        else f"content not hashed{': ' + artifact.content_unknown_reason if artifact.content_unknown_reason else ' (log before schema 1.2)'}"
    )
    return f"{content}; file sha256 {artifact.sha256}"


def code_and_data(run: RunModel) -> list[Item]:
    """The collector, its git state, every file it read, and the weights and inputs by hash."""
    prov = run.start.provenance
    items = []
    if prov is None:
        items += [
            Item("collector", run.start.collector, "run_start.collector"),
            Item("collector git commit", NOT_RECORDED, "run_start.provenance"),
            Item("collector git dirty", NOT_RECORDED, "run_start.provenance"),
        ]
    else:
        items += [
            Item("collector", f"collector {prov.collector_version}", "run_start.provenance.collector_version"),
            Item("collector git commit", _fact(prov.git_commit), "run_start.provenance.git_commit"),
            Item("collector git dirty", _fact(prov.git_dirty), "run_start.provenance.git_dirty"),
        ]
        seen: dict[str, int] = {}
        for entry in prov.files:
            seen[entry.role] = seen.get(entry.role, 0) + 1
            key = entry.role if seen[entry.role] == 1 else f"{entry.role} {seen[entry.role]}"
            value = f"sha256 {entry.sha256}" if entry.sha256 else f"unknown: {entry.unknown_reason}"
            items.append(Item(f"{key.replace('_', ' ')}", value, f"run_start.provenance.files: {entry.path}"))
    for artifact in run.artifacts:
        if artifact.role in ("weights", "inputs") and artifact.case is None:
            items.append(Item(artifact.role, _artifact_hashes(artifact), f"artifact: {artifact.path}"))
    return items
