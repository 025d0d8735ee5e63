"""The event-log contract: one msgspec Struct per event kind of the JSON-lines run log.

Every line of ``events.jsonl`` is one JSON object carrying the envelope fields
(``schema_version``, ``seq``, ``kind``, ``time``) plus the fields of its kind. These Structs are
the single definition of the contract: the reader checks every line against them
(contract/validation.py, through the mirrors of contract/fast.py, which are derived from them),
every consumer reads them, and the JSON Schema in ``reportgen/contract/schema/`` and the field
reference in ``reportgen/contract/schema/EVENTS.md`` are generated from them
(``python -m reportgen.contract.schema_doc``); a test fails when either is stale.

An optional field the line left out holds its default (None unless stated). Constraints are
``msgspec.Meta`` on the field's type; the rules that tie two fields together are
``__post_init__`` checks raising ValueError, which the derived mirrors run too (so they treat
UNSET, a mirror's left-out field, as absent).

Versioning: ``schema_version`` is ``MAJOR.MINOR``. A minor bump only adds optional fields or
new event kinds, so an older reader accepts a newer minor log with warnings; a major bump may
change meaning and is refused.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal, Union, get_args

import msgspec
from msgspec import UNSET, Meta, field

from collector.descriptors import backend_families

SCHEMA_MAJOR = 1
SCHEMA_MINOR = 7
SCHEMA_VERSION = f"{SCHEMA_MAJOR}.{SCHEMA_MINOR}"


def schema_tuple(version: str) -> tuple[int, ...]:
    """(1, 2) from a log's schema_version '1.2'; () when it is no MAJOR.MINOR."""
    major, _, minor = version.partition(".")
    return (int(major), int(minor)) if major.isdigit() and minor.isdigit() else ()


CellStatus = Literal["pass", "mismatch", "nonfinite", "error", "skipped"]
Mode = Literal["eager", "compiled"]
Layout = Literal["contiguous", "noncontiguous"]
FailurePhase = Literal["setup", "inputs", "reference", "transfer", "compile", "run", "compare"]
# Every backend descriptor's families, then "unknown" (collector/descriptors.py; a plugin
# backend's families come with it).
BackendFamily = Literal[backend_families()]  # type: ignore[valid-type]
CacheCondition = Literal[
    "fresh_process_empty_cache",
    "persistent_cache",
    "restart_populated_cache",
    "compiled_in_process",
    "eager_no_compile",
]


# Ranges every number of the log must keep: counts and sizes fit a signed 64-bit integer, times
# are at most a billion seconds (about 31 years), so every figure can be formatted and drawn.
# A value outside its range is an error at its line, not an overflow in a report.
INT64_MAX = 2**63 - 1
MAX_SECONDS = 1e9
Count = Annotated[int, Meta(ge=0, le=INT64_MAX)]
Positive = Annotated[int, Meta(ge=1, le=INT64_MAX)]
Int64 = Annotated[int, Meta(ge=-(2**63), le=INT64_MAX)]
Seconds = Annotated[float, Meta(ge=0, le=MAX_SECONDS)]
NonNegative = Annotated[float, Meta(ge=0)]
# msgspec matches a pattern with Python's re.search, whose $ also matches before a final
# newline: the length bound (and the lookahead below) keep such a value out, as the
# JSON Schema's regular expressions do.
SHA256_PATTERN = r"^[0-9a-f]{64}$"
Sha256 = Annotated[str, Meta(pattern=SHA256_PATTERN, min_length=64, max_length=64)]
# A run id: any text but a control character (C0, DEL, C1), none at its end either.
RUN_ID_PATTERN = r"^[^\x00-\x1f\x7f-\x9f]+(?!\n)$"
VERSION_PATTERN = r"^\d+\.\d+(?!\n)$"


def Doc(description: str) -> Meta:
    """A field's meaning, as the JSON Schema and EVENTS.md give it."""
    return Meta(description=description)


def absent(value: Any) -> bool:
    """A field left out: None (a definition's default) or UNSET (a mirror's, contract/fast.py)."""
    return value is None or value is UNSET


class Strict(msgspec.Struct, forbid_unknown_fields=True, frozen=True, gc=False):
    """Base for every Struct: unknown fields are errors (NaN and Infinity are not JSON, and the
    reader refuses a number too large for a float). A decoded line holds no reference cycle,
    so its Structs stay out of the cyclic collector's sight.

    Every subclass says ``kw_only`` (msgspec's option holds for the fields a class declares,
    so fields are listed in the order a reader expects them, required or not) and ``frozen``
    (inherited anyway; said again for type checkers)."""

    def get(self, name: str, default: Any = None) -> Any:
        """A field as a dict would give it: ``default`` when absent (None or UNSET) or unknown."""
        value = getattr(self, name, None)
        return default if absent(value) else value

    def __getitem__(self, name: str) -> Any:
        """A field as a dict would give it: KeyError when a mirror's line left it out (UNSET)."""
        value = getattr(self, name)
        if value is UNSET:
            raise KeyError(name)
        return value


class Fact(Strict, kw_only=True, frozen=True):
    """A value the collector tried to read: either its value or why it is unknown, never silence."""

    value: Annotated[str | None, Doc("The value as read, as text.")] = None
    source: Annotated[str | None, Doc("Where it was read from (API, file, command).")] = None
    unknown_reason: Annotated[str | None, Doc("Why the value could not be read; set exactly when value is null.")] = (
        None
    )

    def __post_init__(self) -> None:
        if absent(self.value) == absent(self.unknown_reason):
            raise ValueError("a fact has either a value or an unknown_reason, not both or neither")


class Envelope(Strict, tag_field="kind", kw_only=True, frozen=True):
    """What every line carries; ``kind`` (each event's tag) says which Struct the rest is."""

    kind: ClassVar[str]
    schema_version: Annotated[
        str,
        Meta(
            pattern=VERSION_PATTERN,
            description="MAJOR.MINOR of the contract this line follows.",
            examples=[SCHEMA_VERSION],
        ),
    ]
    seq: Annotated[Count, Doc("Line sequence number: starts at 0, strictly increasing.")]
    time: Annotated[
        str,
        Meta(
            description="UTC time the event was written, ISO 8601 with offset or Z.",
            examples=["2026-11-29T21:50:00.123456Z"],
        ),
    ]


# --- run start -------------------------------------------------------------------------------


class TargetChoice(Strict, kw_only=True, frozen=True):
    """How the run's target was chosen: what was asked for, what it resolved to, and why."""

    requested: Annotated[str, Doc("--target as given: auto, cpu, cuda or neuron.")]
    resolved: Annotated[str, Doc("The target the run used.")]
    reason: Annotated[
        str,
        Doc(
            "Why: what auto probed and found, or that the command line named it (and whether it overrode the plan's target)."
        ),
    ]


class ProvenanceFile(Strict, kw_only=True, frozen=True):
    """One file the run read to decide what to do, or (collector_source) a file of the collector's
    own, by the sha256 of its bytes."""

    role: Annotated[
        str,
        Doc(
            "plan, workload_module, workload_import (a local file the workload module imports, directly or through another), constraint_rules (the constraint data the collector checks plans against), backend_adapter, backend_descriptor, collector_source (collector 0.24.0 on: each file in the collector's folder, read or not, its documents, its workloads folder and bytecode caches aside), ..."
        ),
    ]
    path: Annotated[str, Doc("Where the collector read it (absolute on the host that ran).")]
    sha256: Sha256 | None = None
    unknown_reason: Annotated[
        str | None, Doc("Why the file's sha256 is not recorded; set exactly when sha256 is null.")
    ] = None

    def __post_init__(self) -> None:
        if absent(self.sha256) == absent(self.unknown_reason):
            raise ValueError("a provenance file has either a sha256 or an unknown_reason, not both or neither")


