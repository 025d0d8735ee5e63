"""Each graph is compiled from scratch once, in a fresh process with empty caches.

The collector's own process compiles nothing for a compiled cell that a fresh child ran. A cell
on its own compiles once, its check and cold first call at once; a group with a cache-check
repeat has each shape's cold call taken first by a cold-only child (its one compile from an
empty cache), then one child runs the group from the caches those left. A restart against each
shape's own cache folder is the third cold condition. A child that dies leaves its cells
checked in the collector's process, the cold call recorded as not measured.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from collector import supervise
from collector.backends import Backend
from collector.plan import load_plan
from collector.run import children, timings
from collector.runner import Options, execute
from reportgen.contract.validation import read_log
from reportgen.render.report import build_report
from tests.conftest import REPO

FAULTY = REPO / "tests" / "workloads" / "faulty.toml"
COMPILED = "b1-l4-contiguous-float32-compiled"


class CountingBackend(Backend):
    """The CPU backend, counting the compiles made in the collector's own process."""

    compiles = 0

    def compile(self, model: Any, options: dict[str, Any]) -> Any:
        type(self).compiles += 1
        return super().compile(model, options)


def _events(run_dir: Path) -> list[Any]:
    reading = read_log(run_dir / "events.jsonl")
    assert reading.valid and reading.complete, [p.format() for p in reading.problems]
    return reading.events


def _spy(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[list[str]]]:
    """Record every fresh process started: cell children and cold-only children."""
    started: dict[str, list[list[str]]] = {"cells": [], "cold_only": []}
    real_child, real_cold = children.run_child, timings.run_cold
    assert children.run_cold is real_cold

    def child(module: str, argv: list[str], *rest: Any) -> Any:
        started["cells"].append(argv[argv.index("--cases") + 1].split(","))
        return real_child(module, argv, *rest)

    def cold(argv: list[str], *rest: Any) -> Any:
        started["cold_only"].append([argv[argv.index("--case") + 1]])
        return real_cold(argv, *rest)

    monkeypatch.setattr(children, "run_child", child)
    monkeypatch.setattr(timings, "run_cold", cold)
    monkeypatch.setattr(children, "run_cold", cold)
    return started


@pytest.mark.slow
def test_a_compiled_cell_is_compiled_once_in_its_fresh_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FAULTY", raising=False)
    started = _spy(monkeypatch)
    CountingBackend.compiles = 0
    run_dir, code = execute(
        load_plan(FAULTY),
        CountingBackend(),
        Options(target="cpu", out_dir=tmp_path, only=[COMPILED], warm_repetitions=3),
    )
    assert code == 0 and run_dir is not None
    assert CountingBackend.compiles == 0, "the collector's own process compiled the cell a fresh child ran"
    assert started == {"cells": [[COMPILED]], "cold_only": [[COMPILED]]}, (
        "one child compiles, one restarts with its cache"
    )
    events = _events(run_dir)
    result = next(e for e in events if e.kind == "case_result")
    compile_event = next(e for e in events if e.kind == "compile")
    cold = next(
        e.cold for e in events if e.kind == "timing" and e.cold and e.cold.cache_condition != "restart_populated_cache"
    )
    warm = next(e.warm for e in events if e.kind == "timing" and e.warm)
    assert result.status == "pass" and len(warm.samples_s) == 3
    assert compile_event.cache_condition == cold.cache_condition == "fresh_process_empty_cache"
    assert cold.fresh_process and cold.cache_entries_before == 0 and cold.cache_entries_after > 0
    # The cold call is the check's call: the same seconds, the same outputs against the reference.
    assert cold.seconds == compile_event.compile_first_result_s
    stats = result.error_stats
    assert (cold.output_check.mismatched, cold.output_check.total, cold.output_check.max_abs) == (
        stats.mismatched,
        stats.total,
        stats.max_abs,
    )
    assert [e.kind for e in events].count("compile") == 1
    restart = next(
        e.cold for e in events if e.kind == "timing" and e.cold and e.cold.cache_condition == "restart_populated_cache"
    )
    assert (
        restart.cache_entries_before > 0
        and restart.cache_hits >= 1
        and restart.cache_misses == 0
        and restart.output_check.passed
    )


