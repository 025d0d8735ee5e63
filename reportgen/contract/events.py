"""The event-log contract: one pydantic model per event kind of the JSON-lines run log.

Every line of ``events.jsonl`` is one JSON object carrying the envelope fields
(``schema_version``, ``seq``, ``kind``, ``time``) plus the fields of its kind. These models are
the single definition of the contract: the JSON Schema in ``reportgen/contract/schema/`` and the
field reference in ``reportgen/contract/schema/EVENTS.md`` are generated from them
(``python -m reportgen.contract.schema_doc``), and a test fails when either is stale.

Versioning: ``schema_version`` is ``MAJOR.MINOR``. A minor bump only adds optional fields or
new event kinds, so an older reader accepts a newer minor log with warnings; a major bump may
change meaning and is refused.
"""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, field_serializer, model_validator

from collector.descriptors import backend_families
from reportgen.contract.kinds import CASE_KINDS, RESULT_KINDS, SCHEMA_MAJOR, SCHEMA_MINOR, SCHEMA_VERSION  # noqa: F401 (the contract's names, read from here too)

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
Count = Annotated[int, Field(ge=0, le=INT64_MAX)]
Int64 = Annotated[int, Field(ge=-(2**63), le=INT64_MAX)]
Seconds = Annotated[float, Field(ge=0, le=MAX_SECONDS)]
NonNegative = Annotated[float, Field(ge=0)]
Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]


class Strict(BaseModel):
    """Base for every model: unknown fields are errors, NaN and Infinity are refused."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, frozen=True)


class Fact(Strict):
    """A value the collector tried to read: either its value or why it is unknown, never silence."""

    value: str | None = Field(None, description="The value as read, as text.")
    source: str | None = Field(None, description="Where it was read from (API, file, command).")
    unknown_reason: str | None = Field(
        None, description="Why the value could not be read; set exactly when value is null."
    )

    @model_validator(mode="after")
    def _value_xor_reason(self) -> Fact:
        if (self.value is None) == (self.unknown_reason is None):
            raise ValueError("a fact has either a value or an unknown_reason, not both or neither")
        return self


class Envelope(Strict):
    schema_version: str = Field(
        description="MAJOR.MINOR of the contract this line follows.",
        pattern=r"^\d+\.\d+$",
        examples=[SCHEMA_VERSION],
    )
    seq: int = Field(ge=0, le=INT64_MAX, description="Line sequence number: starts at 0, strictly increasing.")
    time: str = Field(
        description="UTC time the event was written, ISO 8601 with offset or Z.",
        examples=["2026-11-29T21:50:00.123456Z"],
    )


# --- run start -------------------------------------------------------------------------------


class TargetChoice(Strict):
    """How the run's target was chosen: what was asked for, what it resolved to, and why."""

    requested: str = Field(description="--target as given: auto, cpu, cuda or neuron.")
    resolved: str = Field(description="The target the run used.")
    reason: str = Field(
        description="Why: what auto probed and found, or that the command line named it (and whether it overrode the plan's target)."
    )


class ProvenanceFile(Strict):
    """One file the run read to decide what to do, by the sha256 of its bytes."""

    role: str = Field(
        description="plan, workload_module, workload_import (a local file the workload module imports, directly or through another), constraint_rules (the constraint data the collector checks plans against), backend_adapter, backend_descriptor, ..."
    )
    path: str = Field(description="Where the collector read it (absolute on the host that ran).")
    sha256: str | None = Field(None, pattern=r"^[0-9a-f]{64}$")
    unknown_reason: str | None = Field(
        None, description="Why the file's sha256 is not recorded; set exactly when sha256 is null."
    )

    @model_validator(mode="after")
    def _sha_xor_reason(self) -> ProvenanceFile:
        if (self.sha256 is None) == (self.unknown_reason is None):
            raise ValueError("a provenance file has either a sha256 or an unknown_reason, not both or neither")
        return self


class Provenance(Strict):
    """Which code wrote the log and which data it read (schema 1.2)."""

    collector_version: str = Field(description="The collector's version (collector/__init__.py).")
    git_commit: Fact = Field(description="The collector checkout's commit, or why it is unknown (no git, no .git).")
    git_dirty: Fact = Field(
        description="'true' when tracked files differed from that commit, 'false' when not, or why unknown."
    )
    files: list[ProvenanceFile] = Field(
        default_factory=list,
        description="Every plan, workload module (and local file it imports) and constraint or backend data file the run read.",
    )


class ScheduledTask(Strict):
    """The campaign task that ran the collector, as the scheduler and the task script said."""

    campaign: str = Field(description="Campaign name.")
    campaign_id: str = Field(
        description="The campaign's id (its name and submission time); its ledger is _campaigns/<id>/ in the destination."
    )
    environment: str | None = Field(
        None, description="The campaign environment's label (e.g. an SDK release and instance type)."
    )
    task_index: int | None = Field(None, ge=0, le=INT64_MAX, description="The task's index in the campaign.")
    scheduler: str | None = Field(None, description="slurm or kubernetes.")
    job_id: str | None = Field(None, description="The scheduler's job id (Slurm ARRAYJOB_TASK) or the Job's name.")
    attempt: str | None = Field(
        None,
        description="s<submission>-r<restart>: the submission (1, +1 per resume) and the scheduler's retries of the index.",
    )
    node: str | None = Field(None, description="Host name of the node the task ran on.")


class RunStart(Envelope):
    """First line of every log: who wrote it, for which workload, and whether it is real data."""

    kind: Literal["run_start"]
    run_id: str = Field(min_length=1, description="Unique id of the run; also its directory name.")
    collector: str = Field(description="Name and version of the program that wrote the log.")
    workload: str = Field(min_length=1, description="Workload name from the plan.")
    target: str = Field(description="Target asked for on the command line (cpu, cuda, neuron).")
    command: list[str] = Field(description="The command line that started the run.")
    started_at: str = Field(description="UTC start time, ISO 8601.")
    origin: Literal["measured", "synthetic"] = Field(
        description="'measured': a real run of the collector; 'synthetic': a hand-written or "
        "generated fixture that is evidence of nothing."
    )
    origin_note: str | None = Field(None, description="Why a synthetic log exists.")
    target_choice: TargetChoice | None = Field(
        None, description="How --target was resolved (auto records what it found); absent: not recorded."
    )
    provenance: Provenance | None = Field(
        None,
        description="The collector's version and git state and the sha256 of the files the run read; absent: not recorded (logs before 1.2).",
    )
    scheduled: ScheduledTask | None = Field(
        None,
        description="The campaign task this run was (absent: not run by a campaign, or by a collector before schema 1.2).",
    )


