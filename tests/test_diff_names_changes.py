"""A comparison names everything that changed (criteria, versions, code and data, host) before it
says fixed, faster or slower (review 3: findings 2, 3, 5, 6, 7, 8 and 13)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from reportgen.cli import main
from reportgen.publish.diff import diff_runs, format_diff
from reportgen.publish.site import build_site
from reportgen.publish.summary import summarize
from reportgen.render.report import judge_log
from tests.logbuilder import base_events, dumps, finish, timing_log, with_envelope
from tests.test_run_changes import BIG_COMPILED, SAMPLES, Events, _mismatch, _write

RUNNER = CliRunner()


def _env(events: Events) -> dict[str, Any]:
    return next(e for e in events if e["kind"] == "environment")


def _fix_pair(tmp_path: Path) -> tuple[Path, Path]:
    """Before: one cell mismatches on torch 2.13.0. After: torch 2.14.0 and the cell passes."""
    before = base_events()
    _mismatch(before, BIG_COMPILED)
    after = base_events()
    _env(after)["versions"]["torch"] = {"value": "2.14.0", "source": "torch.__version__"}
    return _write(tmp_path / "runs" / "before", before, "fix-before"), _write(
        tmp_path / "runs" / "after", after, "fix-after", "2026-01-02T00:00:00Z"
    )


def _diff(before: Path, after: Path, *options: str) -> str:
    result = RUNNER.invoke(main, ["diff", str(before), str(after), *options])
    assert result.exit_code == 0, result.output
    return result.output


def test_diff_names_version_changes_before_it_says_fixed(tmp_path: Path) -> None:
    before, after = _fix_pair(tmp_path)
    text = _diff(before, after)
    assert "  torch: 2.13.0 -> 2.14.0" in text and "fixed: 1" in text
    assert text.index("version changes: 1") < text.index("code and data changes") < text.index("new failures")
    assert text.index("version changes: 1") < text.index("fixed: 1")
    md = _diff(before, after, "--format", "md")
    assert md.index("**Versions changed (1):**") < md.index("| fixed | 1 |") < md.index("Fixed (1)")
    assert md.index("**Code and data:** none changed but the versions above.") < md.index("| new failures |")


def _timed(tmp_path: Path, name: str, scale: float, seed: int) -> Path:
    path = tmp_path / name / "events.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(dumps(timing_log(f"synthetic-{name}", scale=scale, seed=seed)), encoding="utf-8")
    return path


def test_the_geometric_mean_interval_reads_in_the_direction_of_its_headline(tmp_path: Path) -> None:
    before, after = _timed(tmp_path, "a", 1.0, 1), _timed(tmp_path, "b", 0.6, 2)
    line = next(x for x in _diff(before, after).splitlines() if x.startswith("geometric mean:"))
    found = re.match(r"geometric mean: ([\d.]+)x faster \(95% interval ([\d.]+)x to ([\d.]+)x faster\)", line)
    assert found is not None, line
    point, low, high = (float(g) for g in found.groups())
    assert 1 < low <= point <= high, line


def _measured(events: Events) -> Events:
    """The same fixture marked as a measurement, so that only the other side is synthetic."""
    events[0].update(origin="measured")
    events[0].pop("origin_note", None)
    return events


def test_the_first_line_of_diff_and_the_compare_headline_name_a_synthetic_side(tmp_path: Path) -> None:
    before = _write(tmp_path / "m", _measured(base_events()), "measured-run")
    after = _write(tmp_path / "s", base_events(), "synthetic-run", "2026-01-02T00:00:00Z")
    first = _diff(before, after).splitlines()[0]
    assert (
        "synthetic fixture on the after side (synthetic-run)" in first
        and "synthetic fixture on the before" not in first
    )
    # The measured side's log (schema 1.0) does not say where its weights come from: named too.
    assert first.endswith("[weights origin not recorded on the before side (measured-run)]"), first
    assert "synthetic fixture on the after side" in _diff(before, after, "--format", "md").splitlines()[0]
    data = json.loads(_diff(before, after, "--format", "json"))
    assert data["synthetic"] == {"after": ["synthetic-run"]} and "evidence of nothing" in data["synthetic_note"]
    again = _write(tmp_path / "m2", _redrawn(_measured(base_events())), "m2")
    assert "synthetic" not in _diff(before, again).splitlines()[0]
    result = RUNNER.invoke(main, ["compare", str(before), str(after), "--out", str(tmp_path / "cmp")])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0].startswith("Synthetic fixture on the candidate, not a measurement")


def _plan_of(events: Events) -> dict[str, Any]:
    return next(e for e in events if e["kind"] == "plan")


def _swap_mode(plan: dict[str, Any]) -> None:
    """One planned cell keeps its case key but is planned in the other mode."""
    cell = plan["matrix"][0]
    cell["mode"] = "compiled" if cell["mode"] == "eager" else "eager"


def _keyed_apart(events: Events) -> Events:
    """The first planned cell under a key in another collector's form (the collector's own form
    names the mode, and a log whose key names another mode than its cell's is refused)."""
    old = _plan_of(events)["matrix"][0]["case"]
    for event in events:
        if event.get("case") == old:
            event["case"] = "first-cell"
    _plan_of(events)["matrix"][0]["case"] = "first-cell"
    return events


DECLARATIONS = {
    "compile_options": lambda p: p.update(
        compile_options={"dynamic": True, "mode": "max-autotune", "fullgraph": False, "backend_options": {}}
    ),
    "model_revision": lambda p: p.update(model_revision="tiny-encoder v2 (4 layers)"),
    "padding": lambda p: p.update(padding={"buckets": [16, 32, 64], "above_largest": "truncate"}),
    "declared_inputs": lambda p: p.update(declared_inputs={"input_ids": {"dtype": "int64", "layout": "noncontiguous"}}),
    "attention_path": lambda p: p.update(attention_path="math SDPA"),
    "remeasure_rounds": lambda p: p.update(remeasure_rounds=0),
    "matrix": _swap_mode,
}


@pytest.mark.parametrize("key", sorted(DECLARATIONS))
def test_each_declared_condition_is_named_and_replicates_must_agree(tmp_path: Path, key: str) -> None:
    keyed = _keyed_apart if key == "matrix" else (lambda events: events)
    before = keyed(base_events())
    after = keyed(base_events())
    DECLARATIONS[key](_plan_of(after))
    a = _write(tmp_path / "a", before, "run-a")
    b = _write(tmp_path / "b", after, "run-b", "2026-01-02T00:00:00Z")
    diff = diff_runs(summarize(judge_log(a)), summarize(judge_log(b)))
    # The swapped cell keeps its events (an eager first call under a compiled plan), so where the
    # compiled cells were measured is named as changed too.
    derived = {"compiled_measurement"} if key == "matrix" else set()
    assert [c.key for c in diff.criteria if c.key not in derived] == [key]
    text = format_diff(diff)
    assert text.index(diff.criteria[0].text) < text.index("fixed:")
    c = _write(tmp_path / "c", keyed(base_events()), "run-c", "2026-01-03T00:00:00Z")
    refused = RUNNER.invoke(main, ["diff", "--before", str(a), "--before", str(b), "--after", str(c)])
    assert refused.exit_code == 2 and "run-b is no replicate of run-a" in refused.output


def test_compare_names_changed_compile_options_before_its_answer(tmp_path: Path) -> None:
    after = base_events()
    DECLARATIONS["compile_options"](_plan_of(after))
    a = _write(tmp_path / "a", base_events(), "run-a")
    b = _write(tmp_path / "b", after, "run-b", "2026-01-02T00:00:00Z")
    out = ["--out", str(tmp_path / "cmp"), "--format", "html,md,json"]
    result = RUNNER.invoke(main, ["compare", str(a), str(b), *out])
    assert result.exit_code == 0, result.output
    assert "; 1 criterion declared differently (listed first)" in result.output.splitlines()[0]
    data = json.loads((tmp_path / "cmp" / "compare.json").read_text(encoding="utf-8"))
    assert any("compile options now dynamic true, mode max-autotune" in c["text"] for c in data["criteria"])


def _hosted(events: Events, threads: str, load: str) -> Events:
    """Every timing event read its host: ``threads`` torch threads at load average ``load``."""
    for timing in (e for e in events if e["kind"] == "timing"):
        timing["host"] = {
            "torch_threads": {"value": threads, "source": "torch.get_num_threads"},
            "cpu_affinity": {"value": "0-1", "source": "os.sched_getaffinity"},
            "load_avg_before": {"value": f"{load} 1.00 1.00", "source": "/proc/loadavg"},
            "load_avg_after": {"value": f"{load} 1.00 1.00", "source": "/proc/loadavg"},
        }
    return events


def _host_pair(tmp_path: Path, threads: str, load: str, device: str = "Intel Xeon") -> tuple[Path, Path]:
    before = _hosted(_measured(base_events()), "2 intra-op, 2 inter-op", "3.60")
    after = _hosted(_redrawn(_measured(base_events())), threads, load)
    _env(after)["env_vars"] = {"OMP_NUM_THREADS": "1"}
    _env(after)["device"]["device_name"] = {"value": device, "source": "/proc/cpuinfo"}
    return _write(tmp_path / "a", before, "host-a"), _write(tmp_path / "b", after, "host-b", "2026-01-02T00:00:00Z")