def _faulty_with_cache_check(tmp_path: Path) -> Path:
    folder = tmp_path / "plan"
    folder.mkdir()
    shutil.copy(REPO / "tests" / "workloads" / "faulty.py", folder / "faulty.py")
    text = FAULTY.read_text(encoding="utf-8")
    assert "\n[matrix]\n" in text and "cache_checks" not in text
    (folder / "faulty.toml").write_text(
        text.replace("\n[matrix]\n", "\n[matrix]\ncache_checks = [[1, 4]]\n"), encoding="utf-8"
    )
    return folder / "faulty.toml"


TINY = REPO / "collector" / "workloads" / "tiny_encoder.toml"
EMPTY, POPULATED, RESTART = "fresh_process_empty_cache", "persistent_cache", "restart_populated_cache"


@pytest.mark.slow
def test_a_full_tiny_encoder_run_compiles_each_graph_from_scratch_once_and_measures_three_cold_conditions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each (dtype, layout) group has a cache-check repeat: every shape's cold call, in a fresh
    process with an empty folder, is its one compile from scratch; the group's process then
    compiles from the caches those left (hits, no misses), and a restart against each shape's
    own folder is the third cold condition, checked like the first."""
    started = _spy(monkeypatch)
    CountingBackend.compiles = 0
    run_dir, code = execute(
        load_plan(TINY), CountingBackend(), Options(target="cpu", out_dir=tmp_path / "runs", warm_repetitions=2)
    )
    assert code == 0 and run_dir is not None
    assert CountingBackend.compiles == 0, "the collector's own process compiled a cell"
    events = _events(run_dir)
    compiled = [e.case for e in events if e.kind == "case_result" and e.case.endswith("-compiled")]
    assert len(compiled) == 6 and all(e.status == "pass" for e in events if e.kind == "case_result")
    # Processes: per shape a cold-only child (empty folder) and a restart child; one per group.
    assert sorted(c for [c] in started["cold_only"]) == sorted(compiled * 2), started
    assert len(started["cells"]) == 2 and all(batch[-1].endswith("-repeat") for batch in started["cells"]), started
    # From scratch exactly once per graph: only the empty-cache cold call missed the cache.
    compiles = {e.case: e for e in events if e.kind == "compile"}
    colds: dict[str, list[Any]] = {}
    for e in events:
        if e.kind == "timing" and e.cold:
            colds.setdefault(e.case, []).append(e.cold)
    for case in compiled:
        scratch = [c for c in colds[case] if c.cache_misses]
        assert [c.cache_condition for c in scratch] == [EMPTY], (case, colds[case])
        assert scratch[0].cache_entries_before == 0 and scratch[0].cache_entries_after > 0
        assert (
            compiles[case].cache_condition == POPULATED
            and compiles[case].cache_misses == 0
            and compiles[case].cache_hits >= 1
        ), compiles[case]
        assert compiles[case].cache_entries_before > 0
        # Three cold conditions per compiled shape, each checked against the reference.
        assert {c.cache_condition for c in colds[case]} | {compiles[case].cache_condition} == {
            EMPTY,
            POPULATED,
            RESTART,
        }, case
        restart = next(c for c in colds[case] if c.cache_condition == RESTART)
        assert (
            restart.fresh_process
            and restart.cache_entries_before > 0
            and restart.cache_hits >= 1
            and restart.cache_misses == 0
        )
        assert restart.output_check.passed and all(c.output_check.passed for c in colds[case])
    repeats = [e for e in events if e.kind == "case_result" and e.case.endswith("-repeat")]
    assert repeats and all(r.recompiled is False for r in repeats)
    # The report shows the restart beside the other conditions.
    build_report(run_dir / "events.jsonl", tmp_path / "report", formats=("md",))
    text = (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    assert "| restart, cache populated |" in text
    assert text.count("1 hit / 0 misses; matches the reference") >= len(compiled), text


def test_a_fresh_process_that_dies_leaves_its_cell_checked_in_the_collector(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAULTY", "child-crash@1")
    from tests.test_collector_robust import PlainBackend

    run_dir, code = execute(
        load_plan(FAULTY), PlainBackend(), Options(target="cpu", out_dir=tmp_path, only=[COMPILED], warm_repetitions=2)
    )
    assert code == 0 and run_dir is not None
    events = _events(run_dir)
    results = [e for e in events if e.kind == "case_result"]
    assert [(r.case, r.status) for r in results] == [(COMPILED, "pass")], "checked once, in the collector's process"
    warnings = {e.category: e.message for e in events if e.kind == "warning"}
    assert "exited 7" in warnings["ColdStartFailed"]
    assert (
        COMPILED in warnings["CellProcessEnded"]
        and "the collector's own process checks those cells next" in warnings["CellProcessEnded"]
    )
    # Said once and whole (a review: it read 'the fresh process for X the fresh process exited 7: ;').
    assert f"the fresh process for {COMPILED} exited 7" in warnings["CellProcessEnded"]
    assert warnings["CellProcessEnded"].count("the fresh process") == 1 and ": ;" not in warnings["CellProcessEnded"]
    timings_ = [e for e in events if e.kind == "timing"]
    assert not [t for t in timings_ if t.cold], "no cold call was measured: the second first call is not cold"
    assert [t for t in timings_ if t.warm]
    assert [e.kind for e in events].count("compile") == 1


def test_a_child_line_after_its_time_ends_it_and_progress_extends_it(tmp_path: Path) -> None:
    """run_child: a line that shows progress gives the child more time; silence past it ends it."""
    script = tmp_path / "talker.py"
    script.write_text(
        "import time\nfor i in range(4):\n    print('step', i, flush=True)\n    time.sleep(0.6)\ntime.sleep(30)\n",
        encoding="utf-8",
    )
    seen: list[str] = []

    def on_line(line: str) -> bool:
        seen.append(line)
        return True

    monkeypatch_path = str(tmp_path)
    ended = supervise.run_child("talker", [], lambda d: {"PYTHONPATH": monkeypatch_path}, 1.5, on_line)
    assert seen == [f"step {i}" for i in range(4)], "each 0.6 s step came inside the 1.5 s given after the last one"
    assert ended.timed_out and ended.returncode is None


def test_output_a_child_leaves_unfinished_cannot_hide_its_marker_lines(tmp_path: Path) -> None:
    """A workload that prints without a newline (from Python or from C) writes to stderr in a
    fresh child: the marker line after it still starts a line of its own on stdout."""
    script = tmp_path / "chatty.py"
    script.write_text(
        "import os, sys\n"
        "from collector.supervise import marker_stream\n"
        "markers = marker_stream()\n"
        "print('progress...', end='', flush=True)\n"
        "os.write(1, b'C-level output without a newline')\n"
        "print('MARK done', file=markers, flush=True)\n"
        "print('and the rest', flush=True)\n",
        encoding="utf-8",
    )
    seen: list[str] = []

    def on_line(line: str) -> bool:
        seen.append(line)
        return True

    ended = supervise.run_child("chatty", [], lambda d: {"PYTHONPATH": f"{tmp_path}{os.pathsep}{REPO}"}, 30, on_line)
    assert ended.returncode == 0, ended.error()
    assert seen == ["MARK done"]
    assert "progress...C-level output without a newlineand the rest" in "".join(ended.tail)


@pytest.mark.slow
def test_a_compiled_training_cell_is_compiled_once_and_its_first_step_is_the_cold_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started = _spy(monkeypatch)
    CountingBackend.compiles = 0
    plan = load_plan(REPO / "collector" / "workloads" / "tiny_classifier.toml")
    case = "b2-l16-contiguous-float32-compiled"
    run_dir, code = execute(
        plan, CountingBackend(), Options(target="cpu", out_dir=tmp_path, only=[case], warm_repetitions=2)
    )
    assert code == 0 and run_dir is not None
    assert CountingBackend.compiles == 0 and started == {"cells": [[case]], "cold_only": [[case]]}, (
        "one child compiles, one restarts with its cache"
    )
    events = _events(run_dir)
    assert next(e for e in events if e.kind == "case_result").status == "pass"
    forward = next(e for e in events if e.kind == "compile" and e.graph == "forward")
    assert forward.cache_condition == "fresh_process_empty_cache"
    cold = next(
        e.cold for e in events if e.kind == "timing" and e.cold and e.cold.cache_condition != "restart_populated_cache"
    )
    assert cold.fresh_process and cold.cache_entries_before == 0 and cold.output_check.passed
    restart = next(
        e.cold for e in events if e.kind == "timing" and e.cold and e.cold.cache_condition == "restart_populated_cache"
    )
    assert restart.cache_entries_before > 0 and restart.output_check.passed
    steps = [e for e in events if e.kind == "train_step"]
    assert steps and cold.output_check.max_abs == abs(steps[0].loss - steps[0].reference_loss)


HELPER = "faulty_helper.py"


def _run_editing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> tuple[dict[str, str], list[Any], list[Any]]:
    """Run the faulty workload's compiled cell, editing its file ``name`` (the plan, the module,
    or HELPER: a file beside the module that it imports) just before each fresh process starts:
    the run's warnings by category, its results and its events."""
    monkeypatch.delenv("FAULTY", raising=False)
    from tests.test_collector_robust import PlainBackend

    plan_path = _faulty_with_cache_check(tmp_path)
    if name == HELPER:
        folder = plan_path.parent
        (folder / HELPER).write_text("WIDTH = 4\n", encoding="utf-8")
        module = folder / "faulty.py"
        module.write_text(
            module.read_text(encoding="utf-8") + "\nimport faulty_helper  # noqa: E402\n", encoding="utf-8"
        )
        # The collector puts the module's folder on sys.path (kept to this test) to import it.
        monkeypatch.setattr(sys, "path", list(sys.path))
        monkeypatch.delitem(sys.modules, "faulty_helper", raising=False)
    edited = plan_path if name == "plan" else plan_path.with_name(name)
    real_child = children.run_child

    def edit_then_start(module: str, argv: list[str], *rest: Any) -> Any:
        text = edited.read_text(encoding="utf-8")
        edited.write_text(text + "\n# edited while the run was going\n", encoding="utf-8")
        return real_child(module, argv, *rest)

    monkeypatch.setattr(children, "run_child", edit_then_start)
    run_dir, code = execute(
        load_plan(plan_path),
        PlainBackend(),
        Options(target="cpu", out_dir=tmp_path / "runs", only=[COMPILED], warm_repetitions=2),
    )
    assert code == 0 and run_dir is not None
    events = _events(run_dir)
    warnings = {e.category: e.message for e in events if e.kind == "warning"}
    return warnings, [(e.case, e.status) for e in events if e.kind == "case_result"], events


