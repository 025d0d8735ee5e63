"""Figures that contradict the status or flag logged beside them.

The collector decides a cell's status from its figures (``collector/run/cells.py``,
``generation_cells.py``, ``training_cells.py``), and the log carries both. A reader that took
the status as written would report a pass next to figures that fail the declared criteria, and
the contract invites other collectors, so nothing here assumes the two agree: a log that
contradicts itself is not evidence, and each contradiction is an error naming the line. The same
holds for a warm series: the pages, the history and every comparison read its logged median and
IQR, so figures its own samples do not give are refused, as is a warm loop of another count of
repetitions than the plan's warm_repetitions (which the criteria table states and a comparison
names when it changes); a compile event's options must be the plan's, which the criteria
table states; and a generation event's decode steps must be the plan's and its tokens' (the
prefill's token and one a decode call), which its agreeing steps are counted against. From
schema 1.4 a warm loop's host holds what its threads ran and waited for a CPU and the loop's
wall time (the contention rule reads them): each is there, as seconds the way the collector
writes them, or unknown with its reason. A cell's warm series are its attempts 1, 2, ... in the
order logged, at most 1 + the plan's remeasure_rounds, each after one the log classified
unstable (the collector measures again only such a series).

What identifies the run holds together too: run_start names one collector version, a run has
one weights artifact (a measured run of schema 1.2 on that ends complete has it: the collector
writes it right after the plan), and it and the plan give the same hashes of the weights. (torch's version
read three ways, the workload's packages, the installed metadata and torch.__version__, is only
warned about when they differ: a vendored folder on sys.path, or a build from source, makes them
differ in an honest log.) A generation
event says what its cell and its request say (the cell's length, the request's bucket and
truncation) and its plan says (top_k, padding side, cache length), holds a top-k overlap at every
step up to its first divergent one and none after, and carries timings only for a cell that
passed; a request's reason, in the collector's words, names its own routing. A localised
module's figures agree with each other as a cell's error_stats do, and its modules are listed as
the collector lists them: none beside a failure, each once, in order, within the event's bounds,
none also skipped.

A result holds together with what the collector writes beside it or before it: a pass or a
mismatch carries its error_stats (and its task_metric where the plan gives a task criterion); a
training cell's steps and train_result come before its result; layout_fed and layout_achieved
follow from the tensors inputs_fed records; a judged cell of a cpu or cuda run was fed at least
one tensor on that device; a pass holds no more non-finite outputs than the collector lets pass;
a cache check whose compile event built a graph says it recompiled; every cell of one batch,
length and layout records inputs of the same names and shapes. run_end counts the plan's
cells and the results logged. A result's error_stats hold together with the atol that judged
them (no allowance below it, no element outside the tolerance within it); a localisation is of
an inference plan's cell, once, after its result, in the cell's mode and for the reason its
status gives; a timing event's scope is the stages its timed_region holds, and a timed call
(warm or cold) was fed inputs of the names and shapes its cell's result records at the checked
call.

Only the few fields involved are read, from the line the reader already decoded: the checks run
on every ``run_start``, ``environment``, ``workload_reads``, ``request``, ``case_result``, ``timing``, ``compile``,
``generation``, ``train_step``, ``train_result``, ``artifact``, ``localization``, ``reference``
and ``run_end`` line of a long log.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from collections.abc import Mapping
from typing import Any, Callable

import msgspec
from msgspec import UNSET

from collector.descriptors import descriptors
from collector.visible import bare, read_as, visible
from collector.planschema import MAX_REMEASURE_ROUNDS, module_depth
from collector.stability import unstable_generation
from collector.timing import warm_stats
from reportgen.contract.events import EVENT_MODELS, SCHEMA_MAJOR, SCHEMA_MINOR, absent, schema_tuple

__all__ = ["CONTENT_RECIPES", "CPU_TIME_KEYS", "FigureChecks", "family_disagreement", "seconds_figure", "waited_of"]

_WARM_FIGURES = ("min_s", "median_s", "p90_s", "iqr_s")

# The content hash recipes this reader knows (collector/content.py, RECIPE; a test keeps the
# collector's among them). A hash of another recipe is no hash of this one: the same tensors
# give another digest.
CONTENT_RECIPES = ("tensor-content-v1",)

# run_start.collector as the collector writes it (collector/run/setup.py): "collector <version>",
# the version provenance.collector_version gives.
_COLLECTOR_NAME = re.compile(r"collector (\S+)")

# The case key the collector makes of a cell's fields (collector/plan.py, Cell.case):
# b<batch>-l<length>-<layout>-<dtype>-<mode>, with -repeat on a cache check.
_COLLECTOR_CASE = re.compile(r"b(\d+)-l(\d+)-(contiguous|noncontiguous)-([^-]+)-(eager|compiled)(-repeat)?")


# Why the collector localises a cell of each status (collector/localize.py, ``wanted``): a cell
# that mismatched or went non-finite by its status, one that passed only as the plan's [localize]
# always asks ("plan"); a cell in error or skipped never.
_LOCALIZED_FOR = {"mismatch": "mismatch", "nonfinite": "nonfinite", "pass": "plan"}

# A request's reason as the collector words it (collector/generation.py, route): padded to a
# larger bucket, filling one, or above the largest bucket and truncated to it or refused.
_PADDED = re.compile(r"([0-9]{1,12}) tokens padded to the ([0-9]{1,12}) bucket")
_FILLS = re.compile(r"([0-9]{1,12}) tokens fill the ([0-9]{1,12}) bucket")
_ABOVE = re.compile(
    r"([0-9]{1,12}) tokens are above the largest bucket (\S+): (?:truncated to the last ([0-9]{1,12}) tokens \(|refused \()"
)

# The stages a timing scope says are inside the clock (collector/run/timings.py, scope_done).
_SCOPE_STAGES = ("preprocessing", "host_to_device", "output_retrieval")

# A warm loop's CPU time figures (collector/hostcondition.py), from schema 1.4.
CPU_TIME_KEYS = ("cpu_run_s", "cpu_wait_s", "loop_wall_s")
_PLAIN_SECONDS = re.compile(r"[0-9]{1,12}(?:\.[0-9]{1,12})?")


def seconds_figure(text: object) -> float | None:
    """A host fact's seconds as the collector writes them ('0.004512'): digits with at most one
    point, never a sign, an exponent, an underscore, 'nan' or 'inf'; None for anything else."""
    return float(text) if isinstance(text, str) and _PLAIN_SECONDS.fullmatch(text) else None


# From 1.4 to this reader's own minor: a newer minor's log is read as far as it is understood.
_CPU_TIME_VERSIONS = frozenset(f"{SCHEMA_MAJOR}.{minor}" for minor in range(4, SCHEMA_MINOR + 1))


def _cpu_time(what: str, host: Any, version: str, samples: tuple[Any, ...]) -> str | None:
    """A 1.4 loop without its host, its host without its CPU time figures or with one that is
    no plain figure, or a loop wall time shorter than its ``samples`` (lists of seconds) add up to."""
    if version not in _CPU_TIME_VERSIONS:  # a set lookup: every timing line of a long log asks
        return None
    if absent(host) or not host:
        return f"{what} is not recorded: a 1.4 warm loop records its host, the CPU time figures among it"
    missing = [key for key in CPU_TIME_KEYS if key not in host]
    if missing:
        return f"{what} lacks {', '.join(missing)}: a 1.4 log records each, a value or why it is unknown"
    for key in CPU_TIME_KEYS:
        value = host[key].value
        if absent(value):  # a fact left with no value key reads as one of none (why it is unknown)
            continue
        if seconds_figure(value) is None:
            return f"{what}.{key} is {value[:40]!r}, not seconds written as digits with at most one point"
    wall = seconds_figure(host["loop_wall_s"].value)
    timed_s = math.fsum(math.fsum(series) for series in samples)
    if wall is not None and wall + 1e-6 < timed_s:  # the figures are written to the microsecond
        return f"{what}.loop_wall_s is {wall:.6f} s, shorter than the {timed_s:.6f} s its samples add up to"
    return None


def waited_of(host: Mapping[str, Any]) -> tuple[float, float] | None:
    """(seconds the threads waited for a CPU, seconds the loop took) from a warm loop's host
    facts (cpu_wait_s and loop_wall_s); None unless both are plain figures (seconds_figure)."""
    wait, wall = seconds_figure(host.get("cpu_wait_s")), seconds_figure(host.get("loop_wall_s"))
    return (wait, wall) if wait is not None and wall is not None else None


def _waited_facts(host: Any) -> tuple[float, float] | None:
    """waited_of over a loop's host facts (HostFact values), as the log holds them."""
    return waited_of({k: f.value for k, f in host.items()}) if host else None


def _meets(value: float, criterion: Any) -> bool:
    """The collector's test of a task criterion (``op`` and ``threshold``)."""
    return value >= criterion.threshold if criterion.op == ">=" else value <= criterion.threshold


def _within_atol(figures: Any, atol: float) -> bool:
    """Elements counted outside the tolerance whose largest difference is within the atol (and
    below 1, the least an exactly compared element can be off by): impossible (_allowance)."""
    largest = figures.max_abs
    return largest is not None and largest <= atol and largest < 1


def _within_words(where: str, figures: Any, atol: float) -> str:
    return (
        f"{where} counts {figures.mismatched} element(s) outside the tolerance, but its max_abs {figures.max_abs:g} is "
        f"within the atol {atol:g} that judged this cell: an element outside it differs by more than the atol"
    )


