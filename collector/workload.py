"""Load a workload module and prepare identical inputs and weights for every mode.

A workload module (named by the plan) provides:

* ``MODEL_REVISION``, ``ATTENTION_PATH``, ``TASK_METRIC``: strings recorded in the plan event;
* ``WEIGHTS_ORIGIN``: where the weights come from, recorded in the plan event: ``"pretrained"``
  (trained weights from a named source), ``"synthetic"`` (made up: a seeded initialisation,
  never trained) or ``"none"`` (no learned weights: a solver's fixed constants); any other
  value is refused before anything runs, and a module without it is logged as not stating it;
* ``build_model() -> nn.Module``: the model in float32 with its real weights (seeded or loaded);
* ``make_inputs(batch, length, layout) -> dict[str, Tensor]``: the real preprocessing, on the CPU;
* ``run_model(model, inputs) -> dict[str, Tensor]``: one call, outputs named;
* ``task_metric(outputs, reference, inputs) -> float``: the task-relevant comparison
  (inference plans; training plans compare the loss per step instead, see training.py).

A generation plan's module (``[generation]``, see generation.py) provides instead of
``run_model`` and ``task_metric``: ``pad_id()``, ``new_cache(model, batch, max_cache_len)`` and
``step(model, input_ids, attention_mask, position_ids, cache, cache_position) -> logits``, and
``configure(name)`` when the plan names a ``config``; its ``make_inputs`` returns the request
unpadded (the collector pads it to its bucket).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import inspect
import os
import sys
import traceback
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
from torch.utils._python_dispatch import _disable_current_modes

from collector import interrupt
from collector.eventlog import OutOfSpace, finite_or_none, is_out_of_space
from collector.localimports import MAX_DEPTH, MAX_FILES, imports_digest, workload_imports
from collector.plan import WEIGHTS_ORIGINS, WORKLOAD_FUNCTIONS, WorkloadPlan, read_without_waiting, required_functions

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16, "float64": torch.float64}


class WorkloadError(RuntimeError):
    """The workload module cannot serve any cell: it does not import, lacks a function, or a
    function breaks its contract. The message names the file and the function."""


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:300]}" if text else type(exc).__name__


MAX_SOURCE_BYTES = 64 << 20  # a workload module's source, at most


def check_source(path: Path) -> None:
    """A syntax error is found before anything runs (nothing is imported or executed)."""
    try:
        source = read_without_waiting(path, MAX_SOURCE_BYTES)
    except OSError as exc:
        raise WorkloadError(f"workload module {path}: cannot be read: {exc.strerror or exc}") from None
    if len(source) > MAX_SOURCE_BYTES:
        raise WorkloadError(f"workload module {path}: larger than {MAX_SOURCE_BYTES} bytes; expected a Python module")
    try:
        compile(source, str(path), "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        where = f" line {exc.lineno}" if isinstance(exc, SyntaxError) and exc.lineno else ""
        message = exc.msg if isinstance(exc, SyntaxError) else str(exc)
        raise WorkloadError(
            f"workload module {path}{where}: {type(exc).__name__}: {message}; expected a Python module"
        ) from None


# Each loaded workload module's own sha256 and its imports' digest, by module name.
_LOADED_FROM: dict[str, tuple[str | None, str]] = {}


def load_workload(
    plan: WorkloadPlan, imports_sha256: str | None = None, module_sha256: str | None = None
) -> ModuleType:
    """The workload module, imported as ``python module.py`` would import it: ``import helper``
    finds ``helper.py`` beside it and the module is the root of a package over its folder
    (``from . import helper``, ``from .layers import Block``). Only the local files run_start
    hashes as the workload's imports (localimports.py) load from its folder, each checked to hold
    the bytes hashed when it loads (the folder is not put on ``sys.path``: a file there that the
    workload does not import, named like a module torch imports later, is never run). With
    ``imports_sha256`` (and ``module_sha256``), files changed since run_start hashed them are
    refused before anything runs."""
    path = plan.module_path
    # A dot in the file name (model.v2.py) would make the name a submodule's of a missing package.
    name = "collector_workload_" + "".join(c if c.isalnum() else "_" for c in path.stem)
    cached = sys.modules.get(name)
    # A module loaded before run_start hashed its files (a plan-check of [compare] rules loads
    # it first) is used again only if it was loaded from the bytes run_start hashed: a file
    # edited in between is loaded again, and checked against those hashes.
    loaded_from = _LOADED_FROM.get(name)
    if (
        cached is not None
        and getattr(cached, "__file__", None) == str(path)
        and _FINDER.serves(name)
        and (module_sha256 is None or loaded_from is None or loaded_from[0] == module_sha256)
        and (imports_sha256 is None or loaded_from is None or loaded_from[1] == imports_sha256)
    ):
        config = (plan.generation or {}).get("config")
        if config and callable(getattr(cached, "configure", None)):
            cached.configure(config)
        return cached
    entries = workload_imports(path)
    if imports_sha256 is not None and imports_digest(entries) != imports_sha256:
        raise WorkloadError(
            f"workload module {path}: a local file it imports was changed, added or removed since the run "
            "began (run_start hashed them); it is not loaded"
        )
    hashed = {os.path.realpath(e["path"]): e["sha256"] for e in entries if e.get("sha256")}
    own = module_sha256 or _sha256_or_none(path)
    _LOADED_FROM[name] = (own, imports_digest(entries))
    if own is not None:
        hashed[os.path.realpath(path)] = own  # ``import wl`` from a helper: the module's own bytes
    _FINDER.serve(name, path.parent, hashed)  # first: what was loaded for a workload before is dropped
    _clashing(path, entries)
    spec = importlib.util.spec_from_file_location(
        name, path, loader=_HashedLoader(name, str(path), own), submodule_search_locations=[str(path.parent)]
    )
    if spec is None or spec.loader is None:
        raise WorkloadError(f"workload module {path}: cannot be loaded as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except SystemExit as exc:
        del sys.modules[name]
        raise WorkloadError(
            f"workload module {path}: called sys.exit({exc.code!r}) during import; a workload module must only define its functions"
        ) from None
    except SyntaxError as exc:
        del sys.modules[name]
        where = "" if not exc.filename or exc.filename == str(path) else f" (in {exc.filename})"
        raise WorkloadError(
            f"workload module {path}{where} line {exc.lineno}: SyntaxError: {' '.join(str(exc.msg).split())[:300]}"
        ) from None
    except Exception as exc:
        del sys.modules[name]
        raise WorkloadError(
            f"workload module {path}: raised on import{_where(exc, path)}: {_one_line(exc)}{_not_loaded(exc, path)}"
        ) from None
    needed = required_functions(bool(plan.generation), bool(plan.training))
    missing = [attr for attr in needed if not callable(getattr(module, attr, None))]
    origin = getattr(module, "WEIGHTS_ORIGIN", None)
    if origin is not None and origin not in WEIGHTS_ORIGINS:
        del sys.modules[name]
        raise WorkloadError(
            f"workload module {path}: WEIGHTS_ORIGIN {str(origin)[:80]!r} is none of {', '.join(WEIGHTS_ORIGINS)}"
        )
    if missing:
        del sys.modules[name]
        expected = "; ".join(WORKLOAD_FUNCTIONS[attr] for attr in missing)
        raise WorkloadError(f"workload module {path} lacks {', '.join(missing)}; expected {expected}")
    config = (plan.generation or {}).get("config")
    if config:
        try:
            module.configure(config)
        except Exception as exc:
            del sys.modules[name]
            raise WorkloadError(
                f"workload module {path}: configure({config!r}) for generation.config raised {_one_line(exc)}"
            ) from None
    return module


def _sha256_or_none(path: Path) -> str | None:
    try:
        return sha256_file(path)
    except OSError:
        return None  # the loader says why it cannot read it


class _HashedLoader(importlib.machinery.SourceFileLoader):
    """A workload file's loader: it runs the bytes it reads only when they are the bytes hashed
    (never a cached ``.pyc``, which may hold other code), and writes no bytecode."""

    def __init__(self, fullname: str, path: str, sha256: str | None) -> None:
        super().__init__(fullname, path)
        self.sha256 = sha256

    def get_code(self, fullname: str) -> Any:
        data = self.get_data(self.path)
        if self.sha256 is not None and hashlib.sha256(data).hexdigest() != self.sha256:
            raise ImportError(f"{self.path} changed since the collector hashed it; it is not loaded", path=self.path)
        return compile(data, self.path, "exec", dont_inherit=True)


class _WorkloadFinder(importlib.abc.MetaPathFinder):
    """Imports from a workload's folder, as its folder first on ``sys.path`` would, but only the
    files hashed: a top-level name whose file beside the module was not hashed is left to the
    rest of the import system (the standard library, installed packages), and a file inside one
    of the workload's packages that was not hashed is refused."""

    def __init__(self) -> None:
        self.root = ""
        self.folder = Path()
        self.hashed: dict[str, str] = {}
        self.packages: dict[str, Path] = {}

    def serve(self, root: str, folder: Path, hashed: dict[str, str]) -> None:
        self.forget()
        self.root, self.folder, self.hashed = root, folder, hashed
        self.packages = {root: folder}
        if self not in sys.meta_path:
            paths = [i for i, f in enumerate(sys.meta_path) if f is importlib.machinery.PathFinder]
            sys.meta_path.insert(paths[0] if paths else len(sys.meta_path), self)

    def serves(self, name: str) -> bool:
        return name == self.root and self in sys.meta_path

    def forget(self) -> None:
        """Drop the modules loaded for the workload served before (another file, or the same
        one loaded again)."""
        for key, module in list(sys.modules.items()):
            spec = getattr(module, "__spec__", None)
            if (
                key == self.root
                or key.startswith(self.root + ".")
                or isinstance(getattr(spec, "loader", None), _HashedLoader)
            ):
                del sys.modules[key]

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        parent, _, last = fullname.rpartition(".")
        if parent and parent not in self.packages:
            return None
        base = self.packages[parent] if parent else self.folder
        inside = bool(parent)  # a submodule of one of the workload's packages
        package, module = base / last / "__init__.py", base / f"{last}.py"
        found = package if package.is_file() else module if module.is_file() else None
        if found is None:
            below = os.path.realpath(base / last) + os.sep
            if (base / last).is_dir() and (inside or any(p.startswith(below) for p in self.hashed)):
                # a folder without __init__.py (a namespace package), as the scan reads one
                spec = importlib.machinery.ModuleSpec(fullname, None, is_package=True)
                spec.submodule_search_locations = [str(base / last)]
                self.packages[fullname] = base / last
                return spec
            if inside:
                raise ModuleNotFoundError(f"No module named {fullname!r} ({module} does not exist)", name=fullname)
            return None
        sha = self.hashed.get(os.path.realpath(found))
        if sha is None:
            if inside:
                raise ImportError(
                    f"{found} is not among the files the collector hashed for the workload (its imports are "
                    "read from its source); it is not loaded",
                    name=fullname,
                    path=str(found),
                )
            return None
        is_package = found == package
        if is_package:
            self.packages[fullname] = base / last
        return importlib.util.spec_from_file_location(
            fullname,
            found,
            loader=_HashedLoader(fullname, str(found), sha),
            submodule_search_locations=[str(base / last)] if is_package else None,
        )


