"""Where in the model a cell's outputs part from the reference: one ``localization`` event.

The same inputs go through the CPU reference and the cell's candidate with a hook on every
named submodule down to the plan's ``[localize] max_depth``. Each module's output is compared
with the reference module's output by the collector's one comparison (``collector.compare``),
judged with the cell's own tolerance, in two views:

* accumulated: each side runs end to end, so a module's figure holds the error it inherited;
* local: the candidate module alone is fed the reference module's inputs, so its figure is its
  own error only.

In a compiled cell the accumulated view runs the whole model through the backend's compile
with the hooks inside the graph, and the local view compiles each module alone; a module that
cannot be compiled alone is said to be so and gets no local figure. Modules are taken in the
reference's execution order up to ``max_modules``, and captured tensors up to ``max_bytes``;
the modules left out are listed with the reason.
"""

from __future__ import annotations

import copy
import math
from typing import Any, Callable, Sequence

import torch
from torch.utils._pytree import tree_map_only

from collector import interrupt
from collector.eventlog import message_of
from collector.backends import OpRecorder
from collector.compare import compare
from collector.plan import Cell
from collector.planschema import module_depth
from collector.run.state import Run
from collector.workload import DTYPES, cast_inputs, input_key, to_device

SKIPPED_LISTED = 200  # skipped modules named one by one in the event; the rest are counted
MESSAGE_CHARS = 300


def wanted(run: Run, cell: Cell, status: str) -> str | None:
    """Why this cell is localised (``mismatch``, ``nonfinite`` or ``plan``), or None."""
    if run.plan.training or status in ("error", "skipped"):
        return None
    if status in ("mismatch", "nonfinite"):
        return status
    return "plan" if run.plan.localize["always"] else None


def flat_tensors(value: Any, prefix: str = "") -> dict[str, torch.Tensor]:
    """A module's output as named tensors: a tensor is ``out``; tuples, lists and mappings
    (a ModelOutput is one) name their members by index or key; anything else is left out."""
    if isinstance(value, torch.Tensor):
        return {prefix or "out": value}
    found: dict[str, torch.Tensor] = {}
    if isinstance(value, dict):
        items = [(str(k), v) for k, v in value.items()]
    elif isinstance(value, (tuple, list)):
        items = [(str(i), v) for i, v in enumerate(value)]
    else:
        return found
    for name, item in items:
        found.update(flat_tensors(item, f"{prefix}.{name}" if prefix else name))
    return found


def _nbytes(value: Any) -> int:
    total = 0

    def count(t: torch.Tensor) -> torch.Tensor:
        nonlocal total
        total += t.numel() * t.element_size()
        return t

    tree_map_only(torch.Tensor, count, value)
    return total


def _clone(value: Any) -> Any:
    # Cloned: a later in-place op (ReLU(inplace=True), a cache update) must not change what was captured.
    return tree_map_only(torch.Tensor, lambda t: t.detach().clone(), value)