class FigureChecks:
    """The state the cross-line rules need: the plan's criteria per case, which cells a
    figure already failed (training lines come before their result) or passed (generation
    lines come after it), the run's weights artifact and the request that serves each
    generation cell (written before its cells)."""

    def __init__(self) -> None:
        self.plan: Any = None
        self.line = 0  # the line being checked (check sets it): a rule names an earlier line by it
        self.passed: set[str] = set()  # kept only for a plan with generation (its lines follow the result)
        # Generation plans only: each case_result's task metric (value, passed, line), which the
        # collector writes from the figures its generation event then logs (generation_cells.py).
        self.task_results: dict[str, tuple[Any, Any, int]] = {}
        self.failed_training: dict[str, str] = {}  # case -> the first failing figure, in words
        self._generating = False
        self._training = False  # the plan trains its cells (its [training] table)
        # Generation plans only: a result other than a pass (status, line), and a generation
        # event that carries timings (its line), by case: the collector times passing cells only.
        self.unpassed: dict[str, tuple[str, int]] = {}
        self.timed: dict[str, int] = {}
        # Each case's first warm series (its line): the collector times a passing cell only.
        self.warm_lines: dict[str, int] = {}
        # The request event serving each case it names (its line and fields), the first one.
        self.requests: dict[str, tuple[int, Any]] = {}
        self.weights: tuple[int, Any] | None = None  # the run's weights artifact: its line and fields
        # By case: the fastest warm call of its warm series so far, and its cold call that compiled
        # from an empty cache in a fresh process (seconds, line): the two come on separate lines.
        self.fastest_warm: dict[str, tuple[float, int]] = {}
        self.empty_cold: dict[str, tuple[float, int]] = {}
        # By case: the attempt of its last warm series, the verdict the log gives it, and its line.
        self.last_series: dict[str, tuple[int, str | None, int]] = {}
        self._cells: dict[str, Any] | None = None  # each planned cell by case: made once
        self._atols: dict[str, Any] = {}  # by dtype, the atol that judged error_stats (_judging_atol)
        self.results = 0  # case_result lines read so far: run_end's cells_recorded counts them
        # Set by the reader once it reports an error: a line it refused may have been a result.
        self.erred = False
        # environment.device_type where it says which device every input was fed on (cpu, cuda),
        # and "<type>:" for a device with its index ("cuda:0"); None elsewhere.
        self.device_type: str | None = None
        self.start_target: tuple[str, int] | None = None  # run_start's target and line
        self.measured = False  # run_start says a real run of the collector wrote the log (origin)
        self.first_compile: dict[str, tuple[bool, int]] = {}  # see _compile
        self._device_index = ""
        self.ref_nonfinite: dict[str, int] = {}  # a reference's non-finite elements, by its shape key
        # Training cells with a train_result logged so far.
        self.train_results: set[str] = set()
        self.train_steps: dict[str, set[int]] = {}  # each training cell's steps logged so far
        self.generated: set[str] = set()  # generation cells with a generation event so far
        # A cache check's compile event that counts graphs built (graphs, line), by case.
        self.repeat_graphs: dict[str, tuple[int, int]] = {}
        # Each case's first result (status, line), and its first localization's line.
        self.statuses: dict[str, tuple[str, int]] = {}
        self.localized: dict[str, int] = {}
        # By (batch, length, layout): the first result's input names and shapes, its case and line.
        self.shape_inputs: dict[tuple[Any, ...], tuple[tuple[Any, ...], str, int]] = {}
        # Each case's first result's inputs_fed (the tensors at the checked call) and its line.
        self.checked_fed: dict[str, tuple[Any, int]] = {}
        # A timed call's inputs_fed logged before its cell's result (a cold call in a fresh
        # process comes first): (call, tensors, line), checked when the result comes.
        self.pending_fed: dict[str, tuple[str, Any, int]] = {}
        # From the environment line (its number, 0 before it): the installed torch's versions as
        # its metadata gives them; and a workload_reads line's torch (line, version) read before it.
        self.environment_line = 0
        self.torch_installed: list[str] = []
        self.pending_packages: tuple[int, str] | None = None
        # Where a rule's warning goes (the reader sets it): (line, message).
        self.warn: Callable[[int, str], None] = lambda line, message: None
        self.rules = {kind: getattr(self, f"_{kind}") for kind in FIGURE_KINDS}

    def _tolerance(self, case: str) -> Any:
        """The plan's tolerance for the case's dtype (None when the plan or dtype has none)."""
        cell = self._cell(case)
        return self.plan.tolerances.get(cell.dtype) if cell is not None else None

    def _task(self, case: str) -> tuple[Any, ...] | None:
        """The plan's task criterion for the case's dtype as (metric, op, threshold), or None."""
        task: Any = getattr(self._tolerance(case), "task", None)
        return None if absent(task) else (task.metric, task.op, task.threshold)

    def _cell(self, case: str) -> Any:
        """The planned cell of this case, or None for a case the plan lacks (or no plan)."""
        if self._cells is None:
            self._cells = {cell.case: cell for cell in self.plan.matrix} if self.plan is not None else {}
        return self._cells.get(case)

    def check(self, kind: str, data: Any, line: int = 0) -> str | None:
        """The contradiction in one line (number ``line``), in words, or None."""
        self.line = line
        if kind == "plan":
            self.plan, self._cells, self._atols = data, None, {}
            self._generating = not absent(getattr(data, "generation", None))
            self._training = not absent(getattr(data, "training", None))
            misnamed = misnamed_cells(data.matrix)
            if misnamed is not None:
                return misnamed
            target = getattr(data, "target", None)
            if self.start_target is not None and isinstance(target, str) and target != self.start_target[0]:
                return (
                    f"target is {target[:40]!r}, but run_start (line {self.start_target[1]}) names "
                    f"{self.start_target[0][:40]!r}: the collector writes the target it ran on in both"
                )
            if self.weights is None:
                return None
            # A weights artifact written before the plan (the collector writes it after) is
            # held to the plan's hashes all the same.
            earlier, artifact = self.weights
            why = _weights_against_plan(data, artifact)
            return None if why is None else f"{why} (the weights artifact is on line {earlier}, before the plan)"
        rule = self.rules.get(kind)
        return rule(data) if rule is not None else None

    def _run_start(self, data: Any) -> str | None:
        """The collector names itself twice, "collector <version>" and the provenance's
        collector_version (collector/run/setup.py, one constant): two versions leave the code
        that wrote the log unknown, and a diff of two runs would report a version that never
        ran. A name in any other form (another collector's) is not judged. The run's target is
        the one the collector resolved (target_choice.resolved, where recorded; the plan event
        repeats it): every page, index and export groups runs by it."""
        self.start_target = (data.target, self.line)
        self.measured = data.origin == "measured"
        choice = getattr(data, "target_choice", None)
        if not absent(choice) and choice is not None and choice.resolved != data.target:
            return (
                f"target is {data.target[:40]!r}, but target_choice.resolved is {choice.resolved[:40]!r}: "
                "the collector writes the target it resolved"
            )
        provenance = data.provenance
        if absent(provenance):
            return None
        named = _COLLECTOR_NAME.fullmatch(data.collector)
        if named is None or named[1] == provenance.collector_version:
            return None
        return (
            f"collector is {data.collector[:80]!r}, but provenance.collector_version is "
            f"{provenance.collector_version[:40]!r}: the log names two versions of the code that wrote it"
        )

    def _environment(self, data: Any) -> str | None:
        """Notes the device type the cells ran on, where it says where every input was fed, and
        torch's version as the install's metadata gives it (its artifact), which the workload's
        packages repeat (see _workload_reads)."""
        device_type = data.device_type
        # The targets whose descriptors say their adapters feed every input on the torch device
        # of their own name (inputs_on_device): environment.device_type names that device.
        own = descriptors().get(device_type)
        self.device_type = device_type if own is not None and own.inputs_on_device else None
        self._device_index = f"{device_type}:"
        self.environment_line = self.line
        installed = [a.version for a in data.get("artifacts", ()) if a.name == "torch"]
        self.torch_installed = installed
        told = _fact_value(data.versions.get("torch"))
        # torch.__version__ is read from the module, the artifact from the install's metadata
        # (collector/environment.py): they agree but for a wheel's local label (2.11.0+cu130
        # against 2.11.0), except in a build from source whose version file was made again
        # without installing it again. So another release there is said, not refused.
        release = _release(told)
        if (
            told is not None
            and release is not None
            and installed
            and all(_release(v) not in (None, release) for v in installed)
        ):
            self.warn(
                self.line,
                f"environment: versions.torch is {told[:40]!r}, but the installed torch's metadata says"
                f" {installed[0][:40]!r}: reports and comparisons name versions.torch (a build from source"
                " whose version changed since it was installed, or an edited log)",
            )
        if self.pending_packages is not None:  # a workload_reads line came first
            line, listed = self.pending_packages
            self.pending_packages = None
            self._packages_torch(line, listed)
        return None

    def _workload_reads(self, data: Any) -> None:
        """The packages the workload ran on are read from installed metadata, as the environment's
        torch artifact is (collector/workload_reads.py, importlib.metadata), but later, after the
        workload loaded: one that put another torch's metadata on sys.path (a vendored folder)
        makes the two differ in an honest log. So it is said, not refused."""
        listed = data.packages.get("torch")
        if listed is None:
            return None
        if not self.environment_line:
            self.pending_packages = (self.line, listed)
            return None
        self._packages_torch(self.line, listed)
        return None

    def _packages_torch(self, line: int, listed: str) -> None:
        installed = self.torch_installed
        if installed and listed not in installed:
            self.warn(
                line,
                f"workload_reads: packages names torch {listed[:40]!r}, but the environment (line"
                f" {self.environment_line}) lists the installed torch as {installed[0][:40]!r}: another torch's"
                " metadata on sys.path after the workload loaded (a vendored folder), or an edited log",
            )

    def _run_end(self, data: Any) -> str | None:
        """The collector counts the plan's cells and the cells it recorded (collector/runner.py,
        finish): cells_planned is the plan's matrix, whatever the status; a cell is counted once
        its result line is written, so a complete run counts every case_result and an aborted one
        at most as many (an interrupt may land between the line and the count). finished_at is
        not judged against started_at: both are read from the host's clock, which may be set back
        while a run goes on. The results are not counted in a log with an error before run_end:
        a line the reader refused may have been one."""
        if self.plan is not None and data.cells_planned != len(self.plan.matrix):
            return f"cells_planned is {data.cells_planned}, but the plan's matrix lists {len(self.plan.matrix)} cell(s)"
        recorded, results = data.cells_recorded, self.results
        if self.erred:
            return None
        if data.status == "complete" and self.measured and self.plan is not None and self.weights is None:
            if _from_1_2(data):
                return (
                    "status is complete, but the log holds no weights artifact: from schema 1.2 the collector "
                    "writes one right after the plan in every run (collector/run/setup.py), also when the "
                    "weights' content could not be hashed, so a measured run without one leaves its weights unknown"
                )
        if recorded > results or (recorded != results and data.status == "complete"):
            return (
                f"cells_recorded is {recorded}, but the log holds {results} case_result line(s): the collector "
                "counts a cell once its result is written"
            )
        return None

    def _artifact(self, data: Any) -> str | None:
        """A run has one weights artifact (collector/run/setup.py writes it beside the plan), and
        the plan and it each give the weights' hashes (the collector writes one digest into
        both): a second artifact, or two different answers, leave the weights unknown, and a
        reader that preferred either one could call different weights the same."""
        if data.role != "weights":
            return None
        if self.weights is not None:
            return (
                f"a second weights artifact (the first is on line {self.weights[0]}): a run has one, "
                "and a reader taking either could call different weights the same"
            )
        self.weights = (self.line, data)
        return None if self.plan is None else _weights_against_plan(self.plan, data)

    def _request(self, data: Any) -> str | None:
        """The collector routes each request once, before its cells run, and names the cells it
        serves (collector/run/generation_cells.py): a cell's generation event must then say the
        bucket and truncation its request says."""
        for case in data.cases or ():  # a mirror's UNSET when left out
            served = self.requests.setdefault(case, (self.line, data))
            if served[0] != self.line:
                return f"cases names {case[:80]!r}, which the request on line {served[0]} serves already: a cell is served by one request"
        return _routed_reason(data)

    def _reference(self, data: Any) -> str | None:
        """Elements the reference's two runs differ by beyond a tolerance are a 1.5 figure, and
        need a tolerance the plan gives for that dtype and a difference between the runs larger
        than its atol (every element is allowed at least that), on a reference not called
        deterministic."""
        if not absent(data.nonfinite):
            self.ref_nonfinite.setdefault(data.shape, data.nonfinite)
        beyond = data.noise_beyond_tolerance
        if absent(beyond):
            return None
        if schema_tuple(data.schema_version) < (1, 5):
            return f"noise_beyond_tolerance is a figure of schema 1.5, on a {data.schema_version} line"
        planned = self.plan.tolerances if self.plan is not None else {}
        for dtype, count in sorted((beyond or {}).items()):
            if dtype not in planned:
                return f"noise_beyond_tolerance names {dtype!r}, a dtype the plan gives no tolerance for"
            if not count:
                continue
            if data.deterministic is True:
                return f"noise_beyond_tolerance counts {count} element(s) beyond the {dtype} tolerance of a reference called deterministic"
            noise, atol = data.noise_max_abs, planned[dtype].atol
            if noise is not None and noise <= atol:
                return f"noise_beyond_tolerance counts {count} element(s) beyond the {dtype} tolerance, but the runs differ by at most {noise:g}, within its atol {atol:g}"
        return None

    def _localization(self, data: Any) -> str | None:
        """The collector localises a cell with the plan's tolerance for its dtype, and every page
        says the modules were judged with the cell's tolerance: a localisation that names another
        judged its modules beyond or within a criterion the cell never had. Each module's figures
        are one comparison's (collector/compare.py, as a cell's error_stats), held to the same
        rules: a module counted as matching whose worst element is beyond its allowance would
        send the reader to another module as the error's source."""
        if (why := self._localized_cell(data)) is not None:
            return why
        tol = self._tolerance(data.case)
        if tol is not None and (data.atol, data.rtol) != (tol.atol, tol.rtol):
            return f"localization judged with atol {data.atol:g}, rtol {data.rtol:g}, but the plan's tolerance for this cell's dtype is atol {tol.atol:g}, rtol {tol.rtol:g}"
        if (why := _localized_modules(data)) is not None:
            return why
        for module in data.modules or ():  # a mirror's UNSET when left out
            for view in ("accumulated", "local"):
                stats = getattr(module, view)
                if absent(stats):
                    continue
                name = f"module {module.name[:80]!r} {view}"
                if (why := _error_stats(stats, data.schema_version, name)) is not None:
                    return why
                if stats.allowed_at_worst is None:
                    # collector/localize.py writes no figure where the reference module's worst
                    # element has no finite allowance (it says why in the module's note).
                    return f"{name} has no allowance at its worst element: the collector gives a module no figure where the reference is not finite there"
        return None

    def _localized_cell(self, data: Any) -> str | None:
        """The collector localises a cell of an inference plan once, in the cell's own mode,
        after the cell's group has its results (collector/run/cells.py, run_group; a fresh
        process sends its localisations after its cells' results): for the reason its status
        gives, and never a cell in error or skipped, nor a training or generation cell
        (collector/localize.py, ``wanted`` and ``localize``)."""
        if self._generating or self._training:
            which = "generation" if self._generating else "training"
            return f"a cell of a {which} plan localised: the collector localises the cells of an inference plan only"
        first = self.localized.setdefault(data.case, self.line)
        if first != self.line:
            return f"a second localization of this cell (the first is on line {first}): the collector localises a cell once"
        cell = self._cell(data.case)
        if cell is not None and data.mode != cell.mode:
            return f"mode is {data.mode}, but the plan's cell is {cell.mode}: the collector localises a cell in its own mode"
        result = self.statuses.get(data.case)
        if result is None:
            # A line the reader refused may have been the result.
            return (
                None
                if self.erred
                else "no case_result of this cell comes before it: the collector localises a cell after its result"
            )
        status, line = result
        if _LOCALIZED_FOR.get(status) != data.reason:
            return (
                f"reason {data.reason}, but the case_result on line {line} says status {status}: the collector localises "
                "a cell that mismatched or went non-finite for its status, one that passed for the plan, and no other"
            )
        return None

    def _case_result(self, data: Any) -> str | None:
        self.results += 1
        self.statuses.setdefault(data.case, (data.status, self.line))
        if data.status != "pass" and (warm := self.warm_lines.get(data.case)) is not None:
            self.warn(self.line, _unpassed_warm("case_result", data.case, data.status, warm))
        return self._result(data) or self._allowance(data)

    def _result(self, data: Any) -> str | None:
        """A result's status against the figures beside it and the lines before it."""
        metric = data.task_metric
        if metric and metric.criterion:  # UNSET and None are false
            # The cell is judged by the plan's criterion for its dtype, or the log contradicts
            # itself: a looser one written beside one result would turn a failure into a pass.
            planned = self._task(data.case)
            own = (metric.criterion.metric, metric.criterion.op, metric.criterion.threshold)
            if planned is not None and own != planned:
                return (
                    f"task_metric.criterion {' '.join(map(str, own))} is not the plan's task criterion "
                    f"for this cell's dtype, {' '.join(map(str, planned))}"
                )
        if metric and metric.passed is True and metric.criterion:
            if metric.value is None:
                return f"task_metric.passed is true with no value against its criterion {metric.criterion.op} {metric.criterion.threshold}"
            if not _meets(metric.value, metric.criterion):
                return f"task_metric.passed is true, but its value {metric.value} does not meet its criterion {metric.criterion.op} {metric.criterion.threshold}"
        if metric and metric.passed is False and metric.criterion and metric.value is not None:
            if _meets(metric.value, metric.criterion):
                return f"task_metric.passed is false, but its value {metric.value} meets its criterion {metric.criterion.op} {metric.criterion.threshold}"
        stats = data.error_stats
        if stats and (why := _error_stats(stats, data.schema_version)) is not None:
            return why
        if self._generating and metric:
            self.task_results.setdefault(data.case, (metric.value, metric.passed, self.line))
        if self._generating and data.status != "pass":
            if (timed := self.timed.get(data.case)) is not None:
                return f"status {data.status}, but the generation event on line {timed} carries timings, which the collector measures for a passing cell only"
            self.unpassed.setdefault(data.case, (data.status, self.line))
        if (why := self._cell_facts(data, stats, metric)) is not None:
            return why
        if data.status == "mismatch" and not self._generating and not self._training:
            # A plain cell's mismatch is its elements or its task metric (collector/run/cells.py);
            # a generation cell's may be its top-k overlap and a training cell's its steps, in
            # lines of their own.
            if not (stats and stats.mismatched) and not (metric and metric.passed is False):
                return "status mismatch, but no figure beside it fails: error_stats counts no element outside the tolerance and no task metric failed"
        if data.status != "pass":
            return None
        if stats and stats.mismatched > 0:
            return f"status pass, but error_stats counts {stats.mismatched} of {stats.total} judged elements outside the tolerance"
        if metric and metric.passed is False:
            return "status pass, but task_metric.passed is false"
        if (failed := self.failed_training.get(data.case)) is not None:
            return f"status pass, but {failed}"
        if (why := self._nonfinite(data)) is not None:
            return why
        if self._generating:
            self.passed.add(data.case)
        return None

    def _allowance(self, data: Any) -> str | None:
        """A comparison's figures against the atol that judged them (collector/compare.py): each
        element of a floating output is allowed atol + rtol * |ref|, never less than the atol,
        and an integer or boolean output's element 0 (it is compared exactly), so the worst
        element's allowance is 0 or at least the atol (null where the reference is not finite);
        an element outside its allowance differs by more than the atol, or by 1 or more where
        compared exactly, so a count of such elements comes with a max_abs beyond the atol or of
        1 or more (null where a difference is not finite), in all and output by output. The atol
        is the plan's for the cell's dtype (collector/run/cells.py and generation_cells.py; judged
        regions narrow which elements are judged, not their allowance), and its loss tolerance's
        for a training cell, whose error_stats compare the steps' losses (training_cells.py)."""
        stats = data.error_stats
        if not stats:
            return None
        atol = self._judging_atol(data.case)
        if atol is None:
            return None
        allowed = stats.allowed_at_worst
        if allowed is not None and 0 < allowed < atol:
            return (
                f"error_stats.allowed_at_worst {allowed:g} is less than the atol {atol:g} that judged this cell: "
                "every element is allowed at least the atol (0 where compared exactly)"
            )
        # Nearly every line: no element outside, and nothing more to look at.
        if stats.mismatched and _within_atol(stats, atol):
            return _within_words("error_stats", stats, atol)
        for output in stats.per_output or ():
            if output.mismatched and _within_atol(output, atol):
                return _within_words(f"per_output {output.name[:80]!r}", output, atol)
        return None

    def _judging_atol(self, case: str) -> Any:
        """The atol a case's error_stats were judged with (see _allowance), or None; worked out
        once per dtype (a long log's many cells share a few dtypes' tolerances)."""
        cell = self._cell(case)
        if cell is None:
            return None
        dtype, atols = cell.dtype, self._atols
        if dtype in atols:
            return atols[dtype]
        tol: Any = self.plan.tolerances.get(dtype)
        if tol is not None and self._training:
            tol = getattr(tol, "loss", None)
        atols[dtype] = found = None if absent(tol) else tol.atol
        return found

    def _cell_facts(self, data: Any, stats: Any, metric: Any) -> str | None:
        """What a result says against the facts the collector records with it or before it."""
        judged = data.status in ("pass", "mismatch")
        why = (
            (judged and (self._judged_on(data, stats, metric) or self._trained(data)))
            or self._layout(data)
            or (judged and self._device(data))
            or self._same_inputs(data)
        )
        if why:
            return why
        if not absent(fed := data.inputs_fed) and fed:
            self.checked_fed.setdefault(data.case, (fed, self.line))
            if (why := self._fed_before(data, fed)) is not None:
                return why
        if data.recompiled is False and (built := self.repeat_graphs.get(data.case)) is not None:
            # collector/run/cells.py: recompiled is whether the cache check's first call built a
            # graph or compiled a frame, the graphs its compile event counts.
            return f"recompiled is false, but the compile event of this cache check on line {built[1]} counts {built[0]} graph(s) built"
        return None

    def _same_inputs(self, data: Any) -> str | None:
        """The collector makes a shape's inputs once (collector/run/cells.py: run.inputs by batch,
        length and layout) and casts a copy to each cell's dtype: every cell of one shape, eager
        or compiled, any dtype, records inputs of the same names and shapes. A cell fed others
        did not run at the shape its case names, and a comparison of its modes would compare
        two workloads."""
        inputs = data.inputs
        if absent(inputs) or not inputs or (cell := self._cell(data.case)) is None:
            return None
        shapes = tuple((item.name, tuple(item.shape)) for item in inputs)
        first = self.shape_inputs.setdefault((cell.batch, cell.length, cell.layout), (shapes, data.case, self.line))
        if first[0] == shapes:
            return None
        ours, theirs = dict(shapes), dict(first[0])
        name = next((n for n in (*ours, *theirs) if ours.get(n) != theirs.get(n)), None)
        if name is None:  # the same names and shapes, in another order or number
            listed = ", ".join(repr(n[:40]) for n, _ in shapes[:8])
            named = ", ".join(repr(n[:40]) for n, _ in first[0][:8])
            return (
                f"inputs are {listed}, but {first[1]!r} (line {first[2]}), a cell of the same batch, length and"
                f" layout, records {named}: the collector makes a shape's inputs once"
            )
        mine, other = ours.get(name), theirs.get(name)
        here = "is not among its inputs" if mine is None else f"has shape {_dims(mine)}"
        there = (
            "has no such input" if other is None else f"has {'it with ' if mine is None else ''}shape {_dims(other)}"
        )
        return (
            f"input {name[:60]!r} {here}, but {first[1]!r} (line {first[2]}), a cell of the same batch, length and"
            f" layout, {there}: the collector makes a shape's inputs once"
        )

    def _judged_on(self, data: Any, stats: Any, metric: Any) -> str | None:
        """The collector writes the figures a pass or mismatch is decided from beside it, in every
        schema version (collector/run/cells.py ``_judge``, and the training and generation cells):
        the comparison's error_stats, and the task_metric (a plan's task criterion judges it)."""
        if not stats:
            return f"status {data.status}, but no error_stats: the comparison its status rests on is not recorded"
        if not metric and self._task(data.case) is not None:
            return f"status {data.status}, but no task_metric, though the plan gives a task criterion for this cell's dtype"
        return None

    def _trained(self, data: Any) -> str | None:
        """A training cell's steps and train_result are written before its result
        (collector/run/training_cells.py): a plan makes at least one step."""
        if not self._training:
            return None
        missing = (
            "train_step"
            if data.case not in self.train_steps
            else "train_result"
            if data.case not in self.train_results
            else None
        )
        if missing is not None:
            return f"status {data.status}, but no {missing} of this training cell is logged before it: the collector writes them before the result"
        planned = self._planned_steps()
        logged = self.train_steps[data.case]
        if isinstance(planned, int) and len(logged) != planned:
            lacking = sorted(set(range(planned)) - logged)
            return (
                f"status {data.status}, but {len(logged)} of the plan's {planned} train_step(s) are logged before it"
                f" (missing: {', '.join(map(str, lacking[:10]))}{' ...' if len(lacking) > 10 else ''}): "
                "the collector writes every step before the result"
            )
        return None

    def _layout(self, data: Any) -> str | None:
        """inputs_fed are the tensors of the first call the collector watched, layout_fed that
        call's layout (non-contiguous when any tensor was), and layout_achieved whether every
        watched call had the planned layout (collector/run/capture.py, fed_facts)."""
        fed = data.inputs_fed
        if absent(fed):
            return None
        first = "contiguous"
        for tensor in fed:
            if not tensor.contiguous:
                first = "noncontiguous"
                break
        said = getattr(data, "layout_fed", None)  # a timing event records none
        if not absent(said) and said != first:
            return f"layout_fed is {said}, but the tensors inputs_fed records for that call are {first}"
        cell = self._cell(data.case) if data.layout_achieved is True else None
        if cell is not None and first != cell.layout:
            return f"layout_achieved is true, but the tensors inputs_fed records are {first}, not the planned {cell.layout} layout"
        return None

    def _device(self, data: Any) -> str | None:
        """The collector moves every input to the target's device before the model is called, and
        the model it judges is on that device: a judged cell none of whose tensors reached it ran
        elsewhere than environment.device_type says. (One input moved back by the workload, such
        as lengths kept on the CPU, is not judged.)"""
        device_type, fed = self.device_type, data.inputs_fed
        if device_type is None or absent(fed):
            return None
        other = None
        for tensor in fed:
            device = tensor.device
            if absent(device):
                continue
            if device == device_type or device.startswith(self._device_index):
                return None
            other = device
        if other is None:
            return None
        return f"none of the tensors inputs_fed records is on a {device_type} device ({other[:40]!r}), but environment.device_type is {device_type!r}"

    def _nonfinite(self, data: Any) -> str | None:
        """A pass whose outputs hold more non-finite elements than the collector lets pass: a
        training cell with a non-finite loss is nonfinite (collector/run/training_cells.py), and
        a plain cell whose outputs hold more than its shape's reference, where the plan declares
        no judged regions (collector/run/cells.py, ``_judge``; the regions leave some out)."""
        count = 0
        for output in data.outputs or ():  # a mirror's UNSET when left out
            count += output.nonfinite
        if not count:
            return None
        if self._training:
            return f"status pass, but outputs count {count} non-finite loss value(s): the collector calls such a training cell nonfinite"
        compare: Any = getattr(self.plan, "compare", None)
        if self._generating or self.plan is None or (not absent(compare) and compare.outputs):
            return None
        cell = self._cell(data.case)
        reference = None if cell is None else self.ref_nonfinite.get(f"b{cell.batch}-l{cell.length}-{cell.layout}")
        if reference is None or count <= reference:
            return None
        return f"status pass, but outputs count {count} non-finite element(s), more than the {reference} of this shape's reference: the collector calls such a cell nonfinite"

    def _compile(self, data: Any) -> str | None:
        """The collector compiles every cell with the plan's [compile] options and records in
        each compile event what the call was given: other options there mean the cell was
        compiled under a configuration the criteria do not declare."""
        # A generation cell's first compile event (its prefill's): whether it built a graph from
        # nothing (a graph and a cache miss), and its line (see _cold_first_token).
        if self._generating:
            self.first_compile.setdefault(data.case, (bool(data.graphs and data.cache_misses), self.line))
        if data.graphs and (cell := self._cell(data.case)) is not None and not absent(cell.repeat_of):
            self.repeat_graphs.setdefault(data.case, (data.graphs, self.line))
        if (why := _cache_label("cache_condition", data)) is not None:
            return why
        if data.cache_condition == "fresh_process_empty_cache" and (why := _listed("cache_condition", data, data)):
            return why
        used = data.compile_options
        if absent(used) or self.plan is None:
            return None
        planned = self.plan.compile_options
        given, declared = _options(used), _options(None if absent(planned) else planned)
        if given == declared:
            return None
        names = ("dynamic", "mode", "fullgraph", "backend_options")
        differ = "; ".join(f"{n} {g} against {d}" for n, g, d in zip(names, given, declared) if g != d)
        return f"compile_options are not the plan's compile options ({differ}): the cell was compiled as its criteria do not declare"

    def _timing(self, data: Any) -> str | None:
        cold, warm, case = data.cold, data.warm, data.case
        if cold:  # UNSET and None are false
            if (why := _cache_label("cold.cache_condition", cold)) is not None:
                return why
            if cold.cache_condition == "fresh_process_empty_cache" and (why := _fresh_and_listed(cold, data)):
                return why
            if cold.cache_condition == "fresh_process_empty_cache":
                self.empty_cold.setdefault(case, (cold.seconds, self.line))
                if not warm:  # a 1.0 log times both in one event
                    return self._cold_against_warm(case) or self._scope(data) or self._timed_inputs(data)
        if not warm:
            return self._scope(data) or self._timed_inputs(data)
        self.warm_lines.setdefault(case, self.line)
        if (result := self.statuses.get(case)) is not None and result[0] != "pass":
            # A cold call may come before a failing result (a fresh process times it first); a
            # warm series follows a pass only (collector/run/cells.py, time_warm_cell).
            self.warn(self.line, _unpassed_warm("timing", data.case, result[0], result[1]))
        attempt = self._attempt(data)  # first: it records the series whatever else is wrong
        return (
            self._planned_repetitions("warm holds", len(data.warm.samples_s))
            or warm_figures("warm", data.warm)
            or _cpu_time("host", data.host, data.schema_version, (data.warm.samples_s,))
            or attempt
            or self._fastest(data.case, data.warm.min_s)
            or self._scope(data, warm=True)
            or self._timed_inputs(data)
            # What the warm calls were fed says what layout_achieved and the device say of them,
            # as a result's does (a warm loop is timed after a pass only).
            or self._layout(data)
            or self._device(data)
        )

    def _cold_first_token(self, case: str, timing: Any) -> str | None:
        """A compiled generation cell's cold first token is its first prefill call, the one its
        first compile event counts (collector/run/generation_cells.py): where that compile built a
        graph from nothing, the call did the work of a warm prefill and a compile besides, so it
        cannot have taken less time than the fastest warm first token."""
        built = self.first_compile.get(case)
        cold, fastest = timing.ttft_cold_s, timing.ttft_warm.min_s
        if built is None or not built[0] or absent(cold) or cold is None or cold >= fastest:
            return None
        return (
            f"timing.ttft_cold_s {cold:.6g} is less than the fastest warm first token {fastest:.6g}, but the cell's "
            f"first compile event (line {built[1]}) built a graph from nothing: the first call compiled as well"
        )

    def _timed_inputs(self, data: Any) -> str | None:
        """A timed call was fed the tensors the cell was checked with: the same names, shapes and
        dtypes as its result's inputs_fed (the collector times the very tensors it checked, cast
        once to the cell's dtype). With preprocessing inside the clock the timed calls make their
        inputs again (collector/run/timings.py); a workload whose make_inputs gives other shapes
        each call was then timed on inputs it was never checked on, and a warm figure of it is not
        the cell's. Collectors from 0.16.0 refuse to time such a workload (no timing event)."""
        checked = self.checked_fed.get(data.case)
        cold = data.cold
        for call, fed in (("warm", data.inputs_fed), ("cold", None if absent(cold) else cold.inputs_fed)):
            if absent(fed) or not fed:
                continue
            if checked is None:  # a cold call taken before its cell's check: judged at the check
                self.pending_fed.setdefault(data.case, (call, fed, self.line))
                continue
            if (differs := _fed_differs(fed, checked[0])) is not None:
                fed_text, there = differs
                return (
                    f"{'cold.' if call == 'cold' else ''}inputs_fed: the {call} timed call was fed {fed_text}, "
                    f"but the cell's case_result (line {checked[1]}) {there} at the checked call: the timing is not of the inputs the cell was checked with"
                )
        return None

    def _fed_before(self, data: Any, fed: Any) -> str | None:
        """A cold call the collector took in a fresh process before the cell's check (its timing
        event comes first) was fed the tensors the check records, as any timed call is."""
        pending = self.pending_fed.pop(data.case, None)
        if pending is None or (differs := _fed_differs(pending[1], fed)) is None:
            return None
        call, _, line = pending
        fed_text, there = differs
        return (
            f"the {call} timed call of line {line} was fed {fed_text}, but this result {there} at the checked call: "
            "that timing is not of the inputs the cell was checked with"
        )

    def _scope(self, data: Any, warm: bool = False) -> str | None:
        """A timing event's scope says what its clock covered: the stages its timed_region holds,
        the two made from one list (collector/run/timings.py, scope_done and its callers). Without
        a timed_region (a log before it, or a cold call that was not measured) the scope is not
        judged. And the collector times every warm series over the stages the plan's timing_scope
        names (collector/timing.py, timed_sample; a training plan may name none): a warm region of
        other stages would put a figure of another scope beside the others in one column. (A cold
        call in the collector's own process times the model call alone, whatever the scope.)"""
        region = data.timed_region
        if absent(region):
            return None
        planned = getattr(self.plan, "timing_scope", None) if warm else None
        for stage in _SCOPE_STAGES:
            timed = stage in region
            if getattr(data.scope, stage) != timed:
                held = "holds" if timed else "does not hold"
                return f"scope.{stage} is {str(not timed).lower()}, but timed_region {held} {stage}: the scope is what the clock covered"
            asked = None if planned is None or absent(planned) else getattr(planned, stage, None)
            if isinstance(asked, bool) and asked != timed:
                held = "holds" if timed else "does not hold"
                return f"timed_region {held} {stage}, but the plan's timing_scope.{stage} is {str(asked).lower()}: the collector times the stages the plan's scope names"
        return None

    def _attempt(self, data: Any) -> str | None:
        """A cell's warm series are numbered 1, 2, ... in the order logged (collector/run/timings.py):
        the first, then one re-measurement a round while the last was unstable, up to 1 + the
        plan's remeasure_rounds series. An attempt past that bound, a number left out or repeated,
        or a series measured again after one the log itself classified stable (or could not
        classify: such a series is final) was not taken as the log says. A series numbered 1 (or,
        before 1.2, not numbered) starts the count again: the collector measures a cell from the
        start when its fresh process ended before the cell's result reached it."""
        top, stability = data.attempt, data.stability
        given = None if absent(stability) else stability.attempt
        attempt = given if absent(top) else top
        previous = self.last_series.get(data.case)
        self.last_series[data.case] = (attempt or 1, None if absent(stability) else stability.verdict, self.line)
        if not absent(top) and given is not None and top != given:
            return f"attempt is {top}, but stability.attempt is {given}"
        rounds: Any = getattr(self.plan, "remeasure_rounds", None)  # UNSET or None: not recorded
        allowed = None if absent(stability) else stability.attempts_allowed
        if not absent(rounds) and allowed is not None and allowed != 1 + rounds:
            return f"stability.attempts_allowed is {allowed}, but the plan's remeasure_rounds {rounds} allows {1 + rounds} warm series"
        bound = allowed if absent(rounds) else 1 + rounds
        if attempt is not None and bound is not None and attempt > bound:
            by = (
                f"stability.attempts_allowed is {bound}"
                if absent(rounds)
                else f"the plan's remeasure_rounds {rounds} allows {bound} warm series"
            )
            return f"attempt is {attempt}, but {by}"
        if previous is None and attempt not in (None, 1):
            return f"attempt is {attempt}, but no earlier warm series of this cell is logged"
        if previous is None or attempt in (None, 1):
            # A first series again: the cell measured from the start, as the collector does when a
            # fresh process ended before the cell's result reached it (it checks the cell itself).
            return None
        last, verdict, line = previous
        if attempt != last + 1:
            return f"attempt {attempt} follows attempt {last} (line {line}): a cell's warm series are numbered 1, 2, ... with none left out"
        if verdict is not None and verdict != "unstable":
            said = "classifies stable" if verdict == "stable" else "could not classify"
            return f"attempt {attempt} follows attempt {last} (line {line}), which the log {said}: the collector measures again only an unstable series"
        return None

    def _fastest(self, case: str, fastest: float) -> str | None:
        if fastest < self.fastest_warm.get(case, (math.inf, 0))[0]:
            self.fastest_warm[case] = (fastest, self.line)
        return self._cold_against_warm(case) if case in self.empty_cold else None

    def _cold_against_warm(self, case: str) -> str | None:
        """A first call that compiled the cell from an empty cache (in a fresh process) does the
        work of a warm call and a compile besides: one that took less time than the fastest warm
        call was not measured as the log says. (An eager first call may, and on a contended host
        did: eager cells and calls from a populated cache are not held to this.)"""
        cold, warm = self.empty_cold.get(case), self.fastest_warm.get(case)
        if cold is None or warm is None or cold[0] >= warm[0]:
            return None
        return (
            f"cold.seconds {cold[0]:.6g} (line {cold[1]}), a first call that compiled from an empty cache in a fresh"
            f" process, is less than the fastest warm call of the same cell, {warm[0]:.6g} s (line {warm[1]})"
        )

    def _planned_repetitions(self, what: str, count: int) -> str | None:
        """The collector times every warm loop with the plan's warm_repetitions (the plan event
        logs the count a --warm override set): another count is not what the criteria say."""
        planned = getattr(self.plan, "warm_repetitions", None)
        if planned is None or count == planned:
            return None
        return f"{what} {count} warm repetition(s), but the plan declares warm_repetitions {planned}"

    def _generation(self, data: Any) -> str | None:
        # One generation event a cell: a series measured again is kept under its ``earlier``, and
        # a reader taking either of two would judge and time the cell by the one it took.
        if data.case in self.generated:
            return "a second generation event of this cell: the collector writes one (series taken again under earlier)"
        self.generated.add(data.case)
        # tokens hold the prefill's token and one for each decode call (collector/generation.py),
        # and a cell makes the plan's decode calls: the agreeing steps and tokens/s count them.
        rows = data.tokens
        if (row := next((r for r in rows if len(r) != data.decode_steps + 1), None)) is not None:
            at = rows.index(row)
            return f"tokens hold {len(row)} step(s) {f'in row {at}' if at else 'a request'}, but decode_steps {data.decode_steps} gives {data.decode_steps + 1} (the prefill's token and one a decode call)"
        batch, length = self._shape(data.case)
        if batch is not None and len(rows) != batch:
            # A row a sequence: tokens/s of the batch and every figure per sequence count them.
            return f"tokens hold {len(rows)} row(s), but the plan's cell is a batch of {batch} sequence(s)"
        plan_gen_steps = getattr(getattr(self.plan, "generation", None), "decode_steps", None)
        if isinstance(plan_gen_steps, int) and data.decode_steps != plan_gen_steps:
            return f"decode_steps is {data.decode_steps}, but the plan declares {plan_gen_steps}"
        if (why := self._generated_as_planned(data)) is not None:
            return why
        if (why := self._served(data)) is not None:
            return why
        timing = data.timing
        if not absent(timing):
            if (result := self.unpassed.get(data.case)) is not None:
                status, line = result
                return f"timing is recorded, but its case_result on line {line} says status {status}: the collector times a passing cell only"
            if self._generating:
                self.timed.setdefault(data.case, self.line)
            if (why := self._planned_repetitions("timing.repetitions is", timing.repetitions)) is not None:
                return why
            if (why := warm_figures("timing.ttft_warm", timing.ttft_warm)) is not None:
                return why
            if (why := warm_figures("timing.decode_token", timing.decode_token)) is not None:
                return why
            if (why := _repetitions(timing)) is not None:
                return why
            timed = (timing.ttft_warm.samples_s, timing.decode_token.samples_s)
            if (why := _cpu_time("timing.host", timing.host, data.schema_version, timed)) is not None:
                return why
            each = len(timing.decode_token.samples_s) // timing.repetitions
            if each != data.decode_steps:
                return f"timing.decode_token holds {each} step(s) a repetition, but decode_steps is {data.decode_steps}"
            if (why := self._cold_first_token(data.case, timing)) is not None:
                return why
            if (why := self._generation_attempts(data, timing)) is not None:
                return why
        rows, ref = data.tokens, data.reference_tokens
        if len(rows) != len(ref) or any(len(a) != len(b) for a, b in zip(rows, ref)):
            return "tokens and reference_tokens differ in shape, so steps_agreeing cannot be read from them"
        steps = len(rows[0]) if rows else 0
        agree = next((i for i in range(steps) if any(a[i] != b[i] for a, b in zip(rows, ref))), steps)
        if data.steps_agreeing != agree:
            return f"steps_agreeing is {data.steps_agreeing}, but tokens agree with reference_tokens for {agree} leading step(s) of {steps}"
        divergent = agree if agree < steps else None
        if data.first_divergent_step is not UNSET and data.first_divergent_step != divergent:
            return f"first_divergent_step is {data.first_divergent_step}, but tokens first differ from reference_tokens at {divergent}"
        plan_gen: Any = getattr(self.plan, "generation", None)
        if not absent(plan_gen):
            judged = [o for o in data.top_k_overlap if o is not None]
            expected = min(judged) >= plan_gen.min_top_k_overlap if judged else False
            if data.top_k_passed != expected:
                least = f"least overlap {min(judged)}" if judged else "no top-k overlap measured"
                return f"top_k_passed is {str(data.top_k_passed).lower()}, but {least} against the plan's min_top_k_overlap {plan_gen.min_top_k_overlap}"
        if (why := _overlap_steps(data.top_k_overlap, data.decode_steps, divergent)) is not None:
            return why
        tol = self._tolerance(data.case)
        criterion: Any = getattr(tol, "task", None)
        if not absent(criterion) and data.tokens_passed is None:
            return f"tokens_passed is null (no criterion), but the plan declares {criterion.op} {criterion.threshold:g} for this cell's dtype"
        if not absent(criterion) and data.tokens_passed is not None and data.tokens_passed != _meets(agree, criterion):
            return f"tokens_passed is {str(data.tokens_passed).lower()}, but {agree} agreeing step(s) against the criterion {criterion.op} {criterion.threshold}"
        if (told := self.task_results.get(data.case)) is not None:
            value, passed, line = told
            if value != data.steps_agreeing or passed != data.tokens_passed:
                return (
                    f"steps_agreeing {data.steps_agreeing} (tokens_passed {json.dumps(data.tokens_passed)}), but the case_result "
                    f"on line {line} gives its task metric {value} (passed {json.dumps(passed)}): the collector writes both from one count"
                )
        if data.case in self.passed and (data.tokens_passed is False or not data.top_k_passed):
            return "its case_result says pass, but tokens_passed or top_k_passed is false"
        return None

    def _generation_attempts(self, data: Any, timing: Any) -> str | None:
        """A cell's series of warm generations (1.7 logs on): the reported one is attempt N of at
        most 1 + the plan's remeasure_rounds, and each of the N - 1 earlier ones kept beside it
        (collector/run/generation_cells.py) has the reported one's repetitions and steps, the
        figures its samples give, and a series the classifier calls unstable: the collector
        measures again only then. A steady series measured again until one read faster would be
        a figure chosen, not measured."""
        allowed, rounds = timing.attempts_allowed, getattr(self.plan, "remeasure_rounds", None)
        numbered = not absent(timing.attempt) or bool(timing.earlier)
        if schema_tuple(data.schema_version) < (1, 7):
            if numbered:
                return f"timing.attempt, attempts_allowed and earlier are fields of schema 1.7, on a {data.schema_version} line"
            return None
        if not numbered:
            return "timing.attempt is not recorded: a 1.7 collector numbers every series of warm generations it takes"
        if isinstance(rounds, int) and allowed != 1 + rounds:
            return f"timing.attempts_allowed is {allowed}, but the plan's remeasure_rounds {rounds} allows {1 + rounds} series of warm generations"
        if allowed > 1 + MAX_REMEASURE_ROUNDS:
            return f"timing.attempts_allowed is {allowed}, but a plan allows at most {1 + MAX_REMEASURE_ROUNDS} series of warm generations"
        reps, steps = timing.repetitions, data.decode_steps
        last = unstable_generation(
            timing.ttft_warm.samples_s, timing.decode_token.samples_s, reps, _waited_facts(timing.host)
        )
        if last and timing.attempt < allowed:
            return (
                f"the reported series (attempt {timing.attempt} of {allowed}) is unstable ({', '.join(last)}), yet no "
                "series was taken after it: the collector measures again until one is stable or none is left"
            )
        for index, series in enumerate(() if absent(timing.earlier) else timing.earlier):
            name = f"timing.earlier[{index}]"
            for part in ("ttft_warm", "decode_token"):
                if (why := warm_figures(f"{name}.{part}", getattr(series, part))) is not None:
                    return why
            first, decode = series.ttft_warm.samples_s, series.decode_token.samples_s
            if len(first) != reps or len(decode) != reps * steps:
                return (
                    f"{name} holds {len(first)} first-token and {len(decode)} decode samples, but {reps} repetitions "
                    f"of {steps} decode steps give {reps} and {reps * steps}: every series of a cell is taken alike"
                )
            host = None if absent(series.host) else series.host
            if (why := _cpu_time(f"{name}.host", host, data.schema_version, (first, decode))) is not None:
                return why
            if not unstable_generation(first, decode, reps, _waited_facts(host)):
                return (
                    f"{name} (series {index + 1}) is stable by the classifier's rules, yet another series was taken "
                    "after it: the collector measures again only an unstable series"
                )
        return None

    def _generated_as_planned(self, data: Any) -> str | None:
        """The collector writes a generation event's top_k, padding_side and max_cache_len from the
        plan's [generation] table (collector/run/generation_cells.py), the one the plan event logs:
        another top-k would judge the overlap against another criterion than the one declared."""
        planned: Any = getattr(self.plan, "generation", None)
        if absent(planned):
            return None
        for field_name in ("top_k", "padding_side", "max_cache_len"):
            given, declared = getattr(data, field_name), getattr(planned, field_name)
            if given != declared:
                return f"{field_name} is {given}, but the plan's generation {field_name} is {declared}: the collector generates as the plan declares"
        return None

    def _served(self, data: Any) -> str | None:
        """A generation event against its planned cell and the request that serves it: the
        collector writes the cell's length as request_length, and the bucket and truncation the
        request's routing decided (collector/run/generation_cells.py)."""
        length = self._shape(data.case)[1]
        if length is not None and data.request_length != length:
            return f"request_length is {data.request_length}, but the plan's cell is a request of {length} tokens"
        served = self.requests.get(data.case)
        if served is None:
            return None
        line, request = served
        if data.bucket != request.bucket:
            routed = "refused it" if absent(request.bucket) else f"{request.outcome} it to bucket {request.bucket}"
            return f"bucket is {data.bucket}, but the request that serves this cell (line {line}) {routed}"
        truncated = data.truncated is True  # a mirror's UNSET when left out: the default, false
        if truncated != (request.outcome == "truncated"):
            return f"truncated is {str(truncated).lower()}, but the request that serves this cell (line {line}) was {request.outcome}"
        return None

    def _shape(self, case: str) -> tuple[int | None, int | None]:
        """The planned cell's batch and length, (None, None) for a case the plan lacks."""
        cell = self._cell(case)
        return (cell.batch, cell.length) if cell is not None else (None, None)

    def _planned_steps(self) -> Any:
        """The plan's training steps (an int; UNSET or None where the plan trains nothing)."""
        return getattr(getattr(self.plan, "training", None), "steps", None)

    def _train_step(self, data: Any) -> str | None:
        steps = self.train_steps.setdefault(data.case, set())
        if data.step in steps:
            return f"a second train_step {data.step} of this cell: the collector writes each step once"
        steps.add(data.step)
        planned = self._planned_steps()
        if isinstance(planned, int) and data.step >= planned:
            return f"step {data.step}, past the plan's {planned} step(s) (0 to {planned - 1})"
        tol = self._tolerance(data.case)
        loss_tol: Any = getattr(tol, "loss", None)
        if not absent(loss_tol):
            loss, ref = data.loss, data.reference_loss
            within = (
                loss is not None and ref is not None and abs(loss - ref) <= loss_tol.atol + loss_tol.rtol * abs(ref)
            )
            if data.loss_within != within:
                return f"loss_within is {str(data.loss_within).lower()}, but loss {loss} against reference_loss {ref} is {'within' if within else 'outside'} the plan's loss tolerance (atol {loss_tol.atol}, rtol {loss_tol.rtol})"
        if not data.loss_within:
            self.failed_training.setdefault(data.case, f"train_step {data.step} has loss_within false")
        bad = next((g for g in data.grads if g.mismatched > 0), None)
        if bad is not None:
            self.failed_training.setdefault(
                data.case,
                f"train_step {data.step} counts {bad.mismatched} mismatched element(s) of gradient {bad.name}",
            )
        return None

    def _train_result(self, data: Any) -> str | None:
        if data.case in self.train_results:
            return "a second train_result of this cell: the collector writes one"
        self.train_results.add(data.case)
        bad = next((p for p in data.params if p.mismatched > 0), None)
        if bad is not None:
            self.failed_training.setdefault(
                data.case, f"train_result counts {bad.mismatched} mismatched element(s) of parameter {bad.name}"
            )
        return None


