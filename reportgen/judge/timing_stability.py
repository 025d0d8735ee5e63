"""Which cells' warm timings are steady enough to decide anything.

Every cell's reported warm series (its last: an unstable one the collector measured again is
followed by its later attempts) is classified from its kept samples with the collector's own
classifier (``collector.stability``), for old logs as for new, so the page, the comparison and
the collector never disagree. A cell whose series is not stable (unstable, or too short to
classify) is left out of faster/slower verdicts and geometric means, and is named.

A cell the collector measured again (an unstable series is followed by later attempts, and the
first stable one ends them) is judged by its last series and by the earlier ones: a stable last
series whose median lies below every sample of the earlier ones, or above the middle half of
each, by more than the classifier's 10% floor for two speeds, measured a speed the cell did not
run at before (``attempts_apart``), and decides nothing either.

A generation cell (schema 1.2) keeps two warm series in its generation event instead: time to
first token and decode per token (``GENERATION_SERIES``). Each is classified by the same rule.
From 1.7 the collector takes a cell's warm generations again while a series of them is
unstable, and keeps the earlier series in the same event: its reported series are judged
against them as a timed cell's (``generation_before``).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from collector.stability import (
    GAP_OVER_MEDIAN_MIN,
    SPREAD_MAX,
    STABLE,
    UNCLASSIFIED,
    UNSTABLE,
    Stability,
    WAIT_NOT_READ,
    classify,
    repetition_totals,
)
from reportgen.contract import events as ev
from reportgen.contract.validation import fields_of
from reportgen.model.runmodel import CellRecord, RunModel, before_window, per_run, waited_of

SYMBOL = "≋"  # marks a cell whose warm timing is unstable, wherever its timing is shown
FLAG = "unstable timing"
# The first item of a cell's logged verdict (runmodel.CellRecord.warm_logged): the rules it
# failed follow 'unstable', the log's note follows 'unclassified'.
LOGGED_UNSTABLE, LOGGED_UNCLASSIFIED = "unstable", "unclassified"
# A series too short for the classifier's rules, or a ratio of two series too far from 1 to
# judge (judge/intervals.BEYOND): not shown unstable, and it decides nothing.
UNCLASSIFIED_FLAG = "timing not classified"
# A series whose loop's CPU wait its collector could not read though its log records the figure
# (1.4 on: schedstat counted nothing over a loop shorter than a scheduler tick): its samples may
# look steady, but contention was not judged, so it decides nothing, as diff and compare say.
UNREAD_WAIT = WAIT_NOT_READ  # as the collector logs such a series (0.28.0 on)
UNCLASSIFIED_SYMBOL = "?"
UNSTEADY = (FLAG, UNCLASSIFIED_FLAG)  # the flags (and their prefixes) of a series that decides nothing
# The one rule whose name (as the log and collector/stability.py keep it) is not a plain word;
# render/labels.py takes its words from here.
RULE_WORDS = {"min_median": "fastest sample far below the median", "contention": "threads waited for a CPU"}

# Why a cell's timed figure is not its own performance on its own, whatever its stability: the
# words every surface gives them (the report's timing table and charts, the site's trends, diff
# and compare), from figure_caveats.
FALLBACK_CAVEAT = "includes CPU fallback"
LIMIT_CAVEAT = "recompile limit hit"  # the compiled cell may have run eager


def layout_caveat(call: str) -> str:
    """A timed call ('warm': its loop; 'cold') fed another layout than its cell's."""
    return f"{call} {'loop' if call == 'warm' else 'call'} fed another layout than the cell's"


def figure_caveats(fell_back: bool, limit_hit: bool, missed: Iterable[str] = ()) -> list[str]:
    """The caveats of one cell's timed figure, in order: CPU fallback, a hit recompile limit, each
    timed call (``missed``: 'warm', 'cold') fed another layout than the cell's."""
    return [
        *([FALLBACK_CAVEAT] if fell_back else []),
        *([LIMIT_CAVEAT] if limit_hit else []),
        *(layout_caveat(call) for call in missed),
    ]