def test_a_plan_edited_during_the_run_is_not_read_by_a_fresh_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The child checks it reads the plan text the run began with; else the cell is checked here."""
    warnings, results, _ = _run_editing(tmp_path, monkeypatch, "plan")
    assert "changed since the run began" in warnings["ColdStartFailed"]
    assert results == [(COMPILED, "pass")]


def test_a_workload_module_edited_during_the_run_is_not_loaded_by_a_fresh_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fresh process would otherwise run other code than the reference and the eager cells."""
    warnings, results, _ = _run_editing(tmp_path, monkeypatch, "faulty.py")
    assert "faulty.py changed since the run began" in warnings["CellProcessEnded"]
    assert "faulty.py changed since the run began" in warnings["ColdStartFailed"]
    assert results == [(COMPILED, "pass")]


def test_a_local_file_the_workload_imports_is_hashed_and_refused_when_edited_during_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """run_start hashes the helper the module imports; a fresh process started after the helper
    changed runs nothing (it would run other code than the reference), and the cell is checked
    in the collector's process."""
    original = hashlib.sha256(b"WIDTH = 4\n").hexdigest()
    warnings, results, events = _run_editing(tmp_path, monkeypatch, HELPER)
    files = events[0].provenance.files
    helper = [f for f in files if f.role == "workload_import"]
    assert [(Path(f.path).name, f.sha256) for f in helper] == [(HELPER, original)]
    for category in ("CellProcessEnded", "ColdStartFailed"):
        assert "a local file workload module" in warnings[category], warnings
        assert "was changed, added or removed since the run began" in warnings[category]
    assert results == [(COMPILED, "pass")]


