"""What each target backend documents, and how the reports read its runs, from data files.

The files live in ``reportgen/judge/constraints/`` (one per backend and release) so that a new
release, or a new backend, is a new data file, not new code. Each constraint names its source.
Besides the constraints, a file says which backend families a log may record for the target
(and the words a reader sees for each), which of them are evidence for it, which package
versions matter, what a run must record, and settings that decide whether a compiled pass is
evidence. The rules (``disposition``), views and summaries ask this module, never a name.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from collector.descriptors import DescriptorError, descriptors, plan_rules, resolve_target
from collector.tomltext import toml_text

CONSTRAINTS_DIR = Path(__file__).parent / "constraints"


def constraints_path(target: str) -> Path:
    """The constraints file a target's descriptor names: a built-in backend's in this folder
    (the device never needs it: the collector reads target_rules.json), a plugin backend's beside
    its descriptor. KeyError for a target no descriptor describes."""
    found = descriptors().get(target)
    if found is None:
        raise KeyError(f"no backend descriptor for target {target!r}; known: {', '.join(sorted(descriptors()))}")
    return (CONSTRAINTS_DIR if found.builtin else found.path.parent) / found.constraints


@dataclass(frozen=True)
class Constraint:
    id: str
    title: str
    text: str
    applies_to: str
    source: str
    # Plan keys the constraint limits: ({"key": "compile.mode", "allowed": ["default"]}, ...).
    plan_rule: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class Instances:
    """The instance generations (the instance type's family without its variant letters:
    trn2u.48xlarge is trn2) a release supports, with their names and the source."""

    supported: tuple[str, ...]
    names: dict[str, str]
    source: str


_INSTANCE_TYPE = re.compile(r"^([a-z]+[0-9]+)[a-z-]*\.[a-z0-9-]+$")


def instance_generation(instance_type: str) -> str | None:
    """'trn2' for trn2.48xlarge and trn2u.48xlarge, 'trn1' for trn1n.32xlarge; None for text
    that is not an EC2 instance type (a DMI product name such as 'Standard PC')."""
    found = _INSTANCE_TYPE.match(instance_type.strip().lower())
    return found.group(1) if found else None


@dataclass(frozen=True)
class OperatorEntry:
    """A documented statement about named operators: unsupported, CPU fallback, precision or path."""

    id: str
    ops: tuple[str, ...]  # aten names ("aten::addmm") or higher-order op names; empty: the text says which
    kind: str  # unsupported | cpu-fallback | precision | path
    title: str
    text: str
    source: str
    output_dtype: str | None = None  # the entry concerns operators producing this dtype


OPERATOR_KINDS = ("unsupported", "cpu-fallback", "precision", "path")


def _operator(entry: dict[str, Any], where: str) -> OperatorEntry:
    known = {"id", "ops", "kind", "title", "text", "source", "output_dtype"}
    if (
        set(entry) - known
        or not {"id", "ops", "kind", "title", "text", "source"} <= set(entry)
        or entry["kind"] not in OPERATOR_KINDS
    ):
        raise ValueError(
            f"{where}: an [[operator]] entry needs id, ops, kind ({', '.join(OPERATOR_KINDS)}), title, text and source, and nothing else: {sorted(entry)}"
        )
    return OperatorEntry(**{**entry, "ops": tuple(entry["ops"])})


@dataclass(frozen=True)
class BackendDocs:
    target: str
    family: str
    release: str
    sources: dict[str, str]
    package_matrix: list[dict[str, Any]] = field(default_factory=list)
    wheels: dict[str, str] = field(default_factory=dict)
    constraints: list[Constraint] = field(default_factory=list)
    adapter_note: str = ""  # how far the collector's adapter for this backend has been exercised
    families: dict[str, str] = field(default_factory=dict)  # backend family -> the reader's words
    evidence_families: tuple[str, ...] = ()  # families whose runs are evidence for this target
    version_keys: tuple[str, ...] = ()  # package versions shown beside python and torch
    required_versions: tuple[str, ...] = ("torch",)  # a run missing one of these is blocked
    hardware: str = ""  # named where a run is not this target's ("Neither run is a ... result")
    fallback_must_be_measured: bool = False  # unmeasured CPU fallback blocks a run of this target
    compile_fallback_setting: dict[str, str] | None = (
        None  # {name, value} that keeps compile failures from running eager
    )
    matrix_package: str = ""  # the package whose version picks the package matrix row
    device_resource: str = ""  # the Kubernetes extended resource a pod asks for (campaigns)
    instances: Instances | None = None  # the instance generations the release supports; None: not checked
    device_facts: tuple[str, ...] = ()  # environment.device facts a run should record (said when unknown)
    file: str = ""  # the constraint file's name

    def check_instance(self, instance_type: str | None, why_unknown: str) -> tuple[Literal["blocked"], str] | None:
        """("blocked", text) about the recorded instance type, one of another generation or none
        that names a generation; None when it is supported."""
        if self.instances is None:
            return None
        supported = ", ".join(f"{g} ({self.instances.names.get(g, g)})" for g in self.instances.supported)
        generation = instance_generation(instance_type or "")
        if generation is None:  # not evidence for a supported generation until it is known
            shown = (
                f"{instance_type!r} is not an instance type"
                if instance_type
                else f"unknown: {why_unknown or 'recorded empty'}"
            )
            return (
                "blocked",
                f"Instance type {shown}; {self.release} supports {supported} [{self.instances.source}]: this run's hardware generation is not known.",
            )
        if generation in self.instances.supported:
            return None
        return (
            "blocked",
            f"Instance type {instance_type} is {generation}, a generation {self.release} does not support (it supports {supported}) [{self.instances.source}].",
        )

    slurm_gres: str = ""  # the Slurm GRES name a task asks for with --gres=NAME:N (campaigns)
    node_taint: str = ""  # the taint key device nodes commonly carry; campaign pods tolerate it
    # What the documentation says about named operators, and whether it lists any as unsupported
    # or falling back at all ([operators] note: said plainly where it lists none).
    operators: tuple[OperatorEntry, ...] = ()
    operators_note: str = ""
    operators_source: str = ""
    unsupported_listed: bool = False
    fallback_listed: bool = False

    def operator_entries(self, op: str) -> list[OperatorEntry]:
        return [entry for entry in self.operators if op in entry.ops]

    def constraint(self, cid: str) -> Constraint | None:
        return next((c for c in self.constraints if c.id == cid), None)

    def cite(self, cid: str) -> str:
        found = self.constraint(cid)
        return f"{self.release}: {found.title} [{found.source}]" if found else self.release


class BackendDocsError(ValueError):
    """A constraint file that cannot be read as documented: the message names the file and key."""


# Every key a constraint file may hold, per table: anything else (a typo such as
# "required_version") is an error on load, never a silently applied default.
# What a backend is (families and their words, versions shown, scheduler resources) is in its
# descriptor (collector/descriptors.py), not here.
TOP_KEYS = {
    "target",
    "family",
    "release",
    "sources",
    "package_matrix",
    "wheels",
    "constraint",
    "adapter_note",
    "evidence_families",
    "required_versions",
    "hardware",
    "fallback_must_be_measured",
    "compile_fallback_setting",
    "matrix_package",
    "instances",
    "device_facts",
    "operators",
    "operator",
}
REQUIRED_TOP = ("target", "family", "release")
CONSTRAINT_KEYS = {"id", "title", "text", "applies_to", "source", "plan_rule"}
PLAN_RULE_KEYS = {"key", "allowed"}
WHEELS_KEYS = {"os", "note", "source", "package"}  # package: the distribution whose install record is read
INSTANCES_KEYS = {"supported", "names", "source"}
SETTING_KEYS = {"name", "value"}


def _check_keys(where: str, table: Any, allowed: set[str], required: tuple[str, ...] = ()) -> None:
    if not isinstance(table, dict):
        raise BackendDocsError(f"{where}: expected a table, found {type(table).__name__}")
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise BackendDocsError(
            f"{where}: unknown key(s) {', '.join(map(repr, unknown))}; allowed: {', '.join(sorted(allowed))}"
        )
    missing = [key for key in required if key not in table]
    if missing:
        raise BackendDocsError(f"{where}: missing key(s) {', '.join(map(repr, missing))}")


def validate_docs_data(name: str, data: dict[str, Any]) -> None:
    """Every table's keys against the ones this module reads (BackendDocsError otherwise)."""
    _check_keys(name, data, TOP_KEYS, REQUIRED_TOP)
    for index, constraint in enumerate(data.get("constraint", [])):
        where = f"{name}: constraint[{index}]"
        _check_keys(where, constraint, CONSTRAINT_KEYS, ("id", "title", "text", "applies_to", "source"))
        for rule_index, rule in enumerate(constraint.get("plan_rule", [])):
            _check_keys(f"{where}.plan_rule[{rule_index}]", rule, PLAN_RULE_KEYS, ("key", "allowed"))
    if "wheels" in data:
        _check_keys(f"{name}: wheels", data["wheels"], WHEELS_KEYS, ("os", "note", "source"))
    if "instances" in data:
        _check_keys(f"{name}: instances", data["instances"], INSTANCES_KEYS, ("supported", "source"))
    if "operators" in data:
        _check_keys(
            f"{name}: operators",
            data["operators"],
            {"note", "source", "unsupported_listed", "fallback_listed"},
            ("note", "source"),
        )
    if data.get("compile_fallback_setting") is not None:
        _check_keys(
            f"{name}: compile_fallback_setting", data["compile_fallback_setting"], SETTING_KEYS, ("name", "value")
        )
    matrix_key = data.get("matrix_package")
    for index, row in enumerate(data.get("package_matrix", [])):
        _check_keys(
            f"{name}: package_matrix[{index}]",
            row,
            {matrix_key or "", "torch", "python", "source"} - {""},
            ("torch", "python", "source"),
        )
    for key in ("evidence_families", "required_versions", "device_facts"):
        value = data.get(key, [])
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise BackendDocsError(f"{name}: {key}: expected a list of names")