_FINDER = _WorkloadFinder()


def _clashing(path: Path, entries: list[dict[str, Any]]) -> None:
    """A file beside the module that the workload imports by a name the interpreter already
    resolves elsewhere (a module loaded or built in: the file would not be what loads) or by a
    standard-library module's name (the file would replace that module for the collector and
    torch too) is refused, naming the file."""
    folder = os.path.realpath(path.parent)
    for entry in entries:
        if not entry.get("sha256"):
            continue
        relative = os.path.relpath(os.path.realpath(entry["path"]), folder)
        parts = relative.split(os.sep)
        top = parts[0].removesuffix(".py") if len(parts) == 1 else parts[0]
        if top in sys.modules or top in sys.builtin_module_names:
            why = "the collector has a module of that name loaded already; that one is what `import` gives"
        elif top in getattr(sys, "stdlib_module_names", ()):
            why = "a module of the standard library has that name; the file would replace it for the collector too"
        else:
            continue
        raise WorkloadError(
            f"workload module {path}: {entry['path']} beside it is imported as {top!r}, but {why}; rename it"
        )


def _where(exc: BaseException, path: Path) -> str:
    """' (in helper.py line 3)': the innermost line of the workload's folder that raised, when
    it is not the module itself."""
    folder = os.path.realpath(path.parent) + os.sep
    last = None
    for frame, line in traceback.walk_tb(exc.__traceback__):
        if os.path.realpath(frame.f_code.co_filename).startswith(folder):
            last = (frame.f_code.co_filename, line)
    if last is None or last[0] == str(path):
        return ""
    return f" (in {last[0]} line {last[1]})"


