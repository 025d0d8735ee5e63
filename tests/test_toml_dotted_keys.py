"""A dotted key of very many parts is refused with one located line before tomllib reads it
(tomllib's time grows with the square of the parts: 80,000 of them took it about 20 seconds), by every
reader of TOML: plan-check, the collector, annotations beside a run and a site configuration.
Keys of ordinary depth, and dots in strings and comments, are read as before."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from collector.tomltext import MAX_DOTTED_KEY_PARTS, toml_text
from tests.hostile import DEADLINE_S, invoke

REPO = Path(__file__).resolve().parents[1]
SAMPLE_RUN = REPO / "sample_runs" / "tiny-encoder-cpu-20261205T124447Z-43ef64"
CELL = "b1-l16-contiguous-float32-eager"  # a cell of that run
# Far past the bound: without the check tomllib takes many minutes on one such key.
LONG_KEY = "x" + ".x" * 200_000
REFUSAL = f"not valid TOML: a dotted key of more than {MAX_DOTTED_KEY_PARTS} parts"


def _copied_run(tmp_path: Path, annotations: str) -> Path:
    run = tmp_path / "run"
    shutil.copytree(SAMPLE_RUN, run)
    (run / "annotations.toml").write_text(annotations, encoding="utf-8")
    return run


def test_plan_check_refuses_a_long_dotted_key_with_its_line(tmp_path: Path) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text(f"# a plan\n{LONG_KEY} = 1\n", encoding="utf-8")
    out = invoke(["plan-check", plan, "--target", "cpu"])
    assert out.code == 1, out.output
    assert (
        out.line_with(REFUSAL)
        == f"reportgen plan-check: unreadable plan: {plan}:2: {REFUSAL} (no real file needs so many)"
    )


def test_collector_list_refuses_a_long_dotted_key_with_its_line(tmp_path: Path) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text(f"[workload]\nname = 'w'\n[{LONG_KEY}]\n", encoding="utf-8")
    command = [sys.executable, "-m", "collector", "--workload", str(plan), "--target", "cpu", "--list"]
    proc = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=DEADLINE_S)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.splitlines() == [f"collector: plan error: {plan}:3: {REFUSAL} (no real file needs so many)"]


def test_report_refuses_annotations_with_a_long_dotted_header(tmp_path: Path) -> None:
    run = _copied_run(tmp_path, f'["{CELL}"]\nexplanation = "x"\n[[{LONG_KEY}]]\n')
    out = invoke(["report", run, "--out", tmp_path / "out"])
    assert out.code == 1, out.output
    assert (
        out.line_with(REFUSAL)
        == f"{run / 'annotations.toml'}: {REFUSAL} (no real file needs so many) (at line 3, column 3)"
    )
    assert not (tmp_path / "out").exists()


def test_site_refuses_a_config_with_a_long_dotted_key_in_an_inline_table(tmp_path: Path) -> None:
    config = tmp_path / "site.toml"
    config.write_text(f"[history]\nx = {{ a = 1, {LONG_KEY.replace('.', ' . ')} = 2 }}\n", encoding="utf-8")
    out = invoke(["site", REPO / "sample_runs", "--config", config, "--out", tmp_path / "site"])
    assert out.code == 2, out.output
    assert (
        out.line_with(REFUSAL)
        == f"reportgen site: {config}: {REFUSAL} (no real file needs so many) (at line 2, column 14)"
    )


def test_keys_of_ordinary_depth_and_dots_in_strings_and_comments_are_read(tmp_path: Path) -> None:
    deepest = ".".join(["k"] * MAX_DOTTED_KEY_PARTS)  # key/value line and array-of-tables header
    many_dots = LONG_KEY[:20_001]  # 10,001 dot-separated words, in values and comments only
    text = (
        f"# {many_dots}\n"
        f"{deepest} = 1\n"
        f'a . "b.c" . \'d\' = "{many_dots}"\n'
        f"e = {{ f.g = '{many_dots}' }}\n"
        f'h = """\n[{many_dots}]\n"""\n'
        f"[[{deepest.replace('k', 'm')}]]\n"
        f"[t . 'u' . \"v\"]\nw = '''{many_dots}'''\n"
    )
    data = tomllib.loads(toml_text(text))
    assert data["a"] == {"b.c": {"d": many_dots}}
    assert data["e"] == {"f": {"g": many_dots}}
    assert data["h"] == f"[{many_dots}]\n"
    assert data["t"] == {"u": {"v": {"w": many_dots}}}
    keys, tables = data["k"], data["m"]
    for _ in range(MAX_DOTTED_KEY_PARTS - 2):
        keys, tables = keys["k"], tables["m"]
    assert keys == {"k": 1}
    assert tables == {"m": [{}]}

    # An annotations file with such text in an explanation and a comment is read as before.
    run = _copied_run(tmp_path, f'["{CELL}"]\nexplanation = """Text:\n[{many_dots[:9_999]}]\n"""\n# {many_dots}\n')
    out = invoke(["report", run, "--out", tmp_path / "out"])
    assert out.code == 0, out.output
    assert "Text:" in (tmp_path / "out" / "report.md").read_text(encoding="utf-8")


def test_a_header_like_line_of_many_parts_in_a_string_is_no_key(tmp_path: Path) -> None:
    """The line numbers of an annotations file's headers are found line by line, so a line of a
    multi-line string can look like a header: it is skipped quickly, and the entry it stands in
    is judged on its own (here its explanation is too long)."""
    run = _copied_run(tmp_path, f'["{CELL}"]\nexplanation = """\n[{LONG_KEY}]\n"""\n')
    out = invoke(["report", run, "--out", tmp_path / "out"])
    assert out.code == 1, out.output
    line = out.line_with("explanation")
    assert line.startswith(f"{run / 'annotations.toml'}:2: [{CELL}] explanation: String should have at most")