def sided_caveats(sides: Iterable[tuple[str, Sequence[str]]]) -> list[tuple[str, list[str]]]:
    """Each caveat of some side's figure (``sides``: (side, its figure_caveats)), in order, with
    the sides it holds on: what a ratio of the sides' figures carries."""
    found: dict[str, list[str]] = {}
    for side, caveats in sides:
        for caveat in caveats:
            found.setdefault(caveat, []).append(side)
    order = {caveat: i for i, caveat in enumerate((FALLBACK_CAVEAT, LIMIT_CAVEAT))}
    return sorted(found.items(), key=lambda item: order.get(item[0], len(order)))


# (seconds the threads waited for a CPU, seconds the loop took) over a warm loop, as a run model
# or a site summary keeps it (a tuple, or a list from a site state); None where not recorded.
Waited = Sequence[float] | None

__all__ = [
    "FLAG",
    "UNCLASSIFIED_FLAG",
    "UNCLASSIFIED_SYMBOL",
    "UNREAD_WAIT",
    "UNSTEADY",
    "STABLE",
    "SYMBOL",
    "UNCLASSIFIED",
    "UNSTABLE",
    "GENERATION_SERIES",
    "attempts_apart",
    "LOOP_HOST_KEYS",
    "generation_waited",
    "series_words",
    "SERIES_COLUMN",
    "CellStability",
    "cell_stability",
    "flag_text",
    "TOTALS",
    "DECODE_FLAGGED",
    "generation_attempts",
    "generation_wait_unread",
    "generation_before",
    "generation_flags",
    "throughput_flags",
    "repetitions_stability",
    "generation_timing",
    "generation_warm",
    "is_unstable",
    "series_flag",
    "side_median",
    "stability_word",
    "timed_cells",
    "undecided_cells",
    "undecided_why",
    "unstable_cells",
]


@dataclass(frozen=True)
class CellStability:
    """One timed cell's warm series: the classification and how many series the log holds."""

    case: str
    stability: Stability
    attempts: int  # warm series the collector took of this cell (1 in logs before 1.2)
    host: str = ""  # the host around the reported series, in words ('' when not recorded)
    apart: str = ""  # a stable last series' disagreement with the earlier ones (attempts_apart)
    # A stable series the collector that measured it could not classify (logged_unclassified).
    unclassified: str = ""

    @property
    def verdict(self) -> str:
        """The series' verdict, unstable where its attempts disagree, not classified where its
        own log says so."""
        return UNSTABLE if self.apart else UNCLASSIFIED if self.unclassified else self.stability.verdict

    @property
    def decides(self) -> bool:
        return self.verdict == STABLE

    @property
    def unstable(self) -> bool:
        return self.verdict == UNSTABLE


def cell_stability(cell: CellRecord) -> CellStability | None:
    """The classification of the cell's reported warm series; None when it has none."""
    # From the facts the reader kept (a long log has tens of thousands of timed cells: reading
    # each one's line again cost most of a report's judging); the line is read again only for
    # an unstable series, whose flag names the host around it.
    if not cell.warm_series:
        return None
    # The classification keeps the cell's own samples (no copy) and builds its checks (figures
    # and notes) only when they are asked for: an unstable series' flag names its failed
    # checks; nothing shows a stable series' checks.
    stability = classify(cell.warm_samples, cell.warm_waited)
    apart = attempts_apart(stability, cell.warm_before) or logged_unstable(stability, cell.warm_logged)
    host = ""
    if (stability.verdict == UNSTABLE or apart) and cell.source is not None:
        host = host_text(getattr(fields_of(cell.source.at(cell.warm_line)), "host", None))
    # The wait not read first: a collector from 0.28.0 logs such a series unclassified for it.
    unread = UNREAD_WAIT if cell.warm_wait_unread and stability.verdict == STABLE else ""
    return CellStability(
        cell.case, stability, cell.warm_series, host, apart, unread or logged_unclassified(stability, cell.warm_logged)
    )


def restart_unread(cell: CellRecord) -> str:
    """Why a cell's restart (a fresh process given its populated compile cache) is no start from
    that cache, or '': it counted no cache hit and wrote entries of its own, so it compiled again
    (TORCHINDUCTOR_FORCE_DISABLE_CACHES or a like setting does that), and its time is a recompile."""
    restart = cell.restart
    if restart is None or restart.cache_hits != 0:
        return ""
    before, after = restart.cache_entries_before, restart.cache_entries_after
    if before is None or after is None or after <= before:
        return ""
    return (
        f"the populated cache was not read: no cache hit, and the restart wrote {after - before} entries of its own "
        "(a recompile, not a start from the cache)"
    )


