"""A new backend is a descriptor, an adapter and a constraints file, and no other code.

The test writes a fake backend into a temporary folder, names the folder in
MIGRATION_RECORD_BACKENDS and, in fresh processes (the descriptors are read once per process):
the collector's adapter table and --target list it, the contract accepts its backend family,
plan-check reads its constraints, and `reportgen report` judges a small synthetic log of it.
Without the variable the same log is refused: the family came from the descriptor, not from code.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from collector.descriptors import PLUGIN_ENV, DescriptorError, read_descriptor
from tests import logbuilder
from tests.conftest import REPO

DESCRIPTOR = """\
name = "fakeaccel"
aliases = ["fake"]
adapter = "fakeaccel.py:FakeAccelBackend"
constraints = "fakeaccel-1.0.toml"
compile_backend = "inductor"
families = { fakeaccel = "fake accelerator" }
env_prefixes = ["FAKEACCEL_"]
notes = "A test backend that runs on the host CPU."

[[version]]
key = "fakeaccel_sdk"
module = "json"
attribute = "__version__"

[kubernetes]
device_resource = "example.com/fakeaccel"

[slurm]
gres = "fakeaccel"
"""

ADAPTER = '''\
from collector.backends import Backend


class FakeAccelBackend(Backend):
    """Runs on the host CPU; decides its own family."""

    @staticmethod
    def decide_family(probes):
        return "fakeaccel", "target fakeaccel: a test backend on the host CPU"
'''

CONSTRAINTS = """\
target = "fakeaccel"
family = "fakeaccel"
release = "FakeAccel SDK 1.0"
evidence_families = ["fakeaccel"]
required_versions = ["torch"]
adapter_note = "The fakeaccel adapter is a test double that runs on the CPU."

[sources]
doc = "https://example.com/fakeaccel"