# --- environment -----------------------------------------------------------------------------


class InstalledArtifact(Strict):
    """An installed distribution as the package metadata describes it."""

    name: str
    version: str
    installer: str | None = Field(None, description="INSTALLER metadata (pip, uv, ...).")
    wheel_tags: list[str] = Field(default_factory=list, description="Tags from the WHEEL file.")
    source_url: str | None = Field(None, description="direct_url.json url, if installed from one.")


class BackendSetting(Strict):
    """One variable the adapter pins or reads, as the run had it."""

    name: str
    value: str | None = Field(description="The value during the run; null when unset.")
    set_by: Literal["collector", "environment", "unset"] = Field(
        description="'collector': the collector set it; 'environment': it was already set and kept; 'unset'."
    )
    note: str = Field("", description="What the value means, or why it may not have taken effect.")


class Environment(Envelope):
    """Where the run really happened: backend family, versions, device, relevant variables."""

    kind: Literal["environment"]
    backend_family: BackendFamily = Field(description="Backend family the cells ran on.")  # type: ignore[valid-type]
    backend_family_reason: str = Field(description="How the family was decided (probes, versions).")
    device_type: str = Field(description="torch device type the cells ran on: cpu, cuda, neuron.")
    versions: dict[str, Fact] = Field(
        description="python, torch, torch_neuronx, neuronx_cc, neuron_driver, neuron_runtime, "
        "cuda, os_release and anything else read; unknown ones carry their reason."
    )
    device: dict[str, Fact] = Field(description="instance_type, device_name, device_count, hostname.")
    env_vars: dict[str, str] = Field(
        default_factory=dict,
        description="Relevant variables: TORCH_NEURONX_*, NEURON_*, TORCHINDUCTOR_*, CUDA_*.",
    )
    artifacts: list[InstalledArtifact] = Field(
        default_factory=list, description="Installed distributions that matter for the backend."
    )
    backend_settings: list[BackendSetting] | None = Field(
        None,
        description="Variables the adapter sets or relies on (e.g. NEURON_LAUNCH_BLOCKING, "
        "TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION): the value the run had and who set it. "
        "Absent: not recorded.",
    )


# --- plan ------------------------------------------------------------------------------------


class TaskCriterion(Strict):
    metric: str = Field(description="Task metric name, e.g. cosine_to_reference.")
    op: Literal[">=", "<="] = Field(description="How the metric compares with the threshold.")
    threshold: float


class ElementTolerance(Strict):
    atol: float = Field(ge=0)
    rtol: float = Field(ge=0)


class Tolerance(Strict):
    """Elementwise rule |out - ref| <= atol + rtol * |ref| plus a task-quality criterion."""

    atol: float = Field(ge=0)
    rtol: float = Field(ge=0)
    task: TaskCriterion | None = Field(None, description="Task-quality acceptance criterion.")
    source: str = Field("plan", description="Who set it: the plan, or the collector's default.")
    loss: ElementTolerance | None = Field(None, description="Training: rule for the loss at each step.")
    grad: ElementTolerance | None = Field(
        None, description="Training: rule for every parameter gradient and the updated parameters."
    )


class Training(Strict):
    """Training cells: fixed steps from identical weights, inputs and seeds."""

    steps: int = Field(ge=1, le=INT64_MAX)
    seed: Int64
    optimizer: str = Field(description="Optimizer as the workload builds it, e.g. 'AdamW(lr=1e-3)'.")
    randomness: str = Field(description="How stochastic parts were made comparable, e.g. 'dropout off'.")


class Generation(Strict):
    """A generation plan (schema 1.2): each cell serves its request as a text service would."""

    decode_steps: int = Field(ge=1, le=INT64_MAX, description="Decode calls after the prefill, one greedy token each.")
    max_cache_len: int = Field(
        ge=1, le=INT64_MAX, description="Positions of the static KV cache: every decode call has this one shape."
    )
    padding_side: Literal["left", "right"] = Field(description="Where requests and masks are padded.")
    config: str = Field("", description="The workload's named model configuration.")
    top_k: int = Field(
        ge=1, le=INT64_MAX, description="Top-k overlap: the reference's k highest-scored tokens compared at each step."
    )
    min_top_k_overlap: float = Field(
        ge=0,
        le=1,
        description="Smallest share of the reference's top-k the cell's top-k must hold at every judged step.",
    )


class PlannedCell(Strict):
    """One cell of the matrix: a shape, layout, dtype and execution mode."""

    case: str = Field(description="Stable case key, e.g. b1-l128-contiguous-float32-eager.")
    batch: int = Field(ge=1, le=INT64_MAX)
    length: int = Field(ge=1, le=INT64_MAX)
    layout: Layout
    dtype: str = Field(description="Compute dtype of floating inputs and weights.")
    mode: Mode
    repeat_of: str | None = Field(None, description="Set on a cache check: the case key whose shape this repeats.")


class Selection(Strict):
    """Cells chosen to run by --only / --modes; the plan's matrix still lists every planned cell."""

    only: list[str] = Field(default_factory=list, description="--only globs given.")
    modes: list[str] = Field(default_factory=list, description="--modes given.")
    cases: list[str] = Field(
        description="Case keys selected to run; every other planned cell was not run (deselected)."
    )


class TimingScope(Strict):
    preprocessing: bool = Field(description="Tokenising/preparing inputs is inside the timed region.")
    host_to_device: bool = Field(description="Copying inputs to the device is timed.")
    output_retrieval: bool = Field(description="Copying outputs back to the host is timed.")
    synchronized: bool = Field(description="The device is synchronised at every timing boundary.")
    note: str = ""


