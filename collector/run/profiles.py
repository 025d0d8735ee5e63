"""One profiler trace per shape for the passing cells ``--profile`` chose."""

from __future__ import annotations

import fnmatch

from collector import interrupt
from collector.eventlog import OutOfSpace, is_out_of_space
from collector.plan import Cell
from collector.run.capture import message_of
from collector.run.state import Run
from collector.workload import sha256_file


def write_profiles(run: Run) -> None:
    if not run.options.profile:
        return
    chosen: dict[str, Cell] = {}
    for cell in run.cells:
        if cell.shape_key in run.profiled_shapes:  # a fresh child profiled its compiled cell
            continue
        if cell.case in run.passed and not cell.repeat_of and fnmatch.fnmatch(cell.case, run.options.profile):
            if cell.shape_key not in chosen or cell.mode == "compiled":
                chosen[cell.shape_key] = cell
    for cell in chosen.values():
        run.progress.say(f"{cell.case}: profiling")
        call = run.passed[cell.case].call
        assert call is not None, "run.passed holds only cells with a call to time"
        try:
            with run.backend.profile(run.dir / "traces", cell.case) as found:
                for _ in range(3):
                    call()
                run.backend.synchronize()
        except interrupt.ENDS_RUN:
            raise
        except BaseException as exc:
            interrupt.check()
            if is_out_of_space(exc):
                raise OutOfSpace(run.dir / "traces", exc) from exc
            run.progress.say(f"{cell.case}: profile failed: {type(exc).__name__}: {message_of(exc, 200)}")
            run.log.write(
                "warning",
                message=f"profile not recorded: {type(exc).__name__}: {message_of(exc)}",
                category="ProfileFailed",
                case=cell.case,
            )
            continue
        traces = [
            {
                "path": str(path.relative_to(run.dir)),
                "kind": kind,
                "bytes": path.stat().st_size,
                "sha256": sha256_file(path),
            }
            for path, kind in found["traces"]
        ]
        run.log.write("profile", case=cell.case, profiler=found["profiler"], traces=traces, top_ops=found["top_ops"])
