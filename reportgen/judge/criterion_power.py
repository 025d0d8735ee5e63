"""Declared criteria that cannot tell a wrong output from a right one.

A pass is evidence only when the criterion could have failed. Both plan-check (before any
hardware time) and the report's disposition (after it) ask this of a dtype's [tolerances]
table, given as plain data: the plan file's table, or a logged plan's Tolerance as builtins.
Only what follows from the criterion itself is said; whether an absolute tolerance is loose
for this workload depends on its outputs' magnitudes, which a plan does not declare.
"""

from __future__ import annotations

from typing import Any, Mapping

# Metrics whose name says they are a cosine similarity: their value lies in [-1, 1] and a
# larger value is an output more like the reference.
COSINE = "cosine"
# The generation criterion the contract defines: leading greedy steps equal to the reference's.
GREEDY_STEPS = "greedy_steps_agreeing"


def cannot_fail(dtype: str, table: Mapping[str, Any]) -> list[str]:
    """Why parts of ``[tolerances.<dtype>]`` pass a wrong output, each in words (none: they can fail)."""
    found = []
    for part in ("", "loss", "grad"):
        rule = table.get(part) if part else table
        if isinstance(rule, Mapping) and isinstance(rule.get("rtol"), (int, float)) and rule["rtol"] >= 1:
            key = f"tolerances.{dtype}" + (f".{part}" if part else "")
            found.append(
                f"{key}.rtol = {rule['rtol']:g} passes an output of zeros (|0 - ref| = |ref| <= rtol * |ref| at every element)"
            )
    task = table.get("task")
    if isinstance(task, Mapping):
        metric, op, threshold = str(task.get("metric", "")), task.get("op"), task.get("threshold")
        key = f"tolerances.{dtype}.task"
        if not isinstance(threshold, (int, float)):
            return found
        if COSINE in metric.lower():
            if (op == ">=" and threshold <= -1) or (op == "<=" and threshold >= 1):
                found.append(
                    f"{key}: a cosine lies between -1 and 1, so {metric} {op} {threshold:g} holds for any output"
                )
            elif op == "<=":
                found.append(
                    f"{key}: {metric} {op} {threshold:g} passes outputs less like the reference and fails closer ones"
                )
        elif metric == GREEDY_STEPS and op == ">=" and threshold <= 0:
            found.append(f"{key}: {metric} >= {threshold:g} holds when no greedy step agrees")
    return found


def bit_exact(table: Mapping[str, Any]) -> bool:
    """atol = rtol = 0: only bit-identical results pass."""
    return table.get("atol") == 0 and table.get("rtol") == 0
