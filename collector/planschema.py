"""The plan schema: every table and key a workload plan may hold, in one place.

This module is the single source of truth for the plan format. The collector
(``collector/plan.py``) and ``reportgen plan-check`` both validate a plan here before they read
it, and ``collector/PLAN.md`` is generated from it (``python -m reportgen.judge.plan_doc``). It uses
only the standard library, so the collector stays importable without torch or pydantic.

Validation is strict: an unknown key, a key in the wrong table, a value of the wrong type or
outside its range is a :class:`PlanError` naming the file, the line where the key is written,
the key path and what is expected, with a "did you mean" when a close key exists.
"""

from __future__ import annotations

import bisect
import difflib
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from collector import descriptors
from collector.visible import visible

KNOWN_DTYPES = ("float32", "bfloat16", "float16", "float64")
MODES = ("eager", "compiled")
LAYOUTS = ("contiguous", "noncontiguous")
KNOWN_REQUIREMENTS = ("requires_float64",)
# The plan rules of the built-in targets' constraint files (reportgen/judge/constraints/), copied
# here to be read without torch: ``python -m reportgen.judge.backend_docs`` writes it, a test
# keeps it current. The targets themselves are the backend descriptors (collector/descriptors.py).
TARGET_RULES_PATH = Path(__file__).parent / "target_rules.json"
TARGETS = tuple(sorted(descriptors.target_names()))
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
INPUT_DTYPES = ("int64", "int32", "int16", "int8", "uint8", "bool", "float32", "bfloat16", "float16", "float64")
INTEGER_DTYPES = ("int64", "int32", "int16", "int8", "uint8")
# The values each integer dtype holds: a declared value_range past them contradicts the dtype.
INTEGER_LIMITS = {
    "int64": (-(2**63), 2**63 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int8": (-(2**7), 2**7 - 1),
    "uint8": (0, 2**8 - 1),
}
NONCONTIGUOUS_HOW = ("slice", "transpose", "channels_last", "other")
# A plan error names the key in at most KEY_CHARS characters and says what it found in at most
# MESSAGE_CHARS (a key or a value echoed whole, 100,000 characters of it, is cut).
KEY_CHARS = 200
MESSAGE_CHARS = 1000


def _cut(text: str, most: int) -> str:
    return text if len(text) <= most else f"{text[:most]}... ({len(text):,} characters)"


ABOVE_LARGEST_POLICIES = ("reject", "truncate", "split")


def policy_word(policy: str | None) -> str:
    """The policy's verb (reject, truncate, split), as the plan schema requires it to start."""
    return (policy or "").strip().split(" ", 1)[0].lower().rstrip(":,;.")


def served_bucket(length: int, buckets: list[int], policy: str | None) -> int | None:
    """The bucket a request of ``length`` tokens is served at: the first at or above it, else the
    largest where the policy truncates; None for a request the collector refuses. The buckets
    ascend (the schema checks it): a binary search, as plans may list thousands."""
    at = bisect.bisect_left(buckets, length)
    if at < len(buckets):
        return buckets[at]
    return buckets[-1] if buckets and policy_word(policy) == "truncate" else None


UNDECIDED = "UNDECIDED"

# Who reads a key: the collector when it runs the plan, plan-check when it reviews it.
COLLECTOR = "collector"
PLAN_CHECK = "plan-check"
BOTH = "collector, plan-check"

REQUIRED = object()  # the default of a key that must be written


class PlanError(ValueError):
    """The plan cannot be used as written; the message is one line saying where and what to change."""


@dataclass(frozen=True)
class Key:
    """One key: its type (``kind``), default, documentation and who reads it."""

    name: str
    kind: str  # str | int | number | bool | list[str] | list[int] | shapes | range | table(free) | text-policy
    doc: str
    default: Any = None
    example: str = ""
    readers: str = BOTH
    choices: tuple[Any, ...] = ()
    minimum: float | None = None
    maximum: float | None = None  # numbers: the largest allowed (a bound on what a run may cost)
    min_items: int = 0  # lists: the fewest items

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


@dataclass(frozen=True)
class Table:
    """A table of keys. ``each`` names a table whose sub-tables are keyed by a name (a dtype, an
    input name) rather than by fixed keys; ``names`` then lists the allowed names (empty: any)."""

    path: str
    doc: str
    keys: tuple[Key, ...] = ()
    required: bool = False
    each: str = ""
    names: tuple[str, ...] = ()
    inline: bool = False  # written as an inline table in the examples
    example: str = ""  # the example's body, when the keys' own examples do not make one

    def key(self, name: str) -> Key | None:
        return next((k for k in self.keys if k.name == name), None)


_SHAPES_DOC = "list of [batch, length] pairs of positive integers"


def _training_tolerance(part: str, what: str, rtol_example: str) -> Table:
    """tolerances.<dtype>.loss and .grad: one elementwise tolerance each, read by the collector."""
    return Table(
        f"tolerances.<dtype>.{part}",
        what,
        (
            Key("atol", "number", "Absolute tolerance.", REQUIRED, "1e-6", COLLECTOR, minimum=0),
            Key("rtol", "number", "Relative tolerance.", REQUIRED, rtol_example, COLLECTOR, minimum=0),
        ),
        inline=True,
    )


# Timed warm calls per cell, at most (the plan's warm_repetitions and the collector's --warm):
# one warm series is one list in one line of the run log, which the event contract caps at
# 8 MiB (collector.eventlog.MAX_LINE_BYTES); 10,000 samples take at most about 260 KB of it (a
# sample is at most 26 bytes of JSON), and at a second a call a cell's series is under three hours.
MAX_WARM_REPETITIONS = 10_000
# Rounds of re-measurement a plan may ask for (timing.remeasure_rounds).
MAX_REMEASURE_ROUNDS = 10
# A generation cell's decode series holds warm_repetitions x decode_steps samples, also one list
# on one line, and each series of warm generations measured again keeps its own beside it
# (timing.remeasure_rounds more at most): at most this many in all (about 2.6 MB of the line).
MAX_DECODE_SAMPLES = 100_000


# The most positions (batch x length) one planned input may hold: 2^31 - 1, the largest 32-bit
# index. The reference runs every shape on the host CPU, where one 8-byte value per position of
# such an input alone takes 16 GiB: a larger shape is a typing slip, not a plan.
MAX_SHAPE_POSITIONS = 2**31 - 1
# A generation cell logs its greedy tokens and the reference's (batch x (decode_steps + 1) each)
# on its one generation event line, beside its decode series (at most MAX_DECODE_SAMPLES) and its
# top-k overlaps: at most this many tokens a cell (about 2.4 MB of the line's 8 MiB for both
# lists, ids of up to seven digits).
MAX_GENERATED_TOKENS = 131_072


def decode_samples_problem(warm_repetitions: int, decode_steps: int, remeasure_rounds: int = 0) -> str | None:
    """Why a generation cell's decode series, with every series of it measured again, could not
    be written on its one log line, or None."""
    series = 1 + remeasure_rounds
    samples = warm_repetitions * decode_steps * series
    if samples <= MAX_DECODE_SAMPLES:
        return None
    again = f" x (1 + remeasure_rounds {remeasure_rounds})" if remeasure_rounds else ""
    kept = " (the series measured again are kept beside the last)" if remeasure_rounds else ""
    return (
        f"warm_repetitions {warm_repetitions} x decode_steps {decode_steps}{again} = {samples:,} decode samples on one "
        f"generation event{kept}; at most {MAX_DECODE_SAMPLES:,} fit on one log line"
    )


SCHEMA: tuple[Table, ...] = (
    Table(
        "workload",
        "What the workload is and where its code lives.",
        (
            Key("name", "str", "Workload name, recorded in every run.", REQUIRED, '"my-encoder"'),
            Key(
                "module",
                "str",
                "Python module with build_model, make_inputs, run_model (path relative to the plan).",
                REQUIRED,
                '"my_encoder.py"',
                COLLECTOR,
            ),
            Key(
                "description",
                "str",
                "One line saying what the workload is.",
                "",
                '"Two-layer encoder, int64 ids, bool mask."',
                COLLECTOR,
            ),
            Key(
                "requirements",
                "list[str]",
                "Hard acceptance requirements (requires_float64: float64 computation, not just float64 outputs).",
                [],
                "[]",
                BOTH,
                KNOWN_REQUIREMENTS,
            ),
            Key(
                "target",
                "str",
                "The target this plan is meant to certify (a target or its alias, e.g. trainium for neuron); recorded in the plan event as intended_target, by its target name.",
                None,
                '"neuron"',
                BOTH,
                descriptors.target_choices(),
            ),
            Key(
                "expected_compilations",
                "int",
                "How many compilations the owner expects for the whole matrix of one dtype and layout.",
                None,
                "1",
                PLAN_CHECK,
                minimum=1,
            ),
            Key(
                "variable_lengths",
                "bool",
                "Request lengths vary at serving time (so they need a bucket ladder).",
                False,
                "true",
                PLAN_CHECK,
            ),
        ),
        required=True,
    ),
    Table(
        "matrix",
        "The cells to run: every shape x dtype x layout x mode, then the cache-check repeats.",
        (
            Key(
                "shapes",
                "shapes",
                "Input shapes as [batch, length]; at least one. batch x length is at most "
                f"{MAX_SHAPE_POSITIONS:,} (2^31 - 1) positions: the reference runs every shape on the host CPU.",
                REQUIRED,
                "[[1, 128], [4, 512]]",
            ),
            Key(
                "dtypes",
                "list[str]",
                "Compute dtypes of floating inputs and weights, in run order.",
                ["float32"],
                '["float32", "bfloat16"]',
                BOTH,
                KNOWN_DTYPES,
                min_items=1,
            ),
            Key(
                "layouts",
                "list[str]",
                "Input layouts to test; make_inputs builds each.",
                ["contiguous"],
                '["contiguous", "noncontiguous"]',
                BOTH,
                LAYOUTS,
                min_items=1,
            ),
            Key(
                "modes",
                "list[str]",
                "Execution modes.",
                ["eager", "compiled"],
                '["eager", "compiled"]',
                BOTH,
                MODES,
                min_items=1,
            ),
            Key(
                "cache_checks",
                "shapes",
                "Shapes (from shapes) repeated after the last of shapes (list the largest last): does the process compile them again?",
                [],
                "[[1, 128]]",
            ),
            Key(
                "max_cells",
                "int",
                "The most cells one run of this plan records: the matrix, in the order above, is cut after this many (the plan event "
                "keeps the uncut count); --max-cells can only lower it. Without a cap a matrix of more than 20,000 cells is refused: "
                "the plan event lists every planned cell and must fit the event contract's 8 MiB line limit.",
                None,
                "5000",
                COLLECTOR,
                minimum=1,
            ),
        ),
        required=True,
    ),
    Table(
        "tolerances",
        "Correctness criteria per dtype, declared before any result: one sub-table per dtype.",
        each="tolerances.<dtype>",
        names=KNOWN_DTYPES,
    ),
    Table(
        "tolerances.<dtype>",
        "Elementwise criterion |out - ref| <= atol + rtol * |ref| for cells of this dtype. "
        "float32 defaults to the seed's atol 1e-5, rtol 1e-4; any other dtype needs its own, with a task criterion (in a training plan: with loss and grad).",
        (
            Key("atol", "number", "Absolute tolerance.", REQUIRED, "1e-5", BOTH, minimum=0),
            Key("rtol", "number", "Relative tolerance.", REQUIRED, "1e-4", BOTH, minimum=0),
            Key(
                "proposed",
                "bool",
                "Set by plan-check on values it proposes: the collector refuses the plan until a person reviews the values and removes the flag.",
                False,
                "true",
            ),
        ),
    ),
    Table(
        "tolerances.<dtype>.task",
        "Task-quality criterion (inference plans): the workload's task_metric compared with a threshold.",
        (
            Key("metric", "str", "Name of the task metric.", REQUIRED, '"min_cosine_to_reference"'),
            Key("op", "str", "How the metric is compared with the threshold.", REQUIRED, '">="', BOTH, (">=", "<=")),
            Key("threshold", "number", "The threshold.", REQUIRED, "0.9999"),
        ),
        inline=True,
    ),
    _training_tolerance("loss", "Training plans: the loss of every step against the reference.", "1e-5"),
    _training_tolerance("grad", "Training plans: every gradient and updated parameter against the reference.", "1e-3"),
    Table(
        "timing",
        "Warm timing of cells whose correctness passed.",
        (
            Key(
                "warm_repetitions",
                "int",
                "Timed warm calls per passing cell (--warm overrides).",
                30,
                "30",
                COLLECTOR,
                minimum=1,
                maximum=MAX_WARM_REPETITIONS,
            ),
            Key(
                "warmup",
                "int",
                "Untimed calls before them.",
                3,
                "3",
                COLLECTOR,
                minimum=0,
                maximum=MAX_WARM_REPETITIONS,
            ),
            Key(
                "remeasure_rounds",
                "int",
                "Rounds of re-measurement for a warm series the stability rules call unstable "
                "(collector/README.md, Timing stability): each round times every still-unstable cell of a group again, one after "
                'another; a cell still unstable after the last round is flagged "unstable timing". 0: never re-measure. A generation cell\'s warm generations are taken again at once, up to as many more times, while a series of them is unstable.',
                2,
                "2",
                COLLECTOR,
                minimum=0,
                maximum=MAX_REMEASURE_ROUNDS,
            ),
        ),
    ),
    Table(
        "timing.scope",
        "What the timed region includes.",
        (
            Key(
                "preprocessing",
                "bool",
                "Preparing the inputs (make_inputs, each timed call) is inside the timed region; a call given other"
                " input names, shapes or dtypes than the cell was checked with stops its timing.",
                False,
                "false",
                COLLECTOR,
            ),
            Key("host_to_device", "bool", "Copying the inputs to the device is timed.", False, "false", COLLECTOR),
            Key(
                "output_retrieval", "bool", "Copying the outputs back to the host is timed.", False, "false", COLLECTOR
            ),
            Key("note", "str", "Free text about the timed region.", "", '"model call only"', COLLECTOR),
        ),
        inline=True,
    ),
    Table(
        "padding",
        "How variable request lengths are padded to a fixed set of buckets.",
        (
            Key(
                "buckets",
                "list[int]",
                "The bucket ladder, ascending; a length pads to the next bucket at or above it.",
                [],
                "[128, 384, 768]",
                BOTH,
                minimum=1,
            ),
            Key(
                "above_largest",
                "text-policy",
                "What happens to a request longer than the largest bucket: text starting with reject, truncate or split.",
                None,
                '"reject requests longer than 768 tokens"',
                BOTH,
                ABOVE_LARGEST_POLICIES,
            ),
            Key(
                "mask_padded",
                "bool",
                "Attention masks are padded like the inputs (0 at every padded position). A generation plan's requests are "
                "padded by the collector, which always masks the padded positions: false is refused there. In other plans "
                "make_inputs builds the masks, and the value is recorded as the plan declares it (the plan event, the report).",
                True,
                "true",
                COLLECTOR,
            ),
            Key(
                "proposed",
                "bool",
                "Set by plan-check on a ladder it proposes: the collector refuses the plan until a person reviews it and removes the flag.",
                False,
                "true",
            ),
        ),
    ),
    Table(
        "reference",
        "The trusted reference: CPU eager, run twice per shape (its noise floor).",
        (
            Key("dtype", "str", "Dtype the reference runs in.", "float32", '"float32"', COLLECTOR, KNOWN_DTYPES),
            Key(
                "float64_golden",
                "bool",
                "Also run a float64 copy and record its distance to the reference.",
                False,
                "false",
                COLLECTOR,
            ),
        ),
    ),
    Table(
        "compile",
        "Options of the compiled cells' torch.compile call, recorded in the plan event and in each compile event. "
        "The collector refuses options its target's constraint data rejects.",
        (
            Key("dynamic", "bool", "torch.compile(dynamic=...): false compiles each shape for itself.", False, "false"),
            Key("mode", "str", "torch.compile(mode=...).", "default", '"default"', BOTH, COMPILE_MODES),
            Key(
                "fullgraph",
                "bool",
                "torch.compile(fullgraph=...): true makes a graph break an error instead of a silent split.",
                False,
                "true",
            ),
            Key(
                "backend_options",
                "table(free)",
                'torch.compile(options=...): passed to the backend as written (strings, numbers, booleans); only with mode "default".',
                {},
                '{ "max_autotune" = false }',
            ),
        ),
    ),
    Table(
        "localize",
        "Where in the model a cell's outputs part from the reference: per named submodule, the error of its output, "
        "end to end (accumulated) and fed the reference module's inputs (local). A mismatching cell is always localised; "
        "the bounds keep the cost small and what they leave out is logged.",
        (
            Key(
                "always",
                "bool",
                "Localise every cell, passing ones included (not only the mismatching ones).",
                False,
                "false",
                COLLECTOR,
            ),
            Key(
                "max_depth",
                "int",
                "Deepest submodule localised: 1 is the model's direct children, 2 their children, and so on (a ModuleList's index does not count: blocks.0 is at depth 1).",
                2,
                "2",
                COLLECTOR,
                minimum=1,
            ),
            Key(
                "max_modules",
                "int",
                "Most submodules localised per cell, in execution order (each compiled alone in a compiled cell).",
                32,
                "32",
                COLLECTOR,
                minimum=1,
            ),
            Key(
                "max_bytes",
                "int",
                "Most bytes of captured module inputs and outputs held per cell; modules past it are skipped and logged.",
                268435456,
                "268435456",
                COLLECTOR,
                minimum=1,
            ),
        ),
    ),
    Table(
        "inputs",
        "What the real preprocessing produces, per model input (the names make_inputs returns).",
        each="inputs.<name>",
    ),
    Table(
        "inputs.<name>",
        "One model input as the real preprocessing produces it.",
        (
            Key("dtype", "str", "The input's dtype.", REQUIRED, '"int64"', PLAN_CHECK, INPUT_DTYPES),
            Key(
                "layout",
                "str",
                "Layout the real preprocessing produces.",
                REQUIRED,
                '"contiguous"',
                PLAN_CHECK,
                LAYOUTS,
            ),
            Key(
                "how",
                "str",
                "How a non-contiguous input comes about (required when layout is noncontiguous).",
                None,
                '"slice"',
                PLAN_CHECK,
                NONCONTIGUOUS_HOW,
            ),
            Key(
                "value_range",
                "range",
                "Integer inputs: smallest and largest value, e.g. [0, vocabulary size - 1].",
                None,
                "[0, 30521]",
                PLAN_CHECK,
            ),
            Key(
                "note",
                "str",
                "Free text, e.g. which preprocessing step makes the layout.",
                "",
                '"ids sliced from a padded batch buffer"',
                PLAN_CHECK,
            ),
        ),
    ),
    Table(
        "compare",
        "Comparison rules that narrow what is judged, declared before any result; what they leave out is still recorded and shown.",
    ),
    Table(
        "compare.outputs",
        "Judged regions of outputs: one sub-table per output name (the names run_model returns).",
        each="compare.outputs.<name>",
    ),
    Table(
        "compare.outputs.<name>",
        "Only part of this output is judged: give exactly one of mask or region. The collector checks it against the model before anything runs.",
        (
            Key(
                "mask",
                "str",
                "An input name whose non-zero elements mark the judged positions (e.g. the attention mask).",
                None,
                '"attention_mask"',
                COLLECTOR,
            ),
            Key(
                "region",
                "list[str]",
                "One index or start:stop slice per leading dimension.",
                None,
                '[":", "0:64"]',
                COLLECTOR,
                min_items=1,
            ),
        ),
        example='mask = "attention_mask"          # or: region = [":", "0:64"]',
    ),
    Table(
        "compare.params",
        "Training plans: rules for parameter groups, one sub-table per group name.",
        each="compare.params.<group>",
    ),
    Table(
        "compare.params.<group>",
        "How the updated parameters of a group are judged.",
        (
            Key(
                "match",
                "globs",
                "Glob patterns over parameter names (a string or a list).",
                REQUIRED,
                '["*.qkv.bias"]',
                COLLECTOR,
            ),
            Key(
                "rule",
                "str",
                "elementwise (the tolerances), lr-bound (|updated - reference| <= k * lr) or zero-grad.",
                REQUIRED,
                '"lr-bound"',
                COLLECTOR,
                ("elementwise", "lr-bound", "zero-grad"),
            ),
            Key(
                "k",
                "number",
                "lr-bound only: the bound's factor, a positive number (above 0).",
                None,
                "2.0",
                COLLECTOR,
            ),
            Key(
                "zero_below",
                "number",
                "lr-bound only: gradients below this count as zero.",
                None,
                "1e-12",
                COLLECTOR,
                minimum=0,
            ),
        ),
    ),
    Table(
        "generation",
        "Set for a text-generation workload: each cell serves its request (the cell's length) as a service would: "
        "padded to its bucket (padding.buckets, padding.above_largest), one prefill call, then decode_steps greedy decode "
        "calls against a static KV cache of max_cache_len positions (one decode shape). The tokens are judged by the "
        "dtype's task criterion on the metric greedy_steps_agreeing (leading steps whose greedy token equals the reference's; "
        "step 0 is the prefill's) and by top-k overlap; the prefill's logits at real positions by atol and rtol.",
        (
            Key(
                "decode_steps",
                "int",
                "Decode calls after the prefill, one new token each. Times warm_repetitions (or --warm) times "
                f"(1 + timing.remeasure_rounds), at most {MAX_DECODE_SAMPLES:,}: the decode series, with each one "
                "measured again, are lists on one log line; and a cell's batch times "
                f"(decode_steps + 1) at most {MAX_GENERATED_TOKENS:,}: its greedy tokens and the reference's are "
                "logged on one line.",
                REQUIRED,
                "16",
                COLLECTOR,
                minimum=1,
            ),
            Key(
                "max_cache_len",
                "int",
                "Positions of the static KV cache: at least the largest bucket plus decode_steps.",
                REQUIRED,
                "544",
                COLLECTOR,
                minimum=2,
            ),
            Key(
                "padding_side",
                "str",
                "Where padding goes: left, as decoder generation expects, or right.",
                "left",
                '"left"',
                COLLECTOR,
                ("left", "right"),
            ),
            Key(
                "config",
                "str",
                "A named model configuration the workload module offers (its CONFIGS), passed to its configure().",
                "",
                '"tiny"',
                COLLECTOR,
            ),
            Key(
                "top_k",
                "int",
                "Top-k overlap: how many of the reference's highest-scored tokens are compared at each step; below the model's vocabulary (the collector stops a run whose top_k is not, at its first reference).",
                5,
                "5",
                COLLECTOR,
                minimum=1,
            ),
            Key(
                "min_top_k_overlap",
                "number",
                "Smallest share (0 to 1) of the reference's top-k tokens the cell's top-k must hold at every judged step.",
                REQUIRED,
                "0.8",
                COLLECTOR,
                minimum=0,
            ),
        ),
    ),
    Table(
        "training",
        "Set for a training workload: each cell runs training steps instead of one forward call.",
        (
            Key("steps", "int", "Optimizer steps per cell.", REQUIRED, "4", COLLECTOR, minimum=1),
            Key("seed", "int", "Seed set before each run of the steps.", 0, "0", COLLECTOR, minimum=0),
            Key(
                "randomness",
                "str",
                "How randomness (dropout) is made comparable across backends.",
                REQUIRED,
                '"dropout off (p=0)"',
                COLLECTOR,
            ),
        ),
    ),
)


TABLES = {t.path: t for t in SCHEMA}
TOP_TABLES = tuple(t.path for t in SCHEMA if "." not in t.path)
# Keys written in older plans or where a new user looks first, and where they belong now.
MOVED = {
    "options": "compile",
    "options.dynamic": "compile.dynamic",
    "options.compile_mode": "compile.mode",
    "options.fullgraph": "compile.fullgraph",
    "compile.compile_mode": "compile.mode",
    "compile.options": "compile.backend_options",
}


# --- where keys are written --------------------------------------------------------------------

_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r'^\s*((?:[A-Za-z0-9_-]+|"[^"]*"|\'[^\']*\')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|"[^"]*"|\'[^\']*\'))*)\s*=')
_INLINE_KEY = re.compile(r'[{,]\s*([A-Za-z0-9_-]+|"[^"]*")\s*=')


