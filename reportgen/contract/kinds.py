"""The contract's version and its groups of event kinds: what the reader's rules need to know
beside the event Structs (contract/events.py, which reads them from here too)."""

from __future__ import annotations

SCHEMA_MAJOR = 1
SCHEMA_MINOR = 3
SCHEMA_VERSION = f"{SCHEMA_MAJOR}.{SCHEMA_MINOR}"

# Kinds that report an outcome; none may come before the plan that declares the tolerances.
RESULT_KINDS = frozenset(
    {
        "reference",
        "case_result",
        "operators",
        "compile",
        "timing",
        "profile",
        "train_step",
        "train_result",
        "localization",
        "request",
        "generation",
    }
)

# Kinds that always name one planned cell (a required ``case`` field).
CASE_KINDS = frozenset(
    {
        "case_result",
        "operators",
        "compile",
        "timing",
        "profile",
        "train_step",
        "train_result",
        "localization",
        "generation",
    }
)
