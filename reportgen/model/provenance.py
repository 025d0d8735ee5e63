"""What produced a run: the collector's version and git state, the files it read, and the
identity of its weights and inputs, as items a report lists and a diff compares.

Each item is (key, value, where): the key is stable across hosts (a file's role, not its
path), so two runs' items line up; ``where`` names the log field (and the path on the host).
A local file the workload module imports (role ``workload_import``) is keyed by its path from
the module's folder ('workload import layers/block.py'), so the same helper lines up between
two runs whatever else either imports; a file of the collector's own (role ``collector_source``,
collector 0.24.0 on) by its path from the collector's folder ('collector source run/cells.py').
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass

from reportgen.contract import events as ev
from reportgen.model.runmodel import RunModel

NOT_RECORDED = "not recorded (log before schema 1.2)"
IMPORT_ROLE = "workload_import"
IMPORT_KEY = "workload import "  # then the file's path from the workload module's folder
READ_KEY = "workload read "  # a file the workload read as it ran (1.6), keyed as an import is
PACKAGE_KEY = "package "  # then an installed distribution's name (1.6)
READS_ITEM = "files the workload read and packages it ran on"
SOURCE_ROLE = "collector_source"  # collector/provenance.py
SOURCE_KEY = "collector source "  # then the file's path from the collector's folder
SOURCES_ITEM = "collector's own files"  # that the log hashed them (judge.changes reads it)
# Listed one by one, of the workload's imports (the collector hashes at most 256) and of the
# other files (the collector reads six or so); beyond, one line with a digest of the rest.
MOST_FILES = 300
LONGEST_NAME = 160  # an imported file's name longer than this is named by its length and digest


# The schema version whose plans state where the weights come from (the workload's WEIGHTS_ORIGIN).
WEIGHTS_ORIGIN_FROM = (1, 4)
ORIGIN_WORDS = {
    "pretrained": "pretrained: trained weights from a named source",
    "synthetic": "synthetic: made up (a seeded initialisation), never trained",
    "none": "none: the workload has no learned weights",
}


def weights_origin_words(run: RunModel) -> str:
    """Where the run's weights come from, in words, and how that is known."""
    origin = run.plan.weights_origin if run.plan is not None else None
    if origin is not None:
        return f"{ORIGIN_WORDS[origin]} (as the workload states it)"
    if run.plan is None:
        return "not recorded (no plan)"
    if not origin_recorded(run.plan):
        return "not recorded (a log written before schema 1.4)"
    return "not stated by the workload (its module has no WEIGHTS_ORIGIN)"


def origin_recorded(plan: ev.Plan) -> bool:
    """Whether the plan's schema records the weights' origin (absent then: not stated)."""
    return ev.schema_tuple(plan.schema_version) >= WEIGHTS_ORIGIN_FROM


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
    # The event schema the collector wrote: two generations of collector 0.1.0 wrote 1.0 and 1.1
    # under one version string, and only this tells them apart.
    items = [Item("collector event schema", run.start.schema_version, "run_start.schema_version")]
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
        folder = _module_folder(prov.files)
        imports = [e for e in prov.files if e.role == IMPORT_ROLE]
        sources = [e for e in prov.files if e.role == SOURCE_ROLE]
        others = [e for e in prov.files if e.role not in (IMPORT_ROLE, SOURCE_ROLE)]
        own = _collector_folder([e.path for e in sources])
        if sources:
            items.append(Item(SOURCES_ITEM, f"{len(sources):,} file(s) hashed", "run_start.provenance.files"))
        for entry in others[:MOST_FILES] + sources[:MOST_FILES] + imports[:MOST_FILES]:
            if entry.role == IMPORT_ROLE:
                role = IMPORT_KEY + _imported_name(entry.path, folder)
            elif entry.role == SOURCE_ROLE:
                role = SOURCE_KEY + _imported_name(entry.path, own)
            else:
                role = entry.role.replace("_", " ")
            seen[role] = seen.get(role, 0) + 1
            key = role if seen[role] == 1 else f"{role} {seen[role]}"
            items.append(Item(key, _file_value(entry), f"run_start.provenance.files: {entry.path}"))
        for group, what, base in (
            (others, "files read", None),
            (sources, "collector files", own),
            (imports, "workload imports", folder),
        ):
            if len(group) > MOST_FILES:
                items.append(_beyond(group, what, base))
    items += workload_read_items(run, _module_folder(prov.files) if prov is not None else None)
    for artifact in run.artifacts:
        if artifact.role in ("weights", "inputs") and artifact.case is None:
            items.append(Item(artifact.role, _artifact_hashes(artifact), f"artifact: {artifact.path}"))
    return items


