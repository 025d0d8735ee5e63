"""Load a workload plan (TOML) and expand it into the ordered matrix of cells.

A plan is declared before anything runs: shapes, dtypes, layouts, modes, tolerances, warm
repetitions and timing scope. The format is collector/planschema.py, documented in
collector/PLAN.md (generated from it).
"""

from __future__ import annotations

import errno
import fnmatch
import hashlib
import itertools
import re
import json
import os
import stat
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from collector import descriptors, planschema
from collector.eventlog import MAX_LINE_BYTES
from collector.planschema import KNOWN_DTYPES, KNOWN_REQUIREMENTS, LAYOUTS, MODES, TARGETS, PlanError
from collector.tomltext import toml_text

__all__ = [
    "Cell",
    "WorkloadPlan",
    "PlanError",
    "load_plan",
    "expand_matrix",
    "select_cells",
    "KNOWN_DTYPES",
    "KNOWN_REQUIREMENTS",
    "LAYOUTS",
    "MODES",
    "TARGETS",
]

# Generated from reportgen/judge/constraints/*.toml (python -m reportgen.judge.backend_docs):
# the plan keys each target's documented constraints limit.
TARGET_RULES_PATH = planschema.TARGET_RULES_PATH

# The seed's illustrative FP32 criterion: |out - ref| <= 1e-5 + 1e-4 * |ref|.
DEFAULT_FP32_TOLERANCE = {"atol": 1e-5, "rtol": 1e-4, "source": "collector default (seed FP32 criterion)"}


@dataclass(frozen=True)
class Cell:
    batch: int
    length: int
    layout: str
    dtype: str
    mode: str
    repeat_of: str | None = None

    @property
    def shape_key(self) -> str:
        return f"b{self.batch}-l{self.length}-{self.layout}-{self.dtype}"

    @property
    def case(self) -> str:
        key = f"{self.shape_key}-{self.mode}"
        return f"{key}-repeat" if self.repeat_of else key


# A workload's WEIGHTS_ORIGIN: trained weights from a named source, made-up ones, or none at all
# (collector/workload.py refuses a module stating another; plan-check reads it from the source).
WEIGHTS_ORIGINS = ("pretrained", "synthetic", "none")
# What the plan event records as the model revision of a module that states none.
NO_MODEL_REVISION = "not stated by the workload"

# The functions a workload module defines, with their signatures (collector/workload.py checks
# them after importing the module; plan-check looks for them in its source, never running it).
WORKLOAD_FUNCTIONS = {
    "build_model": "build_model() -> torch.nn.Module",
    "make_inputs": "make_inputs(batch, length, layout) -> dict[str, Tensor]",
    "run_model": "run_model(model, inputs) -> dict[str, Tensor]",
    "task_metric": "task_metric(outputs, reference, inputs) -> float",
    "loss_fn": "loss_fn(outputs, inputs) -> Tensor",
    "make_optimizer": "make_optimizer(params) -> torch.optim.Optimizer",
    "new_cache": "new_cache(model, batch, max_cache_len) -> cache",
    "step": "step(model, input_ids, attention_mask, position_ids, cache, cache_position) -> logits (batch, tokens, vocabulary)",
    "pad_id": "pad_id() -> int",
}


def required_functions(generation: bool, training: bool) -> tuple[str, ...]:
    """The functions a workload module must define for a plan of this kind (WORKLOAD_FUNCTIONS)."""
    if generation:
        return ("build_model", "make_inputs", "new_cache", "step", "pad_id")
    return ("build_model", "make_inputs", "run_model") + (
        ("loss_fn", "make_optimizer") if training else ("task_metric",)
    )


