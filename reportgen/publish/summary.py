"""A run reduced to what the site index, workload history and run diffs need.

Summaries are plain data that round-trip through JSON, so the site can keep them in its state
file and rebuild the index and workload pages without reading every log again.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import asdict, dataclass, field
from typing import Any

import msgspec

from reportgen.judge.backend_docs import stack_version_key, version_keys
from collector.plan import PlanError
from reportgen.judge.changes import cell_loop_settings, every_host_key, host_facts, run_code_data, run_hashes
from collector.descriptors import default_target
from reportgen.judge.plancheck import review_logged_plan
from reportgen.model.runmodel import CellRecord, RunModel, input_key
from reportgen.judge.comparison import (
    SCOPE_FIELDS,
    cache_outcome_of,
    reference_contents,
    timed_words,
    warm_timed,
)
from reportgen.judge.identity import InputsLookup, inputs_facts, planned_fields, weights_facts
from reportgen.judge.criteria import NOT_RECORDED, declared_criteria
from reportgen.judge.disposition import adapter_note, incomplete_why
from reportgen.judge.timing_stability import (
    GENERATION_SERIES,
    TOTALS,
    generation_before,
    generation_timing,
    generation_wait_unread,
    generation_waited,
)
from reportgen.contract import events as ev
from reportgen.contract.times import utc_time
from reportgen.render.labels import status_words
from reportgen.render.report import JudgedRun

VERSION_KEYS = version_keys()  # python, torch, then each target's packages (its constraint file)
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def slug(text: str, limit: int = 48) -> str:
    """A file-name-safe, stable name: never a path from the log, always with a hash suffix."""
    readable = _UNSAFE.sub("-", text).strip("-.")[:limit] or "run"
    return f"{readable}-{hashlib.sha256(text.encode('utf-8')).hexdigest()[:8]}"


@dataclass
class CellSummary:
    """A cell's status and, only when its correctness passed, its warm median."""

    status: str
    warm_median_s: float | None = None
    cpu_fallback: bool = False  # ops fell back to the CPU: its timing includes the fallback
    warm_samples_s: list[float] | None = None  # the kept warm samples: diffs judge ratios by their interval
    cold_s: float | None = None  # the cold first call, as the timing event recorded it
    compile_s: float | None = None  # compile + first result of the cell's (forward) graph
    dtype: str | None = None  # the criteria that judged it are per dtype
    mode: str | None = None  # eager or compiled (None: a summary from before the cell index)
    warm_samples: int | None = None  # how many warm samples the median is of
    # The status as every page says it ("mismatch in outputs, awaiting verdict"): labels.status_words.
    # "" in a site state written before it existed: pages fall back to the status in words.
    words: str = ""
    # What the warm clock covered, in words ("preprocessing false, ..."); None: not recorded,
    # or a site state written before it was kept. A ratio across two scopes is flagged.
    scope: str | None = None
    # The compile hit its recompile limit, or a 'compiled' cell really ran eager: flagged.
    recompile_limit: bool = False
    # A passing generation cell's warm series by GenerationTiming's field ('ttft_warm',
    # 'decode_token'): samples kept and median as logged, and what their clock covered. Diffs
    # judge their ratios as a warm series'. Empty for other cells (and in a site state written
    # before they were kept).
    generation: dict[str, list[float]] = field(default_factory=dict)
    generation_median_s: dict[str, float] = field(default_factory=dict)
    generation_scope: str | None = None
    # Its warm generations' repetitions (decode_token holds each one's steps in turn): a decode
    # ratio is judged only where their whole decode times are stable too (series_flag). None
    # for other cells (and in a site state written before it was kept).
    generation_repetitions: int | None = None
    # The cell's inputs as its log hashed them ([content for its input shape, content of the
    # file, file sha256]: judge.identity.InputsFacts); None: no inputs artifact recorded.
    inputs: list[str | None] | None = None
    # The content sha256 of the saved reference outputs the cell was judged against (for its input
    # shape); None: not hashed by content. Two runs' differing say the criterion's reference
    # itself changed: a pass after a failure is then not "fixed".
    reference: str | None = None
    # A generation cell's reference tokens (the greedy tokens the reference model chose), by a
    # sha256 of them; None: no generation event. Two runs' differing are another reference even
    # where no reference file was hashed.
    reference_tokens: str | None = None
    # The planned cell's fields (judge.identity.PLANNED_FIELDS: batch, length, layout, dtype,
    # mode); None in a site state written before they were kept. The same case key with other
    # fields is another cell: diffs compare neither its status nor its timing.
    planned: list[int | str] | None = None
    # A passing cell's cold call's cache condition as logged ('fresh_process_empty_cache') and
    # whether its compile missed or hit the compile cache (judge.comparison.cache_outcome); None
    # where not recorded (an eager cell has no compile). A trend does not join two runs' cold
    # (or compile) times of different conditions: one of them is not the other's measurement.
    cold_condition: str | None = None
    compile_cache: str | None = None
    # What the warm clock covered as the collector recorded it ("model_call", "host_to_device +
    # model_call, not synchronised": judge.comparison.warm_timed); None: not recorded. A ratio
    # across two that differ, or of one recorded and one not, is flagged (judge.comparison.timed_flag).
    timed: str | None = None
    # [seconds waited for a CPU, seconds the loop took] by the process's threads over the warm loop (1.4
    # logs on; None: not recorded, or a site state written before it was kept): the classifier's
    # contention rule reads it beside the samples.
    warm_waited: list[float] | None = None
    # The warm loop's CPU wait was recorded unknown (a loop shorter than the scheduler tick): its
    # series is not classified, contention not judged (judge.timing_stability.UNREAD_WAIT).
    warm_wait_unread: bool = False
    # [fastest sample, highest third quartile] of the cell's earlier warm series, where the collector measured it
    # again (None: one series, or a site state written before it was kept): a stable last series
    # far outside them decides nothing (judge.timing_stability.attempts_apart).
    warm_before: list[float] | None = None
    # The log's own verdict on the reported warm series where it was not stable, as CellRecord's
    # warm_logged ('unstable' and the rules it failed, or 'unclassified' and its note; None: stable
    # or not said): it decides nothing then (judge.timing_stability.logged_unstable).
    warm_logged: list[str] | None = None
    # The same over a generation cell's warm generations (both its series come from that loop).
    generation_waited: list[float] | None = None
    # Its warm loop's CPU wait recorded unknown, as warm_wait_unread (its series are not classified).
    generation_wait_unread: bool = False
    # Per generation series (and TOTALS, the repetitions' whole decode times), [fastest, highest
    # third quartile] of the cell's earlier series of warm generations (1.7 logs on; None:
    # measured once), as warm_before.
    generation_before: dict[str, list[float]] | None = None
    # The settings its reported warm loop ran under (a generation cell's: its warm generations'),
    # by label: torch threads, CPU affinity, CPU count, governor, each its value or None where the
    # collector recorded it unknown (judge.changes.cell_loop_settings); None: no host recorded
    # around the loop (a log before 1.2). A fresh process per cell may run under other threads:
    # diffs compare them cell by cell (judge.changes.setting_flags).
    loop_settings: dict[str, str | None] | None = None
    # Why an untested cell is untested, as the run model says it ("layout not measured", "not run
    # (deselected)"); None: it has no result (a run that stopped before it), or it is not untested.
    untested_reason: str | None = None
    # The timed calls ('warm', 'cold') that were fed another layout than the cell's (the timing
    # event's layout_achieved false): such a figure is not the cell's, and no ratio of it decides
    # anything. Empty in a site state written before it was kept.
    layout_missed: list[str] = field(default_factory=list)


