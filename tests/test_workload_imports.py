"""The local files a workload module imports are hashed in run_start (found by reading its
source, bounded, never outside its folder), and a comparison names a changed, added or dropped
one, lined up by its path from the module's folder, before it says fixed, faster or slower."""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from pathlib import Path
from typing import Any

import msgspec
import pytest
from click.testing import CliRunner

from collector import localimports
from collector import provenance as prov
from collector.localimports import MAX_DEPTH, MAX_FILES, ROLE, workload_imports
from reportgen.cli import main
from reportgen.contract.events import RunStart
from reportgen.publish.diff import diff_runs, format_diff
from reportgen.publish.site import build_site
from reportgen.publish.summary import summarize
from reportgen.render.report import judge_log
from tests.logbuilder import base_events, dumps, timing_log
from tests.test_provenance import _start
from tests.test_run_changes import BIG_COMPILED, _mismatch, _write

RUNNER = CliRunner()


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root / "wl.py"


def _found(module: Path) -> dict[str, str]:
    """What the scan lists: path from the module's folder -> sha256 or the reason."""
    return {
        os.path.relpath(e["path"], module.parent): e.get("sha256") or "unknown: " + e["unknown_reason"]
        for e in workload_imports(module)
    }


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_local_files_a_workload_imports_are_hashed_in_run_start(tmp_path: Path) -> None:
    module = _tree(
        tmp_path / "wl",
        {
            "wl.py": "import os, torch\nfrom mylayers import Block\nimport pkg.sub\nfrom pkg import other, NAME\n"
            "from . import helpers\nimport importlib\n"
            "def lazy():\n    import later\n    return importlib.import_module('dyn')\n"
            "SIBLING = 'by_path.py'\n",
            "mylayers.py": "from deep import thing\n",
            "deep.py": "thing = 1\n",
            "pkg/__init__.py": "NAME = 1\n",
            "pkg/sub.py": "from .. import mylayers\n",
            "pkg/other.py": "",
            "helpers.py": "",
            "later.py": "",
            "dyn.py": "",
            "by_path.py": "",
            "unused.py": "",
        },
    )
    found = _found(module)
    assert set(found) == {
        "mylayers.py",
        "deep.py",
        "pkg/__init__.py",
        "pkg/sub.py",
        "pkg/other.py",
        "helpers.py",
        "later.py",
        "dyn.py",
        "by_path.py",
    }, "every local import, direct, nested, relative, lazy and by name; nothing else"
    assert found["mylayers.py"] == _sha(module.parent / "mylayers.py")
    files = [("workload_module", module)]
    start = prov.provenance(files, workload_imports(module))
    roles = [f["role"] for f in start["files"] if f["role"] != prov.SOURCE_ROLE]  # the collector's own files apart
    assert roles == ["workload_module"] + [ROLE] * 9
    msgspec.convert({**_start(), "provenance": start}, RunStart)  # what the contract accepts


def test_an_import_cycle_lists_each_file_once(tmp_path: Path) -> None:
    module = _tree(
        tmp_path,
        {"wl.py": "import a\nimport wl\n", "a.py": "import b\nimport wl\n", "b.py": "import a\nfrom a import b\n"},
    )
    assert list(_found(module)) == ["a.py", "b.py"]


def test_ten_thousand_imports_are_bounded(tmp_path: Path) -> None:
    names = [f"m{i}" for i in range(10_000)]
    files = {f"{n}.py": "" for n in names[:300]}
    module = _tree(tmp_path, {"wl.py": "".join(f"import {n}\n" for n in names), **files})
    entries = workload_imports(module)
    assert len(entries) == MAX_FILES + 1
    assert all("sha256" in e for e in entries[:MAX_FILES])
    assert entries[-1]["unknown_reason"].startswith(f"not hashed: the collector hashes at most {MAX_FILES}")
    same = _tree(tmp_path / "same", {"wl.py": "import helper\n" * 10_000, "helper.py": ""})
    assert list(_found(same)) == ["helper.py"]


