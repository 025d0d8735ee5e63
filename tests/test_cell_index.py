"""index.parquet: one row per run and cell, and the query docs/campaigns.md documents for it."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from reportgen.publish.cell_index import COLUMNS, INDEX_NAME
from reportgen.publish.site import build_site
from tests.conftest import REPO
from tests.hostile import invoke
from tests.logbuilder import _warm, dumps, fallback_log

DOC = Path(__file__).resolve().parent.parent / "docs" / "campaigns.md"


def _neuron_runs(root: Path) -> dict[str, list[dict]]:
    """Two synthetic Neuron runs of one workload on two torch-neuronx versions (the fixture's
    own logs say they are synthetic); on the newer one a compiled cell mismatches."""
    older = fallback_log()
    newer = json.loads(json.dumps(older).replace(older[0]["run_id"], "fallback-neuron-newer-sdk"))
    next(e for e in newer if e["kind"] == "environment")["versions"]["torch_neuronx"]["value"] = "2.14.0.0.1"
    result = next(e for e in newer if e["kind"] == "case_result" and e["case"].endswith("-compiled"))
    result["status"] = "mismatch"
    result["error_stats"].update(mismatched=3, max_abs=1.0, max_rel=1.0)
    newer = [e for e in newer if not (e["kind"] == "timing" and e.get("case") == result["case"])]
    runs = {"older": older, "newer": newer}
    for name, events in runs.items():
        (root / name).mkdir(parents=True)
        (root / name / "events.jsonl").write_text(dumps(events), encoding="utf-8")
    return runs


def _documented(marker: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    return text.split(f"<!-- {marker} -->\n", 1)[1]


def test_site_writes_one_row_per_run_and_cell(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    runs = _neuron_runs(tmp_path / "runs")
    site = tmp_path / "site"
    build_site([tmp_path / "runs"], site)
    table = pq.read_table(site / INDEX_NAME)
    assert table.schema.names == [name for name, _, _ in COLUMNS]
    assert table.schema.metadata[b"migration-record.cell-index"] == b"7"
    rows = table.to_pylist()
    planned = {
        name: [c["case"] for e in events if e["kind"] == "plan" for c in e["matrix"]] for name, events in runs.items()
    }
    assert len(rows) == sum(len(cells) for cells in planned.values())
    newer = [r for r in rows if r["run_id"] == "fallback-neuron-newer-sdk"]
    assert [r["cell"] for r in newer] == sorted(planned["newer"])
    assert {r["version_torch_neuronx"] for r in newer} == {"2.14.0.0.1"}
    assert {r["device"] for r in rows} == {"trn2.48xlarge"} and all(r["synthetic"] for r in rows)
    assert {r["mode"] for r in rows} == {"eager", "compiled"}
    assert [r["status"] for r in newer if r["status"] != "pass"] == ["mismatch"]
    # Its mismatch has no verdict: none of that run's timings is a result, its stable ones
    # included, and every one of its rows says so (the older run's do not).
    assert {r["performance_stopped"] for r in newer} == {True}
    assert any(r["warm_median_s"] is not None and r["warm_stability"] == "stable" for r in newer)
    assert {r["performance_stopped"] for r in rows if r not in newer} == {False}
    # index.json (and index.csv) count the run's mismatching cells without a verdict.
    index = {r["run_id"]: r["performance_stopped"] for r in json.loads((site / "index.json").read_text())}
    assert sorted(index.items()) == sorted({runs["older"][0]["run_id"]: 0, "fallback-neuron-newer-sdk": 1}.items())
    assert {r["log"] for r in newer} == {f"{newer[0]['page'].rsplit('/', 1)[0]}/events.jsonl"}
    assert (site / newer[0]["log"]).is_file() and all(r["log_etag"] is None for r in rows)
    assert all(r["collector"] and r["schema_version"] for r in rows)

    # An unchanged rebuild rewrites nothing; the file is one of the pages the no-op check keeps.
    before = (site / INDEX_NAME).read_bytes()
    again = build_site([tmp_path / "runs"], site)
    assert site / INDEX_NAME not in again.written and (site / INDEX_NAME).read_bytes() == before


def test_documented_query_answers_its_question(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    duckdb = pytest.importorskip("duckdb", reason="the test extra installs duckdb")
    _neuron_runs(tmp_path / "runs")
    build_site([tmp_path / "runs"], tmp_path / "site")
    query = re.search(r"```sql\n(.*?)```", _documented("cell-index-query"), re.DOTALL)
    assert query is not None, "docs/campaigns.md: no SQL block after the cell-index-query marker"
    monkeypatch.chdir(tmp_path)  # the query names site/index.parquet, as the docs say
    answer = duckdb.connect().execute(query.group(1)).fetchall()
    # Per version: every planned cell, all passing on the older SDK, one mismatch on the newer.
    by_version = {(version, status): count for _, version, status, count in answer}
    total = sum(by_version.values()) // 2
    assert by_version == {
        ("2.13.3.0.1", "pass"): total,
        ("2.14.0.0.1", "mismatch"): 1,
        ("2.14.0.0.1", "pass"): total - 1,
    }
    assert len({workload for workload, *_ in answer}) == 1


def test_documented_columns_are_the_files_columns() -> None:
    table = _documented("cell-index-columns").split("\n\n", 1)[0]
    documented = re.findall(r"^\| `([a-z_]+)` \| (\w+) \|", table, re.MULTILINE)
    assert documented == [(name, kind) for name, kind, _ in COLUMNS]


def test_each_warm_median_carries_its_series_stability(tmp_path: Path) -> None:
    """An unstable series' median decides nothing: the index says which medians those are."""
    import pyarrow.parquet as pq

    from collector.stability import UNSTABLE, classify

    events = fallback_log()
    timing = next(e for e in events if e["kind"] == "timing")
    spread = [0.001 * (1 + 0.5 * i) for i in range(5)]  # the plan's 5 warm repetitions
    assert classify(spread).verdict == UNSTABLE
    timing["warm"] = _warm(spread)
    (tmp_path / "runs" / "one").mkdir(parents=True)
    (tmp_path / "runs" / "one" / "events.jsonl").write_text(dumps(events), encoding="utf-8")
    build_site([tmp_path / "runs"], tmp_path / "site")
    rows = pq.read_table(tmp_path / "site" / INDEX_NAME).to_pylist()
    stability = {r["cell"]: r["warm_stability"] for r in rows if r["warm_median_s"] is not None}
    assert stability[timing["case"]] == "unstable"
    assert set(stability.values()) == {"stable", "unstable"}
    assert all(r["warm_stability"] is None for r in rows if r["warm_median_s"] is None)


