"""`reportgen validate` on logs whose identity fields contradict each other: which collector
wrote the log, and which weights the run fed. Each log here is a synthetic one (tests/logbuilder)
edited by hand, and says so in its run_start."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest
from click.testing import CliRunner

from collector.content import RECIPE
from reportgen.cli import main
from reportgen.contract.consistency import CONTENT_RECIPES
from tests.logbuilder import complete_log, dumps

Lines = list[dict]
FILE_SHA, CONTENT_SHA, OTHER_SHA = "a" * 64, "c" * 64, "d" * 64


def _identity_log() -> Lines:
    """The complete synthetic log as a 1.2 collector writes its identity: provenance in
    run_start, and one weights artifact after the plan, whose hashes the plan repeats."""
    events = complete_log()
    for event in events:
        event["schema_version"] = "1.2"
    start = events[0]
    start.update(
        collector="collector 0.2.0",
        origin_note="Synthetic log for the identity checks of validate; not a measurement.",
        provenance={
            "collector_version": "0.2.0",
            "git_commit": {"value": None, "unknown_reason": "synthetic: no checkout"},
            "git_dirty": {"value": None, "unknown_reason": "synthetic: no checkout"},
            "files": [],
        },
    )
    plan = _plan(events)
    plan.update(weights_sha256=FILE_SHA, weights_content_sha256=CONTENT_SHA)
    weights = {
        "schema_version": "1.2",
        "kind": "artifact",
        "role": "weights",
        "path": "artifacts/weights.pt",
        "bytes": 2048,
        "sha256": FILE_SHA,
        "content_sha256": CONTENT_SHA,
        "content_recipe": RECIPE,
        "time": plan["time"],
    }
    events.insert(events.index(plan) + 1, weights)
    return _renumbered(events)


def _renumbered(events: Lines) -> Lines:
    for seq, event in enumerate(events):
        event["seq"] = seq
    return events


def _plan(events: Lines) -> dict:
    return next(e for e in events if e["kind"] == "plan")


def _weights(events: Lines) -> dict:
    return next(e for e in events if e["kind"] == "artifact" and e["role"] == "weights")


def _validate(tmp_path: Path, events: Lines) -> tuple[int, str, Path]:
    path = tmp_path / "events.jsonl"
    path.write_text(dumps(events), encoding="utf-8")
    result = CliRunner().invoke(main, ["validate", str(path)])
    return result.exit_code, result.output, path


def _line_of(events: Lines, event: dict) -> int:
    return next(i for i, e in enumerate(events) if e is event) + 1


def test_the_log_these_tests_edit_is_valid(tmp_path: Path) -> None:
    code, output, path = _validate(tmp_path, _identity_log())
    assert code == 0 and f"{path}: valid, complete" in output and "0 errors, 0 warnings" in output, output


def test_a_collector_named_with_another_version_than_its_provenance_is_an_error(tmp_path: Path) -> None:
    """Before: run_start saying "collector 0.10.0" beside provenance.collector_version "0.1.0"
    validated, and a diff then reported the collector changed to a version that never ran. Now
    it is an error at the run_start line naming both; a collector named in another form than
    the collector's own ("collector <version>") is not judged."""
    events = _identity_log()
    events[0]["collector"] = "collector 0.10.0"
    events[0]["provenance"]["collector_version"] = "0.1.0"
    code, output, path = _validate(tmp_path, events)
    assert code == 1
    assert (
        f"{path}:1: error: run_start: collector is 'collector 0.10.0', but provenance.collector_version is "
        "'0.1.0': the log names two versions of the code that wrote it; the log contradicts itself"
    ) in output, output
    events[0]["collector"] = "acme-collector build 7"
    code, output, _ = _validate(tmp_path, events)
    assert code == 0, output


def test_an_artifact_with_a_content_hash_and_a_reason_it_has_none_is_an_error(tmp_path: Path) -> None:
    """Before: an artifact carrying both content_sha256 and content_unknown_reason validated
    (a provenance file already refused a sha256 beside its unknown_reason). Now the line is
    refused, naming both fields."""
    events = _identity_log()
    inputs = next(e for e in events if e["kind"] == "artifact" and e["role"] == "inputs")
    inputs.update(content_sha256=OTHER_SHA, content_recipe=RECIPE, content_unknown_reason="ContentHashError: sparse")
    code, output, path = _validate(tmp_path, events)
    assert code == 1
    assert (
        f"{path}:{_line_of(events, inputs)}: error: artifact: (event): content_sha256 and content_unknown_reason "
        "are both set: an artifact has either a content hash or why it has none, not both"
    ) in output, output


