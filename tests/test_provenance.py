"""Which code and data produced a log: recorded by the collector, shown by the report, and
listed by `reportgen diff` as code and data changes."""

from __future__ import annotations

import msgspec

import hashlib
import json
from pathlib import Path
from typing import Any, Callable

import pytest
from click.testing import CliRunner

import collector
from collector import provenance as prov
from reportgen.cli import main
from reportgen.contract.events import RunStart
from tests.conftest import FIXTURES
from tests.logbuilder import dumps


def test_collector_version_is_of_this_generation() -> None:
    assert collector.__version__ != "0.1.0"
    assert prov.provenance([])["collector_version"] == collector.__version__


def test_one_distribution_one_version() -> None:
    """`reportgen --version`, the collector's run_start and the installed package name one
    release: a site's reader can tell which generation judged a page."""
    import tomllib

    import reportgen
    from tests.conftest import REPO

    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["version"] == reportgen.__version__ == collector.__version__


def test_provenance_hashes_every_file_and_names_one_it_cannot_read(tmp_path: Path) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_bytes(b"[workload]\n")
    found = prov.provenance([("plan", plan), ("workload_module", tmp_path / "gone.py")])
    assert found["files"][0] == {
        "role": "plan",
        "path": str(plan),
        "sha256": hashlib.sha256(b"[workload]\n").hexdigest(),
    }
    assert found["files"][1]["role"] == "workload_module" and found["files"][1]["unknown_reason"].startswith(
        "cannot read"
    )
    # What the collector writes is what the contract accepts.
    msgspec.convert({**_start(), "provenance": found}, RunStart)


def test_provenance_hashes_each_file_of_the_collectors_own(tmp_path: Path) -> None:
    """Each file in the collector's folder is hashed (role collector_source), the backend's
    adapter and descriptor too (they are files of it on every target), but the example
    workloads, caches and documents: without git these hashes are all that tells two copies of
    one version apart."""
    descriptor = Path(prov.COLLECTOR_DIR / "backends" / "cpu.toml")
    files = prov.provenance([("backend_descriptor", descriptor)])["files"]
    sources = {
        Path(e["path"]).relative_to(prov.COLLECTOR_DIR).as_posix(): e for e in files if e["role"] == prov.SOURCE_ROLE
    }
    for name in ("__init__.py", "provenance.py", "run/cells.py", "backends/neuron.py", "target_rules.json"):
        assert name in sources, name
    expected = hashlib.sha256((prov.COLLECTOR_DIR / "compare.py").read_bytes()).hexdigest()
    assert sources["compare.py"]["sha256"] == expected
    assert "backends/cpu.toml" in sources, "a file of the folder whatever role it is also read in"
    assert not [n for n in sources if n.startswith("workloads/") or "__pycache__" in n or n.endswith(".md")]


def test_every_file_of_a_copy_is_hashed_through_a_linked_folder_and_beyond_its_code(tmp_path: Path) -> None:
    """A review: a folder of the collector that is a link was not walked, so an edit in it was
    named nowhere; a compiled module or a data file beside the code was not hashed either."""
    real = tmp_path / "elsewhere" / "run"
    real.mkdir(parents=True)
    (real / "cells.py").write_bytes(b"x = 1\n")
    copy = tmp_path / "collector"
    copy.mkdir()
    (copy / "run").symlink_to(real, target_is_directory=True)
    (copy / "loop").symlink_to(copy, target_is_directory=True)  # a link loop is walked once
    (copy / "visible.cpython-311-x86_64-linux-gnu.so").write_bytes(b"\x7fELF")
    (copy / "mode.txt").write_bytes(b"fast\n")
    for skipped in ("workloads", "__pycache__"):
        (copy / skipped).mkdir()
        (copy / skipped / "tiny.py").write_bytes(b"y = 2\n")
    (copy / "README.md").write_bytes(b"# no code\n")
    from unittest import mock

    with mock.patch.object(prov, "COLLECTOR_DIR", copy):
        found = [path.relative_to(copy).as_posix() for path in prov.source_files()]
        entries = prov.source_entries()
    assert found == ["mode.txt", "visible.cpython-311-x86_64-linux-gnu.so", "run/cells.py"]
    assert entries[2] == {
        "role": prov.SOURCE_ROLE,
        "path": str(copy / "run" / "cells.py"),
        "sha256": hashlib.sha256(b"x = 1\n").hexdigest(),
    }


