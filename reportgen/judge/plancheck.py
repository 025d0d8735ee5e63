"""`reportgen plan-check`: review a workload plan against what the target backend documents.

The order of reasoning is the seed's: identify shape constraints, check required dtype
semantics, and only then design correctness and performance tests. Each finding names the
documented constraint it rests on and says what to change or verify first. The plan is
classified as one of:

* ``compatible``: compatible as specified;
* ``revise``: needs a revised test plan (a revised plan can be written that the collector runs);
* ``blocked``: blocked by a precision requirement.
"""

from __future__ import annotations

import copy
import json
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import tomli_w

from collector.plan import PlanError, WorkloadPlan, load_plan
from reportgen.judge.backend_docs import BackendDocs, load_backend_docs

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


@dataclass
class Finding:
    id: str
    severity: str  # block | revise | note
    title: str
    detail: str
    first: str
    constraint: str = ""
    source: str = ""


@dataclass
class PlanReview:
    plan: str
    target: str
    release: str
    classification: str
    headline: str
    findings: list[Finding] = field(default_factory=list)
    revised: dict[str, Any] | None = None

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

    def lengths(self) -> list[int]:
        return sorted({l for _, l in self.revised["matrix"].get("shapes", [])})

    def cite(self, cid: str) -> tuple[str, str]:
        found = self.docs.constraint(cid)
        return (found.title, found.source) if found else ("", "")


def bucket_for(length: int) -> int:
    """The bucket a request length pads up to: the next power of two, at least 128."""
    bucket = MIN_BUCKET
    while bucket < length:
        bucket *= 2
    return bucket


def _finding(ctx: Context, cid: str, severity: str, title: str, detail: str, first: str) -> Finding:
    constraint, source = ctx.cite(cid)
    return Finding(cid, severity, title, detail, first, constraint, source)


def check_precision(ctx: Context) -> list[Finding]:
    f64_doc = ctx.docs.constraint("float64-as-float32")
    if f64_doc is None:
        return []
    if "requires_float64" in ctx.plan.requirements:
        return [_finding(ctx, "float64-as-float32", "block", "float64 computation is required but the backend computes float64 as float32",
                         "Changing eager versus compiled execution does not establish float64 compliance, and relaxing the requirement to record a pass is not acceptable.",
                         "Keep the workload on a verified float64-capable path unless its owner approves a scientifically justified change; then rewrite the requirement and plan before any hardware time.")]
    if any(c.dtype == "float64" for c in ctx.plan.cells):
        return [_finding(ctx, "float64-as-float32", "revise", "float64 cells will run as float32",
                         "The plan has float64 cells but does not say whether float64 computation is required.",
                         "Declare requires_float64 if acceptance needs it (the plan is then blocked on this backend), or plan float32 cells instead.")]
    return []


def _variable_lengths(ctx: Context) -> bool:
    """Lengths come from variable requests (rather than fixed problem sizes) when the plan pads
    them, says so, or expects fewer compilations than it has shapes."""
    workload = ctx.raw.get("workload", {})
    shapes = {tuple(s) for s in ctx.raw.get("matrix", {}).get("shapes", [])}
    expected = workload.get("expected_compilations")
    return "padding" in ctx.raw or bool(workload.get("variable_lengths")) or (expected is not None and expected < len(shapes))


def check_buckets(ctx: Context) -> list[Finding]:
    if not ctx.compiled or not _variable_lengths(ctx):
        return []
    padding = ctx.revised.setdefault("padding", {})
    buckets = set(padding.get("buckets", []))
    lengths = ctx.lengths()
    unbucketed = [l for l in lengths if l not in buckets]
    findings = []
    if unbucketed:
        mapping = {l: (l if l in buckets else bucket_for(l)) for l in lengths}
        ctx.revised["matrix"]["shapes"] = sorted({(b, mapping[l]) for b, l in ctx.revised["matrix"]["shapes"]})
        ctx.revised["matrix"]["shapes"] = [list(s) for s in ctx.revised["matrix"]["shapes"]]
        if "cache_checks" in ctx.revised["matrix"]:
            ctx.revised["matrix"]["cache_checks"] = sorted({(b, mapping.get(l, l)) for b, l in ctx.revised["matrix"]["cache_checks"]})
            ctx.revised["matrix"]["cache_checks"] = [list(s) for s in ctx.revised["matrix"]["cache_checks"]]
        padding["buckets"] = sorted(set(mapping.values()))
        padding["mask_padded"] = True
        ladder = ", ".join(f"{l} -> {mapping[l]}" for l in unbucketed)
        findings.append(_finding(ctx, "recompile-per-shape", "revise", "request lengths are not padded to a fixed set of buckets",
                                 f"Every new input shape compiles again; pad the lengths ({ladder}) and pad the attention masks the same way. With batch size and dtype fixed this bounds the sequence shapes; it does not promise one compilation per shape for every graph.",
                                 f"Pad to buckets {padding['buckets']}, pad masks identically, then plan compile and cache checks per bucket."))
    if padding.get("buckets") and not padding.get("above_largest"):
        largest = max(padding["buckets"])
        padding["above_largest"] = f"UNDECIDED: define what happens to requests longer than {largest} tokens (reject, truncate or split)"
        findings.append(_finding(ctx, "static-shapes", "revise", "no policy for requests above the largest bucket",
                                 f"A request longer than {largest} tokens would need a new shape and a new compilation.",
                                 f"Decide and write down what happens above {largest} (reject, truncate or split) before testing."))
    return findings