def _not_loaded(exc: BaseException, path: Path) -> str:
    """Why an import of a file beside the module found nothing: the file was not hashed."""
    name = getattr(exc, "name", None)
    if not isinstance(exc, ModuleNotFoundError) or not name or "." in name:
        return ""
    for candidate in (path.parent / f"{name}.py", path.parent / name / "__init__.py"):
        if candidate.exists():
            return (
                f"; {candidate} is not loaded: the collector loads only the local files it hashed (none past "
                f"{MAX_FILES} files or {MAX_DEPTH} imports deep, none outside the module's folder or through a link "
                "out of it, none imported by a name it cannot read from the source)"
            )
    return ""


def same_layout(tensor: torch.Tensor, device: torch.device | str, dtype: torch.dtype | None = None) -> torch.Tensor:
    """A copy of ``tensor`` on ``device`` (as ``dtype``) with the same shape and strides.

    ``Tensor.to`` keeps strides only for a dense tensor: a strided view such as
    ``x[..., 0]`` of a (b, l, 2) buffer arrives contiguous. Here the storage is allocated on
    the target with the view's strides (the base a pipeline would have) and the values copied
    into that view. Broadcast dimensions (stride 0) are rebuilt by expanding a copy of one slice.
    Whether the layout really arrived is checked where the model receives it (``FedInputs``).
    """
    dtype = tensor.dtype if dtype is None else dtype
    broadcast = [d for d, (size, stride) in enumerate(zip(tensor.shape, tensor.stride())) if stride == 0 and size > 1]
    if broadcast:
        one = tuple(slice(0, 1) if d in broadcast else slice(None) for d in range(tensor.dim()))
        return same_layout(tensor[one], device, dtype).expand(tensor.shape)
    out = torch.empty_strided(tuple(tensor.shape), tuple(tensor.stride()), dtype=dtype, device=device)
    out.copy_(tensor)
    return out