def test_lines_a_workload_prints_in_a_fresh_process_are_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only well-formed marker lines are read back; a print that looks like one changes nothing."""
    monkeypatch.delenv("FAULTY", raising=False)
    from tests.test_collector_robust import PlainBackend

    noise = [
        "hello from the workload",
        children.EVENT + "{not json",
        children.EVENT + '["a", "list"]',
        children.EVENT + json.dumps({"kind": "run_end", "fields": {"status": "complete"}}),
        children.FLUSH + json.dumps({"case": ["unhashable"], "cold": None}),
        children.FLUSH + "null",
    ]

    def noisy(
        module: str, argv: list[str], cache_env: Any, timeout: float, on_line: Any, *rest: Any
    ) -> supervise.ChildEnd:
        for line in noise:
            assert on_line(line) is False, line
        return supervise.ChildEnd(1, False, ["stopped by the test"])

    monkeypatch.setattr(children, "run_child", noisy)
    run_dir, code = execute(
        load_plan(FAULTY),
        PlainBackend(),
        Options(target="cpu", out_dir=tmp_path, only=[COMPILED], cold="fresh-process", warm_repetitions=2),
    )
    assert code == 0 and run_dir is not None
    events = _events(run_dir)
    assert [e.kind for e in events].count("run_end") == 1 and events[-1].status == "complete"
    assert [(e.case, e.status) for e in events if e.kind == "case_result"] == [(COMPILED, "pass")]
    assert "stopped by the test" in next(
        e.message for e in events if e.kind == "warning" and e.category == "ColdStartFailed"
    )


def _filtered_child(monkeypatch: pytest.MonkeyPatch, drop: Any) -> None:
    """Fresh children whose marker lines for which ``drop`` is true never reach the parent,
    and that end as if killed (exit 1)."""
    real = children.run_child

    def child(
        module: str, argv: list[str], cache_env: Any, timeout: float, on_line: Any, *rest: Any
    ) -> supervise.ChildEnd:
        real(module, argv, cache_env, timeout, lambda line: False if drop(line) else on_line(line), *rest)
        return supervise.ChildEnd(1, False, ["killed by the test"])

    monkeypatch.setattr(children, "run_child", child)


def _message(line: str, marker: str) -> dict[str, Any] | None:
    return json.loads(line[len(marker) :]) if line.startswith(marker) else None


@pytest.mark.slow
def test_a_cell_whose_result_never_reached_the_parent_is_checked_in_the_collector(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A flush that follows no case_result does not count the cell as recorded."""
    monkeypatch.delenv("FAULTY", raising=False)
    _filtered_child(monkeypatch, lambda line: (_message(line, children.EVENT) or {}).get("kind") == "case_result")
    run_dir, code = execute(
        load_plan(FAULTY),
        Backend(),
        Options(target="cpu", out_dir=tmp_path, only=[COMPILED], cold="fresh-process", warm_repetitions=2),
    )
    assert code == 0 and run_dir is not None
    events = _events(run_dir)
    assert [(e.case, e.status) for e in events if e.kind == "case_result"] == [(COMPILED, "pass")]
    assert any(e.kind == "warning" and e.category == "CellProcessEnded" and COMPILED in e.message for e in events)