def attempts_apart(stability: Stability, before: Sequence[float] | None) -> str:
    """Why a stable series disagrees with the cell's earlier warm series, whose fastest sample and
    highest third quartile were ``before``: its median lies below the fastest of their samples,
    or above the middle half of each, by more than the classifier's floor for two speeds
    (GAP_OVER_MEDIAN_MIN); '' when it does not, or when there were none. A cell that ran at one
    speed in one attempt and at another in the next has no one warm figure, however steady its
    last attempt was. The earlier series' slowest samples do not widen the window: the few slow
    outliers that made a series unstable would admit any slower speed (a host that slowed a
    series only makes it slower, so a last series as fast as its fastest sample agrees)."""
    median = stability.median_s
    if stability.verdict != STABLE or before is None or len(before) != 2 or not median:
        return ""
    fastest, upper = float(before[0]), float(before[1])
    if upper > 0 and median > upper * (1 + GAP_OVER_MEDIAN_MIN):
        return f"the attempts disagree: the last series' median is {_times(median / upper)} the third quartile of the earlier ones"
    if median < fastest / (1 + GAP_OVER_MEDIAN_MIN):
        return f"the attempts disagree: the last series' median is {_times(median / fastest)} the fastest sample of the earlier ones"
    return ""


def logged_unstable(stability: Stability, logged: Sequence[str] | None) -> str:
    """Why a series these rules call stable decides nothing all the same: the collector that
    measured it classified it unstable (``logged``: the rules it failed there). The two halves
    share one classifier, but a log is read by the reportgen at hand: a collector with a rule this
    reportgen lacks, or a log edited after the fact, may disagree with it, and a timing its own
    measurement called unstable decides nothing. '' when they agree, or the log did not say."""
    if stability.verdict != STABLE or logged is None or tuple(logged[:1]) != (LOGGED_UNSTABLE,):
        return ""
    rules = ", ".join(RULE_WORDS.get(rule, rule) for rule in logged[1:]) or "no rule named"
    return f"the collector that measured it classified it unstable ({rules}); these rules call its samples stable"


def logged_unclassified(stability: Stability, logged: Sequence[str] | None) -> str:
    """As logged_unstable, for a series its collector could not classify (``logged`` is then
    LOGGED_UNCLASSIFIED and the log's note): it decides nothing either. '' otherwise."""
    if stability.verdict != STABLE or logged is None or tuple(logged[:1]) != (LOGGED_UNCLASSIFIED,):
        return ""
    note = logged[1] if len(logged) > 1 and logged[1] else "no reason given"
    return f"the collector that measured it could not classify it ({note}); these rules call its samples stable"


def _times(ratio: float) -> str:
    """'7.52x', bounded: a forged sample of 1e-300 s must not print a 300-digit ratio."""
    if not math.isfinite(ratio) or ratio >= 1e6:
        return "over 10^6 times"
    if ratio < 1e-6:
        return "under 10^-6 times"
    return f"{ratio:.2f}x" if ratio >= 0.01 else f"{ratio:.2g}x"


# The host facts the collector reads around every warm loop on any target
# (collector/hostcondition.py); every other '<key>_before' or '<key>_after' host fact is a
# reading of the accelerator, its key as the backend's adapter chose it
# (Backend.accelerator_condition), and 'accelerator_before' says why none was read.
LOOP_HOST_KEYS = frozenset(
    (
        "load_avg_before",
        "load_avg_after",
        "cpu_count",
        "cpu_affinity",
        "torch_threads",
        "cpu_governor",
        "cpu_run_s",
        "cpu_wait_s",
        "loop_wall_s",
        "accelerator_before",
        "accelerator_after",
    )
)
READINGS_SHOWN = 8  # accelerator readings a flag names beyond CUDA's (a log is untrusted)


