"""The site's output folder is untrusted too: a planted state file, symlinks planted in --out,
and one bad log among good ones. Nothing outside --out changes; a bad state file is a warning
and a full build; one bad log is reported and skipped while the other pages are written."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any, Callable

import pytest

from reportgen.publish.site import STATE_NAME
from reportgen.publish.site_quick import QUICK_NAME
from reportgen.storage.local import signature
from tests.conftest import FIXTURES
from tests.hostile import invoke, snapshot


def _build_area(area: Path) -> None:
    """runs/ with two good runs, a victim folder beside the output, and a built site."""
    runs = area / "runs"
    for name in ("synthetic_complete", "synthetic_mismatch"):
        (runs / name).mkdir(parents=True)
        shutil.copy(FIXTURES / f"{name}.jsonl", runs / name / "events.jsonl")
    victim = area / "victim"
    (victim / "runs").mkdir(parents=True)
    (victim / "keep.txt").write_text("precious\n", encoding="utf-8")
    (victim / "runs" / "keep.txt").write_text("precious too\n", encoding="utf-8")
    out = area / "deep" / "site"
    assert invoke(["site", runs, "--out", out]).code == 0


@pytest.fixture(scope="module")
def built_area(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The area, built once for the module; each test plants into a copy of its own."""
    area = tmp_path_factory.mktemp("hostile-site") / "area"
    _build_area(area)
    return area


@pytest.fixture
def area(built_area: Path, tmp_path: Path) -> tuple[Path, Path, Path]:
    """This test's copy of the built area (times kept, nothing shared): runs, site, victim."""
    copy = tmp_path / "area"
    shutil.copytree(built_area, copy, symlinks=True)
    return copy / "runs", copy / "deep" / "site", copy / "victim"


def _state(out: Path) -> dict[str, Any]:
    return json.loads((out / STATE_NAME).read_text(encoding="utf-8"))


def _with_slug(slug: str) -> Callable[[Path], bytes]:
    def build(out: Path) -> bytes:
        state = _state(out)
        run = next(iter(state["runs"].values()))
        state["runs"]["f" * 64] = dict(run, slug=slug, run_id="gone")  # a run no longer given: its folder is removed
        return json.dumps(state).encode()

    return build


def _edit_run(**changes: Any) -> Callable[[Path], bytes]:
    def build(out: Path) -> bytes:
        state = _state(out)
        key = next(iter(state["runs"]))
        state["runs"][key].update(changes)
        return json.dumps(state).encode()

    return build


def _raw(data: bytes) -> Callable[[Path], bytes]:
    return lambda out: data


# (name, planted state file bytes, fragment of the warning)
STATES: list[tuple[str, Callable[[Path], bytes], str]] = [
    ("slug climbs out of --out", _with_slug("../../../victim"), "slug: String should match pattern"),
    ("slug is an absolute path", _with_slug(str(Path("/tmp"))), "slug: String should match pattern"),
    ("slug is dot-dot", _with_slug(".."), "slug: String should match pattern"),
    ("top level is a list", _raw(b"[1, 2]\n"), "not a JSON object with a fingerprint and runs"),
    (
        "runs is a list",
        lambda out: json.dumps({"fingerprint": _state(out)["fingerprint"], "runs": []}).encode(),
        "runs: Input should be a valid dictionary",
    ),
    (
        "run is a string",
        lambda out: json.dumps({"fingerprint": _state(out)["fingerprint"], "runs": {"a": "b"}}).encode(),
        "Input should be a valid dictionary",
    ),
    ("counts are text", _edit_run(counts={"pass": "many"}), "counts.pass"),
    ("huge count", _edit_run(counts={"pass": 10**400}), "counts.pass"),
    ("unknown field", _edit_run(extra_field=1), "fields a summary does not have"),
    (
        "slug of a comparison climbs out",
        lambda out: json.dumps(dict(_state(out), comparisons={"../../victim": {"key": "k", "link": {}}})).encode(),
        "comparisons",
    ),
    ("not JSON", _raw(b"{nope\n"), "Expecting property name"),
    ("not UTF-8", _raw(b'{"fingerprint": "\xff"}\n'), "can't decode byte 0xff"),
    ("nested very deeply", _raw(b"[" * 200_000 + b"]" * 200_000), "ignoring"),
    ("NaN timing", _edit_run(cells={"c": {"status": "pass", "warm_median_s": float("nan")}}), "warm_median_s"),
    # A wait the contention rule would read as none (overflowing, negative, three figures).
    ("huge CPU wait", _edit_run(cells={"c": {"status": "pass", "warm_waited": [1e308, 1e308]}}), "warm_waited"),
    ("negative CPU wait", _edit_run(cells={"c": {"status": "pass", "warm_waited": [-1.0, 1.0]}}), "warm_waited"),
    (
        "three wait figures",
        _edit_run(cells={"c": {"status": "pass", "generation_waited": [0.1, 1.0, 5.0]}}),
        "generation_waited",
    ),
    (
        "scope entry not a pair",
        _edit_run(scope_passed=[["a", "b", "c"]]),
        "scope_passed: not a list of [label, shapes]",
    ),
    ("empty scope entry", _edit_run(scope_not_passed=[[]]), "scope_not_passed: not a list of [label, shapes]"),
    ("plan-check without its fields", _edit_run(plan_check={"a": "b"}), "plan_check: not a plan-check verdict"),
]


