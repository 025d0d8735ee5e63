"""Load a workload plan (TOML) and expand it into the ordered matrix of cells.

A plan is declared before anything runs: shapes, dtypes, layouts, modes, tolerances, warm
repetitions and timing scope. See collector/README.md for the format.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The seed's illustrative FP32 criterion: |out - ref| <= 1e-5 + 1e-4 * |ref|.
DEFAULT_FP32_TOLERANCE = {"atol": 1e-5, "rtol": 1e-4, "source": "collector default (seed FP32 criterion)"}
KNOWN_DTYPES = ("float32", "bfloat16", "float16", "float64")
MODES = ("eager", "compiled")
LAYOUTS = ("contiguous", "noncontiguous")
KNOWN_REQUIREMENTS = ("requires_float64",)
TARGETS = ("cpu", "cuda", "neuron")


class PlanError(ValueError):
    """The plan cannot be run as written; the message says what to change."""


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
    options: dict[str, Any] = field(default_factory=dict)
    training: dict[str, Any] | None = None
    compare: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: {"outputs": [], "params": []})
    # The target the plan is meant to certify ([workload] target); None when the plan does not say.
    intended_target: str | None = None

    @property
    def module_path(self) -> Path:
        return (self.path.parent / self.module).resolve()

    def tolerance_for(self, dtype: str) -> dict[str, Any] | None:
        return self.tolerances.get(dtype)

    def missing_tolerance(self, dtype: str) -> str | None:
        """Why cells of this dtype must not run, or None when their criteria are declared."""
        tol = self.tolerances.get(dtype)
        if tol is None:
            return f"the plan declares no tolerance for {dtype}; declare [tolerances.{dtype}] before running it"
        if self.training and not ("loss" in tol and "grad" in tol):
            return f"a training plan declares loss and grad tolerances per dtype; [tolerances.{dtype}] lacks them"
        if dtype != "float32" and "task" not in tol:
            return f"the plan declares no task criterion for {dtype}; an elementwise tolerance alone does not establish task quality"
        return None


def _require(table: dict[str, Any], key: str, kind: type, where: str) -> Any:
    if key not in table:
        raise PlanError(f"{where}: missing '{key}'")
    value = table[key]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        name = getattr(kind, "__name__", "number")
        raise PlanError(f"{where}.{key}: expected {name}, got {type(value).__name__}")
    return value


def _shapes(table: dict[str, Any], key: str) -> list[tuple[int, int]]:
    shapes = []
    for item in table.get(key, []):
        if not (isinstance(item, list) and len(item) == 2 and all(isinstance(v, int) and v > 0 for v in item)):
            raise PlanError(f"matrix.{key}: each shape is [batch, length] with positive integers, got {item!r}")
        shapes.append((item[0], item[1]))
    return shapes


def _choices(table: dict[str, Any], key: str, allowed: tuple[str, ...], default: list[str]) -> list[str]:
    values = table.get(key, default)
    bad = [v for v in values if v not in allowed]
    if bad:
        raise PlanError(f"matrix.{key}: unknown {bad}; allowed: {', '.join(allowed)}")
    return list(values)


def expand_matrix(matrix: dict[str, Any]) -> list[Cell]:
    """Every shape x layout x dtype x mode, then the cache-check repeats after the largest shape."""
    shapes = _shapes(matrix, "shapes")
    if not shapes:
        raise PlanError("matrix.shapes: at least one [batch, length] is needed")
    dtypes = _choices(matrix, "dtypes", KNOWN_DTYPES, ["float32"])
    layouts = _choices(matrix, "layouts", LAYOUTS, ["contiguous"])
    modes = _choices(matrix, "modes", MODES, list(MODES))
    repeats = _shapes(matrix, "cache_checks")
    for b, l in repeats:
        if (b, l) not in shapes:
            raise PlanError(f"matrix.cache_checks: {[b, l]} is not one of matrix.shapes")
    cells = []
    # Each (dtype, layout) group runs its shapes in order, then repeats the cache-check shapes
    # after the largest, so the repeat shows whether the same process compiled again.
    for dt in dtypes:
        for lay in layouts:
            cells += [Cell(b, l, lay, dt, m) for b, l in shapes for m in modes]
            if "compiled" in modes:
                for b, l in repeats:
                    original = Cell(b, l, lay, dt, "compiled")
                    cells.append(Cell(b, l, lay, dt, "compiled", repeat_of=original.case))
    return cells


def _tolerances(raw: dict[str, Any], dtypes: set[str]) -> dict[str, dict[str, Any]]:
    tolerances: dict[str, dict[str, Any]] = {}
    for dtype, table in raw.items():
        if dtype not in KNOWN_DTYPES:
            raise PlanError(f"tolerances.{dtype}: unknown dtype; allowed: {', '.join(KNOWN_DTYPES)}")
        tol = {
            "atol": float(_require(table, "atol", (int, float), f"tolerances.{dtype}")),  # type: ignore[arg-type]
            "rtol": float(_require(table, "rtol", (int, float), f"tolerances.{dtype}")),  # type: ignore[arg-type]
            "source": "plan",
        }
        if "task" in table:
            task = table["task"]
            if task.get("op") not in (">=", "<="):
                raise PlanError(f"tolerances.{dtype}.task.op: '>=' or '<='")
            tol["task"] = {"metric": str(task["metric"]), "op": task["op"], "threshold": float(task["threshold"])}
        for part in ("loss", "grad"):
            if part in table:
                sub = table[part]
                where = f"tolerances.{dtype}.{part}"
                tol[part] = {"atol": float(_require(sub, "atol", (int, float), where)), "rtol": float(_require(sub, "rtol", (int, float), where))}
        tolerances[dtype] = tol
    if "float32" in dtypes and "float32" not in tolerances:
        tolerances["float32"] = dict(DEFAULT_FP32_TOLERANCE)
    return tolerances


def _training(table: dict[str, Any] | None) -> dict[str, Any] | None:
    if table is None:
        return None
    steps = _require(table, "steps", int, "training")
    if steps < 1:
        raise PlanError("training.steps: at least 1")
    randomness = _require(table, "randomness", str, "training")
    return {"steps": steps, "seed": int(table.get("seed", 0)), "randomness": randomness}


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
        if "region" in rule and not (isinstance(rule["region"], list) and rule["region"] and all(isinstance(v, str) for v in rule["region"])):
            raise PlanError(f"{where}.region: expected a list of index slices as strings, e.g. [\":\", \"0:64\"]")
        entry = {"output": name, "mask": rule.get("mask"), "region": rule.get("region")}
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
            raise PlanError(f"{where}.match: expected glob patterns over parameter names, e.g. [\"*.qkv.bias\"]")
        kind = rule.get("rule")
        if kind not in PARAM_RULES:
            raise PlanError(f"{where}.rule: one of {', '.join(PARAM_RULES)}")
        entry: dict[str, Any] = {"group": group, "match": match, "rule": kind, "zero_below": 0.0}
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
            raise PlanError(f"{where}: k and zero_below only go with rule = \"lr-bound\"")
        rules["params"].append(entry)
    return rules


def load_plan(path: str | Path, require_module: bool = True) -> WorkloadPlan:
    """Parse and check a plan; ``require_module=False`` reviews a plan whose code is not here yet."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise PlanError(f"{path}: not valid TOML: {exc}") from None
    except OSError as exc:
        raise PlanError(f"{path}: cannot read: {exc.strerror}") from None
    workload = _require(data, "workload", dict, "plan")
    cells = expand_matrix(_require(data, "matrix", dict, "plan"))
    timing = data.get("timing", {})
    reference = data.get("reference", {})
    requirements = list(workload.get("requirements", []))
    unknown = [r for r in requirements if r not in KNOWN_REQUIREMENTS]
    if unknown:
        raise PlanError(f"workload.requirements: unknown {unknown}; known: {', '.join(KNOWN_REQUIREMENTS)}")
    scope = {
        "preprocessing": bool(timing.get("scope", {}).get("preprocessing", False)),
        "host_to_device": bool(timing.get("scope", {}).get("host_to_device", False)),
        "output_retrieval": bool(timing.get("scope", {}).get("output_retrieval", False)),
        "synchronized": True,
        "note": str(timing.get("scope", {}).get("note", "")),
    }
    intended = workload.get("target")
    if intended is not None and intended not in TARGETS:
        raise PlanError(f"workload.target: expected one of {', '.join(TARGETS)}, got {intended!r}")
    plan = WorkloadPlan(
        path=path.resolve(),
        name=_require(workload, "name", str, "workload"),
        module=_require(workload, "module", str, "workload"),
        description=str(workload.get("description", "")),
        cells=cells,
        tolerances=_tolerances(data.get("tolerances", {}), {c.dtype for c in cells}),
        warm_repetitions=int(timing.get("warm_repetitions", 30)),
        warmup=int(timing.get("warmup", 3)),
        timing_scope=scope,
        requirements=requirements,
        reference_dtype=str(reference.get("dtype", "float32")),
        float64_golden=bool(reference.get("float64_golden", False)),
        padding=data.get("padding"),
        options=dict(data.get("options", {})),
        training=_training(data.get("training")),
        compare=compare_rules(data.get("compare"), training=data.get("training") is not None),
        intended_target=intended,
    )
    if plan.warm_repetitions < 1:
        raise PlanError("timing.warm_repetitions: at least 1")
    if require_module and not plan.module_path.is_file():
        raise PlanError(f"workload.module: {plan.module_path} does not exist")
    return plan