def _content_unknown(events: Lines) -> None:
    weights = _weights(events)
    del weights["content_sha256"], weights["content_recipe"]
    weights["content_unknown_reason"] = "ContentHashError: sparse tensor"


def test_a_weights_content_hash_the_artifact_calls_unknown_is_an_error(tmp_path: Path) -> None:
    """Before: the plan gave weights_content_sha256 while the weights artifact said the content
    hash failed, and the log validated: the collector writes one answer into both. Now it is an
    error at the artifact's line."""
    events = _identity_log()
    _content_unknown(events)
    code, output, path = _validate(tmp_path, events)
    assert code == 1
    assert (
        f"{path}:{_line_of(events, _weights(events))}: error: artifact: the weights artifact says their content "
        "hash is unknown ('ContentHashError: sparse tensor'), but the plan gives weights_content_sha256 "
        "cccccccccccc... for the same weights; the log contradicts itself"
    ) in output, output
    del _plan(events)["weights_content_sha256"]  # as the collector writes a failed hash
    assert _validate(tmp_path, events)[0] == 0


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (_content_unknown, "the weights artifact says their content hash is unknown"),
        (lambda events: _weights(events).update(sha256=OTHER_SHA), "the weights' sha256 is dddddddddddd..."),
    ],
    ids=["content-unknown", "other-file"],
)
def test_a_weights_artifact_before_the_plan_is_held_to_the_plan_s_hashes(
    tmp_path: Path, edit: Callable[[Lines], None], said: str
) -> None:
    """Before: a weights artifact moved above the plan escaped the comparison with the plan's
    hashes (there was no plan yet to compare with). Now the plan's line says what disagrees."""
    events = _identity_log()
    edit(events)
    weights = _weights(events)
    events.remove(weights)
    events.insert(events.index(_plan(events)), weights)
    _renumbered(events)
    code, output, path = _validate(tmp_path, events)
    assert code == 1
    errors = [line for line in output.splitlines() if ": error: " in line]
    assert len(errors) == 1 and errors[0].startswith(f"{path}:{_line_of(events, _plan(events))}: error: plan: {said}")
    assert f"(the weights artifact is on line {_line_of(events, weights)}, before the plan)" in errors[0]


@pytest.mark.parametrize("plan_hashes", [True, False], ids=["plan-with-hashes", "plan-without"])
def test_a_second_weights_artifact_is_an_error(tmp_path: Path, plan_hashes: bool) -> None:
    """Before: two weights artifacts of different content beside a plan without hashes
    validated, and compare said "same weights by content" from the first. The collector writes
    one a run (collector/run/setup.py): now the second is an error at its line."""
    events = _identity_log()
    if not plan_hashes:
        del _plan(events)["weights_sha256"], _plan(events)["weights_content_sha256"]
    first = _weights(events)
    second = dict(first, sha256=OTHER_SHA, content_sha256=OTHER_SHA)
    events.insert(events.index(first) + 1, second)
    _renumbered(events)
    code, output, path = _validate(tmp_path, events)
    assert code == 1
    errors = [line for line in output.splitlines() if ": error: " in line]
    assert errors[:1] == [
        f"{path}:{_line_of(events, second)}: error: artifact: a second weights artifact (the first is on line "
        f"{_line_of(events, first)}): a run has one, and a reader taking either could call different weights "
        "the same; the log contradicts itself"
    ], output


def test_a_content_recipe_this_reader_does_not_know_is_a_warning(tmp_path: Path) -> None:
    """Before: a content_recipe no collector writes ("tensor-content-v9") passed without a
    word, and its hash was compared as a tensor-content-v1 one. A newer collector may hash by a
    newer recipe (a newer log is read, with warnings), so the log stays valid, and the warning
    says its hashes are of another kind."""
    events = _identity_log()
    _weights(events)["content_recipe"] = "tensor-content-v9"
    code, output, path = _validate(tmp_path, events)
    assert code == 0, output
    assert (
        f"{path}:{_line_of(events, _weights(events))}: warning: artifact: content_recipe 'tensor-content-v9' is not "
        "a recipe this reportgen knows (tensor-content-v1): its content hashes are not comparable with hashes of those"
    ) in output, output
    assert "0 errors, 1 warnings" in output


