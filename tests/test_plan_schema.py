"""The plan schema: strict keys, the declared target, and the plan event the collector writes."""

from __future__ import annotations

import msgspec

from pathlib import Path

import pytest

from collector.plan import PlanError, load_plan


def _plan(tmp_path: Path, body: str, head: str = "") -> Path:
    (tmp_path / "w.py").write_text("", encoding="utf-8")
    path = tmp_path / "plan.toml"
    path.write_text(head + '[workload]\nname = "w"\nmodule = "w.py"\n' + body, encoding="utf-8")
    return path


MATRIX = "[matrix]\nshapes = [[1, 8]]\n"


def test_plan_declares_the_target_it_certifies(tmp_path: Path) -> None:
    plan = load_plan(_plan(tmp_path, 'target = "neuron"\n' + MATRIX))
    assert plan.intended_target == "neuron"
    assert load_plan(_plan(tmp_path, MATRIX)).intended_target is None, "optional: older plans load unchanged"


def test_unknown_target_is_a_plan_error(tmp_path: Path) -> None:
    with pytest.raises(PlanError, match="workload.target"):
        load_plan(_plan(tmp_path, 'target = "tpu"\n' + MATRIX))


def test_a_plan_may_name_its_target_by_an_alias_as_the_command_line_does(tmp_path: Path) -> None:
    # Before: --target trainium worked, and target = "trainium" in the plan was refused.
    assert load_plan(_plan(tmp_path, 'target = "trainium"\n' + MATRIX)).intended_target == "neuron"


def test_plan_event_records_the_intended_target() -> None:
    from reportgen.contract.events import Plan

    event = {
        "schema_version": "1.1",
        "seq": 2,
        "time": "2026-01-01T00:00:00Z",
        "kind": "plan",
        "workload": "w",
        "model_revision": "r",
        "target": "cpu",
        "reference": "cpu eager float32",
        "tolerances": {},
        "warm_repetitions": 1,
        "matrix": [
            {
                "case": "b1-l8-contiguous-float32-eager",
                "batch": 1,
                "length": 8,
                "layout": "contiguous",
                "dtype": "float32",
                "mode": "eager",
            }
        ],
        "timing_scope": {
            "preprocessing": False,
            "host_to_device": False,
            "output_retrieval": False,
            "synchronized": True,
        },
    }
    assert msgspec.convert({**event, "intended_target": "neuron"}, Plan).intended_target == "neuron"
    assert msgspec.convert(event, Plan).intended_target is None, "absent in older logs"


# --- strict keys: every mis-keyed plan of issue 16 names its key ---------------------------------

import json
import re
import os
import subprocess
import sys

from click.testing import CliRunner

from collector import planschema
from collector.plan import refused_on
from reportgen.cli import main as reportgen_main
from reportgen.judge import plan_doc
from reportgen.judge.backend_docs import COLLECTOR_RULES_PATH, render_collector_rules
from reportgen.judge.plancheck import review_plan
from tests.conftest import REPO

SHIPPED = sorted((REPO / "collector" / "workloads").glob("*.toml")) + sorted((REPO / "tests" / "plans").glob("*.toml"))


