"""Builds the synthetic example logs used as test fixtures.

Every log made here says in its run_start that it is synthetic: none is a measurement, and
the report shows a banner saying so. ``python tests/logbuilder.py`` rewrites
``tests/fixtures/*.jsonl``; a test fails when the committed files differ from what this
module builds.
"""

from __future__ import annotations

import copy
import json
import statistics
from pathlib import Path
from typing import Any, Callable

from collector.timing import warm_stats

FIXTURES = Path(__file__).parent / "fixtures"
VERSION = "1.0"
SHA_ZERO = "0" * 64
SHA_ONE = "1" * 64

SHAPES = [(1, 16), (2, 16)]
MODES = ["eager", "compiled"]


def shape_key(batch: int, length: int, layout: str = "contiguous", dtype: str = "float32") -> str:
    return f"b{batch}-l{length}-{layout}-{dtype}"


def case_key(batch: int, length: int, mode: str, layout: str = "contiguous", dtype: str = "float32") -> str:
    return f"{shape_key(batch, length, layout, dtype)}-{mode}"


def _stamp(seq: int) -> str:
    return (
        f"2026-01-01T00:00:{seq:02d}.000000Z" if seq < 60 else f"2026-01-01T00:{seq // 60:02d}:{seq % 60:02d}.000000Z"
    )


def _fact(value: str | None, reason: str = "not present on this host") -> dict[str, Any]:
    if value is None:
        return {"value": None, "unknown_reason": reason}
    return {"value": value, "source": "synthetic fixture"}


def base_events(target: str = "cpu", family: str = "cpu") -> list[dict[str, Any]]:
    """A complete, passing synthetic run of a tiny encoder on the CPU."""
    timing_scope = {
        "preprocessing": False,
        "host_to_device": False,
        "output_retrieval": False,
        "synchronized": True,
        "note": "model call only",
    }
    matrix = [
        {
            "case": case_key(b, l, m),
            "batch": b,
            "length": l,
            "layout": "contiguous",
            "dtype": "float32",
            "mode": m,
        }
        for b, l in SHAPES
        for m in MODES
    ]
    events: list[dict[str, Any]] = [
        {
            "kind": "run_start",
            "run_id": "synthetic-tiny-cpu",
            "collector": "hand-written fixture",
            "workload": "tiny-encoder",
            "target": target,
            "command": ["python", "tests/logbuilder.py"],
            "started_at": "2026-01-01T00:00:00Z",
            "origin": "synthetic",
            "origin_note": "Hand-built test fixture; not a measurement of any hardware.",
        },
        {
            "kind": "environment",
            "backend_family": family,
            "backend_family_reason": "synthetic fixture",
            "device_type": "cpu" if family == "cpu" else family.split("-")[0],
            "versions": {
                "python": _fact("3.12.7"),
                "torch": _fact("2.13.0"),
                "torch_neuronx": _fact(None),
                "os_release": _fact("Ubuntu 26.04 LTS"),
            },
            "device": {"device_name": _fact("cpu"), "device_count": _fact("1")},
            "env_vars": {},
            "artifacts": [],
        },
        {
            "kind": "plan",
            "workload": "tiny-encoder",
            "description": "Two-layer transformer encoder, int64 ids, bool mask.",
            "model_revision": "tiny-encoder seed 0",
            "weights_sha256": SHA_ONE,
            "target": target,
            "matrix": matrix,
            "reference": "cpu eager float32, run twice",
            "tolerances": {
                "float32": {
                    "atol": 1e-5,
                    "rtol": 1e-4,
                    "task": {"metric": "cosine_to_reference", "op": ">=", "threshold": 0.999},
                    "source": "plan",
                }
            },
            "warm_repetitions": 5,
            "timing_scope": timing_scope,
            "requirements": [],
            "attention_path": "sdpa",
        },
        {
            "kind": "artifact",
            "role": "inputs",
            "path": "artifacts/inputs.pt",
            "bytes": 1024,
            "sha256": SHA_ZERO,
        },
    ]
    for b, l in SHAPES:
        events.append(
            {
                "kind": "reference",
                "shape": shape_key(b, l),
                "device": "cpu",
                "runs": 2,
                "noise_max_abs": 0.0,
                "deterministic": True,
            }
        )
        for m in MODES:
            events.extend(_cell_events(b, l, m, timing_scope))
    events.insert(3, {"kind": "warning", "message": "synthetic warning raised at import", "category": "UserWarning"})
    events.append(
        {
            "kind": "profile",
            "case": case_key(1, 16, "compiled"),
            "profiler": "torch.profiler",
            "traces": [
                {"path": "traces/b1-l16-compiled.json", "kind": "chrome_trace", "bytes": 2048, "sha256": SHA_ZERO}
            ],
            "top_ops": [{"name": "aten::addmm", "self_time_us": 120.5, "calls": 4}],
        }
    )
    return events


