"""Generation cells: each request served as a text service would, against the reference's generation.

Per cell: the padded request (``run.inputs``) is generated twice, prefill then the plan's decode
steps on a fresh static KV cache each time (``collector.generation``). The first generation is
judged; around its prefill and its first decode call the compile counters are read, one
``compile`` event per graph (prefill, with the bucket; decode). Decode calls after the first, and
the whole second generation, must compile nothing: what they compiled is the graph's
``recompiles``. A passing cell is then timed: warm repetitions of the whole generation, each
giving a time to first token and one sample per decode step.
"""

from __future__ import annotations

import contextlib
import statistics
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any

import torch

from collector import generation, hostcondition, interrupt, stability
from collector.backends import OpRecorder
from collector.compare import describe, describe_input, max_abs_between
from collector.plan import Cell, PlanError
from collector.run.capture import (
    CompileWatch,
    captured_warnings,
    failure,
    failure_phase,
    kept_warnings,
    message_of,
    write_failed,
    write_operators,
    write_reference,
)
from collector.run.state import CellOutcome, Run
from collector.timing import warm_stats
from collector.workload import input_key

METRIC = "greedy_steps_agreeing"
SCOPE = "model calls only: the request already tokenised, padded and on the device; each call ends when its greedy token is chosen, the device synchronised"


def route_requests(
    run: Run, key: str, cells: list[Cell], raw: dict[str, torch.Tensor]
) -> dict[str, torch.Tensor] | None:
    """The plan's policy for this request: a ``request`` event; the padded request, or None when refused."""
    gen, padding = run.plan.generation or {}, run.plan.padding or {}
    length = int(raw["input_ids"].shape[1])
    decision = generation.route(length, padding.get("buckets", []), padding.get("above_largest"))
    run.log.write(
        "request",
        batch=int(raw["input_ids"].shape[0]),
        length=length,
        bucket=decision["bucket"],
        outcome=decision["outcome"],
        reason=decision["reason"],
        cases=[c.case for c in cells if input_key(c.batch, c.length, c.layout) == key],
    )
    if decision["bucket"] is None:
        run.refused[key] = decision["reason"]
        return None
    run.routes[key] = decision
    return generation.pad_request(raw, decision["bucket"], run.workload.pad_id(), gen["padding_side"])


def reference_generation(run: Run, key: str, model: torch.nn.Module, dtype: torch.dtype) -> dict[str, torch.Tensor]:
    """The reference generation of one request on the CPU, twice (its noise floor)."""
    gen = run.plan.generation or {}
    padded = run.inputs[key]
    with torch.no_grad():
        runs = [
            generation.generate(
                run.workload,
                model,
                padded,
                gen["decode_steps"],
                gen["max_cache_len"],
                torch.device("cpu"),
                lambda: None,
            )
            for _ in range(2)
        ]
    first, second = runs
    vocabulary = int(first.prefill_logits.shape[-1])
    if gen["top_k"] >= vocabulary:
        # Both top-k would hold every token: every overlap 1, whatever the cell computes. Found
        # with the first reference, before any cell: the device time would buy a criterion that
        # decides nothing (reportgen's report blocks such a run).
        raise PlanError(
            f"generation.top_k = {gen['top_k']} is at least the model's vocabulary ({vocabulary:,} tokens, "
            f"the last dimension of the reference's logits): both top-k would hold every token, so every "
            f"overlap would be 1 and min_top_k_overlap would decide nothing; set top_k below {vocabulary:,}"
        )
    noise = max_abs_between(_tensors(first), _tensors(second))  # logits and tokens of both runs
    nonfinite = sum(describe(k, v)["nonfinite"] for k, v in _tensors(first).items())
    write_reference(run, key, dtype, noise, nonfinite)
    run.gen_refs[key] = first
    return {"prefill_logits": first.prefill_logits, "tokens": first.tokens}


def _tensors(trace: generation.Trace) -> dict[str, torch.Tensor]:
    found = {"prefill_logits": trace.prefill_logits, "tokens": trace.tokens.to(torch.float64)}
    found.update({f"step{i}": s for i, s in enumerate(trace.step_logits)})
    return found


