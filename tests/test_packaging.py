"""`pip install .` into a fresh virtual environment gives a working `reportgen` with templates."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from tests.conftest import FIXTURES, REPO


def _run(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True, check=False)


def _collector_torch() -> Requirement:
    meta = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    reqs = [Requirement(r) for r in meta["project"]["optional-dependencies"]["collector"]]
    return next(r for r in reqs if r.name == "torch")


def test_collector_extra_admits_only_the_neuron_release_torches() -> None:
    spec = _collector_torch().specifier
    for version in ("2.13.0", "2.14.0", "2.13.0+cpu"):
        assert spec.contains(version, prereleases=False), version
    for version in ("2.12.1", "2.15.0", "2.9.0"):
        assert not spec.contains(version), version


def test_report_side_does_not_need_torch() -> None:
    meta = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert not [r for r in meta["project"]["dependencies"] if Requirement(r).name == "torch"]


@pytest.mark.slow
def test_collector_extra_keeps_the_installed_torch(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    report = tmp_path / "report.json"
    result = _run(
        sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--report", report, f"{REPO}[collector]"
    )
    assert result.returncode == 0, result.stderr
    planned = {item["metadata"]["name"] for item in json.loads(report.read_text())["install"]}
    assert "torch" not in planned


@pytest.mark.slow
def test_wheel_installs_into_a_fresh_venv(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    built = _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", dist, REPO)
    assert built.returncode == 0, built.stderr
    wheel = next(dist.glob("*.whl"))
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    installed = _run(python, "-m", "pip", "install", "--quiet", wheel)
    assert installed.returncode == 0, installed.stderr
    # Run from an empty directory so nothing is imported from the source tree.
    work = tmp_path / "elsewhere"
    work.mkdir()
    checked = _run(env_dir / "bin" / "reportgen", "validate", *sorted(FIXTURES.glob("*.jsonl")), cwd=work)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "synthetic_complete.jsonl: valid, complete" in checked.stdout
    probe = "import pathlib, reportgen; print(pathlib.Path(reportgen.__file__).parent / 'templates')"
    templates = Path(_run(python, "-c", probe, cwd=work).stdout.strip())
    shipped = sorted(p.name for p in (REPO / "templates").iterdir())
    assert sorted(p.name for p in templates.iterdir()) == shipped
    no_torch = _run(python, "-c", "import importlib.util as u; print(u.find_spec('torch') is None)", cwd=work)
    assert no_torch.stdout.strip() == "True"
    # The README's main job, on a machine without torch: the site from the sample runs.
    built_site = _run(env_dir / "bin" / "reportgen", "site", REPO / "sample_runs", "--out", work / "site", cwd=work)
    assert built_site.returncode == 0, built_site.stdout + built_site.stderr
    assert (work / "site" / "index.html").is_file()
