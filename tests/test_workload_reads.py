"""What a workload reads as it runs, beyond the files run_start hashes from its source: a data
file, a module it imports after changing sys.path, the packages it runs on. Before schema 1.6 a
change to any of them read as no change at all: "code and data changes: 0", then "7.59x slower".
Then: a file read after a large package's import was not noted (the bound on files noted was
spent on the package's own files), nor a module imported from its cached bytecode."""

from __future__ import annotations

import json
import py_compile
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from collector.plan import load_plan
from collector.runner import Options, execute
from reportgen.cli import main
from tests.conftest import REPO

WORKLOAD = """
import json
import sys
from pathlib import Path

import torch
from torch import nn

MODEL_REVISION = "config-reading MLP (synthetic test workload)"
WEIGHTS_ORIGIN = "synthetic"
TASK_METRIC = "max_abs_to_reference"
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "lib"))
import helper  # found through the path set above: no static scan of the module sees it


def build_model():
    # Thousands of installed files opened first (as a large package's import opens them): the
    # bound on files noted must not be spent on them.
    for path in sorted(Path(torch.__file__).parent.rglob("*.py"))[:2500]:
        open(path, "rb").close()
    width = json.loads((HERE / "cfg.json").read_text())["width"]
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, width), nn.Tanh(), nn.Linear(width, helper.OUT)).eval()


def make_inputs(batch, length, layout):
    return {"x": torch.randn(batch, length, 8, generator=torch.Generator().manual_seed(batch))}


def run_model(model, inputs):
    return {"y": model(inputs["x"])}


def task_metric(outputs, reference, inputs):
    return float((outputs["y"].double() - reference["y"].double()).abs().max())
"""


def _run(folder: Path, out: Path) -> Path:
    from tests.test_collector_robust import PlainBackend

    plan = load_plan(folder / "reads.toml")
    run_dir, code = execute(
        plan, PlainBackend(), Options(target="cpu", out_dir=out, cold="off", warm_repetitions=2, modes=["eager"])
    )
    assert code == 0 and run_dir is not None
    return run_dir


def _reads(run_dir: Path) -> dict[str, Any]:
    lines = (run_dir / "events.jsonl").read_text(encoding="utf-8").splitlines()
    (event,) = [json.loads(line) for line in lines if '"kind": "workload_reads"' in line]
    return event


