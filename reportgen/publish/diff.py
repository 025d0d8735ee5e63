"""What changed between two runs of one workload: cells, timings, versions, disposition."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from reportgen.judge.intervals import ratio_intervals
from reportgen.judge.timing_stability import FLAG as STABILITY_FLAG, series_flag
from reportgen.publish.summary import CellSummary, RunSummary

FAILING = ("mismatch", "nonfinite", "error")
NO_SAMPLES = "no verdict: warm samples not kept"
UNSTEADY = (STABILITY_FLAG, "timing not classified")  # flags of a warm series that decides nothing
TARGETS_DIFFER = "not an upgrade on one target: a change of target is a migration question, see `reportgen compare`"


@dataclass
class TimingChange:
    """Warm medians of one cell that passed in both runs; ``flags`` qualify the ratio.

    ``low`` and ``high`` bound the ratio (95%, from both runs' kept warm samples, the same
    interval as `reportgen compare`); ``verdict`` is read from that interval, never from a
    fixed percentage. Without samples on both sides there is no interval and no verdict.
    """

    case: str
    before_s: float
    after_s: float
    flags: list[str] = field(default_factory=list)
    low: float | None = None
    high: float | None = None
    verdict: str = NO_SAMPLES

    @property
    def unsteady(self) -> bool:
        """Either run's warm series decides nothing (its flag is among ``flags``)."""
        return any(f.startswith(UNSTEADY) for f in self.flags)

    @property
    def ratio(self) -> float:
        return self.after_s / self.before_s if self.before_s > 0 else float("inf")


def _judge_timings(changes: list[tuple[TimingChange, CellSummary, CellSummary]]) -> None:
    """Give every change with samples on both sides its interval and verdict, in one batch."""
    sampled = [(t, old.warm_samples_s, new.warm_samples_s) for t, old, new in changes if old.warm_samples_s and new.warm_samples_s]
    for change, _, _ in sampled:
        if change.unsteady:
            change.verdict = f"no verdict: {STABILITY_FLAG}"
    # A series that decides nothing (unstable, or too short to classify) gets no verdict.
    usable = [(t, a, b) for t, a, b in sampled if min(a) > 0 and min(b) > 0 and not t.unsteady]  # type: ignore[type-var]
    for (change, _, _), interval in zip(usable, ratio_intervals([(a, b) for _, a, b in usable])):  # type: ignore[misc]
        change.low, change.high = interval.low, interval.high
        change.verdict = interval.verdict if interval.low is not None else "no clear difference (too few samples)"


def _stopped_flag(summary: RunSummary, which: str) -> str | None:
    if not summary.performance_stopped:
        return None
    return f"performance acceptance stopped in the {which} run ({summary.performance_stopped} unexplained mismatching cell(s))"


def timing_flags(before: RunSummary, after: RunSummary, old: CellSummary, new: CellSummary) -> list[str]:
    """Why a ratio must not be read as a performance result on its own."""
    flags = [f for f in (_stopped_flag(before, "before"), _stopped_flag(after, "after")) if f]
    if before.target != after.target:
        flags.append(f"different targets ({before.target} -> {after.target}): not a regression, see `reportgen compare`")
    fell = [which for which, cell in (("before", old), ("after", new)) if cell.cpu_fallback]
    if fell:
        flags.append(f"includes CPU fallback ({' and '.join(fell)})")
    for which, cell in (("before", old), ("after", new)):
        flag = series_flag(cell.warm_samples_s)
        if flag:
            flags.append(f"{flag} ({which})")
    return flags


class DiffRefused(ValueError):
    """The two runs are not of one workload: there is nothing to diff (exit 2)."""


@dataclass
class RunDiff:
    before: str
    after: str
    disposition: tuple[str, str]
    targets: tuple[str, str] = ("", "")
    new_failures: list[tuple[str, str, str]] = field(default_factory=list)
    fixed: list[tuple[str, str, str]] = field(default_factory=list)
    other_changes: list[tuple[str, str, str]] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    timings: list[TimingChange] = field(default_factory=list)
    versions: list[tuple[str, str, str]] = field(default_factory=list)
    # Code and data changes: the collector, its git state, the files it read, weights, inputs.
    code_and_data: list[tuple[str, str, str]] = field(default_factory=list)

    @property
    def unstable(self) -> list[str]:
        """Cells compared whose warm timing decides nothing in either run: no verdict, named."""
        return [t.case for t in self.timings if t.unsteady]

    @property
    def targets_differ(self) -> bool:
        return self.targets[0] != self.targets[1]

    @property
    def empty(self) -> bool:
        return not (self.new_failures or self.fixed or self.other_changes or self.added or self.removed or self.versions or self.code_and_data) and self.disposition[0] == self.disposition[1]

    def to_dict(self) -> dict:
        data = asdict(self)
        data["timings"] = [{**asdict(t), "ratio": round(t.ratio, 6)} for t in self.timings]
        data["unstable_timing"] = self.unstable
        return data


