"""Scenario A as a real workload: a decoder served per bucket, prefill and decode on a static
KV cache, judged on its tokens; the collector runs the tiny configuration on the CPU."""

from __future__ import annotations

import importlib.util
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
import tomli_w
import torch

from collector import generation
from collector.backends import select_backend
from collector.plan import PlanError, load_plan
from collector.runner import Options, execute
from reportgen.contract.validation import read_log
from reportgen.judge.plancheck import review_plan
from reportgen.render.report import judge_log
from tests.conftest import REPO

WORKLOADS = REPO / "collector" / "workloads"
TINY = WORKLOADS / "decoder_lm.toml"
SCENARIO_A = WORKLOADS / "scenario_a.toml"
PLANTED = REPO / "tests" / "workloads" / "planted_decoder.toml"


def _workload() -> Any:
    spec = importlib.util.spec_from_file_location("decoder_lm_under_test", WORKLOADS / "decoder_lm.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(plan: Path, tmp_path: Path, **options: Any) -> tuple[Path, list[Any]]:
    run_dir, code = execute(
        load_plan(plan), select_backend("cpu"), Options(target="cpu", out_dir=tmp_path / "runs", cold="off", **options)
    )
    assert code == 0 and run_dir is not None
    reading = read_log(run_dir / "events.jsonl")
    assert reading.problems == [], [p.format() for p in reading.problems]
    assert reading.complete
    return run_dir, reading.events


# --- 1. the workload -----------------------------------------------------------------------------


def test_requests_are_real_tokens_padded_on_the_left_with_the_mask_alike() -> None:
    workload = _workload()
    raw = workload.make_inputs(1, 96, "contiguous")
    assert raw["input_ids"].shape == (1, 96) and raw["input_ids"].dtype == torch.int64
    text = workload.tokenizer().decode(raw["input_ids"][0])
    assert text.startswith("Support ticket 4471"), "the byte-level tokenizer's ids decode back to the shipped text"
    padded = generation.pad_request(raw, 128, workload.pad_id(), "left")
    ids, mask = padded["input_ids"][0], padded["attention_mask"][0]
    assert ids.shape == (128,) and mask.shape == (128,)
    assert ids[:32].eq(workload.pad_id()).all() and mask[:32].eq(0).all(), "padding and its zero mask on the left"
    assert torch.equal(ids[32:], raw["input_ids"][0]) and mask[32:].eq(1).all()
    right = generation.pad_request(raw, 128, workload.pad_id(), "right")
    assert right["attention_mask"][0, 96:].eq(0).all() and torch.equal(right["input_ids"][0, :96], raw["input_ids"][0])


def test_the_tiny_and_the_documented_100m_configurations() -> None:
    from transformers import LlamaForCausalLM

    workload = _workload()
    model = workload.build_model()
    assert type(model).__name__ == "LlamaForCausalLM"
    assert sum(p.numel() for p in model.parameters()) < 100_000, "tiny: seconds on a CPU"
    assert "architecture real, weights synthetic" in workload.MODEL_REVISION and "'tiny'" in workload.MODEL_REVISION
    again = workload.build_model()
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), again.state_dict().values())), (
        "weights from a fixed seed"
    )
    workload.configure("small-100m")
    assert "'small-100m'" in workload.MODEL_REVISION
    with torch.device("meta"):  # counted without allocating the weights
        big = LlamaForCausalLM(workload._config("small-100m"))
    assert 80e6 < sum(p.numel() for p in big.parameters()) < 120e6
    with pytest.raises(ValueError, match="offers tiny, small-100m"):
        workload.configure("huge")


# --- 2. routing and generation -------------------------------------------------------------------