def check_expected_compilations(ctx: Context) -> list[Finding]:
    expected = ctx.raw.get("workload", {}).get("expected_compilations")
    shapes = {(b, l) for b, l in ctx.revised["matrix"].get("shapes", [])}
    if expected is None or not ctx.compiled or expected >= len(shapes):
        return []
    ctx.revised["workload"]["expected_compilations"] = len(shapes)
    return [_finding(ctx, "recompile-per-shape", "revise", f"expects {expected} compilation(s) for {len(shapes)} shapes",
                     "Compilation is just-in-time per input signature: one initial compilation cannot cover every length.",
                     f"Expect at least one compilation per shape ({len(shapes)} per dtype and layout) and verify it with the compile and cache-check cells.")]


def check_cache_check(ctx: Context) -> list[Finding]:
    shapes = [tuple(s) for s in ctx.revised["matrix"].get("shapes", [])]
    if not ctx.compiled or len(shapes) < 2 or ctx.revised["matrix"].get("cache_checks"):
        return []
    smallest = min(shapes, key=lambda s: (s[0] * s[1], s))
    ctx.revised["matrix"]["cache_checks"] = [list(smallest)]
    return [_finding(ctx, "recompile-per-shape", "revise", "no cache check",
                     f"Repeating {list(smallest)} after the largest shape shows whether the process compiles a shape again.",
                     f"Add {list(smallest)} as a cache check, repeated after the largest shape.")]


def check_dtypes(ctx: Context) -> list[Finding]:
    dtypes = list(ctx.revised["matrix"].get("dtypes", ["float32"]))
    findings = []
    if "bfloat16" in dtypes and (dtypes[0] != "float32"):
        ctx.revised["matrix"]["dtypes"] = ["float32"] + [d for d in dtypes if d != "float32"]
        findings.append(_finding(ctx, "bf16-own-criteria", "revise", "BF16 is planned without FP32 first",
                                 "Test FP32 first, then BF16 if intended: an FP32 pass separates model and backend problems from precision effects.",
                                 "Add float32 cells before the bfloat16 ones."))
    tolerances = ctx.revised.setdefault("tolerances", {})
    if "bfloat16" in dtypes:
        tol = tolerances.get("bfloat16", {})
        if "atol" not in tol or "rtol" not in tol or "task" not in tol:
            metric = _task_metric_name(tolerances)
            tolerances["bfloat16"] = {
                **PROPOSED_BF16,
                **{k: v for k, v in tol.items() if k in ("atol", "rtol")},
                "task": tol.get("task", {"metric": metric, "op": ">=", "threshold": PROPOSED_BF16_TASK_THRESHOLD}),
            }
            findings.append(_finding(ctx, "bf16-own-criteria", "revise", "no declared BF16 tolerance and task criterion",
                                     "An FP32 elementwise tolerance does not carry over to BF16, and a loose elementwise pass alone does not establish task quality.",
                                     "Agree a BF16 tolerance and task-quality criterion with the owner before running; the revised plan proposes values to review."))
    if "float32" in ctx.revised["matrix"].get("dtypes", ["float32"]) and "float32" not in tolerances:
        tolerances["float32"] = {"atol": 1e-5, "rtol": 1e-4}
        findings.append(_finding(ctx, "bf16-own-criteria", "note", "FP32 tolerance not declared",
                                 "The collector would use the seed's illustrative FP32 criterion, |diff| <= 1e-5 + 1e-4 * |ref|.",
                                 "Confirm or replace it with a model-specific criterion before running."))
    return findings


def _task_metric_name(tolerances: dict[str, Any]) -> str:
    for tol in tolerances.values():
        if isinstance(tol, dict) and "task" in tol:
            return tol["task"]["metric"]
    return "task_metric"


def check_layout(ctx: Context) -> list[Finding]:
    if ctx.docs.constraint("noncontiguous-copy") is None or not ctx.compiled:
        return []
    layouts = ctx.revised["matrix"].get("layouts", ["contiguous"])
    if "noncontiguous" in layouts:
        return [_finding(ctx, "noncontiguous-copy", "note", "non-contiguous inputs are copied on each compiled call",
                         "The plan already runs the non-contiguous layout; the report will show its cost and correctness.",
                         "Compare the contiguous and non-contiguous cells of each shape.")]
    ctx.revised["matrix"]["layouts"] = list(layouts) + ["noncontiguous"]
    return [_finding(ctx, "noncontiguous-copy", "revise", "the real non-contiguous preprocessing layout is not tested",
                     "Compiled execution copies non-contiguous inputs on each call; a contiguous sample does not show what the real preprocessing, masks and attention path do.",
                     "Add the layout your preprocessing really produces (the workload's make_inputs must build it for layout 'noncontiguous').")]


