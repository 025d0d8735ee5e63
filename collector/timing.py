"""Warm repetitions with device synchronisation (what the clock covers follows timing.scope).

The fresh processes that time a cold first call are started and ended by collector.supervise."""

from __future__ import annotations

import time
from typing import Any, Callable

from collector.stability import quantile, sorted_median


def warm_stats(samples: list[float]) -> dict[str, Any]:
    """A warm series' figures: its least sample, median, 90th percentile and interquartile
    range, the quantiles inclusive (statistics.quantiles' method, by stability.quantile: the one
    formula the stability classifier uses too)."""
    ordered = sorted(samples)
    if len(ordered) >= 2:
        q1, q3, p90 = quantile(ordered, 1, 4), quantile(ordered, 3, 4), quantile(ordered, 9, 10)
    else:
        q1 = q3 = p90 = ordered[0]
    return {
        "samples_s": samples,
        "min_s": ordered[0],
        "median_s": sorted_median(ordered),
        "p90_s": p90,
        "iqr_s": q3 - q1,
    }


class InputsChanged(ValueError):
    """The workload's make_inputs gave a timed call other inputs than the ones the cell was checked with."""


def inputs_changed(made: dict[str, Any], checked: dict[str, Any]) -> str | None:
    """How inputs made again for a timed call differ from the checked ones (names, and each
    tensor's shape, dtype and layout); None when they do not. A timing of other inputs is not
    the cell's: its figure would be reported beside a check it never had."""
    if made.keys() != checked.keys():
        return (
            f"make_inputs gave the inputs {sorted(map(str, made))[:8]} for a timed call, but the cell was checked "
            f"with {sorted(map(str, checked))[:8]}"
        )
    for name, value in checked.items():
        again = made[name]
        if _tensor_words(again) != _tensor_words(value):
            return (
                f"make_inputs gave input {name!r} as {_tensor_words(again)} for a timed call, but the cell was "
                f"checked with {_tensor_words(value)}: a workload timed with preprocessing must make the same "
                "inputs each call"
            )
    return None


def _tensor_words(value: Any) -> str:
    """'shape [2, 3, 4] float32' (', non-contiguous' where it is not); a value that is no tensor by its type."""
    shape = getattr(value, "shape", None)
    if shape is None:
        return type(value).__name__
    contiguous = getattr(value, "is_contiguous", None)
    layout = ", non-contiguous" if callable(contiguous) and not contiguous() else ""
    return f"shape {list(shape)[:8]} {str(getattr(value, 'dtype', '')).removeprefix('torch.')}{layout}"


def time_warm(sample: Callable[[], float], warmup: int, repetitions: int) -> list[float]:
    """Seconds per sample; ``sample`` times itself (see ``timed_sample``)."""
    for _ in range(warmup):
        sample()
    return [sample() for _ in range(repetitions)]


def scope_problem(scope: dict[str, Any], training: bool) -> str | None:
    """Why the collector cannot honour the plan's timing.scope, or None when it can."""
    asked = [k for k in ("preprocessing", "host_to_device", "output_retrieval") if scope.get(k)]
    if training and asked:
        return (
            f"timing.scope: {', '.join(asked)} cannot be timed for a training plan (its timings are one "
            "full training step on inputs already on the device); set them to false"
        )
    return None


# The one note on work a sample does off the clock (reportgen leaves it out of what the clock
# covered: two clocks that differ only there time the same stages).
OFF_CLOCK_NOTE = "freshly prepared inputs are copied to the device off the clock"


def timed_sample(
    call_with: Callable[[dict[str, Any]], Any],
    device_inputs: dict[str, Any],
    host_inputs: dict[str, Any],
    prepare: Callable[[], dict[str, Any]],
    to_device: Callable[[dict[str, Any]], dict[str, Any]],
    synchronize: Callable[[], None],
    scope: dict[str, Any],
    device_is_host: bool,
    stages: dict[str, float] | None = None,
) -> tuple[Callable[[], float], list[str], list[str]]:
    """One timed sample per call, honouring the plan's timing.scope; also what it times.

    Each stage inside the region has its own clock, bounded by a device synchronisation, and
    the sample is their sum: preprocessing (``prepare``: the workload's make_inputs and cast,
    fresh each sample), host-to-device copies, the model call, copying outputs to the host.
    A stage outside the region that must still run (copying freshly prepared inputs) runs
    off the clock. Returns (sample, stages timed, notes on how they were done). When ``stages``
    is given, each sample leaves its per-stage seconds there.
    """
    prep, h2d, back = (
        bool(scope.get("preprocessing")),
        bool(scope.get("host_to_device")),
        bool(scope.get("output_retrieval")),
    )
    region = (
        (["preprocessing"] if prep else [])
        + (["host_to_device"] if h2d else [])
        + ["model_call"]
        + (["output_retrieval"] if back else [])
    )
    notes = []
    if device_is_host and h2d:
        notes.append("host_to_device: no copy is made, the device is the host")
    if device_is_host and back:
        notes.append("output_retrieval: no copy is made, the device is the host")
    if prep and not h2d and not device_is_host:
        notes.append(OFF_CLOCK_NOTE)

    def sample() -> float:
        took: dict[str, float] = {}
        synchronize()
        host = host_inputs
        if prep:
            start = time.perf_counter()
            host = prepare()
            took["preprocessing"] = time.perf_counter() - start
            if (changed := inputs_changed(host, host_inputs)) is not None:  # off the clock
                raise InputsChanged(changed)
        inputs = device_inputs
        if prep or h2d:
            start = time.perf_counter()
            inputs = to_device(host)
            synchronize()
            if h2d:
                took["host_to_device"] = time.perf_counter() - start
        start = time.perf_counter()
        outputs = call_with(inputs)
        synchronize()
        took["model_call"] = time.perf_counter() - start
        if back:
            start = time.perf_counter()
            _to_host(outputs)
            synchronize()
            took["output_retrieval"] = time.perf_counter() - start
        if stages is not None:
            stages.clear()
            stages.update(took)
        return sum(took.values())

    return sample, region, notes


def _to_host(outputs: Any) -> Any:
    if isinstance(outputs, dict):
        return {k: _to_host(v) for k, v in outputs.items()}
    if isinstance(outputs, (list, tuple)):
        return [_to_host(v) for v in outputs]
    to = getattr(outputs, "to", None)
    return to("cpu") if to is not None else outputs


def plain_sample(call: Callable[[], Any], synchronize: Callable[[], None]) -> Callable[[], float]:
    """The whole ``call`` on the clock, the device synchronised before and after."""

    def sample() -> float:
        synchronize()
        start = time.perf_counter()
        call()
        synchronize()
        return time.perf_counter() - start

    return sample
