"""python -m collector inspect --workload PLAN.toml [--out FILE]

Looks at a workload before any hardware: on this machine's CPU, for each planned input shape
(batch, length, layout), it builds the model and the inputs as the plan's workload module makes
them and captures the graph without running it on a device. It logs, per shape, the aten
operators with their counts (``torch.export``, non-strict, ATen before decompositions), the
graph breaks with their reasons (``torch._dynamo.explain``), float64 tensors (parameters,
buffers, inputs, constants and values the graph computes), int64 tensors holding a value
outside the int32 range, and the inputs' layouts. ``reportgen plan-check PLAN --inspection FILE``
joins the log with the target's constraint data; everything it says from it is a prediction
from the graph, not a measurement on the device.

The log is JSON lines: inspection_start, one inspection per shape, inspection_end
(reportgen/contract/schema/EVENTS.md). Exit codes: 0 every shape inspected (a graph that could
not be captured is recorded, not an error), 1 internal error, 2 usage or plan error, 3 torch
cannot be imported (a backend module it autoloads is broken).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import os
import shutil
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from collector.arguments import Parser, path_argument

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
LISTED = 100  # wide tensors listed per kind and shape; a model with more says so by count
MESSAGE_CHARS = 500
# Nodes torch.export adds to check its own assumptions: not the model's computation.
EXPORT_CHECKS = ("aten::_assert", "aten::sym_constrain_range")


class _Parser(Parser):
    def error(self, message: str) -> None:  # type: ignore[override]
        print(
            f"collector inspect: {self.with_unrecognized(message)} (see python -m collector inspect --help)",
            file=sys.stderr,
        )
        raise SystemExit(2)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = _Parser(
        prog="python -m collector inspect",
        allow_abbrev=False,
        description="Capture each planned shape's graph on this CPU (no device) and log its operators, graph breaks, "
        "float64 and out-of-int32 int64 tensors and input layouts, for reportgen plan-check --inspection.",
        epilog="exit codes:\n"
        "  0    written; its path on stdout\n"
        "  2    nothing written: a plan or workload error, a generation plan, an existing --out or a missing\n"
        "       folder, or a workload that cannot be loaded or captured\n"
        "  3    nothing written: torch cannot be imported (a backend module it autoloads is broken)\n"
        "  4    nothing written: out of space\n"
        "  130  interrupted (SIGINT), 143 terminated (SIGTERM), 129 hung up: the partial file is removed\n"
        "\nexample:\n  python -m collector inspect --workload collector/workloads/tiny_encoder.toml --out tiny.inspection.jsonl\n"
        "  reportgen plan-check collector/workloads/tiny_encoder.toml --inspection tiny.inspection.jsonl --target neuron",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--workload", required=True, type=path_argument, help="the workload plan (TOML)")
    parser.add_argument(
        "--out",
        type=path_argument,
        help="the inspection log to write (default: <workload name>.inspection.jsonl here); an existing file is refused",
    )
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    from collector.first_import import torch_import_problem
    from collector.visible import visible

    problem = torch_import_problem()  # collector.workload imports torch
    if problem:
        print(f"collector inspect: {visible(problem, keep='')}", file=sys.stderr)
        return 3
    from collector.plan import PlanError, file_stem, load_plan
    from collector.workload import WorkloadError, check_source

    try:
        plan = load_plan(args.workload)
        check_source(plan.module_path)
    except (PlanError, WorkloadError) as exc:
        print(f"collector inspect: plan error: {exc}", file=sys.stderr)
        return 2
    if plan.generation:
        # What it would capture (run_model's forward at each planned length, unpadded) is no graph
        # the service runs: not its prefill at a bucket, not its decode step on the static cache.
        print(
            "collector inspect: a generation plan's graphs (prefill at each bucket, the decode step on the static KV "
            "cache) are not what inspect captures (one forward of run_model at each planned length); review the "
            "plan with `reportgen plan-check PLAN` alone (nothing was written)",
            file=sys.stderr,
        )
        return 2
    # The workload's name is the plan's text: only a plain file name is made of it, here.
    out = args.out or Path(file_stem(plan.name) + ".inspection.jsonl")
    from collector.__main__ import inside_collector

    try:
        if out.exists() or out.is_symlink():
            print(f"collector inspect: --out {out} exists; give a new file name (nothing was written)", file=sys.stderr)
            return 2
        if not out.parent.is_dir():
            print(f"collector inspect: --out {out}: the folder {out.parent} does not exist", file=sys.stderr)
            return 2
    except OSError as exc:  # a name longer than the file system allows (Path.exists raises on 3.11)
        print(f"collector inspect: --out {out}: {exc.strerror or exc} (nothing was written)", file=sys.stderr)
        return 2
    if inside_collector(out):  # a run would hash it as one of the collector's own files
        print(
            f"collector inspect: --out {out} is inside the collector's own folder; choose a file outside it",
            file=sys.stderr,
        )
        return 2
    from collector.workload import WorkloadError as LoadError

    from collector import interrupt

    from collector.eventlog import EXIT_OUT_OF_SPACE, OutOfSpace

    previous = interrupt.install()  # a signal now unwinds (the partial file is removed), then exits
    # Inductor's cache, which a capture does not need, in a folder of this command's own: a
    # TORCHINDUCTOR_CACHE_DIR naming a file or a folder that cannot be made stopped torch._dynamo's
    # import with an assertion, and no earlier cache is read or written.
    saved = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    scratch: Path | None = None
    try:
        scratch = Path(tempfile.mkdtemp(prefix="collector-inspect-"))
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(scratch / "inductor")
        inspect_plan(plan, out)
    except (LoadError, OutputError) as exc:
        print(f"collector inspect: {exc}", file=sys.stderr)
        return 2
    except interrupt.Aborted as exc:
        print(f"collector inspect: interrupted ({exc}); nothing was written", file=sys.stderr)
        return interrupt.EXIT_ABORTED[exc.signum]
    except OutOfSpace as exc:
        print(f"collector inspect: out of space: {exc}; nothing was written", file=sys.stderr)
        return EXIT_OUT_OF_SPACE
    except OSError as exc:  # a folder that cannot be written (read-only), a temp dir that cannot be made
        where = f" {exc.filename}" if exc.filename else ""
        print(f"collector inspect: cannot write{where}: {exc.strerror or exc}; nothing was written", file=sys.stderr)
        return 2
    finally:
        if saved is None:
            os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
        else:
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = saved
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
        interrupt.restore(previous)
    print(out)
    return 0


class OutputError(Exception):
    """The finished inspection could not be given its file name."""


def shapes_of(plan: Any) -> list[tuple[int, int, str]]:
    """The planned input shapes, each once, in plan order."""
    return list(dict.fromkeys((c.batch, c.length, c.layout) for c in plan.cells))


def inspect_plan(plan: Any, out: Path) -> None:
    import torch

    from collector import __version__
    from collector.eventlog import EventLog
    from collector.workload import DTYPES, build_model, load_workload

    workload = load_workload(plan)
    # The model and its floating inputs in a dtype the plan's cells run in, as the run casts them
    # (cells.py, cast_inputs): float64 where a cell runs in it, else the plan's first. A
    # make_inputs that returns float64, or a float64 parameter, in a float32-only plan is no
    # float64 the device ever computes (it read as such, and plan-check asked for a revision).
    dtypes = list(dict.fromkeys(c.dtype for c in plan.cells))
    dtype = DTYPES["float64" if "float64" in dtypes else dtypes[0]] if dtypes else None
    model = build_model(workload)
    if dtype is not None:
        model = model.to(dtype=dtype)
    shapes = shapes_of(plan)
    # Written beside --out under another name and given its name only once whole: an inspection
    # interrupted (Ctrl-C) or failed part-way leaves nothing that plan-check would read as one.
    # A new file of an unpredictable name, made exclusively (no link or earlier file of that
    # name is written through or appended to).
    handle, name = tempfile.mkstemp(prefix=f".{out.name}.partial-", dir=out.parent)
    os.close(handle)
    partial = Path(name)
    log = EventLog(partial)
    try:
        log.write(
            "inspection_start",
            workload=plan.name,
            plan=str(plan.path.name),
            plan_sha256=plan.text_sha256,
            collector=f"collector {__version__}",
            torch=torch.__version__,
            host="cpu (no device: nothing here is measured on the target)",
        )
        done = 0
        for index, (batch, length, layout) in enumerate(shapes, start=1):
            print(
                f"collector inspect [{index}/{len(shapes)}] b{batch}-l{length}-{layout}: capturing",
                file=sys.stderr,
                flush=True,
            )
            log.write("inspection", **inspect_shape(workload, model, batch, length, layout, dtype))
            done += 1
        log.write("inspection_end", shapes_planned=len(shapes), shapes_inspected=done)
        log.close()
        try:
            os.link(partial, out)  # no file of that name made meanwhile is replaced
        except FileExistsError:
            raise OutputError(f"--out {out}: made by something else while inspecting; nothing was written") from None
        except OSError as exc:  # a file system without hard links: a rename, if the name is still free
            if out.exists() or out.is_symlink():
                raise OutputError(
                    f"--out {out}: cannot be written ({exc.strerror or exc}); nothing was written"
                ) from None
            os.replace(partial, out)
    finally:
        log.close()
        partial.unlink(missing_ok=True)


def inspect_shape(workload: Any, model: Any, batch: int, length: int, layout: str, dtype: Any = None) -> dict[str, Any]:
    """One shape's graph facts; ``dtype``: the floating dtype its inputs are cast to, as a cell's
    are (None: as make_inputs returns them)."""
    import torch

    from collector.compare import describe_input
    from collector.workload import cast_inputs, check_inputs

    fields: dict[str, Any] = {
        "shape": f"b{batch}-l{length}-{layout}",
        "batch": batch,
        "length": length,
        "layout": layout,
    }
    fields["capture"] = "torch.export (non-strict), ATen before decompositions"
    try:
        inputs = check_inputs(workload, workload.make_inputs(batch, length, layout))
        if dtype is not None:
            inputs = cast_inputs(inputs, dtype)
    except Exception as exc:  # this shape has nothing to capture; the others go on
        fields["capture_failure"] = f"make_inputs raised {_short(exc)}"
        fields["breaks_failure"] = "no inputs"
        return fields
    fields["inputs"] = [describe_input(name, tensor) for name, tensor in inputs.items()]
    wide_floats, wide_ints = _tensors(model, inputs)
    try:
        with _quiet_shapes():
            program = _export(workload, model, inputs)
        ops, graph_floats, graph_ints, constants = _graph_facts(program)
        fields["operators"] = [{"name": name, "count": count} for name, count in sorted(ops.items())]
        wide_floats += graph_floats
        more_floats, more_ints = constants
        wide_floats += more_floats
        wide_ints += more_ints
        fields["int64_graph_values"] = graph_ints
    except Exception as exc:  # recorded: plan-check says the graph was not captured
        fields["capture_failure"] = _short(exc)
    try:
        torch._dynamo.reset()
        explained = torch._dynamo.explain(lambda feed: workload.run_model(model, feed))(inputs)
        fields["graph_count"] = int(explained.graph_count)
        reasons = Counter(_short(getattr(r, "reason", r)) for r in explained.break_reasons)
        fields["graph_breaks"] = [{"reason": reason, "count": count} for reason, count in reasons.items()]
    except Exception as exc:
        fields["breaks_failure"] = _short(exc)
    finally:
        torch._dynamo.reset()
    fields["float64"] = wide_floats[:LISTED]
    fields["int64_beyond_int32"] = wide_ints[:LISTED]
    return fields


@contextlib.contextmanager
def _quiet_shapes() -> Iterator[None]:
    """An export that fails on a data-dependent value prints its partial graph to stderr (about
    50 lines a shape), after torch's symbolic-shapes logger warns of it; the failure itself is
    recorded (capture_failure) with the graph's other facts, so both are held back while the
    graph is captured."""
    logger = logging.getLogger("torch.fx.experimental.symbolic_shapes")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            yield
    finally:
        logger.setLevel(level)


def _export(workload: Any, model: Any, inputs: dict[str, Any]) -> Any:
    import torch

    class Call(torch.nn.Module):
        """The workload's own call (run_model) as one module, so export sees what a cell runs."""

        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, **feed: Any) -> Any:
            return workload.run_model(self.model, feed)

    with torch.no_grad():
        return torch.export.export(Call(), (), kwargs=dict(inputs), strict=False)