@pytest.mark.parametrize("name,plant,fragment", STATES, ids=[s[0] for s in STATES])
def test_planted_state_is_ignored_with_a_warning_and_nothing_outside_changes(
    tmp_path: Path, area: tuple[Path, Path, Path], name: str, plant, fragment: str
) -> None:
    runs, out, victim = area
    (out / STATE_NAME).write_bytes(plant(out))
    outside = snapshot(tmp_path / "area" / "runs"), snapshot(victim)
    result = invoke(["site", runs, "--out", out])
    assert result.code == 0, result.output
    warning = result.line_with(f"warning: ignoring {out / STATE_NAME}")
    assert fragment in warning and warning.endswith("doing a full build")
    assert "2 runs" in result.stdout
    assert (snapshot(tmp_path / "area" / "runs"), snapshot(victim)) == outside, "nothing outside --out changed"
    assert _state(out)["runs"], "a good state file is written again"
    assert invoke(["site", runs, "--out", out]).stderr.count("warning") == 0, "the next build trusts its own state"


def test_state_values_of_another_type_are_used_as_validated(area: tuple[Path, Path, Path]) -> None:
    """Validation takes 0 for false (lax, as the state is only a cache); the pages and the cell
    index are then made of the values it validated, not of the planted ones, so a planted 0
    cannot stop the build with a traceback."""
    runs, out, _ = area
    state = _state(out)
    for run in state["runs"].values():
        run.update(complete=0, synthetic=0)
        for cell in run["cells"].values():
            cell["cpu_fallback"] = 0
    (out / STATE_NAME).write_text(json.dumps(state), encoding="utf-8")
    # The record the last build left vouches for the state file as it is now (else it is not reused).
    record = json.loads((out / QUICK_NAME).read_text(encoding="utf-8"))
    record["state"] = list(signature(os.lstat(out / STATE_NAME)))
    (out / QUICK_NAME).write_text(json.dumps(record), encoding="utf-8")
    (runs / "synthetic_complete" / "events.jsonl").touch()  # not the quick no-op: the careful way reads the state
    result = invoke(["site", runs, "--out", out])
    assert result.code == 0, result.output
    assert "2 runs" in result.stdout
    assert all(run["complete"] is False for run in _state(out)["runs"].values()), "written again as booleans"


def test_state_file_that_is_a_symlink_is_neither_read_nor_written_through(area: tuple[Path, Path, Path]) -> None:
    runs, out, victim = area
    (out / STATE_NAME).unlink()
    (out / STATE_NAME).symlink_to(victim / "keep.txt")
    before = snapshot(victim)
    result = invoke(["site", runs, "--out", out])
    assert result.code == 0
    assert "a symlink" in result.line_with("warning: ignoring")
    assert snapshot(victim) == before
    assert not (out / STATE_NAME).is_symlink() and _state(out)["runs"]


