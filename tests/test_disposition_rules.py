"""Each disposition rule on its own: the reasons it gives and the cells they come from."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any, Callable

import pytest

from reportgen.judge import disposition as d
from reportgen.model.runmodel import RunModel, build_run
from reportgen.contract.validation import read_log
from tests.logbuilder import _warm, base_events, case_key, dumps, finish, scaled_warm, with_envelope

Events = list[dict[str, Any]]


def _run(tmp_path: Path, edit: Callable[[Events], None], target: str = "cpu", family: str = "cpu"):  # type: ignore[no-untyped-def]
    events = base_events(target=target, family=family)
    edit(events)
    path = tmp_path / "events.jsonl"
    path.write_text(dumps(with_envelope(finish(events))), encoding="utf-8")
    reading = read_log(path)
    assert reading.valid, [p.format() for p in reading.problems]
    return build_run(reading)


def _first(events: Events, kind: str, case: str | None = None) -> dict[str, Any]:
    return next(e for e in events if e["kind"] == kind and (case is None or e.get("case") == case))


def _neuron(
    events: Events,
    torch: str = "2.13.0",
    neuronx: str = "2.13.3.0.9",
    python: str = "3.12.7",
    os_name: str = "Ubuntu 26.04 LTS",
    instance: str | None = "trn2.48xlarge",
) -> None:
    env = _first(events, "environment")
    env["versions"].update(
        torch={"value": torch, "source": "t"},
        torch_neuronx={"value": neuronx, "source": "t"},
        python={"value": python, "source": "t"},
        os_release={"value": os_name, "source": "t"},
        neuronx_cc={"value": "2.28.7631.0", "source": "t"},
        neuron_runtime={"value": "2.35.30.0", "source": "t"},
        neuron_driver={"value": "2.31.7.0", "source": "t"},
    )
    env["device"] = {
        "instance_type": {"value": instance, "source": "t"}
        if instance
        else {"value": None, "unknown_reason": "DMI product name unreadable"},
        "logical_nc_config": {"value": "2", "source": "t"},
        "neuron_cores_used": {"value": "1 logical NeuronCore", "source": "t"},
    }
    env["env_vars"] = {"TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION": "1"}
    env["artifacts"] = [
        {
            "name": "torch-neuronx",
            "version": neuronx,
            "installer": "pip",
            "wheel_tags": ["cp312-cp312-manylinux_2_39_x86_64"],
        }
    ]
    for op in (e for e in events if e["kind"] == "operators"):
        op["fallback"] = {"status": "measured", "items": []}


COMPILED = case_key(1, 16, "compiled")
EAGER = case_key(1, 16, "eager")


def _graph_break(events: Events) -> None:
    _first(events, "compile", COMPILED)["graph_breaks"] = [{"reason": "data-dependent branch", "count": 1}]


def _recompile(events: Events) -> None:
    _first(events, "compile", COMPILED)["recompiles"] = 2


def _limit(events: Events) -> None:
    _first(events, "compile", COMPILED)["recompile_limit_hit"] = True


def _skip(events: Events) -> None:
    result = _first(events, "case_result", COMPILED)
    for key in ("outputs", "error_stats", "task_metric"):
        result.pop(key)
    result.update(status="skipped", skip_reason="no tolerance for bfloat16")


def _no_tolerance(events: Events) -> None:
    _first(events, "plan")["tolerances"] = {}


def _criterion(events: Events, rtol: float, threshold: float) -> None:
    """The plan's float32 criteria, every case_result judged under them."""
    criterion = {"metric": "cosine_to_reference", "op": ">=", "threshold": threshold}
    _first(events, "plan")["tolerances"]["float32"].update(rtol=rtol, task=criterion)
    for e in events:
        if e["kind"] == "case_result" and e.get("task_metric"):
            e["task_metric"].update(criterion=criterion)


def _criteria_that_cannot_fail(events: Events) -> None:
    # rtol 1 passes an output of zeros, and every cosine is at least -1: no part can fail.
    _criterion(events, 1.0, -1.0)


def _atol_past_the_dtype_range(events: Events) -> None:
    # No two finite float32 values are 1e300 apart, and every cosine is at least -1.
    _criterion(events, 0.0, -1.0)
    _first(events, "plan")["tolerances"]["float32"]["atol"] = 1e300
    for stats in (e["error_stats"] for e in events if e.get("error_stats")):
        stats["allowed_at_worst"] = 1e300  # every element is allowed at least the atol