@dataclass
class RunSummary:
    run_id: str
    slug: str
    workload: str
    workload_slug: str
    target: str
    family: str
    started_at: str
    synthetic: bool
    complete: bool
    outcome: str
    headline: str
    versions: dict[str, str]
    counts: dict[str, int]
    cells: dict[str, CellSummary] = field(default_factory=dict)
    performance_stopped: int = 0  # mismatching or errored cells without a verdict: timings not accepted
    scope_passed: list[list[str]] = field(default_factory=list)  # [dtype · layout · mode, shapes]
    scope_not_passed: list[list[str]] = field(default_factory=list)
    intended_target: str | None = None  # what the plan is meant to certify; None: not recorded
    evidence: str = ""  # e.g. "on cpu: not evidence for neuron"
    code_data: dict[str, str] = field(default_factory=dict)  # collector, git state, files read: key -> value
    hashes: dict[str, list[str | None]] = field(
        default_factory=dict
    )  # weights/inputs -> [content sha256 or None, file sha256]
    # judge.criteria.Declared by key, as plain data (by_key: an inputs criterion's hash per input shape)
    criteria: dict[str, dict[str, str | None | dict[str, str]]] = field(default_factory=dict)
    device: str = ""  # the device name the run measured (environment device_name, else instance_type); "": not recorded
    # plan-check's verdict on the plan this run logged, for its intended target (else neuron):
    # {"target", "classification" (compatible | revise | blocked | unreadable), "headline", "first"}
    plan_check: dict[str, str] = field(default_factory=dict)
    # For the cell index (index.parquet): what wrote the log ("" when not recorded).
    collector: str = ""
    schema_version: str = ""
    # The host it measured on (judge.changes.host_facts): device, environment variables, other
    # versions, threads, affinity, load; {} in a site state written before it was kept.
    host: dict[str, str] = field(default_factory=dict)
    # The weights as the log identifies them (judge.identity.WeightsFacts, as plain data).
    weights: dict[str, Any] = field(default_factory=dict)
    # Timed cells and generation series whose timing decides nothing (Disposition.timing_undecided).
    timing_undecided: int = 0
    # What its run_start says of the campaign task that ran it (campaign.ledger.credit_problem
    # reads it): {"target": ..., "scheduled": run_start.scheduled or None}.
    started_as: dict[str, Any] = field(default_factory=dict)
    # Why an incomplete run is incomplete, in the judge's words (judge.disposition.incomplete_why:
    # no run_end, aborted and why, a cut-off last line); "" for a complete run, or in a site state
    # written before it was kept.
    ended: str = ""
    # How far the collector's adapters for the run's backends have been exercised, from their
    # constraint files (Judgement.adapter_note: the neuron adapter has met a stand-in only); "":
    # nothing to say, or a site state written before it was kept.
    adapter_note: str = ""
    # Whether the log has a plan event: a run that ended before it (aborted while loading its
    # workload) declared no criteria, so a diff says they are not recorded, never "none changed".
    plan_recorded: bool = True

    def to_dict(self) -> dict[str, Any]:
        """Plain data for the site's state file (as dataclasses.asdict gives it, with lists for
        tuples, which JSON writes alike; made in C: a long run keeps tens of thousands of cells)."""
        data: dict[str, Any] = msgspec.to_builtins(self)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunSummary:
        cells = {k: CellSummary(**v) for k, v in data.get("cells", {}).items()}
        return cls(**{**data, "cells": cells})

    @property
    def stack_version(self) -> str:
        """The version of the run's own target stack (the site's stack column), "—" when the
        target has no such version or the run did not record it."""
        key = stack_version_key(self.target)
        return self.versions.get(key, "—") if key else "—"

    @property
    def weights_origin(self) -> str | None:
        """Where the plan says the weights come from (synthetic, pretrained, ...): None where the
        log does not say. Not ``synthetic``, which says the log itself is a hand-written fixture."""
        value = (self.criteria.get("weights_origin") or {}).get("value")
        return value if isinstance(value, str) and value and value != NOT_RECORDED else None

    @property
    def sort_key(self) -> tuple[str, str]:
        """Runs in the order they started: by the instant (a stamp with an offset, or written
        with a space, is the same instant as its UTC form; the text itself ordered them wrongly),
        then by run id."""
        when = utc_time(self.started_at)
        return (self.started_at if when is None else when.isoformat(), self.run_id)  # years zero-padded