class Provenance(Strict, kw_only=True, frozen=True):
    """Which code wrote the log and which data it read (schema 1.2)."""

    collector_version: Annotated[str, Doc("The collector's version (collector/__init__.py).")]
    git_commit: Annotated[Fact, Doc("The collector checkout's commit, or why it is unknown (no git, no .git).")]
    git_dirty: Annotated[
        Fact,
        Doc(
            "'true' when the checkout holding the collector had uncommitted changes to tracked files anywhere in it, or untracked files not ignored in the collector's folder; 'false' when not; or why unknown."
        ),
    ]
    files: Annotated[
        list[ProvenanceFile],
        Doc(
            "Every plan, workload module (and local file it imports) and constraint or backend data file the run read, and (collector 0.24.0 on) each file of the collector's own code and data."
        ),
    ] = field(default_factory=list)


class ScheduledTask(Strict, kw_only=True, frozen=True):
    """The campaign task that ran the collector, as the scheduler and the task script said."""

    campaign: Annotated[str, Doc("Campaign name.")]
    campaign_id: Annotated[
        str,
        Doc("The campaign's id (its name and submission time); its ledger is _campaigns/<id>/ in the destination."),
    ]
    environment: Annotated[
        str | None, Doc("The campaign environment's label (e.g. an SDK release and instance type).")
    ] = None
    task_index: Annotated[Count | None, Doc("The task's index in the campaign.")] = None
    scheduler: Annotated[str | None, Doc("slurm or kubernetes.")] = None
    job_id: Annotated[str | None, Doc("The scheduler's job id (Slurm ARRAYJOB_TASK) or the Job's name.")] = None
    attempt: Annotated[
        str | None,
        Doc("s<submission>-r<restart>: the submission (1, +1 per resume) and the scheduler's retries of the index."),
    ] = None
    node: Annotated[str | None, Doc("Host name of the node the task ran on.")] = None


class RunStart(Envelope, tag="run_start", kw_only=True, frozen=True):
    """First line of every log: who wrote it, for which workload, and whether it is real data."""

    run_id: Annotated[
        str,
        Meta(
            min_length=1,
            pattern=RUN_ID_PATTERN,
            description="Unique id of the run; also its directory name. No control character (a newline in it would split every line that names the run).",
        ),
    ]
    collector: Annotated[str, Doc("Name and version of the program that wrote the log.")]
    workload: Annotated[str, Meta(min_length=1, description="Workload name from the plan.")]
    target: Annotated[str, Doc("Target asked for on the command line (cpu, cuda, neuron).")]
    command: Annotated[list[str], Doc("The command line that started the run.")]
    started_at: Annotated[str, Doc("UTC start time, ISO 8601.")]
    origin: Annotated[
        Literal["measured", "synthetic"],
        Doc(
            "'measured': a real run of the collector; 'synthetic': a hand-written or "
            "generated fixture that is evidence of nothing."
        ),
    ]
    origin_note: Annotated[str | None, Doc("Why a synthetic log exists.")] = None
    target_choice: Annotated[
        TargetChoice | None,
        Doc("How --target was resolved (auto records what it found); absent: not recorded."),
    ] = None
    provenance: Annotated[
        Provenance | None,
        Doc(
            "The collector's version and git state and the sha256 of the files the run read; absent: not recorded (logs before 1.2)."
        ),
    ] = None
    scheduled: Annotated[
        ScheduledTask | None,
        Doc("The campaign task this run was (absent: not run by a campaign, or by a collector before schema 1.2)."),
    ] = None


# --- environment -----------------------------------------------------------------------------


class InstalledArtifact(Strict, kw_only=True, frozen=True):
    """An installed distribution as the package metadata describes it."""

    name: str
    version: str
    installer: Annotated[str | None, Doc("INSTALLER metadata (pip, uv, ...).")] = None
    wheel_tags: Annotated[list[str], Doc("Tags from the WHEEL file.")] = field(default_factory=list)
    source_url: Annotated[str | None, Doc("direct_url.json url, if installed from one.")] = None


class BackendSetting(Strict, kw_only=True, frozen=True):
    """One variable the adapter pins or reads, as the run had it."""

    name: str
    value: Annotated[str | None, Doc("The value during the run; null when unset.")]
    set_by: Annotated[
        Literal["collector", "environment", "unset"],
        Doc("'collector': the collector set it; 'environment': it was already set and kept; 'unset'."),
    ]
    note: Annotated[str, Doc("What the value means, or why it may not have taken effect.")] = ""


class Environment(Envelope, tag="environment", kw_only=True, frozen=True):
    """Where the run really happened: backend family, versions, device, relevant variables."""

    backend_family: Annotated[BackendFamily, Doc("Backend family the cells ran on.")]  # type: ignore[valid-type]
    backend_family_reason: Annotated[str, Doc("How the family was decided (probes, versions).")]
    device_type: Annotated[str, Doc("torch device type the cells ran on: cpu, cuda, neuron.")]
    versions: Annotated[
        dict[str, Fact],
        Doc(
            "python, torch, torch_neuronx, neuronx_cc, neuron_driver, neuron_runtime, "
            "cuda, os_release and anything else read; unknown ones carry their reason."
        ),
    ]
    device: Annotated[dict[str, Fact], Doc("instance_type, device_name, device_count, hostname.")]
    env_vars: Annotated[
        dict[str, str], Doc("Relevant variables: TORCH_NEURONX_*, NEURON_*, TORCHINDUCTOR_*, CUDA_*.")
    ] = field(default_factory=dict)
    artifacts: Annotated[list[InstalledArtifact], Doc("Installed distributions that matter for the backend.")] = field(
        default_factory=list
    )
    backend_settings: Annotated[
        list[BackendSetting] | None,
        Doc(
            "Variables the adapter sets or relies on (e.g. NEURON_LAUNCH_BLOCKING, "
            "TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION): the value the run had and who set it. "
            "Absent: not recorded."
        ),
    ] = None


# --- plan ------------------------------------------------------------------------------------


class TaskCriterion(Strict, kw_only=True, frozen=True):
    metric: Annotated[str, Doc("Task metric name, e.g. cosine_to_reference.")]
    op: Annotated[Literal[">=", "<="], Doc("How the metric compares with the threshold.")]
    threshold: float


class ElementTolerance(Strict, kw_only=True, frozen=True):
    atol: NonNegative
    rtol: NonNegative


class Tolerance(Strict, kw_only=True, frozen=True):
    """Elementwise rule |out - ref| <= atol + rtol * |ref| plus a task-quality criterion."""

    atol: NonNegative
    rtol: NonNegative
    task: Annotated[TaskCriterion | None, Doc("Task-quality acceptance criterion.")] = None
    source: Annotated[str, Doc("Who set it: the plan, or the collector's default.")] = "plan"
    loss: Annotated[ElementTolerance | None, Doc("Training: rule for the loss at each step.")] = None
    grad: Annotated[
        ElementTolerance | None,
        Doc("Training: rule for every parameter gradient and the updated parameters."),
    ] = None


class Training(Strict, kw_only=True, frozen=True):
    """Training cells: fixed steps from identical weights, inputs and seeds."""

    steps: Positive
    seed: Int64
    optimizer: Annotated[str, Doc("Optimizer as the workload builds it, e.g. 'AdamW(lr=1e-3)'.")]
    randomness: Annotated[str, Doc("How stochastic parts were made comparable, e.g. 'dropout off'.")]


class Generation(Strict, kw_only=True, frozen=True):
    """A generation plan (schema 1.2): each cell serves its request as a text service would."""

    decode_steps: Annotated[Positive, Doc("Decode calls after the prefill, one greedy token each.")]
    max_cache_len: Annotated[Positive, Doc("Positions of the static KV cache: every decode call has this one shape.")]
    padding_side: Annotated[Literal["left", "right"], Doc("Where requests and masks are padded.")]
    config: Annotated[str, Doc("The workload's named model configuration.")] = ""
    top_k: Annotated[Positive, Doc("Top-k overlap: the reference's k highest-scored tokens compared at each step.")]
    min_top_k_overlap: Annotated[
        float,
        Meta(
            ge=0,
            le=1,
            description="Smallest share of the reference's top-k the cell's top-k must hold at every judged step.",
        ),
    ]