def _f64_on_cpu_in_f32(events: Events) -> None:
    plan = _first(events, "plan")
    plan["requirements"] = ["requires_float64"]
    for cell in plan["matrix"]:
        cell["dtype"] = "float64"
        cell["case"] = cell["case"].replace("float32", "float64")
    for e in events:
        if "case" in e:
            e["case"] = e["case"].replace("float32", "float64")


def _unknown_family(events: Events) -> None:
    _first(events, "environment")["backend_family"] = "unknown"


# (name, edit, target, family, expected outcome of the rule, rule id, change category, case named)
CASES = [
    ("graph break", _graph_break, "cpu", "cpu", "change", "graph-breaks", "operator", COMPILED),
    ("recompile on repeat call", _recompile, "cpu", "cpu", "change", "recompiles", "operator", COMPILED),
    ("recompile limit", _limit, "cpu", "cpu", "change", "recompile-limit", "operator", COMPILED),
    ("skipped cell", _skip, "cpu", "cpu", "blocked", "skipped-cells", None, COMPILED),
    ("no tolerance", _no_tolerance, "cpu", "cpu", "blocked", "tolerances", None, EAGER),
    ("criteria that cannot fail", _criteria_that_cannot_fail, "cpu", "cpu", "blocked", "tolerances", None, EAGER),
    ("atol past the dtype's range", _atol_past_the_dtype_range, "cpu", "cpu", "blocked", "tolerances", None, EAGER),
    ("float64 required, float32 output", _f64_on_cpu_in_f32, "cpu", "cpu", "change", "precision", "precision", None),
    ("unknown backend family", _unknown_family, "cpu", "cpu", "blocked", "environment", None, None),
    (
        "torch does not pair",
        lambda e: _neuron(e, torch="2.14.0"),
        "neuron",
        "neuron-native",
        "blocked",
        "release-matrix",
        None,
        None,
    ),
    (
        "python outside the matrix",
        lambda e: _neuron(e, python="3.11.7"),
        "neuron",
        "neuron-native",
        "blocked",
        "release-matrix",
        None,
        None,
    ),
    (
        "torch-neuronx not a release family",
        lambda e: _neuron(e, neuronx="2.12.0.0.1"),
        "neuron",
        "neuron-native",
        "blocked",
        "release-matrix",
        None,
        None,
    ),
    (
        "OS without wheels",
        lambda e: _neuron(e, os_name="Ubuntu 24.04 LTS"),
        "neuron",
        "neuron-native",
        "note",
        "release-matrix",
        None,
        None,
    ),
    ("XLA family for a neuron plan", lambda e: None, "neuron", "neuron-xla", "blocked", "wrong-target", None, None),
    (
        "runtime version not recorded",
        lambda e: (
            _neuron(e),
            _first(e, "environment")["versions"].update(
                neuron_runtime={"value": None, "unknown_reason": "dpkg-query not found"}
            ),
        ),
        "neuron",
        "neuron-native",
        "blocked",
        "environment",
        None,
        None,
    ),
    (
        "trn1 instance",
        lambda e: _neuron(e, instance="trn1.2xlarge"),
        "neuron",
        "neuron-native",
        "blocked",
        "instance-generation",
        None,
        None,
    ),
    (
        "instance type unknown",
        lambda e: _neuron(e, instance=None),
        "neuron",
        "neuron-native",
        "blocked",  # not evidence for a supported generation (a note until 0.21.0)
        "instance-generation",
        None,
        None,
    ),
    (
        "not an instance type",
        lambda e: _neuron(e, instance="Standard PC (Q35 + ICH9, 2009)"),
        "neuron",
        "neuron-native",
        "blocked",  # not evidence for a supported generation (a note until 0.21.0)
        "instance-generation",
        None,
        None,
    ),
]