# The kinds a cross-line rule reads: each has its FigureChecks method ``_<kind>`` (looked up once).
FIGURE_KINDS = frozenset(kind for kind in EVENT_MODELS if hasattr(FigureChecks, f"_{kind}"))


def _from_1_2(data: Any) -> bool:
    """Whether a line is of schema 1.2 or later (of this major): a collector from 1.2 on writes
    a weights artifact in every run that gets past its plan."""
    version = schema_tuple(data.schema_version)
    return bool(version) and version[0] == SCHEMA_MAJOR and version >= (SCHEMA_MAJOR, 2)


def _weights_against_plan(plan: Any, artifact: Any) -> str | None:
    """What the weights artifact says of the weights' hashes against what the plan says, in
    words, or None: the collector writes one file digest and one content digest (or its failure)
    into both (collector/run/setup.py)."""
    for field, planned, logged in (
        ("sha256", plan.weights_sha256, artifact.sha256),
        ("content_sha256", plan.weights_content_sha256, artifact.content_sha256),
    ):
        if not absent(planned) and not absent(logged) and planned != logged:
            return f"the weights' {field} is {logged[:12]}..., but the plan gives weights_{field} {planned[:12]}... for the same weights"
    planned, failed = plan.weights_content_sha256, artifact.content_unknown_reason
    if not absent(planned) and not absent(failed):
        return (
            f"the weights artifact says their content hash is unknown ({failed[:80]!r}), but the plan gives "
            f"weights_content_sha256 {planned[:12]}... for the same weights"
        )
    return None


