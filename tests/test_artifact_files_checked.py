"""The files a log's artifact events name beside it: a file there must have the bytes the log
gives it. Each log here is a synthetic one (tests/logbuilder) edited by hand, and says so in its
run_start; the files beside it are written by the tests."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from click.testing import CliRunner

from reportgen.cli import main
from reportgen.contract.validation import read_log
from tests.logbuilder import dumps
from tests.test_validate_identity_contradictions import Lines, _identity_log, _line_of, _plan, _weights

SAVED = {"weights": b"the saved state_dict " * 50, "inputs": b"the saved inputs " * 40}


def _artifact(events: Lines, role: str) -> dict:
    return next(e for e in events if e["kind"] == "artifact" and e["role"] == role)


def _run(folder: Path, roles: tuple[str, ...] = ("weights", "inputs")) -> tuple[Path, Lines]:
    """A run folder: its log, and the files its artifacts of ``roles`` name, with the bytes,
    size and sha256 the log gives them (the plan repeats the weights' sha256, as the collector
    writes it)."""
    events = _identity_log()
    for role in roles:
        data = SAVED[role]
        artifact = _artifact(events, role)
        artifact.update(bytes=len(data), sha256=hashlib.sha256(data).hexdigest())
        (folder / "artifacts").mkdir(parents=True, exist_ok=True)
        (folder / artifact["path"]).write_bytes(data)
    _plan(events)["weights_sha256"] = _weights(events)["sha256"]
    log = folder / "events.jsonl"
    log.write_text(dumps(events), encoding="utf-8")
    return log, events


def _validate(log: Path) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["validate", str(log)])
    return result.exit_code, result.output


def test_the_files_beside_the_log_that_match_it_leave_it_valid(tmp_path: Path) -> None:
    """Before and now: files of the size and sha256 logged, or no files at all (a log moved
    without its artifacts), leave the log valid with no finding."""
    log, _ = _run(tmp_path)
    code, output = _validate(log)
    assert code == 0 and "0 errors, 0 warnings" in output, output
    for role in ("weights", "inputs"):
        (tmp_path / "artifacts" / f"{role}.pt").unlink()
    code, output = _validate(log)
    assert code == 0 and "0 errors, 0 warnings" in output, output


@pytest.mark.parametrize("role", ["weights", "inputs"])
@pytest.mark.parametrize("forged", ["other-bytes", "other-size"])
def test_a_file_beside_the_log_with_other_bytes_than_logged_makes_the_log_invalid(
    tmp_path: Path, role: str, forged: str
) -> None:
    """Before: artifacts/weights.pt (or inputs.pt) beside the log with other bytes than the
    sha256 its artifact event gives passed validate, and compare and diff then said "same
    weights" from the log's hashes. Only the saved reference outputs were checked, and only
    when two runs' references were compared. Now the file is checked as those are, and a file
    of other bytes or another size is an error at its artifact's line; compare refuses the log."""
    log, events = _run(tmp_path)
    artifact = _artifact(events, role)
    path = tmp_path / artifact["path"]
    data = path.read_bytes()
    path.write_bytes(data[::-1] if forged == "other-bytes" else data + b"!")
    said = (
        "does not match the sha256 in the log"
        if forged == "other-bytes"
        else f"is {len(data) + 1} bytes, the log recorded {len(data)}"
    )
    code, output = _validate(log)
    assert code == 1
    errors = [line for line in output.splitlines() if ": error: " in line]
    assert errors == [
        f"{log}:{_line_of(events, artifact)}: error: artifact: {artifact['path']} {said}: the file beside the log "
        "is not the one it names, so the log is not evidence for it"
    ], output
    other = tmp_path / "other"
    same, _ = _run(other)
    done = CliRunner().invoke(main, ["compare", str(same), str(log), "--out", str(tmp_path / "cmp")])
    assert done.exit_code == 1 and f"{log}:{_line_of(events, artifact)}: error: artifact:" in done.output
    assert not (tmp_path / "cmp").exists()


def test_paths_no_file_can_have_are_read_without_a_traceback(tmp_path: Path) -> None:
    """Before: no artifact's path was looked at when the log was read. Now every one is: a path
    outside the run folder is never read and is no finding (as a file not there), and one no
    file can have (a NUL in it) is a warning that it was not checked, never a traceback."""
    log, events = _run(tmp_path)
    secret = tmp_path.parent / "secret.pt"
    secret.write_bytes(b"x")
    _artifact(events, "inputs")["path"] = f"../{secret.name}"
    _weights(events)["path"] = "artifacts/we\x00ights.pt"
    log.write_text(dumps(events), encoding="utf-8")
    reading = read_log(log)
    assert reading.valid, [p.format() for p in reading.problems]
    assert [p.line for p in reading.problems] == [_line_of(events, _weights(events))]
    assert reading.problems[0].message.startswith("artifact: artifacts/we\x00ights.pt cannot be read (")
    assert reading.problems[0].message.endswith("): its sha256 was not checked")


def test_a_file_named_by_many_artifact_events_is_read_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A review: a log repeating one artifact line a hundred times over a 300 MB file took 22 s
    to validate, each line hashing the file again (a thousand lines over a sparse 1 GiB file:
    half an hour). Now a file is read once per log, and a log's files MAX_LOG_BYTES in all."""
    from reportgen.contract import artifact_files

    log, events = _run(tmp_path)
    weights = _artifact(events, "weights")
    at = events.index(weights) + 1
    events[at:at] = [{**weights, "role": "other"} for _ in range(50)]
    for seq, event in enumerate(events):
        event["seq"] = seq
    log.write_text(dumps(events), encoding="utf-8")
    reads: list[object] = []
    real = hashlib.file_digest

    def counted(handle: object, digest: str) -> object:
        reads.append(handle)
        return real(handle, digest)  # type: ignore[arg-type]

    monkeypatch.setattr(artifact_files.hashlib, "file_digest", counted)
    read_log(log)
    assert len(reads) == 2, len(reads)  # the weights file and the inputs file, once each
    monkeypatch.setattr(artifact_files, "MAX_LOG_BYTES", len(SAVED["weights"]))
    reading = read_log(log)
    assert any("read for one log's files" in p.message for p in reading.problems), [
        p.format() for p in reading.problems
    ]


