"""The run folder, ``run_start``, ``environment``, the ``plan`` and the weights artifact."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch

from collector import __version__, lifeline, training, workload_reads
from collector.content import RECIPE, UNHASHABLE, content_by_key, content_sha256, model_tensors
from collector.environment import read_environment
from collector.facts import scheduled_task
from collector.eventlog import EventLog, utc_now
from collector.localimports import imports_digest, workload_imports
from collector.plan import NO_MODEL_REVISION
from collector.planschema import TARGET_RULES_PATH
from collector.provenance import provenance
from collector.run.state import Run
from collector.workload import build_model, check_task_metric, load_workload, save_artifact, sha256_file


def start(run: Run) -> None:
    (run.dir / "artifacts").mkdir(parents=True)
    (run.dir / "traces").mkdir()
    run.log = EventLog(run.dir / "events.jsonl")
    # The local files the workload module imports, read from its source (it is loaded later):
    # hashed in run_start, and a fresh child refuses to run when they changed since.
    imports = workload_imports(run.plan.module_path)
    run.imports_sha256 = imports_digest(imports)
    facts = provenance(_files_read(run), imports)
    run.hashed_files = [Path(entry["path"]) for entry in facts["files"]]
    for entry in facts["files"]:
        if entry["role"] == "plan":
            # The plan text this run read (before this), not the file as it is now.
            entry.pop("unknown_reason", None)
            entry["sha256"] = run.plan.text_sha256
        elif entry["role"] == "workload_module" and entry.get("sha256"):
            # The module is loaded later: only these bytes load (an edit in between is refused).
            run.module_sha256 = entry["sha256"]
    run.log.write(
        "run_start",
        run_id=run.run_id,
        collector=f"collector {__version__}",
        workload=run.plan.name,
        target=run.backend.name,
        command=run.options.command,
        started_at=utc_now(),
        origin="measured",
        target_choice=run.options.target_choice,
        provenance=facts,
        scheduled=scheduled_task(os.environ),
    )
    run.log.write(
        "environment",
        **read_environment(torch, run.backend.name),
        backend_settings=run.backend.settings(),
    )
    # Compiles in this process write to a cache dir the collector made empty, and what they
    # keep below the temp dir (Inductor's precompiled headers, about 150 MB on the CPU, and the
    # compiler's own temporary files) goes to a temp dir of this process's, as each fresh
    # process's goes to its own (supervise.run_child): nothing is left outside --out once the
    # process ends, and no earlier process's headers speed up this run's compiles. The run puts
    # the variables back as it found them when it ends (restore_environment).
    temp = lifeline.process_temp()
    cache_env = {**run.backend.cache_env(run.cache_dir), "TMPDIR": str(temp)}
    run.environ_before = {name: os.environ.get(name) for name in cache_env}
    run.tempdir_before = tempfile.tempdir
    os.environ.update(cache_env)
    tempfile.tempdir = str(temp)  # Python read TMPDIR once already


def restore_environment(run: Run) -> None:
    """Put back the variables and the temp dir start() pointed at the run's folders: a caller
    that goes on in this process (a test, a library user) compiles into a cache of its own
    again, not into a folder it would make anew after the run removed it."""
    if not run.environ_before:
        return
    for name, value in run.environ_before.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    tempfile.tempdir = run.tempdir_before
    run.environ_before = {}


def _files_read(run: Run) -> list[tuple[str, Path]]:
    """The files whose content decides what this run does, besides the collector's own code."""
    adapter = getattr(sys.modules.get(type(run.backend).__module__), "__file__", None)
    files = [
        ("plan", run.plan.path),
        ("workload_module", run.plan.module_path),
        ("constraint_rules", TARGET_RULES_PATH),
    ]
    if adapter:
        files.append(("backend_adapter", Path(adapter).resolve()))
    files.append(("backend_descriptor", type(run.backend).descriptor.path))
    return files


