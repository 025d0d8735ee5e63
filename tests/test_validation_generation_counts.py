"""`reportgen validate` on generation and localisation lines a review wrote by hand, each a line
the collector never writes (collector/run/generation_cells.py writes a cell's case_result task
metric and its generation event from one count; collector/compare.py counts an element whose
difference is not finite as outside a finite allowance). Before, each validated and the report
printed both sides of the contradiction, or stopped with a traceback. The logs are synthetic
(tests/logbuilder) edited by hand, and say so in their run_start."""

from __future__ import annotations

import copy

from pathlib import Path

from tests.test_validation_localization_r26 import DIVERGED, _generation, _localized, _marked, _refused
from tests.logbuilder import generation_log
from tests.test_validation_contradictions_r3 import _errors, _line

PASSING = "b1-l96-contiguous-float32-eager"  # generation_log's cell whose tokens all agree


def test_token_rows_of_unequal_length_are_one_error_not_a_traceback(tmp_path: Path) -> None:
    """Before: IndexError at consistency.py from validate, report, diff and compare; site skipped
    the run with "IndexError: list index out of range" and no line."""
    events = _marked(generation_log())
    event, prefix = _generation(events, PASSING)
    event["tokens"] = [event["tokens"][0], event["tokens"][0][:3]]
    event["reference_tokens"] = [event["reference_tokens"][0], event["reference_tokens"][0][:3]]
    errors = _errors(tmp_path, events)
    assert errors[0] == (
        f"{prefix}tokens hold 3 step(s) in row 1, but decode_steps 6 gives 7 (the prefill's token and one a decode"
        " call); the log contradicts itself"
    )


def test_a_generation_with_no_criterion_judged_where_the_plan_declares_one_is_an_error(tmp_path: Path) -> None:
    """Before: a passing cell whose tokens agree for 2 of 7 steps against >= 7, tokens_passed
    null, read "Suitable" with a tick beside "2 of 7 steps agree (criterion >= 7)"."""
    events = _marked(generation_log())
    event, prefix = _generation(events, PASSING)
    assert _errors(tmp_path, copy.deepcopy(events)) == []
    event["tokens_passed"] = None
    _refused(
        tmp_path,
        events,
        prefix,
        "tokens_passed is null (no criterion), but the plan declares >= 7 for this cell's dtype",
    )


def test_a_result_s_task_metric_other_than_its_generation_s_count_is_an_error(tmp_path: Path) -> None:
    """Before: the case_result said 2 agreeing steps, not met, and its generation event 7 of 7:
    section 1 showed "= 2 (not met)" and section 7 "7 of 7 steps agree"."""
    events = _marked(generation_log())
    event, prefix = _generation(events, DIVERGED)
    result_line = _line(events, "case_result", DIVERGED)
    result = events[result_line - 1]
    assert result["task_metric"]["value"] == event["steps_agreeing"] == 3
    result["task_metric"]["value"] = 2.0
    _refused(
        tmp_path,
        events,
        prefix,
        f"steps_agreeing 3 (tokens_passed false), but the case_result on line {result_line} gives its task metric"
        " 2.0 (passed false): the collector writes both from one count",
    )


def test_a_comparison_with_no_element_outside_and_a_worst_difference_not_finite_is_an_error(tmp_path: Path) -> None:
    """Before: blocks.0's local figure counted no element outside the tolerance with a null worst
    |diff|, validated, and moved the module the report named (blocks.0, "local error not finite")."""
    events, event, prefix = _localized()
    module = event["modules"][0]
    module["local"].update(mismatched=0, diff_at_worst=None, max_abs=None)
    _refused(
        tmp_path,
        events,
        prefix,
        f"module {module['name']!r} local counts no element outside the tolerance, but its worst element's |diff| is"
        f" not finite against its allowance {module['local']['allowed_at_worst']}",
    )


def test_a_worst_difference_not_finite_beside_a_finite_max_abs_is_an_error(tmp_path: Path) -> None:
    """A second review: the same module figure with its allowance null too validated, and still
    moved the module named. Any difference not finite makes max_abs null (collector/compare.py)."""
    events, event, prefix = _localized()
    module = event["modules"][0]
    module["local"].update(mismatched=0, diff_at_worst=None, allowed_at_worst=None, max_abs=0.0)
    _refused(
        tmp_path,
        events,
        prefix,
        f"module {module['name']!r} local.diff_at_worst is not finite, but max_abs 0.0 is the largest |diff| of the"
        " judged elements",
    )


def test_a_module_figure_with_no_allowance_is_an_error(tmp_path: Path) -> None:
    """collector/localize.py gives a module no figure where the reference module's worst element
    has no finite allowance, and notes why."""
    events, event, prefix = _localized()
    module = event["modules"][0]
    module["accumulated"].update(allowed_at_worst=None)
    _refused(
        tmp_path,
        events,
        prefix,
        f"module {module['name']!r} accumulated has no allowance at its worst element: the collector gives a module no"
        " figure where the reference is not finite there",
    )
