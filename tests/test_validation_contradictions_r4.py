"""`reportgen validate` on logs that contradict themselves in ways the collector can never write:
a tolerance widened in the plan after the results were judged by a tighter one, localisations
that do not fit the results they follow, lines of another schema version than run_start's, and
a timing scope that is not what its timed region holds. Each log is a synthetic one
(tests/logbuilder) edited by hand, and says so in its run_start; each rule follows the collector
code named in the docstrings of reportgen/contract/consistency.py and validation.py."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from reportgen.contract.events import SCHEMA_MAJOR, SCHEMA_MINOR
from tests.logbuilder import case_key, complete_log, generation_log, localized_log, noted, training_log
from tests.test_validation_contradictions_r3 import _errors, _line

Lines = list[dict[str, Any]]
EAGER = case_key(1, 16, "eager")
COMPILED = case_key(1, 16, "compiled")
LOCALIZED = case_key(2, 16, "compiled")  # the mismatching cell localized_log localises
NOTE = "Synthetic log for the contradiction checks of validate (round four); not a measurement."
SUFFIX = "; the log contradicts itself"


def _marked(events: Lines) -> Lines:
    return noted(events, NOTE)


def _one(events: Lines, kind: str, case: str | None = None) -> dict[str, Any]:
    return events[_line(events, kind, case) - 1]


def _mismatch(events: Lines, case: str = COMPILED) -> dict[str, Any]:
    """The cell as a real bfloat16-like mismatch under atol 1e-5, rtol 1e-4 (the plan's): 500
    elements outside, the worst 0.0285 off where it was allowed 0.000165."""
    result = _one(events, "case_result", case)
    result["status"] = "mismatch"
    result["error_stats"].update(
        max_abs=0.0285, max_rel=0.9, mismatched=500, total=512, diff_at_worst=0.0285, allowed_at_worst=0.000165
    )
    return result


def _tolerance(events: Lines, **figures: float) -> None:
    _one(events, "plan")["tolerances"]["float32"].update(figures)


def _widened(events: Lines, tolerance: float = 0.5) -> None:
    """The plan's float32 atol and rtol made ``tolerance``, and every passing cell's worst element
    given an allowance it could have had under it: only the mismatch keeps its own."""
    _tolerance(events, atol=tolerance, rtol=tolerance)
    for event in events:
        if event["kind"] == "case_result" and event["status"] == "pass":
            event["error_stats"]["allowed_at_worst"] = tolerance * 1.2


def test_a_tolerance_widened_after_the_results_is_an_error(tmp_path: Path) -> None:
    """Before: a real run whose cells mismatched under atol = rtol = 1e-4, its plan edited to
    atol = rtol = 0.5, validated, and `diff` read its mismatches as 'fixed' with no criteria
    change. Every element of a floating output is allowed atol + rtol * |ref|, at least the atol
    that judged it: an allowance of 0.000165 was never given under atol 0.5."""
    events = _marked(complete_log())
    result = _mismatch(events)
    assert _errors(tmp_path, copy.deepcopy(events)) == []
    _widened(events)
    assert _errors(tmp_path, events) == [
        f"{_line(events, 'case_result', COMPILED)}: case_result {COMPILED!r}: error_stats.allowed_at_worst 0.000165 "
        "is less than the atol 0.5 that judged this cell: every element is allowed at least the atol (0 where "
        f"compared exactly){SUFFIX}"
    ]
    # An integer or boolean output is compared exactly: its worst element allowed 0, and the one
    # it got wrong differs by 1 at least, which a float atol of 2 does not explain away.
    result["outputs"][0]["dtype"] = "int64"
    result["error_stats"].update(max_abs=1.0, max_rel=1.0, diff_at_worst=1.0, allowed_at_worst=0.0)
    _widened(events, 2.0)
    assert _errors(tmp_path, events) == []


def test_elements_outside_the_tolerance_within_its_atol_are_an_error(tmp_path: Path) -> None:
    """An element outside its allowance differs by more than the atol (by 1 at least where it is
    compared exactly): a count of such elements whose largest difference is within the atol was
    not judged with it, in all or output by output (per_output, with judged regions)."""
    events = _marked(complete_log())
    stats = _mismatch(events)["error_stats"]
    _widened(events)
    stats["allowed_at_worst"] = None  # not finite there: the allowance says nothing
    line = _line(events, "case_result", COMPILED)
    assert _errors(tmp_path, events) == [
        f"{line}: case_result {COMPILED!r}: error_stats counts 500 element(s) outside the tolerance, but its max_abs "
        f"0.0285 is within the atol 0.5 that judged this cell: an element outside it differs by more than the atol{SUFFIX}"
    ]
    # Another output's largest difference hides this one's in the top-level max_abs.
    stats.update(max_abs=0.9, diff_at_worst=0.9)
    stats["per_output"] = [
        {"name": "hidden", "mismatched": 500, "total": 512, "max_abs": 0.0285, "max_rel": 0.9, "region": "mask"},
        {"name": "pooled", "mismatched": 0, "total": 32, "max_abs": 0.9, "max_rel": 0.1},
    ]
    assert _errors(tmp_path, events) == [
        f"{line}: case_result {COMPILED!r}: per_output 'hidden' counts 500 element(s) outside the tolerance, but "
        f"its max_abs 0.0285 is within the atol 0.5 that judged this cell: an element outside it differs by more "
        f"than the atol{SUFFIX}"
    ]
    stats["per_output"][0]["max_abs"] = 0.6  # beyond the atol: allowed by nothing the plan gives
    assert _errors(tmp_path, events) == []


def test_a_training_cell_s_figures_are_held_to_its_loss_tolerance(tmp_path: Path) -> None:
    """A training cell's error_stats compare its steps' losses, judged with the plan's loss
    tolerance (collector/run/training_cells.py): the dtype's own atol does not judge them."""
    events = _marked(training_log())
    tolerance = _one(events, "plan")["tolerances"]["float32"]
    tolerance.update(atol=0.5)
    assert _errors(tmp_path, copy.deepcopy(events)) == []
    tolerance["loss"].update(atol=0.5)
    result = _line(events, "case_result", EAGER)
    assert _errors(tmp_path, events)[0].startswith(
        f"{result}: case_result {EAGER!r}: error_stats.allowed_at_worst 0.00012 is less than the atol 0.5"
    )


def _localized() -> Lines:
    return _marked(localized_log())


def test_a_localisation_for_another_reason_than_its_cell_s_status_is_an_error(tmp_path: Path) -> None:
    """Before: a passing cell's localisation relabelled 'mismatch' validated, and the page sent
    the reader looking for the source of an error the cell never had. The collector localises a
    mismatch or a non-finite cell for its status, a passing one only for the plan ('plan')."""
    events = _localized()
    assert _errors(tmp_path, copy.deepcopy(events)) == []
    localization = _one(events, "localization", LOCALIZED)
    localization["reason"] = "plan"
    line, result = _line(events, "localization", LOCALIZED), _line(events, "case_result", LOCALIZED)
    assert _errors(tmp_path, copy.deepcopy(events)) == [
        f"{line}: localization {LOCALIZED!r}: reason plan, but the case_result on line {result} says status mismatch: "
        "the collector localises a cell that mismatched or went non-finite for its status, one that passed for the "
        f"plan, and no other{SUFFIX}"
    ]
    # The same localisation of a passing compiled cell: 'plan' is its reason, 'mismatch' is not.
    localization.update(case=COMPILED, reason="mismatch")
    events.insert(_line(events, "timing", COMPILED), events.pop(line - 1))
    line, result = _line(events, "localization", COMPILED), _line(events, "case_result", COMPILED)
    assert _errors(tmp_path, copy.deepcopy(events)) == [
        f"{line}: localization {COMPILED!r}: reason mismatch, but the case_result on line {result} says status pass: "
        "the collector localises a cell that mismatched or went non-finite for its status, one that passed for the "
        f"plan, and no other{SUFFIX}"
    ]
    localization["reason"] = "plan"
    assert _errors(tmp_path, events) == []


def test_a_localisation_in_another_mode_than_its_cell_is_an_error(tmp_path: Path) -> None:
    """The collector localises a cell as it ran it: an eager localisation of a compiled cell
    judged modules the cell's compiled graph never ran."""
    events = _localized()
    _one(events, "localization", LOCALIZED)["mode"] = "eager"
    assert _errors(tmp_path, events) == [
        f"{_line(events, 'localization', LOCALIZED)}: localization {LOCALIZED!r}: mode is eager, but the plan's cell is "
        f"compiled: the collector localises a cell in its own mode{SUFFIX}"
    ]


def test_a_localisation_repeated_or_before_its_result_is_an_error(tmp_path: Path) -> None:
    """The collector localises a cell once, after its result: a second localisation (a page
    would show either one), or one before the result it explains, was not written by it."""
    events = _localized()
    first = _line(events, "localization", LOCALIZED)
    again = copy.deepcopy(events[first - 1])
    events.insert(first, again)
    assert _errors(tmp_path, copy.deepcopy(events)) == [
        f"{first + 1}: localization {LOCALIZED!r}: a second localization of this cell (the first is on line {first}): "
        f"the collector localises a cell once{SUFFIX}"
    ]
    del events[first]  # the second one
    early = events.pop(first - 1)
    events.insert(_line(events, "case_result", LOCALIZED) - 1, early)
    assert _errors(tmp_path, events) == [
        f"{_line(events, 'localization', LOCALIZED)}: localization {LOCALIZED!r}: no case_result of this cell comes "
        f"before it: the collector localises a cell after its result{SUFFIX}"
    ]


def _localization_of(case: str, mode: str) -> dict[str, Any]:
    template = _one(localized_log(), "localization", LOCALIZED)
    return dict(template, case=case, mode=mode, reason="plan", atol=1e-5, rtol=1e-4)


def test_a_localisation_of_a_generation_or_training_cell_is_an_error(tmp_path: Path) -> None:
    """The collector localises the cells of an inference plan only (collector/localize.py):
    generation and training cells are never localised."""
    for make, case, what in (
        (generation_log, case_key(1, 96, "eager"), "generation"),
        (training_log, EAGER, "training"),
    ):
        events = _marked(make())
        at = _line(events, "case_result", case)
        events.insert(at, _localization_of(case, "eager") | {"schema_version": events[0]["schema_version"]})
        assert _errors(tmp_path, events) == [
            f"{at + 1}: localization {case!r}: a cell of a {what} plan localised: the collector localises the cells "
            f"of an inference plan only{SUFFIX}"
        ], what


def test_a_line_of_another_schema_version_than_run_start_s_is_an_error(tmp_path: Path) -> None:
    """Before: a 1.6 log with its results relabelled 1.5 validated, each result read by the
    rules of a version its collector never wrote. One collector writes its whole log in one
    version (collector/eventlog.py)."""
    events = _marked(complete_log())
    for event in events:
        event["schema_version"] = "1.2"
    assert _errors(tmp_path, copy.deepcopy(events)) == []
    _one(events, "case_result", EAGER)["schema_version"] = "1.1"
    _one(events, "operators", EAGER)["schema_version"] = "1.0"
    assert _errors(tmp_path, copy.deepcopy(events)) == [
        f"{_line(events, 'case_result', EAGER)}: case_result {EAGER!r}: schema_version is 1.1, but run_start's is 1.2: "
        f"one collector writes its whole log in one version{SUFFIX}",
        f"{_line(events, 'operators', EAGER)}: operators {EAGER!r}: schema_version is 1.0, but run_start's is 1.2: "
        f"one collector writes its whole log in one version{SUFFIX}",
    ]
    # A line of a newer minor than this reader's is read as far as it is understood, with a warning.
    newer = f"{SCHEMA_MAJOR}.{SCHEMA_MINOR + 1}"
    _one(events, "case_result", EAGER)["schema_version"] = newer
    _one(events, "operators", EAGER)["schema_version"] = newer
    assert _errors(tmp_path, events) == []


def test_a_timing_scope_that_is_not_its_timed_region_is_an_error(tmp_path: Path) -> None:
    """Before: timing lines whose scope said the inputs' copy to the device was timed, while
    their timed_region said only the model call was, validated; a comparison read the scope. The
    collector makes the scope from the region (collector/run/timings.py, scope_done)."""
    events = _marked(complete_log())
    timing = _one(events, "timing", EAGER)
    timing["timed_region"] = ["model_call"]
    assert _errors(tmp_path, copy.deepcopy(events)) == []
    timing["scope"]["host_to_device"] = True
    assert _errors(tmp_path, copy.deepcopy(events)) == [
        f"{_line(events, 'timing', EAGER)}: timing {EAGER!r}: scope.host_to_device is true, but timed_region does not "
        f"hold host_to_device: the scope is what the clock covered{SUFFIX}"
    ]
    timing["timed_region"] = ["host_to_device", "model_call"]
    assert _errors(tmp_path, copy.deepcopy(events)) == []
    del timing["timed_region"]  # not recorded: the scope repeats the plan, and is not judged
    assert _errors(tmp_path, events) == []
