"""Warm repetitions of a passing cell, and the cold first call of each passing cell."""

from __future__ import annotations

from typing import Any

from collector.plan import Cell
from collector.run.capture import CompileWatch
from collector.run.state import CellOutcome, Run
from collector.timing import run_cold, time_warm, warm_stats


def time_warm_cell(run: Run, cell: Cell, outcome: CellOutcome) -> None:
    reps = run.warm_repetitions
    run.progress.say(f"{cell.case}: timing {reps} warm repetitions")
    watch = CompileWatch(run.backend)
    watch.before()
    samples = time_warm(outcome.call, run.backend.synchronize, run.plan.warmup, reps)
    watch.after_first()
    run.log.write(
        "timing",
        case=cell.case,
        warm=warm_stats(samples),
        synchronized=True,
        scope=run.plan.timing_scope,
        eager_after_recompile_limit=watch.limit_hit,
    )


def time_cold(run: Run) -> None:
    if run.options.cold == "off":
        return
    for cell in run.cells:
        outcome = run.passed.get(cell.case)
        if outcome is None or cell.repeat_of:
            continue
        run.progress.say(f"{cell.case}: cold first call ({run.options.cold})")
        cold = _cold_in_process(cell, outcome) if run.options.cold == "in-process" else _cold_fresh(run, cell)
        if cold is not None:
            run.log.write("timing", case=cell.case, cold=cold, synchronized=True, scope=run.plan.timing_scope)


def _cold_in_process(cell: Cell, outcome: CellOutcome) -> dict[str, Any]:
    condition = "compiled_in_process" if cell.mode == "compiled" else "eager_no_compile"
    return {"seconds": outcome.first_call_s, "cache_condition": condition, "fresh_process": False}


def _cold_fresh(run: Run, cell: Cell) -> dict[str, Any] | None:
    argv = ["--plan", str(run.plan.path), "--run-dir", str(run.dir), "--case", cell.case, "--target", run.backend.name]
    result = run_cold(argv, run.backend.cache_env, run.options.cold_timeout)
    if "error" in result:
        run.progress.say(f"{cell.case}: cold run failed: {result['error']}")
        run.log.write("warning", message=f"cold first call not measured: {result['error']}", category="ColdStartFailed", case=cell.case)
        return None
    condition = "fresh_process_empty_cache" if cell.mode == "compiled" else "eager_no_compile"
    return {"seconds": result["first_call_s"], "cache_condition": condition, "fresh_process": True, "process_start_s": result["process_start_s"]}
