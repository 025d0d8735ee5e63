"""A workload folder as a careless or hostile user leaves it: the files that load from it are the
files run_start hashed (found by reading the sources, collector/localimports.py) and hold the
bytes hashed; the collector's own modules, the standard library's and torch's are never replaced
by a file there; each refusal is one line naming the file."""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Iterator

import pytest

from collector.localimports import MAX_FILES, imports_digest, workload_imports
from collector.workload import WorkloadError, load_workload

FUNCTIONS = (
    "import torch\n"
    "def build_model():\n    return torch.nn.Linear(2, 2)\n"
    "def make_inputs(batch, length, layout):\n    return {}\n"
    "def run_model(model, inputs):\n    return {}\n"
    "def task_metric(outputs, reference, inputs):\n    return 1.0\n"
)


def _tree(root: Path, files: dict[str, str | bytes], module: str = "wl.py") -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8")
    return root / module


def _load(module: Path, **kwargs: Any) -> Any:
    plan = SimpleNamespace(module_path=module, generation=None, training=False)
    return load_workload(plan, **kwargs)  # type: ignore[arg-type]


def _loaded_from(folder: Path) -> set[str]:
    """The files of ``folder`` that are loaded modules now, from the folder."""
    real = os.path.realpath(folder) + os.sep
    return {
        os.path.relpath(os.path.realpath(m.__file__), real)
        for m in list(sys.modules.values())
        if isinstance(getattr(m, "__file__", None), str) and os.path.realpath(m.__file__).startswith(real)
    }


def _listed(module: Path) -> set[str]:
    real = os.path.realpath(module.parent)
    return {os.path.relpath(os.path.realpath(e["path"]), real) for e in workload_imports(module) if e.get("sha256")}