@pytest.mark.parametrize("name,edit,target,family,outcome,rule,category,case", CASES, ids=[c[0] for c in CASES])
def test_rule(
    tmp_path: Path,
    name: str,
    edit,
    target: str,
    family: str,
    outcome: str,
    rule: str,
    category: str | None,
    case: str | None,
) -> None:
    run = _run(tmp_path, edit, target, family)
    reasons = [r for r in d.decide(run, {}).reasons if r.rule == rule]
    assert reasons, f"{rule} gave no reason"
    assert any(r.outcome == outcome for r in reasons)
    if category:
        assert any(r.category == category for r in reasons)
    if case:
        assert any(case.replace("float32", "float64") in r.cases or case in r.cases for r in reasons)


def test_a_clean_neuron_run_pairs_with_the_release(tmp_path: Path) -> None:
    run = _run(tmp_path, _neuron, "neuron", "neuron-native")
    verdict = d.decide(run, {})
    assert not [r for r in verdict.reasons if r.rule == "release-matrix"]
    assert verdict.outcome == "suitable"
    assert verdict.scope.versions["torch_neuronx"] == "2.13.3.0.9"
    assert not [r for r in verdict.reasons if r.rule == "instance-generation"], "trn2 is supported"


@pytest.mark.parametrize(
    ("artifacts", "said"),
    [
        (
            [
                {
                    "name": "torch-neuronx",
                    "version": "2.13.3.0.9",
                    "installer": "pip",
                    "source_url": "file:///home/me/src/torch-neuronx",
                }
            ],
            "Install record: torch-neuronx 2.13.3.0.9, installed by pip, from file:///home/me/src/torch-neuronx (a local build or file, not a published wheel)",
        ),
        ([], "Install record: no installed-artifact record names torch-neuronx: how it was installed is not known"),
        (None, None),  # the published wheel _neuron records: nothing to say
    ],
    ids=["local-build", "no-record", "published-wheel"],
)
def test_the_install_record_is_read_not_only_the_os_label(tmp_path: Path, artifacts: Any, said: str | None) -> None:
    """A review: the wheel check read the OS label alone: a local source build on Ubuntu 26.04
    read "Suitable" with no word, though the seed asks for the installation artifacts, not an OS
    support label. The recorded artifact is said where it is not a published wheel."""

    def edit(events: Events) -> None:
        _neuron(events)
        if artifacts is not None:
            _first(events, "environment")["artifacts"] = artifacts

    run = _run(tmp_path, edit, "neuron", "neuron-native")
    notes = [r.message for r in d.decide(run, {}).reasons if r.rule == "release-matrix"]
    assert notes == ([] if said is None else [said + "."])


def test_every_version_the_neuron_data_requires_blocks_when_missing(tmp_path: Path) -> None:
    from reportgen.judge.backend_docs import load_backend_docs

    required = load_backend_docs("neuron").required_versions
    assert {"torch", "torch_neuronx", "neuronx_cc", "neuron_runtime", "neuron_driver"} <= set(required)
    for name in required:

        def drop(events: Events, name: str = name) -> None:
            _neuron(events)
            _first(events, "environment")["versions"][name] = {"value": None, "unknown_reason": f"{name} reader failed"}

        (tmp_path / name).mkdir()
        run = _run(tmp_path / name, drop, "neuron", "neuron-native")
        verdict = d.decide(run, {})
        assert verdict.outcome == "blocked"
        assert [r.message for r in verdict.reasons if r.rule == "environment" and r.outcome == "blocked"] == [
            f"{name} version unknown: {name} reader failed."
        ]


def test_trn1_blocks_for_its_generation(tmp_path: Path) -> None:
    run = _run(tmp_path, lambda e: _neuron(e, instance="trn1.2xlarge"), "neuron", "neuron-native")
    verdict = d.decide(run, {})
    found = [r for r in verdict.reasons if r.rule == "instance-generation"]
    assert verdict.outcome == "blocked" and found[0].outcome == "blocked"
    assert (
        "trn1.2xlarge is trn1, a generation" in found[0].message
        and "trn2 (Trainium2), trn3 (Trainium3)" in found[0].message
    )


def _noncontiguous(events: Events, fail: bool) -> None:
    plan = _first(events, "plan")
    extra = []
    for cell in [c for c in plan["matrix"] if c["batch"] == 1]:
        extra.append(dict(cell, layout="noncontiguous", case=cell["case"].replace("contiguous", "noncontiguous")))
    plan["matrix"] += extra
    for cell in extra:
        result = json.loads(
            json.dumps(_first(events, "case_result", cell["case"].replace("noncontiguous", "contiguous")))
        )
        result["case"] = cell["case"]
        if fail and cell["mode"] == "compiled":
            result["status"] = "mismatch"
            result["error_stats"].update(mismatched=3, max_abs=0.5, diff_at_worst=0.5)
        events.append(result)