class Padding(Strict):
    buckets: list[Int64] = Field(default_factory=list, description="Sequence-length buckets.")
    above_largest: str | None = Field(None, description="Policy for requests above the largest.")
    mask_padded: bool = Field(True, description="Attention masks are padded like the inputs.")


class OutputRule(Strict):
    """Which elements of one output are judged; the rest are measured apart, never hidden."""

    output: str = Field(description="Output name as run_model returns it.")
    mask: str | None = Field(
        None, description="Input whose zeros mark elements not judged (aligned with the output's leading dimensions)."
    )
    region: list[str] | None = Field(
        None, description="Index slices over the output's leading dimensions that are judged, e.g. [':', '0:64']."
    )
    description: str = Field(description="The rule in words, e.g. 'attention_mask != 0'.")


class ParamRule(Strict):
    """Training: how the parameters of one group are judged."""

    group: str
    match: list[str] = Field(min_length=1, description="Glob patterns over parameter names.")
    rule: Literal["elementwise", "lr-bound", "zero-grad"] = Field(
        description="elementwise: the grad tolerance; lr-bound: where the reference gradient is zero, "
        "|updated - reference| <= k * lr (elsewhere elementwise); zero-grad: gradients exactly zero in both."
    )
    k: float | None = Field(None, ge=0, description="lr-bound: the multiple of the learning rate allowed.")
    lr: float | None = Field(
        None, ge=0, description="lr-bound: the group's learning rate, read from the optimizer before any step."
    )
    zero_below: float = Field(
        0.0,
        ge=0,
        description="lr-bound: a reference gradient element counts as zero when |grad| <= this at every step.",
    )
    description: str = Field(description="The rule in words, as the report shows it.")


class CompareRules(Strict):
    """Comparison rules declared in the plan before any result (schema 1.1; absent: every element judged elementwise)."""

    outputs: list[OutputRule] = Field(default_factory=list)
    params: list[ParamRule] = Field(default_factory=list)


class CompileOptions(Strict):
    """The options of torch.compile (the plan's [compile] table, collector/PLAN.md)."""

    dynamic: bool = Field(description="torch.compile(dynamic=...).")
    mode: str = Field(description="torch.compile(mode=...); 'default' when none was given.")
    fullgraph: bool = Field(description="torch.compile(fullgraph=...): a graph break is an error.")
    backend_options: dict[str, str | bool | int | float] = Field(
        default_factory=dict, description="torch.compile(options=...), passed to the backend as written."
    )


class DeclaredInput(Strict):
    """One model input as the plan says the real preprocessing produces it (declared, not measured)."""

    dtype: str
    layout: Layout
    how: str | None = Field(
        None, description="How a non-contiguous input comes about: slice, transpose, channels_last, other."
    )
    value_range: list[int] | None = Field(
        None, min_length=2, max_length=2, description="Integer inputs: [smallest, largest] value."
    )
    note: str = ""


class Plan(Envelope):
    """Declared before any result: what will be run and what counts as correct."""

    kind: Literal["plan"]
    workload: str
    description: str = ""
    model_revision: str = Field(description="Model name and revision as the workload states it.")
    weights_sha256: str | None = Field(
        None, description="sha256 of the saved weights file (its bytes: the same tensors written another way differ)."
    )
    weights_content_sha256: str | None = Field(
        None,
        pattern=r"^[0-9a-f]{64}$",
        description="sha256 of the weights by content (recipe tensor-content-v1, collector/content.py: names sorted, "
        "dtype, shape and contiguous little-endian bytes of each tensor), whatever file they were written to. "
        "Absent: not hashed (logs before 1.2, or the hash failed: the weights artifact says why).",
    )
    target: str
    intended_target: str | None = Field(
        None,
        description="The target the plan is meant to certify (the plan's [workload] target); absent when the plan does not say.",
    )
    matrix: list[PlannedCell] = Field(
        min_length=1,
        description="Every planned cell, whether or not this run ran it (selection says which ran; 1.0 logs list only the cells run).",
    )
    reference: str = Field(description="What the trusted reference is, e.g. 'cpu eager float32'.")
    tolerances: dict[str, Tolerance] = Field(description="Per dtype name.")
    warm_repetitions: int = Field(ge=1, le=INT64_MAX)
    remeasure_rounds: int | None = Field(
        None,
        ge=0,
        le=INT64_MAX,
        description="Rounds of re-measurement allowed for an unstable warm series (1.2 logs on).",
    )
    timing_scope: TimingScope
    requirements: list[str] = Field(default_factory=list, description="Hard requirements, e.g. requires_float64.")
    padding: Padding | None = None
    compile_options: CompileOptions | None = Field(
        None,
        description="The plan's [compile] options for compiled cells; absent in logs that predate them (then dynamic=False, mode default).",
    )
    declared_inputs: dict[str, DeclaredInput] | None = Field(
        None,
        description="Per model input, what the plan declares its real preprocessing produces; absent when the plan declares none.",
    )
    attention_path: str | None = Field(None, description="Attention implementation, e.g. sdpa.")
    operators_note: str | None = None
    training: Training | None = Field(None, description="Set for a training workload: cells run training steps.")
    selection: Selection | None = Field(
        None, description="Set when --only or --modes chose a subset: which cells were to run. Absent: all of them."
    )
    compare: CompareRules | None = Field(
        None, description="Judged regions per output and rules per parameter group; absent: not declared."
    )
    matrix_cells: Count | None = Field(
        None,
        description="From 1.2: the cells the plan's matrix expands to when a cap ([matrix] max_cells, --max-cells) cut it to the "
        "cells in matrix; the rest are not part of this run. Absent: matrix is the whole plan. A log line is at most 8 MiB, so "
        "one run plans at most 20,000 cells.",
    )
    generation: Generation | None = Field(
        None, description="Set for a generation workload (schema 1.2): prefill and decode steps on a static KV cache."
    )

    @model_validator(mode="after")
    def _cases_once(self) -> Plan:
        cases = [cell.case for cell in self.matrix]
        if len(set(cases)) == len(cases):
            return self
        first: dict[str, int] = {}
        for index, case in enumerate(cases):
            if case in first:
                raise ValueError(
                    f"matrix lists case {case!r} twice (entries {first[case]} and {index}); each case key names one cell"
                )
            first[case] = index
        return self

    @field_serializer("matrix", mode="wrap")
    def _matrix_as_models(self, matrix: list[PlannedCell], handler: SerializerFunctionWrapHandler):
        """A plan the reader accepted keeps its cells as the Struct mirrors that checked them
        (contract/lines.py; same attributes and values), on either path: written out, they
        are made into models first, so a dump reads as a model's. Those cells do not remember
        which optional keys the line wrote (exclude_unset keeps their defaults)."""
        if not all(isinstance(cell, PlannedCell) for cell in matrix):
            matrix = [
                cell
                if isinstance(cell, PlannedCell)
                else PlannedCell.model_validate({name: getattr(cell, name) for name in PlannedCell.model_fields})
                for cell in matrix
            ]
        return handler(matrix)