def test_a_decode_series_whose_repetitions_ran_at_two_speeds_reads_unstable() -> None:
    """Outside review: index.parquet read a decode series 'stable' that diff and compare leave
    without a verdict: its per-step samples are steady, but the repetitions' whole decode times
    (tokens/s) ran at two speeds. The word is series_flag's, repetitions included."""
    import random
    from types import SimpleNamespace

    from reportgen.judge.timing_stability import series_flag, stability_word
    from reportgen.publish.cell_index import _series

    rng = random.Random(3)  # ten repetitions of 16 steps, the last three 15% slower
    steps = [
        (1.0 if rep < 7 else 1.15) * 1e-3 * (1 + rng.uniform(-0.05, 0.05)) * (1.5 if step == 0 else 1)
        for rep in range(10)
        for step in range(16)
    ]
    assert stability_word(steps) == "stable"  # the per-step series alone
    assert (series_flag(steps, None, 10) or "").startswith("unstable timing across the 10 repetitions")
    cell = SimpleNamespace(
        generation={"decode_token": steps},
        generation_median_s={"decode_token": 1e-3},
        generation_waited=None,
        generation_before=None,
        generation_repetitions=10,
        generation_wait_unread=False,
    )
    assert dict(_series(cell, "decode_token"))["stability"] == "unstable"  # type: ignore[arg-type]