@pytest.mark.slow
def test_a_fresh_process_that_dies_while_profiling_leaves_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its cells were recorded, but its profile events never came: the log says so."""
    monkeypatch.delenv("FAULTY", raising=False)
    _filtered_child(monkeypatch, lambda line: (_message(line, children.FLUSH) or {"case": 0}).get("case") is None)
    run_dir, code = execute(
        load_plan(FAULTY),
        Backend(),
        Options(target="cpu", out_dir=tmp_path, only=[COMPILED], cold="fresh-process", warm_repetitions=2, profile="*"),
    )
    assert code == 0 and run_dir is not None
    events = _events(run_dir)
    assert [(e.case, e.status) for e in events if e.kind == "case_result"] == [(COMPILED, "pass")]
    failed = [e for e in events if e.kind == "warning" and e.category == "ProfileFailed"]
    assert failed and "killed by the test" in failed[0].message and "while profiling" in failed[0].message


def test_a_training_cell_whose_fresh_process_timed_out_records_a_training_step_scope(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The timed-out cold call's scope is the call the plan times: one training step here."""
    from tests.test_collector_robust import PlainBackend

    def late(
        module: str, argv: list[str], cache_env: Any, timeout: float, on_line: Any, *rest: Any
    ) -> supervise.ChildEnd:
        return supervise.ChildEnd(None, True, [])

    monkeypatch.setattr(children, "run_child", late)
    plan = load_plan(REPO / "collector" / "workloads" / "tiny_classifier.toml")
    case = "b2-l16-contiguous-float32-compiled"
    run_dir, code = execute(
        plan, PlainBackend(), Options(target="cpu", out_dir=tmp_path, only=[case], warm_repetitions=2, cold_timeout=7.0)
    )
    assert code == 0 and run_dir is not None
    events = _events(run_dir)
    late_cold = next(e for e in events if e.kind == "timing" and e.cold_timed_out_after_s)
    assert late_cold.cold_timed_out_after_s == 7.0
    assert late_cold.scope.note.startswith("one full training step"), late_cold.scope.note
    assert [(e.case, e.status) for e in events if e.kind == "case_result"] == [(case, "pass")], (
        "checked in the main process"
    )