def workload_read_items(run: RunModel, folder: str | None) -> list[Item]:
    """What the workload read and ran on beyond run_start's files (the workload_reads event, 1.6):
    each file keyed 'workload read' and its path from the module's folder, each package
    'package' and its distribution name; none where the log has no such event."""
    reads = run.workload_reads
    if reads is None:
        return []
    where = "workload_reads"
    items = [Item(READS_ITEM, "recorded", where)]  # that the log has the event (judge.changes reads it)
    items += [
        Item(READ_KEY + _imported_name(entry.path, folder), _file_value(entry), f"{where}.files: {entry.path}")
        for entry in reads.files[:MOST_FILES]
    ]
    if len(reads.files) > MOST_FILES:
        items.append(_beyond(reads.files, "files the workload read", folder))
    if reads.files_more:
        items.append(
            Item("files the workload read, beyond those listed", f"{reads.files_more:,}", f"{where}.files_more")
        )
    # A package the environment event names already (torch, a backend's stack) is named there.
    named = {key.replace("_", "-").lower() for key in (run.environment.versions if run.environment else {})}
    # Names and versions are the log's text: one too long to name is given by its digest.
    items += [
        Item(PACKAGE_KEY + _imported_name(name, None), _imported_name(version, None), f"{where}.packages")
        for name, version in list(reads.packages.items())[:MOST_FILES]
        if name.replace("_", "-").lower() not in named
    ]
    return items


def _beyond(group: list[ev.ProvenanceFile], what: str, folder: str | None) -> Item:
    """One line for the entries of ``group`` past the first MOST_FILES: their count and a digest
    of their paths (from ``folder``, as their keys name them: the same files on two hosts digest
    alike) and hashes, so a change among them is still a change."""
    rest = [(e.role, _imported_name(e.path, folder), _file_value(e)) for e in group[MOST_FILES:]]
    digest = hashlib.sha256(repr(rest).encode("utf-8", "replace")).hexdigest()[:12]
    return Item(
        f"{what} beyond the first {MOST_FILES}",
        f"{len(rest):,} files ({len(group):,} in all), their paths and hashes sha256 {digest}...",
        "run_start.provenance.files",
    )


def _file_value(entry: ev.ProvenanceFile) -> str:
    return f"sha256 {entry.sha256}" if entry.sha256 else f"unknown: {entry.unknown_reason}"


def _module_folder(files: list[ev.ProvenanceFile]) -> str | None:
    """The workload module's folder as the log names it, with its final slash (None if unnamed)."""
    module = next((e.path for e in files if e.role == "workload_module"), None)
    return module.rsplit("/", 1)[0] + "/" if module and "/" in module else None


def _collector_folder(paths: list[str]) -> str | None:
    """The collector's folder, with its final slash, from the paths of its own files: the folder
    of its ``__main__.py`` (the shallowest, where a folder below holds another), else the folder
    every path lies in (None if they name none)."""
    mains = [p[: -len("__main__.py")] for p in paths if p.endswith("/__main__.py")]
    if mains:
        return min(mains, key=len)
    prefix = os.path.commonprefix(paths) if paths else ""
    return prefix.rsplit("/", 1)[0] + "/" if "/" in prefix else None


def _imported_name(path: str, folder: str | None) -> str:
    """The imported file's path from the workload module's folder ('layers/block.py'), the same
    on every host; its whole path when the log names no module folder it lies in."""
    name = path[len(folder) :] if folder and path.startswith(folder) and len(path) > len(folder) else path
    if len(name) > LONGEST_NAME:
        return f"({len(name)} characters, sha256 {hashlib.sha256(name.encode('utf-8', 'replace')).hexdigest()[:12]}...)"
    return name


def installed_words(artifact: ev.InstalledArtifact) -> str:
    """An installed distribution in words: '2.13.0+cpu via pip; tags cp311-...; from URL'."""
    return (
        f"{artifact.version} via {artifact.installer or 'unknown installer'}; tags {', '.join(artifact.wheel_tags) or 'none'}"
        + (f"; from {artifact.source_url}" if artifact.source_url else "")
    )
