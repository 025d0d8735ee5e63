"""Declared criteria that cannot tell a wrong output from a right one.

A pass is evidence only when the criterion could have failed. Both plan-check (before any
hardware time) and the report's disposition (after it) ask this of a dtype's [tolerances]
table, given as plain data: the plan file's table, or a logged plan's Tolerance as builtins.

A cell passes only when every part of its criteria passes (the elementwise rule and the task
criterion; for training, the loss and gradient rules), so the criteria pass a wrong output only
when no part of them can fail: ``cannot_fail`` says so then, and only then. A part that is
backwards (a similarity compared with <=: it fails right outputs) is ``backwards``, a plan
error that plan-check names; a report needs no rule for it, since the elementwise rule still
fails a wrong output.

Only what follows from the criterion itself is said. Whether an absolute tolerance is loose for
this workload depends on its outputs' magnitudes, which a plan does not declare. A metric is
read as a cosine similarity (values in [-1, 1], larger is closer) only when its name says so
in the form the shipped workloads use (``SIMILARITY``), never by a substring: a
``max_cosine_distance`` is a distance.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

# A cosine similarity by name: cosine, cosine_similarity, min_cosine_to_reference,
# mean_cosine_similarity_to_reference_embedding, ...
SIMILARITY = re.compile(r"(?:(?:min|mean|median)_)?cosine(?:_similarity)?(?:_to_reference\w*)?")
# The generation criterion the contract defines: leading greedy steps equal to the reference's.
GREEDY_STEPS = "greedy_steps_agreeing"


def _elementwise_vacuous(rule: Any) -> bool:
    """|out - ref| <= atol + rtol * |ref| with rtol >= 1 passes an output of zeros everywhere."""
    return isinstance(rule, Mapping) and isinstance(rule.get("rtol"), (int, float)) and rule["rtol"] >= 1


def _task_vacuous(task: Mapping[str, Any]) -> bool:
    metric, op, threshold = str(task.get("metric", "")), task.get("op"), task.get("threshold")
    if not isinstance(threshold, (int, float)):
        return False
    if SIMILARITY.fullmatch(metric):
        return (op == ">=" and threshold <= -1) or (op == "<=" and threshold >= 1)
    return metric == GREEDY_STEPS and op == ">=" and threshold <= 0


def cannot_fail(dtype: str, table: Mapping[str, Any]) -> list[str]:
    """Why ``[tolerances.<dtype>]`` passes any output, part by part, when no part of it can fail;
    [] when some part can (a cell passes only when every part passes)."""
    key = f"tolerances.{dtype}"
    parts: list[tuple[str, bool]] = [(key, _elementwise_vacuous(table))]
    for name in ("loss", "grad"):
        if isinstance(table.get(name), Mapping):
            parts.append((f"{key}.{name}", _elementwise_vacuous(table[name])))
    task = table.get("task")
    if isinstance(task, Mapping):
        parts.append((f"{key}.task", _task_vacuous(task)))
    if not all(vacuous for _, vacuous in parts):
        return []
    found = []
    for where, _ in parts:
        if where.endswith(".task") and isinstance(task, Mapping):
            found.append(f"{where}: {task['metric']} {task['op']} {task['threshold']:g} holds for any output")
        else:
            rule = table if where == key else table[where.rsplit(".", 1)[1]]
            found.append(
                f"{where}.rtol = {rule['rtol']:g} passes an output of zeros (|0 - ref| = |ref| <= rtol * |ref|)"
            )
    return found


def idle_task(dtype: str, table: Mapping[str, Any]) -> str | None:
    """Why the task criterion holds for any output, or None: it judges nothing, and only the
    other parts decide (a plan error, though not a vacuous whole when they can fail)."""
    task = table.get("task")
    if not isinstance(task, Mapping) or not _task_vacuous(task):
        return None
    return f"tolerances.{dtype}.task: {task['metric']} {task['op']} {task['threshold']:g} holds for any output"


def backwards(dtype: str, table: Mapping[str, Any]) -> str | None:
    """Why the task criterion fails right outputs (a cosine similarity compared with <=), or None."""
    task = table.get("task")
    if not isinstance(task, Mapping) or not SIMILARITY.fullmatch(str(task.get("metric", ""))):
        return None
    threshold = task.get("threshold")
    if task.get("op") != "<=" or not isinstance(threshold, (int, float)) or threshold >= 1:
        return None
    return (
        f"tolerances.{dtype}.task: {task['metric']} <= {threshold:g} passes outputs less like the reference "
        "and fails closer ones (a cosine similarity is larger the closer the output)"
    )


def cannot_pass(dtype: str, table: Mapping[str, Any]) -> str | None:
    """Why the task criterion fails every output, or None: a cosine similarity asked to reach
    above 1 (or stay below -1). Every cell of the dtype would read as a mismatch. (More leading
    greedy steps than a generation cell makes is refused by the plan schema itself.)"""
    task = table.get("task")
    if not isinstance(task, Mapping):
        return None
    metric, op, threshold = str(task.get("metric", "")), task.get("op"), task.get("threshold")
    if not isinstance(threshold, (int, float)):
        return None
    where = f"tolerances.{dtype}.task: {metric} {op} {threshold:g}"
    if SIMILARITY.fullmatch(metric) and ((op == ">=" and threshold > 1) or (op == "<=" and threshold < -1)):
        return f"{where} fails every output: a cosine similarity lies between -1 and 1"
    return None


def bit_exact(table: Mapping[str, Any]) -> bool:
    """atol = rtol = 0: only bit-identical results pass."""
    return table.get("atol") == 0 and table.get("rtol") == 0
