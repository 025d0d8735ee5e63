"""The campaign file: workloads x environments x repeats, read strictly.

The file is described in docs/campaigns.md; every key is checked, unknown keys are errors,
and each message names the key. Standard library only.
"""

from __future__ import annotations

import os
import posixpath
import re
import shlex
import stat
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from collector import planschema
from collector.descriptors import descriptors
from collector.tomltext import toml_text

# The targets, and what each asks a scheduler for, from their backend descriptors
# (collector/descriptors.py): nothing here names a backend.
TARGETS = planschema.TARGETS
DEVICE_RESOURCES = {name: d.device_resource for name, d in descriptors().items() if d.device_resource}
SLURM_GRES = {name: d.slurm_gres for name, d in descriptors().items() if d.slurm_gres}
NODE_TAINTS = {name: d.node_taint for name, d in descriptors().items() if d.node_taint}
UPLOADERS = ("reportgen", "aws")
# Also a valid Kubernetes label value: starts and ends with a letter or digit, at most 63.
_NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$")
_K8S_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,50}[a-z0-9])?$")
# ASCII digits (\d would take any script's), and few of them: int() refuses 4,300 digits.
_SLURM_TIME = re.compile(r"^(\d{1,6}-)?\d{1,9}(:\d{2}){0,2}$", re.ASCII)
_MEMORY = re.compile(r"^[1-9][0-9]{0,6}[KMGT]$", re.ASCII)
_SBATCH_OPTION = re.compile(r"^--[a-z][a-z-]*(=[^\s]+)?$")
# Kubernetes' own rules for the names a campaign file gives it (k8s.io/apimachinery
# pkg/util/validation), checked with fullmatch (a `$` would let a trailing newline through).
_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_SUBDOMAIN = re.compile(rf"{_DNS_LABEL}(\.{_DNS_LABEL})*")
_LABEL_VALUE = re.compile(r"([A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?)?")
# An image reference's characters (registry[:port]/path:tag@algorithm:digest): no blank,
# no control character, nothing a shell or a YAML reader would take for something else.
_IMAGE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/:@+\[\]-]*")
# Collector options a campaign may not set per workload: the campaign decides them (the
# collector's own parser, collector/__main__.py parse_args, has them; a test checks the two
# agree). That parser takes options whole and refuses a prefix (--targ for --target), so an arg
# that is a prefix of one of these is refused as well, at submit rather than by every task:
# reserved_option().
RESERVED_ARGS = ("--workload", "--target", "--out", "--list")


# A campaign file is a page of TOML; anything larger is not one (and is never read whole).
MAX_CAMPAIGN_BYTES = 1 << 20
# Tasks one campaign may plan (workloads x environments x repeats): counted before any list is
# built, so a huge `repeats` is one line, not memory exhausted.
MAX_TASKS = 10_000
# The most seconds Kubernetes takes for a pod's activeDeadlineSeconds (an int32 in its
# validation): kubernetes.deadline_s, and grace_period_s with it, stay below it, so the Job's
# deadline, (deadline + grace) x rounds of at most MAX_TASKS, stays far inside an int64.
MAX_K8S_SECONDS = (1 << 31) - 1
# The most any other count may be (devices, CPUs, parallel tasks, retries, seconds of lead):
# Kubernetes keeps such counts in 32-bit integers (backoffLimitPerIndex, parallelism), and
# tomllib reads integers of any size.
MAX_COUNT = (1 << 31) - 1
SBATCH_MAX_SIGNAL_LEAD_S = 65535  # sbatch --signal=[B:]SIG@TIME: TIME is 0 to 65535 seconds
# The planned tasks as JSON: submit writes no larger a planned.json than `status` (and the site,
# reportgen/storage/local.py MAX_SIDE_FILE_BYTES) reads.
MAX_PLANNED_BYTES = 16 << 20


class CampaignError(ValueError):
    """The campaign file cannot be used; the message names the key and what to change."""