@pytest.mark.parametrize("name", ["faulty.py", "plan"])
def test_a_file_edited_between_run_start_and_loading_is_not_what_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """run_start names the workload module and the plan by their sha256. The plan is read before
    run_start and the module loaded after it: an edit to either in between gave run_start the
    edited file's hash while the run used the plan it had read, and loaded the edited module
    with a hash that run_start did not record."""
    from collector.run import setup
    from tests.test_collector_robust import PlainBackend

    monkeypatch.delenv("FAULTY", raising=False)
    plan_path = _faulty_with_cache_check(tmp_path)
    edited = plan_path if name == "plan" else plan_path.with_name(name)
    before = hashlib.sha256(edited.read_bytes()).hexdigest()
    real_start = setup.start

    def start_then_edit(run: Any) -> None:
        if name == "plan":  # read already, hashed by run_start
            edited.write_bytes(edited.read_bytes() + b"\n# edited after the collector read it\n")
            real_start(run)
        else:  # hashed by run_start, loaded after it
            real_start(run)
            edited.write_bytes(edited.read_bytes() + b"\nraise SystemExit(9)\n")

    monkeypatch.setattr(setup, "start", start_then_edit)
    run_dir, code = execute(
        load_plan(plan_path),
        PlainBackend(),
        Options(target="cpu", out_dir=tmp_path / "runs", only=[COMPILED], warm_repetitions=2, cold="in-process"),
    )
    assert run_dir is not None
    reading = read_log(run_dir / "events.jsonl")
    assert reading.valid, [p.format() for p in reading.problems]
    events = reading.events
    role = "plan" if name == "plan" else "workload_module"
    (entry,) = [f for f in events[0].provenance.files if f.role == role]
    assert entry.sha256 == before
    if name == "plan":
        assert code == 0 and reading.complete
    else:
        end = events[-1]
        assert code != 0 and end.kind == "run_end" and end.status != "complete"
        assert "changed since the collector hashed it" in end.reason, end.reason
        assert not [e for e in events if e.kind == "case_result"]


def test_a_break_from_data_dependent_branching_is_counted() -> None:
    """``if h.sum() > 0:`` splits the graph, but torch 2.13 counts that break under
    'unimplemented', not 'graph_break': the compile event read 'graphs 2, graph breaks none' and
    the run was called suitable."""
    import torch
    from torch._dynamo.utils import counters

    def branching(x: torch.Tensor) -> torch.Tensor:
        h = x * 3
        if h.sum() > 0:
            return h * 2
        return h - 1

    torch._dynamo.reset()
    counters.clear()
    try:
        torch.compile(branching, backend="eager")(torch.ones(2, 4))
        breaks = Backend().graph_breaks()
    finally:
        torch._dynamo.reset()
        counters.clear()
    assert sum(breaks.values()) == 1 and "Data-dependent branching" in next(iter(breaks))


def test_a_compile_that_raises_in_a_fresh_process_is_logged_with_the_condition_it_had(tmp_path: Path) -> None:
    """A compile that failed in a fresh child with empty caches was logged 'compiled_in_process'
    (in a process already running, no cache listing): the fresh-process condition and the cache
    listing were added only on the path of a compile that succeeded."""
    run_dir, code = execute(
        load_plan(REPO / "tests" / "workloads" / "graph_break.toml"),
        Backend(),
        Options(target="cpu", out_dir=tmp_path / "runs"),
    )
    assert code == 0 and run_dir is not None
    events = _events(run_dir)
    (result,) = [e for e in events if e.kind == "case_result"]
    (compile_event,) = [e for e in events if e.kind == "compile"]
    assert result.status == "error" and result.failure.phase == "compile"
    assert compile_event.cache_condition == "fresh_process_empty_cache"
    assert compile_event.cache_entries_before == 0 and compile_event.cache_dirs


