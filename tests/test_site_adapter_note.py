"""Every place a site shows a neuron run as a result carries the word that the collector's neuron
adapter has met a stand-in only, never Trainium. Before, the run's report and compare said so,
but the site's index row, its "Workloads on their intended target" table, the workload page's
latest run and history row, and index.json/index.csv did not: a review's relabelled run read
"neuron (ran on neuron-native) | Trainium2 | ✔ Suitable" with no caveat. The neuron log here is
synthetic and says so."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

from tests.conftest import REPO
from tests.hostile import invoke
from tests.logbuilder import write_synthetic_neuron

TAG = "adapter untried on hardware"


def test_a_neuron_run_is_tagged_on_every_site_page_that_shows_it_and_a_cpu_run_is_not(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    cpu = REPO / "sample_runs" / "tiny-encoder-cpu-20261206T150111Z-1dd183"
    shutil.copytree(cpu, runs / cpu.name)
    write_synthetic_neuron(runs / "neuron")
    site = tmp_path / "site"
    assert invoke(["site", runs, "--out", site]).code == 0
    index = (site / "index.html").read_text(encoding="utf-8")
    assert index.count(TAG) >= 1 and "exercised only against a stand-in module, never on Trainium" in index
    records = {r["run_id"]: r for r in json.loads((site / "index.json").read_text(encoding="utf-8"))}
    assert "never on Trainium" in records["synthetic-neuron"]["adapter_note"]
    assert records[cpu.name]["adapter_note"] == ""
    with open(site / "index.csv", encoding="utf-8", newline="") as handle:
        rows = {r["run_id"]: r for r in csv.DictReader(handle)}
    assert "never on Trainium" in rows["synthetic-neuron"]["adapter_note"] and rows[cpu.name]["adapter_note"] == ""
    # The rows the index's script draws (index-rows-*.js) carry the note too (a review: drawn in
    # a browser, the row lost its tag), and so does the "Workloads by version" list.
    data = json.loads(
        next(site.glob("index-rows-*.js")).read_text(encoding="utf-8").split("=", 1)[1].rstrip().rstrip(";")
    )
    by_id = {row[2]: row for row in data["rows"]}
    neuron_row = next(row for run_id, row in by_id.items() if run_id.endswith("synthetic-neuron"))
    assert "never on Trainium" in data["strings"][neuron_row[17]]
    assert all(row[17] == -1 for run_id, row in by_id.items() if row is not neuron_row)
    versions = index.split('id="versions"', 1)[1].split("</section>", 1)[0]
    assert "synthetic-neuron" in versions or "neuron (" in versions
    assert versions.count(TAG) == 1
    workloads = {p.parent.name: p.read_text(encoding="utf-8") for p in (site / "workloads").glob("*/index.html")}
    neuron_pages = [text for text in workloads.values() if "synthetic-neuron" in text]
    assert neuron_pages and all(text.count(TAG) >= 2 for text in neuron_pages)  # latest per target, history row
    cpu_pages = [text for name, text in workloads.items() if cpu.name in text and "synthetic-neuron" not in text]
    assert all(TAG not in text for text in cpu_pages)


def test_diff_names_the_adapter_note_of_a_neuron_pair_in_every_format(tmp_path: Path) -> None:
    """`reportgen diff` of two neuron runs (an SDK upgrade on one target, the README's own use)
    gave its timing verdicts with no word that the adapter has met a stand-in only; the report,
    site and compare said it. A cpu pair carries no such note."""
    before = write_synthetic_neuron(tmp_path / "a", run_id="synthetic-neuron-a")
    after = write_synthetic_neuron(tmp_path / "b", run_id="synthetic-neuron-b")
    for fmt in ("text", "md"):
        result = invoke(["diff", before, after, "--format", fmt])
        assert result.code == 0, result.output
        first = result.output.splitlines()[0]
        assert TAG in first and "never on Trainium" in first, first
    data = json.loads(invoke(["diff", before, after, "--format", "json"]).output)
    assert data["adapter_note"].startswith(TAG) and "never on Trainium" in data["adapter_note"]
    older, newer = (
        REPO / "sample_runs" / f"tiny-encoder-cpu-{r}" for r in ("20261129T225221Z-23a8e6", "20261206T150111Z-1dd183")
    )
    cpu = invoke(["diff", older, newer, "--format", "json"])
    assert json.loads(cpu.output)["adapter_note"] == "", cpu.output[:300]
