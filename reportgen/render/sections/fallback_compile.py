"""Section 6, Fallback and compile findings: per cell, what fell back to the CPU and what each compile did."""

from __future__ import annotations

from reportgen.model.runmodel import RunModel
from reportgen.render.labels import human
from reportgen.render.sections.common import (
    first_cells,
    anchor,
    collapse_rows,
    DETAIL_CAP,
    fmt,
    fmt_time,
    hits_misses,
    Row,
)


def compile_rows(run: RunModel) -> list[dict[str, str]]:
    rows: list[dict[str, str]] = []
    if not run.kind_counts.get("compile"):  # no compile event: no cell's events need looking through
        return rows
    for c in first_cells(run, lambda c: c.compiles):
        result = c.result
        for k in c.compiles:
            rows.append(
                {
                    "case": c.case
                    + (
                        f" ({k.generation_graph}, bucket {k.bucket})"
                        if k.generation_graph
                        else ""
                        if k.graph == "inference"
                        else f" ({k.graph})"
                    ),
                    "anchor": anchor(c.case),
                    "first": fmt_time(k.compile_first_result_s),
                    "graphs": fmt(k.graphs),
                    "breaks": "; ".join(f"{b.reason} ×{b.count}" for b in k.graph_breaks) or "none",
                    "recompiles": fmt(k.recompiles),
                    "cache": hits_misses(k.cache_hits, k.cache_misses),
                    "condition": human(k.cache_condition)
                    + (
                        f"; cache entries {k.cache_entries_before} → {fmt(k.cache_entries_after)}"
                        if k.cache_entries_before is not None
                        else "; cache entries not listed"
                    ),
                    "limit": "HIT: later calls ran eager" if k.recompile_limit_hit else "not hit",
                    "repeat": ("compiled again" if result.recompiled else "" if result.recompiled is None else "reused")
                    if result
                    else "",
                }
            )
    return rows[:DETAIL_CAP]


def fallback_rows(run: RunModel) -> list[Row]:
    rows = []
    for c in first_cells(run, lambda c: c.fallback_status is not None):
        ops = c.operators
        if ops is None:  # a fallback status is read from the operators event: not reached
            continue
        fb, tr = ops.fallback, ops.transfers
        fb_text = (
            ", ".join(fb.items)
            if fb.status == "measured" and fb.items
            else ("none" if fb.status == "measured" else f"{human(fb.status)}: {fb.reason}")
        )
        tr_text = (
            f"{tr.count} copies, {tr.bytes} bytes" if tr.status == "measured" else f"{human(tr.status)}: {tr.reason}"
        )
        rows.append(Row(c.case, f"fallback: {fb_text}; transfers: {tr_text}", anchor(c.case)))
    return collapse_rows(rows)
