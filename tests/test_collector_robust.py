"""The collector under failures, bad modules and options, signals, full disks and hung children.

Most runs are in-process (``execute`` or ``main`` on the faulty test workload, eager or with a
trivial compiler, so they take a fraction of a second each); the ones that need a process of
their own (a file-size limit, a real compile) run as subprocesses with a timeout.
"""

from __future__ import annotations

import json
import os
import re
import resource
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

import pytest
import torch
from click.testing import CliRunner

from collector import eventlog
from collector.__main__ import main as collector_main
from collector.backends import Backend
from collector.plan import load_plan
from collector.provenance import provenance
from collector import runner
from collector.runner import Options, execute
from reportgen.cli import main as reportgen_main
from reportgen.contract.validation import read_log
from tests.conftest import REPO

FAULTY = REPO / "tests" / "workloads" / "faulty.toml"
B1 = ["b1-l4-contiguous-float32-eager", "b1-l4-contiguous-float32-compiled"]
B2 = ["b2-l4-contiguous-float32-eager", "b2-l4-contiguous-float32-compiled"]


def _plain_compiler(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
    """Dynamo traces for real; the graph then runs as traced (no inductor: fast)."""
    return gm.forward


def _batch2(example_inputs: list[Any]) -> bool:
    return any(isinstance(t, torch.Tensor) and t.dim() == 3 and t.shape[0] == 2 for t in example_inputs)


def _failing_compiler(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
    if _batch2(example_inputs):
        raise RuntimeError("injected compile failure at batch 2")
    return gm.forward


class PlainBackend(Backend):
    compile_backend = staticmethod(_plain_compiler)


class FailingCompileBackend(Backend):
    compile_backend = staticmethod(_failing_compiler)


def _validates(log: Path) -> None:
    """`reportgen validate` accepts the log (an incomplete one is still valid)."""
    done = CliRunner().invoke(reportgen_main, ["validate", str(log)])
    assert done.exit_code == 0, done.output


def _events(log: Path) -> list[Any]:
    reading = read_log(log)
    assert reading.valid, [p.format() for p in reading.problems]
    return reading.events


def _execute(tmp_path: Path, backend: Backend | None = None, **options: Any) -> tuple[Path | None, int]:
    settings: dict[str, Any] = {"target": "cpu", "out_dir": tmp_path / "runs", "cold": "off", "warm_repetitions": 2}
    settings.update(options)
    return execute(load_plan(FAULTY), backend or PlainBackend(), Options(**settings))


def _collector_command(out: Path, *extra: str) -> list[str]:
    """`python -m collector` on the faulty workload and the cpu target, writing under ``out``."""
    return [sys.executable, "-m", "collector", "--workload", str(FAULTY), "--target", "cpu", "--out", str(out), *extra]


def _no_traceback(text: str) -> None:
    assert "Traceback" not in text, text[-3000:]


def _stop_lines(stderr: str) -> list[str]:
    """The lines that say why a run stopped (progress lines carry the elapsed time instead, and
    the line that says how the target was chosen is not one)."""
    return [
        line
        for line in stderr.splitlines()
        if line.startswith("collector: ") and not line.startswith("collector: target ")
    ]


def _faulty_eager_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str], fault: str, **options: Any
) -> tuple[list[Any], str]:
    """The faulty workload's eager cells with ``FAULTY=fault``: a run that completes (exit 0, no
    traceback) and a log that reportgen validates; its events and the collector's stderr."""
    monkeypatch.setenv("FAULTY", fault)
    run_dir, code = _execute(tmp_path, modes=["eager"], **options)
    err = capfd.readouterr().err
    assert code == 0, err[-2000:]
    _no_traceback(err)
    log = run_dir / "events.jsonl"
    _validates(log)
    return _events(log), err


# --- 1. a failure at one cell is recorded on that cell, with its phase --------------------------


def _fail_transfer_at_batch2(monkeypatch: pytest.MonkeyPatch) -> None:
    from collector.run import cells

    real = cells.to_device

    def to_device(inputs: dict[str, torch.Tensor], device: torch.device) -> dict[str, torch.Tensor]:
        if inputs["x"].shape[0] == 2:
            raise RuntimeError("injected transfer failure at batch 2")
        return real(inputs, device)

    monkeypatch.setattr(cells, "to_device", to_device)


FAULTS = [
    # phase, how it is injected, the cells that fail
    ("inputs", "inputs@2", B2),
    ("reference", "reference@2", B2),
    ("transfer", _fail_transfer_at_batch2, B2),
    ("compile", FailingCompileBackend, B2[1:]),
    ("run", "run@2", B2),
    ("compare", "compare@2", B2),
]


@pytest.mark.parametrize("ending", ["complete", "interrupted"])
def test_a_run_puts_back_the_cache_variables_it_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ending: str
) -> None:
    """A run points inductor's cache (and each descriptor cache) at a folder it removes when it
    ends, and left the variables pointing there: the next compile in the caller's process (the
    next test on a pytest worker) made that folder again below the temp dir, and it stayed."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "callers-own"))
    monkeypatch.delenv("COLLECTOR_CACHE_ROOT", raising=False)
    if ending == "interrupted":

        def interrupted(run: Any) -> None:
            raise KeyboardInterrupt

        monkeypatch.setattr(runner.cells, "run_cells", interrupted)
    before = dict(os.environ)
    run_dir, code = _execute(tmp_path)
    assert run_dir is not None and code == (0 if ending == "complete" else 130)
    assert dict(os.environ) == before
    assert not list(Path(os.environ["TORCHINDUCTOR_CACHE_DIR"]).parent.glob("collector-cache-*"))


@pytest.mark.parametrize(("phase", "inject", "failing"), FAULTS, ids=[f[0] for f in FAULTS])
def test_a_failure_at_one_cell_is_recorded_there_and_the_matrix_goes_on(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    phase: str,
    inject: Any,
    failing: list[str],
) -> None:
    backend: Backend = PlainBackend()
    if isinstance(inject, str):
        monkeypatch.setenv("FAULTY", inject)
    elif isinstance(inject, type):
        backend = inject()
    else:
        inject(monkeypatch)
    run_dir, code = _execute(tmp_path, backend)
    err = capfd.readouterr().err
    assert code == 0, err[-2000:]
    _no_traceback(err)
    log = run_dir / "events.jsonl"
    _validates(log)
    events = _events(log)
    results = {e.case: e for e in events if e.kind == "case_result"}
    assert set(results) == set(B1 + B2), "every cell has its result: the matrix went on"
    for case, result in results.items():
        if case in failing:
            assert result.status == "error" and result.failure.phase == phase, (case, result)
            assert "injected" in result.failure.message
            assert any(case in line and f"error in {phase}" in line for line in err.splitlines()), err
        else:
            assert result.status == "pass", (case, result)
    end = events[-1]
    assert end.kind == "run_end" and end.status == "complete" and end.cells_recorded == 4
    timed = {e.case for e in events if e.kind == "timing" and e.warm}
    assert timed == set(results) - set(failing), "warm timings only for the cells that passed"


METRIC_FAULTS = [
    # fault, the failure's type, what its message says
    (
        "metric-key",
        "KeyError",
        "task_metric() looked up a missing key 'logits' (workload faulty, faulty.py); "
        "the outputs hold 'y', the reference 'y', the inputs 'x'",
    ),
    (
        "metric-mapping",
        "TypeError",
        "task_metric() returned a mapping of float (workload faulty, faulty.py); "
        "expected task_metric(outputs, reference, inputs) -> float",
    ),
    (
        "compare",
        "ArithmeticError",
        "task_metric() raised (workload faulty, faulty.py): injected compare failure at batch 2",
    ),
]


@pytest.mark.parametrize(("fault", "kind", "message"), METRIC_FAULTS, ids=[f[0] for f in METRIC_FAULTS])
def test_a_task_metric_that_breaks_fails_its_cell_naming_the_workload_and_the_key(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    fault: str,
    kind: str,
    message: str,
) -> None:
    """A KeyError inside task_metric was recorded as "KeyError: 'logits'": nothing said the
    workload's metric looked the key up, nor which names it had to choose from."""
    events, err = _faulty_eager_run(tmp_path, monkeypatch, capfd, f"{fault}@2")
    results = {e.case: e for e in events if e.kind == "case_result"}
    assert results[B1[0]].status == "pass"
    failed = results[B2[0]]
    assert failed.status == "error" and failed.failure.phase == "compare"
    assert failed.failure.type == kind and failed.failure.message == message
    # One line on stderr names the cell, the workload and the key.
    (line,) = [line for line in err.splitlines() if "error in compare" in line]
    assert line.endswith(f"{B2[0]}: error in compare: {kind}: {message[:200]}"), line
    assert events[-1].kind == "run_end" and events[-1].status == "complete"


