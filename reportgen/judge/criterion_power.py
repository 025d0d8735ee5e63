"""Declared criteria that cannot tell a wrong output from a right one.

A pass is evidence only when the criterion could have failed. Both plan-check (before any
hardware time) and the report's disposition (after it) ask this of a dtype's [tolerances]
table, given as plain data: the plan file's table, or a logged plan's Tolerance as builtins;
and, for a generation plan, of its [generation] table (``generation``) too.

A cell passes only when every part of its criteria passes (the elementwise rule and the task
criterion; for training, the loss and gradient rules; for generation, the elementwise rule on
the prefill's logits, the task criterion on the greedy tokens and the top-k overlap), so the
criteria pass a wrong output only when no part of them can fail: ``cannot_fail`` says so then,
and only then. A part that is backwards (a similarity or an agreement compared with <=: it
fails right outputs) is ``backwards``, a plan error that plan-check names. Beside a part that
still fails a wrong output it only makes right outputs fail; beside parts none of which can
fail, it alone decides, and what passes is what it lets through, outputs further from the
reference: ``no_evidence`` says so, for the report.

Only what follows from the criterion itself is said. Whether an absolute tolerance is loose for
this workload depends on its outputs' magnitudes, which a plan does not declare; one at least
twice the largest finite value of its dtype (``FINITE_MAX``) passes every finite output whatever
they are (two finite values are never further apart). A metric is
read as a cosine similarity (values in [-1, 1], larger is closer) only when its name says so
in the form the shipped workloads use (``SIMILARITY``), never by a substring: a
``max_cosine_distance`` is a distance. The greedy-step metric counts the leading steps of a
generation cell that agree with the reference: from 0 to decode_steps + 1 (step 0 is the
prefill's token), more is closer. The vocabulary a top-k overlap is taken over is known only
from a run (the last dimension of its logged logits): a plan does not declare it.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping, Sequence

# A cosine similarity by name: cosine, cosine_similarity, min_cosine_to_reference,
# mean_cosine_similarity_to_reference_embedding, ...
SIMILARITY = re.compile(r"(?:(?:min|mean|median)_)?cosine(?:_similarity)?(?:_to_reference\w*)?")
# The generation criterion the contract defines: leading greedy steps equal to the reference's.
GREEDY_STEPS = "greedy_steps_agreeing"


def greedy_steps(generation: Mapping[str, Any] | None) -> int | None:
    """How many greedy steps a generation cell judges: the prefill's token and one per decode
    call (decode_steps + 1); None without a [generation] table."""
    if not isinstance(generation, Mapping):
        return None
    steps = generation.get("decode_steps")
    return steps + 1 if isinstance(steps, int) and not isinstance(steps, bool) else None


def logged_vocabulary(shapes: Iterable[Sequence[int]]) -> int | None:
    """The vocabulary a run's generation cells ranked their tokens over: the last dimension of
    their logged prefill logits (batch, bucket, vocabulary), when every one shows the same;
    None when none was logged or they differ."""
    found = {shape[-1] for shape in shapes if len(shape) == 3}
    return found.pop() if len(found) == 1 else None


# The largest finite value of each floating dtype a plan may declare (torch.finfo(dtype).max).
FINITE_MAX = {"float16": 65504.0, "bfloat16": 3.3895313892515355e38, "float32": 3.4028234663852886e38}


def _elementwise_vacuous(dtype: str, where: str, rule: Any) -> str | None:
    """Why |out - ref| <= atol + rtol * |ref| passes any output, or None: rtol >= 1 passes an
    output of zeros everywhere; atol at least twice the dtype's largest finite value passes
    every finite output (a non-finite one is judged apart, as not finite)."""
    if not isinstance(rule, Mapping):
        return None
    rtol, atol = rule.get("rtol"), rule.get("atol")
    if isinstance(rtol, (int, float)) and rtol >= 1:
        return f"{where}.rtol = {rtol:g} passes an output of zeros (|0 - ref| = |ref| <= rtol * |ref|)"
    largest = FINITE_MAX.get(dtype)
    if largest is not None and isinstance(atol, (int, float)) and atol >= 2 * largest:
        return (
            f"{where}.atol = {atol:g} passes every finite output: no two finite {dtype} values are more "
            f"than {2 * largest:g} apart"
        )
    return None


def _task_vacuous(task: Mapping[str, Any], steps: int | None) -> bool:
    metric, op, threshold = str(task.get("metric", "")), task.get("op"), task.get("threshold")
    if not isinstance(threshold, (int, float)):
        return False
    if SIMILARITY.fullmatch(metric):
        return (op == ">=" and threshold <= -1) or (op == "<=" and threshold >= 1)
    if metric == GREEDY_STEPS:
        return (op == ">=" and threshold <= 0) or (op == "<=" and steps is not None and threshold >= steps)
    return False


def _task_text(dtype: str, task: Mapping[str, Any]) -> str:
    return f"tolerances.{dtype}.task: {task['metric']} {task['op']} {task['threshold']:g}"


def _steps_said(steps: int | None) -> str:
    return f" (a cell makes {steps} greedy steps: decode_steps + 1)" if steps is not None else ""


def _task_holds(dtype: str, task: Mapping[str, Any], steps: int | None) -> str:
    said = _steps_said(steps) if task.get("metric") == GREEDY_STEPS and task.get("op") == "<=" else ""
    return f"{_task_text(dtype, task)} holds for any output{said}"


def top_k_vacuous(generation: Mapping[str, Any] | None, vocabulary: int | None = None) -> str | None:
    """Why a generation plan's top-k overlap passes any output, or None: a smallest share of 0
    (every overlap is at least 0), or a top_k at or above the vocabulary where it is known
    (k is cut to the vocabulary, both top-k then hold every token and every overlap is 1)."""
    if not isinstance(generation, Mapping):
        return None
    least, k = generation.get("min_top_k_overlap"), generation.get("top_k")
    if isinstance(least, (int, float)) and least <= 0:
        return f"generation.min_top_k_overlap = {least:g} holds for any output (an overlap is a share, never below 0)"
    if vocabulary is not None and isinstance(k, (int, float)) and k >= vocabulary:
        return (
            f"generation.top_k = {k:g} is at least the vocabulary ({vocabulary:,} tokens): both top-k hold every "
            "token, so every overlap is 1 and holds for any output"
        )
    return None


def _parts(
    dtype: str, table: Mapping[str, Any], generation: Mapping[str, Any] | None, vocabulary: int | None
) -> list[tuple[str, str | None, str | None]]:
    """Each part of the criteria: (where, why it passes any output or None, why it is backwards or None)."""
    key = f"tolerances.{dtype}"
    steps = greedy_steps(generation)
    parts: list[tuple[str, str | None, str | None]] = []
    trained = [(f"{key}.{name}", table[name]) for name in ("loss", "grad") if isinstance(table.get(name), Mapping)]
    # A training cell is judged by its loss and grad tolerances alone (the updated parameters by
    # grad's): its atol and rtol judge nothing, so they cannot make its criteria able to fail.
    for where, rule in ([] if len(trained) == 2 else [(key, table)]) + trained:
        parts.append((where, _elementwise_vacuous(dtype, where, rule), None))
    task = table.get("task")
    if isinstance(task, Mapping):
        holds = _task_holds(dtype, task, steps) if _task_vacuous(task, steps) else None
        parts.append((f"{key}.task", holds, None if holds else backwards(dtype, table, generation)))
    if isinstance(generation, Mapping):
        parts.append(("generation.min_top_k_overlap", top_k_vacuous(generation, vocabulary), None))
    return parts


def cannot_fail(
    dtype: str, table: Mapping[str, Any], generation: Mapping[str, Any] | None = None, vocabulary: int | None = None
) -> list[str]:
    """Why ``[tolerances.<dtype>]`` (with a generation plan's top-k overlap) passes any output,
    part by part, when no part of it can fail; [] when some part can (a cell passes only when
    every part passes)."""
    parts = _parts(dtype, table, generation, vocabulary)
    if not all(holds for _, holds, _ in parts):
        return []
    return [holds for _, holds, _ in parts if holds]


def no_evidence(
    dtype: str, table: Mapping[str, Any], generation: Mapping[str, Any] | None = None, vocabulary: int | None = None
) -> list[str]:
    """Why a pass under these criteria is no evidence, part by part: every part passes any
    output (``cannot_fail``), or passes any output but one backwards part, which then lets
    through the outputs further from the reference; [] when some part fails a wrong output."""
    parts = _parts(dtype, table, generation, vocabulary)
    if not all(holds or wrong_way for _, holds, wrong_way in parts):
        return []
    return [holds or wrong_way or "" for _, holds, wrong_way in parts]


def deciding(
    dtype: str, table: Mapping[str, Any], generation: Mapping[str, Any] | None = None, vocabulary: int | None = None
) -> list[str]:
    """The parts of the criteria that can fail an output (the keys they are declared at)."""
    return [where for where, holds, _ in _parts(dtype, table, generation, vocabulary) if not holds]


def idle_task(dtype: str, table: Mapping[str, Any], generation: Mapping[str, Any] | None = None) -> str | None:
    """Why the task criterion holds for any output, or None: it judges nothing, and only the
    other parts decide (a plan error, though not a vacuous whole when they can fail)."""
    task = table.get("task")
    steps = greedy_steps(generation)
    if not isinstance(task, Mapping) or not _task_vacuous(task, steps):
        return None
    return _task_holds(dtype, task, steps)


def backwards(dtype: str, table: Mapping[str, Any], generation: Mapping[str, Any] | None = None) -> str | None:
    """Why the task criterion fails right outputs, or None: a cosine similarity compared with
    <= (below 1), or leading greedy steps compared with <= (below the steps a cell makes)."""
    task = table.get("task")
    if not isinstance(task, Mapping) or task.get("op") != "<=":
        return None
    metric, threshold = str(task.get("metric", "")), task.get("threshold")
    if not isinstance(threshold, (int, float)):
        return None
    if SIMILARITY.fullmatch(metric) and threshold < 1:
        return (
            f"tolerances.{dtype}.task: {metric} <= {threshold:g} passes outputs less like the reference "
            "and fails closer ones (a cosine similarity is larger the closer the output)"
        )
    steps = greedy_steps(generation)
    if metric == GREEDY_STEPS and steps is not None and 0 <= threshold < steps:
        return (
            f"tolerances.{dtype}.task: {metric} <= {threshold:g} passes generations whose tokens leave the "
            f"reference's sooner and fails one that agrees at every step{_steps_said(steps)}"
        )
    return None


def cannot_pass(dtype: str, table: Mapping[str, Any]) -> str | None:
    """Why the task criterion fails every output, or None: a cosine similarity asked to reach
    above 1 (or stay below -1), or fewer than 0 leading greedy steps. Every cell of the dtype
    would read as a mismatch. (More leading greedy steps than a generation cell makes is
    refused by the plan schema itself.)"""
    task = table.get("task")
    if not isinstance(task, Mapping):
        return None
    metric, op, threshold = str(task.get("metric", "")), task.get("op"), task.get("threshold")
    if not isinstance(threshold, (int, float)):
        return None
    where = f"tolerances.{dtype}.task: {metric} {op} {threshold:g}"
    if SIMILARITY.fullmatch(metric) and ((op == ">=" and threshold > 1) or (op == "<=" and threshold < -1)):
        return f"{where} fails every output: a cosine similarity lies between -1 and 1"
    if metric == GREEDY_STEPS and op == "<=" and threshold < 0:
        return f"{where} fails every output: no fewer than 0 steps can agree"
    return None


def bit_exact(table: Mapping[str, Any]) -> bool:
    """atol = rtol = 0: only bit-identical results pass."""
    return table.get("atol") == 0 and table.get("rtol") == 0