def host_text(host: object) -> str:
    """'load average 5.18 → 6.02 (1 min); governor unknown: ...' from a timing event's host facts."""
    if not isinstance(host, dict) or not host:
        return ""

    def value(key: str) -> str | None:
        fact = host.get(key)
        return getattr(fact, "value", None) if fact is not None else None

    parts = []
    before, after = value("load_avg_before"), value("load_avg_after")
    if before and after:
        parts.append(f"load average {before.split()[0]} → {after.split()[0]} (1 min)")
    named = {"gpu_sm_clock_mhz": ("SM clock", " MHz"), "gpu_temperature_c": ("GPU temperature", " °C")}
    # Every other reading the backend's adapter took around the loop, by its key (any backend).
    others = sorted(k[: -len("_before")] for k in host if k.endswith("_before") and k not in LOOP_HOST_KEYS)
    for key in [k for k in named if k in others] + [k for k in others if k not in named][:READINGS_SHOWN]:
        label, unit = named.get(key, (key, ""))
        if value(f"{key}_before") and value(f"{key}_after"):
            parts.append(f"{label} {value(f'{key}_before')} → {value(f'{key}_after')}{unit}")
    for key, label in (("cpu_affinity", "affinity"), ("torch_threads", "torch threads"), ("cpu_governor", "governor")):
        if value(key):
            parts.append(f"{label} {value(key)}")
    return "; ".join(parts)


@per_run
def timed_cells(run: RunModel) -> list[CellStability]:
    """Every passing cell with a warm series, classified, in plan order (computed once per run)."""
    found = []
    for cell in run.cells:
        if cell.status == "pass" and cell.warm_median_s is not None:
            judged = cell_stability(cell)
            if judged is not None:
                found.append(judged)
    return found


def unstable_cells(run: RunModel) -> list[CellStability]:
    """The timed cells whose warm series is unstable."""
    return [j for j in timed_cells(run) if j.unstable]


def undecided_cells(run: RunModel) -> list[CellStability]:
    """The timed cells whose warm series decides nothing: unstable, or too short to classify."""
    return [j for j in timed_cells(run) if not j.decides]


# A generation cell's warm series (GenerationTiming's fields) and their words on every page.
GENERATION_SERIES = {"ttft_warm": "first token, warm", "decode_token": "decode per token"}


def series_words(series: str, batch: int = 1) -> str:
    """A generation series in words, as a cell of ``batch`` sequences measured it: a decode call
    gives one token to each sequence, so a batch of several times a decode step, not a token."""
    if series == "decode_token" and batch > 1:
        return f"decode step (a token to each of {batch} sequences)"
    return GENERATION_SERIES[series]


# The prefix of each series' columns in the exports (compare-details.csv, load_cells, index.parquet).
SERIES_COLUMN = {"ttft_warm": "first_token", "decode_token": "decode_token"}


def generation_timing(cell: CellRecord) -> ev.GenerationTiming | None:
    """A generation cell's timings; None when it logged none (it did not pass, or it is no
    generation cell). Read from the cell's events: ask only of cells with a generation event."""
    generation = cell.generation
    return generation.timing if generation is not None else None


def generation_waited(timing: ev.GenerationTiming | ev.EarlierGeneration | None) -> tuple[float, float] | None:
    """(seconds the threads waited for a CPU, seconds the loop took) over a generation cell's warm
    generations (1.4 logs on; both its series come from that loop), or over one of its earlier
    series of them; None where not recorded."""
    host = timing.host if timing is not None else None
    if not host:
        return None
    return waited_of({k: f.value for k, f in host.items() if isinstance(f.value, str)})


def generation_wait_unread(timing: ev.GenerationTiming | None) -> bool:
    """Whether a generation cell's log records its warm loop's CPU wait as unknown (a loop
    shorter than the scheduler tick reads none, UNREAD_WAIT): as a timed cell's warm_wait_unread,
    its series are then not classified."""
    host = timing.host if timing is not None else None
    return isinstance(host, dict) and "cpu_wait_s" in host and generation_waited(timing) is None


def generation_attempts(timing: ev.GenerationTiming | None) -> int:
    """How many series of warm generations the collector took of a cell (1.7 logs on: it takes
    them again at once while one is unstable); 1 for a log before 1.7 or a cell not timed."""
    attempt = timing.attempt if timing is not None else None
    return attempt if isinstance(attempt, int) else 1


# The repetitions' whole decode times (tokens/s is read from them), beside GENERATION_SERIES.
TOTALS = "decode_totals"