def check_task_metric(workload: ModuleType, tolerances: dict[str, dict[str, Any]]) -> None:
    """The plan's task criteria name the metric the module's ``task_metric()`` computes
    (``TASK_METRIC``, where the module states it): a value judged by another metric's criterion
    (an error, lower is better, against a 'cosine >=' threshold) passes or fails the wrong way."""
    if not hasattr(workload, "TASK_METRIC"):
        return
    stated = workload.TASK_METRIC
    if not isinstance(stated, str):  # the log's task_metric.name is a string: the run would not validate
        raise WorkloadError(
            f"workload module {workload.__file__}: TASK_METRIC is {type(stated).__name__} {stated!r:.60}; expected the metric's name, a string"
        )
    for dtype, tol in sorted(tolerances.items()):
        named = (tol.get("task") or {}).get("metric")
        if named is not None and named != stated:
            raise WorkloadError(
                f"workload module {workload.__file__}: TASK_METRIC is {stated!r}, but the plan's task criterion "
                f"for {dtype} names {named!r}: task_metric() would be judged by another metric's criterion; "
                "make the two the same"
            )


def training_modules(model: torch.nn.Module) -> list[str]:
    """The modules (by name; '' is the model itself) that are in training mode."""
    return [name or "(the model)" for name, module in model.named_modules() if module.training]