@dataclass
class WorkloadPlan:
    path: Path
    name: str
    module: str
    description: str
    cells: list[Cell]
    tolerances: dict[str, dict[str, Any]]
    warm_repetitions: int
    warmup: int
    timing_scope: dict[str, Any]
    requirements: list[str]
    reference_dtype: str
    float64_golden: bool
    padding: dict[str, Any] | None
    compile_options: dict[str, Any] = field(default_factory=dict)
    inputs: dict[str, dict[str, Any]] = field(default_factory=dict)
    training: dict[str, Any] | None = None
    # A generation plan's [generation] table (collector/generation.py), as validated.
    generation: dict[str, Any] | None = None
    compare: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: {"outputs": [], "params": []})
    # Rounds of re-measurement of an unstable warm series (timing.remeasure_rounds).
    remeasure_rounds: int = 2
    # The target the plan is meant to certify ([workload] target); None when the plan does not say.
    intended_target: str | None = None
    # The plan as validated, every default filled in (collector/planschema.py).
    checked: dict[str, Any] = field(default_factory=dict)
    # Line of each key as written, for messages.
    key_lines: dict[str, int] = field(default_factory=dict)
    # sha256 of the plan file's text as read: a fresh child process checks it reads the same plan.
    text_sha256: str = ""
    # Cells the matrix expands to before a cap ([matrix] max_cells, --max-cells) cut it to ``cells``.
    matrix_cells: int = 0
    # The cap ([matrix] max_cells, lowered by --max-cells); None: the whole matrix is planned
    # (``cells`` then holds at most MAX_PLANNED_CELLS + 1 of it: size_problem refuses more).
    cap_limit: int | None = None

    @property
    def module_path(self) -> Path:
        return (self.path.parent / self.module).resolve()

    def event_fields(self, cells: list[Cell], warm_repetitions: int | None = None) -> dict[str, Any]:
        """The plan event's fields that come from the plan itself (the runner adds the model's
        revision, weights, target and training optimizer). Every value here was validated by the
        schema, so the event reportgen reads is valid whenever the plan loaded."""
        return {
            "workload": self.name,
            "description": self.description,
            "intended_target": self.intended_target,
            "matrix": [
                {
                    "case": c.case,
                    "batch": c.batch,
                    "length": c.length,
                    "layout": c.layout,
                    "dtype": c.dtype,
                    "mode": c.mode,
                    "repeat_of": c.repeat_of,
                }
                for c in cells
            ],
            "reference": f"cpu eager {self.reference_dtype}, run twice"
            + (", float64 golden" if self.float64_golden else ""),
            "tolerances": self.tolerances,
            "warm_repetitions": warm_repetitions or self.warm_repetitions,
            "warmup": self.warmup,
            "remeasure_rounds": self.remeasure_rounds,
            "timing_scope": self.timing_scope,
            "requirements": self.requirements,
            "padding": self.padding,
            "compile_options": self.compile_options,
            "declared_inputs": self.inputs or None,
            "matrix_cells": self.matrix_cells if self.matrix_cells > len(cells) else None,
            "generation": self.generation,
        }

    @property
    def localize(self) -> dict[str, Any]:
        """The plan's [localize] bounds, defaults filled in when the plan has no such table."""
        return self.checked.get("localize") or planschema.check_table("localize", {})

    def cap(self, limit: int | None) -> None:
        """Keep the first ``limit`` cells (--max-cells) when that is fewer than the plan keeps.
        The matrix lists a group's shapes before its cache-check repeats: a repeat never
        outlives the cell it repeats."""
        if limit is not None and limit < len(self.cells):
            self.cells = self.cells[:limit]
        if limit is not None and (self.cap_limit is None or limit < self.cap_limit):
            self.cap_limit = limit

    @property
    def planned_cells(self) -> int:
        """How many cells a run of this plan plans: the matrix, cut at the cap if any."""
        return self.matrix_cells if self.cap_limit is None else min(self.cap_limit, self.matrix_cells)

    def size_problem(self) -> str | None:
        """Why one run log cannot hold this plan (see MAX_PLANNED_CELLS), or None."""
        if self.planned_cells <= MAX_PLANNED_CELLS:
            return None
        return (
            f"{self.path}: the matrix expands to {self.planned_cells:,} cells, more than one run log can hold ({MAX_PLANNED_CELLS:,}: "
            f"its plan event lists every planned cell within the event contract's {MAX_LINE_BYTES >> 20} MiB line limit); "
            "cap it with --max-cells N or [matrix] max_cells, or split the plan"
        )

    def tolerance_for(self, dtype: str) -> dict[str, Any] | None:
        return self.tolerances.get(dtype)

    def tolerance(self, dtype: str) -> dict[str, Any]:
        """The criteria of a dtype whose cells run: only such cells ask (missing_tolerance is None)."""
        tol = self.tolerances.get(dtype)
        if tol is None:
            raise RuntimeError(f"a {dtype} cell was judged with no declared tolerance: {self.missing_tolerance(dtype)}")
        return tol

    @property
    def training_table(self) -> dict[str, Any]:
        """The [training] table (steps, seed, ...): asked only by the training path."""
        if self.training is None:
            raise RuntimeError(f"plan {self.name}: the training path ran for a plan with no [training] table")
        return self.training

    def missing_tolerance(self, dtype: str) -> str | None:
        """Why cells of this dtype must not run, or None when their criteria are declared."""
        return missing_criteria(self.tolerances, dtype, bool(self.training), bool(self.generation))


