"""`reportgen validate` on localization, generation and request events edited by hand the way a
reviewer edited a real log: each edit made the page repeat a claim the run never measured (a
module with no local error called "first diverging", a top-k overlap judged where the contexts
differ, a bucket the request was never routed to). Each one is a line the collector never writes
(collector/localize.py, collector/generation.py, collector/run/generation_cells.py), refused with
one error naming the line; the logs the collector does write, its older ones included, still
validate. Each log is a synthetic one (tests/logbuilder) edited by hand, and says so in its
run_start."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from tests.logbuilder import case_key, generation_log, localized_log, noted
from tests.test_validation_contradictions_r3 import _errors, _line

Lines = list[dict[str, Any]]
LOCALIZED = case_key(2, 16, "compiled")  # the mismatching cell localized_log localises
DIVERGED = "b1-l240-contiguous-float32-compiled"  # generation_log's cell whose tokens part at step 3
NOTE = "Synthetic log for the localization and generation checks of validate; not a measurement."
SUFFIX = "; the log contradicts itself"


def _marked(events: Lines) -> Lines:
    return noted(events, NOTE)


def _localized() -> tuple[Lines, dict[str, Any], str]:
    """The localised log, its localization event and the error prefix of that event's line."""
    events = _marked(localized_log())
    line = _line(events, "localization", LOCALIZED)
    return events, events[line - 1], f"{line}: localization {LOCALIZED!r}: "


def _refused(tmp_path: Path, events: Lines, prefix: str, message: str) -> None:
    assert _errors(tmp_path, events) == [f"{prefix}{message}{SUFFIX}"]


def test_a_module_listed_twice_is_an_error(tmp_path: Path) -> None:
    """Before: blocks.3 renamed blocks.2 validated, and the page named the second blocks.2 (no
    local error of its own) beside the first as where the cell diverges. named_modules() gives each
    module one name, and the collector measures it once, at its first call."""
    events, event, prefix = _localized()
    assert _errors(tmp_path, copy.deepcopy(events)) == []
    event["modules"][3]["name"] = "blocks.2"
    _refused(
        tmp_path,
        events,
        prefix,
        "module 'blocks.2' is listed twice (modules 2 and 3): the collector measures a module once, at its first call",
    )


def test_modules_out_of_their_order_are_an_error_but_a_child_before_its_parent_is_not(tmp_path: Path) -> None:
    """order is a module's position in the list the collector writes (0, 1, ... in the reference's
    execution order). A child listed before its parent is honest: a model whose own forward calls
    a child first (an embedding taken before the decoder runs) has its first call first."""
    events, event, prefix = _localized()
    modules = event["modules"]
    modules[1]["order"], modules[2]["order"] = 2, 1
    _refused(
        tmp_path,
        copy.deepcopy(events),
        prefix,
        "module 'blocks.1' is listed at position 1, but its order is 2: the collector lists modules in execution "
        "order, order their position 0, 1, ...",
    )
    # A module taken out of the list, the others' order left as it was.
    event["modules"] = [m for m in modules if m["name"] != "blocks.0"]
    _refused(
        tmp_path,
        copy.deepcopy(events),
        prefix,
        "module 'blocks.1' is listed at position 0, but its order is 2: the collector lists modules in execution "
        "order, order their position 0, 1, ...",
    )
    # blocks.2's own layer called (and listed) before blocks.2 itself: validates.
    child = {**modules[2], "name": "blocks.2.fc", "type": "Linear", "depth": 2}
    event["modules"] = [*modules[:2], child, *modules[2:]]
    for order, module in enumerate(event["modules"]):
        module["order"] = order
    assert _errors(tmp_path, events) == []


def test_a_failed_localisation_that_lists_modules_is_an_error(tmp_path: Path) -> None:
    """The collector writes a localisation that failed with modules [] and the failure (localize):
    a failure beside measured modules leaves unknown which of the two the log means."""
    events, event, prefix = _localized()
    failure = "RuntimeError: the hooked candidate ran out of memory"
    failed = copy.deepcopy(events)
    failed_event = failed[_line(failed, "localization", LOCALIZED) - 1]
    for key in ("skipped", "skipped_more", "bytes_held", "operators_from"):
        failed_event.pop(key)
    failed_event.update(modules=[], failure=failure)
    assert _errors(tmp_path, failed) == []
    event["failure"] = failure
    _refused(
        tmp_path,
        events,
        prefix,
        "failure is given, but 5 module(s) listed: the collector lists no module of a localisation that failed",
    )