def _routed_reason(request: Any) -> str | None:
    """A request's reason in the collector's words (collector/generation.py, ``route``) names its
    length, outcome and bucket: ones other than the event's tell the reader another routing. A
    reason in other words (another collector's) is not read."""
    reason = request.reason
    buckets: tuple[str, ...]
    if (named := _PADDED.fullmatch(reason) or _FILLS.fullmatch(reason)) is not None:
        length, outcome, buckets = named[1], "padded", (named[2],)
    elif (named := _ABOVE.match(reason)) is not None:
        truncated = named[3] is not None
        length, outcome = named[1], "truncated" if truncated else "refused"
        buckets = (named[2], named[3]) if truncated else ()  # the largest bucket, and the one cut to
    else:
        return None
    if int(length) == request.length and outcome == request.outcome and all(b == str(request.bucket) for b in buckets):
        return None
    routed = "refused" if request.outcome == "refused" else f"{request.outcome} to bucket {request.bucket}"
    return (
        f"reason {reason[:160]!r} is not the request's routing, {request.length} tokens {routed}: "
        "the collector's reason states the routing it decided"
    )


def _overlap_steps(overlap: Any, decode_steps: int, divergent: int | None) -> str | None:
    """Top-k overlap as the collector judges it (collector/generation.py, ``judge``): one entry a
    step (the prefill's and one a decode call), a share at every step up to and including the
    first divergent one, where the cell and the reference saw the same tokens, and null after it
    (their contexts differ)."""
    if len(overlap) != decode_steps + 1:
        return f"top_k_overlap holds {len(overlap)} step(s), but decode_steps {decode_steps} gives {decode_steps + 1} (the prefill's token and one a decode call)"
    last = decode_steps if divergent is None else divergent
    for step, share in enumerate(overlap):
        if step <= last and share is None:
            return f"top_k_overlap is null at step {step}, which the cell reached with the reference's tokens: the collector judges the overlap at every step up to the first divergent one"
        if step > last and share is not None:
            return f"top_k_overlap holds {share:g} at step {step}, after the first divergent step {divergent}: the collector judges no overlap there (the contexts differ)"
    return None