class PlannedCell(Strict, kw_only=True, frozen=True):
    """One cell of the matrix: a shape, layout, dtype and execution mode."""

    case: Annotated[str, Doc("Stable case key, e.g. b1-l128-contiguous-float32-eager.")]
    batch: Positive
    length: Positive
    layout: Layout
    dtype: Annotated[str, Doc("Compute dtype of floating inputs and weights.")]
    mode: Mode
    repeat_of: Annotated[str | None, Doc("Set on a cache check: the case key whose shape this repeats.")] = None


class Selection(Strict, kw_only=True, frozen=True):
    """Cells chosen to run by --only / --modes; the plan's matrix still lists every planned cell."""

    only: Annotated[list[str], Doc("--only globs given.")] = field(default_factory=list)
    modes: Annotated[list[str], Doc("--modes given.")] = field(default_factory=list)
    cases: Annotated[list[str], Doc("Case keys selected to run; every other planned cell was not run (deselected).")]


class TimingScope(Strict, kw_only=True, frozen=True):
    preprocessing: Annotated[bool, Doc("Tokenising/preparing inputs is inside the timed region.")]
    host_to_device: Annotated[bool, Doc("Copying inputs to the device is timed.")]
    output_retrieval: Annotated[bool, Doc("Copying outputs back to the host is timed.")]
    synchronized: Annotated[bool, Doc("The device is synchronised at every timing boundary.")]
    note: str = ""


class Padding(Strict, kw_only=True, frozen=True):
    buckets: Annotated[list[Int64], Doc("Sequence-length buckets.")] = field(default_factory=list)
    above_largest: Annotated[str | None, Doc("Policy for requests above the largest.")] = None
    mask_padded: Annotated[bool, Doc("Attention masks are padded like the inputs.")] = True


class OutputRule(Strict, kw_only=True, frozen=True):
    """Which elements of one output are judged; the rest are measured apart, never hidden."""

    output: Annotated[str, Doc("Output name as run_model returns it.")]
    mask: Annotated[
        str | None,
        Doc("Input whose zeros mark elements not judged (aligned with the output's leading dimensions)."),
    ] = None
    region: Annotated[
        list[str] | None,
        Doc("Index slices over the output's leading dimensions that are judged, e.g. [':', '0:64']."),
    ] = None
    description: Annotated[str, Doc("The rule in words, e.g. 'attention_mask != 0'.")]


class ParamRule(Strict, kw_only=True, frozen=True):
    """Training: how the parameters of one group are judged."""

    group: str
    match: Annotated[list[str], Meta(min_length=1, description="Glob patterns over parameter names.")]
    rule: Annotated[
        Literal["elementwise", "lr-bound", "zero-grad"],
        Doc(
            "elementwise: the grad tolerance; lr-bound: where the reference gradient is zero, "
            "|updated - reference| <= k * lr (elsewhere elementwise); zero-grad: gradients exactly zero in both."
        ),
    ]
    k: Annotated[NonNegative | None, Doc("lr-bound: the multiple of the learning rate allowed.")] = None
    lr: Annotated[
        NonNegative | None,
        Doc("lr-bound: the group's learning rate, read from the optimizer before any step."),
    ] = None
    zero_below: Annotated[
        float,
        Meta(
            ge=0, description="lr-bound: a reference gradient element counts as zero when |grad| <= this at every step."
        ),
    ] = 0.0
    description: Annotated[str, Doc("The rule in words, as the report shows it.")]


class CompareRules(Strict, kw_only=True, frozen=True):
    """Comparison rules declared in the plan before any result (schema 1.1; absent: every element judged elementwise)."""

    outputs: list[OutputRule] = field(default_factory=list)
    params: list[ParamRule] = field(default_factory=list)


class CompileOptions(Strict, kw_only=True, frozen=True):
    """The options of torch.compile (the plan's [compile] table, collector/PLAN.md)."""

    dynamic: Annotated[bool, Doc("torch.compile(dynamic=...).")]
    mode: Annotated[str, Doc("torch.compile(mode=...); 'default' when none was given.")]
    fullgraph: Annotated[bool, Doc("torch.compile(fullgraph=...): a graph break is an error.")]
    backend_options: Annotated[
        dict[str, str | bool | int | float],
        Doc("torch.compile(options=...), passed to the backend as written."),
    ] = field(default_factory=dict)


class DeclaredInput(Strict, kw_only=True, frozen=True):
    """One model input as the plan says the real preprocessing produces it (declared, not measured)."""

    dtype: str
    layout: Layout
    how: Annotated[
        str | None, Doc("How a non-contiguous input comes about: slice, transpose, channels_last, other.")
    ] = None
    value_range: Annotated[
        Annotated[list[int], Meta(min_length=2, max_length=2)] | None,
        Doc("Integer inputs: [smallest, largest] value."),
    ] = None
    note: str = ""


class Plan(Envelope, tag="plan", kw_only=True, frozen=True):
    """Declared before any result: what will be run and what counts as correct."""

    workload: str
    description: str = ""
    model_revision: Annotated[str, Doc("Model name and revision as the workload states it.")]
    weights_sha256: Annotated[
        Sha256 | None,
        Doc("sha256 of the saved weights file (its bytes: the same tensors written another way differ)."),
    ] = None
    weights_content_sha256: Annotated[
        Sha256 | None,
        Doc(
            "sha256 of the weights by content: of the built model's state_dict (its parameters and persistent "
            "buffers; a buffer registered persistent=False is not in it), recipe tensor-content-v1 "
            "(collector/content.py: names sorted, dtype, shape and contiguous little-endian bytes of each tensor), "
            "whatever file they were written to or loaded from. "
            "Absent: not hashed (logs before 1.2, or the hash failed: the weights artifact says why)."
        ),
    ] = None
    weights_origin: Annotated[
        Literal["pretrained", "synthetic", "none"] | None,
        Doc(
            "Where the weights come from, as the workload module states it (WEIGHTS_ORIGIN, 1.4 logs on): "
            "'pretrained' trained weights from a named source, 'synthetic' made up (a seeded initialisation, "
            "never trained), 'none' no learned weights. Absent: not stated (or a log before 1.4)."
        ),
    ] = None
    target: str
    intended_target: Annotated[
        str | None,
        Doc(
            "The target the plan is meant to certify (the plan's [workload] target); absent when the plan does not say."
        ),
    ] = None
    matrix: Annotated[
        list[PlannedCell],
        Meta(
            min_length=1,
            description="Every planned cell, whether or not this run ran it (selection says which ran; 1.0 logs list only the cells run).",
        ),
    ]
    reference: Annotated[str, Doc("What the trusted reference is, e.g. 'cpu eager float32'.")]
    tolerances: Annotated[dict[str, Tolerance], Doc("Per dtype name.")]
    warm_repetitions: Positive
    warmup: Annotated[
        Count | None,
        Doc("Uncounted calls before each warm series, the plan's timing.warmup (1.6 logs on; absent: not recorded)."),
    ] = None
    remeasure_rounds: Annotated[
        Count | None, Doc("Rounds of re-measurement allowed for an unstable warm series (1.2 logs on).")
    ] = None
    timing_scope: TimingScope
    requirements: Annotated[list[str], Doc("Hard requirements, e.g. requires_float64.")] = field(default_factory=list)
    padding: Padding | None = None
    compile_options: Annotated[
        CompileOptions | None,
        Doc(
            "The plan's [compile] options for compiled cells; absent in logs that predate them (then dynamic=False, mode default)."
        ),
    ] = None
    declared_inputs: Annotated[
        dict[str, DeclaredInput] | None,
        Doc(
            "Per model input, what the plan declares its real preprocessing produces; absent when the plan declares none."
        ),
    ] = None
    attention_path: Annotated[str | None, Doc("Attention implementation, e.g. sdpa.")] = None
    operators_note: str | None = None
    training: Annotated[Training | None, Doc("Set for a training workload: cells run training steps.")] = None
    selection: Annotated[
        Selection | None,
        Doc("Set when --only or --modes chose a subset: which cells were to run. Absent: all of them."),
    ] = None
    compare: Annotated[
        CompareRules | None,
        Doc("Judged regions per output and rules per parameter group; absent: not declared."),
    ] = None
    matrix_cells: Annotated[
        Count | None,
        Doc(
            "From 1.2: the cells the plan's matrix expands to when a cap ([matrix] max_cells, --max-cells) cut it to the "
            "cells in matrix; the rest are not part of this run. Absent: matrix is the whole plan. A log line is at most 8 MiB, so "
            "one run plans at most 20,000 cells."
        ),
    ] = None
    generation: Annotated[
        Generation | None,
        Doc("Set for a generation workload (schema 1.2): prefill and decode steps on a static KV cache."),
    ] = None

    def __post_init__(self) -> None:
        first: dict[str, int] = {}
        for index, cell in enumerate(self.matrix):
            if (earlier := first.setdefault(cell.case, index)) != index:
                raise ValueError(
                    f"matrix lists case {cell.case!r} twice (entries {earlier} and {index}); each case key names one cell"
                )


