"""Whether two runs fed the same weights and inputs, and how that is known.

From schema 1.2 the collector hashes weights, inputs and reference outputs by content (recipe
``tensor-content-v1``, collector/content.py): the same tensors have one hash however the file
was written. A file's sha256 says only that two files hold the same bytes: the same seeded
weights saved by two collector generations differ in bytes. So, in order:

1. both logs hash the content: the content hashes decide;
2. otherwise equal file hashes show the same bytes, hence the same tensors;
3. otherwise, for a log written before content hashes, the files' bytes cannot decide. Weights
   the collector saved itself (the workload builds them from a seed its model revision states)
   are taken as the same when both plans declare the same model revision, and inputs as the
   same when both cells are the same planned cell (shape, layout, dtype) of the same workload,
   whose module makes them: an identity by declaration, not verified, and said so. Weights
   read from a shipped file are that file: different bytes are different weights.
"""

from __future__ import annotations

from dataclasses import dataclass

from reportgen.contract import events as ev
from reportgen.model.runmodel import RunModel

CONTENT, FILE, DECLARED = "content", "file", "declared"


@dataclass(frozen=True)
class Identity:
    """The answer: the same or not, on which basis, and the words that say how it is known."""

    same: bool
    basis: str  # CONTENT, FILE or DECLARED
    text: str


@dataclass(frozen=True)
class WeightsFacts:
    content: str | None
    file: str | None
    external: bool


def _weights_artifact(run: RunModel) -> ev.Artifact | None:
    return next((a for a in run.artifacts if a.role == "weights"), None)


def weights_facts(run: RunModel) -> WeightsFacts:
    artifact = _weights_artifact(run)
    plan = run.plan
    content = (plan.weights_content_sha256 if plan else None) or (artifact.content_sha256 if artifact else None)
    file = (plan.weights_sha256 if plan else None) or (artifact.sha256 if artifact else None)
    external = artifact is not None and artifact.path.startswith("external:")
    return WeightsFacts(content, file, external)


def _short(sha: str | None) -> str:
    return f"{sha[:12]}..." if sha else "not recorded"


# What the two runs are called in the texts: a comparison's sides, or a side's first run and a replicate.
SIDES = ("baseline", "candidate")


def _lacking(a: str | None, b: str | None, what: str, names: tuple[str, str] = SIDES) -> str:
    sides = [role for role, value in zip(names, (a, b)) if value is None]
    return f"{' and '.join(sides)} log{'s' if len(sides) > 1 else ''} without {what}"


def same_weights(base: RunModel, cand: RunModel, names: tuple[str, str] = SIDES) -> Identity:
    """Whether the two runs' weights are the same (the caller has checked the model revisions);
    ``names`` are what the texts call the two runs."""
    # A log whose plan and weights artifact give different hashes does not get here: validate
    # refuses it (contract/consistency.py), so either hash speaks for the weights.
    a, b = weights_facts(base), weights_facts(cand)
    if a.content and b.content:
        if a.content == b.content:
            return Identity(True, CONTENT, f"same weights by content (sha256 {_short(a.content)}, tensor-content-v1)")
        return Identity(
            False,
            CONTENT,
            f"different weights by content: {names[0]} {_short(a.content)}, {names[1]} {_short(b.content)}",
        )
    lacking = _lacking(a.content, b.content, "a content hash", names)
    if a.file and b.file and a.file == b.file:
        return Identity(True, FILE, f"same weights file (sha256 {_short(a.file)}; {lacking})")
    if a.external or b.external:
        return Identity(
            False,
            FILE,
            f"different weights files: {names[0]} sha256 {_short(a.file)}, {names[1]} sha256 {_short(b.file)} ({lacking})",
        )
    revision = base.plan.model_revision if base.plan else "not recorded"
    files = (
        f"the saved files differ in bytes (sha256 {_short(a.file)} and {_short(b.file)})"
        if a.file and b.file
        else f"no weights file hash on the {' and '.join(r for r, f in zip(names, (a.file, b.file)) if not f)}"
    )
    return Identity(
        True,
        DECLARED,
        f"weights identified by declaration only, not verified: {lacking} (written before content hashes), {files}, "
        f"and both plans declare model revision {revision!r}, whose weights the workload builds from its seed",
    )


def _inputs_artifacts(run: RunModel) -> tuple[ev.Artifact | None, dict[str, ev.Artifact]]:
    shared, per_case = None, {}
    for artifact in run.artifacts:
        if artifact.role == "inputs":
            if artifact.case is None:
                shared = artifact
            else:
                per_case[artifact.case] = artifact
    return shared, per_case


class InputsLookup:
    """One run's inputs artifacts, looked up per cell."""

    def __init__(self, run: RunModel) -> None:
        self.shared, self.per_case = _inputs_artifacts(run)

    def for_case(self, case: str) -> ev.Artifact | None:
        return self.per_case.get(case, self.shared)


def _key_content(artifact: ev.Artifact, key: str) -> str | None:
    return artifact.content_by_key.get(key) if artifact.content_by_key else None


def same_inputs(a: ev.Artifact | None, b: ev.Artifact | None, key: str) -> Identity | None:
    """Whether one cell's inputs are the same on both sides (``key``: its input shape key);
    None when either side recorded no inputs artifact."""
    if a is None or b is None:
        return None
    ka, kb = _key_content(a, key), _key_content(b, key)
    if ka and kb:
        if ka == kb:
            return Identity(True, CONTENT, f"same inputs by content (sha256 {_short(ka)})")
        return Identity(False, CONTENT, f"different inputs by content: sha256 {_short(ka)} against {_short(kb)}")
    if a.content_sha256 and b.content_sha256 and a.content_sha256 == b.content_sha256:
        return Identity(True, CONTENT, f"same inputs by content (sha256 {_short(a.content_sha256)})")
    if a.sha256 == b.sha256:
        return Identity(True, FILE, f"same inputs file (sha256 {_short(a.sha256)})")
    if a.content_sha256 and b.content_sha256:
        return Identity(
            False,
            CONTENT,
            f"different inputs by content: sha256 {_short(a.content_sha256)} against {_short(b.content_sha256)}",
        )
    lacking = _lacking(a.content_sha256, b.content_sha256, "a content hash")
    return Identity(
        True,
        DECLARED,
        f"inputs identified by declaration only, not verified ({lacking}; the files differ in bytes): the same planned cell of the same workload",
    )
