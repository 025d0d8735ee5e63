"""The neuron adapter's bookkeeping, against a stand-in torch_neuronx (tests only).

The stand-in runs on the CPU and records calls; it never produces a sample run or any figure a
user sees. What it checks is that the adapter calls the documented API around each cell and
records what it returns, and that a compile failure is recorded apart from the eager result.
"""

from __future__ import annotations

import dataclasses
import types
from pathlib import Path
from typing import Any, Iterator

import pytest
import torch

from collector.backends import BackendUnavailable, select_backend
from collector.backends.neuron import NeuronBackend
from collector.descriptors import descriptors, hook_module
from collector.plan import load_plan
from collector.runner import Options, execute
from reportgen.contract import consistency
from reportgen.contract.validation import read_log
from tests.conftest import REPO

neuronenv = hook_module(descriptors()["neuron"])  # the neuron descriptor's before_torch hook


class StandInNeuronx(types.ModuleType):
    """Implements clear_op_tracking / get_fallback_ops / get_executed_ops and metrics."""

    def __init__(self, fallback: list[str]) -> None:
        super().__init__("torch_neuronx")
        self.calls: list[str] = []
        self._fallback = fallback
        self._tracking = True
        self.metrics = types.SimpleNamespace(
            set_enabled=lambda on: self.calls.append(f"metrics.set_enabled({on})"),
            get_counter_value=lambda name: {
                "CompilationCache.PersistentMisses": 2,
                "CompilationCache.InMemoryHits": 1,
            }.get(name),
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
def standin(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[StandInNeuronx]:
    # The adapter sets its variables in os.environ: keep them inside this test.
    for name in (*neuronenv.PINNED, *neuronenv.DEFAULTED, neuronenv.LOG_FILE):
        monkeypatch.setenv(name, "placeholder")
        monkeypatch.delenv(name)
    monkeypatch.setenv(neuronenv.LOG_FILE, str(tmp_path / "neuron-channel.log"))
    neuronenv.reset_for_tests()
    module = StandInNeuronx(fallback=["aten::_scaled_dot_product_flash_attention_for_cpu"])

    def synchronize() -> None:
        module.calls.append("synchronize")
        if module.calls.count("synchronize") == 1:  # the runtime logs a fallback once, as the notes say
            with open(tmp_path / "neuron-channel.log", "a", encoding="utf-8") as log:
                log.write(
                    "[Neuron] [WARNING] Operator 'aten::_scaled_dot_product_flash_attention_for_cpu' fell back to CPU\n"
                )

    monkeypatch.setattr(
        torch, "neuron", types.SimpleNamespace(synchronize=synchronize, is_available=lambda: True), raising=False
    )
    # The stand-in feeds the CPU, where a real neuron run feeds device "neuron" (the descriptor's
    # inputs_on_device): for these tests of what a report makes of a neuron log, the contract
    # takes the stand-in's device as the adapter's (test_a_standin_log_is_refused_by_the_real_descriptor).
    known = dict(descriptors())
    known["neuron"] = dataclasses.replace(known["neuron"], inputs_on_device=False)
    monkeypatch.setattr(consistency, "descriptors", lambda: known)
    yield module
    neuronenv.reset_for_tests()


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


@pytest.mark.parametrize(
    ("is_available", "said"),
    [
        (lambda: False, "torch.neuron.is_available() is False: no NeuronCore is visible here"),
        (None, "torch.neuron has no is_available(); no device can be confirmed"),
        (lambda: 1 / 0, "torch.neuron.is_available() raised ZeroDivisionError: division by zero"),
    ],
    ids=["no-core", "no-check", "check-raises"],
)
def test_a_host_whose_torch_neuron_sees_no_neuroncore_is_not_the_neuron_target(
    standin: StandInNeuronx, monkeypatch: pytest.MonkeyPatch, is_available: Any, said: str
) -> None:
    """torch_neuronx registers the device on a host without a NeuronCore too: such a host is
    refused as the neuron target (exit 3 from the collector; --target auto passes it over),
    never recorded as a native TorchNeuron run (an audit of the neuron path, finding 2)."""
    neuron = types.SimpleNamespace(synchronize=lambda: None)
    if is_available is not None:
        neuron.is_available = is_available
    monkeypatch.setattr(torch, "neuron", neuron, raising=False)
    with pytest.raises(BackendUnavailable) as caught:
        NeuronBackend(module=standin, device=torch.device("cpu"))
    assert str(caught.value) == f"target neuron: {said}"


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
    assert ops["b1-l16-contiguous-float32-eager"].fallback.items == [
        "aten::_scaled_dot_product_flash_attention_for_cpu"
    ]
    # torch.compile raised before any call: the compiled cell reports nothing measured, never
    # the eager cell's fallback ops still held by the tracker.
    failed = ops["b1-l16-contiguous-float32-compiled"]
    assert (
        failed.fallback.status == "unmeasured" and failed.executed.status == "unmeasured" and not failed.fallback.items
    )
    # Every read of the tracker comes after a clear made since the previous cell's reads.
    segments = " ".join(
        c for c in standin.calls if c in ("clear_op_tracking", "get_fallback_ops", "get_executed_ops")
    ).split("clear_op_tracking")
    assert "get_" not in segments[0], "nothing is read before the first clear"
    assert standin.calls.index("clear_op_tracking") < standin.calls.index("get_fallback_ops")
    # The adapter's settings and the [Neuron] log channel are in the record.
    settings = {s.name: s for s in env.backend_settings}
    assert settings["TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION"].value == "1"
    assert settings["NEURON_LAUNCH_BLOCKING"].value is not None
    line = "[Neuron] [WARNING] Operator 'aten::_scaled_dot_product_flash_attention_for_cpu' fell back to CPU"
    assert line in results["b1-l16-contiguous-float32-eager"].warnings
    assert (run_dir / "logs" / "neuron.log").read_text(encoding="utf-8").strip() == line
    assert any(a.path == "logs/neuron.log" for a in by_kind["artifact"])
    assert [w.message for w in by_kind["warning"] if w.category == "NeuronLog"] == [line]
    from reportgen.render.report import build_report

    build_report(run_dir / "events.jsonl", tmp_path / "report")
    for name in ("report.html", "report.md"):
        text = (tmp_path / "report" / name).read_text(encoding="utf-8")
        assert text.count("exercised only against a stand-in") >= 3, name  # disposition, findings, timings
    timed = {e.case for e in by_kind.get("timing", [])}
    assert "b1-l16-contiguous-float32-eager" in timed and "b1-l16-contiguous-float32-compiled" not in timed


def test_adapter_pins_compile_fallback_off_and_records_who_set_what(
    standin: StandInNeuronx, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    monkeypatch.setenv("TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION", "0")
    backend = NeuronBackend(module=standin, device=torch.device("cpu"))
    assert os.environ["TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION"] == "1"
    settings = {s["name"]: s for s in backend.settings()}
    pinned = settings["TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION"]
    assert pinned["value"] == "1" and pinned["set_by"] == "collector" and "'0'" in pinned["note"]
    blocking = settings["NEURON_LAUNCH_BLOCKING"]
    assert blocking["value"] == os.environ["NEURON_LAUNCH_BLOCKING"] == "0" and blocking["set_by"] == "collector"
    assert settings["TORCH_NEURONX_LOG_FILE"]["set_by"] == "environment"


def test_a_read_without_a_clear_is_unmeasured(standin: StandInNeuronx) -> None:
    backend = NeuronBackend(module=standin, device=torch.device("cpu"))
    assert backend.fallback()["status"] == "unmeasured", "nothing cleared yet: the list could be anyone's"
    backend.begin_cell()
    assert backend.fallback()["status"] == "measured"
    backend.end_cell()
    stale = backend.fallback()
    assert stale["status"] == "unmeasured" and "not cleared" in stale["reason"]
    assert backend.executed(None)["status"] == "unmeasured" and backend.transfers(None)["status"] == "unmeasured"


def test_neuron_log_channel_lines_per_cell_and_copied_into_the_run(standin: StandInNeuronx, tmp_path: Path) -> None:
    backend = NeuronBackend(module=standin, device=torch.device("cpu"))
    with open(backend.log_file, "a", encoding="utf-8") as log:
        log.write("[Neuron] [WARNING] before any cell\n")
    backend.begin_cell()
    with open(backend.log_file, "a", encoding="utf-8") as log:
        log.write(
            "[Neuron] [INFO] compiling\n[Neuron] [WARNING] Neuron backend does not support mode='max-autotune', falling back to default mode.\n"
        )
    assert backend.cell_log() == [
        "[Neuron] [WARNING] Neuron backend does not support mode='max-autotune', falling back to default mode."
    ]
    copied, warnings = backend.collect_log(tmp_path / "run")
    assert copied == tmp_path / "run" / "logs" / "neuron.log" and copied.read_text().startswith(
        "[Neuron] [WARNING] before"
    )
    assert len(warnings) == 2


def test_a_named_log_files_earlier_lines_are_not_this_runs(standin: StandInNeuronx, tmp_path: Path) -> None:
    """A review (against this stand-in, not on hardware): a TORCH_NEURONX_LOG_FILE that an earlier
    run wrote had its lines copied into this run's logs/neuron.log and read as this run's
    warnings. The run's part starts where the file ended when the backend began."""
    backend = NeuronBackend(module=standin, device=torch.device("cpu"))
    backend.log_file.write_text("[Neuron] [WARNING] Operator 'aten::old' fell back to CPU (an earlier run)\n")
    backend = NeuronBackend(module=standin, device=torch.device("cpu"))  # begins after the earlier run's line
    with open(backend.log_file, "a", encoding="utf-8") as log:
        log.write("[Neuron] [WARNING] this run's own\n")
    copied, warnings = backend.collect_log(tmp_path / "run")
    assert warnings == ["[Neuron] [WARNING] this run's own"]
    assert copied.read_text() == "[Neuron] [WARNING] this run's own\n"


# --- the Neuron gate from data, and the profiler path, against the stand-in ----------------------


def _standin_run(
    standin: StandInNeuronx,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    instance: str,
    runtime: dict[str, Any],
    profile: str | None = None,
) -> Path:
    """A stand-in run whose host reports ``instance`` (DMI) and the given runtime version fact."""
    from collector import environment
    from collector.facts import known

    versions = {
        "torch_neuronx": known("2.13.3.0.9", "stand-in"),
        "neuronx_cc": known("2.28.7631.0", "stand-in"),
        "neuron_driver": known("2.31.7.0", "stand-in"),
        "neuron_runtime": runtime,
    }
    monkeypatch.setattr(NeuronBackend, "versions", staticmethod(lambda torch_module: dict(versions)))
    real = environment.read_text_file
    monkeypatch.setattr(
        environment,
        "read_text_file",
        lambda path, what: known(instance, "DMI product name (stand-in)") if "dmi" in path else real(path, what),
    )
    backend = NeuronBackend(module=standin, device=torch.device("cpu"))
    plan = load_plan(REPO / "collector" / "workloads" / "tiny_encoder.toml")
    options = Options(
        target="neuron",
        out_dir=tmp_path,
        only=["b1-l16-contiguous-float32-eager"],
        cold="off",
        warm_repetitions=2,
        profile=profile,
    )
    run_dir, code = execute(plan, backend, options)
    assert code == 0
    return run_dir / "events.jsonl"


def test_standin_log_missing_the_runtime_version_is_blocked_with_that_reason(
    standin: StandInNeuronx, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from collector.facts import unknown
    from reportgen.render.report import judge_log

    log = _standin_run(standin, tmp_path, monkeypatch, "trn2.48xlarge", unknown("dpkg-query not found"))
    verdict = judge_log(log).disposition
    blocked = [r.message for r in verdict.reasons if r.outcome == "blocked"]
    assert verdict.outcome == "blocked"
    assert "neuron_runtime version unknown: dpkg-query not found." in blocked
    assert not [m for m in blocked if "version unknown" in m and "neuron_runtime" not in m], (
        "only the runtime is missing"
    )
    assert not [r for r in verdict.reasons if r.rule == "instance-generation"], "trn2 is a supported generation"


def test_a_standin_log_is_refused_by_the_real_descriptor(
    standin: StandInNeuronx, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The neuron descriptor says every input is fed on device "neuron": a log of a neuron run
    whose inputs stayed on the CPU (the stand-in's) contradicts itself (collector 0.21.0; an
    audit of the neuron path, finding 2: before, such a log read as run on neuron)."""
    from collector.facts import known

    log = _standin_run(standin, tmp_path, monkeypatch, "trn2.48xlarge", known("2.35.30.0", "stand-in"))
    monkeypatch.setattr(consistency, "descriptors", descriptors)
    errors = [p.message for p in read_log(log).errors]
    assert errors and all(
        "none of the tensors inputs_fed records is on a neuron device ('cpu'), but environment.device_type is 'neuron'"
        in m
        for m in errors
    ), errors


def test_standin_log_from_a_trn1_instance_is_blocked_for_the_generation(
    standin: StandInNeuronx, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from collector.facts import known
    from reportgen.render.report import judge_log

    log = _standin_run(standin, tmp_path, monkeypatch, "trn1.2xlarge", known("2.35.30.0", "stand-in"))
    judged = judge_log(log)
    found = [r for r in judged.disposition.reasons if r.rule == "instance-generation"]
    assert found and found[0].outcome == "blocked"
    assert found[0].message.startswith("Instance type trn1.2xlarge is trn1, a generation Neuron 2.33")
    env = judged.run.environment
    # The NeuronCore facts are recorded, read or with the reason they could not be.
    for name in ("logical_nc_config", "neuron_cores_used"):
        assert name in env.device and (env.device[name].value or env.device[name].unknown_reason)


@pytest.mark.parametrize(
    ("instance", "shown"),
    [
        ("To Be Filled By O.E.M.", "'To Be Filled By O.E.M.' is not an instance type"),
        ("", "unknown: recorded empty"),
    ],
)
def test_standin_log_whose_instance_type_names_no_generation_is_blocked(
    standin: StandInNeuronx, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, instance: str, shown: str
) -> None:
    """The release supports some generations only (trn2, trn3): a run whose instance type names
    none (DMI says nothing usable and neuron-ls is not here) is not evidence for them, so it is
    blocked pending that fact, as a missing version is (it was only a note before; an audit of
    the neuron path)."""
    from collector.facts import known
    from reportgen.render.report import judge_log

    log = _standin_run(standin, tmp_path, monkeypatch, instance, known("2.35.30.0", "stand-in"))
    found = [r for r in judge_log(log).disposition.reasons if r.rule == "instance-generation"]
    assert [r.outcome for r in found] == ["blocked"], found
    assert found[0].message.startswith(f"Instance type {shown}; "), found[0].message
    assert "this run's hardware generation is not known" in found[0].message


class StandInConfig(torch._C._profiler._ExperimentalConfig):
    """torch_neuronx.profiling.NeuronConfig as the adapter calls it (profile_output_dir)."""

    def __init__(self, profile_output_dir: str) -> None:
        super().__init__()
        self.profile_output_dir = profile_output_dir


class StandInProfiler:
    """NeuronProfiler(config).export_trace: writes what the real one writes into the output dir."""

    exported: list[str] = []

    def __init__(self, config: StandInConfig) -> None:
        self.config = config

    def export_trace(self, prof: Any) -> None:
        out = Path(self.config.profile_output_dir)
        (out / "ntrace.pb").write_bytes(b"stand-in runtime trace")
        StandInProfiler.exported.append(str(out))


def test_neuron_profiler_path_against_the_standin(
    standin: StandInNeuronx, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    from collector.facts import known
    from reportgen.contract.validation import read_log as read

    profiling = types.ModuleType("torch_neuronx.profiling")
    profiling.NeuronConfig = StandInConfig  # type: ignore[attr-defined]
    profiling.NeuronProfiler = StandInProfiler  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch_neuronx.profiling", profiling)
    StandInProfiler.exported = []
    log = _standin_run(
        standin, tmp_path, monkeypatch, "trn2.48xlarge", known("2.35.30.0", "stand-in"), profile="b1-l16-*"
    )
    reading = read(log)
    profiles = [e for e in reading.events if e.kind == "profile"]
    warnings = [e.message for e in reading.events if e.kind == "warning" and e.category == "ProfileFailed"]
    assert not warnings, warnings
    assert len(profiles) == 1 and profiles[0].case == "b1-l16-contiguous-float32-eager"
    profile = profiles[0]
    assert profile.profiler == "torch.profiler + NeuronProfiler"
    assert StandInProfiler.exported and StandInProfiler.exported[0].endswith("traces/b1-l16-contiguous-float32-eager")
    assert [t.path for t in profile.traces] == ["traces/b1-l16-contiguous-float32-eager/ntrace.pb"]
    assert (log.parent / profile.traces[0].path).read_bytes() == b"stand-in runtime trace"
    assert profile.top_ops, "the torch.profiler table of the profiled calls"


def test_neuron_ls_header_is_read_or_its_absence_said(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from collector.backends import neuron

    printed = (
        "instance-type: trn2.48xlarge\ninstance-id: i-0abc\nlogical-neuroncore-config: 2\n+--------+\n| NEURON |\n"
    )
    header = neuron.neuron_ls_header((sys.executable, "-c", f"print({printed!r})"))
    assert header == {"instance-type": "trn2.48xlarge", "instance-id": "i-0abc", "logical-neuroncore-config": "2"}
    assert neuron._logical_nc_config(header) == {"value": "2", "source": "neuron-ls header logical-neuroncore-config"}
    missing = neuron.neuron_ls_header(("no-such-neuron-ls-here",))
    assert missing == "no-such-neuron-ls-here not found"
    monkeypatch.delenv("NEURON_LOGICAL_NC_CONFIG", raising=False)
    assert neuron._logical_nc_config(missing) == {
        "value": None,
        "unknown_reason": "neuron-ls: no-such-neuron-ls-here not found",
    }
    monkeypatch.setenv("NEURON_LOGICAL_NC_CONFIG", "1")
    assert neuron._logical_nc_config(missing)["value"] == "1"
    failed = neuron.neuron_ls_header((sys.executable, "-c", "import sys; sys.exit(3)"))
    assert isinstance(failed, str) and "exited 3" in failed