def check_modes(ctx: Context) -> list[Finding]:
    modes = ctx.revised["matrix"].get("modes", ["eager", "compiled"])
    findings = []
    if "eager" not in modes and ctx.docs.constraint("cpu-fallback") is not None:
        ctx.revised["matrix"]["modes"] = ["eager"] + list(modes)
        findings.append(_finding(ctx, "cpu-fallback", "revise", "no eager cells",
                                 "Unsupported eager ops fall back to the CPU; eager cells record them, and keep a compile failure apart from an eager result.",
                                 "Add eager mode next to compiled."))
    mode = ctx.raw.get("options", {}).get("compile_mode")
    if mode not in (None, "default") and ctx.docs.constraint("default-mode-only") is not None:
        ctx.revised.setdefault("options", {})["compile_mode"] = "default"
        findings.append(_finding(ctx, "default-mode-only", "revise", f"compile mode {mode!r} is not supported",
                                 "Other modes warn and fall back to the default mode, so results would not describe the mode planned.",
                                 "Plan mode='default'."))
    if ctx.raw.get("options", {}).get("dynamic") is True:
        ctx.revised["options"]["dynamic"] = False
        findings.append(_finding(ctx, "static-shapes", "revise", "dynamic=True is planned",
                                 "The compiled path needs static shapes and dynamic=False.", "Plan dynamic=False with padded buckets."))
    return findings


def check_recompile_limit(ctx: Context) -> list[Finding]:
    shapes = {tuple(s) for s in ctx.revised["matrix"].get("shapes", [])}
    if not ctx.compiled or len(shapes) <= RECOMPILE_LIMIT:
        return []
    return [Finding("recompile-limit", "note", f"{len(shapes)} shapes per compiled group exceed Dynamo's recompile limit ({RECOMPILE_LIMIT})",
                    "After the limit, the frame silently runs eager: later 'compiled' results would really be eager.",
                    "Split the shapes across runs or reduce the buckets; the collector flags cells that hit the limit.", "torch._dynamo recompile_limit", "torch")]


CHECKS: list[Callable[[Context], list[Finding]]] = [
    check_buckets,
    check_expected_compilations,
    check_precision,
    check_dtypes,
    check_layout,
    check_modes,
    check_cache_check,
    check_recompile_limit,
]


def review_plan(path: Path, target: str) -> PlanReview:
    """Review one plan; raises PlanError for a plan that cannot be read."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise PlanError(f"{path}: cannot read the plan: {exc}") from None
    plan = load_plan(path, require_module=False)
    docs = load_backend_docs(target)
    ctx = Context(raw, plan, docs, copy.deepcopy(raw))
    findings = [f for check in CHECKS for f in check(ctx)]
    findings.sort(key=lambda f: ("block", "revise", "note").index(f.severity))
    severities = {f.severity for f in findings}
    classification = "blocked" if "block" in severities else "revise" if "revise" in severities else "compatible"
    return PlanReview(str(path), target, docs.release, classification, CLASSES[classification], findings, ctx.revised if classification == "revise" else None)


def write_revised(review: PlanReview, original: Path, out: Path) -> None:
    """Write the revised plan so the collector runs it as is (module path kept valid)."""
    assert review.revised is not None
    revised = copy.deepcopy(review.revised)
    module = (original.parent / revised["workload"]["module"]).resolve()
    try:
        revised["workload"]["module"] = str(module.relative_to(out.parent.resolve()))
    except ValueError:
        revised["workload"]["module"] = str(module)
    header = (
        f"# Revised by `reportgen plan-check --target {review.target}` from {original.name}.\n"
        "# Proposed tolerances, criteria and policies must be reviewed and agreed before any result.\n"
    )
    out.write_text(header + tomli_w.dumps(revised), encoding="utf-8")


def format_text(review: PlanReview) -> str:
    lines = [f"{review.plan}: {review.headline} (target {review.target}: {review.release})"]
    for f in review.findings:
        lines.append(f"  [{f.severity.upper()}] {f.title}")
        lines.append(f"      why: {f.detail}")
        if f.constraint:
            lines.append(f"      documented: {f.constraint} [{f.source}]")
        lines.append(f"      first: {f.first}")
    if not review.findings:
        lines.append("  no findings")
    return "\n".join(lines)


def format_json(review: PlanReview) -> str:
    return json.dumps(review.to_dict(), indent=2, sort_keys=True)
