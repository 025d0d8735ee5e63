"""Run one workload plan on one target and write the run directory.

Order of a run, each step an event in ``events.jsonl``:

1. ``run_start``, ``environment``, then the ``plan`` with tolerances, before any result;
2. ``artifact``: weights, inputs and reference outputs saved with sha256, so every mode is fed
   the same values;
3. ``reference`` per shape: CPU eager run twice (its noise floor), optionally a float64 golden;
4. per cell: ``compile`` (compiled cells), ``case_result``, ``operators``, and for a cell whose
   correctness passed, ``timing`` with the warm repetitions;
5. ``timing`` with the cold first call of each passing cell, in a fresh process with an empty
   compile cache; ``profile`` per shape when asked;
6. ``run_end``. SIGINT or SIGTERM writes an aborted ``run_end`` instead.

A failing cell never stops the matrix.
"""

from __future__ import annotations

import contextlib
import copy
import fnmatch
import logging
import math
import os
import shutil
import signal
import sys
import tempfile
import time
import uuid
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any, Callable, Iterator

import torch

from collector import __version__
from collector.backends import Backend, OpRecorder
from collector.compare import compare, describe, describe_input, max_abs_between
from collector.environment import read_environment
from collector.eventlog import EventLog, finite_or_none, utc_now
from collector import training
from collector.plan import Cell, WorkloadPlan
from collector.timing import run_cold, time_warm, warm_stats
from collector.workload import (
    DTYPES,
    cast_inputs,
    input_key,
    load_workload,
    save_artifact,
    sha256_file,
    to_device,
)

EXIT_ABORTED = {signal.SIGINT: 130, signal.SIGTERM: 143}


class Aborted(Exception):
    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@dataclass
class Options:
    target: str = "auto"
    out_dir: Path = Path("runs")
    only: list[str] = field(default_factory=list)
    modes: list[str] = field(default_factory=list)
    cold: str = "fresh-process"
    warm_repetitions: int | None = None
    profile: str | None = None
    cold_timeout: float = 1800.0
    command: list[str] = field(default_factory=list)


class Progress:
    """One line per step on stderr: cell i of N, elapsed time, what is happening."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.start = time.monotonic()

    def say(self, message: str, index: int | None = None) -> None:
        where = f"[{index}/{self.total}] " if index is not None else ""
        print(f"collector {time.monotonic() - self.start:7.1f}s {where}{message}", file=sys.stderr, flush=True)


class _LogCollector(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(f"{record.name}: {record.getMessage()}")


@contextlib.contextmanager
def captured_warnings() -> Iterator[list[str]]:
    """Python warnings and torch's logged warnings raised inside the block, in order."""
    found: list[str] = []
    handler = _LogCollector()
    torch_logger = logging.getLogger("torch")
    torch_logger.addHandler(handler)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield found
    finally:
        torch_logger.removeHandler(handler)
        found.extend(f"{w.category.__name__}: {w.message}" for w in caught)
        found.extend(handler.messages)


def failure_phase(exc: BaseException, compiling: bool) -> str:
    module = type(exc).__module__ or ""
    if compiling and (module.startswith(("torch._dynamo", "torch._inductor")) or "ompil" in type(exc).__name__):
        return "compile"
    return "run"


def failure(phase: str, exc: BaseException) -> dict[str, str]:
    return {"phase": phase, "type": type(exc).__name__, "message": str(exc)[:4000]}


@dataclass
class CellOutcome:
    status: str
    first_call_s: float | None = None
    call: Callable[[], Any] | None = None


