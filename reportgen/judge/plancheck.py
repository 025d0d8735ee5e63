"""`reportgen plan-check`: review a workload plan against what the target backend documents.

The order of reasoning is the seed's: identify shape constraints, check required dtype
semantics, and only then design correctness and performance tests. Each finding names the
documented constraint it rests on and says what to change or verify first. The plan is
classified as one of:

* ``compatible``: compatible as specified;
* ``revise``: needs a revised test plan (a revised plan can be written; the values it proposes are
  marked and keep this class until a person replaces them);
* ``blocked``: blocked by a precision requirement.
"""

from __future__ import annotations

import sys

import ast
import bisect
import copy
import json
import os
import re
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, overload

import msgspec
import tomli_w

from collector import planschema
from collector.descriptors import default_target
from collector.stability import MIN_SAMPLES, TWO_MODES_MIN_SAMPLES
from collector.visible import escaped, visible
from collector.plan import (
    DEFAULT_FP32_TOLERANCE,
    MAX_PLANNED_CELLS,
    WEIGHTS_ORIGINS,
    WORKLOAD_FUNCTIONS,
    WorkloadPlan,
    missing_criteria,
    module_missing,
    plan_from_data,
    read_plan_file,
    required_functions,
)
from reportgen.contract.inspection import InspectionError, InspectionLog
from reportgen.judge.backend_docs import BackendDocs, load_backend_docs
from reportgen.judge.criterion_power import (
    backwards,
    bit_exact,
    cannot_fail,
    cannot_pass,
    deciding,
    SIMILARITY,
    idle_task,
    top_k_vacuous,
)
from reportgen.storage.local import NotReadable, read_bounded, replace_file

CLASSES = {
    "compatible": "Compatible as specified",
    "revise": "Needs a revised test plan",
    "blocked": "Blocked by a precision requirement",
}
EXIT_CODES = {"compatible": 0, "revise": 3, "blocked": 4}
MIN_BUCKET = 128
RECOMPILE_LIMIT = 8
PROPOSED_BF16 = {"atol": 1e-2, "rtol": 1.6e-2}
PROPOSED_BF16_TASK_THRESHOLD = 0.99
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


@dataclass
class Finding:
    id: str
    severity: str  # block | revise | note
    title: str
    detail: str
    first: str
    constraint: str = ""
    source: str = ""
    basis: str = ""  # "predicted from the graph, not measured on the device" for findings from an inspection
    # Where in the plan: the dotted key the finding is about ("matrix.cache_checks"), and the line
    # of the plan file that holds it (or its table; None: not in the file, or not a file).
    key: str = ""
    line: int | None = None


PREDICTED = "predicted from the graph, not measured on the device"


@dataclass
class PlanReview:
    plan: str
    target: str
    release: str
    classification: str
    headline: str
    findings: list[Finding] = field(default_factory=list)
    revised: dict[str, Any] | None = None
    # With --inspection: what each inspected shape's graph holds, one line each (the facts the findings rest on).
    inspected: list[str] = field(default_factory=list)
    inspection: str = ""  # the inspection log and where it was made

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["findings"] = [asdict(f) for f in self.findings]
        return data


@dataclass
class Context:
    raw: dict[str, Any]
    plan: WorkloadPlan
    docs: BackendDocs
    revised: dict[str, Any]

    @property
    def compiled(self) -> bool:
        return any(c.mode == "compiled" for c in self.plan.cells)

    @property
    def checked(self) -> dict[str, Any]:
        """The plan as the schema validated it, every default filled in."""
        return self.plan.checked

    def lengths(self) -> list[int]:
        return sorted({l for _, l in self.revised["matrix"].get("shapes", [])})

    def cite(self, cid: str) -> tuple[str, str]:
        found = self.docs.constraint(cid)
        return (found.title, found.source) if found else ("", "")


@overload
def bucket_for(length: int) -> int: ...
@overload
def bucket_for(length: int, ladder: list[int] | None) -> int | None: ...
def bucket_for(length: int, ladder: list[int] | None = None) -> int | None:
    """The bucket a request length pads up to: the next bucket of a declared ladder at or above it
    (None when the length is above the largest), or with no ladder the next power of two, at least
    128 (the ladder plan-check proposes). The ladder is ascending (the plan schema checks it): a
    binary search, as plans may list thousands of buckets and lengths."""
    if ladder:
        at = bisect.bisect_left(ladder, length)
        return ladder[at] if at < len(ladder) else None
    bucket = MIN_BUCKET
    while bucket < length:
        bucket *= 2
    return bucket


LISTED = 12  # items a finding's text lists at most: a plan of a megabyte plans 100,000 lengths


def listed(items: Iterable[Any], sep: str = ", ") -> str:
    """Items of a finding's text joined, the first LISTED of them when there are more, with the
    count ("1 -> 128, 2 -> 128, … (first 12 of 50,000)"), as the reports cut lists of cells: one
    finding never grows with the plan. Every list-valued text in a finding goes through here."""
    items = list(items)
    text = sep.join(map(str, items[:LISTED]))
    return text if len(items) <= LISTED else f"{text}{sep}… (first {LISTED} of {len(items):,})"


def bracketed(items: Iterable[Any]) -> str:
    """A list as Python prints one ([1000, 2000]), cut as ``listed`` cuts it."""
    return f"[{listed(items)}]"


def _finding(ctx: Context, cid: str, severity: str, title: str, detail: str, first: str, key: str = "") -> Finding:
    constraint, source = ctx.cite(cid)
    return Finding(cid, severity, title, detail, first, constraint, source, key=key)


def check_precision(ctx: Context) -> list[Finding]:
    f64_doc = ctx.docs.constraint("float64-as-float32")
    required = "requires_float64" in ctx.plan.requirements
    if f64_doc is None:
        dtypes = ctx.revised["matrix"].get("dtypes", ["float32"])
        if not required or "float64" in dtypes:
            return []
        ctx.revised["matrix"]["dtypes"] = [*dtypes, "float64"]
        return [
            Finding(
                "float64-required",
                "revise",
                "float64 computation is required but no float64 cell is planned",
                "A report blocks such a run: cells of other dtypes are no evidence of float64 computation.",
                "Add float64 to [matrix] dtypes, with its tolerance and task criterion.",
                "",
                "plan",
                key="matrix.dtypes",
            )
        ]
    if required:
        return [
            _finding(
                ctx,
                "float64-as-float32",
                "block",
                "float64 computation is required but the backend computes float64 as float32",
                "Changing eager versus compiled execution does not establish float64 compliance, and relaxing the requirement to record a pass is not acceptable.",
                "Keep the workload on a verified float64-capable path unless its owner approves a scientifically justified change; then rewrite the requirement and plan before any hardware time.",
            )
        ]
    if any(c.dtype == "float64" for c in ctx.plan.cells):
        return [
            _finding(
                ctx,
                "float64-as-float32",
                "revise",
                "float64 cells will run as float32",
                "The plan has float64 cells but does not say whether float64 computation is required.",
                "Declare requires_float64 if acceptance needs it (the plan is then blocked on this backend), or plan float32 cells instead.",
                key="matrix.dtypes",
            )
        ]
    wide = [name for name, spec in ctx.checked.get("inputs", {}).items() if spec["dtype"] == "float64"]
    if wide:
        return [
            _finding(
                ctx,
                "float64-as-float32",
                "revise",
                f"float64 input(s) {listed(wide)} will run as float32",
                "The real preprocessing produces float64, but the cells cast floating inputs to their dtype and the backend computes float64 as float32.",
                "Declare requires_float64 if acceptance needs float64 computation (the plan is then blocked on this backend), or declare the input as float32 if the precision is not needed.",
                key=f"inputs.{wide[0]}",
            )
        ]
    return []


def _variable_lengths(ctx: Context) -> bool:
    """Lengths come from variable requests (rather than fixed problem sizes) when the plan pads
    them, says so, asks torch.compile for dynamic shapes (its owner expects lengths to vary), or
    expects fewer compilations than it has shapes."""
    workload = ctx.checked["workload"]
    shapes = {tuple(s) for s in ctx.checked["matrix"]["shapes"]}
    expected = workload["expected_compilations"]
    if "padding" in ctx.checked:
        return True
    if _dynamic_served(ctx):  # one graph may serve every length: no ladder asked
        return False
    dynamic = bool((ctx.checked.get("compile") or {}).get("dynamic"))  # asked of a target without it
    return workload["variable_lengths"] or dynamic or (expected is not None and expected < len(shapes))


def _dynamic_served(ctx: Context) -> bool:
    """Whether the plan compiles with dynamic shapes on a target that takes them: then lengths
    may vary without a graph per length, and neither a bucket ladder nor one compilation per
    shape is asked (how many graphs dynamic shapes make is the compile cells' to measure)."""
    return bool((ctx.checked.get("compile") or {}).get("dynamic")) and _allowed(ctx, "compile.dynamic", True)


def _drop_lengths(ctx: Context, lengths: set[int]) -> None:
    """Take the shapes of ``lengths`` out of the revised matrix and its cache checks (none where
    that would leave the matrix no shape: the finding says what to do, and the owner decides)."""
    matrix = ctx.revised["matrix"]
    if all(shape[1] in lengths for shape in matrix.get("shapes", [])):
        return
    for key in ("shapes", "cache_checks"):
        if key in matrix:
            matrix[key] = [list(shape) for shape in matrix[key] if shape[1] not in lengths]


def check_masks_padded(ctx: Context) -> list[Finding]:
    """Padded lengths with masks declared unpadded: the padded positions are attended to."""
    padding = ctx.checked.get("padding") or {}
    if not padding.get("buckets") or padding.get("mask_padded", True) or "generation" in ctx.checked:
        return []
    revised = ctx.revised.setdefault("padding", {})
    revised.update({"mask_padded": True, "proposed": True})
    return [
        Finding(
            "masks-padded",
            "revise",
            "padded lengths with the attention masks not padded (mask_padded = false)",
            "A request padded to its bucket whose mask does not mark the padding as 0 attends to the pad tokens: its outputs are not the unpadded request's, and a comparison with the reference tests another computation.",
            "Pad the masks identically in make_inputs (0 at every padded position) and declare mask_padded = true (the revised plan does, marked proposed = true).",
            "",
            "",
            key="padding.mask_padded",
        )
    ]


def _map_lengths(ctx: Context, mapping: dict[int, int]) -> None:
    """Rewrite the revised matrix's shapes and cache checks through a length -> bucket mapping."""
    matrix = ctx.revised["matrix"]
    for key in ("shapes", "cache_checks"):
        if key in matrix:
            seen = {(b, mapping.get(l, l)) for b, l in matrix[key]}  # a set: a list is quadratic in shapes
            matrix[key] = [list(shape) for shape in sorted(seen)]


def _untested_buckets(ctx: Context, declared: list[int], rejects: bool) -> list[int]:
    """The declared buckets no length of the (revised) matrix pads to, in an inference plan
    (a generation plan's requests are routed by the collector, judged apart)."""
    if "generation" in ctx.checked:
        return []
    tested = {length for _, length in ctx.revised["matrix"].get("shapes", [])}
    return [b for b in declared if b not in tested]


def _untested_buckets_finding(ctx: Context, declared: list[int], untested: list[int]) -> Finding:
    """Buckets the service serves that no cell tests: the largest, the real maximum request
    shape, is added to the revised matrix (at the first planned batch); the others are named."""
    largest = declared[-1]
    served = [b for b in declared if b not in untested]
    if largest not in untested or not served:
        # Where no planned length is served at all (every one above the ladder, refused), the
        # matrix is the owner's to write: nothing is tested in place of what they planned.
        return _finding(
            ctx,
            "recompile-per-shape",
            "note",
            f"the declared bucket(s) {bracketed(untested)} are never tested",
            f"No planned length pads to {bracketed(untested)}: requests the service pads there compile graphs this run neither compiles nor checks.",
            f"Add a shape at {bracketed(untested)} where those requests matter, with a cache check.",
            key="padding.buckets",
        )
    shapes = ctx.revised["matrix"].setdefault("shapes", [])
    batch = shapes[0][0] if shapes else 1
    shapes.append([batch, largest])
    others = [b for b in untested if b != largest]
    return _finding(
        ctx,
        "recompile-per-shape",
        "revise",
        f"the largest declared bucket ({largest}) is never tested",
        f"No planned length pads to {largest}, the real maximum request shape the service compiles"
        + (f" (nor to {bracketed(others)})" if others else "")
        + ": its graph, the largest and the one most likely to fail to compile or to fit, would first meet the device in service.",
        f"Add [{batch}, {largest}] to the matrix (the revised plan does).",
        key="padding.buckets",
    )


