"""A built-in backend is its files in collector/backends/, and no other collector file names it.

Each test works on a copy of collector/: one adds docs/backends.md's example backend (its
descriptor and adapter, word for word) as a built-in one, the other removes every built-in
backend but the cpu. In a fresh process run from the copy, the adapter table follows the
descriptors alone, and the device-only checks (tests/test_collector_device_only.py) still hold
with no other file edited.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from collector.descriptors import PLUGIN_ENV, read_descriptor
from tests.conftest import REPO
from tests.test_collector_device_only import unlisted, unreached

# What the fresh process reports: the adapter table, what --target auto tries, and what the
# given target resolves to here (its name, or why it is not available).
PROBE = """\
import json, sys
from collector.backends import ADAPTERS, AUTO_ORDER, BackendUnavailable, select_backend
try:
    chosen = select_backend(sys.argv[1]).name
except BackendUnavailable as exc:
    chosen = str(exc)
print(json.dumps({
    "adapters": {name: [a.__module__, a.__name__, sys.modules[a.__module__].__file__] for name, a in ADAPTERS.items()},
    "auto": list(AUTO_ORDER),
    "chosen": chosen,
}))
"""


def _copy_collector(tmp_path: Path) -> Path:
    copy = tmp_path / "collector"
    shutil.copytree(REPO / "collector", copy, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def _probe(root: Path, target: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k != PLUGIN_ENV}
    env["PYTHONPATH"] = str(root)
    done = subprocess.run(
        [sys.executable, "-c", PROBE, target],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _doc_example(kind: str, heading: str) -> str:
    doc = (REPO / "docs" / "backends.md").read_text(encoding="utf-8")
    found = re.search(rf"## {heading}\n\n```{kind}\n(.*?)```", doc, re.S)
    assert found, f"docs/backends.md has no {kind} example under '## {heading}'"
    return found.group(1)


def test_the_docs_example_added_as_a_built_in_backend_is_loaded_through_its_descriptor(tmp_path: Path) -> None:
    collector = _copy_collector(tmp_path)
    (collector / "backends" / "rocm.toml").write_text(_doc_example("toml", "A descriptor"), encoding="utf-8")
    (collector / "backends" / "rocm.py").write_text(_doc_example("python", "The adapter"), encoding="utf-8")

    seen = _probe(tmp_path, "amd")
    module, cls, file = seen["adapters"]["rocm"]
    assert (module, cls, Path(file)) == ("collector.backends.rocm", "RocmBackend", collector / "backends" / "rocm.py")
    assert seen["auto"] == ["neuron", "cuda", "rocm"]  # auto_order = 3, after the built-in 1 and 2
    # By its alias; this host has no HIP device, so the adapter's own constructor refused it.
    assert seen["chosen"] in ("rocm", "target rocm: no HIP device here")

    assert unreached(collector) == []  # the adapter its descriptor names is reached
    assert unlisted(collector) == []  # the README's `backends/*.py` row covers it


def test_removing_a_built_in_backends_files_removes_it_and_nothing_else_breaks(tmp_path: Path) -> None:
    collector = _copy_collector(tmp_path)
    for descriptor in (collector / "backends").glob("*.toml"):
        found = read_descriptor(descriptor)
        if found.adapter_file.name != "base.py":  # the cpu's adapter, which every other one subclasses
            descriptor.unlink()
            found.adapter_file.unlink()
            if found.before_torch:  # and the hook it runs before torch is imported
                (descriptor.parent / found.before_torch.split(":", 1)[0]).unlink()

    seen = _probe(tmp_path, "cpu")
    assert seen["adapters"] == {"cpu": ["collector.backends.base", "Backend", str(collector / "backends" / "base.py")]}
    assert (seen["auto"], seen["chosen"]) == ([], "cpu")
    assert unreached(collector) == []
    assert unlisted(collector) == []