def generation_before(timing: ev.GenerationTiming | None, series: str) -> tuple[float, float] | None:
    """The fastest sample and highest third quartile of ``series`` (a key of GENERATION_SERIES,
    or TOTALS: each repetition's whole decode time) in a generation cell's earlier series of warm
    generations (1.7 logs on), as a timed cell's ``warm_before``: what its reported series is
    judged against (attempts_apart); None when it was measured once."""
    earlier = timing.earlier if timing is not None else None
    if not earlier or timing is None:
        return None
    if series == TOTALS:
        return before_window(repetition_totals(e.decode_token.samples_s, timing.repetitions) for e in earlier)
    return before_window(getattr(e, series).samples_s for e in earlier)


def generation_warm(cell: CellRecord, series: str) -> ev.Warm | None:
    """One of a generation cell's warm series (a key of GENERATION_SERIES), or None."""
    timing = generation_timing(cell)
    return getattr(timing, series) if timing is not None else None


@per_run
def generation_flags(run: RunModel) -> dict[str, dict[str, str]]:
    """Per passing generation cell, the flag of each of its warm series that needs a word
    (unstable, or not classified), as ``flag_text`` words a timed cell's."""
    found: dict[str, dict[str, str]] = {}
    for cell in run.cells_with("generation"):
        timing = generation_timing(cell) if cell.status == "pass" else None
        if timing is None:
            continue
        waited, attempts = generation_waited(timing), generation_attempts(timing)
        unread = generation_wait_unread(timing)
        for series in GENERATION_SERIES:
            stability = classify(getattr(timing, series).samples_s, waited)
            judged = CellStability(
                cell.case, stability, attempts, "", attempts_apart(stability, generation_before(timing, series))
            )
            if not judged.decides:
                found.setdefault(cell.case, {})[series] = flag_text(judged)
            elif unread:  # steady samples, but contention was not judged over their loop
                found.setdefault(cell.case, {})[series] = f"not classified: {UNREAD_WAIT}"
            elif series == "decode_token" and (whole := _repetitions_flag(timing, waited)):
                # Steady step by step, but not repetition by repetition: the decode series decides
                # nothing either, as diff, compare and the exports say (series_flag).
                found.setdefault(cell.case, {})[series] = whole
    return found


def _repetitions_flag(timing: ev.GenerationTiming, waited: Waited) -> str:
    """Why the repetitions' whole decode times of a generation cell decide nothing (tokens/s is
    read from them): unstable, at a speed its earlier series did not run at, or too few to
    classify; '' where they are stable."""
    reps = timing.repetitions
    stability = repetitions_stability(timing.decode_token.samples_s, reps, waited)
    apart = attempts_apart(stability, generation_before(timing, TOTALS)) if stability is not None else ""
    if stability is not None and stability.verdict == UNSTABLE:
        return f"{SYMBOL} {FLAG} across the {reps} repetitions' decode times: " + "; ".join(
            c.note for c in stability.reasons
        )
    if apart:  # steady now, at a speed its earlier series of warm generations did not run at
        return f"{SYMBOL} {FLAG} across the {reps} repetitions' decode times: {apart}"
    if stability is not None and stability.verdict == UNCLASSIFIED:
        # Too few repetitions (or all one value): tokens/s is one repetition's steps over the
        # median repetition, and nothing says the repetitions ran at one speed.
        return (
            f"{UNCLASSIFIED_SYMBOL} {UNCLASSIFIED_FLAG} across the {reps} repetitions' decode times: {stability.note}"
        )
    return ""


def repetitions_stability(samples: Sequence[float], repetitions: int | None, waited: Waited = None) -> Stability | None:
    """The classifier's verdict on the repetitions' whole decode times (tokens/s is one
    repetition's steps over their median): a few slow steps a repetition pass the per-step rules,
    yet decide the throughput when they fall in some repetitions only. None where not told."""
    totals = repetition_totals(samples, repetitions) if repetitions else []
    return classify(totals, _pair(waited)) if totals else None


DECODE_FLAGGED = "from the decode series flagged beside it: decides nothing"


@per_run
def throughput_flags(run: RunModel) -> dict[str, str]:
    """Per passing generation cell whose tokens/s decides nothing, why: it is worked out from the
    decode series, which is flagged (generation_flags: its steps, or its repetitions' whole
    decode times, are unstable or not classified)."""
    return {case: DECODE_FLAGGED for case, series in generation_flags(run).items() if "decode_token" in series}