def _localized_modules(data: Any) -> str | None:
    """A localization's modules as the collector lists them (collector/localize.py, ``localize``,
    ``_measure`` and ``_one_module``): none where localisation failed; at most max_modules, each
    once, by a name named_modules() gives (never empty), in the reference's execution order with
    order its position (0, 1, ...), called at least once (a module is listed at its first call),
    no deeper than max_depth, with local_compiled (where given) true exactly in a compiled cell;
    and a module the bounds or the reference left out is not also measured. (A parent is not
    held to come before its children: a model whose own forward calls a child before the parent,
    an embedding taken before the decoder runs, lists the child first.)"""
    modules = data.modules or ()  # a mirror's UNSET when left out
    skipped = data.skipped or ()
    if not absent(data.failure) and (modules or skipped):
        listed = f"{len(modules)} module(s)" if modules else f"{len(skipped)} skipped module(s)"
        return f"failure is given, but {listed} listed: the collector lists no module of a localisation that failed"
    if len(modules) > data.max_modules:
        return f"modules lists {len(modules)} modules, more than its max_modules {data.max_modules}: the collector measures at most max_modules"
    compiled = data.mode == "compiled"
    listed_at: dict[str, int] = {}
    for index, module in enumerate(modules):
        name = module.name
        if not name:
            return f"module {index} has an empty name: the collector measures named submodules only (the model itself is the cell's own comparison)"
        shown = repr(name[:80])
        first = listed_at.setdefault(name, index)
        if first != index:
            return f"module {shown} is listed twice (modules {first} and {index}): the collector measures a module once, at its first call"
        if module.order != index:
            return f"module {shown} is listed at position {index}, but its order is {module.order}: the collector lists modules in execution order, order their position 0, 1, ..."
        if module.calls < 1:
            return f"module {shown} is measured, but its calls is {module.calls}: the collector measures a module the reference called"
        if (why := _module_depth(name, module.depth, data.max_depth)) is not None:
            return f"module {shown} {why}: the collector measures modules down to max_depth only"
        own = module.local_compiled
        if not absent(own) and own != compiled:
            ran, cell = ("compiled alone", "an eager") if own else ("run eager", "a compiled")
            return f"module {shown} says its local figure is of the module {ran}, but the localization is of {cell} cell: the collector runs each module alone in the cell's mode"
    for entry in skipped:
        # A count of the modules below max_depth is listed under that bound by a phrase, not a name.
        if entry.reason != "max_depth" and entry.name in listed_at:
            return f"module {entry.name[:80]!r} is both measured and skipped ({entry.reason[:80]}): the collector skips the modules it does not measure"
    return None


