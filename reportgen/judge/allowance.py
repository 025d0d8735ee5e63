"""How far a cell's worst compared quantity lies from what its criteria allowed.

One reading for every surface: the report's error chart and localisation's per-module figures
take a difference over its allowance from here. A ratio above 1 is outside the tolerance. A
difference that is not finite, an allowance that is not (a NaN or Inf in the reference at the
worst element), or any difference where the allowance is zero (``atol = 0`` and a reference of
0 there) is infinitely far: beyond the tolerance by an amount no number states.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from reportgen.contract.events import ErrorStats
from reportgen.model.runmodel import CellRecord

NOT_FINITE = "not finite"
ZERO_ALLOWANCE = "beyond a zero allowance"


def ratio(stats: ErrorStats | None) -> float | None:
    """Worst |diff| / allowance of one comparison: above 1 is beyond the tolerance; None: none made."""
    if stats is None:
        return None
    if stats.diff_at_worst is None or stats.allowed_at_worst is None:
        return math.inf
    if stats.allowed_at_worst > 0:
        return stats.diff_at_worst / stats.allowed_at_worst
    return math.inf if stats.diff_at_worst > 0 else 0.0


@dataclass(frozen=True)
class Allowance:
    """A cell's largest difference over its allowance, in the quantity that judged it."""

    ratio: float  # math.inf where no number states how far (``infinite`` says why, "" for an overflow)
    what: str  # the quantity: an output's name, "gradient of W at step 2", "updated W (rule)"
    infinite: str = ""  # NOT_FINITE or ZERO_ALLOWANCE when ``ratio`` is infinite, else ""


def why_infinite(stats: ErrorStats) -> str:
    """Why no number states how far (""): a finite quotient too large for a float, which the
    chart lists as out of range rather than drawing it at its mark."""
    if stats.diff_at_worst is None or stats.allowed_at_worst is None:
        return NOT_FINITE
    return ZERO_ALLOWANCE if stats.allowed_at_worst == 0 else ""


def worst_over_allowance(cell: CellRecord) -> Allowance | None:
    """The largest difference over its allowance of every quantity that judged the cell.

    Inference cells: the outputs' elementwise comparison (in the judged region). Training cells:
    the loss at each step (the result's comparison), every gradient at each step and every
    updated parameter, each by its own tolerance or declared rule. Above 1 exactly when the cell
    failed on one of them; None when nothing was compared.
    """
    best: Allowance | None = None

    def take(found: Allowance) -> None:
        nonlocal best
        if (
            best is None
            or found.ratio > best.ratio
            or (found.ratio == best.ratio and found.infinite and not best.infinite)
        ):
            best = found

    stats = cell.result.error_stats if cell.result else None
    value = ratio(stats)
    if stats is not None and value is not None:
        take(Allowance(value, stats.worst_output or "outputs", why_infinite(stats) if math.isinf(value) else ""))
    if not cell.trained:  # no train_step or train_result event: nothing more judged it
        return best
    for step in cell.train_steps:
        for grad in step.grads:
            take(_logged(grad.worst_ratio, grad.max_abs, f"gradient of {grad.name} at step {step.step}"))
    if cell.train_result is not None:
        for param in cell.train_result.params:
            what = f"updated {param.name}" + (f" ({param.rule})" if param.rule else "")
            take(_logged(param.worst_ratio, param.max_abs, what))
    return best


def _logged(value: float | None, max_abs: float | None, what: str) -> Allowance:
    """A ratio the collector logged; None where no number states it: a difference that is not
    finite (its max_abs null too), else a finite one beyond a zero allowance (a zero reference
    gradient under a zero-gradient rule, or atol 0)."""
    if value is None:
        return Allowance(math.inf, what, NOT_FINITE if max_abs is None else ZERO_ALLOWANCE)
    return Allowance(value, what)
