"""A generation plan's criteria are weighed whole, before the run (plan-check) and after it (the
report's disposition): the elementwise rule on the prefill's logits, the task criterion on
greedy_steps_agreeing (0 to decode_steps + 1 leading steps, more is closer) and the top-k
overlap. Criteria that pass any output, or that pass only outputs further from the reference,
are no evidence, as for the cosine criteria of other plans."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import tomli_w
from click.testing import CliRunner

from reportgen.cli import main
from reportgen.judge.plancheck import review_plan
from tests.conftest import REPO
from tests.logbuilder import GEN_STEPS, dumps, generation_log

WORKLOADS = REPO / "collector" / "workloads"
STEPS = 5  # decoder_lm.toml: decode_steps = 4, so a cell makes 5 greedy steps


def _plan(tmp_path: Path, rtol: float, op: str, threshold: float, overlap: float = 1.0) -> Path:
    """The shipped tiny-decoder plan with other criteria (its module named absolutely)."""
    data = tomllib.loads((WORKLOADS / "decoder_lm.toml").read_text(encoding="utf-8"))
    data["workload"]["module"] = str(WORKLOADS / "decoder_lm.py")
    data["tolerances"]["float32"].update(
        rtol=rtol, task={"metric": "greedy_steps_agreeing", "op": op, "threshold": threshold}
    )
    data["generation"]["min_top_k_overlap"] = overlap
    path = tmp_path / "plan.toml"
    path.write_text(tomli_w.dumps(data), encoding="utf-8")
    return path


def _check(path: Path) -> tuple[int, str]:
    done = CliRunner().invoke(main, ["plan-check", str(path), "--target", "cpu"])
    return done.exit_code, done.output


def _ids(path: Path) -> dict[str, Any]:
    return {f.id: f for f in review_plan(path, "cpu").findings}


def test_at_most_every_step_with_a_zero_overlap_and_rtol_1_cannot_fail(tmp_path: Path) -> None:
    """Before: `greedy_steps_agreeing <= 5` (every step a cell makes) beside rtol = 1 and
    min_top_k_overlap = 0 read 'Compatible as specified', exit 0, though no output can fail
    them. Now it is the 'criteria cannot fail' finding, exit 3, each part named."""
    code, out = _check(_plan(tmp_path, 1.0, "<=", STEPS, overlap=0.0))
    assert code == 3 and "Needs a revised test plan" in out, out
    assert "[REVISE] the float32 criteria cannot fail" in out
    assert f"greedy_steps_agreeing <= {STEPS} holds for any output (a cell makes {STEPS} greedy steps" in out
    assert "generation.min_top_k_overlap = 0 holds for any output" in out


def test_at_most_fewer_steps_than_a_cell_makes_is_backwards(tmp_path: Path) -> None:
    """Before: `greedy_steps_agreeing <= 0`, which fails every generation that agrees with the
    reference, read 'Compatible as specified', exit 0. Now it is backwards, exit 3."""
    code, out = _check(_plan(tmp_path, 1e-4, "<=", 0))
    assert code == 3, out
    assert "[REVISE] the float32 task criterion is backwards" in out
    assert "fails one that agrees at every step" in out
    assert "cannot fail" not in out, "the elementwise rule and the top-k overlap still fail a wrong output"


def test_fewer_than_no_steps_cannot_pass(tmp_path: Path) -> None:
    """Before: `greedy_steps_agreeing <= -1` read 'Compatible'. Now: it cannot pass, exit 3."""
    code, out = _check(_plan(tmp_path, 1e-4, "<=", -1))
    assert code == 3 and "[REVISE] the float32 task criterion cannot pass" in out, out


def test_at_most_every_step_beside_a_sound_overlap_is_a_note(tmp_path: Path) -> None:
    """The task criterion `<= 5` judges nothing; the top-k overlap (1.0 of 5) still fails a
    wrong output, so the whole can fail: a note naming what decides, as for a cosine <= 1.
    Before: no finding at all."""
    found = _ids(_plan(tmp_path, 1.0, "<=", STEPS))
    assert "criterion-cannot-fail" not in found and "criterion-backwards" not in found, found
    idle = found["criterion-idle"]
    assert (
        idle.severity == "note" and "only the other parts of the criteria (generation.min_top_k_overlap)" in idle.detail
    )


def test_a_zero_overlap_beside_sound_criteria_is_a_note(tmp_path: Path) -> None:
    """Before: min_top_k_overlap = 0 was not weighed at all (no finding). Now: a note that the
    top-k overlap judges nothing; the plan stays compatible (the other parts decide)."""
    code, out = _check(_plan(tmp_path, 1e-4, ">=", STEPS, overlap=0.0))
    assert code == 0, out
    assert "[NOTE] the top-k overlap criterion judges nothing" in out
    assert "generation.min_top_k_overlap = 0 holds for any output" in out


def test_at_least_no_step_with_rtol_1_is_decided_by_the_overlap(tmp_path: Path) -> None:
    """Before: `>= 0` beside rtol = 1 was called vacuous (the top-k overlap not weighed), though
    an overlap of 1.0 of the top 5 fails a wrong output. Now: a note, and no 'cannot fail'."""
    found = _ids(_plan(tmp_path, 1.0, ">=", 0))
    assert "criterion-cannot-fail" not in found and found["criterion-idle"].severity == "note", found
    assert _ids(_plan(tmp_path, 1.0, ">=", 0, overlap=0.0))["criterion-cannot-fail"].severity == "revise"


# --- the report: a synthetic generation run (tests/logbuilder.py), its criteria rewritten ------


def _meets(value: float, criterion: dict[str, Any]) -> bool:
    return value >= criterion["threshold"] if criterion["op"] == ">=" else value <= criterion["threshold"]


def _run(
    tmp_path: Path,
    rtol: float,
    criterion: dict[str, Any],
    overlap: float,
    top_k: int = 5,
    diverge_at: int | None = None,
) -> Path:
    """The synthetic generation log with these criteria, every cell judged by them as the
    collector judges one (``diverge_at``: every cell's tokens leave the reference's there)."""
    events = generation_log(None)
    plan = next(e for e in events if e["kind"] == "plan")
    plan["tolerances"]["float32"].update(rtol=rtol, task=criterion)
    plan["generation"].update(min_top_k_overlap=overlap, top_k=top_k)
    statuses: dict[str, bool] = {}
    for e in events:
        if e["kind"] != "generation":
            continue
        if diverge_at is not None:
            e["tokens"][0][diverge_at:] = [300 + i for i in range(GEN_STEPS + 1 - diverge_at)]
            e["steps_agreeing"] = e["first_divergent_step"] = diverge_at
            e["top_k_overlap"] = [1.0] * diverge_at + [0.6] + [None] * (GEN_STEPS - diverge_at)
        e["top_k"] = top_k
        e["tokens_passed"] = _meets(e["steps_agreeing"], criterion)
        e["top_k_passed"] = min(o for o in e["top_k_overlap"] if o is not None) >= overlap
        statuses[e["case"]] = e["tokens_passed"] and e["top_k_passed"]
        if not statuses[e["case"]]:
            e.pop("timing", None)
    for e in events:
        if e["kind"] == "case_result" and e.get("task_metric"):
            value = float(e["task_metric"]["value"] if diverge_at is None else diverge_at)
            e["task_metric"].update(criterion=criterion, value=value, passed=_meets(value, criterion))
            e["status"] = "pass" if statuses[e["case"]] else "mismatch"
    log = tmp_path / "run" / "events.jsonl"
    log.parent.mkdir()
    log.write_text(dumps(events), encoding="utf-8")
    return log


def _report(tmp_path: Path, log: Path) -> str:
    done = CliRunner().invoke(main, ["report", str(log), "--out", str(tmp_path / "out"), "--format", "md"])
    assert done.exit_code == 0, done.output
    return (tmp_path / "out" / "report.md").read_text(encoding="utf-8")


def _headline(md: str) -> str:
    return next(line for line in md.splitlines() if line.startswith("**"))


def test_a_sound_generation_run_stays_suitable(tmp_path: Path) -> None:
    criterion = {"metric": "greedy_steps_agreeing", "op": ">=", "threshold": GEN_STEPS + 1}
    md = _report(tmp_path, _run(tmp_path, 1e-4, criterion, 0.8))
    assert _headline(md).startswith("**Suitable"), _headline(md)


def test_a_run_whose_generation_criteria_cannot_fail_is_blocked(tmp_path: Path) -> None:
    """Before: rtol = 1, `greedy_steps_agreeing <= 7` (every step) and min_top_k_overlap = 0
    made a report 'Suitable for the tested fixed-shape path'. Now it is blocked, naming each part."""
    criterion = {"metric": "greedy_steps_agreeing", "op": "<=", "threshold": GEN_STEPS + 1}
    md = _report(tmp_path, _run(tmp_path, 1.0, criterion, 0.0))
    assert _headline(md).startswith("**Blocked pending compatibility evidence"), _headline(md)
    assert "The declared float32 criteria pass a wrong output, so a pass under them is no evidence" in md
    assert f"greedy\\_steps\\_agreeing \\<= {GEN_STEPS + 1} holds for any output" in md
    assert "generation.min\\_top\\_k\\_overlap = 0 holds for any output" in md


def test_a_top_k_at_the_vocabulary_is_weighed_from_the_logged_logits(tmp_path: Path) -> None:
    """Before: top_k = 384 over the logged vocabulary of 384 tokens (every overlap is 1) was not
    weighed, and with rtol = 1 and `<= 7` the report read 'Suitable'. Now it is blocked."""
    criterion = {"metric": "greedy_steps_agreeing", "op": "<=", "threshold": GEN_STEPS + 1}
    md = _report(tmp_path, _run(tmp_path, 1.0, criterion, 0.8, top_k=384))
    assert _headline(md).startswith("**Blocked pending compatibility evidence"), _headline(md)
    assert "generation.top\\_k = 384 is at least the vocabulary (384 tokens)" in md
    five = tmp_path / "top-5"
    five.mkdir()
    sound = _report(five, _run(five, 1.0, criterion, 0.8))
    assert _headline(sound).startswith("**Suitable"), "top_k 5 of 384 still fails a wrong output"


def test_a_backwards_criterion_that_alone_decides_blocks_the_report(tmp_path: Path) -> None:
    """Before: beside rtol = 1 and min_top_k_overlap = 0, `greedy_steps_agreeing <= 2` passed
    every cell whose tokens left the reference's at step 2, and the report read 'Suitable'.
    Now it is blocked: what passes is what the backwards criterion lets through."""
    criterion = {"metric": "greedy_steps_agreeing", "op": "<=", "threshold": 2}
    log = _run(tmp_path, 1.0, criterion, 0.0, diverge_at=2)
    assert all(
        json.loads(line)["status"] == "pass"
        for line in log.read_text(encoding="utf-8").splitlines()
        if '"case_result"' in line and '"task_metric"' in line
    ), "every judged cell passed its criteria"
    md = _report(tmp_path, log)
    assert _headline(md).startswith("**Blocked pending compatibility evidence"), _headline(md)
    assert "greedy\\_steps\\_agreeing \\<= 2 passes generations whose tokens leave the reference's sooner" in md