def build_model(workload: ModuleType, in_training: list[str] | None = None) -> torch.nn.Module:
    """The workload's model in eval mode; a failure here leaves no cell to run. ``in_training``
    receives the modules the workload's build_model() left in training mode, set to eval here."""
    # The generator is left as the workload set it (a module that seeds at import keeps its
    # seed): a build_model that draws an unseeded initialisation builds another model in each
    # process, which saved_model then refuses in a fresh one.
    try:
        model = workload.build_model()
    except interrupt.ENDS_RUN:
        raise
    except BaseException as exc:  # the workload's, a BaseException of its own too: not the collector's
        raise WorkloadError(f"workload module {workload.__file__}: build_model() raised {_one_line(exc)}") from None
    if not isinstance(model, torch.nn.Module):
        raise WorkloadError(
            f"workload module {workload.__file__}: build_model() returned {type(model).__name__}; expected a torch.nn.Module"
        )
    if in_training is not None:
        in_training += training_modules(model)
    return model.eval()


def check_inputs(workload: ModuleType, inputs: Any) -> dict[str, torch.Tensor]:
    """What ``make_inputs`` returned, checked: a mapping of names to tensors."""
    if not isinstance(inputs, Mapping) or not all(
        isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in inputs.items()
    ):
        raise TypeError(
            f"make_inputs() in {workload.__file__} returned {_describe(inputs, True)}; expected {WORKLOAD_FUNCTIONS['make_inputs']}"
        )
    return dict(inputs)


def check_outputs(workload: ModuleType, outputs: Any) -> dict[str, torch.Tensor]:
    """What ``run_model`` returned, checked: a mapping of output names to tensors, at least one
    (an empty one leaves nothing to compare with the reference)."""
    if (
        not isinstance(outputs, Mapping)
        or not outputs
        or not all(isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in outputs.items())
    ):
        raise WorkloadError(
            f"workload module {workload.__file__}: run_model() returned {_describe(outputs, True)}; expected {WORKLOAD_FUNCTIONS['run_model']}"
        )
    return dict(outputs)


