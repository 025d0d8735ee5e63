"""Device adapters, one per target, found through the backend descriptors.

A backend is a descriptor (``NAME.toml`` here, or in a folder named by
``MIGRATION_RECORD_BACKENDS``: ``collector/descriptors.py``), the adapter class it names (``base``
is the cpu's and what all share) and a constraints file read by ``reportgen``. This package names
no backend: every adapter, built in or not, is loaded from the file its descriptor names.
Each adapter answers the same questions for its target: how to synchronise, compile, track
fallback and profile, and what ``collector.environment`` reads there. Where a question has no
answer on a backend (CPU fallback on the CPU itself) the answer says "not applicable" with a
reason; where it could not be measured it says "unmeasured" with a reason. Never an empty list
standing for "unknown". What is data (families, variables, versions, caches, scheduler
resources) is in the descriptor, not in the adapter.
"""

from __future__ import annotations

import importlib

from collector.backends.base import (
    CACHE_ROOT,
    Backend,
    BackendUnavailable,
    OpRecorder,
    count_files,
    finish_cache_listing,
    list_cache_dirs,
    measured,
    not_measured,
    top_ops,
)
from collector.descriptors import Descriptor, DescriptorError, descriptors, load_beside, module_name

__all__ = [
    "ADAPTERS",
    "AUTO_ORDER",
    "CACHE_ROOT",
    "Backend",
    "Descriptor",
    "DescriptorError",
    "BackendUnavailable",
    "OpRecorder",
    "count_files",
    "finish_cache_listing",
    "list_cache_dirs",
    "measured",
    "not_measured",
    "resolve_target",
    "select_backend",
    "top_ops",
]


def _adapter(descriptor: Descriptor) -> type[Backend]:
    """The adapter class a descriptor names, from the file beside the descriptor: a built-in
    one's is a module of this package (``collector.backends.FILE``, imported once under that
    name), a plugin's is loaded under a name of its own."""
    if not descriptor.adapter_file.is_file():
        raise DescriptorError(f"{descriptor.path}: adapter: {descriptor.adapter_file} is not a file")
    if descriptor.builtin:
        module = importlib.import_module(f"{__name__}.{descriptor.adapter_file.stem}")
    else:
        module = load_beside(
            descriptor, module_name("collector_backend_", descriptor.name), descriptor.adapter_file, "adapter"
        )
    adapter = getattr(module, descriptor.adapter_class, None)
    if not (isinstance(adapter, type) and issubclass(adapter, Backend)):
        raise DescriptorError(
            f"{descriptor.path}: adapter: {descriptor.adapter} is not a Backend subclass in {descriptor.adapter_file.name}"
        )
    # A subclass keeps its own descriptor, never its base's (the cpu adapter is everyone's base).
    adapter.descriptor = descriptor
    adapter.name = descriptor.name
    adapter.compile_backend = descriptor.compile_backend
    return adapter


# Every target's adapter class, in descriptor order (environment.py records their facts so).
ADAPTERS: dict[str, type[Backend]] = {name: _adapter(d) for name, d in descriptors().items()}
# What --target auto tries, in order, before the cpu.
AUTO_ORDER = tuple(name for name, d in descriptors().items() if d.auto_order is not None)


def resolve_target(requested: str, intended: str | None) -> tuple[Backend, dict[str, str]]:
    """The adapter to run on and how it was chosen (the run_start ``target_choice``).

    ``auto`` with a plan that names its target runs there or nowhere: it never falls back to
    another device silently. Without a plan target, ``auto`` probes the targets whose descriptors
    give an ``auto_order``, in that order, then uses the cpu, and records what it found. A target
    named on the command line is used as asked; when it differs from the plan's target the
    reason says so, and the report judges the run as evidence for the device it ran on only.
    """
    if requested == "auto" and intended is not None:
        try:
            backend = select_backend(intended)
        except BackendUnavailable as exc:
            raise BackendUnavailable(
                f"the plan's target is {intended}, which is not available here ({exc}); "
                f"--target auto never runs a {intended} plan elsewhere. Name another target with --target "
                f"to run it anyway: its report will say it is not evidence for {intended}"
            ) from None
        return backend, _choice(requested, backend, f"auto: the plan's target {intended} is available")
    if requested == "auto":
        found = []
        for candidate in AUTO_ORDER:
            try:
                backend = select_backend(candidate)
            except BackendUnavailable as exc:
                found.append(f"{candidate} not available ({exc})")
                continue
            return backend, _choice(
                requested, backend, "auto, the plan names no target: " + "; ".join(found + [f"{candidate} available"])
            )
        return Backend(), _choice(
            requested, Backend(), "auto, the plan names no target: " + "; ".join(found + ["cpu used"])
        )
    backend = select_backend(requested)
    if intended is not None and intended != backend.name:
        why = f"named on the command line, overriding the plan's target {intended}: this run is not evidence for {intended}"
    else:
        why = "named on the command line" + (", the plan's target" if intended else "; the plan names no target")
    return backend, _choice(requested, backend, why)


def _choice(requested: str, backend: Backend, reason: str) -> dict[str, str]:
    return {"requested": requested, "resolved": backend.name, "reason": reason}


def select_backend(target: str) -> Backend:
    """The adapter for ``target`` or one of its aliases (``auto`` is resolved by resolve_target)."""
    target = next((name for name, d in descriptors().items() if target in d.aliases), target)
    if target not in ADAPTERS:
        raise BackendUnavailable(f"unknown target {target!r}; choose auto, {', '.join(ADAPTERS)}")
    return ADAPTERS[target]()
