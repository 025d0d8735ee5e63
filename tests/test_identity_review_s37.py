"""Evidence identity (an outside review): what a comparison says of the runs it holds."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from reportgen.cli import main
from tests.conftest import REPO
from tests.logbuilder import edited_sample

SAMPLES = REPO / "sample_runs"
EARLIER, LATER = "tiny-encoder-cpu-20261205T124447Z-43ef64", "tiny-encoder-cpu-20261206T150111Z-1dd183"


def _synthetic_replicate(folder: Path) -> Path:
    """The later sample relabelled synthetic, its warm samples 1% faster (not a copy's)."""
    events = edited_sample(LATER, "synthetic-replicate", "the later tiny-encoder sample, warm samples scaled by 0.99")
    for event in events:
        warm = event.get("warm") if event["kind"] == "timing" else None
        if warm:
            warm["samples_s"] = [x * 0.99 for x in warm["samples_s"]]
            for key in ("min_s", "median_s", "p90_s", "iqr_s"):
                if isinstance(warm.get(key), float):
                    warm[key] *= 0.99
    folder.mkdir(parents=True)
    (folder / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    return folder


def test_a_synthetic_fixture_given_as_a_further_replicate_is_named(tmp_path: Path) -> None:
    """compare with replicates took a side's synthetic label from its first run alone: a fixture
    given as the second --candidate went unsaid (the word 'synthetic' nowhere in compare.md),
    its samples in the side's interval. diff said it."""
    fixture = _synthetic_replicate(tmp_path / "fixture")
    out = tmp_path / "compare"
    args = ["compare", "--baseline", str(SAMPLES / EARLIER), "--candidate", str(SAMPLES / LATER)]
    result = CliRunner().invoke(main, [*args, "--candidate", str(fixture), "--out", str(out), "--format", "md,json"])
    assert result.exit_code == 0, result.output
    text = (out / "compare.md").read_text(encoding="utf-8")
    assert "> **Synthetic fixture.** The candidate log was written by hand" in text
    assert "**Synthetic fixture on the candidate, not a measurement: evidence of nothing" in text
    data = json.loads((out / "compare.json").read_text(encoding="utf-8"))
    assert data["candidate"]["synthetic"] is True and data["baseline"]["synthetic"] is False


def test_a_shipped_weights_file_of_other_bytes_is_named_beside_same_content() -> None:
    """A shipped weights file that changed (a key the state_dict does not hold, or another format)
    read only 'same weights by content': its two file hashes appeared on no surface."""
    from reportgen.judge.identity import WeightsFacts, weights_identity

    a = WeightsFacts("c" * 64, "9a7fb9" + "0" * 58, True, revision="tiny-mlp v1", origin="pretrained")
    b = WeightsFacts("c" * 64, "90182e" + "0" * 58, True, revision="tiny-mlp v1", origin="pretrained")
    same = weights_identity(a, b)
    assert same.same and "the weights files differ in bytes (sha256 9a7fb9" in same.text and "90182e" in same.text
    collector_saved = weights_identity(WeightsFacts("c" * 64, "1" * 64, False), WeightsFacts("c" * 64, "2" * 64, False))
    assert collector_saved.same and "differ in bytes" not in collector_saved.text  # torch.save's own bytes differ


def test_pretrained_weights_are_not_the_same_by_declaration() -> None:
    """Without content hashes, two runs of differently loaded pretrained weights (the files'
    bytes differing) read 'weights identified by declaration only ... whose weights the workload
    builds from its seed', and compare counted the cell comparable."""
    from reportgen.judge.identity import WeightsFacts, weights_identity

    def facts(file: str, origin: str | None) -> WeightsFacts:
        return WeightsFacts(None, file, False, "ContentHashError: a non-finite float", "tiny-mlp v1", origin=origin)

    loaded = weights_identity(facts("1" * 64, "pretrained"), facts("2" * 64, "pretrained"))
    assert not loaded.same and "pretrained (loaded, not built from a seed)" in loaded.text
    seeded = weights_identity(facts("1" * 64, "synthetic"), facts("2" * 64, "synthetic"))
    assert seeded.same and "builds from its seed" in seeded.text


def test_the_latest_run_per_target_tags_synthetic_weights(sample_site: Path) -> None:
    """The workload history's 'Latest run per target' line tagged a synthetic fixture but not a
    run of synthetic weights (measured, of no trained model), which every other surface names."""
    (page,) = sample_site.glob("workloads/scenario-a-text-service*/index.html")
    latest = page.read_text(encoding="utf-8").split('<p class="latest-per-target">', 1)[1].split("</p>", 1)[0]
    assert '<span class="tag">synthetic weights</span>' in latest
    (minilm,) = sample_site.glob("workloads/all-MiniLM-L6-v2*/index.html")  # pretrained weights
    assert (
        "synthetic weights"
        not in minilm.read_text(encoding="utf-8").split('<p class="latest-per-target">', 1)[1].split("</p>", 1)[0]
    )


def _scenario_a(tmp_path: Path, policy: str | None) -> Path:
    events = edited_sample(
        "scenario-a-text-service-cpu-20261206T152740Z-a6ae00",
        "synthetic-policy",
        f"the Scenario A sample with its policy above the largest bucket set to {policy!r}",
    )
    plan = next(e for e in events if e["kind"] == "plan")
    plan["padding"]["above_largest"] = policy
    (tmp_path / "run").mkdir()
    log = tmp_path / "run" / "events.jsonl"
    log.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    return log


def test_a_refused_request_is_the_policy_holding_only_under_a_policy_that_rejects(tmp_path: Path) -> None:
    """A generation review: a request above the largest bucket, refused because the plan declared
    no policy (or one the collector does not run, split), read 'refused as declared', a note,
    where its cells are untested. Only a declared 'reject' holds in a refusal."""
    from reportgen.contract.validation import read_log
    from reportgen.judge.disposition import decide, refused_requests
    from reportgen.model.runmodel import build_run

    def judged(policy: str | None) -> tuple[dict[str, int], list[str]]:
        folder = tmp_path / str(policy)
        folder.mkdir()
        run = build_run(read_log(_scenario_a(folder, policy)))
        blocking = [r.message for r in decide(run, {}).reasons if r.outcome == "blocked"]
        return refused_requests(run), blocking

    rejected, blocking = judged("reject requests longer than 512 tokens, with the reason")
    assert rejected and not any("skipped" in m for m in blocking)
    for policy in (None, "split requests longer than 512 tokens into 512-token chunks"):
        refused, blocking = judged(policy)
        assert refused == {} and any("skipped" in m for m in blocking), (policy, blocking)


def test_a_task_criterion_failure_alone_is_not_placed_by_localisation(tmp_path: Path) -> None:
    """A generation review: a cell within its elementwise tolerance everywhere that failed its task
    criterion was localised by that elementwise tolerance, and the report said 'the error arises in
    code no localised module covers' (or named a module): figures judged elementwise cannot place
    a task-criterion failure. No module or place is named now, and it says why."""
    from reportgen.contract.validation import read_log
    from reportgen.judge.disposition import decide
    from reportgen.judge.judgement import judge
    from reportgen.judge.localization import TASK_ONLY
    from reportgen.model.runmodel import build_run
    from tests.logbuilder import case_key, dumps, localized_log, with_envelope

    events = localized_log()
    case = case_key(2, 16, "compiled")
    result = next(e for e in events if e["kind"] == "case_result" and e["case"] == case)
    result["error_stats"].update(mismatched=0, max_abs=1e-6, diff_at_worst=1e-6)
    result["task_metric"] = {**result["task_metric"], "value": 0.5, "passed": False}
    log = tmp_path / "events.jsonl"
    log.write_text(dumps(with_envelope(events)), encoding="utf-8")
    reading = read_log(log)
    assert reading.valid, [p.format() for p in reading.problems][:3]
    run = build_run(reading)
    judged = judge(run).localized[case]
    assert judged.sentence.startswith(TASK_ONLY) and judged.first is None and judged.gap is None
    assert not any("blocks.2" in r.message for r in decide(run, {}).reasons)
