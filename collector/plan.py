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
        intended_target=intended,
    )
    if plan.warm_repetitions < 1:
        raise PlanError("timing.warm_repetitions: at least 1")
    if require_module and not plan.module_path.is_file():
        raise PlanError(f"workload.module: {plan.module_path} does not exist")
    return plan