# --- artifacts -------------------------------------------------------------------------------


class Artifact(Envelope):
    """A file saved beside the log so the same values feed every mode."""

    kind: Literal["artifact"]
    role: Literal["inputs", "weights", "reference_output", "trace", "other"]
    path: str = Field(description="Path relative to the run directory.")
    bytes: int = Field(ge=0, le=INT64_MAX)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$", description="sha256 of the file's bytes.")
    case: str | None = None
    content_sha256: str | None = Field(
        None,
        pattern=r"^[0-9a-f]{64}$",
        description="sha256 of the tensors the file holds, by content (see content_recipe), independent of how the file was written. "
        "Absent: not hashed (logs before 1.2; content_unknown_reason says why otherwise).",
    )
    content_recipe: str | None = Field(
        None, description="The content hash's recipe, e.g. tensor-content-v1 (collector/content.py documents it)."
    )
    content_by_key: dict[str, Sha256] | None = Field(
        None,
        description="Inputs and reference outputs: the content sha256 of each input shape's tensors (key as in reference.shape). Absent: not hashed.",
    )
    content_unknown_reason: str | None = Field(
        None, description="Why the content hash is absent, when the collector tried and failed."
    )


# --- reference -------------------------------------------------------------------------------


class Reference(Envelope):
    """The trusted reference for one shape: run twice to show its noise floor."""

    kind: Literal["reference"]
    shape: str = Field(description="Input key, e.g. b1-l128-contiguous (the values every dtype and mode get).")
    device: str
    dtype: str = Field("float32", description="dtype the reference computed in.")
    runs: int = Field(ge=1, le=INT64_MAX)
    noise_max_abs: NonNegative | None = Field(None, description="Max |run1 - run2|; 0 when bitwise equal.")
    deterministic: bool | None = None
    float64_max_abs: NonNegative | None = Field(
        None, description="Max |reference - float64 golden| when a golden run was made."
    )
    nonfinite: int | None = Field(
        None,
        ge=0,
        le=INT64_MAX,
        description="NaN and Inf elements in the reference's own outputs; absent: not measured.",
    )
    golden_nonfinite: int | None = Field(
        None,
        ge=0,
        le=INT64_MAX,
        description="NaN and Inf elements in the float64 golden outputs; absent: not measured or no golden run.",
    )


# --- case result -----------------------------------------------------------------------------


class OutputInfo(Strict):
    name: str
    shape: list[Int64]
    dtype: str
    nonfinite: int = Field(ge=0, le=INT64_MAX, description="Count of NaN and Inf elements.")


class InputInfo(OutputInfo):
    contiguous: bool = Field(
        description="Whether the tensor was contiguous. In case_result.inputs: the host tensor the "
        "workload prepared (1.0 logs: as prepared, not checked at the model); in inputs_fed: as the "
        "model received it."
    )
    strides: list[Int64] | None = Field(None, description="Strides in elements; absent: not recorded.")
    device: str | None = Field(None, description="Device the tensor was on; absent: not recorded.")


class RegionStats(Strict):
    """An output's elements outside its declared judged region: measured and shown, never judged."""

    count: int = Field(ge=0, le=INT64_MAX, description="Elements outside the judged region.")
    max_abs: NonNegative | None = Field(description="Largest |out - ref| there; null when not finite.")
    max_rel: NonNegative | None = Field(
        description="Largest |out - ref| / |ref| there (non-zero ref); null when not finite."
    )
    nonfinite: int = Field(ge=0, le=INT64_MAX, description="NaN or Inf output elements there.")
    beyond_tolerance: int | None = Field(
        None, ge=0, le=INT64_MAX, description="Elements there that the tolerance would have refused."
    )


class OutputStats(Strict):
    """One output's comparison, over its judged region only."""

    name: str
    mismatched: int = Field(ge=0, le=INT64_MAX)
    total: int = Field(ge=0, le=INT64_MAX, description="Elements judged.")
    max_abs: NonNegative | None
    max_rel: NonNegative | None
    region: str | None = Field(
        None, description="The plan's judged region, e.g. 'attention_mask != 0'; null: every element is judged."
    )
    outside: RegionStats | None = Field(None, description="Statistics of the elements the region leaves out.")


class ErrorStats(Strict):
    """Elementwise comparison with the reference; a null max_abs or max_rel means some
    difference was not finite (a NaN or Inf in the output or the reference).

    With judged regions declared in the plan, the top-level figures cover the judged elements
    only; ``per_output`` keeps each output's figures and the excluded elements' own.
    """

    max_abs: NonNegative | None
    max_rel: NonNegative | None
    mismatched: int = Field(ge=0, le=INT64_MAX)
    total: int = Field(ge=0, le=INT64_MAX)
    worst_index: list[Int64] = Field(
        description="Index of the element with the largest |diff| / allowance: among the failing elements when any fails (from 1.2; a NaN difference ranks above every other)."
    )
    worst_output: str = ""
    allowed_at_worst: NonNegative | None = Field(
        description="atol + rtol * |ref| at the worst index; null (from 1.2) when that is not finite (a NaN or Inf in the reference there)."
    )
    diff_at_worst: NonNegative | None
    per_output: list[OutputStats] | None = Field(None, description="Per output; absent in logs written before 1.1.")


class TaskMetric(Strict):
    name: str
    value: float | None
    criterion: TaskCriterion | None = None
    passed: bool | None = None


