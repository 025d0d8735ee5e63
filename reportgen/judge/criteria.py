"""What each run declared before any result, and which of those declarations changed between runs.

A comparison of two runs is read against the criteria each was judged by: a cell that passes
after its tolerance was widened, or after part of an output stopped being judged, was not
fixed. ``declared_criteria`` lists a run's declarations as plain text per criterion (so a site
can keep them in its state file), ``criteria_changes`` names every difference, and
``changed_for`` says which changes could have turned one cell's result, so a cell that passes
only under a changed criterion is never counted as fixed.

Criteria named (each from the plan, the run's first line or its artifacts; a log that does not
record one reads "not recorded"): tolerances and task criteria per dtype, judged regions per
output, update rules per parameter group (regions and rules from the fields that judge, not
their words; numbers in full where six digits would round two apart), the target and hard
requirements the disposition is judged against, the reference, the timing scope, the warm repetition
and re-measure round counts, the weights' and inputs' sha256, the collector and schema
versions; and what was run: the model revision, the planned cells with their fields, the
compile options, padding, declared inputs and attention path.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal, Mapping

from reportgen.judge.identity import RECIPE_V1
from reportgen.model.runmodel import RunModel

NOT_RECORDED = "not recorded"
EVERY_ELEMENT = "every element"
# What a declaration can decide: a cell's correctness, its timing, what was run (the model, its
# compile options, padding, attention path, declared inputs, the planned cells: a code or
# configuration change, so a cell that passes after it is fixed by that named change), or only
# what the record says. Replicates agree on all but the record.
Judges = Literal["correctness", "timing", "config", "record"]
LONGEST_VALUE = 160  # a declared or recorded value longer than this is named by its digest


@dataclass(frozen=True)
class Declared:
    """One declared criterion of one run."""

    key: str  # stable identity across runs, e.g. "region:last_hidden_state"
    label: str  # in words, e.g. "judged region of last_hidden_state"
    value: str
    judges: Judges
    dtype: str | None = None  # applies only to cells of this dtype; None: to every cell
    # A hash by content also names the file-bytes hash of the same files where the log has one,
    # so it can be compared with a run that hashed only the file bytes; the warm-up count names
    # the sha256 of the plan text it came from (declared_criteria).
    file_value: str | None = None
    # The inputs by content, one sha256 per input shape, where the log hashed each shape on its
    # own (content_by_key); None otherwise. Two runs are then compared over the shapes both hold.
    by_key: dict[str, str] | None = None
    # The recipe a hash by content follows (None: the first one, or no content hash): two
    # recipes' hashes of the same tensors differ, so they are not compared.
    recipe: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class CriterionChange:
    """A criterion declared differently by the earlier and the later run (a judged fact)."""

    key: str
    label: str
    before: str
    after: str
    judges: Judges
    dtype: str | None
    text: str  # the change in one phrase, e.g. "last_hidden_state now judged only where attention_mask != 0"


def number(value: float | None) -> str:
    """A declared number as the pages write it (``:g``), or in full where ``:g`` would round it:
    two thresholds that differ in the seventh digit are two criteria, never one text."""
    if value is None:
        return NOT_RECORDED
    short = f"{value:g}"
    return short if float(short) == value else repr(float(value))


def _tolerance(tol: Any) -> str:
    text = f"atol {number(tol.atol)}, rtol {number(tol.rtol)}"
    for name in ("loss", "grad"):
        rule = getattr(tol, name, None)
        if rule is not None:
            text += f"; {name} atol {number(rule.atol)}, rtol {number(rule.rtol)}"
    return text


def _region(rule: Any) -> str:
    """The judged region from the fields that judge it (the mask and the slices), not from the
    rule's words, which a log may state otherwise."""
    parts = ([f"{rule.mask} != 0"] if rule.mask is not None else []) + (
        [f"[{', '.join(rule.region)}]"] if rule.region is not None else []
    )
    return f"only where {' and '.join(parts)}" if parts else EVERY_ELEMENT


