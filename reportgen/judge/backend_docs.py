"""What each target backend documents: package matrix and constraints, loaded from data files.

The files live in ``reportgen/judge/constraints/`` (one per backend and release) so that a new
release is a new data file, not new code. Each constraint names its source.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

CONSTRAINTS_DIR = Path(__file__).parent / "constraints"
DEFAULT_FILES = {"neuron": "neuron-native-2.33.toml", "cpu": "cpu.toml", "cuda": "cuda.toml"}


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
class BackendDocs:
    target: str
    family: str
    release: str
    sources: dict[str, str]
    package_matrix: list[dict[str, Any]] = field(default_factory=list)
    wheels: dict[str, str] = field(default_factory=dict)
    constraints: list[Constraint] = field(default_factory=list)
    adapter_note: str = ""  # how far the collector's adapter for this backend has been exercised

    def constraint(self, cid: str) -> Constraint | None:
        return next((c for c in self.constraints if c.id == cid), None)

    def cite(self, cid: str) -> str:
        found = self.constraint(cid)
        return f"{self.release}: {found.title} [{found.source}]" if found else self.release


@lru_cache(maxsize=None)
def load_backend_docs(target: str) -> BackendDocs:
    """The documented facts for a target name (neuron, cpu, cuda)."""
    if target not in DEFAULT_FILES:
        raise KeyError(f"no constraint file for target {target!r}; known: {', '.join(sorted(DEFAULT_FILES))}")
    data = tomllib.loads((CONSTRAINTS_DIR / DEFAULT_FILES[target]).read_text(encoding="utf-8"))
    return BackendDocs(
        target=data["target"],
        family=data["family"],
        release=data["release"],
        sources=data.get("sources", {}),
        package_matrix=data.get("package_matrix", []),
        wheels=data.get("wheels", {}),
        constraints=[Constraint(**{**c, "plan_rule": tuple(c.get("plan_rule", ()))}) for c in data.get("constraint", [])],
        adapter_note=data.get("adapter_note", ""),
    )


def collector_rules() -> dict[str, Any]:
    """The plan rules of every target's constraints, as the collector reads them.

    The collector runs on the device host without reportgen, so it reads a copy of these rules
    (``collector/target_rules.json``) generated from the constraint files by
    ``python -m reportgen.judge.backend_docs``; a test keeps the copy current.
    """
    rules: dict[str, Any] = {}
    for target in sorted(DEFAULT_FILES):
        docs = load_backend_docs(target)
        rules[target] = {
            "release": docs.release,
            "constraints_file": f"reportgen/judge/constraints/{DEFAULT_FILES[target]}",
            "rules": [
                {
                    "key": rule["key"],
                    "allowed": list(rule["allowed"]),
                    "constraint": c.id,
                    "title": c.title,
                    "source": c.source,
                    "source_urls": {name.strip(): docs.sources[name.strip()] for name in c.source.split(",") if name.strip() in docs.sources},
                }
                for c in docs.constraints
                for rule in c.plan_rule
            ],
        }
    return rules


def render_collector_rules() -> str:
    import json

    return json.dumps(collector_rules(), indent=2, sort_keys=True) + "\n"


COLLECTOR_RULES_PATH = Path(__file__).resolve().parents[2] / "collector" / "target_rules.json"


def check_release_pairing(versions: dict[str, str | None], docs: BackendDocs) -> list[str]:
    """Problems with the recorded versions against the release's package matrix; empty if they pair."""
    if not docs.package_matrix:
        return []
    neuronx = versions.get("torch_neuronx")
    torch = (versions.get("torch") or "").split("+")[0]
    python = ".".join((versions.get("python") or "").split(".")[:2])
    if not neuronx:
        return ["torch-neuronx version unknown: cannot check it against the release's package matrix"]
    row = next((r for r in docs.package_matrix if neuronx.startswith(r["torch_neuronx"])), None)
    if row is None:
        families = ", ".join(r["torch_neuronx"] + "*" for r in docs.package_matrix)
        return [f"torch-neuronx {neuronx} is not in {docs.release}'s package matrix ({families}) [{docs.package_matrix[0]['source']}]"]
    problems = []
    if torch != row["torch"]:
        problems.append(f"torch-neuronx {neuronx} pairs with torch {row['torch']}, but torch {torch or 'unknown'} is installed [{row['source']}]")
    if python not in row["python"]:
        problems.append(f"Python {python or 'unknown'} is outside the release's {', '.join(row['python'])} [{row['source']}]")
    return problems


if __name__ == "__main__":
    COLLECTOR_RULES_PATH.write_text(render_collector_rules(), encoding="utf-8")
    print(f"wrote {COLLECTOR_RULES_PATH}")
