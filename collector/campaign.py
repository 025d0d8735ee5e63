"""python -m collector.campaign CAMPAIGN.toml --scheduler {slurm,kubernetes}

Runs a campaign (workloads x environments x repeats) on a scheduler the site already has. It
brings no scheduler, queue or worker of its own: for Slurm it writes one ``sbatch`` job-array
script (and submits it unless ``--dry-run``); for Kubernetes it writes Indexed Job manifests
for ``kubectl apply``. Every task runs the collector exactly as a user would by hand, then
moves its run directory to the campaign's destination (a shared folder, or an ``s3://``
prefix through a separate upload step). Standard library only, like the rest of the collector.

The campaign file is described in docs/campaigns.md; every key is checked, unknown keys are
errors, and each message names the key.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from collector import planschema
from collector.visible import terminal

# The targets and each one's Kubernetes device resource, from their constraint files.
TARGETS = planschema.TARGETS
DEVICE_RESOURCES = {target: rules["device_resource"] for target, rules in planschema.TARGET_RULES.items() if rules.get("device_resource")}
UPLOADERS = ("reportgen", "aws")
# Also a valid Kubernetes label value: starts and ends with a letter or digit, at most 63.
_NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$")
_K8S_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,50}[a-z0-9])?$")
_SLURM_TIME = re.compile(r"^(\d+-)?\d+(:\d{2}){0,2}$", re.ASCII)  # ASCII digits: \d would take any script's
_SBATCH_OPTION = re.compile(r"^--[a-z][a-z-]*(=[^\s]+)?$")
# Collector options a campaign may not set per workload: the campaign decides them.
_RESERVED_ARGS = ("--workload", "--target", "--out", "--list")


class CampaignError(ValueError):
    """The campaign file cannot be used; the message names the key and what to change."""


@dataclass(frozen=True)
class Workload:
    plan: str
    args: tuple[str, ...]


@dataclass(frozen=True)
class Environment:
    name: str
    target: str
    python: str | None
    image: str | None
    devices: int
    node_selector: dict[str, str]
    sbatch: tuple[str, ...] = ()


@dataclass(frozen=True)
class Task:
    index: int
    workload: Workload
    environment: Environment
    repeat: int

    @property
    def label(self) -> str:
        return f"{PurePosixPath(self.workload.plan).stem}/{self.environment.name}/r{self.repeat}"


@dataclass
class Slurm:
    partition: str | None = None
    time: str = "02:00:00"
    exclusive: bool = True
    sbatch: tuple[str, ...] = ()
    collector_root: str | None = None
    scratch: str | None = None


@dataclass
class Kubernetes:
    namespace: str = "default"
    service_account: str | None = None
    volume_claim: str | None = None
    workdir: str = "/opt/migration-record"
    backoff_limit_per_index: int = 0


@dataclass
class Campaign:
    path: Path
    name: str
    destination: str
    repeats: int
    max_parallel: int | None
    upload: str
    reportgen_python: str | None
    workloads: list[Workload]
    environments: list[Environment]
    slurm: Slurm = field(default_factory=Slurm)
    kubernetes: Kubernetes = field(default_factory=Kubernetes)

    @property
    def remote(self) -> bool:
        return self.destination.startswith("s3://")

    def tasks(self, environments: list[Environment] | None = None) -> list[Task]:
        """One task per environment x workload x repeat, in that order (the array index), so
        each environment's tasks are one contiguous range of indexes."""
        envs = self.environments if environments is None else environments
        tasks = []
        for env in envs:
            for workload in self.workloads:
                for repeat in range(1, self.repeats + 1):
                    tasks.append(Task(len(tasks), workload, env, repeat))
        return tasks


# ---- reading the file -------------------------------------------------------------------