class Run:
    """State shared by the steps of one run."""

    def __init__(self, plan: WorkloadPlan, backend: Backend, options: Options) -> None:
        self.plan = plan
        self.backend = backend
        self.options = options
        self.cells = [c for c in plan.cells if self._selected(c)]
        self.run_id = f"{plan.name}-{backend.name}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{uuid.uuid4().hex[:6]}"
        self.dir = options.out_dir / self.run_id
        self.progress = Progress(len(self.cells))
        self.workload: ModuleType | None = None
        self.model: torch.nn.Module | None = None
        self.inputs: dict[str, dict[str, torch.Tensor]] = {}
        self.references: dict[str, dict[str, torch.Tensor]] = {}
        self.train_refs: dict[str, training.TrainTrace] = {}
        self.passed: dict[str, CellOutcome] = {}
        self.recorded = 0
        self.cache_dir = Path(tempfile.mkdtemp(prefix="collector-cache-"))
        self.log: EventLog | None = None

    def _selected(self, cell: Cell) -> bool:
        """Cells chosen by --only globs and --modes (all of them when neither is given)."""
        by_glob = not self.options.only or any(fnmatch.fnmatch(cell.case, p) for p in self.options.only)
        return by_glob and (not self.options.modes or cell.mode in self.options.modes)

    @property
    def warm_repetitions(self) -> int:
        return self.options.warm_repetitions or self.plan.warm_repetitions

    # --- steps ----------------------------------------------------------------------------

    def start(self) -> None:
        (self.dir / "artifacts").mkdir(parents=True)
        (self.dir / "traces").mkdir()
        self.log = EventLog(self.dir / "events.jsonl")
        self.log.write(
            "run_start",
            run_id=self.run_id,
            collector=f"collector {__version__}",
            workload=self.plan.name,
            target=self.backend.name,
            command=self.options.command,
            started_at=utc_now(),
            origin="measured",
        )
        self.log.write("environment", **read_environment(torch, self.backend.name, getattr(torch, "neuron", None)))
        # Compiles in this process write to a cache dir the collector made empty.
        os.environ.update(self.backend.cache_env(self.cache_dir))

    def write_plan(self) -> None:
        self.workload = load_workload(self.plan)
        self.model = self.workload.build_model().eval()
        weights_path, size, digest = self._record_weights()
        plan = self.plan
        self.log.write(
            "plan",
            workload=plan.name,
            description=plan.description,
            model_revision=getattr(self.workload, "MODEL_REVISION", "not stated by the workload"),
            weights_sha256=digest,
            target=self.backend.name,
            intended_target=plan.intended_target,
            matrix=[
                {"case": c.case, "batch": c.batch, "length": c.length, "layout": c.layout, "dtype": c.dtype, "mode": c.mode, "repeat_of": c.repeat_of}
                for c in self.cells
            ],
            reference=f"cpu eager {plan.reference_dtype}, run twice" + (", float64 golden" if plan.float64_golden else ""),
            tolerances=plan.tolerances,
            warm_repetitions=self.warm_repetitions,
            timing_scope=plan.timing_scope,
            requirements=plan.requirements,
            padding=plan.padding,
            attention_path=getattr(self.workload, "ATTENTION_PATH", None),
            training=self._training_plan(),
        )
        self.log.write("artifact", role="weights", path=weights_path, bytes=size, sha256=digest)

    def _training_plan(self) -> dict[str, Any] | None:
        if not self.plan.training:
            return None
        return {**self.plan.training, "optimizer": getattr(self.workload, "OPTIMIZER", "as built by make_optimizer")}

    def _record_weights(self) -> tuple[str, int, str]:
        """Weights shipped as a file (a packaged model) are checksummed where they lie, not copied."""
        shipped = getattr(self.workload, "weights_file", None)
        if shipped is not None:
            path = Path(shipped())
            return f"external:{path}", path.stat().st_size, sha256_file(path)
        size, digest = save_artifact(self.model.state_dict(), self.dir / "artifacts" / "weights.pt")
        return "artifacts/weights.pt", size, digest

    def write_references(self) -> None:
        ref_dtype = DTYPES[self.plan.reference_dtype]
        ref_model = copy.deepcopy(self.model).to("cpu", ref_dtype)
        golden = copy.deepcopy(self.model).to("cpu", torch.float64) if self.plan.float64_golden and not self.plan.training else None
        for cell in self.cells:
            key = input_key(cell.batch, cell.length, cell.layout)
            if key in self.inputs:
                continue
            self.inputs[key] = self.workload.make_inputs(cell.batch, cell.length, cell.layout)
            self.references[key] = self._reference_outputs(key, ref_model, ref_dtype, golden)
        for role, obj, name in (("inputs", self.inputs, "inputs.pt"), ("reference_output", self.references, "reference.pt")):
            size, digest = save_artifact(obj, self.dir / "artifacts" / name)
            self.log.write("artifact", role=role, path=f"artifacts/{name}", bytes=size, sha256=digest)

    def _reference_outputs(self, key: str, model: torch.nn.Module, dtype: torch.dtype, golden: torch.nn.Module | None) -> dict[str, torch.Tensor]:
        if self.plan.training:
            return self._reference_training(key, model, dtype)
        inputs = cast_inputs(self.inputs[key], dtype)
        with torch.no_grad():
            first = self.workload.run_model(model, inputs)
            second = self.workload.run_model(model, inputs)
            noise = max_abs_between(first, second)
            gold = None
            if golden is not None:
                gold = max_abs_between(first, self.workload.run_model(golden, cast_inputs(self.inputs[key], torch.float64)))
        self.log.write(
            "reference",
            shape=key,
            device="cpu",
            dtype=str(dtype).removeprefix("torch."),
            runs=2,
            noise_max_abs=noise,
            deterministic=noise == 0.0,
            float64_max_abs=gold,
        )
        return {k: v.detach() for k, v in first.items()}

    def _reference_training(self, key: str, model: torch.nn.Module, dtype: torch.dtype) -> dict[str, torch.Tensor]:
        inputs = cast_inputs(self.inputs[key], dtype)
        steps, seed = self.plan.training["steps"], self.plan.training["seed"]
        runs = []
        for _ in range(2):
            copy_ = training.prepare(self.workload, model)
            trace, _step = training.train(self.workload, copy_, copy_, inputs, steps, seed, lambda: None)
            runs.append(trace)
        first, second = runs
        noise = max_abs_between({**{f"grad{i}.{n}": g for i, gs in enumerate(first.grads) for n, g in gs.items()}, **{f"param.{n}": p for n, p in first.params.items()}},
                                {**{f"grad{i}.{n}": g for i, gs in enumerate(second.grads) for n, g in gs.items()}, **{f"param.{n}": p for n, p in second.params.items()}})
        loss_noise = max(abs(a - b) for a, b in zip(first.losses, second.losses))
        noise = None if noise is None else max(noise, loss_noise)
        self.log.write("reference", shape=key, device="cpu", dtype=str(dtype).removeprefix("torch."), runs=2, noise_max_abs=noise, deterministic=noise == 0.0)
        self.train_refs[key] = first
        return {"loss": torch.tensor(first.losses, dtype=torch.float64)}

    def run_cells(self) -> None:
        groups: dict[tuple[str, str], list[tuple[int, Cell]]] = {}
        for index, cell in enumerate(self.cells, start=1):
            groups.setdefault((cell.dtype, cell.layout), []).append((index, cell))
        for (dtype, layout), members in groups.items():
            # A fresh Dynamo state per group keeps one group's compiled shapes from counting
            # against another's recompile limit; within a group, shapes accumulate as they
            # would in a serving process, which is what the cache-check repeat tests.
            torch._dynamo.reset()
            reason = self.plan.missing_tolerance(dtype)
            model = None if reason else self._device_model(dtype)
            compiled, compile_error = None, None
            # Training cells compile their own fresh model each (training changes the weights).
            if model is not None and not self.plan.training and any(c.mode == "compiled" for _, c in members):
                try:
                    compiled = torch.compile(model, backend=self.backend.compile_backend, dynamic=False)
                except Exception as exc:  # e.g. the backend is not registered
                    compile_error = failure("compile", exc)
            for index, cell in members:
                if reason or model is None:
                    self._skip(cell, index, reason or "the model could not be moved to the device")
                    continue
                if cell.mode == "compiled" and compile_error is not None:
                    self._write_failed(cell, {}, compile_error, None)
                    self.recorded += 1
                    continue
                self.progress.say(f"{cell.case}: {'compiling and ' if cell.mode == 'compiled' else ''}checking", index)
                if self.plan.training:
                    outcome = self._run_training_cell(cell, model)
                else:
                    outcome = self._run_cell(cell, model if cell.mode == "eager" else compiled)
                self.recorded += 1
                if outcome.status == "pass" and outcome.call is not None:
                    self.passed[cell.case] = outcome
                    self._time_warm(cell, outcome)

    def _device_model(self, dtype: str) -> torch.nn.Module | None:
        try:
            return copy.deepcopy(self.model).to(device=self.backend.device, dtype=DTYPES[dtype])
        except Exception as exc:  # recorded per cell as a skip with the reason
            self.progress.say(f"model could not be moved to {self.backend.device} as {dtype}: {exc}")
            return None

    def _skip(self, cell: Cell, index: int, reason: str) -> None:
        self.progress.say(f"{cell.case}: skipped: {reason}", index)
        self.log.write("case_result", case=cell.case, status="skipped", skip_reason=reason)
        self.recorded += 1

    def _run_cell(self, cell: Cell, model: torch.nn.Module) -> CellOutcome:
        key = input_key(cell.batch, cell.length, cell.layout)
        cpu_inputs = cast_inputs(self.inputs[key], DTYPES[cell.dtype])
        self.backend.begin_cell()
        result: dict[str, Any] = {"inputs": [describe_input(k, v) for k, v in cpu_inputs.items()]}
        try:
            inputs = to_device(cpu_inputs, self.backend.device)
        except Exception as exc:
            self._write_failed(cell, result, failure("transfer", exc), None)
            return CellOutcome("error")

        def call() -> Any:
            with torch.no_grad():
                return self.workload.run_model(model, inputs)

        recorder = OpRecorder() if cell.mode == "eager" else None
        compile_facts = _CompileWatch(self.backend) if cell.mode == "compiled" else None
        with captured_warnings() as warns:
            try:
                outputs, first_s = self._first_call(call, recorder, compile_facts)
                if compile_facts is not None:
                    compile_facts.check_repeat(call, self.backend.synchronize)
            except Exception as exc:
                phase = failure_phase(exc, compile_facts is not None)
                result["warnings"] = warns
                self._write_failed(cell, result, failure(phase, exc), compile_facts)
                return CellOutcome("error")
        result["warnings"] = warns
        if compile_facts is not None:
            self.log.write("compile", case=cell.case, **compile_facts.event(first_s, self.cache_dir))
            if cell.repeat_of:
                result["recompiled"] = compile_facts.graphs_first > 0 or compile_facts.frames_first > 0
        status = self._judge(cell, key, outputs, result)
        self.log.write("case_result", case=cell.case, status=status, **result)
        self._write_operators(cell, recorder)
        return CellOutcome(status, first_s, call)

    def _run_training_cell(self, cell: Cell, device_model: torch.nn.Module) -> CellOutcome:
        key = input_key(cell.batch, cell.length, cell.layout)
        cpu_inputs = cast_inputs(self.inputs[key], DTYPES[cell.dtype])
        self.backend.begin_cell()
        result: dict[str, Any] = {"inputs": [describe_input(k, v) for k, v in cpu_inputs.items()]}
        tol = self.plan.tolerance_for(cell.dtype)
        ref = self.train_refs[key]
        compiling = cell.mode == "compiled"
        with captured_warnings() as warns:
            try:
                inputs = to_device(cpu_inputs, self.backend.device)
                model = training.prepare(self.workload, device_model)
                call_model = torch.compile(model, backend=self.backend.compile_backend, dynamic=False) if compiling else model
                watch = _CompileWatch(self.backend) if compiling else None
                if watch is not None:
                    watch.before()
                recorder = OpRecorder() if not compiling else None
                with recorder if recorder is not None else contextlib.nullcontext():
                    trace, step = training.train(self.workload, model, call_model, inputs, self.plan.training["steps"], self.plan.training["seed"], self.backend.synchronize)
                if watch is not None:
                    watch.after_first()
            except Exception as exc:
                result["warnings"] = warns
                self._write_failed(cell, result, failure(failure_phase(exc, compiling), exc), None)
                return CellOutcome("error")
        result["warnings"] = warns
        if watch is not None:
            base = watch.event(trace.first_forward_s, self.cache_dir)
            self.log.write("compile", case=cell.case, graph="forward", **base)
            self.log.write("compile", case=cell.case, graph="backward", **{**base, "compile_first_result_s": trace.first_backward_s, "graphs": None, "graph_breaks": [], "cache_hits": None, "cache_misses": None})
        status = self._judge_training(cell, trace, ref, tol, result)
        self.log.write("case_result", case=cell.case, status=status, **result)
        self._write_operators(cell, recorder)
        return CellOutcome(status, trace.first_step_s, step)

    def _judge_training(self, cell: Cell, trace: training.TrainTrace, ref: training.TrainTrace, tol: dict[str, Any], result: dict[str, Any]) -> str:
        loss_tol, grad_tol = tol["loss"], tol["grad"]
        all_within = True
        grads_ok = True
        for index, (loss, ref_loss) in enumerate(zip(trace.losses, ref.losses)):
            within = training.loss_within(loss, ref_loss, loss_tol["atol"], loss_tol["rtol"])
            rows = training.compare_tensors(trace.grads[index], ref.grads[index], grad_tol["atol"], grad_tol["rtol"])
            all_within &= within
            grads_ok &= all(r["mismatched"] == 0 for r in rows)
            self.log.write("train_step", case=cell.case, step=index, loss=finite_or_none(loss), reference_loss=finite_or_none(ref_loss), loss_within=within, grads=rows)
        params = training.compare_tensors(trace.params, ref.params, grad_tol["atol"], grad_tol["rtol"])
        self.log.write("train_result", case=cell.case, params=params)
        final = torch.tensor(trace.losses, dtype=torch.float64)
        result["outputs"] = [describe("loss_per_step", final)]
        result["error_stats"] = compare({"loss_per_step": final}, {"loss_per_step": torch.tensor(ref.losses, dtype=torch.float64)}, loss_tol["atol"], loss_tol["rtol"])
        worst = max((abs(a - b) / abs(b) if b else abs(a - b)) for a, b in zip(trace.losses, ref.losses))
        result["task_metric"] = {"name": "max_loss_rel_diff", "value": finite_or_none(worst), "criterion": None, "passed": all_within}
        if any(not math.isfinite(x) for x in trace.losses):
            return "nonfinite"
        params_ok = all(r["mismatched"] == 0 for r in params)
        return "pass" if all_within and grads_ok and params_ok else "mismatch"

    def _first_call(self, call: Callable[[], Any], recorder: OpRecorder | None, watch: _CompileWatch | None) -> tuple[dict[str, torch.Tensor], float]:
        if watch is not None:
            watch.before()
        start = time.perf_counter()
        outputs = call()
        self.backend.synchronize()
        elapsed = time.perf_counter() - start
        if watch is not None:
            watch.after_first()
        if recorder is not None:
            # A second eager call records the ops, so dispatch overhead stays out of the timing.
            with recorder:
                call()
        return outputs, elapsed

    def _judge(self, cell: Cell, key: str, outputs: dict[str, torch.Tensor], result: dict[str, Any]) -> str:
        reference = self.references[key]
        tol = self.plan.tolerance_for(cell.dtype)
        result["outputs"] = [describe(k, v) for k, v in outputs.items()]
        try:
            stats = compare(outputs, reference, tol["atol"], tol["rtol"])
        except ValueError as exc:
            result["failure"] = failure("compare", exc)
            return "error"
        result["error_stats"] = stats
        metric = finite_or_none(self.workload.task_metric(outputs, reference, self.inputs[key]))
        criterion = tol.get("task")
        passed = None
        if criterion and metric is not None:
            passed = metric >= criterion["threshold"] if criterion["op"] == ">=" else metric <= criterion["threshold"]
        elif criterion:
            passed = False
        result["task_metric"] = {"name": getattr(self.workload, "TASK_METRIC", "task_metric"), "value": metric, "criterion": criterion, "passed": passed}
        ref_nonfinite = sum(describe(k, v)["nonfinite"] for k, v in reference.items())
        if sum(o["nonfinite"] for o in result["outputs"]) > ref_nonfinite:
            return "nonfinite"
        if stats["mismatched"] or passed is False:
            return "mismatch"
        return "pass"

    def _write_failed(self, cell: Cell, result: dict[str, Any], fail: dict[str, str], watch: _CompileWatch | None) -> None:
        if watch is not None and fail["phase"] == "compile":
            self.log.write("compile", case=cell.case, **watch.event(None, self.cache_dir))
        self.progress.say(f"{cell.case}: error in {fail['phase']}: {fail['type']}: {fail['message'][:200]}")
        self.log.write("case_result", case=cell.case, status="error", failure=fail, **result)
        self._write_operators(cell, None)

    def _write_operators(self, cell: Cell, recorder: OpRecorder | None) -> None:
        self.log.write(
            "operators",
            case=cell.case,
            executed=self.backend.executed(recorder),
            fallback=self.backend.fallback(),
            transfers=self.backend.transfers(recorder),
        )

    def _time_warm(self, cell: Cell, outcome: CellOutcome) -> None:
        reps = self.warm_repetitions
        self.progress.say(f"{cell.case}: timing {reps} warm repetitions")
        watch = _CompileWatch(self.backend)
        watch.before()
        samples = time_warm(outcome.call, self.backend.synchronize, self.plan.warmup, reps)
        watch.after_first()
        self.log.write(
            "timing",
            case=cell.case,
            warm=warm_stats(samples),
            synchronized=True,
            scope=self.plan.timing_scope,
            eager_after_recompile_limit=watch.limit_hit,
        )

    def time_cold(self) -> None:
        if self.options.cold == "off":
            return
        for cell in self.cells:
            outcome = self.passed.get(cell.case)
            if outcome is None or cell.repeat_of:
                continue
            self.progress.say(f"{cell.case}: cold first call ({self.options.cold})")
            cold = self._cold_in_process(cell, outcome) if self.options.cold == "in-process" else self._cold_fresh(cell)
            if cold is not None:
                self.log.write("timing", case=cell.case, cold=cold, synchronized=True, scope=self.plan.timing_scope)

    def _cold_in_process(self, cell: Cell, outcome: CellOutcome) -> dict[str, Any]:
        condition = "compiled_in_process" if cell.mode == "compiled" else "eager_no_compile"
        return {"seconds": outcome.first_call_s, "cache_condition": condition, "fresh_process": False}

    def _cold_fresh(self, cell: Cell) -> dict[str, Any] | None:
        argv = ["--plan", str(self.plan.path), "--run-dir", str(self.dir), "--case", cell.case, "--target", self.backend.name]
        result = run_cold(argv, self.backend.cache_env, self.options.cold_timeout)
        if "error" in result:
            self.progress.say(f"{cell.case}: cold run failed: {result['error']}")
            self.log.write("warning", message=f"cold first call not measured: {result['error']}", category="ColdStartFailed", case=cell.case)
            return None
        condition = "fresh_process_empty_cache" if cell.mode == "compiled" else "eager_no_compile"
        return {"seconds": result["first_call_s"], "cache_condition": condition, "fresh_process": True, "process_start_s": result["process_start_s"]}

    def write_profiles(self) -> None:
        if not self.options.profile:
            return
        chosen: dict[str, Cell] = {}
        for cell in self.cells:
            if cell.case in self.passed and not cell.repeat_of and fnmatch.fnmatch(cell.case, self.options.profile):
                if cell.shape_key not in chosen or cell.mode == "compiled":
                    chosen[cell.shape_key] = cell
        for cell in chosen.values():
            self.progress.say(f"{cell.case}: profiling")
            call = self.passed[cell.case].call
            with self.backend.profile(self.dir / "traces", cell.case) as found:
                for _ in range(3):
                    call()
                self.backend.synchronize()
            traces = [
                {"path": str(path.relative_to(self.dir)), "kind": kind, "bytes": path.stat().st_size, "sha256": sha256_file(path)}
                for path, kind in found["traces"]
            ]
            self.log.write("profile", case=cell.case, profiler=found["profiler"], traces=traces, top_ops=found["top_ops"])

    def finish(self, status: str, reason: str | None = None) -> None:
        if self.log is not None:
            self.log.write(
                "run_end",
                finished_at=utc_now(),
                status=status,
                reason=reason,
                cells_planned=len(self.cells),
                cells_recorded=self.recorded,
            )
            self.log.close()
        shutil.rmtree(self.cache_dir, ignore_errors=True)


