"""The report's charts as plain geometry, drawn as inline SVG by templates/_charts.html.j2.

Each chart is computed here once (a report's, a comparison's, the site's trends) as small frozen
dataclasses of numbers and strings: coordinates already scaled into a fixed viewBox, ticks with
their labels, series of points (with an interval where there is one), bars, lines, reference
lines and legend entries. The template only draws them, with autoescape on, so no markup is made
here and every label from a log reaches the page as text. Colours are named (``tone``) and given
by the page's stylesheet, so dark mode and print follow the page. The page needs no script
to show a chart, and each point carries its exact values as its ``title`` (what hover shows).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any, Mapping

from collector.stability import quantile
from reportgen.judge.allowance import Allowance
from reportgen.judge.ratio_words import estimate_text, interval_text
from reportgen.model.runmodel import CellRecord
from reportgen.render.labels import human
from reportgen.render.sections.common import beside, fmt_time

_COLD, _WARM = attrgetter("cold"), attrgetter("warm")

# The width of the viewBox every chart is drawn in (its height follows what sits under the
# plot, or a comparison's list of cells); the page scales it to the width of its box.
WIDTH = 640

# The largest magnitude drawn (and the smallest above zero on a log axis): a value that
# validates but lies beyond cannot be placed on an axis without overflow, so it is left out of
# the chart and named under it as out of range (the tables show the number).
DRAWABLE = 1e300

# The dots of one warm-latency chart: every sample of a 30-call series for up to 100 cells; a
# cell never gets fewer than MIN_SAMPLES_DRAWN (about 115 bytes of page each).
SAMPLE_BUDGET = 3000
# The warm-latency chart's axis is logarithmic when its slowest figure is this many times its fastest.
LOG_SPAN = 30.0
MIN_SAMPLES_DRAWN = 9


@dataclass(frozen=True)
class Tick:
    at: float  # the coordinate along its axis (x on the x axis, y on the y axis)
    label: str
    full: str = ""  # the whole text where ``label`` is shortened


@dataclass(frozen=True)
class Axis:
    title: str
    ticks: tuple[Tick, ...]
    log: bool = False
    slanted: bool = False  # category labels under the x axis, drawn at an angle to fit


@dataclass(frozen=True)
class Point:
    x: float
    y: float
    title: str  # the exact values, shown on hover and read out by a screen reader
    value: float | None = None  # the number drawn (None: not finite, drawn where the caption says)
    low: float | None = None  # the interval's ends along the value axis, as coordinates
    high: float | None = None
    hollow: bool = False


@dataclass(frozen=True)
class Bar:
    x: float  # left edge
    y: float  # top edge
    width: float
    height: float
    title: str
    value: float | None = None
    tone: str = ""  # where set, this bar's colour instead of its series' (a bar beyond its allowance)


@dataclass(frozen=True)
class Series:
    name: str
    tone: str  # the colour, by name: the page's stylesheet gives class tone-NAME its colour
    mark: str  # how points are drawn: "dot", "speck" (small, see-through), "ring", "dash" (a short bar across), "none"
    points: tuple[Point, ...] = ()
    bars: tuple[Bar, ...] = ()
    lines: tuple[tuple[tuple[float, float], ...], ...] = ()  # polylines, broken where a value is missing
    bands: tuple[tuple[tuple[float, float], ...], ...] = ()  # filled polygons (an interquartile band)
    dashed: bool = False
    interval: str = "y"  # the axis along which a point's low/high lie
    legend: bool = True


@dataclass(frozen=True)
class Rule:
    """A reference line across the plot (the allowance, a ratio of 1), with an optional label."""

    x1: float
    y1: float
    x2: float
    y2: float
    label: str = ""


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    left: float  # the plot box inside the viewBox
    top: float
    right: float
    bottom: float
    x: Axis
    y: Axis
    series: tuple[Series, ...]
    rules: tuple[Rule, ...] = ()

    @property
    def legend(self) -> tuple[Series, ...]:
        return tuple(s for s in self.series if s.legend and s.name)


@dataclass(frozen=True)
class Figure:
    id: str
    title: str
    caption: str
    chart: Chart
    out_of_range: tuple[str, ...] = ()
    # Left out of a log-axis chart for a zero: a legal value, but a log axis has no place for it.
    zero_on_log: tuple[str, ...] = ()


def _drawable(value: float | None, log_axis: bool = False) -> bool:
    if value is None:
        return True
    if not math.isfinite(value) or abs(value) > DRAWABLE:
        return False
    return not (log_axis and 0 < value < 1 / DRAWABLE)


def _num(value: float, digits: int = 4) -> str:
    """A number as a label: significant digits, no exponent sign clutter."""
    return _tidy(f"{value:.{digits}g}")


def _tidy(number: str) -> str:
    return number.replace("e+", "e").replace("e0", "e").replace("e-0", "e-")


@dataclass(frozen=True)
class Scale:
    """Data values to coordinates along one axis: ``lo``..``hi`` (in decades on a log axis)
    onto ``start``..``end``."""

    lo: float
    hi: float
    start: float
    end: float
    log: bool = False

    def __post_init__(self) -> None:
        # Every scale, however made, spans a range it can divide by (see _extent).
        lo, hi = _extent(self.lo, self.hi)
        object.__setattr__(self, "lo", lo)
        object.__setattr__(self, "hi", hi)

    def __call__(self, value: float) -> float:
        return self._at(math.log10(value) if self.log else value)

    def _at(self, t: float) -> float:
        """The coordinate of ``t`` along the axis (in decades on a log axis)."""
        return round(self.start + (t - self.lo) / (self.hi - self.lo) * (self.end - self.start), 1)

    def ticks(self) -> tuple[Tick, ...]:
        if self.log:
            low, high = math.ceil(self.lo - 1e-9), math.floor(self.hi + 1e-9)
            step = max(1, math.ceil((high - low + 1) / 10))  # at most about ten decades labelled
            # Counted down from the top decade, so the highest label is never below the data.
            return tuple(Tick(self._at(n), _decade(n)) for n in reversed(range(high, low - 1, -step)))
        size = _step(self.hi - self.lo)
        first = math.ceil(self.lo / size - 1e-9)
        count = math.floor(self.hi / size + 1e-9) - first
        return tuple(Tick(self((first + k) * size), _num((first + k) * size)) for k in range(count + 1))


def _decade(n: int) -> str:
    return str(10**n) if n in (0, 1) else f"1e{n}"


def _step(span: float, count: int = 5) -> float:
    """A round tick step that cuts ``span`` into about ``count`` parts."""
    raw = span / count
    magnitude = 10.0 ** math.floor(math.log10(raw))
    return next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw * (1 - 1e-9))


def _extent(lo: float, hi: float, to_zero: bool = False) -> tuple[float, float]:
    """``lo``..``hi``, or a range around them where their span is zero, subnormal (5e-324
    against 0, where log10 of a step is log10(0)) or lost to float precision (steps beyond
    2**53): half their size either way, or 1 around a value of about zero (from zero up, with
    ``to_zero``). Every value stays inside and every coordinate finite."""
    span = hi - lo
    if span >= 1 / DRAWABLE and span > max(abs(lo), abs(hi)) * 1e-12:
        return lo, hi
    mid = lo / 2 + hi / 2
    pad = abs(mid) * 0.5 if abs(mid) >= 1 / DRAWABLE else 1.0
    if to_zero and abs(mid) < 1 / DRAWABLE:
        return min(lo, 0.0), max(hi, 0.0) + pad
    return min(lo, mid - pad), max(hi, mid + pad)


def linear(values: Sequence[float], start: float, end: float, to_zero: bool = False) -> Scale:
    """A linear scale over ``values`` widened to round ticks; one value or all equal (or too
    close to tell apart) still get a range around them, and no value gives 0 to 1."""
    lo, hi = (min(values), max(values)) if values else (0.0, 1.0)
    if to_zero:
        lo, hi = min(lo, 0.0), max(hi, 0.0)
    lo, hi = _extent(lo, hi, to_zero)
    step = _step(hi - lo)
    return Scale(math.floor(lo / step) * step, math.ceil(hi / step) * step, start, end)


def logarithmic(values: Sequence[float], start: float, end: float, include: Sequence[float] = ()) -> Scale:
    """A log scale over the positive ``values`` (and ``include``), whole decades at both ends."""
    positive = [v for v in [*values, *include] if v > 0] or [1.0]
    lo, hi = math.floor(math.log10(min(positive))), math.ceil(math.log10(max(positive)))
    if hi == lo:
        hi += 1
    return Scale(lo, hi, start, end, log=True)


@dataclass(frozen=True)
class Categories:
    """Evenly spaced places for named items along one axis."""

    names: tuple[str, ...]
    start: float
    end: float

    @property
    def band(self) -> float:
        return (self.end - self.start) / max(1, len(self.names))

    def __call__(self, index: int) -> float:
        return round(self.start + (index + 0.5) * self.band, 1)

    def ticks(self, most: int) -> tuple[Tick, ...]:
        """Every label where they fit, else every n-th (each point's title still names its cell)."""
        labels = _short_labels(list(self.names))
        step = max(1, math.ceil(len(self.names) / most))
        return tuple(
            Tick(self(i), label, self.names[i] if label != self.names[i] else "")
            for i, label in enumerate(labels)
            if i % step == 0
        )


# The plot box: room left for the value labels and below for the x axis's labels and title.
_LEFT, _RIGHT, _TOP, _PLOT_HEIGHT = 64.0, WIDTH - 16.0, 24.0, 240.0
# A slanted label's reach per character, down and to the left (12 px text at 45 degrees).
_SLANT_REACH = 4.6


@dataclass(frozen=True)
class Box:
    left: float
    top: float
    right: float
    bottom: float
    height: int  # of the whole viewBox


def _box(names: Sequence[str] = ()) -> Box:
    """The plot box of a chart; ``names``: the cells or runs along a slanted x axis, whose
    longest short label sets the room under the plot (and left of it, for the first one)."""
    if not names:
        bottom = _TOP + _PLOT_HEIGHT
        return Box(_LEFT, _TOP, _RIGHT, bottom, int(bottom + 48))
    longest = max(len(label) for label in _short_labels(list(names)))
    reach = _SLANT_REACH * longest
    left = round(max(_LEFT, min(_SLANT_REACH * len(_short(names[0])) - 8, WIDTH / 3)), 1)
    bottom = _TOP + _PLOT_HEIGHT
    return Box(left, _TOP, _RIGHT, bottom, int(bottom + 16 + reach + 30))


def _category_axis(title: str, cats: Categories) -> Axis:
    return Axis(title, cats.ticks(most=int((cats.end - cats.start) // 14)), slanted=True)


def _lines(xys: Sequence[tuple[float, float | None]]) -> tuple[tuple[tuple[float, float], ...], ...]:
    """Polylines through the points, broken where a value is missing (a gap, never a zero)."""
    runs: list[list[tuple[float, float]]] = [[]]
    for x, y in xys:
        if y is None:
            runs.append([])
        else:
            runs[-1].append((x, y))
    return tuple(tuple(run) for run in runs if len(run) > 1)


def _chart(box: Box, x: Axis, y: Axis, series: list[Series], rules: tuple[Rule, ...] = ()) -> Chart:
    return Chart(WIDTH, box.height, box.left, box.top, box.right, box.bottom, x, y, tuple(series), rules)


def warm_latency(cells: list[CellRecord], flags: Mapping[str, str] | None = None) -> Figure | None:
    timed = [(c, warm) for c, warm in zip(cells, map(_WARM, cells)) if warm and warm.samples_s]
    if not timed:
        return None
    flagged = flags or {}
    box = _box([c.case for c, _ in timed])
    cats = Categories(tuple(c.case for c, _ in timed), box.left, box.right)
    quartiles = [_quartiles_ms(warm.samples_s) for _, warm in timed]
    values = [s * 1e3 for _, w in timed for s in w.samples_s] + [v for q in quartiles for v in q]
    # Cells whose times lie decades apart (eager calls of a second beside compiled ones of a
    # millisecond) would sit flat on a linear axis: such a chart is drawn on a log axis.
    log = min(values) > 0 and max(values) / min(values) >= LOG_SPAN
    ys = logarithmic(values, box.bottom, box.top) if log else linear(values, box.bottom, box.top, True)
    series = []
    # A page stays light whatever a plan's --warm: beyond SAMPLE_BUDGET dots a cell's series is
    # drawn at per_cell ranks (its median and quartiles are always from every sample).
    per_cell = max(MIN_SAMPLES_DRAWN, SAMPLE_BUDGET // len(timed))
    thinned = any(len(w.samples_s) > per_cell for _, w in timed)
    # Each cell has its own place on the x axis: its samples and its median with quartile
    # whiskers drawn over one another there.
    for mode in ("eager", "compiled"):
        group = [(i, c, w, q) for i, ((c, w), q) in enumerate(zip(timed, quartiles)) if c.planned.mode == mode]
        if not group:
            continue
        samples = tuple(
            Point(cats(i), ys(s * 1e3), f"{c.case}: {fmt_time(s)}", s * 1e3)
            for i, c, w, _ in group
            for s in _by_rank(w.samples_s, per_cell)
        )
        medians = tuple(
            Point(
                cats(i),
                ys(q[1]),
                f"{c.case}: median {fmt_time(q[1] / 1e3)}, quartiles {fmt_time(q[0] / 1e3)} to {fmt_time(q[2] / 1e3)}"
                + (f"; {flagged[c.case]}: decides nothing" if c.case in flagged else ""),
                q[1],
                low=ys(q[0]),
                high=ys(q[2]),
                hollow=c.case in flagged,
            )
            for i, c, _, q in group
        )
        series.append(Series(f"{mode} samples", mode, "speck", samples))
        series.append(Series(f"{mode} median and quartiles", mode, "dash", medians))
    y_axis = Axis("ms per call (log scale)" if log else "ms per call", ys.ticks(), log=log)
    chart = _chart(box, _category_axis("cell (full key on hover)", cats), y_axis, series)
    drawn = (
        f"Up to {per_cell} warm samples per cell (dots; a longer series at {per_cell} evenly spaced ranks, "
        "its fastest and slowest among them)"
        if thinned
        else "Every warm sample per cell (dots)"
    )
    # Whether the device was synchronised is each timing line's own fact: the timing section
    # states it as recorded, so the caption does not.
    caption = f"{drawn}, with its median (bar) and quartiles (whiskers) of every sample."
    if any(c.case in flagged for c, _ in timed):
        caption += FLAGGED_TIMING
    return Figure("fig-warm-latency", "Warm latency per cell (ms)", caption, chart)


# Said under a run's timing chart where a cell's figure is not a performance result on its own.
FLAGGED_TIMING = " A median drawn open (on the warm latency chart) or a warm bar whose hover says so decides nothing: its warm series is unstable or could not be classified, or the cell had CPU fallback or ran eager after its recompile limit (hover says which)."


def _by_rank(samples: list[float], count: int) -> list[float]:
    """The samples, or ``count`` of them at evenly spaced ranks (the fastest and the slowest
    included) when there are more."""
    if len(samples) <= count:
        return samples
    ordered = sorted(samples)
    return [ordered[round(k * (len(ordered) - 1) / (count - 1))] for k in range(count)]


def _quartiles_ms(samples: list[float]) -> tuple[float, float, float]:
    """First quartile, median and third quartile in ms, as the collector computes its IQR."""
    ordered = sorted(s * 1e3 for s in samples)
    if len(ordered) < 2:
        return ordered[0], ordered[0], ordered[0]
    return quantile(ordered, 1, 4), quantile(ordered, 2, 4), quantile(ordered, 3, 4)


def _bars(
    cats: Categories, scale: Scale, rows: Sequence[tuple[int, float, str, str]], slot: int = 0, slots: int = 1
) -> tuple[Bar, ...]:
    """Bars rising from the foot of the plot (on a log axis too: its base is no value), one per
    (place, value, title, tone); ``slot`` of ``slots`` side by side in each place."""
    width = cats.band * 0.8 / slots
    foot = scale.start
    bars = []
    for i, value, title, tone in rows:
        top = scale(value) if value > 0 or not scale.log else foot
        x = cats(i) - cats.band * 0.4 + slot * width
        bars.append(Bar(round(x, 1), min(top, foot), round(width, 1), round(abs(foot - top), 1), title, value, tone))
    return tuple(bars)


def cold_vs_warm(cells: list[CellRecord], flags: Mapping[str, str] | None = None) -> Figure | None:
    both = [
        (c, cold, warm) for c, cold, warm in zip(cells, map(_COLD, cells), map(_WARM, cells)) if cold and warm
    ]  # events looked up once
    if not both:
        return None
    zero = [c.case for c, cold, warm in both if 0 in (cold.seconds, warm.median_s)]
    out_of_range = [
        c.case
        for c, cold, warm in both
        if c.case not in zero
        and not all(v is not None and v > 0 and _drawable(v, log_axis=True) for v in (cold.seconds, warm.median_s))
    ]
    drawn = [(c, cold, warm) for c, cold, warm in both if c.case not in out_of_range and c.case not in zero]
    box = _box([c.case for c, _, _ in drawn])
    cats = Categories(tuple(c.case for c, _, _ in drawn), box.left, box.right)
    ys = logarithmic([v for _, cold, warm in drawn for v in (cold.seconds, warm.median_s)], box.bottom, box.top)
    cold_rows = [
        (i, cold.seconds, f"{c.case}: cold {fmt_time(cold.seconds)}; {human(cold.cache_condition)}", "")
        for i, (c, cold, _) in enumerate(drawn)
    ]
    flagged = flags or {}
    warm_rows = [
        (
            i,
            w.median_s,
            f"{c.case}: warm median {fmt_time(w.median_s)}"
            + (f"; {flagged[c.case]}: decides nothing" if c.case in flagged else ""),
            "",
        )
        for i, (c, _, w) in enumerate(drawn)
    ]
    series = [
        Series("cold first call", "cold", "none", bars=_bars(cats, ys, cold_rows, 0, 2)),
        Series("warm median", "warm", "none", bars=_bars(cats, ys, warm_rows, 1, 2)),
    ]
    chart = _chart(box, _category_axis("cell (full key on hover)", cats), Axis("seconds", ys.ticks(), log=True), series)
    return Figure(
        "fig-cold-warm",
        "Cold first call vs warm median (s, log scale)",
        "Cold: the first call with the cache condition stated in the table. Warm: median of the declared repetitions."
        + (FLAGGED_TIMING if any(c.case in flagged for c, _, _ in drawn) else ""),
        chart,
        tuple(out_of_range),
        tuple(zero),
    )


def _short(case: str, limit: int = 28) -> str:
    """A short axis label; the full case key is in the label's title."""
    return case if len(case) <= limit else case[: limit // 2 - 1] + "…" + case[-(limit // 2) :]


def _short_labels(cases: list[str]) -> list[str]:
    """Short, still unique axis labels (full keys where shortening would merge two cells)."""
    short = [_short(c) for c in cases]
    seen: dict[str, set[str]] = {}
    for label, case in zip(short, cases):
        seen.setdefault(label, set()).add(case)
    return [label if len(seen[label]) == 1 else case for label, case in zip(short, cases)]


# Where a non-finite difference is drawn on the error chart (the caption says so).
NONFINITE_AT = 1e6


def error_vs_allowance(cells: list[CellRecord], allowance: Mapping[str, Allowance]) -> Figure | None:
    """``allowance``: per compared cell, the judge's largest difference over its allowance."""
    rows, out_of_range = [], []
    for c in cells:
        found = allowance.get(c.case)
        if found is None:
            continue
        drawn = NONFINITE_AT if found.infinite else found.ratio
        if _drawable(drawn, log_axis=True):
            rows.append((c.case, drawn, c.status, found.what, found.infinite))
        else:
            out_of_range.append(c.case)
    if not rows and not out_of_range:
        return None
    box = _box([r[0] for r in rows])
    cats = Categories(tuple(r[0] for r in rows), box.left, box.right)
    # A decade of room under the smallest bar and over the largest (and the allowance, 1).
    ys = logarithmic([r[1] for r in rows], box.bottom, box.top, include=(1.0,))
    ys = Scale(ys.lo - 1, ys.hi + 1, box.bottom, box.top, log=True)
    titles = [
        f"{case}: {status}; largest in {what}; "
        + (
            f"{infinite} (drawn at {_num(NONFINITE_AT)})"
            if infinite
            else f"{_tidy(beside(value, 1.0, 3)[0])} × allowance"
        )
        for case, value, status, what, infinite in rows
    ]
    bars = _bars(
        cats,
        ys,
        [(i, r[1], title, "over" if r[1] > 1 else "within") for i, (r, title) in enumerate(zip(rows, titles))],
    )
    series = [Series("largest |diff| / allowance", "within", "none", bars=bars, legend=False)]
    rule = Rule(box.left, ys(1.0), box.right, ys(1.0), "allowance")
    caption = (
        "Above 1 (red): outside the declared tolerance in that quantity. For training cells the quantity is the worst of the loss, "
        "every gradient and every updated parameter, each by its own tolerance or declared rule. A zero difference has no bar on the log scale; a non-finite one, or any difference where the allowance is zero, is drawn at 1e6."
    )
    chart = _chart(
        box,
        _category_axis("cell (full key on hover)", cats),
        Axis("largest |diff| / allowance", ys.ticks(), log=True),
        series,
        (rule,),
    )
    return Figure(
        "fig-error-allowance",
        "Largest error over its allowance, in the quantity that judged each cell",
        caption,
        chart,
        tuple(out_of_range),
    )


# Eight distinct colours (colour-blind-safe first), as CSS classes tone-0 .. tone-7: one per
# shape on the loss chart, one per cell on the trend charts. Modes are told apart by the dash.
TONES = 8


def _tone(n: int) -> str:
    return str(n % TONES)


def loss_curves(cells: list[CellRecord]) -> Figure | None:
    trained = [c for c in cells if c.trained and c.train_steps]
    if not trained:
        return None
    out_of_range: list[str] = []

    def values(c: CellRecord, got: list[float | None], label: str) -> list[float | None]:
        bad = [s.step for s, v in zip(c.train_steps, got) if not _drawable(v)]
        if bad:
            out_of_range.append(f"{label} at step {', '.join(map(str, bad))}")
        return [v if _drawable(v) else None for v in got]

    # (name, tone, mark, dashed, steps, values): references first per shape, as plotted.
    plotted: list[tuple[str, str, str, bool, list[int], list[float | None]]] = []
    tones: dict[str, str] = {}
    for c in trained:
        shape = c.case.rsplit("-", 1)[0] if not c.planned.repeat_of else c.case
        steps = [s.step for s in c.train_steps]
        if shape not in tones:
            tones[shape] = _tone(len(tones))
            ref = values(c, [s.reference_loss for s in c.train_steps], f"{shape} reference")
            plotted.append((f"{shape} reference", tones[shape], "ring", False, steps, ref))
        got = values(c, [s.loss for s in c.train_steps], c.case)
        plotted.append((f"{shape} {c.planned.mode}", tones[shape], "dot", c.planned.mode == "compiled", steps, got))
    box = _box()
    all_steps = [s for p in plotted for s in p[4]]
    first, last = min(all_steps), max(all_steps)
    xs: Callable[[int], float]
    if last - first <= 20:  # a place and a tick per step while they fit
        # Counted from the first step in whole numbers: steps near 2**63 are distinct ints but
        # one and the same float.
        places = Scale(-0.5, last - first + 0.5, box.left, box.right)
        xs = lambda step: places(step - first)  # noqa: E731
        x_ticks = tuple(Tick(xs(s), str(s)) for s in range(first, last + 1))
    else:
        xs = linear(all_steps, box.left, box.right)
        x_ticks = xs.ticks()
    ys = linear([v for p in plotted for v in p[5] if v is not None], box.bottom, box.top)
    series = []
    for name, tone, mark, dashed, steps, got in plotted:
        points = tuple(
            Point(xs(s), ys(v), f"{name}: step {s}, loss {_num(v, 6)}", v) for s, v in zip(steps, got) if v is not None
        )
        lines = () if mark == "ring" else _lines([(xs(s), None if v is None else ys(v)) for s, v in zip(steps, got)])
        series.append(Series(name, tone, mark, points, lines=lines, dashed=dashed))
    chart = _chart(box, Axis("step", x_ticks), Axis("loss", ys.ticks()), series)
    return Figure(
        "fig-loss-curves",
        "Training loss per step: reference, eager, compiled",
        "Loss at each step from identical weights, inputs and seeds; one colour per shape, solid eager and dashed compiled, open circles the CPU reference.",
        chart,
        tuple(out_of_range),
    )


def correctness_figures(cells: list[CellRecord], allowance: Mapping[str, Allowance]) -> list[Figure]:
    return [f for f in (loss_curves(cells), error_vs_allowance(cells, allowance)) if f is not None]


def timing_figures(cells: list[CellRecord], flags: Mapping[str, str] | None = None) -> list[Figure]:
    """Only cells whose correctness passed are timed, so only they are drawn. ``flags``: case ->
    why its warm figure decides nothing (an unstable series, CPU fallback, ...), said on hover."""
    passed = [c for c in cells if c.status == "pass"]
    return [f for f in (warm_latency(passed, flags), cold_vs_warm(passed, flags)) if f is not None]


def _caveats_per_case(
    history: Any, cases: list[str], order: list[str], column: str = "caveats"
) -> dict[str, list[str]]:
    """Per case and run, why its timing (``column``: the warm point's caveats, or the cold
    call's or compile's) is not a performance result on its own ('' when none)."""
    found: dict[tuple[str, str], str] = {}
    if column in history:
        for run_id, case, text in history[history["case"].isin(cases)][["run_id", "case", column]].itertuples(
            index=False
        ):
            if isinstance(text, str) and text:
                found[(case, run_id)] = text
    return {case: [found.get((case, run), "") for run in order] for case in cases}


def _split(xys: list[tuple[float, float | None]], starts: Collection[int]) -> list[tuple[float, float | None]]:
    """``xys`` with a gap before each index in ``starts``: a run whose timings are not
    like-for-like with the run before it begins a new line."""
    out: list[tuple[float, float | None]] = []
    for i, (x, y) in enumerate(xys):
        if i in starts:
            out.append((x, None))
        out.append((x, y))
    return out


def _unjoined(reason: str) -> str:
    return f"; not joined to the run before it ({reason})" if reason else ""


def _condition_breaks(
    reasons: Sequence[str], conditions: Sequence[str], values: Sequence[float | None], what: str
) -> list[str]:
    """``reasons`` (per run: why it is not joined to the run before it, "" for none), with a
    change of cache condition against the previous run that has a value added as one, in words
    after ``what``."""
    out = list(reasons)
    last = ""
    for i, (condition, value) in enumerate(zip(conditions, values)):
        if value is None:
            continue
        if last and condition and condition != last and not out[i]:
            out[i] = f"{what}{human(last)}, then {human(condition)}"
        last = condition or last
    return out


def _trend_lines(
    xs: Categories,
    runs: list[str],
    values: dict[str, list[float | None]],
    scale: Callable[[float], float],
    unlike: Mapping[str, Sequence[str]],
    conditions: Mapping[str, Sequence[str]] | None = None,
    caveats: Mapping[str, Sequence[str]] | None = None,
) -> list[Series]:
    """One line per cell over the runs (values in seconds), a gap where the cell has no value and
    before a run whose ``unlike`` reason (per cell, per run, "" for none) says it is not like-for-like;
    ``conditions`` (per cell, per run: its cache condition, "" where none) are named on hover, and
    a point with ``caveats`` (per cell, per run: why it is not a performance result on its own)
    is drawn hollow and says why on hover."""
    series = []
    for n, (case, got) in enumerate(values.items()):
        reasons = unlike[case]
        named = (conditions or {}).get(case) or [""] * len(got)
        flags = (caveats or {}).get(case) or [""] * len(got)
        points = tuple(
            Point(
                xs(i),
                scale(v),
                f"{case}: {runs[i]}, {fmt_time(v)}"
                + (f" ({human(named[i])})" if named[i] else "")
                + (f"; {flags[i]}" if flags[i] else "")
                + _unjoined(reasons[i]),
                v,
                hollow=bool(flags[i]),
            )
            for i, v in enumerate(got)
            if v is not None
        )
        starts = {i for i, reason in enumerate(reasons) if reason}
        lines = _lines(_split([(xs(i), None if v is None else scale(v)) for i, v in enumerate(got)], starts))
        series.append(Series(_short(case), _tone(n), "dot", points, lines=lines))
    return series


# Said under a trend chart with a point that is not a performance result on its own.
HOLLOW = " A hollow marker is not a performance result on its own: that run is a synthetic fixture, its performance acceptance was stopped, the cell had CPU fallback or hit its recompile limit, or (warm points) its log did not record the loop's CPU wait, so contention was not judged (hover says which)."
# Said under a trend chart whose lines break before a run not like-for-like with the run before it.
UNJOINED = " A line is not joined to a run whose timings are not like-for-like with the run before it (a changed timing scope, repetitions or thread count, other weights, the cell's other inputs, or for a cold call or compile another cache condition: hover says which)."
UNJOINED_CACHE = (
    " A line is not joined to a run whose cache condition differs from the run before it (hover says which)."
)
# A run whose started_at is not a time the history frame can hold (reportgen.publish.frame): last.
UNKNOWN_START = "start time unreadable"


def trend_figures(
    history: Any,
    cases: list[str],
    prefix: str,
    geomeans: dict[str, tuple[float, float | None, float | None, str, str]] | None = None,
    unlike: Mapping[str, str] | None = None,
    unlike_cells: Mapping[tuple[str, str], str] | None = None,
) -> list[Figure]:
    """Charts over the runs of one workload on one target, oldest first, from a history frame.

    ``history`` is ``reportgen.publish.frame.history_frame`` of those runs. Timings exist only
    for cells that passed, so a run where a cell did not pass leaves a gap, never a zero.
    ``geomeans`` maps a run id to its geometric mean against the previous run (ratio, interval
    low and high, what it covers in words: "4 cells", and what changed besides the results, in
    words, or ""), as the run-to-run diff judged it: a point's title says what changed before its ratio.
    ``unlike`` maps a run id to why its timings are not like-for-like with the previous run's
    (a changed timing scope, repetitions, threads: the diff's ``timing_unlike``): the timing
    lines are not joined across it, and its points say why. ``unlike_cells`` does the same for
    one cell of a run: (run id, case) -> why (other inputs than in the previous run).
    """
    if history.empty:
        return []
    runs = history[["run_id", "started_at"]].drop_duplicates().sort_values(["started_at", "run_id"])
    labels = {
        r.run_id: f"{r.started_at:%Y-%m-%d %H:%M:%S}" if r.started_at == r.started_at else UNKNOWN_START
        for r in runs.itertuples()
    }
    order = list(labels)
    names = [labels[r] for r in order]
    run_reasons = [(unlike or {}).get(r, "") for r in order]
    reasons_of = {
        case: [reason or (unlike_cells or {}).get((r, case), "") for r, reason in zip(order, run_reasons)]
        for case in cases
    }
    unjoined = any(reason for reasons in reasons_of.values() for reason in reasons)
    box = _box(names)
    xs = Categories(tuple(names), box.left, box.right)
    x_axis = _category_axis("run (started, UTC)", xs)
    figures: list[Figure] = []

    def per_case(column: str) -> dict[str, list[float | None]]:
        table = history[history["case"].isin(cases)].pivot_table(
            index="run_id", columns="case", values=column, aggfunc="first"
        )
        return {
            case: [
                None
                if run not in table.index or case not in table or table.at[run, case] != table.at[run, case]
                else float(table.at[run, case])
                for run in order
            ]
            for case in cases
        }

    def ms(values: list[float | None]) -> list[float | None]:
        return [None if v is None or not _drawable(v * 1e3) else v * 1e3 for v in values]

    warm = {case: ms(v) for case, v in per_case("warm_median_s").items()}
    q1 = {case: ms(v) for case, v in per_case("warm_q1_s").items()}
    q3 = {case: ms(v) for case, v in per_case("warm_q3_s").items()}
    caveats = _caveats_per_case(history, cases, order)
    if any(v is not None for values in warm.values() for v in values):
        every = [v for d in (warm, q1, q3) for vs in d.values() for v in vs if v is not None]
        ys = linear(every, box.bottom, box.top, to_zero=True)
        series = []
        for n, case in enumerate(cases):
            reasons = reasons_of[case]
            starts = {i for i, reason in enumerate(reasons) if reason}
            # The interquartile band, in pieces where both quartiles are known run after run.
            both = [(xs(i), lo, hi) for i, (lo, hi) in enumerate(zip(q1[case], q3[case]))]
            pieces: list[list[tuple[float, float, float]]] = [[]]
            for i, (x, lo, hi) in enumerate(both):
                if i in starts:
                    pieces.append([])
                if lo is None or hi is None:
                    pieces.append([])
                else:
                    pieces[-1].append((x, ys(lo), ys(hi)))
            bands = tuple(
                tuple((x, hi) for x, _, hi in piece) + tuple((x, lo) for x, lo, _ in reversed(piece))
                for piece in pieces
                if len(piece) > 1
            )
            flags = caveats[case]
            points = tuple(
                Point(
                    xs(i),
                    ys(v),
                    f"{case}: {names[i]}, median {fmt_time(v / 1e3)}"
                    + (
                        f", quartiles {fmt_time(lo / 1e3)} to {fmt_time(hi / 1e3)}"
                        if lo is not None and hi is not None
                        else ""
                    )
                    + (f"; {flags[i]}" if flags[i] else "")
                    + _unjoined(reasons[i]),
                    v,
                    hollow=bool(flags[i]),
                )
                for i, (v, lo, hi) in enumerate(zip(warm[case], q1[case], q3[case]))
                if v is not None
            )
            lines = _lines(_split([(xs(i), None if v is None else ys(v)) for i, v in enumerate(warm[case])], starts))
            series.append(Series(_short(case), _tone(n), "dot", points, lines=lines, bands=bands))
        figures.append(
            Figure(
                f"{prefix}-trend-warm",
                "Warm median per cell over runs (ms; band: interquartile range)",
                "Median of the declared warm repetitions per run, with its interquartile band; only runs where the cell passed and its warm timing was stable (an unstable one decides nothing: a gap)."
                + HOLLOW
                + (UNJOINED if unjoined else ""),
                _chart(box, x_axis, Axis("ms per call", ys.ticks()), series),
            )
        )

    def texts(column: str) -> dict[str, list[str]]:
        """Per case and run, a text column's value ('' where none)."""
        found: dict[tuple[str, str], str] = {}
        if column in history:
            for row in history[history["case"].isin(cases)][["run_id", "case", column]].itertuples(index=False):
                if isinstance(row[2], str) and row[2]:
                    found[(row.case, row.run_id)] = row[2]
        return {case: [found.get((case, run), "") for run in order] for case in cases}

    for column, condition, what, key, title, caption in (
        (
            "cold_s",
            "cold_condition",
            "cache condition ",
            "cold",
            "Cold first call per cell over runs (s)",
            "The first call with the cache condition each report states; only runs where the cell passed.",
        ),
        (
            "compile_s",
            "compile_cache",
            "",
            "compile",
            "Compile + first result per cell over runs (s)",
            "From each run's compile event; only runs where the cell passed.",
        ),
    ):
        values = {case: [v if _drawable(v) else None for v in vs] for case, vs in per_case(column).items()}
        present = [v for vs in values.values() for v in vs if v is not None]
        if not present:
            continue
        ys = linear(present, box.bottom, box.top, to_zero=True)
        # A cold call (or compile) under another cache condition than the run before it measured
        # something else: its line is not joined to it either, and each point names its condition.
        conditions = texts(condition)
        breaks = {case: _condition_breaks(reasons_of[case], conditions[case], values[case], what) for case in cases}
        # A point that is not a performance result on its own is hollow, as on the warm chart.
        hollow = _caveats_per_case(history, cases, order, f"{key}_caveats")
        series = _trend_lines(xs, names, values, ys, breaks, conditions, hollow)
        broken = any(r for rs in breaks.values() for r in rs)
        caption += HOLLOW if any(f for fs in hollow.values() for f in fs) else ""
        caption += (UNJOINED_CACHE if broken and not unjoined else UNJOINED) if broken or unjoined else ""
        figures.append(
            Figure(f"{prefix}-trend-{key}", title, caption, _chart(box, x_axis, Axis("seconds", ys.ticks()), series))
        )
    if geomeans:
        points_at = [(i, *geomeans[r]) for i, r in enumerate(order) if r in geomeans]
        shown = [p for p in points_at if all(v is None or (v > 0 and _drawable(v, log_axis=True)) for v in p[1:4])]
        ys = logarithmic([v for p in shown for v in p[1:4] if v is not None], box.bottom, box.top, include=(1.0,))
        points = tuple(
            Point(
                xs(i),
                ys(ratio),
                f"{names[i]}: {f'{changed}: ' if changed else ''}{estimate_text(ratio, low, high, unit='x')} over {cells}"
                + (
                    ", interval {} to {}".format(*interval_text(low, high))
                    if low is not None and high is not None
                    else ""
                ),
                ratio,
                low=None if low is None else ys(low),
                high=None if high is None else ys(high),
            )
            for i, ratio, low, high, cells, changed in shown
        )
        lines = _lines([(p.x, p.y) for p in points])
        figures.append(
            Figure(
                f"{prefix}-trend-geomean",
                "Geometric mean of warm ratios against the previous run",
                "Per run, the geometric mean of its warm ratios against the run before it (above 1: slower), with the 95% interval; only cells stable, unflagged and timed in both runs.",
                _chart(
                    box,
                    x_axis,
                    Axis("after / before", ys.ticks(), log=True),
                    [Series("geometric mean", _tone(0), "dot", points, lines=lines, legend=False)],
                    (Rule(box.left, ys(1.0), box.right, ys(1.0)),),
                ),
                tuple(names[p[0]] for p in points_at if p not in shown),
            )
        )
    passed = history[history["status"] == "pass"].groupby("run_id").size()
    planned = history.groupby("run_id").size()
    counts = [(int(passed.get(r, 0)), int(planned.get(r, 0))) for r in order]
    ys = linear([got for got, _ in counts], box.bottom, box.top, to_zero=True)
    bars = _bars(
        xs, ys, [(i, got, f"{names[i]}: {got} of {of} cells passed", "") for i, (got, of) in enumerate(counts)]
    )
    figures.append(
        Figure(
            f"{prefix}-trend-passed",
            "Cells that passed, per run",
            "Every planned cell counts; untested cells count as not passed.",
            _chart(box, x_axis, Axis("cells", ys.ticks()), [Series("passed", "pass", "none", bars=bars, legend=False)]),
        )
    )
    return figures


def ratio_figure(
    mode: str,
    points: list[tuple[str, float, float | None, float | None]],
    names: tuple[str, str],
    undecided: Mapping[str, str] | None = None,
) -> Figure | None:
    """Per-cell warm ratios of one mode with their intervals, smallest ratio first, on a log
    axis around 1. ``points``: (case, ratio, interval low, interval high); ``names``: the
    baseline's and the candidate's names, which the title and the axis carry; ``undecided``:
    case -> the verdict of a ratio that decides nothing (unstable timing, flagged), drawn
    hollow and said on hover, so no marker reads faster or slower by its place alone."""
    undecided = undecided or {}
    rows, out_of_range = [], []
    for case, ratio, low, high in sorted(points, key=lambda p: (p[1], p[0])):
        if all(_drawable(v, log_axis=True) and (v is None or v > 0) for v in (ratio, low, high)):
            rows.append((case, ratio, low, high))
        else:
            out_of_range.append(case)
    if not rows and not out_of_range:
        return None
    base, cand = names
    ratio_name = f"{cand} / {base}"
    # One row per cell, top to bottom; the cell names sit left of the plot, as long as the
    # longest short name needs.
    labels = _short_labels([r[0] for r in rows])
    left = min(16 + 7.0 * max((len(label) for label in labels), default=4), WIDTH / 2)
    height = max(160, 80 + 24 * len(rows))
    top, bottom, right = _TOP, height - 48.0, _RIGHT
    ys = Categories(tuple(r[0] for r in rows), top, bottom)
    xs = logarithmic([v for r in rows for v in r[1:] if v is not None], left, right, include=(1.0,))
    drawn = tuple(
        Point(
            xs(ratio),
            ys(i),
            f"{case}: {ratio_name} {estimate_text(ratio, low, high)}"
            + (
                ", interval {} to {}".format(*interval_text(low, high))
                if low is not None and high is not None
                else ", no interval"
                + ("" if case in undecided else " (too few samples)")  # one deciding nothing has none
            )
            + (f"; {undecided[case]}: decides nothing" if case in undecided else ""),
            ratio,
            low=None if low is None else xs(low),
            high=None if high is None else xs(high),
            hollow=case in undecided,
        )
        for i, (case, ratio, low, high) in enumerate(rows)
    )
    y_ticks = tuple(
        Tick(ys(i), label, case if label != case else "") for i, (label, case) in enumerate(zip(labels, ys.names))
    )
    chart = Chart(
        WIDTH,
        height,
        left,
        top,
        right,
        bottom,
        Axis(f"{ratio_name} (below 1: {cand} faster)", xs.ticks(), log=True),
        Axis("", y_ticks),
        (
            Series(
                ratio_name,
                mode if mode in ("eager", "compiled") else _tone(0),
                "dot",
                drawn,
                interval="x",
                legend=False,
            ),
        ),
        (Rule(xs(1.0), top, xs(1.0), bottom),),
    )
    caption = (
        f"Each {mode} cell timed on both sides: the warm ratio {ratio_name} and its 95% interval, sorted, smallest first. Left of the dashed line "
        f"{cand} is faster, right of it slower; an interval that crosses it decides nothing. A hollow marker decides nothing wherever it lies: its warm series is unstable or its ratio is flagged (hover says which)."
    )
    return Figure(
        f"fig-ratio-{mode}",
        f"Warm ratio per {mode} cell: {ratio_name} (95% interval)",
        caption,
        chart,
        tuple(out_of_range),
    )