@dataclass(frozen=True)
class Workload:
    plan: str
    args: tuple[str, ...]
    # The workload in task labels: its plan's file name, with its position where another
    # workload's plan has the same name (label_names()).
    name: str = ""


@dataclass(frozen=True)
class Environment:
    name: str
    target: str
    python: str | None
    image: str | None
    devices: int | None  # None: not declared (Slurm then takes a whole node, Kubernetes asks for 1)
    node_selector: dict[str, str]
    sbatch: tuple[str, ...] = ()
    cpus: int | None = None
    memory: str | None = None
    # An SDK release this environment stands for ("2.33"): the site pairs runs across them.
    sdk: str | None = None

    @property
    def device_count(self) -> int:
        return 1 if self.devices is None else self.devices


@dataclass(frozen=True)
class Task:
    index: int
    workload: Workload
    environment: Environment
    repeat: int

    @property
    def label(self) -> str:
        return f"{self.workload.name or PurePosixPath(self.workload.plan).stem}/{self.environment.name}/r{self.repeat}"

    def words(self, plan: str) -> str:
        """The task as task.sh reads it: index, label, environment, target, interpreter, plan,
        then the collector's extra options, each quoted for bash (nothing in them runs)."""
        env = self.environment
        return shlex.join(
            [str(self.index), self.label, env.name, env.target, env.python or "python", plan, *self.workload.args]
        )


@dataclass
class Slurm:
    partition: str | None = None
    time: str = "02:00:00"
    # None: a whole node only for environments that declare no devices (their tasks would
    # otherwise share a node's devices and timings); an environment with `devices` asks for
    # exactly those through GRES.
    exclusive: bool | None = None
    sbatch: tuple[str, ...] = ()
    collector_root: str | None = None
    scratch: str | None = None
    # Seconds before the time limit at which the task is told to stop (sbatch --signal), so
    # the collector can end the run and the task deliver it before Slurm kills it.
    stop_lead_s: int = 120


@dataclass
class Kubernetes:
    namespace: str = "default"
    service_account: str | None = None
    volume_claim: str | None = None
    workdir: str = "/opt/migration-record"
    backoff_limit_per_index: int = 0
    # Seconds a stopped pod gets between SIGTERM and SIGKILL to end and deliver its run.
    grace_period_s: int = 120
    # Seconds a task may run in all (activeDeadlineSeconds of each Job); default from [slurm] time.
    deadline_s: int | None = None


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

    def tasks(self) -> list[Task]:
        """One task per repeat x environment x workload, in that order (the array index): the
        replicates are interleaved, each round of repeats taking every environment once, so a
        scheduler that starts tasks in index order never runs all replicates of one target
        back to back (a busy hour would then weigh on one side only)."""
        tasks: list[Task] = []
        for repeat in range(1, self.repeats + 1):
            for env in self.environments:
                for workload in self.workloads:
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

    def string(self, key: str, default: str | None = None, required: bool = False, empty: bool = False) -> Any:
        value = self._get(key, (str,), "a string", default, required)
        blank = isinstance(value, str) and not value.strip() and (value or not empty)  # "" only where empty
        if isinstance(value, str) and (blank or "\n" in value or "\0" in value):
            raise CampaignError(f"{self.where}.{key}: expected a {'' if empty else 'non-empty '}single-line string")
        return value

    def integer(self, key: str, default: int | None, minimum: int, maximum: int | None = None) -> Any:
        value = self._get(key, (int,), "an integer", default, False)
        if value is not None and value < minimum:
            raise CampaignError(f"{self.where}.{key}: must be at least {minimum}, got {value}")
        if value is not None and maximum is not None and value > maximum:
            raise CampaignError(f"{self.where}.{key}: must be at most {maximum}, got {value}")
        return value

    def boolean(self, key: str, default: bool | None) -> Any:
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
            raise CampaignError(
                f"{known}unknown key{'s' if len(self.data) > 1 else ''} {', '.join(sorted(map(repr, self.data)))}"
            )