def summarize(judged: JudgedRun, plan_check: bool = True) -> RunSummary:
    """The run's summary; ``plan_check=False`` leaves out the review of its logged plan (a
    plan-check, which only the site shows: `reportgen diff` skips it)."""
    run = judged.run
    env = run.environment
    versions = {}
    if env is not None:
        versions = {k: value for k in VERSION_KEYS if k in env.versions and (value := env.versions[k].value)}
    generation = {c.case: t for c in run.cells_with("generation") if (t := generation_timing(c)) is not None}
    # Each generation cell's reference tokens, by a digest (CellSummary.reference_tokens).
    reference_tokens = {
        c.case: hashlib.sha256(repr(event.reference_tokens).encode("ascii")).hexdigest()
        for c in run.cells_with("generation")
        if (event := c.generation) is not None and event.reference_tokens
    }
    inputs = InputsLookup(run)
    shared, per_case = reference_contents(run)
    every_key = every_host_key(run)
    return RunSummary(
        run_id=run.start.run_id,
        slug=slug(run.start.run_id),
        workload=run.start.workload,
        workload_slug=slug(run.start.workload),
        target=run.plan.target if run.plan else run.start.target,
        family=env.backend_family if env else "unknown",
        started_at=run.start.started_at,
        synthetic=run.synthetic,
        complete=run.complete,
        ended=incomplete_why(run),
        adapter_note=adapter_note(run),
        plan_recorded=run.plan is not None,
        outcome=judged.disposition.outcome,
        headline=judged.disposition.led_headline,  # a synthetic fixture says so first: the headline travels alone (index.csv)
        versions=versions,
        counts=run.counts(),
        cells={
            c.case: cell_summary(
                c,
                _status_words(c, judged),
                generation.get(c.case),
                inputs.for_case(c.case),
                per_case.get(c.case, shared),
                every_key,
                reference_tokens.get(c.case),
            )
            for c in run.cells
        },
        performance_stopped=len(judged.disposition.performance_stopped),
        timing_undecided=judged.disposition.timing_undecided,
        intended_target=judged.disposition.scope.intended_target,
        evidence=judged.disposition.scope.evidence,
        scope_passed=[[row.label, row.value] for row in judged.view.scope.passed],
        scope_not_passed=[[row.label, row.value] for row in judged.view.scope.not_passed],
        code_data=run_code_data(run),
        hashes=run_hashes(run),
        host=host_facts(run),
        weights=asdict(weights_facts(run)),
        criteria={key: declared.to_dict() for key, declared in declared_criteria(run).items()},
        collector=run.start.provenance.collector_version
        if run.start.provenance is not None
        else run.start.collector.removeprefix("collector "),
        schema_version=run.start.schema_version,
        device=_device_name(run),
        plan_check=_plan_check(run) if plan_check else {},
        started_as={
            "target": run.start.target,
            "scheduled": None if run.start.scheduled is None else msgspec.to_builtins(run.start.scheduled),
        },
    )


