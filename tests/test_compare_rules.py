"""Comparison rules declared in the plan: judged regions per output, rules per parameter group.

The end-to-end tests run the real collector (in process, eager, one tiny shape) on a small
workload written here, whose cells differ from the reference only at padded positions.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from collector import training
from collector.__main__ import main as collector_main
from collector.backends import select_backend
from collector.compare import compare
from collector.eventlog import SCHEMA_VERSION
from collector.plan import PlanError, load_plan
from collector.preflight import check_rules
from collector.runner import Options, execute
from collector.workload import load_workload
from reportgen.render.report import build_report, judge_log
from tests import logbuilder as lb

WORKLOAD = """
import torch
from torch import nn

TASK_METRIC = "none"
CALLS = {"n": 0}


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(x)


def build_model():
    torch.manual_seed(0)
    CALLS["n"] = 0
    return Tiny()


def make_inputs(batch, length, layout):
    x = torch.randn(batch, length, 4, generator=torch.Generator().manual_seed(1))
    mask = torch.ones(batch, length, dtype=torch.int64)
    mask[:, length // 2:] = 0
    return {"x": x, "attention_mask": mask}


def run_model(model, inputs):
    CALLS["n"] += 1
    hidden = model(inputs["x"])
    if CALLS["n"] > 2:  # after the reference's two runs: differ at padded positions only
        hidden = hidden + (inputs["attention_mask"] == 0).unsqueeze(-1).to(hidden.dtype) * 1e-2
    return {"hidden": hidden, "pooled": hidden[:, :1, :].sum(dim=1)}


def task_metric(outputs, reference, inputs):
    return 1.0
"""

PLAN = """
[workload]
name = "padded-difference"
module = "{module}"
description = "Synthetic test workload: cells differ from the reference at padded positions only."

[matrix]
shapes = [[2, 8]]
modes = ["eager"]
{rules}
"""
MASK_RULE = '\n[compare.outputs.hidden]\nmask = "attention_mask"\n'


def _plan(tmp_path: Path, rules: str, stem: str) -> Path:
    (tmp_path / f"{stem}.py").write_text(WORKLOAD, encoding="utf-8")
    plan = tmp_path / f"{stem}.toml"
    plan.write_text(PLAN.format(module=f"{stem}.py", rules=rules), encoding="utf-8")
    return plan


def _run(tmp_path: Path, rules: str, stem: str) -> Path:
    plan = load_plan(_plan(tmp_path, rules, stem))
    options = Options(target="cpu", out_dir=tmp_path / "runs", cold="off", warm_repetitions=1)
    run_dir, code = execute(plan, select_backend("cpu"), options)
    assert code == 0
    return run_dir / "events.jsonl"


def _events(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def test_a_padded_only_difference_passes_under_a_declared_mask_with_the_left_out_figures_kept(tmp_path: Path) -> None:
    log = _run(tmp_path, MASK_RULE, "masked_wl")
    events = _events(log)
    plan = next(e for e in events if e["kind"] == "plan")
    assert plan["compare"]["outputs"] == [
        {"output": "hidden", "mask": "attention_mask", "region": None, "description": "attention_mask != 0"}
    ]
    result = next(e for e in events if e["kind"] == "case_result")
    assert result["status"] == "pass"
    hidden = next(o for o in result["error_stats"]["per_output"] if o["name"] == "hidden")
    assert hidden["mismatched"] == 0 and hidden["total"] == 2 * 4 * 4
    outside = hidden["outside"]
    assert outside["count"] == 2 * 4 * 4 and outside["beyond_tolerance"] == 2 * 4 * 4
    assert outside["max_abs"] == pytest.approx(1e-2, rel=1e-3) and outside["nonfinite"] == 0
    out = tmp_path / "report"
    judged = build_report(log, out)
    assert judged.disposition.outcome == "suitable"
    note = next(r for r in judged.disposition.reasons if r.rule == "judged-regions")
    assert note.outcome == "note" and note.message.startswith(
        "32 element(s) outside the judged regions the plan declared (hidden: attention_mask != 0)"
    )
    for name in ("report.html", "report.md"):
        text = (out / name).read_text(encoding="utf-8")
        assert "outside the judged region" in text
        assert "32 element(s); 32 beyond the tolerance; max abs 0.01" in text
        assert "only elements where attention_mask != 0 are judged" in text.replace("\\", "")


def test_the_same_difference_fails_without_the_rule(tmp_path: Path) -> None:
    log = _run(tmp_path, "", "unmasked_wl")
    events = _events(log)
    assert (
        "compare" not in next(e for e in events if e["kind"] == "plan")
        or next(e for e in events if e["kind"] == "plan")["compare"] is None
    )
    result = next(e for e in events if e["kind"] == "case_result")
    assert result["status"] == "mismatch" and result["error_stats"]["mismatched"] == 32
    assert "per_output" not in result["error_stats"]
    judged = judge_log(log)
    assert judged.disposition.outcome == "blocked"
    assert judged.disposition.headline.startswith("Blocked: 1 mismatch needs the owner's verdict")


@pytest.mark.parametrize(
    "rules,fragment",
    [
        ('\n[compare.outputs.hidden]\nmask = "no_such_input"\n', "'no_such_input' is not an input"),
        (
            '\n[compare.outputs.missing]\nmask = "attention_mask"\n',
            "compare.outputs.missing: the model has no such output",
        ),
        (
            '\n[compare.outputs.pooled]\nmask = "attention_mask"\n',
            "does not line up with pooled's leading dimensions [2, 4] (at shape [2, 8])",
        ),
        ('\n[compare.outputs.hidden]\nregion = [":", ":", ":", "0:1"]\n', "4 slices for an output of 3 dimensions"),
        ('\n[compare.outputs.hidden]\nregion = [":", "9:"]\n', "selects no element"),
    ],
)
def test_a_rule_that_does_not_fit_the_model_is_a_plan_error_before_anything_runs(
    tmp_path: Path, rules: str, fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = _plan(tmp_path, rules, "bad_wl")
    with pytest.raises(PlanError, match=fragment.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")):
        check_rules(load_plan(plan))
    assert collector_main(["--workload", str(plan), "--target", "cpu", "--out", str(tmp_path / "runs")]) == 2
    assert "plan error" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists(), "nothing ran, no run directory"


@pytest.mark.parametrize(
    "rules,fragment",
    [
        ('\n[compare.outputs.hidden]\nmask = "attention_mask"\nregion = [":"]\n', "exactly one of mask"),
        ('\n[compare.outputs.hidden]\nregion = ["a:b"]\n', "not an index or a start:stop slice"),
        (
            '\n[compare.outputs.hidden]\nmsk = "attention_mask"\n',
            "compare.outputs.hidden.msk: unknown key in [compare.outputs.hidden]; did you mean 'mask'",
        ),
        ('\n[compare.params.g]\nmatch = ["*"]\nrule = "elementwise"\n', "need a [training] plan"),
    ],
)
def test_malformed_rules_are_plan_errors(tmp_path: Path, rules: str, fragment: str) -> None:
    with pytest.raises(PlanError, match=fragment.replace("[", r"\[").replace("]", r"\]")):
        load_plan(_plan(tmp_path, rules, "malformed_wl"))


def test_rules_that_appear_only_after_a_result_are_refused(tmp_path: Path) -> None:
    """The rules live in the plan event; a plan (with its rules) after a result is refused."""
    events = lb.base_events()
    plan = next(e for e in events if e["kind"] == "plan")
    plan["compare"] = {
        "outputs": [{"output": "hidden", "mask": "attention_mask", "description": "attention_mask != 0"}],
        "params": [],
    }
    first_result = next(i for i, e in enumerate(events) if e["kind"] == "case_result")
    events.remove(plan)
    events.insert(first_result, plan)
    log = tmp_path / "events.jsonl"
    log.write_text(lb.dumps(lb.with_envelope(lb.finish(events))), encoding="utf-8")
    from reportgen.render.report import ReportInputError

    with pytest.raises(
        ReportInputError, match="before the plan: tolerances and comparison rules must be declared before any result"
    ):
        judge_log(log)
    # Nor can a result line carry rules of its own: the contract has no place for them.
    events = lb.base_events()
    result = next(e for e in events if e["kind"] == "case_result")
    result["compare"] = plan["compare"]
    log.write_text(lb.dumps(lb.with_envelope(lb.finish(events))), encoding="utf-8")
    with pytest.raises(ReportInputError, match="compare"):
        judge_log(log)


# --- training rules --------------------------------------------------------------------------------


LR_RULE = {"group": "bias", "match": ["*bias"], "rule": "lr-bound", "k": 2.0, "lr": 1e-3, "zero_below": 1e-9}


def test_lr_bound_judges_only_zero_gradient_elements_by_the_bound() -> None:
    rule = dict(LR_RULE, description=training.describe_rule(LR_RULE))
    ref = {"lin.bias": torch.zeros(4), "lin.weight": torch.zeros(2)}
    grads = [{"lin.bias": torch.tensor([0.0, 1e-10, 0.5, 0.5]), "lin.weight": torch.zeros(2)}]
    cell = {"lin.bias": torch.tensor([1.5e-3, -1.9e-3, 0.0, 1e-3]), "lin.weight": torch.tensor([1e-3, 0.0])}
    rows = {r["name"]: r for r in training.compare_params(cell, ref, 1e-6, 1e-3, [rule], grads)}
    bias = rows["lin.bias"]
    # Elements 0 and 1 (zero reference gradient) are within 2 * lr; element 3 has a real gradient and stays a mismatch.
    assert bias["mismatched"] == 1 and bias["bound_elements"] == 2 and bias["bound"] == pytest.approx(2e-3)
    assert bias["bound_max_abs"] == pytest.approx(1.9e-3) and "lr-bound (group bias)" in bias["rule"]
    assert rows["lin.weight"]["mismatched"] == 1 and rows["lin.weight"]["rule"] == "elementwise"
    cell["lin.bias"][0] = 2.5e-3  # beyond the bound
    assert {r["name"]: r for r in training.compare_params(cell, ref, 1e-6, 1e-3, [rule], grads)}["lin.bias"][
        "mismatched"
    ] == 2


def test_zero_grad_rule_requires_exact_zeros_in_both() -> None:
    rule = {"group": "frozen", "match": ["emb.*"], "rule": "zero-grad", "zero_below": 0.0}
    ref = {"emb.weight": torch.zeros(3)}
    assert training.compare_grads({"emb.weight": torch.zeros(3)}, ref, 1e-6, 1e-3, [rule])[0]["mismatched"] == 0
    row = training.compare_grads({"emb.weight": torch.tensor([0.0, 1e-30, 0.0])}, ref, 1e-6, 1e-3, [rule])[0]
    assert row["mismatched"] == 1 and row["rule"].startswith("gradient exactly zero in both")


class _Workload:
    @staticmethod
    def make_optimizer(params):  # type: ignore[no-untyped-def]
        params = list(params)
        return torch.optim.AdamW([{"params": params[:1], "lr": 1e-3}, {"params": params[1:], "lr": 5e-4}])


@pytest.mark.parametrize(
    "rules,fragment",
    [
        ([{"group": "g", "match": ["nothing.*"], "rule": "elementwise"}], "matches no trainable parameter"),
        (
            [
                {"group": "a", "match": ["*bias"], "rule": "elementwise"},
                {"group": "b", "match": ["lin.*"], "rule": "elementwise"},
            ],
            "matched by groups 'a' and 'b'",
        ),
        (
            [{"group": "g", "match": ["lin.*"], "rule": "lr-bound", "k": 1.0, "zero_below": 0.0}],
            "do not share one learning rate",
        ),
    ],
)
def test_parameter_groups_are_checked_against_the_model(rules: list[dict], fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        training.resolve_param_rules(rules, _Workload, _model())  # type: ignore[arg-type]


def _model() -> torch.nn.Module:
    model = torch.nn.Module()
    model.lin = torch.nn.Linear(2, 2)
    return model


def test_lr_bound_reads_the_learning_rate_from_the_optimizer() -> None:
    rules = [{"group": "g", "match": ["lin.weight"], "rule": "lr-bound", "k": 8.0, "zero_below": 0.0}]
    resolved = training.resolve_param_rules(rules, _Workload, _model())  # type: ignore[arg-type]
    assert resolved[0]["lr"] == 1e-3 and "8 * lr = 0.008" in resolved[0]["description"]


def test_the_report_names_the_rule_that_judged_each_parameter(tmp_path: Path) -> None:
    events = lb.training_log()
    plan = next(e for e in events if e["kind"] == "plan")
    description = "lr-bound (group bias): where the reference gradient is zero (exactly 0 at every step), |updated - reference| <= 8 * lr = 0.008; elsewhere elementwise"
    plan["compare"] = {
        "outputs": [],
        "params": [
            {"group": "bias", "match": ["*.bias"], "rule": "lr-bound", "k": 8.0, "lr": 1e-3, "description": description}
        ],
    }
    for e in events:
        if e["kind"] == "train_result":
            for p in e["params"]:
                p["rule"] = description if p["name"].endswith(".bias") else "elementwise"
                if p["name"].endswith(".bias"):
                    p.update(bound=8e-3, bound_elements=3, bound_max_abs=1.5e-3)
    log = tmp_path / "events.jsonl"
    log.write_text(lb.dumps(events), encoding="utf-8")
    build_report(log, tmp_path / "out")
    for name in ("report.html", "report.md"):
        text = (tmp_path / "out" / name).read_text(encoding="utf-8").replace("\\", "")
        assert "rule that judged it" in text and "parameter group bias (*.bias)" in text
        assert (
            "3 element(s) with zero reference gradient judged by the bound 0.008, largest |diff| there 0.0015" in text
        )
        assert "|updated - reference| <= 8 * lr = 0.008" in text.replace("&lt;", "<")


def test_an_index_region_judges_only_its_slice_and_keeps_the_rest_apart() -> None:
    ref = {"logits": torch.zeros(2, 6)}
    out = {"logits": torch.zeros(2, 6)}
    out["logits"][:, 4:] = 1.0  # beyond the tolerance, but outside the judged slice
    rules = [{"output": "logits", "region": [":", "0:4"], "mask": None, "description": "[:, 0:4]"}]
    stats = compare(out, ref, 1e-5, 1e-4, rules, {})
    (logits,) = stats["per_output"]
    assert stats["mismatched"] == 0 and logits["total"] == 8 and logits["region"] == "[:, 0:4]"
    assert logits["outside"] == {"count": 4, "max_abs": 1.0, "max_rel": 0.0, "nonfinite": 0, "beyond_tolerance": 4}
    out["logits"][0, 1] = 1.0  # inside the slice: judged
    assert compare(out, ref, 1e-5, 1e-4, rules, {})["mismatched"] == 1


def test_the_cold_call_is_checked_by_the_same_declared_region() -> None:
    """A cold call whose only differences are at padded positions passes its check, as the
    cell's own check does; without the rule the same outputs fail it."""
    import torch

    from collector.coldstart import _check

    mask = torch.tensor([[1, 1, 0, 0]])
    reference = {"hidden": torch.zeros(1, 4, 3)}
    outputs = {"hidden": torch.zeros(1, 4, 3)}
    outputs["hidden"][0, 2:] = 5.0  # differences only where the mask is 0
    rules = [{"output": "hidden", "mask": "attention_mask", "region": None, "description": "attention_mask != 0"}]
    tol = {"atol": 1e-5, "rtol": 1e-4}
    assert _check(outputs, reference, tol, rules, {"attention_mask": mask})["passed"] is True
    assert _check(outputs, reference, tol, [], {"attention_mask": mask})["passed"] is False
    outputs["hidden"][0, 0, 0] = 5.0  # and one at a real token
    assert _check(outputs, reference, tol, rules, {"attention_mask": mask})["passed"] is False


def test_integer_and_boolean_outputs_are_compared_exactly() -> None:
    """Every output was judged in float64 by atol + rtol * |ref|: an argmax of 997 against 999
    passed at bfloat16's tolerance, an id of 100010 against 100000 at float32's, and 2**53 + 1
    against 2**53 even with no tolerance at all (float64 holds no odd number there)."""
    reference = {
        "scores": torch.tensor([0.5, 1.0]),
        "best_row": torch.tensor([999, 100000, 2**53]),
        "keep": torch.tensor([True, False]),
    }
    same = compare({k: v.clone() for k, v in reference.items()}, reference, 1e-2, 1.6e-2)
    assert same["mismatched"] == 0
    for name, wrong in (
        ("best_row", torch.tensor([997, 100000, 2**53])),
        ("best_row", torch.tensor([999, 100010, 2**53])),
        ("best_row", torch.tensor([999, 100000, 2**53 + 1])),
        ("keep", torch.tensor([True, True])),
    ):
        stats = compare({**reference, name: wrong}, reference, 1e-2, 1.6e-2)
        assert stats["mismatched"] == 1 and stats["worst_output"] == name, (name, wrong, stats)
        assert stats["allowed_at_worst"] == 0.0 and stats["diff_at_worst"] > 0
    # An integer output that came back as floats is no longer the same output: 300.0 against 300
    # compared equal by value.
    with pytest.raises(ValueError, match="'best_row' is float64, the reference's is int64"):
        compare(
            {**reference, "best_row": torch.tensor([999.0, 100000.0, 2.0**53], dtype=torch.float64)},
            reference,
            1e-2,
            1.6e-2,
        )
    # uint64 against int64 was compared after a cast to int64, where 2**63 + 5 reads -2**63 + 5.
    big = {"ids": torch.tensor([2**63 + 5], dtype=torch.uint64)}
    with pytest.raises(ValueError, match="'ids' is uint64, the reference's is int64"):
        compare(big, {"ids": torch.tensor([-(2**63) + 5])}, 0.0, 0.0)
    assert compare(big, {"ids": big["ids"].clone()}, 0.0, 0.0)["mismatched"] == 0
    # The worst difference of large integers is read in int64 first, not from two float64 roundings.
    far = compare({"ids": torch.tensor([2**62 + 1000])}, {"ids": torch.tensor([2**62 + 5])}, 0.0, 0.0)
    assert far["max_abs"] == 995 and far["mismatched"] == 1
    # An empty output beside others is judged on nothing; every output empty is no pass at all.
    empty = {"none": torch.zeros(0, 4), "scores": torch.tensor([0.5])}
    assert compare(empty, {k: v.clone() for k, v in empty.items()}, 1e-5, 1e-4)["total"] == 1
    with pytest.raises(ValueError, match="has no element to judge"):
        compare({"none": torch.zeros(0, 4)}, {"none": torch.zeros(0, 4)}, 1e-5, 1e-4)
    # Float outputs keep their tolerance.
    close = compare({**reference, "scores": torch.tensor([0.501, 1.0])}, reference, 1e-2, 1.6e-2)
    assert close["mismatched"] == 0


def test_a_model_that_writes_into_its_input_is_named_and_every_call_gets_the_values_made(tmp_path: Path) -> None:
    """A model doing x.mul_(2) doubled the inputs the collector kept: the reference's second
    call and every cell after it were fed 2x, 4x ... the values made, every cell mismatched
    (float32 eager on the CPU included, the reference's own computation), the reference read as
    not deterministic, and inputs.pt held values nobody had run."""
    plan = load_plan(Path(__file__).parent / "workloads" / "input_written.toml")
    run_dir, code = execute(plan, select_backend("cpu"), Options(target="cpu", out_dir=tmp_path))
    assert code == 0 and run_dir is not None
    events = _events(run_dir / "events.jsonl")
    assert [e["status"] for e in events if e["kind"] == "case_result"] == ["pass", "pass"]
    assert all(e["deterministic"] for e in events if e["kind"] == "reference")
    written = [e["message"] for e in events if e["kind"] == "warning" and e["category"] == "InputWritten"]
    said = [m for m in written if "the model writes into its input(s) x" in m]
    assert len(said) == 2, written
    # Each cell's warm loop wrote into the inputs it reuses: no timing of other values is kept.
    kept = [m for m in written if m.startswith("warm timing not kept: the cell's calls wrote into its input(s) x")]
    assert len(kept) == 2 and len(written) == 4, written
    assert not [e for e in events if e["kind"] == "timing" and e.get("warm")]
    module = load_workload(plan)
    saved = torch.load(run_dir / "artifacts" / "inputs.pt", weights_only=True)
    assert all(
        torch.equal(saved[f"b{b}-l4-contiguous"]["x"], module.make_inputs(b, 4, "contiguous")["x"]) for b in (1, 2)
    )
    judged = build_report(run_dir / "events.jsonl", tmp_path / "report")
    assert judged.disposition.outcome == "suitable"
    assert "writes into its input(s) x" in (tmp_path / "report" / "report.md").read_text(encoding="utf-8")


def _variant(tmp_path: Path, module_edit: tuple[str, str], plan_edit: tuple[str, str]) -> Path:
    """A copy of tests/workloads/input_written.* with one edit to the module and one to the plan."""
    source = Path(__file__).parent / "workloads"
    module = (source / "input_written.py").read_text(encoding="utf-8")
    plan = (source / "input_written.toml").read_text(encoding="utf-8")
    assert module_edit[0] in module and plan_edit[0] in plan
    (tmp_path / "input_written.py").write_text(module.replace(*module_edit), encoding="utf-8")
    shutil.copyfile(source / "linear_parts.py", tmp_path / "linear_parts.py")  # the module imports it
    (tmp_path / "input_written.toml").write_text(plan.replace(*plan_edit), encoding="utf-8")
    return tmp_path / "input_written.toml"


def test_a_model_built_in_training_mode_is_run_in_eval_mode_and_the_log_says_so(tmp_path: Path) -> None:
    """build_model() returning model.train() (dropout on) was silently set to eval mode."""
    plan = _variant(
        tmp_path, ("return Doubling().eval()", "return Doubling().train()"), ('modes = ["eager"]', 'modes = ["eager"]')
    )
    run_dir, code = execute(load_plan(plan), select_backend("cpu"), Options(target="cpu", out_dir=tmp_path / "runs"))
    assert code == 0 and run_dir is not None
    (said,) = [e["message"] for e in _events(run_dir / "events.jsonl") if e.get("category") == "EvalModeSet"]
    assert said.startswith("build_model() returned 2 module(s) in training mode ((the model), a)")


def test_a_plan_whose_task_criterion_names_another_metric_than_the_module_stops_before_any_cell(
    tmp_path: Path,
) -> None:
    """A plan's 'top1 >= 0.5' beside a module whose TASK_METRIC is another metric judged that
    metric's value by the plan's threshold, and the report said 'task: top1 >= 0.5'."""
    plan = _variant(
        tmp_path,
        ('TASK_METRIC = "min_cosine_to_reference"', 'TASK_METRIC = "min_cosine_to_reference"'),
        ('metric = "min_cosine_to_reference"', 'metric = "top1"'),
    )
    run_dir, code = execute(load_plan(plan), select_backend("cpu"), Options(target="cpu", out_dir=tmp_path / "runs"))
    assert code == 2 and run_dir is not None
    events = _events(run_dir / "events.jsonl")
    assert not [e for e in events if e["kind"] == "case_result"]
    assert (
        "TASK_METRIC is 'min_cosine_to_reference', but the plan's task criterion for float32 names 'top1'"
        in (events[-1]["reason"])
    )


def test_a_reference_that_does_not_repeat_within_the_tolerance_blocks_its_cells(tmp_path: Path) -> None:
    """Dropout left on in the forward: the reference's two runs differ far beyond the float32
    tolerance, and its cells' mismatches were handed to the owner as backend differences to
    explain (and a model whose state changed per call passed as 'Suitable'); the log now counts
    the elements beyond each dtype's tolerance, and the cells are evidence of nothing."""
    plan = load_plan(Path(__file__).parent / "workloads" / "noisy_reference.toml")
    run_dir, code = execute(plan, select_backend("cpu"), Options(target="cpu", out_dir=tmp_path))
    assert code == 0 and run_dir is not None
    (reference,) = [e for e in _events(run_dir / "events.jsonl") if e["kind"] == "reference"]
    assert reference["noise_beyond_tolerance"]["float32"] > 0 and reference["schema_version"] == SCHEMA_VERSION
    judged = build_report(run_dir / "events.jsonl", tmp_path / "report")
    assert judged.disposition.outcome == "blocked"
    (reason,) = [r for r in judged.disposition.reasons if r.rule == "reference-not-repeatable"]
    assert reason.cases == ("b1-l4-contiguous-float32-eager",)
    assert "does not repeat within the float32 tolerance" in (tmp_path / "report" / "report.md").read_text(
        encoding="utf-8"
    )
    # A deterministic model's reference repeats: nothing beyond any tolerance.
    steady, _ = execute(
        load_plan(Path(__file__).parent / "workloads" / "input_written.toml"),
        select_backend("cpu"),
        Options(target="cpu", out_dir=tmp_path / "steady"),
    )
    assert steady is not None
    counts = [e["noise_beyond_tolerance"] for e in _events(steady / "events.jsonl") if e["kind"] == "reference"]
    assert counts == [{"float32": 0}, {"float32": 0}]


def test_an_output_that_is_its_input_written_in_place_is_judged_as_the_first_call_left_it(tmp_path: Path) -> None:
    """forward(x): x.mul_(2); return x. The cell's later calls (recording its ops) reuse its
    inputs, so its judged output, the input itself, was doubled again before it was compared:
    a mismatch the collector made, handed to the owner to explain."""
    plan = _variant(
        tmp_path, ("        x.mul_(2.0)\n        return self.a(x)", "        x.mul_(2.0)\n        return x"), ("", "")
    )
    run_dir, code = execute(load_plan(plan), select_backend("cpu"), Options(target="cpu", out_dir=tmp_path / "runs"))
    assert code == 0 and run_dir is not None
    assert [e["status"] for e in _events(run_dir / "events.jsonl") if e["kind"] == "case_result"] == ["pass", "pass"]


def test_a_task_metric_name_that_is_not_a_string_stops_before_any_cell(tmp_path: Path) -> None:
    """TASK_METRIC = 5 ran the whole matrix into a log that validate then refused
    (task_metric.name: Expected 'str', got 'int')."""
    plan = _variant(tmp_path, ('TASK_METRIC = "min_cosine_to_reference"', "TASK_METRIC = 5"), ("", ""))
    run_dir, code = execute(load_plan(plan), select_backend("cpu"), Options(target="cpu", out_dir=tmp_path / "runs"))
    assert code == 2 and run_dir is not None
    events = _events(run_dir / "events.jsonl")
    assert not [e for e in events if e["kind"] == "case_result"]
    assert "TASK_METRIC is int 5; expected the metric's name, a string" in events[-1]["reason"]
