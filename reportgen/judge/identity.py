"""Whether two runs fed the same weights and inputs, and how that is known.

From schema 1.2 the collector hashes weights, inputs and reference outputs by content (recipe
``tensor-content-v1``, collector/content.py): the same tensors have one hash however the file
was written. A file's sha256 says only that two files hold the same bytes: the same seeded
weights saved by two collector generations differ in bytes. So, in order:

1. both logs hash the content: the content hashes decide;
2. otherwise equal file hashes show the same bytes, hence the same tensors;
3. otherwise (a log written before content hashes, or one whose collector left its content hash
   out) the files' bytes cannot decide. Weights
   the collector saved itself (the workload builds them from a seed its model revision states)
   are taken as the same when both plans declare the same model revision, and inputs as the
   same when both cells are the same planned cell (shape, layout, dtype) of the same workload,
   whose module makes them: an identity by declaration, not verified, and said so. Weights
   read from a shipped file are that file: different bytes are different weights.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from collector.plan import NO_MODEL_REVISION
from reportgen.contract import events as ev
from reportgen.model.runmodel import RunModel

# UNRECORDED: a side recorded nothing to identify it by (never the same).
CONTENT, FILE, DECLARED, UNRECORDED = "content", "file", "declared", "unrecorded"


# The content recipe of every collector so far (collector/content.py), and of a log that names none.
RECIPE_V1 = "tensor-content-v1"
TWO_RECIPES = "content hashes of two recipes, not compared"


@dataclass(frozen=True)
class Identity:
    """The answer: the same or not, on which basis, and the words that say how it is known."""

    same: bool
    basis: str  # CONTENT, FILE, DECLARED or UNRECORDED
    text: str


# The schema version whose logs carry content hashes of weights and inputs (collector/content.py).
CONTENT_HASHES_FROM = (1, 2)


@dataclass(frozen=True)
class WeightsFacts:
    content: str | None
    file: str | None
    external: bool
    # Why there is no content hash, from what the log says ("" when there is one): written before
    # content hashes (its schema version), or left out by a collector whose schema has the field.
    no_content: str = ""
    # The model revision the plan declares, which builds seeded weights; None: the log has no plan
    # event (a run that ended before it), so it declares none and nothing is the same by declaration.
    revision: str | None = None
    # The recipe the content hash follows (collector/content.py): two recipes' hashes of the same
    # tensors differ, so only hashes of one recipe are compared.
    recipe: str = RECIPE_V1
    # Where the plan says the weights come from (pretrained, synthetic, none); None: not recorded
    # (a log before schema 1.4, or a module that does not say).
    origin: str | None = None


def _weights_artifact(run: RunModel) -> ev.Artifact | None:
    return next((a for a in run.artifacts if a.role == "weights"), None)


# Why a log names no weights at all: it has no plan event (the run ended before it).
NO_PLAN = "no plan event"


def weights_facts(run: RunModel) -> WeightsFacts:
    artifact = _weights_artifact(run)
    plan = run.plan
    content = (plan.weights_content_sha256 if plan else None) or (artifact.content_sha256 if artifact else None)
    file = (plan.weights_sha256 if plan else None) or (artifact.sha256 if artifact else None)
    external = artifact is not None and artifact.path.startswith("external:")
    reason = artifact.content_unknown_reason if artifact is not None else None
    if content:
        no_content = ""
    elif plan is None and artifact is None:  # it ended before its plan: no weights were built
        no_content = NO_PLAN
    else:
        no_content = no_content_words(run.start.schema_version, reason)
    return WeightsFacts(
        content,
        file,
        external,
        no_content,
        plan.model_revision if plan else None,
        (artifact.content_recipe if artifact is not None else None) or RECIPE_V1,
        (plan.weights_origin or None) if plan else None,
    )


def no_content_words(schema_version: str, reason: str | None) -> str:
    """Why a log has no content hash of its weights, as the log says it: a schema before content
    hashes; else the reason its collector gave; else that it left the hash out without one."""
    if ev.schema_tuple(schema_version) < CONTENT_HASHES_FROM:
        return "written before content hashes"
    if reason:
        return f"not hashed, although its schema {schema_version} has content hashes: {reason}"
    return f"left out without a reason, although its schema {schema_version} has content hashes"


def _short(sha: str | None) -> str:
    return f"{sha[:12]}..." if sha else "not recorded"


# What the two runs are called in the texts: a comparison's sides, or a side's first run and a replicate.
SIDES = ("baseline", "candidate")


def _lacking(a: str | None, b: str | None, what: str, names: tuple[str, str] = SIDES) -> str:
    sides = [role for role, value in zip(names, (a, b)) if value is None]
    return f"{' and '.join(sides)} log{'s' if len(sides) > 1 else ''} without {what}"


def _without_content(a: WeightsFacts, b: WeightsFacts, names: tuple[str, str]) -> str:
    """Which logs lack a content hash of the weights and why, each as its log says it: 'baseline
    and candidate logs without a content hash (written before content hashes)'."""
    why: dict[str, list[str]] = {}
    for role, facts in zip(names, (a, b)):
        if not facts.content:
            why.setdefault(facts.no_content, []).append(role)
    return "; ".join(
        reason  # both logs hashed by content, of two recipes: no log is without a hash
        if reason.startswith(TWO_RECIPES)
        else f"{' and '.join(roles)} log{'s' if len(roles) > 1 else ''} without a content hash ({reason})"
        for reason, roles in why.items()
    )