def test_a_chain_deeper_than_the_limit_says_where_it_stopped(tmp_path: Path) -> None:
    depth = MAX_DEPTH + 3
    files = {f"f{i}.py": f"import f{i + 1}\n" for i in range(1, depth)}
    module = _tree(tmp_path, {"wl.py": "import f1\n", **files, f"f{depth}.py": ""})
    found = _found(module)
    assert [k for k, v in found.items() if not v.startswith("unknown")] == [f"f{i}.py" for i in range(1, MAX_DEPTH + 1)]
    assert found[f"f{MAX_DEPTH + 1}.py"].startswith(f"unknown: not hashed: {MAX_DEPTH + 1} imports away")
    assert len(found) == MAX_DEPTH + 1


def test_a_module_that_does_not_parse_is_hashed_and_its_imports_not_read(tmp_path: Path) -> None:
    broken = _tree(tmp_path / "a", {"wl.py": "import helper\ndef broken(:\n", "helper.py": ""})
    assert workload_imports(broken) == []
    module = _tree(
        tmp_path / "b",
        {
            "wl.py": "import bad\nimport escapes\n",
            "bad.py": "import helper\n\x00 (\n",
            "helper.py": "",
            "escapes.py": "import other\nPATTERN = '\\d+'\n",  # an invalid escape: a warning, not ours to say
            "other.py": "",
        },
    )
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        found = list(_found(module))
    assert found == ["bad.py", "escapes.py", "other.py"], "the helper is imported only by a file that does not parse"
    assert said == []
    assert workload_imports(tmp_path / "missing" / "wl.py") == []


def test_imports_climbing_above_the_workload_folder_are_not_followed(tmp_path: Path) -> None:
    (tmp_path / "outside.py").write_text("", encoding="utf-8")
    (tmp_path / "__init__.py").write_text("", encoding="utf-8")
    module = _tree(
        tmp_path / "wl",
        {
            "wl.py": "from .. import outside\nfrom ..outside import x\nimport pkg.inner\nP = '../outside.py'\n",
            "pkg/__init__.py": "",
            "pkg/inner.py": "from ... import outside\nfrom .. import kept\n",
            "kept.py": "",
        },
    )
    assert set(_found(module)) == {"pkg/__init__.py", "pkg/inner.py", "kept.py"}


def test_symlinks_pointing_outside_are_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "helper.py").write_text("", encoding="utf-8")
    (outside / "__init__.py").write_text("", encoding="utf-8")
    (outside / "mod.py").write_text("", encoding="utf-8")
    module = _tree(tmp_path / "wl", {"wl.py": "import helper\nimport linked.mod\nimport alias\n", "real.py": ""})
    (module.parent / "helper.py").symlink_to(outside / "helper.py")
    (module.parent / "linked").symlink_to(outside, target_is_directory=True)
    (module.parent / "alias.py").symlink_to(module.parent / "real.py")  # inside: followed, once
    assert _found(module) == {"alias.py": _sha(module.parent / "real.py")}


def test_a_fifo_and_a_folder_named_like_a_module_are_no_files(tmp_path: Path) -> None:
    module = _tree(tmp_path, {"wl.py": "import pipe\nimport folder\nP = 'pipe.py'\n"})
    os.mkfifo(tmp_path / "pipe.py")
    (tmp_path / "folder").mkdir()
    assert workload_imports(module) == []


def test_a_local_file_that_cannot_be_read_is_listed_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = _tree(tmp_path, {"wl.py": "import secret\nimport after\n", "secret.py": "import after\n", "after.py": ""})
    real_open = os.open

    def refusing(path: Any, *args: Any, **kwargs: Any) -> int:
        if str(path).endswith("secret.py"):  # as a file of mode 000 is, to anyone but root
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", refusing)
    assert _found(module) == {
        "secret.py": "unknown: cannot read: Permission denied",
        "after.py": _sha(tmp_path / "after.py"),
    }


def test_an_installed_packages_folder_below_the_workload_is_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = _tree(tmp_path, {"wl.py": "import torchlike\nimport mine\n", "torchlike/__init__.py": "", "mine.py": ""})
    installed = [Path(os.path.realpath(tmp_path / "torchlike"))]
    monkeypatch.setattr(localimports, "installed_dirs", lambda: installed)
    assert list(_found(module)) == ["mine.py"]
    # A workload shipped inside an installed package is scanned within its own folder.
    installed[:] = [Path(os.path.realpath(tmp_path.parent))]
    assert set(_found(module)) == {"torchlike/__init__.py", "mine.py"}