class _Table:
    """One TOML table read key by key; whatever is left unread at the end is an error."""

    def __init__(self, data: Any, where: str) -> None:
        if not isinstance(data, dict):
            raise CampaignError(f"{where}: expected a table, got {_kind(data)}")
        self.data = dict(data)
        self.where = where

    def _get(self, key: str, kinds: tuple[type, ...], name: str, default: Any, required: bool) -> Any:
        if key not in self.data:
            if required:
                raise CampaignError(f"{self.where}: missing '{key}'")
            return default
        value = self.data.pop(key)
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            raise CampaignError(f"{self.where}.{key}: expected {name}, got {_kind(value)}")
        return value

    def string(self, key: str, default: str | None = None, required: bool = False) -> Any:
        value = self._get(key, (str,), "a string", default, required)
        if isinstance(value, str) and (not value.strip() or "\n" in value or "\0" in value):
            raise CampaignError(f"{self.where}.{key}: expected a non-empty single-line string")
        return value

    def integer(self, key: str, default: int | None, minimum: int) -> Any:
        value = self._get(key, (int,), "an integer", default, False)
        if value is not None and value < minimum:
            raise CampaignError(f"{self.where}.{key}: must be at least {minimum}, got {value}")
        return value

    def boolean(self, key: str, default: bool) -> bool:
        return self._get(key, (bool,), "true or false", default, False)

    def strings(self, key: str) -> tuple[str, ...]:
        value = self._get(key, (list,), "a list of strings", [], False)
        for item in value:
            if not isinstance(item, str) or "\n" in item or "\0" in item:
                raise CampaignError(f"{self.where}.{key}: expected a list of single-line strings, found {item!r}")
        return tuple(value)

    def table(self, key: str) -> _Table:
        return _Table(self.data.pop(key, {}), f"{self.where}.{key}" if self.where else key)

    def tables(self, key: str) -> list[_Table]:
        value = self._get(key, (list,), f"[[{key}]] tables", [], False)
        return [_Table(item, f"{key}[{i}]") for i, item in enumerate(value)]

    def done(self) -> None:
        if self.data:
            known = f"{self.where}: " if self.where else ""
            raise CampaignError(f"{known}unknown key{'s' if len(self.data) > 1 else ''} {', '.join(sorted(map(repr, self.data)))}")


def _kind(value: Any) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "a list", dict: "a table"}.get(type(value), type(value).__name__)