def same_weights(base: RunModel, cand: RunModel, names: tuple[str, str] = SIDES) -> Identity:
    """Whether the two runs' weights are the same; ``names`` are what the texts call the two runs."""
    # A log whose plan and weights artifact give different hashes does not get here: validate
    # refuses it (contract/consistency.py), so either hash speaks for the weights.
    return weights_identity(weights_facts(base), weights_facts(cand), names)


def _origins(a: WeightsFacts, b: WeightsFacts, names: tuple[str, str]) -> str:
    """What the two logs say of where weights shown to be the same come from, where they do not
    say it alike: one weights file cannot be both synthetic and pretrained, and a log that does
    not say is told what the other log says of the same weights. '' where they agree."""
    if a.origin == b.origin:
        return ""
    if a.origin and b.origin:
        return (
            f"; yet the {names[0]} log calls them {a.origin} and the {names[1]} log {b.origin}: the same weights "
            "cannot be both, so at least one log's weights origin is wrong"
        )
    said, unsaid = (0, 1) if a.origin else (1, 0)
    return (
        f"; the {names[said]} log says they are {(a, b)[said].origin}, the {names[unsaid]} log does not record "
        "where its weights come from"
    )


# Said of a change of weights origin between two runs whose weights are shown to be the same.
ORIGIN_WRONG = "at least one log's weights origin is wrong"


def origins_contradict(a: WeightsFacts, b: WeightsFacts, weights: Identity) -> bool:
    """Two logs that call weights shown to be the same (by content or file, not by declaration)
    by two origins: one weights file cannot be both synthetic and pretrained."""
    return weights.same and weights.basis != DECLARED and bool(a.origin and b.origin) and a.origin != b.origin


def origin_change_words(text: str, weights: Identity) -> str:
    """A criterion change of weights origin said as the contradiction it is, where the weights
    are the same: 'weights origin now pretrained (was synthetic), of same weights by content
    (...): at least one log's weights origin is wrong'."""
    return f"{text}, of {weights.text.split('; yet', 1)[0]}: {ORIGIN_WRONG}"


