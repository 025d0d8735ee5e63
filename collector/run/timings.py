"""Warm repetitions of a passing cell, and the cold first call of each passing cell.

What the clock covers follows the plan's ``timing.scope`` (``collector.timing.timed_sample``);
each timing event records the stages it really timed (``timed_region``), the tensors the model
received on a timed call, and for a cold call the cache directories before and after it and its
outputs against the reference.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Callable

import torch

from collector import hostcondition, interrupt, stability
from collector.plan import Cell
from collector.run.capture import CompileWatch, cold_condition, fed_facts, message_of
from collector.run.state import CellOutcome, Run
from collector.supervise import run_cold
from collector.timing import plain_sample, time_warm, timed_sample, warm_stats
from collector.compare import written_inputs
from collector.workload import DTYPES, FedInputs, cast_inputs, input_key, to_device


def whole_call(run: Run) -> list[str]:
    """The region when only the call itself is timed: a training step, or the model call."""
    return ["training_step" if run.plan.training else "model_call"]


def scope_done(region: list[str]) -> dict[str, Any]:
    """The timing event's scope: what was inside the clock, not what the plan asked."""
    return {
        "preprocessing": "preprocessing" in region,
        "host_to_device": "host_to_device" in region,
        "output_retrieval": "output_retrieval" in region,
        "synchronized": True,
        "note": "one full training step (zero_grad, forward, loss, backward, optimizer step)"
        if region == ["training_step"]
        else "as timed: " + ", then ".join(region),
    }


def scoped_sample(
    run: Run,
    cell: Cell,
    call_with: Callable[[dict[str, Any]], Any],
    device_inputs: dict[str, Any],
    host_inputs: dict[str, Any],
    stages: dict[str, float] | None = None,
) -> tuple[Callable[[], float], list[str], list[str]]:
    """One sample of this cell timed over the stages the plan's timing.scope names."""

    def prepare() -> dict[str, Any]:
        return cast_inputs(run.workload.make_inputs(cell.batch, cell.length, cell.layout), DTYPES[cell.dtype])

    return timed_sample(
        call_with,
        device_inputs,
        host_inputs,
        prepare,
        lambda host: to_device(host, run.backend.device),
        run.backend.synchronize,
        run.plan.timing_scope,
        run.backend.device.type == "cpu",
        stages,
    )


@dataclass
class WarmSeries:
    """One warm loop of a cell: its samples, what the clock covered, and the host around it."""

    samples: list[float]
    region: list[str]
    notes: list[str]
    fed: dict[str, Any]
    limit_hit: bool
    host: dict[str, Any]
    memory: dict[str, Any] | None = None  # the timing event's device_memory


def time_warm_cell(run: Run, cell: Cell, outcome: CellOutcome) -> bool:
    """Warm repetitions of a passing cell; False (with a warning event) when a repetition failed.
    An unstable series is queued for ``remeasure`` (at the end of the cell's group)."""
    run.progress.say(f"{cell.case}: timing {run.warm_repetitions} warm repetitions")
    series = warm_series(run, cell, outcome)
    if series is None:
        return False
    record_series(run, cell, series, 1)
    return True