def test_a_failure_during_warm_timing_is_a_warning_of_that_cell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    events, _ = _faulty_eager_run(tmp_path, monkeypatch, capfd, "warm@2")
    assert {e.case: e.status for e in events if e.kind == "case_result"} == {B1[0]: "pass", B2[0]: "pass"}
    warned = [e for e in events if e.kind == "warning" and e.category == "WarmTimingFailed"]
    assert [w.case for w in warned] == [B2[0]] and "injected failure during warm timing" in warned[0].message
    assert {e.case for e in events if e.kind == "timing"} == {B1[0]}
    assert events[-1].status == "complete"


# --- 2. a signal during torch.compile ends the run ---------------------------------------------


class _SignalsWhenCollected:
    """Sends the signal from ``__del__``, where Python runs the handler but drops what it raises
    (as it did inside a Dynamo weakref callback during a real inductor compile)."""

    def __init__(self, signum: int) -> None:
        self.signum = signum

    def __del__(self) -> None:
        signal.raise_signal(self.signum)


def _signalling_compiler(signum: int, how: str, raised: list[str] | None = None) -> Callable[..., Any]:
    raised = [] if raised is None else raised

    def compiler(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        if how == "dropped-where-python-cannot-raise":
            _SignalsWhenCollected(signum)  # collected at once: the Aborted is printed and dropped
            return gm.forward  # the compile goes on as if nothing had arrived
        if how == "dropped-then-sent-again":
            _SignalsWhenCollected(signum)
            try:  # a second signal, nothing unwinding: it raises here, not at the next log line
                os.kill(os.getpid(), signum)
                time.sleep(5)
            except BaseException as exc:
                raised.append(type(exc).__name__)
                raise
            return gm.forward
        try:
            os.kill(os.getpid(), signum)
            time.sleep(5)  # the handler interrupts this, inside Dynamo's call to the compiler
        except BaseException as exc:
            if how == "wrapped-by-the-compiler":  # a compiler that turns whatever stopped it into its own error
                raise RuntimeError("compiler stopped") from exc
            raise
        return gm.forward

    return compiler


@pytest.mark.parametrize(
    "how", ["as-raised", "wrapped-by-the-compiler", "dropped-where-python-cannot-raise", "dropped-then-sent-again"]
)
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_during_compile_ends_the_run_and_the_cell_stays_untested(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], signum: int, how: str
) -> None:
    raised: list[str] = []

    class SignallingBackend(Backend):
        compile_backend = staticmethod(_signalling_compiler(signum, how, raised))

    started = time.monotonic()
    run_dir, code = _execute(tmp_path, SignallingBackend())
    assert time.monotonic() - started < 60
    err = capfd.readouterr().err
    assert code == {signal.SIGINT: 130, signal.SIGTERM: 143}[signum]
    _no_traceback(err)
    name = signal.Signals(signum).name
    dropped = [
        f"collector: {name} arrived where Python cannot raise; the run stops at its next log line, or at once on another signal"
    ]
    if how == "dropped-then-sent-again":
        assert raised == ["Aborted"], "the second signal raised inside the compiler"
    assert _stop_lines(err) == (dropped if how.startswith("dropped") else []) + [
        f"collector: aborted by {name}; the log up to here is intact, the cells without a result are untested"
    ]
    log = run_dir / "events.jsonl"
    _validates(log)
    events = _events(log)
    results = {e.case: e.status for e in events if e.kind == "case_result"}
    assert results == {B1[0]: "pass"}, "the interrupted compiled cell has no result: it is untested, not an error"
    end = events[-1]
    assert end.kind == "run_end" and end.status == "aborted" and signal.Signals(signum).name in end.reason
    from reportgen.render.report import judge_log

    statuses = {c.case: c.status for c in judge_log(log).run.cells}
    assert statuses[B1[1]] == "untested"


def test_a_signal_dropped_after_the_last_cell_still_ends_the_run_as_aborted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """The dropped Aborted came after the run's last line before run_end: before, nothing raised
    it again (run_end is written with signals only noted) and the run ended 'complete', exit 0."""
    from collector import runner

    real = runner.profiles.write_profiles

    def then_a_signal(run: Any) -> None:
        real(run)
        _SignalsWhenCollected(signal.SIGTERM)

    monkeypatch.setattr(runner.profiles, "write_profiles", then_a_signal)
    run_dir, code = _execute(tmp_path, modes=["eager"])
    assert code == 143 and run_dir is not None
    end = _events(run_dir / "events.jsonl")[-1]
    assert end.kind == "run_end" and end.status == "aborted" and "SIGTERM" in end.reason
    _no_traceback(capfd.readouterr().err)