def check_buckets(ctx: Context) -> list[Finding]:
    """A declared ladder is used as declared; without one, variable lengths get a proposed ladder."""
    if not ctx.compiled or not _variable_lengths(ctx):
        return []
    declared = list(ctx.checked.get("padding", {}).get("buckets", []))
    padding = ctx.revised.setdefault("padding", {})
    lengths = ctx.lengths()
    findings = []
    if not declared:
        ladder = sorted({bucket_for(l) for l in lengths})
        mapping = {l: bucket_for(l) for l in lengths}
        _map_lengths(ctx, mapping)
        padding.update({"buckets": ladder, "mask_padded": padding.get("mask_padded", True), "proposed": True})
        findings.append(
            _finding(
                ctx,
                "recompile-per-shape",
                "revise",
                "request lengths are not padded to a fixed set of buckets (no ladder declared)",
                f"Every new input shape compiles again. This is a proposal, not a decision: a ladder of powers of two from {MIN_BUCKET} ({listed(ladder)}) covering the planned lengths ({listed(f'{l} -> {mapping[l]}' for l in lengths)}); the owner's real length distribution may call for another.",
                f"Choose the bucket ladder (the revised plan proposes {bracketed(ladder)}, marked proposed = true), pad masks identically, then plan compile and cache checks per bucket.",
            )
        )
    else:
        largest = declared[-1]
        # The ladder is ascending (the plan schema checks it): a length has a bucket when it is
        # at most the largest.
        inside = {l: b for l in lengths if (b := bucket_for(l, declared)) is not None}
        above = [l for l in lengths if l > largest]
        padded = {l: b for l, b in inside.items() if l != b}
        policy = ctx.checked["padding"]["above_largest"]
        # Under reject, no shape of a longer request reaches the model: nothing to test in its place.
        rejects = planschema.policy_word(policy) == "reject"
        mapping = dict(padded) | ({} if rejects else {l: largest for l in above})
        if "generation" not in ctx.checked:
            # (A generation plan's lengths are requests, kept as written: the collector routes
            # each to its bucket, and a request padded, or above the ladder, is what it tests.)
            if mapping:
                _map_lengths(ctx, mapping)
            if rejects and above:
                _drop_lengths(ctx, set(above))
        if "generation" in ctx.checked:
            # A generation plan's lengths are requests: the collector pads each to its bucket
            # and applies the declared policy above the largest, so the model sees the ladder.
            served = sorted(
                set(padded.values()) | ({largest} if above and planschema.policy_word(policy) == "truncate" else set())
            )
            detail = f"Each request pads to its bucket ({listed(f'{l} -> {b}' for l, b in padded.items()) or 'every length is a bucket'}), the mask padded alike; the prefill graphs are those of {bracketed(served)}, and decode has one shape (the static KV cache)."
            if above and policy:
                detail += f" Lengths {bracketed(above)} are above the largest bucket and follow the declared policy ({policy!r})."
            elif above:
                detail += f" Lengths {bracketed(above)} are above the largest bucket, and no policy is declared for them: the collector refuses them, untested."
            findings.append(
                _finding(
                    ctx,
                    "recompile-per-shape",
                    "note",
                    "requests are padded to the declared buckets by the generation plan",
                    detail,
                    "Check the compile events: one prefill graph per bucket, one decode graph, nothing compiled again.",
                )
            )
            padded, above = {}, []
        if padded:
            findings.append(
                _finding(
                    ctx,
                    "recompile-per-shape",
                    "revise",
                    "request lengths are not padded to the declared buckets",
                    f"Every new input shape compiles again; the declared ladder {bracketed(declared)} is kept as declared and each length pads to the next bucket ({listed(f'{l} -> {b}' for l, b in padded.items())}). With batch size and dtype fixed this bounds the sequence shapes; it does not promise one compilation per shape for every graph.",
                    f"Test the padded lengths {bracketed(sorted(set(padded.values())))} (pad masks identically), then plan compile and cache checks per bucket.",
                )
            )
        untested = _untested_buckets(ctx, declared, rejects)
        if untested:
            findings.append(_untested_buckets_finding(ctx, declared, untested))
        if above and policy and not policy.startswith(planschema.UNDECIDED):
            findings.append(
                _finding(
                    ctx,
                    "static-shapes",
                    "revise",
                    f"lengths {bracketed(above)} are above the largest bucket ({largest})",
                    f"The declared policy ({policy!r}) refuses such a request: no shape of it reaches the model, so a cell of that length tests nothing the service runs."
                    if rejects
                    else f"The declared policy ({policy!r}) decides what such a request becomes; the largest bucket {largest} is the shape that reaches the model.",
                    f"Drop {bracketed(above)} from the matrix (the refusal is the service's to test), or declare truncate to test {largest} in their place."
                    if rejects
                    else f"Test {largest} in place of {bracketed(above)}.",
                )
            )
    if ctx.revised.get("padding", {}).get("buckets") and not ctx.checked.get("padding", {}).get("above_largest"):
        largest = max(padding["buckets"])
        above = [l for l in lengths if declared and l > largest]
        padding["above_largest"] = (
            f"{planschema.UNDECIDED}: define what happens to requests longer than {largest} tokens (reject, truncate or split)"
        )
        if not above:
            extra = ""
        elif "generation" in ctx.checked:  # requests, kept as written: the collector applies the policy
            extra = f" The planned requests of {bracketed(above)} tokens are above it: with no policy the collector refuses them, untested."
        else:
            extra = f" The planned lengths {bracketed(above)} are above it; the revised plan tests {largest} in their place."
        findings.append(
            _finding(
                ctx,
                "static-shapes",
                "revise",
                "no policy for requests above the largest bucket",
                f"A request longer than {largest} tokens would need a new shape and a new compilation.{extra}",
                f"Decide and write down what happens above {largest} (reject, truncate or split) before testing: the revised plan holds UNDECIDED until then.",
            )
        )
    return findings


def _generation_graphs(ctx: Context) -> int | None:
    """A generation plan's graphs per dtype and layout: one prefill graph per bucket its requests
    pad to (the largest too where a request above it is truncated to it), one decode graph (the
    static KV cache); None for another plan or one without buckets."""
    declared = list(ctx.checked.get("padding", {}).get("buckets", []))
    if "generation" not in ctx.checked or not declared:
        return None
    policy = ctx.checked["padding"]["above_largest"]
    served = {b for l in ctx.lengths() if (b := planschema.served_bucket(l, declared, policy)) is not None}
    return len(served) + 1


def check_expected_compilations(ctx: Context) -> list[Finding]:
    expected = ctx.checked["workload"]["expected_compilations"]
    shapes = {(b, l) for b, l in ctx.revised["matrix"].get("shapes", [])}
    graphs = _generation_graphs(ctx)
    needed = len(shapes) if graphs is None else graphs
    if expected is None or not ctx.compiled or expected >= needed or (graphs is None and _dynamic_served(ctx)):
        return []
    ctx.revised["workload"]["expected_compilations"] = needed
    if graphs is not None:
        title = f"expects {expected} compilation(s) for {needed - 1} prefill bucket(s) and one decode graph"
        first = f"Expect at least {needed} compilations per dtype and layout (one prefill graph per bucket served, one decode graph) and verify them with the compile and cache-check cells."
    else:
        planned = {tuple(s) for s in ctx.checked["matrix"].get("shapes", [])}
        # Counted on the revision's shapes (lengths padded to a proposed ladder), said so.
        padded = " once padded to the buckets" if planned != shapes else ""
        title = f"expects {expected} compilation(s) for {len(shapes)} shapes{padded}"
        first = f"Expect at least one compilation per shape ({len(shapes)} per dtype and layout) and verify it with the compile and cache-check cells."
    return [
        _finding(
            ctx,
            "recompile-per-shape",
            "revise",
            title,
            "Compilation is just-in-time per input signature: one initial compilation cannot cover every length.",
            first,
        )
    ]


def _graph_of(ctx: Context) -> Callable[[tuple[int, ...]], Any]:
    """The graph a compiled shape compiles: the shape itself; in a generation plan the bucket its
    request pads to (None for one the policy refuses: nothing is compiled for it)."""
    padding = ctx.checked.get("padding") or {}
    declared, policy = list(padding.get("buckets", [])), padding.get("above_largest")
    if ctx.plan.generation is None or not declared:
        return lambda s: s

    def bucket(shape: tuple[int, ...]) -> Any:
        served = planschema.served_bucket(shape[1], declared, policy)
        return None if served is None else (shape[0], served)

    return bucket


def _tested(shapes: list[tuple[int, ...]], graph: Callable[[tuple[int, ...]], Any]) -> set[tuple[int, ...]]:
    """The shapes a repeat tests the cache of: compiled (a graph of their own), with a shape of
    another graph after them in plan order. One pass from the end, the graphs seen so far kept."""
    tested: set[tuple[int, ...]] = set()
    after: set[Any] = set()
    for shape in reversed(shapes):
        own = graph(shape)
        if own is not None and after - {own}:
            tested.add(shape)
        if own is not None and len(after) < 2:  # two distinct graphs after a shape already decide it
            after.add(own)
    return tested


def check_cache_check(ctx: Context) -> list[Finding]:
    shapes = [tuple(s) for s in ctx.revised["matrix"].get("shapes", [])]
    checks = [tuple(s) for s in ctx.revised["matrix"].get("cache_checks", [])]
    # The collector runs the repeats after the last shape of each group, in plan order; a repeat
    # tests the cache only where another graph was compiled after its own shape (collector
    # run/cells.idle_repeat, which skips the others).
    useful = _tested(shapes, _graph_of(ctx))
    idle = [c for c in checks if c in shapes and c not in useful]
    if ctx.compiled and idle:
        testing = [c for c in checks if c in useful]  # checks that do test the cache
        earlier = min(useful, key=lambda s: (s[0] * s[1], s)) if useful else None
        title = f"the cache check of {listed(str(list(c)) for c in idle)} tests no cache"
        detail = (
            "The collector runs the repeats after the last shape of the matrix and skips one with no other graph compiled after its own shape"
            + (
                " (in a generation plan, another bucket a request is padded to)"
                if ctx.plan.generation is not None
                else ""
            )
            + ": a repeat straight after its own graph shows only that the graph just compiled is reused."
        )
        if testing:  # another check tests the cache: this one only costs a cell
            first = f"Drop it: the cache check of {list(testing[0])} tests the cache."
            return [_finding(ctx, "recompile-per-shape", "note", title, detail, first, key="matrix.cache_checks")]
        if earlier is None:  # one graph in the matrix (or every shape mapped to one bucket)
            detail += " With one graph in the matrix no repeat can test the cache."
            first = "Plan another shape after the one repeated."
            return [_finding(ctx, "recompile-per-shape", "note", title, detail, first, key="matrix.cache_checks")]
        # Every check idle: the run holds no cache check at all, as a plan that declares none.
        ctx.revised["matrix"]["cache_checks"] = [list(earlier)]
        first = f"Repeat {list(earlier)} instead (a shape with another graph after it; the collector repeats it after the last shape)."
        if _dynamic_served(ctx):  # not the static-shape rule, as for a missing check
            return [Finding("recompile-per-shape", "revise", title, detail, first, "", "", key="matrix.cache_checks")]
        return [_finding(ctx, "recompile-per-shape", "revise", title, detail, first, key="matrix.cache_checks")]
    if not ctx.compiled or len(shapes) < 2 or checks:
        return []
    # The collector repeats after the matrix's last shape: the smallest with another graph after it.
    if not useful:
        return []
    smallest = min(useful, key=lambda s: (s[0] * s[1], s))
    ctx.revised["matrix"]["cache_checks"] = [list(smallest)]
    title = "no cache check"
    detail = f"Repeating {list(smallest)} after the matrix's last shape {list(shapes[-1])} shows whether the process compiles a shape again."
    first = f"Add {list(smallest)} as a cache check (the collector repeats it after the last shape)."
    if _dynamic_served(ctx):  # not the static-shape rule: dynamic shapes may serve the repeat, or not
        return [Finding("recompile-per-shape", "revise", title, detail, first, "", "")]
    return [_finding(ctx, "recompile-per-shape", "revise", title, detail, first)]