@pytest.mark.parametrize("where", ["runs", "assets", "workloads"])
def test_folder_in_out_that_is_a_symlink_is_refused(area: tuple[Path, Path, Path], where: str) -> None:
    runs, out, victim = area
    (out / STATE_NAME).unlink()  # a full build writes every page
    shutil.rmtree(out / where)
    (out / where).symlink_to(victim / "runs", target_is_directory=True)
    before = snapshot(victim)
    result = invoke(["site", runs, "--out", out])
    assert result.code == 2
    assert "is a symlink; refusing to write through it" in result.line_with("reportgen site: cannot write")
    assert snapshot(victim) == before


def test_page_that_is_a_symlink_is_replaced_not_written_through(area: tuple[Path, Path, Path]) -> None:
    runs, out, victim = area
    (out / STATE_NAME).unlink()
    (out / "index.html").unlink()
    (out / "index.html").symlink_to(victim / "keep.txt")
    result = invoke(["site", runs, "--out", out])
    assert result.code == 0
    assert (victim / "keep.txt").read_text(encoding="utf-8") == "precious\n"
    assert not (out / "index.html").is_symlink() and "synthetic-complete" in (out / "index.html").read_text(
        encoding="utf-8"
    )


def test_files_with_other_hard_links_are_replaced_not_written_through(area: tuple[Path, Path, Path]) -> None:
    """A review: a rebuild wrote into every page in place, so a snapshot of the site made with
    hard links (cp -al, rsync --link-dest) changed with it (its index without a run whose page
    it still held), and a state file hard-linked to a file outside --out was overwritten."""
    runs, out, victim = area
    snapshot_dir = out.parent / "snapshot"
    snapshot_dir.mkdir()
    for page in (out / "index.html", out / STATE_NAME):
        os.link(page, snapshot_dir / page.name)
    os.unlink(out / "index.json")
    os.link(victim / "keep.txt", out / "index.json")
    before = {p.name: p.read_bytes() for p in snapshot_dir.iterdir()}
    shutil.rmtree(runs / "synthetic_mismatch")
    result = invoke(["site", runs, "--out", out])
    assert result.code == 0, result.output
    assert {p.name: p.read_bytes() for p in snapshot_dir.iterdir()} == before
    assert (victim / "keep.txt").read_text(encoding="utf-8") == "precious\n"
    assert b"synthetic-mismatch" in before["index.html"]
    assert "synthetic-mismatch" not in (out / "index.html").read_text(encoding="utf-8")
    assert "synthetic-complete" in (out / "index.json").read_text(encoding="utf-8")


def test_stale_run_folder_that_is_a_symlink_only_loses_the_link(area: tuple[Path, Path, Path]) -> None:
    runs, out, victim = area
    state = _state(out)
    slug = next(r["slug"] for r in state["runs"].values() if r["run_id"] == "synthetic-mismatch")
    shutil.rmtree(out / "runs" / slug)
    (out / "runs" / slug).symlink_to(victim, target_is_directory=True)
    shutil.rmtree(runs / "synthetic_mismatch")
    before = snapshot(victim)
    result = invoke(["site", runs, "--out", out])
    assert result.code == 0, result.output
    assert snapshot(victim) == before
    assert not (out / "runs" / slug).exists()


def test_out_that_is_a_file_is_one_line(tmp_path: Path) -> None:
    target = tmp_path / "file"
    target.write_text("x", encoding="utf-8")
    result = invoke(["site", FIXTURES / "synthetic_complete.jsonl", "--out", target])
    assert result.code == 2


def test_a_newline_in_a_folder_name_cannot_begin_a_line_of_output(tmp_path: Path) -> None:
    """Each finding is one line that begins with its file: a folder named with a newline (and a
    line after it that reads like a finding) is shown with <U+000A>, in validate and in site."""
    runs = tmp_path / "runs"
    folder = runs / "x\nforged.jsonl:1: error: all fine"
    folder.mkdir(parents=True)
    lines = (FIXTURES / "synthetic_complete.jsonl").read_text(encoding="utf-8").splitlines()
    (folder / "events.jsonl").write_text("\n".join(lines[:3] + ["{not json"] + lines[3:]) + "\n", encoding="utf-8")
    checked = invoke(["validate", folder / "events.jsonl"])
    site = invoke(["site", runs, "--out", tmp_path / "site"])
    assert checked.code == 1 and site.code == 1
    for output in (checked.stdout, site.stdout + site.stderr):
        assert "x<U+000A>forged.jsonl:1: error: all fine" in output
        assert not any(line.startswith("forged.jsonl") for line in output.splitlines()), output