def test_each_request_goes_to_its_bucket_and_above_the_largest_follows_the_policy() -> None:
    buckets = [128, 256, 512]
    routes = {
        n: generation.route(n, buckets, "reject requests longer than 512 tokens") for n in (96, 240, 480, 512, 600)
    }
    assert [routes[n]["bucket"] for n in (96, 240, 480, 512)] == [128, 256, 512, 512]
    assert routes[600] == {"bucket": None, "outcome": "refused", "reason": routes[600]["reason"]}
    assert "600 tokens" in routes[600]["reason"] and "reject requests longer than 512" in routes[600]["reason"]
    cut = generation.route(600, buckets, "truncate to the last 512 tokens")
    assert cut["bucket"] == 512 and cut["outcome"] == "truncated"
    raw = {"input_ids": torch.arange(600)[None], "attention_mask": torch.ones(1, 600, dtype=torch.int64)}
    kept = generation.pad_request(raw, 512, 0, "left")
    assert torch.equal(kept["input_ids"][0], torch.arange(88, 600)), "a truncated request keeps its last tokens"
    assert generation.route(600, buckets, None)["outcome"] == "refused"


def test_decode_has_one_shape_whatever_the_bucket() -> None:
    workload = _workload()
    model = workload.build_model()
    seen: list[tuple[str, tuple[int, ...], tuple[int, ...]]] = []
    step = workload.step

    def spy(
        m: Any, ids: torch.Tensor, mask: torch.Tensor, pos: torch.Tensor, cache: Any, at: torch.Tensor
    ) -> torch.Tensor:
        seen.append(("prefill" if ids.shape[1] > 1 else "decode", tuple(ids.shape), tuple(mask.shape)))
        return step(m, ids, mask, pos, cache, at)

    workload.step = spy
    for length, bucket in ((6, 8), (12, 16)):
        padded = generation.pad_request(
            workload.make_inputs(1, length, "contiguous"), bucket, workload.pad_id(), "left"
        )
        with torch.no_grad():
            trace = generation.generate(workload, model, padded, 3, 20, torch.device("cpu"), lambda: None)
        assert trace.tokens.shape == (1, 4) and len(trace.decode_s) == 3 and trace.prefill_s > 0
    assert {s for s in seen if s[0] == "decode"} == {("decode", (1, 1), (1, 20))}
    assert {s for s in seen if s[0] == "prefill"} == {("prefill", (1, 8), (1, 20)), ("prefill", (1, 16), (1, 20))}
    with pytest.raises(ValueError, match="exceed the static cache"):
        generation.generate(workload, model, padded, 8, 20, torch.device("cpu"), lambda: None)


def test_right_padding_chooses_the_same_tokens_as_left_padding() -> None:
    workload = _workload()
    model = workload.build_model()
    raw = workload.make_inputs(1, 11, "contiguous")
    traces = {}
    for side in ("left", "right"):
        padded = generation.pad_request(raw, 16, workload.pad_id(), side)
        with torch.no_grad():
            traces[side] = generation.generate(workload, model, padded, 4, 24, torch.device("cpu"), lambda: None)
    assert torch.equal(traces["left"].tokens, traces["right"].tokens), (
        "the first token comes from the last real position, not a pad"
    )
    assert torch.allclose(traces["left"].step_logits[0], traces["right"].step_logits[0], atol=1e-4)


# --- 3. correctness --------------------------------------------------------------------------------


def test_a_planted_divergence_at_step_k_is_judged_as_step_k() -> None:
    workload = _workload()
    model = workload.build_model()
    padded = generation.pad_request(workload.make_inputs(1, 6, "contiguous"), 8, workload.pad_id(), "left")
    with torch.no_grad():
        reference = generation.generate(workload, model, padded, 5, 16, torch.device("cpu"), lambda: None)
    for k in (1, 3, 5):
        forced = reference.tokens.clone()
        cell = generation.Trace(reference.prefill_logits, list(reference.step_logits), forced)
        cell.tokens[0, k] = (int(forced[0, k]) + 1) % 384
        judged = generation.judge(
            cell, reference, padded["attention_mask"], 1e-5, 1e-4, {"op": ">=", "threshold": 6}, 5, 0.8
        )
        assert judged["first_divergent_step"] == k and judged["steps_agreeing"] == k
        assert judged["tokens_passed"] is False
        assert judged["top_k_overlap"][: k + 1] == [1.0] * (k + 1) and all(
            o is None for o in judged["top_k_overlap"][k + 1 :]
        )
    same = generation.judge(
        reference, reference, padded["attention_mask"], 1e-5, 1e-4, {"op": ">=", "threshold": 6}, 5, 0.8
    )
    assert (
        same["first_divergent_step"] is None
        and same["steps_agreeing"] == 6
        and same["tokens_passed"]
        and same["error_stats"]["mismatched"] == 0
    )