# The lower-precision dtypes a plan may test after FP32, by the name the findings give them.
LOW_PRECISION = {"bfloat16": "BF16", "float16": "FP16"}


# Floating dtypes by the bits of their mantissa: the precision a reference in them keeps.
MANTISSA_BITS = {"bfloat16": 8, "float16": 11, "float32": 24, "float64": 53}


def check_reference_dtype(ctx: Context) -> list[Finding]:
    """A reference that computes in a narrower dtype than a planned cell judges that cell against
    values less precise than its own: its error then measures the reference's rounding."""
    ref = ctx.checked["reference"]["dtype"]
    dtypes = ctx.revised["matrix"].get("dtypes", ["float32"])
    narrower = [d for d in dtypes if MANTISSA_BITS.get(d, 0) > MANTISSA_BITS.get(ref, 99)]
    if not narrower:
        return []
    widest = max(narrower, key=MANTISSA_BITS.__getitem__)
    ctx.revised.setdefault("reference", {})["dtype"] = widest
    return [
        Finding(
            "reference-dtype",
            "revise",
            f"the reference computes in {ref}, less precise than the planned {listed(narrower)} cells",
            f"Each {listed(narrower)} cell would be judged against {ref} values, so its error would measure the "
            "reference's own rounding, not the backend's; a trusted reference is at least as precise as what it judges.",
            f'Run the reference in {widest} ([reference] dtype = "{widest}").',
            "Compare against a trusted reference",
            "seed",
            key="reference.dtype",
        )
    ]


def check_dtypes(ctx: Context) -> list[Finding]:
    dtypes = list(ctx.revised["matrix"].get("dtypes", ["float32"]))
    findings = []
    low = [LOW_PRECISION[d] for d in dtypes if d in LOW_PRECISION]
    if low and dtypes[0] != "float32":
        ctx.revised["matrix"]["dtypes"] = ["float32"] + [d for d in dtypes if d != "float32"]
        findings.append(
            _finding(
                ctx,
                "bf16-own-criteria",
                "revise",
                f"{' and '.join(low)} {'is' if len(low) == 1 else 'are'} planned without FP32 first",
                f"Test FP32 first, then {' and '.join(low)} if intended: an FP32 pass separates model and backend problems from precision effects.",
                f"Add float32 cells before the {' and '.join(d for d in dtypes if d in LOW_PRECISION)} ones.",
            )
        )
    tolerances = ctx.revised.setdefault("tolerances", {})
    # BF16's criteria are proposed (the seed's checks); FP16 has no proposal that a value stands
    # behind: a float16 cell without criteria is left to the owner (check_criteria_declared).
    if "bfloat16" in dtypes and (finding := _low_precision_criteria(ctx, tolerances, "bfloat16")) is not None:
        findings.append(finding)
    plain = ctx.plan.training is None and ctx.plan.generation is None  # the seed's default serves only these
    if (
        plain
        and "float32" in ctx.revised["matrix"].get("dtypes", ["float32"])
        and "task" not in tolerances.get("float32", {})
    ):
        findings.append(
            Finding(
                "task-criterion",
                "note",
                "no FP32 task criterion",
                "Without a task criterion an FP32 cell passes on its elementwise tolerance alone: a task-relevant result "
                "(the workload's own metric) is not compared, and the report says so.",
                "Declare task = { metric, op, threshold } in [tolerances.float32] with the workload's owner (the module's task_metric computes it).",
                "Compare output shapes, finite values and task-relevant results before collecting latency",
                "seed",
                key="tolerances.float32",
            )
        )
    if plain and "float32" in ctx.revised["matrix"].get("dtypes", ["float32"]) and "float32" not in tolerances:
        tolerances["float32"] = {"atol": 1e-5, "rtol": 1e-4, "proposed": True}
        findings.append(
            _finding(
                ctx,
                "bf16-own-criteria",
                "note",
                "FP32 tolerance not declared",
                "The collector would use the seed's illustrative FP32 criterion, |diff| <= 1e-5 + 1e-4 * |ref|.",
                "Confirm or replace it with a model-specific criterion before running (a revised plan writes it, marked proposed = true).",
                key="tolerances.float32",
            )
        )
    return findings


def check_runnable(ctx: Context) -> list[Finding]:
    """Cells the collector would skip for want of criteria (collector.plan.missing_criteria),
    asked of the plan as revised so far: a run of this plan would hold no evidence for them."""
    tolerances = ctx.revised.setdefault("tolerances", {})
    findings = []
    for dtype in ctx.revised["matrix"].get("dtypes", ["float32"]):
        # Undeclared float32 criteria are the seed's default to the collector (check_dtypes notes it).
        declared = tolerances if dtype != "float32" or "float32" in tolerances else {"float32": DEFAULT_FP32_TOLERANCE}
        why = missing_criteria(declared, dtype, ctx.plan.training is not None, ctx.plan.generation is not None)
        if why is not None:
            marked = _propose_missing(ctx, tolerances, dtype)
            complete = (
                missing_criteria(tolerances, dtype, ctx.plan.training is not None, ctx.plan.generation is not None)
                is None
            )
            findings.append(
                Finding(
                    "criteria-missing",
                    "revise",
                    f"every {dtype} cell would be skipped",
                    f"The collector skips a cell whose criteria are not declared: {why}. A run of this plan holds no {dtype} result.",
                    f"Declare the missing criteria in [tolerances.{dtype}] with the workload's owner before running"
                    + (
                        "; the revised plan proposes values to review, marked proposed = true (the collector refuses it until they are agreed)."
                        if marked and complete
                        else f"; the revised plan marks [tolerances.{dtype}] proposed = true, so that the collector refuses it until they are written."
                        if marked
                        else "."
                    ),
                    "Criteria are declared before any result",
                    "collector",
                    key=f"tolerances.{dtype}",
                )
            )
    return findings


# What a revised plan proposes for a dtype whose criteria are missing, where a value can stand
# behind it: the seed's FP32 elementwise criterion for float32 and float64 (which computes at
# least as precisely). Float16 gets no values of its own; a table it has is marked proposed.
PROPOSED_ELEMENTWISE = {"float32": {"atol": 1e-5, "rtol": 1e-4}, "float64": {"atol": 1e-5, "rtol": 1e-4}}


def _propose_missing(ctx: Context, tolerances: dict[str, Any], dtype: str) -> bool:
    """Write into the revised plan what ``dtype``'s cells lack (the declared parts kept), marked
    proposed = true, so that the collector refuses the revised plan until the owner agrees
    them rather than skipping every such cell; False where nothing can be proposed."""
    table, base = tolerances.get(dtype), PROPOSED_ELEMENTWISE.get(dtype)
    if table is None and base is None:
        return False
    proposal: dict[str, Any] = {**(base or {}), **(table or {})}
    elementwise: dict[str, Any] = {key: proposal[key] for key in ("atol", "rtol") if key in proposal}
    _fill_criteria(
        ctx, tolerances, proposal, elementwise, low_precision=dtype in LOW_PRECISION, task=dtype != "float32"
    )
    tolerances[dtype] = {**proposal, "proposed": True}
    return True


def _fill_criteria(
    ctx: Context,
    tolerances: dict[str, Any],
    proposal: dict[str, Any],
    elementwise: dict[str, Any],
    low_precision: bool,
    task: bool,
) -> None:
    """Add to ``proposal`` (the parts declared kept) what a cell of the plan's kind is judged
    by: a training plan's loss and gradient tolerances (``elementwise``), a generation plan's
    every step agreeing, another plan's task criterion (where ``task``) when one can be proposed."""
    if ctx.plan.training is not None:
        for part in ("loss", "grad"):
            proposal.setdefault(part, dict(elementwise))
    elif ctx.plan.generation is not None:
        steps = int(ctx.plan.generation.get("decode_steps", 0)) + 1  # step 0 is the prefill's
        proposal.setdefault("task", {"metric": "greedy_steps_agreeing", "op": ">=", "threshold": steps})
    elif task and "task" not in proposal:
        found = _proposed_task(tolerances, ctx.plan.module_path, low_precision)
        if found is not None:
            proposal["task"] = found


def _proposed_task(tolerances: dict[str, Any], module: Path, low_precision: bool) -> dict[str, Any] | None:
    """A task criterion to propose for a dtype without one: another dtype's declared one
    (float32's first) as it stands, a cosine's threshold lowered to PROPOSED_BF16_TASK_THRESHOLD
    for a lower precision; else, where the module's metric is a cosine (a similarity: higher is
    better), a threshold on it. None where the metric's direction is not known (an error metric
    takes <=, a similarity >=): the owner writes it."""
    declared = [t["task"] for _, t in sorted(tolerances.items(), key=lambda i: i[0] != "float32") if "task" in t]
    if declared:
        task = dict(declared[0])
        if not low_precision:  # as precise at least: the declared criterion as it stands
            return task
        if task.get("op") == ">=" and SIMILARITY.fullmatch(str(task.get("metric"))):
            task["threshold"] = min(task["threshold"], PROPOSED_BF16_TASK_THRESHOLD)
            return task
        return None  # an error's bound for FP32 fails right lower-precision outputs; how far to widen it is the owner's
    metric = _task_metric_name(tolerances, module)
    if not SIMILARITY.fullmatch(metric):  # a similarity by its name's form only (max_cosine_distance is a distance)
        return None
    return {"metric": metric, "op": ">=", "threshold": PROPOSED_BF16_TASK_THRESHOLD if low_precision else 0.99999}