@pytest.mark.slow
def test_a_compile_in_the_collector_s_own_process_leaves_nothing_in_the_temp_dir(tmp_path: Path) -> None:
    """Inductor keeps precompiled headers (about 150 MB on the CPU) below the temp dir, which
    TORCHINDUCTOR_CACHE_DIR does not move: a compile in the collector's own process (--cold off,
    a generation plan, a cell checked again after its fresh process ended) left them there for
    good, outside --out, and the next run's compiles started from them. The run's temp dir is
    now a folder of its own, removed with it, as each fresh process's is."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"TMPDIR": str(temp)}
    done = subprocess.run(
        _collector_command(tmp_path / "runs", "--only", B1[1], "--cold", "off", "--warm", "2"),
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert sorted(p.name for p in temp.iterdir()) == [], "left in the temp dir"
    log = Path(done.stdout.strip().splitlines()[-1]) / "events.jsonl"
    (compile_event,) = [e for e in _events(log) if e.kind == "compile"]
    headers = [d for d in compile_event.cache_dirs if d.role == "inductor-precompiled-headers"]
    assert headers and all(d.redirected for d in headers)


@pytest.mark.slow
def test_sigint_during_a_real_inductor_compile(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.Popen(
        _collector_command(tmp_path, "--only", B1[1], "--cold", "off", "--warm", "2"),
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines = []
    try:
        for line in proc.stderr:  # type: ignore[union-attr]
            lines.append(line)
            if "compiling and checking" in line:
                time.sleep(0.5)  # inside torch.compile: Dynamo traces, inductor generates code
                proc.send_signal(signal.SIGINT)
                break
        out, rest = proc.communicate(timeout=120)
    finally:
        proc.kill()
    err = "".join(lines) + rest
    assert proc.returncode == 130, err[-3000:]
    _no_traceback(err)
    log = Path(out.strip().splitlines()[-1]) / "events.jsonl"
    _validates(log)
    events = _events(log)
    assert not [e for e in events if e.kind == "case_result"]
    assert events[-1].kind == "run_end" and events[-1].status == "aborted" and "SIGINT" in events[-1].reason


# --- 3. a signal while a line is written never duplicates a sequence number ----------------------


def test_a_signal_during_a_slow_fsync_never_breaks_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    real_fsync = os.fsync
    baseline, code = _execute(tmp_path / "baseline", modes=["eager"])
    assert code == 0
    writes = len((baseline / "events.jsonl").read_bytes().splitlines())
    assert writes >= 12
    for target, signum in [(t, s) for t in range(writes) for s in (signal.SIGTERM, signal.SIGINT)]:
        count = {"n": 0}
        in_fsync, sent = threading.Event(), threading.Event()

        def slow_fsync(fd: int) -> None:
            count["n"] += 1
            if count["n"] == target + 1:
                in_fsync.set()
                sent.wait(10)  # the signal arrives while this line's fsync is in progress
                time.sleep(0.02)
            real_fsync(fd)

        def sender() -> None:
            if in_fsync.wait(60):
                os.kill(os.getpid(), signum)
                sent.set()

        monkeypatch.setattr(eventlog.os, "fsync", slow_fsync)
        thread = threading.Thread(target=sender)
        thread.start()
        run_dir, code = _execute(tmp_path / f"{target}-{signum}", modes=["eager"])
        thread.join(30)
        monkeypatch.setattr(eventlog.os, "fsync", real_fsync)
        assert sent.is_set(), f"write {target}: the signal was not sent"
        _no_traceback(capfd.readouterr().err)
        log = run_dir / "events.jsonl"
        _validates(log)
        seqs = [json.loads(line)["seq"] for line in log.read_bytes().splitlines()]
        assert seqs == list(range(len(seqs))), (target, seqs)
        end = _events(log)[-1]
        assert end.kind == "run_end"
        if target == writes - 1:  # during run_end itself: the run had finished
            assert code == 0 and end.status == "complete"
        else:
            assert code == {signal.SIGINT: 130, signal.SIGTERM: 143}[signum] and end.status == "aborted"
            assert len(seqs) == target + 2, "the line being written is kept, then run_end"


# --- 4. bad workload modules and options: one line, exit 2 ---------------------------------------


def _bad_plan(tmp_path: Path, stem: str, source: str) -> Path:
    (tmp_path / f"{stem}.py").write_text(source, encoding="utf-8")
    plan = tmp_path / f"{stem}.toml"
    plan.write_text(
        FAULTY.read_text(encoding="utf-8").replace('module = "faulty.py"', f'module = "{stem}.py"'), encoding="utf-8"
    )
    return plan


GOOD_MODULE = (REPO / "tests" / "workloads" / "faulty.py").read_text(encoding="utf-8")
BAD_MODULES = [
    # stem, source, expected in the one line, whether a run folder is made
    ("bad_syntax", "def build_model(:\n", ["bad_syntax.py line 1: SyntaxError", "expected a Python module"], False),
    (
        "bad_raises",
        "raise ImportError('no torch_neuronx here')\n",
        ["bad_raises.py: raised on import: ImportError: no torch_neuronx here"],
        True,
    ),
    ("bad_exits", "import sys\nsys.exit(3)\n", ["bad_exits.py: called sys.exit(3) during import"], True),
    (
        "bad_lacks",
        GOOD_MODULE.replace("def build_model(", "def build_the_model("),
        ["bad_lacks.py lacks build_model", "expected build_model() -> torch.nn.Module"],
        True,
    ),
    (
        "bad_tensor",
        GOOD_MODULE.replace('return {"y": model(inputs["x"])}', 'return model(inputs["x"])'),
        ["bad_tensor.py: run_model() returned a Tensor", "expected run_model(model, inputs) -> dict[str, Tensor]"],
        True,
    ),
    (
        "bad_mixed",
        GOOD_MODULE.replace('return {"y": model(inputs["x"])}', 'return {"y": model(inputs["x"]), "count": 3}'),
        ["bad_mixed.py: run_model() returned a mapping of Tensor, int (not a tensor under a string: 'count')"],
        True,
    ),
    (
        "bad_empty",
        GOOD_MODULE.replace('return {"y": model(inputs["x"])}', "return {}"),
        ["bad_empty.py: run_model() returned a mapping of nothing", "expected run_model(model, inputs)"],
        True,
    ),
    (
        "bad_build",
        GOOD_MODULE.replace(
            "    torch.manual_seed(0)\n    model =", "    raise OSError('weights not found')\n    model ="
        ),
        ["bad_build.py: build_model() raised OSError: weights not found"],
        True,
    ),
    (
        "bad_model",
        GOOD_MODULE.replace("    return model.eval()", "    return 'a model'"),
        ["bad_model.py: build_model() returned str; expected a torch.nn.Module"],
        True,
    ),
    (
        "bad_origin",
        GOOD_MODULE + 'WEIGHTS_ORIGIN = "trained"\n',
        ["bad_origin.py: WEIGHTS_ORIGIN 'trained' is none of pretrained, synthetic, none"],
        True,
    ),
]


@pytest.mark.parametrize(("stem", "source", "expected", "folder"), BAD_MODULES, ids=[b[0] for b in BAD_MODULES])
def test_a_bad_workload_module_is_one_line_and_exit_2(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], stem: str, source: str, expected: list[str], folder: bool
) -> None:
    plan = _bad_plan(tmp_path, stem, source)
    out = tmp_path / "runs"
    code = collector_main(["--workload", str(plan), "--target", "cpu", "--out", str(out), "--cold", "off"])
    captured = capfd.readouterr()
    assert code == 2
    _no_traceback(captured.err)
    stops = _stop_lines(captured.err)
    assert len(stops) == 1 and all(part in stops[0] for part in expected), captured.err[-2000:]
    runs = list(out.glob("*/events.jsonl")) if out.exists() else []
    if not folder:
        assert not out.exists() or not any(out.iterdir()), "nothing ran: no run folder"
        return
    assert len(runs) == 1
    _validates(runs[0])
    end = _events(runs[0])[-1]
    assert end.kind == "run_end" and end.status == "aborted" and all(part in end.reason for part in expected[:1])


BAD_OPTIONS = [
    (["--cold-timeout", "0"], "argument --cold-timeout: expected a number of seconds above 0, got '0'"),
    (["--cold-timeout", "-5"], "argument --cold-timeout: expected a number of seconds above 0, got '-5'"),
    (["--cold-timeout", "nan"], "argument --cold-timeout: expected a number of seconds above 0, got 'nan'"),
    (["--warm", "0"], "--warm takes a count from 1 to 10000, got 0"),
    (["--warm", "-2"], "--warm takes a count from 1 to 10000, got -2"),
    (["--warm", "x"], "argument --warm: invalid int value: 'x'"),
    (["--modes", "fast"], "--modes takes eager and/or compiled, not 'fast'"),
    (["--modes", ""], "--modes takes eager and/or compiled, not ''"),  # it had run every mode
    # A review: a --profile that matched nothing ran with no trace, unsaid; an --out inside the
    # collector's folder had its runs hashed as collector source (two runs of one code differed).
    (["--profile", "nomatch*"], "--profile 'nomatch*' matches none of the 4 chosen cells that are profiled"),
    (["--profile", ""], "--profile '' matches none of the 4 chosen cells that are profiled"),
    (["--out", "/tmp/" + "b" * 300 + "/x"], "File name too long"),  # a traceback from the folder's check
    (
        ["--out", str(REPO / "collector" / "runs")],
        f"--out {REPO / 'collector' / 'runs'} is inside the collector's own folder",
    ),
]


def test_run_names_the_default_command(capsys: pytest.CaptureFixture[str]) -> None:
    """`python -m collector run --help` printed the help, then `run --workload ...` was refused
    as an unrecognised argument: `run` is the default command's name."""
    assert collector_main(["run", "--workload", str(FAULTY), "--target", "cpu", "--list"]) == 0
    listed = capsys.readouterr().out.split()
    assert collector_main(["--workload", str(FAULTY), "--target", "cpu", "--list"]) == 0
    assert listed and listed == capsys.readouterr().out.split()