def diff_runs(before: RunSummary, after: RunSummary) -> RunDiff:
    """What changed from ``before`` to ``after``, two runs of one workload (else DiffRefused)."""
    if before.workload != after.workload:
        raise DiffRefused(
            f"{before.run_id} is a run of {before.workload!r} and {after.run_id} of {after.workload!r}: "
            "diff compares two runs of one workload"
        )
    result = RunDiff(before.run_id, after.run_id, (before.outcome, after.outcome), (before.target, after.target))
    timed: list[tuple[TimingChange, CellSummary, CellSummary]] = []
    for case in sorted(set(before.cells) | set(after.cells)):
        old, new = before.cells.get(case), after.cells.get(case)
        if old is None:
            result.added.append(case)
        elif new is None:
            result.removed.append(case)
        elif old.status != new.status:
            change = (case, old.status, new.status)
            if new.status in FAILING and old.status not in FAILING:
                result.new_failures.append(change)
            elif new.status == "pass" and old.status != "pass":
                result.fixed.append(change)
            else:
                result.other_changes.append(change)
        # Only timings of cells that passed in both runs are compared.
        if old and new and old.status == "pass" and new.status == "pass" and old.warm_median_s and new.warm_median_s:
            change = TimingChange(case, old.warm_median_s, new.warm_median_s, timing_flags(before, after, old, new))
            result.timings.append(change)
            timed.append((change, old, new))
    _judge_timings(timed)
    for key in sorted(set(before.versions) | set(after.versions)):
        a, b = before.versions.get(key, "unknown"), after.versions.get(key, "unknown")
        if a != b:
            result.versions.append((key, a, b))
    result.code_and_data = code_and_data_changes(before, after)
    return result


def code_and_data_changes(before: RunSummary, after: RunSummary) -> list[tuple[str, str, str]]:
    """(item, before, after) for each change of code or data: weights and inputs by content
    sha256 where both logs hashed it, else by file sha256 (and the item says so)."""
    changes = []
    for key in sorted(set(before.code_data) | set(after.code_data)):
        a, b = before.code_data.get(key, "not recorded"), after.code_data.get(key, "not recorded")
        if a != b:
            changes.append((key, a, b))
    for role in ("weights", "inputs"):
        (ca, fa), (cb, fb) = before.hashes.get(role, [None, None]), after.hashes.get(role, [None, None])
        if ca and cb:
            if ca != cb:
                changes.append((f"{role} (by content sha256)", ca, cb))
        elif fa != fb:
            lacking = [w for w, c in (("before", ca), ("after", cb)) if not c]
            changes.append((f"{role} (by file sha256: no content hash in the {' and '.join(lacking)} log{'s' if len(lacking) > 1 else ''}, so the same tensors written another way also differ)", fa or "not recorded", fb or "not recorded"))
    return changes


def _interval_text(change: TimingChange) -> str:
    return "" if change.low is None or change.high is None else f", 95% interval {change.low:.3f} to {change.high:.3f}"


def format_diff(diff: RunDiff) -> str:
    """The comparison as terminal text."""
    lines = [f"{diff.before} -> {diff.after}", f"disposition: {diff.disposition[0]} -> {diff.disposition[1]}"]
    if diff.unstable:
        lines.append(f"unstable timing: {len(diff.unstable)} cell(s), no timing verdict: {', '.join(diff.unstable)}")
    if diff.targets_differ:
        lines.append(f"targets differ: {diff.targets[0]} -> {diff.targets[1]} ({TARGETS_DIFFER})")
    for title, rows in (("new failures", diff.new_failures), ("fixed", diff.fixed), ("other status changes", diff.other_changes)):
        lines.append(f"{title}: {len(rows)}")
        lines += [f"  {case}: {old} -> {new}" for case, old, new in rows]
    lines.append(f"cells added: {len(diff.added)}")
    lines += [f"  {case}" for case in diff.added]
    lines.append(f"cells removed: {len(diff.removed)}")
    lines += [f"  {case}" for case in diff.removed]
    lines.append(f"version changes: {len(diff.versions)}")
    lines += [f"  {key}: {a} -> {b}" for key, a, b in diff.versions]
    lines.append(f"code and data changes: {len(diff.code_and_data)}")
    lines += [f"  {key}: {a} -> {b}" for key, a, b in diff.code_and_data]
    lines.append(f"warm median ratio (after / before), cells that passed in both runs: {len(diff.timings)} cells")
    lines += [f"  {t.case}: {t.before_s * 1e3:.4g} ms -> {t.after_s * 1e3:.4g} ms ({t.ratio:.3f}x{_interval_text(t)}): {t.verdict}" + "".join(f" [{flag}]" for flag in t.flags) for t in diff.timings]
    return "\n".join(lines)


def diff_command(a: Path | str, b: Path | str, fmt: str = "text", max_bytes: int | None = None, follow_symlinks: bool = False) -> str:
    """`reportgen diff A B`: A and B are logs or run directories, local or s3://."""
    from reportgen.render.report import judge_log
    from reportgen.storage.local import DEFAULT_MAX_LOG_BYTES
    from reportgen.storage.sources import find_one
    from reportgen.publish.summary import summarize

    limit = DEFAULT_MAX_LOG_BYTES if max_bytes is None else max_bytes
    summaries = []
    for path in (a, b):
        entry = find_one(path, None, follow_symlinks, limit)
        summaries.append(summarize(judge_log(entry.path, entry.annotations, max_bytes=limit, beside=False)))
    diff = diff_runs(*summaries)
    if fmt == "json":
        return json.dumps(diff.to_dict(), indent=2, sort_keys=True)
    if fmt == "md":
        from reportgen.render.templating import render_md

        return render_md("diff.md.j2", diff=diff, workload=summaries[0].workload, targets_differ=TARGETS_DIFFER).rstrip("\n")
    return format_diff(diff)