class _CompileWatch:
    """Counter deltas around a compiled cell's first call, its repeat, and recompile-limit logs."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.handler = _LogCollector()
        self.start: dict[str, int] = {}
        self.first: dict[str, int] = {}
        self.breaks_start: dict[str, int] = {}
        self.repeat_frames = 0
        self.limit_hit = False

    def before(self) -> None:
        logging.getLogger("torch._dynamo").addHandler(self.handler)
        self.start = self.backend.compile_counters()
        self.breaks_start = self.backend.graph_breaks()

    def after_first(self) -> None:
        self.first = self.backend.compile_counters()
        logging.getLogger("torch._dynamo").removeHandler(self.handler)
        self.limit_hit = any("recompile_limit" in m or "cache_size_limit" in m for m in self.handler.messages)

    def check_repeat(self, call: Callable[[], Any], synchronize: Callable[[], None]) -> None:
        """Call again with the same inputs: on a fixed-shape path nothing compiles."""
        call()
        synchronize()
        self.repeat_frames = self.backend.compile_counters()["frames"] - self.first["frames"]

    @property
    def frames_first(self) -> int:
        return self.first.get("frames", 0) - self.start.get("frames", 0)

    @property
    def graphs_first(self) -> int:
        return self.first.get("graphs", 0) - self.start.get("graphs", 0)

    def event(self, first_call_s: float | None, cache_dir: Path) -> dict[str, Any]:
        now = self.first or self.backend.compile_counters()
        breaks = self.backend.graph_breaks()
        return {
            "compile_first_result_s": first_call_s,
            "graphs": now.get("graphs", 0) - self.start.get("graphs", 0),
            "graph_breaks": [
                {"reason": reason, "count": count - self.breaks_start.get(reason, 0)}
                for reason, count in sorted(breaks.items())
                if count > self.breaks_start.get(reason, 0)
            ],
            "recompiles": self.repeat_frames,
            "cache_hits": now.get("cache_hits", 0) - self.start.get("cache_hits", 0),
            "cache_misses": now.get("cache_misses", 0) - self.start.get("cache_misses", 0),
            "recompile_limit_hit": self.limit_hit,
            "cache_condition": "compiled_in_process",
            "cache_dir": str(cache_dir),
        }


def _install_signal_handlers() -> dict[int, Any]:
    def handler(signum: int, frame: FrameType | None) -> None:
        raise Aborted(signum)

    previous = {}
    for signum in (signal.SIGINT, signal.SIGTERM):
        previous[signum] = signal.signal(signum, handler)
    return previous


def execute(plan: WorkloadPlan, backend: Backend, options: Options) -> tuple[Path, int]:
    """Run every step; returns the run directory and the process exit code."""
    run = Run(plan, backend, options)
    previous = _install_signal_handlers()
    try:
        run.start()
        run.progress.say(f"run {run.run_id} -> {run.dir}")
        run.write_plan()
        run.write_references()
        run.run_cells()
        run.time_cold()
        run.write_profiles()
        run.finish("complete")
        run.progress.say(f"done: {run.recorded} of {len(run.cells)} cells recorded, log {run.dir / 'events.jsonl'}")
        return run.dir, 0
    except Aborted as exc:
        run.finish("aborted", f"received {exc}")
        run.progress.say(f"aborted by {exc}; the log up to here is intact")
        return run.dir, EXIT_ABORTED[exc.signum]
    except Exception as exc:
        run.finish("aborted", f"collector error: {type(exc).__name__}: {exc}")
        raise
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