def test_the_reader_knows_the_collector_s_recipe() -> None:
    """The collector's recipe is one the reader knows: a new one must be added here too."""
    assert RECIPE in CONTENT_RECIPES


def test_content_hashes_of_two_recipes_are_not_compared(tmp_path: Path) -> None:
    """Before: compare and diff compared two logs' weights content hashes whatever recipe each
    named, and always said 'tensor-content-v1': a hash of another recipe (a later collector's)
    read as 'different weights by content' of the same tensors, or as the same where it merely
    collided. Hashes of two recipes are now not compared: the file hash (or the declaration)
    decides, and the words name both recipes; one recipe is named as the log names it."""
    paths = []
    for name, recipe in (("one", RECIPE), ("two", "tensor-content-v9")):
        events = _identity_log()
        events[0]["run_id"] = f"synthetic-recipe-{name}"
        _weights(events)["content_recipe"] = recipe
        path = tmp_path / name / "events.jsonl"
        path.parent.mkdir()
        path.write_text(dumps(events), encoding="utf-8")
        paths.append(path)
    out = tmp_path / "cmp"
    result = CliRunner().invoke(main, ["compare", *map(str, paths), "--out", str(out), "--format", "md"])
    assert result.exit_code == 0, result.output
    page = (out / "compare.md").read_text(encoding="utf-8")
    assert "Same weights by content" not in page
    assert f"content hashes of two recipes, not compared (baseline {RECIPE}, candidate tensor-content-v9)" in page
    assert "Same weights file (sha256 aaaaaaaaaaaa..." in page
    from reportgen.judge.identity import WeightsFacts, weights_identity

    found = weights_identity(WeightsFacts(CONTENT_SHA, FILE_SHA, False), WeightsFacts(CONTENT_SHA, FILE_SHA, False))
    assert found.same and found.text == f"same weights by content (sha256 cccccccccccc..., {RECIPE})"


def test_a_weights_sha256_that_is_no_sha256_is_refused_on_both_paths(tmp_path: Path) -> None:
    """Before: the plan's weights_sha256 took any string (every other sha256 field takes 64
    lowercase hex digits), so two logs both claiming weights_sha256 "same" compared as the same
    weights file. Now the fast path (the line's mirror Struct) and the careful path (the plan
    Struct) both refuse it, validate names the field at the plan's line, and the JSON Schema
    gives the pattern."""
    import json

    import msgspec

    from reportgen.contract.events import SHA256_PATTERN, Plan
    from reportgen.contract.fast import KINDS
    from tests.conftest import REPO

    events = _identity_log()
    plan = _plan(events)
    plan["weights_sha256"] = "same"
    _weights(events)["sha256"] = FILE_SHA
    line = dumps([plan]).strip().encode()
    with pytest.raises(msgspec.ValidationError, match="weights_sha256"):
        msgspec.json.decode(line, type=KINDS["plan"])
    with pytest.raises(msgspec.ValidationError, match="weights_sha256"):
        msgspec.convert(json.loads(line), Plan)
    code, output, path = _validate(tmp_path, events)
    assert code == 1
    assert f"{path}:{_line_of(events, plan)}: error: plan: weights_sha256: Expected `str` of length >= 64" in output
    plan["weights_sha256"] = "same weights, said in 64 characters: no sha256 of any bytes at all"[:64]
    code, output, path = _validate(tmp_path, events)
    assert code == 1
    assert (
        f"{path}:{_line_of(events, plan)}: error: plan: weights_sha256: expected 64 lowercase hexadecimal digits "
        "(a sha256)"
    ) in output, output
    schema = json.loads((REPO / "reportgen/contract/schema/events.schema.json").read_text(encoding="utf-8"))
    assert {"pattern": SHA256_PATTERN, "type": "string", "minLength": 64, "maxLength": 64} in schema["$defs"]["Plan"][
        "properties"
    ]["weights_sha256"]["anyOf"]


def _measured(events: Lines) -> Lines:
    events[0].update(origin="measured", origin_note=None)
    return events


def _without_weights(events: Lines) -> Lines:
    events.remove(_weights(events))
    return _renumbered(events)