def check_criteria_power(ctx: Context) -> list[Finding]:
    """Declared criteria a wrong output passes (judge/criterion_power.py): a pass under them
    is no evidence, and the report blocks such a run."""
    findings = []
    planned = ctx.revised["matrix"].get("dtypes", ["float32"])
    # A generation plan's top-k overlap is a part of every dtype's criteria (the vocabulary it
    # is taken over is not in the plan: a top_k at or above it is known only to a run's report).
    generation = ctx.checked.get("generation")
    sound = []  # dtypes some part of whose criteria can fail a wrong output
    for dtype, table in ctx.checked.get("tolerances", {}).items():
        if dtype not in planned:
            continue
        vacuous = cannot_fail(dtype, table, generation)
        sound += [] if vacuous else [dtype]
        if vacuous:
            # Kept as declared, but marked: the collector refuses the revised plan until the owner
            # agrees criteria that can fail (a run under these would be blocked anyway).
            revised = ctx.revised.setdefault("tolerances", {})
            revised[dtype] = {**revised.get(dtype, table), "proposed": True}
            findings.append(
                Finding(
                    "criterion-cannot-fail",
                    "revise",
                    f"the {dtype} criteria cannot fail",
                    f"No part of them can fail, and a cell passes when every part passes: {'; '.join(vacuous)}. A pass under them is no evidence of correctness, and a report of the run is blocked.",
                    "Agree with the workload's owner a criterion that a wrong output fails, before running (the revised plan keeps these, marked proposed = true until then).",
                    "A pass is evidence only when the criterion could fail",
                    "plan",
                    key=f"tolerances.{dtype}",
                )
            )
        # A task criterion that fails every output, or right ones: each cell would be a mismatch.
        wrong_task = (
            (
                "criterion-cannot-pass",
                "cannot pass",
                cannot_pass(dtype, table),
                "whatever the backend computes",
                "Agree with the workload's owner a threshold an output can meet, before running.",
            ),
            (
                "criterion-backwards",
                "is backwards",
                backwards(dtype, table, generation),
                "right ones too",
                'Compare a similarity or an agreement with ">=" (and a distance or error with "<=").',
            ),
        )
        for cid, said, why, which, first in wrong_task:
            if why is not None:
                findings.append(
                    Finding(
                        cid,
                        "revise",
                        f"the {dtype} task criterion {said}",
                        f"{why}: {dtype} cells would read as mismatches, {which}.",
                        first,
                        "",
                        "plan",
                        key=f"tolerances.{dtype}.task",
                    )
                )
        if not vacuous and (idle := idle_task(dtype, table, generation)) is not None:
            others = listed(deciding(dtype, table, generation))
            # A lower precision needs a task criterion of its own (the seed): one that cannot fail
            # is none, and is revised as a missing one is (leaving it out read exit 3, this exit 0).
            own = dtype in LOW_PRECISION
            findings.append(
                Finding(
                    "criterion-idle",
                    "revise" if own else "note",
                    f"the {dtype} task criterion judges nothing",
                    f"{idle}: only the other parts of the criteria ({others}) decide these cells, and no task quality is established"
                    + (f"; {LOW_PRECISION[dtype]} needs a task criterion of its own." if own else "."),
                    "Agree with the workload's owner a task threshold an output can fail"
                    + ("." if own else ", or leave the criterion out."),
                    "",
                    "plan",
                    key=f"tolerances.{dtype}.task",
                )
            )
        if bit_exact(table) and dtype.startswith(("float", "bfloat")):
            findings.append(
                Finding(
                    "criterion-bit-exact",
                    "note",
                    f"the {dtype} tolerance is zero",
                    f"tolerances.{dtype}: atol = rtol = 0 passes only bit-identical results; another backend's floating-point results rarely are.",
                    "Keep it only if bit-identical results are the requirement.",
                    "",
                    "plan",
                    key=f"tolerances.{dtype}",
                )
            )
    idle_top_k = top_k_vacuous(generation)
    if idle_top_k is not None and sound:
        findings.append(
            Finding(
                "criterion-idle",
                "note",
                "the top-k overlap criterion judges nothing",
                f"{idle_top_k}: only the other parts of the {listed(sound)} criteria decide these cells.",
                "Agree with the workload's owner a smallest overlap an output can fail, above 0.",
                "",
                "plan",
                key="generation.min_top_k_overlap",
            )
        )
    return findings


def _low_precision_criteria(ctx: Context, tolerances: dict[str, Any], dtype: str) -> Finding | None:
    """A lower-precision dtype's own criteria, where the plan lacks some: its tolerance, and its
    task criterion (a training plan's: its loss and gradient tolerances, which stand for one;
    a generation plan's: every step's greedy token agreeing). What is missing is proposed in
    the revised plan, marked proposed = true; what the plan declared is kept."""
    training = ctx.plan.training is not None
    tol = tolerances.get(dtype, {})
    needs = ("atol", "rtol", *(("loss", "grad") if training else ("task",)))
    missing = [key for key in needs if key not in tol]
    if not missing:
        return None
    proposal: dict[str, Any] = {**PROPOSED_BF16, **tol}
    _fill_criteria(ctx, tolerances, proposal, PROPOSED_BF16, low_precision=True, task=True)
    tolerances[dtype] = {**proposal, "proposed": True}
    name = LOW_PRECISION[dtype]
    lacking = [
        *(["tolerance"] if "atol" in missing or "rtol" in missing else []),
        *(["task criterion"] if "task" in missing else []),
        *(
            [
                " and ".join(n for k, n in (("loss", "loss"), ("grad", "gradient")) if k in missing)
                + " tolerance"
                + ("s" if "loss" in missing and "grad" in missing else "")
            ]
            if "loss" in missing or "grad" in missing
            else []
        ),
    ]
    criteria = "tolerance and loss and gradient tolerances" if training else "tolerance and task criterion"
    return _finding(
        ctx,
        "bf16-own-criteria",
        "revise",
        f"no declared {name} {' and '.join(lacking)}",
        f"An FP32 elementwise tolerance does not carry over to {name}, and a loose elementwise pass alone does not establish "
        + ("that training still learns the same (its loss and gradients)." if training else "task quality."),
        f"Agree a {name} {criteria} with the owner before running; "
        + (
            "the revised plan proposes values to review, marked proposed = true."
            if not ("task" in missing and "task" not in proposal)
            else "the revised plan proposes the tolerance and marks the table proposed = true; the task criterion is the owner's to write (the declared one bounds an error, whose widening for "
            f"{name} no rule gives, or the metric's direction is not known from its name)."
        ),
        key=f"tolerances.{dtype}",
    )


def _task_metric_name(tolerances: dict[str, Any], module: Path) -> str:
    """The metric a proposed criterion names: the plan's own, else the TASK_METRIC the module
    states (read from its source, never run: the collector refuses a criterion naming another),
    else the collector's name for an unnamed one."""
    for tol in tolerances.values():
        if isinstance(tol, dict) and "task" in tol:
            return tol["task"]["metric"]
    return stated_task_metric(module) or "task_metric"


MAX_MODULE_BYTES = 2_000_000