def test_without_git_the_commit_is_unknown_with_the_reason(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no git on PATH
    commit, dirty = prov.git_state()
    assert commit == {"unknown_reason": "git is not installed on this host"}
    assert dirty["unknown_reason"].startswith("no commit: git is not installed")


def test_outside_a_checkout_the_commit_is_unknown_with_the_reason(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(prov, "COLLECTOR_DIR", tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    commit, _ = prov.git_state()
    if "value" in commit:
        pytest.skip("this tmp folder is inside a git checkout")
    assert "git rev-parse failed" in commit["unknown_reason"] or "not installed" in commit["unknown_reason"]


def test_in_this_checkout_the_commit_is_read() -> None:
    if not (Path(collector.__file__).resolve().parents[1] / ".git").exists():
        pytest.skip("not a git checkout")
    commit, dirty = prov.git_state()
    assert len(commit.get("value", "")) == 40 and dirty.get("value") in ("true", "false")


def _repository(root: Path, first_file: str) -> Callable[..., None]:
    """A git repository at ``root`` with one commit of ``first_file``; its git command (skip
    when git is not installed)."""
    import os
    import shutil
    import subprocess

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, env=env)

    git("init", "-q")
    (root / first_file).write_text("a\n", encoding="utf-8")
    git("add", first_file)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one file")
    return git


def test_reading_the_git_state_never_writes_the_checkouts_index(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # git status refreshes a stale index in place (under index.lock) unless told not to; a git
    # killed there (its timeout, a file-size limit) would leave the lock and block the user's git.
    import os

    _repository(tmp_path, "tracked.txt")
    os.utime(tmp_path / "tracked.txt", (1_000_000_000, 1_000_000_000))  # the index's stat data is stale
    index = (tmp_path / ".git" / "index").read_bytes()
    monkeypatch.setattr(prov, "COLLECTOR_DIR", tmp_path)
    commit, dirty = prov.git_state()
    assert len(commit.get("value", "")) == 40 and dirty.get("value") == "false"
    assert (tmp_path / ".git" / "index").read_bytes() == index


def test_a_copy_inside_another_repository_records_no_commit_of_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A collector folder copied, untracked, into another repository recorded that
    repository's HEAD as the collector's commit, clean: two different collectors would read as
    the same code. A new file in a tracked collector folder makes it dirty."""
    git = _repository(tmp_path, "other.txt")
    copy = tmp_path / "collector"
    copy.mkdir()
    (copy / "runner.py").write_text("# a copy\n", encoding="utf-8")
    monkeypatch.setattr(prov, "COLLECTOR_DIR", copy)
    commit, dirty = prov.git_state()
    assert "does not track it" in commit["unknown_reason"] and "unknown_reason" in dirty
    git("add", "collector/runner.py")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "the collector")
    commit, dirty = prov.git_state()
    assert len(commit.get("value", "")) == 40 and dirty.get("value") == "false"
    (copy / "extra.py").write_text("# not in the commit\n", encoding="utf-8")
    assert prov.git_state()[1].get("value") == "true"


def _start() -> dict[str, Any]:
    return {
        "schema_version": "1.2",
        "seq": 0,
        "time": "2026-01-01T00:00:00Z",
        "kind": "run_start",
        "run_id": "r",
        "collector": "collector x",
        "workload": "w",
        "target": "cpu",
        "command": [],
        "started_at": "2026-01-01T00:00:00Z",
        "origin": "synthetic",
    }


def _with_provenance(src: Path, dst: Path, run_id: str, module_sha: str, commit: str, content: str) -> Path:
    events = [json.loads(line) for line in src.read_text(encoding="utf-8").splitlines()]
    events[0]["run_id"] = run_id
    events[0]["provenance"] = {
        "collector_version": "0.2.0",
        "git_commit": {"value": commit, "source": "git rev-parse HEAD"},
        "git_dirty": {"value": "false", "source": "git status"},
        "files": [
            {"role": "workload_module", "path": "/host/w.py", "sha256": module_sha},
            {"role": "plan", "path": "/host/w.toml", "sha256": "b" * 64},
        ],
    }
    plan = next(e for e in events if e["kind"] == "plan")
    plan["weights_content_sha256"] = content
    dst.mkdir()
    (dst / "events.jsonl").write_text(dumps(events), encoding="utf-8")
    return dst / "events.jsonl"


def test_report_shows_provenance_and_diff_lists_code_and_data_changes(tmp_path: Path) -> None:
    src = FIXTURES / "synthetic_complete.jsonl"
    a = _with_provenance(src, tmp_path / "a", "run-a", "a" * 64, "1" * 40, "c" * 64)
    b = _with_provenance(src, tmp_path / "b", "run-b", "d" * 64, "2" * 40, "c" * 64)
    result = CliRunner().invoke(main, ["report", str(a), "--out", str(tmp_path / "page")])
    assert result.exit_code == 0, result.output
    page = (tmp_path / "page" / "report.md").read_text(encoding="utf-8")
    for text in (
        "| judged with | reportgen/judge/constraints/cpu.toml (sha256 ",
        "| collector | collector 0.2.0 |",
        "| collector git commit | " + "1" * 40,
        "| workload module | sha256 " + "a" * 64,
        "weights content sha256 " + "c" * 64,
    ):
        assert text in page, text
    data = json.loads(CliRunner().invoke(main, ["diff", str(a), str(b), "--format", "json"]).output)
    assert sorted(data["code_and_data"]) == sorted(
        [
            ["collector git commit", "1" * 40, "2" * 40],
            ["workload module", "sha256 " + "a" * 64, "sha256 " + "d" * 64],
        ]
    ), "the same weights content is no change; the module and commit are"
    text = CliRunner().invoke(main, ["diff", str(a), str(b)]).output
    assert "code and data changes: 2" in text
    md = CliRunner().invoke(main, ["diff", str(a), str(b), "--format", "md"]).output
    assert "**Code and data changed (2):**" in md and "| workload module |" in md


def test_diff_of_weights_by_content_when_both_hashed_else_by_file(tmp_path: Path) -> None:
    src = FIXTURES / "synthetic_complete.jsonl"
    a = _with_provenance(src, tmp_path / "a", "run-a", "a" * 64, "1" * 40, "c" * 64)
    b = _with_provenance(src, tmp_path / "b", "run-b", "a" * 64, "1" * 40, "e" * 64)
    data = json.loads(CliRunner().invoke(main, ["diff", str(a), str(b), "--format", "json"]).output)
    assert data["code_and_data"] == [["weights (by content sha256)", "c" * 64, "e" * 64]]


def test_many_env_vars_and_versions_show_the_first_few_and_the_count(tmp_path: Path) -> None:
    """A valid log may record 100,000 env vars (a 10 MB page once); the page shows the first
    FACTS_SHOWN of each list, clipped, and counts the rest, which stay in the log."""
    from reportgen.render.sections.common import FACTS_SHOWN
    from tests.logbuilder import complete_log

    events = complete_log()
    env = next(e for e in events if e["kind"] == "environment")
    env["env_vars"] = {f"VAR{i:05d}": "x" * 50 for i in range(5000)}
    env["versions"].update({f"pkg{i:04d}": {"value": "1.0", "source": "pip"} for i in range(300)})
    env["versions"]["k" * 20_000] = {"value": "2.0", "source": "pip"}
    log = tmp_path / "many.jsonl"
    log.write_text(dumps(events), encoding="utf-8")
    result = CliRunner().invoke(main, ["report", str(log), "--out", str(tmp_path / "page")])
    assert result.exit_code == 0, result.output
    for name in ("report.md", "report.html"):
        page = (tmp_path / "page" / name).read_text(encoding="utf-8")
        assert "VAR00000" in page and f"VAR{FACTS_SHOWN - 1:05d}" in page and f"VAR{FACTS_SHOWN:05d}" not in page
        assert f"first {FACTS_SHOWN} of 5,000 shown; all in many.jsonl" in page, name
        assert f"first {FACTS_SHOWN} of 305 shown; all in many.jsonl" in page, name
        assert "k" * 20_000 not in page and "20000 characters in all; the full text is in many.jsonl" in page, name
        assert len(page) < 200_000, (name, len(page))