def warm_series(run: Run, cell: Cell, outcome: CellOutcome) -> WarmSeries | None:
    """One warm loop of ``cell``; None (with a warning event) when a repetition failed."""
    notes: list[str]
    if run.plan.training or outcome.call_with is None:
        assert outcome.call is not None, "only a cell with a call is timed"
        sample, region, notes = plain_sample(outcome.call, run.backend.synchronize), whole_call(run), []
    else:
        sample, region, notes = scoped_sample(
            run, cell, outcome.call_with, outcome.device_inputs or {}, outcome.host_inputs or {}
        )
    fed = FedInputs(outcome.module) if outcome.module is not None else None
    if fed is not None:
        fed.arm(1)  # the first call: a warm-up call, or the first sample when there is none
    watch = CompileWatch(run.backend)
    watch.before()
    run.backend.reset_peak_memory()
    host = hostcondition.before_loop(run.backend)
    threads = hostcondition.thread_times()  # last: the CPU time counted is the loop's
    try:
        # Inference: autograd off once, outside the loop, so no sample pays for entering it
        # (the cell's call skips its own no_grad when it is already off). Training needs it on.
        with contextlib.nullcontext() if run.plan.training else torch.no_grad():
            samples = time_warm(sample, run.plan.warmup, run.warm_repetitions)
    except interrupt.ENDS_RUN:
        raise
    except BaseException as exc:
        interrupt.check()
        run.progress.say(f"{cell.case}: warm timing failed: {type(exc).__name__}: {message_of(exc, 200)}")
        run.log.write(
            "warning",
            message=f"warm timing not measured: {type(exc).__name__}: {message_of(exc)}",
            category="WarmTimingFailed",
            case=cell.case,
        )
        return None
    finally:
        if fed is not None:
            fed.remove()
        watch.after_first()
    memory = run.backend.peak_memory()  # before the host readings: nothing else has run since the loop
    host = hostcondition.after_loop(run.backend, host, threads)
    facts = fed_facts(fed, cell.layout) if fed is not None else {}
    if (written := _inputs_written(run, cell, outcome)) is not None:
        # The cell's calls wrote into the inputs they reuse: the loop timed other values than the
        # cell was checked with (an input scaled on every call runs to Inf), so no figure is kept.
        run.progress.say(f"{cell.case}: warm timing not kept: its calls wrote into input(s) {written}")
        run.log.write(
            "warning",
            message=(
                f"warm timing not kept: the cell's calls wrote into its input(s) {written}, which its later calls "
                "reuse, so the loop timed other values than the cell was checked with"
            ),
            category="InputWritten",
            case=cell.case,
        )
        return None
    return WarmSeries(samples, region, notes, facts, watch.limit_hit, host, memory)


def _inputs_written(run: Run, cell: Cell, outcome: CellOutcome) -> str | None:
    """The inputs a cell's calls reuse that no longer hold the values the cell was made with
    (names, ', '-joined), or None: a model that writes into its input in place (``x.mul_(2)``),
    which the reference's check sees only where the reference's own call writes."""
    reused = outcome.device_inputs
    if not reused or run.plan.training or run.plan.generation:
        return None
    made = cast_inputs(run.inputs[input_key(cell.batch, cell.length, cell.layout)], DTYPES[cell.dtype])
    with contextlib.suppress(Exception):  # an input that cannot be read back is not judged here
        written = written_inputs({k: v.detach().cpu() for k, v in reused.items() if k in made}, made)
        return ", ".join(written) if written else None
    return None


UNSTABLE_FLAG = "unstable timing"  # on the last allowed attempt of a series still unstable


def record_series(run: Run, cell: Cell, series: WarmSeries, attempt: int) -> stability.Stability:
    """The timing event of one warm series, with its classification and the host around it.

    The last attempt a cell is allowed (1 + the plan's timing.remeasure_rounds) that is still
    unstable carries the flag "unstable timing"; an earlier unstable one is queued for another
    round. A series too short to classify is final: more rounds of it would be as short.
    """
    waited = hostcondition.waited(series.host)
    verdict = stability.classify(series.samples, waited)
    if waited is None and "cpu_wait_s" in series.host:  # recorded, not read: contention not judged
        verdict = stability.wait_not_read(verdict)
    allowed = 1 + run.plan.remeasure_rounds
    unstable = verdict.verdict == stability.UNSTABLE
    record: dict[str, Any] = {**verdict.to_dict(), "attempt": attempt, "attempts_allowed": allowed}
    if unstable and attempt >= allowed:
        record["flag"] = UNSTABLE_FLAG
        run.unsteady.pop(cell.case, None)
        run.progress.say(f"{cell.case}: unstable timing after {attempt} warm series: {verdict.summary()}")
    elif unstable:
        run.unsteady[cell.case] = cell
        run.progress.say(
            f"{cell.case}: warm series {attempt} unstable ({', '.join(c.name for c in verdict.reasons)}); measured again later"
        )
    else:
        run.unsteady.pop(cell.case, None)
    run.log.write(
        "timing",
        case=cell.case,
        warm=warm_stats(series.samples),
        synchronized=True,
        scope=scope_done(series.region),
        timed_region=series.region,
        timed_notes=series.notes,
        eager_after_recompile_limit=series.limit_hit,
        inputs_fed=series.fed.get("inputs_fed"),
        layout_achieved=series.fed.get("layout_achieved"),
        attempt=attempt,
        stability=record,
        host=series.host,
        device_memory=series.memory,
    )
    return verdict


