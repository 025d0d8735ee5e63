"""What a comparison says of the weights, inputs and host of a pair of runs is what the pair's logs
say, and `reportgen diff` and `reportgen compare` say it alike."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reportgen.render.compare import gather
from tests.test_compare import _edit, _pair, _weights

Events = list[dict[str, Any]]


def _schema(version: str) -> Any:
    def change(events: Events) -> None:
        for event in events:
            event["schema_version"] = version

    return change


def _unhashed(reason: str | None) -> Any:
    """The weights artifact carries no content hash, with ``reason`` (or none) for it."""

    def change(events: Events) -> None:
        artifact = next(e for e in events if e["kind"] == "artifact" and e["role"] == "weights")
        artifact.pop("content_sha256", None)
        if reason is not None:
            artifact["content_unknown_reason"] = reason

    return change


@pytest.mark.parametrize(
    ("reason", "said"),
    [
        ("hashing failed: torch.load raised", "not hashed, although its schema 1.2 has content hashes: hashing failed"),
        (None, "left out without a reason, although its schema 1.2 has content hashes"),
    ],
)
def test_weights_without_a_content_hash_in_a_log_that_has_the_field_are_worded_from_the_log(
    tmp_path: Path, reason: str | None, said: str
) -> None:
    """Before: a schema 1.2 log whose weights were not hashed by content read '(written before
    content hashes)', which its schema version contradicts."""
    base, cand = _pair(tmp_path, noise=0.01)
    for path in (base, cand):
        _edit(path, _schema("1.2"))
    _edit(base, _weights("c" * 64, "1" * 64))
    _edit(cand, _weights(None, "2" * 64))
    _edit(cand, _unhashed(reason))
    note = gather(base, cand).notes[0]
    assert note.startswith("Weights identified by declaration only, not verified: candidate log without"), note
    assert said in note and "written before content hashes" not in note, note


def test_weights_of_logs_before_content_hashes_still_say_so(tmp_path: Path) -> None:
    base, cand = _pair(tmp_path, noise=0.01)
    _edit(base, _weights(None, "1" * 64))
    _edit(cand, _weights(None, "2" * 64))
    note = gather(base, cand).notes[0]
    assert "baseline and candidate logs without a content hash (written before content hashes)" in note, note


def _hostless(events: Events) -> Events:
    """An environment that names no device, host name, variable or version beyond the pages' own,
    and timing events without host facts: a log that recorded no host facts at all."""
    env = next(e for e in events if e["kind"] == "environment")
    env["device"], env["env_vars"] = {}, {}
    env["versions"] = {k: v for k, v in env["versions"].items() if k in ("python", "torch", "torch_neuronx")}
    return events


def _one_sided_host(tmp_path: Path) -> tuple[Path, Path]:
    from tests.logbuilder import base_events
    from tests.test_diff_names_changes import _hosted
    from tests.test_run_changes import _write

    before = _write(tmp_path / "runs" / "a", _hostless(base_events()), "host-unknown-a")
    after = _hosted(base_events(), "2 intra-op, 2 inter-op", "1.00")
    return before, _write(tmp_path / "runs" / "b", after, "host-known-b", "2026-01-02T00:00:00Z")