def test_the_collector_records_a_planted_divergence_at_its_decode_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PLANTED_STEP", "3")
    _, events = _run(PLANTED, tmp_path, warm_repetitions=2)
    gen = next(e for e in events if e.kind == "generation")
    result = next(e for e in events if e.kind == "case_result")
    assert gen.first_divergent_step == 3 and gen.steps_agreeing == 3
    assert gen.tokens[0][:3] == gen.reference_tokens[0][:3] and gen.tokens[0][3] != gen.reference_tokens[0][3]
    assert gen.top_k_overlap[3] == pytest.approx(0.8) and gen.top_k_overlap[4:] == [None, None]
    assert result.status == "mismatch" and result.task_metric.value == 3 and result.task_metric.passed is False
    assert result.error_stats.mismatched == 0, "the prefill itself agrees"
    assert gen.timing is None, "no timing for a cell that did not pass"


# --- 5. plans ---------------------------------------------------------------------------------------


def test_the_unpadded_scenario_a_needs_revision_and_the_shipped_plan_is_that_revision() -> None:
    draft = review_plan(REPO / "tests" / "plans" / "scenario_a.toml", "neuron")
    assert draft.classification == "revise"
    revised = review_plan(SCENARIO_A, "neuron")
    assert revised.classification == "compatible", [f.title for f in revised.findings]
    plan = load_plan(SCENARIO_A)
    checked = plan.checked
    # What the draft's review asks for, the shipped plan declares.
    assert checked["padding"]["buckets"] == draft.revised["padding"]["buckets"] == [128, 256, 512]
    assert checked["padding"]["above_largest"].startswith("reject") and checked["padding"]["mask_padded"] is True
    assert checked["matrix"]["dtypes"] == ["float32", "bfloat16"] and checked["matrix"]["modes"] == [
        "eager",
        "compiled",
    ]
    assert {l for _, l in checked["matrix"]["shapes"]} == {96, 240, 480, 600} and {
        b for b, _ in checked["matrix"]["shapes"]
    } == {1}
    assert checked["matrix"]["cache_checks"]
    assert plan.missing_tolerance("bfloat16") is None and plan.missing_tolerance("float32") is None
    assert plan.tolerances["bfloat16"]["task"]["metric"] == "greedy_steps_agreeing"
    assert plan.generation["decode_steps"] + checked["padding"]["buckets"][-1] <= plan.generation["max_cache_len"]
    assert review_plan(TINY, "cpu").classification == "compatible"


def _write(tmp_path: Path, base: Path, change: Any) -> Path:
    data = tomllib.loads(base.read_text(encoding="utf-8"))
    data["workload"]["module"] = str(base.parent / data["workload"]["module"])
    change(data)
    out = tmp_path / "plan.toml"
    out.write_text(tomli_w.dumps(data), encoding="utf-8")
    return out


@pytest.mark.parametrize(
    "change,message",
    [
        (
            lambda d: d["generation"].update(max_cache_len=19),
            r"generation.max_cache_len: the largest bucket 16 plus 4 decode steps need 20 positions, got 19",
        ),
        (lambda d: d.pop("padding"), r"generation: a generation plan pads requests to buckets"),
        (lambda d: d["tolerances"]["float32"]["task"].update(threshold=9), r"at most decode_steps \+ 1 = 5"),
        (
            lambda d: d["tolerances"]["float32"]["task"].update(metric="cosine"),
            r"task criterion is on greedy_steps_agreeing",
        ),
        (lambda d: d["generation"].update(min_top_k_overlap=1.5), r"a share between 0 and 1"),
        (lambda d: d["generation"].update(padding_side="middle"), r"expected one of left, right"),
        (
            lambda d: d["timing"]["scope"].update(preprocessing=True),
            r"timing.scope: a generation plan times model calls only .*preprocessing cannot be timed",
        ),
        (
            lambda d: d["matrix"].update(layouts=["contiguous", "noncontiguous"]),
            r"matrix.layouts: a generation plan's requests are padded by the collector into contiguous tensors",
        ),
    ],
)
def test_a_generation_plan_that_cannot_be_run_is_refused_with_its_line(
    tmp_path: Path, change: Any, message: str
) -> None:
    with pytest.raises(PlanError, match=message):
        load_plan(_write(tmp_path, TINY, change))