def remeasure(run: Run, cases: list[str]) -> None:
    """Measure the unstable warm series among ``cases`` again, in interleaved rounds.

    Each round takes one more warm series of every cell still unstable, one cell after another,
    so a disturbance of the host meets one attempt of several cells rather than every attempt
    of one. A cell leaves the rounds when a series is stable (or cannot be classified); after
    the plan's timing.remeasure_rounds rounds, its last series carries the flag. Every attempt
    is its own timing event; reportgen reads a cell's last. Run at the end of a (dtype, layout)
    group, while its compiled graphs are still the ones its cells were checked with.
    """
    pending = [case for case in cases if case in run.unsteady]
    rounds = run.plan.remeasure_rounds
    for number in range(1, rounds + 1):
        if not pending:
            return
        run.progress.say(f"re-measuring {len(pending)} unstable warm series: round {number} of {rounds}")
        for case in list(pending):
            interrupt.check()
            cell, outcome = run.unsteady[case], run.passed.get(case)
            series = warm_series(run, cell, outcome) if outcome is not None and outcome.call is not None else None
            if series is None or record_series(run, cell, series, number + 1).verdict != stability.UNSTABLE:
                pending.remove(case)
                run.unsteady.pop(case, None)


def time_cold(run: Run) -> None:
    if run.options.cold == "off":
        return
    for cell in run.cells:
        outcome = run.passed.get(cell.case)
        passed = outcome is not None or cell.case in run.passed_elsewhere
        if not passed or cell.repeat_of or cell.case in run.cold_done:
            continue
        # An eager cell has no torch.compile: its first call in this process is the cold call
        # under the condition it states ("eager, no compile"; a backend may still compile per
        # operator on first use, which is not measured), with no interpreter to start. Compiled cells get a fresh process with empty cache folders.
        # A cell checked in a fresh child (passed_elsewhere) has no call here: it is compiled.
        in_process = outcome is not None and (run.options.cold == "in-process" or cell.mode == "eager")
        notes: list[str]
        if in_process and outcome is not None:
            # Taken when the cell was checked (after its reference ran): recorded now, not measured.
            run.progress.say(f"{cell.case}: cold first call recorded (the first call its check made, in this process)")
            cold, region, notes = _cold_in_process(cell, outcome), whole_call(run), []
        else:
            run.progress.say(f"{cell.case}: cold first call ({run.options.cold})")
            found = _cold_fresh(run, cell)
            if found is None:
                continue
            cold, region, notes = found
        write_cold(run, cell, cold, region, notes)


def _cold_in_process(cell: Cell, outcome: CellOutcome) -> dict[str, Any]:
    condition = "compiled_in_process" if cell.mode == "compiled" else "eager_no_compile"
    return {
        "seconds": outcome.first_call_s,
        "cache_condition": condition,
        "fresh_process": False,
        "output_check": outcome.first_check,
    }


def _cold_fresh(run: Run, cell: Cell) -> tuple[dict[str, Any], list[str], list[str]] | None:
    argv = [*run.source_args(), "--run-dir", str(run.dir), "--case", cell.case, "--target", run.backend.name]
    with run.progress.heartbeat(f"{cell.case}: cold first call in a fresh process"):
        result = run_cold(argv, run.backend.cache_env, run.options.cold_timeout)
    if "timed_out_after_s" in result or "error" in result:
        cold_not_measured(run, cell, result.get("timed_out_after_s"), result.get("error", ""))
        return None
    return cold_from_result(cell, result)


