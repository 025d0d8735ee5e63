"""Collector logic that needs no device: plans, family decision, comparison, timing stats."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pytest
import torch

from collector.compare import compare
from collector.environment import decide_backend_family
from collector.plan import PlanError, expand_matrix, load_plan
from collector.timing import warm_stats
from tests.conftest import REPO

TINY = REPO / "collector" / "workloads" / "tiny_encoder.toml"


def _plan(tmp_path: Path, body: str) -> Path:
    (tmp_path / "w.py").write_text("", encoding="utf-8")
    path = tmp_path / "plan.toml"
    path.write_text('[workload]\nname = "w"\nmodule = "w.py"\n' + body, encoding="utf-8")
    return path


# Standard modules removed in Python 3.12-3.13; the Neuron wheels use 3.12-3.14.
REMOVED_LATER = {
    "distutils",
    "imp",
    "asynchat",
    "asyncore",
    "smtpd",
    "cgi",
    "cgitb",
    "crypt",
    "telnetlib",
    "pipes",
    "nntplib",
    "audioop",
    "chunk",
    "imghdr",
    "mailcap",
    "msilib",
    "nis",
    "ossaudiodev",
    "sndhdr",
    "spwd",
    "sunau",
    "uu",
    "xdrlib",
    "lib2to3",
}


def test_collector_imports_only_stdlib_and_torch() -> None:
    allowed = (set(sys.stdlib_module_names) - REMOVED_LATER) | {"torch", "torch_neuronx", "collector"}
    for path in (REPO / "collector").rglob("*.py"):
        if "workloads" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                assert name.split(".")[0] in allowed, f"{path.name} imports {name}"


def test_child_processes_are_supervised_in_one_module() -> None:
    """Starting, relaying and ending fresh processes lives in collector.supervise alone: the
    timing code and the run's modules import it rather than spawn processes themselves."""
    process_modules = {"subprocess", "signal", "threading", "queue"}
    spawners = []
    for path in (REPO / "collector").rglob("*.py"):
        if "workloads" in path.parts or path.name in {"supervise.py", "lifeline.py"}:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in {"Popen", "killpg"}
            ):
                spawners.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert spawners == [], f"processes started or ended outside collector/supervise.py: {spawners}"
    timing = ast.parse((REPO / "collector" / "timing.py").read_text(encoding="utf-8"))
    imported = {a.name for n in ast.walk(timing) if isinstance(n, ast.Import) for a in n.names}
    assert not imported & process_modules


def test_matrix_order_puts_cache_check_after_largest_shape() -> None:
    cells = expand_matrix(
        {"shapes": [[1, 128], [1, 512], [4, 128], [4, 512]], "cache_checks": [[1, 128]], "modes": ["compiled"]}
    )
    cases = [c.case for c in cells]
    assert cases[-1] == "b1-l128-contiguous-float32-compiled-repeat"
    assert cases.index("b4-l512-contiguous-float32-compiled") < cases.index(cases[-1])
    assert cells[-1].repeat_of == "b1-l128-contiguous-float32-compiled"


def test_fp32_default_tolerance_is_the_seed_criterion(tmp_path: Path) -> None:
    plan = load_plan(_plan(tmp_path, "[matrix]\nshapes = [[1, 8]]\n"))
    assert plan.tolerances["float32"]["atol"] == 1e-5 and plan.tolerances["float32"]["rtol"] == 1e-4
    assert "default" in plan.tolerances["float32"]["source"]


def test_bf16_without_declared_criteria_refuses_to_run(tmp_path: Path) -> None:
    plan = load_plan(
        _plan(
            tmp_path,
            '[matrix]\nshapes = [[1, 8]]\ndtypes = ["float32", "bfloat16"]\n[tolerances.bfloat16]\natol = 0.01\nrtol = 0.02\n',
        )
    )
    assert plan.missing_tolerance("float32") is None
    assert "no task criterion for bfloat16" in plan.missing_tolerance("bfloat16")
    bare = load_plan(_plan(tmp_path, '[matrix]\nshapes = [[1, 8]]\ndtypes = ["bfloat16"]\n'))
    assert "no tolerance for bfloat16" in bare.missing_tolerance("bfloat16")


