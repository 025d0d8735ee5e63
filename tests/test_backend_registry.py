"""One descriptor, one adapter and one constraint file per target; the code between them names no target.

A new backend is a descriptor (collector/backends/NAME.toml, or in a plugin folder), the adapter
module it names and the constraint file it names (reportgen/judge/constraints/ for the built-in
ones, their plan rules copied into collector/target_rules.json); the rules, views, summaries and
the environment reader ask those, never a target's name.
"""

from __future__ import annotations

import re

import pytest

from collector import planschema
from collector.backends import ADAPTERS, Backend
from reportgen.judge import backend_docs
from tests.conftest import REPO

# Modules that must read every target-specific fact from an adapter or a constraint file.
TARGET_FREE = [
    "collector/environment.py",
    "campaign/spec.py",
    "campaign/slurm.py",
    "campaign/kubernetes.py",
    "campaign/task.sh",
    "reportgen/judge/disposition.py",
    "reportgen/judge/comparison.py",
    "reportgen/judge/nextstep.py",
    "reportgen/render/view.py",
    *sorted(f"reportgen/render/sections/{p.name}" for p in (REPO / "reportgen/render/sections").glob("*.py")),
    "reportgen/render/compare_view.py",
    "reportgen/publish/summary.py",
    "reportgen/publish/frame.py",
]
# A quoted target or family name, or a package or setting of one, in code (comments dropped).
NAMED = re.compile(r"""["'](neuron|cuda)[-_"' ]|TORCH_NEURONX|torch_neuronx|torch\.cuda""")


def test_every_target_has_one_adapter_and_one_constraint_file() -> None:
    assert set(ADAPTERS) == set(planschema.TARGETS) == set(backend_docs.targets())
    for target, adapter in ADAPTERS.items():
        assert adapter is Backend or adapter.__module__ == f"collector.backends.{target}", (target, adapter.__module__)
        assert adapter.name == target and adapter.descriptor.name == target
        assert backend_docs.load_backend_docs(target).target == target


@pytest.mark.parametrize("path", TARGET_FREE)
def test_the_code_between_adapters_and_constraint_files_names_no_target(path: str) -> None:
    code = [line.split("#", 1)[0] for line in (REPO / path).read_text(encoding="utf-8").splitlines()]
    named = [f"{path}:{n}: {line.strip()}" for n, line in enumerate(code, start=1) if NAMED.search(line)]
    assert not named, named


def test_each_family_a_log_may_record_belongs_to_one_target() -> None:
    owners: dict[str, str] = {}
    for target in backend_docs.targets():
        docs = backend_docs.load_backend_docs(target)
        assert set(docs.evidence_families) <= set(docs.families), target
        for family in docs.families:
            assert family not in owners, f"{family} is claimed by {owners.get(family)} and {target}"
            owners[family] = target
    for target, adapter in ADAPTERS.items():
        family, _ = adapter.decide_family(
            {
                "torch_version": "2.13.0",
                "cuda_available": True,
                "neuronx_version": "2.13.3.0.1",
                "privateuse1": target,
                "xla_present": False,
            }
        )
        assert owners.get(family) == target, (target, family)


def test_the_site_stack_column_is_the_descriptors_first_version_column() -> None:
    from reportgen.publish.summary import RunSummary

    fields = {name: None for name in RunSummary.__dataclass_fields__}
    for target, versions, shown in (
        ("neuron", {"torch_neuronx": "2.13.3.0.9"}, "2.13.3.0.9"),
        ("cuda", {"cuda": "12.8"}, "12.8"),
        ("cpu", {"torch": "2.13.0"}, "—"),
        ("neuron", {}, "—"),
    ):
        summary = object.__new__(RunSummary)
        summary.__dict__.update({**fields, "target": target, "versions": versions})
        assert summary.stack_version == shown, target
