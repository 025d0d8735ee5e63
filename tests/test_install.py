"""The test install: constraints.txt against pyproject.toml, the README's two commands as CI
and a newcomer run them (.ci/run, .ci/newcomer), and the CI scripts themselves."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.conftest import REPO

LOCK = REPO / "constraints.txt"
CI = REPO / ".ci"


def _readme_commands() -> list[str]:
    spec = importlib.util.spec_from_file_location("readme_commands", CI / "readme_commands.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.commands((REPO / "README.md").read_text(encoding="utf-8"))


def _pins() -> dict[str, Version]:
    pins: dict[str, Version] = {}
    for number, line in enumerate(LOCK.read_text(encoding="utf-8").splitlines(), 1):
        if not line or line.startswith("#"):
            continue
        match = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([0-9][0-9A-Za-z.!+-]*)", line)
        assert match, f"constraints.txt:{number}: not an exact pin 'name==version': {line!r}"
        name = canonicalize_name(match[1])
        assert name not in pins, f"constraints.txt:{number}: {name} pinned twice"
        pins[name] = Version(match[2])
    return pins


def _project() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def test_every_requirement_of_every_extra_has_a_pin_that_meets_it() -> None:
    pins = _pins()
    project = _project()
    groups = {"(runtime)": project["dependencies"], **project["optional-dependencies"]}
    stale = []
    for group, requirements in groups.items():
        for text in requirements:
            req = Requirement(text)
            if req.marker is not None and not req.marker.evaluate({"extra": "" if group == "(runtime)" else group}):
                continue
            pin = pins.get(canonicalize_name(req.name))
            if pin is None or not req.specifier.contains(pin, prereleases=True):
                stale.append(f"{group}: {text} (lock: {pin or 'no pin'})")
    assert not stale, "constraints.txt is stale against pyproject.toml; run .ci/lock:\n" + "\n".join(stale)


def test_the_lock_covers_every_extra_and_the_readme_installs_with_it() -> None:
    extras = set(_project()["optional-dependencies"])
    script = (CI / "lock").read_text(encoding="utf-8")
    locked = re.search(r"torch==2\.13\.0 '\.\[([a-z0-9,]+)\]'", script)
    assert locked and set(locked[1].split(",")) == extras, f".ci/lock must resolve every extra: {sorted(extras)}"
    site, tests = _readme_commands()
    assert "-c constraints.txt" in tests and "torch==2.13.0" in tests and "torch==2.13.0" in script
    assert "python3 -m pip install -c constraints.txt torch==2.13.0 '.[" in tests and tests.endswith(
        "&& python3 -m pytest -n 2 --dist loadfile"
    )
    assert site.startswith("python3 -m pip install . && ")
    # The hints that keep the resolver from backtracking agree with the lock they produced.
    pins = _pins()
    for line in (CI / "lock-hints.txt").read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            req = Requirement(line)
            assert req.specifier.contains(pins[canonicalize_name(req.name)]), (
                f"lock-hints.txt: {line} vs constraints.txt"
            )


@pytest.mark.skipif(
    not os.environ.get("CI"), reason="CI installs with constraints.txt; a local environment may hold other versions"
)
def test_ci_installed_exactly_the_locked_versions() -> None:
    pins = _pins()
    wrong = []
    # Only what pip installed: importing setuptools appends its _vendor folder to sys.path, and
    # the copies vendored there (packaging, for one) carry their own metadata.
    installed = [entry for entry in sys.path if entry.endswith("site-packages")]
    for dist in importlib.metadata.distributions(path=installed):
        name = canonicalize_name(dist.metadata["Name"])
        if name in pins and Version(Version(dist.version).public) != pins[name]:
            wrong.append(f"{name} {dist.version} (lock: {pins[name]})")
    assert not wrong, "installed without constraints.txt:\n" + "\n".join(wrong)


def test_readme_commands_are_read_from_the_readme_not_copied() -> None:
    assert len(_readme_commands()) == 2
    run = (CI / "run").read_text(encoding="utf-8")
    newcomer = (CI / "newcomer").read_text(encoding="utf-8")
    for script in (run, newcomer):
        assert "readme_commands.py" in script and "pip install torch" not in script and "-m pytest" not in script
    assert "INSTALL_BUDGET_S=" in run and "PIP_NO_CACHE_DIR=1" in run and "PIP_NO_CACHE_DIR=1" in newcomer


@pytest.mark.parametrize(
    "readme",
    [
        "# x\n",
        "## The two commands\n\n```sh\npython3 -m pip install .\n```\n",
        "## The two commands\n\n```sh\na\nb\n```\n\n```sh\nc\n```\n",
        "## The two commands\n\n```sh\na\n```\n\n## Next\n\n```sh\nb\n```\n",
    ],
)
def test_a_readme_without_two_one_line_commands_is_refused(readme: str, tmp_path: Path) -> None:
    copy = tmp_path / ".ci"
    copy.mkdir()
    shutil.copy(CI / "readme_commands.py", copy)
    (tmp_path / "README.md").write_text(readme, encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, str(copy / "readme_commands.py"), "2"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 1 and proc.stderr.startswith("readme_commands.py: README.md") and proc.stdout == ""


def test_ci_scripts_pass_shellcheck() -> None:
    if shutil.which("shellcheck") is None:
        if os.environ.get("CI"):
            pytest.fail("shellcheck is not installed; .ci/run installs it")
        pytest.skip("shellcheck not installed (apt-get install shellcheck)")
    scripts = [CI / "run", CI / "lock", CI / "newcomer"]
    # Every other shell script the project keeps (the campaign task, the sample remake), found
    # by name so that a new one is checked too.
    others = sorted(p for p in REPO.glob("*/*.sh") if p.parent.name not in ("site", ".git"))
    assert {p.name for p in others} >= {"task.sh", "remake.sh"}, others
    proc = subprocess.run(["shellcheck", *map(str, scripts + others)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout
    assert all(os.access(script, os.X_OK) for script in scripts)


@pytest.mark.slow
def test_readme_commands_pass_in_a_fresh_environment_with_an_empty_pip_cache(tmp_path: Path) -> None:
    # A fresh virtual environment, no pip cache, a copy of the tree: .ci/newcomer. Its test
    # command selects a smoke subset (the rest of the suite runs in the suite around it).
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTEST_ADDOPTS")}
    env["TMPDIR"] = str(tmp_path)
    proc = subprocess.Popen(
        ["bash", str(CI / "newcomer")],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = proc.communicate(timeout=45 * 60)
    finally:
        # Whatever happens here (a timeout, an interrupt), pip and pytest below it stop too.
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    said = ("fresh environment:", "+ ", "README command ", "both README commands")
    print("\n".join(line for line in output.splitlines() if line.startswith(said) or re.match(r"=+ \d+ passed", line)))
    assert proc.returncode == 0, output[-6000:]
    assert (
        "README command 1: exit 0" in output
        and "README command 2: exit 0" in output
        and "both README commands passed" in output
    )
    assert re.search(r"\d+ passed", output), output[-3000:]


def _ci_run_on(tmp_path: Path, test_command: str, budget_s: int) -> subprocess.CompletedProcess:
    """The real .ci/run in a copy whose README's test command is test_command, with stand-ins
    for the system tools so that it installs no Debian package."""
    root = tmp_path / "repo"
    (root / ".ci").mkdir(parents=True)
    for name in ("run", "readme_commands.py"):
        shutil.copy2(CI / name, root / ".ci" / name)
    (root / "README.md").write_text(
        f"## The two commands\n\n```sh\ntrue\n```\n\n```sh\n{test_command}\n```\n", encoding="utf-8"
    )
    stubs = tmp_path / "bin"
    stubs.mkdir()
    for tool in ("chromium", "slurmctld", "slurmd", "sbatch", "munged", "shellcheck", "apt-get"):
        (stubs / tool).write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
        (stubs / tool).chmod(0o755)
    env = {**os.environ, "PATH": f"{stubs}:{os.environ['PATH']}", "INSTALL_BUDGET_S": str(budget_s)}
    return subprocess.run(["bash", str(root / ".ci" / "run")], env=env, capture_output=True, text=True, timeout=120)


def test_ci_run_runs_the_readme_halves_and_stops_an_install_past_its_budget(tmp_path: Path) -> None:
    passed = _ci_run_on(tmp_path / "a", "echo installing $PIP_NO_CACHE_DIR && echo testing", 60)
    assert passed.returncode == 0, passed.stderr
    assert passed.stdout.splitlines()[0] == "+ echo installing $PIP_NO_CACHE_DIR" and "installing 1\n" in passed.stdout
    assert "install took " in passed.stdout and passed.stdout.endswith("+ echo testing\ntesting\n")
    slow = _ci_run_on(tmp_path / "b", "sleep 30 && echo testing", 2)
    assert slow.returncode == 1 and "passed its budget of 2s" in slow.stderr and "testing" not in slow.stdout
    failed = _ci_run_on(tmp_path / "c", "exit 7 && echo testing", 60)
    assert failed.returncode == 7 and "the install failed (exit 7)" in failed.stderr and "testing" not in failed.stdout
    tests_fail = _ci_run_on(tmp_path / "d", "true && exit 3", 60)
    assert tests_fail.returncode == 3
    odd = _ci_run_on(tmp_path / "e", "python3 -m pytest", 60)
    assert odd.returncode == 1 and "not of the form 'INSTALL && TESTS'" in odd.stderr


def test_newcomer_runs_the_readme_commands_in_a_fresh_environment_and_fails_with_them(tmp_path: Path) -> None:
    # The real .ci/newcomer on a checkout whose README's commands are cheap: the first shows
    # which Python and settings it runs under, the second fails.
    root = tmp_path / "repo"
    (root / ".ci").mkdir(parents=True)
    for name in ("newcomer", "readme_commands.py"):
        shutil.copy2(CI / name, root / ".ci" / name)
    first = 'python3 -c \'import sys, os; print(sys.prefix, os.environ["PIP_NO_CACHE_DIR"], os.environ["PYTEST_ADDOPTS"])\' && ls'
    (root / "README.md").write_text(
        f"## The two commands\n\n```sh\n{first}\n```\n\n```sh\nfalse && echo tests\n```\n", encoding="utf-8"
    )
    (root / "ignored.txt").write_text("not in git\n", encoding="utf-8")
    (root / ".gitignore").write_text("ignored.txt\n", encoding="utf-8")
    git = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    subprocess.run(["git", "init", "-q"], cwd=root, check=True, timeout=60)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True, timeout=60, env={**os.environ, **git})
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTEST_ADDOPTS")}
    env["TMPDIR"] = str(tmp_path)
    proc = subprocess.run(
        ["bash", str(root / ".ci" / "newcomer")], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    prefix, no_cache, *addopts = lines[lines.index(f"+ {first}") + 1].split()
    assert prefix.startswith(str(tmp_path)) and prefix != sys.prefix and no_cache == "1"
    assert (
        " ".join(addopts)
        == "-m 'not slow and not browser' -k 'test_cli or test_sample_runs or test_report or test_workloads' -p no:cacheprovider"
    )
    assert "ignored.txt" not in proc.stdout and "README.md" in proc.stdout, "a copy of what git tracks, nothing else"
    assert "README command 1: exit 0" in proc.stdout and "README command 2: exit 1" in proc.stdout
    assert "tests" not in lines and "both README commands passed" not in proc.stdout
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("tmp.")], "the copy and the environment are removed"