def test_a_run_without_host_facts_is_not_read_as_an_unchanged_host(tmp_path: Path) -> None:
    """Before: diff compared no host fact when one run recorded none and said 'host changes: 0'
    (Markdown: 'Host: none changed'), while compare listed each of the other run's facts as a
    change from 'not recorded': neither said that a host change cannot be ruled out."""
    import json

    from click.testing import CliRunner

    from reportgen.cli import main
    from reportgen.publish.site import build_site

    before, after = _one_sided_host(tmp_path)
    unknown = "host facts not recorded on the before: a host change cannot be ruled out"
    runner = CliRunner()

    def diff(fmt: str) -> str:
        result = runner.invoke(main, ["diff", str(before), str(after), "--format", fmt])
        assert result.exit_code == 0, result.output
        return result.output

    text = diff("text")
    assert f"host changes: not known ({unknown})" in text and "host changes: 0" not in text, text
    md = diff("md")
    assert f"**Host:** not known: {unknown}." in md and "none changed." not in md.split("**Host")[1], md
    data = json.loads(diff("json"))
    assert data["host_unknown"] == unknown and data["host"] == []

    out = tmp_path / "cmp"
    result = runner.invoke(main, ["compare", str(before), str(after), "--out", str(out), "--format", "html,md,json"])
    assert result.exit_code == 0, result.output
    said = unknown.replace("the before", "the baseline")
    first = result.output.splitlines()[0]
    assert f"evidence of nothing; {said} (listed first); Candidate cpu" in first, first
    compared = json.loads((out / "compare.json").read_text(encoding="utf-8"))
    assert compared["host_unknown"] == said and compared["host"] == []
    assert f"**Host facts:** not known: {said}." in (out / "compare.md").read_text(encoding="utf-8")
    page = (out / "compare.html").read_text(encoding="utf-8")
    assert f"Host facts: not known:</strong> {said}." in page and "Host facts: the same on both runs" not in page

    build_site([tmp_path / "runs"], tmp_path / "site")
    history = next((tmp_path / "site" / "workloads").glob("*/index.html")).read_text(encoding="utf-8")
    assert f"Host: not known:</strong> {unknown}." in history and "Host: none changed" not in history
    assert f"changed first ({unknown}; named below)" in history


ODD = "b2-l16-contiguous-float32-eager"


def _other_inputs_pair(root: Path) -> tuple[Path, Path]:
    """Two timing runs on one target, twice as fast after, whose inputs are hashed by content: the
    same for three cells, other for one (its own inputs file in the after run)."""
    from tests.logbuilder import dumps, timing_log

    def per_cell(events: Events) -> None:
        shared = next(e for e in events if e["kind"] == "artifact" and e["role"] == "inputs")
        events.insert(events.index(shared) + 1, dict(shared, case=ODD, sha256="e" * 64, path="artifacts/odd.pt"))
        for seq, event in enumerate(events):
            event["seq"] = seq

    def hashed(events: Events) -> None:
        for event in events:
            if event["kind"] == "artifact" and event["role"] == "inputs":
                event["content_sha256"] = event["sha256"]

    paths = []
    for name, scale, seed in (("a", 1.0, 1), ("b", 0.5, 2)):
        path = root / name / "events.jsonl"
        path.parent.mkdir(parents=True)
        events = timing_log(f"values-{name}", scale=scale, seed=seed)
        events[0]["started_at"] = f"2026-01-0{seed}T00:00:00Z"
        path.write_text(dumps(events), encoding="utf-8")
        paths.append(path)
    _edit(paths[1], per_cell)
    for path in paths:
        _edit(path, hashed)
    return paths[0], paths[1]


def test_a_cell_fed_other_inputs_gets_no_timing_verdict_in_diff_as_in_compare(tmp_path: Path) -> None:
    """Before: compare listed the cell whose inputs differ as not comparable, while diff of the
    same two logs gave it a ratio, an interval and 'faster' (after naming the inputs change)."""
    import json
    import re

    from click.testing import CliRunner

    from reportgen.cli import main
    from reportgen.publish.site import build_site

    before, after = _other_inputs_pair(tmp_path / "runs")
    runner = CliRunner()
    out = tmp_path / "cmp"
    result = runner.invoke(main, ["compare", str(before), str(after), "--out", str(out), "--format", "json"])
    assert result.exit_code == 0, result.output
    compared = json.loads((out / "compare.json").read_text(encoding="utf-8"))
    reasons = {n["case"]: n["reason"] for n in compared["not_comparable"]}
    assert list(reasons) == [ODD] and reasons[ODD].startswith("different inputs by content")

    def diff(fmt: str) -> str:
        result = runner.invoke(main, ["diff", str(before), str(after), "--format", fmt])
        assert result.exit_code == 0, result.output
        return result.output

    data = json.loads(diff("json"))
    assert ODD not in {t["case"] for t in data["timings"]}
    assert data["values_differ"] == [[ODD, reasons[ODD]]]
    assert {t["case"] for t in data["timings"]} == {c["case"] for c in compared["cells"] if c["timing"]}
    assert data["summary"].startswith("3 faster, 0 slower"), data["summary"]
    assert "1 not compared (other weights or inputs)" in data["summary"]
    for fmt in ("text", "md"):
        text = diff(fmt)
        line = next(x for x in text.splitlines() if ODD in x and "not compared" in x)
        assert reasons[ODD].replace("...", "").split(":")[0] in line, line
        assert not re.search(r"\d\.\d{3}[x×]|faster|slower", line), line

    build_site([tmp_path / "runs"], tmp_path / "site")
    page = next((tmp_path / "site" / "workloads").glob("*/index.html")).read_text(encoding="utf-8")
    assert (
        f"Timing not compared for 1 cell that passed in both runs, fed other weights or inputs: <code>{ODD}</code>"
        in page
    )
    ratios = page[page.index('<table class="ratios">') :]
    assert f"<code>{ODD}</code>" not in ratios[: ratios.index("</table>")]


