"""A review of localisation and the generation path: a generation cell that failed its task
criterion and its top-k overlap was said to fail on the task metric alone, and a compiled cell
that failed (so had no cold call) made two runs of one --cold read as a criteria change."""

from __future__ import annotations

from types import SimpleNamespace

from reportgen.judge.criteria import NOT_RECORDED, _compiled_measurement
from reportgen.judge.judgement import failing_quantity


def _generation_cell(tokens_passed: bool | None, top_k_passed: bool, task_failed: bool) -> SimpleNamespace:
    return SimpleNamespace(
        output_nonfinite=False,
        mismatched=0,
        trained=False,
        task_metric=SimpleNamespace(passed=not task_failed, value=1.0) if task_failed is not None else None,
        generation=SimpleNamespace(tokens_passed=tokens_passed, first_divergent_step=1, top_k_passed=top_k_passed),
    )


def test_a_generation_cell_names_every_criterion_it_failed() -> None:
    both = failing_quantity(_generation_cell(False, False, True))  # type: ignore[arg-type]
    assert both == "task metric, top-k overlap"
    assert failing_quantity(_generation_cell(True, False, False)) == "top-k overlap"  # type: ignore[arg-type]
    assert failing_quantity(_generation_cell(False, True, False)) == "greedy tokens"  # type: ignore[arg-type]


def _compiled(cold: str | None, compile_condition: str = "fresh_process_empty_cache") -> SimpleNamespace:
    return SimpleNamespace(
        planned=SimpleNamespace(mode="compiled", repeat_of=None),
        compile_cache=(0, 1, compile_condition),
        cold_condition=cold,
    )


def test_a_run_whose_compiled_cells_were_not_timed_names_no_cold_condition() -> None:
    timed = _compiled_measurement(SimpleNamespace(cells=[_compiled("fresh_process_empty_cache")]))  # type: ignore[arg-type]
    failed = _compiled_measurement(SimpleNamespace(cells=[_compiled(None)]))  # type: ignore[arg-type]
    assert "cold call: fresh process, empty compile cache" in timed.value
    assert failed.value == NOT_RECORDED, "a failed cell has no cold call: no condition, not 'none'"