def stated_task_metric(module: Path) -> str | None:
    """A module's top-level ``TASK_METRIC = "..."`` (or ``TASK_METRIC: str = "..."``; the last
    one, as the module holds it once run), read from its source without running it; None when
    its last one is no plain string, when it has none, or when the source cannot be read (a
    FIFO, a device or a file past MAX_MODULE_BYTES is not opened; a source too deep to parse)."""
    try:
        if not module.is_file() or module.stat().st_size > MAX_MODULE_BYTES:
            return None
        tree = ast.parse(_module_bytes(module))
    except (OSError, NotReadable, SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    stated = None
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        if any(isinstance(t, ast.Name) and t.id == "TASK_METRIC" for t in targets):
            stated = value.value if isinstance(value, ast.Constant) and isinstance(value.value, str) else None
    return stated


def check_layout(ctx: Context) -> list[Finding]:
    """A layout case is demanded only when the real preprocessing is non-contiguous or undeclared."""
    if ctx.docs.constraint("noncontiguous-copy") is None or not ctx.compiled:
        return []
    layouts = ctx.revised["matrix"].get("layouts", ["contiguous"])
    inputs = ctx.checked.get("inputs", {})
    noncontiguous = {name: spec["how"] for name, spec in inputs.items() if spec["layout"] == "noncontiguous"}
    if inputs and not noncontiguous:
        return []
    if "noncontiguous" in layouts:
        detail = (
            "The plan already runs the non-contiguous layout; the report will show its cost and correctness."
            if noncontiguous
            else "The plan runs the non-contiguous layout, but does not declare what its real preprocessing produces ([inputs.NAME] layout)."
        )
        return [
            _finding(
                ctx,
                "noncontiguous-copy",
                "note",
                "non-contiguous inputs are copied on each compiled call",
                detail,
                "Compare the contiguous and non-contiguous cells of each shape.",
            )
        ]
    ctx.revised["matrix"]["layouts"] = list(layouts) + ["noncontiguous"]
    if noncontiguous:
        made = listed(f"{name} ({how})" for name, how in noncontiguous.items())
        return [
            _finding(
                ctx,
                "noncontiguous-copy",
                "revise",
                "the real non-contiguous preprocessing layout is not tested",
                f"The real preprocessing produces non-contiguous {made}; compiled execution copies non-contiguous inputs on each call, and a contiguous sample does not show what the real preprocessing, masks and attention path do.",
                "Add the noncontiguous layout (the workload's make_inputs must build it the way the preprocessing does).",
            )
        ]
    return [
        _finding(
            ctx,
            "noncontiguous-copy",
            "revise",
            "the layout the real preprocessing produces is not declared",
            "Compiled execution copies non-contiguous inputs on each call; without knowing what the real preprocessing produces, a contiguous sample may not show what the real masks and attention path do.",
            "Declare it: one [inputs.NAME] table per model input with its dtype and layout. If every input is contiguous, no layout case is needed; until then the revised plan tests the noncontiguous layout too (make_inputs must build it).",
        )
    ]


def check_integer_ranges(ctx: Context) -> list[Finding]:
    """int64 inputs whose declared values do not fit int32, on a target that computes int64 as int32."""
    if ctx.docs.constraint("int64-as-int32") is None:
        return []
    findings = []
    for name, spec in ctx.checked.get("inputs", {}).items():
        if spec["dtype"] != "int64":
            continue
        span = spec["value_range"]
        if span is None:
            findings.append(
                _finding(
                    ctx,
                    "int64-as-int32",
                    "note",
                    f"int64 input {name} has no declared value range",
                    "The target computes int64 as int32; without the range the plan cannot say whether every value fits.",
                    f"Declare inputs.{name}.value_range (e.g. [0, vocabulary size - 1]).",
                    key=f"inputs.{name}",
                )
            )
        elif span[0] < INT32_MIN or span[1] > INT32_MAX:
            findings.append(
                _finding(
                    ctx,
                    "int64-as-int32",
                    "block",
                    f"int64 input {name} holds values outside the int32 range",
                    f"The declared range {span} exceeds int32 ({INT32_MIN} to {INT32_MAX}), and the target computes int64 as int32: such values are not kept.",
                    f"Remap {name} into the int32 range in the preprocessing (and declare the new range), or keep the workload on a target with native int64.",
                    key=f"inputs.{name}.value_range",
                )
            )
    return findings


def _allowed(ctx: Context, key: str, value: Any) -> bool:
    """Whether the target's plan rules (constraint data) allow ``value`` at ``key``."""
    return all(value in rule["allowed"] for c in ctx.docs.constraints for rule in c.plan_rule if rule["key"] == key)


def check_compile_options(ctx: Context) -> list[Finding]:
    """[compile] against the target's plan rules (constraint data); fullgraph advice where documented."""
    if not ctx.compiled:
        return []
    findings = []
    options = ctx.checked["compile"]
    for constraint in ctx.docs.constraints:
        for rule in constraint.plan_rule:
            table, key = rule["key"].split(".", 1)
            value = ctx.checked[table][key]
            if value in rule["allowed"]:
                continue
            allowed = rule["allowed"][0]
            ctx.revised.setdefault(table, {})[key] = allowed
            findings.append(
                _finding(
                    ctx,
                    constraint.id,
                    "revise",
                    f"{rule['key']} = {_toml_value(value)} is not supported on {ctx.docs.target}",
                    f"{constraint.text} The collector refuses this plan on {ctx.docs.target}.",
                    f"Plan {rule['key']} = {_toml_value(allowed)}.",
                    key=rule["key"],
                )
            )
    if not options["fullgraph"] and ctx.docs.constraint("fullgraph") is not None:
        findings.append(
            _finding(
                ctx,
                "fullgraph",
                "note",
                "compile.fullgraph is false",
                "A graph break would split the compiled path silently instead of failing the cell.",
                "Consider compile.fullgraph = true, so a break is an error the report shows.",
            )
        )
    return findings


def _toml_value(value: Any) -> str:
    return json.dumps(value)


def check_undecided(ctx: Context) -> list[Finding]:
    """Values plan-check proposed earlier and no one has replaced yet keep the plan in 'revise'."""
    pending = planschema.undecided(ctx.checked)
    if not pending:
        return []
    return [
        Finding(
            "proposals-pending",
            "revise",
            f"{len(pending)} proposed value(s) not yet agreed",
            f"Proposed values are not approvals: {listed(pending)} still hold a proposal (proposed = true or an UNDECIDED text).",
            "Review each proposal with the workload's owner, write the agreed value and remove 'proposed = true' and any UNDECIDED text; the collector refuses the plan until then.",
            "Revisions are not approvals",
            "plan-check",
        )
    ]


def check_modes(ctx: Context) -> list[Finding]:
    modes = ctx.revised["matrix"].get("modes", ["eager", "compiled"])
    findings = []
    if "eager" not in modes and ctx.docs.constraint("cpu-fallback") is not None:
        ctx.revised["matrix"]["modes"] = ["eager"] + list(modes)
        findings.append(
            _finding(
                ctx,
                "cpu-fallback",
                "revise",
                "no eager cells",
                "Unsupported eager ops fall back to the CPU; eager cells record them, and keep a compile failure apart from an eager result.",
                "Add eager mode next to compiled.",
            )
        )
    if "compiled" not in modes:
        findings.append(
            Finding(
                "no-compiled",
                "note",
                "no compiled cells",
                f"The plan runs eager cells only: a run of it says nothing of torch.compile on {ctx.docs.target}, and its disposition covers the eager path alone.",
                'Add "compiled" to [matrix] modes if the workload will be compiled on this backend.',
                "",
                "plan",
            )
        )
    return findings


# The unit roundoff of each reduced precision: the relative error of rounding one value to it.
UNIT_ROUNDOFF = {"bfloat16": 2.0**-8, "float16": 2.0**-11}


def check_tolerance_resolution(ctx: Context) -> list[Finding]:
    """A reduced-precision tolerance tighter than the dtype can hold: rounding one output to it
    moves it by up to its unit roundoff times its size, so with rtol below that only atol absorbs
    it, and every output larger than atol / u can fail on rounding alone."""
    findings = []
    tolerances = ctx.revised.get("tolerances", {})
    for dtype in ctx.revised["matrix"].get("dtypes", ["float32"]):
        u, tol = UNIT_ROUNDOFF.get(dtype), tolerances.get(dtype, {})
        if u is None or "rtol" not in tol or "atol" not in tol or tol["rtol"] >= u:
            continue
        findings.append(
            Finding(
                "tolerance-below-resolution",
                "note",
                f"{dtype} rtol {tol['rtol']:g} is below the dtype's rounding ({u:g})",
                f"Rounding a value to {dtype} alone moves it by up to {u:g} of its size; with rtol {tol['rtol']:g}, only atol "
                f"{tol['atol']:g} absorbs that, so an output larger than about {tol['atol'] / u:.3g} can mismatch on rounding alone.",
                f"Agree a {dtype} rtol of at least {u:g} with the owner (with a task criterion for what the workload needs), "
                "or keep the tight criterion knowingly.",
                "An FP32 elementwise tolerance does not transfer to BF16",
                "seed",
                key=f"tolerances.{dtype}",
            )
        )
    return findings


def check_localize_table(ctx: Context) -> list[Finding]:
    """A [localize] table in a plan whose cells the collector never localises (training steps,
    generations): its settings do nothing, and the plan should not read as if they did."""
    kind = "training" if ctx.plan.training is not None else "generation" if ctx.plan.generation is not None else None
    if kind is None or "localize" not in ctx.raw:
        return []
    return [
        Finding(
            "localize-ignored",
            "note",
            f"[localize] does nothing in a {kind} plan",
            f"The collector localises no {kind} cell, so none of the table's settings (always among them) is used.",
            "Remove [localize], or localise an inference plan of the same model.",
            key="localize",
        )
    ]


def check_warm_samples(ctx: Context) -> list[Finding]:
    """A warm series too short for the checks a timing verdict rests on: stability needs
    MIN_SAMPLES, the two-speeds cut TWO_MODES_MIN_SAMPLES, and a comparison's guard against
    samples that follow each other BATCHES * MIN_BATCH (below it the samples count as independent)."""
    reps = ctx.plan.warm_repetitions
    if reps >= TWO_MODES_MIN_SAMPLES:
        return []
    from reportgen.judge.intervals import BATCHES, MIN_BATCH  # numpy: only for the words here

    held = (
        " (in a generation cell, its time-to-first-token series; its decode series holds that many times the decode steps)"
        if ctx.plan.generation
        else ""
    )

    return [
        Finding(
            "few-warm-samples",
            "note",
            f"{reps} warm sample(s) a cell",
            f"Each warm series holds {reps} sample(s){held}. A series needs {MIN_SAMPLES} for its stability to be judged at all, "
            f"{TWO_MODES_MIN_SAMPLES} to be checked for two speeds with samples between them, and a comparison cuts each "
            f"loop into {BATCHES} batches of at least {MIN_BATCH} to guard against samples that follow each other (a loop "
            f"that slowed midway); with fewer than {BATCHES * MIN_BATCH} it takes the samples as independent, and calls a "
            "change where there is none more often than its 95% says.",
            f"Set [timing] warm_repetitions to at least {TWO_MODES_MIN_SAMPLES} (30 where timing decides the migration).",
            "A timing that was not stable decides nothing",
            "collector",
            key="timing.warm_repetitions",
        )
    ]


def check_recompile_limit(ctx: Context) -> list[Finding]:
    shapes = {tuple(s) for s in ctx.revised["matrix"].get("shapes", [])}
    if not ctx.compiled or len(shapes) <= RECOMPILE_LIMIT:
        return []
    return [
        Finding(
            "recompile-limit",
            "note",
            f"{len(shapes)} shapes per compiled group exceed Dynamo's recompile limit ({RECOMPILE_LIMIT})",
            "After the limit, the frame silently runs eager: later 'compiled' results would really be eager.",
            "Split the shapes across runs or reduce the buckets; the collector flags cells that hit the limit.",
            "torch._dynamo recompile_limit",
            "torch",
        )
    ]


def check_size(ctx: Context) -> list[Finding]:
    problem = ctx.plan.size_problem()
    if problem is None:
        return []
    ctx.revised["matrix"]["max_cells"] = MAX_PLANNED_CELLS  # the collector refuses the plan without a cap
    return [
        Finding(
            "too-many-cells",
            "revise",
            f"{ctx.plan.planned_cells:,} cells: more than one run log holds ({MAX_PLANNED_CELLS:,})",
            problem.split(": ", 1)[1],
            f"Set [matrix] max_cells (at most {MAX_PLANNED_CELLS:,}) or split the plan.",
            "event contract line limit",
            "collector/README.md",
        )
    ]


# The plan key each check's findings are about, unless the finding names its own.
CHECK_KEYS: dict[str, str] = {
    "check_size": "matrix",
    "check_buckets": "padding",
    "check_expected_compilations": "workload.expected_compilations",
    "check_precision": "workload.requirements",
    "check_dtypes": "matrix.dtypes",
    "check_layout": "matrix.layouts",
    "check_integer_ranges": "inputs",
    "check_modes": "matrix.modes",
    "check_compile_options": "compile",
    "check_cache_check": "matrix.cache_checks",
    "check_recompile_limit": "matrix.shapes",
}

CHECKS: list[Callable[[Context], list[Finding]]] = [
    check_size,
    check_undecided,
    check_buckets,
    check_masks_padded,
    check_expected_compilations,
    check_precision,
    check_dtypes,
    check_reference_dtype,
    check_runnable,
    check_criteria_power,
    check_layout,
    check_integer_ranges,
    check_modes,
    check_compile_options,
    check_cache_check,
    check_recompile_limit,
    check_warm_samples,
    check_localize_table,
    check_tolerance_resolution,
]


def review_plan(path: Path, target: str | None = None, inspection: InspectionLog | None = None) -> PlanReview:
    """Review one plan against ``target`` (default: the plan's [workload] target, else neuron);
    raises PlanError for a plan that cannot be read. With ``inspection`` (the log of
    ``python -m collector inspect``), its graphs are joined with the target's constraint data:
    those findings are predictions from the graph, labelled so."""
    raw, text = read_plan_file(path)  # read once: parsing a plan of a megabyte takes seconds
    plan = plan_from_data(raw, text, path, require_module=False, allow_undecided=True)
    if inspection is not None and inspection.start.workload != plan.name:
        raise InspectionError(
            f"{inspection.path}: inspects the workload {inspection.start.workload!r}, not this plan's {plan.name!r}"
        )
    needed = required_functions(bool(plan.generation), bool(plan.training))
    lines = planschema.key_lines(text)
    module = _module_finding(plan.module_path, lines.get("workload.module"), needed, plan.tolerances, lines)
    return _review(str(path), raw, plan, target, inspection, text, [module] if module else [])


def _module_finding(
    module: Path,
    line: int | None,
    needed: tuple[str, ...] = (),
    tolerances: dict[str, dict[str, Any]] | None = None,
    lines: dict[str, int] | None = None,
) -> Finding | None:
    """The workload module as the collector finds it before anything runs: a file there, whose
    source compiles and defines the functions the plan's kind needs (``needed``; read, never
    run), with a WEIGHTS_ORIGIN of WEIGHTS_ORIGINS and a TASK_METRIC that is the string the
    plan's task criteria name, where its source states them plainly (read_module). Else the
    collector refuses the plan (exit 2), in this order, and a review here says so: reviewed where
    the module is, as a plan is on the host that runs it."""
    what = module_missing(module)
    if what is not None:
        title = f"the workload module {module} {what} here"
        detail = f"The collector loads workload.module (a path relative to the plan) and refuses the plan without it (exit 2): {module} {what}."
        first = "Fix workload.module, or put the module where it says, and review the plan again where its module is."
    elif (why := module_source_problem(module)) is not None:
        here = f"Python {sys.version_info.major}.{sys.version_info.minor}"
        title = f"the workload module {module} does not compile under {here}"
        detail = (
            f"The collector compiles the module before anything runs and refuses the plan (exit 2): {module} {why} "
            f"(compiled here by {here}; a collector on another Python may read syntax this one does not)."
        )
        first = "Point workload.module at the workload's Python file, or fix the file, or review the plan with the Python that will run it."
    elif (reading := read_module(module, needed)).unread:
        title = f"the workload module {module}'s functions were not checked here"
        detail = (
            f"plan-check reads a workload module's source, never running it, for the functions the plan's kind "
            f"needs ({', '.join(needed)}), but cannot tell here: {reading.unread}. The collector imports the module "
            "and refuses the plan without them (exit 2), so this review does not show the collector will accept it."
        )
        first = (
            "Check it where torch is installed, any host: `python -m collector --workload PLAN --target cpu --max-cells 1 "
            "--out /tmp/check` imports the module before any cell runs and names each function it lacks (exit 2)."
        )
        return Finding("module-unread", "note", title, detail, first, "", "plan", key="workload.module", line=line)
    elif (
        "WEIGHTS_ORIGIN" in reading.stated
        and (origin := reading.stated["WEIGHTS_ORIGIN"]) is not None
        and origin not in WEIGHTS_ORIGINS
    ):
        title = f"the workload module {module}'s WEIGHTS_ORIGIN {origin!r:.80} is none of {', '.join(WEIGHTS_ORIGINS)}"
        detail = (
            "The collector imports the module and refuses the plan before anything runs (exit 2): WEIGHTS_ORIGIN says "
            "where the weights come from, recorded in the plan event, and is one of "
            f"{', '.join(WEIGHTS_ORIGINS)}. Read from {module}'s source, never run."
        )
        first = (
            f'Set WEIGHTS_ORIGIN to one of {", ".join(WEIGHTS_ORIGINS)} (collector/README.md, "Writing a workload"), '
            "or leave it out: a module without it is logged as not stating where its weights come from."
        )
        return Finding(
            "weights-origin-other", "revise", title, detail, first, "", "plan", key="workload.module", line=line
        )
    elif missing := reading.lacking:
        title = f"the workload module {module} does not define {', '.join(missing)}"
        detail = (
            f"The collector imports the module and refuses the plan without these functions (exit 2): "
            f"{'; '.join(WORKLOAD_FUNCTIONS[name] for name in missing)}. Read from the module's source, "
            "never run: no top-level statement binds these names."
        )
        first = 'Define these functions in the workload module (collector/README.md, "Writing a workload"), or point workload.module at the workload\'s file.'
    elif "TASK_METRIC" in reading.stated and not isinstance(stated := reading.stated["TASK_METRIC"], str):
        title = f"the workload module {module}'s TASK_METRIC is {type(stated).__name__} {stated!r:.60}, not a string"
        detail = (
            "The collector refuses the plan before any cell runs (exit 2): TASK_METRIC must be the metric's name, a "
            f"string (the log's task_metric.name). Read from {module}'s source, never run."
        )
        first = "Set TASK_METRIC to the name of the metric task_metric() computes, the one the plan's task criteria name, or leave it out."
        return Finding(
            "task-metric-not-a-string", "revise", title, detail, first, "", "plan", key="workload.module", line=line
        )
    elif (named := _other_task_metric(reading.stated.get("TASK_METRIC"), tolerances or {})) is not None:
        dtype, metric = named
        title = f"the plan's task criterion for {dtype} names {metric!r}, but the workload module's TASK_METRIC is {reading.stated['TASK_METRIC']!r}"
        detail = (
            "The collector refuses the plan before any cell runs (exit 2): task_metric() would be judged by another "
            f"metric's criterion, which passes or fails the wrong way. Read from {module}'s source, never run."
        )
        first = "Make the two the same: name the metric task_metric() computes in the plan's task criterion, or fix TASK_METRIC."
        key = f"tolerances.{dtype}.task.metric"
        return Finding(
            "task-metric-other", "revise", title, detail, first, "", "plan", key=key, line=(lines or {}).get(key, line)
        )
    else:
        return None
    return Finding("module-missing", "revise", title, detail, first, "", "plan", key="workload.module", line=line)


def _other_task_metric(stated: object, tolerances: dict[str, dict[str, Any]]) -> tuple[str, str] | None:
    """The first dtype (sorted, as the collector checks them) whose task criterion names another
    metric than the module's TASK_METRIC (``collector.workload.check_task_metric``), with it;
    None where TASK_METRIC is no string read from the source."""
    if not isinstance(stated, str):
        return None
    for dtype, tol in sorted(tolerances.items()):
        named = (tol.get("task") or {}).get("metric") if isinstance(tol, dict) else None
        if named is not None and named != stated:
            return dtype, str(named)
    return None


# Names through which a module may bind names no statement shows (exec, writes through
# globals()): a module that uses any of them anywhere, a function or class body included, is not
# judged by its statements. The same of the modules that hold them (``builtins.exec``,
# ``sys.modules[__name__]``, ``importlib.import_module(__name__)``), by whatever name the module
# binds them to (``import importlib.util``, ``import sys as s``, ``_s = sys``, ``getattr(sys,
# ...)``), and of a function's or a frame's globals (``f.__globals__``, ``frame.f_globals``); an
# attribute of another object (``model.eval()``, ``self.modules()``) is not one. ``setattr`` and
# ``vars`` of what is plainly not the module (``self``, ``cls``, ``self.x``, a class the module
# defines), and ``import_module`` of another module named by a string, are ordinary calls.
_DYNAMIC_NAMES = frozenset({"globals", "locals", "vars", "exec", "eval", "setattr", "__import__"})
_DYNAMIC_OF_MODULE = {
    "builtins": _DYNAMIC_NAMES | {"__dict__"},
    "sys": frozenset({"modules", "__dict__"}),
    "importlib": frozenset({"import_module", "__import__", "__dict__"}),
}
_DYNAMIC_ATTRIBUTES = frozenset({"__globals__", "f_globals", "f_locals"})
_NOT_THE_MODULE = frozenset({"self", "cls"})
# The name the collector imports a workload module by (collector/workload.py load_workload).
_COLLECTOR_MODULE_PREFIX = "collector_workload_"
# The module's values the collector checks before any cell runs: read where the source states
# each plainly (read_module).
_STATED_NAMES = ("TASK_METRIC", "WEIGHTS_ORIGIN")


@dataclass(frozen=True)
class ModuleReading:
    """What a workload module's source tells, read and never run (``read_module``)."""

    lacking: list[str]  # names the plan's kind needs that no top-level statement binds
    unread: str = ""  # why the source cannot tell, in words ('' when it was read; nothing lacks then)
    # TASK_METRIC and WEIGHTS_ORIGIN, each with the literal it is bound to, where the module's
    # one binding of it is a plain assignment of a literal directly in its body
    stated: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class _Aliases:
    """The names through which a module reaches _DYNAMIC_OF_MODULE (``_dynamic_aliases``)."""

    # a name bound to builtins, sys or importlib -> that module's attributes that may bind names
    modules: dict[str, frozenset[str]]
    importers: frozenset[str]  # names bound to importlib.import_module
    classes: frozenset[str]  # the classes the module's top level defines: plainly not the module


def _name_pairs(target: ast.AST, value: ast.AST) -> list[tuple[str, ast.AST]]:
    """Each name ``target = value`` binds with the expression it is bound to, where it shows."""
    if isinstance(target, ast.Name):
        return [(target.id, value)]
    if (
        isinstance(target, (ast.Tuple, ast.List))
        and isinstance(value, (ast.Tuple, ast.List))
        and len(target.elts) == len(value.elts)
        and not any(isinstance(e, ast.Starred) for e in [*target.elts, *value.elts])
    ):
        return [pair for t, v in zip(target.elts, value.elts) for pair in _name_pairs(t, v)]
    return []


def _dynamic_aliases(tree: ast.Module) -> _Aliases:
    """Each name the module binds to a module of _DYNAMIC_OF_MODULE, anywhere (``import sys as
    s``, ``import importlib.util``, which binds importlib, ``_s = sys``), with that module's
    attributes that may bind names (``__builtins__`` is builtins'); the names it binds to
    importlib.import_module (``from importlib import import_module as load``, ``_i = load``)."""
    modules = {"__builtins__": _DYNAMIC_OF_MODULE["builtins"]}
    importers: set[str] = set()
    pairs: list[tuple[str, ast.AST]] = []  # name = expression, anywhere
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname is None and (root := alias.name.split(".")[0]) in _DYNAMIC_OF_MODULE:
                    modules[root] = _DYNAMIC_OF_MODULE[root]
                elif alias.asname is not None and alias.name in _DYNAMIC_OF_MODULE:
                    modules[alias.asname] = _DYNAMIC_OF_MODULE[alias.name]
        elif isinstance(node, ast.ImportFrom) and node.module == "importlib" and not node.level:
            importers.update(alias.asname or alias.name for alias in node.names if alias.name == "import_module")
        elif isinstance(node, ast.Assign):
            pairs.extend(pair for target in node.targets for pair in _name_pairs(target, node.value))
        elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
            pairs.extend(_name_pairs(node.target, node.value))
    changed = True
    while changed:  # ``a = sys; b = a``: until no name is added
        changed = False
        for name, value in pairs:
            if not isinstance(value, ast.Name):
                continue
            if value.id in modules and not modules[value.id] <= modules.get(name, frozenset()):
                modules[name] = modules.get(name, frozenset()) | modules[value.id]
                changed = True
            if value.id in importers and name not in importers:
                importers.add(name)
                changed = True
    classes = frozenset(node.name for node in tree.body if isinstance(node, ast.ClassDef))
    return _Aliases(modules, frozenset(importers), classes)


def _ordinary_call(node: ast.Call, aliases: _Aliases) -> bool:
    """A call of setattr or vars on what is plainly not the module (``setattr(self, ...)``,
    ``vars(TinyEncoder)``), or of import_module naming another module by a string
    (``importlib.import_module("math")``): it binds no module name."""
    if not node.args or isinstance(first := node.args[0], ast.Starred):
        return False
    func = node.func
    if isinstance(func, ast.Name) and func.id in ("setattr", "vars"):
        return isinstance(first, ast.Attribute) or (
            isinstance(first, ast.Name) and (first.id in _NOT_THE_MODULE or first.id in aliases.classes)
        )
    importer = (isinstance(func, ast.Name) and func.id in aliases.importers) or (
        isinstance(func, ast.Attribute)
        and func.attr == "import_module"
        and isinstance(func.value, ast.Name)
        and "import_module" in aliases.modules.get(func.value.id, ())
    )
    # A relative name may be the module itself (the collector imports it as a package's root).
    return (
        importer
        and isinstance(first, ast.Constant)
        and isinstance(first.value, str)
        and not first.value.startswith((".", _COLLECTOR_MODULE_PREFIX))
    )


def _dynamic_use(node: ast.AST, aliases: _Aliases) -> str:
    """In words, how ``node`` may bind module names no statement shows; '' when it cannot."""
    line = getattr(node, "lineno", "?")
    how = "through which it may bind names no statement shows"
    if isinstance(node, ast.Name) and node.id in _DYNAMIC_NAMES:
        return f"it uses {node.id} (line {line}), {how}"
    if isinstance(node, ast.Name) and node.id in aliases.importers:
        return f"it uses {node.id} (importlib.import_module, line {line}), {how}"
    if isinstance(node, ast.Attribute):
        if isinstance(node.value, ast.Name) and node.attr in aliases.modules.get(node.value.id, ()):
            return f"it uses {node.value.id}.{node.attr} (line {line}), {how}"
        if node.attr in _DYNAMIC_ATTRIBUTES:
            return f"it uses .{node.attr} (line {line}), {how}"
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "getattr"
        and node.args
        and isinstance(node.args[0], ast.Name)
        and node.args[0].id in aliases.modules
    ):
        return f"it uses getattr({node.args[0].id}, ...) (line {line}), {how}"
    if isinstance(node, ast.ImportFrom):
        if any(a.name == "*" for a in node.names):
            return f"it imports * (line {line}), which may bind any name"
        names = _DYNAMIC_OF_MODULE.get(node.module or "", frozenset())
        if node.module == "importlib":
            names = names - {"import_module"}  # judged where it is called (_ordinary_call)
        if any(a.name in names for a in node.names):
            return f"it imports from {node.module} (line {line}) what may bind names no statement shows"
    return ""