@pytest.fixture(autouse=True)
def clean_imports(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """sys.path as it was, and no module of a test's folder left loaded after it."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield
    for name, module in list(sys.modules.items()):
        if name.startswith("collector_workload_") or str(getattr(module, "__file__", "")).startswith(str(tmp_path)):
            del sys.modules[name]


def test_a_file_beside_the_module_that_it_does_not_import_never_runs(tmp_path: Path) -> None:
    """The folder was put first on sys.path for the whole run: a file there named like a module
    torch imports later (profile.py, for torch.compile's cProfile) ran inside the collector,
    unhashed. Here a made-up name stands for it, imported after the workload loaded."""
    module = _tree(
        tmp_path / "wl",
        {"wl.py": "import helper\n" + FUNCTIONS, "helper.py": "", "late_dependency_xyz.py": "raise SystemExit(9)\n"},
    )
    _load(module)
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("late_dependency_xyz")
    assert _loaded_from(module.parent) == {"wl.py", "helper.py"} == {"wl.py", *_listed(module)}


@pytest.mark.parametrize("name", ["json", "collector", "os", "time", "fractions"])
def test_a_helper_named_like_a_module_the_collector_uses_is_refused_naming_it(tmp_path: Path, name: str) -> None:
    """json.py beside the module was hashed as a workload import while `import json` gave the
    standard library's (loaded already): the hash named a file that never ran. One not loaded
    yet (fractions) would have replaced the standard library's for the collector too."""
    module = _tree(tmp_path / "wl", {"wl.py": f"import {name}\n" + FUNCTIONS, f"{name}.py": "X = 1\n"})
    with pytest.raises(WorkloadError) as raised:
        _load(module)
    message = str(raised.value)
    assert str(module.parent / f"{name}.py") in message and "rename it" in message and "\n" not in message
    assert _loaded_from(module.parent) == set()


def test_a_helper_edited_after_run_start_hashed_it_is_refused(tmp_path: Path) -> None:
    """The main process hashed the helpers in run_start and loaded them later, edited or not;
    a helper imported lazily (in a function) loaded whatever it held when first called."""
    module = _tree(
        tmp_path / "wl",
        {
            "wl.py": "import helper\ndef later():\n    import lazyhelper\n    return lazyhelper.X\n" + FUNCTIONS,
            "helper.py": "X = 1\n",
            "lazyhelper.py": "X = 1\n",
        },
    )
    digest = imports_digest(workload_imports(module))
    (module.parent / "helper.py").write_text("X = 2\n", encoding="utf-8")
    with pytest.raises(WorkloadError, match="changed, added or removed since the run began"):
        _load(module, imports_sha256=digest)
    (module.parent / "helper.py").write_text("X = 1\n", encoding="utf-8")
    loaded = _load(module, imports_sha256=digest)
    (module.parent / "lazyhelper.py").write_text("X = 2\n", encoding="utf-8")  # during the run
    with pytest.raises(ImportError, match="lazyhelper.py changed since the collector hashed it"):
        loaded.later()


def test_a_module_loaded_before_run_start_is_loaded_again_from_the_bytes_run_start_hashed(tmp_path: Path) -> None:
    """A plan's [compare] rules load the workload before run_start hashes it; a module edited in
    between was hashed as edited while the cached module, the one before the edit, ran the
    reference and the eager cells (a run whose hash named code it did not run)."""
    module = _tree(tmp_path / "wl", {"wl.py": "MODEL_REVISION = 'A'\n" + FUNCTIONS})
    assert _load(module).MODEL_REVISION == "A"  # the rules' check, before run_start
    module.write_text("MODEL_REVISION = 'B'\n" + FUNCTIONS, encoding="utf-8")  # edited before run_start
    digest = imports_digest(workload_imports(module))
    own = hashlib.sha256(module.read_bytes()).hexdigest()  # what run_start records
    assert _load(module, imports_sha256=digest, module_sha256=own).MODEL_REVISION == "B"
    assert _load(module, imports_sha256=digest, module_sha256=own).MODEL_REVISION == "B"  # and kept


def test_a_stale_bytecode_file_never_stands_in_for_the_source(tmp_path: Path) -> None:
    """A .pyc whose header matches the source's time and size was run instead of the source
    hashed (the standard loaders trust that header)."""
    from importlib._bootstrap_external import _code_to_timestamp_pyc  # type: ignore[attr-defined]

    module = _tree(tmp_path / "wl", {"wl.py": "import helper\n" + FUNCTIONS, "helper.py": "X = 1\n"})
    source = module.parent / "helper.py"
    stat = source.stat()
    other = compile("X = 2\n", str(source), "exec")
    cached = Path(importlib.util.cache_from_source(str(source)))
    cached.parent.mkdir(parents=True)
    cached.write_bytes(bytes(_code_to_timestamp_pyc(other, stat.st_mtime, stat.st_size)))
    assert _load(module).helper.X == 1


def test_a_helper_linked_from_outside_the_folder_is_not_loaded_and_named(tmp_path: Path) -> None:
    outside = _tree(tmp_path / "outside", {"helper.py": "X = 'outside'\n"}, "helper.py")
    module = _tree(tmp_path / "wl", {"wl.py": "import helper\n" + FUNCTIONS})
    (module.parent / "helper.py").symlink_to(outside)
    with pytest.raises(WorkloadError) as raised:
        _load(module)
    message = str(raised.value)
    assert f"{module.parent / 'helper.py'} is not loaded" in message and "\n" not in message
    assert _loaded_from(tmp_path) == set()


def test_imports_past_the_scan_s_limit_are_refused_not_run_unhashed(tmp_path: Path) -> None:
    count = MAX_FILES + 5
    files: dict[str, str | bytes] = {f"m{i}.py": "" for i in range(count)}
    module = _tree(tmp_path / "wl", {"wl.py": "".join(f"import m{i}\n" for i in range(count)) + FUNCTIONS, **files})
    with pytest.raises(WorkloadError, match=f"m{MAX_FILES}.py is not loaded"):
        _load(module)
    assert _loaded_from(module.parent) <= {"wl.py", *_listed(module)}


def test_a_failing_helper_is_named_with_its_line(tmp_path: Path) -> None:
    module = _tree(
        tmp_path / "wl",
        {"wl.py": "import ok\nimport bad\n" + FUNCTIONS, "ok.py": "", "bad.py": "X = 1\n\nY = 1 / 0\n"},
    )
    with pytest.raises(WorkloadError) as raised:
        _load(module)
    assert f"(in {module.parent / 'bad.py'} line 3): ZeroDivisionError" in str(raised.value)


def test_a_helper_that_is_not_utf8_is_named_not_the_module(tmp_path: Path) -> None:
    module = _tree(tmp_path / "wl", {"wl.py": "import latin\n" + FUNCTIONS, "latin.py": b"X = '\xe9'\n"})
    with pytest.raises(WorkloadError) as raised:
        _load(module)
    message = str(raised.value)
    assert f"(in {module.parent / 'latin.py'}) line 1: SyntaxError" in message and "\n" not in message


@pytest.mark.parametrize("folder", ["with space", "ünïcode", "dot.ted", "json", "collector"])
def test_odd_folder_names_load_what_the_scan_lists(tmp_path: Path, folder: str) -> None:
    module = _tree(
        tmp_path / folder,
        {
            "wl.py": "import helper\nfrom . import rel\nfrom .pkg import inner\n" + FUNCTIONS,
            "helper.py": "",
            "rel.py": "",
            "pkg/__init__.py": "",
            "pkg/inner.py": "from .. import rel\n",
        },
    )
    _load(module)
    assert _loaded_from(module.parent) == {"wl.py", *_listed(module)}
    assert {"helper.py", "rel.py", os.path.join("pkg", "inner.py")} <= _listed(module)


def test_the_hashes_are_of_the_bytes_that_run(tmp_path: Path) -> None:
    module = _tree(tmp_path / "wl", {"wl.py": "from . import a\n" + FUNCTIONS, "a.py": "X = 1\n"})
    (entry,) = workload_imports(module)
    assert entry["sha256"] == hashlib.sha256((module.parent / "a.py").read_bytes()).hexdigest()
    assert _load(module).a.X == 1


def test_an_init_file_in_the_workload_folder_is_not_listed_it_never_runs(tmp_path: Path) -> None:
    """The workload module is the package over its folder: ``from . import a`` (in it, or from
    a sub-package with ``from .. import a``) never runs the folder's own __init__.py, which the
    scan hashed as an import all the same."""
    module = _tree(
        tmp_path / "wl",
        {
            "wl.py": "from . import a\nfrom .pkg import b\n" + FUNCTIONS,
            "__init__.py": "raise SystemExit('the folder is no package of its own here')\n",
            "a.py": "",
            "pkg/__init__.py": "",
            "pkg/b.py": "from .. import a\n",
        },
    )
    _load(module)
    assert _loaded_from(module.parent) == {"wl.py", *_listed(module)}
    assert "__init__.py" not in _listed(module)


@pytest.mark.parametrize("file_name", ["model.v2.py", "my-model.py", "__init__.py", "torch.py", "collector.py"])
def test_odd_module_file_names_load(tmp_path: Path, file_name: str) -> None:
    """model.v2.py failed with "No module named 'collector_workload_model'" (the dot made the
    name a submodule's)."""
    module = _tree(
        tmp_path / "wl", {file_name: "from . import helper\n" + FUNCTIONS, "helper.py": "X = 1\n"}, file_name
    )
    assert _load(module).helper.X == 1
    assert _loaded_from(module.parent) == {file_name, *_listed(module)}