# --- artifacts -------------------------------------------------------------------------------


class Artifact(Envelope, tag="artifact", kw_only=True, frozen=True):
    """A file saved beside the log so the same values feed every mode."""

    role: Literal["inputs", "weights", "reference_output", "trace", "other"]
    path: Annotated[str, Doc("Path relative to the run directory.")]
    bytes: Count
    sha256: Annotated[Sha256, Doc("sha256 of the file's bytes.")]
    case: str | None = None
    content_sha256: Annotated[
        Sha256 | None,
        Doc(
            "sha256 of the tensors by content (see content_recipe), independent of how the file was written: for the "
            "weights, of the built model's state_dict (parameters and persistent buffers, as the plan's "
            "weights_content_sha256), not of every tensor a shipped file holds; for inputs and reference outputs, of "
            "the saved tensors. "
            "Absent: not hashed (logs before 1.2; content_unknown_reason says why otherwise)."
        ),
    ] = None
    content_recipe: Annotated[
        str | None,
        Doc("The content hash's recipe, e.g. tensor-content-v1 (collector/content.py documents it)."),
    ] = None
    content_by_key: Annotated[
        dict[str, Sha256] | None,
        Doc(
            "Inputs and reference outputs: the content sha256 of each input shape's tensors (key as in reference.shape). Absent: not hashed."
        ),
    ] = None
    content_unknown_reason: Annotated[
        str | None,
        Doc("Why the content hash is absent, when the collector tried and failed; never beside a content_sha256."),
    ] = None

    def __post_init__(self) -> None:
        if not absent(self.content_sha256) and not absent(self.content_unknown_reason):
            raise ValueError(
                "content_sha256 and content_unknown_reason are both set: an artifact has either a content hash or why it has none, not both"
            )


# --- reference -------------------------------------------------------------------------------


class Reference(Envelope, tag="reference", kw_only=True, frozen=True):
    """The trusted reference for one shape: run twice to show its noise floor."""

    shape: Annotated[str, Doc("Input key, e.g. b1-l128-contiguous (the values every dtype and mode get).")]
    device: str
    dtype: Annotated[str, Doc("dtype the reference computed in.")] = "float32"
    runs: Positive
    noise_max_abs: Annotated[NonNegative | None, Doc("Max |run1 - run2|; 0 when bitwise equal.")] = None
    deterministic: bool | None = None
    float64_max_abs: Annotated[
        NonNegative | None, Doc("Max |reference - float64 golden| when a golden run was made.")
    ] = None
    nonfinite: Annotated[
        Count | None, Doc("NaN and Inf elements in the reference's own outputs; absent: not measured.")
    ] = None
    golden_nonfinite: Annotated[
        Count | None,
        Doc("NaN and Inf elements in the float64 golden outputs; absent: not measured or no golden run."),
    ] = None
    noise_beyond_tolerance: Annotated[
        dict[str, Count] | None,
        Doc(
            "From 1.5, per dtype the plan gives a tolerance for: the judged elements where the second run differs from the first by more than that tolerance (the rule cells are judged by, the first run as the expected side). Above 0: the reference does not repeat within that dtype's tolerance, so a cell of that dtype at this shape cannot tell a backend error from the reference's own. Absent: not measured (before 1.5, or training and generation references); null: the two runs could not be compared element by element."
        ),
    ] = None


# --- case result -----------------------------------------------------------------------------


class OutputInfo(Strict, kw_only=True, frozen=True):
    name: str
    shape: list[Int64]
    dtype: str
    nonfinite: Annotated[Count, Doc("Count of NaN and Inf elements.")]


class InputInfo(OutputInfo, kw_only=True, frozen=True):
    contiguous: Annotated[
        bool,
        Doc(
            "Whether the tensor was contiguous. In case_result.inputs: the host tensor the "
            "workload prepared (1.0 logs: as prepared, not checked at the model); in inputs_fed: as the "
            "model received it."
        ),
    ]
    strides: Annotated[list[Int64] | None, Doc("Strides in elements; absent: not recorded.")] = None
    device: Annotated[str | None, Doc("Device the tensor was on; absent: not recorded.")] = None


class RegionStats(Strict, kw_only=True, frozen=True):
    """An output's elements outside its declared judged region: measured and shown, never judged."""

    count: Annotated[Count, Doc("Elements outside the judged region.")]
    max_abs: Annotated[NonNegative | None, Doc("Largest |out - ref| there; null when not finite.")]
    max_rel: Annotated[
        NonNegative | None, Doc("Largest |out - ref| / |ref| there (non-zero ref); null when not finite.")
    ]
    nonfinite: Annotated[Count, Doc("NaN or Inf output elements there.")]
    beyond_tolerance: Annotated[Count | None, Doc("Elements there that the tolerance would have refused.")] = None


class OutputStats(Strict, kw_only=True, frozen=True):
    """One output's comparison, over its judged region only."""

    name: str
    mismatched: Count
    total: Annotated[Count, Doc("Elements judged.")]
    max_abs: NonNegative | None
    max_rel: NonNegative | None
    region: Annotated[
        str | None,
        Doc("The plan's judged region, e.g. 'attention_mask != 0'; null: every element is judged."),
    ] = None
    outside: Annotated[RegionStats | None, Doc("Statistics of the elements the region leaves out.")] = None


class ErrorStats(Strict, kw_only=True, frozen=True):
    """Elementwise comparison with the reference; a null max_abs or max_rel means some
    difference was not finite (a NaN or Inf in the output or the reference).

    With judged regions declared in the plan, the top-level figures cover the judged elements
    only; ``per_output`` keeps each output's figures and the excluded elements' own.
    """

    max_abs: NonNegative | None
    max_rel: NonNegative | None
    mismatched: Count
    total: Count
    worst_index: Annotated[
        list[Int64],
        Doc(
            "Index of the element with the largest |diff| / allowance: among the failing elements when any fails (from 1.2; a NaN difference ranks above every other)."
        ),
    ]
    worst_output: str = ""
    allowed_at_worst: Annotated[
        NonNegative | None,
        Doc(
            "atol + rtol * |ref| at the worst index; 0 where the output's reference is an integer or boolean tensor, compared exactly (collector 0.9.0 and later; earlier collectors judged such outputs by the float tolerance); null (from 1.2) when that is not finite (a NaN or Inf in the reference there)."
        ),
    ]
    diff_at_worst: NonNegative | None
    per_output: Annotated[list[OutputStats] | None, Doc("Per output; absent in logs written before 1.1.")] = None


class TaskMetric(Strict, kw_only=True, frozen=True):
    name: str
    value: float | None
    criterion: TaskCriterion | None = None
    passed: bool | None = None