def test_a_changed_thread_count_is_named_first_and_flags_every_ratio(tmp_path: Path) -> None:
    a, b = _host_pair(tmp_path, "1 intra-op, 1 inter-op", "3.60")
    diff = diff_runs(summarize(judge_log(a)), summarize(judge_log(b)))
    assert diff.host[0] == ("torch threads", "2 intra-op, 2 inter-op", "1 intra-op, 1 inter-op")
    assert {key for key, _, _ in diff.host} == {"torch threads", "device name", "environment variable OMP_NUM_THREADS"}
    assert diff.timings and all("host changed: torch threads 2 intra-op" in " ".join(t.flags) for t in diff.timings)
    assert diff.geomean is None and not any(diff.verdict_counts().values())
    # No cell reads faster or slower beside its flag: only the interval's figures are shown.
    assert {t.verdict for t in diff.timings} <= {"no verdict: flagged", "no verdict: unstable timing"}, diff.timings
    assert "no verdict: flagged" in {t.verdict for t in diff.timings}
    text = format_diff(diff)
    assert text.index("host changes: 3") < text.index("fixed:") < text.index("timing (")
    assert "  environment variable OMP_NUM_THREADS: not recorded -> 1" in text
    md = _diff(a, b, "--format", "md")
    assert md.index("**Host facts recorded differently (3):**") < md.index("| fixed |")


def test_threads_changed_in_a_middle_cell_only_are_named_and_flag_that_cell(tmp_path: Path) -> None:
    """Before: the host facts were read from the first and the last timed cell only, as if set
    once per process; but the collector runs each compiled cell in a fresh process, so threads
    (or affinity, a clock reading) changed in the cells between read 'host changes: 0', then
    'slower', in diff, compare and the history alike. The settings are compared cell by cell:
    the cell whose threads changed is flagged, the others keep their verdicts."""
    before = _hosted(_measured(base_events()), "2 intra-op, 2 inter-op", "3.60")
    after = _hosted(_redrawn(_measured(base_events())), "2 intra-op, 2 inter-op", "3.60")
    timed = [e for e in after if e["kind"] == "timing" and e.get("warm")]
    assert len(timed) >= 3
    timed[1]["host"]["torch_threads"]["value"] = "1 intra-op, 1 inter-op"
    timed[2]["host"]["load_avg_after"]["value"] = "9.50 1.00 1.00"
    a, b = _write(tmp_path / "a", before, "mid-a"), _write(tmp_path / "b", after, "mid-b", "2026-01-02T00:00:00Z")
    diff = diff_runs(summarize(judge_log(a)), summarize(judge_log(b)))
    assert diff.host[0] == (
        "torch threads",
        "2 intra-op, 2 inter-op",
        f"2 intra-op, 2 inter-op (3 cells); 1 intra-op, 1 inter-op ({timed[1]['case']})",
    )
    assert ("load average (1 min) around the warm loops", "3.60 to 3.60", "3.60 to 9.50") in diff.host
    flagged = {t.case for t in diff.timings if "host changed: torch threads" in " ".join(t.flags)}
    assert flagged == {timed[1]["case"]} and len(diff.timings) > 1
    result = RUNNER.invoke(main, ["compare", str(a), str(b), "--out", str(tmp_path / "cmp"), "--format", "json"])
    assert result.exit_code == 0, result.output
    # Named first, after the one fact these logs do not hold (no CPU wait read around the loops).
    first = result.output.splitlines()[0]
    # (These logs, schema 1.0, say nothing of where their weights come from: named first.)
    assert first.startswith(
        "Weights origin not recorded on the candidate and baseline; "
        "time the threads waited for a CPU not recorded on the baseline and candidate: "
    ), first
    assert "; 2 host changes (listed first); " in first, result.output


def _redrawn(events: Events, factor: float = 1.01) -> Events:
    """Every warm series drawn again (each sample times ``factor``): a measurement of its own."""
    for warm in (e["warm"] for e in events if e["kind"] == "timing" and e.get("warm")):
        warm["samples_s"] = [s * factor for s in warm["samples_s"]]
        for key in ("min_s", "median_s", "p90_s", "iqr_s"):
            warm[key] *= factor
    return events


def test_a_copy_of_a_run_under_another_id_is_no_replicate(tmp_path: Path) -> None:
    """Before: a run copied under a new run id was taken as a further replicate: '2 runs against
    2: between-run and within-run variation', an interval narrowed by no new measurement."""
    first = _write(tmp_path / "a", _measured(base_events()), "orig-a")
    copy = _write(tmp_path / "b", _measured(base_events()), "copy-b")
    other = _write(tmp_path / "c", _redrawn(_measured(base_events()), 1.2), "later-c", "2026-01-02T00:00:00Z")
    why = "copy-b holds the same warm samples as orig-a in every one of its 4 timed cells"
    refused = RUNNER.invoke(main, ["diff", "--before", str(first), "--before", str(copy), "--after", str(other)])
    assert refused.exit_code == 2 and why in refused.output, refused.output
    out = ["--out", str(tmp_path / "cmp"), "--format", "json"]
    refused = RUNNER.invoke(
        main, ["compare", "--baseline", str(first), "--baseline", str(copy), "--candidate", str(other), *out]
    )
    assert refused.exit_code == 2 and why in refused.output, refused.output
    # A copy with one cell's series edited got past a check of every cell at once.
    edited = _measured(base_events())
    warm = next(e for e in edited if e["kind"] == "timing")["warm"]
    warm["samples_s"] = [s * 1.001 for s in warm["samples_s"]]
    for key in ("min_s", "median_s", "p90_s", "iqr_s"):
        warm[key] *= 1.001
    edited_run = _write(tmp_path / "e", edited, "edited-e")
    refused = RUNNER.invoke(main, ["diff", "--before", str(first), "--before", str(edited_run), "--after", str(other)])
    assert refused.exit_code == 2 and "edited-e holds the same warm samples as orig-a in 3 of its 4 timed cells (" in (
        refused.output
    ), refused.output
    # A copy written again with its samples rounded to 7 significant digits got past a check of
    # equal samples: 'between-run variation' from one measurement, and speed gated on it.
    rounded = _measured(base_events())
    for warm in (e["warm"] for e in rounded if e["kind"] == "timing" and e.get("warm")):
        warm["samples_s"] = [float(f"{s:.7g}") for s in warm["samples_s"]]
    rounded_run = _write(tmp_path / "r", rounded, "rounded-r")
    refused = RUNNER.invoke(main, ["diff", "--before", str(first), "--before", str(rounded_run), "--after", str(other)])
    assert refused.exit_code == 2 and "rounded-r holds the same warm samples as orig-a in " in refused.output, (
        refused.output
    )
    assert "each within 1e-05 of the other's" in refused.output
    redrawn = _write(tmp_path / "d", _redrawn(_measured(base_events())), "redrawn-d")
    taken = RUNNER.invoke(main, ["diff", "--before", str(first), "--before", str(redrawn), "--after", str(other)])
    assert taken.exit_code == 0 and "2 runs against 1" in taken.output, taken.output


def test_a_replicate_on_another_host_setting_is_refused_and_one_at_another_load_is_not(tmp_path: Path) -> None:
    """Before: a replicate whose environment variables (here OMP_NUM_THREADS) or device differed
    from its side's first run was folded into that side's interval, and no page named how it
    differed; only threads, affinity and versions were checked. A load average is a reading that
    varies from run to run: such a replicate is taken."""
    first = _write(tmp_path / "a", _hosted(_measured(base_events()), "2 intra-op, 2 inter-op", "3.60"), "rep-a")
    other = _write(
        tmp_path / "c", _hosted(_redrawn(_measured(base_events()), 0.99), "2 intra-op, 2 inter-op", "3.60"), "rep-c"
    )
    loaded = _write(
        tmp_path / "d", _redrawn(_hosted(_measured(base_events()), "2 intra-op, 2 inter-op", "9.00")), "rep-d"
    )
    events = _hosted(_measured(base_events()), "2 intra-op, 2 inter-op", "3.60")
    _env(events)["env_vars"] = {"OMP_NUM_THREADS": "1"}
    env = _write(tmp_path / "b", events, "rep-b")
    refused = RUNNER.invoke(main, ["diff", "--before", str(first), "--before", str(env), "--after", str(other)])
    assert refused.exit_code == 2, refused.output
    assert "rep-b is no replicate of rep-a: environment variable OMP_NUM_THREADS not recorded -> 1" in refused.output
    taken = RUNNER.invoke(main, ["diff", "--before", str(first), "--before", str(loaded), "--after", str(other)])
    assert taken.exit_code == 0 and "2 runs against 1" in taken.output, taken.output
    out = ["--out", str(tmp_path / "cmp"), "--format", "json"]
    sides = ["--baseline", str(other), "--candidate", str(first), "--candidate"]
    refused = RUNNER.invoke(main, ["compare", *sides, str(env), *out])
    assert refused.exit_code == 2 and "rep-b is no replicate of rep-a: environment variable" in refused.output
    assert RUNNER.invoke(main, ["compare", *sides, str(loaded), *out]).exit_code == 0


