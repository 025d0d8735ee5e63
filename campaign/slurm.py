"""A campaign as one Slurm job array: a short sbatch wrapper around campaign/task.sh.

The wrapper holds only #SBATCH lines and the campaign's settings; what a task does is the
real shell file task.sh (checked by shellcheck), copied beside the wrapper so the script that
runs is the one that was written. Environments that need different resources (their own
sbatch options, GRES devices, CPUs, memory, a whole node or not) are submitted apart, each
with its own --array index list; the campaign's max_parallel is shared out among them so the
campaign as a whole never runs more tasks at once.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from campaign.spec import SLURM_GRES, Campaign, CampaignError, Environment, Task, share_parallel
from campaign.tasks import TaskFiles, plan_path
from collector.visible import visible

WRAPPER = """\
#!/bin/bash
# Campaign {name} ({campaign_id}): {count} task(s), one per workload x environment x repeat.
# Written by `python -m campaign submit {campaign_file} --scheduler slurm`; edit the #SBATCH
# lines to suit the cluster. What each task does is {task_comment} (a plain bash file).
{submit_lines}
#SBATCH --job-name={name}
#SBATCH --array={array}
#SBATCH --nodes=1
#SBATCH --ntasks=1
#SBATCH --time={time}
#SBATCH --signal=B:TERM@{stop_lead}
#SBATCH --requeue
#SBATCH --open-mode=append
#SBATCH --output={output}
{resources}
export MIGRATION_RECORD_CAMPAIGN={name}
export MIGRATION_RECORD_CAMPAIGN_ID={campaign_id}
export MIGRATION_RECORD_SCHEDULER=slurm
export MIGRATION_RECORD_SUBMISSION="${{MIGRATION_RECORD_SUBMISSION:-1}}"
export DESTINATION={destination}
export UPLOAD={upload}
export REPORTGEN_PYTHON={reportgen}
export COLLECTOR_ROOT={collector_root}
export SCRATCH={scratch}
export PLANNED_FILE={planned}
exec /bin/bash {task_script} {tasks_file}
"""


@dataclass(frozen=True)
class Submission:
    """One sbatch call: which environments, their index list, and the options they need."""

    what: str
    indexes: tuple[int, ...]
    options: tuple[str, ...]


def _resources(campaign: Campaign, env: Environment) -> tuple[str, ...]:
    """The options an environment's tasks need beyond the script's header."""
    options: list[str] = []
    exclusive = campaign.slurm.exclusive if campaign.slurm.exclusive is not None else env.devices is None
    if exclusive:
        options.append("--exclusive")
    gres = SLURM_GRES.get(env.target)
    if env.devices is not None and gres:
        options.append(f"--gres={gres}:{env.devices}")
    if env.cpus is not None:
        options.append(f"--cpus-per-task={env.cpus}")
    if env.memory is not None:
        options.append(f"--mem={env.memory}")
    return (*options, *env.sbatch)


# sbatch options that ask for CPUs (or a whole node): an environment given one is not warned about.
CPU_OPTIONS = ("--cpus-per-task", "-c", "--exclusive", "--cpus-per-gpu", "--mincpus")


def cpu_warnings(campaign: Campaign, tasks: list[Task] | None = None) -> list[str]:
    """A warning per environment of these tasks that asks Slurm for no CPUs: neither a whole node,
    nor cpus, nor a CPU option of its own or of the campaign's [slurm] sbatch list (the script's
    header, which every submission reads). Its tasks then get the cluster's default, often one
    CPU, on which the reference, the compiles and the timed calls all run (the run records its
    CPU affinity, and a comparison with a run given more CPUs names the difference)."""
    chosen = campaign.tasks() if tasks is None else tasks
    warned: dict[str, str] = {}
    for env in (task.environment for task in chosen):
        exclusive = campaign.slurm.exclusive if campaign.slurm.exclusive is not None else env.devices is None
        asked = any(o.startswith(CPU_OPTIONS) for o in (*campaign.slurm.sbatch, *env.sbatch))
        if env.name in warned or exclusive or env.cpus is not None or asked:
            continue
        warned[env.name] = (
            f"campaign: warning: environment {visible(env.name)} asks for no CPUs (no cpus, no whole node): Slurm gives each "
            "task the cluster's default, often 1 CPU, for the reference, the compiles and the timed calls; set cpus"
        )
    return list(warned.values())


def array_spec(indexes: tuple[int, ...] | list[int]) -> str:
    """Slurm's --array list for these indexes: ranges where they run on (0-3,8,10-11)."""
    parts: list[str] = []
    ordered = sorted(indexes)
    start = prev = ordered[0]
    for index in [*ordered[1:], None]:
        if index is not None and index == prev + 1:
            prev = index
            continue
        parts.append(f"{start}-{prev}" if prev > start else str(start))
        if index is not None:
            start = prev = index
    return ",".join(parts)


