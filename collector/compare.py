"""Compare a cell's outputs with the trusted reference, elementwise and as a whole.

The rule is the asymmetric one torch.testing.assert_close uses, with the reference as the
expected side: an element passes when |out - ref| <= atol + rtol * |ref|. A NaN or Inf in the
output where the reference is finite is a mismatch. An output whose reference is an integer or
boolean tensor (class or token ids, indices, masks) is compared exactly, as assert_close does:
its elements are allowed 0, since a tolerance made for floats would pass a neighbouring index.
The statistics say how far off the worst element is relative to what it was allowed.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from collector.eventlog import finite_or_none
from collector.plan import RegionError, parse_slice


def describe(name: str, tensor: torch.Tensor) -> dict[str, Any]:
    nonfinite = 0
    if tensor.is_floating_point() or tensor.is_complex():
        nonfinite = int((~torch.isfinite(tensor)).sum().item())
    return {
        "name": name,
        "shape": list(tensor.shape),
        "dtype": str(tensor.dtype).removeprefix("torch."),
        "nonfinite": nonfinite,
    }


def describe_input(name: str, tensor: torch.Tensor) -> dict[str, Any]:
    """An input as the workload prepared it on the host (what reached the model: FedInputs)."""
    info = describe(name, tensor)
    info["contiguous"] = bool(tensor.is_contiguous())
    info["strides"] = list(tensor.stride())
    info["device"] = str(tensor.device)
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


def same_values(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Per element, whether two tensors of one shape hold the same value: equal, or NaN in both
    (NaN != NaN must not make two runs that agree bit for bit differ)."""
    return (x == y) | (torch.isnan(x) & torch.isnan(y)) if x.is_floating_point() else x == y


def written_inputs(fed: dict[str, torch.Tensor], made: dict[str, torch.Tensor]) -> list[str]:
    """The inputs a call wrote into: those whose values ``fed`` (after the call) no longer holds
    of ``made``."""
    return [
        name
        for name, tensor in fed.items()
        if tensor.shape != made[name].shape or not bool(same_values(tensor, made[name]).all())
    ]


def exact_output(tensor: torch.Tensor) -> bool:
    """An integer or boolean tensor: compared exactly, whatever the float tolerance."""
    return not (tensor.is_floating_point() or tensor.is_complex())