def flag_text(judged: CellStability) -> str:
    """'≋ unstable timing: <each failed rule with its figures>' (and how many series were taken)."""
    s = judged.stability
    if s.verdict == UNCLASSIFIED:
        return f"not classified: {s.note}"
    if judged.unclassified:
        return f"not classified: {judged.unclassified}"
    if judged.decides:
        return f"stable after {judged.attempts} warm series" if judged.attempts > 1 else ""
    after = f" after {judged.attempts} warm series" if judged.attempts > 1 else ""
    host = f" (host: {judged.host})" if judged.host else ""
    return f"{SYMBOL} {FLAG}{after}: " + "; ".join([c.note for c in s.reasons] or [judged.apart]) + host


def is_unstable(flag: str) -> bool:
    """Whether a ``flag_text`` says its series is unstable (not merely too short to classify)."""
    return flag.startswith(SYMBOL)


def series_flag(
    samples: list[float] | tuple[float, ...] | None,
    waited: Waited = None,
    repetitions: int | None = None,
    before: Sequence[float] | None = None,
    totals_before: Sequence[float] | None = None,
    logged: Sequence[str] | None = None,
    unread: bool = False,
) -> str | None:
    """Why a kept warm series decides nothing ('unstable timing: ...', 'timing not classified:
    ...'), or None for a stable one (and for no samples: there is nothing to judge).
    ``waited``: what the process's threads waited for a CPU over its loop and the loop's wall
    time, if recorded. ``repetitions``: of a decode_token series, whose repetitions' whole
    decode times must be stable too (repetitions_stability): else its throughput, the figure a
    generation service is judged by, could move against the per-step median. ``before``: the
    (fastest sample, highest third quartile) of the cell's earlier warm series, where it was measured again
    (attempts_apart); ``totals_before``: the same of the earlier repetitions' whole decode times;
    ``logged``: the rules the log's own classification said the series failed (logged_unstable);
    ``unread``: its loop's CPU wait was not read though the log records it (UNREAD_WAIT)."""
    if not samples:
        return None
    s = classify(samples, _pair(waited))
    if s.verdict == UNSTABLE:
        return f"{FLAG}: " + ", ".join(RULE_WORDS.get(c.name, c.name) for c in s.reasons)
    if s.verdict == UNCLASSIFIED:
        return f"{UNCLASSIFIED_FLAG}: {s.note}"
    if apart := attempts_apart(s, before) or logged_unstable(s, logged):
        return f"{FLAG}: {apart}"
    if why := (UNREAD_WAIT if unread else "") or logged_unclassified(s, logged):  # as cell_stability orders them
        return f"{UNCLASSIFIED_FLAG}: {why}"
    whole = repetitions_stability(samples, repetitions, waited) if repetitions else None
    if whole is not None and whole.verdict == UNSTABLE:
        rules = ", ".join(RULE_WORDS.get(c.name, c.name) for c in whole.reasons)
        return f"{FLAG} across the {repetitions} repetitions' decode times (tokens/s): {rules}"
    if whole is not None and (apart := attempts_apart(whole, totals_before)):
        return f"{FLAG} across the {repetitions} repetitions' decode times (tokens/s): {apart}"
    if whole is not None and whole.verdict == UNCLASSIFIED:
        return f"{UNCLASSIFIED_FLAG} across the {repetitions} repetitions' decode times (tokens/s): {whole.note}"
    return None


def unsteady_kind(flags: Iterable[str | None]) -> str | None:
    """FLAG when a flag among ``flags`` says a series is unstable, else UNCLASSIFIED_FLAG when
    one says a series or the ratio could not be classified (too few samples, a ratio beyond
    range), else None: a ratio with either decides nothing, and is said to for its reason."""
    found = [f for f in flags if f and f.startswith(UNSTEADY)]
    if any(f.startswith(FLAG) for f in found):
        return FLAG
    return UNCLASSIFIED_FLAG if found else None


def undecided_words(
    unstable: int, unclassified: int, cells: bool = True, noun: tuple[str, str] = ("cell", "cells")
) -> str:
    """'2 cells with unstable timing and 1 with timing not classified' ('2 with ...' without
    ``cells``; ``noun``: the singular and plural named instead of cells), '' for none."""
    parts: list[str] = []
    for count, what in ((unstable, FLAG), (unclassified, UNCLASSIFIED_FLAG)):
        if count:
            named = f" {noun[count != 1]}" if cells and not parts else ""
            parts.append(f"{count}{named} with {what}")
    return " and ".join(parts)