@pytest.mark.parametrize(
    "body,pattern",
    [
        (MATRIX + "[workload.x]\n", r"workload\.x: unknown key in \[workload\]"),
        (
            "dynamic = true\n" + MATRIX,
            r"plan.toml:4: workload\.dynamic: unknown key in \[workload\]; it belongs in \[compile\] as compile\.dynamic",
        ),
        (
            MATRIX + "[compile]\ndynamik = true\n",
            r"plan.toml:7: compile\.dynamik: unknown key in \[compile\]; did you mean 'dynamic'\?",
        ),
        (MATRIX + "[options]\ndynamic = true\n", r"plan.toml:6: options: unknown table.*did you mean \[compile\]\?"),
        # A misspelled table written only as the parent of another ([tolerance.bfloat16]) had no line.
        (
            MATRIX + "[tolerance.bfloat16]\natol = 1\n",
            r"plan.toml:6: tolerance: unknown table.*did you mean 'tolerances'\?",
        ),
        (
            MATRIX + '[options]\ncompile_mode = "default"\n',
            r"plan.toml:6: options: unknown table.*did you mean \[compile\]\? \(options\.compile_mode is compile\.mode\)",
        ),
        (
            MATRIX + '[compile]\ncompile_mode = "max-autotune"\n',
            r"compile\.compile_mode: unknown key in \[compile\]; did you mean 'mode'\?",
        ),
        (
            MATRIX + '[compile]\nmode = "max_autotune"\n',
            r"compile\.mode: expected one of .*did you mean 'max-autotune'\?",
        ),
        (
            MATRIX + "[timing]\nwarm_reps = 5\n",
            r"plan.toml:7: timing\.warm_reps: unknown key in \[timing\]; did you mean 'warm_repetitions'\?",
        ),
        (
            MATRIX + "[timing]\nscope = { preprocesing = true }\n",
            r"plan.toml:7: timing\.scope\.preprocesing: unknown key in \[timing\.scope\]; did you mean 'preprocessing'\?",
        ),
        (
            "[matrix]\nshapes = [[1, 8]]\nbuckets = [8]\n",
            r"plan.toml:6: matrix\.buckets: unknown key in \[matrix\]; it belongs in \[padding\] as padding\.buckets",
        ),
        (
            MATRIX + "[tolerances]\natol = 1e-5\n",
            r"tolerances\.atol: atol is not a dtype; it belongs in a sub-table such as \[tolerances\.float32\]",
        ),
        (
            MATRIX + "[tolerances.fp32]\natol = 1e-5\nrtol = 1e-4\n",
            r"tolerances\.fp32: unknown dtype; allowed: float32",
        ),
        (
            MATRIX + "[tolerances.float32]\natol = 1e-5\nrtol = 1e-4\nthreshold = 0.9\n",
            r"tolerances\.float32\.threshold: unknown key in \[tolerances\.float32\]",
        ),
        (
            MATRIX + '[inputs.ids]\ndtype = "int64"\nlayout = "noncontiguous"\n',
            r"inputs\.ids: layout is noncontiguous: say how",
        ),
        (
            MATRIX + '[inputs.ids]\ndtype = "int64"\nlayout = "contiguous"\nrange = [0, 9]\n',
            r"inputs\.ids\.range: unknown key in \[inputs\.ids\]; did you mean 'value_range'\?",
        ),
        (MATRIX + "[padding]\nbuckets = [512, 128]\n", r"padding\.buckets: list the buckets in ascending order"),
        (
            MATRIX + '[padding]\nbuckets = [128]\nabove_largest = "drop them"\n',
            r"padding\.above_largest: start the policy with one of reject, truncate, split",
        ),
        (
            MATRIX + '[compile]\nmode = "max-autotune"\nbackend_options = { x = 1 }\n',
            r"compile\.backend_options: torch\.compile takes either a mode or backend options",
        ),
    ],
)
def test_miskeyed_plans_name_the_key(tmp_path: Path, body: str, pattern: str) -> None:
    with pytest.raises(PlanError, match=pattern):
        load_plan(_plan(tmp_path, body))


def test_a_key_with_a_line_break_is_named_quoted_on_one_line(tmp_path: Path) -> None:
    with pytest.raises(PlanError) as err:
        load_plan(_plan(tmp_path, MATRIX + '[timing]\n"warm\\n" = 5\n'))
    assert 'timing."warm\\n": unknown key' in str(err.value) and "\n" not in str(err.value)


def test_top_level_target_belongs_in_workload(tmp_path: Path) -> None:
    with pytest.raises(
        PlanError, match=r"plan.toml:1: target: unknown top-level key.*it belongs in \[workload\] as workload\.target"
    ):
        load_plan(_plan(tmp_path, MATRIX, head='target = "neuron"\n'))


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_every_shipped_plan_validates_strictly(path: Path) -> None:
    plan = load_plan(path)
    assert plan.cells and plan.checked["workload"]["name"]


def test_readme_example_plan_validates(tmp_path: Path) -> None:
    text = (REPO / "collector" / "README.md").read_text(encoding="utf-8")
    example = text.split("## Writing a workload", 1)[1].split("```toml\n", 1)[1].split("```", 1)[0]
    (tmp_path / "my_encoder.py").write_text("", encoding="utf-8")
    path = tmp_path / "plan.toml"
    path.write_text(example, encoding="utf-8")
    plan = load_plan(path)
    assert plan.compile_options["fullgraph"] is True and plan.inputs["input_ids"]["value_range"] == [0, 30521]


# --- issue 19 item 4: bad plans give one line, exit 2 and no run folder ---------------------------

