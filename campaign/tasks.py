"""The files a submission writes beside its scheduler input, and the planned-task ledger.

    NAME.sbatch / NAME.k8s.json   the scheduler's input
    NAME.task.sh                  a copy of campaign/task.sh: the script the tasks run (Slurm only)
    NAME.tasks                    one line per task (index, then its words quoted for bash; Slurm only)
    NAME.planned.json             every planned task of this campaign id (the ledger's plan)
    NAME.submission               each submission's tasks, jobs and refusals (campaign/submissions.py)
    NAME-logs/                    Slurm's per-task output (appended to, never overwritten; Slurm only)

The planned tasks are also written to the destination's ledger (a folder destination at once;
an s3:// one by each task, next to its own records), so `status` can tell a task that never
wrote anything from one that is done.
"""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import Any

from campaign.ledger import LEDGER_FORMAT
from campaign.spec import MAX_PLANNED_BYTES, Campaign, CampaignError

TASK_SCRIPT = Path(__file__).with_name("task.sh")


@dataclass(frozen=True)
class TaskFiles:
    wrapper: Path
    script: Path
    tasks: Path
    planned: Path
    logs: Path

    @classmethod
    def beside(cls, out: Path, name: str) -> TaskFiles:
        folder = out.parent
        return cls(
            out,
            folder / f"{name}.task.sh",
            folder / f"{name}.tasks",
            folder / f"{name}.planned.json",
            folder / f"{name}-logs",
        )

    @property
    def submission(self) -> Path:
        """NAME.submission: what each submission of the campaign asked the scheduler for."""
        return submission_file(self.planned)


def submission_file(planned: Path) -> Path:
    """NAME.submission beside NAME.planned.json."""
    return planned.with_name(f"{planned.name.removesuffix('.planned.json')}.submission")


def plan_path(root: str, plan: str) -> str:
    """A plan as written if absolute, else relative to the checkout that holds collector/
    (collector_root on Slurm, the image's workdir on Kubernetes)."""
    return plan if plan.startswith("/") else str(PurePosixPath(root) / plan)


# The end of a campaign id that tells submissions apart: its UTC time, then (from this
# version on) a random part, so two submissions in the same second never share an id.
_ID_END = re.compile(r"-([0-9]{8}T[0-9]{6}Z(?:-[0-9a-f]{6})?)$")


def new_campaign_id(campaign: Campaign, now: datetime | None = None) -> str:
    """NAME-YYYYmmddTHHMMSSZ-xxxxxx: a new id per submission of a campaign file (resume keeps
    it); the six random hex digits keep two submissions in the same second apart."""
    stamp = (now or datetime.now(timezone.utc)).strftime("%Y%m%dT%H%M%SZ")
    return f"{campaign.name}-{stamp}-{secrets.token_hex(3)}"


def split_campaign_id(campaign_id: str) -> tuple[str, str]:
    """(name, end): the campaign's name and the part that tells its submissions apart (the time
    and random part; the time alone in an id from before the random part; else the last word)."""
    found = _ID_END.search(campaign_id)
    if found:
        return campaign_id[: found.start()], found.group(1)
    name, _, end = campaign_id.rpartition("-")
    return name, end


def planned_ledger(campaign: Campaign, campaign_id: str, scheduler: str, root: str, deadline_s: int) -> dict[str, Any]:
    """The planned tasks (CampaignError when their JSON is past the size a ledger may have)."""
    planned = {
        "format": LEDGER_FORMAT,
        "campaign": campaign.name,
        "campaign_id": campaign_id,
        "scheduler": scheduler,
        "destination": campaign.destination,
        "deadline_s": deadline_s,
        "tasks": [
            {
                "task": task.index,
                "label": task.label,
                "environment": task.environment.name,
                "target": task.environment.target,
                "sdk": task.environment.sdk,
                "plan": plan_path(root, task.workload.plan),
                "args": list(task.workload.args),
                "repeat": task.repeat,
            }
            for task in campaign.tasks()
        ],
        # What decides where and on what each environment's tasks run: a resume must not run
        # the same tasks on other hardware or another image under the same names.
        "environments": environment_facts(campaign, scheduler),
        # Where the tasks deliver and how (a resume must deliver where the ledger and status look).
        "delivery": delivery_facts(campaign, scheduler),
        # How often the scheduler runs a failed task again itself (Kubernetes' backoffLimitPerIndex):
        # a failed attempt with retries left is not one `resume` submits again.
        "retries": campaign.kubernetes.backoff_limit_per_index if scheduler == "kubernetes" else 0,
    }
    planned_text(campaign, planned)
    return planned