def _update_rule(group: Any) -> str:
    """A parameter group's rule from the fields that judge it: the rule, its bound (k, the
    learning rate, what counts as a zero gradient) and the names it matches."""
    text = bounded(group.rule)
    if group.rule == "lr-bound":
        zero = "exactly 0" if not group.zero_below else f"|grad| <= {number(group.zero_below)}"
        text += (
            f": |updated - reference| <= {number(group.k)} * lr, lr {number(group.lr)}, where the reference "
            f"gradient is {zero} at every step (elsewhere elementwise)"
        )
    return f"{text}; parameters matching {bounded(', '.join(group.match))}"


def _by_content(run: RunModel, role: str) -> bool:
    """Whether the log hashed the role's files by content (every inputs file, or the weights)."""
    if role == "weights":
        return bool(run.plan is not None and run.plan.weights_content_sha256)
    found = [a for a in run.artifacts if a.role == role]
    return bool(found) and all(a.content_sha256 for a in found)


def _inputs_sha(run: RunModel, by_content: bool) -> str:
    """The inputs by content or by file bytes, as asked."""
    shas = sorted(
        {
            (a.case or "", (a.content_sha256 if by_content else None) or a.sha256)
            for a in run.artifacts
            if a.role == "inputs"
        }
    )
    if not shas:
        return NOT_RECORDED
    if len(shas) == 1:
        return shas[0][1]
    return f"per cell ({len(shas)} files), digest {hashlib.sha256(repr(shas).encode()).hexdigest()[:12]}..."


def _inputs_by_key(run: RunModel) -> dict[str, str] | None:
    """The content sha256 of each input shape's inputs, where the run saved them in one run-wide
    file hashed shape by shape; None otherwise (a log before per-shape hashes, or inputs saved
    per cell)."""
    found = [a for a in run.artifacts if a.role == "inputs"]
    if len(found) == 1 and found[0].case is None and found[0].content_by_key:
        return dict(sorted(found[0].content_by_key.items()))
    return None


def _weights_sha(run: RunModel, by_content: bool) -> str:
    if by_content and run.plan is not None and run.plan.weights_content_sha256:
        return run.plan.weights_content_sha256
    if run.plan is not None and run.plan.weights_sha256:
        return run.plan.weights_sha256
    shas = sorted({a.sha256 for a in run.artifacts if a.role == "weights"})
    return ", ".join(shas) if shas else NOT_RECORDED


def _plan_criteria(plan: Any) -> list[Declared]:
    out = [Declared("reference", "reference", plan.reference, "correctness")]
    for dtype, tol in sorted(plan.tolerances.items()):
        out.append(Declared(f"tolerance:{dtype}", f"{dtype} tolerance", _tolerance(tol), "correctness", dtype))
        task = f"{tol.task.metric} {tol.task.op} {number(tol.task.threshold)}" if tol.task is not None else "none"
        out.append(Declared(f"task:{dtype}", f"{dtype} task criterion", task, "correctness", dtype))
    rules = plan.compare
    for rule in rules.outputs if rules is not None else []:
        out.append(Declared(f"region:{rule.output}", f"judged region of {rule.output}", _region(rule), "correctness"))
    for group in rules.params if rules is not None else []:
        out.append(
            Declared(
                f"update:{group.group}",
                f"update rule of {group.group}",
                _update_rule(group),
                "correctness",
            )
        )
    # What the disposition is judged against (a run for another target, a hard requirement such
    # as float64): a change moves the disposition without any cell's result changing.
    target = plan.intended_target or "none declared"
    out.append(Declared("intended_target", "intended target", bounded(target), "config"))
    needs = ", ".join(sorted(plan.requirements)) or "none declared"
    out.append(Declared("requirements", "hard requirements", bounded(needs), "config"))
    out += _config(plan)
    out += _workload_settings(plan)
    scope = plan.timing_scope
    parts = [
        f"{name.replace('_', ' ')} {'timed' if getattr(scope, name) else 'not timed'}"
        for name in ("preprocessing", "host_to_device", "output_retrieval")
    ]
    parts.append("synchronized" if scope.synchronized else "not synchronized")
    out.append(Declared("timing_scope", "timing scope", ", ".join(parts), "timing"))
    # The plan's words on its scope: named where they change, judging nothing by themselves (the
    # stages above and what each run's clock covered do).
    out.append(Declared("timing_scope_note", "timing scope note", bounded(scope.note or "none"), "record"))
    out.append(Declared("warm_repetitions", "warm repetitions", str(plan.warm_repetitions), "timing"))
    # Not recorded before 1.6: a log that does not say cannot be told to have warmed up alike,
    # unless it read the same plan text (criteria_changes).
    warmup = plan.warmup
    out.append(Declared("warmup", "warm-up calls", NOT_RECORDED if warmup is None else str(warmup), "timing"))
    rounds = plan.remeasure_rounds
    out.append(
        Declared("remeasure_rounds", "re-measure rounds", NOT_RECORDED if rounds is None else str(rounds), "timing")
    )
    return out