class Failure(Strict, kw_only=True, frozen=True):
    phase: Annotated[
        FailurePhase,
        Doc(
            "Where the cell failed: setup, inputs (make_inputs at this shape), reference (the CPU"
            " reference at this shape), transfer (inputs to the device), compile, run, compare."
        ),
    ]
    type: str
    message: str


class CaseResult(Envelope, tag="case_result", kw_only=True, frozen=True):
    """The correctness outcome of one planned cell."""

    case: str
    status: CellStatus
    inputs: Annotated[
        list[InputInfo],
        Doc(
            "Inputs as the workload prepared them on the host for the planned layout, after "
            "the dtype cast (integer and boolean inputs keep their dtype)."
        ),
    ] = field(default_factory=list)
    inputs_fed: Annotated[
        list[InputInfo] | None,
        Doc(
            "Tensors the model really received at its call boundary (forward pre-hook) on "
            "the cell's first call. Absent: not measured."
        ),
    ] = None
    layout_fed: Annotated[
        Layout | None,
        Doc("Layout of what the model received on every observed call (non-contiguous if any tensor was)."),
    ] = None
    layout_achieved: Annotated[
        bool | None,
        Doc(
            "Whether every observed call of the cell (first call, and the repeat of a compiled "
            "cell) received the planned layout. False: the cell is untested for its planned layout. "
            "Absent: not measured."
        ),
    ] = None
    outputs: list[OutputInfo] = field(default_factory=list)
    error_stats: ErrorStats | None = None
    task_metric: TaskMetric | None = None
    warnings: list[str] = field(default_factory=list)
    failure: Failure | None = None
    skip_reason: str | None = None
    recompiled: Annotated[bool | None, Doc("On a cache check (repeat_of): whether the repeat compiled again.")] = None


# --- operators / fallback --------------------------------------------------------------------


class MeasuredList(Strict, tag_field="status", tag="measured", kw_only=True, frozen=True):
    """A list that was measured (it may be empty: nothing fell back)."""

    status: ClassVar[Literal["measured"]] = "measured"
    items: list[str] = field(default_factory=list)
    reason: str | None = None


class NotMeasured(Strict, tag_field="status", kw_only=True, frozen=True):
    """A list that was not measured: why is required, and no items may be given."""

    status: ClassVar[Literal["not_applicable", "unmeasured"]]
    items: Annotated[list[str], Meta(max_length=0)] = field(default_factory=list)
    reason: Annotated[str, Meta(min_length=1)]


class NotApplicable(NotMeasured, tag="not_applicable", kw_only=True, frozen=True):
    """A list that does not apply to the cell: why is required, and no items may be given."""

    status: ClassVar[Literal["not_applicable"]] = "not_applicable"


class Unmeasured(NotMeasured, tag="unmeasured", kw_only=True, frozen=True):
    """A list the collector could not measure: why is required, and no items may be given."""

    status: ClassVar[Literal["unmeasured"]] = "unmeasured"


# A list that was measured, or an explicit statement of why it was not. Declared as a union
# tagged by ``status`` rather than checked in code, so the JSON Schema states the rule too.
Measured = Union[MeasuredList, NotApplicable, Unmeasured]


class Transfers(Strict, kw_only=True, frozen=True):
    status: Literal["measured", "not_applicable", "unmeasured"]
    count: Count | None = None
    bytes: Count | None = None
    reason: str | None = None


class Operators(Envelope, tag="operators", kw_only=True, frozen=True):
    """Ops executed and ops that fell back to the CPU for one cell, and its host/device copies."""

    case: str
    executed: Annotated[Measured, Doc("Ops the cell executed.")]
    fallback: Annotated[Measured, Doc("Ops that fell back to the CPU; measured and empty means none did.")]
    transfers: Annotated[Transfers, Doc("Host/device copies during the cell's calls.")]


# --- compile ---------------------------------------------------------------------------------


class GraphBreak(Strict, kw_only=True, frozen=True):
    reason: str
    count: Positive = 1


class CacheDir(Strict, kw_only=True, frozen=True):
    """One compile-cache directory listed around a first call."""

    role: Annotated[str, Doc("What it caches, e.g. inductor, triton, neff, inductor-precompiled-headers.")]
    path: str
    redirected: Annotated[
        bool,
        Doc(
            "True when the collector pointed it at a directory it made; False for a "
            "directory the backend keeps elsewhere (it may hold entries from earlier runs)."
        ),
    ]
    entries_before: Annotated[Count, Doc("Files below it before the call.")]
    entries_after: Annotated[Count | None, Doc("Files below it after the call.")] = None


class Compile(Envelope, tag="compile", kw_only=True, frozen=True):
    """Compilation facts for one compiled cell (for training: one event per graph)."""

    case: str
    graph: Annotated[
        Literal["inference", "forward", "backward"],
        Doc("Which graph: training cells compile a forward and a backward graph."),
    ] = "inference"
    generation_graph: Annotated[
        Literal["prefill", "decode"] | None,
        Doc(
            "Generation cells (1.2): the inference graph is the prefill of the cell's bucket or the one decode graph; absent for other cells."
        ),
    ] = None
    bucket: Annotated[
        Positive | None, Doc("Generation cells (1.2): the bucket (padded prompt length) the cell served.")
    ] = None
    compile_first_result_s: Seconds | None = None
    graphs: Count | None = None
    graph_breaks: list[GraphBreak] = field(default_factory=list)
    recompiles: Count | None = None
    cache_hits: Count | None = None
    cache_misses: Count | None = None
    recompile_limit_hit: bool = False
    cache_condition: CacheCondition
    cache_dir: str | None = None
    cache_entries_before: Annotated[
        Count | None, Doc("Entries in the listed cache directories just before the first call.")
    ] = None
    cache_entries_after: Annotated[Count | None, Doc("Entries in the same directories after it.")] = None
    cache_dirs: Annotated[list[CacheDir] | None, Doc("Each cache directory listed, with its counts.")] = None
    compile_options: Annotated[
        CompileOptions | None,
        Doc("The options the torch.compile call was given; absent when not recorded."),
    ] = None


# --- training step -----------------------------------------------------------------------------


class GradStats(Strict, kw_only=True, frozen=True):
    """One parameter's gradient (or updated value) against the reference."""

    name: str
    max_abs: NonNegative | None
    max_rel: NonNegative | None
    mismatched: Count
    total: Count
    norm_ratio: Annotated[NonNegative | None, Doc("||cell|| / ||reference||; 1 is ideal.")] = None
    worst_ratio: Annotated[NonNegative | None, Doc("Worst |diff| / allowance; above 1 is a mismatch.")] = None
    rule: Annotated[
        str | None,
        Doc("The plan's rule that judged this parameter (compare.params); null: elementwise, no rules declared."),
    ] = None
    bound: Annotated[
        NonNegative | None,
        Doc("lr-bound rule: k * lr, the allowed |updated - reference| where the reference gradient is zero."),
    ] = None
    bound_elements: Annotated[
        Count | None, Doc("lr-bound rule: elements whose reference gradient is zero, judged by the bound.")
    ] = None
    bound_max_abs: Annotated[
        float | None, Doc("lr-bound rule: largest |updated - reference| among those elements.")
    ] = None


class TrainStep(Envelope, tag="train_step", kw_only=True, frozen=True):
    """One training step of a cell: the loss and every gradient against the reference."""

    case: str
    step: Count
    loss: float | None
    reference_loss: float | None
    loss_within: bool
    grads: list[GradStats]


class TrainResult(Envelope, tag="train_result", kw_only=True, frozen=True):
    """After the steps: the updated parameters against the reference's."""

    case: str
    params: list[GradStats]


# --- timing ----------------------------------------------------------------------------------


class OutputCheck(Strict, kw_only=True, frozen=True):
    """The cold call's outputs against the reference, by the cell's tolerance."""

    mismatched: Count
    total: Count
    max_abs: Annotated[NonNegative | None, Doc("Null when not finite.")]
    passed: Annotated[bool, Doc("No element outside the tolerance and no new non-finite value.")]


