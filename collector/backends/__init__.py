"""Device adapters, one module per target: ``base`` (cpu, and what all share), ``cuda``, ``neuron``.

Each adapter answers the same questions for its target: how to synchronise, compile, track
fallback and profile, and what ``collector.environment`` reads there. Where a question has no
answer on a backend (CPU fallback on the CPU itself) the answer says "not applicable" with a
reason; where it could not be measured it says "unmeasured" with a reason. Never an empty list
standing for "unknown". A new target is a new module here, registered in ``ADAPTERS``, plus its
constraint file (``reportgen/judge/constraints/``, copied into ``collector/target_rules.json``).
"""

from __future__ import annotations

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
from collector.backends.cuda import CudaBackend
from collector.backends.neuron import NeuronBackend, neuron_warnings

__all__ = [
    "ADAPTERS", "AUTO_ORDER", "CACHE_ROOT", "Backend", "BackendUnavailable", "CudaBackend", "NeuronBackend", "OpRecorder",
    "count_files", "finish_cache_listing", "list_cache_dirs", "measured", "neuron_warnings", "not_measured",
    "resolve_target", "select_backend", "top_ops",
]

# Every target's adapter class, in the order environment.py records their facts.
ADAPTERS: dict[str, type[Backend]] = {"cpu": Backend, "neuron": NeuronBackend, "cuda": CudaBackend}
# What --target auto tries, in order, before the cpu.
AUTO_ORDER = ("neuron", "cuda")


def resolve_target(requested: str, intended: str | None) -> tuple[Backend, dict[str, str]]:
    """The adapter to run on and how it was chosen (the run_start ``target_choice``).

    ``auto`` with a plan that names its target runs there or nowhere: it never falls back to
    another device silently. Without a plan target, ``auto`` probes neuron, then cuda, then cpu
    and records what it found. A target named on the command line is used as asked; when it
    differs from the plan's target the reason says so, and the report judges the run as
    evidence for the device it ran on only.
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
            return backend, _choice(requested, backend, "auto, the plan names no target: " + "; ".join(found + [f"{candidate} available"]))
        return Backend(), _choice(requested, Backend(), "auto, the plan names no target: " + "; ".join(found + ["cpu used"]))
    backend = select_backend(requested)
    if intended is not None and intended != backend.name:
        why = f"named on the command line, overriding the plan's target {intended}: this run is not evidence for {intended}"
    else:
        why = "named on the command line" + (f", the plan's target" if intended else "; the plan names no target")
    return backend, _choice(requested, backend, why)


def _choice(requested: str, backend: Backend, reason: str) -> dict[str, str]:
    return {"requested": requested, "resolved": backend.name, "reason": reason}


def select_backend(target: str) -> Backend:
    """The adapter for ``target`` (a resolved target: ``auto`` is resolved by resolve_target)."""
    if target not in ADAPTERS:
        raise BackendUnavailable(f"unknown target {target!r}; choose auto, {', '.join(ADAPTERS)}")
    return ADAPTERS[target]()