def _workload_settings(plan: Any) -> list[Declared]:
    """A generation or training plan's settings, each twice: as what the cells were judged on (a
    pass under other settings is no fix) and as what a timed call held (a decode of 8 steps, or a
    training step with another optimizer, is another quantity than one of 16 or with AdamW)."""
    out = []
    gen = plan.generation
    if gen is not None:
        judged = (
            f"{gen.decode_steps} greedy decode steps; top-{gen.top_k} overlap of at least {number(gen.min_top_k_overlap)}"
            " at every judged step"
        )
        request = (
            f"{gen.decode_steps} decode steps, a static cache of {gen.max_cache_len} positions, padded on the "
            f"{gen.padding_side}" + (f", configuration {gen.config}" if gen.config else "")
        )
        out.append(Declared("generation:judged", "generation criteria", bounded(judged), "correctness"))
        out.append(Declared("generation:request", "generation request", bounded(request), "timing"))
    train = plan.training
    if train is not None:
        steps = f"{train.steps} steps from seed {train.seed}, {train.optimizer}, {train.randomness}"
        out.append(Declared("training:judged", "training run judged", bounded(steps), "correctness"))
        # Dropout on or off changes the work each timed step does, as the optimizer does.
        timed = f"{train.optimizer}, {train.randomness}"
        out.append(Declared("training:step", "training step timed", bounded(timed), "timing"))
    return out


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:12]


def bounded(text: str) -> str:
    """A value as declared or recorded, or its digest when too long to name in a sentence
    (judge.changes names host facts the same way)."""
    return text if len(text) <= LONGEST_VALUE else f"{len(text)} characters, sha256 {_digest(text)}..."


def _matrix(plan: Any) -> str:
    """The planned cells by their fields, not only their names: the same case key with another
    mode or layout is another cell (a collector may name its cases as it likes)."""
    cells = sorted((c.case, c.batch, c.length, c.layout, c.dtype, c.mode, c.repeat_of or "") for c in plan.matrix)
    return f"{len(cells)} cells (cells and their fields sha256 {_digest(repr(cells))}...)"


