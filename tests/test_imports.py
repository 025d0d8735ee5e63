"""Commands import only what they use: the heavy modules stay out of --help, validate and a
site build that finds nothing to do (each checked in a fresh interpreter)."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest


from tests.conftest import REPO

SAMPLE_LOG = sorted((REPO / "sample_runs").glob("tiny-encoder-cpu-*/events.jsonl"))[-1]
# Runs `python -m reportgen ARGS` in this interpreter, then prints which heavy modules it loaded.
PROBE = """
import json, runpy, sys
heavy = json.loads(sys.argv[1])
sys.argv = ["reportgen", *sys.argv[2:]]
try:
    runpy.run_module("reportgen", run_name="__main__", alter_sys=True)
except SystemExit as exc:
    code = exc.code
print("LOADED " + json.dumps({"code": code, "heavy": sorted(m for m in heavy if m in sys.modules)}), file=sys.stderr)
"""
HEAVY = ["pydantic", "pandas", "numpy", "s3fs", "fsspec", "botocore", "jinja2", "markdown_it", "narwhals"]


@functools.cache
def loaded(*args: str) -> tuple[int | None, list[str]]:
    """What `reportgen ARGS` returned and which HEAVY modules it loaded, in a fresh interpreter;
    the same command is run once per session (its answer does not change)."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(HEAVY), *args], cwd=REPO, capture_output=True, text=True, check=False
    )
    line = next(l for l in done.stderr.splitlines() if l.startswith("LOADED "))
    found = json.loads(line[len("LOADED ") :])
    return found["code"], found["heavy"]


def test_help_imports_no_heavy_module() -> None:
    code, heavy = loaded("--help")
    assert code in (0, None) and heavy == [], heavy


def test_validate_imports_no_renderer_chart_frame_or_object_store_module() -> None:
    code, heavy = loaded("validate", str(SAMPLE_LOG))
    assert code in (0, None) and heavy == [], heavy


def test_validate_imports_no_pydantic_while_every_line_passes() -> None:
    code, heavy = loaded("validate", str(SAMPLE_LOG))
    assert code in (0, None) and heavy == [], heavy


def test_validate_imports_no_pydantic_for_a_line_that_fails(tmp_path: Path) -> None:
    """The careful path, which explains a bad line, converts it to the same msgspec Structs."""
    bad = tmp_path / "events.jsonl"
    lines = SAMPLE_LOG.read_bytes().split(b"\n")
    lines[3] = lines[3].replace(b'"seq": ', b'"seq": "x", "bonus": ', 1)
    bad.write_bytes(b"\n".join(lines))
    code, heavy = loaded("validate", str(bad))
    assert code == 1 and heavy == [], (code, heavy)


def test_a_site_build_with_nothing_to_do_imports_no_heavy_module(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    for folder in sorted((REPO / "sample_runs").glob("tiny-encoder-cpu-*"))[-1:]:
        (runs / folder.name).mkdir()
        (runs / folder.name / "events.jsonl").write_bytes((folder / "events.jsonl").read_bytes())
    then = time.time_ns() - 3600 * 10**9  # a change just now is never trusted by the no-op check
    for path in sorted(runs.rglob("*"), reverse=True) + [runs]:
        os.utime(path, ns=(then, then))
    from click.testing import CliRunner

    from reportgen.cli import main as reportgen_main

    # The first build in this process (its imports are not what is checked); the second in a
    # fresh interpreter that must find nothing to do.
    first = CliRunner().invoke(reportgen_main, ["site", str(runs), "--out", str(tmp_path / "site")])
    assert first.exit_code == 0, first.output[-2000:]
    code, heavy = loaded("site", str(runs), "--out", str(tmp_path / "site"))
    assert code in (0, None) and heavy == [], heavy


def test_report_imports_no_chart_frame_or_object_store_module(tmp_path: Path) -> None:
    """A report's charts are computed as plain geometry: making them imports no frame library
    (pandas and numpy cost more than a small report's own work)."""
    log = tmp_path / "run" / "events.jsonl"  # no annotations file beside it
    log.parent.mkdir()
    log.write_bytes(SAMPLE_LOG.read_bytes())
    code, heavy = loaded("report", str(log), "--out", str(tmp_path / "report"))
    assert code in (0, None)
    assert (tmp_path / "report" / "report.html").is_file()
    # Without annotations there is no Markdown to render: the parser is not imported.
    assert set(heavy) == {"jinja2"}, heavy
    # An annotations file's entries are checked by pydantic models, loaded for it alone, and
    # their explanations rendered from Markdown.
    (log.parent / "annotations.toml").write_text('[[explain]]\nmode = "eager"\nexplanation = "x"\n', encoding="utf-8")
    code, heavy = loaded("report", str(log), "--out", str(tmp_path / "annotated"))
    assert code in (0, None) and {"pydantic", "markdown_it"} <= set(heavy), (code, heavy)


# Modules a no-change site build of local runs must not import either: the object-store code
# (for s3:// locations only) and the renderer. Each costs a no-op build a measurable share of
# its time, beside the heavy modules above.
NOT_FOR_A_LOCAL_NOOP = [
    "reportgen.storage.remote",
    "reportgen.storage.sources",
    "reportgen.render.templating",
    "reportgen.judge.disposition",
    "markupsafe",
    "msgspec",
]
OBJECT_STORE = ["s3fs", "fsspec", "botocore", "boto3", "aiobotocore"]


def _loaded_of(modules: list[str], *args: str) -> tuple[int | None, list[str]]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(modules), *args], cwd=REPO, capture_output=True, text=True, check=False
    )
    line = next((l for l in done.stderr.splitlines() if l.startswith("LOADED ")), None)
    assert line is not None, done.stderr[-2000:]
    found = json.loads(line[len("LOADED ") :])
    return found["code"], found["heavy"]