def test_layout_rule_when_noncontiguous_fails(tmp_path: Path) -> None:
    run = _run(tmp_path, lambda e: _noncontiguous(e, fail=True))
    reasons = [r for r in d.rule_layout(run, {})]
    assert reasons and reasons[0].category == "layout"
    assert reasons[0].cases == ("b1-l16-noncontiguous-float32-compiled",)


def _fed_only(events: Events) -> None:
    """Non-contiguous cells that record the layout the model received, with no timing or profile."""
    _noncontiguous(events, fail=False)
    _neuron(events)
    for result in [e for e in events if e["kind"] == "case_result" and "noncontiguous" in e["case"]]:
        result.update(layout_fed="noncontiguous", layout_achieved=True)


def test_layout_rule_on_neuron_says_documented_not_measured_without_evidence(tmp_path: Path) -> None:
    run = _run(tmp_path, _fed_only, "neuron", "neuron-native")
    reasons = d.rule_layout(run, {})
    assert [(r.outcome, r.cases) for r in reasons] == [("note", ("b1-l16-noncontiguous-float32-compiled",))]
    assert reasons[0].message.startswith("Documented, not measured")


def test_a_device_log_without_the_layout_fed_is_untested_for_that_layout(tmp_path: Path) -> None:
    """Before layouts were measured: on a device the copy may have made the input contiguous."""
    run = _run(tmp_path, lambda e: (_noncontiguous(e, fail=False), _neuron(e)), "neuron", "neuron-native")
    assert d.rule_layout(run, {}) == []
    found = [r for r in d.decide(run, {}).reasons if r.rule == "layout-not-measured"]
    assert found and found[0].outcome == "blocked"
    assert set(found[0].cases) == {"b1-l16-noncontiguous-float32-eager", "b1-l16-noncontiguous-float32-compiled"}


def _fed(events: Events, slower: bool) -> None:
    """The non-contiguous cells record what was fed; with ``slower``, a measured timing gap."""
    _noncontiguous(events, fail=False)
    _neuron(events)
    for result in [e for e in events if e["kind"] == "case_result" and "noncontiguous" in e["case"]]:
        result.update(layout_fed="noncontiguous", layout_achieved=True)
    twin = _first(events, "timing", COMPILED)
    timing = json.loads(json.dumps(twin))
    timing["case"] = COMPILED.replace("contiguous", "noncontiguous")
    if slower:
        timing["warm"] = scaled_warm(timing["warm"], 3)
    events.append(timing)


@pytest.mark.parametrize("slower", [True, False])
def test_layout_rule_on_neuron_judges_from_what_was_fed_and_timed(tmp_path: Path, slower: bool) -> None:
    run = _run(tmp_path, lambda e: _fed(e, slower), "neuron", "neuron-native")
    reasons = d.rule_layout(run, {})
    case = ("b1-l16-noncontiguous-float32-compiled",)
    if slower:
        assert [(r.outcome, r.category, r.cases) for r in reasons] == [("change", "layout", case)]
        assert "as measured" in reasons[0].message and "warm median" in reasons[0].message
    else:
        assert [(r.outcome, r.cases) for r in reasons] == [("note", case)]
        assert "measured no cost" in reasons[0].message


def test_layout_not_achieved_is_untested_for_its_layout(tmp_path: Path) -> None:
    def edit(events: Events) -> None:
        _noncontiguous(events, fail=False)
        for result in [e for e in events if e["kind"] == "case_result" and "noncontiguous" in e["case"]]:
            result.update(layout_fed="contiguous", layout_achieved=False)

    run = _run(tmp_path, edit)
    missed = [c for c in run.cells if c.planned.layout == "noncontiguous"]
    assert missed and all(c.status == "untested" and c.untested_reason == "layout not achieved" for c in missed)
    verdict = d.decide(run, {})
    assert verdict.outcome == "blocked"
    reason = next(r for r in verdict.reasons if r.rule == "layout-not-achieved")
    assert set(reason.cases) == {c.case for c in missed}
    assert all(g.layout != "noncontiguous" for g in verdict.scope.passed)