def _module_depth(name: str, depth: int, max_depth: int) -> str | None:
    """Why a localised module lies below max_depth (its logged depth, or its name's), or None.
    Collectors of 2 December 2026 counted a top-level index ("0.fc" of an nn.Sequential model) as
    no level, and chose modules by that count, so a name is held to the fewest levels it has."""
    if depth > max_depth:
        return f"has depth {depth}, below max_depth {max_depth}"
    parts = name.split(".")
    if module_depth(name) > max_depth and sum(1 for part in parts if not part.isdigit()) > max_depth:
        return f"is at depth {module_depth(name)} by its name, below max_depth {max_depth}"
    return None


def _error_stats(stats: Any, version: str, name: str = "error_stats") -> str | None:
    """What one comparison's figures say of each other, whoever computed them: no count of
    elements outside the tolerance exceeds the elements judged; the worst element is one of the
    judged ones, so its |diff| is at most the largest; it is within its allowance when no element
    is outside, and (from 1.2, where it is picked among the failing ones) outside when one is."""
    for where, figures in ((name, stats), *((f"per_output {o.name}", o) for o in stats.per_output or ())):
        if figures.mismatched > figures.total:
            return f"{where} counts {figures.mismatched} elements outside the tolerance of {figures.total} judged"
    diff, allowed = stats.diff_at_worst, stats.allowed_at_worst
    if stats.total and diff is None and stats.max_abs is not None:
        # Any difference not finite makes max_abs null (collector/compare.py): the worst one is among them.
        return f"{name}.diff_at_worst is not finite, but max_abs {stats.max_abs} is the largest |diff| of the judged elements"
    if stats.total and diff is None and allowed is not None and stats.mismatched == 0:
        # A difference that is not finite is outside any finite allowance (collector/compare.py).
        return f"{name} counts no element outside the tolerance, but its worst element's |diff| is not finite against its allowance {allowed}"
    if not stats.total or diff is None:
        return None
    if stats.max_abs is not None and diff > stats.max_abs:
        return f"{name}.diff_at_worst {diff} is larger than max_abs {stats.max_abs}, the largest |diff| of the judged elements"
    if allowed is None:
        return None
    if stats.mismatched == 0 and diff > allowed:
        return f"{name} counts no element outside the tolerance, but its worst element's |diff| {diff} exceeds its allowance {allowed}"
    if stats.mismatched > 0 and diff <= allowed and schema_tuple(version) >= (1, 2):
        return f"{name} counts {stats.mismatched} elements outside the tolerance, but its worst element's |diff| {diff} is within its allowance {allowed}"
    return None