def test_a_complete_measured_run_of_1_2_without_its_weights_artifact_is_an_error(tmp_path: Path) -> None:
    """Before: a measured 1.2 log whose plan gives the weights' hashes, with no weights artifact
    at all, validated, and compare read the plan's hashes as the weights'. From 1.2 on the
    collector writes the weights artifact right after the plan in every run, whatever its
    content hash (collector/run/setup.py, write_plan: the weights are saved before the plan is
    written, so a run that fails to save them writes neither). Now a measured log that ends
    complete without it is an error at its run_end line."""
    events = _without_weights(_measured(_identity_log()))
    code, output, path = _validate(tmp_path, events)
    assert code == 1
    errors = [line for line in output.splitlines() if ": error: " in line]
    assert errors == [
        f"{path}:{len(events)}: error: run_end: status is complete, but the log holds no weights artifact: from "
        "schema 1.2 the collector writes one right after the plan in every run (collector/run/setup.py), also "
        "when the weights' content could not be hashed, so a measured run without one leaves its weights unknown; "
        "the log contradicts itself"
    ], output


@pytest.mark.parametrize("which", ["with-weights", "synthetic", "aborted", "schema-1.1"])
def test_a_run_without_a_weights_artifact_the_collector_would_not_write_stays_valid(tmp_path: Path, which: str) -> None:
    """Before and now: a measured log with its weights artifact is valid; so are a synthetic log
    (evidence of nothing, written by no collector run), a run aborted (it may end before its
    plan's artifact is written) and a log before 1.2 (collectors then did not always write one)
    without one. The rule above is only of what a collector of 1.2 on writes."""
    events = _measured(_identity_log())
    if which != "with-weights":
        _without_weights(events)
    if which == "synthetic":
        events[0].update(origin="synthetic", origin_note="Synthetic log for the identity checks; not a measurement.")
    elif which == "aborted":
        events[-1].update(status="aborted", reason="received SIGTERM")
    elif which == "schema-1.1":
        for event in events:
            event["schema_version"] = "1.1"
        del events[0]["provenance"], _plan(events)["weights_content_sha256"]
    code, output, path = _validate(tmp_path, events)
    assert code == 0 and f"{path}: valid" in output and " 0 errors" in output, output


def test_inputs_hashed_by_content_of_two_recipes_are_told_by_their_files(tmp_path: Path) -> None:
    """A review: the weights' content hashes of two recipes were not compared, but the inputs'
    were: a log whose inputs were hashed by another recipe (the same files) read as a changed
    criterion and other inputs by content in diff, and compare refused every cell ('different
    inputs by content'). The files decide, as for the weights."""
    import json

    paths = []
    for name, recipe in (("one", RECIPE), ("two", "tensor-content-v9")):
        events = _identity_log()
        events[0]["run_id"] = f"synthetic-inputs-recipe-{name}"
        for artifact in (e for e in events if e["kind"] == "artifact" and e["role"] == "inputs"):
            # The same file, hashed by content under each recipe (so the hashes differ).
            artifact.update(content_recipe=recipe, content_sha256=("d" if recipe == RECIPE else "e") * 64)
        if recipe != RECIPE:  # the weights too (the same file), as the plan repeats their content hash
            _weights(events).update(content_recipe=recipe, content_sha256="f" * 64)
            _plan(events)["weights_content_sha256"] = "f" * 64
        path = tmp_path / name / "events.jsonl"
        path.parent.mkdir()
        path.write_text(dumps(events), encoding="utf-8")
        paths.append(path)
    found = json.loads(CliRunner().invoke(main, ["diff", *map(str, paths), "--format", "json"]).output)
    assert not [c for c in found["criteria"] if c["key"] in ("inputs", "weights")], found["criteria"]
    assert not [c for c in found["code_and_data"] if c[0].startswith(("inputs", "weights"))], found["code_and_data"]
    # Cell by cell too (a second review: the site's summaries kept no recipe, so diff compared each
    # cell's inputs by content and compared no timing).
    text = CliRunner().invoke(main, ["diff", *map(str, paths)]).output
    assert "different inputs by content" not in text and "other weights or inputs" not in text, text
    out = tmp_path / "cmp"
    result = CliRunner().invoke(main, ["compare", *map(str, paths), "--out", str(out), "--format", "md"])
    assert result.exit_code == 0, result.output
    page = (out / "compare.md").read_text(encoding="utf-8")
    assert "different inputs by content" not in page
    assert "without a content hash" not in page, "both logs hash by content, of two recipes"
