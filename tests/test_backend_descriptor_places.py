"""What used to name a built-in target in code now comes from the backend descriptors.

* ``inputs_on_device``: whether a log's inputs_fed are held to its environment.device_type (the
  contract named cpu and cuda);
* ``[before_torch]``: the hook ``python -m collector`` runs before torch is imported (it named
  neuron, and so missed the alias ``trainium``);
* the target ``plan-check`` reviews against when neither --target nor the plan names one: the
  first that ``--target auto`` tries (it was the word "neuron");
* a target's device facts: its adapter reads them from torch (the run set-up read ``torch.neuron``).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import pytest

from collector import descriptors as descriptor_module
from collector.descriptors import (
    PLUGIN_ENV,
    DescriptorError,
    before_torch,
    default_target,
    descriptors,
    read_descriptor,
)
from reportgen.contract import consistency
from reportgen.contract.validation import read_log
from tests.conftest import REPO
from tests.test_fake_backend import DESCRIPTOR, _backend_folder, _run

HOOK = """\
import sys

CALLS = []


def apply():
    CALLS.append("torch imported" if "torch" in sys.modules else "before torch")
"""
HOOK_TABLE = '\n[before_torch]\nhook = "fakehook.py:apply"\nmodule = "{module}"\n'
HOOK_MODULE = descriptor_module.module_name("collector_before_torch_", "fakeaccel")


@pytest.fixture
def hooked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fake backend of tests/test_fake_backend.py with a before_torch hook, as a plugin
    folder named in the environment (its hook module forgotten again afterwards)."""
    folder = _backend_folder(tmp_path)
    (folder / "fakehook.py").write_text(HOOK, encoding="utf-8")
    write_descriptor(folder, module="json", auto_order=None)
    monkeypatch.setenv(PLUGIN_ENV, str(folder))
    monkeypatch.delitem(sys.modules, HOOK_MODULE, raising=False)
    yield folder
    sys.modules.pop(HOOK_MODULE, None)


def write_descriptor(folder: Path, module: str, auto_order: int | None) -> None:
    order = "" if auto_order is None else f"auto_order = {auto_order}\n"
    text = DESCRIPTOR.replace('notes = "', f'{order}notes = "', 1)
    (folder / "fakeaccel.toml").write_text(text + HOOK_TABLE.format(module=module), encoding="utf-8")


def calls() -> list[str]:
    return list(sys.modules[HOOK_MODULE].CALLS) if HOOK_MODULE in sys.modules else []


def test_a_target_named_by_its_alias_runs_its_hook(hooked: Path) -> None:
    assert before_torch("fake", None) == ("fakeaccel",)
    assert len(calls()) == 1


def test_auto_runs_the_plans_targets_hook_where_its_module_is_installed(hooked: Path) -> None:
    assert before_torch("auto", "fakeaccel", installed=lambda name: None) == ()
    assert calls() == []
    assert before_torch("auto", "fakeaccel") == ("fakeaccel",)  # module = "json" is installed
    assert len(calls()) == 1


def test_auto_without_a_plan_target_runs_the_hooks_of_the_targets_it_tries(hooked: Path) -> None:
    assert before_torch("auto", None) == ()  # fakeaccel gives no auto_order: auto never tries it
    write_descriptor(hooked, module="json", auto_order=7)
    descriptor_module._load.cache_clear()
    ran = before_torch("auto", None, installed=lambda name: object() if name == "json" else None)
    assert ran == ("fakeaccel",)  # the neuron hook's module, torch_neuronx, is not installed here


def _plain_backend(folder: Path, name: str, auto_order: int, hook: str, module: str | None) -> None:
    """A backend of its own in ``folder``: descriptor, the fake adapter, a hook that records its
    call (or raises, for hook = 'raise' / 'exit')."""
    table = f'hook = "{name}_hook.py:apply"' + (f'\nmodule = "{module}"' if module else "")
    (folder / f"{name}.toml").write_text(
        f'name = "{name}"\nadapter = "fakeaccel.py:FakeAccelBackend"\nconstraints = "fakeaccel-1.0.toml"\n'
        f'compile_backend = "inductor"\nauto_order = {auto_order}\nfamilies = {{ {name.replace("-", "")} = "x" }}\n'
        f"\n[before_torch]\n{table}\n",
        encoding="utf-8",
    )
    body = {
        "raise": 'raise ValueError("no SDK")',
        "exit": "raise SystemExit(0)",
    }.get(hook, f"CALLS.append({name!r})")
    (folder / f"{name}_hook.py").write_text(f"CALLS = []\n\n\ndef apply():\n    {body}\n", encoding="utf-8")