def write_plan(run: Run) -> None:
    run.module_sha256 = run.module_sha256 or sha256_file(run.plan.module_path)
    workload_reads.start()  # until write_workload_reads: the module's load, build_model, make_inputs, the reference
    run.workload = load_workload(run.plan, run.imports_sha256, run.module_sha256)
    check_task_metric(run.workload, run.plan.tolerances)
    in_training: list[str] = []
    run.model = build_model(run.workload, in_training)
    weights_path, size, digest = _record_weights(run)
    content = content_fields(run.model.state_dict())
    # What a fresh process must build again: these weights and the buffers kept out of them.
    run.weights_content = (
        content_fields(model_tensors(run.model)).get("content_sha256", "") if "content_sha256" in content else ""
    )
    plan = run.plan
    run.log.write(
        "plan",
        **plan.event_fields(plan.cells, run.warm_repetitions),
        model_revision=getattr(run.workload, "MODEL_REVISION", NO_MODEL_REVISION),
        weights_origin=getattr(run.workload, "WEIGHTS_ORIGIN", None),  # checked when the module loaded
        weights_sha256=digest,
        weights_content_sha256=content.get("content_sha256"),
        target=run.backend.name,
        # --only/--modes choose which cells run; the matrix above lists every planned cell.
        selection={"only": run.options.only, "modes": run.options.modes, "cases": [c.case for c in run.cells]}
        if run.options.only or run.options.modes
        else None,
        attention_path=getattr(run.workload, "ATTENTION_PATH", None),
        training=_training_plan(run),
        compare=_compare_rules(run),
    )
    run.log.write("artifact", role="weights", path=weights_path, bytes=size, sha256=digest, **content)
    if in_training:
        shown = ", ".join(in_training[:5]) + (f" and {len(in_training) - 5} more" if len(in_training) > 5 else "")
        run.log.write(
            "warning",
            category="EvalModeSet",
            message=(
                f"build_model() returned {len(in_training)} module(s) in training mode ({shown}); the collector "
                "put the model in eval mode, as it runs every model: the outputs judged are its eval-mode "
                "outputs, not those of the mode it was built in"
            ),
        )


def content_fields(obj: Any, by_key: bool = False) -> dict[str, Any]:
    """The artifact's content hash (collector/content.py), or why it is unknown; with
    ``by_key``, one hash per top-level key as well (inputs and references, per input shape)."""
    try:
        fields: dict[str, Any] = {"content_sha256": content_sha256(obj), "content_recipe": RECIPE}
        if by_key:
            fields["content_by_key"] = content_by_key(obj)
        return fields
    except UNHASHABLE as exc:
        return {"content_unknown_reason": f"{type(exc).__name__}: {exc}"[:500]}


def _compare_rules(run: Run) -> dict[str, Any] | None:
    """The plan's comparison rules, as judged: parameter groups with their learning rate read from the optimizer."""
    rules = run.plan.compare
    if not rules["outputs"] and not rules["params"]:
        return None
    if rules["params"]:
        rules["params"] = training.resolve_param_rules(rules["params"], run.workload, run.model)
    return {"outputs": rules["outputs"], "params": rules["params"]}


def write_backend_log(run: Run) -> None:
    """The backend's own log channel (neuron: [Neuron]), copied into the run, its warnings listed."""
    found = run.backend.collect_log(run.dir)
    if found is None or not run.has_log:
        return
    path, warnings = found
    run.log.write(
        "artifact",
        role="other",
        path=str(path.relative_to(run.dir)),
        bytes=path.stat().st_size,
        sha256=sha256_file(path),
    )
    for line in warnings[:200]:
        run.log.write("warning", message=line, category="NeuronLog")
    if len(warnings) > 200:
        run.log.write(
            "warning",
            message=f"{len(warnings) - 200} more warning lines in {path.relative_to(run.dir)}",
            category="NeuronLog",
        )


def _training_plan(run: Run) -> dict[str, Any] | None:
    if not run.plan.training:
        return None
    return {**run.plan.training, "optimizer": getattr(run.workload, "OPTIMIZER", "as built by make_optimizer")}


def _record_weights(run: Run) -> tuple[str, int, str]:
    """Weights shipped as a file (a packaged model) are checksummed where they lie, not copied."""
    shipped = getattr(run.workload, "weights_file", None)
    if shipped is not None:
        path = Path(shipped())
        return f"external:{path}", path.stat().st_size, sha256_file(path)
    size, digest = save_artifact(run.model.state_dict(), run.dir / "artifacts" / "weights.pt")
    return "artifacts/weights.pt", size, digest


def write_workload_reads(run: Run) -> None:
    """The files the workload read and the packages it imported while it loaded and built its
    model and inputs (collector/workload_reads.py), beyond the files run_start hashed."""
    shipped = getattr(run.workload, "weights_file", None)
    known = [*run.hashed_files, *([Path(shipped())] if shipped is not None else [])]
    fields = workload_reads.stop(known, [run.dir, run.cache_dir, lifeline.process_temp()])
    if fields is not None:
        run.log.write("workload_reads", **fields)
