"""The index and history say which targets were measured: short row labels with the full text one
click away, one target column marked when it is not the intended target, a device column, runs per
target on the first line, and per workload plan-check's verdict until a run on its target exists."""

from __future__ import annotations

import msgspec

import html
import json
import re
from pathlib import Path

import pytest

from collector.plan import PlanError
from reportgen.judge.plancheck import logged_plan_toml, review_logged_plan, review_plan
from reportgen.publish.site import build_site
from reportgen.render.report import judge_log
from tests.conftest import REPO
from tests.logbuilder import base_events, dumps, finish, with_envelope


def _text(page: str) -> str:
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))


def _sample_runs(target: str | None = None) -> list[Path]:
    return [
        p
        for p in sorted((REPO / "sample_runs").glob("*/events.jsonl"))
        if target is None or f"-{target}-2026" in p.parent.name
    ]


def test_first_line_counts_runs_per_target_and_names_the_missing_one(sample_site: Path) -> None:
    page = (sample_site / "index.html").read_text(encoding="utf-8")
    first = _text(page[page.index('id="per-target"') : page.index("</p>", page.index('id="per-target"'))])
    cuda, cpu = len(_sample_runs("cuda")), len(_sample_runs("cpu"))
    assert cuda == 2 and cpu >= 13 and cuda + cpu == len(_sample_runs())
    assert f"Runs per target: neuron 0 · cuda {cuda} · cpu {cpu}." in first
    assert "0 runs on neuron: every disposition here is for cuda or cpu." in first
    assert "plan-check's verdict per workload on its intended target" in first
    assert "1 blocked by a precision requirement, 1 needs a revised test plan, 3 compatible as specified." in first
    assert page.index('id="per-target"') < page.index('class="runs"'), "the line comes before the table"


def test_rows_have_short_labels_with_the_headline_one_click_away(sample_site: Path) -> None:
    page = (sample_site / "index.html").read_text(encoding="utf-8")
    rows = page[page.index('<table class="runs">') : page.index("</table>", page.index('<table class="runs">'))]
    summaries = re.findall(r"<summary>(.*?)</summary>", rows)
    assert len(summaries) == len(_sample_runs())
    labels = [_text(s).strip() for s in summaries]
    assert "✔ Suitable, 36/36, cpu" in labels and "✖ Blocked, 13/18, cpu" in labels
    assert all(len(label) <= 40 for label in labels), labels
    # The headline is in the row, folded: not in the summary line.
    assert "<p>Suitable for the tested fixed-shape path" in rows
    assert not any("fixed-shape" in s for s in summaries)


def test_one_target_column_and_a_device_column(sample_site: Path) -> None:
    page = (sample_site / "index.html").read_text(encoding="utf-8")
    head = _text(page[page.index('<table class="runs">') : page.index("</thead>", page.index('<table class="runs">'))])
    assert "target" in head and "device" in head
    assert (
        "intended target" not in head and "run's target" not in head and "ran on " not in head.replace("ran on", "", 1)
    )
    assert "<td>NVIDIA H200</td>" in page, "the device a cuda run measured"
    assert "<td>x86_64</td>" in page, "what an older CPU run's log names as its device (platform.processor())"
    assert "<td>AMD EPYC</td>" in page, "a CPU run of collector 0.3 names its CPU model"
    records = json.loads((sample_site / "index.json").read_text(encoding="utf-8"))
    assert {r["device"] for r in records} == {"NVIDIA H200", "x86_64", "AMD EPYC"}, (
        "index.json and index.csv carry the device"
    )
    assert "device" in (sample_site / "index.csv").read_text(encoding="utf-8").splitlines()[0].split(",")
    history = next(sample_site.glob("workloads/tiny-encoder-*/index.html")).read_text(encoding="utf-8")
    assert "<td>NVIDIA H200</td>" in history and "✖ Blocked, 7/14, cuda" in _text(history)


def test_target_marked_when_the_plan_is_meant_for_another(tmp_path: Path) -> None:
    events = base_events()
    plan = next(e for e in events if e["kind"] == "plan")
    plan["intended_target"] = "neuron"
    run = tmp_path / "runs" / "a"
    run.mkdir(parents=True)
    (run / "events.jsonl").write_text(dumps(with_envelope(finish(events))), encoding="utf-8")
    build_site([tmp_path / "runs"], tmp_path / "site")
    page = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert '<span class="tag target-differs"' in page and "≠ intended neuron" in page
    runs = page[page.index('<table class="runs">') :]
    row = runs[runs.index("<tbody>") : runs.index("</tbody>")]
    assert row.count("target-differs") == 1