def test_a_changed_timing_scope_flags_the_ratios_and_one_cell_timed_otherwise_is_refused(tmp_path: Path) -> None:
    """Before: a cell's timing scope was the one of its last timing event, and a cell whose warm
    samples were timed with host-to-device copies read '1.5x slower' with no flag. The collector
    times every call over the plan's scope (collector/timing.py), so one cell timed over other
    stages than its plan's contradicts its log (refused); a plan whose scope changed flags every
    ratio, in diff and compare alike."""
    sample = Path(__file__).resolve().parents[1] / "sample_runs" / "tiny-encoder-cpu-20261202T053312Z-ecd07d"
    before = [json.loads(line) for line in (sample / "events.jsonl").read_text(encoding="utf-8").splitlines()]
    case = "b1-l16-contiguous-float32-eager"

    def write(events: Events, run_id: str) -> Path:
        path = tmp_path / f"{run_id}.jsonl"
        for event in (e for e in events if "run_id" in e):
            event["run_id"] = run_id
        path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
        return path

    one = _redrawn(json.loads(json.dumps(before)), 0.99)  # another measurement, not a copy
    for event in (e for e in one if e["kind"] == "timing" and e["case"] == case and e.get("warm")):
        event["scope"]["host_to_device"] = True
        event["timed_region"] = ["host_to_device", "model_call"]  # the scope is the region's
    a, b = write(before, "scope-a"), write(one, "scope-one")
    refused = RUNNER.invoke(main, ["diff", str(a), str(b)])
    assert refused.exit_code == 1 and "but the plan's timing_scope.host_to_device is false" in refused.output

    every = _redrawn(json.loads(json.dumps(before)), 0.99)
    next(e for e in every if e["kind"] == "plan")["timing_scope"]["host_to_device"] = True
    for event in (e for e in every if e["kind"] == "timing" and e.get("timed_region")):
        event["scope"]["host_to_device"] = True
        assert event["timed_region"] == ["model_call"], event["timed_region"]
        event["timed_region"] = ["host_to_device", "model_call"]
    b = write(every, "scope-every")
    diff = json.loads(_diff(a, b, "--format", "json"))
    flags = {t["case"]: t["flags"] for t in diff["timings"]}
    assert flags and all(any(f.startswith("different timing scope") for f in f_) for f_ in flags.values()), flags
    out = tmp_path / "cmp"
    assert RUNNER.invoke(main, ["compare", str(a), str(b), "--out", str(out), "--format", "json"]).exit_code == 0
    cell = next(c for c in json.loads((out / "compare.json").read_text(encoding="utf-8"))["cells"] if c["case"] == case)
    assert any("timing scope" in f for f in cell["timing"]["flags"]), cell["timing"]


def test_two_logs_that_kept_no_host_around_their_warm_loops_are_no_unchanged_host(tmp_path: Path) -> None:
    """Before: two logs whose collector read no threads, affinity or load (schema 1.0 and 1.1)
    read 'host changes: 0' in diff and 'Host facts: the same on both runs' in compare, because
    their device name (the one host fact they kept) was the same; then '2.74x slower'."""
    old, new = (
        SAMPLES / "tiny-encoder-cpu-20261129T225221Z-23a8e6",
        SAMPLES / "tiny-encoder-cpu-20261130T101022Z-393b16",
    )
    text = _diff(old, new)
    assert "host changes: not known (threads, CPU affinity and load around the warm loops not recorded" in text
    assert "host changes: 0" not in text
    out = tmp_path / "cmp"
    assert RUNNER.invoke(main, ["compare", str(old), str(new), "--out", str(out), "--format", "md,json"]).exit_code == 0
    assert "**Host facts:** not known: threads, CPU affinity" in (out / "compare.md").read_text(encoding="utf-8")
    data = json.loads((out / "compare.json").read_text(encoding="utf-8"))
    assert data["host_unknown"].startswith("threads, CPU affinity and load around the warm loops not recorded")


def test_a_cell_judged_against_a_reference_computed_otherwise_is_no_fix(tmp_path: Path) -> None:
    """Before: a run whose reference for one shape was computed in bfloat16 (the plan still
    declaring float32) turned a mismatch into 'fixed: 1' with nothing named, and compare said
    'both runs declared the same' and 'all correct on both', naming it only in its references
    table. The reference as computed is a criterion: named first, and a pass under it is no fix."""
    before = base_events()
    _mismatch(before, BIG_COMPILED)
    after = base_events()
    reference = next(e for e in after if e["kind"] == "reference" and e["shape"].startswith("b2-"))
    reference["dtype"] = "bfloat16"
    a = _write(tmp_path / "a", before, "ref-a")
    b = _write(tmp_path / "b", after, "ref-b", "2026-01-02T00:00:00Z")
    text = _diff(a, b)
    # (one shape of two: the tie is written alphabetically first, the other shape by name)
    changed = "reference as computed now cpu bfloat16, but cpu float32 for b1-l16-contiguous-float32 (was cpu float32)"
    assert f"criteria changes: 1 (read every result below against them)\n  {changed}" in text, text
    assert "fixed: 0" in text and "passes under a changed criterion (not fixed): 1" in text
    out = ["--out", str(tmp_path / "cmp"), "--format", "json"]
    result = RUNNER.invoke(main, ["compare", str(a), str(b), *out])
    first = result.output.splitlines()[0]
    assert "; 1 criterion declared differently (listed first);" in first and first.index("criterion") < first.index(
        "correct on both"
    ), first


def test_another_model_revision_is_no_fix_and_no_timing_as_compare_refuses_it(tmp_path: Path) -> None:
    """Before: with the plan's model revision changed, compare refused the pair ('different model
    revisions') while diff named the revision and went on to 'fixed: 1', '4 slower' and a
    geometric mean of another model's timings."""
    before = base_events()
    _mismatch(before, BIG_COMPILED)
    after = base_events()
    _plan_of(after)["model_revision"] = "tiny-encoder v2 (4 layers)"
    a = _write(tmp_path / "a", before, "rev-a")
    b = _write(tmp_path / "b", after, "rev-b", "2026-01-02T00:00:00Z")
    data = json.loads(_diff(a, b, "--format", "json"))
    assert [c["key"] for c in data["changed_criterion"]] == [] and data["fixed"] == []
    assert [row[0] for row in data["other_values_pass"]] == [BIG_COMPILED]
    assert data["timings"] == [] and data["geomean"] is None
    assert all(why.startswith("model revision now tiny-encoder v2") for _, why in data["values_differ"])
    refused = RUNNER.invoke(main, ["compare", str(a), str(b), "--out", str(tmp_path / "cmp")])
    assert refused.exit_code == 2 and "different model revisions" in refused.output