def test_the_sample_classifier_lists_the_encoder_it_loads_by_path() -> None:
    from tests.conftest import REPO

    module = REPO / "collector" / "workloads" / "tiny_classifier.py"
    assert list(_found(module)) == ["tiny_encoder.py"]


# reportgen: the imports line up by their path from the module's folder.

HOST = "/host/wl"


def _files(imports: dict[str, str]) -> list[dict[str, Any]]:
    return [
        {"role": "workload_module", "path": f"{HOST}/w.py", "sha256": "a" * 64},
        {"role": "plan", "path": f"{HOST}/w.toml", "sha256": "b" * 64},
    ] + [{"role": ROLE, "path": f"{HOST}/{name}", "sha256": sha * 64} for name, sha in imports.items()]


def _provenance(
    events: list[dict[str, Any]], imports: dict[str, str] | None, version: str = "0.3.0"
) -> list[dict[str, Any]]:
    events[0]["provenance"] = {
        "collector_version": version,
        "git_commit": {"value": "1" * 40, "source": "git rev-parse HEAD"},
        "git_dirty": {"value": "false", "source": "git status"},
        "files": _files(imports) if imports is not None else _files({})[:2],
    }
    return events


def _pair(
    tmp_path: Path, before: dict[str, str] | None, after: dict[str, str] | None, version: str = "0.3.0"
) -> tuple[Path, Path]:
    a = _write(tmp_path / "runs" / "a", _provenance(base_events(), before, version), "run-a")
    b = _write(tmp_path / "runs" / "b", _provenance(base_events(), after), "run-b", "2026-01-02T00:00:00Z")
    return a, b