class Failure(Strict):
    phase: FailurePhase = Field(
        description="Where the cell failed: setup, inputs (make_inputs at this shape), reference (the CPU"
        " reference at this shape), transfer (inputs to the device), compile, run, compare."
    )
    type: str
    message: str


class CaseResult(Envelope):
    """The correctness outcome of one planned cell."""

    kind: Literal["case_result"]
    case: str
    status: CellStatus
    inputs: list[InputInfo] = Field(
        default_factory=list,
        description="Inputs as the workload prepared them on the host for the planned layout, after "
        "the dtype cast (integer and boolean inputs keep their dtype).",
    )
    inputs_fed: list[InputInfo] | None = Field(
        None,
        description="Tensors the model really received at its call boundary (forward pre-hook) on "
        "the cell's first call. Absent: not measured.",
    )
    layout_fed: Layout | None = Field(
        None, description="Layout of what the model received on every observed call (non-contiguous if any tensor was)."
    )
    layout_achieved: bool | None = Field(
        None,
        description="Whether every observed call of the cell (first call, and the repeat of a compiled "
        "cell) received the planned layout. False: the cell is untested for its planned layout. "
        "Absent: not measured.",
    )
    outputs: list[OutputInfo] = Field(default_factory=list)
    error_stats: ErrorStats | None = None
    task_metric: TaskMetric | None = None
    warnings: list[str] = Field(default_factory=list)
    failure: Failure | None = None
    skip_reason: str | None = None
    recompiled: bool | None = Field(
        None, description="On a cache check (repeat_of): whether the repeat compiled again."
    )


# --- operators / fallback --------------------------------------------------------------------


class MeasuredList(Strict):
    """A list that was measured (it may be empty: nothing fell back)."""

    status: Literal["measured"]
    items: list[str] = Field(default_factory=list)
    reason: str | None = None


class NotMeasured(Strict):
    """A list that was not measured: why is required, and no items may be given."""

    status: Literal["not_applicable", "unmeasured"]
    items: list[str] = Field(default_factory=list, max_length=0)
    reason: str = Field(min_length=1)


# A list that was measured, or an explicit statement of why it was not. Declared as a union
# rather than checked in code, so the JSON Schema states the rule too.
Measured = Annotated[Union[MeasuredList, NotMeasured], Field(discriminator="status")]


class Transfers(Strict):
    status: Literal["measured", "not_applicable", "unmeasured"]
    count: int | None = Field(None, ge=0, le=INT64_MAX)
    bytes: int | None = Field(None, ge=0, le=INT64_MAX)
    reason: str | None = None


class Operators(Envelope):
    """Ops executed and ops that fell back to the CPU for one cell, and its host/device copies."""

    kind: Literal["operators"]
    case: str
    executed: Measured = Field(description="Ops the cell executed.")
    fallback: Measured = Field(description="Ops that fell back to the CPU; measured and empty means none did.")
    transfers: Transfers = Field(description="Host/device copies during the cell's calls.")


# --- compile ---------------------------------------------------------------------------------


class GraphBreak(Strict):
    reason: str
    count: int = Field(1, ge=1, le=INT64_MAX)


class CacheDir(Strict):
    """One compile-cache directory listed around a first call."""

    role: str = Field(description="What it caches, e.g. inductor, triton, neff, inductor-precompiled-headers.")
    path: str
    redirected: bool = Field(
        description="True when the collector pointed it at a directory it made; False for a "
        "directory the backend keeps elsewhere (it may hold entries from earlier runs)."
    )
    entries_before: int = Field(ge=0, le=INT64_MAX, description="Files below it before the call.")
    entries_after: int | None = Field(None, ge=0, le=INT64_MAX, description="Files below it after the call.")


class Compile(Envelope):
    """Compilation facts for one compiled cell (for training: one event per graph)."""

    kind: Literal["compile"]
    case: str
    graph: Literal["inference", "forward", "backward"] = Field(
        "inference", description="Which graph: training cells compile a forward and a backward graph."
    )
    generation_graph: Literal["prefill", "decode"] | None = Field(
        None,
        description="Generation cells (1.2): the inference graph is the prefill of the cell's bucket or the one decode graph; absent for other cells.",
    )
    bucket: int | None = Field(
        None,
        ge=1,
        le=INT64_MAX,
        description="Generation cells (1.2): the bucket (padded prompt length) the cell served.",
    )
    compile_first_result_s: Seconds | None = None
    graphs: int | None = Field(None, ge=0, le=INT64_MAX)
    graph_breaks: list[GraphBreak] = Field(default_factory=list)
    recompiles: int | None = Field(None, ge=0, le=INT64_MAX)
    cache_hits: int | None = Field(None, ge=0, le=INT64_MAX)
    cache_misses: int | None = Field(None, ge=0, le=INT64_MAX)
    recompile_limit_hit: bool = False
    cache_condition: CacheCondition
    cache_dir: str | None = None
    cache_entries_before: int | None = Field(
        None, ge=0, le=INT64_MAX, description="Entries in the listed cache directories just before the first call."
    )
    cache_entries_after: int | None = Field(
        None, ge=0, le=INT64_MAX, description="Entries in the same directories after it."
    )
    cache_dirs: list[CacheDir] | None = Field(None, description="Each cache directory listed, with its counts.")
    compile_options: CompileOptions | None = Field(
        None, description="The options the torch.compile call was given; absent when not recorded."
    )


# --- training step -----------------------------------------------------------------------------


class GradStats(Strict):
    """One parameter's gradient (or updated value) against the reference."""

    name: str
    max_abs: NonNegative | None
    max_rel: NonNegative | None
    mismatched: int = Field(ge=0, le=INT64_MAX)
    total: int = Field(ge=0, le=INT64_MAX)
    norm_ratio: NonNegative | None = Field(None, description="||cell|| / ||reference||; 1 is ideal.")
    worst_ratio: NonNegative | None = Field(None, description="Worst |diff| / allowance; above 1 is a mismatch.")
    rule: str | None = Field(
        None,
        description="The plan's rule that judged this parameter (compare.params); null: elementwise, no rules declared.",
    )
    bound: float | None = Field(
        None,
        ge=0,
        description="lr-bound rule: k * lr, the allowed |updated - reference| where the reference gradient is zero.",
    )
    bound_elements: int | None = Field(
        None,
        ge=0,
        le=INT64_MAX,
        description="lr-bound rule: elements whose reference gradient is zero, judged by the bound.",
    )
    bound_max_abs: float | None = Field(
        None, description="lr-bound rule: largest |updated - reference| among those elements."
    )