class TaskMetricError(Exception):
    """task_metric() raised, or returned something other than a number, for one cell: that cell
    fails in its compare phase with this message (the matrix goes on). ``kind`` is the type of
    what it raised (TypeError for a value that is not a number)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def task_metric(
    workload: ModuleType,
    plan: WorkloadPlan,
    outputs: dict[str, torch.Tensor],
    reference: dict[str, torch.Tensor],
    inputs: dict[str, torch.Tensor],
) -> float | None:
    """The workload's task metric for one cell (None when it is not finite); what goes wrong in
    it is a ``TaskMetricError`` that names the workload, and for a KeyError the key and the
    names each mapping it was given holds, so the message says which lookup missed."""
    # What went wrong first: the progress line shows the message's first 200 characters.
    where = f"(workload {plan.name[:100]}, {plan.module_path.name[:100]})"
    try:
        value = workload.task_metric(outputs, reference, inputs)
    except KeyError as exc:
        key = repr(exc.args[0])[:100] if exc.args else "(no key given)"
        raise TaskMetricError(
            "KeyError",
            f"task_metric() looked up a missing key {key} {where}; the outputs hold {_names(outputs)}, "
            f"the reference {_names(reference)}, the inputs {_names(inputs)}",
        ) from None
    except Exception as exc:
        text = " ".join(str(exc).split())[:1000]
        raise TaskMetricError(type(exc).__name__, f"task_metric() raised {where}: {text}") from None
    try:
        return finite_or_none(value)
    except (TypeError, ValueError, RuntimeError):  # a mapping, a string, a tensor of many elements
        raise TaskMetricError(
            "TypeError",
            f"task_metric() returned {_describe(value)} {where}; expected {WORKLOAD_FUNCTIONS['task_metric']}",
        ) from None


def _names(mapping: Mapping[str, Any], most: int = 10) -> str:
    names = [repr(name)[:100] for name in list(mapping)[: most + 1]]
    if not names:
        return "nothing"
    more = f" and {len(mapping) - most} more" if len(mapping) > most else ""
    return ", ".join(names[:most]) + more


def _describe(value: Any, of_tensors: bool = False) -> str:
    """What a workload function returned, in words; ``of_tensors``: a mapping that should name
    tensors also names its first entries that are not a tensor under a string."""
    if isinstance(value, Mapping):
        kinds = sorted({type(v).__name__ for v in value.values()})
        text = f"a mapping of {', '.join(kinds) or 'nothing'}"
        if of_tensors:
            bad = [f"{k!r}"[:60] for k, v in value.items() if not (isinstance(k, str) and isinstance(v, torch.Tensor))]
            if bad:
                shown = ", ".join(bad[:3]) + (f" and {len(bad) - 3} more" if len(bad) > 3 else "")
                text += f" (not a tensor under a string: {shown})"
        return text
    return f"a {type(value).__name__}"


def cast_inputs(inputs: dict[str, torch.Tensor], dtype: torch.dtype) -> dict[str, torch.Tensor]:
    """A copy of each input: floating inputs take the cell dtype; integer ids and boolean masks
    keep theirs.

    Each call gets its own copy, so a model that writes into its input (``x.mul_(2)``) never
    changes the values a later call is fed, nor the inputs saved as the run's artifact. A copy
    keeps each input's shape and strides (``same_layout``), so a non-contiguous input, dense or
    not, stays non-contiguous.
    """
    return {k: same_layout(v, v.device, dtype if v.is_floating_point() else None) for k, v in inputs.items()}


def to_device(inputs: dict[str, torch.Tensor], device: torch.device) -> dict[str, torch.Tensor]:
    """Each input on ``device`` with the host view's shape and strides (see ``same_layout``).

    A backend that cannot copy into a strided tensor gets a plain ``Tensor.to`` instead; the
    layout the model then receives is recorded at its call boundary, so the cell reads
    "layout not achieved" rather than failing or claiming the planned layout.
    """
    moved = {}
    for name, tensor in inputs.items():
        if tensor.device == torch.device(device):
            moved[name] = tensor
            continue
        try:
            moved[name] = same_layout(tensor, device)
        except (RuntimeError, NotImplementedError):
            moved[name] = tensor.to(device)
    return moved


def tensor_layout(name: str, tensor: torch.Tensor) -> dict[str, Any]:
    """dtype, shape, strides, contiguity and device of one tensor, as the log records them."""
    nonfinite = int((~torch.isfinite(tensor)).sum().item()) if tensor.is_floating_point() or tensor.is_complex() else 0
    return {
        "name": name,
        "dtype": str(tensor.dtype).removeprefix("torch."),
        "shape": list(tensor.shape),
        "nonfinite": nonfinite,
        "strides": list(tensor.stride()),
        "contiguous": bool(tensor.is_contiguous()),
        "device": str(tensor.device),
    }


def layout_of(fed: list[dict[str, Any]]) -> str:
    """'noncontiguous' when any tensor fed is non-contiguous, else 'contiguous'."""
    return "noncontiguous" if any(not t["contiguous"] for t in fed) else "contiguous"


class FedInputs:
    """Records the tensors a model really receives, at its call boundary (a forward pre-hook).

    The hook is on the module the workload calls (the eager model or the compiled wrapper), so
    it sees the arguments after the workload's ``run_model`` and before any compiled code. It
    records one call after each ``arm()`` and costs a counter check on every other call.
    """

    def __init__(self, module: torch.nn.Module) -> None:
        inner = getattr(module, "_orig_mod", module)
        try:
            self.signature: inspect.Signature | None = inspect.signature(inner.forward)
        except (TypeError, ValueError):
            self.signature = None
        self.calls: list[list[dict[str, Any]]] = []
        self._armed = 0
        # Setting the dispatch modes aside costs most of a millisecond the first time in a process
        # (0.85 ms, against a 0.4 ms first eager call of the tiny encoder): paid here, not inside
        # the timed first call the hook sees.
        with _disable_current_modes():
            pass
        self._handle = module.register_forward_pre_hook(self._hook, with_kwargs=True)

    def arm(self, calls: int = 1) -> None:
        self._armed = calls

    def _hook(self, module: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if self._armed <= 0:
            return
        self._armed -= 1
        named: list[tuple[str, Any]] = []
        try:
            bound = self.signature.bind(*args, **kwargs) if self.signature is not None else None
        except TypeError:
            bound = None
        if bound is not None:
            named = list(bound.arguments.items())
        else:
            named = [(f"arg{i}", a) for i, a in enumerate(args)] + list(kwargs.items())
        tensors = [(n, v) for n, v in named if isinstance(v, torch.Tensor)]
        if not any(v.is_floating_point() or v.is_complex() for _, v in tensors):
            # Integer and boolean tensors: their layout is metadata, read with no op dispatched.
            self.calls.append([tensor_layout(n, v) for n, v in tensors])
            return
        # Counting a tensor's non-finite elements dispatches ops of its own: with the dispatch
        # modes set aside (the eager op recording, OpRecorder), so that they are not recorded as
        # the model's operators. (Neuron's op tracking is its runtime's own and not set aside:
        # see collector/README.md.)
        with _disable_current_modes():
            self.calls.append([tensor_layout(n, v) for n, v in tensors])

    def take(self) -> list[dict[str, Any]] | None:
        """The tensors of the last recorded call (None when no call was recorded); clears."""
        last = self.calls[-1] if self.calls else None
        self.calls = []
        return last

    def remove(self) -> None:
        self._handle.remove()


def input_key(batch: int, length: int, layout: str) -> str:
    return f"b{batch}-l{length}-{layout}"


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def save_artifact(obj: Any, path: Path) -> tuple[int, str]:
    """Saved through a file the collector opened, so a full disk is told apart (``OutOfSpace``)
    and a partly written file is removed."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as handle:
            torch.save(obj, handle)
    except (OSError, RuntimeError) as exc:
        with contextlib.suppress(OSError):
            path.unlink()
        if is_out_of_space(exc):
            raise OutOfSpace(path, exc) from exc
        raise
    return path.stat().st_size, sha256_file(path)