def undecided_why(unstable: int, undecided: int) -> str:
    """Why ``undecided`` series decide nothing, ``unstable`` of them unstable and the rest not
    classified (too few samples, or every sample one value), in words."""
    if unstable == undecided:
        return "unstable"
    return "unstable or not classified" if unstable else "not classified"


def stability_word(
    samples: list[float] | tuple[float, ...] | None,
    waited: Waited = None,
    before: Sequence[float] | None = None,
    logged: Sequence[str] | None = None,
    repetitions: int | None = None,
    totals_before: Sequence[float] | None = None,
    unread: bool = False,
) -> str | None:
    """series_flag's verdict in one word, as the exports give it: 'stable', 'unstable' or
    'unclassified'; None with no samples. Only a stable series' median decides anything (the
    exports' readers filter on it), so a word says what diff and compare say of the series: its
    attempts, its own log's verdict and a decode series' repetitions' decode times included."""
    if not samples:
        return None
    flag = series_flag(samples, waited, repetitions, before, totals_before, logged, unread)
    if flag is None:
        return STABLE
    return UNCLASSIFIED if flag.startswith(UNCLASSIFIED_FLAG) else UNSTABLE


def _pair(waited: Waited) -> tuple[float, float] | None:
    return (float(waited[0]), float(waited[1])) if waited is not None and len(waited) == 2 else None


def side_median(medians: Sequence[float]) -> float:
    """A side's warm figure from its runs' warm medians: their geometric mean (a run's own median
    with one run), the figure the replicate ratio and its interval are built on
    (judge/intervals.py), so a ratio shown is the ratio of the two figures shown beside it."""
    return statistics.geometric_mean(medians) if len(medians) > 1 else medians[0]


def runs_disagree(samples: Sequence[Sequence[float]]) -> str | None:
    """With replicates: the runs' warm medians spread over more than a fifth of their middle
    (collector.stability.SPREAD_MAX, the within-run rule for the middle half) is a host or a
    process that changed between runs, and the side's timing decides nothing; None otherwise."""
    medians = [statistics.median(series) for series in samples if series]
    if len(medians) < 2:
        return None
    middle = statistics.median(medians)
    if middle <= 0 or (max(medians) - min(medians)) / middle <= SPREAD_MAX:
        return None
    return f"the runs disagree, their medians {max(medians) / min(medians):.2f}x apart"


def replicate_flags(
    role: str,
    run_ids: list[str],
    samples: list[list[float]],
    waited: Sequence[Waited] = (),
    repetitions: Sequence[int | None] = (),
    before: Sequence[Sequence[float] | None] = (),
    totals: Sequence[Sequence[float] | None] = (),
    logged: Sequence[Sequence[str] | None] = (),
) -> list[str]:
    """The stability flag of each further replicate's warm series, named by side and run (the
    first run's own flag is its cell's), and the side's when its runs disagree (runs_disagree).
    ``waited``: each run's CPU wait over its loop, in the order of ``samples``, where recorded;
    ``repetitions``: of a decode_token series, each run's repetitions; ``before``: each run's
    earlier attempts' range (series_flag), and ``totals`` of their repetitions' decode times;
    ``logged``: each run's own classification's failed rules, where it called the series unstable."""
    found = []
    waits = list(waited) + [None] * (len(samples) - len(waited))
    reps = list(repetitions) + [None] * (len(samples) - len(repetitions))
    befores = list(before) + [None] * (len(samples) - len(before))
    whole = list(totals) + [None] * (len(samples) - len(totals))
    said = list(logged) + [None] * (len(samples) - len(logged))
    for run_id, series, wait, rep, earlier, sums, own in list(zip(run_ids, samples, waits, reps, befores, whole, said))[
        1:
    ]:
        flag = series_flag(series, wait, rep, earlier, sums, own)
        if flag:
            found.append(f"{flag} ({role} replicate {run_id})")
    if disagree := runs_disagree(samples):
        found.append(f"{FLAG}: {disagree} ({role}, {len(samples)} runs)")
    return found
