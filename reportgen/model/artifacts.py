"""Saved reference outputs beside two logs: how far apart the two runs' references are.

The log records each saved file's path, size and sha256; the tensors themselves stay beside
the log (``artifacts/reference.pt``, one dict of named outputs per input key). Reading them
needs torch, which reportgen does not require: without torch, or without both files, the
distance is "not measured" with the reason. A file is read only when it lies inside its run
directory and its bytes match the sha256 the log recorded (contract.artifact_files, which the
log's reader checks too), and only with
``torch.load(weights_only=True)``, which builds tensors and plain containers and runs no code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reportgen.contract import events as ev
from reportgen.contract.artifact_files import FileProblem, checked_file


@dataclass(frozen=True)
class ReferenceDistances:
    """Max |baseline reference - candidate reference| per input key, or why it was not measured."""

    by_key: dict[str, float | None] = field(default_factory=dict)
    reason: str = ""


def _max_abs(a: Any, b: Any, torch: Any) -> float | None:
    worst = 0.0
    for name, x in a.items():
        y = b.get(name)
        if not (isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor)) or x.shape != y.shape:
            return None
        x, y = x.to(torch.float64), y.to(torch.float64)
        same = (x == y) | (torch.isnan(x) & torch.isnan(y))
        diff = torch.where(same, torch.zeros_like(x), (x - y).abs())
        if diff.numel():
            value = float(torch.nan_to_num(diff, nan=float("inf")).max().item())
            if value == float("inf"):
                return None
            worst = max(worst, value)
    return worst


def reference_distances(base_dir: Path, base: ev.Artifact, cand_dir: Path, cand: ev.Artifact) -> ReferenceDistances:
    """Compare the two saved reference files key by key; never raises."""
    checked = [checked_file(d, a.path, a.bytes, a.sha256) for d, a in ((base_dir, base), (cand_dir, cand))]
    problems = [f"{role}: {f.why}" for role, f in zip(("baseline", "candidate"), checked) if isinstance(f, FileProblem)]
    if problems:
        return ReferenceDistances(reason="; ".join(problems))
    files = [f for f in checked if isinstance(f, Path)]
    try:
        import torch
    except ImportError:
        return ReferenceDistances(reason="reading the saved tensors needs torch, which is not installed here")
    try:
        loaded = [torch.load(path, map_location="cpu", weights_only=True) for path in files]
    except Exception as exc:  # a damaged or foreign file: say so, never a traceback
        return ReferenceDistances(reason=f"the saved reference outputs could not be read: {type(exc).__name__}")
    a, b = loaded
    if not (isinstance(a, dict) and isinstance(b, dict)):
        return ReferenceDistances(reason="the saved reference outputs are not in the collector's layout")
    by_key = {}
    for key in sorted(set(a) & set(b), key=str):
        if isinstance(a[key], dict) and isinstance(b[key], dict):
            by_key[str(key)] = _max_abs(a[key], b[key], torch)
    return ReferenceDistances(by_key=by_key)