def load_campaign(path: Path) -> Campaign:
    """Read and check a campaign file; raises CampaignError naming the first problem."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CampaignError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise CampaignError(f"{path}: not valid TOML: {exc}") from None
    try:
        return _parse(path, _Table(data, ""))
    except CampaignError as exc:
        raise CampaignError(f"{path}: {exc}") from None


def _parse(path: Path, root: _Table) -> Campaign:
    head = root.table("campaign")
    head.where = "campaign"
    name = head.string("name", required=True)
    if not _NAME.match(name):
        raise CampaignError("campaign.name: use letters, digits, '.', '_' and '-' (at most 63), starting and ending with a letter or digit")
    destination = head.string("destination", required=True)
    _check_destination(destination)
    repeats = head.integer("repeats", 1, 1)
    max_parallel = head.integer("max_parallel", None, 1)
    upload = head.string("upload", "reportgen")
    if upload not in UPLOADERS:
        raise CampaignError(f"campaign.upload: one of {', '.join(UPLOADERS)}, got {upload!r}")
    reportgen_python = head.string("reportgen_python")
    head.done()

    workloads = []
    for table in root.tables("workload"):
        plan = table.string("plan", required=True)
        args = table.strings("args")
        for arg in args:
            if arg.split("=", 1)[0] in _RESERVED_ARGS:
                raise CampaignError(f"{table.where}.args: {arg.split('=', 1)[0]} is set by the campaign, not per workload")
        table.done()
        workloads.append(Workload(plan, args))
    if not workloads:
        raise CampaignError("at least one [[workload]] with a plan is needed")

    environments = []
    for table in root.tables("environment"):
        env_name = table.string("name", required=True)
        if not _NAME.match(env_name):
            raise CampaignError(f"{table.where}.name: use letters, digits, '.', '_' and '-' (at most 63), starting and ending with a letter or digit, got {env_name!r}")
        target = table.string("target", required=True)
        if target not in TARGETS:
            raise CampaignError(f"{table.where}.target: one of {', '.join(TARGETS)}, got {target!r}")
        python = table.string("python")
        image = table.string("image")
        devices = table.integer("devices", 1, 1)
        selector = table.table("node_selector")
        node_selector = {key: selector.string(key, required=True) for key in list(selector.data)}
        env_sbatch = table.strings("sbatch")
        _check_sbatch(env_sbatch, f"{table.where}.sbatch")
        table.done()
        environments.append(Environment(env_name, target, python, image, devices, node_selector, env_sbatch))
    if not environments:
        raise CampaignError("at least one [[environment]] is needed")
    names = [e.name for e in environments]
    if len(set(names)) != len(names):
        raise CampaignError(f"environment names must be unique: {names}")

    s = root.table("slurm")
    slurm = Slurm(
        partition=s.string("partition"),
        time=s.string("time", "02:00:00"),
        exclusive=s.boolean("exclusive", True),
        sbatch=s.strings("sbatch"),
        collector_root=s.string("collector_root"),
        scratch=s.string("scratch"),
    )
    s.done()
    if not _SLURM_TIME.match(slurm.time):
        raise CampaignError(f"slurm.time: a Slurm time such as 02:00:00 or 1-00:00:00, got {slurm.time!r}")
    _check_sbatch(slurm.sbatch, "slurm.sbatch")
    if slurm.partition is not None and not re.match(r"^[A-Za-z0-9._,-]+$", slurm.partition):
        raise CampaignError(f"slurm.partition: partition names (comma-separated), got {slurm.partition!r}")

    k = root.table("kubernetes")
    kube = Kubernetes(
        namespace=k.string("namespace", "default"),
        service_account=k.string("service_account"),
        volume_claim=k.string("volume_claim"),
        workdir=k.string("workdir", "/opt/migration-record"),
        backoff_limit_per_index=k.integer("backoff_limit_per_index", 0, 0),
    )
    k.done()
    for where, folder in (("slurm.collector_root", slurm.collector_root), ("slurm.scratch", slurm.scratch), ("kubernetes.workdir", kube.workdir)):
        if folder is not None and not folder.startswith("/"):
            raise CampaignError(f"{where}: an absolute path, got {folder!r}")
    if not _K8S_NAME.match(kube.namespace):
        raise CampaignError(f"kubernetes.namespace: a DNS label (lower-case letters, digits, '-'), got {kube.namespace!r}")
    root.done()
    return Campaign(path.resolve(), name, destination.rstrip("/") if destination != "/" else destination, repeats, max_parallel, upload, reportgen_python, workloads, environments, slurm, kube)


def _check_sbatch(options: tuple[str, ...], where: str) -> None:
    for option in options:
        if not _SBATCH_OPTION.match(option) or option.startswith("--array"):
            raise CampaignError(f"{where}: each entry is one long option such as '--partition=trn1' (not --array), got {option!r}")


def _check_destination(destination: str) -> None:
    if destination.startswith("s3://"):
        bucket = destination[5:].split("/", 1)[0]
        if not re.match(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$", bucket):
            raise CampaignError(f"campaign.destination: {destination!r} has no valid bucket name")
    elif "://" in destination:
        raise CampaignError(f"campaign.destination: a folder or an s3:// prefix, got {destination!r}")
    elif not destination.startswith("/"):
        raise CampaignError(f"campaign.destination: a folder is an absolute path on a file system every node mounts, got {destination!r}")


# ---- Slurm ------------------------------------------------------------------------------

SLURM_TEMPLATE = """\
#!/bin/bash
# Campaign {name}: {count} task(s), one per workload x environment x repeat.
# Written by `python -m collector.campaign {campaign_file} --scheduler slurm`.
# Edit the #SBATCH lines to suit the cluster; each array task gets a whole node (--exclusive)
# so its timings are not shared with another job.
{submit_lines}
#SBATCH --job-name={name}
#SBATCH --array=0-{last}{throttle}
#SBATCH --nodes=1
#SBATCH --ntasks=1
#SBATCH --time={time}
#SBATCH --output={logs}/%x-%A_%a.out
{resources}
set -u