def test_a_local_figure_of_another_mode_than_the_cells_is_an_error(tmp_path: Path) -> None:
    """The collector runs each module alone in the cell's mode and says local_compiled = (mode is
    compiled) where it has a local figure; a module with no local figure leaves it out."""
    events, event, prefix = _localized()
    modules = event["modules"]
    modules[0].pop("local_compiled")
    modules[0].pop("local")
    modules[0]["note"] = "local: could not be compiled alone: Unsupported: a data-dependent branch"
    assert _errors(tmp_path, copy.deepcopy(events)) == []
    modules[2]["local_compiled"] = False
    _refused(
        tmp_path,
        events,
        prefix,
        "module 'blocks.2' says its local figure is of the module run eager, but the localization is of a compiled "
        "cell: the collector runs each module alone in the cell's mode",
    )


def test_a_module_both_measured_and_skipped_is_an_error(tmp_path: Path) -> None:
    """The collector lists as skipped the modules it did not measure (past max_modules, past
    max_bytes, or never called by the reference); the count of modules below max_depth is a
    phrase, not a module."""
    events, event, prefix = _localized()
    event["skipped"].append({"name": "blocks.3", "reason": "max_bytes"})
    _refused(
        tmp_path,
        copy.deepcopy(events),
        prefix,
        "module 'blocks.3' is both measured and skipped (max_bytes): the collector skips the modules it does not "
        "measure",
    )
    event["skipped"][-1] = {"name": "blocks.4", "reason": "max_bytes"}
    assert _errors(tmp_path, events) == []


def test_modules_past_the_events_own_bounds_are_an_error(tmp_path: Path) -> None:
    """The collector measures at most max_modules modules, none below max_depth (counted as
    collector.planschema.module_depth counts), each called at least once and named."""
    events, event, prefix = _localized()
    cases = [
        ({"max_modules": 4}, None, "modules lists 5 modules, more than its max_modules 4: the collector measures at most max_modules"),
        ({"max_depth": 1}, ("blocks.3", {"name": "blocks.3.fc", "depth": 2}), "module 'blocks.3.fc' has depth 2, below max_depth 1: the collector measures modules down to max_depth only"),
        ({}, ("head", {"name": "head.proj.out"}), "module 'head.proj.out' is at depth 3 by its name, below max_depth 2: the collector measures modules down to max_depth only"),
        ({}, ("blocks.1", {"calls": 0}), "module 'blocks.1' is measured, but its calls is 0: the collector measures a module the reference called"),
        ({}, ("head", {"name": ""}), "module 4 has an empty name: the collector measures named submodules only (the model itself is the cell's own comparison)"),
    ]  # fmt: skip
    for bounds, edit, message in cases:
        edited = copy.deepcopy(events)
        edited_event = edited[_line(edited, "localization", LOCALIZED) - 1]
        edited_event.update(bounds)
        if edit is not None:
            next(m for m in edited_event["modules"] if m["name"] == edit[0]).update(edit[1])
        _refused(tmp_path, edited, prefix, message)
    # Collectors of 2 December 2026 counted an nn.Sequential model's top-level index as no level
    # ("0.fc" at depth 1) and chose its modules by that count: such a log still validates.
    event["max_depth"] = 1
    next(m for m in event["modules"] if m["name"] == "head").update(name="0.fc", depth=1)
    assert _errors(tmp_path, events) == []


def _generation(events: Lines, case: str = DIVERGED) -> tuple[dict[str, Any], str]:
    line = _line(events, "generation", case)
    return events[line - 1], f"{line}: generation {case!r}: "