def read_docs_file(path: Path) -> dict[str, Any]:
    try:
        data = tomllib.loads(toml_text(path.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise BackendDocsError(f"{path.name}: cannot be read: {exc}") from None
    validate_docs_data(path.name, data)
    return data


@lru_cache(maxsize=None)
def load_backend_docs(target: str) -> BackendDocs:
    """The documented facts for a target name (neuron, cpu, cuda, or a plugin backend's)."""
    path = constraints_path(target)
    descriptor = descriptors()[target]
    data = read_docs_file(path)
    if data["target"] != target:
        raise BackendDocsError(
            f"{path.name}: target: {data['target']!r}, but {descriptor.path.name} names this file for {target!r}"
        )
    if data["family"] not in descriptor.families:
        raise BackendDocsError(
            f"{path.name}: family: {data['family']!r} is not one of {descriptor.path.name}'s families ({', '.join(descriptor.families)})"
        )
    unknown = [f for f in data.get("evidence_families", []) if f not in descriptor.families]
    if unknown:
        raise BackendDocsError(
            f"{path.name}: evidence_families: {unknown[0]!r} is not one of {descriptor.path.name}'s families ({', '.join(descriptor.families)})"
        )
    return BackendDocs(
        target=data["target"],
        family=data["family"],
        release=data["release"],
        sources=data.get("sources", {}),
        package_matrix=data.get("package_matrix", []),
        wheels=data.get("wheels", {}),
        constraints=[
            Constraint(**{**c, "plan_rule": tuple(c.get("plan_rule", ()))}) for c in data.get("constraint", [])
        ],
        adapter_note=data.get("adapter_note", ""),
        families=dict(descriptor.families),
        evidence_families=tuple(data.get("evidence_families", [data["family"]])),
        version_keys=descriptor.column_versions,
        required_versions=tuple(data.get("required_versions", ["torch"])),
        hardware=data.get("hardware", ""),
        fallback_must_be_measured=bool(data.get("fallback_must_be_measured", False)),
        compile_fallback_setting=data.get("compile_fallback_setting"),
        matrix_package=data.get("matrix_package", ""),
        device_resource=descriptor.device_resource,
        instances=_instances(data.get("instances")),
        device_facts=tuple(data.get("device_facts", [])),
        file=path.name,
        slurm_gres=descriptor.slurm_gres,
        node_taint=descriptor.node_taint,
        operators=tuple(_operator(e, f"{path.name}: operator[{i}]") for i, e in enumerate(data.get("operator", []))),
        operators_note=data.get("operators", {}).get("note", ""),
        operators_source=data.get("operators", {}).get("source", ""),
        unsupported_listed=bool(data.get("operators", {}).get("unsupported_listed", False)),
        fallback_listed=bool(data.get("operators", {}).get("fallback_listed", False)),
    )


def _instances(table: dict[str, Any] | None) -> Instances | None:
    if table is None:
        return None
    return Instances(tuple(table["supported"]), dict(table.get("names", {})), table["source"])


@lru_cache(maxsize=None)
def docs_file_sha256(target: str) -> str:
    """The sha256 of the constraint file a report of this target is judged with."""
    import hashlib

    return hashlib.sha256(constraints_path(target).read_bytes()).hexdigest()


def targets() -> tuple[str, ...]:
    """Every target a descriptor describes, in descriptor order (the first target first)."""
    return tuple(descriptors())


def backend_name(target: str) -> str:
    """The backend a target word stands for, by its descriptor's name: an alias a plan may give
    ("trainium") is the backend that runs it ("neuron"); a word no descriptor claims stays as it is."""
    try:
        return resolve_target(target)
    except DescriptorError:
        return target


def docs_for_family(family: str) -> BackendDocs | None:
    """The target whose runs may record this backend family (None for one no file names)."""
    return next((docs for docs in map(load_backend_docs, targets()) if family in docs.families), None)


def evidence_families(target: str | None) -> tuple[str, ...]:
    """The backend families whose runs are evidence for ``target``, a backend's name or alias
    (none for an unknown target)."""
    name = backend_name(target) if target is not None else None
    return load_backend_docs(name).evidence_families if name in descriptors() else ()


def family_label(family: str) -> str:
    """The reader's words for the target a backend family ran on ("neuron (XLA)", "cuda")."""
    docs = docs_for_family(family)
    if docs is None:
        return f"an {family} backend" if family == "unknown" else family
    return docs.families[family]


def version_keys() -> tuple[str, ...]:
    """The package versions a summary shows: python, torch, then each target's own."""
    keys = ["python", "torch"]
    for target in targets():
        keys += [k for k in load_backend_docs(target).version_keys if k not in keys]
    return tuple(keys)


def stack_version_key(target: str) -> str | None:
    """The version that names a run's own stack on the site (its descriptor's first version
    column: torch_neuronx on neuron, cuda on cuda); None for a target with none (cpu) or one no
    descriptor describes."""
    found = descriptors().get(target)
    return found.column_versions[0] if found is not None and found.column_versions else None


def run_backend(planned: str | None, family: str) -> BackendDocs | None:
    """The backend a run is about: the one it ran on, else the one it was planned for."""
    return docs_for_family(family) or (load_backend_docs(planned) if planned in descriptors() else None)


def adapter_docs(planned: str | None, family: str) -> list[BackendDocs]:
    """The constraint files whose adapter note speaks for a run: the target it was planned for
    and the one whose family it ran on, each note once."""
    found: list[BackendDocs] = []
    for docs in (load_backend_docs(planned) if planned in descriptors() else None, docs_for_family(family)):
        if docs is not None and docs.adapter_note and all(docs.adapter_note != other.adapter_note for other in found):
            found.append(docs)
    return found


def collector_rules() -> dict[str, Any]:
    """The plan rules of every target's constraints, as the collector reads them.

    The collector runs on the device host without reportgen, so it reads a copy of these rules
    (``collector/target_rules.json``) generated from the constraint files by
    ``python -m reportgen.judge.backend_docs``; a test keeps the copy current.
    """
    rules: dict[str, Any] = {}
    for target in sorted(name for name, d in descriptors().items() if d.builtin):
        load_backend_docs(target)  # checked key by key first
        path = constraints_path(target)
        rules[target] = plan_rules(read_docs_file(path), f"reportgen/judge/constraints/{path.name}")
    return rules


def render_collector_rules() -> str:
    import json

    return json.dumps(collector_rules(), indent=2, sort_keys=True) + "\n"


COLLECTOR_RULES_PATH = Path(__file__).resolve().parents[2] / "collector" / "target_rules.json"


def check_release_pairing(versions: dict[str, str | None], docs: BackendDocs) -> list[str]:
    """Problems with the recorded versions against the release's package matrix; empty if they pair."""
    if not docs.package_matrix or not docs.matrix_package:
        return []
    key = docs.matrix_package  # the backend's own package, the matrix's first column
    name = key.replace("_", "-")
    installed = versions.get(key)
    torch = (versions.get("torch") or "").split("+")[0]
    python = ".".join((versions.get("python") or "").split(".")[:2])
    if not installed:
        return [f"{name} version unknown: cannot check it against the release's package matrix"]
    row = next((r for r in docs.package_matrix if installed.startswith(r[key])), None)
    if row is None:
        families = ", ".join(r[key] + "*" for r in docs.package_matrix)
        return [
            f"{name} {installed} is not in {docs.release}'s package matrix ({families}) [{docs.package_matrix[0]['source']}]"
        ]
    problems = []
    if torch != row["torch"]:
        problems.append(
            f"{name} {installed} pairs with torch {row['torch']}, but torch {torch or 'unknown'} is installed [{row['source']}]"
        )
    if python not in row["python"]:
        problems.append(
            f"Python {python or 'unknown'} is outside the release's {', '.join(row['python'])} [{row['source']}]"
        )
    return problems


if __name__ == "__main__":
    COLLECTOR_RULES_PATH.write_text(render_collector_rules(), encoding="utf-8")
    print(f"wrote {COLLECTOR_RULES_PATH}")
