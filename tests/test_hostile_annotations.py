"""Many annotation entries over a long run: the work a report does for them stays bounded by
the file and the run, never their product (entries that search every cell are counted and
refused past a limit with one line; entries that name their cells are looked up)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reportgen.judge import judgement
from reportgen.model import annotations
from tests import logbuilder as lb
from tests.hostile import invoke

CELLS = 40


def _run(tmp_path: Path, text: str) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    (run / "events.jsonl").write_text(lb.dumps(lb.large_log(CELLS, mismatch_every=1)), encoding="utf-8")
    (run / "annotations.toml").write_text(text, encoding="utf-8")
    return run


def _cases() -> list[str]:
    return [e["case"] for e in lb.large_log(CELLS, mismatch_every=1) if e["kind"] == "case_result"]


def _pattern_entries(count: int) -> str:
    return "".join(f'[[explain]]\ncases = ["b*"]\nexplanation = "Same cause, entry {i}."\n' for i in range(count))


@pytest.mark.parametrize(
    "text",
    [
        _pattern_entries(6),
        # One entry, many patterns: each is tried on every cell.
        '[[explain]]\ncases = ["b*", ' + ", ".join(f'"nothing{i}-*"' for i in range(5)) + ']\nexplanation = "x"\n',
        '[[explain]]\nmode = "compiled"\nexplanation = "x"\n' * 6,
    ],
    ids=["many entries", "many patterns in one entry", "many entries by field"],
)
def test_too_many_cell_tests_for_the_run_are_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    monkeypatch.setattr(annotations, "MAX_SEARCHED_CELLS", 5 * CELLS)
    run = _run(tmp_path, text)
    out = invoke(["report", run, "--out", tmp_path / "out"])
    assert out.code == 1, out.output
    line = out.line_with("cell tests a report makes")
    assert line.startswith(
        f"{run / 'annotations.toml'}: 6 patterns and field selectors, each tried on a run of {CELLS} cells"
    )
    assert not (tmp_path / "out").exists()


def test_entries_that_name_their_cells_are_looked_up_not_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The skeleton's form (cases listed by name) and [case] tables are any number of entries."""
    monkeypatch.setattr(annotations, "MAX_SEARCHED_CELLS", 1)
    cases = _cases()
    assert len(cases) == CELLS
    text = "".join(
        f'[[explain]]\ncases = ["{c}", "{cases[0]}"]\nexplanation = "Named {i}."\n' for i, c in enumerate(cases)
    )
    text += f'["{cases[1]}"]\nexplanation = "A table for one cell."\n'
    run = _run(tmp_path, text)
    out = invoke(["report", run, "--out", tmp_path / "out"])
    assert out.code == 0, out.output
    page = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "cell(s) not explained" not in page


def test_each_entry_is_summarised_once_however_many_cells_it_explains(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Overlapping entries over every cell: one gist per entry, not one per entry and cell
    (2,000 such entries over 5,000 cells kept a report busy for minutes)."""
    made: list[str] = []
    real = judgement.gist

    def counting(text: str) -> str:
        made.append(text)
        return real(text)

    monkeypatch.setattr(judgement, "gist", counting)
    run = _run(tmp_path, _pattern_entries(5))
    out = invoke(["report", run, "--out", tmp_path / "out"])
    assert out.code == 0, out.output
    assert sorted(made) == sorted(f"Same cause, entry {i}." for i in range(5))


def test_a_long_line_of_blanks_in_a_multi_line_string_is_read_in_one_pass(tmp_path: Path) -> None:
    """The header pattern that numbers entries meets every line, strings' lines too: a line
    '[a', 400,000 spaces, 'b' kept it busy for minutes (a lazy key between two runs of blanks).
    Under the deadline the hostile tables use for a hang; the entries are numbered before they
    are checked, so the explanation's length is refused after that pass."""
    line = "[a" + " " * 400_000 + "b"
    text = f'[[explain]]\ncases = ["b*"]\nexplanation = """\nSame cause.\n{line}\n"""\n'
    run = _run(tmp_path, text)
    out = invoke(["report", run, "--out", tmp_path / "out"], seconds=30)
    assert out.code == 1 and "annotations.toml:3: [[explain]] #1 explanation: String should have at most" in out.output


def test_an_explanation_longer_than_a_reader_reads_is_refused_with_its_entry() -> None:
    """An explanation's Markdown is rendered on every page that shows it, and some 100 KB inputs
    (a run of "![") take markdown-it seconds: past MAX_EXPLANATION_CHARS it is an error naming
    the entry and its line."""
    from reportgen.model.annotations import MAX_EXPLANATION_CHARS, AnnotationError, parse_annotations

    fine = "!" * MAX_EXPLANATION_CHARS
    text = f'[a]\nexplanation = "{fine}"\n\n[[explain]]\ncases = "b*"\nexplanation = "{fine}["\n'
    with pytest.raises(AnnotationError) as caught:
        parse_annotations(text, "annotations.toml")
    message = str(caught.value)
    assert message.startswith("annotations.toml:6: [[explain]] #1 explanation: String should have at most")
    assert len(message) < 300
    assert parse_annotations(text.replace(f"{fine}[", "short"), "annotations.toml").entries