def _plan_check(run: RunModel) -> dict[str, str]:
    """plan-check on the plan the run logged, against the target the plan is meant for (plan-check's
    default, neuron, when the plan does not say): what the site shows for a target without runs."""
    if run.plan is None:
        return {}
    target = run.plan.intended_target or default_target()
    try:
        review = review_logged_plan(run.plan, target)
    except (
        PlanError,
        KeyError,
        ValueError,
        TypeError,
        RecursionError,
    ) as exc:  # a log is untrusted: never a traceback from its plan
        return {
            "target": target,
            "classification": "unreadable",
            "headline": f"plan-check cannot review the logged plan: {exc}",
            "first": "",
        }
    first = review.findings[0] if review.findings else None
    return {
        "target": review.target,
        "classification": review.classification,
        "headline": review.headline,
        "first": f"{first.title}. {first.first}" if first is not None and first.severity != "note" else "",
    }


def _device_name(run: RunModel) -> str:
    """The device the run measured, as its environment event named it ("NVIDIA H200"; a CPU run
    names its CPU model, or in logs before it what platform.processor() said, e.g. "x86_64"), else
    the instance type; "" when neither was recorded."""
    env = run.environment
    if env is None:
        return ""
    for key in ("device_name", "instance_type"):
        fact = env.device.get(key)
        if fact is not None and fact.value:
            return str(fact.value)
    return ""


