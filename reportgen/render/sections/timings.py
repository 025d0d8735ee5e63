"""Section 7, Timings: cold and warm timings, training steps and generation buckets."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from reportgen.render.memory import peak_memory_text
from reportgen.model.runmodel import CellRecord, RunModel
from reportgen.render.labels import human
from reportgen.render.sections.common import first_cells, anchor, DETAIL_CAP, fmt, fmt_time, hits_misses, Row, SYMBOLS


@dataclass
class TimingView:
    case: str
    anchor: str
    cold: str
    cache_condition: str
    fresh_process: str
    process_start: str
    warm_median: str
    warm_min: str
    warm_p90: str
    warm_iqr: str
    samples: int
    flagged: str
    cold_check: str = ""
    restart: str = ""  # the restart with a populated cache: seconds, cache counts, outputs
    peak_memory: str = "not measured"  # render/memory.py


@dataclass
class GradRow:
    name: str
    worst_ratio: str
    max_abs: str
    max_rel: str
    mismatched: str
    norm_ratio: str
    updated: str
    bad: bool
    rule: str = "elementwise (no rule declared)"


@dataclass
class TrainingView:
    case: str
    anchor: str
    status: str
    symbol: str
    losses: list[tuple[int, str, str, str]]
    grads: list[GradRow]
    hidden: int


@dataclass
class GenerationRow:
    """One generation cell (schema 1.2), grouped by its bucket: compiles, timings, tokens."""

    bucket: str
    request: str
    case: str
    anchor: str
    status: str
    symbol: str
    compiles: str
    ttft_cold: str
    ttft_warm: str
    decode: str
    tokens_per_s: str
    agreement: str
    divergent: str
    top_k: str


def _cold_not_measured(cell: CellRecord) -> str:
    if cell.cold_timed_out_after_s is not None:
        return f"not measured: timed out after {fmt_time(cell.cold_timed_out_after_s)}"
    return "not measured"


def _stability_flag(cell: CellRecord, flags: dict[str, str]) -> list[str]:
    text = flags.get(cell.case, "") if cell.warm_median_s is not None else ""
    return [text] if text else []


def timing_views(
    run: RunModel,
    timing_flags: dict[str, str],
    caveats: dict[str, tuple[str, ...]],
    restart_unread: Mapping[str, str] | None = None,
) -> list[TimingView]:
    """The first DETAIL_CAP timed cells, each with the judge's stability flag (``timing_flags``),
    the caveats of its figures (``caveats``: Judgement.timing_caveats) and why its restart read
    no cache (``restart_unread``: Judgement.restart_unread)."""
    rows = []
    for c in first_cells(run, lambda c: c.status == "pass" and (c.cold_s is not None or c.warm_median_s is not None)):
        cold, w = c.cold, c.warm
        flags = [*_stability_flag(c, timing_flags), *caveats.get(c.case, ())]
        rows.append(
            TimingView(
                case=c.case,
                anchor=anchor(c.case),
                cold=fmt_time(cold.seconds) if cold else _cold_not_measured(c),
                cache_condition=_cold_condition(cold) if cold else "",
                fresh_process="yes" if cold and cold.fresh_process else "no" if cold else "",
                process_start=fmt_time(cold.process_start_s) if cold else "not measured",
                warm_median=fmt_time(w.median_s if w else None),
                warm_min=fmt_time(w.min_s if w else None),
                warm_p90=fmt_time(w.p90_s if w else None),
                warm_iqr=fmt_time(w.iqr_s if w else None),
                samples=len(w.samples_s) if w else 0,
                flagged="; ".join(flags),
                cold_check=_cold_check(cold),
                restart=_restart(c, (restart_unread or {}).get(c.case, "")),
                peak_memory=peak_memory_text(c),
            )
        )
    return rows


def _restart(cell: CellRecord, unread: str = "") -> str:
    """The third cold condition beside the others: a fresh process given the cache the cell's
    empty-cache compile left (``unread``: the judge's words where it read none of it)."""
    restart = cell.restart
    if restart is None:
        return "not measured" if cell.planned.mode == "compiled" else ""
    text = (
        f"{fmt_time(restart.seconds)}; entries {fmt(restart.cache_entries_before)} → {fmt(restart.cache_entries_after)}"
    )
    if restart.cache_hits is not None:
        text += f"; {hits_misses(restart.cache_hits, restart.cache_misses)}"
    return f"{text}; {_cold_check(restart)}" + (f"; {unread}" if unread else "")


def _cold_condition(cold: Any) -> str:
    if cold.cache_entries_before is None:
        return f"{human(cold.cache_condition)} (cache not checked: as constructed)"
    full = [f"{d.role} {d.entries_before}" for d in cold.cache_dirs or [] if d.entries_before]
    text = f"{human(cold.cache_condition)}; entries {cold.cache_entries_before} → {fmt(cold.cache_entries_after)}"
    text += f" (not empty before: {', '.join(full)})" if full else ""
    if cold.cache_hits is not None:
        text += f"; {hits_misses(cold.cache_hits, cold.cache_misses)}"
    return text


def _cold_check(cold: Any) -> str:
    if cold is None:
        return ""
    check = cold.output_check
    if check is None:
        return "not compared"
    if check.passed:
        return f"matches the reference (max abs {fmt(check.max_abs)})"
    return f"MISMATCH: {check.mismatched} of {check.total} outside tolerance (max abs {fmt(check.max_abs)})"


GRAD_ROWS = 20


def _grad_rows(cell: CellRecord) -> list[GradRow]:
    """Per parameter, the worst over all steps, worst first; updated values beside them."""
    worst: dict[str, dict[str, Any]] = {}
    for step in cell.train_steps:
        for g in step.grads:
            row = worst.setdefault(
                g.name, {"ratio": 0.0, "abs": 0.0, "rel": 0.0, "mism": 0, "total": g.total, "norms": []}
            )
            row["ratio"] = max(row["ratio"], g.worst_ratio if g.worst_ratio is not None else float("inf"))
            row["abs"] = max(row["abs"], g.max_abs if g.max_abs is not None else float("inf"))
            row["rel"] = max(row["rel"], g.max_rel if g.max_rel is not None else float("inf"))
            row["mism"] = max(row["mism"], g.mismatched)
            if g.norm_ratio is not None:
                row["norms"].append(g.norm_ratio)
    updated = {p.name: p for p in cell.train_result.params} if cell.train_result else {}
    rows = []
    for name, r in sorted(worst.items(), key=lambda kv: -kv[1]["ratio"]):
        u = updated.get(name)
        norms = f"{min(r['norms']):.6g} to {max(r['norms']):.6g}" if r["norms"] else "not measured"
        upd = _updated_text(u) if u else "not recorded"
        rows.append(
            GradRow(
                name,
                fmt(r["ratio"]),
                fmt(r["abs"]),
                fmt(r["rel"]),
                f"{r['mism']} of {r['total']}",
                norms,
                upd,
                r["mism"] > 0 or bool(u and u.mismatched),
                _rule_text(u),
            )
        )
    for name, u in updated.items():
        if name not in worst:
            rows.append(GradRow(name, "no gradient", "", "", "", "", _updated_text(u), u.mismatched > 0, _rule_text(u)))
    return sorted(rows, key=lambda r: not r.bad)


def _rule_text(u: Any) -> str:
    if u is None or u.rule is None:
        return "elementwise (no rule declared)"
    return u.rule


def _updated_text(u: Any) -> str:
    text = f"{u.mismatched} of {u.total} outside; largest {fmt(u.worst_ratio)}× allowance"
    if u.bound_elements is not None:
        text += f"; {u.bound_elements} element(s) with zero reference gradient judged by the bound {fmt(u.bound)}, largest |diff| there {fmt(u.bound_max_abs)}"
    return text


def _graph_text(compiles: list[Any]) -> str:
    """A generation cell's compile events in words: per graph, how many compiled and in how long."""
    parts = []
    for k in compiles:
        graph = k.generation_graph or k.graph
        if k.graphs == 0:
            parts.append(f"{graph}: 0 graphs (compiled earlier in the process)")
        else:
            parts.append(
                f"{graph}: {fmt(k.graphs)} graph{'s' if k.graphs != 1 else ''}, first call {fmt_time(k.compile_first_result_s)}"
            )
        if k.recompiles:
            parts[-1] += f", {k.recompiles} compiled again"
    return "; ".join(parts) or "eager: nothing compiled"


def _flagged(figure: str, flag: str | None) -> str:
    """A warm figure with the judge's stability flag after it, when its series needs one."""
    return f"{figure}; {flag}" if flag else figure


def generation_rows(
    run: RunModel, flags: dict[str, dict[str, str]], throughput: dict[str, str] | None = None
) -> list[GenerationRow]:
    """The first DETAIL_CAP generation cells, each warm figure with the judge's stability flag
    of its series (``flags``: case -> GenerationTiming field -> flag; ``throughput``: case ->
    the flag of its repetitions' decode times, which tokens/s is read from)."""
    throughput = throughput or {}
    rows = []
    for c in run.cells_with("generation")[:DETAIL_CAP]:
        g = c.generation
        if g is None:
            continue
        t = g.timing
        overlaps = [o for o in g.top_k_overlap if o is not None]
        crit = c.result.task_metric.criterion if c.result and c.result.task_metric else None
        needed = f" (criterion {crit.op} {crit.threshold:g})" if crit else ""
        cell_flags = flags.get(c.case, {})
        rows.append(
            GenerationRow(
                bucket=str(g.bucket),
                request=f"{g.request_length} tokens" + (" (truncated)" if g.truncated else ""),
                case=c.case,
                anchor=anchor(c.case),
                status=c.status,
                symbol=SYMBOLS[c.status],
                compiles=_graph_text(c.compiles),
                ttft_cold=fmt_time(t.ttft_cold_s) if t else "not timed",
                ttft_warm=_flagged(
                    f"{fmt_time(t.ttft_warm.median_s)} median, {fmt_time(t.ttft_warm.p90_s)} p90",
                    cell_flags.get("ttft_warm"),
                )
                if t
                else "not timed",
                # A decode call gives one token to each of the batch's sequences: per token and
                # tokens/s are a sequence's; a batch of several says so, and what the batch made.
                decode=_flagged(
                    f"{fmt_time(t.decode_token.median_s)} median, {fmt_time(t.decode_token.p90_s)} p90 per token"
                    + (f" of each of {c.planned.batch} sequences (a decode step)" if c.planned.batch > 1 else ""),
                    cell_flags.get("decode_token"),
                )
                if t
                else "not timed",
                # Worked out from the decode series: the judge says why it decides nothing, if it does not.
                tokens_per_s=_flagged(
                    fmt(t.tokens_per_s, "/s", digits=4)
                    + (
                        f" a sequence, {fmt(t.tokens_per_s * c.planned.batch, '/s', digits=4)} for the batch of {c.planned.batch}"
                        if c.planned.batch > 1
                        else ""
                    ),
                    throughput.get(c.case),
                )
                if t
                else "not timed",
                agreement=f"{g.steps_agreeing} of {g.decode_steps + 1} steps agree{needed}",
                divergent=f"step {g.first_divergent_step}" if g.first_divergent_step is not None else "none",
                top_k=f"min {min(overlaps):.2f} of top-{g.top_k}" if overlaps else "not measured",
            )
        )
    rows.sort(key=lambda r: int(r.bucket))
    return rows


def generation_requests(run: RunModel) -> list[Row]:
    return [Row(f"{r.length} tokens (batch {r.batch})", f"{r.outcome}: {r.reason}", "request") for r in run.requests]


def generation_note(run: RunModel) -> str:
    g = run.plan.generation if run.plan else None
    if g is None:
        return ""
    return (
        f"Each request is padded ({g.padding_side}) to its bucket, then one prefill call and {g.decode_steps} greedy decode calls "
        f"against a static KV cache of {g.max_cache_len} positions (one decode shape for every bucket). Step 0 is the token the "
        f"prefill chose, step k that of the k-th decode call; top-k overlap (k = {g.top_k}, at least {g.min_top_k_overlap:g} "
        "declared) is judged up to the first divergent step, after which the contexts differ. Time to first token: the prefill "
        "call and its token; cold is the cell's first prefill in the collector's process, not a fresh process (compiled: with "
        "the compile of its bucket's graph when no earlier cell compiled it). Decode tokens/s: a repetition's decode steps over the "
        "median of the repetitions' summed decode time, the prefill and its first token left out (not a whole request's rate). Timings only for "
        "cells that passed."
    )


def training_views(run: RunModel) -> list[TrainingView]:
    views = []
    for c in run.cells_with("train_step")[:DETAIL_CAP]:
        rows = _grad_rows(c)
        losses = [
            (
                s.step,
                fmt(s.loss, digits=8),
                fmt(s.reference_loss, digits=8),
                "within" if s.loss_within else "OUTSIDE tolerance",
            )
            for s in c.train_steps
        ]
        views.append(
            TrainingView(
                c.case,
                anchor(c.case),
                c.status,
                SYMBOLS[c.status],
                losses,
                rows[:GRAD_ROWS],
                max(0, len(rows) - GRAD_ROWS),
            )
        )
    return views


def training_note(run: RunModel) -> str:
    plan = run.plan
    t = plan.training if plan else None
    if plan is None or t is None:
        return ""
    tol = next(iter(plan.tolerances.values()), None)
    rules = ""
    if tol and tol.loss and tol.grad:
        rules = f" Loss: |diff| ≤ {tol.loss.atol:g} + {tol.loss.rtol:g}·|ref|; gradients and updated parameters: |diff| ≤ {tol.grad.atol:g} + {tol.grad.rtol:g}·|ref|."
    return f"{t.steps} steps of {t.optimizer} from identical weights, inputs and seed {t.seed}; randomness: {t.randomness}.{rules}"