def allowance_ratio(diff: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    """|diff| / allowance per element: above 1 is a mismatch. NaN, or any difference where
    nothing is allowed, ranks as infinitely bad."""
    inf = torch.full_like(diff, float("inf"))
    ratio = torch.where(
        allowed > 0,
        diff / allowed.clamp_min(torch.finfo(torch.float64).tiny),
        torch.where(diff > 0, inf, torch.zeros_like(diff)),
    )
    return torch.nan_to_num(ratio, nan=float("inf"))


def judged_mask(rule: dict[str, Any], inputs: dict[str, torch.Tensor], output: torch.Tensor) -> torch.Tensor:
    """Boolean tensor of the output's shape: True where elements are judged.

    ``mask``: an input aligned with the output's leading dimensions (attention_mask (B, L) for a
    (B, L, H) output); elements where it is 0 are not judged. ``region``: index slices over the
    leading dimensions, e.g. [":", "0:64"]; elements outside them are not judged.
    """
    name = rule["output"]
    shape = tuple(output.shape)
    if rule.get("mask"):
        source = rule["mask"]
        if source not in inputs:
            raise RegionError(
                f"compare.outputs.{name}.mask: {source!r} is not an input of the model (inputs: {', '.join(sorted(inputs))})"
            )
        mask = inputs[source].detach().to("cpu")
        mshape = tuple(mask.shape)
        fits = len(mshape) <= len(shape) and all(m in (1, o) for m, o in zip(mshape, shape))
        if not fits:
            raise RegionError(
                f"compare.outputs.{name}.mask: {source} has shape {list(mshape)}, which does not line up with "
                f"{name}'s leading dimensions {list(shape)}"
            )
        keep = (mask != 0).reshape(mshape + (1,) * (len(shape) - len(mshape)))
        return keep.expand(shape)
    slices = [parse_slice(item, f"compare.outputs.{name}.region") for item in rule["region"]]
    if len(slices) > len(shape):
        raise RegionError(
            f"compare.outputs.{name}.region: {len(slices)} slices for an output of {len(shape)} dimensions {list(shape)}"
        )
    for dim, item in enumerate(slices):
        if isinstance(item, int) and not -shape[dim] <= item < shape[dim]:
            raise RegionError(
                f"compare.outputs.{name}.region: index {item} is outside dimension {dim} of size {shape[dim]}"
            )
    keep = torch.zeros(shape, dtype=torch.bool)
    keep[tuple(slices)] = True
    if not bool(keep.any()):
        raise RegionError(f"compare.outputs.{name}.region: {rule['region']} selects no element of {list(shape)}")
    return keep


def _one_output(
    out: torch.Tensor, ref: torch.Tensor, atol: float, rtol: float, judged: torch.Tensor | None = None
) -> dict[str, Any]:
    out64 = out.detach().to("cpu", torch.float64)
    ref64 = ref.detach().to("cpu", torch.float64)
    diff = (out64 - ref64).abs()
    allowed = atol + rtol * ref64.abs()
    if exact_output(ref):
        allowed = torch.zeros_like(ref64)
        if exact_output(out):  # in int64, where float64 would merge 2**53 + 1 with 2**53
            out_i, ref_i = out.detach().to("cpu", torch.int64), ref.detach().to("cpu", torch.int64)
            # The difference taken in int64 before float64, which would read 2**63 + 1000 - (2**63 + 5) as 1024.
            exact = (out_i - ref_i).to(torch.float64).abs()
            diff = torch.where(out_i == ref_i, torch.zeros_like(diff), exact.clamp_min(1.0))
    # NaN never compares <= anything, so it counts as a mismatch.
    bad = ~(diff <= allowed)
    # A failing element whose ratio is not above 1 (a NaN difference or a NaN allowance, from a
    # NaN or Inf in the reference) still ranks above every passing element.
    ratio = allowance_ratio(diff, allowed)
    ratio = torch.where(bad & ~(ratio > 1), torch.full_like(ratio, float("inf")), ratio)
    stats: dict[str, Any] = {}
    if judged is not None:
        outside = ~judged
        stats["_outside"] = {
            "count": int(outside.sum().item()),
            "max_abs": float(diff[outside].max().item()) if bool(outside.any()) else 0.0,
            "max_rel": max_relative(diff[outside], ref64.abs()[outside]) if bool(outside.any()) else 0.0,
            "nonfinite": int((~torch.isfinite(out64) & outside).sum().item()),
            "beyond_tolerance": int((bad & outside).sum().item()),
        }
        diff_j, ref_j, bad_j = diff[judged], ref64.abs()[judged], bad & judged
    else:
        judged = torch.ones(diff.shape, dtype=torch.bool)
        diff_j, ref_j, bad_j = diff.reshape(-1), ref64.abs().reshape(-1), bad
    # "Worst" is picked among the failing elements when any fails; otherwise it is the judged
    # element closest to its allowance.
    pool = bad_j if bool(bad_j.any()) else judged
    ranked = torch.where(pool, ratio, torch.full_like(ratio, float("-inf")))
    flat = int(torch.argmax(ranked.reshape(-1)).item()) if ranked.numel() else 0
    index = list(torch.unravel_index(torch.tensor(flat), tuple(diff.shape))) if diff.numel() and diff.dim() else []
    some = diff_j.numel() > 0
    stats.update(
        {
            "max_abs": float(diff_j.max().item()) if some else 0.0,
            "max_rel": max_relative(diff_j, ref_j) if some else 0.0,
            "mismatched": int(bad_j.sum().item()),
            "total": int(diff_j.numel()),
            "worst_index": [int(i) for i in index],
            "allowed_at_worst": float(allowed.reshape(-1)[flat].item()) if diff.numel() else atol,
            "diff_at_worst": float(diff.reshape(-1)[flat].item()) if diff.numel() else 0.0,
            "_ratio": float(ranked.reshape(-1)[flat].item()) if some else float("-inf"),
        }
    )
    return stats


def finite_stats(value: Any) -> Any:
    """Every derived statistic through one rule: a float that is not finite becomes null
    (JSON has no NaN or Infinity, and the log writer refuses them)."""
    if isinstance(value, dict):
        return {k: finite_stats(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite_stats(v) for v in value]
    if isinstance(value, float):
        return finite_or_none(value)
    return value


def compare(
    outputs: dict[str, torch.Tensor],
    reference: dict[str, torch.Tensor],
    atol: float,
    rtol: float,
    rules: list[dict[str, Any]] | None = None,
    inputs: dict[str, torch.Tensor] | None = None,
) -> dict[str, Any]:
    """Error statistics over all named outputs; raises ValueError on a shape or name mismatch.

    ``rules`` are the plan's judged regions (compare.outputs): an output with a rule is judged
    on its region only, and the elements left out get their own statistics (``outside``), so
    nothing disappears. With rules, ``per_output`` carries each output's figures.
    """
    if set(outputs) != set(reference):
        raise ValueError(f"outputs {sorted(outputs)} do not match reference outputs {sorted(reference)}")
    by_output = {r["output"]: r for r in rules or []}
    unknown = sorted(set(by_output) - set(reference))
    if unknown:
        raise RegionError(
            f"compare.outputs: {', '.join(unknown)} not among the model's outputs ({', '.join(sorted(reference))})"
        )
    per_output = {}
    for name, ref in reference.items():
        out = outputs[name]
        if tuple(out.shape) != tuple(ref.shape):
            raise ValueError(f"output {name!r} has shape {list(out.shape)}, reference has {list(ref.shape)}")
        if exact_output(out) != exact_output(ref):  # 300.0 against 300 would compare equal
            raise ValueError(
                f"output {name!r} is {str(out.dtype).removeprefix('torch.')}, the reference's is "
                f"{str(ref.dtype).removeprefix('torch.')}: an integer or boolean output and a floating one are not the same output"
            )
        if (out.dtype == torch.uint64) != (ref.dtype == torch.uint64):  # 2**63 + 5 reads -2**63 + 5 in int64
            raise ValueError(
                f"output {name!r} is {str(out.dtype).removeprefix('torch.')}, the reference's is "
                f"{str(ref.dtype).removeprefix('torch.')}: unsigned 64-bit values from 2**63 on have no int64 "
                "equal, so the two are compared only when both are uint64"
            )
        rule = by_output.get(name)
        judged = judged_mask(rule, inputs or {}, ref) if rule else None
        per_output[name] = _one_output(out, ref, atol, rtol, judged)
    if not any(s["total"] for s in per_output.values()):
        raise ValueError(
            f"every output ({', '.join(sorted(per_output))}) has no element to judge: a pass would judge nothing"
        )
    worst_name = max(per_output, key=lambda n: per_output[n]["_ratio"])
    worst = per_output[worst_name]
    stats = {
        "max_abs": _finite_max([s["max_abs"] for s in per_output.values()]),
        "max_rel": _finite_max([s["max_rel"] for s in per_output.values()]),
        "mismatched": sum(s["mismatched"] for s in per_output.values()),
        "total": sum(s["total"] for s in per_output.values()),
        "worst_index": worst["worst_index"],
        "worst_output": worst_name,
        "allowed_at_worst": worst["allowed_at_worst"],
        "diff_at_worst": worst["diff_at_worst"],
    }
    if rules:
        stats["per_output"] = [
            {
                "name": name,
                "mismatched": s["mismatched"],
                "total": s["total"],
                "max_abs": s["max_abs"],
                "max_rel": s["max_rel"],
                "region": by_output[name]["description"] if name in by_output else None,
                "outside": s.get("_outside"),
            }
            for name, s in per_output.items()
        ]
    return finite_stats(stats)


def beyond_tolerances(
    first: dict[str, torch.Tensor],
    second: dict[str, torch.Tensor],
    tolerances: dict[str, dict[str, Any]],
    rules: list[dict[str, Any]],
    inputs: dict[str, torch.Tensor],
) -> dict[str, int] | None:
    """Per dtype the plan gives a tolerance for, the judged elements where the reference's second
    run differs from its first by more than that tolerance (the first as the expected side, the
    rule every cell is judged by): a reference that does not repeat within a cell's tolerance
    cannot tell that cell's backend error from its own. As for the noise floor
    (``max_abs_between``), a NaN facing a NaN or an Inf facing the same Inf is agreement, not an
    element beyond (the reference's own non-finite values are a finding of their own). None when
    the runs cannot be compared."""
    first, second = _agreeing_nonfinite_zeroed(first, second)
    counts = {}
    for dtype, tol in sorted(tolerances.items()):
        if not isinstance(tol, dict) or "atol" not in tol or "rtol" not in tol:
            continue
        try:
            counts[dtype] = int(compare(second, first, tol["atol"], tol["rtol"], rules, inputs)["mismatched"])
        except ValueError:  # RegionError is one
            return None
    return counts


def _agreeing_nonfinite_zeroed(
    a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]
) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """Both runs with 0 where they hold the same non-finite value (compare counts a NaN facing a
    NaN as outside every tolerance)."""
    out_a, out_b = dict(a), dict(b)
    for name, x in a.items():
        y = b.get(name)
        if y is None or x.shape != y.shape or not (x.is_floating_point() and y.is_floating_point()):
            continue
        same = ~torch.isfinite(x) & same_values(x, y)
        if bool(same.any()):
            out_a[name] = torch.where(same, torch.zeros_like(x), x)
            out_b[name] = torch.where(same, torch.zeros_like(y), y)
    return out_a, out_b


def judged_nonfinite(
    outputs: dict[str, torch.Tensor],
    reference: dict[str, torch.Tensor],
    rules: list[dict[str, Any]],
    inputs: dict[str, torch.Tensor],
) -> tuple[int, int]:
    """Non-finite elements of the outputs and of the reference, counted in the judged regions only."""
    by_output = {r["output"]: r for r in rules}
    got = want = 0
    for name, ref in reference.items():
        out64 = outputs[name].detach().to("cpu", torch.float64)
        ref64 = ref.detach().to("cpu", torch.float64)
        keep = (
            judged_mask(by_output[name], inputs, ref) if name in by_output else torch.ones(ref.shape, dtype=torch.bool)
        )
        got += int((~torch.isfinite(out64) & keep).sum().item())
        want += int((~torch.isfinite(ref64) & keep).sum().item())
    return got, want


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
    Two runs whose output names or shapes differ are not noise: ValueError (broadcasting would
    otherwise turn a shape that changed between calls into a difference of values).
    """
    if sorted(a) != sorted(b):
        raise ValueError(
            f"the outputs' names changed between two calls with the same inputs: {sorted(a)} then {sorted(b)}"
        )
    worst = 0.0
    for name, tensor in a.items():
        if tuple(tensor.shape) != tuple(b[name].shape):
            raise ValueError(
                f"output {name!r} changed shape between two calls with the same inputs: "
                f"{list(tensor.shape)} then {list(b[name].shape)}"
            )
        x = tensor.detach().to("cpu", torch.float64)
        y = b[name].detach().to("cpu", torch.float64)
        same = same_values(x, y)
        diff = torch.where(same, torch.zeros_like(x), (x - y).abs())
        if diff.numel():
            worst = max(worst, float(torch.nan_to_num(diff, nan=float("inf")).max().item()))
    return finite_or_none(worst)


def nonfinite_count(outputs: dict[str, torch.Tensor]) -> int:
    """NaN and Inf elements over all floating outputs (a reference's own non-finite values)."""
    return sum(describe(name, tensor)["nonfinite"] for name, tensor in outputs.items())
