"""Shared fixtures, and the guard that makes a run that executes no test a failure."""

from __future__ import annotations

import importlib.metadata
import os
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).parent / "fixtures"

# The same machine-facing settings on every machine, for this process and every process a test
# starts: a local time zone far from UTC at an odd offset (UTC+12:45, a POSIX rule that needs no
# time zone database), so that a time meant to be UTC but written as local time fails on every
# machine, not only abroad; and the width CI has (no terminal: 80 columns), so that wrapped
# output does not follow the developer's window.
os.environ["TZ"] = "<+1245>-12:45"
time.tzset()
os.environ["COLUMNS"] = "80"
os.environ.pop("LINES", None)


# The collector names the distributions of the modules a run loaded through
# importlib.metadata.packages_distributions(), which parses every installed package's metadata and
# file list (about 0.25 s here, most of an eager run on the test workload). Tests run the
# collector in this process hundreds of times against the same installed packages, so the answer
# is kept for as long as sys.path and the folders on it are unchanged (installing or removing a
# package changes its folder's modification time); each caller gets its own copy.
_read_packages_distributions = importlib.metadata.packages_distributions
_packages_distributions_seen: dict[tuple[tuple[str, int], ...], dict[str, list[str]]] = {}


def _path_state() -> tuple[tuple[str, int], ...]:
    state = []
    for entry in sys.path:
        try:
            state.append((entry, os.stat(entry or ".").st_mtime_ns))
        except OSError:
            state.append((entry, -1))
    return tuple(state)


def _packages_distributions() -> dict[str, list[str]]:
    state = _path_state()
    if state not in _packages_distributions_seen:
        if len(_packages_distributions_seen) >= 16:
            del _packages_distributions_seen[next(iter(_packages_distributions_seen))]
        _packages_distributions_seen[state] = dict(_read_packages_distributions())
    return {top: list(dists) for top, dists in _packages_distributions_seen[state].items()}


importlib.metadata.packages_distributions = _packages_distributions


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # pytest exits 5 when nothing ran (a bad -k, a broken collection path). CI must never
    # mistake that for success, so it becomes an ordinary failure with a reason.
    if exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line("ERROR: no tests ran; refusing to report success", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


# One browser for the whole session (playwright's sync API allows one running loop).
@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    from tests.browser import CHROMIUM_ARGS, chromium_path

    path = chromium_path()
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed; .ci/run installs it")
        pytest.skip("chromium not installed (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as play:
        instance = play.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        yield instance
        instance.close()


@pytest.fixture(scope="session")
def sample_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site of sample_runs/, built once per test process for every module that reads it
    (tests only read it: a test that changes a site builds its own)."""
    from reportgen.publish.site import build_site

    out = tmp_path_factory.mktemp("samples") / "site"
    result = build_site([REPO / "sample_runs"], out)
    assert result.rejected == []
    return out


# moto's standalone S3 server on 127.0.0.1 (tests/services.py), started for the module that asks
# for it and stopped at that module's end; if it cannot start, the module's tests fail with why.
@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from tests.services import ServiceError, s3_server

    try:
        with s3_server(tmp_path_factory.mktemp("s3")) as running:
            yield running
    except ServiceError as exc:
        pytest.fail(f"could not start the S3 server: {exc}", pytrace=False)


@pytest.fixture
def client(s3: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A boto3 client of the module's S3 server, its credentials in this test's environment."""
    import boto3

    for key, value in s3.env.items():
        if key.startswith("AWS_"):
            monkeypatch.setenv(key, value)
    return boto3.client("s3", endpoint_url=s3.endpoint, region_name="us-east-1")
