"""The real collector on the tiny workload: its log validates, it survives being killed."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reportgen.contract.validation import read_log
from tests.conftest import REPO

TINY = REPO / "collector" / "workloads" / "tiny_encoder.toml"
pytestmark = pytest.mark.slow


def _collector(args: list[str], cwd: Path = REPO, **kwargs: object) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, "-m", "collector", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        **kwargs,
    )


def _only_run_dir(out: Path) -> Path:
    dirs = [d for d in out.iterdir() if d.is_dir()]
    assert len(dirs) == 1, dirs
    return dirs[0]


def test_contract_tiny_workload_eager_and_compiled(tmp_path: Path) -> None:
    done = _collector(
        [
            "--workload",
            str(TINY),
            "--target",
            "cpu",
            "--out",
            str(tmp_path),
            "--only",
            "b1-l16-*",
            # Another shape of the contiguous group, compiled between (1, 16) and its cache check.
            "--only",
            "b1-l32-contiguous-float32-compiled",
            "--warm",
            "5",
            "--profile",
        ]
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "[1/" in done.stderr, "progress goes to stderr"
    # A review: an eager cell's cold call, taken when the cell was checked, was announced at the
    # end of the run as if measured then ("cold first call (in-process)").
    assert "b1-l16-contiguous-float32-eager: cold first call recorded (the first call its check made" in done.stderr
    assert "cold first call (in-process)" not in done.stderr
    run_dir = _only_run_dir(tmp_path)
    reading = read_log(run_dir / "events.jsonl")
    assert reading.problems == [], [p.format() for p in reading.problems]
    assert reading.complete
    events = reading.events
    kinds = [e.kind for e in events]
    assert kinds[:3] == ["run_start", "environment", "plan"]
    assert events[0].origin == "measured"
    env = events[1]
    assert env.backend_family == "cpu"
    assert env.versions["torch"].value.startswith("2.13")
    assert env.versions["torch_neuronx"].value is None and env.versions["torch_neuronx"].unknown_reason
    plan = events[2]
    assert plan.tolerances["float32"].atol == 1e-5 and plan.tolerances["float32"].rtol == 1e-4
    results = {e.case: e for e in events if e.kind == "case_result"}
    assert set(results) == set(plan.selection.cases) and set(results) < {c.case for c in plan.matrix}
    # The non-contiguous group's cache check has no other shape compiled before it: skipped, said why.
    idle = results.pop("b1-l16-noncontiguous-float32-compiled-repeat")
    assert idle.status == "skipped" and "tests no cache" in idle.skip_reason
    assert all(r.status == "pass" for r in results.values()), {k: r.status for k, r in results.items()}
    assert results["b1-l16-noncontiguous-float32-eager"].inputs[0].contiguous is False
    assert results["b1-l16-contiguous-float32-compiled-repeat"].recompiled is False
    compiles = {e.case: e for e in events if e.kind == "compile"}
    first = compiles["b1-l16-contiguous-float32-compiled"]
    # Compiled from scratch once, by the cold call (a group with a cache check): this compile met its cache.
    assert first.graphs >= 1 and first.recompiles == 0
    assert first.cache_condition == "persistent_cache" and first.cache_hits >= 1 and first.cache_misses == 0
    timings = [e for e in events if e.kind == "timing"]
    cold = {e.case: e.cold for e in timings if e.cold and e.cold.cache_condition != "restart_populated_cache"}
    warm = {e.case: e.warm for e in timings if e.warm}
    assert cold["b1-l16-contiguous-float32-compiled"].cache_condition == "fresh_process_empty_cache"
    assert (
        cold["b1-l16-contiguous-float32-compiled"].fresh_process
        and cold["b1-l16-contiguous-float32-compiled"].cache_misses >= 1
    )
    assert cold["b1-l16-contiguous-float32-eager"].cache_condition == "eager_no_compile"
    assert len(warm["b1-l16-contiguous-float32-compiled"].samples_s) == 5
    # Peak device memory (schema 1.3): a CPU run has no device allocator and says so per series.
    assert all(
        e.device_memory is not None and e.device_memory.status == "not_measured" and e.device_memory.reason
        for e in timings
        if e.warm
    )
    artifacts = {e.role for e in events if e.kind == "artifact"}
    assert {"weights", "inputs", "reference_output"} <= artifacts
    # Weights and inputs by content, beside the file hash; the content hash is the saved tensors'.
    import torch

    from collector.content import content_sha256

    saved = {e.role: e for e in events if e.kind == "artifact" and e.role in ("weights", "inputs")}
    assert (
        plan.weights_content_sha256
        == saved["weights"].content_sha256
        == content_sha256(torch.load(run_dir / "artifacts" / "weights.pt", weights_only=True))
    )
    inputs = torch.load(run_dir / "artifacts" / "inputs.pt", weights_only=True)
    assert saved["inputs"].content_by_key == {key: content_sha256(value) for key, value in inputs.items()}
    # Which code and data wrote the log.
    provenance = events[0].provenance
    assert provenance.collector_version != "0.1.0"
    assert {f.role: f.path for f in provenance.files}["workload_module"].endswith("tiny_encoder.py")
    assert all(f.sha256 for f in provenance.files)
    profiles = [e for e in events if e.kind == "profile"]
    assert profiles and all((run_dir / t.path).is_file() for p in profiles for t in p.traces)
    ops = {e.case: e for e in events if e.kind == "operators"}
    assert "aten::addmm" in ops["b1-l16-contiguous-float32-eager"].executed.items
    assert ops["b1-l16-contiguous-float32-eager"].fallback.status == "not_applicable"


def test_runs_from_a_copied_folder(tmp_path: Path) -> None:
    host = tmp_path / "host"
    shutil.copytree(REPO / "collector", host / "collector", ignore=shutil.ignore_patterns("__pycache__"))
    where = subprocess.run(
        [sys.executable, "-c", "import collector; print(collector.__file__)"],
        cwd=host,
        capture_output=True,
        text=True,
        check=True,
    )
    assert where.stdout.strip().startswith(str(host))
    plan = host / "collector" / "workloads" / "tiny_encoder.toml"
    done = _collector(
        [
            "--workload",
            str(plan),
            "--target",
            "cpu",
            "--out",
            str(host / "runs"),
            "--only",
            "b1-l16-contiguous-*",
            "--modes",
            "eager",
            "--warm",
            "2",
            "--cold",
            "off",
        ],
        cwd=host,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    reading = read_log(_only_run_dir(host / "runs") / "events.jsonl")
    assert reading.valid and reading.complete


def _start_and_wait(
    tmp_path: Path, results_before_kill: int, ignored: tuple[int, ...] = (), warm: int = 400
) -> tuple[subprocess.Popen[str], Path]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "collector",
            "--workload",
            str(TINY),
            "--target",
            "cpu",
            "--out",
            str(tmp_path),
            "--modes",
            "eager",
            "--warm",
            str(warm),
            "--cold",
            "off",
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
        # As `nohup` (SIGHUP) or a shell's background job (SIGINT) starts it: ignored from the start.
        preexec_fn=(lambda: [signal.signal(s, signal.SIG_IGN) for s in ignored] and None) if ignored else None,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        logs = list(tmp_path.glob("*/events.jsonl"))
        if logs and logs[0].read_text(encoding="utf-8").count('"kind": "case_result"') >= results_before_kill:
            return proc, logs[0]
        time.sleep(0.05)
    proc.kill()
    pytest.fail("the collector wrote no case results in time")


def test_sigkill_leaves_every_written_line_intact(tmp_path: Path) -> None:
    proc, log = _start_and_wait(tmp_path, 2)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    lines = log.read_bytes().split(b"\n")
    assert lines[-1] == b"", "the last written line ends with a newline"
    for line in lines[:-1]:
        json.loads(line)
    reading = read_log(log)
    assert reading.valid and not reading.complete
    assert any("no run_end" in p.message for p in reading.problems)
    planned = next(e for e in reading.events if e.kind == "plan").matrix
    recorded = {e.case for e in reading.events if e.kind == "case_result"}
    assert 2 <= len(recorded) < len(planned)
    from reportgen.render.report import judge_log

    judged = judge_log(log)
    assert judged.disposition.outcome == "blocked"
    assert "incomplete-run" in {r.rule for r in judged.disposition.reasons}
    untested = {c.case for c in judged.run.cells if c.status == "untested"}
    assert untested == {c.case for c in planned} - recorded


def test_a_hangup_writes_an_aborted_run_end_unless_started_under_nohup(tmp_path: Path) -> None:
    """A closed terminal or dropped ssh session (SIGHUP) ended the collector at once with 129:
    no run_end, no line on stderr, its cache folder left below the temp dir. It now ends the run
    as SIGTERM does; a collector started under nohup (the hangup ignored) keeps running."""
    proc, log = _start_and_wait(tmp_path / "hup", 1)
    proc.send_signal(signal.SIGHUP)
    assert proc.wait(timeout=60) == 129
    end = read_log(log).run_end
    assert end is not None and end.status == "aborted" and "SIGHUP" in end.reason
    # Long warm series: the run must still be going when the second signal comes a second later
    # (the whole run at --warm 400 takes about two seconds here).
    proc, log = _start_and_wait(tmp_path / "nohup", 1, ignored=(signal.SIGHUP, signal.SIGINT), warm=5000)
    proc.send_signal(signal.SIGHUP)
    time.sleep(1.0)
    assert proc.poll() is None, "a hangup ended a collector started under nohup"
    # A shell's background job starts with SIGINT ignored: `kill -INT` still ends the run.
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=60) == 130
    end = read_log(log).run_end
    assert end is not None and "SIGINT" in end.reason


def test_sigterm_writes_an_aborted_run_end(tmp_path: Path) -> None:
    proc, log = _start_and_wait(tmp_path, 1)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 143
    reading = read_log(log)
    assert reading.valid, [p.format() for p in reading.problems]
    end = reading.run_end
    assert end is not None and end.status == "aborted" and "SIGTERM" in end.reason
    assert not reading.complete