class Cold(Strict, kw_only=True, frozen=True):
    seconds: Annotated[
        Seconds,
        Doc(
            "The first call. One that compiled from an empty cache in a fresh process is held to take no less"
            " time than the cell's fastest warm call (warm.min_s of its timing events): a log saying otherwise"
            " contradicts itself."
        ),
    ]
    cache_condition: Annotated[
        CacheCondition,
        Doc(
            "The condition the call really had: fresh_process_empty_cache only when every "
            "listed cache directory was empty before it and no cache hit was counted without a miss (logs from 1.1 on; "
            "1.0 logs state it by construction); restart_populated_cache (logs from 1.2 on) for a fresh process "
            "started against the cache folder the cell's empty-cache compile filled, which was not empty before it."
        ),
    ]
    fresh_process: bool
    process_start_s: Annotated[Seconds | None, Doc("One-time process start-up before the first call, kept apart.")] = (
        None
    )
    cache_entries_before: Annotated[
        Count | None, Doc("Entries in the listed cache directories before the call; absent: not checked.")
    ] = None
    cache_entries_after: Count | None = None
    cache_dirs: Annotated[list[CacheDir] | None, Doc("Each cache directory listed around the call.")] = None
    cache_hits: Annotated[
        Count | None, Doc("Compile-cache hits counted during the call, where the backend counts them.")
    ] = None
    cache_misses: Count | None = None
    output_check: Annotated[
        OutputCheck | None, Doc("The cold call's outputs against the reference; absent: not compared.")
    ] = None
    inputs_fed: Annotated[
        list[InputInfo] | None, Doc("What the model received on the cold call; absent: not measured.")
    ] = None
    layout_achieved: bool | None = None


class Warm(Strict, kw_only=True, frozen=True):
    """A warm series: its samples and the figures they give (each checked against the samples;
    a log whose figures its samples do not give contradicts itself and is refused)."""

    samples_s: Annotated[list[Seconds], Meta(min_length=1)]
    min_s: Annotated[Seconds, Doc("The smallest sample.")]
    median_s: Annotated[Seconds, Doc("The median of the samples (the mean of the middle two for an even count).")]
    p90_s: Annotated[
        Seconds, Doc("The 90th percentile, inclusive method (Python's statistics.quantiles(n=10, method='inclusive')).")
    ]
    iqr_s: Annotated[Seconds, Doc("The third quartile less the first, inclusive method as p90_s.")]


class HostFact(Strict, kw_only=True, frozen=True):
    """One fact about the host around a warm loop (collector/hostcondition.py): its value and
    where it was read, or (value null) why it could not be read."""

    value: Annotated[str | None, Doc("The value as read, as text; null: unknown.")] = None
    source: Annotated[str | None, Doc("Where it was read from (API, file, command).")] = None
    unknown_reason: Annotated[str | None, Doc("Why the value could not be read; set when value is null.")] = None


class WarmStability(Strict, kw_only=True, frozen=True):
    """The collector's classification of one warm series (collector/stability.py; the rules and
    thresholds are in collector/README.md). reportgen classifies the samples again itself."""

    verdict: Literal["stable", "unstable", "unclassified"]
    samples: Count
    median_s: Seconds | None = None
    iqr_s: Seconds | None = None
    min_s: Seconds | None = None
    reasons: Annotated[
        list[str],
        Doc(
            "The rules the series failed: outliers, bimodality, drift, spread, min_median, contention (1.4 logs on:"
            " the threads waited for a CPU more than 0.10 s per second of the loop), hump (collectors from 0.17.0:"
            " the middle third's speed apart from both outer thirds')."
        ),
    ] = field(default_factory=list)
    checks: Annotated[dict[str, dict[str, float | bool | str]], Doc("Each rule: failed, its figures, a note.")] = field(
        default_factory=dict
    )
    note: Annotated[str | None, Doc("Why the series is unclassified.")] = None
    attempt: Annotated[Positive, Doc("Which warm series of the cell: 1 the first, 2.. re-measurements.")]
    attempts_allowed: Annotated[Positive, Doc("1 + the plan's timing.remeasure_rounds.")]
    flag: Annotated[
        Literal["unstable timing"] | None,
        Doc("Set on the last allowed attempt when it is still unstable."),
    ] = None


class DeviceMemory(Strict, kw_only=True, frozen=True):
    """Peak device memory over one warm series, where the backend exposes it (schema 1.3).
    A reader takes a figure only with status "measured"."""

    status: Literal["measured", "not_measured"]
    peak_allocated_bytes: Annotated[
        Count | None,
        Doc("Most bytes held by tensors on the device during the series (its peak reset just before it)."),
    ] = None
    source: Annotated[
        Annotated[str, Meta(max_length=200)] | None,
        Doc("The call that read it, e.g. 'torch.cuda.max_memory_allocated'."),
    ] = None
    reason: Annotated[
        Annotated[str, Meta(max_length=2000)] | None,
        Doc("Why it was not measured (the cpu target has no device allocator; ...)."),
    ] = None


class Timing(Envelope, tag="timing", kw_only=True, frozen=True):
    """Cold first call and warm repetitions of one cell whose correctness passed."""

    case: str
    cold: Cold | None = None
    warm: Warm | None = None
    cold_timed_out_after_s: Annotated[
        Annotated[float, Meta(gt=0)] | None,
        Doc(
            "The cold first call was not measured: its fresh process ran past this limit"
            " (--cold-timeout) and was ended. Absent: no timeout was recorded."
        ),
    ] = None
    synchronized: bool
    scope: TimingScope
    eager_after_recompile_limit: Annotated[
        bool, Doc("True when a 'compiled' cell really ran eager (recompile limit hit).")
    ] = False
    timed_region: Annotated[
        list[Literal["preprocessing", "host_to_device", "model_call", "output_retrieval", "training_step"]] | None,
        Doc(
            "What the timing code put inside the clock, in order, as it ran it ('training_step': "
            "one full training step). Absent: not recorded (the scope field then repeats the plan)."
        ),
    ] = None
    timed_notes: Annotated[list[str], Doc("How each stage was done, e.g. 'no copy: the device is the host'.")] = field(
        default_factory=list
    )
    inputs_fed: Annotated[
        list[InputInfo] | None, Doc("What the model received on a warm call; absent: not measured.")
    ] = None
    layout_achieved: bool | None = None
    attempt: Annotated[
        Positive | None,
        Doc(
            "Which warm series of this cell the event holds: 1 the first, 2.. re-measurements of an unstable one"
            " (1.2 logs on; a cell's last warm event is the one reported). Absent: the cell's only series."
        ),
    ] = None
    stability: Annotated[WarmStability | None, Doc("The warm series' classification and attempt (1.2 logs on).")] = None
    host: Annotated[
        dict[str, HostFact] | None,
        Doc(
            "The host around the warm loop (1.2 logs on): load_avg_before/after, cpu_count, cpu_affinity,"
            " torch_threads, cpu_governor, and the accelerator's readings before/after (gpu_*_before/after on CUDA;"
            " accelerator_before/after: why not measured elsewhere); from 1.4, cpu_run_s and cpu_wait_s: the seconds"
            " the process's threads ran on a CPU and waited for one over the loop (warm-up calls included), and"
            " loop_wall_s, the loop's wall time: the stability rule 'contention' judges cpu_wait_s per second of"
            " loop_wall_s (each written as digits with at most one point). Every key is present: a value or why it"
            " is unknown."
        ),
    ] = None
    device_memory: Annotated[
        DeviceMemory | None,
        Doc("Peak device memory over the warm series (1.3 logs on). Absent: not measured (older logs)."),
    ] = None


# --- generation (schema 1.2) ------------------------------------------------------------------