def test_plan_check_verdict_per_workload_until_a_run_on_its_target(sample_site: Path) -> None:
    page = (sample_site / "index.html").read_text(encoding="utf-8")
    table = page[
        page.index('<table class="workloads">') : page.index("</table>", page.index('<table class="workloads">'))
    ]
    rows = {re.search(r">([^<]+)</a></th>", r).group(1): _text(r) for r in table.split("<tr>")[2:]}
    assert set(rows) == {
        "all-MiniLM-L6-v2",
        "heat-solver",
        "scenario-a-text-service",
        "tiny-classifier-training",
        "tiny-encoder",
    }
    assert "Blocked by a precision requirement (on neuron)" in rows["heat-solver"]
    assert "float64 computation is required" in rows["heat-solver"]
    assert "Compatible as specified (on neuron)" in rows["tiny-encoder"]
    assert "Needs a revised test plan (on neuron)" in rows["tiny-classifier-training"]
    assert all(" neuron (default) 0 " in r for r in rows.values()), (
        "no sample names its target: plan-check's default, no run on it"
    )


def _measured(events: list[dict]) -> list[dict]:
    """A hand-built log told to be a measurement: how the index counts a real run on a target."""
    events[0]["origin"] = "measured"
    events[0].pop("origin_note", None)
    return events


def test_a_run_on_the_intended_target_replaces_the_plan_check(tmp_path: Path) -> None:
    """A run (a hand-built log marked measured) that is evidence for the plan's target: the row
    counts it and shows no plan-check verdict; the cpu run of another workload still shows one."""
    for name, target, family in (("on-neuron", "neuron", "neuron-native"), ("on-cpu", "cpu", "cpu")):
        events = _measured(base_events(target=target, family=family))
        events[0]["run_id"] = f"run-{name}"
        events[0]["workload"] = name
        plan = next(e for e in events if e["kind"] == "plan")
        plan["workload"], plan["intended_target"] = name, "neuron"
        run = tmp_path / "runs" / name
        run.mkdir(parents=True)
        (run / "events.jsonl").write_text(dumps(with_envelope(finish(events))), encoding="utf-8")
    build_site([tmp_path / "runs"], tmp_path / "site")
    page = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    table = page[
        page.index('<table class="workloads">') : page.index("</table>", page.index('<table class="workloads">'))
    ]
    rows = {re.search(r">([^<]+)</a></th>", r).group(1): _text(r) for r in table.split("<tr>")[2:]}
    assert " neuron 1 " in rows["on-neuron"] and "plan-check" not in rows["on-neuron"].replace("a run exists", "")
    assert "a run exists" in rows["on-neuron"]
    assert " neuron 0 " in rows["on-cpu"] and "(on neuron)" in rows["on-cpu"]
    assert (
        "Runs per target: neuron 1 · cuda 0 · cpu 1. 0 runs on cuda: every disposition here is for neuron or cpu."
        in _text(page)
    )


