"""A review of localisation and the generation path: a generation cell that failed its task
criterion and its top-k overlap was said to fail on the task metric alone, and a compiled cell
that failed (so had no cold call) made two runs of one --cold read as a criteria change."""

from __future__ import annotations

from types import SimpleNamespace

from reportgen.judge.criteria import _compiled_measurement, criteria_changes
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


def _measured(*cells: SimpleNamespace) -> dict:
    declared = _compiled_measurement(SimpleNamespace(cells=list(cells)))  # type: ignore[arg-type]
    return {declared.key: declared}


def test_a_run_whose_compiled_cells_were_not_timed_names_no_cold_condition() -> None:
    timed = _measured(_compiled("fresh_process_empty_cache"))
    failed = _measured(_compiled(None))
    assert "cold call: fresh process, empty compile cache" in timed["compiled_measurement"].value
    assert failed["compiled_measurement"].value.endswith("cold call: not recorded"), "not 'none'"
    assert criteria_changes(timed, failed) == [], "one --cold on both sides: no change"
    # The compile condition is still compared (a fourth review: it was dropped with the cold call).
    in_process = _measured(_compiled("compiled_in_process", "compiled_in_process"))
    (change,) = criteria_changes(failed, in_process)
    assert change.key == "compiled_measurement"
