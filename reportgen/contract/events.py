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

SCHEMA_MAJOR = 1
SCHEMA_MINOR = 2
SCHEMA_VERSION = f"{SCHEMA_MAJOR}.{SCHEMA_MINOR}"

CellStatus = Literal["pass", "mismatch", "nonfinite", "error", "skipped"]
Mode = Literal["eager", "compiled"]
Layout = Literal["contiguous", "noncontiguous"]
FailurePhase = Literal["setup", "inputs", "reference", "transfer", "compile", "run", "compare"]
BackendFamily = Literal["neuron-native", "neuron-xla", "cuda", "cpu", "unknown"]
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
    reason: str = Field(description="Why: what auto probed and found, or that the command line named it (and whether it overrode the plan's target).")


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
    backend_family: BackendFamily = Field(description="Backend family the cells ran on.")
    backend_family_reason: str = Field(description="How the family was decided (probes, versions).")
    device_type: str = Field(description="torch device type the cells ran on: cpu, cuda, neuron.")
    versions: dict[str, Fact] = Field(
        description="python, torch, torch_neuronx, neuronx_cc, neuron_driver, neuron_runtime, "
        "cuda, os_release and anything else read; unknown ones carry their reason."
    )
    device: dict[str, Fact] = Field(
        description="instance_type, device_name, device_count, hostname."
    )
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
    grad: ElementTolerance | None = Field(None, description="Training: rule for every parameter gradient and the updated parameters.")


class Training(Strict):
    """Training cells: fixed steps from identical weights, inputs and seeds."""

    steps: int = Field(ge=1, le=INT64_MAX)
    seed: Int64
    optimizer: str = Field(description="Optimizer as the workload builds it, e.g. 'AdamW(lr=1e-3)'.")
    randomness: str = Field(description="How stochastic parts were made comparable, e.g. 'dropout off'.")


class PlannedCell(Strict):
    """One cell of the matrix: a shape, layout, dtype and execution mode."""

    case: str = Field(description="Stable case key, e.g. b1-l128-contiguous-float32-eager.")
    batch: int = Field(ge=1, le=INT64_MAX)
    length: int = Field(ge=1, le=INT64_MAX)
    layout: Layout
    dtype: str = Field(description="Compute dtype of floating inputs and weights.")
    mode: Mode
    repeat_of: str | None = Field(
        None, description="Set on a cache check: the case key whose shape this repeats."
    )


class Selection(Strict):
    """Cells chosen to run by --only / --modes; the plan's matrix still lists every planned cell."""

    only: list[str] = Field(default_factory=list, description="--only globs given.")
    modes: list[str] = Field(default_factory=list, description="--modes given.")
    cases: list[str] = Field(description="Case keys selected to run; every other planned cell was not run (deselected).")


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
    mask: str | None = Field(None, description="Input whose zeros mark elements not judged (aligned with the output's leading dimensions).")
    region: list[str] | None = Field(None, description="Index slices over the output's leading dimensions that are judged, e.g. [':', '0:64'].")
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
    lr: float | None = Field(None, ge=0, description="lr-bound: the group's learning rate, read from the optimizer before any step.")
    zero_below: float = Field(0.0, ge=0, description="lr-bound: a reference gradient element counts as zero when |grad| <= this at every step.")
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
    how: str | None = Field(None, description="How a non-contiguous input comes about: slice, transpose, channels_last, other.")
    value_range: list[int] | None = Field(None, min_length=2, max_length=2, description="Integer inputs: [smallest, largest] value.")
    note: str = ""


class Plan(Envelope):
    """Declared before any result: what will be run and what counts as correct."""

    kind: Literal["plan"]
    workload: str
    description: str = ""
    model_revision: str = Field(description="Model name and revision as the workload states it.")
    weights_sha256: str | None = Field(None, description="sha256 of the saved weights file.")
    target: str
    intended_target: str | None = Field(
        None, description="The target the plan is meant to certify (the plan's [workload] target); absent when the plan does not say."
    )
    matrix: list[PlannedCell] = Field(min_length=1, description="Every planned cell, whether or not this run ran it (selection says which ran; 1.0 logs list only the cells run).")
    reference: str = Field(description="What the trusted reference is, e.g. 'cpu eager float32'.")
    tolerances: dict[str, Tolerance] = Field(description="Per dtype name.")
    warm_repetitions: int = Field(ge=1, le=INT64_MAX)
    timing_scope: TimingScope
    requirements: list[str] = Field(
        default_factory=list, description="Hard requirements, e.g. requires_float64."
    )
    padding: Padding | None = None
    compile_options: CompileOptions | None = Field(
        None, description="The plan's [compile] options for compiled cells; absent in logs that predate them (then dynamic=False, mode default)."
    )
    declared_inputs: dict[str, DeclaredInput] | None = Field(
        None, description="Per model input, what the plan declares its real preprocessing produces; absent when the plan declares none."
    )
    attention_path: str | None = Field(None, description="Attention implementation, e.g. sdpa.")
    operators_note: str | None = None
    training: Training | None = Field(None, description="Set for a training workload: cells run training steps.")
    selection: Selection | None = Field(
        None, description="Set when --only or --modes chose a subset: which cells were to run. Absent: all of them."
    )
    compare: CompareRules | None = Field(None, description="Judged regions per output and rules per parameter group; absent: not declared.")

    @model_validator(mode="after")
    def _cases_once(self) -> Plan:
        cases = [cell.case for cell in self.matrix]
        if len(set(cases)) == len(cases):
            return self
        first: dict[str, int] = {}
        for index, case in enumerate(cases):
            if case in first:
                raise ValueError(f"matrix lists case {case!r} twice (entries {first[case]} and {index}); each case key names one cell")
            first[case] = index
        return self

    @field_serializer("matrix", mode="wrap")
    def _matrix_as_models(self, matrix: list[PlannedCell], handler: SerializerFunctionWrapHandler):  # type: ignore[no-untyped-def]
        """A long plan read on the reader's fast path keeps its cells as the Struct mirrors that
        checked them (contract.linecheck; same attributes and values): written out, they are
        made into models first, so a dump reads as the careful path's. Those cells do not
        remember which optional keys the line wrote (exclude_unset keeps their defaults)."""
        if not all(isinstance(cell, PlannedCell) for cell in matrix):
            matrix = [cell if isinstance(cell, PlannedCell) else PlannedCell.model_validate({name: getattr(cell, name) for name in PlannedCell.model_fields}) for cell in matrix]
        return handler(matrix)