BAD_PLANS = [
    (
        "task without metric",
        MATRIX + '[tolerances.float32]\natol = 1e-5\nrtol = 1e-4\ntask = { op = ">=", threshold = 0.9 }\n',
        "tolerances.float32.task: missing 'metric'",
        9,
    ),
    (
        "task not a table",
        MATRIX + '[tolerances.float32]\natol = 1e-5\nrtol = 1e-4\ntask = "cosine"\n',
        "tolerances.float32.task: expected a table",
        9,
    ),
    ("shapes not a list", "[matrix]\nshapes = 8\n", "matrix.shapes: expected a list of [batch, length] pairs", 5),
    (
        "warm_repetitions a string",
        MATRIX + '[timing]\nwarm_repetitions = "x"\n',
        "timing.warm_repetitions: expected an integer, got a string 'x'",
        7,
    ),
    ("tolerances not a table", MATRIX + '[timing]\nwarmup = 1\n[reference]\ndtype = "float32"\n' + "", None, None),
    (
        "negative warm count",
        MATRIX + "[timing]\nwarm_repetitions = -3\n",
        "timing.warm_repetitions: expected at least 1, got -3",
        7,
    ),
    (
        "unknown reference dtype",
        MATRIX + '[reference]\ndtype = "float8"\n',
        "reference.dtype: expected one of float32, bfloat16, float16, float64, got 'float8'",
        7,
    ),
    (
        "nan threshold",
        MATRIX
        + '[tolerances.float32]\natol = 1e-5\nrtol = 1e-4\ntask = { metric = "m", op = ">=", threshold = nan }\n',
        "tolerances.float32.task.threshold: expected a finite number",
        9,
    ),
    (
        "shape beyond 64 bits",  # was run, and its log's plan event refused by every reader
        "[matrix]\nshapes = [[1, 99999999999999999999]]\n",
        "matrix.shapes: an integer of 20 digits is beyond the 64-bit range a run log records",
        5,
    ),
    (
        "tolerance no float can hold",  # was a traceback (OverflowError)
        MATRIX + "[tolerances.float32]\natol = 1" + "0" * 400 + "\nrtol = 1e-4\n",
        "tolerances.float32.atol: expected a finite number, got an integer of 401 digits",
        7,
    ),
]
BAD_PLANS[4] = (
    "tolerances not a table",
    'tolerances = 1e-5\n[workload]\nname = "w"\nmodule = "w.py"\n' + MATRIX,
    "tolerances: expected a table [tolerances], got a number",
    1,
)


def _bad_plan(tmp_path: Path, body: str) -> Path:
    (tmp_path / "w.py").write_text("", encoding="utf-8")
    path = tmp_path / "plan.toml"
    text = body if body.startswith("tolerances") else '[workload]\nname = "w"\nmodule = "w.py"\n' + body
    path.write_text(text, encoding="utf-8")
    return path