def _fed_differs(fed: Any, checked: Any) -> tuple[str, str] | None:
    """How tensors a timed call was fed differ from those a cell was checked with, by name,
    shape and dtype: (what it was fed, what the check records), in words; None when alike."""
    ours = {item.name: (tuple(item.shape), item.dtype) for item in fed}
    theirs = {item.name: (tuple(item.shape), item.dtype) for item in checked}
    if ours == theirs:
        return None
    name = next((n for n in (*ours, *theirs) if ours.get(n) != theirs.get(n)))
    mine, other = ours.get(name), theirs.get(name)
    if mine is not None and other is not None and mine[0] == other[0]:  # same shape, another dtype
        return f"input {name[:60]!r} as {mine[1][:40]}", f"records it as {other[1][:40]}"
    fed_text = f"no input {name[:60]!r}" if mine is None else f"input {name[:60]!r} of shape {_dims(mine[0])}"
    return fed_text, "records no such input" if other is None else f"records it with shape {_dims(other[0])}"


def _dims(shape: tuple[Any, ...]) -> str:
    """A shape as a list, its first 8 dimensions (a line may hold thousands)."""
    return str(list(shape[:8]))[:-1] + (f", ... {len(shape)} in all]" if len(shape) > 8 else "]")


def _fact_value(fact: Any) -> str | None:
    """A fact's value as read; None when it is unknown, or the fact was not recorded."""
    return None if fact is None else fact.get("value")


_RELEASE = re.compile(r"(\d+(?:\.\d+)*)(.*)")


def _release(version: str | None) -> str | None:
    """A version as a release to compare: no local label, no trailing zero parts, no separator
    before a pre-release ('2.11' of '2.11.0+cu130', '2.0rc1' of '2.0.0-rc1'); None for text that
    is no version ('unknown', '')."""
    found = _RELEASE.fullmatch((version or "").partition("+")[0].strip().lower())
    if found is None:
        return None
    parts = found[1].split(".")
    while len(parts) > 1 and parts[-1] == "0":
        parts.pop()
    return ".".join(parts) + re.sub(r"[-_.]", "", found[2])