def cold_not_measured(run: Run, cell: Cell, timed_out_after_s: float | None, error: str) -> None:
    """A fresh process gave no cold call for ``cell``: a timing event with the time it ran past
    (nothing timed), or a ColdStartFailed warning with how it ended."""
    if timed_out_after_s is not None:
        run.progress.say(f"{cell.case}: cold run timed out after {timed_out_after_s:g} s; its process group was ended")
        run.log.write(
            "timing",
            case=cell.case,
            cold_timed_out_after_s=timed_out_after_s,
            synchronized=True,
            scope=scope_done(whole_call(run)),
        )
    else:
        run.progress.say(f"{cell.case}: cold run failed: {error}")
        run.log.write(
            "warning", message=f"cold first call not measured: {error}", category="ColdStartFailed", case=cell.case
        )


# What a cold call's timing event carries from its compile (the cache it met) and from its
# check (what the model received): from the cell's own events in-process, or from the fresh
# child's result line.
COLD_CACHE_KEYS = ("cache_entries_before", "cache_entries_after", "cache_dirs", "cache_hits", "cache_misses")
COLD_FED_KEYS = ("inputs_fed", "layout_achieved")


def add_cold_facts(cold: dict[str, Any], compile_event: dict[str, Any], result: dict[str, Any]) -> None:
    """The cache facts of the compile and the fed facts of the result that were recorded, into ``cold``."""
    cold.update({k: compile_event[k] for k in COLD_CACHE_KEYS if compile_event.get(k) is not None})
    cold.update({k: result[k] for k in COLD_FED_KEYS if result.get(k) is not None})


def cold_from_result(
    cell: Cell, result: dict[str, Any], restart: bool = False
) -> tuple[dict[str, Any], list[str], list[str]]:
    """A fresh process's cold call (its result line) as the timing event's cold facts;
    ``restart``: the process was started against the cache an earlier compile left."""
    cold = {
        "seconds": result["first_call_s"],
        "cache_condition": cold_condition(cell.mode, result, restart),
        "fresh_process": True,
        "process_start_s": result["process_start_s"],
    }
    cold.update({k: result[k] for k in (*COLD_CACHE_KEYS, "output_check", *COLD_FED_KEYS) if result.get(k) is not None})
    return cold, result.get("timed_region") or ["model_call"], result.get("timed_notes") or []


def time_restarts(run: Run) -> None:
    """The third cold condition: for each compiled cell whose cold compile filled a cache
    folder of its own, a fresh process started against that folder (a service restarting with
    its persistent cache), its first call timed and checked as the empty-cache one was."""
    if run.options.cold != "fresh-process":
        return
    for cell in run.cells:
        folder = run.cache_folders.get(cell.case)
        if folder is None or not (cell.case in run.passed or cell.case in run.passed_elsewhere):
            continue
        run.progress.say(f"{cell.case}: first call in a fresh process with the cache its compile left")
        argv = [
            *run.source_args(),
            "--run-dir",
            str(run.dir),
            "--case",
            cell.case,
            "--target",
            run.backend.name,
        ]
        with run.progress.heartbeat(f"{cell.case}: restart with a populated cache"):
            result = run_cold(argv, run.backend.cache_env, run.options.cold_timeout, folder)
        if "timed_out_after_s" in result or "error" in result:
            why = (
                f"went {result['timed_out_after_s']:g} s without finishing"
                if "timed_out_after_s" in result
                else result["error"]
            )
            run.log.write(
                "warning",
                message=f"restart with a populated cache not measured: {why}",
                category="RestartColdFailed",
                case=cell.case,
            )
            continue
        cold, region, notes = cold_from_result(cell, result, restart=True)
        write_cold(run, cell, cold, region, notes)


def write_cold(run: Run, cell: Cell, cold: dict[str, Any], region: Any, notes: list[str]) -> None:
    """A cold call's timing event (fresh process, in-process or restart: ``cold`` says which)."""
    run.log.write(
        "timing",
        case=cell.case,
        cold=cold,
        synchronized=True,
        scope=scope_done(region),
        timed_region=region,
        timed_notes=notes,
    )