def test_an_interpreter_older_than_3_11_is_one_line_and_exit_2() -> None:
    """On Python 3.10 (a device image's venv, say) every command, --help included, ended in a
    traceback from tomllib's import. The package says what it needs first (the interpreter's
    version is stood in for here: this host has no older Python)."""
    done = subprocess.run(
        [sys.executable, "-c", "import sys; sys.version_info = (3, 10, 12); import collector.__main__"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        f"collector: needs Python 3.11 or newer, this is 3.10 ({sys.executable}); run it with a Python 3.11+ environment that has torch"
    ]


@pytest.mark.parametrize(("extra", "expected"), BAD_OPTIONS, ids=[" ".join(b[0]) for b in BAD_OPTIONS])
def test_a_bad_option_is_one_line_and_exit_2(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], extra: list[str], expected: str
) -> None:
    out = tmp_path / "runs"
    try:
        code = collector_main(["--workload", str(FAULTY), "--target", "cpu", "--out", str(out), *extra])
    except SystemExit as exc:
        code = exc.code
    err = capfd.readouterr().err
    assert code == 2
    _no_traceback(err)
    assert len(err.strip().splitlines()) == 1 and expected in err, err
    assert not out.exists()


EMPTY_PATHS = [
    (["--workload", "", "--out", "runs"], "argument --workload: an empty path"),
    (["--workload", str(FAULTY), "--out", ""], "argument --out: an empty path"),
    (["inspect", "--workload", ""], "argument --workload: an empty path"),
    (["inspect", "--workload", str(FAULTY), "--out", ""], "argument --out: an empty path"),
]


@pytest.mark.parametrize(("argv", "expected"), EMPTY_PATHS, ids=["workload", "out", "inspect-workload", "inspect-out"])
def test_an_empty_path_option_is_one_line_and_exit_2_and_writes_nothing_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str], argv: list[str], expected: str
) -> None:
    """Path("") is the current folder: --out "$UNSET" once wrote a whole run where the shell stood."""
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    target = [] if argv[0] == "inspect" else ["--target", "cpu", "--cold", "off"]
    try:
        code = collector_main([*argv, *target])
    except SystemExit as exc:
        code = exc.code
    err = capfd.readouterr().err
    assert code == 2
    _no_traceback(err)
    assert len(err.strip().splitlines()) == 1 and expected in err, err
    assert list(tmp_path.rglob("*")) == [here]


# --- 7. an out folder that cannot be written ----------------------------------------------------


def _a_file(tmp_path: Path) -> tuple[Path, str]:
    (tmp_path / "taken").write_text("x", encoding="utf-8")
    return tmp_path / "taken", "taken is not a folder"


def _under_a_file(tmp_path: Path) -> tuple[Path, str]:
    (tmp_path / "taken").write_text("x", encoding="utf-8")
    return tmp_path / "taken" / "runs", "taken is not a folder"


def _read_only(tmp_path: Path) -> tuple[Path, str]:
    if os.geteuid() == 0:
        pytest.skip("root writes into a read-only folder; the other cases cover the check")
    folder = tmp_path / "locked"
    folder.mkdir(mode=0o555)
    return folder / "runs", "locked is not writable"


@pytest.mark.parametrize("make", [_a_file, _under_a_file, _read_only], ids=["a-file", "under-a-file", "read-only"])
def test_an_out_folder_that_cannot_be_written_is_one_line_and_exit_2(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], make: Callable[[Path], tuple[Path, str]]
) -> None:
    out, expected = make(tmp_path)
    code = collector_main(["--workload", str(FAULTY), "--target", "cpu", "--out", str(out)])
    err = capfd.readouterr().err
    assert code == 2
    _no_traceback(err)
    assert (
        len(err.strip().splitlines()) == 1
        and f"--out {out}" in err
        and expected in err
        and "expected a writable folder" in err
    ), err


# --- 6. a full disk or a file-size limit --------------------------------------------------------


SPACE_LIMITS = [
    # file-size limit in bytes, FAULTY, the file that meets it
    # run_start (about 1.5 kB with its provenance's five file paths and hashes, and the entries
    # of the collector's own files) fits, the environment does not
    (2600 + len(json.dumps(provenance([])["files"])), "", "events.jsonl"),
    (100_000, "big-weights@0", "weights.pt"),
]


@pytest.mark.parametrize(("limit", "fault", "where"), SPACE_LIMITS, ids=[s[2] for s in SPACE_LIMITS])
def test_a_file_size_limit_stops_with_one_line_and_a_valid_log(
    tmp_path: Path, limit: int, fault: str, where: str
) -> None:
    done = _run_under_a_file_size_limit(tmp_path, limit, fault)
    assert done.returncode == 4, done.stderr[-3000:]
    _no_traceback(done.stderr)
    stops = _stop_lines(done.stderr)
    assert len(stops) == 1 and "out of space" in stops[0], done.stderr[-3000:]
    assert where in stops[0] and "File too large" in stops[0] and "the run had written" in stops[0]
    # The size said is the size written, to its last figure (12 kB read "0.0 MB", 60 kB "0.1 MB").
    written = re.search(r"the run had written ([\d.]+) (bytes|kB|MB)", stops[0])
    assert written, stops[0]
    said = float(written[1]) * {"bytes": 1, "kB": 1e3, "MB": 1e6}[written[2]]
    actual = sum(p.stat().st_size for p in tmp_path.glob("*/**/*") if p.is_file())
    # Said before the run_end line was written (which ``actual`` holds), rounded to the kB.
    end_line = next(tmp_path.glob("*/events.jsonl")).read_bytes().rstrip(b"\n").rsplit(b"\n", 1)[-1]
    slack = (len(end_line) + 1 if b'"run_end"' in end_line else 0) + 500
    assert abs(said - actual) <= max(slack, 0.05 * actual), (stops[0], actual)
    assert "the log is valid up to its last line and incomplete" in stops[0]
    log = next(tmp_path.glob("*/events.jsonl"))
    assert log.stat().st_size <= limit
    _validates(log)
    events = _events(log)
    assert events[0].kind == "run_start"
    if events[-1].kind == "run_end":
        assert events[-1].status == "aborted" and "out of space" in events[-1].reason
    if where == "weights.pt":
        assert events[-1].kind == "run_end", "a short run_end fits below the limit"
        assert not (log.parent / "artifacts" / "weights.pt").exists(), "the partly written file is removed"


def test_the_size_a_run_had_written_is_never_rounded_to_nothing() -> None:
    """The out-of-space line said 'the run had written 0.0 MB so far' after about 12 kB."""
    assert [runner._size(n) for n in (3_383, 12_345, 999_499, 2_500_000)] == [
        "3383 bytes",
        "12 kB",
        "999 kB",
        "2.5 MB",
    ]