class TrainStep(Envelope):
    """One training step of a cell: the loss and every gradient against the reference."""

    kind: Literal["train_step"]
    case: str
    step: int = Field(ge=0, le=INT64_MAX)
    loss: float | None
    reference_loss: float | None
    loss_within: bool
    grads: list[GradStats]


class TrainResult(Envelope):
    """After the steps: the updated parameters against the reference's."""

    kind: Literal["train_result"]
    case: str
    params: list[GradStats]


# --- timing ----------------------------------------------------------------------------------


class OutputCheck(Strict):
    """The cold call's outputs against the reference, by the cell's tolerance."""

    mismatched: int = Field(ge=0, le=INT64_MAX)
    total: int = Field(ge=0, le=INT64_MAX)
    max_abs: NonNegative | None = Field(description="Null when not finite.")
    passed: bool = Field(description="No element outside the tolerance and no new non-finite value.")


class Cold(Strict):
    seconds: Seconds
    cache_condition: CacheCondition = Field(
        description="The condition the call really had: fresh_process_empty_cache only when every "
        "listed cache directory was empty before it and no cache hit was counted (logs from 1.1 on; "
        "1.0 logs state it by construction); restart_populated_cache (logs from 1.2 on) for a fresh process "
        "started against the cache folder the cell's empty-cache compile filled, which was not empty before it."
    )
    fresh_process: bool
    process_start_s: Seconds | None = Field(
        None, description="One-time process start-up before the first call, kept apart."
    )
    cache_entries_before: int | None = Field(
        None,
        ge=0,
        le=INT64_MAX,
        description="Entries in the listed cache directories before the call; absent: not checked.",
    )
    cache_entries_after: int | None = Field(None, ge=0, le=INT64_MAX)
    cache_dirs: list[CacheDir] | None = Field(None, description="Each cache directory listed around the call.")
    cache_hits: int | None = Field(
        None,
        ge=0,
        le=INT64_MAX,
        description="Compile-cache hits counted during the call, where the backend counts them.",
    )
    cache_misses: int | None = Field(None, ge=0, le=INT64_MAX)
    output_check: OutputCheck | None = Field(
        None, description="The cold call's outputs against the reference; absent: not compared."
    )
    inputs_fed: list[InputInfo] | None = Field(
        None, description="What the model received on the cold call; absent: not measured."
    )
    layout_achieved: bool | None = None


class Warm(Strict):
    samples_s: list[Seconds] = Field(min_length=1)
    min_s: Seconds
    median_s: Seconds
    p90_s: Seconds
    iqr_s: Seconds


class HostFact(Strict):
    """One fact about the host around a warm loop (collector/hostcondition.py): its value and
    where it was read, or (value null) why it could not be read."""

    value: str | None = Field(None, description="The value as read, as text; null: unknown.")
    source: str | None = Field(None, description="Where it was read from (API, file, command).")
    unknown_reason: str | None = Field(None, description="Why the value could not be read; set when value is null.")


class WarmStability(Strict):
    """The collector's classification of one warm series (collector/stability.py; the rules and
    thresholds are in collector/README.md). reportgen classifies the samples again itself."""

    verdict: Literal["stable", "unstable", "unclassified"]
    samples: Count
    median_s: Seconds | None = None
    iqr_s: Seconds | None = None
    min_s: Seconds | None = None
    reasons: list[str] = Field(
        default_factory=list,
        description="The rules the series failed: outliers, bimodality, drift, spread, min_median.",
    )
    checks: dict[str, dict[str, float | bool | str]] = Field(
        default_factory=dict, description="Each rule: failed, its figures, a note."
    )
    note: str | None = Field(None, description="Why the series is unclassified.")
    attempt: int = Field(
        ge=1, le=INT64_MAX, description="Which warm series of the cell: 1 the first, 2.. re-measurements."
    )
    attempts_allowed: int = Field(ge=1, le=INT64_MAX, description="1 + the plan's timing.remeasure_rounds.")
    flag: Literal["unstable timing"] | None = Field(
        None, description="Set on the last allowed attempt when it is still unstable."
    )


class DeviceMemory(Strict):
    """Peak device memory over one warm series, where the backend exposes it (schema 1.3).
    A reader takes a figure only with status "measured"."""

    status: Literal["measured", "not_measured"]
    peak_allocated_bytes: int | None = Field(
        None,
        ge=0,
        le=INT64_MAX,
        description="Most bytes held by tensors on the device during the series (its peak reset just before it).",
    )
    source: str | None = Field(
        None, max_length=200, description="The call that read it, e.g. 'torch.cuda.max_memory_allocated'."
    )
    reason: str | None = Field(
        None, max_length=2000, description="Why it was not measured (the cpu target has no device allocator; ...)."
    )


class Timing(Envelope):
    """Cold first call and warm repetitions of one cell whose correctness passed."""

    kind: Literal["timing"]
    case: str
    cold: Cold | None = None
    warm: Warm | None = None
    cold_timed_out_after_s: float | None = Field(
        None,
        gt=0,
        description="The cold first call was not measured: its fresh process ran past this limit"
        " (--cold-timeout) and was ended. Absent: no timeout was recorded.",
    )
    synchronized: bool
    scope: TimingScope
    eager_after_recompile_limit: bool = Field(
        False, description="True when a 'compiled' cell really ran eager (recompile limit hit)."
    )
    timed_region: (
        list[Literal["preprocessing", "host_to_device", "model_call", "output_retrieval", "training_step"]] | None
    ) = Field(
        None,
        description="What the timing code put inside the clock, in order, as it ran it ('training_step': "
        "one full training step). Absent: not recorded (the scope field then repeats the plan).",
    )
    timed_notes: list[str] = Field(
        default_factory=list, description="How each stage was done, e.g. 'no copy: the device is the host'."
    )
    inputs_fed: list[InputInfo] | None = Field(
        None, description="What the model received on a warm call; absent: not measured."
    )
    layout_achieved: bool | None = None
    attempt: int | None = Field(
        None,
        ge=1,
        le=INT64_MAX,
        description="Which warm series of this cell the event holds: 1 the first, 2.. re-measurements of an unstable one"
        " (1.2 logs on; a cell's last warm event is the one reported). Absent: the cell's only series.",
    )
    stability: WarmStability | None = Field(
        None, description="The warm series' classification and attempt (1.2 logs on)."
    )
    host: dict[str, HostFact] | None = Field(
        None,
        description="The host around the warm loop (1.2 logs on): load_avg_before/after, cpu_count, cpu_affinity,"
        " torch_threads, cpu_governor, and the accelerator's readings before/after (gpu_*_before/after on CUDA;"
        " accelerator_before/after: why not measured elsewhere). Every key is present: a value or why it is unknown.",
    )
    device_memory: DeviceMemory | None = Field(
        None, description="Peak device memory over the warm series (1.3 logs on). Absent: not measured (older logs)."
    )