def test_an_incomplete_run_is_said_first_by_diff(tmp_path: Path) -> None:
    """Before: a run cut off before its run_end (a crash) read only as cells 'pass -> untested'
    in diff, while compare said the run is incomplete."""
    a = _write(tmp_path / "a", base_events(), "whole-a")
    b = _write(tmp_path / "b", base_events(), "cut-b", "2026-01-02T00:00:00Z")
    lines = b.read_text(encoding="utf-8").splitlines(keepends=True)
    b.write_text("".join(lines[: len(lines) // 2]), encoding="utf-8")
    note = "incomplete run on the after side (cut-b): the log has no run_end (the run stopped early); its unrecorded cells are untested"
    assert _diff(a, b).splitlines()[1] == note
    escaped = note.replace("run_end", "run\\_end")  # as Markdown text
    assert f"> **Incomplete:** {escaped}." in _diff(a, b, "--format", "md")
    data = json.loads(_diff(a, b, "--format", "json"))
    assert data["incomplete"] == {"after": ["cut-b"]} and data["incomplete_note"] == note


def test_a_run_stopped_on_its_plan_is_named_so_by_diff(tmp_path: Path) -> None:
    """Before: a run the collector aborted on a plan error (its run_end names it) read 'it ended
    before its run_end' in diff and on the site's workload page, and the plan error went unsaid."""
    a = _write(tmp_path / "a", base_events(), "whole-a")
    events = [e for e in base_events() if e["kind"] not in ("case_result", "timing", "compile", "operators")]
    events[0].update(run_id="stopped-b", started_at="2026-01-02T00:00:00Z")
    why = "plan error: generation.top_k = 9 is at least the model's vocabulary (9 tokens)"
    b = tmp_path / "b" / "events.jsonl"
    b.parent.mkdir()
    b.write_text(dumps(with_envelope(finish(events, "aborted", why))), encoding="utf-8")
    text = _diff(a, b)
    assert (
        "incomplete run on the after side (stopped-b): the run was aborted: plan error: generation.top_k = 9 is at "
        "least the model's vocabulary (9 tokens); its unrecorded cells are untested"
    ) in text, text[:600]
    assert "ended before its run_end" not in text


def test_a_changed_load_average_is_named_and_does_not_flag(tmp_path: Path) -> None:
    a, b = _host_pair(tmp_path, "2 intra-op, 2 inter-op", "15.00", device="cpu")  # the same machine
    diff = diff_runs(summarize(judge_log(a)), summarize(judge_log(b)))
    assert ("load average (1 min) around the warm loops", "3.60 to 3.60", "15.00 to 15.00") in diff.host
    assert not any("host changed" in f for t in diff.timings for f in t.flags)


def test_a_load_average_that_is_no_number_is_not_named_as_one(tmp_path: Path) -> None:
    a, b = _host_pair(tmp_path, "2 intra-op, 2 inter-op", "nan")
    diff = diff_runs(summarize(judge_log(a)), summarize(judge_log(b)))
    assert ("load average (1 min) around the warm loops", "3.60 to 3.60", "not recorded") in diff.host


def test_the_history_names_host_changes_before_its_timing_line(tmp_path: Path) -> None:
    _host_pair(tmp_path / "runs", "1 intra-op, 1 inter-op", "3.60")
    build_site([tmp_path / "runs"], tmp_path / "site")
    page = next((tmp_path / "site" / "workloads").glob("*/index.html")).read_text(encoding="utf-8")
    latest = page[page.index("Latest run against the previous one") :]
    # These logs (schema 1.0) read no CPU wait around their loops: said beside the host changes.
    # The first two of each kind named (a reader of the line alone learns what changed).
    named = "changed first (3 host: torch threads, device name and 1 more; time the threads waited for a CPU not"
    named += " recorded on the before and after: contention not judged on either; named below)"
    assert latest.index(named) < latest.index("faster")
    row = re.search(r"<td>([^<]*geometric[^<]*|[^<]*changed first[^<]*)</td>", page)
    # A history row's cell counts them (named below it): a row of names would widen the table.
    counted = "changed first (3 host, time the threads waited for a CPU not recorded on the before and after: "
    counted += "contention not judged on either; named below)"
    assert row is not None and counted + ": " in row.group(1), row
    change = page[page.index("What changed between consecutive runs") :]
    assert change.index("Host facts recorded differently (3)") < change.index("Disposition:")


def test_compare_names_code_and_data_changes_before_its_answer(tmp_path: Path) -> None:
    from tests.test_provenance import FIXTURES, _with_provenance

    src = FIXTURES / "synthetic_complete.jsonl"
    a = _with_provenance(src, tmp_path / "a", "run-a", "a" * 64, "1" * 40, "c" * 64)
    b = _with_provenance(src, tmp_path / "b", "run-b", "d" * 64, "2" * 40, "c" * 64)
    out = ["--out", str(tmp_path / "cmp"), "--format", "html,md,json"]
    result = RUNNER.invoke(main, ["compare", str(a), str(b), *out])
    assert result.exit_code == 0, result.output
    assert "2 code and data changes (listed first)" in result.output.splitlines()[0]
    data = json.loads((tmp_path / "cmp" / "compare.json").read_text(encoding="utf-8"))
    assert sorted(data["code_and_data"]) == [
        ["collector git commit", "1" * 40, "2" * 40],
        ["workload module", "sha256 " + "a" * 64, "sha256 " + "d" * 64],
    ]
    md = (tmp_path / "cmp" / "compare.md").read_text(encoding="utf-8")
    assert md.index("**Code and data differ (2):**") < md.index("| workload module |") < md.index("## 2.")
    page = (tmp_path / "cmp" / "compare.html").read_text(encoding="utf-8")
    assert page.index("Code and data differ (2)") < page.index("workload module: sha256 " + "a" * 64)


def test_compare_names_a_changed_thread_count_and_flags_every_ratio(tmp_path: Path) -> None:
    a, b = _host_pair(tmp_path, "1 intra-op, 1 inter-op", "3.60")
    out = ["--out", str(tmp_path / "cmp"), "--format", "md,json"]
    result = RUNNER.invoke(main, ["compare", str(a), str(b), *out])
    assert result.exit_code == 0, result.output
    assert "3 host changes (listed first)" in result.output.splitlines()[0]
    data = json.loads((tmp_path / "cmp" / "compare.json").read_text(encoding="utf-8"))
    assert data["host"][0] == ["torch threads", "2 intra-op, 2 inter-op", "1 intra-op, 1 inter-op"]
    timed = [c["timing"] for c in data["cells"] if c["timing"] is not None]
    assert timed and all(any(f.startswith("host changed: torch threads") for f in t["flags"]) for t in timed)
    assert data["geomean"] is None
    # A flagged ratio says neither faster nor slower, per cell or in the counts.
    assert {t["verdict"] for t in timed} <= {"flagged, not judged", "unstable timing"}
    assert data["verdict_counts"]["flagged, not judged"] and not data["verdict_counts"]["slower"]
    md = (tmp_path / "cmp" / "compare.md").read_text(encoding="utf-8")
    assert (
        md.index("**Host facts differ (3):**")
        < md.index("environment variable OMP\\_NUM\\_THREADS")
        < md.index("## 2.")
    )


def test_host_facts_of_a_log_with_many_variables_are_bounded(tmp_path: Path) -> None:
    after = base_events()
    _env(after)["env_vars"] = {f"VAR_{n:04d}": "x" * (500 if n == 0 else 1) for n in range(150)}
    a = _write(tmp_path / "a", base_events(), "run-a")
    b = _write(tmp_path / "b", after, "run-b", "2026-01-02T00:00:00Z")
    diff = diff_runs(summarize(judge_log(a)), summarize(judge_log(b)))
    named = [key for key, _, _ in diff.host if key.startswith("environment variable")]
    assert len(named) == 101 and "environment variables (all 150; the first 100 by name listed)" in named
    long = dict((key, after) for key, _, after in diff.host)["environment variable VAR_0000"]
    assert long.startswith("500 characters, sha256 ")


def test_a_cell_untested_before_that_passes_now_is_no_fix(tmp_path: Path) -> None:
    """Before: against a run that stopped early (its log cut after two cells), each cell it never
    recorded that passed afterwards was listed under 'fixed' (untested -> pass), though none had
    failed."""
    from tests.logbuilder import incomplete_log

    cut = tmp_path / "cut" / "events.jsonl"
    cut.parent.mkdir()
    cut.write_text(dumps(incomplete_log()), encoding="utf-8")
    after = _timed(tmp_path, "after", 1.0, 2)
    data = json.loads(_diff(cut, after, "--format", "json"))
    assert data["fixed"] == [] and data["new_failures"] == []
    untested = [c for c, old, new in data["other_changes"] if (old, new) == ("untested", "pass")]
    assert len(untested) == 2, data["other_changes"]  # the two cells the cut log never recorded
    text = _diff(cut, after)
    assert "fixed: 0" in text and "other status changes: 2" in text


def _clocked(tmp_path: Path, name: str, clock: str, scale: float, seed: int) -> Path:
    """A measured-looking CUDA timing run whose timing events record the GPU's SM clock (as
    collector/backends/cuda.py reads it around each warm loop); everything else alike."""
    events = timing_log(f"clock-{name}", target="cuda", family="cuda", scale=scale, seed=seed)
    events[0].update(origin="measured", started_at=f"2026-01-0{seed}T00:00:00Z")
    events[0].pop("origin_note", None)
    for timing in (e for e in events if e["kind"] == "timing"):
        timing["host"] = {
            f"gpu_sm_clock_mhz_{when}": {"value": clock, "source": "nvidia-smi"} for when in ("before", "after")
        }
    path = tmp_path / name / "events.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(dumps(events), encoding="utf-8")
    return path


def test_a_changed_gpu_clock_is_named_before_any_speed_word(tmp_path: Path) -> None:
    """Before: the GPU SM clock the collector reads around each warm loop was compared by no page,
    so a run whose clock had halved read 'host changes: 0' and then '4 slower'."""
    a, b = _clocked(tmp_path, "a", "1980", 1.0, 1), _clocked(tmp_path, "b", "1005", 1.3, 2)
    named = ("GPU SM clock (MHz) around the warm loops", "1980 to 1980", "1005 to 1005")
    text = _diff(a, b)
    assert "  GPU SM clock (MHz) around the warm loops: 1980 to 1980 -> 1005 to 1005" in text
    assert text.index("host changes: 1") < text.index("timing (") < text.index("slower")
    md = _diff(a, b, "--format", "md")
    assert md.index("**Host facts recorded differently (1):**") < md.index("GPU SM clock") < md.index("**Timing**")
    assert named in [tuple(h) for h in json.loads(_diff(a, b, "--format", "json"))["host"]]
    out = tmp_path / "cmp"
    result = RUNNER.invoke(main, ["compare", str(a), str(b), "--out", str(out), "--format", "html,md,json"])
    assert result.exit_code == 0, result.output
    first = result.output.splitlines()[0]
    assert first.startswith("Weights origin not recorded on the candidate and baseline; 1 host change (listed first)")
    assert first.index("host change") < first.index("slower")
    assert named in [tuple(h) for h in json.loads((out / "compare.json").read_text(encoding="utf-8"))["host"]]
    compare_md = (out / "compare.md").read_text(encoding="utf-8")
    assert compare_md.index("**Host facts differ (1):**") < compare_md.index("GPU SM clock") < compare_md.index("## 2.")
    page = (out / "compare.html").read_text(encoding="utf-8")
    assert page.index("1 host change (listed first)") < page.index("slower") < page.index("GPU SM clock (MHz)")


def _scoped(tmp_path: Path, name: str, day: int, h2d: bool) -> Path:
    """A synthetic timing run that times host-to-device copies or not (plan and timing events alike)."""
    events = timing_log(f"scope-{name}", scale=1.0 if not h2d else 1.3, seed=day)
    events[0]["started_at"] = f"2026-01-0{day}T00:00:00Z"
    for event in events:
        if event["kind"] == "plan":
            event["timing_scope"]["host_to_device"] = h2d
        elif event["kind"] == "timing":
            event["scope"]["host_to_device"] = h2d
    path = tmp_path / name / "events.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(dumps(events), encoding="utf-8")
    return path


def test_the_trend_lines_are_not_joined_across_a_changed_timing_scope(tmp_path: Path) -> None:
    """Three runs, the second and third timing host-to-device copies and the first not. Before:
    every trend line ran from the first run's point to the second's, a rise that read as a
    slowdown with no word of the changed scope; the run-to-run diff already flagged each ratio."""
    from reportgen.publish.site import _target_history
    from tests.chartsvg import chart_markup, parse_chart

    paths = [_scoped(tmp_path, "r1", 1, False), _scoped(tmp_path, "r2", 2, True), _scoped(tmp_path, "r3", 3, True)]
    runs = [summarize(judge_log(p)) for p in paths]
    diff = diff_runs(runs[0], runs[1])
    assert diff.timing_unlike == [f"changed criterion: {c.text}" for c in diff.criteria] and diff.timing_unlike
    assert diff_runs(runs[1], runs[2]).timing_unlike == []
    figures = {f.id.rsplit("-", 1)[1]: f for f in _target_history("cpu", runs)["figures"]}
    for key in ("warm", "cold"):
        figure = figures[key]
        assert "not joined to a run whose timings are not like-for-like" in figure.caption
        xs = sorted({round(p.x, 3) for s in figure.chart.series for p in s.points})
        assert len(xs) == 3, xs
        for series in figure.chart.series:
            spans = [(round(line[0][0], 3), round(line[-1][0], 3)) for line in series.lines]
            assert spans == [(xs[1], xs[2])], (key, series.name, spans)  # r2-r3 joined, r1 alone
            second = next(p for p in series.points if round(p.x, 3) == xs[1])
            assert "not joined to the run before it (changed criterion: timing scope now" in second.title
        parse_chart(chart_markup(figure))  # still draws
    # Without the change the lines run through all three runs, and the caption says nothing of it.
    same = [summarize(judge_log(_scoped(tmp_path, f"s{day}", day, True))) for day in (1, 2, 3)]
    warm = next(f for f in _target_history("cpu", same)["figures"] if f.id.endswith("-warm"))
    assert "not joined" not in warm.caption and all(
        len(s.lines) == 1 and len(s.lines[0]) == 3 for s in warm.chart.series
    )


def test_the_geometric_mean_trend_names_what_changed_before_its_ratio(tmp_path: Path) -> None:
    """Three runs, torch 2.14.0 from the second on, 1.3x slower then 0.7x. Before: the geometric
    mean chart's point for the second run said '1.299x over 4 cells' on hover with no word of the
    torch change, while the history's column beside it said 'changed first (1 versions; named
    below): 1.3x slower'."""
    from reportgen.publish.site import _target_history

    runs = []
    for day, scale, torch in ((1, 1.0, "2.13.0"), (2, 1.3, "2.14.0"), (3, 0.7, "2.14.0")):
        events = timing_log(f"synthetic-{day}", scale=scale, seed=day)
        events[0]["started_at"] = f"2026-01-0{day}T00:00:00Z"
        _env(events)["versions"]["torch"] = {"value": torch, "source": "torch.__version__"}
        path = tmp_path / str(day) / "events.jsonl"
        path.parent.mkdir(parents=True)
        path.write_text(dumps(events), encoding="utf-8")
        runs.append(summarize(judge_log(path)))
    history = _target_history("cpu", runs)
    figure = next(f for f in history["figures"] if f.id.endswith("-trend-geomean"))
    second, third = (p.title for s in figure.chart.series for p in s.points)
    # These fixtures keep no threads or load around their warm loops: that is said too (the same
    # device name was read as an unchanged host).
    unknown = "threads, CPU affinity and load around the warm loops not recorded on the before and after"
    changed = f"changed first (1 version, {unknown}: a host change cannot be ruled out; named below): 1.3x over 4 cells"
    assert (
        second.startswith("2026-01-02 00:00:00: synthetic fixture on the before and after sides") and changed in second
    )
    assert f"changed first ({unknown}: a host change cannot be ruled out; named below): 0.538x over 4 cells" in third
    column = history["geomeans"][runs[1].run_id]
    assert column.index("changed first (1 version, threads") < column.index("1.3x slower"), column


def test_the_cold_and_compile_trends_are_not_joined_across_a_changed_cache_condition(tmp_path: Path) -> None:
    """Three runs; in the third the compiled cell's cold call found a persistent compile cache
    with entries and its compile hit the cache (0.3 s, against 5.5 s from an empty cache). Before:
    both trend lines ran from 5.5 s down to 0.3 s, a seventeen-fold drop with no word of the cache,
    where `reportgen compare` keeps cache misses and hits apart."""
    from reportgen.publish.site import _target_history

    compiled = "b2-l16-contiguous-float32-compiled"
    runs = []
    for day in (1, 2, 3):
        events = timing_log(f"synthetic-{day}", seed=day)
        events[0]["started_at"] = f"2026-01-0{day}T00:00:00Z"
        for event in events:
            if day == 3 and event.get("case") == compiled and event["kind"] == "timing" and event.get("cold"):
                event["cold"].update(cache_condition="persistent_cache", seconds=0.3)
            if day == 3 and event.get("case") == compiled and event["kind"] == "compile":
                event.update(
                    compile_first_result_s=0.3, cache_hits=5, cache_misses=0, cache_condition="persistent_cache"
                )
        path = tmp_path / str(day) / "events.jsonl"
        path.parent.mkdir(parents=True)
        path.write_text(dumps(events), encoding="utf-8")
        runs.append(summarize(judge_log(path)))
    figures = {f.id.rsplit("-", 1)[1]: f for f in _target_history("cpu", runs)["figures"]}
    for key, why in (
        ("cold", "cache condition fresh process, empty compile cache, then persistent compile cache with entries"),
        ("compile", "cache miss, then cache hit"),
    ):
        figure = figures[key]
        assert "not joined to a run whose cache condition differs" in figure.caption, figure.caption
        xs = sorted({round(p.x, 3) for s in figure.chart.series for p in s.points})
        for series in (s for s in figure.chart.series if s.points):  # an eager cell has no compile
            spans = [(round(line[0][0], 3), round(line[-1][0], 3)) for line in series.lines]
            if series.points[0].title.startswith(f"{compiled}:"):
                assert spans == [(xs[0], xs[1])], (key, spans)  # the third run stands alone
                third = next(p for p in series.points if round(p.x, 3) == xs[2])
                assert third.title.endswith(f"not joined to the run before it ({why})"), third.title
            else:
                assert spans == [(xs[0], xs[2])], (key, series.name, spans)


@pytest.mark.parametrize(
    "other",
    [
        {"installer": "conda"},
        {"wheel_tags": ["cp311-cp311-linux_x86_64"]},
        {"source_url": "file:///home/me/torch-2.13.0-local.whl"},
    ],
    ids=["installer", "wheel", "local-file"],
)
def test_another_build_of_torch_under_the_same_version_is_named(tmp_path: Path, other: dict[str, Any]) -> None:
    """A torch from another installer, wheel or local file under the same version string read
    'no criteria, versions, code, data or host changed; 14 faster'."""
    built = {
        "name": "torch",
        "version": "2.13.0",
        "installer": "pip",
        "wheel_tags": ["cp311-cp311-manylinux_2_28_x86_64"],
        "source_url": None,
    }
    pair = [timing_log("synthetic-before", seed=0), timing_log("synthetic-after", scale=0.5, seed=1)]
    for events, artifact in zip(pair, (built, {**built, **other})):
        _env(events)["artifacts"] = [artifact]
    paths = _write_pair(tmp_path, *pair)
    text = _diff(*paths)
    (line,) = [line for line in text.splitlines() if line.strip().startswith("installed torch:")]
    assert "host changes: 1" in text and text.index("host changes: 1") < text.index("timing (")
    assert "2.13.0 via pip" in line and "->" in line


def _write_pair(tmp_path: Path, before: Events, after: Events) -> list[Path]:
    """The two logs as TMP/before/events.jsonl and TMP/after/events.jsonl."""
    paths = []
    for name, events in (("before", before), ("after", after)):
        path = tmp_path / name / "events.jsonl"
        path.parent.mkdir(parents=True)
        path.write_text(dumps(events), encoding="utf-8")
        paths.append(path)
    return paths


def _plan(events: Events) -> dict[str, Any]:
    return next(e for e in events if e["kind"] == "plan")


def test_a_generation_plans_settings_are_criteria_named_before_any_result(tmp_path: Path) -> None:
    """The top-k overlap threshold and the request a decode timing measured (cache length,
    decode steps) were never compared: a threshold lowered after results turned mismatches
    into 'fixed: 5' under 'Criteria: none changed', and a decode of another request read
    faster or slower."""
    from tests.logbuilder import generation_timing_log

    before, after = generation_timing_log("gen-before", seed=1), generation_timing_log("gen-after", scale=0.5, seed=2)
    _plan(after)["generation"].update(min_top_k_overlap=0.7, max_cache_len=1024)
    for event in after:  # the collector writes each generation event's cache length from the plan
        if event["kind"] == "generation":
            event["max_cache_len"] = 1024
    paths = _write_pair(tmp_path, before, after)
    data = json.loads(_diff(*paths, "--json"))
    keys = {c["key"]: c for c in data["criteria"]}
    assert keys["generation:judged"]["judges"] == "correctness" and "0.7" in keys["generation:judged"]["after"]
    assert keys["generation:request"]["judges"] == "timing" and "1024" in keys["generation:request"]["after"]
    assert data["timings"] and all(
        any(f.startswith("changed criterion: generation request") for f in t["flags"]) for t in data["timings"]
    )


def test_a_training_plans_optimizer_is_a_criterion_and_flags_its_step_timings(tmp_path: Path) -> None:
    from tests.logbuilder import training_log

    before, after = training_log(), training_log()
    after[0]["run_id"] = "training-after"
    _plan(after)["training"]["optimizer"] = "SGD(lr=1e-3)"
    paths = _write_pair(tmp_path, before, after)
    text = _diff(*paths)
    assert "training run judged now 3 steps from seed 0, SGD(lr=1e-3)" in text
    off = "deterministic variant: dropout off"
    assert f"training step timed now SGD(lr=1e-3), {off} (was AdamW(lr=1e-3), {off})" in text
    assert text.index("criteria changes: 2") < text.index("fixed:")
    # A review: dropout turned on changes the work each timed step does, and was named only among
    # the correctness criteria; the step timings read 'slower' unflagged. It flags them now.
    dropout = training_log()
    dropout[0]["run_id"] = "training-dropout"
    _plan(dropout)["training"]["randomness"] = "dropout p=0.1 on"
    text = _diff(*_write_pair(tmp_path / "dropout", before, dropout))
    assert "training step timed now AdamW(lr=1e-3), dropout p=0.1 on" in text
    assert "no verdict: flagged [changed criterion: training step timed now" in text, text


def test_a_collector_commit_unknown_in_both_runs_is_named_not_the_same(tmp_path: Path) -> None:
    """Two collectors copied, untracked, into other repositories each record their commit as
    unknown; the two unknowns compared equal, and diff said 'code and data changes: 0'."""
    unknown = {"unknown_reason": "the git checkout around the collector's folder does not track it"}
    pair = [timing_log(f"synthetic-{name}", seed=seed) for seed, name in enumerate(("before", "after"))]
    for events in pair:
        events[0]["provenance"] = {
            "collector_version": "0.6.0",
            "git_commit": unknown,
            "git_dirty": unknown,
            "files": [],
        }
    paths = _write_pair(tmp_path, *pair)
    text = _diff(*paths)
    assert "code and data changes: 1" in text
    assert "collector git commit (unknown in both runs: the same code cannot be told)" in text
    # Replicates of one side from such a collector are still one side's runs (they record alike).
    more = _write_pair(
        tmp_path / "more", *[timing_log(f"synthetic-{n}-2", seed=s) for s, n in ((2, "before"), (3, "after"))]
    )
    for path in more:
        events = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        events[0]["provenance"] = pair[0][0]["provenance"]
        path.write_text(dumps(events), encoding="utf-8")
    pooled = _diff(
        "--before", str(paths[0]), "--before", str(more[0]), "--after", str(paths[1]), "--after", str(more[1])
    )
    assert "(replicates: " in pooled and "is no replicate" not in pooled


def test_two_runs_from_dirty_checkouts_of_one_commit_name_it(tmp_path: Path) -> None:
    """Both collectors at one commit with uncommitted changes: 'code and data changes: 0',
    though the uncommitted code may differ."""
    known = {"value": "a" * 40, "source": "git rev-parse HEAD"}
    dirty = {"value": "true", "source": "git status"}
    pair = [timing_log(f"synthetic-{name}", seed=seed) for seed, name in enumerate(("before", "after"))]
    for events in pair:
        events[0]["provenance"] = {"collector_version": "0.7.0", "git_commit": known, "git_dirty": dirty, "files": []}
    text = _diff(*_write_pair(tmp_path, *pair))
    assert "collector git dirty (in both runs: their uncommitted changes cannot be told apart)" in text


PROVENANCE = ("collector_version", "git_commit", "git_dirty", "files")  # run_start.provenance's fields


def _sources(files: dict[str, str], folder: str = "/opt/x/collector") -> list[dict[str, str]]:
    """Provenance entries of the collector's own files (collector 0.24.0 on), by relative path."""
    return [{"role": "collector_source", "path": f"{folder}/{name}", "sha256": sha} for name, sha in files.items()]


def _no_git_pair(tmp_path: Path, before: list[dict[str, str]], after: list[dict[str, str]]) -> str:
    """Two runs of collectors copied outside git (commit and dirty flag unknown), their files as given."""
    unknown = {"unknown_reason": "git is not installed on this host"}
    pair = [timing_log(f"synthetic-{name}", seed=seed) for seed, name in enumerate(("before", "after"))]
    for events, files in zip(pair, (before, after)):
        events[0]["provenance"] = {
            "collector_version": "0.24.0",
            "git_commit": unknown,
            "git_dirty": unknown,
            "files": files,
        }
    return _diff(*_write_pair(tmp_path, *pair))


def test_a_collector_without_git_is_told_apart_by_its_own_files(tmp_path: Path) -> None:
    """Collectors copied onto hosts without git under one version string: before 0.24.0 the diff
    could say only 'the same code cannot be told'. Their own files' hashes name the one that
    changed, by its path in the collector's folder, wherever each copy lay; the rest of a
    checkout around the collector, which a commit would identify, still cannot be told."""
    same = {"__init__.py": "1" * 64, "__main__.py": "6" * 64, "compare.py": "2" * 64, "run/cells.py": "3" * 64}
    changed = {**same, "compare.py": "4" * 64}
    text = _no_git_pair(tmp_path, _sources(same), _sources(changed, "/home/u/venv/lib/collector"))
    assert f"collector source compare.py: sha256 {'2' * 64} -> sha256 {'4' * 64}" in text
    told = "the collector's own files are compared by their hashes; the rest of its checkout cannot be told the same"
    assert "code and data changes: 2" in text and told in text and "the same code cannot be told" not in text
    text = _no_git_pair(tmp_path / "same", _sources(same), _sources(same, "/elsewhere/collector"))
    assert "code and data changes: 1" in text and told in text and "collector source" not in text
    # A file one copy has and the other has not is named so.
    text = _no_git_pair(tmp_path / "added", _sources(same), _sources({**same, "extra.so": "5" * 64}))
    assert f"collector source extra.so: no such file -> sha256 {'5' * 64}" in text


def test_the_collectors_folder_is_found_by_its_main_module_and_long_lists_digest_alike(tmp_path: Path) -> None:
    """A stray entry outside the folder pulled a common-prefix folder back to '/', and every file
    read as another; files beyond the first 300 digested their absolute paths, so two copies in
    other folders differed there."""
    same = {"__init__.py": "1" * 64, "__main__.py": "6" * 64, "run/cells.py": "2" * 64}
    stray = [{"role": "collector_source", "path": "zz", "sha256": "7" * 64}]
    text = _no_git_pair(tmp_path, _sources(same), _sources(same, "/other/place/collector") + stray)
    assert "collector source zz: no such file -> sha256" in text
    assert "code and data changes: 2" in text, text  # the stray file and git's unknown commit
    many = {**same, **{f"m{i:03}.py": f"{i % 10}" * 64 for i in range(320)}}
    text = _no_git_pair(tmp_path / "many", _sources(many), _sources(many, "/other/place/collector"))
    assert "code and data changes: 1" in text and "beyond the first 300" not in text, text


def test_files_neither_run_hashed_and_dirty_checkouts_are_no_same(tmp_path: Path) -> None:
    """Entries that hashed nothing (unreadable) on both sides compared equal, and both logs'
    hashing the collector's files hid that both checkouts were dirty: the dirty flag covers the
    whole checkout, not only the files hashed."""
    unreadable = [
        {"role": "collector_source", "path": "/c/collector/__main__.py", "unknown_reason": "cannot read: denied"}
    ]
    text = _no_git_pair(tmp_path, unreadable, unreadable)
    assert "collector source __main__.py (not hashed in either run: cannot be told the same)" in text
    known = {"value": "a" * 40, "source": "git rev-parse HEAD"}
    dirty = {"value": "true", "source": "git status"}
    pair = [timing_log(f"synthetic-{name}", seed=seed) for seed, name in enumerate(("before", "after"))]
    for events in pair:
        events[0]["provenance"] = dict(zip(PROVENANCE, ("0.24.0", known, dirty, _sources({"__main__.py": "6" * 64}))))
    text = _diff(*_write_pair(tmp_path / "dirty", *pair))
    assert "collector git dirty (in both runs: their uncommitted changes cannot be told apart)" in text


def test_a_log_without_its_collectors_files_against_one_with_them_is_one_line(tmp_path: Path) -> None:
    """A log from a collector before 0.24.0 against a later one: one line says the older hashed
    none of its own files, not a line a file; the code still cannot be told the same."""
    files = _sources({"__init__.py": "1" * 64, "compare.py": "2" * 64})
    text = _no_git_pair(tmp_path, [], files)
    assert (
        "collector's own files: not recorded (the log lists none of the collector's own files, as a collector before "
        "0.24.0 does) -> 2 file(s) hashed" in text
    )
    assert "collector source" not in text
    assert "collector git commit (unknown in both runs: the same code cannot be told)" in text


def test_a_suitable_training_run_states_how_its_steps_ran(tmp_path: Path) -> None:
    """The training classifier read 'Suitable ... 4 cell(s) in float32' while its plan ran the
    steps with dropout off: what the steps left out is out of the scope, and the headline says so."""
    from tests.logbuilder import training_log

    (path,) = _write_pair(tmp_path, training_log(), training_log())[:1]
    headline = judge_log(path).disposition.headline
    assert (
        headline.startswith("Suitable")
        and "3 training steps as the plan ran them (deterministic variant: dropout off)" in headline
    )


def test_two_logs_that_kept_no_cpu_wait_name_contention_as_unknown_beside_their_changes(tmp_path: Path) -> None:
    """Before: two logs whose collector read the threads and load around its warm loops but not
    the time they waited for a CPU (schema 1.2 and 1.3) listed their host changes and nothing
    else, so a pair judged with no contention rule on either side read like a pair judged with
    it. The wait is named as not known, beside the changes, on every surface that names them."""
    old, new = (
        SAMPLES / "tiny-encoder-cpu-20261202T021258Z-677058",
        SAMPLES / "tiny-encoder-cpu-20261202T053312Z-ecd07d",
    )
    said = "time the threads waited for a CPU not recorded on the before and after: contention not judged"
    text = _diff(old, new)
    assert re.search(r"^host changes: \d+; not known: " + re.escape(said), text, re.M), text[:2000]
    assert "device name: x86_64 -> AMD EPYC" in text  # the changes are still listed
    assert said in json.loads(_diff(old, new, "--format", "json"))["host_unknown"]
    assert f"**Host, not known:** {said}" in _diff(old, new, "--format", "md")
    out = tmp_path / "cmp"
    assert RUNNER.invoke(main, ["compare", str(old), str(new), "--out", str(out), "--format", "md,json"]).exit_code == 0
    baseline_said = said.replace("before and after", "baseline and candidate")
    assert f"**Host facts, not known:** {baseline_said}" in (out / "compare.md").read_text(encoding="utf-8")
    # Both runs read the wait (schema 1.4 and 1.5): nothing of the kind is said.
    newer = _diff(
        SAMPLES / "tiny-encoder-cpu-20261205T023648Z-3de80c", SAMPLES / "tiny-encoder-cpu-20261205T073819Z-87bab8"
    )
    # (What they do not know is the governor, which a VM hides: named as such, not as contention.)
    governor = "not known: CPU governor not recorded on either side: a governor change cannot be ruled out"
    assert "waited for a CPU not recorded" not in newer and newer.split("host changes")[1].splitlines()[0].endswith(
        governor
    )
    # One of the two read it: the wait is a named change ('not recorded' on the other), as before.
    mixed = _diff(new, SAMPLES / "tiny-encoder-cpu-20261205T023648Z-3de80c")
    assert "contention not judged on either" not in mixed
    assert re.search(r"^  time the threads waited for a CPU.*: not recorded -> ", mixed, re.M), mixed[:3000]


def test_runs_with_synthetic_weights_say_so_on_the_first_line_of_diff_and_compare(tmp_path: Path) -> None:
    """Before: every run page's headline said "synthetic weights" for the Scenario A runs (a
    decoder with made-up weights), but `reportgen diff` of two of them said it nowhere and
    compare's answer only inside each side's disposition. Both now say it first."""
    a = SAMPLES / "scenario-a-text-service-cpu-20261205T025456Z-10cfa5"
    b = SAMPLES / "scenario-a-text-service-cpu-20261205T075639Z-e9a837"
    first = _diff(a, b).splitlines()[0]
    assert first.endswith(f"[synthetic weights on the before side ({a.name}) and the after side ({b.name})]"), first
    assert json.loads(_diff(a, b, "--format", "json"))["weights_note"].startswith("synthetic weights on the before")
    assert "(synthetic weights on the before side" in _diff(a, b, "--format", "md").splitlines()[0]
    out = tmp_path / "cmp"
    result = RUNNER.invoke(main, ["compare", str(a), str(b), "--out", str(out), "--format", "md"])
    assert result.exit_code == 0 and result.output.startswith("Synthetic weights on the candidate and baseline; ")
    # Trained weights (the MiniLM runs): nothing of the kind.
    minilm = sorted(SAMPLES.glob("all-MiniLM-L6-v2-cpu-20261205T*"))
    assert "synthetic weights" not in _diff(*minilm[:2]).splitlines()[0]


def test_a_changed_warm_up_count_is_named_first_and_flags_every_ratio(tmp_path: Path) -> None:
    """Before: the plan's timing.warmup (the uncounted calls before each warm series) was not in
    the log; a change of it showed only as another plan file sha256, and every ratio was judged
    'slower' or 'faster' as if the loops had been warmed alike. From 1.6 the plan event carries
    it: a change is a timing criterion, named first, and it flags every ratio, as a changed
    number of warm repetitions does."""
    before = base_events()
    after = _redrawn(base_events(), 1.3)
    for events, warmup in ((before, 1), (after, 5)):
        next(e for e in events if e["kind"] == "plan")["warmup"] = warmup
    a, b = _write(tmp_path / "a", before, "warm-a"), _write(tmp_path / "b", after, "warm-b", "2026-01-02T00:00:00Z")
    text = _diff(a, b)
    assert "  warm-up calls now 5 (was 1)" in text.split("version changes")[0]
    diff = diff_runs(summarize(judge_log(a)), summarize(judge_log(b)))
    assert diff.timings and all("changed criterion: warm-up calls now 5 (was 1)" in t.flags for t in diff.timings)
    assert not [t for t in diff.timings if t.judged and t.verdict in ("faster", "slower")]


def test_an_unrecorded_warm_up_is_settled_by_the_same_plan_text() -> None:
    """Before: every ratio between a 1.5 and a 1.6 run of the heat solver read "flagged [changed
    criterion: warm-up calls now 3 (was not recorded)]", though both logs read one plan text
    (the same sha256), whose [timing] warmup every collector has read (3 when left out). The
    same plan text now settles it; another plan text, or a log without the plan's hash (the
    H200 tiny-encoder run, schema 1.0), still flags every ratio."""
    old, new = (
        SAMPLES / "heat-solver-cpu-20261205T074106Z-bcfcd4",
        SAMPLES / "heat-solver-cpu-20261205T122551Z-af7feb",
    )
    text = _diff(old, new)
    assert "warm-up calls" not in text and "[changed criterion" not in text
    assert "plan:" not in text.split("code and data changes")[1].split("host changes")[0]  # one plan text
    compared = json.loads(
        (SAMPLES / "comparisons" / "tiny-encoder-cpu-vs-cuda" / "compare.json").read_text(encoding="utf-8")
    )
    assert any(c["key"] == "warmup" for c in compared["criteria"]), compared["criteria"]


def test_two_honest_one_sample_series_within_the_copy_bound_are_no_copy() -> None:
    """Before: a cell of one warm sample counted as a series of distinct samples, and two honest
    runs whose single samples fell within 1e-5 of each other (81 of 177,720 pairs in the sample
    runs) made the later one a copy. A cell's series speaks for a copy from 3 samples on."""
    from reportgen.judge.identity import copied_run

    honest = [("a", {"c1": [1.000000e-3], "c2": [2.0e-3]}), ("b", {"c1": [1.000001e-3], "c2": [2.5e-3]})]
    assert copied_run(honest) is None
    three = [
        ("a", {"c1": [1.0e-3, 1.1e-3, 1.2e-3], "c2": [2.0e-3]}),
        ("b", {"c1": [1.0e-3, 1.1e-3, 1.2e-3], "c2": [2.5e-3]}),
    ]
    assert copied_run(three) is not None and "in 1 of its 2 timed cells (c1)" in copied_run(three)  # type: ignore[operator]


def test_a_changed_cpu_governor_is_named_first_and_flags_every_ratio(tmp_path: Path) -> None:
    """Before: 'CPU governor: performance -> powersave' was named, then '2 faster' and a
    geometric mean, though the governor sets the clock the loops ran at (replicates refused it)."""
    before = _hosted(_measured(base_events()), "2 intra-op, 2 inter-op", "3.60")
    after = _hosted(_redrawn(_measured(base_events())), "2 intra-op, 2 inter-op", "3.60")
    for events, governor in ((before, "performance"), (after, "powersave")):
        for event in events:
            if event["kind"] == "timing" and event.get("warm"):
                event["host"]["cpu_governor"] = {"value": governor, "source": "cpufreq"}
    a, b = _write(tmp_path / "a", before, "gov-a"), _write(tmp_path / "b", after, "gov-b", "2026-01-02T00:00:00Z")
    diff = diff_runs(summarize(judge_log(a)), summarize(judge_log(b)))
    assert diff.host[0] == ("CPU governor", "performance", "powersave")
    assert diff.timings and all(
        "host changed: CPU governor performance -> powersave" in " ".join(t.flags) for t in diff.timings
    )
    assert diff.geomean is None and not any(diff.verdict_counts().values())


def test_the_host_s_math_library_and_thread_pool_variables_are_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: OMP_WAIT_POLICY=PASSIVE made a run 1.58x slower and ONEDNN_MAX_CPU_ISA changed its
    reference outputs, yet the log recorded no variable and diff named no change."""
    from collector.environment import relevant_env_vars

    for name, value in (
        ("OMP_WAIT_POLICY", "PASSIVE"),
        ("GOMP_SPINCOUNT", "0"),
        ("KMP_BLOCKTIME", "0"),
        ("MKL_ENABLE_INSTRUCTIONS", "SSE4_2"),
        ("ONEDNN_MAX_CPU_ISA", "SSE41"),
        ("LD_PRELOAD", "/usr/lib/libjemalloc.so"),
        ("PYTORCH_TUNABLEOP_ENABLED", "1"),
    ):
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("UNRELATED_SECRET_TOKEN", "x")
    recorded = relevant_env_vars()
    assert recorded["OMP_WAIT_POLICY"] == "PASSIVE" and recorded["ONEDNN_MAX_CPU_ISA"] == "SSE41"
    assert {
        "GOMP_SPINCOUNT",
        "KMP_BLOCKTIME",
        "MKL_ENABLE_INSTRUCTIONS",
        "LD_PRELOAD",
        "PYTORCH_TUNABLEOP_ENABLED",
    } <= set(recorded)
    assert "UNRELATED_SECRET_TOKEN" not in recorded


def _aborted_before_plan(folder: Path, run_id: str, started_at: str) -> Path:
    """A log the collector closed before its plan event (the workload did not load): run_start,
    environment and an aborted run_end, as a run that failed while loading its module writes it."""
    events = [e for e in base_events() if e["kind"] in ("run_start", "environment")]
    events[0].update(run_id=run_id, started_at=started_at)
    events.append(
        {
            "kind": "run_end",
            "finished_at": started_at,
            "status": "aborted",
            "reason": "workload error: the module did not load (synthetic)",
            "cells_planned": 4,
            "cells_recorded": 0,
        }
    )
    path = folder / "events.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(dumps(with_envelope(events)), encoding="utf-8")
    return path


def test_a_diff_of_two_runs_aborted_before_their_plan_says_their_criteria_and_weights_are_not_recorded(
    tmp_path: Path,
) -> None:
    """Before: two runs aborted before their plan event diffed to 'criteria changes: 0' (the
    Markdown 'Criteria: none changed', the site's history 'Criteria: none changed (...)') and
    'weights identified by declaration only, not verified: ... both plans declare model revision
    'not recorded'', where neither log has a plan. Now: every format says the criteria are not
    recorded on both sides (no plan event), and no weights are the same by declaration."""
    a = _aborted_before_plan(tmp_path / "runs" / "a", "aborted-a", "2026-01-01T00:00:00Z")
    b = _aborted_before_plan(tmp_path / "runs" / "b", "aborted-b", "2026-01-02T00:00:00Z")
    note = "criteria not recorded on the before and after: their logs have no plan event"
    text = _diff(a, b)
    assert f"criteria changes: not known ({note})" in text and "criteria changes: 0" not in text, text
    assert "declaration" not in text and "model revision 'not recorded'" not in text
    md = _diff(a, b, "--format", "md")
    assert f"**Criteria:** not known: {note}." in md and "**Criteria:** none changed." not in md
    assert "declaration" not in md
    data = json.loads(_diff(a, b, "--format", "json"))
    assert data["criteria_unrecorded"] == ["before", "after"] and data["criteria_unrecorded_note"] == note
    assert data["declared_only"] == []
    build_site([tmp_path / "runs"], tmp_path / "site")
    page = next((tmp_path / "site" / "workloads").glob("*/index.html")).read_text(encoding="utf-8")
    assert f"<strong>Criteria: not known:</strong> {note}." in page
    assert "Criteria: none changed" not in page and "declaration only" not in page


def test_a_diff_of_a_run_against_one_aborted_before_its_plan_says_first_which_side_recorded_no_criteria(
    tmp_path: Path,
) -> None:
    """Before: the criteria line counted the plan's declarations against 'not recorded' as
    '16 changes' with no word that the after log has no plan at all. Now: it says first that
    the after side recorded no criteria (no plan event), then what differs of what was recorded."""
    a = _write(tmp_path / "a", base_events(), "whole-a")
    b = _aborted_before_plan(tmp_path / "b", "aborted-b", "2026-01-02T00:00:00Z")
    text = _diff(a, b)
    line = next(line for line in text.splitlines() if line.startswith("criteria changes:"))
    assert line.startswith(
        "criteria changes: not known (criteria not recorded on the after: its log has no plan event; of what was recorded,"
    ), line
    md = _diff(a, b, "--format", "md")
    assert "**Criteria:** not known: criteria not recorded on the after: its log has no plan event. Of what" in md
    assert "**Criteria changed" not in md


def test_weights_of_a_log_without_a_plan_are_never_the_same_by_declaration() -> None:
    """Before: two logs without a plan both read model revision 'not recorded', which compared
    equal: 'weights identified by declaration only' (same, DECLARED). Now: a side without a plan
    declares no revision, so its weights are not recorded (UNRECORDED, not the same), on one side
    or both; two plans declaring one revision are still the same by declaration."""
    from reportgen.judge.identity import DECLARED, UNRECORDED, WeightsFacts, weights_identity

    unplanned = WeightsFacts(None, None, False, "no plan event", None)
    planned = WeightsFacts(None, None, False, "written before content hashes", "tiny-encoder seed 0")
    both = weights_identity(unplanned, unplanned, ("before", "after"))
    assert (both.same, both.basis) == (False, UNRECORDED)
    assert both.text.startswith("weights not recorded on the before and after: their logs declare no model revision")
    one = weights_identity(planned, unplanned, ("before", "after"))
    assert (one.same, one.basis) == (False, UNRECORDED) and "not recorded on the after: its log declares" in one.text
    declared = weights_identity(planned, planned, ("before", "after"))
    assert (declared.same, declared.basis) == (True, DECLARED)


def test_a_plan_with_an_empty_model_revision_is_not_said_to_have_no_plan_event() -> None:
    """A review: a plan event whose model_revision is "" (it validates) read 'their logs declare
    no model revision (no plan event)', and its hashed, differing weight files 'not recorded'.
    Now only a log without a plan is planless; an empty revision is a declared one."""
    from reportgen.judge.identity import WeightsFacts, weights_identity

    a = WeightsFacts(None, "a" * 64, False, "written before content hashes", "")
    b = WeightsFacts(None, "b" * 64, False, "written before content hashes", "")
    judged = weights_identity(a, b, ("before", "after"))
    assert "no plan event" not in judged.text and not judged.same, judged.text
    assert (
        "the saved files differ in bytes" in judged.text
        and "before and after plans state no model revision" in judged.text
    )


def test_the_collector_s_word_for_no_model_revision_is_no_declaration() -> None:
    """A review: 'not stated by the workload' (what the collector writes for a module without
    MODEL_REVISION) and a revision of spaces read as one declared model, so two different
    weights files were 'identified by declaration only ... whose weights the workload builds
    from its seed', and their timings compared."""
    from reportgen.judge.identity import WeightsFacts, weights_identity

    for revision in ("not stated by the workload", " "):
        a = WeightsFacts(None, "a" * 64, False, "written before content hashes", revision)
        b = WeightsFacts(None, "b" * 64, False, "written before content hashes", revision)
        judged = weights_identity(a, b, ("before", "after"))
        assert not judged.same and "state no model revision" in judged.text, judged.text


def test_a_log_of_a_collector_that_hashes_its_files_and_lists_none_is_a_warning(tmp_path: Path) -> None:
    """A review: a log naming collector 0.24.0 with no collector_source entry (cut from it)
    validated with no word, and diff called it a collector before 0.24.0."""
    from reportgen.contract.validation import read_log

    events = timing_log("synthetic-cut-sources")
    unknown = {"unknown_reason": "git is not installed on this host"}
    for version, warned in (("0.24.0", True), ("0.23.0", False), ("1.2.3", True)):
        events[0]["provenance"] = {
            "collector_version": version,
            "git_commit": unknown,
            "git_dirty": unknown,
            "files": [],
        }
        path = tmp_path / version / "events.jsonl"
        path.parent.mkdir()
        path.write_text(dumps(events), encoding="utf-8")
        found = [p.message for p in read_log(path).problems if "collector_source" in p.message]
        assert bool(found) == warned, (version, found)
    events[0]["provenance"]["files"] = _sources({"__main__.py": "6" * 64})
    path = tmp_path / "listed" / "events.jsonl"
    path.parent.mkdir()
    path.write_text(dumps(events), encoding="utf-8")
    assert not [p for p in read_log(path).problems if "collector_source" in p.message]


def test_a_changed_padding_is_a_timing_criterion() -> None:
    """A review: buckets changed from [128, 256, 512] to [128, 512] (a 240-token request's prefill
    then ran at 512 positions) were named once among the configuration, and every first-token
    ratio still read faster or slower. Padding decides the shape each call times: a change of it
    flags every ratio, and replicates must agree on it."""
    from reportgen.judge.criteria import declared_criteria

    sample = SAMPLES / "scenario-a-text-service-cpu-20261206T152740Z-a6ae00" / "events.jsonl"
    declared = declared_criteria(judge_log(sample).run)
    assert declared["padding"].judges == "timing" and "buckets [128, 256, 512]" in declared["padding"].value


def test_a_file_listed_twice_in_the_provenance_is_an_error(tmp_path: Path) -> None:
    """A review: a log listing one of the collector's files twice, with two hashes, validated and
    its diff named the file twice ('eventlog.py', 'eventlog.py 2'), one line up by chance."""
    from reportgen.contract.validation import read_log

    events = timing_log("synthetic-listed-twice")
    unknown = {"unknown_reason": "git is not installed on this host"}
    once = _sources({"__main__.py": "6" * 64, "eventlog.py": "7" * 64})
    for n, (files, said) in enumerate(
        (
            (once, None),
            (once + _sources({"eventlog.py": "8" * 64}), "twice, with another hash"),
            (once + _sources({"eventlog.py": "7" * 64}), "twice, with the same hash"),
        )
    ):
        events[0]["provenance"] = {
            "collector_version": "0.24.0",
            "git_commit": unknown,
            "git_dirty": unknown,
            "files": files,
        }
        path = tmp_path / str(n) / "events.jsonl"
        path.parent.mkdir(parents=True)
        path.write_text(dumps(events), encoding="utf-8")
        found = [(p.severity, p.line, p.message) for p in read_log(path).problems if "twice" in p.message]
        if said is None:
            assert not found
        else:
            assert len(found) == 1 and found[0][:2] == ("error", 1) and said in found[0][2], found
            assert "/opt/x/collector/eventlog.py" in found[0][2]
    # Another spelling of one path, and a second file of a role a run reads one of (a second
    # review: a workload module listed again as '.../workloads/./x.py' lined up as a code change).
    for files, said in (
        (once + _sources({"./eventlog.py": "8" * 64}), "twice, with another hash"),
        (
            once
            + [
                {"role": "workload_module", "path": "/w/x.py", "sha256": "1" * 64},
                {"role": "workload_module", "path": "/w/./x.py", "sha256": "2" * 64},
            ],
            "provenance lists two files as workload_module ('/w/x.py' and '/w/./x.py'): a run reads one",
        ),
    ):
        events[0]["provenance"]["files"] = files
        path = tmp_path / f"again-{len(said)}" / "events.jsonl"
        path.parent.mkdir()
        path.write_text(dumps(events), encoding="utf-8")
        found = [p.message for p in read_log(path).problems if p.severity == "error"]
        assert len(found) == 1 and said in found[0], found


def test_cells_added_that_never_ran_are_said_so(tmp_path: Path) -> None:
    """A review: diff listed "cells added: 12", 9 of them deselected and untested, without a
    word that they never ran."""
    from tests.logbuilder import case_key

    extra = case_key(2, 16, "compiled")

    def without(events: Events, case: str) -> Events:
        return [e for e in events if e.get("case") != case]

    before = without(base_events(), extra)
    next(e for e in before if e["kind"] == "plan")["matrix"] = [
        c for c in next(e for e in base_events() if e["kind"] == "plan")["matrix"] if c["case"] != extra
    ]
    after = without(base_events(), extra)
    plan = next(e for e in after if e["kind"] == "plan")
    plan["selection"] = {
        "only": ["*"],
        "modes": ["eager", "compiled"],
        "cases": [c["case"] for c in plan["matrix"] if c["case"] != extra],
    }
    a = _write(tmp_path / "runs" / "a", before, "added-before")
    b = _write(tmp_path / "runs" / "b", after, "added-after", "2026-01-02T00:00:00Z")
    text = _diff(a, b)
    assert "cells added: 1 (1 of them not run: untested or skipped)" in text and f"  {extra} (not run)" in text, text
    assert "| cells added | 1 (1 of them not run: untested or skipped) |" in _diff(a, b, "--format", "md")