def test_compiled_neuron_passes_without_pinned_fallback_setting_block(tmp_path: Path) -> None:
    def edit(events: Events) -> None:
        _neuron(events)
        _first(events, "environment")["env_vars"] = {"TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION": "0"}

    verdict = d.decide(_run(tmp_path, edit, "neuron", "neuron-native"), {})
    reason = next(r for r in verdict.reasons if r.rule == "compile-fallback")
    assert reason.outcome == "blocked" and COMPILED in reason.cases and EAGER not in reason.cases
    assert any(r.rule == "neuron-adapter" and "stand-in" in r.message for r in verdict.reasons)


def test_unmeasured_fallback_on_neuron_blocks(tmp_path: Path) -> None:
    def edit(events: Events) -> None:
        _neuron(events)
        _first(events, "operators", EAGER)["fallback"] = {"status": "unmeasured", "reason": "API missing"}

    reasons = d.rule_fallback(_run(tmp_path, edit, "neuron", "neuron-native"), {})
    assert [(r.outcome, r.cases) for r in reasons] == [("blocked", (EAGER,))]


def test_a_not_applicable_fallback_on_a_backend_that_must_measure_it_blocks(tmp_path: Path) -> None:
    """Before: a neuron run whose operators events said fallback not_applicable (the cpu
    adapter's answer, "the cpu target is the host") was judged suitable: only "unmeasured"
    blocked, though the neuron constraints file says fallback must be measured. The neuron
    adapter answers measured or unmeasured only (collector/backends/neuron.py). Now a cell with
    a not-applicable fallback blocks there as one not measured; on the cpu it stays no reason."""
    cpu_answer = {"status": "not_applicable", "reason": "the cpu target is the host: there is no CPU fallback"}

    def edit(events: Events) -> None:
        _neuron(events)
        _first(events, "operators", EAGER)["fallback"] = dict(cpu_answer)

    reasons = d.rule_fallback(_run(tmp_path, edit, "neuron", "neuron-native"), {})
    assert [(r.rule, r.outcome, r.cases) for r in reasons] == [("cpu-fallback", "blocked", (EAGER,))]
    assert "their log calls it not applicable" in reasons[0].message
    verdict = d.decide(_run(tmp_path, edit, "neuron", "neuron-native"), {})
    assert any(r.rule == "cpu-fallback" and r.outcome == "blocked" for r in verdict.reasons)

    def on_the_cpu(events: Events) -> None:
        for op in (e for e in events if e["kind"] == "operators"):
            assert op["fallback"]["status"] == "not_applicable"

    assert d.rule_fallback(_run(tmp_path, on_the_cpu), {}) == []