def test_first_line_of_an_empty_site(tmp_path: Path) -> None:
    (tmp_path / "runs").mkdir()
    build_site([tmp_path / "runs"], tmp_path / "site")
    assert "Runs per target: neuron 0 · cuda 0 · cpu 0. No runs yet: nothing here is evidence for any target." in _text(
        (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    )


@pytest.mark.parametrize(
    "run, plan",
    [
        ("heat-solver-cpu-20261202T021648Z-fc81c6", "heat_solver.toml"),
        ("all-MiniLM-L6-v2-cpu-20261202T022317Z-269de3", "minilm.toml"),
        ("tiny-encoder-cpu-20261202T021258Z-677058", "tiny_encoder.toml"),
        ("tiny-classifier-training-cpu-20261202T022137Z-355045", "tiny_classifier.toml"),
        ("scenario-a-text-service-cpu-20261202T023819Z-d4d489", "scenario_a.toml"),
    ],
)
def test_logged_plan_reviews_as_its_plan_file(run: str, plan: str) -> None:
    """plan-check on the plan a run logged reaches the plan file's classification and findings."""
    logged = review_logged_plan(judge_log(REPO / "sample_runs" / run / "events.jsonl").run.plan, "neuron")
    direct = review_plan(REPO / "collector" / "workloads" / plan, "neuron")
    assert logged.classification == direct.classification
    assert [f.id for f in logged.findings if f.severity != "note"] == [
        f.id for f in direct.findings if f.severity != "note"
    ]


def test_a_logged_plan_that_makes_no_valid_plan_is_a_clear_error() -> None:
    plan = judge_log(REPO / "sample_runs" / "tiny-encoder-cpu-20261202T021258Z-677058" / "events.jsonl").run.plan
    broken = msgspec.structs.replace(plan, **{"warm_repetitions": 0})
    assert logged_plan_toml(broken)["timing"]["warm_repetitions"] == 0
    with pytest.raises(PlanError, match="warm_repetitions"):
        review_logged_plan(broken, "neuron")


def test_hostile_device_name_and_plan_are_shown_as_text(tmp_path: Path) -> None:
    events = base_events()
    env = next(e for e in events if e["kind"] == "environment")
    env["device"]["device_name"] = {"value": "<img src=x onerror=alert(1)>", "source": "synthetic fixture"}
    plan = next(e for e in events if e["kind"] == "plan")
    plan["compile_options"] = {
        "dynamic": False,
        "mode": "<b>no-such-mode</b>",
        "fullgraph": False,
        "backend_options": {},
    }  # no plan file may hold it
    run = tmp_path / "runs" / "a"
    run.mkdir(parents=True)
    (run / "events.jsonl").write_text(dumps(with_envelope(finish(events))), encoding="utf-8")
    build_site([tmp_path / "runs"], tmp_path / "site")
    page = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert "<img src=x" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    assert (
        "plan-check cannot review the logged plan" in page
        and "&lt;b&gt;no-such-mode" in page
        and "<b>no-such" not in page
    )


def test_a_plan_that_names_its_target_by_an_alias_shares_the_backends_history(tmp_path: Path) -> None:
    """Two runs (hand-built, marked measured) of one workload on neuron-native, one planned for "trainium" (an alias in
    neuron's backend descriptor) and one for "neuron": one history on neuron, the alias still named
    on the run the plan named it for, and the workload counted as run on its target."""
    for name, target, stamp in (("a", "trainium", "2026-12-01T00:00:00Z"), ("b", "neuron", "2026-12-02T00:00:00Z")):
        events = _measured(base_events(target=target, family="neuron-native"))
        events[0]["run_id"] = f"synthetic-alias-{name}"
        events[0]["workload"] = "alias-workload"
        events[0]["started_at"] = stamp
        plan = next(e for e in events if e["kind"] == "plan")
        plan["workload"], plan["intended_target"] = "alias-workload", target
        run = tmp_path / "runs" / name
        run.mkdir(parents=True)
        (run / "events.jsonl").write_text(dumps(with_envelope(finish(events))), encoding="utf-8")
    build_site([tmp_path / "runs"], tmp_path / "site")
    (page,) = (tmp_path / "site" / "workloads").glob("*/index.html")
    text = _text(page.read_text(encoding="utf-8"))
    assert "2 runs on 1 target(s)" in text and "On neuron " in text, text
    assert "trainium (ran on" not in text and "planned for trainium" in text
    assert (
        "not evidence for trainium" not in text
        and "(on neuron: evidence for trainium; adapter untried on hardware; weights origin not recorded)" in text
    )
    index = _text((tmp_path / "site" / "index.html").read_text(encoding="utf-8"))
    assert "Runs per target: neuron 2 " in index and "a run exists" in index, index


def test_a_synthetic_fixture_is_no_run_on_any_target(tmp_path: Path) -> None:
    """Before: a synthetic fixture on neuron-native made the first line read 'Runs per target:
    neuron 1 ... every disposition here is for neuron', and its workload's row 'runs on it: 1, a
    run exists' in place of plan-check's verdict: a fixture presented as a run on the hardware."""
    for name, target, family in (("on-neuron", "neuron", "neuron-native"), ("on-cpu", "cpu", "cpu")):
        events = base_events(target=target, family=family)  # origin: synthetic
        events[0]["run_id"] = f"synthetic-{name}"
        plan = next(e for e in events if e["kind"] == "plan")
        plan["intended_target"] = "neuron"
        run = tmp_path / "runs" / name
        run.mkdir(parents=True)
        (run / "events.jsonl").write_text(dumps(with_envelope(finish(events))), encoding="utf-8")
    build_site([tmp_path / "runs"], tmp_path / "site")
    page = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    first = _text(page[page.index('id="per-target"') : page.index("</p>", page.index('id="per-target"'))])
    assert (
        "Runs per target: neuron 0 · cuda 0 · cpu 0. Not counted: 2 synthetic fixtures, evidence of nothing." in first
    )
    assert "No runs yet: nothing here is evidence for any target." in first
    table = _text(
        page[page.index('<table class="workloads">') : page.index("</table>", page.index('<table class="workloads">'))]
    )
    assert " neuron 0 " in table and "a run exists" not in table and "(on neuron)" in table


def test_the_tallies_count_measured_runs_and_set_synthetic_fixtures_apart(tmp_path: Path) -> None:
    # Before: the runs per target left the synthetic fixtures out but the disposition and cell
    # tallies counted them, so "suitable" held fixtures that are evidence of nothing.
    runs = tmp_path / "runs"
    (runs / "fixture").mkdir(parents=True)
    (runs / "fixture" / "events.jsonl").write_bytes(
        (REPO / "tests" / "fixtures" / "synthetic_complete.jsonl").read_bytes()
    )
    real = "tiny-encoder-cpu-20261202T053312Z-ecd07d"
    (runs / real).mkdir()
    (runs / real / "events.jsonl").write_bytes((REPO / "sample_runs" / real / "events.jsonl").read_bytes())
    build_site([runs], tmp_path / "site")
    text = re.sub(
        r"\s+",
        " ",
        html.unescape(re.sub(r"<[^>]+>", " ", (tmp_path / "site" / "index.html").read_text(encoding="utf-8"))),
    )
    measured = judge_log(runs / real / "events.jsonl")
    outcome = {"suitable": "suitable", "change": "requires a change", "blocked": "blocked"}[
        measured.disposition.outcome
    ]
    assert "Dispositions (1 synthetic fixture not counted): " in text
    assert f"{outcome}: 1" in text.split("Dispositions")[1].split("Cells over")[0]
    passed = measured.run.counts()["pass"]
    assert f"Cells over all runs (1 synthetic fixture not counted): ✔ pass: {passed} " in text
