"""Saved reference outputs that differ by content between two runs are a change `reportgen diff`
names, and a cell that failed against one reference and passes against the other is not "fixed":
the criterion's reference itself changed. Before, diff never looked at them (compare measured the
distance in its references table), and such a cell read "fixed"."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from reportgen.cli import main
from tests.logbuilder import dumps, timing_log
from tests.test_run_changes import _mismatch

Events = list[dict[str, Any]]
ODD = "b2-l16-contiguous-float32-compiled"
KEYS = ("b1-l16-contiguous", "b2-l16-contiguous")


def _run(root: Path, name: str, seed: int, odd_reference: str, failing: bool, per_shape: bool = True) -> Path:
    """A timing run whose saved reference outputs are hashed by content per input shape; the
    b2-l16 shape's hash is ``odd_reference``. ``failing``: the ODD cell mismatches.
    ``per_shape``: False leaves the b2-l16 shape out of the per-shape hashes."""
    events = timing_log(name, seed=seed)
    inputs = next(e for e in events if e["kind"] == "artifact" and e["role"] == "inputs")
    by_key = {key: ("a" * 64 if key == KEYS[0] else odd_reference) for key in KEYS[: 2 if per_shape else 1]}
    reference = {
        "kind": "artifact",
        "role": "reference_output",
        "path": "artifacts/reference.pt",
        "bytes": 1000,
        "sha256": odd_reference[::-1],
        "content_sha256": "f" * 63 + odd_reference[0],
        "content_recipe": "tensor-content-v1",
        "content_by_key": by_key,
    }
    events.insert(
        events.index(inputs) + 1, {k: v for k, v in inputs.items() if k in ("schema_version", "time")} | reference
    )
    if failing:
        _mismatch(events, ODD)
    for seq, event in enumerate(events):
        event["seq"] = seq
    path = root / name / "events.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(dumps(events), encoding="utf-8")
    return path


def _diff(*args: str) -> str:
    result = CliRunner().invoke(main, ["diff", *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_a_pass_against_other_reference_outputs_is_named_and_not_fixed(tmp_path: Path) -> None:
    before = _run(tmp_path, "before", 1, "b" * 64, failing=True)
    after = _run(tmp_path, "after", 2, "c" * 64, failing=False)
    data = json.loads(_diff(str(before), str(after), "--format", "json"))
    assert data["fixed"] == []
    assert data["other_reference_pass"] == [[ODD, "mismatch", "pass"]]
    why = f"other reference outputs by content: sha256 {'b' * 12}... against {'c' * 12}..."
    both = (ODD, ODD.replace("compiled", "eager"))  # the two cells of the b2-l16 input shape
    assert data["changed_reference"] == dict.fromkeys(both, why)
    # The input shape whose reference outputs changed is named with its two hashes.
    assert data["code_and_data"] == [
        ["reference outputs of input shape b2-l16-contiguous (by content sha256)", "b" * 64, "c" * 64]
    ]
    text = _diff(str(before), str(after))
    assert "fixed: 0" in text.splitlines()
    assert "passes against other reference outputs (not fixed): 1" in text.splitlines()
    assert f"  {ODD}: mismatch in outputs" in text and "other reference outputs by content" in text
    md = _diff(str(before), str(after), "--format", "md")
    assert "| passes against other reference outputs (not fixed) | 1 |" in md


def test_the_same_reference_outputs_leave_a_fix_a_fix(tmp_path: Path) -> None:
    """The control: the same content hash for the cell's input shape (the run-wide files differ
    in bytes, as two saves of the same tensors can)."""
    before = _run(tmp_path, "before", 1, "b" * 64, failing=True)
    after = _run(tmp_path, "after", 2, "b" * 64, failing=False)
    data = json.loads(_diff(str(before), str(after), "--format", "json"))
    assert data["fixed"] == [[ODD, "mismatch", "pass"]] and data["other_reference_pass"] == []
    assert data["changed_reference"] == {} and data["code_and_data"] == []


def test_a_new_failure_against_other_reference_outputs_says_so_beside_it(tmp_path: Path) -> None:
    before = _run(tmp_path, "before", 1, "b" * 64, failing=False)
    after = _run(tmp_path, "after", 2, "c" * 64, failing=True)
    text = _diff(str(before), str(after))
    row = next(line for line in text.splitlines() if line.startswith(f"  {ODD}: pass -> "))
    assert "other reference outputs by content" in row, row


def test_the_reference_times_nothing_so_timings_are_still_compared(tmp_path: Path) -> None:
    before = _run(tmp_path, "before", 1, "b" * 64, failing=False)
    after = _run(tmp_path, "after", 2, "c" * 64, failing=False)
    data = json.loads(_diff(str(before), str(after), "--format", "json"))
    assert len(data["changed_reference"]) == 2 and data["code_and_data"][0][0].startswith("reference outputs")
    assert len(data["timings"]) == 4 and data["values_differ"] == []


def test_a_shape_not_hashed_on_its_own_is_judged_by_the_run_wide_hash(tmp_path: Path) -> None:
    """The after run hashed only the b1 shape's outputs on their own; the run-wide content hash
    differs. Before, the ODD cell read 'fixed' beside a named change of reference outputs."""
    before = _run(tmp_path, "before", 1, "b" * 64, failing=True)
    after = _run(tmp_path, "after", 2, "c" * 64, failing=False, per_shape=False)
    data = json.loads(_diff(str(before), str(after), "--format", "json"))
    assert data["fixed"] == [] and data["other_reference_pass"] == [[ODD, "mismatch", "pass"]]
    assert "run-wide" in data["changed_reference"][ODD] and "not hashed on their own" in data["changed_reference"][ODD]


def test_a_pass_under_a_changed_criterion_and_other_reference_names_both(tmp_path: Path) -> None:
    """Before, the cell was listed under other reference outputs only, the loosened tolerance
    that could have decided it left unsaid beside it."""
    before = _run(tmp_path, "before", 1, "b" * 64, failing=True)
    after = _run(tmp_path, "after", 2, "c" * 64, failing=False)
    events = [json.loads(line) for line in after.read_text(encoding="utf-8").splitlines()]
    plan = next(e for e in events if e["kind"] == "plan")
    plan["tolerances"]["float32"]["atol"] *= 10
    after.write_text(dumps(events), encoding="utf-8")
    data = json.loads(_diff(str(before), str(after), "--format", "json"))
    assert data["other_reference_pass"] == [] and data["fixed"] == []
    (passed,) = data["changed_criterion"]
    assert passed["case"] == ODD and "tolerance" in passed["text"] and "other reference outputs" in passed["text"]


def _without_content_hashes(path: Path, drop: bool = False) -> Path:
    """The run's reference outputs hashed by file only (a log whose collector kept no content
    hash), or (``drop``) not recorded at all."""
    events = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    kept = []
    for event in events:
        if event["kind"] == "artifact" and event["role"] == "reference_output":
            if drop:
                continue
            for key in ("content_sha256", "content_recipe", "content_by_key"):
                event.pop(key)
        kept.append(event)
    for seq, event in enumerate(kept):
        event["seq"] = seq
    path.write_text(dumps(kept), encoding="utf-8")
    return path


def test_reference_files_that_differ_without_a_content_hash_leave_no_fix(tmp_path: Path) -> None:
    """Before: diff compared reference outputs only where both logs hashed them by content, so a
    cell that failed against one reference file and passed against another read 'fixed'."""
    before = _without_content_hashes(_run(tmp_path, "before", 1, "b" * 64, failing=True))
    after = _without_content_hashes(_run(tmp_path, "after", 2, "c" * 64, failing=False))
    data = json.loads(_diff(str(before), str(after), "--format", "json"))
    assert data["fixed"] == [] and [c[0] for c in data["other_reference_pass"]] == [ODD]
    assert "their files differ" in data["changed_reference"][ODD]
    (item,) = [c for c in data["code_and_data"] if c[0].startswith("reference outputs")]
    assert item[0].startswith("reference outputs (by file sha256: no content hash in the before and after logs")


def test_reference_outputs_one_run_did_not_record_leave_no_fix(tmp_path: Path) -> None:
    before = _run(tmp_path, "before", 1, "b" * 64, failing=True)
    after = _without_content_hashes(_run(tmp_path, "after", 2, "c" * 64, failing=False), drop=True)
    data = json.loads(_diff(str(before), str(after), "--format", "json"))
    assert data["fixed"] == [] and [c[0] for c in data["other_reference_pass"]] == [ODD]
    assert data["changed_reference"][ODD] == "reference outputs not verified the same: the after run recorded none"