def test_a_fresh_process_out_of_space_ends_the_run_with_exit_4(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh process that ran out of space printed a traceback and exited 1; the collector
    then checked its cells again in its own process, on the same full disk. It exits 4 with one
    line, and the collector ends the run as for its own lack of space."""
    monkeypatch.delenv("FAULTY", raising=False)

    def full(module: str, argv: list[str], *rest: Any) -> supervise.ChildEnd:
        return supervise.ChildEnd(4, False, ["collector: out of space in a fresh process: No space left on device"])

    monkeypatch.setattr(children, "run_child", full)
    CountingBackend.compiles = 0
    run_dir, code = execute(
        load_plan(FAULTY),
        CountingBackend(),
        Options(target="cpu", out_dir=tmp_path, only=[COMPILED], warm_repetitions=3),
    )
    assert code == 4 and run_dir is not None and CountingBackend.compiles == 0, "checked again in this process"
    reading = read_log(run_dir / "events.jsonl")
    assert reading.valid and not reading.complete
    reason = reading.run_end.reason or ""
    # Said once: the fresh process's own opening words are not repeated after the run's.
    assert reason.startswith("out of space: a fresh process's files: No space left on device;"), reason
    assert reason.count("out of space") == 1, reason


def test_a_fresh_process_that_exits_4_without_saying_out_of_space_is_no_lack_of_space(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Workload code that calls sys.exit(4) in a fresh process is a process that ended, its cells
    checked in the collector's own process, not a full disk."""
    from tests.test_collector_robust import PlainBackend

    monkeypatch.delenv("FAULTY", raising=False)

    def exits(module: str, argv: list[str], *rest: Any) -> supervise.ChildEnd:
        return supervise.ChildEnd(4, False, ["a workload's own words"])

    monkeypatch.setattr(children, "run_child", exits)
    run_dir, code = execute(
        load_plan(FAULTY),
        PlainBackend(),  # compiles without inductor: the test is about the exit code
        Options(target="cpu", out_dir=tmp_path, only=[COMPILED], warm_repetitions=3),
    )
    assert code == 0 and run_dir is not None
    assert any(e.kind == "warning" and e.category == "CellProcessEnded" for e in _events(run_dir))


def _compiled_cell_run(plan: Path, out: Path, cold: str) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """One run of the plan's first compiled cell (a plain backend): its warnings by category and
    its results."""
    from tests.test_collector_robust import PlainBackend

    run_dir, code = execute(
        load_plan(plan),
        PlainBackend(),
        Options(target="cpu", out_dir=out, only=[COMPILED], warm_repetitions=2, cold=cold),
    )
    assert code == 0 and run_dir is not None
    events = _events(run_dir)
    warnings = {e.category: e.message for e in events if e.kind == "warning"}
    return warnings, [(e.case, e.status) for e in events if e.kind == "case_result"]


SHIPPED = """
import os
from pathlib import Path

import torch
from torch import nn

MODEL_REVISION = "shipped-weights MLP (synthetic test workload)"
WEIGHTS_ORIGIN = "synthetic"
TASK_METRIC = "max_abs_to_reference"
HERE = Path(__file__).resolve().parent


def weights_file():
    return HERE / "weights.pt"


def build_model():
    model = nn.Sequential(nn.Linear(8, 4))
    # strict=False: the file holds the weight only, so the bias is the unseeded initialisation.
    model.load_state_dict(torch.load(weights_file(), weights_only=True), strict=False)
    return model.eval()


def make_inputs(batch, length, layout):
    return {"x": torch.randn(batch, length, 8, generator=torch.Generator().manual_seed(batch))}


def run_model(model, inputs):
    return {"y": model(inputs["x"])}


def task_metric(outputs, reference, inputs):
    return float((outputs["y"].double() - reference["y"].double()).abs().max())
"""


@pytest.mark.slow  # three runs of three fresh processes each (about 15 s): CI runs it
def test_a_fresh_process_that_builds_other_weights_runs_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: a fresh process called build_model() again and ran whatever it built. A shipped
    weights file changed during the run made the compiled cell a 'mismatch' of 1.0, blamed on
    the compiler, while the log named the weights of the eager cells; a bias the file lacks,
    initialised without a seed, did the same in every run. Now a fresh process whose weights
    hash otherwise than the plan event's runs nothing: its cell is checked in the collector's
    process, the reason logged."""

    folder = tmp_path / "plan"
    folder.mkdir()
    (folder / "shipped.py").write_text(SHIPPED, encoding="utf-8")
    (folder / "shipped.toml").write_text(
        FAULTY.read_text(encoding="utf-8")
        .replace('module = "faulty.py"', 'module = "shipped.py"')
        .replace('name = "faulty"', 'name = "shipped"')
        .replace("\n[matrix]\n", "\n[matrix]\ncache_checks = [[1, 4]]\n"),
        encoding="utf-8",
    )
    torch = pytest.importorskip("torch")
    torch.save({"0.weight": torch.full((4, 8), 0.25)}, folder / "weights.pt")

    def run(cold: str) -> tuple[dict[str, str], list[tuple[str, str]]]:
        return _compiled_cell_run(folder / "shipped.toml", tmp_path / "runs", cold)

    # The unseeded bias: each process builds another model, so the fresh processes run nothing
    # (the collector leaves the generator as the workload set it: no seed of its own).
    warnings, results = run("fresh-process")
    for category in ("CellProcessEnded", "ColdStartFailed"):
        assert "build_model() builds another model in each process" in warnings[category], warnings
    assert results == [(COMPILED, "pass")]

    # Seeded in build_model, the same file: the fresh processes run the cell.
    seeded = SHIPPED.replace(
        "    model = nn.Sequential(nn.Linear(8, 4))",
        "    torch.manual_seed(3)\n    model = nn.Sequential(nn.Linear(8, 4))",
    )
    (folder / "shipped.py").write_text(seeded, encoding="utf-8")
    warnings, results = run("fresh-process")
    assert "CellProcessEnded" not in warnings and "ColdStartFailed" not in warnings, warnings
    assert results == [(COMPILED, "pass")]

    real_child = children.run_child

    def rewrite_then_start(module: str, argv: list[str], *rest: Any) -> Any:
        torch.save({"0.weight": torch.full((4, 8), 1.25)}, folder / "weights.pt")
        return real_child(module, argv, *rest)

    monkeypatch.setattr(children, "run_child", rewrite_then_start)
    torch.save({"0.weight": torch.full((4, 8), 0.25)}, folder / "weights.pt")
    warnings, results = run("fresh-process")
    for category in ("CellProcessEnded", "ColdStartFailed"):
        assert "the model this process built (its weights and buffers, content sha256 " in warnings[category], warnings
        assert "a shipped weights file changed since the run began" in warnings[category]
    assert results == [(COMPILED, "pass")]  # checked in the collector's process, on the run's weights


BUFFERED = """
import torch
from torch import nn

MODEL_REVISION = "MLP with an unseeded non-persistent buffer (synthetic test workload)"
WEIGHTS_ORIGIN = "synthetic"
TASK_METRIC = "max_abs_to_reference"


class Shifted(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(3)
        self.linear = nn.Linear(8, 4)
        # Kept out of the state_dict (and so out of the weights file and its hash), drawn unseeded:
        # a buffer registered with persistent=False, or a plain attribute.
        shift = torch.randn(4, generator=torch.Generator().manual_seed(SEED))
        if KEPT == "buffer":
            self.register_buffer("shift", shift, persistent=False)
        else:
            self.shift = shift

    def forward(self, x):
        return self.linear(x) + self.shift


def build_model():
    return Shifted().eval()


def make_inputs(batch, length, layout):
    return {"x": torch.randn(batch, length, 8, generator=torch.Generator().manual_seed(batch))}


def run_model(model, inputs):
    return {"y": model(inputs["x"])}


def task_metric(outputs, reference, inputs):
    return float((outputs["y"].double() - reference["y"].double()).abs().max())
"""


@pytest.mark.slow  # two runs of three fresh processes each: CI runs it
@pytest.mark.parametrize("kept", ["buffer", "attribute"])
def test_a_fresh_process_whose_non_persistent_buffer_differs_runs_nothing(tmp_path: Path, kept: str) -> None:
    """A review: a buffer registered with persistent=False is in no state_dict, so the fresh
    process's weights check passed while it built another model (its buffer drawn again): the
    compiled cell read 'mismatch', 32 of 32 elements, blamed on the backend. The check now holds
    the non-persistent buffers too: such a process runs nothing, its cell is checked in the
    collector's process, the reason logged."""

    folder = tmp_path / "plan"
    folder.mkdir()
    (folder / "buffered.toml").write_text(
        FAULTY.read_text(encoding="utf-8")
        .replace('module = "faulty.py"', 'module = "buffered.py"')
        .replace('name = "faulty"', 'name = "buffered"'),
        encoding="utf-8",
    )

    def run(seed: str) -> tuple[dict[str, str], list[tuple[str, str]]]:
        (folder / "buffered.py").write_text(
            BUFFERED.replace("SEED", seed).replace("KEPT", repr(kept)), encoding="utf-8"
        )
        return _compiled_cell_run(folder / "buffered.toml", tmp_path / "runs", "fresh-process")

    # Drawn from the process's own id: each process builds another buffer.
    warnings, results = run("__import__('os').getpid()")
    for category in ("CellProcessEnded", "ColdStartFailed"):
        assert "builds another model in each process (an unseeded parameter or buffer)" in warnings[category], warnings
    assert results == [(COMPILED, "pass")]
    # The same buffer in every process: the fresh processes run the cell.
    warnings, results = run("5")
    assert "CellProcessEnded" not in warnings and "ColdStartFailed" not in warnings, warnings
    assert results == [(COMPILED, "pass")]