def test_a_file_size_limit_below_run_start_keeps_no_run_folder(tmp_path: Path) -> None:
    # run_start (about 1.5 kB) does not fit, a run_end would: a log of a run_end alone is invalid.
    done = _run_under_a_file_size_limit(tmp_path, 1000, "")
    assert done.returncode == 4, done.stderr[-3000:]
    _no_traceback(done.stderr)
    stops = _stop_lines(done.stderr)
    assert len(stops) == 1 and "out of space" in stops[0] and "no run folder was kept" in stops[0], stops
    assert list(tmp_path.iterdir()) == []


def _run_under_a_file_size_limit(tmp_path: Path, limit: int, fault: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["FAULTY"] = fault

    def limit_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))

    done = subprocess.run(
        _collector_command(tmp_path, "--cold", "off", "--warm", "2"),
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=limit_files,
        check=False,
    )
    return done


# --- 8. a cold-start child past --cold-timeout --------------------------------------------------


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] == "Z"  # a zombie has ended
    except (FileNotFoundError, ProcessLookupError):  # the read races with the process ending
        return True


def _hanging_cold_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, timeout: float
) -> tuple[Path | None, int, list[int]]:
    pidfile = tmp_path / "pids"
    monkeypatch.setenv("FAULTY", "cold-hang@1")
    monkeypatch.setenv("FAULTY_PIDFILE", str(pidfile))
    # A compiled cell: an eager cell takes its cold call in-process and starts no child.
    run_dir, code = _execute(tmp_path, only=[B1[1]], cold="fresh-process", cold_timeout=timeout)
    pids = [int(p) for p in pidfile.read_text(encoding="utf-8").split()] if pidfile.exists() else []
    return run_dir, code, pids


@pytest.mark.slow
def test_a_cold_start_past_its_timeout_is_ended_and_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    run_dir, code, pids = _hanging_cold_run(tmp_path, monkeypatch, 20.0)
    err = capfd.readouterr().err
    assert code == 0, err[-2000:]
    _no_traceback(err)
    assert len(pids) == 2, "the cold child started its own child before it hung"
    assert all(_gone(pid) for pid in pids), "the child and its process group were ended"
    assert "cold run timed out after 20 s" in err
    log = run_dir / "events.jsonl"
    _validates(log)
    events = _events(log)
    timings = [e for e in events if e.kind == "timing"]
    assert [t.cold_timed_out_after_s for t in timings if t.cold_timed_out_after_s] == [20.0]
    assert not [t for t in timings if t.cold] and [t for t in timings if t.warm]
    assert events[-1].status == "complete"
    out = tmp_path / "report"
    done = CliRunner().invoke(reportgen_main, ["report", str(log), "--out", str(out), "--format", "md"])
    assert done.exit_code in (0, 1), done.output
    text = "\n".join(p.read_text(encoding="utf-8") for p in out.rglob("*.md"))
    assert "not measured: timed out after 20 s" in text


@pytest.mark.slow
def test_a_signal_during_cold_timing_ends_the_child_and_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    pidfile = tmp_path / "pids"

    def send_when_hung() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (
            pidfile.exists() and len(pidfile.read_text(encoding="utf-8").split()) == 2
        ):
            time.sleep(0.1)
        os.kill(os.getpid(), signal.SIGTERM)

    thread = threading.Thread(target=send_when_hung)
    thread.start()
    run_dir, code, pids = _hanging_cold_run(tmp_path, monkeypatch, 600.0)
    thread.join(10)
    err = capfd.readouterr().err
    assert code == 143
    _no_traceback(err)
    assert len(pids) == 2 and all(_gone(pid) for pid in pids)
    log = run_dir / "events.jsonl"
    _validates(log)
    events = _events(log)
    assert events[-1].status == "aborted" and "SIGTERM" in events[-1].reason


def test_a_dtype_without_its_criteria_is_skipped_with_the_reason_and_the_others_run(tmp_path: Path) -> None:
    """A group that must not run (its dtype has no task criterion) records each cell as a skip
    that says why; the float32 cells of the same run still run and pass."""
    workload = tmp_path / "workload"
    workload.mkdir()
    (workload / "faulty.py").write_text((FAULTY.parent / "faulty.py").read_text(encoding="utf-8"), encoding="utf-8")
    text = (
        FAULTY.read_text(encoding="utf-8")
        .replace('dtypes = ["float32"]', 'dtypes = ["float32", "float64"]')
        .replace("[timing]", "[tolerances.float64]\natol = 1e-9\nrtol = 1e-9\n\n[timing]")
    )
    (workload / "faulty.toml").write_text(text, encoding="utf-8")
    run_dir, code = execute(
        load_plan(workload / "faulty.toml"),
        PlainBackend(),
        Options(target="cpu", out_dir=tmp_path / "runs", cold="off", warm_repetitions=2),
    )
    assert code == 0 and run_dir is not None
    results = {e.case: e for e in _events(run_dir / "events.jsonl") if e.kind == "case_result"}
    assert len(results) == 8
    for case, result in results.items():
        if "float64" in case:
            assert result.status == "skipped" and "no task criterion for float64" in (result.skip_reason or ""), (
                case,
                result,
            )
        else:
            assert result.status == "pass", (case, result)


# --- a non-finite reference element: every statistic finite or null ----------------------------