def _code_changes(a: Path, b: Path) -> list[list[str]]:
    result = RUNNER.invoke(main, ["diff", str(a), str(b), "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)["code_and_data"]


def test_imports_line_up_by_name_when_the_set_of_imports_changes(tmp_path: Path) -> None:
    a, b = _pair(tmp_path, {"a.py": "1", "layers/b.py": "2"}, {"layers/b.py": "2", "c.py": "3"})
    assert sorted(_code_changes(a, b)) == [
        ["workload import a.py", "sha256 " + "1" * 64, "not imported"],
        ["workload import c.py", "not imported", "sha256 " + "3" * 64],
    ], "the unchanged layers/b.py is no change, whatever its place in the list"
    page = tmp_path / "page"
    assert RUNNER.invoke(main, ["report", str(b), "--out", str(page)]).exit_code == 0
    assert "| workload import layers/b.py | sha256 " + "2" * 64 in (page / "report.md").read_text(encoding="utf-8")


def test_an_older_log_without_imports_is_not_recorded_not_removed(tmp_path: Path) -> None:
    a, b = _pair(tmp_path, None, {"helper.py": "3"})
    assert _code_changes(a, b) == [
        [
            "workload import helper.py",
            "not recorded (a collector before 0.4.0 does not list the local files a workload imports)",
            "sha256 " + "3" * 64,
        ]
    ]
    a, b = _pair(tmp_path / "same", None, None)
    assert _code_changes(a, b) == []


def test_a_log_from_a_collector_that_lists_imports_and_lists_none_imported_none(tmp_path: Path) -> None:
    a, b = _pair(tmp_path, None, {"helper.py": "3"}, version="0.4.0")
    assert ["workload import helper.py", "not imported", "sha256 " + "3" * 64] in _code_changes(a, b)


def test_diff_names_a_changed_helper_before_it_says_fixed(tmp_path: Path) -> None:
    before = _provenance(base_events(), {"helper.py": "1"})
    _mismatch(before, BIG_COMPILED)
    a = _write(tmp_path / "a", before, "run-a")
    b = _write(tmp_path / "b", _provenance(base_events(), {"helper.py": "2"}), "run-b", "2026-01-02T00:00:00Z")
    text = format_diff(diff_runs(summarize(judge_log(a)), summarize(judge_log(b))))
    line = f"  workload import helper.py: sha256 {'1' * 64} -> sha256 {'2' * 64}"
    assert "code and data changes: 1" in text and line in text
    assert text.index(line) < text.index("fixed: 1")
    md = RUNNER.invoke(main, ["diff", str(a), str(b), "--format", "md"]).output
    assert (
        md.index("**Code and data changed (1):**") < md.index("workload import helper.py") < md.index("| fixed | 1 |")
    )


def _timed_pair(tmp_path: Path) -> tuple[Path, Path]:
    paths = []
    for name, scale, seed, sha in (("a", 1.0, 1, "1"), ("b", 0.6, 2, "2")):
        events = _provenance(timing_log(f"run-{name}", scale=scale, seed=seed), {"helper.py": sha})
        events[0]["started_at"] = f"2026-01-0{seed}T00:00:00Z"  # a history pairs runs whose starts it can order
        path = tmp_path / "runs" / name / "events.jsonl"
        path.parent.mkdir(parents=True)
        path.write_text(dumps(events), encoding="utf-8")
        paths.append(path)
    return paths[0], paths[1]


def test_compare_names_a_changed_helper_before_its_answer(tmp_path: Path) -> None:
    a, b = _timed_pair(tmp_path)
    out = ["--out", str(tmp_path / "cmp"), "--format", "html,md,json"]
    result = RUNNER.invoke(main, ["compare", str(a), str(b), *out])
    assert result.exit_code == 0, result.output
    answer = result.output.splitlines()[0]
    assert answer.index("1 code and data change (listed first)") < answer.index("faster")
    data = json.loads((tmp_path / "cmp" / "compare.json").read_text(encoding="utf-8"))
    assert data["code_and_data"] == [["workload import helper.py", "sha256 " + "1" * 64, "sha256 " + "2" * 64]]
    md = (tmp_path / "cmp" / "compare.md").read_text(encoding="utf-8")
    assert md.index("**Code and data differ (1):**") < md.index("| workload import helper.py |") < md.index("## 2.")
    page = (tmp_path / "cmp" / "compare.html").read_text(encoding="utf-8")
    assert page.index("Code and data differ (1)") < page.index("workload import helper.py: sha256 " + "1" * 64)


def test_the_history_names_a_changed_helper_before_its_timing_line(tmp_path: Path) -> None:
    _timed_pair(tmp_path)
    build_site([tmp_path / "runs"], tmp_path / "site")
    page = next((tmp_path / "site" / "workloads").glob("*/index.html")).read_text(encoding="utf-8")
    latest = page[page.index("Latest run against the previous one") :]
    # (these fixtures keep no threads or load around their warm loops: that is named too)
    assert latest.index(
        "changed first (1 code and data: workload import helper.py; threads, CPU affinity"
    ) < latest.index("faster")
    change = page[page.index("What changed between consecutive runs") :]
    assert change.index("workload import helper.py") < change.index("Disposition:")


def test_a_log_listing_very_many_imports_is_bounded(tmp_path: Path) -> None:
    many = {"x" * 5_000 + ".py": "2", **{f"m{i:06d}.py": "1" for i in range(5_000)}}
    a, b = _pair(tmp_path, many, {**many, "m004999.py": "3"})
    changes = _code_changes(a, b)
    assert (
        len(changes) == 1
        and changes[0][0] == "workload imports beyond the first 300"
        and "(5,001 in all)" in changes[0][1]
    )
    page = tmp_path / "page"
    assert RUNNER.invoke(main, ["report", str(b), "--out", str(page)]).exit_code == 0
    text = (page / "report.md").read_text(encoding="utf-8")
    assert "workload import (5003 characters, sha256 " in text
    assert "m000298.py" in text and "m000299.py" not in text and "x" * 200 not in text


def test_a_log_listing_very_many_other_files_is_bounded(tmp_path: Path) -> None:
    """Not only imports: 5,000 files of another role (one a later collector may write; a run
    reads one plan, so 5,000 of those are refused) give 300 rows and one line for the rest, whose
    digest still shows a change among them; the page stays small."""

    def plans(changed: str) -> list[dict[str, Any]]:
        events = _provenance(base_events(), {"helper.py": "1"})
        files = events[0]["provenance"]["files"]
        files[1:1] = [{"role": "dataset", "path": f"/host/p{i}.toml", "sha256": "b" * 64} for i in range(5_000)]
        files[4_000]["sha256"] = changed * 64
        return events

    a = _write(tmp_path / "runs" / "a", plans("b"), "run-a")
    b = _write(tmp_path / "runs" / "b", plans("d"), "run-b", "2026-01-02T00:00:00Z")
    changes = _code_changes(a, b)
    assert len(changes) == 1 and changes[0][0] == "files read beyond the first 300", changes
    page = tmp_path / "page"
    assert RUNNER.invoke(main, ["report", str(b), "--out", str(page)]).exit_code == 0
    html = (page / "report.html").read_text(encoding="utf-8")
    assert "/host/p298.toml" in html and "/host/p299.toml" not in html and "/host/p4999.toml" not in html
    assert len(html) < 400_000, len(html)


WORKLOAD_FUNCTIONS = (
    "def build_model():\n    return None\n"
    "def make_inputs(batch, length, layout):\n    return {}\n"
    "def run_model(model, inputs):\n    return {}\n"
    "def task_metric(outputs, reference, inputs):\n    return 1.0\n"
)


def _load(module: Path) -> Any:
    from types import SimpleNamespace

    from collector.workload import load_workload

    return load_workload(SimpleNamespace(module_path=module.resolve(), generation=None, training=False))  # type: ignore[arg-type]


@pytest.fixture
def clean_imports(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    """sys.path as it was, and no module of a test's workload folder left loaded after it."""
    import sys

    monkeypatch.setattr(sys, "path", list(sys.path))
    yield
    for name, module in list(sys.modules.items()):
        if name.startswith("collector_workload_") or str(getattr(module, "__file__", "")).startswith(str(tmp_path)):
            del sys.modules[name]


def test_the_files_a_workload_loads_are_the_files_its_run_start_hashed(tmp_path: Path, clean_imports: Any) -> None:
    """A workload imports its neighbours as a script beside them would (``import x`` finds x.py
    in its folder; ``from . import x`` too): both load, and what loads is what the scan listed."""
    import sys

    module = _tree(
        tmp_path / "wl",
        {
            "wl.py": "from wlayers_abs import WIDTH\nfrom . import wlhelpers\nfrom .wlpkg.deep import DEPTH\n"
            "def later():\n    import wllater\n    return wllater.LATE\n" + WORKLOAD_FUNCTIONS,
            "wlayers_abs.py": "WIDTH = 4\n",
            "wlhelpers.py": "HELP = 1\n",
            "wlpkg/__init__.py": "",
            "wlpkg/deep.py": "from .. import wlhelpers\nDEPTH = 2\n",
            "wllater.py": "LATE = 3\n",
            "unused.py": "raise SystemExit('never imported')\n",
        },
    )
    loaded = _load(module)
    assert (loaded.WIDTH, loaded.wlhelpers.HELP, loaded.DEPTH, loaded.later()) == (4, 1, 2, 3)
    folder = str(module.parent.resolve())
    files = {
        os.path.relpath(m.__file__, folder)
        for m in list(sys.modules.values())
        if getattr(m, "__file__", None) and m.__file__.startswith(folder + os.sep)
    }
    assert (
        files
        == {"wl.py", *_found(module)}
        == {
            "wl.py",
            "wlayers_abs.py",
            "wlhelpers.py",
            os.path.join("wlpkg", "__init__.py"),
            os.path.join("wlpkg", "deep.py"),
            "wllater.py",
        }
    )


def test_a_second_workload_of_the_same_file_name_is_its_own_module(tmp_path: Path, clean_imports: Any) -> None:
    first = _tree(tmp_path / "a", {"wl.py": "WHICH = 'a'\n" + WORKLOAD_FUNCTIONS})
    second = _tree(tmp_path / "b", {"wl.py": "WHICH = 'b'\n" + WORKLOAD_FUNCTIONS})
    assert _load(first).WHICH == "a"
    assert _load(first) is _load(first)  # the same file is loaded once
    assert _load(second).WHICH == "b"