def _backdated_runs(tmp_path: Path, folders: list[Path]) -> Path:
    """Copies of sample runs, their files dated an hour back (a change just now is never
    trusted by the no-op check), with an annotations file beside the first."""
    runs = tmp_path / "runs"
    for folder in folders:
        (runs / folder.name).mkdir(parents=True)
        for name in ("events.jsonl", "annotations.toml"):
            if (folder / name).is_file():
                (runs / folder.name / name).write_bytes((folder / name).read_bytes())
    then = time.time_ns() - 3600 * 10**9
    for path in sorted(runs.rglob("*"), reverse=True) + [runs]:
        os.utime(path, ns=(then, then))
    return runs


def test_a_no_change_site_build_of_local_runs_skips_the_object_store_and_the_renderer(tmp_path: Path) -> None:
    with_notes = [f.parent for f in sorted((REPO / "sample_runs").glob("*/annotations.toml"))][:1]
    runs = _backdated_runs(tmp_path, with_notes + sorted((REPO / "sample_runs").glob("tiny-encoder-cuda-*"))[:1])
    assert len(list(runs.glob("*/annotations.toml"))) == 1
    site = tmp_path / "site"
    code, first = _loaded_of(OBJECT_STORE, "site", str(runs), "--out", str(site))
    assert code in (0, None) and first == [], first  # a full build of local runs reads no object store
    code, again = _loaded_of(HEAVY + NOT_FOR_A_LOCAL_NOOP, "site", str(runs), "--out", str(site))
    assert code in (0, None) and again == [], again


def test_a_report_of_a_local_log_imports_no_object_store_module(tmp_path: Path) -> None:
    code, heavy = _loaded_of(OBJECT_STORE, "report", str(SAMPLE_LOG), "--out", str(tmp_path / "r"))
    assert code in (0, None) and heavy == [], heavy


def test_the_no_op_check_watches_the_constraint_data_it_skips_checking() -> None:
    """A no-change site build does not load the judge's constraint data, so an edited
    constraint file (or any file of the tool's, which a source checkout edits without a new
    version) must make the next build a full one: its stat is in what the record compares."""
    from reportgen.judge import backend_docs
    from reportgen.publish.site_quick import _template_sigs

    watched = {path for path, _ in _template_sigs(time.time_ns() + 3600 * 10**9) or []}
    constraint_files = {str(p.resolve()) for p in backend_docs.CONSTRAINTS_DIR.glob("*.toml")}
    assert constraint_files and constraint_files <= watched
    assert str(Path(backend_docs.__file__).resolve()) in watched
    from collector.descriptors import BUILTIN_DIR

    descriptor_files = {str(p) for p in BUILTIN_DIR.glob("*.toml")}
    assert descriptor_files and descriptor_files <= watched  # a descriptor decides how a log is judged too
    assert not any("__pycache__" in path for path in watched)


def test_a_broken_constraint_file_stops_a_site_build_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    from click.testing import CliRunner

    from reportgen.cli import main
    from reportgen.judge import backend_docs

    edited = tmp_path / "constraints"
    shutil.copytree(backend_docs.CONSTRAINTS_DIR, edited)
    path = edited / backend_docs.constraints_path("neuron").name
    path.write_text(
        path.read_text(encoding="utf-8").replace("required_versions = [", "required_version = [", 1), encoding="utf-8"
    )
    monkeypatch.setattr(backend_docs, "CONSTRAINTS_DIR", edited)
    backend_docs.load_backend_docs.cache_clear()
    try:
        result = CliRunner().invoke(main, ["site", str(SAMPLE_LOG.parent), "--out", str(tmp_path / "site")])
    finally:
        backend_docs.load_backend_docs.cache_clear()
    assert result.exit_code == 2, result.output
    assert result.output.strip().startswith(
        f"reportgen: constraint data: {path.name}: unknown key(s) 'required_version'"
    )
    assert not (tmp_path / "site" / "index.html").exists()