def test_a_top_k_overlap_past_the_first_divergent_step_is_an_error(tmp_path: Path) -> None:
    """Before: the overlap after step 3, where the cell's tokens part from the reference's, was
    filled in and validated, and the page plotted overlaps of two different contexts. The
    collector judges the overlap at every step up to and including the first divergent one, and
    writes null after it, one entry a step (collector/generation.py, judge)."""
    events = _marked(generation_log())
    event, prefix = _generation(events)
    assert event["top_k_overlap"] == [1.0, 1.0, 1.0, 0.6, None, None, None]
    assert _errors(tmp_path, copy.deepcopy(events)) == []
    edits = [
        ([1.0, 1.0, 1.0, 0.6, 1.0, None, None], "top_k_overlap holds 1 at step 4, after the first divergent step 3: the collector judges no overlap there (the contexts differ)"),
        ([1.0, 1.0, 1.0, 0.6], "top_k_overlap holds 4 step(s), but decode_steps 6 gives 7 (the prefill's token and one a decode call)"),
        ([1.0, 1.0, 1.0, None, None, None, None], "top_k_overlap is null at step 3, which the cell reached with the reference's tokens: the collector judges the overlap at every step up to the first divergent one"),
    ]  # fmt: skip
    for overlap, message in edits:
        event["top_k_overlap"] = overlap
        # The low overlap taken out, top_k_passed made to follow what is left.
        event["top_k_passed"] = min(o for o in overlap if o is not None) >= 0.8
        _refused(tmp_path, copy.deepcopy(events), prefix, message)


def test_generation_settings_other_than_the_plans_are_an_error(tmp_path: Path) -> None:
    """The collector writes a generation event's top_k, padding side and cache length from the
    plan's [generation] table, which the plan event logs: a top_k of 3 against the plan's 5 read
    as judged by a looser overlap criterion than the declared one."""
    events = _marked(generation_log())
    event, prefix = _generation(events, "b1-l96-contiguous-float32-eager")
    for field, value, planned in (("top_k", 3, 5), ("padding_side", "right", "left"), ("max_cache_len", 260, 520)):
        edited = copy.deepcopy(events)
        edited[_line(edited, "generation", event["case"]) - 1][field] = value
        _refused(
            tmp_path,
            edited,
            prefix,
            f"{field} is {value}, but the plan's generation {field} is {planned}: the collector generates as the plan declares",
        )


def test_a_request_reason_naming_another_routing_is_an_error(tmp_path: Path) -> None:
    """The collector words a request's reason from the routing it decided (collector/generation.py,
    route): a reason in those words naming another bucket, length or outcome than the event's is
    refused; a reason in other words (another collector's) is not read."""
    events = _marked(generation_log())
    line = _line(events, "request")
    request = events[line - 1]
    assert request["reason"] == "96 tokens padded to the 128 bucket"
    prefix = f"{line}: request: "
    routed = "is not the request's routing, 96 tokens padded to bucket 128: the collector's reason states the routing it decided"
    for reason in ("96 tokens padded to the 256 bucket", "128 tokens fill the 128 bucket"):
        request["reason"] = reason
        _refused(tmp_path, copy.deepcopy(events), prefix, f"reason {reason!r} {routed}")
    request["reason"] = "padded to bucket 256 by the service's own router"
    assert _errors(tmp_path, copy.deepcopy(events)) == []
    # The refused request made a truncated one, as a plan that truncates routes it.
    line = next(i for i, e in enumerate(events) if e["kind"] == "request" and e["length"] == 600) + 1
    refused = events[line - 1]
    policy = "truncate requests longer than 512 tokens to their last 512"
    refused.update(
        bucket=512,
        outcome="truncated",
        reason=f"600 tokens are above the largest bucket 512: truncated to the last 512 tokens (plan: {policy})",
    )
    assert _errors(tmp_path, copy.deepcopy(events)) == []
    refused["reason"] = (
        f"600 tokens are above the largest bucket 512: truncated to the last 256 tokens (plan: {policy})"
    )
    _refused(
        tmp_path,
        events,
        f"{line}: request: ",
        f"reason {refused['reason']!r} is not the request's routing, 600 tokens truncated to bucket 512: "
        "the collector's reason states the routing it decided",
    )
