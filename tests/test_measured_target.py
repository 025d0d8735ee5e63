"""The intended target: a run is judged as evidence for the target its plan certifies, every
headline names it, auto never moves a plan elsewhere silently, and old logs say it is unknown."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from collector import backends
from collector.backends import BackendUnavailable, resolve_target
from reportgen.publish.site import build_site
from reportgen.render.report import build_report, judge_log
from tests.logbuilder import base_events, dumps, finish, with_envelope


def _log(tmp_path: Path, intended: str | None, family: str = "cpu", choice: dict[str, str] | None = None) -> Path:
    events = base_events(target="cpu", family=family)
    plan = next(e for e in events if e["kind"] == "plan")
    if intended is not None:
        plan["intended_target"] = intended
    if choice is not None:
        events[0]["target_choice"] = choice
    run = tmp_path / "runs" / f"intended-{intended}"
    run.mkdir(parents=True)
    events[0]["run_id"] = f"intended-{intended}"
    (run / "events.jsonl").write_text(dumps(with_envelope(finish(events))), encoding="utf-8")
    return run / "events.jsonl"


def test_cpu_run_of_a_neuron_plan_is_blocked_and_every_headline_says_so(tmp_path: Path) -> None:
    choice = {
        "requested": "cpu",
        "resolved": "cpu",
        "reason": "named on the command line, overriding the plan's target neuron",
    }
    log = _log(tmp_path, "neuron", choice=choice)
    judged = judge_log(log)
    assert judged.disposition.outcome == "blocked"
    assert any(
        r.rule == "wrong-target" and r.outcome == "blocked" and "not evidence for neuron" in r.message
        for r in judged.disposition.reasons
    )
    assert "on cpu: not evidence for neuron" in judged.disposition.headline
    build_report(log, tmp_path / "out")
    for name in ("report.html", "report.md"):
        text = (tmp_path / "out" / name).read_text(encoding="utf-8")
        assert "on cpu: not evidence for neuron" in text
        assert (
            "--target cpu resolved to cpu: named on the command line, overriding the plan&#39;s target neuron" in text
            or "--target cpu resolved to cpu: named on the command line, overriding the plan's target neuron" in text
        )
    build_site([tmp_path / "runs"], tmp_path / "site")
    index = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert "on cpu: not evidence for neuron" in index
    assert "≠ intended neuron</span>" in index, "the index marks a target that is not the intended one"


def test_matching_target_is_evidence_for_it(tmp_path: Path) -> None:
    judged = judge_log(_log(tmp_path, "cpu"))
    assert judged.disposition.outcome == "suitable"
    assert judged.disposition.headline.startswith("Suitable for the tested fixed-shape path: ")
    assert judged.disposition.headline.endswith(" (on cpu: evidence for cpu; weights origin not recorded)")
    assert not [r for r in judged.disposition.reasons if r.rule == "wrong-target"]


def test_old_log_without_intended_target_says_not_recorded(tmp_path: Path) -> None:
    log = _log(tmp_path, None)
    judged = judge_log(log)
    assert "(on cpu; intended target not recorded; weights origin not recorded)" in judged.disposition.headline
    assert judged.disposition.outcome == "suitable", "a note, not a block: the plan's own target matched"
    build_report(log, tmp_path / "out")
    md = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "intended target not recorded" in md
    assert "how it was chosen is not recorded" in md
    build_site([tmp_path / "runs"], tmp_path / "site")
    assert "not recorded" in (tmp_path / "site" / "index.html").read_text(encoding="utf-8")


# --- the collector's choice ------------------------------------------------------------------


@pytest.fixture
def no_accelerators(monkeypatch: pytest.MonkeyPatch) -> None:
    real = backends.select_backend

    def select(target: str) -> Any:
        if target in ("neuron", "cuda"):
            raise BackendUnavailable(f"target {target}: not on this test host")
        return real(target)

    monkeypatch.setattr(backends, "select_backend", select)


def test_auto_never_moves_a_neuron_plan_to_the_cpu(no_accelerators: None) -> None:
    with pytest.raises(BackendUnavailable, match="the plan's target is neuron, which is not available here"):
        resolve_target("auto", "neuron")


def test_auto_records_what_it_probed(no_accelerators: None) -> None:
    backend, choice = resolve_target("auto", None)
    assert backend.name == "cpu" and choice["requested"] == "auto" and choice["resolved"] == "cpu"
    assert (
        "neuron not available" in choice["reason"]
        and "cuda not available" in choice["reason"]
        and "cpu used" in choice["reason"]
    )
    backend, choice = resolve_target("auto", "cpu")
    assert backend.name == "cpu" and "the plan's target cpu" in choice["reason"]


def test_named_target_that_overrides_the_plan_says_so(no_accelerators: None) -> None:
    backend, choice = resolve_target("cpu", "neuron")
    assert backend.name == "cpu"
    assert "overriding the plan's target neuron" in choice["reason"] and "not evidence for neuron" in choice["reason"]