class Request(Envelope, tag="request", kw_only=True, frozen=True):
    """How the plan's padding policy serves one request length, before any cell of it runs."""

    batch: Positive
    length: Annotated[Positive, Doc("Tokens of the request as tokenised.")]
    bucket: Annotated[Positive | None, Doc("The bucket it is padded (or truncated) to; null when refused.")] = None
    outcome: Annotated[
        Literal["padded", "truncated", "refused"],
        Doc(
            "padded: length fits its bucket (at most the bucket); truncated: longer than the largest bucket, "
            "cut to it (more than the bucket); refused: no bucket."
        ),
    ]
    reason: Annotated[str, Doc("The policy's decision in words.")]
    cases: Annotated[
        list[str],
        Doc(
            "The cells that serve this request; each cell's generation event gives its bucket and truncation, "
            "and a cell is named by one request."
        ),
    ] = field(default_factory=list)

    def __post_init__(self) -> None:
        # How the collector routes a request (collector/generation.py, route): the smallest bucket
        # that holds it, else the largest one when the plan truncates, else none.
        if (self.outcome == "refused") != absent(self.bucket):
            bucket = "null" if absent(self.bucket) else self.bucket
            raise ValueError(
                f"outcome {self.outcome} with bucket {bucket}: a request has a bucket exactly when it is not refused"
            )
        if self.outcome != "refused" and (self.outcome == "truncated") != (self.length > self.bucket):  # type: ignore[operator]
            raise ValueError(
                f"outcome {self.outcome} for length {self.length} and bucket {self.bucket}: a request is padded "
                "to a bucket at least its length and truncated to a shorter one"
            )


class EarlierGeneration(Strict, kw_only=True, frozen=True):
    """One series of warm generations the collector took before the reported one and measured
    again because a series of it was unstable (schema 1.7): its samples, as the reported ones."""

    ttft_warm: Warm
    decode_token: Warm
    host: dict[str, HostFact] | None = None


class GenerationTiming(Strict, kw_only=True, frozen=True):
    """A passing generation cell's timings, as measured (synchronised at every call)."""

    ttft_cold_s: Annotated[
        Seconds,
        Doc(
            "The cell's first prefill, first token chosen (compiled: includes compiling this bucket's prefill graph when no earlier cell did)."
        ),
    ]
    ttft_warm: Annotated[Warm, Doc("Prefill plus first token, one sample per warm repetition.")]
    decode_token: Annotated[
        Warm,
        Doc(
            "One decode call (one new token), every step of every warm repetition: each repetition's steps in turn, as many in each (tokens_per_s is read from them so)."
        ),
    ]
    tokens_per_s: Annotated[
        NonNegative,
        Doc(
            "Decode steps per second of decode time, the median repetition: one repetition's steps over the median of the repetitions' summed decode_token samples (checked against them)."
        ),
    ]
    repetitions: Positive
    scope: Annotated[str, Doc("What the clock covered, in words.")]
    host: Annotated[
        dict[str, HostFact] | None,
        Doc(
            "The host around the warm generations (1.4 logs on), as a timing event's host: both series come"
            " from this one loop, so its cpu_wait_s and loop_wall_s judge both (stability rule 'contention')."
        ),
    ] = None
    attempt: Annotated[
        Positive | None,
        Doc(
            "Which series of warm generations the timings are: 1 the first, 2.. taken again at once because one"
            " of the earlier series (first token, decode per token, or the repetitions' decode times) was unstable"
            " (1.7 logs on). Absent: measured once (older logs)."
        ),
    ] = None
    attempts_allowed: Annotated[
        Positive | None, Doc("1 + the plan's timing.remeasure_rounds (1.7 logs on); with attempt.")
    ] = None
    earlier: Annotated[
        list[EarlierGeneration],
        Doc("The series taken before the reported one, in order (attempt - 1 of them); each was unstable."),
    ] = field(default_factory=list)

    def __post_init__(self) -> None:
        if absent(self.attempt) != absent(self.attempts_allowed):
            raise ValueError("attempt and attempts_allowed are given together or not at all")
        attempt: int = 1 if absent(self.attempt) else self.attempt  # type: ignore[assignment]
        if not absent(self.attempts_allowed) and attempt > self.attempts_allowed:  # type: ignore[operator]
            raise ValueError(f"attempt {attempt} is past attempts_allowed {self.attempts_allowed}")
        earlier = 0 if absent(self.earlier) else len(self.earlier)
        if earlier != attempt - 1:
            raise ValueError(f"earlier holds {earlier} series, but attempt {attempt} follows {attempt - 1}")


class GenerationResult(Envelope, tag="generation", kw_only=True, frozen=True):
    """One generation cell against the reference's generation: greedy tokens, top-k overlap,
    the first divergent step (step 0 is the prefill's token) and, when it passed, its timings."""

    case: str
    request_length: Positive
    bucket: Positive
    truncated: Annotated[bool, Doc("The request was longer than the largest bucket and cut to it (plan policy).")] = (
        False
    )
    padding_side: Literal["left", "right"]
    decode_steps: Positive
    max_cache_len: Positive
    tokens: Annotated[list[list[Int64]], Doc("Greedy tokens per batch row, step 0 first.")]
    reference_tokens: list[list[Int64]]
    steps_agreeing: Annotated[Count, Doc("Leading steps where every row's token equals the reference's.")]
    first_divergent_step: Annotated[
        Count | None, Doc("The first step whose token differs; null: every step agrees.")
    ] = None
    top_k: Positive
    top_k_overlap: Annotated[
        list[Annotated[float, Meta(ge=0, le=1)] | None],
        Doc(
            "Per step, the smallest share over rows of the reference's top-k in the cell's top-k; null after the first divergent step (contexts differ)."
        ),
    ]
    tokens_passed: Annotated[bool | None, Doc("The task criterion on greedy_steps_agreeing held; null: none declared.")]
    top_k_passed: bool
    timing: Annotated[GenerationTiming | None, Doc("Only for a cell that passed.")] = None


# --- profile ---------------------------------------------------------------------------------


class TraceFile(Strict, kw_only=True, frozen=True):
    path: str
    kind: Annotated[str, Doc("chrome_trace, neff, ntff, ...")]
    bytes: Count
    sha256: Sha256


class TopOp(Strict, kw_only=True, frozen=True):
    name: str
    self_time_us: NonNegative
    calls: Count


class Profile(Envelope, tag="profile", kw_only=True, frozen=True):
    case: str
    profiler: str
    traces: list[TraceFile]
    top_ops: list[TopOp] = field(default_factory=list)


# --- localisation ----------------------------------------------------------------------------


class LocalizedModule(Strict, kw_only=True, frozen=True):
    """One named submodule's output against the reference module's output, judged with the cell's tolerance."""

    name: Annotated[str, Doc("Qualified name, as named_modules() gives it (e.g. 'encoder.layer.0').")]
    type: Annotated[str, Doc("The module's class name.")]
    depth: Annotated[
        Positive,
        Doc(
            "1 for the model's direct children, 2 for theirs, and so on; a ModuleList's index does not count (blocks.0 is 1)."
        ),
    ]
    order: Annotated[
        Count,
        Doc("Position of its first call in the reference's execution order (among the modules localised)."),
    ]
    calls: Annotated[Count, Doc("Calls in one reference forward; only the first call is compared.")]
    accumulated: Annotated[
        ErrorStats | None,
        Doc(
            "Each side run end to end: the module's own error plus what it inherited. Absent: not measured (see note)."
        ),
    ] = None
    local: Annotated[
        ErrorStats | None,
        Doc(
            "The candidate module alone, fed the reference module's inputs: its own error. Absent: not measured (see note)."
        ),
    ] = None
    local_compiled: Annotated[
        bool | None,
        Doc(
            "True: the local figure is of the module compiled alone; False: of the module run eager. Absent: no local figure."
        ),
    ] = None
    operators: Annotated[
        list[str] | None,
        Doc("Aten ops an eager call of the candidate module dispatched (see operators_from). Absent: not recorded."),
    ] = None
    note: Annotated[str | None, Doc("Why a view is missing, e.g. a module that could not be compiled alone.")] = None