def _dotted(text: str) -> list[str]:
    parts = re.findall(r'"[^"]*"|\'[^\']*\'|[A-Za-z0-9_-]+', text)
    return [p.strip("\"'") for p in parts]


def key_lines(text: str) -> dict[str, int]:
    """Line number (1-based) of every table header and key, by dotted path; best effort (a
    multi-line string or array can hide a key), used only to point at the line in messages."""
    lines: dict[str, int] = {}
    table: list[str] = []
    for number, line in enumerate(text.split("\n"), start=1):  # TOML ends lines at LF only (not U+2028)
        header = _HEADER.match(line)
        if header and "=" not in header.group(1):
            table = _dotted(header.group(1))
            for depth in range(1, len(table) + 1):  # [a.b] is where table a is first written too
                lines.setdefault(".".join(table[:depth]), number)
            continue
        key = _KEY.match(line)
        if not key:
            continue
        path = table + _dotted(key.group(1))
        lines.setdefault(".".join(path), number)
        rest = line[key.end() :]
        if rest.lstrip().startswith("{"):
            for inner in _INLINE_KEY.finditer(rest):
                lines.setdefault(".".join(path + [inner.group(1).strip('"')]), number)
    return lines


# --- validation ----------------------------------------------------------------------------------


@dataclass
class Checker:
    """Validates one parsed plan; ``fail`` raises the one-line PlanError."""

    file: str
    lines: dict[str, int] = field(default_factory=dict)

    def line_of(self, path: str) -> int | None:
        parts = path.split(".")
        while parts:
            found = self.lines.get(".".join(parts))
            if found is not None:
                return found
            parts.pop()
        return None

    def fail(self, path: str, message: str) -> PlanError:
        line = self.line_of(path) if path else None
        # The file's name shown escaped (a newline in it would start a line of its own).
        where = visible(f"{self.file}:{line}" if line else str(self.file), keep="")
        return PlanError(f"{where}: {_cut(path or 'plan', KEY_CHARS)}: {_cut(message, MESSAGE_CHARS)}")