def load_artifact(path: str | os.PathLike[str]) -> Any:
    return torch.load(path, map_location="cpu", weights_only=True)


def saved_model(workload: ModuleType, run_dir: str | Path, content: str = "") -> torch.nn.Module:
    """The model a fresh child process runs: the weights the main run saved in ``run_dir``, or,
    for a workload with a shipped ``weights_file``, what its build_model loads from that file.
    ``content`` is the content sha256 of the model the run built, its weights and non-persistent
    buffers (collector/content.py, model_tensors; empty when its weights' is unknown): a model that hashes otherwise (the shipped file changed during the
    run, or a build_model that builds another model in each process) stops this process with
    the reason, and its cells are checked in the collector's process instead."""
    model = build_model(workload)
    if not hasattr(workload, "weights_file"):
        model.load_state_dict(load_artifact(Path(run_dir) / "artifacts" / "weights.pt"))
    if content:
        from collector.content import UNHASHABLE, content_sha256, model_tensors

        try:
            built = content_sha256(model_tensors(model))
        except UNHASHABLE as exc:  # the run hashed it: the same model cannot fail
            raise SystemExit(f"the weights this process built cannot be hashed ({exc}); it does not run its cells")
        if built != content:
            raise SystemExit(
                f"the model this process built (its weights and buffers, content sha256 {built[:12]}...) is not the "
                f"run's ({content[:12]}...): a shipped weights file changed since the run began, or build_model() "
                "builds another model in each process (an unseeded parameter or buffer); this process does not run its cells"
            )
    return model
