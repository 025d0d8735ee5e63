"""Weights and inputs identified by content (collector/content.py), not by file bytes."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import torch

from collector.content import RECIPE, ContentHashError, content_by_key, content_sha256
from collector.workload import sha256_file


def _weights() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.LayerNorm(3)).state_dict()


def test_same_weights_through_a_path_and_a_handle_have_one_content_hash(tmp_path: Path) -> None:
    weights = _weights()
    by_path, by_handle = tmp_path / "a.pt", tmp_path / "b.pt"
    torch.save(weights, by_path)
    with open(by_handle, "wb") as handle:
        torch.save(weights, handle)
    # The files differ (the archive is named after the file when given a path) ...
    assert sha256_file(by_path) != sha256_file(by_handle)
    # ... the tensors they hold do not.
    loaded = [torch.load(p, weights_only=True) for p in (by_path, by_handle)]
    assert content_sha256(loaded[0]) == content_sha256(loaded[1]) == content_sha256(weights)


def test_recipe_as_documented() -> None:
    """The hash another collector computes from the documented recipe, by hand."""
    t = torch.arange(6, dtype=torch.float32).reshape(2, 3).t()  # non-contiguous
    m = torch.tensor([True, False])
    digest = hashlib.sha256(f"{RECIPE}\n".encode())
    for name, tensor in (("a/m", m), ("a/t", t)):  # sorted by name
        raw = tensor.contiguous().numpy().tobytes()
        header = ["tensor", name, str(tensor.dtype).removeprefix("torch."), list(tensor.shape), len(raw)]
        digest.update((json.dumps(header, separators=(",", ":")) + "\n").encode())
        digest.update(raw)
    assert content_sha256({"a": {"t": t, "m": m}}) == digest.hexdigest()


def test_layout_and_order_do_not_enter_but_values_dtype_shape_and_names_do() -> None:
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    strided = base.t().contiguous().t()  # the same values, column-major
    assert not strided.is_contiguous()
    assert content_sha256({"x": base, "y": base[0]}) == content_sha256({"y": base[0].clone(), "x": strided})
    reference = content_sha256({"x": base})
    changed = base.clone()
    changed[0, 0] = 0.5
    for other in ({"x": changed}, {"x": base.double()}, {"x": base.reshape(4, 3)}, {"z": base}):
        assert content_sha256(other) != reference
    # A non-contiguous view hashes as the same values made contiguous.
    assert content_sha256({"x": base.t()}) == content_sha256({"x": base.t().contiguous()})


def test_by_key_and_refusals() -> None:
    inputs = {
        "b1-l16-contiguous": {"ids": torch.ones(1, 16, dtype=torch.int64)},
        "b2-l16-contiguous": {"ids": torch.zeros(2, 16, dtype=torch.int64)},
    }
    keyed = content_by_key(inputs)
    assert keyed["b1-l16-contiguous"] == content_sha256(inputs["b1-l16-contiguous"])
    assert keyed["b1-l16-contiguous"] != keyed["b2-l16-contiguous"]
    with pytest.raises(ContentHashError, match="not covered"):
        content_sha256({"s": torch.eye(3).to_sparse()})
    with pytest.raises(ContentHashError, match="not a string"):
        content_sha256({1: torch.ones(1)})
    with pytest.raises(ContentHashError, match="non-finite"):
        content_sha256({"v": float("nan")})
    assert content_sha256({"n": None, "k": 3, "s": "x"}) == content_sha256({"s": "x", "k": 3, "n": None})