def test_a_full_disk_names_the_file_and_leaves_no_half_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A disk that fills part-way through a page: one line naming the file that could not be
    written, and that file is not left cut short (the next build writes it whole)."""
    import errno
    import os

    from reportgen.storage import local

    if not Path("/proc/self/fd").is_dir():
        pytest.skip("the file behind a descriptor is read from /proc")
    real_fdopen, out = os.fdopen, tmp_path / "site"

    class FillsUp:
        def __init__(self, fd: int) -> None:
            self.stream = real_fdopen(fd, "wb")

        def __enter__(self) -> FillsUp:
            return self

        def __exit__(self, *exc: object) -> None:
            self.stream.close()

        def write(self, data: bytes) -> int:
            self.stream.write(data[: len(data) // 2])  # what fitted, then the disk is full
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def fdopen(fd: int, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        target = os.readlink(f"/proc/self/fd/{fd}")
        if mode == "wb" and target.endswith("index.html") and "/runs/" in target:
            return FillsUp(fd)
        return real_fdopen(fd, mode, *args, **kwargs)

    monkeypatch.setattr(local.os, "fdopen", fdopen)
    result = invoke(["site", FIXTURES / "synthetic_complete.jsonl", "--out", out])
    assert result.code == 2
    line = result.line_with("reportgen site: cannot write")
    page = line.removeprefix("reportgen site: cannot write ").split(": No space left on device")[0]
    assert page.endswith("index.html") and "/runs/" in page and line.endswith(os.strerror(errno.ENOSPC)), line
    assert not Path(page).exists(), "a page cut short by the full disk was left behind"
    monkeypatch.undo()
    result = invoke(["site", FIXTURES / "synthetic_complete.jsonl", "--out", out])
    assert result.code == 0 and "synthetic-complete" in Path(page).read_text(encoding="utf-8")


@pytest.mark.parametrize("kind", ["fifo", "link-to-device"])
def test_a_site_toml_that_is_no_regular_file_is_refused_not_ignored(tmp_path: Path, kind: str) -> None:
    # Before: such a site.toml inside RUNS was taken as absent (exit 0, no word, its declared
    # comparison pages gone), while --config naming the same file refused it.
    import os

    runs = tmp_path / "runs"
    (runs / "one").mkdir(parents=True)
    shutil.copy(FIXTURES / "synthetic_complete.jsonl", runs / "one" / "events.jsonl")
    if kind == "fifo":
        os.mkfifo(runs / "site.toml")
    else:
        (runs / "site.toml").symlink_to("/dev/zero")
    out = invoke(["site", runs, "--out", tmp_path / "site"], seconds=60)
    # A link leading outside RUNS is not followed at all (without --follow-symlinks); a FIFO is
    # not read as a regular file.
    said = "a symlink to /dev/zero, outside" if kind == "link-to-device" else "cannot read the site configuration"
    assert out.code == 2 and f"site.toml: {said}" in out.output, out.output
    if kind == "link-to-device":  # followed, it is refused where it is read
        out = invoke(["site", runs, "--out", tmp_path / "site", "--follow-symlinks"], seconds=60)
        assert out.code == 2 and "site.toml: cannot read the site configuration" in out.output, out.output


def test_a_run_folder_whose_name_is_not_utf8_builds_again_and_again(tmp_path: Path) -> None:
    """A run folder named with a byte that is no UTF-8 (Python holds it as a lone surrogate)
    built once; every later build crashed writing the quick record (UnicodeEncodeError), since
    the record was written as UTF-8 text with the path's surrogate in it."""
    import os

    from tests.conftest import REPO

    runs = tmp_path / "runs"
    folder = Path(os.fsdecode(bytes(runs) + b"/bad\xffname"))
    folder.mkdir(parents=True)
    log = folder / "events.jsonl"
    shutil.copyfile(REPO / "sample_runs" / "tiny-encoder-cpu-20261205T023648Z-3de80c" / "events.jsonl", log)
    old = 1_700_000_000  # long before this build: the quick record trusts the file's stat
    os.utime(log, (old, old))
    out = tmp_path / "site"
    for _ in range(3):
        done = invoke(["site", str(runs), "--out", str(out)])
        assert done.code == 0, done.output
    assert "1 run, 0 files written" in done.output
