"""A campaign as Kubernetes Indexed Jobs, one per environment, plus one ConfigMap.

The ConfigMap carries campaign/task.sh (the same bash file Slurm tasks run), each Job's task
list and the planned tasks; each pod runs `bash task.sh TASKS` with its completion index. Names
carry the campaign id, so applying a new submission never collides with an earlier one.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import PurePosixPath
from typing import Any

from campaign.spec import (
    DEVICE_RESOURCES,
    NODE_TAINTS,
    Campaign,
    CampaignError,
    Environment,
    Task,
    kubernetes_deadline_s,
    share_parallel,
)
from campaign.tasks import TASK_SCRIPT, plan_path, split_campaign_id

MOUNT = "/etc/migration-record/campaign"
# The most a ConfigMap's data may hold: the API server refuses more (its validation sums the
# values' bytes against 1 MiB, core.MaxSecretSize). Past it no task of the campaign could start.
MAX_CONFIG_BYTES = 1 << 20


def manifest(
    campaign: Campaign, campaign_id: str, planned: dict[str, Any], tasks: list[Task] | None = None, submission: int = 1
) -> dict[str, Any]:
    """A v1 List: the ConfigMap, then a batch/v1 Indexed Job per environment (a Job has one
    image). ``tasks`` (default: all) and ``submission`` serve a resume: only those tasks, in
    new objects whose names carry the submission number."""
    chosen = campaign.tasks() if tasks is None else tasks
    missing = [e.name for e in campaign.environments if not e.image]
    if missing:
        raise CampaignError(
            f"{campaign.path}: environment {missing[0]!r} has no 'image' (the container a Kubernetes task runs)"
        )
    if not campaign.remote and not campaign.kubernetes.volume_claim:
        raise CampaignError(
            f"{campaign.path}: a folder destination on Kubernetes needs kubernetes.volume_claim (a PersistentVolumeClaim mounted at {campaign.destination})"
        )
    if not campaign.remote:
        _check_mount_path(campaign)
    names = [_job_base(campaign.name, env.name) for env in campaign.environments]
    clash = sorted({n for n in names if names.count(n) > 1})
    if clash:
        raise CampaignError(
            f"{campaign.path}: environments whose names differ only in case or punctuation (or past their first {ENV_PART} characters) give the same Job name {clash[0]!r}; rename one"
        )
    suffix = f"-{_job_mark(campaign_id)}" + (f"-s{submission}" if submission > 1 else "")
    config_name = id_name(campaign_id, 63 - len(f"-s{submission}")) + (f"-s{submission}" if submission > 1 else "")
    data = {
        "task.sh": TASK_SCRIPT.read_text(encoding="utf-8"),
        "planned.json": json.dumps(planned, indent=1, sort_keys=True) + "\n",
    }
    used = [(env, name) for env, name in zip(campaign.environments, names) if any(t.environment is env for t in chosen)]
    for env, name in used:
        data[f"tasks-{name}"] = _tasks(campaign, env, chosen)
    _check_config_size(campaign, data, len(chosen))
    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": config_name,
            "namespace": campaign.kubernetes.namespace,
            "labels": _labels(campaign, campaign_id),
        },
        "data": data,
    }
    sizes = [sum(1 for t in chosen if t.environment is env) for env, _ in used]
    # max_parallel limits the campaign: the Jobs' parallelism adds up to at most that.
    shares = share_parallel(campaign.max_parallel, sizes, "Kubernetes Jobs (one per environment)")
    jobs = [
        _job(campaign, env, name, suffix, campaign_id, config_name, chosen, submission, share or size)
        for (env, name), size, share in zip(used, sizes, shares)
    ]
    # A Job's name is its base cut to make room for the submission's mark and its pods' index:
    # two bases that differ only past the cut would name one Job twice, and kubectl would refuse
    # the second (its environment's tasks would never run).
    job_names = [job["metadata"]["name"] for job in jobs]
    clash = sorted({n for n in job_names if job_names.count(n) > 1})
    if clash:
        raise CampaignError(
            f"{campaign.path}: environments whose names differ only past the part a Job name keeps (with this campaign's name) give the same Job name {clash[0]!r}; shorten the campaign's name or rename one"
        )
    return {"apiVersion": "v1", "kind": "List", "items": [config, *jobs]}


# The image's own folders: the claim mounted at one of them, or above one, would hide the
# system, the interpreter or the checkout the task runs.
SYSTEM_FOLDERS = (
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/lib",
    "/lib32",
    "/lib64",
    "/opt",
    "/proc",
    "/root",
    "/run",
    "/sbin",
    "/srv",
    "/sys",
    "/tmp",
    "/usr",
    "/var",
)
# Folders that belong to the system as a whole: no mount below them either.
SYSTEM_TREES = ("/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/proc", "/sbin", "/sys", "/usr")


def _check_mount_path(campaign: Campaign) -> None:
    """Refuse a folder destination (the claim's mount path in each pod) that would hide what the
    task needs: the working folder that holds the checkout, the campaign's ConfigMap, or a system
    folder (equal to one or above one), or a place inside a system tree such as /usr or /etc."""
    destination = PurePosixPath(campaign.destination)
    needed = [
        ("kubernetes.workdir", PurePosixPath(campaign.kubernetes.workdir)),
        ("the campaign's task files", PurePosixPath(MOUNT)),
        *(("a system folder", PurePosixPath(folder)) for folder in SYSTEM_FOLDERS),
    ]
    for what, folder in needed:
        if folder == destination or destination in folder.parents:
            raise CampaignError(
                f"{campaign.path}: campaign.destination {campaign.destination} would be mounted over {what} {folder} in each pod, hiding it; choose a folder of its own such as /mnt/runs"
            )
    for tree in SYSTEM_TREES:
        if PurePosixPath(tree) in destination.parents:
            raise CampaignError(
                f"{campaign.path}: campaign.destination {campaign.destination} is inside the system folder {tree}; choose a folder of its own such as /mnt/runs"
            )


def _check_config_size(campaign: Campaign, data: dict[str, str], tasks: int) -> None:
    """Refuse, before anything is written, a ConfigMap the API server would refuse."""
    size = sum(len(value.encode("utf-8")) for value in data.values())
    if size > MAX_CONFIG_BYTES:
        raise CampaignError(
            f"{campaign.path}: the Kubernetes ConfigMap for its {tasks} task(s) would hold {size:,} bytes, more than the {MAX_CONFIG_BYTES:,} bytes Kubernetes allows; split the campaign into campaigns of fewer tasks (fewer repeats, environments or workloads each)"
        )


def _tasks(campaign: Campaign, env: Environment, tasks: list[Task]) -> str:
    """The Job's tasks keyed by completion index (0, 1, ...), each with its campaign index."""
    mine = [t for t in tasks if t.environment is env]
    return "".join(
        f"{key}\t{task.words(plan_path(campaign.kubernetes.workdir, task.workload.plan))}\n"
        for key, task in enumerate(mine)
    )


def _labels(campaign: Campaign, campaign_id: str, env: Environment | None = None) -> dict[str, str]:
    labels = {
        "app.kubernetes.io/name": "migration-record",
        "migration-record/campaign": campaign.name,
        "migration-record/campaign-id": id_name(campaign_id, 63),
    }
    if env is not None:
        labels["migration-record/environment"] = env.name
    return labels


def _job(
    campaign: Campaign,
    env: Environment,
    base: str,
    suffix: str,
    campaign_id: str,
    config_name: str,
    tasks: list[Task],
    submission: int,
    share: int,
) -> dict[str, Any]:
    kube = campaign.kubernetes
    count = sum(1 for t in tasks if t.environment is env)
    # The id's time and random part (and a resume's number) make the Job name unique per submission; an
    # Indexed Job's pods are named (and host-named) '<job>-<index>', a DNS label of at most 63.
    limit = 63 - len(f"-{max(count - 1, 0)}")
    job_name = k8s_name(f"{_cut(campaign.name, env.name, limit - len(suffix))}{suffix}", limit)
    settings = {
        "MIGRATION_RECORD_CAMPAIGN": campaign.name,
        "MIGRATION_RECORD_CAMPAIGN_ID": campaign_id,
        "MIGRATION_RECORD_SCHEDULER": "kubernetes",
        "MIGRATION_RECORD_SUBMISSION": str(submission),
        "DESTINATION": campaign.destination,
        "UPLOAD": campaign.upload if campaign.remote else "folder",
        "REPORTGEN_PYTHON": "python",
        "COLLECTOR_ROOT": kube.workdir,
        "SCRATCH": "/tmp",
        "PLANNED_FILE": f"{MOUNT}/planned.json",
        "PYTHONUNBUFFERED": "1",
    }
    env_vars: list[dict[str, Any]] = [{"name": k, "value": v} for k, v in settings.items()]
    # How often this index has failed before (set by the Job controller with backoffLimitPerIndex).
    env_vars.append(
        {
            "name": "MIGRATION_RECORD_RESTART",
            "valueFrom": {
                "fieldRef": {"fieldPath": "metadata.annotations['batch.kubernetes.io/job-index-failure-count']"}
            },
        }
    )
    container: dict[str, Any] = {
        "name": "collector",
        "image": env.image,
        "workingDir": kube.workdir,
        "command": ["/bin/bash", f"{MOUNT}/task.sh", f"{MOUNT}/tasks-{base}"],
        "env": env_vars,
        "volumeMounts": [{"name": "campaign", "mountPath": MOUNT, "readOnly": True}],
    }
    requests: dict[str, str] = {}
    limits: dict[str, str] = {}
    resource = DEVICE_RESOURCES.get(env.target)
    if resource:
        requests[resource] = limits[resource] = str(env.device_count)
    if env.cpus is not None:
        requests["cpu"] = limits["cpu"] = str(env.cpus)
    if env.memory is not None:
        requests["memory"] = limits["memory"] = env.memory + "i"
    if requests:
        container["resources"] = {"requests": requests, "limits": limits}
    volumes: list[dict[str, Any]] = [{"name": "campaign", "configMap": {"name": config_name, "defaultMode": 0o555}}]
    pod: dict[str, Any] = {
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": kube.grace_period_s,
        "containers": [container],
        "volumes": volumes,
    }
    # One task per node, so two tasks of the campaign never share a node's timings.
    pod["affinity"] = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"migration-record/campaign-id": id_name(campaign_id, 63)}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }
    if env.node_selector:
        pod["nodeSelector"] = dict(env.node_selector)
    taint = NODE_TAINTS.get(env.target)
    if taint:
        # Device node groups are commonly tainted so that only pods asking for the device land there.
        pod["tolerations"] = [{"key": taint, "operator": "Exists", "effect": "NoSchedule"}]
    if kube.service_account:
        pod["serviceAccountName"] = kube.service_account
    if not campaign.remote:
        container["volumeMounts"].append({"name": "runs", "mountPath": campaign.destination})
        volumes.append({"name": "runs", "persistentVolumeClaim": {"claimName": kube.volume_claim}})
    labels = _labels(campaign, campaign_id, env)
    parallelism = min(count, share)
    task_s = kubernetes_deadline_s(campaign)
    # Each pod may run the campaign's task time limit (then it is stopped with its grace
    # period); the Job as a whole, as many rounds of that as its parallelism and retries need.
    pod["activeDeadlineSeconds"] = task_s
    spec: dict[str, Any] = {
        "completionMode": "Indexed",
        "completions": count,
        "parallelism": parallelism,
        # A failed index is retried at most this often and never stops the other indexes.
        "backoffLimitPerIndex": kube.backoff_limit_per_index,
        "activeDeadlineSeconds": job_deadline_s(
            task_s + kube.grace_period_s, count, parallelism, kube.backoff_limit_per_index
        ),
        "template": {"metadata": {"labels": labels}, "spec": pod},
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": job_name, "namespace": kube.namespace, "labels": labels},
        "spec": spec,
    }