def _main_guard(node: ast.If) -> bool:
    """``if __name__ == "__main__":``, whose body never runs in the collector: it imports the
    module by another name (collector_workload_...)."""
    if not isinstance(test := node.test, ast.Compare):
        return False
    if len(test.ops) != 1 or not isinstance(test.ops[0], ast.Eq):
        return False
    sides = [test.left, test.comparators[0]]
    return any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides) and any(
        isinstance(s, ast.Constant) and s.value == "__main__" for s in sides
    )


def _binds_anywhere(tree: ast.Module, name: str) -> bool:
    """Whether any statement of the module, a function's included, binds or deletes ``name``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load):
            return True
        if isinstance(node, ast.arg) and node.arg == name:
            return True
        if isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
            return True
        if isinstance(node, ast.alias) and (node.asname or node.name.split(".")[0]) == name:
            return True
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return True
        if isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name == name:
            return True
        if isinstance(node, ast.MatchMapping) and node.rest == name:
            return True
    return False


def read_module(module: Path, needed: tuple[str, ...]) -> ModuleReading:
    """The names of ``needed`` that no statement of the module's top level binds to something
    that may be callable, read from its syntax tree (never run): a def or class, an import, an
    assignment of anything but a literal (a number, a string, None...), a walrus, a loop or with
    target, a match capture, a name a function declares global; inside a top-level if, try,
    with, loop or match too. A name bound only to literals lacks its function; a del, which may
    not run, is not read. The body of ``if __name__ == "__main__":`` is not read at all (the
    collector imports the module by another name, so it never runs), unless the module binds
    ``__name__``. Errs towards 'defined': a plan review never refuses a module the collector
    would load. ``unread`` says why the source cannot tell, with no name lacking: unreadable,
    past MAX_MODULE_BYTES, not parsed, a star import, a module ``__getattr__``, or a use of
    _DYNAMIC_NAMES, _DYNAMIC_OF_MODULE or _DYNAMIC_ATTRIBUTES (_dynamic_use). ``stated``: each
    of _STATED_NAMES with its literal, where the module binds it exactly once, by a plain
    assignment of a literal (``TASK_METRIC = "cosine"``) directly in its body; any other binding
    of it (nested in an if, try, loop..., a del, an import, a global, a walrus) leaves it out."""
    try:
        if module.stat().st_size > MAX_MODULE_BYTES:
            return ModuleReading([], f"it is larger than {MAX_MODULE_BYTES:,} bytes, so its source is not read here")
        tree = ast.parse(_module_bytes(module))
    except (OSError, NotReadable, SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return ModuleReading([], f"its source could not be read here ({type(exc).__name__})")
    aliases = _dynamic_aliases(tree)
    guarded = not _binds_anywhere(tree, "__name__")  # else __name__ == "__main__" may hold
    direct = {id(statement) for statement in tree.body}
    bound: dict[str, bool] = {}  # name -> a binding that may be callable
    stated: dict[str, list[ast.Constant | None]] = {}  # each binding of _STATED_NAMES: its plain literal, else None

    def bind(name: str, maybe_callable: bool = True, plain: ast.AST | None = None) -> None:
        bound[name] = bound.get(name, False) or maybe_callable
        if name in _STATED_NAMES:
            stated.setdefault(name, []).append(plain if isinstance(plain, ast.Constant) else None)

    def names(target: ast.AST, value: ast.AST | None, plain: bool = False) -> None:
        literal = isinstance(value, (ast.Constant, ast.JoinedStr, ast.List, ast.Dict, ast.Set, ast.Tuple))
        if isinstance(target, ast.Name):
            bind(target.id, not literal, value if plain else None)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                names(element.value if isinstance(element, ast.Starred) else element, None)

    bodies = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
    stack: list[tuple[ast.AST, bool]] = [(statement, True) for statement in tree.body]
    dynamic = ""  # the first way found that may bind names no statement shows
    while stack:
        node, top = stack.pop()
        if not dynamic and (why := _dynamic_use(node, aliases)):
            dynamic = why
        if isinstance(node, ast.Global):  # a function may bind it at the top level when called
            for name in node.names:
                bind(name)
        if top:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bind(node.name)
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    names(target, node.value, plain=id(node) in direct)
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                names(node.target, node.value, plain=id(node) in direct)
            elif isinstance(node, ast.AugAssign):
                names(node.target, node.value)
            elif isinstance(node, ast.NamedExpr):
                names(node.target, node.value)
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                names(node.target, None)
            elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                names(node.optional_vars, None)
            elif isinstance(node, ast.ExceptHandler) and node.name:
                bind(node.name)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    bind(alias.asname or alias.name.split(".")[0])
            elif isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    bind(alias.asname or alias.name)
            elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
                bind(node.name)
            elif isinstance(node, ast.MatchMapping) and node.rest:
                bind(node.rest)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Del) and node.id in _STATED_NAMES:
                stated.setdefault(node.id, []).append(None)  # a del, which may run: not read
        # Below a def, class or lambda, names are that body's own: only what may bind module
        # names there is looked for (the checks above the ``top`` ones).
        inner = top and not isinstance(node, bodies)
        children: list[ast.AST]
        if guarded and isinstance(node, ast.If) and _main_guard(node):
            children = [node.test, *node.orelse]  # its body never runs in the collector
        elif isinstance(node, ast.Call) and _ordinary_call(node, aliases):
            children = [*node.args, *node.keywords]  # its function is not looked for
        else:
            children = list(ast.iter_child_nodes(node))
        stack.extend((child, inner) for child in children)
    lacking = [name for name in needed if not bound.get(name, False)]
    if "__getattr__" in bound and not dynamic:
        dynamic = "it defines a module __getattr__, which may answer any name"
    if dynamic:
        # What a statement binds is there whatever else binds names: only a name no statement
        # binds is left unjudged (a module __getattr__ answers only names it lacks). A stated
        # value may be bound again out of sight: none is read.
        return ModuleReading([], dynamic if lacking else "", {})
    read: dict[str, object] = {
        name: values[0].value
        for name, values in stated.items()
        if len(values) == 1 and isinstance(values[0], ast.Constant)
    }
    return ModuleReading(lacking, "", read)


def _module_bytes(module: Path) -> bytes:
    """A workload module's source: a regular file of at most MAX_MODULE_BYTES, read without
    waiting (a FIFO or a kernel file that only looks regular is NotReadable, never a hang)."""
    return read_bounded(module, MAX_MODULE_BYTES, option=None)


def module_source_problem(module: Path) -> str | None:
    """Why a workload module file does not compile, in words (compiled, never run, as the
    collector checks it before a run); None when it compiles, or when it is past
    MAX_MODULE_BYTES or too deep to parse (not looked at: the collector still checks it)."""
    try:
        if module.stat().st_size > MAX_MODULE_BYTES:
            return None
        source = _module_bytes(module)
    except NotReadable as exc:
        return f"cannot be read ({exc})"
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    try:
        compile(source, str(module), "exec", dont_inherit=True)
    except SyntaxError as exc:
        return f"line {exc.lineno}: SyntaxError: {' '.join(str(exc.msg).split())[:200]}"
    except ValueError as exc:
        return f"{' '.join(str(exc).split())[:200]}"
    except (RecursionError, MemoryError):
        return None
    return None


def _review(
    label: str,
    raw: dict[str, Any],
    plan: WorkloadPlan,
    target: str | None,
    inspection: InspectionLog | None,
    text: str | None = None,
    found: list[Finding] | None = None,
) -> PlanReview:
    target = target or plan.intended_target or default_target()
    docs = load_backend_docs(target)
    ctx = Context(raw, plan, docs, copy.deepcopy(raw))
    findings = list(found or [])
    for check in CHECKS:
        for finding in check(ctx):
            finding.key = finding.key or CHECK_KEYS.get(check.__name__, "")
            findings.append(finding)
    if text is not None:
        lines = planschema.Checker(label, planschema.key_lines(text))
        for finding in findings:
            finding.line = lines.line_of(finding.key) if finding.key else None
    if inspection is not None:
        findings += inspection_findings(ctx, inspection)
    if plan.intended_target and plan.intended_target != target:
        findings.append(
            Finding(
                "intended-target",
                "note",
                f"the plan is meant for {plan.intended_target}, reviewed here against {target}",
                f"[workload] target = {plan.intended_target!r}: a run on {target} is not evidence for {plan.intended_target}.",
                f"Review against {plan.intended_target} too (--target {plan.intended_target}).",
                "",
                "plan",
            )
        )
    findings.sort(key=lambda f: ("block", "revise", "note").index(f.severity))
    severities = {f.severity for f in findings}
    classification = "blocked" if "block" in severities else "revise" if "revise" in severities else "compatible"
    review = PlanReview(
        label,
        target,
        docs.release,
        classification,
        CLASSES[classification],
        findings,
        ctx.revised if classification == "revise" else None,
    )
    if inspection is not None:
        review.inspection = f"{inspection.path}: {inspection.start.workload}, captured with torch {inspection.start.torch} on {inspection.start.host}"
        review.inspected = [shape_summary(s) for s in inspection.shapes]
    return review


def review_logged_plan(event: Any, target: str | None = None) -> PlanReview:
    """Review the plan a run logged (its plan event) as plan-check reviews a plan file: the plan
    is written back as plan TOML from the event's fields (the matrix from its cells, the reference
    dtype from its description) and checked against ``target`` (default: the intended target,
    else neuron). Raises PlanError when the logged plan does not make a valid plan."""
    raw = logged_plan_toml(event)
    text = tomli_w.dumps(raw)
    label = f"the plan logged by {event.workload}"
    plan = plan_from_data(
        raw, text, Path(f"logged-plan-{event.workload}.toml"), require_module=False, allow_undecided=True
    )
    return _review(label, raw, plan, target, None)


def _distinct(values: Any) -> list[Any]:
    return list(dict.fromkeys(values))


def logged_plan_toml(event: Any) -> dict[str, Any]:
    """A plan file's tables rebuilt from a plan event (reportgen.contract.events.Plan)."""
    cells = [c for c in event.matrix if c.repeat_of is None]
    repeats = [c for c in event.matrix if c.repeat_of is not None]
    workload: dict[str, Any] = {
        "name": event.workload,
        "module": "logged_plan.py",
        "description": event.description,
        "requirements": list(event.requirements),
    }
    if event.intended_target:
        workload["target"] = event.intended_target
    raw: dict[str, Any] = {
        "workload": workload,
        "matrix": {
            "shapes": [list(s) for s in _distinct((c.batch, c.length) for c in cells)],
            "dtypes": _distinct(c.dtype for c in cells),
            "layouts": _distinct(c.layout for c in cells),
            "modes": _distinct(c.mode for c in cells),
            "cache_checks": [list(s) for s in _distinct((c.batch, c.length) for c in repeats)],
        },
        "timing": {
            "warm_repetitions": event.warm_repetitions,
            "scope": {
                k: getattr(event.timing_scope, k)
                for k in ("preprocessing", "host_to_device", "output_retrieval", "note")
            },
        },
        "reference": {
            "dtype": next(
                (w for w in event.reference.replace(",", " ").split() if w in planschema.KNOWN_DTYPES), "float32"
            )
        },
        "tolerances": {},
    }
    for dtype, tol in event.tolerances.items():
        entry: dict[str, Any] = {"atol": tol.atol, "rtol": tol.rtol}
        if tol.task is not None:
            entry["task"] = {"metric": tol.task.metric, "op": tol.task.op, "threshold": tol.task.threshold}
        for part, rule in (("loss", tol.loss), ("grad", tol.grad)):
            if rule is not None:
                entry[part] = {"atol": rule.atol, "rtol": rule.rtol}
        raw["tolerances"][dtype] = entry
    for table, part in (
        ("padding", event.padding),
        ("compile", event.compile_options),
        ("training", event.training),
        ("generation", event.generation),
    ):
        if part is not None:
            raw[table] = _schema_keys(table, msgspec.structs.asdict(part))
    if event.declared_inputs:
        raw["inputs"] = {
            name: _schema_keys("inputs.<name>", msgspec.structs.asdict(spec))
            for name, spec in event.declared_inputs.items()
        }
    return _plain(raw)