def test_a_link_out_of_the_run_folder_or_a_link_loop_is_said_unchecked_with_no_traceback(tmp_path: Path) -> None:
    """A review: a weights.pt linked to a forged file outside the run folder validated with no
    word (the log's hashes then read 'Same weights by content'), and a link to itself crashed
    validate, report and diff with a traceback (RuntimeError: Symlink loop). Now each is a
    warning at its line that the file was not checked."""
    log, events = _run(tmp_path / "run")
    weights = tmp_path / "run" / _artifact(events, "weights")["path"]
    elsewhere = tmp_path / "elsewhere.pt"
    elsewhere.write_bytes(b"forged" + SAVED["weights"][6:])
    weights.unlink()
    weights.symlink_to(elsewhere)
    code, output = _validate(log)
    assert (
        code == 0 and "links to a file outside its run folder, which is not read: its sha256 was not checked" in output
    )
    weights.unlink()
    weights.symlink_to(weights.name)  # a loop
    code, output = _validate(log)
    assert code == 0 and "Traceback" not in output and "cannot be read" in output, output


def test_a_long_logged_path_is_clipped_in_its_message(tmp_path: Path) -> None:
    log, events = _run(tmp_path)
    _artifact(events, "inputs")["path"] = "artifacts/" + "a/" * 5000 + "x.pt"
    log.write_text(dumps(events), encoding="utf-8")
    from reportgen.contract.artifact_files import FileChecks

    found = FileChecks(tmp_path).check(_artifact(events, "inputs")["path"], 1, "0" * 64)
    assert not isinstance(found, Path) and len(found.why) < 300, found


def test_report_md_shows_the_log_s_warnings_as_report_html_does(tmp_path: Path) -> None:
    """A review: a weights file the check could not read (linked from outside the run folder, or
    over 1 GiB) was said so only in report.html's log warnings; report.md, the file a pull request
    shows, said nothing. Now report.md lists the log's warnings too."""
    log, events = _run(tmp_path / "run")
    weights = tmp_path / "run" / _artifact(events, "weights")["path"]
    elsewhere = tmp_path / "elsewhere.pt"
    elsewhere.write_bytes(weights.read_bytes())
    weights.unlink()
    weights.symlink_to(elsewhere)
    result = CliRunner().invoke(main, ["report", str(log), "--out", str(tmp_path / "out")])
    assert result.exit_code in (0, 3), result.output
    text = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "Log warnings (1), as `reportgen validate` prints them:" in text, text[-2000:]
    assert "links to a file outside its run folder" in text


def test_compare_says_when_the_files_its_same_weights_rest_on_were_not_checked(tmp_path: Path) -> None:
    """A review: with a side's weights file linked from outside its run folder (or over 1 GiB),
    compare still read "Same weights by content", from that log's hashes alone, with no word.
    Now the note says which side's file was not checked."""
    base, _ = _run(tmp_path / "base")
    cand, events = _run(tmp_path / "cand")
    events[0]["run_id"] = "synthetic-identity-candidate"
    cand.write_text(dumps(events), encoding="utf-8")
    weights = tmp_path / "cand" / _artifact(events, "weights")["path"]
    elsewhere = tmp_path / "elsewhere.pt"
    elsewhere.write_bytes(weights.read_bytes())
    weights.unlink()
    weights.symlink_to(elsewhere)
    result = CliRunner().invoke(main, ["compare", str(base), str(cand), "--out", str(tmp_path / "c")])
    assert result.exit_code == 0, result.output
    text = (tmp_path / "c" / "compare.md").read_text(encoding="utf-8")
    assert (
        "The files beside the logs were not checked against these hashes (the candidate's artifacts/weights.pt" in text
    )
    (tmp_path / "c2").mkdir()
    weights.unlink()
    weights.write_bytes(elsewhere.read_bytes())
    result = CliRunner().invoke(main, ["compare", str(base), str(cand), "--out", str(tmp_path / "c2")])
    assert "were not checked against these hashes" not in (tmp_path / "c2" / "compare.md").read_text(encoding="utf-8")


def test_a_small_file_is_checked_before_large_ones_spend_the_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A review: large files named first in a log spent its read budget, and a forged small
    file after them (the saved inputs, or the reference outputs a comparison reads) was only
    'not checked'. The files are read smallest first: the forgery is an error."""
    from reportgen.contract import artifact_files

    log, events = _run(tmp_path)
    inputs = tmp_path / _artifact(events, "inputs")["path"]
    inputs.write_bytes(SAVED["inputs"][::-1])  # other bytes, the size logged
    monkeypatch.setattr(artifact_files, "MAX_LOG_BYTES", len(SAVED["weights"]))  # the weights, first, would spend it
    assert len(SAVED["weights"]) > len(SAVED["inputs"])
    reading = read_log(log)
    assert not reading.valid
    assert any("does not match the sha256 in the log" in p.message for p in reading.problems)
    assert any("read for one log's files" in p.message for p in reading.problems)  # the weights, unchecked