# --- 2 and 4 through the collector --------------------------------------------------------------


def test_a_top_k_at_the_vocabulary_stops_the_run_at_the_reference_before_any_cell(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    # A top-k of the tiny decoder's whole vocabulary holds every token on both sides; plan-check
    # cannot know the vocabulary, which only the model's logits show.
    vocabulary = len(_workload().tokenizer())
    plan = _write(tmp_path, TINY, lambda d: d["generation"].update(top_k=vocabulary))
    run_dir, code = execute(
        load_plan(plan), select_backend("cpu"), Options(target="cpu", out_dir=tmp_path / "runs", cold="off")
    )
    err = capfd.readouterr().err
    assert code == 2 and run_dir is not None
    said = f"generation.top_k = {vocabulary} is at least the model's vocabulary ({vocabulary} tokens"
    assert f"plan error: {said}" in err and "run aborted before any cell ran" in err, err[-1500:]
    reading = read_log(run_dir / "events.jsonl")
    assert reading.problems == [], [p.format() for p in reading.problems]
    kinds = [e.kind for e in reading.events]
    assert "case_result" not in kinds and "generation" not in kinds and "reference" not in kinds, kinds
    end = reading.run_end
    assert end is not None and end.status == "aborted" and said in (end.reason or "")
    # The report blocks it and says to change the plan: collecting again with the same plan would
    # stop the same way.
    judged = judge_log(run_dir / "events.jsonl")
    assert judged.disposition.outcome == "blocked"
    assert {r.rule for r in judged.disposition.reasons} >= {"stopped-on-plan"}
    step = "".join(text for text, _ in judged.view.next_step.parts)
    assert step.startswith("Next: change the plan as the reason under Disposition says") and "same plan" not in step, (
        step
    )
    # One below the vocabulary is a criterion that can fail: the run goes on (the tiny decoder's
    # shipped plan, top_k 5, runs in the tests below).
    below = _write(tmp_path, TINY, lambda d: d["generation"].update(top_k=vocabulary - 1))
    _run(below, tmp_path, only=["b1-l6-*"], modes=["eager"], warm_repetitions=1)


def test_the_tiny_decoder_runs_eager_through_the_collector(tmp_path: Path) -> None:
    _, events = _run(TINY, tmp_path, modes=["eager"], warm_repetitions=3)
    plan = next(e for e in events if e.kind == "plan")
    assert (
        plan.generation.decode_steps == 4
        and plan.generation.max_cache_len == 20
        and plan.generation.padding_side == "left"
    )
    assert "architecture real, weights synthetic" in plan.model_revision
    requests = {e.length: e for e in events if e.kind == "request"}
    assert {n: (r.bucket, r.outcome) for n, r in requests.items()} == {
        6: (8, "padded"),
        12: (16, "padded"),
        20: (None, "refused"),
    }
    results = {e.case: e for e in events if e.kind == "case_result"}
    assert results["b1-l20-contiguous-float32-eager"].status == "skipped"
    assert "20 tokens are above the largest bucket 16" in results["b1-l20-contiguous-float32-eager"].skip_reason
    gens = {e.case: e for e in events if e.kind == "generation"}
    assert set(gens) == {"b1-l6-contiguous-float32-eager", "b1-l12-contiguous-float32-eager"}
    for case, gen in gens.items():
        assert results[case].status == "pass", results[case]
        assert gen.bucket == {6: 8, 12: 16}[gen.request_length]
        assert gen.first_divergent_step is None and gen.steps_agreeing == 5 and gen.tokens == gen.reference_tokens
        assert results[case].inputs[0].shape == [1, gen.bucket], "the padded request reached the model"
        timing = gen.timing
        assert timing is not None and timing.repetitions == 3 and len(timing.ttft_warm.samples_s) == 3
        assert len(timing.decode_token.samples_s) == 3 * 4, "one sample per decode step of every repetition"
        assert timing.tokens_per_s > 0 and timing.ttft_cold_s > 0 and "tokenised" in timing.scope
        # The host around the warm generations, as a timing event's (schema 1.4): what the
        # threads ran and waited for a CPU judges both series.
        assert timing.host is not None and {"cpu_run_s", "cpu_wait_s", "load_avg_before"} <= set(timing.host)
        assert all((f.value is None) != (f.unknown_reason is None) for f in timing.host.values())
    assert not any(e.kind == "compile" for e in events), "eager cells compile nothing"


def test_a_request_of_600_tokens_follows_the_declared_policy(tmp_path: Path) -> None:
    _, events = _run(SCENARIO_A, tmp_path, only=["b1-l600-*"], modes=["eager"], warm_repetitions=1)
    request = next(e for e in events if e.kind == "request")
    assert (request.length, request.bucket, request.outcome) == (600, None, "refused")
    assert "reject requests longer than 512 tokens" in request.reason
    results = [e for e in events if e.kind == "case_result"]
    assert results and all(r.status == "skipped" and "refused" in r.skip_reason for r in results)
    truncating = _write(
        tmp_path, SCENARIO_A, lambda d: d["padding"].update(above_largest="truncate to the last 512 tokens")
    )
    _, events = _run(truncating, tmp_path, only=["b1-l600-contiguous-float32-eager"], warm_repetitions=1)
    request = next(e for e in events if e.kind == "request")
    assert (request.bucket, request.outcome) == (512, "truncated")
    gen = next(e for e in events if e.kind == "generation")
    assert gen.truncated is True and gen.bucket == 512 and gen.request_length == 600


@pytest.mark.slow
def test_the_tiny_decoder_compiles_one_prefill_graph_per_bucket_and_one_decode_graph(tmp_path: Path) -> None:
    run_dir, events = _run(TINY, tmp_path, modes=["compiled"], warm_repetitions=2)
    compiles = [e for e in events if e.kind == "compile"]
    by = {(e.case, e.generation_graph): e for e in compiles}
    first, second = "b1-l6-contiguous-float32-compiled", "b1-l12-contiguous-float32-compiled"
    assert {e.generation_graph for e in compiles} == {"prefill", "decode"} and {e.graph for e in compiles} == {
        "inference"
    }
    assert by[(first, "prefill")].bucket == 8 and by[(second, "prefill")].bucket == 16
    assert by[(first, "prefill")].graphs >= 1 and by[(second, "prefill")].graphs >= 1, (
        "each bucket compiles its prefill"
    )
    assert by[(first, "decode")].graphs >= 1 and by[(second, "decode")].graphs == 0, "one decode shape: compiled once"
    assert all(e.recompiles == 0 for e in compiles), "nothing compiled again on a fixed-shape path"
    results = {e.case: e for e in events if e.kind == "case_result"}
    assert results[first].status == "pass" and results[second].status == "pass"
    assert results["b1-l6-contiguous-float32-compiled-repeat"].recompiled is False
    gens = {e.case: e for e in events if e.kind == "generation"}
    assert gens[first].timing.ttft_cold_s > gens[first].timing.ttft_warm.median_s, (
        "the cold first token paid for the compile"
    )
    # The report states per bucket the compile counts the log recorded.
    rows = {r.case: r for r in judge_log(run_dir / "events.jsonl").view.generation}
    for case in (first, second):
        stated = {graph: int(n) for graph, n in re.findall(r"(prefill|decode): (\d+) graph", rows[case].compiles)}
        assert stated == {e.generation_graph: e.graphs for e in compiles if e.case == case}
    assert rows[first].bucket == "8" and rows[second].bucket == "16"


def test_a_compiled_generation_that_fails_is_recorded_and_the_matrix_goes_on(tmp_path: Path) -> None:
    from collector.backends import Backend

    class Broken(torch.nn.Module):
        def forward(self, **kwargs: Any) -> Any:
            raise RuntimeError("the compiled graph failed at run time")

    class BrokenCompile(Backend):
        def compile(self, model: Any, options: dict[str, Any]) -> Any:
            super().compile(model, options)  # records the options as a real compile would
            broken = Broken()
            broken.config = model.config  # as a compiled wrapper shows its model's attributes
            return broken

    run_dir, code = execute(
        load_plan(TINY),
        BrokenCompile(),
        Options(target="cpu", out_dir=tmp_path / "runs", cold="off", only=["b1-l6-*"], warm_repetitions=1),
    )
    reading = read_log(run_dir / "events.jsonl")
    assert code == 0 and reading.problems == [] and reading.complete
    results = {e.case: e for e in reading.events if e.kind == "case_result"}
    assert results["b1-l6-contiguous-float32-compiled"].status == "error"
    assert "the compiled graph failed at run time" in results["b1-l6-contiguous-float32-compiled"].failure.message
    assert results["b1-l6-contiguous-float32-eager"].status == "pass", "the eager cell still ran"
    assert not [e for e in reading.events if e.kind == "generation" and e.case.endswith("-compiled")], (
        "no generation facts for a cell that never generated"
    )


def test_the_worst_prefill_element_is_named_by_its_place_in_the_padded_logits() -> None:
    """Before: the prefill's logits were judged at the real positions gathered flat, and the
    worst element's index was into that gathered view: "prefill_logits[1, 146]" of a batch-1
    [1, 8, 384] output, a place a reader would look up and find something else. It is now
    (sequence, position, vocabulary entry) in the logits as the cell produced them."""
    import torch

    from collector.generation import Trace, judge

    vocab = 6
    ref = Trace(
        prefill_logits=torch.zeros(2, 8, vocab),
        step_logits=[torch.zeros(2, vocab)],
        tokens=torch.zeros(2, 1, dtype=torch.int64),
    )
    got = Trace(
        prefill_logits=torch.zeros(2, 8, vocab),
        step_logits=[torch.zeros(2, vocab)],
        tokens=torch.zeros(2, 1, dtype=torch.int64),
    )
    got.prefill_logits[1, 5, 3] = 1.0  # the second sequence, position 5 (3 padded positions before)
    mask = torch.ones(2, 8, dtype=torch.int64)
    mask[0, :2] = 0
    mask[1, :3] = 0
    found = judge(got, ref, mask, 1e-5, 1e-4, None, 2, 0.5)
    assert found["error_stats"]["worst_index"] == [1, 5, 3]
    assert found["error_stats"]["total"] == (6 + 5) * vocab  # the real positions only are judged


def test_make_inputs_of_another_batch_errs_the_generation_cells_with_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A review: make_inputs returning one row for a batch-2 cell ran to "done: 4 of 4 cells
    recorded" and wrote a log reportgen refuses ("tokens hold 1 row(s), but the plan's cell is a
    batch of 2"): the device time was lost. The cells of that shape now err with why, in a log
    that reads."""
    import collector.run.reference as reference

    checked = reference.check_inputs
    monkeypatch.setattr(
        reference, "check_inputs", lambda workload, inputs: {k: v[:1] for k, v in checked(workload, inputs).items()}
    )
    plan = _write(
        tmp_path,
        TINY,
        lambda d: d["matrix"].update(shapes=[[2, 6]], dtypes=["float32"], modes=["eager"], cache_checks=[]),
    )
    _, events = _run(plan, tmp_path, warm_repetitions=1)
    results = [e for e in events if e.kind == "case_result"]
    assert results and {r.status for r in results} == {"error"}
    assert all(
        "make_inputs(2, 6, 'contiguous') returned input_ids of shape [1, 6]: a generation cell of batch 2 needs 2 row(s)"
        in (r.failure.message if r.failure else "")
        for r in results
    ), [r.failure for r in results]