@pytest.mark.parametrize(
    "body,fragment",
    [
        ("[matrix]\nshapes = []\n", "at least one"),
        ("[matrix]\nshapes = [[1, 0]]\n", "positive integers"),
        ('[matrix]\nshapes = [[1, 8]]\nmodes = ["fast"]\n', "unknown ['fast']"),
        ("[matrix]\nshapes = [[1, 8]]\ncache_checks = [[2, 8]]\n", "not one of matrix.shapes"),
        ('[matrix]\nshapes = [[1, 8]]\n[tolerances.float32]\natol = "x"\nrtol = 1\n', "expected a number"),
        ("this is = = not toml", "not valid TOML"),
    ],
)
def test_bad_plans_say_what_to_change(tmp_path: Path, body: str, fragment: str) -> None:
    path = _plan(tmp_path, body) if "toml" not in body else tmp_path / "bad.toml"
    if "toml" in body:
        path.write_text(body, encoding="utf-8")
    with pytest.raises(PlanError, match=fragment.replace("[", r"\[").replace("]", r"\]")):
        load_plan(path)


NATIVE = {"torch_version": "2.13.0", "neuronx_version": "2.13.3.0.1234", "privateuse1": "neuron", "xla_present": False}


@pytest.mark.parametrize(
    "target,probes,family,fragment",
    [
        ("neuron", NATIVE, "neuron-native", "2.33 release family"),
        ("neuron", dict(NATIVE, neuronx_version="2.14.3.0.1"), "neuron-native", "2.14.3.0.1"),
        ("neuron", dict(NATIVE, neuronx_version="2.9.0.2.15.32035", torch_version="2.9.0"), "neuron-xla", "XLA-based"),
        # XLA modules left installed beside a native build: the cells run on device 'neuron',
        # which only the native build registers (notes section 1: the rule is the version).
        ("neuron", dict(NATIVE, xla_present=True), "neuron-native", "unused by device 'neuron'"),
        (
            "neuron",
            dict(NATIVE, xla_present=True, neuronx_version="2.9.0.2.15.32035", torch_version="2.9.0"),
            "neuron-xla",
            "XLA modules present",
        ),
        ("neuron", dict(NATIVE, xla_present=True, privateuse1="privateuseone"), "unknown", "XLA modules present"),
        ("neuron", dict(NATIVE, neuronx_version=None), "unknown", "not installed"),
        ("neuron", dict(NATIVE, privateuse1="privateuseone"), "unknown", "not registered"),
        ("neuron", dict(NATIVE, neuronx_version="2.15.0.0.1"), "neuron-native", "not a 2.33 release family"),
        ("cuda", {"cuda_available": False}, "unknown", "is_available() is False"),
        ("cuda", {"cuda_available": True}, "cuda", "is_available() is True"),
        ("cpu", {}, "cpu", "host CPU"),
    ],
)
def test_backend_family_decision(target: str, probes: dict, family: str, fragment: str) -> None:
    got, reason = decide_backend_family(target, probes)
    assert got == family
    assert fragment in reason


def test_compare_counts_mismatches_and_locates_the_worst() -> None:
    ref = {"y": torch.tensor([[1.0, 100.0], [0.0, -2.0]])}
    out = {"y": torch.tensor([[1.0, 100.005], [0.0002, -2.0]])}
    stats = compare(out, ref, atol=1e-5, rtol=1e-4)
    # 100.005 is allowed 1e-5 + 1e-2; 0.0002 at ref 0 is allowed only 1e-5.
    assert stats["mismatched"] == 1 and stats["total"] == 4
    assert stats["worst_index"] == [1, 0]
    assert stats["allowed_at_worst"] == pytest.approx(1e-5)
    assert stats["max_abs"] == pytest.approx(0.005, rel=1e-3)


def test_worst_element_is_worst_relative_to_its_allowance() -> None:
    # The second element is further off in proportion to what it may be off by, although its
    # absolute slack is larger: ranking by ratio picks it, ranking by absolute excess would not.
    ref = {"y": torch.tensor([1.0, 100.0])}
    out = {"y": torch.tensor([1.0 + 5e-6, 100.0 + 5e-4], dtype=torch.float64)}
    stats = compare(out, ref, atol=1e-5, rtol=1e-4)
    assert stats["mismatched"] == 0 and stats["worst_index"] == [1]
    assert stats["diff_at_worst"] / stats["allowed_at_worst"] == pytest.approx(0.04995, rel=1e-3)


def test_compare_nan_output_is_a_mismatch_written_as_null() -> None:
    ref = {"y": torch.zeros(3)}
    out = {"y": torch.tensor([0.0, float("nan"), 0.0])}
    stats = compare(out, ref, atol=1e-5, rtol=1e-4)
    assert stats["mismatched"] == 1 and stats["worst_index"] == [1]
    assert stats["max_abs"] is None and stats["diff_at_worst"] is None


