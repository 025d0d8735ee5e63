"""A sha256 of tensors by their content, independent of how (or whether) a file was written.

``torch.save`` writes a different archive (a different record name, other zip metadata) for the
same tensors depending on whether it was given a path or a file handle, and on the torch
version, so a file's sha256 says only that two files are the same bytes. This hash says that
two objects hold the same tensors. Recipe ``tensor-content-v1``, in full, so that any other
program can reproduce it:

1. Flatten the object into (name, leaf) pairs. A mapping contributes each key (which must be
   a string) joined to its parent's name with ``/``; a list or tuple contributes each index in
   decimal the same way; the top-level object's name is the empty string (so a state dict's
   names are its keys, and ``{"b1-l16-contiguous": {"input_ids": t}}`` gives
   ``b1-l16-contiguous/input_ids``).
2. Sort the pairs by name, comparing the names' UTF-8 bytes. Two leaves with one name are an
   error.
3. Start a sha256 with the bytes ``tensor-content-v1\\n``. For each pair in order, feed a header
   line, the compact JSON (``separators=(",", ":")``, ASCII only, so non-ASCII is escaped as
   ``\\uXXXX``) of a list followed by ``\\n``:

   * a tensor: ``["tensor", name, dtype, shape, nbytes]`` where dtype is the torch dtype's name
     without ``torch.`` (``float32``, ``int64``, ``bool``, ``bfloat16``), shape the list of sizes
     and nbytes the element count times the element size; then feed the tensor's raw element
     bytes: detached, on the CPU, its conjugate and negative bits resolved, made contiguous in
     row-major (C) order, little-endian. Strides, storage offsets, the device, requires_grad and
     how the file was written do not enter.
   * ``None``, a bool, an int, a float or a string: ``["value", name, value]`` (a float is
     written by Python's ``repr``-exact JSON; NaN and infinities are an error).

4. The result is the hex digest.

Sparse, quantized, nested and other tensors without plain strided storage, and any other
leaf, are refused with ``ContentHashError``: the log then says why the hash is unknown.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import math
import sys
from typing import Any, Iterator

import torch

RECIPE = "tensor-content-v1"


class ContentHashError(ValueError):
    """The object holds something the recipe does not cover."""


# What hashing a model's state can raise besides: a tensor torch cannot read (RuntimeError), a
# lazy module's uninitialised parameter (ValueError).
UNHASHABLE = (ContentHashError, RuntimeError, ValueError)


def content_sha256(obj: Any) -> str:
    """The ``tensor-content-v1`` sha256 of a tensor, a state dict, or nested dicts/lists of them."""
    leaves = sorted(_leaves("", obj, top=True), key=lambda pair: pair[0].encode("utf-8"))
    digest = hashlib.sha256(f"{RECIPE}\n".encode("ascii"))
    previous = None
    for name, leaf in leaves:
        if name == previous:
            raise ContentHashError(f"two values are named {name!r}")
        previous = name
        if isinstance(leaf, torch.Tensor):
            data = _raw_bytes(name, leaf)
            header = ["tensor", name, str(leaf.dtype).removeprefix("torch."), list(leaf.shape), len(data)]
            digest.update(_line(header))
            digest.update(data)
        else:
            digest.update(_line(["value", name, leaf]))
    return digest.hexdigest()


def model_tensors(model: torch.nn.Module) -> dict[str, Any]:
    """What a model computes with: its state_dict, the buffers it keeps out of it (registered
    with persistent=False, under 'non-persistent:' and their name), and the tensors its modules
    hold as plain attributes (self.noise = torch.randn(4), under 'attribute:'). The weights'
    content hash is of the state_dict alone (what a weights file holds); a fresh process checks
    it rebuilt all of this, since an unseeded buffer or attribute is another model too."""
    tensors = dict(model.state_dict())
    tensors.update((f"non-persistent:{name}", buffer) for name, buffer in model.named_buffers() if name not in tensors)
    for prefix, module in model.named_modules():
        for attr, value in vars(module).items():
            if isinstance(value, torch.Tensor) and not isinstance(value, torch.nn.Parameter):
                tensors[f"attribute:{prefix + '.' if prefix else ''}{attr}"] = value
    return tensors


def content_by_key(obj: dict[str, Any]) -> dict[str, str]:
    """One content sha256 per top-level key (each key's object hashed on its own)."""
    return {str(key): content_sha256(value) for key, value in obj.items()}


def _line(header: list[Any]) -> bytes:
    return (json.dumps(header, separators=(",", ":"), ensure_ascii=True, allow_nan=False) + "\n").encode("ascii")


def _leaves(name: str, obj: Any, top: bool = False) -> Iterator[tuple[str, Any]]:
    def child(key: str) -> str:
        return key if top else f"{name}/{key}"

    if isinstance(obj, torch.Tensor):
        yield name, obj
    elif isinstance(obj, dict):
        for key, value in obj.items():
            if not isinstance(key, str):
                raise ContentHashError(f"{name or 'the object'}: a key that is not a string ({type(key).__name__})")
            yield from _leaves(child(key), value)
    elif isinstance(obj, (list, tuple)):
        for index, value in enumerate(obj):
            yield from _leaves(child(str(index)), value)
    elif obj is None or isinstance(obj, (bool, int, str)):
        yield name, obj
    elif isinstance(obj, float):
        if not math.isfinite(obj):
            raise ContentHashError(f"{name}: a non-finite float value")
        yield name, obj
    else:
        raise ContentHashError(f"{name or 'the object'}: a {type(obj).__name__} is not covered by {RECIPE}")


def _raw_bytes(name: str, tensor: torch.Tensor) -> bytes:
    if tensor.layout != torch.strided or tensor.is_quantized or getattr(tensor, "is_nested", False):
        raise ContentHashError(f"{name}: a {tensor.layout} tensor is not covered by {RECIPE}")
    plain = tensor.detach().to("cpu").resolve_conj().resolve_neg().contiguous()
    size = plain.numel() * plain.element_size()
    if size == 0:
        return b""
    data = ctypes.string_at(plain.data_ptr(), size)
    if sys.byteorder != "little" and plain.element_size() > 1:
        raise ContentHashError(f"{name}: this host is big-endian; {RECIPE} is defined on little-endian bytes")
    return data