def submissions(campaign: Campaign, tasks: list[Task] | None = None) -> list[Submission]:
    """The sbatch calls for these tasks (all of the campaign's by default).

    Environments needing the same options share one submission. max_parallel is a limit on
    the campaign: with several submissions each gets a share (at least one task each), and
    their shares add up to at most max_parallel.
    """
    chosen = campaign.tasks() if tasks is None else tasks
    groups: dict[tuple[str, ...], list[Task]] = {}
    names: dict[tuple[str, ...], list[str]] = {}
    for task in chosen:
        options = _resources(campaign, task.environment)
        groups.setdefault(options, []).append(task)
        if task.environment.name not in names.setdefault(options, []):
            names[options].append(task.environment.name)
    shares = share_parallel(
        campaign.max_parallel,
        [len(g) for g in groups.values()],
        "separate Slurm submissions (environments with different resources)",
    )
    result = []
    for (options, group), share in zip(groups.items(), shares):
        indexes = tuple(t.index for t in group)
        throttle = f"%{share}" if share else ""
        what = f"{', '.join(names[options])}: tasks {array_spec(indexes)}"
        result.append(Submission(what, indexes, (f"--array={array_spec(indexes)}{throttle}", *options)))
    return result


def collector_root(campaign: Campaign) -> str:
    return campaign.slurm.collector_root or str(Path(__file__).resolve().parent.parent)


def _comment(text: str) -> str:
    """Text from outside (a file name, an --out path) for a `#` comment line of the script: every
    hidden character, a newline above all, is written as <U+XXXX>, so nothing can end the comment
    and run as a command (or end sbatch's reading of the #SBATCH lines)."""
    return visible(text, keep="")


def sbatch_output(logs: Path) -> str:
    """The --output argument for an #SBATCH line: sbatch splits such a line at whitespace unless
    quoted, reads a backslash as an escape, and expands '%' (a literal one is '%%'). A folder
    with a control character or a backslash cannot be written so that sbatch reads it back."""
    folder = str(logs)
    if "\\" in folder or visible(folder, keep="") != folder:
        raise CampaignError(
            f"{_comment(folder)}: Slurm cannot write task output to a folder whose path holds a backslash or a control character; choose another --out"
        )
    escaped = folder.replace('"', '\\"').replace("%", "%%")
    return f'"{escaped}/%x-%A_%a.out"'


