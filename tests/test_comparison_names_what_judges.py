"""A comparison names every declaration that decides a verdict, read from the fields that decide
it: a threshold that differs past its sixth digit, a parameter rule's bound or names, a judged
region's slices, the target and requirements the disposition is judged against, and the
settings the backend's adapter applied. Each was found unnamed by a review (the diff read
"criteria changes: 0" and then "fixed" or "faster")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from reportgen.judge.criteria import criteria_changes, declared_criteria, number
from reportgen.model.runmodel import read_run
from reportgen.publish.diff import diff_runs, format_diff
from reportgen.publish.summary import summarize
from reportgen.render.report import judge_log
from tests.conftest import REPO
from tests.logbuilder import base_events, case_key, dumps, finish, with_envelope

Events = list[dict[str, Any]]
BIG_COMPILED = case_key(2, 16, "compiled")
CLASSIFIER = REPO / "sample_runs" / "tiny-classifier-training-cpu-20261206T150841Z-651786" / "events.jsonl"


def _write(path: Path, events: Events, run_id: str, started: str) -> Path:
    events[0].update(run_id=run_id, started_at=started)
    path.mkdir(parents=True, exist_ok=True)
    log = path / "events.jsonl"
    log.write_text(dumps(with_envelope(finish(events))), encoding="utf-8")
    return log


def _plan(events: Events) -> dict[str, Any]:
    return next(e for e in events if e["kind"] == "plan")


def _pair(tmp_path: Path, edit: Any, fail_before: bool = True) -> tuple[Path, Path]:
    """Before: one cell mismatches (when ``fail_before``). After: the same run with ``edit``
    applied to its events, every cell passing."""
    before = base_events()
    if fail_before:
        result = next(e for e in before if e["kind"] == "case_result" and e.get("case") == BIG_COMPILED)
        result["status"] = "mismatch"
        result["error_stats"].update(mismatched=5, max_abs=1e-2, diff_at_worst=1e-2)
        before[:] = [e for e in before if not (e["kind"] == "timing" and e.get("case") == BIG_COMPILED)]
    after = base_events()
    edit(after)
    return (
        _write(tmp_path / "before", before, "names-before", "2026-01-01T00:00:00Z"),
        _write(tmp_path / "after", after, "names-after", "2026-01-02T00:00:00Z"),
    )


def _diff(before: Path, after: Path) -> Any:
    return diff_runs(summarize(judge_log(before)), summarize(judge_log(after)))


def test_numbers_that_print_alike_are_named_apart() -> None:
    assert number(1e-05) == "1e-05" and number(0.9999) == "0.9999" and number(1.0) == "1"
    assert number(0.9999458) != number(0.9999457)
    assert float(number(0.9999458)) == 0.9999458 and float(number(1 / 3)) == 1 / 3


def test_a_tolerance_changed_past_its_sixth_digit_is_named_and_the_cell_is_not_fixed(tmp_path: Path) -> None:
    def widen(events: Events) -> None:
        tol = _plan(events)["tolerances"]["float32"]
        tol["atol"] = tol["atol"] * (1 + 1e-7)

    diff = _diff(*_pair(tmp_path, widen))
    assert [c.key for c in diff.criteria] == ["tolerance:float32"]
    [change] = diff.criteria
    assert change.before != change.after
    assert diff.fixed == [] and [c.case for c in diff.changed_criterion] == [BIG_COMPILED]
    assert "criteria changes: 1" in format_diff(diff)


def test_a_task_threshold_changed_past_its_sixth_digit_is_named(tmp_path: Path) -> None:
    def nudge(events: Events) -> None:
        task = _plan(events)["tolerances"]["float32"]["task"]
        task["threshold"] = task["threshold"] * (1 - 1e-7)
        for result in (e for e in events if e["kind"] == "case_result" and e.get("task_metric")):
            result["task_metric"]["criterion"] = dict(task)

    diff = _diff(*_pair(tmp_path, nudge, fail_before=False))
    assert [c.key for c in diff.criteria] == ["task:float32"]


def test_the_target_and_the_requirements_judged_against_are_named(tmp_path: Path) -> None:
    def retarget(events: Events) -> None:
        _plan(events).update(intended_target="neuron", requirements=["requires_float64"])

    diff = _diff(*_pair(tmp_path, retarget, fail_before=False))
    texts = {c.key: c.text for c in diff.criteria}
    assert set(texts) == {"intended_target", "requirements"}
    assert texts["intended_target"] == "intended target now neuron (was none declared)"
    assert texts["requirements"] == "hard requirements now requires_float64 (was none declared)"
    lines = format_diff(diff).splitlines()
    assert lines[1].startswith("criteria changes: 2")
    assert lines.index("  " + texts["intended_target"]) < next(i for i, x in enumerate(lines) if "isposition" in x)


def test_a_judged_region_is_read_from_its_slices_not_its_words(tmp_path: Path) -> None:
    masked = {"output": "last_hidden_state", "mask": "attention_mask", "region": None}
    sliced = {"output": "last_hidden_state", "mask": None, "region": [":", "0:8"]}
    runs = []
    for name, rule in (("masked", masked), ("sliced", sliced)):
        events = base_events()
        # The same words on both sides: only the fields tell the two rules apart.
        _plan(events)["compare"] = {"outputs": [dict(rule, description="attention_mask != 0")], "params": []}
        runs.append(_write(tmp_path / name, events, name, f"2026-01-0{len(runs) + 1}T00:00:00Z"))
    diff = _diff(*runs)
    assert [c.text for c in diff.criteria] == [
        "last_hidden_state now judged only where [:, 0:8] (was only where attention_mask != 0)"
    ]


def _classifier(tmp_path: Path, name: str, edit: Any) -> Any:
    events = [json.loads(line) for line in CLASSIFIER.read_text(encoding="utf-8").splitlines()]
    edit(next(e for e in events if e["kind"] == "plan")["compare"]["params"][0])
    path = tmp_path / name / "events.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    reading, builder = read_run(path)
    assert not reading.errors
    return declared_criteria(builder.build(reading))


def test_a_parameter_rule_is_read_from_its_bound_and_names_not_its_words(tmp_path: Path) -> None:
    """The shipped classifier's lr-bound group with its bound ten times wider, or matching more
    parameters, its words unchanged: each is a changed update rule."""
    same = _classifier(tmp_path, "same", lambda rule: None)
    wider = _classifier(tmp_path, "wider", lambda rule: rule.update(k=rule["k"] * 10))
    more = _classifier(tmp_path, "more", lambda rule: rule.update(match=[*rule["match"], "*.weight"]))
    assert criteria_changes(same, same) == []
    for other, part in ((wider, "<= 80 * lr"), (more, "*.weight")):
        [change] = criteria_changes(same, other)
        assert change.key == "update:attention_bias" and change.judges == "correctness"
        assert part in change.after and part not in change.before
    assert "<= 8 * lr, lr 0.001" in same["update:attention_bias"].value


def test_a_changed_backend_setting_is_named_among_the_host_changes(tmp_path: Path) -> None:
    def pin(events: Events) -> None:
        env = next(e for e in events if e["kind"] == "environment")
        env["backend_settings"] = [{"name": "TORCHINDUCTOR_FREEZING", "value": "1", "set_by": "collector"}]

    diff = _diff(*_pair(tmp_path, pin, fail_before=False))
    assert ("backend setting TORCHINDUCTOR_FREEZING", "not recorded", "1 (set by collector)") in diff.host


def test_replicates_that_read_a_host_fact_differently_name_each_value() -> None:
    """Before: three replicates' readings, named together, passed 160 characters and read as
    '220 characters, sha256 ...' before the verdict. Each value is named with its runs."""
    from reportgen.judge.changes import MOST_READINGS, side_host

    key = "load average (1 minute) around the warm loops"
    hosts = [(f"tiny-encoder-cpu-2026120{i}T150111Z-1dd18{i}", {key: f"0.{i}0 to 0.{i}5"}) for i in range(3)]
    merged = side_host(hosts)[key]
    assert "sha256" not in merged
    for run_id, host in hosts:
        assert f"{host[key]} ({run_id})" in merged
    # Three runs of long ids giving one value: still named, not a digest.
    shared = [(f"scenario-a-text-service-cpu-20261206T152740Z-a6ae0{i}", {key: "1.09 to 1.50"}) for i in range(3)]
    merged = side_host([("other-run", {key: "2.00 to 2.00"}), *shared])[key]
    assert "sha256" not in merged and all(run_id in merged for run_id, _ in shared)
    many = [(f"run-{i:02d}", {key: f"{i}.00 to {i}.50"}) for i in range(MOST_READINGS + 3)]
    assert side_host(many)[key].endswith("; and 3 more values")


def test_input_shapes_that_changed_are_one_change_naming_them() -> None:
    """Per-shape hashes made one artifact's change read as a change per shape ('11 code and data
    changes' on a history where one file changed). One change per role names the shapes."""
    from reportgen.judge.changes import OF_SHAPE, code_and_data_changes

    def hashes(run_wide: str, shapes: dict[str, str]) -> dict[str, list[str | None]]:
        found: dict[str, list[str | None]] = {"reference outputs": [run_wide, "f" * 64]}
        found.update({f"reference outputs{OF_SHAPE}{k}": [v, None] for k, v in shapes.items()})
        return found

    keys = ["b1-l16-contiguous", "b1-l16-noncontiguous", "b2-l16-contiguous"]
    before = hashes("a" * 64, {k: "1" * 64 for k in keys})
    alike = hashes("b" * 64, {**{k: "2" * 64 for k in keys[:2]}, keys[2]: "1" * 64})
    [change] = code_and_data_changes({}, before, {}, alike)
    assert change == (
        "reference outputs of input shapes b1-l16-contiguous, b1-l16-noncontiguous (by content sha256)",
        "1" * 64,
        "2" * 64,
    )
    apart = hashes("b" * 64, {keys[0]: "2" * 64, keys[1]: "3" * 64, keys[2]: "1" * 64})
    [change] = code_and_data_changes({}, before, {}, apart)
    assert change[1:] == ("a" * 64, "b" * 64)  # two pairs: the run-wide hashes