# --- generation (schema 1.2) ------------------------------------------------------------------


class Request(Envelope):
    """How the plan's padding policy serves one request length, before any cell of it runs."""

    kind: Literal["request"]
    batch: int = Field(ge=1, le=INT64_MAX)
    length: int = Field(ge=1, le=INT64_MAX, description="Tokens of the request as tokenised.")
    bucket: int | None = Field(
        None, ge=1, le=INT64_MAX, description="The bucket it is padded (or truncated) to; null when refused."
    )
    outcome: Literal["padded", "truncated", "refused"]
    reason: str = Field(description="The policy's decision in words.")
    cases: list[str] = Field(default_factory=list, description="The cells that serve this request.")


class GenerationTiming(Strict):
    """A passing generation cell's timings, as measured (synchronised at every call)."""

    ttft_cold_s: Seconds = Field(
        description="The cell's first prefill, first token chosen (compiled: includes compiling this bucket's prefill graph when no earlier cell did)."
    )
    ttft_warm: Warm = Field(description="Prefill plus first token, one sample per warm repetition.")
    decode_token: Warm = Field(description="One decode call (one new token), every step of every warm repetition.")
    tokens_per_s: NonNegative = Field(description="Decode steps per second of decode time, the median repetition.")
    repetitions: int = Field(ge=1, le=INT64_MAX)
    scope: str = Field(description="What the clock covered, in words.")


class GenerationResult(Envelope):
    """One generation cell against the reference's generation: greedy tokens, top-k overlap,
    the first divergent step (step 0 is the prefill's token) and, when it passed, its timings."""

    kind: Literal["generation"]
    case: str
    request_length: int = Field(ge=1, le=INT64_MAX)
    bucket: int = Field(ge=1, le=INT64_MAX)
    truncated: bool = Field(
        False, description="The request was longer than the largest bucket and cut to it (plan policy)."
    )
    padding_side: Literal["left", "right"]
    decode_steps: int = Field(ge=1, le=INT64_MAX)
    max_cache_len: int = Field(ge=1, le=INT64_MAX)
    tokens: list[list[Int64]] = Field(description="Greedy tokens per batch row, step 0 first.")
    reference_tokens: list[list[Int64]]
    steps_agreeing: int = Field(
        ge=0, le=INT64_MAX, description="Leading steps where every row's token equals the reference's."
    )
    first_divergent_step: int | None = Field(
        None, ge=0, le=INT64_MAX, description="The first step whose token differs; null: every step agrees."
    )
    top_k: int = Field(ge=1, le=INT64_MAX)
    top_k_overlap: list[Annotated[float, Field(ge=0, le=1)] | None] = Field(
        description="Per step, the smallest share over rows of the reference's top-k in the cell's top-k; null after the first divergent step (contexts differ)."
    )
    tokens_passed: bool | None = Field(
        description="The task criterion on greedy_steps_agreeing held; null: none declared."
    )
    top_k_passed: bool
    timing: GenerationTiming | None = Field(None, description="Only for a cell that passed.")


# --- profile ---------------------------------------------------------------------------------


class TraceFile(Strict):
    path: str
    kind: str = Field(description="chrome_trace, neff, ntff, ...")
    bytes: int = Field(ge=0, le=INT64_MAX)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class TopOp(Strict):
    name: str
    self_time_us: NonNegative
    calls: int = Field(ge=0, le=INT64_MAX)


class Profile(Envelope):
    kind: Literal["profile"]
    case: str
    profiler: str
    traces: list[TraceFile]
    top_ops: list[TopOp] = Field(default_factory=list)


# --- localisation ----------------------------------------------------------------------------


class LocalizedModule(Strict):
    """One named submodule's output against the reference module's output, judged with the cell's tolerance."""

    name: str = Field(description="Qualified name, as named_modules() gives it (e.g. 'encoder.layer.0').")
    type: str = Field(description="The module's class name.")
    depth: int = Field(
        ge=1,
        le=INT64_MAX,
        description="1 for the model's direct children, 2 for theirs, and so on; a ModuleList's index does not count (blocks.0 is 1).",
    )
    order: int = Field(
        ge=0,
        le=INT64_MAX,
        description="Position of its first call in the reference's execution order (among the modules localised).",
    )
    calls: int = Field(
        ge=0, le=INT64_MAX, description="Calls in one reference forward; only the first call is compared."
    )
    accumulated: ErrorStats | None = Field(
        None,
        description="Each side run end to end: the module's own error plus what it inherited. Absent: not measured (see note).",
    )
    local: ErrorStats | None = Field(
        None,
        description="The candidate module alone, fed the reference module's inputs: its own error. Absent: not measured (see note).",
    )
    local_compiled: bool | None = Field(
        None,
        description="True: the local figure is of the module compiled alone; False: of the module run eager. Absent: no local figure.",
    )
    operators: list[str] | None = Field(
        None,
        description="Aten ops an eager call of the candidate module dispatched (see operators_from). Absent: not recorded.",
    )
    note: str | None = Field(None, description="Why a view is missing, e.g. a module that could not be compiled alone.")