def _config(plan: Any) -> list[Declared]:
    """What the plan says was run: each a code or configuration change when it differs."""
    copts = plan.compile_options
    compiled = (
        NOT_RECORDED
        if copts is None
        else f"dynamic {str(copts.dynamic).lower()}, mode {copts.mode}, fullgraph {str(copts.fullgraph).lower()}"
        + (f", options {json.dumps(copts.backend_options, sort_keys=True)}" if copts.backend_options else "")
    )
    pad = plan.padding
    padding = (
        "none declared"
        if pad is None
        else f"buckets {list(pad.buckets)}, above the largest {pad.above_largest or 'not declared'}, "
        f"masks {'padded' if pad.mask_padded else 'not padded'}"
    )
    inputs = "; ".join(
        f"{name}: {i.dtype} {i.layout}"
        + (f" ({i.how})" if i.how else "")
        + (f", values {i.value_range[0]} to {i.value_range[1]}" if i.value_range else "")
        for name, i in sorted((plan.declared_inputs or {}).items())
    )
    return [
        Declared("model_revision", "model revision", bounded(plan.model_revision), "config"),
        # Trained weights and made-up ones of one architecture are two models, whatever the revision says.
        Declared("weights_origin", "weights origin", plan.weights_origin or NOT_RECORDED, "config"),
        Declared("matrix", "planned matrix", _matrix(plan), "config"),
        Declared("compile_options", "compile options", bounded(compiled), "config"),
        # The buckets decide the shape a request is padded to, so the work its calls time.
        Declared("padding", "padding", bounded(padding), "timing"),
        Declared("declared_inputs", "declared inputs", bounded(inputs or "none declared"), "config"),
        Declared("attention_path", "attention path", bounded(plan.attention_path or NOT_RECORDED), "config"),
    ]


# A cold call's or compile's cache condition in words (the log keeps the token): every page's
# words for them (render/labels.py takes them from here).
CONDITION_WORDS = {
    "fresh_process_empty_cache": "fresh process, empty compile cache",
    "persistent_cache": "persistent compile cache with entries",
    "restart_populated_cache": "restart, cache populated",
    "compiled_in_process": "in a process already running (not fresh)",
    "eager_no_compile": "eager (no torch.compile)",
}


def _compiled_measurement(run: RunModel) -> Declared:
    """Where the compiled cells were compiled and timed, as their events' cache conditions say
    (the collector's --cold: a fresh process per cell from an empty cache, or the collector's own
    process): warm loops of one and of the other ran in different processes. Cache checks left
    out; "not recorded" where no compiled cell was timed (criteria_changes then names no change
    against it)."""
    compiles, colds = set(), set()
    for cell in run.cells:
        if cell.planned.mode != "compiled" or cell.planned.repeat_of is not None:
            continue
        if cell.compile_cache is not None and cell.compile_cache[2]:
            compiles.add(cell.compile_cache[2])
        if cell.cold_condition:
            colds.add(cell.cold_condition)
    if not compiles and not colds:  # nothing to compare: no change is named against it
        value = NOT_RECORDED
    else:
        # No compiled cell timed (a cell that failed has no cold call): its cold condition is not
        # recorded, not "none", and criteria_changes then compares the compile conditions alone.
        words = [
            ", ".join(CONDITION_WORDS.get(c, c) for c in sorted(found)) or NOT_RECORDED for found in (compiles, colds)
        ]
        value = f"compiled: {words[0]}; cold call: {words[1]}"
    return Declared("compiled_measurement", "where compiled cells were compiled and timed", value, "record")


def declared_criteria(run: RunModel) -> dict[str, Declared]:
    """Every criterion the run declared, by key."""
    found = _plan_criteria(run.plan) if run.plan is not None else []
    found += [
        _computed_reference(run),
        _hash(run, "weights", _weights_sha),
        _hash(run, "inputs", _inputs_sha),
        Declared("collector", "collector version", run.start.collector, "record"),
        _compiled_measurement(run),
        Declared("schema", "schema version", run.start.schema_version, "record"),
    ]
    declared = {d.key: d for d in found}
    plan_sha = next(
        (f.sha256 for f in (run.start.provenance.files if run.start.provenance else []) if f.role == "plan"), None
    )
    if "warmup" in declared and plan_sha:
        declared["warmup"] = replace(declared["warmup"], file_value=plan_sha)
    return declared


def _computed_reference(run: RunModel) -> Declared:
    """The reference as the run computed it, from its reference events (device and dtype, shape
    by shape), beside the plan's declaration of it: a cell judged against a reference computed
    otherwise is judged under another criterion, so a pass then is no fix."""
    shapes: dict[str, list[str]] = {}
    for ref in run.references:
        shapes.setdefault(f"{ref.device} {ref.dtype}", []).append(ref.shape)
    if not shapes:
        return Declared("reference_computed", "reference as computed", NOT_RECORDED, "correctness")
    common = max(sorted(shapes), key=lambda k: len(shapes[k]))
    others = [f"{k} for {', '.join(sorted(set(shapes[k])))}" for k in sorted(shapes) if k != common]
    value = common + (f", but {'; '.join(others)}" if others else "")
    return Declared("reference_computed", "reference as computed", bounded(value), "correctness")