def weights_identity(a: WeightsFacts, b: WeightsFacts, names: tuple[str, str] = SIDES) -> Identity:
    """Whether two runs' weights are the same, from their facts (a judged run's, or a summary's)."""
    if a.content and b.content and a.recipe != b.recipe:
        # Hashes of two recipes say nothing of each other: judged as if neither had one.
        other = f"{TWO_RECIPES} ({names[0]} {a.recipe}, {names[1]} {b.recipe})"
        return weights_identity(
            WeightsFacts(None, a.file, a.external, other, a.revision, a.recipe, a.origin),
            WeightsFacts(None, b.file, b.external, other, b.revision, b.recipe, b.origin),
            names,
        )
    if a.content and b.content:
        if a.content == b.content:
            # A shipped weights file of other bytes is named beside the verdict: another format or
            # key order, or data the state_dict does not hold (a buffer the model keeps out of it).
            files = (
                f"; the weights files differ in bytes (sha256 {_short(a.file)} and {_short(b.file)}): another format, "
                "or data the weights do not hold"
                if (a.external or b.external) and a.file and b.file and a.file != b.file
                else ""
            )
            return Identity(
                True,
                CONTENT,
                f"same weights by content (sha256 {_short(a.content)}, {a.recipe}){files}{_origins(a, b, names)}",
            )
        return Identity(
            False,
            CONTENT,
            f"different weights by content: {names[0]} {_short(a.content)}, {names[1]} {_short(b.content)}",
        )
    lacking = _without_content(a, b, names)
    if a.file and b.file and a.file == b.file:
        return Identity(True, FILE, f"same weights file (sha256 {_short(a.file)}; {lacking}){_origins(a, b, names)}")
    unplanned = [role for role, facts in zip(names, (a, b)) if facts.revision is None]
    if unplanned:
        # A log without a plan declares no model revision: two such logs are not the same by
        # declaration (they declare nothing), only not known to be.
        plural = "s" if len(unplanned) > 1 else ""
        return Identity(
            False,
            UNRECORDED,
            f"weights not recorded on the {' and '.join(unplanned)}: {'their logs declare' if plural else 'its log declares'} "
            f"no model revision ({NO_PLAN}), so the weights are not known to be the same",
        )
    if a.external or b.external:
        return Identity(
            False,
            FILE,
            f"different weights files: {names[0]} sha256 {_short(a.file)}, {names[1]} sha256 {_short(b.file)} ({lacking})",
        )
    files = (
        f"the saved files differ in bytes (sha256 {_short(a.file)} and {_short(b.file)})"
        if a.file and b.file
        else f"no weights file hash on the {' and '.join(r for r, f in zip(names, (a.file, b.file)) if not f)}"
    )
    # No model named: an empty revision, spaces, or the collector's own word for a module that states none.
    unstated = [role for role, facts in zip(names, (a, b)) if (facts.revision or "").strip() in ("", NO_MODEL_REVISION)]
    if unstated:  # a plan whose model revision is empty declares no model: nothing is the same by it
        return Identity(
            False,
            DECLARED,
            f"weights not known to be the same: {lacking}, {files}, and the {' and '.join(unstated)} "
            f"plan{'s state' if len(unstated) > 1 else ' states'} no model revision",
        )
    if a.revision != b.revision:  # (compare refuses other revisions before it asks)
        return Identity(
            False,
            DECLARED,
            f"weights not known to be the same: {lacking}, {files}, and the plans declare model revisions "
            f"{a.revision!r} and {b.revision!r}",
        )
    loaded = [role for role, facts in zip(names, (a, b)) if facts.origin == "pretrained"]
    if loaded:
        # Pretrained weights are loaded, not built from a seed: one model revision declares
        # nothing of which checkpoint was loaded.
        return Identity(
            False,
            DECLARED,
            f"weights not known to be the same: {lacking}, {files}, and the {' and '.join(loaded)} "
            "weights are pretrained (loaded, not built from a seed), so the "
            f"model revision {a.revision!r} both plans declare does not tell them the same",
        )
    return Identity(
        True,
        DECLARED,
        f"weights identified by declaration only, not verified: {lacking}, {files}, "
        f"and both plans declare model revision {a.revision!r}, whose weights the workload builds from its seed",
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


@dataclass(frozen=True)
class InputsFacts:
    """One cell's inputs as its log hashed them: by content for the cell's input shape, by content
    of the whole file, and by the file's bytes. Plain data, kept in a run's summary."""

    key_content: str | None
    content: str | None
    file: str
    recipe: str = RECIPE_V1  # what its content hashes follow: hashes of two recipes are not compared


def inputs_facts(artifact: ev.Artifact | None, key: str) -> InputsFacts | None:
    """The facts of one cell's inputs artifact (``key``: its input shape key); None without one."""
    if artifact is None:
        return None
    by_key = artifact.content_by_key.get(key) if artifact.content_by_key else None
    return InputsFacts(by_key, artifact.content_sha256, artifact.sha256, artifact.content_recipe or RECIPE_V1)


def inputs_identity(a: InputsFacts | None, b: InputsFacts | None, names: tuple[str, str] = SIDES) -> Identity:
    """Whether one cell's inputs are the same on both sides, by content, file or declaration;
    not the same (basis UNRECORDED) when a side recorded no inputs artifact. ``names``: what
    the texts call the two runs. A timing of other inputs, or of inputs not recorded, is no
    measurement of the same work: `reportgen compare` lists such a cell as not comparable and
    `reportgen diff` compares no timing of it, each for this text."""
    if a is None or b is None:
        missing = " and ".join(role for role, facts in zip(names, (a, b)) if facts is None)
        return Identity(False, UNRECORDED, f"inputs not recorded (no inputs artifact with a sha256) on the {missing}")
    if a.recipe != b.recipe:
        # Content hashes of two recipes say nothing of each other: the files decide, as if
        # neither had one.
        a = InputsFacts(None, None, a.file, a.recipe)
        b = InputsFacts(None, None, b.file, b.recipe)
    ka, kb = a.key_content, b.key_content
    if ka and kb:
        if ka == kb:
            return Identity(True, CONTENT, f"same inputs by content (sha256 {_short(ka)})")
        return Identity(False, CONTENT, f"different inputs by content: sha256 {_short(ka)} against {_short(kb)}")
    if a.content and b.content and a.content == b.content:
        return Identity(True, CONTENT, f"same inputs by content (sha256 {_short(a.content)})")
    if a.file == b.file:
        return Identity(True, FILE, f"same inputs file (sha256 {_short(a.file)})")
    if a.content and b.content:
        return Identity(
            False,
            CONTENT,
            f"different inputs by content: sha256 {_short(a.content)} against {_short(b.content)}",
        )
    lacking = (
        f"{TWO_RECIPES} ({names[0]} {a.recipe}, {names[1]} {b.recipe})"
        if a.recipe != b.recipe
        else _lacking(a.content, b.content, "a content hash", names)
    )
    return Identity(
        True,
        DECLARED,
        f"inputs identified by declaration only, not verified ({lacking}; the files differ in bytes): the same planned cell of the same workload",
    )


# Two series "alike": each sample within this fraction of the other's (sorted). A run's samples
# written again with fewer digits are one measurement still; two loops timed apart differ far
# more than this in some sample (a clock resolves a warm call to about 1e-5 of it or finer, and
# the loop's own noise is larger). A copy scaled on purpose is a forgery, which no check of a
# log's figures can rule out.
ALIKE = 1e-5
# A series this short can match another run's by chance (one honest sample in a few hundred
# thousand lies within ALIKE of another run's): only a copy of every cell tells a copy there.
ALIKE_FROM = 3


def _alike(a: Sequence[float], b: Sequence[float]) -> bool:
    """Whether two sorted series, each of mostly distinct samples (_telling), are one draw, equal
    or rounded."""
    if len(a) != len(b) or not _telling(a) or not _telling(b):
        return False
    return all(abs(x - y) <= ALIKE * max(abs(x), abs(y)) for x, y in zip(a, b))


def _telling(series: Sequence[float]) -> bool:
    """Whether a series has values enough to tell a copy: at least ALIKE_FROM distinct values, and
    at least half its samples distinct. A timer too coarse for the loop gives a few values again
    and again, which two runs can draw alike; a fine timer's samples bunch now and then (a loop of
    200 sub-millisecond calls on a CPU repeats 2 to 17 of its values), and two runs still never
    draw every sample of them alike."""
    distinct = len(set(series))
    return distinct >= ALIKE_FROM and 2 * distinct >= len(series)


def copied_run(runs: Sequence[tuple[str, Mapping[str, Sequence[float]]]], whole_run: bool = True) -> str | None:
    """Why two of ``runs`` (run id, each cell's warm samples) are one measurement given twice:
    the same warm samples in every timed cell, or in one whose samples are mostly distinct
    (_telling), which no two measurements draw (a timer resolves far finer than a warm loop
    repeats itself; a series of a few values again and again may come from a coarse timer,
    which two runs can draw alike): a copy
    under another id, folded into a side's interval as a further replicate, would narrow it with
    no new evidence, and so would a copy with some cells edited. "The same" is within ALIKE of
    each sample: a copy written again with fewer digits is still one measurement. None when no
    two are alike. ``whole_run`` False leaves out the first test (the same samples in every
    cell, repeated values allowed), for runs on two sides of a comparison: two runs of a fast
    workload on a coarse clock may draw every cell alike."""
    # As sorted series: the same samples in another order are the same draw.
    timed = [(run_id, {case: tuple(sorted(s)) for case, s in cells.items() if s}) for run_id, cells in runs]
    for i, (first, a) in enumerate(timed):
        for second, b in timed[i + 1 :]:
            # A series of a few values may come from a timer too coarse for the loop, which two
            # runs can draw alike; a series of mostly distinct samples no two runs draw alike.
            same = [case for case, series in a.items() if case in b and _alike(series, b[case])]
            whole = whole_run and bool(a) and a == b
            if not same and not whole:
                continue
            where = (
                f"in every one of its {len(a)} timed cells"
                if whole
                else f"in {len(same)} of its {len(b)} timed cells ({same[0]}{', ...' if len(same) > 1 else ''}), samples"
                f" mostly distinct and each within {ALIKE:g} of the other's, which no two measurements draw alike"
            )
            return (
                f"{second} holds the same warm samples as {first} {where}: one measurement given twice (a copy under"
                " another run id) is no further run"
            )
    return None


# A planned cell's fields that make it the cell it is: the same case key with another of these
# is another cell (a collector may name its cases as it likes).
PLANNED_FIELDS = ("batch", "length", "layout", "dtype", "mode")
OTHER_CELL = "the same case key names different cells in the two plans"


def planned_fields(planned: ev.PlannedCell) -> list[int | str]:
    """The planned cell's fields, in PLANNED_FIELDS order (plain data, kept in a run's summary)."""
    return [getattr(planned, name) for name in PLANNED_FIELDS]


def cell_redefined(
    a: Sequence[int | str] | None, b: Sequence[int | str] | None, names: tuple[str, str] = SIDES
) -> str | None:
    """Why one case key of two runs is not one cell: its planned fields differ (words naming each
    field that does); None when they agree, or a side did not keep them. No status or timing of
    such a pair is compared: `reportgen compare` lists it as not comparable and `reportgen diff`
    names it apart, each for this reason."""
    if a is None or b is None or list(a) == list(b):
        return None
    fields = "; ".join(
        f"{name} {x} on the {names[0]}, {y} on the {names[1]}" for name, x, y in zip(PLANNED_FIELDS, a, b) if x != y
    )
    return f"{OTHER_CELL} ({fields})"