_BARE = re.compile(r"[A-Za-z0-9_-]+")  # the whole name (fullmatch): $ would let a trailing newline through


def _k(name: Any) -> str:
    """A key as written in a key path: bare when TOML allows it, else quoted (escapes shown)."""
    name = str(name)
    return name if _BARE.fullmatch(name) else json.dumps(name)


def _type_name(value: Any) -> str:
    return {
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "a table",
    }.get(type(value), type(value).__name__)


def _schema_path(path: list[str]) -> str:
    """The schema path of a concrete key path: tolerances.bfloat16.task -> tolerances.<dtype>.task."""
    out: list[str] = []
    for part in path:
        parent = TABLES.get(".".join(out))
        out.append(parent.each.rsplit(".", 1)[1] if parent is not None and parent.each else part)
    return ".".join(out)


def _suggest(name: str, here: str) -> str:
    """'did you mean' for an unknown key: a close key of the same table, or the table it belongs in."""
    full = f"{here}.{name}" if here else name
    moved = MOVED.get(_schema_path(full.split("."))) or MOVED.get(full)
    if moved:
        table_of, _, key = moved.rpartition(".")
        if not table_of:
            return f"; did you mean [{moved}]?"
        return f"; did you mean {key!r}?" if table_of == here else f"; it belongs in [{table_of}] as {moved}"
    table = TABLES.get(_schema_path(here.split("."))) if here else None
    candidates = [k.name for k in table.keys] if table else list(TOP_TABLES)
    if table is not None:
        candidates += [
            t.path.rsplit(".", 1)[1] for t in SCHEMA if t.path.rsplit(".", 1)[0] == table.path and "." in t.path
        ]
    close = difflib.get_close_matches(name, candidates, n=1, cutoff=0.6)
    if close:
        return f"; did you mean {close[0]!r}?"
    elsewhere = [t.path for t in SCHEMA if t.key(name) is not None and t.path != (table.path if table else "")]
    if elsewhere:
        return f"; it belongs in [{elsewhere[0]}] as {elsewhere[0]}.{name}"
    return ""


INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1  # the integers a run log holds (reportgen.contract.events.Int64)
_FLOAT_MAX = int(sys.float_info.max)  # a larger integer where a number goes has no float


def _int64(c: Checker, path: str, value: int) -> None:
    """An integer the run log can record: beyond 64 bits the collector would write a plan event
    that no reader accepts."""
    if not INT64_MIN <= value <= INT64_MAX:
        digits = len(str(abs(value)))
        raise c.fail(path, f"an integer of {digits} digits is beyond the 64-bit range a run log records")


def _check_value(c: Checker, key: Key, value: Any, path: str) -> Any:
    kind = key.kind
    if kind == "str" or kind == "text-policy":
        if not isinstance(value, str):
            raise c.fail(path, f"expected a string, got {_type_name(value)}")
        if kind == "str" and key.choices and value not in key.choices:
            close = difflib.get_close_matches(value, [str(v) for v in key.choices], n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise c.fail(path, f"expected one of {', '.join(map(str, key.choices))}, got {value!r}{hint}")
        if kind == "text-policy" and not value.startswith(UNDECIDED):
            first = value.strip().split(" ", 1)[0].lower().rstrip(":,;.")
            if first not in key.choices:
                raise c.fail(path, f"start the policy with one of {', '.join(key.choices)}, got {value!r}")
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            raise c.fail(path, f"expected true or false, got {_type_name(value)}")
        return value
    if kind in ("int", "number"):
        ok = isinstance(value, int) if kind == "int" else isinstance(value, (int, float))
        if not ok or isinstance(value, bool):
            raise c.fail(
                path, f"expected {'an integer' if kind == 'int' else 'a number'}, got {_type_name(value)} {value!r}"
            )
        if isinstance(value, float) and value != value or value in (float("inf"), float("-inf")):
            raise c.fail(path, f"expected a finite number, got {value!r}")
        if kind == "int":
            _int64(c, path, value)
        elif isinstance(value, int) and abs(value) > _FLOAT_MAX:
            raise c.fail(path, f"expected a finite number, got an integer of {len(str(abs(value)))} digits")
        if key.minimum is not None and value < key.minimum:
            raise c.fail(path, f"expected at least {key.minimum:g}, got {value!r}")
        if key.maximum is not None and value > key.maximum:
            raise c.fail(path, f"expected at most {key.maximum:g}, got {value!r}")
        return float(value) if kind == "number" else value
    if kind in ("list[str]", "list[int]"):
        if not isinstance(value, list):
            raise c.fail(path, f"expected a list, got {_type_name(value)}")
        item_type = str if kind == "list[str]" else int
        for item in value:
            if not isinstance(item, item_type) or isinstance(item, bool):
                raise c.fail(
                    path, f"expected a list of {'strings' if item_type is str else 'integers'}, got an item {item!r}"
                )
            if key.choices and item not in key.choices:
                # A close spelling only (float8_e4m3fn is no misspelt float64): cutoff 0.8.
                close = difflib.get_close_matches(str(item), [str(v) for v in key.choices], n=1, cutoff=0.8)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise c.fail(path, f"unknown {[item]}; allowed: {', '.join(key.choices)}{hint}")
            if key.minimum is not None and isinstance(item, int) and item < key.minimum:
                raise c.fail(path, f"each item is at least {key.minimum:g}, got {item!r}")
            if isinstance(item, int):
                _int64(c, path, item)
        if (key.choices or item_type is int) and len(set(value)) != len(value):
            raise c.fail(path, f"an item is listed twice: {value!r}")
        if len(value) < key.min_items:
            raise c.fail(path, f"at least {key.min_items} item(s) needed")
        return list(value)
    if kind == "shapes":
        if not isinstance(value, list):
            raise c.fail(path, f"expected a {_SHAPES_DOC}, got {_type_name(value)}")
        shapes = []
        seen: set[tuple[int, ...]] = set()  # a list would make a long matrix quadratic to check
        for item in value:
            if not (
                isinstance(item, list)
                and len(item) == 2
                and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in item)
            ):
                raise c.fail(path, f"each shape is [batch, length] with positive integers, got {item!r}")
            for v in item:
                _int64(c, path, v)
            if item[0] * item[1] > MAX_SHAPE_POSITIONS:
                positions = item[0] * item[1]
                raise c.fail(
                    path,
                    f"{item!r} is batch x length = {positions:,} positions in one input, more than {MAX_SHAPE_POSITIONS:,} "
                    f"(2^31 - 1); the reference runs every shape on the host CPU, where one 8-byte value per position "
                    f"alone takes {positions * 8 / 2**30:,.0f} GiB",
                )
            if tuple(item) in seen:
                raise c.fail(path, f"shape {item!r} is listed twice")
            seen.add(tuple(item))
            shapes.append(list(item))
        return shapes
    if kind == "globs":
        items = [value] if isinstance(value, str) else value
        if not (isinstance(items, list) and items and all(isinstance(v, str) and v for v in items)):
            raise c.fail(
                path, f"expected glob patterns over parameter names (a string or a list of strings), got {value!r}"
            )
        return list(items)
    if kind == "range":
        if not (
            isinstance(value, list)
            and len(value) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
            and value[0] <= value[1]
        ):
            raise c.fail(path, f"expected [smallest, largest] integers, got {value!r}")
        for v in value:
            _int64(c, path, v)
        return list(value)
    if kind == "table(free)":
        if not isinstance(value, dict):
            raise c.fail(path, f"expected a table, got {_type_name(value)}")
        for name, item in value.items():
            if not isinstance(item, (str, int, float, bool)):
                raise c.fail(f"{path}.{_k(name)}", f"expected a string, number or boolean, got {_type_name(item)}")
            if isinstance(item, int) and not isinstance(item, bool):
                _int64(c, f"{path}.{_k(name)}", item)
        return dict(value)
    raise AssertionError(f"unknown kind {kind}")  # pragma: no cover - the schema is fixed