def _hash_label(role: str, by_content: bool) -> str:
    return (
        f"{role} sha256 (by content)"
        if by_content
        else f"{role} sha256 (file bytes: the same tensors saved another way differ)"
    )


def _hash(run: RunModel, role: str, sha: Any) -> Declared:
    """The role's hash, labelled by what it hashes: by content where the log hashed it so (with the
    file-bytes hash beside it), else the file bytes."""
    if _by_content(run, role):
        by_key = _inputs_by_key(run) if role == "inputs" else None
        recipes = sorted({a.content_recipe or RECIPE_V1 for a in run.artifacts if a.role == role}) or [RECIPE_V1]
        recipe = None if recipes == [RECIPE_V1] else ", ".join(recipes)
        return Declared(
            role,
            _hash_label(role, True),
            sha(run, True),
            "correctness",
            file_value=sha(run, False),
            by_key=by_key,
            recipe=recipe,
        )
    return Declared(role, _hash_label(role, False), sha(run, False), "correctness")


def _is_content(d: Declared) -> bool:
    return d.label.endswith("(by content)")


def _comparable(a: Declared, b: Declared) -> bool:
    """Whether two hashes of one role are of one kind: both of file bytes, or both by content of
    one recipe."""
    return _is_content(a) == _is_content(b) and (not _is_content(a) or a.recipe == b.recipe)


def _hash_change(key: str, a: Declared, b: Declared) -> CriterionChange | None:
    """A weights or inputs hash where one run hashed by content and the other only the file bytes
    (or both by content, of two recipes):
    compared by file bytes where both have them, else named as not comparable (two kinds of hash
    are never compared as one)."""
    fa = a.file_value if _is_content(a) else a.value
    fb = b.file_value if _is_content(b) else b.value
    if fa and fb and NOT_RECORDED not in (fa, fb):
        if fa == fb:
            return None
        label = _hash_label(key, False)
        return CriterionChange(key, label, fa, fb, a.judges, a.dtype, _phrase(key, label, fa, fb))
    kind = {True: "by content", False: "file bytes"}
    recipe = lambda d: f", {d.recipe or RECIPE_V1}" if _is_content(a) and _is_content(b) else ""  # noqa: E731
    before, after = f"{a.value} ({kind[_is_content(a)]}{recipe(a)})", f"{b.value} ({kind[_is_content(b)]}{recipe(b)})"
    why = (
        "hashes by content of two recipes differ"
        if _is_content(a) and _is_content(b)
        else "a hash by content and a hash of file bytes differ"
    )
    text = (
        f"{key} sha256 not comparable: {kind[_is_content(b)]}{recipe(b)} {_short(b.value)} now, "
        f"{kind[_is_content(a)]}{recipe(a)} {_short(a.value)} before ({why} "
        f"even for the same tensors, so whether the {key} changed is not known)"
    )
    return CriterionChange(key, f"{key} sha256", before, after, a.judges, a.dtype, text)


def _short(value: str) -> str:
    """A sha256 shortened to 12 hex digits, as the pages show them; other values as declared."""
    return f"{value[:12]}..." if len(value) == 64 and all(ch in "0123456789abcdef" for ch in value) else value


def _phrase(key: str, label: str, before: str, after: str) -> str:
    if key.startswith("region:"):
        output = key.partition(":")[2]
        if after == EVERY_ELEMENT:
            return f"{output} now judged at every element (was {before})"
        was = "" if before == EVERY_ELEMENT else f" (was {before})"
        return f"{output} now judged {after}{was}"
    return f"{label} now {_short(after)} (was {_short(before)})"