# --- artifacts -------------------------------------------------------------------------------


class Artifact(Envelope):
    """A file saved beside the log so the same values feed every mode."""

    kind: Literal["artifact"]
    role: Literal["inputs", "weights", "reference_output", "trace", "other"]
    path: str = Field(description="Path relative to the run directory.")
    bytes: int = Field(ge=0, le=INT64_MAX)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    case: str | None = None


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
        None, ge=0, le=INT64_MAX, description="NaN and Inf elements in the reference's own outputs; absent: not measured."
    )
    golden_nonfinite: int | None = Field(
        None, ge=0, le=INT64_MAX, description="NaN and Inf elements in the float64 golden outputs; absent: not measured or no golden run."
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
    max_rel: NonNegative | None = Field(description="Largest |out - ref| / |ref| there (non-zero ref); null when not finite.")
    nonfinite: int = Field(ge=0, le=INT64_MAX, description="NaN or Inf output elements there.")
    beyond_tolerance: int | None = Field(None, ge=0, le=INT64_MAX, description="Elements there that the tolerance would have refused.")


class OutputStats(Strict):
    """One output's comparison, over its judged region only."""

    name: str
    mismatched: int = Field(ge=0, le=INT64_MAX)
    total: int = Field(ge=0, le=INT64_MAX, description="Elements judged.")
    max_abs: NonNegative | None
    max_rel: NonNegative | None
    region: str | None = Field(None, description="The plan's judged region, e.g. 'attention_mask != 0'; null: every element is judged.")
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
    worst_index: list[Int64] = Field(description="Index of the element with the largest |diff| / allowance.")
    worst_output: str = ""
    allowed_at_worst: NonNegative = Field(description="atol + rtol * |ref| at the worst index.")
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
    graph: Literal["inference", "forward", "backward"] = Field("inference", description="Which graph: training cells compile a forward and a backward graph.")
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
    cache_entries_after: int | None = Field(None, ge=0, le=INT64_MAX, description="Entries in the same directories after it.")
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
    rule: str | None = Field(None, description="The plan's rule that judged this parameter (compare.params); null: elementwise, no rules declared.")
    bound: float | None = Field(None, ge=0, description="lr-bound rule: k * lr, the allowed |updated - reference| where the reference gradient is zero.")
    bound_elements: int | None = Field(None, ge=0, le=INT64_MAX, description="lr-bound rule: elements whose reference gradient is zero, judged by the bound.")
    bound_max_abs: float | None = Field(None, description="lr-bound rule: largest |updated - reference| among those elements.")


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
    cache_entries_before: int | None = Field(None, ge=0, le=INT64_MAX, description="Entries in the listed cache directories before the call; absent: not checked.")
    cache_entries_after: int | None = Field(None, ge=0, le=INT64_MAX)
    cache_dirs: list[CacheDir] | None = Field(None, description="Each cache directory listed around the call.")
    cache_hits: int | None = Field(None, ge=0, le=INT64_MAX, description="Compile-cache hits counted during the call, where the backend counts them.")
    cache_misses: int | None = Field(None, ge=0, le=INT64_MAX)
    output_check: OutputCheck | None = Field(None, description="The cold call's outputs against the reference; absent: not compared.")
    inputs_fed: list[InputInfo] | None = Field(None, description="What the model received on the cold call; absent: not measured.")
    layout_achieved: bool | None = None


class Warm(Strict):
    samples_s: list[Seconds] = Field(min_length=1)
    min_s: Seconds
    median_s: Seconds
    p90_s: Seconds
    iqr_s: Seconds


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
    timed_region: list[Literal["preprocessing", "host_to_device", "model_call", "output_retrieval", "training_step"]] | None = Field(
        None,
        description="What the timing code put inside the clock, in order, as it ran it ('training_step': "
        "one full training step). Absent: not recorded (the scope field then repeats the plan).",
    )
    timed_notes: list[str] = Field(default_factory=list, description="How each stage was done, e.g. 'no copy: the device is the host'.")
    inputs_fed: list[InputInfo] | None = Field(None, description="What the model received on a warm call; absent: not measured.")
    layout_achieved: bool | None = None


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
        WarningEvent,
        RunEnd,
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
    "warning": WarningEvent,
    "run_end": RunEnd,
}

# Kinds that report an outcome; none may come before the plan that declares the tolerances.
RESULT_KINDS = frozenset({"reference", "case_result", "operators", "compile", "timing", "profile", "train_step", "train_result"})

# Kinds that always name one planned cell (a required ``case`` field).
CASE_KINDS = frozenset({"case_result", "operators", "compile", "timing", "profile", "train_step", "train_result"})
