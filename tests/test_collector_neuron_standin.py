"""The neuron adapter's bookkeeping, against a stand-in torch_neuronx (tests only).

The stand-in runs on the CPU and records calls; it never produces a sample run or any figure a
user sees. What it checks is that the adapter calls the documented API around each cell and
records what it returns, and that a compile failure is recorded apart from the eager result.
"""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any

import pytest
import torch

from collector.backends import BackendUnavailable, NeuronBackend, select_backend
from collector.plan import load_plan
from collector.runner import Options, execute
from reportgen.contract.validation import read_log
from tests.conftest import REPO


class StandInNeuronx(types.ModuleType):
    """Implements clear_op_tracking / get_fallback_ops / get_executed_ops and metrics."""

    def __init__(self, fallback: list[str]) -> None:
        super().__init__("torch_neuronx")
        self.calls: list[str] = []
        self._fallback = fallback
        self._tracking = True
        self.metrics = types.SimpleNamespace(
            set_enabled=lambda on: self.calls.append(f"metrics.set_enabled({on})"),
            get_counter_value=lambda name: {"CompilationCache.PersistentMisses": 2, "CompilationCache.InMemoryHits": 1}.get(name),
        )

    def clear_op_tracking(self) -> None:
        self.calls.append("clear_op_tracking")
        self._tracking = False

    def get_fallback_ops(self) -> list[str]:
        self.calls.append("get_fallback_ops")
        return list(self._fallback)

    def get_executed_ops(self) -> list[str]:
        self.calls.append("get_executed_ops")
        return ["aten::addmm", "aten::add"]


@pytest.fixture
def standin(monkeypatch: pytest.MonkeyPatch) -> StandInNeuronx:
    module = StandInNeuronx(fallback=["aten::_scaled_dot_product_flash_attention_for_cpu"])
    monkeypatch.setattr(torch, "neuron", types.SimpleNamespace(synchronize=lambda: module.calls.append("synchronize")), raising=False)
    return module


def test_adapter_bookkeeping(standin: StandInNeuronx, tmp_path: Path) -> None:
    backend = NeuronBackend(module=standin, device=torch.device("cpu"))
    assert "metrics.set_enabled(True)" in standin.calls
    backend.begin_cell()
    assert standin.calls[-1] == "clear_op_tracking"
    assert backend.fallback() == {"status": "measured", "items": ["aten::_scaled_dot_product_flash_attention_for_cpu"]}
    assert backend.executed(None)["items"] == ["aten::add", "aten::addmm"]
    transfers = backend.transfers(None)
    assert transfers["status"] == "unmeasured" and "fallback" in transfers["reason"]
    env = backend.cache_env(tmp_path)
    assert env["TORCH_NEURONX_NEFF_CACHE_DIR"].startswith(str(tmp_path))
    counts = backend.compile_counters()
    assert counts["cache_misses"] == 2 and counts["cache_hits"] == 1
    backend.synchronize()
    assert standin.calls[-1] == "synchronize"


def test_missing_neuron_is_a_clear_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(torch, "neuron", raising=False)
    with pytest.raises(BackendUnavailable, match="torch_neuronx cannot be imported|torch.neuron is missing"):
        select_backend("neuron")


def test_run_with_standin_records_fallback_and_compile_failure_apart(standin: StandInNeuronx, tmp_path: Path) -> None:
    backend = NeuronBackend(module=standin, device=torch.device("cpu"))
    plan = load_plan(REPO / "collector" / "workloads" / "tiny_encoder.toml")
    options = Options(target="neuron", out_dir=tmp_path, only=["b1-l16-contiguous-*"], cold="off", warm_repetitions=2)
    run_dir, code = execute(plan, backend, options)
    assert code == 0
    reading = read_log(run_dir / "events.jsonl")
    assert reading.valid and reading.complete, [p.format() for p in reading.problems]
    by_kind: dict[str, list[Any]] = {}
    for event in reading.events:
        by_kind.setdefault(event.kind, []).append(event)
    env = by_kind["environment"][0]
    assert env.backend_family == "unknown", "a stand-in is never reported as native TorchNeuron"
    results = {e.case: e for e in by_kind["case_result"]}
    assert results["b1-l16-contiguous-float32-eager"].status == "pass"
    compiled = results["b1-l16-contiguous-float32-compiled"]
    # No 'neuron' compile backend exists here: the compile fails, and is recorded as such.
    assert compiled.status == "error" and compiled.failure.phase == "compile"
    ops = {e.case: e for e in by_kind["operators"]}
    assert ops["b1-l16-contiguous-float32-eager"].fallback.items == ["aten::_scaled_dot_product_flash_attention_for_cpu"]
    # Tracking is cleared before the one cell that ran, then read after it.
    assert standin.calls.count("clear_op_tracking") == 1
    assert standin.calls.index("clear_op_tracking") < standin.calls.index("get_fallback_ops")
    timed = {e.case for e in by_kind.get("timing", [])}
    assert "b1-l16-contiguous-float32-eager" in timed and "b1-l16-contiguous-float32-compiled" not in timed