# The most a Job's activeDeadlineSeconds may be (an int64 in Kubernetes).
MAX_JOB_DEADLINE_S = (1 << 63) - 1


def job_deadline_s(pod_s: int, count: int, parallelism: int, retries: int) -> int:
    """Seconds an Indexed Job may run in all: each of its ceil(count / parallelism) rounds of
    pods may take a pod's time (deadline and grace period), and each index may be run again
    up to backoff_limit_per_index times, so every round counts that many times more."""
    rounds = -(-count // parallelism) * (retries + 1)
    return min(pod_s * rounds, MAX_JOB_DEADLINE_S)


ENV_PART = 40  # characters of an environment's name a Job name keeps (the campaign's name is cut first)


def _job_base(campaign: str, environment: str) -> str:
    """CAMPAIGN-ENVIRONMENT as a name of at most 52 characters, the environment's part kept whole
    up to ENV_PART (a long campaign name cut it away, so two environments read as one)."""
    env = k8s_name(environment, ENV_PART)
    return f"{k8s_name(campaign, 52 - len(env) - 1)}-{env}"


def _cut(campaign: str, environment: str, keep: int) -> str:
    """_job_base in at most ``keep`` characters, cut from the campaign's part first: the
    environment's part is what tells a campaign's Jobs apart."""
    base = _job_base(campaign, environment)
    if len(base) <= keep:
        return base
    env = k8s_name(environment, ENV_PART)
    room = keep - len(env) - 1
    head = k8s_name(campaign, room)[:room].strip("-") if room > 0 else ""
    if head:
        return f"{head}-{env}"
    # No room for the campaign's part, nor for the environment's whole: its start and a digest of
    # its whole name, so two environments that differ only past the cut keep Jobs of their own.
    digest = hashlib.sha256(environment.encode("utf-8")).hexdigest()[:6]
    return f"{env[: keep - len(digest) - 1].strip('-')}-{digest}"


def id_name(campaign_id: str, limit: int) -> str:
    """A campaign id as a Kubernetes name or label value of at most ``limit`` characters that
    keeps its submission time and random part whole (the campaign name is what is cut): two submissions of a
    long-named campaign never share one (a cut id did, and a second ConfigMap or label
    selector then met the first campaign's)."""
    name, stamp = split_campaign_id(campaign_id)
    stamp = k8s_name(stamp, 63)
    if not name or len(stamp) + 2 > limit:
        return k8s_name(campaign_id, limit)
    return f"{k8s_name(name, limit - len(stamp) - 1)}-{stamp}"


def _job_mark(campaign_id: str) -> str:
    """What tells a submission's Job names apart, in at most 16 characters: the id's time and
    random part (T000000Z-a1b2c3), or an older id's last 16 (its date and time)."""
    end = split_campaign_id(campaign_id)[1]
    return end[8:] if len(end) > 16 else campaign_id[-16:]


def k8s_name(text: str, limit: int = 52) -> str:
    name = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")[:limit].strip("-")
    return name or "campaign"