def _status_words(cell: CellRecord, judged: JudgedRun) -> str:
    note = judged.notes.get(cell.case)
    failing = judged.judgement.failing.get(cell.case, "") if judged.judgement is not None else ""
    return status_words(cell.status, failing, note is not None, note.verdict if note is not None else None)


def cell_summary(
    cell: CellRecord,
    words: str = "",
    generation: ev.GenerationTiming | None = None,
    inputs: ev.Artifact | None = None,
    references: dict[str, str] | None = None,
    every_key: bool = True,
    reference_tokens: str | None = None,
) -> CellSummary:
    """Timings are kept only for cells whose correctness passed: no other timing is compared.
    ``generation``: a generation cell's timings, as its generation event logged them;
    ``references``: the run's reference outputs' content hash per input shape; ``every_key``:
    whether the log's schema has every host key of a warm loop present (changes.every_host_key)."""
    dtype, mode = cell.planned.dtype, cell.planned.mode
    if cell.status != "pass" or cell.warm_median_s is None:
        summary = CellSummary(cell.status, None, bool(cell.fallback_items), dtype=dtype, mode=mode, words=words)
    else:
        samples = list(cell.warm_samples)  # the last warm series, as cell.warm_median_s is its median
        scope = cell.scope
        summary = CellSummary(
            cell.status,
            cell.warm_median_s,
            bool(cell.fallback_items),
            samples,
            cell.cold_s,
            cell.compile_s,
            dtype,
            mode,
            len(samples),
            words,
            ", ".join(f"{name} {str(getattr(scope, name)).lower()}" for name in SCOPE_FIELDS) if scope else None,
            cell.recompile_limit_hit or cell.eager_after_recompile_limit,
        )
    if cell.status == "pass" and cell.warm_median_s is not None:
        summary.timed = timed_words(warm_timed(cell))
        summary.warm_waited = list(cell.warm_waited) if cell.warm_waited is not None else None
        summary.warm_wait_unread = cell.warm_wait_unread
        summary.warm_before = list(cell.warm_before) if cell.warm_before is not None else None
        summary.warm_logged = list(cell.warm_logged) if cell.warm_logged is not None else None
        summary.cold_condition = cell.cold_condition if cell.cold_s is not None else None
        counters = cell.compile_cache if mode == "compiled" else None
        summary.compile_cache = cache_outcome_of(*counters) if counters is not None else None
    if cell.status == "pass" and generation is not None:
        summary.generation = {series: list(getattr(generation, series).samples_s) for series in GENERATION_SERIES}
        summary.generation_median_s = {series: getattr(generation, series).median_s for series in GENERATION_SERIES}
        summary.generation_scope = generation.scope
        summary.generation_repetitions = generation.repetitions
        waited = generation_waited(generation)
        summary.generation_waited = list(waited) if waited is not None else None
        summary.generation_wait_unread = generation_wait_unread(generation)
        earlier = {
            series: list(w) for series in (*GENERATION_SERIES, TOTALS) if (w := generation_before(generation, series))
        }
        summary.generation_before = earlier or None
        summary.recompile_limit = cell.recompile_limit_hit or cell.eager_after_recompile_limit
    summary.planned = planned_fields(cell.planned)
    summary.loop_settings = cell_loop_settings(cell, generation if cell.status == "pass" else None, every_key)
    summary.untested_reason = cell.untested_reason if cell.status == "untested" else None
    summary.layout_missed = list(cell.timing_layout_missed) if cell.status == "pass" else []
    facts = inputs_facts(inputs, input_key(cell.planned))
    summary.inputs = None if facts is None else [facts.key_content, facts.content, facts.file, facts.recipe]
    summary.reference = (references or {}).get(input_key(cell.planned))
    summary.reference_tokens = reference_tokens
    return summary