def expand_matrix(matrix: dict[str, Any], limit: int | None = None) -> list[Cell]:
    """Every shape x layout x dtype x mode, then the cache-check repeats after the last shape;
    only the first ``limit`` cells when given (a plan of a megabyte names a million cells, and a
    run plans at most MAX_PLANNED_CELLS: the rest is never built)."""
    matrix = planschema.check_table("matrix", matrix)
    return list(itertools.islice(_cells(matrix), limit))


def _cells(matrix: dict[str, Any]) -> Iterator[Cell]:
    shapes = [tuple(s) for s in matrix["shapes"]]
    dtypes, layouts, modes = matrix["dtypes"], matrix["layouts"], matrix["modes"]
    repeats = [tuple(s) for s in matrix["cache_checks"]]
    # Each (dtype, layout) group runs its shapes in the plan's order, then repeats the cache-check
    # shapes after the last of them (the largest, as plans list them), so the repeat shows
    # whether the same process compiled again.
    for dt in dtypes:
        for lay in layouts:
            for b, l in shapes:
                for m in modes:
                    yield Cell(b, l, lay, dt, m)
            if "compiled" in modes:
                for b, l in repeats:
                    original = Cell(b, l, lay, dt, "compiled")
                    yield Cell(b, l, lay, dt, "compiled", repeat_of=original.case)


def file_stem(name: str) -> str:
    """A plan's name as it may begin a file or folder name: letters, digits, '.', '_' and '-'
    kept, anything else (a path separator, a newline) a hyphen, no leading dot or hyphen, at most
    100 characters. A name like '../../x' names a run folder inside --out, never above it."""
    return re.sub(r"[^A-Za-z0-9._-]", "-", name).lstrip(".-")[:100] or "workload"


def missing_criteria(tolerances: dict[str, Any], dtype: str, training: bool, generation: bool) -> str | None:
    """Why cells of ``dtype`` must not run under these [tolerances] tables (the collector skips
    them), or None when their criteria are declared. plan-check asks the same question."""
    tol = tolerances.get(dtype)
    if tol is None:
        return f"the plan declares no tolerance for {dtype}; declare [tolerances.{dtype}] before running it"
    if training:  # loss and gradients are its criteria, in every dtype (a task criterion is refused)
        if "loss" in tol and "grad" in tol:
            return None
        return f"a training plan declares loss and grad tolerances per dtype; [tolerances.{dtype}] lacks them"
    if generation and "task" not in tol:
        return f"a generation plan declares a task criterion on greedy_steps_agreeing for every dtype; [tolerances.{dtype}] lacks one"
    if dtype != "float32" and "task" not in tol:
        return f"the plan declares no task criterion for {dtype}; an elementwise tolerance alone does not establish task quality"
    return None