def wrapper(campaign: Campaign, files: TaskFiles, logs: Path, campaign_id: str) -> str:
    """The sbatch script for the whole campaign (its header is the first submission's)."""
    missing = [e.name for e in campaign.environments if not e.python]
    if missing:
        raise CampaignError(
            f"{campaign.path}: environment {missing[0]!r} has no 'python' (the interpreter a Slurm task runs the collector with)"
        )
    tasks = campaign.tasks()
    subs = submissions(campaign)
    header_options = subs[0].options if len(subs) == 1 else ()
    resources = [f"#SBATCH {option}" for option in header_options if not option.startswith("--array")]
    if campaign.slurm.partition:
        resources.append(f"#SBATCH --partition={campaign.slurm.partition}")
    resources += [f"#SBATCH {option}" for option in campaign.slurm.sbatch]
    return WRAPPER.format(
        name=campaign.name,
        campaign_id=campaign_id,
        count=len(tasks),
        campaign_file=_comment(shlex.quote(campaign.path.name)),
        task_comment=_comment(shlex.quote(str(files.script))),
        task_script=shlex.quote(str(files.script)),
        tasks_file=shlex.quote(str(files.tasks)),
        planned=shlex.quote(str(files.planned)),
        submit_lines="\n".join(
            _comment(f"# Submit {s.what}: {shlex.join(['sbatch', *s.options, files.wrapper.name])}") for s in subs
        ),
        array=array_spec([t.index for t in tasks])
        + (f"%{campaign.max_parallel}" if campaign.max_parallel and len(subs) == 1 else ""),
        time=campaign.slurm.time,
        stop_lead=campaign.slurm.stop_lead_s,
        output=sbatch_output(logs),
        resources="\n".join(resources),
        destination=shlex.quote(campaign.destination),
        upload=campaign.upload if campaign.remote else "folder",
        reportgen=shlex.quote(campaign.reportgen_python or sys.executable),
        collector_root=shlex.quote(collector_root(campaign)),
        scratch=shlex.quote(campaign.slurm.scratch) if campaign.slurm.scratch else '"${TMPDIR:-/tmp}"',
    )


def tasks_lines(campaign: Campaign, campaign_id: str) -> str:
    """NAME.tasks: a first line naming the campaign whose tasks these are (task.sh refuses to run
    a task of another campaign: a later submit with the same --out replaces this file while
    the earlier campaign's tasks may still be queued or requeued), then one line per task."""
    root = collector_root(campaign)
    return f"#campaign\t{campaign_id}\n" + "".join(
        f"{task.index}\t{task.words(plan_path(root, task.workload.plan))}\n" for task in campaign.tasks()
    )


# sbatch answers in seconds (Slurm's MessageTimeout is 10 s by default, retried a few times); one
# that has not answered in this long is stopped, and its tasks recorded as possibly queued.
SBATCH_TIMEOUT_S = 300.0
INTERRUPTED = 130  # submit's code where Ctrl-C stopped sbatch (the shell's 128 + SIGINT)


def submit(script: Path, options: tuple[str, ...] | list[str], env: dict[str, str] | None = None) -> tuple[int, str]:
    """sbatch the script; (exit code, job id or the error)."""
    sbatch = shutil.which("sbatch")
    if sbatch is None:
        return 1, "sbatch is not on PATH (run on a Slurm login node, or use --dry-run to only write the script)"
    try:
        proc = subprocess.run(
            [sbatch, "--parsable", *options, str(script)],
            capture_output=True,
            text=True,
            env=env,
            timeout=SBATCH_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:  # stopped: whether the controller queued the job is not known
        return (
            1,
            f"sbatch timed out: no answer in {SBATCH_TIMEOUT_S:g} s, so it was stopped; it may have queued the job",
        )
    except KeyboardInterrupt:  # Ctrl-C while sbatch ran: it was stopped, and the same is not known
        return INTERRUPTED, "interrupted (Ctrl-C) while sbatch ran, so it was stopped; it may have queued the job"
    if proc.returncode != 0:
        return 1, f"sbatch failed ({proc.returncode}): {proc.stderr.strip() or proc.stdout.strip()}"
    # --parsable: "<job id>[;<cluster>]" on one line; anything else is kept as one line, escaped,
    # at most 100 characters (it is printed and written to NAME.submission).
    first = (proc.stdout.strip().splitlines() or [""])[0].split(";")[0].strip()
    return 0, visible(first, keep="")[:100] or "unknown (sbatch printed no job id)"