[[constraint]]
id = "no-dynamic"
title = "FakeAccel compiles static shapes only"
text = "dynamic=True is refused."
applies_to = "compiled"
source = "doc"
plan_rule = [{ key = "compile.dynamic", allowed = [false] }]
"""


def _backend_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "backends"
    folder.mkdir()
    (folder / "fakeaccel.toml").write_text(DESCRIPTOR, encoding="utf-8")
    (folder / "fakeaccel.py").write_text(ADAPTER, encoding="utf-8")
    (folder / "fakeaccel-1.0.toml").write_text(CONSTRAINTS, encoding="utf-8")
    return folder


def _run(argv: list[str], folder: Path | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != PLUGIN_ENV}
    if folder is not None:
        env[PLUGIN_ENV] = str(folder)
    return subprocess.run(
        [sys.executable, *argv], cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False
    )


def _log(tmp_path: Path) -> Path:
    events = logbuilder.base_events("fakeaccel", "fakeaccel")
    environment = next(e for e in events if e["kind"] == "environment")
    environment["versions"]["fakeaccel_sdk"] = {"value": "9.9.1", "source": "synthetic fixture"}
    # What the collector records with an adapter that keeps the base's device facts (the host's
    # CPUs): valid for a backend whose descriptor does not say device_facts = true (a review: such
    # a plugin's real runs were refused as relabelled).
    environment["device"]["device_count"] = {"value": "2", "source": "os.cpu_count()"}
    path = tmp_path / "runs" / "fake-run" / "events.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(logbuilder.dumps(logbuilder.with_envelope(logbuilder.finish(events))), encoding="utf-8")
    return path


def test_a_fake_backend_from_a_folder_gets_an_adapter_and_a_report(tmp_path: Path) -> None:
    folder = _backend_folder(tmp_path)
    table = _run(
        [
            "-c",
            (
                "import json, torch; from collector.backends import ADAPTERS, AUTO_ORDER, select_backend; "
                "from collector import environment; from campaign.spec import DEVICE_RESOURCES, SLURM_GRES; "
                "b = select_backend('fake'); "
                "print(json.dumps({'adapters': list(ADAPTERS), 'auto': list(AUTO_ORDER), 'selected': b.name, "
                "'family': environment.decide_backend_family('fakeaccel', {}), "
                "'version': environment.read_versions(torch)['fakeaccel_sdk'], "
                "'resource': DEVICE_RESOURCES.get('fakeaccel'), 'gres': SLURM_GRES.get('fakeaccel')}))"
            ),
        ],
        folder,
    )
    assert table.returncode == 0, table.stderr
    seen = json.loads(table.stdout)
    assert "fakeaccel" in seen["adapters"] and "fakeaccel" not in seen["auto"]  # no auto_order: never chosen by auto
    assert seen["selected"] == "fakeaccel"  # by its alias
    assert seen["family"] == ["fakeaccel", "target fakeaccel: a test backend on the host CPU"]
    assert seen["version"] == {"value": json.__version__, "source": "json.__version__"}
    assert (seen["resource"], seen["gres"]) == ("example.com/fakeaccel", "fakeaccel")
    assert "fakeaccel" in _run(["-m", "collector", "--help"], folder).stdout

    log = _log(tmp_path)
    out = tmp_path / "report"
    done = _run(["-m", "reportgen", "report", str(log), "--out", str(out)], folder)
    assert done.returncode == 0, done.stdout + done.stderr
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "FakeAccel SDK 1.0" in report or "fake accelerator" in report
    assert "The fakeaccel adapter is a test double that runs on the CPU." in report

    # The site's stack column shows the version its descriptor's first version column names.
    site = tmp_path / "site"
    built = _run(["-m", "reportgen", "site", str(log.parent.parent), "--out", str(site)], folder)
    assert built.returncode == 0, built.stdout + built.stderr
    assert "<td>9.9.1</td>" in (site / "index.html").read_text(encoding="utf-8")

    # plan-check reads the fake backend's constraints: dynamic=True is revised to false.
    plan = tmp_path / "plan.toml"
    plan.write_text(
        (REPO / "collector" / "workloads" / "tiny_encoder.toml").read_text(encoding="utf-8")
        + "\n[compile]\ndynamic = true\n",
        encoding="utf-8",
    )
    (tmp_path / "tiny_encoder.py").write_text(
        (REPO / "collector" / "workloads" / "tiny_encoder.py").read_text(encoding="utf-8"), encoding="utf-8"
    )
    checked = _run(["-m", "reportgen", "plan-check", str(plan), "--target", "fake", "--format", "json"], folder)
    assert "no-dynamic" in checked.stdout, checked.stdout + checked.stderr
    # ...and so does the collector, before anything runs (exit 2, no run folder).
    refused_plan = _run(
        ["-m", "collector", "--workload", str(plan), "--target", "fake", "--out", str(tmp_path / "out")], folder
    )
    assert refused_plan.returncode == 2, refused_plan.stderr
    assert "constraint no-dynamic of FakeAccel SDK 1.0" in refused_plan.stderr and not (tmp_path / "out").exists()

    # Without the folder, the family is no backend's: the log is refused, the option unknown.
    refused = _run(["-m", "reportgen", "validate", str(log)], None)
    assert refused.returncode == 1 and "error: environment: backend_family" in refused.stdout, refused.stdout
    assert "fakeaccel" not in _run(["-m", "collector", "--help"], None).stdout


@pytest.mark.parametrize(
    ("old", "new", "said"),
    [
        ('aliases = ["fake"]', 'aliasses = ["fake"]', "fakeaccel.toml.aliasses: unknown key (did you mean 'aliases'?)"),
        ('compile_backend = "inductor"\n', "", "fakeaccel.toml.compile_backend: missing (required)"),
        (
            'device_resource = "example.com/fakeaccel"',
            'device_resources = "x"',
            "fakeaccel.toml.kubernetes.device_resources: unknown key (did you mean 'device_resource'?)",
        ),
        ('attribute = "__version__"', "attribute = 1", "fakeaccel.toml.version[0].attribute: expected str, found int"),
        ('name = "fakeaccel"', 'name = "other"', "fakeaccel.toml.name: 'other' must be the file's name"),
        (
            'families = { fakeaccel = "fake accelerator" }',
            'families = { cpu = "cpu" }',
            "'family cpu' is already claimed by",
        ),
        ('aliases = ["fake"]', 'aliases = ["trainium"]', "'trainium' is already claimed by"),
        # A reserved word is refused for being reserved, as a name or as an alias alike.
        ('name = "fakeaccel"', 'name = "auto"', "fakeaccel.toml.name: 'auto' is reserved"),
        ('aliases = ["fake"]', 'aliases = ["auto"]', "fakeaccel.toml.aliases: 'auto' is reserved"),
        ('aliases = ["fake"]', 'aliases = ["Fake"]', "fakeaccel.toml.aliases: 'Fake' must be lower case letters"),
    ],
)
def test_a_typo_in_a_descriptor_is_one_line_naming_file_and_key(tmp_path: Path, old: str, new: str, said: str) -> None:
    folder = _backend_folder(tmp_path)
    path = folder / "fakeaccel.toml"
    assert old in DESCRIPTOR
    path.write_text(DESCRIPTOR.replace(old, new, 1), encoding="utf-8")
    from collector import descriptors

    with pytest.raises(DescriptorError, match=None) as caught:
        read_descriptor(path)
        descriptors._load((folder,))
    assert said in str(caught.value) and "\n" not in str(caught.value)
    # Each command stops on it with that one line and exit 2, never a traceback.
    for argv, prefix in (
        (["-m", "collector", "--help"], "collector: backend descriptor: "),
        (["-m", "reportgen", "validate", str(tmp_path)], "reportgen: backend descriptor: "),
    ):
        done = _run(argv, folder)
        assert done.returncode == 2, (argv, done.stdout, done.stderr)
        assert done.stderr.startswith(prefix) and said in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_a_typo_in_a_plugin_constraints_file_names_file_and_key(tmp_path: Path) -> None:
    folder = _backend_folder(tmp_path)
    (folder / "fakeaccel-1.0.toml").write_text(
        CONSTRAINTS.replace("evidence_families", "evidence_family"), encoding="utf-8"
    )
    done = _run(["-m", "reportgen", "validate", str(_log(tmp_path))], folder)
    assert done.returncode == 2
    assert done.stderr.startswith("reportgen: constraint data: fakeaccel-1.0.toml: unknown key(s) 'evidence_family'"), (
        done.stderr
    )


def test_a_plugin_adapter_that_cannot_load_stops_the_collector_with_one_line(tmp_path: Path) -> None:
    folder = _backend_folder(tmp_path)
    (folder / "fakeaccel.py").write_text('raise ValueError("no such SDK here")\n', encoding="utf-8")
    out = tmp_path / "out"
    done = _run(
        [
            "-m",
            "collector",
            "--workload",
            str(REPO / "collector" / "workloads" / "tiny_encoder.toml"),
            "--target",
            "cpu",
            "--out",
            str(out),
            "--modes",
            "eager",
            "--cold",
            "off",
        ],
        folder,
    )
    assert done.returncode == 2, done.stderr
    assert (
        done.stderr.strip().splitlines()[-1]
        == f"collector: backend descriptor: {folder / 'fakeaccel.toml'}: adapter: fakeaccel.py raised ValueError: no such SDK here"
    )
    assert "Traceback" not in done.stderr and not out.exists()


@pytest.mark.parametrize(
    ("old", "new", "said"),
    [
        (
            'target = "fakeaccel"',
            'target = "neuron"',
            "fakeaccel-1.0.toml: target: 'neuron', but fakeaccel.toml names this file for 'fakeaccel'",
        ),
        (
            'family = "fakeaccel"',
            'family = "cuda"',
            "fakeaccel-1.0.toml: family: 'cuda' is not one of fakeaccel.toml's families (fakeaccel)",
        ),
        (
            'evidence_families = ["fakeaccel"]',
            'evidence_families = ["fakeacel"]',
            "fakeaccel-1.0.toml: evidence_families: 'fakeacel' is not one of fakeaccel.toml's families",
        ),
    ],
)
def test_a_constraints_file_that_disagrees_with_its_descriptor_names_file_and_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, old: str, new: str, said: str
) -> None:
    from reportgen.judge import backend_docs

    folder = _backend_folder(tmp_path)
    (folder / "fakeaccel-1.0.toml").write_text(CONSTRAINTS.replace(old, new, 1), encoding="utf-8")
    monkeypatch.setenv(PLUGIN_ENV, str(folder))
    backend_docs.load_backend_docs.cache_clear()
    try:
        with pytest.raises(backend_docs.BackendDocsError) as caught:
            backend_docs.load_backend_docs("fakeaccel")
    finally:
        backend_docs.load_backend_docs.cache_clear()
    assert str(caught.value).startswith(said), str(caught.value)