def _short(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {message_of(exc, MESSAGE_CHARS)}".replace("\n", " ")
    return text[:MESSAGE_CHARS]


class Capture:
    """Hooks on the chosen submodules of one model: each module's first call (inputs when asked,
    output always), its call count and the order of first calls."""

    def __init__(
        self,
        model: torch.nn.Module,
        names: list[str],
        keep_inputs: bool,
        max_bytes: int,
        counted: Sequence[str] = (),
    ) -> None:
        """``counted``: more modules whose calls are only counted (nothing kept)."""
        self.inputs: dict[str, tuple[Any, Any]] = {}
        self.outputs: dict[str, Any] = {}
        self.calls: dict[str, int] = {}
        self.order: list[str] = []
        self.over_budget: list[str] = []
        self.bytes = 0
        self.max_bytes = max_bytes
        self.handles: list[Any] = []
        modules = dict(model.named_modules())
        for name in names:
            module = modules[name]
            self.handles.append(module.register_forward_pre_hook(self._before(name, keep_inputs), with_kwargs=True))
            self.handles.append(module.register_forward_hook(self._after(name)))
        for name in counted:
            self.handles.append(modules[name].register_forward_pre_hook(self._count(name)))

    def _count(self, name: str) -> Callable[..., None]:
        def hook(module: Any, args: Any) -> None:
            self.calls[name] = self.calls.get(name, 0) + 1

        return hook

    def _before(self, name: str, keep_inputs: bool) -> Callable[..., None]:
        def hook(module: Any, args: Any, kwargs: Any) -> None:
            self.calls[name] = self.calls.get(name, 0) + 1
            if self.calls[name] > 1:
                return
            self.order.append(name)
            if keep_inputs:
                size = _nbytes((args, kwargs))
                if self.bytes + size > self.max_bytes:
                    self.over_budget.append(name)
                    return
                self.bytes += size
                self.inputs[name] = _clone((args, kwargs))

        return hook

    def _after(self, name: str) -> Callable[..., None]:
        def hook(module: Any, args: Any, output: Any) -> None:
            if name in self.outputs or name in self.over_budget or self.calls.get(name, 0) > 1:
                return
            size = _nbytes(output)
            if self.bytes + size > self.max_bytes:
                self.over_budget.append(name)
                self.inputs.pop(name, None)
                return
            self.bytes += size
            self.outputs[name] = _clone(output)

        return hook

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()
        self.handles.clear()


# A skipped module's reason where the candidate called it and the reference never did.
CANDIDATE_ONLY = "called by the candidate, not by the reference"


def candidates(model: torch.nn.Module, max_depth: int) -> tuple[list[str], list[dict[str, str]]]:
    """Named submodules down to ``max_depth`` (the model itself is the cell's own comparison),
    and the deeper ones, skipped."""
    chosen, deeper = [], 0
    for name, _ in model.named_modules():
        if not name:
            continue
        if module_depth(name) <= max_depth:
            chosen.append(name)
        else:
            deeper += 1
    skipped = [{"name": f"{deeper} module(s) below depth {max_depth}", "reason": "max_depth"}] if deeper else []
    return chosen, skipped


def _stats(out: Any, ref: Any, atol: float, rtol: float) -> tuple[dict[str, Any] | None, str | None]:
    ref_flat, out_flat = flat_tensors(ref), flat_tensors(out)
    if not ref_flat:
        return None, "its output holds no tensor"
    try:
        stats = compare(out_flat, ref_flat, atol, rtol)
    except ValueError as exc:
        return None, f"not comparable with the reference module's output: {_short(exc)}"
    # An infinite reference value there: no allowance to judge against (compare gives it as null).
    if stats["allowed_at_worst"] is None or not math.isfinite(stats["allowed_at_worst"]):
        return None, "the reference module's output is not finite at its worst element: not judged"
    return stats, None


def _to_candidate(value: Any, dtype: torch.dtype, device: torch.device) -> Any:
    """Reference inputs as the candidate takes them: floating tensors in the cell's dtype, on its
    device, always copies (a module that changes its input in place, such as ``x.mul_(gamma)``,
    leaves the captured inputs as they were for its next call)."""
    return tree_map_only(
        torch.Tensor,
        lambda t: t.to(device=device, dtype=dtype if t.is_floating_point() else t.dtype, copy=True),
        value,
    )


def localize(run: Run, cell: Cell, model: torch.nn.Module, reason: str) -> None:
    """Localise one cell and write its ``localization`` event; a failure is written in it, never raised."""
    bounds = run.plan.localize
    tol = run.plan.tolerance_for(cell.dtype) or {"atol": 0.0, "rtol": 0.0}
    fields: dict[str, Any] = {
        "case": cell.case,
        "reason": reason,
        "mode": cell.mode,
        "atol": tol["atol"],
        "rtol": tol["rtol"],
        "max_depth": bounds["max_depth"],
        "max_modules": bounds["max_modules"],
        "max_bytes": bounds["max_bytes"],
    }
    run.progress.say(f"{cell.case}: localising ({reason}): submodules down to depth {bounds['max_depth']}")
    try:
        fields.update(_measure(run, cell, model, bounds, tol["atol"], tol["rtol"]))
    except interrupt.ENDS_RUN:
        raise
    except BaseException as exc:  # the cell's own result stands; localisation says why it has none
        interrupt.check()
        fields.update({"modules": [], "failure": _short(exc)})
    run.log.write("localization", **fields)


def _measure(
    run: Run, cell: Cell, model: torch.nn.Module, bounds: dict[str, Any], atol: float, rtol: float
) -> dict[str, Any]:
    key = input_key(cell.batch, cell.length, cell.layout)
    ref_dtype = DTYPES[run.plan.reference_dtype]
    cell_dtype = DTYPES[cell.dtype]
    device = run.backend.device
    reference = copy.deepcopy(run.model).to("cpu", ref_dtype)
    names, skipped = candidates(reference, bounds["max_depth"])
    # The reference end to end, keeping every chosen module's inputs and output.
    ref_capture = Capture(reference, names, True, bounds["max_bytes"])
    try:
        with torch.no_grad():
            run.workload.run_model(reference, cast_inputs(run.inputs[key], ref_dtype))
    finally:
        ref_capture.remove()
    order = ref_capture.order
    uncalled = [n for n in names if n not in ref_capture.calls]
    chosen = order[: bounds["max_modules"]]
    bounded = [{"name": n, "reason": "max_modules"} for n in order[bounds["max_modules"] :]]
    bounded += [{"name": n, "reason": "max_bytes"} for n in ref_capture.over_budget if n in chosen]
    chosen = [n for n in chosen if n in ref_capture.outputs]

    # The candidate end to end (compiled as the cell is), hooks on the same modules.
    candidate = copy.deepcopy(model)
    feed = to_device(cast_inputs(run.inputs[key], cell_dtype), device)
    # The modules the reference never called are counted on the candidate: one it calls took
    # another code path there (a device-dependent branch), which is where the outputs may part.
    cand_capture = Capture(candidate, chosen, False, bounds["max_bytes"], counted=uncalled)
    accumulated_note = None
    try:
        with torch.no_grad(), _recompile_room(bounds["max_modules"]):
            if cell.mode == "compiled":
                # A function of its own, so Dynamo traces it afresh with the hooks inside: a
                # compiled module's cached graph from before the hooks could be reused without
                # them. The cell's own graphs stay cached (profiles and later cells reuse them).
                whole = run.backend.compile(
                    lambda inputs: run.workload.run_model(candidate, inputs), run.plan.compile_options
                )
                whole(feed)
            else:
                run.workload.run_model(candidate, feed)
            run.backend.synchronize()
    except interrupt.ENDS_RUN:
        raise
    except BaseException as exc:
        interrupt.check()
        accumulated_note = f"the candidate did not run end to end with the hooks: {_short(exc)}"
    finally:
        cand_capture.remove()
    skipped += [
        {"name": n, "reason": CANDIDATE_ONLY if n in cand_capture.calls else "not called by the reference"}
        for n in uncalled
    ]
    skipped += bounded
    missed = [n for n in chosen if n not in cand_capture.calls]
    if accumulated_note is None and missed:
        accumulated_note = (
            f"{len(missed)} module(s) were not seen called on the candidate end to end: {', '.join(missed[:8])}"
        )
    if accumulated_note is None and cand_capture.over_budget:
        accumulated_note = f"{len(cand_capture.over_budget)} module output(s) past max_bytes on the candidate side"

    modules_by_name = dict(candidate.named_modules())
    rows = []
    limit = _recompile_room(len(chosen))
    with limit:
        for position, name in enumerate(chosen):
            interrupt.check()
            rows.append(
                _one_module(
                    run,
                    cell,
                    name,
                    modules_by_name[name],
                    position,
                    ref_capture,
                    cand_capture,
                    cell_dtype,
                    device,
                    atol,
                    rtol,
                )
            )
    listed = skipped[:SKIPPED_LISTED]
    return {
        "modules": rows,
        "skipped": listed,
        "skipped_more": len(skipped) - len(listed),
        "bytes_held": ref_capture.bytes + cand_capture.bytes,
        "accumulated_note": accumulated_note,
        "operators_from": "an eager call of each module on the target, fed the reference module's inputs"
        + (" (the compiled graph's own kernels are not listed per module)" if cell.mode == "compiled" else ""),
    }


def _recompile_room(count: int) -> Any:
    """Each module compiled alone is one more compile of a shared forward: room for all of them,
    so none falls back to eager at the recompile limit without saying so."""
    config = torch._dynamo.config
    name = "recompile_limit" if hasattr(config, "recompile_limit") else "cache_size_limit"
    return config.patch({name: max(int(getattr(config, name)), count + 8)})


def _one_module(
    run: Run,
    cell: Cell,
    name: str,
    module: torch.nn.Module,
    position: int,
    ref: Capture,
    cand: Capture,
    dtype: torch.dtype,
    device: torch.device,
    atol: float,
    rtol: float,
) -> dict[str, Any]:
    row: dict[str, Any] = {
        "name": name,
        "type": type(module).__name__,
        "depth": module_depth(name),
        "order": position,
        "calls": ref.calls.get(name, 0),
    }
    notes = []
    expected = ref.outputs[name]
    if name in cand.outputs:
        row["accumulated"], note = _stats(cand.outputs[name], expected, atol, rtol)
        if note:
            notes.append(f"accumulated: {note}")
    if name not in ref.inputs:
        notes.append("local: its inputs were not kept (max_bytes)")
        row["note"] = "; ".join(notes)
        return row
    args, kwargs = _to_candidate(ref.inputs[name], dtype, device)  # a copy for each call
    recorder = OpRecorder()
    try:
        with torch.no_grad(), recorder:
            module(*args, **kwargs)
        row["operators"] = sorted(recorder.ops)
    except interrupt.ENDS_RUN:
        raise
    except BaseException as exc:
        interrupt.check()
        notes.append(f"operators not recorded: {_short(exc)}")
    runner: Any = module
    if cell.mode == "compiled":
        try:
            runner = run.backend.compile(module, run.plan.compile_options)
        except interrupt.ENDS_RUN:
            raise
        except BaseException as exc:
            interrupt.check()
            runner = None
            notes.append(f"local: could not be compiled alone: {_short(exc)}")
    if runner is not None:
        args, kwargs = _to_candidate(ref.inputs[name], dtype, device)
        try:
            with torch.no_grad():
                out = runner(*args, **kwargs)
                run.backend.synchronize()
            row["local"], note = _stats(out, expected, atol, rtol)
            row["local_compiled"] = cell.mode == "compiled"
            if note:
                notes.append(f"local: {note}")
        except interrupt.ENDS_RUN:
            raise
        except BaseException as exc:
            interrupt.check()
            what = (
                "could not be compiled alone or run so"
                if cell.mode == "compiled"
                else "did not run on the reference inputs"
            )
            notes.append(f"local: {what}: {_short(exc)}")
    if notes:
        row["note"] = "; ".join(notes)
    return row