def _op_name(target: Any) -> str | None:
    import torch

    if isinstance(target, torch._ops.OpOverload):
        return str(target._schema.name)
    if isinstance(target, torch._ops.HigherOrderOperator):
        return str(target.name())
    return None


def _graph_facts(
    program: Any,
) -> tuple[Counter[str], list[dict[str, Any]], int, tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
    """Operator counts, float64 values the graph computes (one entry per operator), the count
    of int64 values it computes, and the wide constants it holds."""
    import torch

    ops: Counter[str] = Counter()
    float64_by_op: Counter[str] = Counter()
    int64_values = 0
    for node in program.graph.nodes:
        if node.op != "call_function":
            continue
        name = _op_name(node.target)
        if name is None or name.startswith(EXPORT_CHECKS):
            continue
        ops[name] += 1
        for value in _values(node.meta.get("val")):
            if value.dtype == torch.float64:
                float64_by_op[name] += 1
            elif value.dtype == torch.int64:
                int64_values += 1
    graph = [
        {"where": "graph", "name": f"{count} value(s) computed by {op}", "dtype": "float64"}
        for op, count in sorted(float64_by_op.items())
    ]
    floats, ints = [], []
    for name, value in getattr(program, "constants", {}).items():
        if isinstance(value, torch.Tensor):
            floats += _wide_float("constant", name, value)
            ints += _wide_int("constant", name, value)
    return ops, graph, int64_values, (floats, ints)


def _values(value: Any) -> list[Any]:
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [v for item in value for v in _values(item)]
    return []


def _tensors(model: Any, inputs: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    floats: list[dict[str, Any]] = []
    ints: list[dict[str, Any]] = []
    for where, named in (
        ("parameter", model.named_parameters()),
        ("buffer", model.named_buffers()),
        ("input", inputs.items()),
    ):
        for name, tensor in named:
            floats += _wide_float(where, name, tensor)
            ints += _wide_int(where, name, tensor)
    return floats, ints


def _wide_float(where: str, name: str, tensor: Any) -> list[dict[str, Any]]:
    import torch

    if tensor.dtype != torch.float64:
        return []
    return [{"where": where, "name": name, "dtype": "float64", "shape": list(tensor.shape)}]


def _wide_int(where: str, name: str, tensor: Any) -> list[dict[str, Any]]:
    import torch

    if tensor.dtype != torch.int64 or tensor.numel() == 0:
        return []
    low, high = int(tensor.min().item()), int(tensor.max().item())
    if INT32_MIN <= low and high <= INT32_MAX:
        return []
    return [
        {
            "where": where,
            "name": name,
            "dtype": "int64",
            "shape": list(tensor.shape),
            "min": float(low),
            "max": float(high),
        }
    ]


def _short(value: Any) -> str:
    text = f"{type(value).__name__}: {value}" if isinstance(value, BaseException) else str(value)
    text = " ".join(text.split())
    return text[:MESSAGE_CHARS]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