class SkippedModule(Strict, kw_only=True, frozen=True):
    name: Annotated[str, Doc("The module, or a count of modules, left out.")]
    reason: Annotated[
        str,
        Doc(
            "max_depth, max_modules, max_bytes, or that the reference never called it; from collector 0.14.0,"
            " 'called by the candidate, not by the reference' where the candidate did (another code path)."
        ),
    ]


class Localization(Envelope, tag="localization", kw_only=True, frozen=True):
    """Where a cell's error arises: per named submodule, in the reference's execution order. New in 1.2."""

    case: str
    reason: Annotated[
        Literal["mismatch", "nonfinite", "plan"],
        Doc("Why this cell was localised: its status, or the plan's [localize] always."),
    ]
    mode: Mode
    atol: Annotated[NonNegative, Doc("The cell's own tolerance, as every module was judged.")]
    rtol: NonNegative
    max_depth: Positive
    max_modules: Positive
    max_bytes: Positive
    modules: Annotated[list[LocalizedModule], Doc("In execution order.")] = field(default_factory=list)
    skipped: Annotated[list[SkippedModule], Doc("Modules the bounds left out, with the bound.")] = field(
        default_factory=list
    )
    skipped_more: Annotated[Count, Doc("Skipped modules beyond those listed.")] = 0
    bytes_held: Annotated[Count | None, Doc("Bytes of captured module inputs and outputs.")] = None
    accumulated_note: Annotated[str | None, Doc("Why the accumulated view is missing or partial.")] = None
    operators_from: Annotated[str | None, Doc("How the per-module operator lists were taken.")] = None
    failure: Annotated[str | None, Doc("Localisation itself failed: why (the cell's result stands).")] = None


# --- inspection (python -m collector inspect: on a CPU, before any hardware) -----------------
#
# An inspection log is its own file: inspection_start, one inspection per planned input shape,
# inspection_end. ``reportgen plan-check --inspection`` reads it; nothing in it is a measurement
# on a device.


class InspectionStart(Envelope, tag="inspection_start", kw_only=True, frozen=True):
    """First line of an inspection log: which plan was inspected, where, with what. New in 1.2."""

    workload: Annotated[str, Meta(min_length=1)]
    plan: Annotated[str, Doc("The plan file inspected, as given.")]
    plan_sha256: Annotated[Sha256, Doc("sha256 of the plan's text as read.")]
    collector: str
    torch: Annotated[str, Doc("torch version that captured the graphs.")]
    host: Annotated[str, Doc("Where it ran; always a CPU: nothing was measured on a device.")]


class OpCount(Strict, kw_only=True, frozen=True):
    name: Annotated[str, Doc("aten name as the graph holds it (e.g. 'aten::linear'), or a higher-order op's name.")]
    count: Annotated[Positive, Doc("Nodes calling it in the captured graph.")]


class WideTensor(Strict, kw_only=True, frozen=True):
    """A tensor the target computes at lower width: float64, or int64 with values outside int32."""

    where: Annotated[
        Literal["parameter", "buffer", "input", "constant", "graph"],
        Doc("graph: a value the captured graph computes (its values are not known before running)."),
    ]
    name: str
    dtype: str
    shape: list[Int64] | None = None
    min: Annotated[float | None, Doc("int64 only: smallest value seen; absent for graph values.")] = None
    max: Annotated[float | None, Doc("int64 only: largest value seen.")] = None


class Inspection(Envelope, tag="inspection", kw_only=True, frozen=True):
    """One planned input shape's captured graph: operators, graph breaks, wide dtypes, input layouts. New in 1.2."""

    shape: Annotated[str, Doc("The planned input key, e.g. b1-l16-contiguous.")]
    batch: Positive
    length: Positive
    layout: Layout
    capture: Annotated[
        str,
        Doc("How the operators were captured (e.g. torch.export non-strict, ATen before decompositions)."),
    ]
    capture_failure: Annotated[
        str | None, Doc("Why the graph could not be captured; the operator list is then empty.")
    ] = None
    operators: list[OpCount] = field(default_factory=list)
    graph_count: Annotated[Count | None, Doc("Graphs torch._dynamo.explain made (1: no break).")] = None
    graph_breaks: list[GraphBreak] = field(default_factory=list)
    breaks_failure: Annotated[str | None, Doc("Why graph breaks could not be looked for.")] = None
    float64: Annotated[list[WideTensor], Doc("float64 parameters, buffers, inputs, constants and graph values.")] = (
        field(default_factory=list)
    )
    int64_beyond_int32: Annotated[list[WideTensor], Doc("int64 tensors holding a value outside the int32 range.")] = (
        field(default_factory=list)
    )
    int64_graph_values: Annotated[
        Count, Doc("int64 values the graph computes (their range is not known before running).")
    ] = 0
    inputs: Annotated[list[InputInfo], Doc("The inputs as make_inputs built them at this shape and layout.")] = field(
        default_factory=list
    )


class InspectionEnd(Envelope, tag="inspection_end", kw_only=True, frozen=True):
    shapes_planned: Count
    shapes_inspected: Count


# --- warnings and run end --------------------------------------------------------------------


class WorkloadReads(Envelope, tag="workload_reads", kw_only=True, frozen=True):
    """From 1.6: what the workload read while the collector's process loaded its module, built
    the model, made the inputs and ran the reference, beyond the files run_start hashed
    (collector/workload_reads.py)."""

    files: Annotated[
        list[ProvenanceFile],
        Doc(
            "Each file the workload opened for reading through Python, role workload_read, by the sha256 of its bytes (or why not: a file over 1 GiB is not hashed, nor any past 4 GiB hashed in all). Installed packages' and the interpreter's files, the collector's and the run's own are left out."
        ),
    ]
    files_more: Annotated[Count, Doc("Files read beyond those listed.")] = 0
    packages: Annotated[
        dict[str, str],
        Doc(
            "Installed distribution name -> version, for every top-level module loaded in the collector's process when the inputs were made (the standard library and the collector aside): what the workload ran on, torch included."
        ),
    ]
    watched: Annotated[str, Doc("What was watched, in words: what a read outside it (native code's, say) escapes.")]


class WarningEvent(Envelope, tag="warning", kw_only=True, frozen=True):
    """A warning raised outside any cell (at import, device init, ...)."""

    message: str
    category: str = "UserWarning"
    case: str | None = None


class RunEnd(Envelope, tag="run_end", kw_only=True, frozen=True):
    finished_at: str
    status: Literal["complete", "aborted"]
    reason: str | None = None
    cells_planned: Count
    cells_recorded: Count


# Any event of a run log, tagged by ``kind``.
Event = Union[
    RunStart,
    Environment,
    Plan,
    Artifact,
    Reference,
    CaseResult,
    Operators,
    Compile,
    Timing,
    Profile,
    TrainStep,
    TrainResult,
    Request,
    GenerationResult,
    WarningEvent,
    RunEnd,
    Localization,
    WorkloadReads,
]

# Each kind is its Struct's tag, read as ``Model.kind`` and ``event.kind``.
for _model in (*get_args(Event), InspectionStart, Inspection, InspectionEnd):
    _model.kind = _model.__struct_config__.tag
EVENT_MODELS: dict[str, type[Envelope]] = {model.kind: model for model in get_args(Event)}
INSPECTION_MODELS: dict[str, type[Envelope]] = {m.kind: m for m in (InspectionStart, Inspection, InspectionEnd)}

# Kinds that always name one planned cell (a required ``case`` field).
CASE_KINDS = frozenset(
    kind
    for kind, model in EVENT_MODELS.items()
    if any(f.name == "case" and f.required for f in msgspec.structs.fields(model))
)
# Kinds that report an outcome; none may come before the plan that declares the tolerances.
RESULT_KINDS = CASE_KINDS | {"reference", "request"}
