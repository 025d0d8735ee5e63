"""Text generation as the collector runs it: buckets, padding, prefill and decode on a static cache.

A generation plan (``[generation]``) serves each request as a service would: the request's
tokens are padded to the bucket the plan's ladder gives (``padding.buckets``; a request above
the largest follows ``padding.above_largest``: refused with the reason, or truncated to its last
tokens and flagged), the attention mask padded the same way on the same side. Then one prefill
call of the padded prompt and ``decode_steps`` decode calls of one token each, every call
against a static KV cache of ``max_cache_len`` positions with a mask of that full length, so
every decode call has one shape whatever the bucket. Greedy choice throughout.

Step numbering, as logs and reports show it: step 0 is the token the prefill chose, step k
(1..decode_steps) the token of the k-th decode call.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import torch

from collector.compare import compare
from collector.planschema import policy_word, served_bucket


def route(length: int, buckets: list[int], policy: str | None) -> dict[str, Any]:
    """Which bucket serves a request of ``length`` tokens, under the plan's policy above the
    largest: {"bucket", "outcome" (padded, truncated, refused), "reason"}."""
    bucket = served_bucket(length, buckets, policy)
    if bucket is not None and bucket >= length:
        return {
            "bucket": bucket,
            "outcome": "padded",
            "reason": f"{length} tokens padded to the {bucket} bucket"
            if bucket > length
            else f"{length} tokens fill the {bucket} bucket",
        }
    largest = buckets[-1] if buckets else None
    word = policy_word(policy)
    if bucket is not None:
        return {
            "bucket": largest,
            "outcome": "truncated",
            "reason": f"{length} tokens are above the largest bucket {largest}: truncated to the last {largest} tokens (plan: {policy})",
        }
    why = f"plan: {policy}" if policy else "the plan declares no policy above the largest bucket"
    if word == "split":
        why += "; the collector does not run split requests"
    return {
        "bucket": None,
        "outcome": "refused",
        "reason": f"{length} tokens are above the largest bucket {largest}: refused ({why})",
    }


def pad_request(inputs: dict[str, torch.Tensor], bucket: int, pad_id: int, side: str) -> dict[str, torch.Tensor]:
    """input_ids and attention_mask padded to ``bucket`` positions on ``side`` (ids with the
    pad id, the mask with 0); a longer request keeps its last ``bucket`` tokens."""
    ids, mask = inputs["input_ids"], inputs["attention_mask"]
    ids, mask = ids[:, -bucket:], mask[:, -bucket:]
    missing = bucket - ids.shape[1]
    ids_pad = torch.full((ids.shape[0], missing), pad_id, dtype=ids.dtype)
    mask_pad = torch.zeros((mask.shape[0], missing), dtype=mask.dtype)
    if side == "left":
        return {"input_ids": torch.cat([ids_pad, ids], 1), "attention_mask": torch.cat([mask_pad, mask], 1)}
    return {"input_ids": torch.cat([ids, ids_pad], 1), "attention_mask": torch.cat([mask, mask_pad], 1)}


@dataclass
class Trace:
    """One generation: logits and tokens on the host, and the seconds of each call."""

    prefill_logits: torch.Tensor  # (batch, bucket, vocabulary)
    step_logits: list[torch.Tensor]  # per step (batch, vocabulary); step 0 from the prefill
    tokens: torch.Tensor  # (batch, decode_steps + 1)
    prefill_s: float = 0.0
    decode_s: list[float] = field(default_factory=list)


def _no_watch(kind: str, index: int) -> AbstractContextManager[None]:
    return contextlib.nullcontext()


def generate(
    workload: ModuleType,
    model: Any,
    padded: dict[str, torch.Tensor],
    decode_steps: int,
    max_cache_len: int,
    device: torch.device,
    synchronize: Callable[[], None],
    watch: Callable[[str, int], AbstractContextManager[Any]] = _no_watch,
    keep: bool = True,
) -> Trace:
    """Prefill, then ``decode_steps`` greedy decode calls; each call timed with the device
    synchronised (a prefill's time includes choosing the first token: time to first token).

    ``watch(kind, index)`` wraps each call (kind prefill or decode, index the step); ``keep``
    False keeps no logits (timing repetitions)."""
    ids = padded["input_ids"].to(device)
    prompt_mask = padded["attention_mask"].to(device)
    batch, bucket = ids.shape
    if bucket + decode_steps > max_cache_len:
        raise ValueError(
            f"bucket {bucket} + {decode_steps} decode steps exceed the static cache of {max_cache_len} positions"
        )
    mask = torch.zeros((batch, max_cache_len), dtype=prompt_mask.dtype, device=device)
    mask[:, :bucket] = prompt_mask
    positions = (prompt_mask.cumsum(-1) - 1).clamp_min(0)
    last = positions.max(-1, keepdim=True).values  # the last real token's position id
    # Where each row's last real token sits: the last position with left padding, before the
    # padding with right padding. Its logits choose the first token.
    rows = torch.arange(batch, device=device)
    last_index = bucket - 1 - prompt_mask.flip(-1).argmax(-1)
    cache = workload.new_cache(model, batch, max_cache_len)
    synchronize()
    with watch("prefill", 0):
        start = time.perf_counter()
        logits = workload.step(model, ids, mask, positions, cache, torch.arange(bucket, device=device))
        first_logits = logits[rows, last_index, :]
        token = first_logits.argmax(-1)
        synchronize()
        prefill_s = time.perf_counter() - start
    prefill_logits = logits.detach().to("cpu", torch.float32) if keep else torch.empty(0)
    step_logits = [first_logits.detach()] if keep else []
    tokens = [token]
    decode_s = []
    for k in range(1, decode_steps + 1):
        at = bucket + k - 1
        mask[:, at] = 1
        with watch("decode", k):
            start = time.perf_counter()
            logits = workload.step(model, token[:, None], mask, last + k, cache, torch.tensor([at], device=device))
            token = logits[:, -1, :].argmax(-1)
            synchronize()
            decode_s.append(time.perf_counter() - start)
        tokens.append(token)
        if keep:
            step_logits.append(logits[:, -1, :].detach())
    return Trace(
        prefill_logits=prefill_logits,
        step_logits=[s.to("cpu", torch.float32) for s in step_logits],
        tokens=torch.stack(tokens, 1).to("cpu"),
        prefill_s=prefill_s,
        decode_s=decode_s,
    )


def steps_agreeing(tokens: torch.Tensor, reference: torch.Tensor) -> int:
    """Leading steps where every row's greedy token equals the reference's."""
    same = (tokens == reference).all(0).tolist()
    return next((i for i, s in enumerate(same) if not s), len(same))


def top_k_overlap(logits: torch.Tensor, reference: torch.Tensor, k: int) -> float:
    """Smallest share, over the rows, of the reference's top-k tokens also in the cell's top-k."""
    k = min(k, reference.shape[-1])
    got, want = logits.topk(k, -1).indices, reference.topk(k, -1).indices
    shared = [len(set(g.tolist()) & set(w.tolist())) / k for g, w in zip(got, want)]
    return min(shared)


def judge(
    trace: Trace,
    ref: Trace,
    prompt_mask: torch.Tensor,
    atol: float,
    rtol: float,
    criterion: dict[str, Any] | None,
    top_k: int,
    min_overlap: float,
) -> dict[str, Any]:
    """The cell's generation against the reference, by the criteria the plan declared.

    The prefill's logits at real (unmasked) positions are judged elementwise (the worst element's
    index is into the whole logits, padded positions included). Greedy tokens:
    how many leading steps agree, and the first step that does not (None: all agree). Top-k
    overlap is judged at the steps up to and including the first divergent one, where the cell
    and the reference saw the same tokens; after it their contexts differ and it is not shown.
    """
    real = prompt_mask.bool()
    stats = compare(
        {"prefill_logits": trace.prefill_logits[real]}, {"prefill_logits": ref.prefill_logits[real]}, atol, rtol
    )
    # The worst element as an index into the logits as they are, (sequence, position, vocabulary
    # entry), not into the real positions gathered flat: a reader looks it up there.
    worst = stats.get("worst_index")
    if worst is not None and len(worst) == 2:
        sequence, position = (int(i) for i in real.nonzero()[worst[0]])
        stats["worst_index"] = [sequence, position, int(worst[1])]
    agreeing = steps_agreeing(trace.tokens, ref.tokens)
    total = trace.tokens.shape[1]
    divergent = agreeing if agreeing < total else None
    overlaps: list[float | None] = [
        top_k_overlap(got, want, top_k) if divergent is None or step <= divergent else None
        for step, (got, want) in enumerate(zip(trace.step_logits, ref.step_logits))
    ]
    judged = [o for o in overlaps if o is not None]
    overlap_ok = min(judged) >= min_overlap if judged else False
    tokens_ok = None
    if criterion is not None:
        tokens_ok = (
            agreeing >= criterion["threshold"] if criterion["op"] == ">=" else agreeing <= criterion["threshold"]
        )
    nonfinite = int((~torch.isfinite(trace.prefill_logits[real])).sum()) + sum(
        int((~torch.isfinite(s)).sum()) for s in trace.step_logits
    )
    return {
        "error_stats": stats,
        "steps_agreeing": agreeing,
        "first_divergent_step": divergent,
        "top_k_overlap": overlaps,
        "top_k_passed": overlap_ok,
        "tokens_passed": tokens_ok,
        "nonfinite": nonfinite,
    }