class SkippedModule(Strict):
    name: str = Field(description="The module, or a count of modules, left out.")
    reason: str = Field(description="max_depth, max_modules, max_bytes, or that the reference never called it.")


class Localization(Envelope):
    """Where a cell's error arises: per named submodule, in the reference's execution order. New in 1.2."""

    kind: Literal["localization"]
    case: str
    reason: Literal["mismatch", "nonfinite", "plan"] = Field(
        description="Why this cell was localised: its status, or the plan's [localize] always."
    )
    mode: Mode
    atol: NonNegative = Field(description="The cell's own tolerance, as every module was judged.")
    rtol: NonNegative
    max_depth: int = Field(ge=1, le=INT64_MAX)
    max_modules: int = Field(ge=1, le=INT64_MAX)
    max_bytes: int = Field(ge=1, le=INT64_MAX)
    modules: list[LocalizedModule] = Field(default_factory=list, description="In execution order.")
    skipped: list[SkippedModule] = Field(
        default_factory=list, description="Modules the bounds left out, with the bound."
    )
    skipped_more: int = Field(0, ge=0, le=INT64_MAX, description="Skipped modules beyond those listed.")
    bytes_held: int | None = Field(None, ge=0, le=INT64_MAX, description="Bytes of captured module inputs and outputs.")
    accumulated_note: str | None = Field(None, description="Why the accumulated view is missing or partial.")
    operators_from: str | None = Field(None, description="How the per-module operator lists were taken.")
    failure: str | None = Field(None, description="Localisation itself failed: why (the cell's result stands).")


# --- inspection (python -m collector inspect: on a CPU, before any hardware) -----------------
#
# An inspection log is its own file: inspection_start, one inspection per planned input shape,
# inspection_end. ``reportgen plan-check --inspection`` reads it; nothing in it is a measurement
# on a device.


class InspectionStart(Envelope):
    """First line of an inspection log: which plan was inspected, where, with what. New in 1.2."""

    kind: Literal["inspection_start"]
    workload: str = Field(min_length=1)
    plan: str = Field(description="The plan file inspected, as given.")
    plan_sha256: str = Field(pattern=r"^[0-9a-f]{64}$", description="sha256 of the plan's text as read.")
    collector: str
    torch: str = Field(description="torch version that captured the graphs.")
    host: str = Field(description="Where it ran; always a CPU: nothing was measured on a device.")


class OpCount(Strict):
    name: str = Field(description="aten name as the graph holds it (e.g. 'aten::linear'), or a higher-order op's name.")
    count: int = Field(ge=1, le=INT64_MAX, description="Nodes calling it in the captured graph.")


class WideTensor(Strict):
    """A tensor the target computes at lower width: float64, or int64 with values outside int32."""

    where: Literal["parameter", "buffer", "input", "constant", "graph"] = Field(
        description="graph: a value the captured graph computes (its values are not known before running)."
    )
    name: str
    dtype: str
    shape: list[Int64] | None = None
    min: float | None = Field(None, description="int64 only: smallest value seen; absent for graph values.")
    max: float | None = Field(None, description="int64 only: largest value seen.")


class Inspection(Envelope):
    """One planned input shape's captured graph: operators, graph breaks, wide dtypes, input layouts. New in 1.2."""

    kind: Literal["inspection"]
    shape: str = Field(description="The planned input key, e.g. b1-l16-contiguous.")
    batch: int = Field(ge=1, le=INT64_MAX)
    length: int = Field(ge=1, le=INT64_MAX)
    layout: Layout
    capture: str = Field(
        description="How the operators were captured (e.g. torch.export non-strict, ATen before decompositions)."
    )
    capture_failure: str | None = Field(
        None, description="Why the graph could not be captured; the operator list is then empty."
    )
    operators: list[OpCount] = Field(default_factory=list)
    graph_count: int | None = Field(
        None, ge=0, le=INT64_MAX, description="Graphs torch._dynamo.explain made (1: no break)."
    )
    graph_breaks: list[GraphBreak] = Field(default_factory=list)
    breaks_failure: str | None = Field(None, description="Why graph breaks could not be looked for.")
    float64: list[WideTensor] = Field(
        default_factory=list, description="float64 parameters, buffers, inputs, constants and graph values."
    )
    int64_beyond_int32: list[WideTensor] = Field(
        default_factory=list, description="int64 tensors holding a value outside the int32 range."
    )
    int64_graph_values: int = Field(
        0, ge=0, le=INT64_MAX, description="int64 values the graph computes (their range is not known before running)."
    )
    inputs: list[InputInfo] = Field(
        default_factory=list, description="The inputs as make_inputs built them at this shape and layout."
    )


class InspectionEnd(Envelope):
    kind: Literal["inspection_end"]
    shapes_planned: int = Field(ge=0, le=INT64_MAX)
    shapes_inspected: int = Field(ge=0, le=INT64_MAX)


INSPECTION_MODELS: dict[str, type[Envelope]] = {
    "inspection_start": InspectionStart,
    "inspection": Inspection,
    "inspection_end": InspectionEnd,
}


# --- warnings and run end --------------------------------------------------------------------


class WarningEvent(Envelope):
    """A warning raised outside any cell (at import, device init, ...)."""

    kind: Literal["warning"]
    message: str
    category: str = "UserWarning"
    case: str | None = None


class RunEnd(Envelope):
    kind: Literal["run_end"]
    finished_at: str
    status: Literal["complete", "aborted"]
    reason: str | None = None
    cells_planned: int = Field(ge=0, le=INT64_MAX)
    cells_recorded: int = Field(ge=0, le=INT64_MAX)


Event = Annotated[
    Union[
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
    ],
    Field(discriminator="kind"),
]

EVENT_MODELS: dict[str, type[Envelope]] = {
    "run_start": RunStart,
    "environment": Environment,
    "plan": Plan,
    "artifact": Artifact,
    "reference": Reference,
    "case_result": CaseResult,
    "operators": Operators,
    "compile": Compile,
    "timing": Timing,
    "profile": Profile,
    "train_step": TrainStep,
    "train_result": TrainResult,
    "request": Request,
    "generation": GenerationResult,
    "warning": WarningEvent,
    "run_end": RunEnd,
    "localization": Localization,
}