class GraphWatch:
    """Compile counters around the first prefill and the first decode call of a generation,
    and what any later call compiled (``recompiles`` of the graph it belongs to)."""

    def __init__(self, run: Run, compiling: bool) -> None:
        self.run = run
        self.compiling = compiling
        self.first: dict[str, CompileWatch] = {}
        self.later = {"prefill": 0, "decode": 0}

    @contextlib.contextmanager
    def around(self, kind: str, index: int) -> Iterator[None]:
        if not self.compiling:
            yield
            return
        first = kind not in self.first
        frames = self.run.backend.compile_counters()["frames"]
        if first:
            watch = CompileWatch(self.run.backend)
            self.first[kind] = watch
            watch.before()
            try:
                with self.run.progress.heartbeat(f"compiling the {kind} graph"):
                    yield
            finally:  # a failed compile still leaves its counters read and Dynamo's log unhooked
                watch.after_first()
            return
        yield
        self.later[kind] += self.run.backend.compile_counters()["frames"] - frames

    def events(self, cell: Cell, bucket: int, prefill_s: float, first_decode_s: float | None) -> None:
        for kind, seconds in (("prefill", prefill_s), ("decode", first_decode_s)):
            watch = self.first.get(kind)
            if watch is None:
                continue
            watch.repeat_frames = self.later[kind]
            self.run.log.write(
                "compile",
                case=cell.case,
                generation_graph=kind,
                bucket=bucket,
                **watch.event(seconds, self.run.cache_dir),
            )


def run_generation_cell(run: Run, cell: Cell, model: Any) -> CellOutcome:
    key = input_key(cell.batch, cell.length, cell.layout)
    gen = run.plan.generation or {}
    padded, ref, decision = run.inputs[key], run.gen_refs[key], run.routes[key]
    bucket = decision["bucket"]
    run.backend.begin_cell()
    result: dict[str, Any] = {"inputs": [describe_input(k, v) for k, v in padded.items()]}
    compiling = cell.mode == "compiled"
    graphs = GraphWatch(run, compiling)
    recorder = OpRecorder() if not compiling else None

    def once(watch: Callable[[str, int], AbstractContextManager[Any]], keep: bool = True) -> generation.Trace:
        with torch.no_grad():
            return generation.generate(
                run.workload,
                model,
                padded,
                gen["decode_steps"],
                gen["max_cache_len"],
                run.backend.device,
                run.backend.synchronize,
                watch,
                keep,
            )

    with captured_warnings() as warns:
        try:
            trace = once(graphs.around)
            # Again on a fresh cache: on a fixed-shape path nothing compiles (eager: its operators).
            with recorder if recorder is not None else contextlib.nullcontext():
                once(graphs.around, keep=False)
        except interrupt.ENDS_RUN:
            raise
        except BaseException as exc:
            result["warnings"] = warns.lines()  # bounded as write_failed writes them
            write_failed(
                run,
                cell,
                result,
                failure(failure_phase(exc, compiling), exc),
                graphs.first.get("decode") or graphs.first.get("prefill"),
            )
            return CellOutcome("error")
    result["warnings"] = kept_warnings(warns.lines() + run.backend.cell_log())
    if cell.repeat_of and compiling:  # a cache check: the same request again, after the larger buckets
        result["recompiled"] = any(w.frames_first > 0 or w.graphs_first > 0 for w in graphs.first.values())
    graphs.events(cell, bucket, trace.prefill_s, trace.decode_s[0] if trace.decode_s else None)
    tol = run.plan.tolerance_for(cell.dtype) or {}
    criterion = tol.get("task")
    try:
        judged = generation.judge(
            trace,
            ref,
            padded["attention_mask"],
            tol["atol"],
            tol["rtol"],
            criterion,
            gen["top_k"],
            gen["min_top_k_overlap"],
        )
    except interrupt.ENDS_RUN:
        raise
    except BaseException as exc:
        write_failed(run, cell, result, failure("compare", exc), None)
        return CellOutcome("error")
    result["outputs"] = [describe("prefill_logits", trace.prefill_logits), describe("tokens", trace.tokens)]
    result["error_stats"] = judged["error_stats"]
    result["task_metric"] = {
        "name": METRIC,
        "value": float(judged["steps_agreeing"]),
        "criterion": criterion,
        "passed": judged["tokens_passed"],
    }
    ref_nonfinite = int((~torch.isfinite(ref.prefill_logits)).sum())
    if judged["nonfinite"] > ref_nonfinite:
        status = "nonfinite"
    elif judged["error_stats"]["mismatched"] or judged["tokens_passed"] is False or not judged["top_k_passed"]:
        status = "mismatch"
    else:
        status = "pass"
    run.log.write("case_result", case=cell.case, status=status, **result)
    write_operators(run, cell, recorder)
    timing = _time_generation(run, cell, once, trace) if status == "pass" else None
    run.log.write(
        "generation",
        case=cell.case,
        request_length=cell.length,
        bucket=bucket,
        truncated=decision["outcome"] == "truncated",
        padding_side=gen["padding_side"],
        decode_steps=gen["decode_steps"],
        max_cache_len=gen["max_cache_len"],
        tokens=trace.tokens.tolist(),
        reference_tokens=ref.tokens.tolist(),
        steps_agreeing=judged["steps_agreeing"],
        first_divergent_step=judged["first_divergent_step"],
        top_k=gen["top_k"],
        top_k_overlap=judged["top_k_overlap"],
        tokens_passed=judged["tokens_passed"],
        top_k_passed=judged["top_k_passed"],
        timing=timing,
    )
    return CellOutcome(status)