def _kind(value: Any) -> str:
    return {
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "a table",
    }.get(type(value), type(value).__name__)


def read_regular(path: Path, limit: int) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes; CampaignError (the reason, without
    the path) or OSError otherwise. The type is checked before opening (opening a FIFO waits for
    a writer) and on the open descriptor, and no more than ``limit`` bytes are ever read."""
    _check_regular(os.stat(path), limit)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as stream:
        _check_regular(os.fstat(fd), limit)
        try:
            data = stream.read(limit + 1)
        except BlockingIOError:
            data = None
    if data is None:  # a kernel file that only looks regular (/proc/kmsg): its read would wait
        raise CampaignError("its reads would wait (a kernel file that only looks like a regular one)")
    if len(data) > limit:
        raise CampaignError(f"grew past the limit of {limit} bytes while being read")
    return data


def _check_regular(st: os.stat_result, limit: int) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise CampaignError("not a regular file; only regular files are read")
    if st.st_size > limit:
        raise CampaignError(f"{st.st_size} bytes, larger than the limit of {limit} bytes")


def load_campaign(path: Path) -> Campaign:
    """Read and check a campaign file; raises CampaignError naming the first problem."""
    try:
        data = tomllib.loads(toml_text(read_regular(path, MAX_CAMPAIGN_BYTES).decode("utf-8")))
    except OSError as exc:
        raise CampaignError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except CampaignError as exc:
        raise CampaignError(f"{path}: cannot read: {exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise CampaignError(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:  # tomllib reads nested arrays and inline tables recursively
        raise CampaignError(f"{path}: not valid TOML: nested too deeply") from None
    except ValueError:  # tomllib's one other refusal: an integer past Python's digit limit
        raise CampaignError(
            f"{path}: not valid TOML: an integer of more than {sys.get_int_max_str_digits():,} digits"
        ) from None
    try:
        return _parse(path, _Table(data, ""))
    except CampaignError as exc:
        raise CampaignError(f"{path}: {exc}") from None


def _parse(path: Path, root: _Table) -> Campaign:
    head = root.table("campaign")
    head.where = "campaign"
    name = head.string("name", required=True)
    if not _NAME.match(name):
        raise CampaignError(
            "campaign.name: use letters, digits, '.', '_' and '-' (at most 63), starting and ending with a letter or digit"
        )
    destination = head.string("destination", required=True)
    _check_destination(destination)
    repeats = head.integer("repeats", 1, 1)
    max_parallel = head.integer("max_parallel", None, 1, MAX_COUNT)
    upload = head.string("upload", "reportgen")
    if upload not in UPLOADERS:
        raise CampaignError(f"campaign.upload: one of {', '.join(UPLOADERS)}, got {upload!r}")
    reportgen_python = head.string("reportgen_python")
    head.done()

    workloads: list[Workload] = []
    for table in root.tables("workload"):
        plan = table.string("plan", required=True)
        args = table.strings("args")
        for arg in args:
            reserved = reserved_option(arg)
            if reserved and arg.split("=", 1)[0] == reserved:
                raise CampaignError(
                    f"{table.where}.args: {arg!r} sets the collector's {reserved}, which the campaign sets, not a workload"
                )
            if reserved:
                raise CampaignError(
                    f"{table.where}.args: {arg!r} is a prefix of the collector's {reserved}, which the campaign sets, not a"
                    " workload (the collector takes options whole, and would refuse it)"
                )
        table.done()
        workloads.append(Workload(plan, args))
    if not workloads:
        raise CampaignError("at least one [[workload]] with a plan is needed")
    workloads = [Workload(w.plan, w.args, name) for w, name in zip(workloads, label_names(workloads))]

    environments = []
    for table in root.tables("environment"):
        env_name = table.string("name", required=True)
        if not _NAME.match(env_name):
            raise CampaignError(
                f"{table.where}.name: use letters, digits, '.', '_' and '-' (at most 63), starting and ending with a letter or digit, got {env_name!r}"
            )
        target = table.string("target", required=True)
        if target not in TARGETS:
            raise CampaignError(f"{table.where}.target: one of {', '.join(TARGETS)}, got {target!r}")
        python = table.string("python")
        image = table.string("image")
        if image is not None:
            _check_image(image, f"{table.where}.image")
        devices = table.integer("devices", None, 1, MAX_COUNT)
        if devices is not None and target not in DEVICE_RESOURCES and target not in SLURM_GRES:
            raise CampaignError(
                f"{table.where}.devices: target {target!r} has no device a scheduler counts (no GRES, no device resource); remove 'devices'"
            )
        selector = table.table("node_selector")
        node_selector = {}
        for key in list(selector.data):
            _check_label_key(key, selector.where)
            node_selector[key] = _check_label_value(
                selector.string(key, required=True, empty=True), f"{selector.where}.{key}"
            )
        env_sbatch = table.strings("sbatch")
        _check_sbatch(env_sbatch, f"{table.where}.sbatch")
        cpus = table.integer("cpus", None, 1, MAX_COUNT)
        memory = table.string("memory")
        if memory is not None and not _MEMORY.match(memory):
            raise CampaignError(
                f"{table.where}.memory: a size such as 16G or 512M (Slurm and Kubernetes read it alike), got {memory!r}"
            )
        sdk = table.string("sdk")
        if sdk is not None and not _NAME.match(sdk):
            raise CampaignError(f"{table.where}.sdk: a release name of letters, digits, '.', '_' and '-', got {sdk!r}")
        table.done()
        environments.append(
            Environment(env_name, target, python, image, devices, node_selector, env_sbatch, cpus, memory, sdk)
        )
    if not environments:
        raise CampaignError("at least one [[environment]] is needed")
    count = repeats * len(environments) * len(workloads)
    if count > MAX_TASKS:
        raise CampaignError(
            f"campaign.repeats: {repeats} repeat(s) x {len(environments)} environment(s) x {len(workloads)} workload(s) is {count} tasks, more than the limit of {MAX_TASKS:,}"
        )
    names = [e.name for e in environments]
    if len(set(names)) != len(names):
        raise CampaignError(f"environment names must be unique: {names}")

    s = root.table("slurm")
    slurm = Slurm(
        partition=s.string("partition"),
        time=s.string("time", "02:00:00"),
        exclusive=s.boolean("exclusive", None),
        sbatch=s.strings("sbatch"),
        collector_root=s.string("collector_root"),
        scratch=s.string("scratch"),
        # sbatch's --signal takes a lead of 0 to 65535 seconds: a larger one is refused at submit.
        stop_lead_s=s.integer("stop_lead_s", 120, 10, SBATCH_MAX_SIGNAL_LEAD_S),
    )
    s.done()
    if not _SLURM_TIME.match(slurm.time):
        raise CampaignError(f"slurm.time: a Slurm time such as 02:00:00 or 1-00:00:00, got {slurm.time!r}")
    if any(int(part) >= 60 for part in slurm.time.rpartition("-")[2].split(":")[1:]):
        raise CampaignError(f"slurm.time: minutes and seconds after a ':' run from 00 to 59, got {slurm.time!r}")
    if slurm_seconds(slurm.time) <= slurm.stop_lead_s:
        raise CampaignError(
            f"slurm.stop_lead_s: {slurm.stop_lead_s} s leaves no time to run within slurm.time {slurm.time}"
        )
    _check_sbatch(slurm.sbatch, "slurm.sbatch")
    if slurm.partition is not None and not re.match(r"^[A-Za-z0-9._,-]+$", slurm.partition):
        raise CampaignError(f"slurm.partition: partition names (comma-separated), got {slurm.partition!r}")

    k = root.table("kubernetes")
    kube = Kubernetes(
        namespace=k.string("namespace", "default"),
        service_account=k.string("service_account"),
        volume_claim=k.string("volume_claim"),
        workdir=k.string("workdir", "/opt/migration-record"),
        backoff_limit_per_index=k.integer("backoff_limit_per_index", 0, 0, MAX_COUNT),
        grace_period_s=k.integer("grace_period_s", 120, 10, MAX_K8S_SECONDS),
        deadline_s=k.integer("deadline_s", None, 60, MAX_K8S_SECONDS),
    )
    k.done()
    for where, folder in (
        ("slurm.collector_root", slurm.collector_root),
        ("slurm.scratch", slurm.scratch),
        ("kubernetes.workdir", kube.workdir),
    ):
        if folder is not None:
            _check_folder(folder, where)
    for where, object_name in (
        ("kubernetes.service_account", kube.service_account),
        ("kubernetes.volume_claim", kube.volume_claim),
    ):
        if object_name is not None:
            _check_subdomain(object_name, where)
    if not _K8S_NAME.match(kube.namespace):
        raise CampaignError(
            f"kubernetes.namespace: a DNS label (lower-case letters, digits, '-'), got {kube.namespace!r}"
        )
    root.done()
    return Campaign(
        path.resolve(),
        name,
        destination.rstrip("/") if destination != "/" else destination,
        repeats,
        max_parallel,
        upload,
        reportgen_python,
        workloads,
        environments,
        slurm,
        kube,
    )


def reserved_option(arg: str) -> str | None:
    """The reserved collector option this arg would set (as written, or as the unambiguous
    prefix argparse expands, with or without =VALUE), else None."""
    name = arg.split("=", 1)[0]
    if not name.startswith("--") or len(name) <= 2:
        return None
    return next((option for option in RESERVED_ARGS if option.startswith(name)), None)


def _check_sbatch(options: tuple[str, ...], where: str) -> None:
    for option in options:
        if not _SBATCH_OPTION.match(option) or option.startswith("--array"):
            raise CampaignError(
                f"{where}: each entry is one long option such as '--partition=trn1' (not --array), got {option!r}"
            )
        name = option.split("=", 1)[0]
        # sbatch takes --export (or its prefix --exp..., or --export-file) once, the last one
        # given winning: the campaign's own --export carries a resume's submission number, and
        # without it a resumed attempt would overwrite the first attempt's record.
        if name.startswith("--export") or (len(name) >= 5 and "--export".startswith(name)):
            raise CampaignError(
                f"{where}: {option!r}: the campaign sets sbatch's --export itself (a resume passes its submission number through it); remove it"
            )
        # The wrapper's own --output puts each task's output where submit says it goes; another
        # --output or --error (or a prefix sbatch expands to one) would send it elsewhere.
        if any(len(name) >= 4 and reserved.startswith(name) for reserved in ("--output", "--error")):
            raise CampaignError(
                f"{where}: {option!r}: the campaign sets sbatch's --output itself (each task's output goes to NAME-logs/ beside the script); remove it"
            )
        # The wrapper's own --time (the ledger reads a silent task as lost past it), --signal (a
        # task ends its run and delivers it on TERM), --requeue (a requeued task is its next
        # attempt) and --open-mode=append (a task's output is never overwritten): another value,
        # or --no-requeue, would break what the ledger and status say.
        if (taken := _reserved(name)) is not None and option not in SAME_AS_WRAPPER:
            raise CampaignError(
                f"{where}: {option!r}: the campaign sets sbatch's {taken} itself ({RESERVED_SBATCH[taken]}); remove it"
            )


# The sbatch options the wrapper sets and the ledger relies on, each with why (see _check_sbatch).
RESERVED_SBATCH = {
    "--time": "from [slurm] time: status reads a task silent past it as lost",
    "--signal": "a task ends its run and delivers it on TERM before its time runs out",
    "--requeue": "a requeued task is its next attempt",
    "--no-requeue": "a requeued task is its next attempt",
    "--open-mode": "append: a task's output is never overwritten",
}


# Options that say again what the wrapper says: harmless, taken.
SAME_AS_WRAPPER = ("--requeue", "--open-mode=append")


def _reserved(name: str) -> str | None:
    """The reserved option an sbatch option names, itself or as a prefix sbatch expands (at
    least '--ti', '--si', '--req', '--no-r', '--op'), else None."""
    for reserved in RESERVED_SBATCH:
        if name == reserved or (len(name) >= 4 and reserved.startswith(name)):
            return reserved
    return None


# Kubernetes expands $(NAME) and $$ in a container's command, arguments and environment values
# (DESTINATION, COLLECTOR_ROOT), though not in a volume's mount path or planned.json: a '$' would
# send the runs and the ledger to another place than the campaign records.
_EXPANDED = "$"


def _check_destination(destination: str) -> None:
    if _EXPANDED in destination:
        raise CampaignError(
            f"campaign.destination: no '$' (Kubernetes expands $(NAME) and $$ in a task's environment, so the runs would go elsewhere than the ledger says), got {destination!r}"
        )
    if destination.startswith("s3://"):
        # The rules `reportgen publish` applies to each run's location (loaded here, standard
        # library only): a bucket or prefix it refuses would fail every task after its whole
        # workload ran.
        from reportgen.storage.remote import RemoteError, bucket_problem, split_url

        if bucket_problem(destination) is not None:
            raise CampaignError(f"campaign.destination: {destination!r} has no valid bucket name")

        try:
            split_url(destination)
        except RemoteError:
            raise CampaignError(
                f"campaign.destination: {destination!r}: expected s3://bucket/prefix with no empty, '.' or '..' parts and no '?versionId='"
            ) from None
    elif "://" in destination:
        raise CampaignError(f"campaign.destination: a folder or an s3:// prefix, got {destination!r}")
    elif not destination.startswith("/"):
        raise CampaignError(
            f"campaign.destination: a folder is an absolute path on a file system every node mounts, got {destination!r}"
        )
    else:
        _check_folder(destination, "campaign.destination")


def _check_folder(folder: str, where: str) -> None:
    """An absolute path with no '.' or '..' part: it names the folder it reads as (a task's
    working directory, a volume's mount path), never another one up the tree; and not the root
    itself (a volume mounted there would hide the container's own files)."""
    if not folder.startswith("/") or any(part in (".", "..") for part in folder.split("/")):
        raise CampaignError(f"{where}: an absolute path with no '.' or '..' parts, got {folder!r}")
    if _EXPANDED in folder:
        raise CampaignError(
            f"{where}: no '$' (Kubernetes expands $(NAME) and $$ in a task's environment), got {folder!r}"
        )
    if not folder.strip("/"):
        raise CampaignError(f"{where}: a folder below the root, got {folder!r}")


def _check_subdomain(name: str, where: str) -> None:
    """A Kubernetes object name (a service account, a PersistentVolumeClaim): a DNS-1123 subdomain."""
    if len(name) > 253 or not _DNS_SUBDOMAIN.fullmatch(name):
        raise CampaignError(
            f"{where}: a Kubernetes object name (lower-case letters, digits, '-' and '.', at most 253, starting and ending with a letter or digit), got {name!r}"
        )


def _check_label_key(key: str, where: str) -> None:
    """A Kubernetes label key: an optional DNS-subdomain prefix and '/', then a name."""
    prefix, _, name = key.rpartition("/")
    if (
        len(name) > 63
        or not name
        or not _LABEL_VALUE.fullmatch(name)
        or (prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.fullmatch(prefix)))
        or key.startswith("/")
    ):
        raise CampaignError(
            f"{where}: {key!r} is not a label key (an optional DNS subdomain and '/', then at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit)"
        )


def _check_label_value(value: str, where: str) -> str:
    """A Kubernetes label value: empty, or at most 63 letters, digits, '-', '_' and '.'."""
    if len(value) > 63 or not _LABEL_VALUE.fullmatch(value):
        raise CampaignError(
            f"{where}: a label value (at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit, or empty), got {value!r}"
        )
    return value


def _check_image(image: str, where: str) -> None:
    """A container image reference: one word of the characters such a reference has."""
    if not _IMAGE.fullmatch(image):
        raise CampaignError(
            f"{where}: an image reference such as registry.example/migration-record:2.33 (letters, digits and . _ - / : @ + only), got {image!r}"
        )


def label_names(workloads: list[Workload]) -> list[str]:
    """Each workload's name in its tasks' labels (NAME/ENVIRONMENT/rREPEAT): its plan's file
    name, or, where another workload's plan has the same name (the same plan with other args),
    that name and its position, tiny_encoder[1], so no two tasks share a label. The same plan
    with the same args twice is refused: `repeats` asks for more runs of it."""
    first: dict[tuple[str, tuple[str, ...]], int] = {}
    for i, workload in enumerate(workloads):
        # The same plan however its path is spelt (collector//workloads/./x.toml), and the same
        # args however an option is joined to its value (--modes=eager, --modes eager).
        args = tuple(part for arg in workload.args for part in (arg.split("=", 1) if arg.startswith("--") else (arg,)))
        seen = first.setdefault((posixpath.normpath(workload.plan), args), i)
        if seen != i:
            raise CampaignError(
                f"workload[{i}]: the same plan and args as workload[{seen}]; for more runs of it raise campaign.repeats"
            )
    stems = [PurePosixPath(w.plan).stem for w in workloads]
    names = [stem if stems.count(stem) == 1 else f"{stem}[{i}]" for i, stem in enumerate(stems)]
    for i, name in enumerate(names):
        if names.index(name) != i:
            raise CampaignError(
                f"workload[{i}]: its tasks would be labelled {name!r} as workload[{names.index(name)}]'s are; rename one plan"
            )
    return names


def kubernetes_deadline_s(campaign: Campaign) -> int:
    """Seconds a Kubernetes task may run (its pod's activeDeadlineSeconds): kubernetes.deadline_s,
    else [slurm] time, which may be longer than Kubernetes takes."""
    if campaign.kubernetes.deadline_s is not None:
        return campaign.kubernetes.deadline_s
    seconds = slurm_seconds(campaign.slurm.time)
    if seconds > MAX_K8S_SECONDS:
        raise CampaignError(
            f"{campaign.path}: slurm.time {campaign.slurm.time} is {seconds} s, more than the {MAX_K8S_SECONDS} s Kubernetes lets a pod run; set kubernetes.deadline_s"
        )
    return seconds


def slurm_seconds(time: str) -> int:
    """Seconds in a Slurm time limit: MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS."""
    days, _, rest = time.rpartition("-")
    parts = [int(p) for p in rest.split(":")]
    if days:
        parts += [0] * (3 - len(parts))  # D-HH[:MM[:SS]]
        hours, minutes, seconds = parts
    elif len(parts) == 1:
        hours, minutes, seconds = 0, parts[0], 0
    elif len(parts) == 2:
        hours, (minutes, seconds) = 0, parts
    else:
        hours, minutes, seconds = parts
    return ((int(days or 0) * 24 + hours) * 60 + minutes) * 60 + seconds


def share_parallel(limit: int | None, sizes: list[int], what: str) -> list[int | None]:
    """Split the campaign's max_parallel among groups that the scheduler throttles apart (Slurm
    submissions, Kubernetes Jobs): each gets at least one, the rest goes where the most tasks
    wait per running slot, and the shares add up to at most ``limit``. None: no limit."""
    if limit is None:
        return [None] * len(sizes)
    if limit < len(sizes):
        raise CampaignError(
            f"campaign.max_parallel: {limit} is fewer than the {len(sizes)} {what} this campaign needs; raise it"
        )
    shares = [1] * len(sizes)
    left = limit - len(sizes)
    while left > 0 and any(share < size for share, size in zip(shares, sizes)):
        i = max(range(len(sizes)), key=lambda k: (sizes[k] / shares[k] if shares[k] < sizes[k] else -1.0, -k))
        shares[i] += 1
        left -= 1
    return list(shares)