def _cell_events(b: int, l: int, mode: str, scope: dict[str, Any]) -> list[dict[str, Any]]:
    case = case_key(b, l, mode)
    events: list[dict[str, Any]] = [
        {
            "kind": "case_result",
            "case": case,
            "status": "pass",
            "outputs": [{"name": "hidden", "shape": [b, l, 32], "dtype": "float32", "nonfinite": 0}],
            "error_stats": {
                "max_abs": 2e-7,
                "max_rel": 3e-6,
                "mismatched": 0,
                "total": b * l * 32,
                "worst_index": [0, 3, 7],
                "worst_output": "hidden",
                "allowed_at_worst": 1.2e-4,
                "diff_at_worst": 2e-7,
            },
            "task_metric": {
                "name": "cosine_to_reference",
                "value": 0.99999,
                "criterion": {"metric": "cosine_to_reference", "op": ">=", "threshold": 0.999},
                "passed": True,
            },
            "warnings": [],
        },
        {
            "kind": "operators",
            "case": case,
            "executed": {"status": "measured", "items": ["aten::addmm", "aten::scaled_dot_product_attention"]},
            "fallback": {"status": "not_applicable", "reason": "the cpu backend has no CPU fallback"},
            "transfers": {"status": "not_applicable", "reason": "inputs already on the cpu"},
        },
    ]
    if mode == "compiled":
        events.append(
            {
                "kind": "compile",
                "case": case,
                "compile_first_result_s": 3.5 + b,
                "graphs": 1,
                "graph_breaks": [],
                "recompiles": 0,
                "cache_hits": 0,
                "cache_misses": 1,
                "recompile_limit_hit": False,
                "cache_condition": "fresh_process_empty_cache",
                "cache_entries_before": 0,  # the listing that labels it so (required from 1.1 on)
            }
        )
    cold = 3.5 + b if mode == "compiled" else 0.01 * b
    samples = [0.001 * b * (1 + 0.01 * i) for i in range(5)]
    events.append(
        {
            "kind": "timing",
            "case": case,
            "cold": {
                "seconds": cold,
                "cache_condition": "fresh_process_empty_cache" if mode == "compiled" else "eager_no_compile",
                "fresh_process": True,
                # The listing that labels a compiled cell's cold call empty (required from 1.1 on).
                **({"cache_entries_before": 0} if mode == "compiled" else {}),
            },
            "warm": _warm(samples),
            "synchronized": True,
            "scope": scope,
        }
    )
    return events


def noted(events: list[dict[str, Any]], note: str) -> list[dict[str, Any]]:
    """A synthetic log's run_start given the note that says why the log exists (its report shows
    it); the log itself, changed in place."""
    start = events[0]
    assert start["kind"] == "run_start" and start["origin"] == "synthetic"
    start["origin_note"] = note
    return events


def finish(events: list[dict[str, Any]], status: str = "complete", reason: str | None = None) -> list[dict[str, Any]]:
    """Append run_end, counting the planned cells and the recorded results."""
    plan = next(e for e in events if e["kind"] == "plan")
    recorded = sum(1 for e in events if e["kind"] == "case_result")
    end: dict[str, Any] = {
        "kind": "run_end",
        "finished_at": "2026-01-01T00:10:00Z",
        "status": status,
        "cells_planned": len(plan["matrix"]),
        "cells_recorded": recorded,
    }
    if reason:
        end["reason"] = reason
    return events + [end]