# y has 1 x 4 x 4 = 16 elements at batch 1: the first, a middle and the last.
@pytest.mark.parametrize("where", [0, 7, 15], ids=["first", "middle", "last"])
@pytest.mark.parametrize("fault", ["nan-at", "inf-at"])
def test_a_non_finite_reference_element_is_recorded_not_a_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str], fault: str, where: int
) -> None:
    # The output equals the reference there exactly; every other element is within tolerance.
    events, _ = _faulty_eager_run(tmp_path, monkeypatch, capfd, f"{fault}@{where}", only=["b1-*"])
    result = next(e for e in events if e.kind == "case_result")
    stats = result.error_stats
    # NaN - NaN and Inf - Inf are NaN: that element (and only it) fails, and it is the worst one.
    assert stats.mismatched == 1
    assert stats.worst_index == [0, where // 4, where % 4]
    assert stats.allowed_at_worst is None and stats.diff_at_worst is None
    assert stats.max_abs is None and stats.max_rel is None


# --- an output that changes shape between two calls ---------------------------------------------


def test_a_reference_whose_shape_changes_between_calls_fails_that_shape_not_a_noise_floor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    # Broadcasting [2, 4, 4] against [2, 1, 4] must not become a "noise floor" of the reference.
    events, _ = _faulty_eager_run(tmp_path, monkeypatch, capfd, "reshape@2")
    assert [e.shape for e in events if e.kind == "reference"] == ["b1-l4-contiguous"]
    results = {e.case: e for e in events if e.kind == "case_result"}
    assert results[B1[0]].status == "pass"
    failed = results[B2[0]]
    assert failed.status == "error" and failed.failure.phase == "reference", failed
    assert "changed shape" in failed.failure.message and "[2, 4, 4] then [2, 1, 4]" in failed.failure.message


def test_a_keyboard_interrupt_raised_inside_a_cell_ends_the_run_with_its_run_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    # A library that puts Python's own SIGINT handler back turns Ctrl-C into KeyboardInterrupt.
    from collector.run import cells

    def to_device(inputs: dict[str, torch.Tensor], device: torch.device) -> dict[str, torch.Tensor]:
        raise KeyboardInterrupt

    monkeypatch.setattr(cells, "to_device", to_device)
    run_dir, code = _execute(tmp_path, modes=["eager"])
    err = capfd.readouterr().err
    assert code == 130, err[-2000:]
    _no_traceback(err)
    assert _stop_lines(err)[-1].startswith("collector: aborted by KeyboardInterrupt"), err
    log = run_dir / "events.jsonl"
    _validates(log)
    end = _events(log)[-1]
    assert end.kind == "run_end" and end.status == "aborted" and "KeyboardInterrupt" in end.reason


# --- a signal while torch imports -----------------------------------------------------------------


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_while_torch_imports_is_one_line_and_writes_nothing(tmp_path: Path, signum: int) -> None:
    mark, out, scratch = tmp_path / "importing", tmp_path / "runs", tmp_path / "tmp"
    scratch.mkdir()
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO / "tests" / "slow_import"),
        "SLOW_IMPORT_MARK": str(mark),
        "TMPDIR": str(scratch),
    }
    proc = subprocess.Popen(
        _collector_command(out),
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not mark.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert mark.exists(), "the collector never began importing torch"
        proc.send_signal(signum)
        stdout, stderr = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == {signal.SIGINT: 130, signal.SIGTERM: 143}[signum], stderr
    assert stderr.splitlines() == [
        f"collector: interrupted before the run started ({signal.Signals(signum).name}); nothing was written"
    ]
    assert stdout == ""
    assert not out.exists() and list(scratch.iterdir()) == [], "nothing is written"


# --- kill -9 of the collector during a cold call: no process of the run is left ---------------------


def _tagged(tag: str) -> list[int]:
    """The processes whose environment carries ``tag``: the collector and all it started."""
    found, marker = [], f"MR_ORPHAN_TAG={tag}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            tagged = marker in (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if tagged and not _gone(int(entry.name)):  # the environment first: most processes are not the run's
            found.append(int(entry.name))
    return found


def _child_cmd(pid: int) -> bytes:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes()
    except OSError:
        return b""


def _kill_collector_when(
    tmp_path: Path, moment: Callable[[int, str, Path], bool], fault: str, timeout: float = 300
) -> tuple[Path, list[int]]:
    """Start a collector on one compiled cell; SIGKILL it once ``moment(collector, the run's
    tag, temp dir)`` holds. Returns the temp dir and the pids the run had then."""
    tag, scratch = os.urandom(6).hex(), tmp_path / "tmp"
    scratch.mkdir()
    env = {
        **os.environ,
        "MR_ORPHAN_TAG": tag,
        "TMPDIR": str(scratch),
        "FAULTY": fault,
        "FAULTY_PIDFILE": str(tmp_path / "pids"),
    }
    proc = subprocess.Popen(
        _collector_command(tmp_path / "runs", "--only", B1[1]),
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and proc.poll() is None and not moment(proc.pid, tag, tmp_path):
            time.sleep(0.05)
        assert proc.poll() is None, "the collector ended before the moment came"
        assert time.monotonic() < deadline, "the moment never came"
        had = _tagged(tag)
        proc.kill()
        proc.wait()
        deadline = time.monotonic() + 5  # "after a few seconds"
        while _tagged(tag) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = _tagged(tag)
        for pid in left:  # never leave them to the rest of the suite
            os.kill(pid, signal.SIGKILL)
        assert left == [], f"still alive 5 s after the collector was killed: {[_child_cmd(p) for p in left]}"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return scratch, had


def _cell_child_started(collector: int, tag: str, tmp: Path) -> bool:
    return any(b"collector.cellproc" in _child_cmd(p) for p in _tagged(tag))


def _grandchild_started(collector: int, tag: str, tmp: Path) -> bool:
    # The pid file alone (no scan of every process's environment at each poll).
    pidfile = tmp / "pids"
    return pidfile.exists() and len(pidfile.read_text(encoding="utf-8").split()) == 2


@pytest.mark.parametrize(
    "moment", [_cell_child_started, _grandchild_started], ids=["child-importing", "child-and-its-child-running"]
)
def test_kill_9_of_the_collector_leaves_no_process_of_the_run(
    tmp_path: Path, moment: Callable[[int, str, Path], bool]
) -> None:
    # cold-hang: the fresh process starts a child of its own, then sleeps past any timeout.
    scratch, had = _kill_collector_when(tmp_path, moment, "cold-hang@1")
    assert len(had) >= 2, "the collector had its fresh process when it was killed"
    left = sorted(p.name for p in scratch.iterdir() if p.name.startswith("collector-"))
    assert left, "the killed run's cache folders are still there (nothing removed them)"
    from collector import lifeline

    removed = lifeline.sweep_left_behind(scratch)
    assert sorted(p.name for p in removed) == left and not any(scratch.iterdir()), "the next run removes them"


def _compiling(collector: int, tag: str, tmp: Path) -> bool:
    # A cold compile writes Inductor's cache into the cell's own folder below the run's cache
    # folder (kept for the later compiles of its shape), or into a temporary one.
    scratch = tmp / "tmp"
    return any(p.is_dir() for p in scratch.glob("collector-cache-*/caches/*/inductor")) or any(
        (p / "inductor").is_dir() for p in scratch.glob("collector-cold-*")
    )


@pytest.mark.slow
def test_kill_9_of_the_collector_during_a_real_compile_leaves_no_process_of_the_run(tmp_path: Path) -> None:
    _kill_collector_when(tmp_path, _compiling, "")


def test_a_run_removes_cache_folders_a_killed_collector_left_and_keeps_live_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    import tempfile

    from collector import lifeline

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    stale, live, foreign = (
        scratch / "collector-cold-stale",
        scratch / "collector-cache-live",
        scratch / "collector-cold-unmarked",
    )
    for folder, owner in ((stale, ended.pid), (live, os.getpid()), (foreign, None)):
        (folder / "inductor").mkdir(parents=True)
        if owner is not None:
            (folder / lifeline.IN_USE).write_text(f"{owner}\n", encoding="utf-8")
    # A backend log channel's file of a collector killed with -9 (no atexit ran), and a live one's,
    # named and made as tempfile.mkstemp makes them (eight random characters, owner-only).
    stale_log, live_log = (
        scratch / f"{lifeline.BACKEND_LOG_PREFIX}{pid}-ab_12xyz.log" for pid in (ended.pid, os.getpid())
    )
    # Planted: a pid past the kernel's range (os.kill raised OverflowError: the run ended in an
    # internal error) and a process group's number; neither is a process, neither is removed.
    planted = [
        scratch / f"{lifeline.BACKEND_LOG_PREFIX}9999999999-abcdefgh.log",
        scratch / f"{lifeline.BACKEND_LOG_PREFIX}0-abcdefgh.log",
    ]
    for path in (stale_log, live_log, *planted):
        path.write_text("", encoding="utf-8")
        path.chmod(0o600)
    # A user's files named alike: a date where the pid goes, and one readable by others; kept.
    for name in (
        f"{lifeline.BACKEND_LOG_PREFIX}20261207-nightly.log",
        f"{lifeline.BACKEND_LOG_PREFIX}{ended.pid}-sharedlg.log",
    ):
        planted.append(scratch / name)
        planted[-1].write_text("mine\n", encoding="utf-8")
        planted[-1].chmod(0o644 if "shared" in name else 0o600)
    for name, owner in (("collector-cache-huge", "99999999999"), ("collector-cache-group", "-1")):
        (scratch / name).mkdir()
        (scratch / name / lifeline.IN_USE).write_text(f"{owner}\n", encoding="utf-8")
        planted.append(scratch / name)
    run_dir, code = _execute(tmp_path, modes=["eager"], only=["b1-*"])
    err = capfd.readouterr().err
    assert code == 0, err[-2000:]
    assert not stale.exists() and live.exists() and foreign.exists()
    assert "removed 1 compile-cache folder(s) a killed collector was writing" in err
    assert not stale_log.exists() and live_log.exists()
    assert all(path.exists() for path in planted)
    assert f"removed 1 backend log file(s) of collectors that are gone: {stale_log.name}" in err


@pytest.mark.parametrize(
    "exc",
    [
        RuntimeError(
            "CppCompileError: g++: internal compiler error: File size limit exceeded signal terminated program"
        ),
        RuntimeError("neuronx-cc failed: OSError: [Errno 28] No space left on device: '/tmp/neuroncc/x.neff'"),
        OSError(28, "No space left on device"),
    ],
    ids=["compiler-file-size-limit", "compiler-disk-full", "oserror"],
)
def test_a_cell_that_failed_for_lack_of_space_ends_the_run_not_blames_the_backend(exc: Exception) -> None:
    """A compiler that could not write its files (a full /tmp, a file-size limit) reported it
    only in its message: the cell was logged as the backend failing to compile, and the run
    ended complete with exit 0. It is the host's failure: OutOfSpace ends the run (exit 4)."""
    from collector.eventlog import OutOfSpace
    from collector.run.capture import failure

    wrapped = RuntimeError("BackendCompilerFailed: backend='inductor' raised an error")
    wrapped.__cause__ = exc
    for raised in (exc, wrapped):
        with pytest.raises(OutOfSpace, match="compile phase"):
            failure("compile", raised)
    assert failure("compile", RuntimeError("unsupported operator aten::foo"))["phase"] == "compile"


def test_a_neuron_run_that_cannot_start_leaves_no_file_behind(tmp_path: Path) -> None:
    """--target neuron sets the [Neuron] log channel to a temporary file before torch imports;
    a run that ends there (no torch_neuronx: exit 3) left that file in the temporary folder,
    a write outside --out after 'nothing was written'."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    plan = Path(__file__).resolve().parent / "workloads" / "faulty.toml"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "collector",
            "--workload",
            str(plan),
            "--target",
            "neuron",
            "--out",
            str(tmp_path / "runs"),
        ],
        cwd=Path(__file__).resolve().parent.parent,
        env={**os.environ, "TMPDIR": str(temp), "FAULTY": ""},
        capture_output=True,
        text=True,
        timeout=300,
    )
    if proc.returncode != 3:
        pytest.skip(f"a neuron backend is importable here (exit {proc.returncode})")
    assert list(temp.iterdir()) == [] and not (tmp_path / "runs").exists(), proc.stderr


def test_a_neuron_run_interrupted_while_torch_imports_leaves_no_file_behind(tmp_path: Path) -> None:
    """Ctrl-C while torch_neuronx (and torch) import ends the process at once with os._exit, so
    no atexit ran and the [Neuron] log's temporary file stayed after 'nothing was written'."""
    temp, fake = tmp_path / "tmp", tmp_path / "fake" / "torch_neuronx"
    temp.mkdir()
    fake.mkdir(parents=True)
    started = tmp_path / "importing"
    (fake / "__init__.py").write_text(
        f"import pathlib, time\npathlib.Path({str(started)!r}).touch()\ntime.sleep(120)\n", encoding="utf-8"
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "collector",
            "--workload",
            str(FAULTY),
            "--target",
            "neuron",
            "--out",
            str(tmp_path / "runs"),
        ],
        cwd=REPO,
        env={**os.environ, "TMPDIR": str(temp), "PYTHONPATH": f"{tmp_path / 'fake'}{os.pathsep}{REPO}"},
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        for _ in range(600):
            if started.exists() or proc.poll() is not None:
                break
            time.sleep(0.1)
        assert started.exists(), "the stand-in torch_neuronx was not imported"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 130 and "nothing was written" in err, err
    assert list(temp.iterdir()) == [] and not (tmp_path / "runs").exists()


def test_a_lazy_module_s_weights_are_logged_as_not_hashed_and_the_run_goes_on(tmp_path: Path) -> None:
    """Before: a model built with nn.LazyLinear (its parameters uninitialised until the first
    call) ended the run with "internal error: ValueError: Attempted to use an uninitialized
    parameter" and exit 1, from the weights' content hash. The hash is now unknown with that
    reason, and the run records its cells."""
    folder = tmp_path / "lazy"
    folder.mkdir()
    (folder / "lazy.py").write_text(
        "import torch\nfrom torch import nn\n"
        'MODEL_REVISION = "lazy linear (synthetic test workload)"\nWEIGHTS_ORIGIN = "synthetic"\n'
        'TASK_METRIC = "max_abs_to_reference"\n'
        "def build_model():\n    torch.manual_seed(0)\n    return nn.Sequential(nn.LazyLinear(4)).eval()\n"
        "def make_inputs(batch, length, layout):\n"
        '    return {"x": torch.randn(batch, length, 8, generator=torch.Generator().manual_seed(batch))}\n'
        'def run_model(model, inputs):\n    return {"y": model(inputs["x"])}\n'
        "def task_metric(outputs, reference, inputs):\n"
        '    return float((outputs["y"].double() - reference["y"].double()).abs().max())\n',
        encoding="utf-8",
    )
    (folder / "lazy.toml").write_text(
        FAULTY.read_text(encoding="utf-8").replace('module = "faulty.py"', 'module = "lazy.py"'), encoding="utf-8"
    )
    run_dir, code = execute(
        load_plan(folder / "lazy.toml"),
        PlainBackend(),
        Options(target="cpu", out_dir=tmp_path / "runs", cold="off", warm_repetitions=2, modes=["eager"]),
    )
    assert code == 0 and run_dir is not None
    events = _events(run_dir / "events.jsonl")
    weights = next(e for e in events if e.kind == "artifact" and e.role == "weights")
    assert weights.content_sha256 is None and "uninitialized parameter" in (weights.content_unknown_reason or "")
    assert [e.case for e in events if e.kind == "case_result"]


def test_the_collector_says_its_version(capsys: pytest.CaptureFixture[str]) -> None:
    """A review: `python -m collector --version` answered "the following arguments are required:
    --workload" (exit 2), where `reportgen --version` works."""
    from collector import __version__
    from collector.__main__ import parse_args

    with pytest.raises(SystemExit) as stop:
        parse_args(["--version"])
    assert stop.value.code == 0 and capsys.readouterr().out == f"collector {__version__}\n"


# --- a review of the collector before a device run: what workload code raises or says ------------


@pytest.mark.parametrize(
    ("fault", "kind", "message"),
    [
        ("cancelled@2", "CancelledError", "injected CancelledError (a BaseException) at batch 2"),
        ("unprintable@2", "_Unprintable", "(its message could not be read: str() raised ValueError)"),
    ],
)
def test_a_cells_failure_that_is_no_plain_exception_stays_that_cells(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    fault: str,
    kind: str,
    message: str,
) -> None:
    """run_model raising asyncio.CancelledError (a BaseException, not an Exception) ended the
    whole run with a traceback, exit 1 and no run_end; an exception whose __str__ raised ended
    it as an 'internal error'. Each is now its cell's failure, and the other cells run."""
    events, _ = _faulty_eager_run(tmp_path, monkeypatch, capfd, fault)
    results = {e.case: e for e in events if e.kind == "case_result"}
    assert results["b1-l4-contiguous-float32-eager"].status == "pass"
    failed = results["b2-l4-contiguous-float32-eager"]
    assert failed.status == "error" and failed.failure is not None
    assert (failed.failure.type, failed.failure.message) == (kind, message)
    assert events[-1].kind == "run_end" and events[-1].status == "complete"


@pytest.mark.filterwarnings("ignore:injected warning")  # (its later calls warn outside the cell's capture)
def test_a_cell_that_warns_on_and_on_keeps_its_first_warnings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """A model that issued 120,000 warnings made one case_result line of 22 MB, longer than a log
    line may be: 'internal error', the run aborted and its later cells never ran. A cell keeps
    its first 200 warnings and says how many more there were."""
    events, _ = _faulty_eager_run(tmp_path, monkeypatch, capfd, "warn-many@2")
    (noisy,) = [e for e in events if e.kind == "case_result" and e.case == "b2-l4-contiguous-float32-eager"]
    assert noisy.status == "pass" and len(noisy.warnings) == 201
    assert noisy.warnings[0] == "UserWarning: injected warning 0 at batch 2"
    # Every call of its model warns 120,000 times: the count is of the cell's own calls' warnings.
    counted = re.fullmatch(r"\.\.\. and ([\d,]+) more warnings in this cell, not kept", noisy.warnings[-1])
    assert counted is not None and int(counted[1].replace(",", "")) >= 120_000 - 200, noisy.warnings[-1]
    assert events[-1].kind == "run_end" and events[-1].status == "complete"


@pytest.mark.parametrize("fault", ["inputs@2", "no-mapping@2"])
def test_a_plan_with_comparison_rules_records_a_shapes_failure_on_its_cells(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str], fault: str
) -> None:
    """With a [compare.outputs] rule, the check of the rules against the model before the run
    called make_inputs and run_model unguarded: a workload failing at one shape ended the command
    with a traceback and no run, where without the rule that shape's cells recorded the failure."""
    plan = tmp_path / "faulty.toml"
    plan.write_text(
        FAULTY.read_text(encoding="utf-8").replace('module = "faulty.py"', f'module = "{FAULTY.parent / "faulty.py"}"')
        + '\n[compare.outputs.y]\nregion = [":", "0:2"]\n',
        encoding="utf-8",
    )
    monkeypatch.setenv("FAULTY", fault)
    code = collector_main(
        [
            "--workload",
            str(plan),
            "--target",
            "cpu",
            "--out",
            str(tmp_path / "runs"),
            "--modes",
            "eager",
            "--cold",
            "off",
            "--warm",
            "2",
        ]
    )
    err = capfd.readouterr().err
    _no_traceback(err)
    assert code == 0, err[-2000:]
    (log,) = (tmp_path / "runs").glob("*/events.jsonl")
    results = {e.case: e.status for e in _events(log) if e.kind == "case_result"}
    assert results == {"b1-l4-contiguous-float32-eager": "pass", "b2-l4-contiguous-float32-eager": "error"}


def test_a_profile_glob_of_cache_check_repeats_only_is_refused(capfd: pytest.CaptureFixture[str]) -> None:
    """A --profile matching only cache-check repeats, which are never profiled, ran with no trace, unsaid."""
    tiny = REPO / "collector" / "workloads" / "tiny_encoder.toml"
    only = ["--only", "b1-l16-contiguous-float32-compiled*"]
    assert collector_main(["--workload", str(tiny), "--target", "cpu", *only, "--profile", "*-repeat", "--list"]) == 2
    assert "--profile '*-repeat' matches none of the 1 chosen cells that are profiled" in capfd.readouterr().err


def test_the_out_check_of_a_link_loop_is_the_folders_one_line(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """The check that --out is not inside the collector resolved the path: a link loop there
    raised a traceback (even for --list), where the folder's own check says one line."""
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    out = tmp_path / "a" / "runs"
    assert collector_main(["--workload", str(FAULTY), "--target", "cpu", "--out", str(out), "--list"]) == 0
    capfd.readouterr()
    assert collector_main(["--workload", str(FAULTY), "--target", "cpu", "--out", str(out), "--modes", "eager"]) == 2
    err = capfd.readouterr().err
    _no_traceback(err)
    assert f"{tmp_path / 'a'} is a dangling link; expected a writable folder" in err


def test_inspect_refuses_an_out_inside_the_collector_and_a_name_too_long(capfd: pytest.CaptureFixture[str]) -> None:
    tiny = REPO / "collector" / "workloads" / "tiny_encoder.toml"
    inside = REPO / "collector" / "x.inspection.jsonl"
    try:
        assert collector_main(["inspect", "--workload", str(tiny), "--out", str(inside)]) == 2
        assert "is inside the collector's own folder" in capfd.readouterr().err and not inside.exists()
    finally:
        inside.unlink(missing_ok=True)  # (where the check failed: never left in the checkout)
    assert collector_main(["inspect", "--workload", str(tiny), "--out", "/tmp/" + "b" * 300 + ".jsonl"]) == 2
    err = capfd.readouterr().err
    _no_traceback(err)
    assert "File name too long (nothing was written)" in err


def test_a_failing_cell_keeps_the_warnings_before_its_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """A cell that failed recorded none of its warnings: its result was written before the
    block that captured them had handed them over (review of this round's fixes, finding 7)."""
    events, _ = _faulty_eager_run(tmp_path, monkeypatch, capfd, "warn-then-raise@2")
    (failed,) = [e for e in events if e.kind == "case_result" and e.case == "b2-l4-contiguous-float32-eager"]
    assert failed.status == "error" and failed.warnings == [
        "UserWarning: injected warning before the failure at batch 2"
    ]


class _OwnBaseException(BaseException):
    """A workload's own exception class that is no Exception."""


def test_a_workloads_base_exception_in_localisation_is_that_localisations_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """A BaseException from the model while a cell was localised aborted the whole run as a
    'collector error' (review of this round's fixes, finding 4): the localisation records it."""
    from collector import localize

    def measure(*args: Any, **kwargs: Any) -> dict[str, Any]:
        raise _OwnBaseException("submodule called outside run_model")

    monkeypatch.setattr(localize, "_measure", measure)
    plan = tmp_path / "faulty.toml"
    plan.write_text(
        FAULTY.read_text(encoding="utf-8").replace('module = "faulty.py"', f'module = "{FAULTY.parent / "faulty.py"}"')
        + "\n[localize]\nalways = true\n",
        encoding="utf-8",
    )
    monkeypatch.delenv("FAULTY", raising=False)
    run_dir, code = execute(
        load_plan(plan),
        PlainBackend(),
        Options(target="cpu", out_dir=tmp_path / "runs", cold="off", warm_repetitions=2, modes=["eager"]),
    )
    assert code == 0 and run_dir is not None, capfd.readouterr().err[-2000:]
    events = _events(run_dir / "events.jsonl")
    localized = [e for e in events if e.kind == "localization"]
    assert localized and all(e.failure == "_OwnBaseException: submodule called outside run_model" for e in localized)
    assert events[-1].kind == "run_end" and events[-1].status == "complete"


def test_a_base_exception_from_build_model_is_the_workloads_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """build_model raising a BaseException that is no Exception read 'internal error' (exit 1),
    the collector blamed for the workload's fault; a RuntimeError there is a workload error (2)."""
    monkeypatch.setenv("FAULTY", "build-cancelled@1")
    code = collector_main(
        ["--workload", str(FAULTY), "--target", "cpu", "--out", str(tmp_path / "runs"), "--modes", "eager"]
    )
    err = capfd.readouterr().err
    _no_traceback(err)
    assert code == 2 and "build_model() raised CancelledError: injected CancelledError in build_model" in err, err
    assert "internal error" not in err