def _options(options: Any) -> tuple[str, ...]:
    """Compile options as JSON text per field, the defaults where none were declared (a plan
    before [compile]) or left out (backend_options): so true and 1 are told apart, as the
    backend that reads them may tell them apart."""
    if options is None:
        return ("false", '"default"', "false", "{}")
    backend = options.backend_options
    return tuple(
        msgspec.json.encode(value, order="deterministic").decode()
        for value in (options.dynamic, options.mode, options.fullgraph, {} if absent(backend) else backend)
    )


def _unpassed_warm(kind: str, case: str, status: str, line: int) -> str:
    """The warning for a warm series beside a result that is not a pass: the collector times a
    passing cell only, so the log was not written as the collector writes it. Not refused: no
    page, comparison or history reads a timing of a cell that did not pass, and the exports
    keep its figures beside its status."""
    where = (
        f"status {status}, but a warm series of this cell is logged on line {line}"
        if kind == "case_result"
        else f"a warm series, but the cell's case_result on line {line} says status {status}"
    )
    return f"{kind} {case[:120]!r}: {where}: the collector times a passing cell only; its timings decide nothing"


def _cache_label(name: str, call: Any) -> str | None:
    """A first call's cache condition follows from its own listing and counters
    (collector/run/capture.py, ``cold_condition``): an empty cache only when every listed folder
    was empty before the call and no hit came without a miss (hits beside a miss are entries the
    call wrote itself), a restart's populated cache only when they were not. Every page and
    comparison reads the label: a cold call that met a full cache, labelled empty, would be shown
    and compared as a compile from nothing. Facts the line left out are not judged."""
    label = call.cache_condition
    # Nearly every line: nothing listed before, no hit alone (UNSET, None and 0 are all false).
    before, dirs, hits = call.cache_entries_before, call.cache_dirs, call.cache_hits
    if label == "fresh_process_empty_cache":
        if before:
            return f"{name} is {label}, but cache_entries_before is {before}: a call is labelled so only when the listed cache folders were empty before it"
        full = [d for d in dirs if d.entries_before] if dirs else None
        if full:
            return f"{name} is {label}, but cache_dirs lists {full[0].role[:40]!r} with {full[0].entries_before} entries before the call: a call is labelled so only when the listed cache folders were empty before it"
        if hits and call.cache_misses == 0:
            return f"{name} is {label}, but the call counts {hits} cache hit(s) and no miss: hits without a miss come from a cache that was not empty"
        return None
    if label != "restart_populated_cache" or before != 0 or (dirs and any(d.entries_before for d in dirs)):
        return None
    if not hits or call.cache_misses:
        return f"{name} is {label}, but cache_entries_before is 0: a restart is labelled so only when the cache folder it was given was not empty"
    return None


def _fresh_and_listed(cold: Any, data: Any) -> str | None:
    """A cold call labelled fresh_process_empty_cache ran in a fresh process, and its cache was
    listed (_listed)."""
    if not cold.fresh_process:
        return "cold.cache_condition is fresh_process_empty_cache, but fresh_process is false: a call in a process already running is no fresh process"
    return _listed("cold.cache_condition", cold, data)


def _listed(name: str, call: Any, data: Any) -> str | None:
    """A call (a cold call, or a compile) labelled fresh_process_empty_cache had (logs from 1.1
    on) its cache listed before it: the collector labels a call whose folders it did not list as
    met a persistent cache (collector/run/capture.py, cold_condition). Every page and comparison
    reads the label as a compile from nothing."""
    if schema_tuple(data.schema_version) >= (1, 1) and absent(call.cache_entries_before) and not call.cache_dirs:
        return f"{name} is fresh_process_empty_cache, but the call lists no cache folder (cache_entries_before, cache_dirs): an empty cache is said only of folders listed empty before the call"
    return None


def warm_figures(name: str, warm: Any) -> str | None:
    """A warm series' figures are its samples' (collector/timing.py, ``warm_stats``: the
    median, and the inclusive quartiles and 90th percentile of ``statistics.quantiles``): every
    page and comparison reads the logged median and IQR, so one that the samples do not give
    would show a time that was never measured."""
    made = warm_stats(warm.samples_s)
    for figure in _WARM_FIGURES:
        logged = getattr(warm, figure)
        if not math.isclose(logged, made[figure], rel_tol=1e-9, abs_tol=1e-12):
            return f"{name}.{figure} is {logged:.6g}, but its {len(warm.samples_s)} samples_s give {made[figure]:.6g}"
    return None


def _repetitions(timing: Any) -> str | None:
    """ttft_warm holds one sample per repetition, and tokens_per_s is the decode steps of one
    repetition over the median repetition's decode time (collector/run/generation_cells.py), so
    decode_token's samples, each repetition's steps in turn, give it."""
    samples, reps = timing.decode_token.samples_s, timing.repetitions
    if len(timing.ttft_warm.samples_s) != reps:
        return f"timing.ttft_warm holds {len(timing.ttft_warm.samples_s)} samples, one per repetition, but repetitions is {reps}"
    if len(samples) % reps:
        return f"timing.decode_token holds {len(samples)} samples, which {reps} repetitions cannot share equally"
    steps = len(samples) // reps
    total = statistics.median(math.fsum(samples[i * steps : (i + 1) * steps]) for i in range(reps))
    made = steps / total if total > 0 else 0.0
    if not math.isclose(timing.tokens_per_s, made, rel_tol=1e-9, abs_tol=1e-12):
        return f"timing.tokens_per_s is {timing.tokens_per_s:.6g}, but decode_token's {reps} repetitions of {steps} steps give {made:.6g}"
    return None


def _alike_keys(matrix: Any) -> str | None:
    """A planned case key that holds a space or a character no page shows (collector.visible.bare)
    and, without them, is in the collector's form or is another planned cell's key: on a page
    the two cells would read alike (one shown under the other's name), and the form check below
    would not judge it. None where every key reads as itself."""
    keys = {cell.case for cell in matrix}
    joined = "".join(keys)
    if joined.isascii() and joined.isprintable() and " " not in joined:  # every key plain ASCII: none can
        return None
    # Each key as a page reads it -> the first key that reads so; a blank-drawn character read
    # as a space, and as nothing (fonts differ), each reading its own map.
    readings: tuple[dict[str, str], dict[str, str]] = ({}, {})
    for cell in matrix:
        core = bare(cell.case)
        firsts = [shown.setdefault(read_as(cell.case, blank), cell.case) for shown, blank in zip(readings, (" ", ""))]
        first = next((f for f in firsts if f != cell.case), cell.case)
        if core == cell.case and first == cell.case:
            continue
        if first != cell.case:  # two keys alike but for runs of spaces ("a b", "a  b") or unseen characters
            other = f"cell {visible(first[:80], keep='')!r}"
        elif core in keys or _COLLECTOR_CASE.fullmatch(core):
            other = f"cell {core[:80]!r}" if core in keys else f"the collector's key {core[:80]!r}"
        else:
            continue
        return (
            f"case {visible(cell.case[:80], keep='')!r} reads as {other} on a page: it adds a space or a "
            "character no page shows, so two cells would read alike"
        )
    return None


def misnamed_cells(matrix: Any) -> str | None:
    """The planned cells whose case key is in the collector's form but names other fields than
    the cell's own, in words, or None. Every page shows a cell by its key: a key that says
    float32 eager on a bfloat16 compiled cell would put one cell's result under another's name.
    A key in any other form (another collector's) is not judged."""
    alike = _alike_keys(matrix)
    if alike is not None:
        return alike
    wrong = []
    for cell in matrix:
        parts = _COLLECTOR_CASE.fullmatch(cell.case)
        if parts is None:
            continue
        named = parts.groups()[:5] + (parts[6] is not None,)  # text: a number of any length compares as written
        own = (str(cell.batch), str(cell.length), cell.layout, cell.dtype, cell.mode, not absent(cell.repeat_of))
        if named != own:
            wrong.append(cell)
    if not wrong:
        return None
    first = wrong[0]
    repeat = " (a cache check)" if not absent(first.repeat_of) else ""
    more = f" ({len(wrong)} cells in all)" if len(wrong) > 1 else ""
    return (
        f"case {first.case[:80]!r} is named in the collector's form but its fields are batch {first.batch}, "
        f"length {first.length}, {first.layout}, {first.dtype[:40]}, {first.mode}{repeat}{more}: "
        "a page would show its result under another cell's name"
    )


# What the collector records as device facts where no device adapter answered (the host's
# processor and CPU count: collector/environment.py read_device).
HOST_DEVICE_COUNT_SOURCE = "os.cpu_count()"


def device_facts_disagreement(family: str, device: dict[str, Any]) -> str | None:
    """Why device facts read from the host's CPU do not fit an accelerator's backend family, or
    None. An accelerator's adapter reads its own devices; the CPU's count is what the collector
    records only where none answered: such a log did not run on that backend's device."""
    count = device.get("device_count")
    source = getattr(count, "source", None) if count is not None else None
    owner = next((d for d in descriptors().values() if family in d.families), None)
    # Only a backend whose descriptor says its adapter reads its own devices (device_facts): a
    # plugin adapter that keeps the base's CPU facts records the host's count on its device too.
    if source != HOST_DEVICE_COUNT_SOURCE or owner is None or not owner.device_facts:
        return None
    return (
        f"backend_family {family!r} is the {owner.name} backend's, but device.device_count was read by "
        f"{HOST_DEVICE_COUNT_SOURCE} (the host's CPUs, recorded where no {owner.name} device answered)"
    )


def family_disagreement(family: str, device_type: str) -> str | None:
    """Why an environment's backend family does not fit its device type, or None.

    Each backend descriptor names the families a log of its device may record: a family that
    another backend claims (a neuron-native family on a cpu device) says the log was relabelled
    or its collector misread the host. A device type or family no descriptor here knows (a
    plugin this reader lacks, or "unknown") is not judged."""
    known = descriptors()
    device = next((d for d in known.values() if device_type in (d.name, *d.aliases)), None)
    owner = next((d for d in known.values() if family in d.families), None)
    if device is None or owner is None or owner is device:
        return None
    return (
        f"backend_family {family!r} belongs to the {owner.name} backend, but device_type is {device_type!r}, "
        f"whose backend records {', '.join(repr(f) for f in device.families)}: the log's facts disagree on what ran"
    )