i=${{SLURM_ARRAY_TASK_ID:?run this script with sbatch}}
# One line per array index: what runs, with which interpreter, on which target, which options.
# (${{extra[@]+...}} below keeps an empty option list working under set -u in bash 4.2 too.)
case "$i" in
{cases}
*) echo "task $i: no such task in this campaign" >&2; exit 2 ;;
esac

DESTINATION={destination}
COLLECTOR_ROOT={collector_root}
scratch={scratch}/"{name}-${{SLURM_ARRAY_JOB_ID:-0}}-$i"
mkdir -p "$scratch"

# Slurm signals every process of the task at its time limit: the collector then writes an
# aborted run_end, and this script (which only notes the signal) still moves the partial run.
trap 'echo "task $i: terminated by the scheduler" >&2' TERM INT

echo "task $i: $label on $(hostname)" >&2
cd "$COLLECTOR_ROOT" && \\
PYTHONPATH="$COLLECTOR_ROOT${{PYTHONPATH:+:$PYTHONPATH}}" "$python" -m collector \\
    --workload "$plan" --target "$target" --out "$scratch" ${{extra[@]+"${{extra[@]}}"}}
rc=$?
echo "task $i: collector exited $rc" >&2

# Whatever the collector left (a complete run, or a partial log of a failed one) goes to the
# destination; reportgen reports a log without run_end as incomplete.
{deliver_runs}
rmdir "$scratch" 2>/dev/null || true
[ "$moved" -gt 0 ] || {{ echo "task $i: no run directory was written" >&2; [ "$rc" -ne 0 ] || rc=1; }}
exit "$rc"
"""

_DELIVER_FOLDER = """\
    mkdir -p "$DESTINATION" && mv "$run" "$DESTINATION/" && moved=$((moved + 1)) \\
        && echo "task $i: moved $(basename "$run") to $DESTINATION" >&2 \\
        || {{ echo "task $i: could not move $run to $DESTINATION (left in place)" >&2; rc=1; }}"""

_DELIVER_REPORTGEN = """\
    {reportgen} -m reportgen publish "$run" "$DESTINATION/$(basename "$run")" \\
        && rm -rf "$run" && moved=$((moved + 1)) \\
        || {{ echo "task $i: upload of $run to $DESTINATION failed (left in place)" >&2; rc=1; }}"""

_DELIVER_AWS = """\
    aws s3 cp --recursive --only-show-errors "$run" "$DESTINATION/$(basename "$run")/" \\
        && rm -rf "$run" && moved=$((moved + 1)) \\
        || {{ echo "task $i: upload of $run to $DESTINATION failed (left in place)" >&2; rc=1; }}"""


# How both task scripts end: every run folder the collector left (complete, or the partial log
# of a failed run) goes to the destination, one at a time.
_DELIVER_RUNS = """\
moved=0
for run in "$scratch"/*/; do
    [ -f "$run/events.jsonl" ] || continue
    run="${{run%/}}"
{deliver}
done"""


def _deliver_runs(campaign: Campaign, reportgen: str) -> str:
    """The delivery loop for the campaign's destination: a folder, ``aws s3 cp``, or reportgen
    (``reportgen`` is the interpreter that runs it, already quoted for bash)."""
    if not campaign.remote:
        deliver = _DELIVER_FOLDER.format()
    elif campaign.upload == "aws":
        deliver = _DELIVER_AWS.format()
    else:
        deliver = _DELIVER_REPORTGEN.format(reportgen=reportgen)
    return _DELIVER_RUNS.format(deliver=deliver)


def _cases(tasks: list[Task], plan_of: Any, with_python: bool) -> str:
    """One `case` branch per task: plain assignments, every value quoted for bash."""
    lines = []
    for task in tasks:
        fields = [f"label={shlex.quote(task.label)}"]
        if with_python:
            fields += [f"python={shlex.quote(task.environment.python or '')}", f"target={task.environment.target}"]
        fields += [f"plan={shlex.quote(plan_of(task))}", f"extra=({shlex.join(task.workload.args)})"]
        lines.append(f"{task.index}) " + "; ".join(fields) + " ;;")
    return "\n".join(lines)


def _plan_path(root: str, plan: str) -> str:
    """A plan as written if absolute, else relative to the checkout that holds collector/
    (collector_root on Slurm, the image's workdir on Kubernetes)."""
    return plan if plan.startswith("/") else str(PurePosixPath(root) / plan)


def _collector_root(campaign: Campaign) -> str:
    return campaign.slurm.collector_root or str(Path(__file__).resolve().parent.parent)


def slurm_script(campaign: Campaign, logs_dir: Path, script_name: str = "SCRIPT") -> str:
    """The sbatch script: a job array with one index per task."""
    missing = [e.name for e in campaign.environments if not e.python]
    if missing:
        raise CampaignError(f"{campaign.path}: environment {missing[0]!r} has no 'python' (the interpreter a Slurm task runs the collector with)")
    tasks = campaign.tasks()
    root = _collector_root(campaign)
    resources = []
    if campaign.slurm.exclusive:
        resources.append("#SBATCH --exclusive")
    if campaign.slurm.partition:
        resources.append(f"#SBATCH --partition={campaign.slurm.partition}")
    resources += [f"#SBATCH {option}" for option in campaign.slurm.sbatch]
    return SLURM_TEMPLATE.format(
        name=campaign.name,
        count=len(tasks),
        campaign_file=shlex.quote(campaign.path.name),
        submit_lines="\n".join(f"# Submit {what}: {shlex.join(['sbatch', *options, script_name])}" for what, options in slurm_submissions(campaign)),
        last=len(tasks) - 1,
        throttle=f"%{campaign.max_parallel}" if campaign.max_parallel else "",
        time=campaign.slurm.time,
        logs=logs_dir,
        resources="\n".join(resources),
        cases=_cases(tasks, lambda t: _plan_path(root, t.workload.plan), with_python=True),
        destination=shlex.quote(campaign.destination),
        collector_root=shlex.quote(root),
        scratch=shlex.quote(campaign.slurm.scratch) if campaign.slurm.scratch else '"${TMPDIR:-/tmp}"',
        deliver_runs=_deliver_runs(campaign, shlex.quote(campaign.reportgen_python or sys.executable)),
    )


def slurm_submissions(campaign: Campaign) -> list[tuple[str, list[str]]]:
    """(what, sbatch options) for each submission of the one script.

    With no per-environment options the whole array goes in one submission. An environment
    with its own options (another partition or constraint: trn1, trn2, a CUDA fleet) is
    submitted on its own, its index range given with --array (command-line options override
    the script's #SBATCH lines), so every task lands on the hardware its environment names.
    """
    if not any(env.sbatch for env in campaign.environments):
        return [(f"all {len(campaign.tasks())} tasks", [])]
    throttle = f"%{campaign.max_parallel}" if campaign.max_parallel else ""
    submissions = []
    for env in campaign.environments:
        indexes = [t.index for t in campaign.tasks() if t.environment is env]
        submissions.append((f"{env.name}, tasks {indexes[0]}-{indexes[-1]}", [f"--array={indexes[0]}-{indexes[-1]}{throttle}", *env.sbatch]))
    return submissions


def submit_slurm(script: Path, options: list[str]) -> tuple[int, str]:
    """sbatch the script; (exit code, job id or the error)."""
    sbatch = shutil.which("sbatch")
    if sbatch is None:
        return 1, "sbatch is not on PATH (run on a Slurm login node, or use --dry-run to only write the script)"
    proc = subprocess.run([sbatch, "--parsable", *options, str(script)], capture_output=True, text=True)
    if proc.returncode != 0:
        return 1, f"sbatch failed ({proc.returncode}): {proc.stderr.strip() or proc.stdout.strip()}"
    return 0, proc.stdout.strip().split(";")[0]


# ---- Kubernetes -------------------------------------------------------------------------

K8S_TASK_SCRIPT = """\
set -u
i="${{JOB_COMPLETION_INDEX:?}}"
case "$i" in
{cases}
*) echo "task $i: no such task in this campaign" >&2; exit 2 ;;
esac
scratch="/tmp/{name}-$i"
mkdir -p "$scratch"
echo "task $i: $label on $(hostname)" >&2
python -m collector --workload "$plan" --target {target} --out "$scratch" ${{extra[@]+"${{extra[@]}}"}}
rc=$?
echo "task $i: collector exited $rc" >&2
{deliver_runs}
[ "$moved" -gt 0 ] || {{ echo "task $i: no run directory was written" >&2; [ "$rc" -ne 0 ] || rc=1; }}
exit "$rc"
"""



def kubernetes_manifest(campaign: Campaign) -> dict[str, Any]:
    """A v1 List of batch/v1 Indexed Jobs, one per environment (a Job has one image)."""
    missing = [e.name for e in campaign.environments if not e.image]
    if missing:
        raise CampaignError(f"{campaign.path}: environment {missing[0]!r} has no 'image' (the container a Kubernetes task runs)")
    if not campaign.remote and not campaign.kubernetes.volume_claim:
        raise CampaignError(f"{campaign.path}: a folder destination on Kubernetes needs kubernetes.volume_claim (a PersistentVolumeClaim mounted at {campaign.destination})")
    jobs = [_job(campaign, env) for env in campaign.environments]
    names = [job["metadata"]["name"] for job in jobs]
    clash = sorted({n for n in names if names.count(n) > 1})
    if clash:
        raise CampaignError(f"{campaign.path}: environments whose names differ only in case or punctuation give the same Job name {clash[0]!r}; rename one")
    return {"apiVersion": "v1", "kind": "List", "items": jobs}


def _job(campaign: Campaign, env: Environment) -> dict[str, Any]:
    kube = campaign.kubernetes
    tasks = campaign.tasks([env])
    job_name = _k8s_name(f"{campaign.name}-{env.name}")
    script = K8S_TASK_SCRIPT.format(
        cases=_cases(tasks, lambda t: _plan_path(kube.workdir, t.workload.plan), with_python=False),
        name=campaign.name,
        target=env.target,
        deliver_runs=_deliver_runs(campaign, "python"),
    )
    container: dict[str, Any] = {
        "name": "collector",
        "image": env.image,
        "workingDir": kube.workdir,
        "command": ["/bin/bash", "-c", script],
        "env": [
            {"name": "DESTINATION", "value": campaign.destination},
            {"name": "PYTHONUNBUFFERED", "value": "1"},
        ],
    }
    resource = DEVICE_RESOURCES.get(env.target)
    if resource:
        container["resources"] = {"limits": {resource: str(env.devices)}, "requests": {resource: str(env.devices)}}
    pod: dict[str, Any] = {"restartPolicy": "Never", "containers": [container]}
    labels = {"app.kubernetes.io/name": "migration-record", "migration-record/campaign": campaign.name, "migration-record/environment": env.name}
    # One task per node, so two tasks of the campaign never share a node's timings.
    pod["affinity"] = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"migration-record/campaign": campaign.name}}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }
    if env.node_selector:
        pod["nodeSelector"] = dict(env.node_selector)
    if kube.service_account:
        pod["serviceAccountName"] = kube.service_account
    if not campaign.remote:
        container["volumeMounts"] = [{"name": "runs", "mountPath": campaign.destination}]
        pod["volumes"] = [{"name": "runs", "persistentVolumeClaim": {"claimName": kube.volume_claim}}]
    spec: dict[str, Any] = {
        "completionMode": "Indexed",
        "completions": len(tasks),
        "parallelism": min(len(tasks), campaign.max_parallel or len(tasks)),
        # A failed index is not retried beyond this and never stops the other indexes.
        "backoffLimitPerIndex": kube.backoff_limit_per_index,
        "template": {"metadata": {"labels": labels}, "spec": pod},
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": job_name, "namespace": kube.namespace, "labels": labels},
        "spec": spec,
    }


def _k8s_name(text: str) -> str:
    name = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")[:52].strip("-")
    return name or "campaign"


# ---- command line -----------------------------------------------------------------------

EPILOG = """\
exit codes:
  0  written (and, for slurm without --dry-run, submitted)
  1  the script or manifest could not be written, or submission failed (sbatch missing or
     refused it; jobs submitted before the failure are printed above it)
  2  usage error or an invalid campaign file (the message names the key)

examples:
  python -m collector.campaign campaign.toml --scheduler slurm --dry-run
  python -m collector.campaign campaign.toml --scheduler slurm            # sbatch it
  python -m collector.campaign campaign.toml --scheduler kubernetes --out job.json
  kubectl apply -f job.json
"""


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m collector.campaign",
        description="Run a campaign file (workloads x environments x repeats) as Slurm job-array "
        "tasks or Kubernetes Indexed Job completions. Each task runs the collector as a user would "
        "and delivers its run directory to the campaign's destination.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("campaign", type=Path, help="the campaign file (TOML); see docs/campaigns.md")
    parser.add_argument("--scheduler", required=True, choices=["slurm", "kubernetes"], help="which scheduler's input to write")
    parser.add_argument("--out", type=Path, help="where to write the script or manifest (default: NAME.sbatch or NAME.k8s.json in the current folder)")
    parser.add_argument("--dry-run", action="store_true", help="slurm: write the script but do not submit it")
    parser.add_argument("--list", action="store_true", help="print the tasks (index and label) and exit")
    return parser.parse_args(argv)


def _write(path: Path, text: str, executable: bool = False, logs: Path | None = None) -> bool:
    try:
        if logs is not None:
            logs.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        if executable:
            path.chmod(0o755)
    except OSError as exc:
        print(terminal(f"collector.campaign: cannot write {exc.filename or path}: {exc.strerror or exc}"), file=sys.stderr)
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        campaign = load_campaign(args.campaign)
        if args.list:
            for task in campaign.tasks():
                print(terminal(f"{task.index}\t{task.label}"))
            return 0
        if args.scheduler == "kubernetes":
            manifest = kubernetes_manifest(campaign)
        else:
            out = (args.out or Path(f"{campaign.name}.sbatch")).resolve()
            logs = out.parent / f"{campaign.name}-logs"
            script = slurm_script(campaign, logs, out.name)
    except CampaignError as exc:
        print(terminal(f"collector.campaign: {exc}"), file=sys.stderr)
        return 2
    if args.scheduler == "kubernetes":
        out = args.out or Path(f"{campaign.name}.k8s.json")
        if not _write(out, json.dumps(manifest, indent=2) + "\n"):
            return 1
        count = sum(job["spec"]["completions"] for job in manifest["items"])
        print(terminal(f"wrote {out}: {len(manifest['items'])} Indexed Job(s), {count} task(s)"))
        print(terminal(f"submit:  kubectl apply -f {out}"))
        print(terminal(f"follow:  kubectl get jobs -n {campaign.kubernetes.namespace} -l migration-record/campaign={campaign.name} -w"))
        print(terminal(f"logs:    kubectl logs -n {campaign.kubernetes.namespace} -l migration-record/campaign={campaign.name} --prefix"))
        return 0
    root = _collector_root(campaign)
    for plan in dict.fromkeys(_plan_path(root, w.plan) for w in campaign.workloads):
        if not Path(plan).is_file():
            print(terminal(f"collector.campaign: warning: {plan} is not on this host; it must exist on the compute nodes"), file=sys.stderr)
    if not _write(out, script, executable=True, logs=logs):
        return 1
    count = len(campaign.tasks())
    print(terminal(f"wrote {out}: a job array of {count} task(s); task output goes to {logs}/"))
    submissions = slurm_submissions(campaign)
    if args.dry_run:
        for what, options in submissions:
            print(terminal(f"submit:  {shlex.join(['sbatch', *options, str(out)])}   # {what}"))
        return 0
    jobs = []
    for what, options in submissions:
        code, job = submit_slurm(out, options)
        if code:
            print(terminal(f"collector.campaign: {what}: {job}"), file=sys.stderr)
            return code
        jobs.append(job)
        print(terminal(f"submitted job {job} ({what})"))
    ids = ",".join(jobs)
    print(terminal(f"follow:  squeue -j {ids}"))
    print(terminal(f"after:   sacct -j {ids} --format=JobID,JobName,State,ExitCode,Elapsed"))
    print(terminal(f"runs go to {campaign.destination}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
