"""A run a site build leaves out is named on the site's index, not only in the command's output:
before, a run whose annotations.toml held a typo vanished from a published site (its page
removed), and the index of a site left with no run read "No runs yet", with nothing to say why."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from reportgen.cli import main
from tests.conftest import REPO

RUN = "tiny-encoder-cpu-20261206T150111Z-1dd183"
OTHER = "heat-solver-cpu-20261206T150437Z-d2f898"


def _runs(tmp_path: Path) -> Path:
    runs = tmp_path / "my runs"
    for name in (RUN, OTHER):
        shutil.copytree(REPO / "sample_runs" / name, runs / name)
    return runs


def _site(runs: Path, out: Path) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["site", str(runs), "--out", str(out)])
    return result.exit_code, (out / "index.html").read_text(encoding="utf-8")


def test_a_run_left_out_is_named_on_the_index_with_why(tmp_path: Path) -> None:
    runs = _runs(tmp_path)
    code, page = _site(runs, tmp_path / "site")
    assert code == 0 and 'id="left-out"' not in page
    (runs / RUN / "annotations.toml").write_text('[b1-l16-contiguous-float32-eager]\nexplanaton = "<b>x</b>"\n')
    (runs / "broken").mkdir()
    (runs / "broken" / "events.jsonl").write_text("{not json\n")
    code, page = _site(runs, tmp_path / "site")
    assert code == 1
    assert not (tmp_path / "site" / "runs" / RUN).exists()
    section = page[page.index('id="left-out"') : page.index("</section>", page.index('id="left-out"'))]
    assert "Left out of this site: 2 inputs" in section
    assert f"my runs/{RUN}/events.jsonl: skipped, a valid run log whose annotations are not valid" in section
    assert "my runs/broken/events.jsonl: skipped, not a valid run log" in section
    # The page names no path of the host that built it.
    assert str(tmp_path) not in page and os.path.realpath(tmp_path) not in page
    # Fixed, the run is back and the section goes.
    (runs / RUN / "annotations.toml").unlink()
    shutil.rmtree(runs / "broken")
    code, page = _site(runs, tmp_path / "site")
    assert code == 0 and 'id="left-out"' not in page and (tmp_path / "site" / "runs").is_dir()


def test_the_index_of_a_site_with_every_run_left_out_says_why(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    shutil.copytree(REPO / "sample_runs" / RUN, runs / RUN)
    (runs / RUN / "annotations.toml").write_text("[[explian]]\n")
    code, page = _site(runs, tmp_path / "site")
    assert code == 1
    assert "No runs yet" in page and "Left out of this site: 1 input " in page


def test_a_site_built_inside_a_runs_folder_is_not_read_as_runs(tmp_path: Path) -> None:
    """Before: a site written into a folder of runs (from a log named directly, which the
    output check allows) held copies of its logs, which the next build of that folder read as
    runs: 'run id ... is also in .../othersite/runs/...', the copy taken. A folder holding a
    site's state file is left out, named, by site and by validate alike."""
    runs = _runs(tmp_path)
    first = CliRunner().invoke(main, ["site", str(runs / RUN / "events.jsonl"), "--out", str(runs / "othersite")])
    assert first.exit_code == 0, first.output
    code, page = _site(runs, tmp_path / "site")
    assert code == 1
    assert "my runs/othersite: skipped: a site reportgen built (it holds .reportgen-state.json)" in page
    assert sorted(p.name for p in (tmp_path / "site" / "runs").iterdir()) and "is also in" not in page
    result = CliRunner().invoke(main, ["validate", str(runs)])
    assert result.exit_code == 1 and "othersite: skipped: a site reportgen built" in result.output
    assert result.output.count(": valid, complete") == 2


def test_a_log_named_directly_and_left_out_is_named_from_its_folder(tmp_path: Path) -> None:
    runs = _runs(tmp_path)
    (runs / "broken").mkdir()
    (runs / "broken" / "events.jsonl").write_text("{not json\n")
    out = tmp_path / "site"
    result = CliRunner().invoke(
        main, ["site", str(runs / "broken" / "events.jsonl"), str(runs / RUN), "--out", str(out)]
    )
    assert result.exit_code == 1
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "<code>broken/events.jsonl: skipped, not a valid run log" in page
    assert str(tmp_path) not in page and os.path.realpath(tmp_path) not in page


def test_a_build_by_another_version_removes_the_pages_the_earlier_build_wrote_and_this_one_does_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: a build by another version (a new reportgen) took the state as empty, so pages of
    runs, workloads and comparisons the earlier build wrote and this one does not stayed in the
    site, linked from nowhere (a stale compare_latest page beside the new one)."""
    from reportgen.publish import site

    runs = tmp_path / "runs"
    cpu = sorted((REPO / "sample_runs").glob("tiny-encoder-cpu-*"))[-2:]
    for run in [*cpu, REPO / "sample_runs" / "tiny-encoder-cuda-20261129T225259Z-866a85"]:
        shutil.copytree(run, runs / run.name)
    (runs / "site.toml").write_text(
        '[[compare_latest]]\nbaseline_target = "cpu"\ncandidate_target = "cuda"\nworkloads = ["tiny-encoder"]\n'
    )
    (runs / cpu[-1].name).rename(tmp_path / "held")  # the latest CPU run arrives later
    out = tmp_path / "site"
    assert CliRunner().invoke(main, ["site", str(runs), "--out", str(out)]).exit_code == 0
    first = sorted(p.name for p in (out / "comparisons").iterdir())
    (tmp_path / "held").rename(runs / cpu[-1].name)
    shutil.rmtree(runs / cpu[0].name)  # and the earlier one is taken away
    monkeypatch.setattr(site, "_fingerprint", lambda folders=None: "another version")
    assert CliRunner().invoke(main, ["site", str(runs), "--out", str(out)]).exit_code == 0
    second = sorted(p.name for p in (out / "comparisons").iterdir())
    assert len(first) == len(second) == 1 and first != second
    pages = sorted(p.name for p in (out / "runs").iterdir())
    assert len(pages) == 2 and not [p for p in pages if p.startswith(cpu[0].name)], "the removed run's page goes too"


def test_a_state_file_cannot_name_pages_for_removal_outside_what_it_checks(tmp_path: Path) -> None:
    """Review of the removal above: a same-version state holding an 'earlier build' entry had it
    taken unchecked, and a build removed the site's assets/ and a current run's page."""
    import json

    runs = _runs(tmp_path)
    out = tmp_path / "site"
    assert CliRunner().invoke(main, ["site", str(runs), "--out", str(out)]).exit_code == 0
    state_path = out / ".reportgen-state.json"
    state = json.loads(state_path.read_text(encoding="utf-8"))
    page = next((out / "runs").iterdir()).name
    state["earlier build"] = {"comparisons": {"../assets": {}}, "workloads": {f"../runs/{page}": "0" * 64}}
    state_path.write_text(json.dumps(state), encoding="utf-8")
    result = CliRunner().invoke(main, ["site", str(runs), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert (out / "assets").is_dir() and (out / "runs" / page / "index.html").is_file()