def with_envelope(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Number the events and give each the envelope fields, in contract order."""
    out = []
    for seq, body in enumerate(events):
        line = {"schema_version": VERSION, "seq": seq, "time": _stamp(seq)}
        line.update(body)
        out.append(line)
    return out


def dumps(events: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(e, sort_keys=True) + "\n" for e in events)


def complete_log() -> list[dict[str, Any]]:
    return with_envelope(finish(base_events()))


def incomplete_log() -> list[dict[str, Any]]:
    """The run stopped (say the host died) after the second cell: no run_end."""
    events = base_events()
    cut = [i for i, e in enumerate(events) if e["kind"] == "case_result"][2]
    return with_envelope(copy.deepcopy(events[:cut]))


def large_log(cells: int, mismatch_every: int = 0) -> list[dict[str, Any]]:
    """A synthetic compiled-mode run with many cells, for the detail cap and the benchmark.

    Every ``mismatch_every``-th cell mismatches (and, as the collector does, is not timed).
    """
    events = base_events()
    head = [e for e in events if e["kind"] in ("run_start", "environment", "plan")]
    template = [e for e in events if e.get("case") == case_key(1, 16, "compiled") and e["kind"] != "profile"]
    plan = head[2]
    plan["matrix"] = []
    body = []
    for i in range(cells):
        batch, length = 1 + i // 512, 1 + i % 512
        case = case_key(batch, length, "compiled")
        plan["matrix"].append(
            {
                "case": case,
                "batch": batch,
                "length": length,
                "layout": "contiguous",
                "dtype": "float32",
                "mode": "compiled",
            }
        )
        mismatch = mismatch_every > 0 and i % mismatch_every == 0
        for event in copy.deepcopy(template):
            event["case"] = case
            if mismatch and event["kind"] == "timing":
                continue
            if mismatch and event["kind"] == "case_result":
                event["status"] = "mismatch"
                event["error_stats"].update(mismatched=3, max_abs=0.5, diff_at_worst=0.5)
            body.append(event)
    return with_envelope(finish(head + body))


def _neuron_env(events: list[dict[str, Any]]) -> None:
    env = next(e for e in events if e["kind"] == "environment")
    env.update(
        backend_family="neuron-native",
        backend_family_reason="synthetic fixture claiming native TorchNeuron; not a Trainium run",
        device_type="neuron",
    )
    env["versions"].update(
        torch_neuronx=_fact("2.13.3.0.1"),
        neuronx_cc=_fact("2.28.7631.0"),
        neuron_runtime=_fact("2.35.30.0"),
        neuron_driver=_fact("2.31.7.0"),
    )
    env["device"] = {
        "instance_type": _fact("trn2.48xlarge"),
        "device_count": _fact("64"),
        "logical_nc_config": _fact("2"),
        "neuron_cores_used": _fact("1 logical NeuronCore (neuron:0) of 64 visible"),
    }
    # As the collector pins them: a compile failure raises instead of running eager.
    env["env_vars"] = {"TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION": "1", "NEURON_LAUNCH_BLOCKING": "0"}
    for event in events:
        if event["kind"] == "operators":
            event["fallback"] = {"status": "measured", "items": []}
            event["transfers"] = {"status": "measured", "count": 2, "bytes": 4096}


SAMPLE_RUNS = Path(__file__).resolve().parents[1] / "sample_runs"


def edited_sample(run: str, run_id: str, note: str) -> list[dict[str, Any]]:
    """A shipped sample run's events (sample_runs/``run``), to be edited by a test: under another
    ``run_id``, marked synthetic, with ``note`` saying what was changed (its reports show it)."""
    path = SAMPLE_RUNS / run / "events.jsonl"
    events = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    events[0].update(run_id=run_id, origin="synthetic", origin_note=note)
    return events


def write_synthetic_neuron(folder: Path, run_id: str = "synthetic-neuron") -> Path:
    """A synthetic complete neuron-native run's log written at ``folder``/events.jsonl, started
    after every sample run (so a site lists it latest)."""
    events = base_events(target="neuron", family="neuron")
    _neuron_env(events)
    events[0].update(run_id=run_id, started_at="2026-12-31T00:00:00Z")
    folder.mkdir(parents=True)
    log = folder / "events.jsonl"
    log.write_text(dumps(with_envelope(finish(events))), encoding="utf-8")
    return log


def _cells(events: list[dict[str, Any]], kind: str, mode: str | None = None) -> list[dict[str, Any]]:
    return [e for e in events if e["kind"] == kind and (mode is None or e["case"].endswith(mode))]


def fallback_log() -> list[dict[str, Any]]:
    """Neuron eager cells whose SDPA fell back to the CPU: requires an operator change."""
    events = base_events(target="neuron", family="neuron-native")
    _neuron_env(events)
    for op in _cells(events, "operators", "-eager"):
        op["fallback"] = {"status": "measured", "items": ["aten::_scaled_dot_product_flash_attention_for_cpu"]}
    return with_envelope(finish(events))


def float64_log() -> list[dict[str, Any]]:
    """A solver that requires float64, on Neuron, warned of float32 compute: a precision change."""
    events = base_events(target="neuron", family="neuron-native")
    _neuron_env(events)
    text = json.dumps(events).replace("float32", "float64")
    events = json.loads(text)
    plan = next(e for e in events if e["kind"] == "plan")
    plan.update(
        workload="cg-solver",
        requirements=["requires_float64"],
        description="Conjugate-gradient solve; acceptance demands float64 computation.",
    )
    events[0]["workload"] = "cg-solver"
    for result in _cells(events, "case_result"):
        result["warnings"] = ["UserWarning: float64 is not supported on Neuron; computing in float32"]
    return with_envelope(finish(events))


def mismatch_log() -> list[dict[str, Any]]:
    """One compiled cell mismatches and nobody has explained it yet."""
    events = base_events()
    case = case_key(2, 16, "compiled")
    result = next(e for e in _cells(events, "case_result") if e["case"] == case)
    result["status"] = "mismatch"
    result["error_stats"].update(
        max_abs=3.2e-3, max_rel=0.41, mismatched=17, diff_at_worst=3.2e-3, allowed_at_worst=1.1e-5
    )
    result["task_metric"].update(value=0.9981, passed=False)
    events = [e for e in events if not (e["kind"] == "timing" and e["case"] == case)]
    return with_envelope(finish(events))


def _module(name: str, order: int, accumulated: float, local: float, ops: list[str]) -> dict[str, Any]:
    """One localised module; ``accumulated`` and ``local`` are |diff| at the worst element, allowed 1e-5."""

    def stats(diff: float) -> dict[str, Any]:
        bad = 16 if diff > 1e-5 else 0
        return {
            "max_abs": diff,
            "max_rel": diff * 10,
            "mismatched": bad,
            "total": 16,
            "worst_index": [0, 1],
            "worst_output": "out",
            "allowed_at_worst": 1e-5,
            "diff_at_worst": diff,
        }

    return {
        "name": name,
        "type": "Linear" if name == "head" else "Block",
        "depth": sum(1 for p in name.split(".") if not p.isdigit()),
        "order": order,
        "calls": 1,
        "accumulated": stats(accumulated),
        "local": stats(local),
        "local_compiled": True,
        "operators": ops,
    }


def localized_log() -> list[dict[str, Any]]:
    """The mismatch log, written as 1.2 with its mismatching cell localised: blocks.2 diverges
    on its own, blocks.3 and head only inherit its error."""
    events = base_events()
    case = case_key(2, 16, "compiled")
    result = next(e for e in _cells(events, "case_result") if e["case"] == case)
    result["status"] = "mismatch"
    result["error_stats"].update(
        max_abs=3.2e-3, max_rel=0.41, mismatched=17, diff_at_worst=3.2e-3, allowed_at_worst=1.1e-5
    )
    events = [e for e in events if not (e["kind"] == "timing" and e["case"] == case)]
    ops = ["aten::add", "aten::addmm", "aten::tanh"]
    at = max(i for i, e in enumerate(events) if e.get("case") == case) + 1
    events.insert(
        at,
        {
            "kind": "localization",
            "case": case,
            "reason": "mismatch",
            "mode": "compiled",
            "atol": 1e-5,
            "rtol": 1e-4,
            "max_depth": 2,
            "max_modules": 32,
            "max_bytes": 268435456,
            "modules": [
                _module("blocks.0", 0, 0.0, 0.0, ops),
                _module("blocks.1", 1, 2e-6, 1e-6, ops),
                _module("blocks.2", 2, 1e-2, 1e-2, ops + ["aten::sin"]),
                _module("blocks.3", 3, 1.1e-2, 0.0, ops),
                _module("head", 4, 3e-3, 0.0, ["aten::addmm"]),
            ],
            "skipped": [{"name": "4 module(s) below depth 2", "reason": "max_depth"}],
            "skipped_more": 0,
            "bytes_held": 4096,
            "operators_from": "an eager call of each module on the target, fed the reference module's inputs",
        },
    )
    out = with_envelope(finish(events))
    for line in out:
        line["schema_version"] = "1.2"
    return out


def compile_failure_log() -> list[dict[str, Any]]:
    """Eager passes on Neuron, the compiled path fails to compile: recorded apart."""
    events = base_events(target="neuron", family="neuron-native")
    _neuron_env(events)
    failed = {e["case"] for e in _cells(events, "case_result", "-compiled")}
    for result in _cells(events, "case_result", "-compiled"):
        for key in ("outputs", "error_stats", "task_metric"):
            result.pop(key)
        result.update(
            status="error",
            failure={
                "phase": "compile",
                "type": "BackendCompilerFailed",
                "message": "neuronx-cc: unsupported op in graph (synthetic)",
            },
        )
    events = [e for e in events if not (e["kind"] in ("timing", "profile", "compile") and e["case"] in failed)]
    return with_envelope(finish(events))


def wrong_target_log() -> list[dict[str, Any]]:
    """A plan meant to certify Neuron, run with --target cpu: every cell ran on the host CPU.
    The cells pass, and the run is still no evidence for Neuron."""
    events = base_events(target="cpu", family="cpu")
    events[0]["target_choice"] = {
        "requested": "cpu",
        "resolved": "cpu",
        "reason": "named on the command line, overriding the plan's target neuron: this run is not evidence for neuron",
    }
    next(e for e in events if e["kind"] == "plan")["intended_target"] = "neuron"
    return with_envelope(finish(events))


def hostile_log() -> list[dict[str, Any]]:
    """Every free-text field carries markup; a report must show it as text and run none of it."""
    payload = '<script>window.__xss=1</script><img src=x onerror="window.__xss=2">|`x`*'
    events = base_events()
    events[0].update(workload=f"tiny{payload}", origin_note=payload, run_id=f"run{payload}", command=[payload])
    env = next(e for e in events if e["kind"] == "environment")
    env["backend_family_reason"] = payload
    env["versions"]["torch"] = {"value": payload, "source": payload}
    env["env_vars"] = {"TORCH_NEURONX_X": payload}
    plan = next(e for e in events if e["kind"] == "plan")
    plan.update(description=payload, model_revision=payload, attention_path=payload, reference=payload)
    plan["timing_scope"]["note"] = payload
    result = _cells(events, "case_result")[1]
    result.update(status="error", failure={"phase": "run", "type": payload, "message": payload}, warnings=[payload])
    # The collector times a passing cell only: the failed cell keeps no warm series.
    events = [e for e in events if not (e["kind"] == "timing" and e.get("case") == result["case"])]
    for e in _cells(events, "warning"):
        e["message"] = payload
    return with_envelope(finish(events, status="aborted", reason=payload))


def _grad_rows(scale: float) -> list[dict[str, Any]]:
    names = ["head.weight", "head.bias", "encoder.embed.weight"]
    return [
        {
            "name": n,
            "max_abs": scale * (i + 1),
            "max_rel": scale * 10 * (i + 1),
            "mismatched": 0,
            "total": 96 * (i + 1),
            "norm_ratio": 1.0,
            "worst_ratio": scale * 1e4 * (i + 1),
        }
        for i, n in enumerate(names)
    ][::-1]


def training_log() -> list[dict[str, Any]]:
    """A training run: loss and gradients per step against the reference, eager and compiled."""
    events = base_events()
    events = [e for e in events if e.get("case") is None or e["case"].startswith("b1-")]
    plan = next(e for e in events if e["kind"] == "plan")
    plan["matrix"] = [c for c in plan["matrix"] if c["batch"] == 1]
    plan.update(workload="tiny-classifier-training")
    plan["tolerances"]["float32"].update(loss={"atol": 1e-6, "rtol": 1e-5}, grad={"atol": 1e-6, "rtol": 1e-3})
    plan["training"] = {
        "steps": 3,
        "seed": 0,
        "optimizer": "AdamW(lr=1e-3)",
        "randomness": "deterministic variant: dropout off",
    }
    events[0]["workload"] = "tiny-classifier-training"
    out: list[dict[str, Any]] = []
    for event in events:
        if event["kind"] == "compile":
            out.append(dict(event, graph="forward"))
            out.append(
                dict(
                    event, graph="backward", compile_first_result_s=2.5, graphs=None, cache_hits=None, cache_misses=None
                )
            )
            continue
        if event["kind"] == "case_result":
            for step in range(3):
                loss = 1.1 - 0.1 * step
                out.append(
                    {
                        "kind": "train_step",
                        "case": event["case"],
                        "step": step,
                        "loss": loss + (1e-7 if "compiled" in event["case"] else 0.0),
                        "reference_loss": loss,
                        "loss_within": True,
                        "grads": _grad_rows(1e-8),
                    }
                )
            out.append({"kind": "train_result", "case": event["case"], "params": _grad_rows(1e-8)})
            event = dict(
                event,
                outputs=[{"name": "loss_per_step", "shape": [3], "dtype": "float64", "nonfinite": 0}],
                task_metric={"name": "max_loss_rel_diff", "value": 1e-7, "criterion": None, "passed": True},
            )
        out.append(event)
    return with_envelope(finish(out))


def timing_log(
    run_id: str,
    target: str = "cpu",
    family: str = "cpu",
    scale: float = 1.0,
    noise: float = 0.01,
    seed: int = 0,
    samples: int = 30,
) -> list[dict[str, Any]]:
    """A passing synthetic run whose warm samples are drawn from a known distribution.

    Each cell's samples are ``base * scale * (1 + noise * N(0, 1))`` with a seeded generator,
    where ``base`` is a fixed per-cell time: two logs built with scales 1.0 and 1.1 are a 10%
    slowdown, inside noise of ``noise``. For the comparison tests; evidence of nothing.
    """
    import random

    rng = random.Random(seed)
    events = base_events(target=target, family=family)
    if family.startswith("neuron"):
        _neuron_env(events)
    events[0].update(
        run_id=run_id,
        origin_note=f"Synthetic timing fixture (scale {scale}, noise {noise}, seed {seed}); not a measurement.",
    )
    next(e for e in events if e["kind"] == "plan")["warm_repetitions"] = samples
    for timing in _cells(events, "timing"):
        base = (
            0.001
            * (2 if timing["case"].startswith("b2-") else 1)
            * (0.8 if timing["case"].endswith("compiled") else 1.0)
        )
        kept = [max(base * scale * (1 + noise * rng.gauss(0.0, 1.0)), base * 0.05) for _ in range(samples)]
        timing["warm"] = _warm(kept)
    return with_envelope(finish(events))


def _warm(samples: list[float]) -> dict[str, Any]:
    """A warm series with the figures its samples give (the contract refuses any other)."""
    return warm_stats(list(samples))


def scaled_warm(warm: dict[str, Any], factor: float) -> dict[str, Any]:
    """The same warm series ``factor`` times slower, every sample and figure alike."""
    return _warm([s * factor for s in warm["samples_s"]])


GEN_BUCKETS = {96: 128, 240: 256}
GEN_STEPS = 6


def generation_log(divergent: tuple[str, int] | None = ("compiled", 3)) -> list[dict[str, Any]]:
    """A text-generation run (schema 1.2): requests of 96 and 240 tokens padded to buckets 128
    and 256, one of 600 refused by the policy; per bucket a prefill graph and one decode graph.
    ``divergent`` plants a token divergence at a decode step of that mode's 240-token cell."""
    events = [e for e in base_events() if e["kind"] in ("run_start", "environment", "plan", "artifact")]
    events[0]["workload"] = "scenario-a-decoder"
    plan = next(e for e in events if e["kind"] == "plan")
    lengths = [96, 240, 600]
    plan.update(
        workload="scenario-a-decoder",
        description="Llama-architecture decoder, synthetic weights, byte-level tokenizer, left padding, static KV cache.",
        model_revision="architecture real, weights synthetic: LlamaForCausalLM config 'tiny', seed 0",
        matrix=[
            {"case": case_key(1, n, m), "batch": 1, "length": n, "layout": "contiguous", "dtype": "float32", "mode": m}
            for n in lengths
            for m in MODES
        ],
        padding={
            "buckets": [128, 256, 512],
            "above_largest": "reject requests longer than 512 tokens",
            "mask_padded": True,
        },
        generation={
            "decode_steps": GEN_STEPS,
            "max_cache_len": 520,
            "padding_side": "left",
            "config": "tiny",
            "top_k": 5,
            "min_top_k_overlap": 0.8,
        },
    )
    criterion = {"metric": "greedy_steps_agreeing", "op": ">=", "threshold": GEN_STEPS + 1}
    plan["tolerances"]["float32"]["task"] = criterion
    events.append(
        {
            "kind": "workload_reads",
            "files": [{"role": "workload_read", "path": "/work/decoder/tokenizer.json", "sha256": "7" * 64}],
            "files_more": 0,
            "packages": {"numpy": "2.3.0", "torch": "2.13.0+cpu", "transformers": "5.24.0"},
            "watched": "files opened for reading through Python while the workload loaded, built its model and made its inputs (hand-written)",
        }
    )
    decode_compiled = False
    for n in lengths:
        cases = [case_key(1, n, m) for m in MODES]
        bucket = GEN_BUCKETS.get(n)
        if bucket is None:
            reason = (
                f"{n} tokens are above the largest bucket 512: refused (plan: reject requests longer than 512 tokens)"
            )
            events.append(
                {
                    "kind": "request",
                    "batch": 1,
                    "length": n,
                    "bucket": None,
                    "outcome": "refused",
                    "reason": reason,
                    "cases": cases,
                }
            )
            for case in cases:
                events.append(
                    {
                        "kind": "case_result",
                        "case": case,
                        "status": "skipped",
                        "skip_reason": f"request refused by the plan's policy above the largest bucket: {reason}",
                    }
                )
            continue
        events.append(
            {
                "kind": "request",
                "batch": 1,
                "length": n,
                "bucket": bucket,
                "outcome": "padded",
                "reason": f"{n} tokens padded to the {bucket} bucket",
                "cases": cases,
            }
        )
        events.append(
            {
                "kind": "reference",
                "shape": shape_key(1, n),
                "device": "cpu",
                "runs": 2,
                "noise_max_abs": 0.0,
                "deterministic": True,
            }
        )
        reference = [[40 + i + n % 7 for i in range(GEN_STEPS + 1)]]
        for mode in MODES:
            case = case_key(1, n, mode)
            tokens = [list(reference[0])]
            first = None
            if divergent is not None and divergent[0] == mode and n == 240:
                first = divergent[1]
                tokens[0][first:] = [300 + i for i in range(GEN_STEPS + 1 - first)]
            agreeing = first if first is not None else GEN_STEPS + 1
            passed = first is None
            if mode == "compiled":
                scope_compile = {
                    "graph_breaks": [],
                    "recompiles": 0,
                    "cache_hits": 0,
                    "recompile_limit_hit": False,
                    "cache_condition": "compiled_in_process",
                }
                events.append(
                    {
                        "kind": "compile",
                        "case": case,
                        "generation_graph": "prefill",
                        "bucket": bucket,
                        "compile_first_result_s": 20.0 + bucket / 64,
                        "graphs": 1,
                        "cache_misses": 4,
                        **scope_compile,
                    }
                )
                events.append(
                    {
                        "kind": "compile",
                        "case": case,
                        "generation_graph": "decode",
                        "bucket": bucket,
                        "compile_first_result_s": 15.0 if not decode_compiled else 0.002,
                        "graphs": 0 if decode_compiled else 1,
                        "cache_misses": 0 if decode_compiled else 3,
                        **scope_compile,
                    }
                )
                decode_compiled = True
            events.append(
                {
                    "kind": "case_result",
                    "case": case,
                    "status": "pass" if passed else "mismatch",
                    "outputs": [
                        {"name": "prefill_logits", "shape": [1, bucket, 384], "dtype": "float32", "nonfinite": 0},
                        {"name": "tokens", "shape": [1, GEN_STEPS + 1], "dtype": "int64", "nonfinite": 0},
                    ],
                    "error_stats": {
                        "max_abs": 3e-6,
                        "max_rel": 2e-5,
                        "mismatched": 0,
                        "total": n * 384,
                        "worst_index": [5, 17],
                        "worst_output": "prefill_logits",
                        "allowed_at_worst": 1.1e-4,
                        "diff_at_worst": 3e-6,
                    },
                    "task_metric": {
                        "name": "greedy_steps_agreeing",
                        "value": float(agreeing),
                        "criterion": criterion,
                        "passed": passed,
                    },
                    "warnings": [],
                }
            )
            events.append(
                {
                    "kind": "operators",
                    "case": case,
                    "executed": {
                        "status": "measured",
                        "items": ["aten::mm", "aten::_scaled_dot_product_flash_attention_for_cpu"],
                    },
                    "fallback": {"status": "not_applicable", "reason": "the cpu backend has no CPU fallback"},
                    "transfers": {"status": "not_applicable", "reason": "inputs already on the cpu"},
                }
            )
            overlap: list[float | None] = (
                [1.0] * (GEN_STEPS + 1) if first is None else [1.0] * first + [0.6] + [None] * (GEN_STEPS - first)
            )
            gen = {
                "kind": "generation",
                "case": case,
                "request_length": n,
                "bucket": bucket,
                "truncated": False,
                "padding_side": "left",
                "decode_steps": GEN_STEPS,
                "max_cache_len": 520,
                "tokens": tokens,
                "reference_tokens": reference,
                "steps_agreeing": agreeing,
                "first_divergent_step": first,
                "top_k": 5,
                "top_k_overlap": overlap,
                "tokens_passed": passed,
                "top_k_passed": min(o for o in overlap if o is not None) >= 0.8,
            }
            if passed:
                scale = 1.0 if mode == "eager" else 0.5
                gen["timing"] = {
                    "ttft_cold_s": (20.0 + bucket / 64) if mode == "compiled" else 0.004 * bucket / 128,
                    "ttft_warm": _warm([scale * 0.003 * bucket / 128 * (1 + 0.01 * i) for i in range(5)]),
                    "decode_token": _warm([scale * 0.002 * (1 + 0.01 * i) for i in range(5 * GEN_STEPS)]),
                    "repetitions": 5,
                    "scope": "model calls only: the request already tokenised, padded and on the device",
                }
                gen["timing"]["tokens_per_s"] = tokens_per_s(gen["timing"])
            events.append(gen)
    out = with_envelope(finish(events))
    for line in out:
        line["schema_version"] = "1.2"
    return out


def generation_timing_log(run_id: str, scale: float = 1.0, seed: int = 0, noise: float = 0.01) -> list[dict[str, Any]]:
    """``generation_log(None)`` whose passing cells' warm series are drawn as ``timing_log``
    draws a cell's: ``base * scale * (1 + noise * N(0, 1))``, seeded, with time to first token
    10 samples around 3 ms and decode per token 60 around 2 ms (half that compiled). Two logs with
    scales 1.0 and 1.2 are a 20% slowdown of both. For the comparison tests; evidence of nothing."""
    import random

    rng = random.Random(seed)
    events = generation_log(None)
    events[0].update(run_id=run_id, origin_note=f"Synthetic generation timing fixture (scale {scale}, seed {seed}).")
    next(e for e in events if e["kind"] == "plan")["warm_repetitions"] = 10  # each cell's repetitions below
    for event in events:
        timing = event.get("timing") if event["kind"] == "generation" else None
        if timing is not None:
            base = 0.5 if event["case"].endswith("compiled") else 1.0
            draw = lambda seconds, n: [seconds * base * scale * (1 + noise * rng.gauss(0.0, 1.0)) for _ in range(n)]  # noqa: E731
            timing["ttft_warm"] = _warm(draw(0.003, 10))
            timing["decode_token"] = _warm(draw(0.002, 60))
            timing["repetitions"] = 10  # of GEN_STEPS decode steps each
            timing["tokens_per_s"] = tokens_per_s(timing)
    return events


def bimodal(event: dict[str, Any], series: str) -> None:
    """Make a generation event's warm series bimodal: every other sample twice as long."""
    samples = [x * (2 if i % 2 else 1) for i, x in enumerate(event["timing"][series]["samples_s"])]
    event["timing"][series] = _warm(samples)
    event["timing"]["tokens_per_s"] = tokens_per_s(event["timing"])


def fewer_repetitions(timing: dict[str, Any], reps: int) -> None:
    """A generation timing cut to its first ``reps`` repetitions, every figure made again (the
    plan's warm_repetitions must say the same: see ``planned_repetitions``)."""
    steps = len(timing["decode_token"]["samples_s"]) // timing["repetitions"]
    timing["ttft_warm"] = _warm(timing["ttft_warm"]["samples_s"][:reps])
    timing["decode_token"] = _warm(timing["decode_token"]["samples_s"][: reps * steps])
    timing["repetitions"] = reps
    timing["tokens_per_s"] = tokens_per_s(timing)


def planned_repetitions(events: list[dict[str, Any]], reps: int) -> None:
    """Every warm loop of the run timed ``reps`` times, as its plan declares: each generation
    cell's series cut to that many repetitions, each cell's warm samples to their first ``reps``."""
    next(e for e in events if e["kind"] == "plan")["warm_repetitions"] = reps
    for event in events:
        if event["kind"] == "generation" and event.get("timing"):
            fewer_repetitions(event["timing"], reps)
        elif event["kind"] == "timing" and event.get("warm"):
            event["warm"] = _warm(event["warm"]["samples_s"][:reps])


def tokens_per_s(timing: dict[str, Any]) -> float:
    """What a generation timing's decode samples give, as the collector computes it: one
    repetition's steps over the median repetition's decode time."""
    samples, reps = timing["decode_token"]["samples_s"], timing["repetitions"]
    steps = len(samples) // reps
    return steps / statistics.median(sum(samples[i * steps : (i + 1) * steps]) for i in range(reps))


FIXTURE_BUILDERS: dict[str, Callable[[], list[dict[str, Any]]]] = {
    "synthetic_generation.jsonl": generation_log,
    "synthetic_training.jsonl": training_log,
    "synthetic_complete.jsonl": complete_log,
    "synthetic_incomplete.jsonl": incomplete_log,
    "synthetic_fallback.jsonl": fallback_log,
    "synthetic_float64.jsonl": float64_log,
    "synthetic_mismatch.jsonl": mismatch_log,
    "synthetic_localized.jsonl": localized_log,
    "synthetic_compile_failure.jsonl": compile_failure_log,
    "synthetic_wrong_target.jsonl": wrong_target_log,
    "synthetic_hostile.jsonl": hostile_log,
}


def render_fixtures() -> dict[str, str]:
    rendered = {}
    for name, build in FIXTURE_BUILDERS.items():
        events = build()
        if name != "synthetic_hostile.jsonl":
            events[0]["run_id"] = name.removesuffix(".jsonl").replace("_", "-")
        rendered[name] = dumps(events)
    return rendered


if __name__ == "__main__":
    FIXTURES.mkdir(exist_ok=True)
    for name, text in render_fixtures().items():
        (FIXTURES / name).write_text(text, encoding="utf-8", newline="\n")
        print(f"wrote {FIXTURES / name}")