def _tolerances(raw: dict[str, Any], dtypes: set[str]) -> dict[str, dict[str, Any]]:
    """The declared tolerances, as the plan event records them (the seed's FP32 default added)."""
    tolerances: dict[str, dict[str, Any]] = {}
    for dtype, table in raw.items():
        tol: dict[str, Any] = {"atol": table["atol"], "rtol": table["rtol"], "source": "plan"}
        if "task" in table:
            tol["task"] = dict(table["task"])
        for part in ("loss", "grad"):
            if part in table:
                tol[part] = dict(table[part])
        tolerances[dtype] = tol
    if "float32" in dtypes and "float32" not in tolerances:
        tolerances["float32"] = dict(DEFAULT_FP32_TOLERANCE)
    return tolerances


class RegionError(PlanError):
    """A declared judged region does not fit the output (a plan error: nothing should run)."""


def parse_slice(text: str, where: str) -> slice | int:
    parts = text.split(":")
    try:
        if len(parts) == 1:
            return int(parts[0])
        if len(parts) == 2:
            return slice(int(parts[0]) if parts[0].strip() else None, int(parts[1]) if parts[1].strip() else None)
    except ValueError:
        pass
    raise RegionError(f"{where}: {text!r} is not an index or a start:stop slice")


def check_region_syntax(rule: dict[str, Any], where: str) -> None:
    """The parts of a rule that can be checked without tensors."""
    if bool(rule.get("mask")) == bool(rule.get("region")):
        raise RegionError(f"{where}: give exactly one of mask (an input name) or region (index slices)")
    for item in rule.get("region") or []:
        parse_slice(item, f"{where}.region")


PARAM_RULES = ("elementwise", "lr-bound", "zero-grad")


def compare_rules(table: Any, training: bool) -> dict[str, list[dict[str, Any]]]:
    """[compare.outputs.<name>] judged regions and [compare.params.<group>] training rules, checked.

    What needs the model (output names, mask shapes, parameter names) is checked by
    ``collector.preflight`` before anything runs.
    """
    rules: dict[str, list[dict[str, Any]]] = {"outputs": [], "params": []}
    if table is None:
        return rules
    if not isinstance(table, dict):
        raise PlanError("compare: expected a table")
    unknown = sorted(set(table) - {"outputs", "params"})
    if unknown:
        raise PlanError(f"compare: unknown keys {unknown}; known: outputs, params")
    for name, rule in (table.get("outputs") or {}).items():
        where = f"compare.outputs.{name}"
        if not isinstance(rule, dict):
            raise PlanError(f"{where}: expected a table with mask or region")
        extra = sorted(set(rule) - {"mask", "region"})
        if extra:
            raise PlanError(f"{where}: unknown keys {extra}; known: mask, region")
        if "mask" in rule and not (isinstance(rule["mask"], str) and rule["mask"]):
            raise PlanError(f"{where}.mask: expected an input name")
        if "region" in rule and not (
            isinstance(rule["region"], list) and rule["region"] and all(isinstance(v, str) for v in rule["region"])
        ):
            raise PlanError(f'{where}.region: expected a list of index slices as strings, e.g. [":", "0:64"]')
        entry: dict[str, Any] = {"output": name, "mask": rule.get("mask"), "region": rule.get("region")}
        try:
            check_region_syntax(entry, where)
        except RegionError as exc:
            raise PlanError(str(exc)) from None
        entry["description"] = f"{entry['mask']} != 0" if entry["mask"] else f"[{', '.join(entry['region'])}]"
        rules["outputs"].append(entry)
    params = table.get("params") or {}
    if params and not training:
        raise PlanError("compare.params: rules for parameter groups need a [training] plan")
    for group, rule in params.items():
        where = f"compare.params.{group}"
        if not isinstance(rule, dict):
            raise PlanError(f"{where}: expected a table with match and rule")
        extra = sorted(set(rule) - {"match", "rule", "k", "zero_below"})
        if extra:
            raise PlanError(f"{where}: unknown keys {extra}; known: match, rule, k, zero_below")
        match = rule.get("match")
        if isinstance(match, str):
            match = [match]
        if not (isinstance(match, list) and match and all(isinstance(m, str) and m for m in match)):
            raise PlanError(f'{where}.match: expected glob patterns over parameter names, e.g. ["*.qkv.bias"]')
        kind = rule.get("rule")
        if kind not in PARAM_RULES:
            raise PlanError(f"{where}.rule: one of {', '.join(PARAM_RULES)}")
        entry = {"group": group, "match": match, "rule": kind, "zero_below": 0.0}
        if kind == "lr-bound":
            k = rule.get("k")
            if not isinstance(k, (int, float)) or isinstance(k, bool) or k <= 0:
                raise PlanError(f"{where}.k: lr-bound needs k, a positive number (|updated - reference| <= k * lr)")
            entry["k"] = float(k)
            below = rule.get("zero_below", 0.0)
            if not isinstance(below, (int, float)) or isinstance(below, bool) or below < 0:
                raise PlanError(f"{where}.zero_below: a number >= 0")
            entry["zero_below"] = float(below)
        elif "k" in rule or "zero_below" in rule:
            raise PlanError(f'{where}: k and zero_below only go with rule = "lr-bound"')
        rules["params"].append(entry)
    return rules


