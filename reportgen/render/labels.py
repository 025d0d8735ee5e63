"""Human words for the log's internal tokens: one mapping, used by the view for both formats.

The log keeps its stable tokens (``eager_no_compile``); a reader sees what they mean. A token
with no entry here is shown as it is, so a new token is never hidden.
"""

from __future__ import annotations

from reportgen.judge.criteria import CONDITION_WORDS
from reportgen.judge.timing_stability import RULE_WORDS

LABELS: dict[str, str] = {
    # timing-stability rules (the judge writes its flags with these words)
    **RULE_WORDS,
    # cache conditions of a cold first call or a compile
    **CONDITION_WORDS,
    # measured-or-not statuses
    "not_applicable": "not applicable",
    "unmeasured": "not measured",
    "not_measured": "not measured",
    "measured": "measured",
    # cell statuses (the others are plain words already)
    "nonfinite": "non-finite",
    # artifact roles
    "reference_output": "reference output",
    # plan requirements
    "requires_float64": "requires float64 computation",
    # timed regions
    "model_call": "model call only",
    "training_step": "one full training step",
    "host_to_device": "host-to-device copies",
    "output_retrieval": "output retrieval",
}


def human(token: str) -> str:
    """The reader's words for a token (the token itself when it has none)."""
    return LABELS.get(token, token)


VERDICT_WORDS = {"accepted": "accepted", "change-needed": "change needed"}


def status_words(status: str, failing: str = "", explained: bool = False, verdict: str | None = None) -> str:
    """A cell's status as every page says it: the failing quantity named and, for a failure, the
    owner's verdict ("accepted", "change needed"), "awaiting verdict" when explained without one,
    "not explained" when the owner has said nothing yet; another status the owner explained
    (untested, skipped, error) says "explained"."""
    text = human(status)
    if failing:  # "non-finite outputs" says the status already
        text = failing if failing.startswith(text) else f"{text} in {failing}"
    if status not in ("mismatch", "nonfinite"):  # only a failure waits for a verdict
        return f"{text}, explained" if explained and status != "pass" else text
    if verdict in VERDICT_WORDS:
        return f"{text}, {VERDICT_WORDS[verdict]}"
    return f"{text}, awaiting verdict" if explained else f"{text}, not explained"