def test_auto_without_a_plan_target_runs_only_the_first_installed_targets_hook(
    hooked: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Which target auto runs is known only once torch is imported: the hook of the first one it
    tries whose module is installed runs, and no other (a later target's failing hook had
    stopped a run that would not use it; a review of this round, finding 3)."""
    _plain_backend(hooked, "gaccel", 0, "record", "json")
    _plain_backend(hooked, "haccel", 9, "raise", "json")
    _plain_backend(hooked, "iaccel", 5, "record", "json")  # later in auto's order
    descriptor_module._load.cache_clear()
    for name in ("gaccel", "haccel", "iaccel"):
        monkeypatch.delitem(sys.modules, descriptor_module.module_name("collector_before_torch_", name), raising=False)
    assert before_torch("auto", None) == ("gaccel",)
    assert before_torch("auto", "iaccel") == ("iaccel",)  # the plan's target
    with pytest.raises(DescriptorError, match=r"haccel_hook\.py:apply raised ValueError: no SDK"):
        before_torch("auto", "haccel")


def test_a_hook_that_exits_is_one_line_not_a_silent_end(hooked: Path) -> None:
    _plain_backend(hooked, "jaccel", 3, "exit", "json")
    descriptor_module._load.cache_clear()
    with pytest.raises(DescriptorError, match=r"jaccel_hook\.py:apply raised SystemExit: 0"):
        before_torch("jaccel", None)
    (hooked / "jaccel_hook.py").write_text("raise SystemExit(0)\n", encoding="utf-8")
    sys.modules.pop(descriptor_module.module_name("collector_before_torch_", "jaccel"), None)
    with pytest.raises(DescriptorError, match=r"jaccel_hook\.py raised SystemExit: 0"):
        before_torch("jaccel", None)
    assert descriptor_module.module_name("collector_before_torch_", "jaccel") not in sys.modules


def test_backend_names_that_differ_in_dash_and_underscore_get_modules_of_their_own() -> None:
    names = {descriptor_module.module_name("collector_before_torch_", n) for n in ("my-accel", "my_accel", "my_daccel")}
    assert len(names) == 3


def test_a_module_imported_without_a_spec_counts_as_installed(hooked: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """find_spec raises ValueError for a module in sys.modules whose __spec__ is None: that module
    is there, not a traceback (a review of this round, finding 5)."""
    import types

    bare = types.ModuleType("fakeaccel_sdk_bare")
    bare.__spec__ = None
    monkeypatch.setitem(sys.modules, "fakeaccel_sdk_bare", bare)
    write_descriptor(hooked, module="fakeaccel_sdk_bare", auto_order=None)
    descriptor_module._load.cache_clear()
    assert before_torch("auto", "fakeaccel") == ("fakeaccel",)


def test_a_target_without_a_hook_runs_none(hooked: Path) -> None:
    assert before_torch("cpu", None) == ()
    assert before_torch("auto", "cpu") == ()
    assert calls() == []


def test_the_collector_runs_the_hook_before_torch_is_imported(tmp_path: Path) -> None:
    """A hook that fails stops the run with one line, exit 2; it says that torch was not yet
    imported when it ran."""
    folder = _backend_folder(tmp_path)
    write_descriptor(folder, module="json", auto_order=None)
    (folder / "fakehook.py").write_text(
        "import sys\n\n\ndef apply():\n    raise ValueError(f\"torch imported: {'torch' in sys.modules}\")\n",
        encoding="utf-8",
    )
    out = tmp_path / "out"
    plan = REPO / "collector" / "workloads" / "tiny_encoder.toml"
    done = _run(["-m", "collector", "--workload", str(plan), "--target", "fake", "--out", str(out)], folder)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        f"collector: backend descriptor: {folder / 'fakeaccel.toml'}: before_torch.hook: fakehook.py:apply raised"
        " ValueError: torch imported: False"
    ), done.stderr
    assert "Traceback" not in done.stderr and not out.exists()


def test_a_hook_file_that_cannot_load_is_one_line_naming_it(hooked: Path) -> None:
    (hooked / "fakehook.py").write_text('raise ImportError("no SDK")\n', encoding="utf-8")
    with pytest.raises(DescriptorError) as caught:
        before_torch("fakeaccel", None)
    assert str(caught.value) == (
        f"{hooked / 'fakeaccel.toml'}: before_torch.hook: fakehook.py raised ImportError: no SDK"
    )
    (hooked / "fakehook.py").unlink()
    with pytest.raises(DescriptorError, match=r"before_torch\.hook: .*fakehook\.py is not a file"):
        before_torch("fakeaccel", None)


@pytest.mark.parametrize(
    ("added", "said"),
    [
        (
            '\n[before_torch]\nhook = "fakehook"\n',
            "before_torch.hook: 'fakehook' is not FILE.py:function with FILE beside the descriptor",
        ),
        (
            '\n[before_torch]\nhook = "../x.py:apply"\n',
            "before_torch.hook: '../x.py:apply' is not FILE.py:function with FILE beside the descriptor",
        ),
        (
            '\n[before_torch]\nhook = "h.py:apply"\nmodule = "torch_neuronx.core"\n',
            "before_torch.module: 'torch_neuronx.core' is not a top-level module name",
        ),
        ('\n[before_torch]\nmodule = "x"\n', "before_torch.hook: missing (required)"),
        (
            '\n[before_torch]\nhook = "h.py:apply"\nmodul = "x"\n',
            "before_torch.modul: unknown key (did you mean 'module'?)",
        ),
    ],
)
def test_a_before_torch_table_is_checked_key_by_key(tmp_path: Path, added: str, said: str) -> None:
    path = tmp_path / "fakeaccel.toml"
    path.write_text(DESCRIPTOR + added, encoding="utf-8")
    with pytest.raises(DescriptorError) as caught:
        read_descriptor(path)
    assert str(caught.value) == f"fakeaccel.toml.{said}"


def test_a_hook_of_a_target_auto_tries_names_its_module(tmp_path: Path) -> None:
    """Without it auto could pick the target and never run its hook (a review of this round,
    finding 2): refused on load."""
    path = tmp_path / "fakeaccel.toml"
    text = DESCRIPTOR.replace('notes = "', 'auto_order = 4\nnotes = "', 1)
    path.write_text(text + '\n[before_torch]\nhook = "h.py:apply"\n', encoding="utf-8")
    with pytest.raises(DescriptorError) as caught:
        read_descriptor(path)
    assert str(caught.value).startswith("fakeaccel.toml.before_torch.module: missing; a target --target auto tries")


def test_inputs_on_device_must_be_true_or_false(tmp_path: Path) -> None:
    path = tmp_path / "fakeaccel.toml"
    path.write_text(DESCRIPTOR.replace('notes = "', 'inputs_on_device = "yes"\nnotes = "', 1), encoding="utf-8")
    with pytest.raises(DescriptorError) as caught:
        read_descriptor(path)
    assert str(caught.value) == "fakeaccel.toml.inputs_on_device: expected bool, found str"


def test_the_built_in_descriptors_give_what_the_code_named() -> None:
    known = descriptors()
    assert {name for name, d in known.items() if d.inputs_on_device} == {"cpu", "cuda", "neuron"}
    assert (known["neuron"].before_torch, known["neuron"].autoload_module) == ("neuronenv.py:apply", "torch_neuronx")
    assert default_target() == "neuron"  # auto_order = 1


def test_inputs_fed_are_held_to_the_device_type_only_where_the_descriptor_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cpu sample's warm loop moved to the meta device is refused while the cpu descriptor
    says inputs_on_device, and not judged once it does not say so."""
    sample = REPO / "sample_runs" / "tiny-encoder-cpu-20261206T150111Z-1dd183" / "events.jsonl"
    events = [json.loads(line) for line in sample.read_text(encoding="utf-8").splitlines()]
    warm = next(e for e in events if e["kind"] == "timing" and e.get("warm"))
    for tensor in warm["inputs_fed"]:
        tensor["device"] = "meta"
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")

    said = [p.message for p in read_log(path).errors]
    assert len(said) == 1 and "none of the tensors inputs_fed records is on a cpu device" in said[0], said
    known = dict(descriptors())
    known["cpu"] = dataclasses.replace(known["cpu"], inputs_on_device=False)
    monkeypatch.setattr(consistency, "descriptors", lambda: known)
    assert [p.message for p in read_log(path).errors] == []


def test_plan_check_reviews_against_the_first_target_auto_tries(hooked: Path, tmp_path: Path) -> None:
    from reportgen.judge import backend_docs
    from reportgen.judge.plancheck import review_plan

    plan = tmp_path / "plan.toml"
    plan.write_text(
        (REPO / "collector" / "workloads" / "tiny_encoder.toml").read_text(encoding="utf-8"), encoding="utf-8"
    )
    assert "target" not in (REPO / "collector" / "workloads" / "tiny_encoder.toml").read_text(encoding="utf-8")
    write_descriptor(hooked, module="json", auto_order=0)  # tried before neuron (1)
    descriptor_module._load.cache_clear()
    backend_docs.load_backend_docs.cache_clear()
    try:
        assert default_target() == "fakeaccel"
        review = review_plan(plan)
        assert review.target == "fakeaccel" and review.release == "FakeAccel SDK 1.0", review.to_dict()
    finally:
        descriptor_module._load.cache_clear()
        backend_docs.load_backend_docs.cache_clear()


def test_the_neuron_adapter_reads_its_device_facts_from_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    """The run set-up no longer hands the adapter ``torch.neuron``: the adapter reads it."""
    import types

    import torch

    from collector.backends.neuron import NeuronBackend

    monkeypatch.delattr(torch, "neuron", raising=False)
    assert NeuronBackend.device_facts(torch) is None
    standin = types.SimpleNamespace(
        get_device_name=lambda i: "stand-in core", device_count=lambda: 2, current_device=lambda: 0
    )
    monkeypatch.setattr(torch, "neuron", standin, raising=False)
    facts = NeuronBackend.device_facts(torch)
    assert facts is not None and facts["device_name"]["value"] == "stand-in core"
    assert facts["device_count"]["value"] == "2"