def test_compare_refuses_shape_mismatch() -> None:
    with pytest.raises(ValueError, match="shape"):
        compare({"y": torch.zeros(2)}, {"y": torch.zeros(3)}, 1e-5, 1e-4)


def test_warm_stats() -> None:
    stats = warm_stats([5.0, 1.0, 2.0, 4.0, 3.0])
    assert stats["min_s"] == 1.0 and stats["median_s"] == 3.0
    assert stats["iqr_s"] == pytest.approx(2.0)
    assert 4.0 <= stats["p90_s"] <= 5.0
    assert stats["samples_s"] == [5.0, 1.0, 2.0, 4.0, 3.0]


def test_tiny_workload_keeps_integer_ids_and_planned_layout() -> None:
    from collector.workload import cast_inputs, load_workload

    module = load_workload(load_plan(TINY))
    for layout in ("contiguous", "noncontiguous"):
        inputs = cast_inputs(module.make_inputs(2, 16, layout), torch.bfloat16)
        assert inputs["input_ids"].dtype == torch.int64
        assert inputs["attention_mask"].dtype == torch.bool
        assert inputs["input_ids"].is_contiguous() is (layout == "contiguous")
    one = module.make_inputs(1, 16, "noncontiguous")["input_ids"]
    assert not one.is_contiguous(), "batch 1 must be non-contiguous too"


@pytest.mark.parametrize("where", [0, 2, 4], ids=["first", "middle", "last"])
@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")], ids=["nan", "inf", "-inf"])
def test_a_non_finite_reference_element_with_an_exact_output_gives_finite_or_null_statistics(
    value: float, where: int
) -> None:
    # Every other error is 0, so a worst element picked among all elements would be index 0,
    # whether it failed or not, and a non-finite allowance there would reach the log writer.
    ref = torch.tensor([1.0, -2.0, 3.0, 0.0, 5.0])
    ref[where] = value
    stats = compare({"y": ref.clone()}, {"y": ref}, atol=1e-5, rtol=1e-4)
    json.dumps(stats, allow_nan=False)  # what the log writer does; it raised ValueError before
    assert stats["mismatched"] == 1 and stats["worst_index"] == [where]
    assert stats["allowed_at_worst"] is None and stats["diff_at_worst"] is None


def test_the_worst_element_is_picked_among_the_failing_ones() -> None:
    # Index 1 is close to its allowance but passes; index 3 fails only through its NaN.
    ref = {"y": torch.tensor([1.0, 1.0, 1.0, 1.0], dtype=torch.float64)}
    out = {"y": torch.tensor([1.0, 1.0 + 1e-4, 1.0, float("nan")], dtype=torch.float64)}
    stats = compare(out, ref, atol=1e-5, rtol=1e-4)
    assert stats["mismatched"] == 1 and stats["worst_index"] == [3]


def test_a_step_that_uses_the_log_workload_or_model_before_setup_is_told_so(tmp_path: Path) -> None:
    import shutil

    from collector.backends import select_backend
    from collector.run.state import Options, Run

    plan = load_plan(TINY)
    run = Run(plan, select_backend("cpu"), Options(target="cpu", out_dir=tmp_path))
    try:
        assert not run.has_log
        for name, said in (("log", "opened"), ("workload", "loaded"), ("model", "built")):
            with pytest.raises(RuntimeError, match=f"the run's {name} is used before setup {said} it"):
                getattr(run, name)
        run.model = model = torch.nn.Linear(2, 2)
        assert run.model is model and not run.has_log
    finally:
        shutil.rmtree(run.cache_dir, ignore_errors=True)


@pytest.mark.parametrize("name", ["../../escaped", "/tmp/absolute", "two\nlines\x1b[31m", "..."])
def test_a_run_folder_stays_inside_out_whatever_the_plan_names_its_workload(tmp_path: Path, name: str) -> None:
    import dataclasses
    import shutil

    from collector.backends import select_backend
    from collector.run.state import Options, Run

    plan = dataclasses.replace(load_plan(TINY), name=name)
    run = Run(plan, select_backend("cpu"), Options(target="cpu", out_dir=tmp_path / "out"))
    try:
        assert run.dir.parent == tmp_path / "out" and run.dir.name == run.run_id
        assert "/" not in run.run_id and "\n" not in run.run_id and not run.run_id.startswith(".")
    finally:
        shutil.rmtree(run.cache_dir, ignore_errors=True)