def _time_generation(
    run: Run, cell: Cell, once: Callable[..., generation.Trace], first: generation.Trace
) -> dict[str, Any] | None:
    """Warm repetitions of the whole generation, taken again at once while a series is unstable,
    up to the plan's timing.remeasure_rounds more times; the earlier attempts' series are kept in
    the event (``earlier``), the last one is reported. None (with a warning event) when a
    generation failed."""
    allowed = 1 + run.plan.remeasure_rounds
    earlier: list[dict[str, Any]] = []
    for attempt in range(1, allowed + 1):
        loop = _generation_loop(run, cell, once, attempt)
        if loop is None:
            return None
        traces, host = loop
        series = {
            "ttft_warm": warm_stats([t.prefill_s for t in traces]),
            "decode_token": warm_stats([s for t in traces for s in t.decode_s]),
            "host": host,
        }
        unstable = stability.unstable_generation(
            series["ttft_warm"]["samples_s"],
            series["decode_token"]["samples_s"],
            len(traces),
            hostcondition.waited(host),
        )
        if not unstable or attempt == allowed:
            break
        earlier.append(series)
        run.progress.say(f"{cell.case}: warm generations {attempt} unstable ({', '.join(unstable)}); measured again")
    if unstable:
        run.progress.say(
            f"{cell.case}: unstable timing after {attempt} series of warm generations ({', '.join(unstable)})"
        )
    decode_totals = [sum(t.decode_s) for t in traces]
    median_total = statistics.median(decode_totals)
    return {
        "ttft_cold_s": first.prefill_s,
        "ttft_warm": series["ttft_warm"],
        "decode_token": series["decode_token"],
        "tokens_per_s": len(first.decode_s) / median_total if median_total > 0 else 0.0,
        "repetitions": run.warm_repetitions,
        "scope": SCOPE,
        "host": host,
        "attempt": attempt,
        "attempts_allowed": allowed,
        "earlier": earlier,
    }


def _generation_loop(
    run: Run, cell: Cell, once: Callable[..., generation.Trace], attempt: int
) -> tuple[list[generation.Trace], dict[str, Any]] | None:
    """The plan's warm-up and warm generations, with the host around them; None (with a warning
    event) when one failed."""
    reps = run.warm_repetitions
    again = f" (series {attempt})" if attempt > 1 else ""
    run.progress.say(f"{cell.case}: timing {reps} warm generations{again}")

    def no_watch(kind: str, index: int) -> AbstractContextManager[None]:
        return contextlib.nullcontext()

    host = hostcondition.before_loop(run.backend)
    threads = hostcondition.thread_times()  # last: the CPU time counted is the loop's
    try:
        for _ in range(run.plan.warmup):
            once(no_watch, keep=False)
        traces = [once(no_watch, keep=False) for _ in range(reps)]
    except interrupt.ENDS_RUN:
        raise
    except BaseException as exc:
        interrupt.check()  # an interrupt a library caught and wrapped ends the run, it is no failure
        run.log.write(
            "warning",
            message=f"generation timing not measured: {type(exc).__name__}: {message_of(exc)}",
            category="WarmTimingFailed",
            case=cell.case,
        )
        return None
    return traces, hostcondition.after_loop(run.backend, host, threads)