def test_runs_of_other_weights_compare_no_timing_in_diff_as_compare_refuses_them(tmp_path: Path) -> None:
    """Before: compare refused the pair (different weights by content), while diff judged every
    cell's timing of the two runs faster."""
    import json

    from click.testing import CliRunner

    from reportgen.cli import main

    before, after = _other_inputs_pair(tmp_path)
    _edit(before, _weights("c" * 64, "1" * 64))
    _edit(after, _weights("d" * 64, "2" * 64))
    runner = CliRunner()
    refused = runner.invoke(main, ["compare", str(before), str(after), "--out", str(tmp_path / "cmp")])
    assert refused.exit_code == 2 and "refused: different weights by content" in refused.output
    result = runner.invoke(main, ["diff", str(before), str(after), "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["timings"] == [] and data["geomean"] is None
    assert len(data["values_differ"]) == 4
    assert all(why.startswith("different weights by content: before cccccccccccc") for _, why in data["values_differ"])


def test_the_trend_lines_are_not_joined_across_runs_of_other_weights(tmp_path: Path) -> None:
    """diff compares no timing between runs of other weights (as compare refuses them), but the
    history's trend lines still ran from the one run's points to the other's."""
    from reportgen.publish.diff import diff_runs
    from reportgen.publish.site import _target_history
    from reportgen.publish.summary import summarize
    from reportgen.render.report import judge_log
    from tests.logbuilder import dumps, timing_log

    paths = []
    for day, content in ((1, "c"), (2, "d"), (3, "d")):
        path = tmp_path / f"r{day}" / "events.jsonl"
        path.parent.mkdir(parents=True)
        events = timing_log(f"weights-{day}", scale=1.0 + day / 10, seed=day)
        events[0]["started_at"] = f"2026-01-0{day}T00:00:00Z"
        path.write_text(dumps(events), encoding="utf-8")
        _edit(path, _weights(content * 64, content * 64))
        paths.append(path)
    runs = [summarize(judge_log(p)) for p in paths]
    assert diff_runs(runs[0], runs[1]).timing_unlike[0].startswith("other weights: different weights by content")
    assert diff_runs(runs[1], runs[2]).timing_unlike == []
    figures = {f.id.rsplit("-", 1)[1]: f for f in _target_history("cpu", runs)["figures"]}
    warm = figures["warm"]
    xs = sorted({round(p.x, 3) for s in warm.chart.series for p in s.points})
    assert len(xs) == 3, xs
    for series in warm.chart.series:
        spans = [(round(line[0][0], 3), round(line[-1][0], 3)) for line in series.lines]
        assert spans == [(xs[1], xs[2])], (series.name, spans)  # r2-r3 joined, r1 alone
        second = next(p for p in series.points if round(p.x, 3) == xs[1])
        assert "not joined to the run before it (other weights: different weights by content" in second.title


def _fails(case: str) -> Any:
    def change(events: Events) -> None:
        from tests.test_run_changes import _mismatch

        _mismatch(events, case)

    return change


@pytest.mark.parametrize("failing", ["before", "after"])
def test_a_status_change_of_a_cell_fed_other_inputs_names_them_and_is_not_fixed(tmp_path: Path, failing: str) -> None:
    """Before: a cell that mismatched with one inputs file and passed with another was listed as
    'fixed', and one that passed and then mismatched on other inputs as a plain 'new failure':
    neither named the change of inputs beside it."""
    import json

    from click.testing import CliRunner

    from reportgen.cli import main
    from reportgen.publish.site import build_site

    before, after = _other_inputs_pair(tmp_path / "runs")
    _edit(before if failing == "before" else after, _fails(ODD))
    runner = CliRunner()

    def diff(fmt: str) -> str:
        result = runner.invoke(main, ["diff", str(before), str(after), "--format", fmt])
        assert result.exit_code == 0, result.output
        return result.output

    data = json.loads(diff("json"))
    why = data["changed_values"][ODD]
    assert why.startswith("different inputs by content"), why
    text, md = diff("text"), diff("md")
    if failing == "before":
        assert data["fixed"] == [] and data["other_values_pass"] == [[ODD, "mismatch", "pass"]]
        assert "fixed: 0" in text.splitlines(), text
        assert "passes with other weights or inputs (not fixed): 1" in text.splitlines(), text
        assert "| passes with other weights or inputs (not fixed) | 1 |" in md, md
    else:
        assert data["new_failures"] == [[ODD, "pass", "mismatch"]]
    row = next(x for x in text.splitlines() if x.startswith(f"  {ODD}: "))
    assert f" ({why}" in row, row
    md_row = next(x for x in md.splitlines() if x.startswith(f"| `{ODD}` |"))
    assert "different inputs by content" in md_row, md_row

    build_site([tmp_path / "runs"], tmp_path / "site")
    page = next((tmp_path / "site" / "workloads").glob("*/index.html")).read_text(encoding="utf-8")
    if failing == "before":
        assert "Fixed: 0" in page and "Passes with other weights or inputs (not fixed): 1" in page
    item = page[page.index(f"<li><code>{ODD}</code>: ") :]
    assert "different inputs by content" in item[: item.index("</li>")]


def test_diff_says_when_weights_and_inputs_are_the_same_by_declaration_only(tmp_path: Path) -> None:
    """Before: compare's headline said 'weights or inputs the same by declaration only, not
    verified' of a pair of logs without content hashes; diff of the same logs said nothing of
    it, so its timing read as a comparison of verified-identical work."""
    import json

    from click.testing import CliRunner

    from reportgen.cli import main

    base, cand = _pair(tmp_path, noise=0.01)
    _edit(base, _weights(None, "1" * 64))
    _edit(cand, _weights(None, "2" * 64))
    runner = CliRunner()
    result = runner.invoke(main, ["compare", str(base), str(cand), "--out", str(tmp_path / "cmp")])
    assert "the same by declaration only, not verified" in result.output, result.output
    text = runner.invoke(main, ["diff", str(base), str(cand)]).output
    lines = text.splitlines()
    at = lines.index("weights or inputs the same by declaration only, not verified:")
    assert lines[at + 1].startswith("  weights identified by declaration only, not verified"), lines[at + 1]
    assert at < next(i for i, x in enumerate(lines) if x.startswith("timing (")), text
    data = json.loads(runner.invoke(main, ["diff", str(base), str(cand), "--format", "json"]).output)
    assert data["declared_only"] == [lines[at + 1].strip()]
    md = runner.invoke(main, ["diff", str(base), str(cand), "--format", "md"]).output
    assert md.index("**Weights or inputs the same by declaration only, not verified:**") < md.index("**Timing**")


def test_a_cell_s_trend_line_is_not_joined_across_a_run_that_fed_it_other_inputs(tmp_path: Path) -> None:
    """The history's trend lines broke across runs of other weights (run-wide), but still joined
    one cell's timings across a run where only that cell's inputs differed."""
    from reportgen.publish.site import _target_history
    from reportgen.publish.summary import summarize
    from reportgen.render.report import judge_log

    before, after = _other_inputs_pair(tmp_path / "runs")
    runs = [summarize(judge_log(p)) for p in (before, after)]
    history = _target_history("cpu", runs, (ODD,))  # named, as a site configuration names a cell
    assert history["key_cases"][0] == ODD and len(history["key_cases"]) > 1, history["key_cases"]
    warm = next(f for f in history["figures"] if f.id.endswith("-trend-warm"))
    joined = {s.name: [len(line) for line in s.lines] for s in warm.chart.series}
    assert len(warm.chart.series) == len(history["key_cases"]), joined
    for n, series in enumerate(warm.chart.series):  # one series a key case, in their order
        odd = n == 0
        assert (not series.lines) == odd, (series.name, joined)
        if odd:
            later = max(series.points, key=lambda p: p.x)
            assert "not joined to the run before it (different inputs by content" in later.title, later.title
    assert "the cell's other inputs" in warm.caption
