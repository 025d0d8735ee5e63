"""python -m collector --workload PLAN.toml --target {auto,cpu,cuda,neuron} --out RUNS_DIR"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

EPILOG = """\
exit codes:
  0    the run completed (cells may still have failed: the report judges them)
  1    the collector itself failed; the log ends with an aborted run_end
  2    usage error or a plan that cannot run (the message says what to change)
  3    the target backend is not available on this host
  130  interrupted (SIGINT), 143 terminated (SIGTERM): the log ends with an aborted run_end

examples:
  python -m collector --workload collector/workloads/tiny_encoder.toml --target cpu --out runs
  python -m collector --workload plan.toml --target neuron --out runs --only 'b1-*' --profile
"""


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m collector",
        description="Run a workload plan on one target and write RUNS_DIR/<run-id>/events.jsonl "
        "with artifacts/ and traces/ beside it. Progress goes to stderr.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--workload", required=True, type=Path, help="the workload plan (TOML)")
    parser.add_argument("--target", default="auto", choices=["auto", "cpu", "cuda", "neuron"], help="device to run on (default: auto = the plan's target, which must be available; for a plan without one: neuron, else cuda, else cpu). A target other than the plan's runs, but its report says it is not evidence for the plan's target")
    parser.add_argument("--out", default=Path("runs"), type=Path, help="directory that receives the run directory (default: runs)")
    parser.add_argument("--only", action="append", default=[], metavar="GLOB", help="run only cells whose case key matches (repeatable), e.g. 'b1-*-eager'")
    parser.add_argument("--modes", help="comma-separated subset of eager,compiled")
    parser.add_argument("--warm", type=int, metavar="N", help="warm repetitions (default: the plan's, else 30)")
    parser.add_argument("--cold", default="fresh-process", choices=["fresh-process", "in-process", "off"],
                        help="how the cold first call is measured (default fresh-process: new interpreter, empty cache dirs)")
    parser.add_argument("--cold-timeout", type=float, default=1800.0, metavar="S", help="limit for one cold-start process (default 1800)")
    parser.add_argument("--profile", nargs="?", const="*", metavar="GLOB", help="write a profiler trace per shape under traces/; with GLOB, only for the cells it matches")
    parser.add_argument("--list", action="store_true", help="print the planned cells and exit")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    from collector.plan import PlanError, load_plan

    try:
        plan = load_plan(args.workload)
    except PlanError as exc:
        print(f"collector: plan error: {exc}", file=sys.stderr)
        return 2
    modes = [m.strip() for m in args.modes.split(",")] if args.modes else []
    if any(m not in ("eager", "compiled") for m in modes):
        print("collector: --modes takes eager and/or compiled", file=sys.stderr)
        return 2
    if args.warm is not None and args.warm < 1:
        print(f"collector: --warm takes a count of at least 1, got {args.warm}", file=sys.stderr)
        return 2
    from collector.plan import refused_on

    if args.target != "auto":  # refused before the backend is even probed
        refusal = refused_on(plan, args.target)
        if refusal:
            print(f"collector: plan error: {refusal}", file=sys.stderr)
            return 2
    if args.list:
        for cell in plan.cells:
            print(cell.case)
        return 0
    auto_neuron = args.target == "auto" and plan.intended_target in (None, "neuron") and importlib.util.find_spec("torch_neuronx") is not None
    if args.target == "neuron" or auto_neuron:
        # Before torch is imported: torch autoloads torch_neuronx, which may read them at import.
        from collector import neuronenv

        neuronenv.apply()
    from collector.timing import scope_problem

    problem = scope_problem(plan.timing_scope, bool(plan.training))
    if problem:
        print(f"collector: plan error: {problem}", file=sys.stderr)
        return 2
    if args.only or modes:
        from collector.run.state import select_cells

        if not select_cells(plan.cells, list(args.only), modes):
            asked = " ".join([*(f"--only {g!r}" for g in args.only), *([f"--modes {args.modes}"] if modes else [])])
            print(f"collector: {asked} matches none of the {len(plan.cells)} planned cells (python -m collector --workload {args.workload} --list shows them)", file=sys.stderr)
            return 2
    from collector.preflight import check_rules
    from collector.workload import WorkloadError

    try:
        check_rules(plan)
    except (PlanError, WorkloadError) as exc:
        print(f"collector: plan error: {exc}", file=sys.stderr)
        return 2
    from collector.backends import BackendUnavailable, resolve_target
    from collector.runner import Options, execute

    try:
        backend, choice = resolve_target(args.target, plan.intended_target)
    except BackendUnavailable as exc:
        print(f"collector: {exc}", file=sys.stderr)
        return 3
    refusal = refused_on(plan, backend.name)
    if refusal:
        print(f"collector: plan error: {refusal}", file=sys.stderr)
        return 2
    print(f"collector: target {choice['resolved']}: {choice['reason']}", file=sys.stderr)
    options = Options(
        target=args.target,
        out_dir=args.out,
        only=list(args.only),
        modes=modes,
        cold=args.cold,
        warm_repetitions=args.warm,
        profile=args.profile,
        cold_timeout=args.cold_timeout,
        command=[sys.executable, "-m", "collector", *argv],
        target_choice=choice,
    )
    run_dir, code = execute(plan, backend, options)
    print(run_dir)
    return code


if __name__ == "__main__":
    sys.exit(main())