def test_a_cold_figure_carries_its_cache_condition(tmp_path: Path) -> None:
    """Outside review: cold_s mixed compiles from nothing (about 17 s) with first calls from a
    filled cache and eager first calls (about 2 ms), with no column saying which."""
    import pyarrow.parquet as pq

    site = tmp_path / "site"
    build_site([REPO / "sample_runs" / "tiny-encoder-cpu-20261206T150111Z-1dd183"], site)
    table = pq.read_table(site / INDEX_NAME).to_pylist()
    conditions = {(r["mode"], r["cold_cache_condition"]) for r in table if r["cold_s"] is not None}
    assert ("eager", "eager_no_compile") in conditions and ("compiled", "fresh_process_empty_cache") in conditions
    assert all(r["cold_cache_condition"] is None for r in table if r["cold_s"] is None)


def test_load_cells_reads_a_decode_series_as_index_parquet_does(tmp_path: Path) -> None:
    """load_cells gave 'stable' where index.parquet and diff give none: its word left out the
    repetitions' whole decode times."""
    import random

    import pyarrow.parquet as pq

    import reportgen
    from tests import logbuilder as lb

    events = lb.generation_timing_log("gen-two-speeds", seed=1)
    rng = random.Random(3)
    case = None
    for event in events:
        timing = event.get("timing") if event["kind"] == "generation" else None
        if timing is not None and case is None:
            reps = timing["repetitions"]
            steps = len(timing["decode_token"]["samples_s"]) // reps
            timing["decode_token"] = lb._warm(
                [
                    (1.0 if rep < reps - 3 else 1.15)
                    * 2e-3
                    * (1 + rng.uniform(-0.05, 0.05))
                    * (1.5 if step == 0 else 1)
                    for rep in range(reps)
                    for step in range(steps)
                ]
            )
            timing["tokens_per_s"] = lb.tokens_per_s(timing)
            case = event["case"]
    runs = tmp_path / "runs" / "gen"
    runs.mkdir(parents=True)
    (runs / "events.jsonl").write_text(lb.dumps(lb.with_envelope(events)), encoding="utf-8")
    build_site([tmp_path / "runs"], tmp_path / "site")
    table = pq.read_table(tmp_path / "site" / INDEX_NAME).to_pylist()
    [indexed] = [r["decode_token_stability"] for r in table if r["cell"] == case]
    frame = reportgen.load_cells([runs / "events.jsonl"])
    assert indexed == "unstable" and frame[frame.case == case].decode_token_stability.item() == indexed


def test_a_compile_time_carries_its_cache_outcome(tmp_path: Path) -> None:
    """compile_s of the 11-29 sample run (a miss, 12.4 s) and of the 12-06 run (a hit, 1.75 s)
    stood side by side with no word of which was which; the site's chart labels the hit."""
    import pyarrow.parquet as pq

    from reportgen.judge.comparison import CACHE_HIT, CACHE_MISS

    runs = tmp_path / "runs"
    for name in ("tiny-encoder-cpu-20261129T225221Z-23a8e6", "tiny-encoder-cpu-20261206T150111Z-1dd183"):
        shutil.copytree(REPO / "sample_runs" / name, runs / name)
    assert invoke(["site", runs, "--out", tmp_path / "site"]).code == 0
    table = pq.read_table(tmp_path / "site" / INDEX_NAME).to_pylist()
    case = "b1-l16-contiguous-float32-compiled"
    outcome = {r["run_id"][:33]: r["compile_cache"] for r in table if r["cell"] == case}
    assert outcome == {"tiny-encoder-cpu-20261129T225221Z": CACHE_MISS, "tiny-encoder-cpu-20261206T150111Z": CACHE_HIT}
    assert all(r["compile_cache"] is None for r in table if r["mode"] == "eager")