def test_files_the_workload_reads_and_its_packages_are_recorded_and_a_change_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each run here is in this process, as a collector's is in its own: the path the workload
    # adds and the helper it imports are kept to this test, and imported again in each run.
    monkeypatch.setattr(sys, "path", list(sys.path))
    folder = tmp_path / "wl"
    (folder / "lib").mkdir(parents=True)
    (folder / "reads.py").write_text(WORKLOAD, encoding="utf-8")
    (folder / "lib" / "helper.py").write_text("OUT = 4\n", encoding="utf-8")
    (folder / "cfg.json").write_text('{"width": 16}', encoding="utf-8")
    faulty = (REPO / "tests" / "workloads" / "faulty.toml").read_text(encoding="utf-8")
    (folder / "reads.toml").write_text(
        faulty.replace('module = "faulty.py"', 'module = "reads.py"').replace('name = "faulty"', 'name = "reads"'),
        encoding="utf-8",
    )
    monkeypatch.delitem(sys.modules, "helper", raising=False)
    # The helper imported from its cached bytecode opens no source: its source is named for it.
    py_compile.compile(str(folder / "lib" / "helper.py"), doraise=True)
    first = _run(folder, tmp_path / "runs")
    event = _reads(first)
    read = {Path(f["path"]).name: f for f in event["files"]}
    # (pytest's own reads, in the test's process, may be listed too: a collector has its own)
    assert {"cfg.json", "helper.py"} <= set(read), event["files"]
    assert not {"reads.py", "reads.toml"} & set(read)  # hashed in run_start already
    assert not [f for f in event["files"] if Path(f["path"]).is_relative_to(tmp_path / "runs")]
    assert all(len(f["sha256"]) == 64 for f in read.values())
    assert event["packages"]["torch"].startswith("2.") and "collector" not in event["packages"]
    assert "through Python" in event["watched"] and event["files_more"] == 0
    # Not the whole prefix: on a system Python that is /usr, where a workload may live.
    from collector.workload_reads import _installed

    assert Path(sys.base_prefix) not in _installed() and Path(sys.prefix) not in _installed()

    # The data file and the helper change between the runs; the plan and the module do not.
    (folder / "cfg.json").write_text('{"width": 32}', encoding="utf-8")
    (folder / "lib" / "helper.py").write_text("OUT = 4  # edited\n", encoding="utf-8")
    for name in ("helper", "collector_workload_reads"):  # as a collector's own process would, each run
        monkeypatch.delitem(sys.modules, name)
    second = _run(folder, tmp_path / "runs")
    result = CliRunner().invoke(main, ["diff", str(first), str(second)])
    assert result.exit_code == 0, result.output
    assert "workload read cfg.json: sha256 " in result.output
    assert re.search(r"workload read lib/helper\.py: sha256 [0-9a-f]{64} -> sha256 [0-9a-f]{64}", result.output)
    changed = result.output.split("code and data changes: ")[1].split("host changes")[0]
    assert "workload module" not in changed and "plan:" not in changed

    # Against a log with no workload_reads event: the first run as 0.10.0 would have written it,
    # or as a 0.11.0 run that ended before its inputs were made has it (before, such a run's
    # packages read "not loaded", one line each). One line, not one a package.
    listed = _reads(second)
    said = (
        "  files the workload read and packages it ran on: not recorded (no workload_reads event: a collector "
        "before 0.11.0 writes none, nor a run that ended before its inputs were made)"
        f" -> {len(listed['files'])} file(s) read, {sum(1 for p in listed['packages'] if p != 'torch')} package(s)"
    )
    for version, schema in (("0.10.0", "1.5"), ("0.11.0", "1.6")):
        events = [json.loads(line) for line in (first / "events.jsonl").read_text(encoding="utf-8").splitlines()]
        events = [dict(e, schema_version=schema) for e in events if e["kind"] != "workload_reads"]
        for seq, event in enumerate(events):
            event["seq"] = seq
        events[0].update(collector=f"collector {version}", origin="synthetic", origin_note="Without its reads.")
        events[0]["provenance"]["collector_version"] = version
        old = tmp_path / f"old-{version}" / "events.jsonl"
        old.parent.mkdir()
        old.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
        both = CliRunner().invoke(main, ["diff", str(old), str(second)])
        assert both.exit_code == 0, both.output
        lines = [line for line in both.output.splitlines() if "package" in line and line.startswith("  ")]
        assert lines == [said], lines


def test_a_hostile_workload_reads_event_is_named_in_bounded_words(tmp_path: Path) -> None:
    """A log is untrusted: a package name or version of 100,000 characters, or a path of as many,
    is named by its length and digest in a diff, as a long local import's name is."""
    from tests.logbuilder import dumps, generation_log

    logs = []
    for n, version in enumerate(("1.0", "2.0")):
        events = generation_log()
        events[0]["run_id"] = f"synthetic-hostile-reads-{n}"
        reads = next(e for e in events if e["kind"] == "workload_reads")
        reads["packages"] = {"p" * 100_000: version * 50_000, "numpy": version}
        reads["files"] = [{"role": "workload_read", "path": "/" + "d" * 100_000, "sha256": str(n + 1) * 64}]
        logs.append(tmp_path / f"r{n}" / "events.jsonl")
        logs[-1].parent.mkdir()
        logs[-1].write_text(dumps(events), encoding="utf-8")
    result = CliRunner().invoke(main, ["diff", *map(str, logs)])
    assert result.exit_code == 0, result.output
    assert max(len(line) for line in result.output.splitlines()) < 2_000
    assert "package numpy: 1.0 -> 2.0" in result.output
    assert "package (100000 characters, sha256 " in result.output


def test_the_files_a_workload_reads_are_hashed_within_a_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each file up to 1 GiB was hashed, at most 200 of them: a workload reading a folder of large
    shards would have the collector read up to 200 GiB more before its first cell. Past a budget
    in all, a file is listed with its size and why it was not hashed."""
    from collector import workload_reads

    monkeypatch.setattr(workload_reads, "MAX_HASH_TOTAL", 15)
    first, second = tmp_path / "a.bin", tmp_path / "b.bin"
    first.write_bytes(b"0123456789")
    second.write_bytes(b"abcdefghij")
    workload_reads.start()
    try:
        for path in (first, second):
            path.read_bytes()
    finally:
        fields = workload_reads.stop([], [])
    assert fields is not None
    listed = {Path(f["path"]).name: f for f in fields["files"] if Path(f["path"]).parent == tmp_path}
    assert len(listed["a.bin"]["sha256"]) == 64
    assert (
        listed["b.bin"]["unknown_reason"] == "10 bytes, past the 15 the collector hashes of the files a workload reads"
    )
