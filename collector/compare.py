"""Compare a cell's outputs with the trusted reference, elementwise and as a whole.

The rule is the asymmetric one torch.testing.assert_close uses, with the reference as the
expected side: an element passes when |out - ref| <= atol + rtol * |ref|. A NaN or Inf in the
output where the reference is finite is a mismatch. The statistics say how far off the worst
element is relative to what it was allowed.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from collector.eventlog import finite_or_none


def describe(name: str, tensor: torch.Tensor) -> dict[str, Any]:
    nonfinite = 0
    if tensor.is_floating_point() or tensor.is_complex():
        nonfinite = int((~torch.isfinite(tensor)).sum().item())
    return {"name": name, "shape": list(tensor.shape), "dtype": str(tensor.dtype).removeprefix("torch."), "nonfinite": nonfinite}


def describe_input(name: str, tensor: torch.Tensor) -> dict[str, Any]:
    info = describe(name, tensor)
    info["contiguous"] = bool(tensor.is_contiguous())
    return info


def max_relative(diff: torch.Tensor, ref_abs: torch.Tensor) -> float:
    """Largest |diff| / |ref| over elements whose reference is non-zero (undefined elsewhere);
    infinite when any difference is not finite, wherever it is (never a 0 that hides a NaN)."""
    if not bool(torch.isfinite(diff).all()):
        return float("inf")
    nonzero = ref_abs > 0
    if not bool(nonzero.any()):
        return 0.0
    return float((diff[nonzero] / ref_abs[nonzero]).max().item())


def allowance_ratio(diff: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    """|diff| / allowance per element: above 1 is a mismatch. NaN, or any difference where
    nothing is allowed, ranks as infinitely bad."""
    inf = torch.full_like(diff, float("inf"))
    ratio = torch.where(allowed > 0, diff / allowed.clamp_min(torch.finfo(torch.float64).tiny), torch.where(diff > 0, inf, torch.zeros_like(diff)))
    return torch.nan_to_num(ratio, nan=float("inf"))


def _one_output(out: torch.Tensor, ref: torch.Tensor, atol: float, rtol: float) -> dict[str, Any]:
    out64 = out.detach().to("cpu", torch.float64)
    ref64 = ref.detach().to("cpu", torch.float64)
    diff = (out64 - ref64).abs()
    allowed = atol + rtol * ref64.abs()
    # NaN never compares <= anything, so it counts as a mismatch.
    bad = ~(diff <= allowed)
    ratio = allowance_ratio(diff, allowed)
    flat = int(torch.argmax(ratio.reshape(-1)).item()) if ratio.numel() else 0
    index = list(torch.unravel_index(torch.tensor(flat), tuple(diff.shape))) if diff.dim() else []
    return {
        "max_abs": float(diff.max().item()) if diff.numel() else 0.0,
        "max_rel": max_relative(diff, ref64.abs()) if diff.numel() else 0.0,
        "mismatched": int(bad.sum().item()),
        "total": int(diff.numel()),
        "worst_index": [int(i) for i in index],
        "allowed_at_worst": float(allowed.reshape(-1)[flat].item()) if diff.numel() else atol,
        "diff_at_worst": float(diff.reshape(-1)[flat].item()) if diff.numel() else 0.0,
        "_ratio": float(ratio.reshape(-1)[flat].item()) if diff.numel() else float("-inf"),
    }


def compare(outputs: dict[str, torch.Tensor], reference: dict[str, torch.Tensor], atol: float, rtol: float) -> dict[str, Any]:
    """Error statistics over all named outputs; raises ValueError on a shape or name mismatch."""
    if set(outputs) != set(reference):
        raise ValueError(f"outputs {sorted(outputs)} do not match reference outputs {sorted(reference)}")
    per_output = {}
    for name, ref in reference.items():
        out = outputs[name]
        if tuple(out.shape) != tuple(ref.shape):
            raise ValueError(f"output {name!r} has shape {list(out.shape)}, reference has {list(ref.shape)}")
        per_output[name] = _one_output(out, ref, atol, rtol)
    worst_name = max(per_output, key=lambda n: per_output[n]["_ratio"])
    worst = per_output[worst_name]
    return {
        "max_abs": _finite_max([s["max_abs"] for s in per_output.values()]),
        "max_rel": _finite_max([s["max_rel"] for s in per_output.values()]),
        "mismatched": sum(s["mismatched"] for s in per_output.values()),
        "total": sum(s["total"] for s in per_output.values()),
        "worst_index": worst["worst_index"],
        "worst_output": worst_name,
        "allowed_at_worst": worst["allowed_at_worst"],
        "diff_at_worst": finite_or_none(worst["diff_at_worst"]),
    }


def _finite_max(values: list[float]) -> float | None:
    """The largest value, or None when any is NaN or infinite (never order-dependent)."""
    if any(not math.isfinite(v) for v in values):
        return None
    return max(values)


def max_abs_between(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float | None:
    """Largest elementwise difference between two runs; the reference's noise floor.

    Two runs that agree bit for bit agree on their non-finite elements too: a NaN facing a NaN,
    or an Inf facing the same Inf, is no difference (NaN != NaN must not make a deterministic
    reference look noisy). A non-finite element facing anything else makes the result None.
    """
    worst = 0.0
    for name, tensor in a.items():
        x = tensor.detach().to("cpu", torch.float64)
        y = b[name].detach().to("cpu", torch.float64)
        same = (x == y) | (torch.isnan(x) & torch.isnan(y))
        diff = torch.where(same, torch.zeros_like(x), (x - y).abs())
        if diff.numel():
            worst = max(worst, float(torch.nan_to_num(diff, nan=float("inf")).max().item()))
    return finite_or_none(worst)


def nonfinite_count(outputs: dict[str, torch.Tensor]) -> int:
    """NaN and Inf elements over all floating outputs (a reference's own non-finite values)."""
    return sum(describe(name, tensor)["nonfinite"] for name, tensor in outputs.items())