def _schema_keys(table: str, values: dict[str, Any]) -> dict[str, Any]:
    """The values a plan file's ``table`` may hold (the event carries derived fields too)."""
    allowed = {key.name for key in planschema.TABLES[table].keys}
    return {k: v for k, v in values.items() if k in allowed and v is not None and v != ""}


def _plain(value: Any) -> Any:
    """Tuples as lists (the TOML writer and the schema read lists)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def shape_summary(s: Any) -> str:
    """One inspected shape in a line: operators, breaks, wide tensors, input layouts."""
    if s.capture_failure:
        ops = f"graph not captured ({s.capture_failure[:120]})"
    else:
        ops = f"{len(s.operators)} distinct operators, {sum(o.count for o in s.operators)} calls ({', '.join(f'{o.name} ×{o.count}' for o in s.operators)})"
    breaks = "breaks not looked for" if s.breaks_failure else f"{sum(b.count for b in s.graph_breaks)} graph break(s)"
    layouts = ", ".join(
        f"{i.name} {i.dtype}{list(i.shape)} {'contiguous' if i.contiguous else 'non-contiguous'}" for i in s.inputs
    )
    # A graph not captured was not looked through: its values are not known, not none (the
    # tensors outside it, parameters, buffers and inputs, were counted all the same).
    counted = "not known in the graph (not captured); outside it " if s.capture_failure else ""
    return (
        f"{s.shape}: {ops}; {breaks}; {counted}{len(s.float64)} float64 tensor(s); "
        f"{len(s.int64_beyond_int32)} int64 tensor(s) beyond int32; inputs {layouts}"
    )


def _predicted(ctx: Context, cid: str, severity: str, title: str, detail: str, first: str) -> Finding:
    finding = _finding(ctx, cid, severity, title, detail, first)
    finding.basis = PREDICTED
    return finding


def _names(items: list[Any]) -> str:
    return listed(f"{t.where} {t.name}" for t in items)


def inspection_findings(ctx: Context, log: InspectionLog) -> list[Finding]:
    """What the inspected graphs predict on this target, from its constraint data."""
    findings: list[Finding] = []
    if log.start.plan_sha256 != ctx.plan.text_sha256:
        findings.append(
            Finding(
                "inspection-stale",
                "note",
                "the inspection was made from another version of this plan",
                f"{log.path} inspected {log.start.workload} from a plan whose text differs from {ctx.plan.path.name} (sha256 {log.start.plan_sha256[:12]}…).",
                "Inspect this plan again (python -m collector inspect --workload PLAN) before relying on these predictions.",
                "",
                "inspection",
                PREDICTED,
            )
        )
    planned = {(c.batch, c.length, c.layout) for c in ctx.plan.cells}
    seen = {(s.batch, s.length, s.layout) for s in log.shapes}
    missing = sorted(planned - seen)
    if missing:
        findings.append(
            Finding(
                "inspection-incomplete",
                "note",
                f"{len(missing)} planned shape(s) were not inspected",
                f"Not in {log.path}: {listed(f'b{b}-l{l}-{lay}' for b, l, lay in missing)}.",
                "Inspect the plan again so every planned shape is covered.",
                "",
                "inspection",
                PREDICTED,
            )
        )
    findings += (
        _float64_findings(ctx, log)
        + _int64_findings(ctx, log)
        + _break_findings(ctx, log)
        + _operator_findings(ctx, log)
        + _layout_findings(log)
    )
    failed = [s for s in log.shapes if s.capture_failure]
    if failed:
        findings.append(
            Finding(
                "graph-not-captured",
                "note",
                f"the graph of {len(failed)} shape(s) was not captured",
                f"{failed[0].shape}: {failed[0].capture_failure}",
                "Nothing is predicted for these shapes' operators; the device run records them.",
                "",
                "inspection",
                PREDICTED,
            )
        )
    return findings


def _unique(items: list[Any]) -> list[Any]:
    return list({(t.where, t.name): t for t in items}.values())


def _float64_findings(ctx: Context, log: InspectionLog) -> list[Finding]:
    wide = _unique([t for s in log.shapes for t in s.float64])
    if not wide or ctx.docs.constraint("float64-as-float32") is None:
        return []
    required = "requires_float64" in ctx.plan.requirements
    return [
        _predicted(
            ctx,
            "float64-as-float32",
            "note" if required else "revise",
            f"the graph holds float64 tensors ({len(wide)}), which run as float32 on {ctx.docs.target}",
            f"Found: {_names(wide)}. The target casts float64 to 32 bits internally, so these values lose float64 precision even where the dtype is kept.",
            "Decide with the owner whether float64 precision is needed: if so declare requires_float64 (the plan is then blocked on this backend); if not, make these tensors float32 in the model and compare the float32 cells.",
        )
    ]


def _int64_findings(ctx: Context, log: InspectionLog) -> list[Finding]:
    wide = _unique([t for s in log.shapes for t in s.int64_beyond_int32])
    if not wide or ctx.docs.constraint("int64-as-int32") is None:
        return []
    findings = []
    for t in wide:
        span = f"[{t.min:.0f}, {t.max:.0f}]" if t.min is not None and t.max is not None else "outside int32"
        findings.append(
            _predicted(
                ctx,
                "int64-as-int32",
                "block",
                f"int64 {t.where} {t.name} holds values outside the int32 range",
                f"Values seen {span}; int32 is {INT32_MIN} to {INT32_MAX}, and the target computes int64 as int32: such values are not kept.",
                f"Remap {t.name} into the int32 range before the model (and declare the new range), or keep the workload on a target with native int64.",
            )
        )
        spec = ctx.revised.get("inputs", {}).get(t.name)
        if (
            t.where == "input"
            and isinstance(spec, dict)
            and "value_range" not in spec
            and t.min is not None
            and t.max is not None
        ):
            spec["value_range"] = [
                int(t.min),
                int(t.max),
            ]  # what the inspection saw, so plan-check reviews the range from now on
    return findings


def _break_findings(ctx: Context, log: InspectionLog) -> list[Finding]:
    reasons: dict[str, int] = {}
    for s in log.shapes:
        for b in s.graph_breaks:
            reasons[b.reason] = reasons.get(b.reason, 0) + b.count
    if not reasons or not ctx.compiled:
        return []
    fullgraph = ctx.checked["compile"]["fullgraph"]
    breaks = listed((f"{r} (×{n})" for r, n in reasons.items()), sep="; ")
    if fullgraph:
        return [
            _predicted(
                ctx,
                "fullgraph",
                "revise",
                "graph breaks: the compiled cells will fail with compile.fullgraph = true",
                f"torch._dynamo.explain found breaks: {breaks}.",
                "Remove the breaks from the model's forward, or plan compile.fullgraph = false and expect split graphs in the report.",
            )
        ]
    return [
        _predicted(
            ctx,
            "fullgraph",
            "note",
            "graph breaks split the compiled path",
            f"torch._dynamo.explain found breaks: {breaks}.",
            "Remove the breaks if the compiled path should be one graph; the report lists them per cell.",
        )
    ]


def _operator_findings(ctx: Context, log: InspectionLog) -> list[Finding]:
    counts: dict[str, int] = {}
    for s in log.shapes:
        for op in s.operators:
            counts[op.name] = max(counts.get(op.name, 0), op.count)
    findings = []
    for entry in ctx.docs.operators:
        used = [op for op in entry.ops if op in counts]
        if not used:
            continue
        severity = "revise" if entry.kind in ("unsupported", "cpu-fallback") else "note"
        findings.append(
            Finding(
                f"operator-{entry.id}",
                severity,
                f"{listed(used)}: {entry.title}",
                entry.text,
                "Check this operator's cells first on the device (the report lists executed and fallback operators per cell).",
                entry.title,
                entry.source,
                PREDICTED,
            )
        )
    if counts and not ctx.docs.fallback_listed:
        note = (
            ctx.docs.operators_note
            or f"The {ctx.docs.release} constraint data lists no operator as falling back to the CPU."
        )
        findings.append(
            Finding(
                "operators-fallback-unlisted",
                "note",
                f"no CPU fallback can be predicted for the {len(counts)} operator(s) the graphs call",
                note,
                "Run the eager cells on the device: they record which operators fell back.",
                f"{ctx.docs.release}: operators",
                ctx.docs.operators_source or "constraint data",
                PREDICTED,
            )
        )
    return findings


def _layout_findings(log: InspectionLog) -> list[Finding]:
    findings = []
    off = [(s.shape, i.name) for s in log.shapes if s.layout == "contiguous" for i in s.inputs if i.contiguous is False]
    if off:
        findings.append(
            Finding(
                "layout-as-built",
                "revise",
                "make_inputs builds non-contiguous inputs for the contiguous layout",
                f"As built: {listed(f'{name} at {shape}' for shape, name in off)}. The contiguous cells would not test a contiguous layout.",
                "Make the contiguous layout's inputs contiguous in make_inputs.",
                "",
                "inspection",
                PREDICTED,
            )
        )
    # The other way: a non-contiguous layout whose inputs are all contiguous as built tests no
    # other layout (the run's cells read 'layout not achieved', untested).
    plain = [
        s.shape for s in log.shapes if s.layout == "noncontiguous" and s.inputs and all(i.contiguous for i in s.inputs)
    ]
    if plain:
        findings.append(
            Finding(
                "layout-as-built",
                "revise",
                "make_inputs builds only contiguous inputs for the non-contiguous layout",
                f"As built at {listed(plain)}, every input is contiguous: the non-contiguous cells would test the contiguous "
                "layout again, and the run would report them untested (layout not achieved).",
                "Make make_inputs return the layout it is asked for (a slice, a transpose, channels_last) for 'noncontiguous'.",
                "",
                "inspection",
                PREDICTED,
            )
        )
    return findings


def write_revised(review: PlanReview, original: Path, out: Path) -> None:
    """Write the revised plan (module path kept valid); the collector runs it once its proposals are agreed."""
    assert review.revised is not None
    revised = copy.deepcopy(review.revised)
    module = (original.parent / revised["workload"]["module"]).resolve()
    # Relative to where the revised plan is written (going up with .. where needed) when both lie
    # in one tree below the root, so the pair can move together; otherwise absolute.
    folder = out.parent.resolve()
    try:
        shared = Path(os.path.commonpath([module, folder]))
    except ValueError:  # another drive
        shared = Path(module.anchor)
    within = shared != Path(shared.anchor)
    revised["workload"]["module"] = Path(os.path.relpath(module, folder)).as_posix() if within else str(module)
    # The file's name as a JSON string: a line break or other control character in it stays
    # inside the comment, escaped, instead of starting a line of TOML.
    name = json.dumps(original.name)
    header = (
        f"# Revised by `reportgen plan-check --target {review.target}` from {name}.\n"
        "# Values marked proposed = true and UNDECIDED texts are proposals, not approvals: review them with the\n"
        "# owner, write the agreed values and remove the marks. Until then plan-check says 'needs a revised\n"
        "# test plan' and the collector refuses to run this plan.\n"
        f"# Comments of {name} (the owner's reasons for its values) are not carried over: read them there.\n"
    )
    replace_file(out, (header + plan_toml(revised)).encode("utf-8"))


# An array of plain values written on one line where it fits in this many characters.
INLINE_WIDTH = 100
# A multi-line array whose items are one line each, none opening another multi-line array.
_MULTILINE_ARRAY = re.compile(r"\[\n((?:[ ]+(?![ \]])[^\n]*[^\[\n],\n)+)[ ]*\]")


def plan_toml(data: dict[str, Any]) -> str:
    """``data`` as TOML, as a person writes a plan: short arrays on one line (tomli_w writes
    every array one item a line: a 16-line plan came back as 69 lines), with every hidden
    character written as its escape (a U+202E escaped in the plan came back raw, reordering the
    line it stood on). The text is read back and must hold the same data, else tomli_w's own
    text (escaped alike) is returned."""
    full = escaped(tomli_w.dumps(data))
    text = short = full

    def inline(match: re.Match[str]) -> str:
        items = [line.strip().removesuffix(",") for line in match.group(1).splitlines()]
        joined = "[" + ", ".join(items) + "]"
        start = text.rfind("\n", 0, match.start()) + 1
        return joined if match.start() - start + len(joined) <= INLINE_WIDTH else match.group(0)

    while True:  # innermost first: an array of arrays fits once its arrays do
        text = short
        short = _MULTILINE_ARRAY.sub(inline, text)
        if short == text:
            break
    try:
        return short if tomllib.loads(short) == tomllib.loads(full) else full
    except tomllib.TOMLDecodeError:
        return full


def format_text(review: PlanReview) -> str:
    """The review as indented lines. Each line is one line whatever it quotes: a newline in the
    plan's file name or in an inspection log's value (an operator's name, a break's reason, the
    host) is shown as <U+000A>, so it cannot start a line that reads as a finding of its own."""
    lines = [f"{review.plan}: {review.headline} (target {review.target}: {review.release})"]
    for f in review.findings:
        lines.append(f"  [{f.severity.upper()}] {f.title}")
        if f.key:
            lines.append(f"      where: {f.key}" + (f" (line {f.line})" if f.line else ""))
        lines.append(f"      why: {f.detail}")
        if f.constraint:
            lines.append(f"      documented: {f.constraint} [{f.source}]")
        if f.basis:
            lines.append(f"      basis: {f.basis}")
        lines.append(f"      first: {f.first}")
    if not review.findings:
        lines.append("  no findings")
    if review.inspection:
        lines.append(f"  inspection ({PREDICTED}): {review.inspection}")
        lines += [f"    {line}" for line in review.inspected]
    return "\n".join(visible(line, keep="") for line in lines)


def format_json(review: PlanReview) -> str:
    return json.dumps(review.to_dict(), indent=2, sort_keys=True)