def criteria_changes(before: Mapping[str, Declared], after: Mapping[str, Declared]) -> list[CriterionChange]:
    """Every criterion whose declaration differs, correctness first, then timing, then what was run, then the record."""
    order = {"correctness": 0, "timing": 1, "config": 2, "record": 3}
    changes: list[CriterionChange] = []
    for key in sorted(set(before) | set(after)):
        a, b = before.get(key), after.get(key)
        first = a or b
        assert first is not None
        old = a.value if a is not None else (EVERY_ELEMENT if key.startswith("region:") else NOT_RECORDED)
        new = b.value if b is not None else (EVERY_ELEMENT if key.startswith("region:") else NOT_RECORDED)
        if a is not None and b is not None and _same_shared_shapes(a, b):
            continue
        if a is not None and b is not None and key in ("weights", "inputs") and not _comparable(a, b):
            hashed = _hash_change(key, a, b)
            changes += [hashed] if hashed is not None else []
        elif key == "compiled_measurement" and _same_measurement(old, new):
            # A side that compiled no cell, or timed none: only what both record is compared.
            continue
        elif (
            key == "warmup" and NOT_RECORDED in (old, new) and a and b and a.file_value and a.file_value == b.file_value
        ):
            # One plan text on both sides: every collector has read its [timing] warmup (3 when
            # it leaves the key out), so a log that did not record the count warmed up alike.
            continue
        elif old != new:
            changes.append(
                CriterionChange(
                    key, first.label, old, new, first.judges, first.dtype, _phrase(key, first.label, old, new)
                )
            )
    return sorted(changes, key=lambda c: (order[c.judges], c.key))


def _same_measurement(old: str, new: str) -> bool:
    """Whether two compiled_measurement values agree on every part both record (a part, or the
    whole, 'not recorded' on a side compares nothing)."""
    if NOT_RECORDED in (old, new):
        return True
    try:
        parts = [dict(part.split(": ", 1) for part in value.split("; ")) for value in (old, new)]
    except ValueError:  # not this function's own form: compared whole
        return old == new
    return all(
        parts[0][k] == parts[1][k] for k in parts[0] if k in parts[1] and NOT_RECORDED not in (parts[0][k], parts[1][k])
    )


def _same_shared_shapes(a: Declared, b: Declared) -> bool:
    """Whether both runs hashed their inputs shape by shape and every input shape both hold has
    the same content (shared_shapes_agree)."""
    if not (a.by_key and b.by_key and _is_content(a) and _is_content(b) and a.recipe == b.recipe):
        return False
    return shared_shapes_agree(a.by_key, b.by_key) is True


def shared_shapes_agree(a: Mapping[str, str], b: Mapping[str, str]) -> bool | None:
    """Whether every input shape two runs both hashed on its own holds the same content; None
    when they share none (their run-wide hashes decide). A run of fewer cells (--only) saves
    fewer shapes, which changes the run-wide hash and nothing the two runs share: a shape on one
    side only is a cell added or removed, which a diff names as such."""
    shared = set(a) & set(b)
    return all(a[k] == b[k] for k in shared) if shared else None


def changed_for(changes: list[CriterionChange], dtype: str, judges: Judges = "correctness") -> list[CriterionChange]:
    """The changes that apply to a cell of ``dtype`` and could have decided what ``judges`` names."""
    return [c for c in changes if c.judges == judges and (c.dtype is None or c.dtype == dtype)]


def from_dicts(data: Mapping[str, Mapping[str, Any]]) -> dict[str, Declared]:
    return {key: Declared(**value) for key, value in data.items()}


def replicate_mismatch(first: Mapping[str, Declared], other: Mapping[str, Declared]) -> list[CriterionChange]:
    """What makes ``other`` no replicate of ``first``: a correctness or timing criterion declared
    differently, or the plan's words on its timing scope (a collector or schema version alone
    does not)."""
    return [c for c in criteria_changes(first, other) if c.judges != "record" or c.key == "timing_scope_note"]