def delivery_facts(campaign: Campaign, scheduler: str) -> dict[str, Any]:
    """Where a campaign's tasks put their runs and records, and from what checkout they run: the
    destination and upload, and on Kubernetes the namespace, volume claim, working folder and
    service account (on Slurm the wrapper written at submit holds them, and a resume reuses it)."""
    facts: dict[str, Any] = {"destination": campaign.destination, "upload": campaign.upload}
    if scheduler == "kubernetes":
        kube = campaign.kubernetes
        facts["kubernetes"] = {
            "namespace": kube.namespace,
            "volume_claim": kube.volume_claim,
            "workdir": kube.workdir,
            "service_account": kube.service_account,
        }
    return facts


def environment_facts(campaign: Campaign, scheduler: str) -> dict[str, Any]:
    """Each environment as the scheduler is asked for it (its image, devices, node selector,
    CPUs, memory, interpreter; on Slurm the partition, whole-node choice and sbatch options)."""
    facts: dict[str, Any] = {}
    for env in campaign.environments:
        facts[env.name] = {
            "target": env.target,
            "python": env.python,
            "image": env.image,
            "devices": env.devices,
            "node_selector": dict(sorted(env.node_selector.items())),
            "cpus": env.cpus,
            "memory": env.memory,
            "sdk": env.sdk,
            "sbatch": list(env.sbatch),
        }
        if scheduler == "slurm":
            facts[env.name]["slurm"] = {
                "partition": campaign.slurm.partition,
                "exclusive": campaign.slurm.exclusive,
                "sbatch": list(campaign.slurm.sbatch),
            }
    return facts


def planned_text(campaign: Campaign, planned: dict[str, Any]) -> str:
    """planned.json's text; CampaignError when it is larger than `status` and the site read
    (long args repeated in each of many tasks), so no submission leaves an unreadable ledger."""
    text = json.dumps(planned, indent=1, sort_keys=True) + "\n"
    size = len(text.encode("utf-8"))
    if size > MAX_PLANNED_BYTES:
        raise CampaignError(
            f"{campaign.path}: its planned tasks take {size} bytes as JSON, more than the {MAX_PLANNED_BYTES} bytes a ledger may hold; plan fewer tasks or shorter [[workload]] args"
        )
    return text


def write_files(files: TaskFiles, wrapper_text: str, tasks_text: str, planned: dict[str, Any], slurm: bool) -> None:
    """Write the submission's files (raises OSError): a Slurm one's script is executable, its
    tasks read NAME.task.sh and NAME.tasks and write their output into NAME-logs/ (made here, as
    sbatch needs it); a Kubernetes one has none of these (its ConfigMap carries task.sh and each
    Job's task list), only the manifest and NAME.planned.json. A file there that is not a regular
    one (a link, folder, device or FIFO) is refused before anything is written, as each write
    would refuse it."""
    from reportgen.storage.local import replaceable

    written = (files.wrapper, files.script, files.tasks, files.planned) if slurm else (files.wrapper, files.planned)
    for path in written:
        replaceable(path)
    files.wrapper.parent.mkdir(parents=True, exist_ok=True)  # --out in a new folder, for either scheduler
    if slurm:
        files.logs.mkdir(parents=True, exist_ok=True)
    write_file(files.wrapper, wrapper_text.encode("utf-8"), 0o755 if slurm else None)
    if slurm:
        write_file(files.script, TASK_SCRIPT.read_bytes(), 0o755)
        write_file(files.tasks, tasks_text.encode("utf-8"))
    write_file(files.planned, (json.dumps(planned, indent=1, sort_keys=True) + "\n").encode("utf-8"))


def write_file(path: Path, data: bytes, mode: int | None = None) -> None:
    """Write path whole or not at all, a regular file only (reportgen.storage.local.replace_file:
    imported here, as the campaign command loads with the standard library alone)."""
    from reportgen.storage.local import replace_file

    replace_file(path, data, mode)