def test_the_rules_read_a_backend_from_its_constraint_file_not_from_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Change the neuron file's data (its compile-fallback setting, adapter note, required
    versions) and the verdict on the same log follows it: no name of the backend is in the rules."""
    from reportgen.judge import backend_docs

    edited = tmp_path / "constraints"
    shutil.copytree(backend_docs.CONSTRAINTS_DIR, edited)
    path = edited / backend_docs.constraints_path("neuron").name
    text = path.read_text(encoding="utf-8")
    for old, new in (
        ('name = "TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION", value = "1"', 'name = "NEURON_STRICT", value = "yes"'),
        (
            'required_versions = ["torch", "torch_neuronx", "neuronx_cc", "neuron_runtime", "neuron_driver"]',
            'required_versions = ["torch", "torch_neuronx", "neuron_probe"]',
        ),
    ):
        assert old in text
        text = text.replace(old, new)
    text = text.replace('adapter_note = "', 'adapter_note = "Edited note. ', 1)
    text = text.replace('supported = ["trn2", "trn3"]', 'supported = ["trn1"]')
    path.write_text(text, encoding="utf-8")
    monkeypatch.setattr(backend_docs, "CONSTRAINTS_DIR", edited)
    backend_docs.load_backend_docs.cache_clear()
    try:

        def edit(events: Events) -> None:
            _neuron(events)
            _first(events, "environment")["env_vars"] = {"TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION": "1"}

        (tmp_path / "run").mkdir()
        verdict = d.decide(_run(tmp_path / "run", edit, "neuron", "neuron-native"), {})
    finally:
        backend_docs.load_backend_docs.cache_clear()
    fallback = next(r for r in verdict.reasons if r.rule == "compile-fallback")
    assert "NEURON_STRICT was not recorded, not yes" in fallback.message
    assert any(r.rule == "environment" and "neuron_probe version unknown" in r.message for r in verdict.reasons)
    assert any(r.rule == "neuron-adapter" and r.message.startswith("Edited note.") for r in verdict.reasons)
    # The instance generations come from the file too: trn2 is not in the edited list.
    assert any(
        r.rule == "instance-generation" and r.outcome == "blocked" and "trn2.48xlarge is trn2" in r.message
        for r in verdict.reasons
    )


def test_a_typo_in_a_constraint_file_is_an_error_not_a_default(tmp_path: Path) -> None:
    from reportgen.judge import backend_docs

    text = (backend_docs.CONSTRAINTS_DIR / backend_docs.constraints_path("neuron").name).read_text(encoding="utf-8")
    for old, new, said in (
        ("required_versions = [", "required_version = [", "neuron.toml: unknown key(s) 'required_version'"),
        ("[instances]\nsupported", "[instances]\nsuported", "neuron.toml: instances: unknown key(s) 'suported'"),
        ('id = "static-shapes"', 'idd = "static-shapes"', "neuron.toml: constraint[0]: unknown key(s) 'idd'"),
        (
            'plan_rule = [{ key = "compile.dynamic"',
            'plan_rule = [{ keys = "compile.dynamic"',
            "constraint[0].plan_rule[0]: unknown key(s) 'keys'",
        ),
        ('torch = "2.13.0"', 'torhc = "2.13.0"', "package_matrix[0]: unknown key(s) 'torhc'"),
    ):
        assert old in text, old
        path = tmp_path / "neuron.toml"
        path.write_text(text.replace(old, new, 1), encoding="utf-8")
        with pytest.raises(backend_docs.BackendDocsError, match=re.escape(said)):
            backend_docs.read_docs_file(path)
    for target in backend_docs.targets():  # the shipped files are clean
        backend_docs.read_docs_file(backend_docs.constraints_path(target))


def test_a_broken_constraint_file_stops_a_command_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from reportgen.cli import main
    from reportgen.judge import backend_docs
    from tests.conftest import FIXTURES

    edited = tmp_path / "constraints"
    shutil.copytree(backend_docs.CONSTRAINTS_DIR, edited)
    path = edited / backend_docs.constraints_path("neuron").name
    path.write_text(
        path.read_text(encoding="utf-8").replace("required_versions = [", "required_version = [", 1), encoding="utf-8"
    )
    monkeypatch.setattr(backend_docs, "CONSTRAINTS_DIR", edited)
    backend_docs.load_backend_docs.cache_clear()
    try:
        result = CliRunner().invoke(main, ["validate", str(FIXTURES / "synthetic_complete.jsonl")])
    finally:
        backend_docs.load_backend_docs.cache_clear()
    assert result.exit_code == 2
    assert (
        result.output.strip()
        == f"reportgen: constraint data: {path.name}: unknown key(s) 'required_version'; allowed: "
        + ", ".join(sorted(backend_docs.TOP_KEYS))
    )


def test_layout_rule_takes_no_evidence_from_an_unstable_timing(tmp_path: Path) -> None:
    """A warm median the report marks unstable decides nothing, the layout rule included."""
    from collector.stability import UNSTABLE, classify

    spread = [0.003, 0.0036, 0.0045, 0.0054, 0.0066]  # three times slower, but spread wide
    assert classify(spread).verdict == UNSTABLE

    def edit(events: Events) -> None:
        _fed(events, slower=True)
        timing = [e for e in events if e["kind"] == "timing"][-1]
        timing["warm"] = _warm(spread)

    run = _run(tmp_path, edit, "neuron", "neuron-native")
    reasons = d.rule_layout(run, {})
    case = ("b1-l16-noncontiguous-float32-compiled",)
    assert [(r.outcome, r.cases) for r in reasons] == [("note", case)]
    assert "not decided" in reasons[0].message and "this cell's (unstable) warm series" in reasons[0].message
    assert "warm median" not in reasons[0].message
    verdict = d.decide(run, {})
    assert not [r for r in verdict.reasons if r.rule == "layout" and r.outcome == "change"]


@pytest.mark.parametrize(
    ("rtol", "threshold"), [(1.0, 0.999), (1e-4, -1.0)], ids=["rtol-1", "cosine-at-least-minus-one"]
)
def test_criteria_one_part_of_which_can_fail_block_nothing(tmp_path: Path, rtol: float, threshold: float) -> None:
    # A cell passes only when every part passes: one part that can fail still fails a wrong output.
    run = _run(tmp_path, lambda events: _criterion(events, rtol, threshold))
    assert not [r for r in d.decide(run, {}).reasons if r.rule == "tolerances"]


def test_a_passing_compiled_cell_without_its_compile_event_blocks_as_unmeasured(tmp_path: Path) -> None:
    """A review of single-run reports: with a compiled cell's compile event taken out, the run
    read "Suitable", while the same cell with a graph break in that event required a change. The
    collector logs a compile event for every compiled cell it checks."""
    case = case_key(1, 16, "compiled")

    def drop_compile(events: Events) -> None:
        events[:] = [e for e in events if not (e["kind"] == "compile" and e.get("case") == case)]

    run = _run(tmp_path, drop_compile)
    reasons = d.rule_compiled_path(run, d.Notes())
    assert [(r.rule, r.outcome, r.cases) for r in reasons if r.rule == "compile-unmeasured"] == [
        ("compile-unmeasured", "blocked", (case,))
    ]
    assert d.rule_compiled_path(_run(tmp_path, lambda events: None), d.Notes()) == []


def test_cells_the_plan_s_policy_refuses_await_no_explanation(tmp_path: Path) -> None:
    """A review of single-run reports: section 1 said the 600-token cells were "refused as
    declared", and section 5 listed each with "Explanation: none yet". They stay listed (other
    sections link to them), saying why none is owed."""
    from reportgen.render.report import build_report
    from tests.logbuilder import generation_log

    path = tmp_path / "run" / "events.jsonl"
    path.parent.mkdir()
    path.write_text(dumps(generation_log()), encoding="utf-8")
    build_report(path, tmp_path / "out", formats=("md", "html"))
    md = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    refused = case_key(1, 600, "eager")
    section = md[md.index(f"`{refused}`", md.index("## 5")) :]
    explanation = section[section.index("Explanation: ") :].split("\n", 1)[0]
    assert explanation == (
        "Explanation: none owed: the plan's declared policy refuses requests of 600 tokens (request event); nothing"
        " of the model ran."
    )
    assert "none owed: the plan&#39;s declared policy refuses requests of 600 tokens" in html
    assert "Explanation: none yet." in md  # the mismatching cell still awaits one


def test_a_passing_cell_with_no_operators_event_on_a_backend_that_must_measure_fallback_blocks(tmp_path: Path) -> None:
    """A later review: deleting the operators line of a cpu log relabelled as neuron left its
    passing cell with no fallback status at all, which no rule read, so it was judged Suitable
    on neuron. Now such a cell blocks there as one whose fallback was not recorded; on the cpu
    it stays no reason."""

    def edit(events: Events) -> None:
        _neuron(events)
        events.remove(_first(events, "operators", EAGER))

    reasons = d.rule_fallback(_run(tmp_path, edit, "neuron", "neuron-native"), {})
    assert [(r.rule, r.outcome, r.cases) for r in reasons] == [("cpu-fallback", "blocked", (EAGER,))]
    assert "their log has no operators event for them" in reasons[0].message

    def on_the_cpu(events: Events) -> None:
        events.remove(_first(events, "operators", EAGER))

    assert d.rule_fallback(_run(tmp_path, on_the_cpu), {}) == []


def _relabelled_neuron(tmp_path: Path, edit: Callable[[Events], None] | None = None) -> RunModel:
    """The tiny-encoder CPU sample relabelled a neuron-native run (synthetic, and it says so):
    the layout rule applies where the Neuron docs list the non-contiguous copy."""
    from tests.logbuilder import edited_sample

    events = edited_sample(
        "tiny-encoder-cpu-20261206T150111Z-1dd183",
        "synthetic-relabelled-neuron",
        "A cpu sample run relabelled as a neuron-native run; not a measurement of any hardware.",
    )
    events[0]["target"] = "neuron"
    events[0]["target_choice"] = {"requested": "neuron", "resolved": "neuron", "reason": "named on the command line"}
    env = _first(events, "environment")
    env.update(backend_family="neuron-native", backend_family_reason="relabelled", device_type="neuron")
    env["versions"]["torch_neuronx"] = {"value": "2.13.3.0.9", "source": "relabelled"}
    env["device"]["device_count"] = {"value": "1", "source": "relabelled"}  # not the host's CPU count
    _first(events, "plan")["target"] = "neuron"
    text = json.dumps(events).replace('"device": "cpu"', '"device": "neuron:0"')
    events = json.loads(text)
    if edit is not None:
        edit(events)
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    reading = read_log(path)
    assert reading.valid, [p.format() for p in reading.problems][:3]
    return build_run(reading)


def test_a_layout_cost_between_loops_under_other_settings_decides_nothing(tmp_path: Path) -> None:
    """A review: a non-contiguous compiled cell whose warm loop ran under other torch threads (or
    another CPU affinity) than its contiguous twin's read "Requires a change: layout ... as
    measured", while compare does not compare two loops under other settings. Undecided now, the
    setting named."""
    slow = "b1-l32-noncontiguous-float32-compiled"

    def threads(events: Events) -> None:
        timing = [e for e in events if e["kind"] == "timing" and e.get("case") == slow and e.get("warm")][-1]
        timing["warm"]["samples_s"] = [x * 2 for x in timing["warm"]["samples_s"]]
        for key in ("min_s", "median_s", "p90_s", "iqr_s"):
            if isinstance(timing["warm"].get(key), float):
                timing["warm"][key] *= 2
        wall = timing["host"]["loop_wall_s"]
        wall["value"] = f"{float(wall['value']) * 2:.6f}"
        timing["host"]["torch_threads"]["value"] = "1 intra-op, 2 inter-op"

    run = _relabelled_neuron(tmp_path, threads)
    cells = {c.case: c for c in run.cells}
    verdict, words = d._layout_timing(cells[slow], cells["b1-l32-contiguous-float32-compiled"], True)
    assert verdict == "undecided" and words.endswith("the contiguous cell's ran under other torch threads"), words
    reasons = d.rule_layout(run, {})
    assert not [r for r in reasons if r.outcome == "change"], [r.message for r in reasons]
    assert any(slow in r.cases and "ran under other torch threads" in r.message for r in reasons)


def test_one_pair_s_layout_cost_that_its_sibling_pair_does_not_pay_decides_nothing(tmp_path: Path) -> None:
    """A review: a sample run relabelled neuron-native read "Requires a change: layout" from the
    cache-check repeat pair alone (0.534 ms against 0.368 ms contiguous, each from its own
    process), while the first pair of the same shape and dtype measured no cost, in the same
    report. One pair against the other is no evidence of a per-call copy: undecided, said so."""
    run = _relabelled_neuron(tmp_path)
    cells = {c.case: c for c in run.cells}
    repeat = cells["b1-l16-noncontiguous-float32-compiled-repeat"]
    twin = cells["b1-l16-contiguous-float32-compiled-repeat"]
    assert d._layout_timing(repeat, twin, True)[0] == "cost", "the pair alone reads as a cost"
    reasons = d.rule_layout(run, {})
    assert not [r for r in reasons if r.outcome == "change"], [r.message for r in reasons]
    undecided = next(r for r in reasons if "not decided" in r.message)
    assert repeat.case in undecided.cases
    assert "b1-l16-noncontiguous-float32-compiled of the same shape measured no cost" in undecided.message
    assert d.decide(run, {}).outcome != "change"


def test_an_integer_output_beside_float64_ones_is_no_lower_precision() -> None:
    """A review: a float64 cell that also returns argmax ids (int64) read "produced a lower
    precision", and under requires_float64 "Requires a change: precision". Only a floating output
    below float64 counts."""
    from types import SimpleNamespace

    assert not d._outputs_not_f64(SimpleNamespace(output_dtypes=("float64", "int64", "bool")))  # type: ignore[arg-type]
    assert d._outputs_not_f64(SimpleNamespace(output_dtypes=("float64", "float32")))  # type: ignore[arg-type]
