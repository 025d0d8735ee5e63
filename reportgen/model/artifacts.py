"""Saved reference outputs beside two logs: how far apart the two runs' references are.

The log records each saved file's path, size and sha256; the tensors themselves stay beside
the log (``artifacts/reference.pt``, one dict of named outputs per input key). Reading them
needs torch, which reportgen does not require: without torch, or without both files, the
distance is "not measured" with the reason. A file is read only when it lies inside its run
directory and its bytes match the sha256 the log recorded, and only with
``torch.load(weights_only=True)``, which builds tensors and plain containers and runs no code.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reportgen.contract import events as ev

MAX_BYTES = 1 << 30


@dataclass(frozen=True)
class ReferenceDistances:
    """Max |baseline reference - candidate reference| per input key, or why it was not measured."""

    by_key: dict[str, float | None] = field(default_factory=dict)
    reason: str = ""


def _checked_file(run_dir: Path, artifact: ev.Artifact) -> Path | str:
    root = run_dir.resolve()
    path = (root / artifact.path).resolve()
    if not path.is_relative_to(root):
        return f"{artifact.path} lies outside its run directory"
    if not path.is_file():
        return f"{artifact.path} is not beside the log"
    size = path.stat().st_size
    if size != artifact.bytes or size > MAX_BYTES:
        return f"{artifact.path} is {size} bytes, the log recorded {artifact.bytes}"
    with path.open("rb") as handle:
        digest = hashlib.file_digest(handle, "sha256")
    if digest.hexdigest() != artifact.sha256:
        return f"{artifact.path} does not match the sha256 in the log"
    return path


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
    files = [_checked_file(base_dir, base), _checked_file(cand_dir, cand)]
    problems = [f"{role}: {f}" for role, f in zip(("baseline", "candidate"), files) if isinstance(f, str)]
    if problems:
        return ReferenceDistances(reason="; ".join(problems))
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