def _check_table(c: Checker, table: Table, data: Any, path: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise c.fail(path, f"expected a table [{path}], got {_type_name(data)}")
    out: dict[str, Any] = {}
    if table.each:
        child = TABLES[table.each]
        for name, value in data.items():
            where = f"{path}.{_k(name)}"
            if table.names and name not in table.names:
                if child.key(name) is not None:
                    raise c.fail(
                        where,
                        f"{name} is not a {table.each.rsplit('.', 1)[1].strip('<>')}; it belongs in a sub-table such as [{path}.{table.names[0]}]",
                    )
                close = difflib.get_close_matches(name, table.names, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise c.fail(
                    where,
                    f"unknown {table.each.rsplit('.', 1)[1].strip('<>')}; allowed: {', '.join(table.names)}{hint}",
                )
            if not isinstance(value, dict) and child.key(name) is not None:
                raise c.fail(where, f"{name} belongs in a sub-table [{table.each}]")
            out[name] = _check_table(c, child, value, where)
        return out
    subtables = {
        t.path.rsplit(".", 1)[1]: t for t in SCHEMA if t.path.rsplit(".", 1)[0] == table.path and "." in t.path
    }
    for name, value in data.items():
        where = f"{path}.{_k(name)}"
        key = table.key(name)
        if key is not None:
            # None is only ever a filled-in default (TOML has no null): a checked table checks again.
            out[name] = None if value is None and key.default is None else _check_value(c, key, value, where)
        elif name in subtables:
            out[name] = _check_table(c, subtables[name], value, where)
        else:
            raise c.fail(where, f"unknown key in [{path}]{_suggest(name, path)}")
    for key in table.keys:
        if key.name not in out:
            if key.required:
                raise c.fail(
                    path,
                    f"missing {key.name!r} ({key.doc[0].lower() + key.doc[1:].rstrip('.')}; e.g. {key.name} = {key.example})",
                )
            out[key.name] = _copy(key.default)
    return out


def _copy(value: Any) -> Any:
    return list(value) if isinstance(value, list) else dict(value) if isinstance(value, dict) else value


CROSS_CHECKS: list[Callable[[Checker, dict[str, Any]], None]] = []


def _cross(fn: Callable[[Checker, dict[str, Any]], None]) -> Callable[[Checker, dict[str, Any]], None]:
    CROSS_CHECKS.append(fn)
    return fn


def matrix_cells(matrix: dict[str, Any]) -> int:
    """How many cells a checked [matrix] expands to, counted without expanding it: every shape x
    dtype x layout x mode, plus one compiled repeat per cache check, dtype and layout. A plan of
    a megabyte can name a million cells; the count lets a reader refuse or cap them first."""
    groups = len(matrix["dtypes"]) * len(matrix["layouts"])
    repeats = len(matrix["cache_checks"]) if "compiled" in matrix["modes"] else 0
    return groups * (len(matrix["shapes"]) * len(matrix["modes"]) + repeats)


@_cross
def _matrix_shapes(c: Checker, plan: dict[str, Any]) -> None:
    matrix = plan["matrix"]
    if not matrix["shapes"]:
        raise c.fail("matrix.shapes", "at least one [batch, length] is needed")
    shapes = {tuple(shape) for shape in matrix["shapes"]}  # a list would make a long matrix quadratic to check
    for shape in matrix["cache_checks"]:
        if tuple(shape) not in shapes:
            raise c.fail("matrix.cache_checks", f"{shape} is not one of matrix.shapes")


@_cross
def _workload_module(c: Checker, plan: dict[str, Any]) -> None:
    """A module path whose last part is empty, '.' or '..' names a folder on every host."""
    module = plan["workload"]["module"]
    if module.rsplit("/", 1)[-1] in ("", ".", ".."):
        raise c.fail(
            "workload.module",
            f'{module!r} names a folder, not the workload\'s Python file; expected a file such as "my_encoder.py" '
            "(a path relative to the plan)",
        )


@_cross
def _padding_ladder(c: Checker, plan: dict[str, Any]) -> None:
    buckets = plan.get("padding", {}).get("buckets", [])
    if buckets != sorted(buckets):
        raise c.fail("padding.buckets", f"list the buckets in ascending order, got {buckets}")


@_cross
def _inputs_layout(c: Checker, plan: dict[str, Any]) -> None:
    for name, spec in plan.get("inputs", {}).items():
        where = f"inputs.{name}"
        if spec["layout"] == "noncontiguous" and spec["how"] is None:
            raise c.fail(where, f"layout is noncontiguous: say how in 'how' ({', '.join(NONCONTIGUOUS_HOW)})")
        if spec["layout"] == "contiguous" and spec["how"] is not None:
            raise c.fail(f"{where}.how", "only for a noncontiguous layout")
        if spec["value_range"] is not None and spec["dtype"] not in INTEGER_DTYPES:
            raise c.fail(
                f"{where}.value_range",
                f"only for integer inputs ({', '.join(INTEGER_DTYPES)}), this one is {spec['dtype']}",
            )
        if spec["value_range"] is not None:
            low, high = INTEGER_LIMITS[spec["dtype"]]
            if spec["value_range"][0] < low or spec["value_range"][1] > high:
                raise c.fail(
                    f"{where}.value_range",
                    f"{spec['value_range']} does not fit {spec['dtype']} ({low} to {high}): declare the range its values "
                    "have, or the dtype that holds them",
                )


@_cross
def _compile_mode_with_options(c: Checker, plan: dict[str, Any]) -> None:
    compile_ = plan.get("compile")
    if compile_ and compile_["backend_options"] and compile_["mode"] != "default":
        raise c.fail(
            "compile.backend_options",
            'torch.compile takes either a mode or backend options, not both: set mode = "default" or drop backend_options',
        )


@_cross
def _training_tolerances(c: Checker, plan: dict[str, Any]) -> None:
    if "training" not in plan:
        return
    for dtype, tol in plan.get("tolerances", {}).items():
        if "task" in tol:
            raise c.fail(
                f"tolerances.{dtype}.task",
                "a training plan compares loss and gradients; declare loss and grad instead of task",
            )


@_cross
def _generation_plan(c: Checker, plan: dict[str, Any]) -> None:
    gen = plan.get("generation")
    if gen is None:
        return
    if "training" in plan:
        raise c.fail("generation", "a plan is either a training or a generation plan, not both")
    buckets = plan.get("padding", {}).get("buckets", [])
    if not buckets:
        raise c.fail(
            "generation", "a generation plan pads requests to buckets: declare [padding] buckets and above_largest"
        )
    timing = plan["timing"]
    too_many = decode_samples_problem(timing["warm_repetitions"], gen["decode_steps"], timing["remeasure_rounds"])
    if too_many:
        raise c.fail("generation.decode_steps", too_many)
    batch = max(b for b, _ in plan["matrix"]["shapes"])
    tokens = batch * (gen["decode_steps"] + 1)
    if tokens > MAX_GENERATED_TOKENS:
        raise c.fail(
            "matrix.shapes",
            f"a batch of {batch:,} x (decode_steps {gen['decode_steps']} + 1) = {tokens:,} greedy tokens a cell, "
            f"logged with the reference's on one generation event line; at most {MAX_GENERATED_TOKENS:,} fit the "
            "event contract's 8 MiB line limit",
        )
    if not plan["padding"]["mask_padded"]:
        raise c.fail(
            "padding.mask_padded",
            "a generation plan's requests are padded by the collector, which always masks the padded positions "
            "(attention mask 0 there): set it to true or leave it out",
        )
    if buckets[-1] + gen["decode_steps"] > gen["max_cache_len"]:
        raise c.fail(
            "generation.max_cache_len",
            f"the largest bucket {buckets[-1]} plus {gen['decode_steps']} decode steps need {buckets[-1] + gen['decode_steps']} positions, got {gen['max_cache_len']}",
        )
    asked = [k for k in ("preprocessing", "host_to_device", "output_retrieval") if plan["timing"]["scope"][k]]
    if asked:
        raise c.fail(
            "timing.scope",
            f"a generation plan times model calls only (time to first token, each decode call); {', '.join(asked)} cannot be timed: set them to false",
        )
    if plan["matrix"]["layouts"] != ["contiguous"]:
        raise c.fail(
            "matrix.layouts",
            'a generation plan\'s requests are padded by the collector into contiguous tensors: layouts = ["contiguous"]',
        )
    if gen["min_top_k_overlap"] > 1:
        raise c.fail("generation.min_top_k_overlap", f"a share between 0 and 1, got {gen['min_top_k_overlap']}")
    for dtype, tol in plan.get("tolerances", {}).items():
        task = tol.get("task")
        if task is not None and task["metric"] != "greedy_steps_agreeing":
            raise c.fail(
                f"tolerances.{dtype}.task.metric",
                f"a generation plan's task criterion is on greedy_steps_agreeing, got {task['metric']!r}",
            )
        if task is not None and task["threshold"] > gen["decode_steps"] + 1:
            raise c.fail(
                f"tolerances.{dtype}.task.threshold",
                f"at most decode_steps + 1 = {gen['decode_steps'] + 1} steps can agree, got {task['threshold']:g}",
            )


def validate(data: Any, file: str, text: str = "") -> dict[str, Any]:
    """Check a parsed plan against the schema; returns it with every default filled in.

    Absent optional tables stay absent, except those the collector always reads (timing,
    timing.scope, reference, compile), which are filled with their defaults.
    """
    c = Checker(file, key_lines(text) if text else {})
    if not isinstance(data, dict):  # pragma: no cover - tomllib always returns a table
        raise c.fail("", "expected a TOML document of tables")
    out: dict[str, Any] = {}
    for name, value in data.items():
        table = TABLES.get(name) if name in TOP_TABLES else None
        if table is None:
            kind = "table" if isinstance(value, dict) else "top-level key"
            moved = [
                f"{name}.{k} is {MOVED[f'{name}.{k}']}"
                for k in (value if isinstance(value, dict) else {})
                if f"{name}.{k}" in MOVED
            ]
            hint = f" ({'; '.join(moved)})" if moved else ""
            raise c.fail(
                _k(name),
                f"unknown {kind}; tables are {', '.join(f'[{t}]' for t in TOP_TABLES)}{_suggest(name, '')}{hint}",
            )
        out[name] = _check_table(c, table, value, name)
    for table in SCHEMA:
        if table.required and table.path not in out:
            raise c.fail(table.path, f"missing table [{table.path}]")
    for always in ("timing", "reference", "compile"):
        out.setdefault(always, _check_table(c, TABLES[always], {}, always))
    out["timing"].setdefault("scope", _check_table(c, TABLES["timing.scope"], {}, "timing.scope"))
    for check in CROSS_CHECKS:
        check(c, out)
    return out


def check_table(path: str, data: Any, file: str = "plan") -> dict[str, Any]:
    """One table checked on its own (``matrix`` also gets its cross-checks)."""
    c = Checker(file)
    out = _check_table(c, TABLES[path], data, path)
    if path == "matrix":
        _matrix_shapes(c, {"matrix": out})
    return out


def undecided(data: Any, path: str = "") -> list[str]:
    """Key paths holding a value no one agreed yet: an UNDECIDED text or a table marked proposed = true."""
    found: list[str] = []
    if isinstance(data, dict):
        if data.get("proposed") is True:
            found.append(f"{path}.proposed" if path else "proposed")
        for name, value in data.items():
            if name != "proposed":
                found += undecided(value, f"{path}.{name}" if path else str(name))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            found += undecided(value, f"{path}[{i}]")
    elif isinstance(data, str) and data.startswith(UNDECIDED):
        found.append(path)
    return found


def default_text(key: Key) -> str:
    if key.required:
        return "required"
    if key.default is None:
        return "not set"
    if isinstance(key.default, bool):
        return "true" if key.default else "false"
    if isinstance(key.default, str):
        return f'"{key.default}"' if key.default else '""'
    if isinstance(key.default, list):
        return "[" + ", ".join(f'"{v}"' if isinstance(v, str) else str(v) for v in key.default) + "]"
    if isinstance(key.default, dict):
        return "{}"
    return str(key.default)


def module_depth(name: str) -> int:
    """A submodule's depth, as [localization] max_depth counts it: its name's parts, a list's index
    not counted ("blocks.0" is 1, "encoder.layer.0.attention" is 3), so a ModuleList's members sit
    at the depth of the list; a top-level index (the layers of an nn.Sequential model: "0",
    "2.weight_layer") counts, so every submodule is at depth 1 or more."""
    parts = name.split(".")
    return max(1, sum(1 for part in parts if not part.isdigit()) + (1 if parts[0].isdigit() else 0))