MAX_PLAN_BYTES = 1 << 20  # a plan is a page of TOML; anything larger is not one
# The event contract reads log lines of at most MAX_LINE_BYTES (reportgen's
# contract.validation.MAX_LINE_BYTES; a test keeps the two equal). The plan event lists every
# planned cell, a few hundred bytes each with its selection, so one run plans at most this many.
MAX_PLANNED_CELLS = 20_000


WOULD_WAIT = "its reads would wait (a kernel file that only looks like a regular one)"


def read_without_waiting(path: Path, limit: int) -> bytes:
    """At most ``limit`` + 1 bytes of a regular file, opened and read without blocking: a FIFO
    swapped in, or a file that only looks regular and whose read would wait (/proc/kmsg), is an
    OSError saying so, never a hang."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        data = b""
        while len(data) <= limit:
            try:
                part = handle.read(limit + 1 - len(data))
            except BlockingIOError:
                part = None
            if part is None:
                raise OSError(errno.EAGAIN, WOULD_WAIT)
            if not part:
                break
            data += part
    return data


def read_plan_file(path: Path) -> tuple[dict[str, Any], str]:
    """The parsed TOML and its text; a PlanError naming the file for anything unreadable.
    Only a regular file is read (a FIFO or a device would hang or never end), up to 1 MiB."""
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            raise PlanError(f"{path}: not a regular file; give the plan's TOML file")
        if info.st_size > MAX_PLAN_BYTES:
            raise PlanError(f"{path}: {info.st_size} bytes is too large for a plan (at most {MAX_PLAN_BYTES})")
        raw = read_without_waiting(path, MAX_PLAN_BYTES)
    except OSError as exc:
        raise PlanError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(raw) > MAX_PLAN_BYTES:
        raise PlanError(f"{path}: too large for a plan (at most {MAX_PLAN_BYTES} bytes)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        bad = raw[exc.start : exc.end].hex(" ")
        raise PlanError(
            f"{path}:{line}: not UTF-8 (byte 0x{bad} at offset {exc.start} of the file); save the plan as UTF-8"
        ) from None
    # A byte-order mark some editors write first holds no content (collector.tomltext): the one
    # reader of plan text drops it, so the collector, plan-check and the text's sha256 agree; a
    # dotted key of too many parts for tomllib is refused there as a TOMLDecodeError.
    try:
        text = toml_text(text)
        return tomllib.loads(text), text
    except tomllib.TOMLDecodeError as exc:
        lineno = getattr(exc, "lineno", None)
        where = f"{path}:{lineno}" if lineno else str(path)
        # The workload's module given for its plan (--workload x.py): say which file goes there.
        hint = (
            "; this looks like a workload's Python module: give its plan, the TOML file that names it"
            if str(path).endswith(".py")
            else ""
        )
        raise PlanError(f"{where}: not valid TOML: {getattr(exc, 'msg', exc)}{hint}") from None
    except RecursionError:
        raise PlanError(f"{path}: not a plan: arrays or tables nested too deeply") from None
    except ValueError:  # tomllib's one other refusal: an integer past Python's digit limit
        raise PlanError(
            f"{path}: not valid TOML: an integer of more than {sys.get_int_max_str_digits():,} digits"
        ) from None


def load_plan(path: str | Path, require_module: bool = True, allow_undecided: bool = False) -> WorkloadPlan:
    """Parse and check a plan against the schema (collector/planschema.py).

    ``require_module=False`` reviews a plan whose code is not here yet; ``allow_undecided=True``
    reads a plan that still holds values plan-check proposed (the collector never runs one).
    """
    path = Path(path)
    data, text = read_plan_file(path)
    return plan_from_data(data, text, path, require_module, allow_undecided)


def plan_from_data(
    data: dict[str, Any], text: str, path: Path, require_module: bool = True, allow_undecided: bool = False
) -> WorkloadPlan:
    """load_plan for a plan already parsed (``text`` is its TOML, for line numbers; ``path`` names
    it in every message)."""
    checked = planschema.validate(data, str(path), text)
    if not allow_undecided:
        pending = planschema.undecided(checked)
        if pending:
            lines = planschema.key_lines(text)
            first = pending[0]
            line = lines.get(first.split("[")[0])
            where = f"{path}:{line}" if line else str(path)
            raise PlanError(
                f"{where}: {first}: holds a value no one agreed yet ({len(pending)} in all: {', '.join(pending)}); "
                "review each proposal, write the agreed value, remove 'proposed = true' and any UNDECIDED text, then run again"
            )
    workload, timing, reference = checked["workload"], checked["timing"], checked["reference"]
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in workload["module"]):
        line = planschema.key_lines(text).get("workload.module")
        raise PlanError(
            f'{path}{f":{line}" if line else ""}: workload.module: {workload["module"]!r} holds a control character; expected a file name such as "my_encoder.py"'
        )
    # Counted before anything is built: a plan with no cap is expanded one cell past what a log
    # holds (enough for size_problem and plan-check to say so), never to its million cells.
    matrix_cells = planschema.matrix_cells(checked["matrix"])
    cap = checked["matrix"].get("max_cells")
    # The matrix is checked already: expanded as it is, not checked a second time.
    cells = list(itertools.islice(_cells(checked["matrix"]), MAX_PLANNED_CELLS + 1 if cap is None else cap))
    scope = {
        **{k: timing["scope"][k] for k in ("preprocessing", "host_to_device", "output_retrieval")},
        "synchronized": True,
        "note": timing["scope"]["note"],
    }
    training = checked.get("training")
    try:
        written = (
            {
                part: {name: {k: v for k, v in rule.items() if v is not None} for name, rule in rules.items()}
                for part, rules in checked["compare"].items()
            }
            if "compare" in checked
            else None
        )
        compare = compare_rules(written, training=training is not None)
    except PlanError as exc:
        where, _, message = str(exc).partition(": ")
        raise planschema.Checker(str(path), planschema.key_lines(text)).fail(where, message) from None
    plan = WorkloadPlan(
        path=path.resolve(),
        name=workload["name"],
        module=workload["module"],
        description=workload["description"],
        cells=cells,
        tolerances=_tolerances(checked.get("tolerances", {}), {c.dtype for c in cells}),
        warm_repetitions=timing["warm_repetitions"],
        warmup=timing["warmup"],
        remeasure_rounds=timing["remeasure_rounds"],
        timing_scope=scope,
        requirements=list(workload["requirements"]),
        reference_dtype=reference["dtype"],
        float64_golden=reference["float64_golden"],
        padding={k: v for k, v in checked["padding"].items() if k != "proposed"} if "padding" in checked else None,
        compile_options=dict(checked["compile"]),
        inputs=checked.get("inputs", {}),
        training={"steps": training["steps"], "seed": training["seed"], "randomness": training["randomness"]}
        if training
        else None,
        generation=dict(checked["generation"]) if "generation" in checked else None,
        compare=compare,
        intended_target=descriptors.resolve_target(workload["target"]) if workload["target"] else None,
        checked=checked,
        key_lines=planschema.key_lines(text),
        text_sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
        matrix_cells=matrix_cells,
        cap_limit=cap,
    )
    try:  # the plan event must be writable as JSON (finite numbers, plain values)
        json.dumps(plan.event_fields(plan.cells[:1]), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise PlanError(f"{path}: the plan event cannot be written: {exc}") from None
    what = module_missing(plan.module_path) if require_module else None
    if what is not None:
        raise PlanError(
            f"{path}:{planschema.key_lines(text).get('workload.module', '')}: workload.module: {plan.module_path} {what}".replace(
                ":: ", ": "
            )
        )
    return plan


def module_missing(path: Path) -> str | None:
    """Why the workload module is no file to load, in words; None when it is one."""
    try:
        if path.is_file():
            return None
        return (
            "is a folder, not a Python file"
            if path.is_dir()
            else "is not a regular file"
            if path.exists()
            else "does not exist"
        )
    except OSError as exc:  # a name the file system refuses (too long)
        return f"cannot be looked up ({exc.strerror or exc})"


def select_cells(cells: list[Cell], only: list[str], modes: list[str]) -> list[Cell]:
    """Cells chosen by --only globs and --modes (all of them when neither is given)."""
    return [
        c
        for c in cells
        if (not only or any(fnmatch.fnmatch(c.case, p) for p in only)) and (not modes or c.mode in modes)
    ]


def refused_on(plan: WorkloadPlan, target: str) -> str | None:
    """Why the plan's compile options must not run on ``target`` (one line naming the constraint
    and its source), or None. Only plans with compiled cells are concerned."""
    if not any(c.mode == "compiled" for c in plan.cells):
        return None
    try:
        rules = json.loads(TARGET_RULES_PATH.read_text(encoding="utf-8")).get(target) or descriptors.plugin_plan_rules(
            target
        )
    except descriptors.DescriptorError as exc:  # a plugin backend's constraints file: nothing runs unchecked
        return str(exc)
    for rule in rules.get("rules", []):
        table, key = rule["key"].split(".", 1)
        value = plan.checked.get(table, {}).get(key)
        if value in rule["allowed"]:
            continue
        sources = ", ".join(
            f"{name} {rule['source_urls'][name]}" if name in rule["source_urls"] else name
            for name in (n.strip() for n in rule["source"].split(","))
        )
        allowed = " or ".join(json.dumps(v) for v in rule["allowed"])
        line = plan.key_lines.get(rule["key"])
        where = f"{plan.path}:{line}" if line else str(plan.path)
        return (
            f"{where}: {rule['key']} = {json.dumps(value)} is refused on target {target}: {rule['title']} "
            f"(constraint {rule['constraint']} of {rules['release']}, {rules['constraints_file']}; source: {sources}); "
            f"plan {rule['key']} = {allowed}"
        )
    return None