def _collector(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(REPO)
    return subprocess.run(
        [sys.executable, "-m", "collector", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


@pytest.mark.parametrize("name,body,message,line", BAD_PLANS, ids=[b[0] for b in BAD_PLANS])
def test_bad_plan_is_one_line_exit_2_and_no_run_folder(
    tmp_path: Path, name: str, body: str, message: str, line: int
) -> None:
    path = _bad_plan(tmp_path, body)
    out = tmp_path / "runs"
    done = _collector(["--workload", str(path), "--target", "cpu", "--out", str(out)], tmp_path)
    assert done.returncode == 2, done.stderr
    err = done.stderr.strip()
    assert "\n" not in err and "Traceback" not in err, err
    assert err.startswith(f"collector: plan error: {path}:{line}: "), err
    assert message in err, err
    assert not out.exists(), "no run folder for a plan that cannot run"
    checked = CliRunner().invoke(reportgen_main, ["plan-check", str(path)])
    assert checked.exit_code == 1 and "unreadable plan" in checked.output and message in checked.output


def test_a_module_name_with_a_control_character_is_a_plan_error(tmp_path: Path) -> None:
    """A NUL in workload.module once reached the file system and gave a traceback."""
    path = tmp_path / "plan.toml"
    path.write_text('[workload]\nname = "w"\nmodule = "w\\u0000.py"\n' + MATRIX, encoding="utf-8")
    done = _collector(["--workload", str(path), "--target", "cpu", "--out", str(tmp_path / "runs")], tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert (
        done.stderr.strip()
        == f"collector: plan error: {path}:3: workload.module: 'w\\x00.py' holds a control character; expected a file name such as \"my_encoder.py\""
    )
    checked = CliRunner().invoke(reportgen_main, ["plan-check", str(path)])
    assert (
        checked.exit_code == 1 and "holds a control character" in checked.output and "Traceback" not in checked.output
    )


def test_plan_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "plan.toml"
    path.write_bytes(b'[workload]\nname = "caf\xe9"\n')
    done = _collector(["--workload", str(path), "--target", "cpu", "--out", str(tmp_path / "runs")], tmp_path)
    assert (
        done.returncode == 2
        and done.stderr.strip()
        == f"collector: plan error: {path}:2: not UTF-8 (byte 0xe9 at offset 22 of the file); save the plan as UTF-8"
    )
    checked = CliRunner().invoke(reportgen_main, ["plan-check", str(path)])
    assert checked.exit_code == 1 and "not UTF-8" in checked.output


def test_negative_warm_option_is_a_usage_error(tmp_path: Path) -> None:
    done = _collector(
        [
            "--workload",
            str(REPO / "collector" / "workloads" / "tiny_encoder.toml"),
            "--target",
            "cpu",
            "--warm",
            "-1",
            "--out",
            str(tmp_path / "runs"),
        ],
        tmp_path,
    )
    assert (
        done.returncode == 2
        and "--warm takes a count from 1 to 10000, got -1" in done.stderr
        and not (tmp_path / "runs").exists()
    )


# --- the plan reference is generated from the schema --------------------------------------------


def test_plan_reference_is_current() -> None:
    assert plan_doc.DOC_PATH.read_text(encoding="utf-8") == plan_doc.render_doc(), (
        "run: python -m reportgen.judge.plan_doc"
    )


def test_plan_reference_documents_every_key_and_is_linked() -> None:
    doc = plan_doc.DOC_PATH.read_text(encoding="utf-8")
    for table in planschema.SCHEMA:
        for key in table.keys:
            assert f"| `{key.name}` |" in doc.split(f"### `{plan_doc._header(table)}`", 1)[1].split("### ", 1)[0], (
                f"{table.path}.{key.name}"
            )
    assert "](collector/PLAN.md)" in (REPO / "README.md").read_text(encoding="utf-8")
    assert "](PLAN.md)" in (REPO / "collector" / "README.md").read_text(encoding="utf-8")


def test_collector_copy_of_the_constraint_rules_is_current() -> None:
    assert COLLECTOR_RULES_PATH.read_text(encoding="utf-8") == render_collector_rules(), (
        "run: python -m reportgen.judge.backend_docs"
    )


def test_plan_schema_imports_without_torch_or_pydantic() -> None:
    code = "import sys; sys.modules['torch'] = None; sys.modules['pydantic'] = None; import collector.plan, collector.planschema; print('ok')"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=False)
    assert done.stdout.strip() == "ok", done.stderr


# --- compile options: honoured, recorded, refused where the target's constraints reject them -------

TINY_MODULE = str(REPO / "collector" / "workloads" / "tiny_encoder.py")


def _tiny_plan(tmp_path: Path, extra: str) -> Path:
    path = tmp_path / "plan.toml"
    path.write_text(
        f'[workload]\nname = "w"\nmodule = "{TINY_MODULE}"\n[matrix]\nshapes = [[1, 16]]\n' + extra, encoding="utf-8"
    )
    return path


def test_collector_refuses_options_the_target_rejects(tmp_path: Path) -> None:
    path = _tiny_plan(tmp_path, "[compile]\ndynamic = true\n")
    plan = load_plan(path)
    assert refused_on(plan, "cpu") is None
    why = refused_on(plan, "neuron")
    assert "compile.dynamic = true is refused on target neuron" in why and "static-shapes" in why
    assert "D-ref" in why and "https://awsdocs-neuron" in why and "neuron-native-2.33.toml" in why
    done = _collector(["--workload", str(path), "--target", "neuron", "--out", str(tmp_path / "runs")], tmp_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "refused on target neuron" in done.stderr
    assert not (tmp_path / "runs").exists()
    mode = load_plan(_tiny_plan(tmp_path, '[compile]\nmode = "reduce-overhead"\n'))
    assert 'compile.mode = "reduce-overhead" is refused' in refused_on(mode, "neuron")
    eager_only = tmp_path / "eager.toml"
    eager_only.write_text(
        path.read_text(encoding="utf-8").replace("[compile]", 'modes = ["eager"]\n[compile]'), encoding="utf-8"
    )
    assert refused_on(load_plan(eager_only), "neuron") is None, "no compiled cell: the options are never used"


def test_collector_refuses_a_plan_holding_an_undecided_value(tmp_path: Path) -> None:
    path = _tiny_plan(tmp_path, '[padding]\nbuckets = [16]\nabove_largest = "UNDECIDED: reject or truncate"\n')
    done = _collector(["--workload", str(path), "--target", "cpu", "--out", str(tmp_path / "runs")], tmp_path)
    assert done.returncode == 2 and f"{path}:8: padding.above_largest: holds a value no one agreed yet" in done.stderr
    assert not (tmp_path / "runs").exists()
    proposed = _tiny_plan(tmp_path, "[tolerances.float32]\natol = 1e-5\nrtol = 1e-4\nproposed = true\n")
    with pytest.raises(PlanError, match=r"plan.toml:9: tolerances.float32.proposed: holds a value no one agreed yet"):
        load_plan(proposed)
    assert load_plan(proposed, allow_undecided=True).tolerances["float32"]["atol"] == 1e-5


def test_compile_call_honours_the_plan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    from collector.backends import Backend

    seen: dict = {}
    monkeypatch.setattr(torch, "compile", lambda model, **kwargs: seen.update(kwargs) or model)
    plan = load_plan(
        _tiny_plan(
            tmp_path, '[compile]\ndynamic = true\nfullgraph = true\nbackend_options = { "epilogue_fusion" = false }\n'
        )
    )
    backend = Backend()
    backend.compile(torch.nn.Identity(), plan.compile_options)
    assert seen == {
        "backend": "inductor",
        "dynamic": True,
        "fullgraph": True,
        "mode": None,
        "options": {"epilogue_fusion": False},
    }
    assert backend.compile_options == {
        "dynamic": True,
        "mode": "default",
        "fullgraph": True,
        "backend_options": {"epilogue_fusion": False},
    }
    plan = load_plan(_tiny_plan(tmp_path, '[compile]\nmode = "max-autotune-no-cudagraphs"\n'))
    backend.compile(torch.nn.Identity(), plan.compile_options)
    assert seen["mode"] == "max-autotune-no-cudagraphs" and seen["options"] is None and seen["dynamic"] is False


@pytest.mark.slow
def test_compile_options_are_recorded_in_the_plan_and_each_compile_event(tmp_path: Path) -> None:
    from reportgen.contract.validation import read_log

    path = _tiny_plan(tmp_path, "[compile]\nfullgraph = true\n[timing]\nwarm_repetitions = 2\nwarmup = 0\n")
    done = _collector(
        [
            "--workload",
            str(path),
            "--target",
            "cpu",
            "--out",
            str(tmp_path / "runs"),
            "--cold",
            "off",
            "--modes",
            "compiled",
        ],
        tmp_path,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (run_dir,) = (tmp_path / "runs").iterdir()
    reading = read_log(run_dir / "events.jsonl")
    assert reading.valid and reading.complete
    plan = next(e for e in reading.events if e.kind == "plan")
    expected = {"dynamic": False, "mode": "default", "fullgraph": True, "backend_options": {}}
    assert msgspec.to_builtins(plan.compile_options) == expected
    compiles = [e for e in reading.events if e.kind == "compile"]
    assert compiles and all(msgspec.to_builtins(e.compile_options) == expected for e in compiles)


def test_report_shows_compile_options_and_declared_inputs_or_not_measured(tmp_path: Path) -> None:
    from reportgen.render.report import build_report
    from tests.conftest import FIXTURES

    build_report(FIXTURES / "synthetic_complete.jsonl", tmp_path / "old")
    for name in ("report.md", "report.html"):
        text = (tmp_path / "old" / name).read_text(encoding="utf-8")
        assert re.search(r"compile options.{0,80}not measured", text, re.S), name
    lines = (FIXTURES / "synthetic_complete.jsonl").read_text(encoding="utf-8").splitlines()
    events = [json.loads(line) for line in lines]
    for event in events:  # one collector writes its whole log in one version
        event["schema_version"] = "1.1"
    plan = next(e for e in events if e["kind"] == "plan")
    plan["compile_options"] = {"dynamic": False, "mode": "default", "fullgraph": True, "backend_options": {}}
    plan["declared_inputs"] = {
        "input_ids": {"dtype": "int64", "layout": "noncontiguous", "how": "slice", "value_range": [0, 100], "note": ""}
    }
    log = tmp_path / "events.jsonl"
    log.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    build_report(log, tmp_path / "new")
    for name in ("report.md", "report.html"):
        text = (tmp_path / "new" / name).read_text(encoding="utf-8")
        assert "dynamic=False, mode=default, fullgraph=True" in text, name
        assert "int64, noncontiguous (slice), values 0..100" in text, name


def test_hostile_plan_files_are_one_line_errors(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    with pytest.raises(PlanError, match="not a regular file"):
        load_plan(fifo)
    zero = tmp_path / "zero.toml"
    zero.symlink_to("/dev/zero")
    with pytest.raises(PlanError, match="not a regular file"):
        load_plan(zero)
    big = tmp_path / "big.toml"
    big.write_text("# " + "x" * (1 << 20) + "\n", encoding="utf-8")
    with pytest.raises(PlanError, match="too large for a plan"):
        load_plan(big)
    deep = tmp_path / "deep.toml"
    deep.write_text("x = " + "[" * 5000 + "]" * 5000 + "\n", encoding="utf-8")
    with pytest.raises(PlanError, match="deep.toml: not a plan: arrays or tables nested too deeply"):
        load_plan(deep)
    assert CliRunner().invoke(reportgen_main, ["plan-check", str(zero)]).exit_code == 1


def test_float64_inputs_are_flagged_where_float64_runs_as_float32(tmp_path: Path) -> None:
    path = _tiny_plan(tmp_path, '[inputs.u0]\ndtype = "float64"\nlayout = "contiguous"\n')
    found = [f for f in review_plan(path, "neuron").findings if f.id == "float64-as-float32"]
    assert found and found[0].severity == "revise" and "u0" in found[0].title
    assert not [f for f in review_plan(path, "cpu").findings if f.id == "float64-as-float32"]


def test_a_plan_with_a_byte_order_mark_reads_as_without_it(tmp_path: Path) -> None:
    """Some editors write a byte-order mark first: the one reader of plan text (the collector's and
    plan-check's) drops it, and the text's sha256 is that of the plan without it."""
    plain = _plan(tmp_path, MATRIX)
    marked = tmp_path / "marked.toml"
    marked.write_bytes(b"\xef\xbb\xbf" + plain.read_bytes())
    assert load_plan(marked).text_sha256 == load_plan(plain).text_sha256
    done = CliRunner().invoke(reportgen_main, ["plan-check", str(marked), "--target", "cpu"])
    assert "not valid TOML" not in done.output and done.exit_code in (0, 3), done.output


def test_an_unknown_dtype_is_offered_only_a_close_spelling(tmp_path: Path) -> None:
    # Before: float8_e4m3fn was answered "did you mean 'float64'?".
    with pytest.raises(PlanError) as raised:
        load_plan(_plan(tmp_path, MATRIX + 'dtypes = ["float8_e4m3fn"]\n'))
    assert "allowed: float32" in str(raised.value) and "did you mean" not in str(raised.value)
    with pytest.raises(PlanError, match="did you mean 'bfloat16'"):
        load_plan(_plan(tmp_path, MATRIX + 'dtypes = ["bflaot16"]\n'))


@pytest.mark.parametrize(
    ("module", "what"),
    [
        (str(Path(__file__).parent), "is a folder, not a Python file"),  # '.' the plan schema refuses by its form
        ("gone.py", "does not exist"),
        ("x" * 300 + ".py", "cannot be looked up \\(File name too long\\)"),
    ],
    ids=["folder", "missing", "name-too-long"],
)
def test_a_module_that_is_no_file_says_what_it_is(tmp_path: Path, module: str, what: str) -> None:
    """module = "." read '.../plans does not exist' of a folder that exists."""
    from collector.plan import PlanError, load_plan

    path = tmp_path / "plan.toml"
    path.write_text(f'[workload]\nname = "w"\nmodule = "{module}"\n' + MATRIX, encoding="utf-8")
    with pytest.raises(PlanError, match=f"workload.module: .* {what}$"):
        load_plan(path)


def test_a_workload_module_given_for_its_plan_says_which_file_goes_there() -> None:
    """`--workload collector/workloads/tiny_encoder.py` said only "not valid TOML: Expected '='
    after a key" (careless user review, finding 9)."""
    from collector.plan import PlanError, load_plan

    with pytest.raises(PlanError) as raised:
        load_plan(REPO / "collector" / "workloads" / "tiny_encoder.py")
    assert "not valid TOML" in str(raised.value)
    assert str(raised.value).endswith(
        "this looks like a workload's Python module: give its plan, the TOML file that names it"
    )
