"""python -m campaign {submit,status,resume} ...: campaigns on the fleet's own scheduler."""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import io
import json
import os
import re
import shlex
import stat
import sys
import textwrap
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

from campaign import kubernetes, slurm
from collector.arguments import Parser, path_argument
from collector.visible import terminal, visible
from campaign.ledger import (
    LEDGER_DIR,
    READ_ERRORS,
    UNRECORDED_WORDS,
    Ledger,
    LedgerError,
    check_planned,
    read_ledger,
    strict_json,
    verify_runs,
)
from campaign.spec import (
    MAX_PLANNED_BYTES,
    Campaign,
    CampaignError,
    kubernetes_deadline_s,
    load_campaign,
    read_regular,
    slurm_seconds,
)
from campaign.submissions import (
    Submission,
    Submissions,
    may_have_queued,
    now,
    read_submissions,
    resubmitted,
    with_submissions,
    write_submissions,
)
from campaign.tasks import (
    TaskFiles,
    new_campaign_id,
    plan_path,
    planned_ledger,
    submission_file,
    write_file,
    write_files,
)

# The exit code when the output's reader has gone (128 + SIGPIPE, as a shell reports it).
BROKEN_PIPE = 141
INTERRUPTED = 130  # Ctrl-C: the shell's 128 + SIGINT
# The exit code when the output cannot be written otherwise (a full disk: `> /dev/full`).
OUTPUT_FAILED = 1
# A campaign id names a folder under the destination: NAME-STAMP, never a path.
_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
# How to submit a manifest: every submission's objects are new (their names carry the campaign
# id and submission), so they are created, not applied: a client-side `kubectl apply` copies
# each object into its last-applied-configuration annotation, which Kubernetes caps at 256 KiB,
# so a ConfigMap of a few thousand tasks would be refused (kubernetes/kubernetes#85840).
KUBECTL = "kubectl create -f"
# resume's exit code when it submits nothing because the only tasks left have no record yet
# (they may be queued): a CI job can tell it from 0 (nothing left) and 1 (submission failed).
ONLY_UNRECORDED = 3
# Slurm's default MaxArraySize: array indexes run from 0 to one less (slurm.conf may raise it).
SLURM_MAX_ARRAY_SIZE = 1001

EPILOG = """\
exit codes:
  0  written (and submitted), or status printed with every task done
  1  the files could not be written, sbatch refused some or all of the tasks, (status) some
     task is not done, or the output could not be written (one line on stderr says why)
  2  usage error, an invalid campaign file or an unreadable ledger (the message says where)
  3  (resume) nothing submitted: the only tasks left have no record yet (queued, or never
     started) or are retried by their Job; check the queue, then resume with
     --include-unrecorded if they are not waiting
  130  interrupted (Ctrl-C); an sbatch it stopped is recorded as one that may have queued
       its job (`squeue` shows whether it did; resume leaves its tasks out unless given
       --include-unrecorded)
  141  the output's reader went away (`| head`): stopped quietly

examples:
  python -m campaign submit campaign.toml --scheduler slurm --dry-run     # write, do not submit
  python -m campaign submit campaign.toml --scheduler slurm               # write and sbatch it
  python -m campaign submit campaign.toml --scheduler kubernetes --out jobs.json
  kubectl create -f jobs.json
  python -m campaign status nightly.planned.json                          # or --format json
  python -m campaign resume campaign.toml --scheduler slurm               # the failed, stopped, lost, unverified
  python -m campaign resume campaign.toml --scheduler slurm --include-unrecorded   # and those with no record
"""


SUBMIT_EXAMPLES = """\
examples:
  python -m campaign submit campaign.toml --scheduler slurm --dry-run     # write, do not submit
  python -m campaign submit campaign.toml --scheduler slurm               # write and sbatch it
  python -m campaign submit campaign.toml --scheduler slurm --list        # the tasks, one a line
  python -m campaign submit campaign.toml --scheduler kubernetes --out jobs.json && kubectl create -f jobs.json
"""
RESUME_EXAMPLES = """\
examples:
  python -m campaign resume campaign.toml --scheduler slurm --dry-run     # what would be submitted again
  python -m campaign resume campaign.toml --scheduler slurm               # the failed, stopped, lost, unverified
  python -m campaign resume campaign.toml --scheduler slurm --include-unrecorded   # and those with no record
"""
STATUS_EXAMPLES = """\
examples:
  python -m campaign status nightly.planned.json                          # one line a task
  python -m campaign status nightly.planned.json --format json            # for a script
  python -m campaign status s3://bucket/runs/_campaigns/nightly           # the destination's own ledger
"""


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """The description wrapped as usual; the epilog's example lines kept as written."""

    def add_text(self, text: str | None) -> None:
        if text and text is not argparse.SUPPRESS and not text.startswith(("examples:", "exit codes:")):
            text = textwrap.fill(" ".join(text.split()), max(self._width - self._current_indent, 40))
        super().add_text(text)


class _Parser(Parser):
    """argparse's parser, but a help or usage text that cannot be written is an OutputError (or
    BrokenPipeError), as any other output: argparse drops the error and exits 0; and a missing
    required option is said after the options no parser knows (a misspelled --scheduler)."""

    def error(self, message: str) -> Any:
        super().error(self.with_unrecognized(message))

    def _print_message(self, message: str, file: Any = None) -> None:
        if not message:
            return
        try:
            (file or sys.stderr).write(message)
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise OutputError(exc.strerror or exc) from None


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = _Parser(
        prog="python -m campaign",
        allow_abbrev=False,
        description="Run a campaign file (workloads x environments x repeats) as Slurm job-array tasks or "
        "Kubernetes Indexed Job completions, keep a ledger of every planned task in the destination, "
        "print it, and resubmit the tasks that ran and did not finish well. See docs/campaigns.md.",
        epilog=EPILOG,
        formatter_class=_Formatter,
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="{submit,status,resume}")
    submit = commands.add_parser(
        "submit",
        allow_abbrev=False,
        epilog=SUBMIT_EXAMPLES,
        formatter_class=_Formatter,
        help="write the scheduler's input and submit it (Slurm) or print how (Kubernetes)",
        description="Write the scheduler's input, the task script, the task list and NAME.planned.json, "
        "then submit with sbatch (Slurm), or print the kubectl create command (Kubernetes). "
        "A campaign already submitted from the same files (NAME.submission names its jobs) is refused (exit 2): "
        "its queued tasks read them. "
        "Exit codes: 0 written (and submitted); 1 not written, or sbatch refused some tasks (resume submits them) "
        "or every task (nothing is recorded: submit again once the cause is fixed); 2 an invalid campaign file, "
        "or a campaign already submitted from these files.",
    )
    resume = commands.add_parser(
        "resume",
        allow_abbrev=False,
        epilog=RESUME_EXAMPLES,
        formatter_class=_Formatter,
        help="submit again the tasks that ran and did not finish well",
        description="Read the ledger and submit again, as the next submission of the same campaign id, "
        "the tasks that ran and did not finish well (failed, stopped, lost or unverified) and those sbatch "
        "refused (unsubmitted). A task with no record yet, or none of its latest submission, is left out "
        "unless --include-unrecorded is given: it may be waiting in the scheduler's queue, which this command "
        "cannot see. A campaign file that plans its tasks otherwise than NAME.planned.json records them (other "
        "or more tasks, another destination) is refused (exit 2), even with nothing left to resume: submit it as a "
        "new campaign. "
        "Exit codes: 0 resubmitted (or nothing left to resume), 1 not written or sbatch refused some tasks, 2 an "
        "invalid campaign file, ledger or planned tasks, 3 nothing submitted because the only tasks left have no "
        "record yet.",
    )
    resume.add_argument(
        "--include-unrecorded",
        action="store_true",
        help="also submit again the tasks with no record yet, and those whose last attempt ended with retries "
        "left (Kubernetes' backoff_limit_per_index). Such a task may still be queued (pending in squeue, a "
        "Pending pod) or be retried by its Job, and would then run twice: give this only after the queue "
        "(squeue -u $USER, kubectl get pods) shows they are not waiting",
    )
    for sub in (submit, resume):
        sub.add_argument("campaign", type=path_argument, help="the campaign file (TOML)")
        sub.add_argument(
            "--scheduler", required=True, choices=["slurm", "kubernetes"], help="which scheduler's input to write"
        )
        sub.add_argument(
            "--out",
            type=path_argument,
            help="the script or manifest (default: NAME.sbatch or NAME.k8s.json here); its "
            "NAME.planned.json goes beside it, and for Slurm NAME.tasks and NAME.task.sh (a Kubernetes "
            "ConfigMap carries both). An existing file among them is replaced "
            "only if it is a regular file: a link, folder, device or FIFO is refused, never written through, "
            "and nothing is written (as reportgen plan-check --write-revised and annotate --force do)",
        )
        sub.add_argument(
            "--dry-run",
            action="store_true",
            help="slurm: write the files beside --out, print the sbatch commands; submit nothing and write nothing into the destination (the tasks write its ledger when run)"
            + (
                "; resume: the submission number shown is not reserved, so a real resume may take the same one"
                if sub is resume
                else ""
            ),
        )
    submit.add_argument("--list", action="store_true", help="print the tasks (index and label) and exit")
    status = commands.add_parser(
        "status",
        allow_abbrev=False,
        epilog=STATUS_EXAMPLES,
        formatter_class=_Formatter,
        help="print the ledger: every planned task and its latest attempt",
        description="Print the ledger: every planned task (done, failed, stopped, running, lost, "
        f"planned: {UNRECORDED_WORDS}, or unverified: done by its record, but no run it names at the "
        "destination says in its log that it is this task's; given NAME.planned.json, NAME.submission beside "
        "it also tells unsubmitted: sbatch refused it) and its latest attempt. Exit codes: 0 "
        "every task done, 1 some task not done, 2 an unreadable ledger.",
    )
    status.add_argument(
        "planned",
        type=_location_argument,
        help="NAME.planned.json written by submit, or the destination's _campaigns/<id> folder "
        "(a folder, or s3://BUCKET/PREFIX/_campaigns/<id>)",
    )
    status.add_argument(
        "--format",
        choices=["text", "json"],
        default="text",
        help="text: one line per task; json: the same, for a script",
    )
    return parser.parse_args(argv)


class OutputError(Exception):
    """Standard output cannot be written (other than its reader going away)."""


def main(argv: list[str] | None = None) -> int:
    try:
        try:
            return _main(sys.argv[1:] if argv is None else argv)
        finally:
            _flush_output()  # what is still buffered fails here, in one line, not at exit
    except BrokenPipeError:
        # The reader went away (`... | head -1`): stop quietly, as command-line tools do.
        _drop_output()
        return BROKEN_PIPE
    except OutputError as exc:
        _drop_output()
        print(f"campaign: cannot write to standard output: {exc}", file=sys.stderr)
        return OUTPUT_FAILED
    except KeyboardInterrupt:  # one line, not a traceback; a submission it stopped is recorded first
        print("campaign: interrupted", file=sys.stderr)
        return INTERRUPTED


def _flush_output() -> None:
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise OutputError(exc.strerror or exc) from None


def _drop_output() -> None:
    """What is still buffered for stdout goes to /dev/null, so the flush at exit cannot fail too."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _main(argv: list[str]) -> int:
    args = parse_args(argv)
    try:
        if args.command == "status":
            return _status(args.planned, args.format)
        campaign = load_campaign(args.campaign)
        if args.command == "submit" and args.list:
            for task in campaign.tasks():
                _print(f"{task.index}\t{task.label}")
            return 0
        with _one_at_a_time(TaskFiles.beside(_default_out(campaign, args.scheduler, args.out), campaign.name)):
            if args.command == "resume":
                return _resume(campaign, args)
            return _submit(campaign, args)
    except (CampaignError, LedgerError) as exc:
        _print(_printable(f"campaign: {exc}"), file=sys.stderr)  # one line, whatever a name held
        return 2
    except OSError as exc:
        # A path the checks above did not expect to fail (a name longer than the file system
        # allows fails even Path.is_file on Python 3.11): that path and why, not a traceback.
        if exc.filename is None:
            raise
        _print(_printable(f"campaign: {exc.filename}: {exc.strerror or exc}"), file=sys.stderr)
        return 2


@contextlib.contextmanager
def _one_at_a_time(files: TaskFiles) -> Iterator[None]:
    """One submit or resume in a folder of campaign files at a time: two at once had both read
    no submission (or the same number) before either wrote one, and both submitted. An exclusive
    lock on the folder itself, held for the command (the kernel drops it with the process, so a
    killed command leaves none, and no file is left beside the wrapper); a second command is
    refused in one line."""
    folder = files.wrapper.parent
    if not folder.is_dir():  # a folder submit makes: nothing of this campaign there yet
        yield
        return
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError as exc:
        raise CampaignError(f"{folder}: cannot open the folder: {exc.strerror or exc}") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise CampaignError(
                f"{folder}: another submit or resume is running in this folder; run this one when it has ended"
            ) from None
        yield
    finally:
        os.close(fd)


def _default_out(campaign: Campaign, scheduler: str, out: Path | None) -> Path:
    """--out made absolute; a link it names is kept as it is, not followed (it is refused when
    written: only a regular file is replaced), so the files beside it go beside the link."""
    out = out or Path(f"{campaign.name}.{'sbatch' if scheduler == 'slurm' else 'k8s.json'}")
    return out.parent.resolve() / out.name


def _check_workloads(campaign: Campaign, root: str, here: bool) -> None:
    """Each workload as the collector would take it, before anything is written: its args through
    the collector's own parser and checks, and where its plan lies on this host, that plan through
    the collector's loader and the cells those args choose of it (collector.__main__.chosen_cells:
    its size, --warm against its decode steps, an --only that matches nothing). A mistake in
    either is one line here (CampaignError), not a failed task per array index on the cluster.
    ``here``: the tasks run in this checkout (Slurm's default collector_root), so a plan
    relative to it that is not in it is a mistake too."""
    from collector.__main__ import chosen_cells, option_problem
    from collector.__main__ import parse_args as collector_args
    from collector.plan import PlanError, load_plan

    for i, workload in enumerate(campaign.workloads):
        plan = plan_path(root, workload.plan)
        said = io.StringIO()
        try:
            # The parser's one line (or its --help), said as this workload's, not printed.
            with contextlib.redirect_stderr(said), contextlib.redirect_stdout(io.StringIO()):
                options = collector_args(["--workload", plan, "--target", "cpu", *workload.args])
        except SystemExit as exc:
            why = said.getvalue().strip().removeprefix("collector: ").removesuffix(" (see python -m collector --help)")
            why = why or ("they ask for its help, and a task would run nothing" if exc.code == 0 else "")
            raise CampaignError(f"workload[{i}].args: the collector refuses them: {why}") from None
        if (problem := option_problem(options)) is not None:
            raise CampaignError(f"workload[{i}].args: the collector refuses them: {problem}")
        if Path(plan).is_file():
            try:
                loaded = load_plan(Path(plan))
            except PlanError as exc:
                raise CampaignError(f"workload[{i}].plan: {plan}: {exc}") from None
            chosen, why = chosen_cells(loaded, options)
            if chosen is None:
                raise CampaignError(f"workload[{i}]: the collector refuses its plan and args: {why}")
        elif here and not workload.plan.startswith("/"):  # an absolute path may be a cluster file system's
            raise CampaignError(
                f"workload[{i}].plan: {plan}: no such file in this checkout, where the tasks run (slurm.collector_root is not set)"
            )


def _check_out(files: TaskFiles, campaign_file: Path) -> None:
    """--out may name none of the files a submission keeps (the campaign file, which resume
    reads, and the task script, task list, planned tasks and submissions written beside it):
    the wrapper would replace one of them, or they it."""
    own = {
        "the campaign file": Path(campaign_file),
        "the task script": files.script,
        "the task list": files.tasks,
        "the planned tasks": files.planned,
        "the submissions file": files.submission,
        "the logs folder": files.logs,
    }
    wrapper = os.path.realpath(files.wrapper)
    for what, path in own.items():
        if os.path.realpath(path) == wrapper:
            raise CampaignError(f"--out {files.wrapper}: that is {what}; name another file for the scheduler's input")


def _submit(campaign: Campaign, args: argparse.Namespace) -> int:
    out = _default_out(campaign, args.scheduler, args.out)
    files = TaskFiles.beside(out, campaign.name)
    _check_out(files, args.campaign)
    kube = args.scheduler == "kubernetes"
    root = campaign.kubernetes.workdir if kube else slurm.collector_root(campaign)
    # Tasks that run in this very checkout (Slurm's default collector_root) find their plans here.
    _check_workloads(campaign, root, here=not kube and Path(root) == Path(slurm.__file__).resolve().parent.parent)
    _check_not_submitted(campaign, files, args)
    campaign_id = new_campaign_id(campaign)
    if args.scheduler == "kubernetes":
        kube = campaign.kubernetes
        planned = planned_ledger(campaign, campaign_id, "kubernetes", kube.workdir, kubernetes_deadline_s(campaign))
        document = kubernetes.manifest(campaign, campaign_id, planned)
        if not _write(files, json.dumps(document, indent=2) + "\n", "", planned, slurm=False):
            return 1
        configs, jobs = document["items"][0], document["items"][1:]
        # Whether the user creates it is not known here: recorded as printed, so a second submit
        # over these files (which resume and status read) is refused as over a Slurm submission.
        # A dry run's files stay replaceable.
        printed = Submission(1, now(), tuple(t.index for t in campaign.tasks()), printed=True)
        if not args.dry_run and not _record_submission(
            files, Submissions(campaign_id, 1, (printed,), "kubernetes", str(out))
        ):
            return 1
        _print(
            f"wrote {_printable(str(out))}: ConfigMap {configs['metadata']['name']} and {len(jobs)} Indexed Job(s), {len(campaign.tasks())} task(s); campaign id {campaign_id}"
        )
        _print(f"submit:  {KUBECTL} {_arg(out)}")
        _print(
            f"follow:  kubectl get jobs -n {campaign.kubernetes.namespace} -l migration-record/campaign-id={configs['metadata']['labels']['migration-record/campaign-id']} -w"
        )
        if not campaign.remote:
            # The folder is the claim's mount path inside the pods, not one of this host: the
            # tasks write the ledger there (nothing is written to it from here).
            _print(
                f"ledger:  the tasks write it into {campaign.destination}/{LEDGER_DIR}/{campaign_id} on claim {kube.volume_claim}"
            )
        _print(
            f"ledger:  python -m campaign status {_arg(files.planned)}"
            + (
                ""
                if campaign.remote
                else f"   # where this host mounts the claim at {campaign.destination}; else give status the ledger folder"
            )
        )
        return 0
    root = slurm.collector_root(campaign)
    planned = planned_ledger(campaign, campaign_id, "slurm", root, slurm_seconds(campaign.slurm.time))
    text = slurm.wrapper(campaign, files, files.logs, campaign_id)
    if not args.dry_run:  # a dry run writes only the files it names, never into the destination
        _check_ledger_folder(campaign, campaign_id)
    for plan in dict.fromkeys(plan_path(root, w.plan) for w in campaign.workloads):
        if not Path(plan).is_file():
            here = (
                "is here but no regular file (a folder, FIFO or device)"
                if os.path.lexists(plan)
                else "is not on this host"
            )
            _print(
                _printable(f"campaign: warning: {plan} {here}; it must be a plan file on the compute nodes"),
                file=sys.stderr,
            )
    if not _write(files, text, slurm.tasks_lines(campaign, campaign_id), planned, slurm=True):
        return 1
    written = None if args.dry_run else _write_local_ledger(campaign, planned)
    _print(
        f"wrote {_printable(str(out))}: a job array of {len(campaign.tasks())} task(s), campaign id {campaign_id}; task output goes to {_printable(str(files.logs))}/"
    )
    code, jobs, refused = _sbatch(campaign, files, slurm.submissions(campaign), 1, args.dry_run)
    if args.dry_run:
        return code
    if not jobs and not any(may_have_queued(why) for why in refused.values()):
        # Nothing was queued: no ledger of a campaign that never ran, and nothing recorded (a
        # record would make status and resume treat it as submitted): submit again.
        if written:
            _remove_local_ledger(written)
        _print(
            "campaign: nothing submitted (sbatch refused every call): submit again once the cause is fixed",
            file=sys.stderr,
        )
        return code
    first = Submission(1, now(), tuple(t.index for t in campaign.tasks()), jobs, refused)
    if not _record_submission(files, Submissions(campaign_id, 1, (first,), "slurm", str(files.wrapper))):
        code = code or 1
    _say_refused(args.campaign, files, refused, len(campaign.tasks()))
    return code


def _say_refused(campaign_file: Path, files: TaskFiles, refused: dict[int, str], asked: int) -> None:
    """What became of the tasks sbatch refused: `resume` submits the ones it surely refused; the
    ones on which it timed out may be queued."""
    unsure = sum(may_have_queued(why) for why in refused.values())
    if len(refused) > unsure:
        _print(
            f"campaign: {len(refused) - unsure} of {asked} task(s) not submitted (sbatch refused them); once the "
            f"cause is fixed, `{_resume_command(campaign_file, 'slurm', str(files.wrapper))}` submits them",
            file=sys.stderr,
        )
    if unsure:
        _print(
            f"campaign: {unsure} of {asked} task(s) may be queued though sbatch failed (it timed out or was stopped): `squeue` "
            "shows whether they are; resume leaves them out unless given --include-unrecorded",
            file=sys.stderr,
        )


def _resume_command(campaign_file: Path, scheduler: str, wrapper: str | None) -> str:
    """The resume command for a campaign submitted to this scheduler with this script or
    manifest (SCRIPT where it is not known)."""
    words = ["python", "-m", "campaign", "resume", str(campaign_file), "--scheduler", scheduler]
    return shlex.join(words + ["--out", wrapper or "SCRIPT"])


def _read_submissions(files: TaskFiles) -> Submissions | None:
    """NAME.submission for submit and resume: one that cannot be read is refused (a record of
    the submissions would be lost)."""
    try:
        return read_submissions(files.submission)
    except LedgerError as exc:
        raise LedgerError(f"{exc}; move it away to submit or resume here") from None


def _check_not_submitted(campaign: Campaign, files: TaskFiles, args: argparse.Namespace) -> None:
    """Refuse to write over the files of a campaign the scheduler accepted (NAME.submission says
    so): its queued and requeued Slurm tasks read NAME.tasks and NAME.task.sh, and resume and
    status find it by NAME.planned.json. A dry run's files, or a refused submission's, are
    replaced as before. The files are named after the campaign, so another --out in the same
    folder is refused too."""
    found = _read_submissions(files)
    accepted = found.accepted() if found else None
    if found is None or accepted is None:
        return
    scheduler = found.scheduler or _planned_scheduler(files.planned) or args.scheduler
    wrapper = found.wrapper or (str(files.wrapper) if files.wrapper.is_file() else None)
    unknown = "" if wrapper else f", SCRIPT being the script it was submitted with in {files.wrapper.parent}"
    raise CampaignError(
        f"{files.submission}: campaign {found.campaign_id} was submitted from these files ({accepted}) and its "
        f"queued tasks read them: resume it (`{_resume_command(args.campaign, scheduler, wrapper)}`{unknown}), or "
        f"submit into another folder or with another campaign name (or move {files.submission.name} away once none "
        "of its tasks is queued)"
    )


def _planned_scheduler(planned: Path) -> str | None:
    """The scheduler NAME.planned.json names (None when it cannot be read)."""
    try:
        found = json.loads(read_regular(planned, MAX_PLANNED_BYTES)).get("scheduler")
    except (CampaignError, OSError, ValueError, AttributeError, RecursionError):
        return None
    return found if found in ("slurm", "kubernetes") else None


def _record_submission(files: TaskFiles, found: Submissions) -> bool:
    try:
        write_submissions(files.submission, found)
    except OSError as exc:
        _print(f"campaign: cannot write {files.submission}: {exc.strerror or exc}", file=sys.stderr)
        return False
    return True


def _sbatch(
    campaign: Campaign, files: TaskFiles, subs: list[slurm.Submission], submission: int, dry_run: bool
) -> tuple[int, dict[int, str], dict[int, str]]:
    """Submit (or, dry, print) the sbatch calls, each whatever became of the others: (exit code,
    the job that took each task accepted, sbatch's reason for each task refused)."""
    export = [] if submission == 1 else [f"--export=ALL,MIGRATION_RECORD_SUBMISSION={submission}"]
    # One group of resources: the script's header has them (and, first time, the array too).
    single = len(slurm.submissions(campaign)) == 1

    def options(sub: slurm.Submission) -> list[str]:
        if not single:
            return [*export, *sub.options]
        return [*export, sub.options[0]] if submission > 1 else []

    for warning in slurm.cpu_warnings(
        campaign, [t for t in campaign.tasks() if t.index in {i for sub in subs for i in sub.indexes}]
    ):
        _print(warning, file=sys.stderr)
    largest = max(i for sub in subs for i in sub.indexes)
    if largest >= SLURM_MAX_ARRAY_SIZE:
        _print(
            f"campaign: warning: the largest array index is {largest}, but Slurm's default MaxArraySize of {SLURM_MAX_ARRAY_SIZE} takes indexes up to {SLURM_MAX_ARRAY_SIZE - 1} only; check the cluster's (`scontrol show config | grep MaxArraySize`) or split the campaign",
            file=sys.stderr,
        )
    if dry_run:
        for sub in subs:
            _print(f"submit:  {_printable(shlex.join(['sbatch', *options(sub), str(files.wrapper)]))}   # {sub.what}")
        return 0, {}, {}
    jobs: dict[int, str] = {}
    refused: dict[int, str] = {}
    for at, sub in enumerate(subs):
        code, job = slurm.submit(files.wrapper, options(sub))
        if code:
            _print(f"campaign: {sub.what}: {job}", file=sys.stderr)
            refused.update(dict.fromkeys(sub.indexes, " ".join(job.split())))  # one line
            if code == slurm.INTERRUPTED:
                # No further sbatch: what this one did is recorded as unsure, and the groups never
                # given to sbatch as not submitted, so that resume sends them (and them alone).
                for later in subs[at + 1 :]:
                    refused.update(
                        dict.fromkeys(later.indexes, "not submitted: interrupted (Ctrl-C) before sbatch ran for them")
                    )
                return slurm.INTERRUPTED, jobs, refused
            continue
        jobs.update(dict.fromkeys(sub.indexes, job))
        _print(f"submitted job {job} ({sub.what})")
    if not jobs:
        return 1, jobs, refused
    ids = ",".join(dict.fromkeys(jobs.values()))
    _print(f"follow:  squeue -j {ids}")
    _print(f"after:   sacct -j {ids} --format=JobID,JobName,State,ExitCode,Elapsed")
    _print(f"ledger:  python -m campaign status {_arg(files.planned)}")
    _print(f"runs go to {campaign.destination}")
    return (1 if refused else 0), jobs, refused


def _write(files: TaskFiles, text: str, tasks: str, planned: dict[str, Any], slurm: bool) -> bool:
    try:
        write_files(files, text, tasks, planned, slurm)
    except OSError as exc:
        _print(f"campaign: cannot write {exc.filename or files.wrapper}: {exc.strerror or exc}", file=sys.stderr)
        return False
    return True


def _check_ledger_folder(campaign: Campaign, campaign_id: str) -> None:
    """Refuse, before anything is written, a Slurm folder destination's ledger folder that is
    reached through a link below the destination (status and the site never follow one, so the
    ledger would be where they do not read) or that is already there (another submission's
    ledger: its records would be mixed with this one's)."""
    if campaign.remote:
        return
    path = Path(campaign.destination)
    for part in (LEDGER_DIR, campaign_id):
        path = path / part
        try:
            mode = os.lstat(path).st_mode
        except OSError:  # not there yet (or unreadable: writing it then warns)
            return
        if stat.S_ISLNK(mode):
            raise CampaignError(
                f"{path}: a link; the ledger is written only into real folders below the destination (status and the site do not follow links)"
            )
    raise CampaignError(f"{path}: already there; a campaign id names one submission's ledger, submit again")


def _write_local_ledger(campaign: Campaign, planned: dict[str, Any]) -> list[Path]:
    """A Slurm folder destination, which this login node mounts as the compute nodes do, gets
    the planned tasks at once (an s3:// one, or a Kubernetes claim, from the first task). The
    campaign's own folder is made here, never reused. Returns what was made (to remove it when
    sbatch refuses the submission), the last first."""
    if campaign.remote:
        return []
    top = Path(campaign.destination) / LEDGER_DIR
    folder = top / planned["campaign_id"]
    made: list[Path] = []
    try:
        missing = top
        while not missing.exists():  # the folders made here, the deepest first
            made.append(missing)
            missing = missing.parent
        top.mkdir(parents=True, exist_ok=True)
        try:
            folder.mkdir()
        except FileExistsError:
            raise CampaignError(
                f"{folder}: already there; a campaign id names one submission's ledger, submit again"
            ) from None
        made.insert(0, folder)
        write_file(folder / "planned.json", (json.dumps(planned, indent=1, sort_keys=True) + "\n").encode("utf-8"))
        made.insert(0, folder / "planned.json")
    except OSError as exc:
        _print(
            f"campaign: warning: cannot write the ledger into {folder} ({exc.strerror or exc}); each task writes it too",
            file=sys.stderr,
        )
    return made


def _remove_local_ledger(made: list[Path]) -> None:
    """Remove the ledger files and folders submit made (sbatch accepted none of its calls, so
    no task can have written there): a site built later lists no campaign that never ran."""
    for path in made:
        try:
            if path.is_dir():
                path.rmdir()
            else:
                path.unlink()
        except OSError as exc:
            _print(f"campaign: warning: cannot remove {path} ({exc.strerror or exc})", file=sys.stderr)
            return


def _location_argument(text: str) -> str:
    """A ledger's location as given: an s3:// URL kept whole (a Path would fold its '//')."""
    return text if text.startswith("s3://") else str(path_argument(text))


def _store_planned(location: str) -> tuple[bytes, str]:
    """The planned.json of an s3:// ledger folder DESTINATION/_campaigns/<id>, and its URL."""
    from reportgen.storage.remote import RemoteError, Store

    planned_url = f"{location.rstrip('/')}/planned.json"
    try:
        data = Store().read_at_most(planned_url, MAX_PLANNED_BYTES)
    except RemoteError as exc:
        raise LedgerError(str(exc)) from None
    if data is None:
        # A bucket that is not there reads as a missing object too: said as itself (one LIST).
        try:
            Store().list(location)
        except RemoteError as exc:
            raise LedgerError(str(exc)) from None
        raise LedgerError(f"{planned_url}: no such object; give the ledger folder DESTINATION/_campaigns/<id>")
    return data, planned_url


def _load_ledger(location: str) -> Ledger:
    """The ledger from NAME.planned.json (its destination then read) or a ledger folder, read
    as untrusted input: bounded files, no links followed, one located error. (reportgen's
    readers, standard library only, are loaded here: the rest of the command needs none.)"""
    from reportgen.storage.ledgers import (
        folder_access,
        folder_run_starts,
        planned_tasks,
        store_access,
        store_run_starts,
    )
    from reportgen.storage.remote import RemoteError, Store

    remote = location.startswith("s3://")
    path = Path(location)
    if remote:  # an s3:// ledger folder: its planned.json, then read as one named by a file
        data, planned_file = _store_planned(location)
    else:
        planned_file = str(path / "planned.json" if path.is_dir() else path)
        try:  # the limit submit keeps to (campaign.tasks.planned_text)
            data = read_regular(Path(planned_file), MAX_PLANNED_BYTES)
        except (CampaignError, OSError) as exc:
            raise LedgerError(
                f"{planned_file}: not a campaign's planned tasks ({getattr(exc, 'strerror', None) or exc})"
            ) from None
    planned = planned_tasks(data, planned_file)
    try:
        strict_json(data)  # (planned_tasks keeps the last of a repeated key)
        check_planned(planned)
    except READ_ERRORS as exc:
        raise LedgerError(f"{planned_file}: not a campaign's planned tasks ({exc})") from None
    campaign_id, destination = planned.get("campaign_id"), planned.get("destination")
    # Each done task's runs are read where its ledger is: the ledger folder is
    # DESTINATION/_campaigns/<id>, and the runs are DESTINATION/<run>.
    if not remote and path.is_dir():
        read, names = folder_access(path)
        starts = folder_run_starts(path.absolute().parent.parent)
    elif not isinstance(campaign_id, str) or not isinstance(destination, str) or not _SAFE_ID.match(campaign_id):
        raise LedgerError(f"{planned_file}: not a campaign's planned tasks (no campaign_id and destination)")
    elif remote and f"{destination.rstrip('/')}/{LEDGER_DIR}/{campaign_id}" != location.rstrip("/"):
        raise LedgerError(
            f"{planned_file}: names the campaign {campaign_id} at {destination}, whose ledger folder is not "
            f"{location.rstrip('/')}"
        )
    elif destination.startswith("s3://"):
        prefix = f"{destination.rstrip('/')}/{LEDGER_DIR}/{campaign_id}"
        try:
            store = Store()
            read, names = store_access(store, store.list(prefix + "/tasks"), prefix)
        except RemoteError as exc:
            raise LedgerError(str(exc)) from None
        starts = store_run_starts(store, destination)
    else:
        # A destination that is not there is not mounted on this host: its ledger cannot be
        # read, which is not "no task has started" (resume would submit every task again).
        # Unless nothing was ever submitted (a --dry-run's planned file has no NAME.submission
        # beside it): then no task can have started, and nothing has written the folder yet.
        submitted = not path.is_file() or submission_file(path).exists()
        if not Path(destination).is_dir() and (submitted or os.path.lexists(destination)):
            raise LedgerError(
                f"{destination}: the campaign's destination is not a folder on this host (not mounted here?); "
                "run status where it is mounted, or give the ledger folder DESTINATION/_campaigns/<id>"
            )
        if not Path(destination).is_dir():  # said, since a planned file copied alone reads the same
            _print(
                _printable(
                    f"campaign: warning: {destination} does not exist and no submission is recorded beside "
                    f"{path.name}: nothing was submitted from it (a --dry-run), or it was copied here without "
                    "its .submission and the destination is not mounted on this host"
                ),
                file=sys.stderr,
            )
        read, names = folder_access(Path(destination) / LEDGER_DIR / campaign_id)
        starts = folder_run_starts(Path(destination))
    try:
        ledger = read_ledger(planned, read, names, now=datetime.now(timezone.utc))
    except LedgerError as exc:  # a record named from the ledger folder: say which folder
        if not str(exc).startswith("tasks/"):
            raise
        where = path if not remote and path.is_dir() else f"{str(destination).rstrip('/')}/{LEDGER_DIR}/{campaign_id}"
        raise LedgerError(f"{where}/{exc}") from None
    return verify_runs(ledger, starts)


def _status(location: str, fmt: str) -> int:
    ledger = _load_ledger(location)
    if location.endswith(".planned.json") and Path(location).is_file():
        try:
            ledger = with_submissions(ledger, read_submissions(submission_file(Path(location))))
        except LedgerError as exc:  # the ledger is still shown, without what it would add
            _print(_printable(f"campaign: warning: {exc}; status shows the ledger without it"), file=sys.stderr)
    if fmt == "json":
        _print(
            json.dumps(
                {
                    "campaign": ledger.campaign,
                    "campaign_id": ledger.campaign_id,
                    "scheduler": ledger.scheduler,
                    "destination": ledger.destination,
                    "counts": ledger.counts(),
                    "tasks": [t.as_json() for t in ledger.tasks],
                },
                indent=1,
                sort_keys=True,
            )
        )
    else:
        counts = ", ".join(f"{n} {state}" for state, n in ledger.counts().items())
        _print(
            _printable(
                f"campaign {ledger.campaign_id} ({ledger.scheduler}) -> {ledger.destination}: {len(ledger.tasks)} task(s): {counts}"
            )
        )
        for task in ledger.tasks:
            _print(_printable(f"{task.task:>4}  {task.state:<8} {task.label}  {task.reason}"))
            latest = task.latest
            if latest is not None and task.state in ("failed", "stopped", "lost", "retrying"):
                for line in latest.tail:
                    _print(f"        | {_printable(line)}")
        if ledger.not_done():
            _print(_resume_hint(ledger))
    return 0 if not ledger.not_done() and all(t.state == "done" for t in ledger.tasks) else 1


def _queue_command(scheduler: str | None) -> str:
    """The command that shows a scheduler's queued tasks."""
    return "kubectl get pods" if scheduler == "kubernetes" else "squeue"


def _resume_hint(ledger: Ledger) -> str:
    """What `resume` would do with the tasks not done: the ones that ran and did not finish well
    it submits again; the ones with no record yet may be queued, so it leaves them out unless
    asked."""
    command = f"python -m campaign resume CAMPAIGN --scheduler {ledger.scheduler or 'slurm'}"
    never = sum(t.state == "unsubmitted" for t in ledger.tasks)
    resumable, unrecorded = len(ledger.resumable()) - never, len(ledger.unrecorded())
    words = [f"not done: {len(ledger.not_done())} task(s)"]
    if resumable:
        words.append(f"`{command}` submits again the {resumable} failed, stopped, lost or unverified")
    if never:
        words.append(f"{never} not submitted (sbatch refused them): `{command}` submits them")
    if unrecorded:
        queue = _queue_command(ledger.scheduler)
        words.append(
            f"{unrecorded} with no record yet (queued, or never started) are left out by resume unless "
            f"given --include-unrecorded, once `{queue}` shows they are not waiting"
        )
    stopped = sum(t.state == "stopped" for t in ledger.tasks)
    if stopped and ledger.scheduler == "slurm":
        # The wrapper says --requeue: a task stopped by `scontrol requeue` or a preemption is run
        # again by Slurm as its next attempt, which the ledger cannot tell from a time limit's stop.
        words.append(
            f"of the {stopped} stopped, one Slurm requeued (scontrol requeue, a preemption) runs again by itself: "
            "check `squeue` first, or resume submits it a second time"
        )
    if retrying := len(ledger.retrying()):
        words.append(
            f"{retrying} that ended with retries left are run again by their Job itself: resume leaves them out "
            f"unless given --include-unrecorded, once `{_queue_command(ledger.scheduler)}` shows the Job gone"
        )
    return "; ".join(words)


def _waiting_words(ledger: Any, tasks: list[int]) -> str:
    """Why ``tasks`` may still run, in words: no record yet (queued, or never started), or
    retried by their Job (an attempt that ended with retries left)."""
    retrying = set(ledger.retrying())
    said = []
    if any(t not in retrying for t in tasks):
        said.append("have no record yet, queued or never started")
    if any(t in retrying for t in tasks):
        said.append("ended with retries left, which their Job runs again itself")
    return " or ".join(said)


def _print(text: str, file: Any = None) -> None:
    """Print to the terminal: control characters, escape sequences and reordering characters
    from a campaign file or a ledger are shown as <U+XXXX>, never sent. Standard output that
    cannot be written is an OutputError (BrokenPipeError when its reader went away)."""
    try:
        print(terminal(text), file=file)
    except BrokenPipeError:
        raise
    except OSError as exc:
        if file not in (None, sys.stdout):
            raise
        raise OutputError(exc.strerror or exc) from None


def _arg(path: Path) -> str:
    """A path as one word of a printed command: quoted for the shell (a space, a quote), and on
    one line (a newline shown as <U+000A>)."""
    return _printable(shlex.quote(str(path)))


def _printable(text: str) -> str:
    """One line of the terminal: a newline from the ledger (a run's name, a label) shown as
    <U+000A>, so it cannot start a line that reads as another task's."""
    return visible(text, keep="\t")


def _resume(campaign: Campaign, args: argparse.Namespace) -> int:
    out = _default_out(campaign, args.scheduler, args.out)
    files = TaskFiles.beside(out, campaign.name)
    _check_out(files, args.campaign)
    if not files.planned.is_file():
        raise LedgerError(
            f"{files.planned}: no earlier submission of this campaign here (submit first, or give the same --out)"
        )
    ledger = _load_ledger(str(files.planned))
    found = _read_submissions(files)
    if found is None or found.campaign_id != ledger.campaign_id:
        found = Submissions(ledger.campaign_id, 0)  # none here yet, or another campaign's
    ledger = with_submissions(ledger, found)
    if ledger.scheduler != args.scheduler:
        raise LedgerError(
            f"{files.planned}: campaign {ledger.campaign_id} was submitted to {ledger.scheduler or 'another scheduler'}; resume it with --scheduler {ledger.scheduler or 'slurm'}"
        )
    if args.scheduler == "slurm":
        _check_wrapper(files, found)
    # The whole plan is compared, whatever is left to resume: tasks the file adds would never
    # run (resume submits only the ledger's), and an edit is refused, not silently ignored.
    try:  # (read as a whole just now, by _load_ledger)
        planned = strict_json(read_regular(files.planned, MAX_PLANNED_BYTES))
    except (OSError, *READ_ERRORS) as exc:
        raise LedgerError(f"{files.planned}: not a campaign's planned tasks ({exc})") from None
    differ = _plan_difference(campaign, args.scheduler, planned, files.planned.name)
    if differ:
        raise CampaignError(
            f"{campaign.path}: the campaign file no longer plans the tasks of {ledger.campaign_id} as {files.planned.name} does ({_printable(differ)[:300]}); submit it as a new campaign"
        )
    # What a later refusal, or resume, names: the scheduler, and the script sbatch reads.
    found = replace(found, scheduler=args.scheduler, wrapper=str(files.wrapper))
    # Tasks that may still run: queued with no record yet, or retried by their Job itself.
    unrecorded = sorted(ledger.unrecorded() + ledger.retrying())
    left_out = [] if args.include_unrecorded else unrecorded
    missing = sorted(ledger.resumable() + (unrecorded if args.include_unrecorded else []))
    waiting = _waiting_words(ledger, left_out)
    queue = _queue_command(args.scheduler)
    when = _printable(resubmitted(ledger, found, left_out))  # one line, whatever sbatch answered
    if not missing and left_out:
        _print(
            f"campaign {ledger.campaign_id}: nothing submitted: the {len(left_out)} task(s) left ({_indexes(left_out)}) "
            f"{waiting}{f' ({when})' if when else ''}; once `{queue}` shows they "
            "are not waiting, resume with --include-unrecorded"
        )
        return ONLY_UNRECORDED
    if not missing:
        _print(f"campaign {ledger.campaign_id}: every task is done or still running; nothing to resume")
        return 0
    tasks = [t for t in campaign.tasks() if t.index in set(missing)]
    # The next submission number: after every one the ledger shows, and every one given out here
    # (their tasks may not have started yet, so the ledger cannot show them: two resumes in a
    # row both took 2, and their attempts shared record, log and scratch names). It is recorded,
    # with the tasks it asks for, before they are submitted.
    submission = max(ledger.next_submission(), found.last + 1)
    # A Kubernetes resume only writes the manifest: its number is reserved, its tasks keep their
    # state (they are not known to be created) and a later resume takes them again.
    asked = Submission(submission, now(), tuple(missing), printed=args.scheduler == "kubernetes")
    if not args.dry_run and not _record_submission(files, found.added(asked)):
        return 1
    _print(
        f"campaign {ledger.campaign_id}: resuming {len(tasks)} task(s) not done ({_indexes(missing)}), submission {submission}"
    )
    if left_out:
        _print(
            (
                f"left out: {len(left_out)} task(s) with no record yet ({_indexes(left_out)}), queued or never started"
                if not set(left_out) & set(ledger.retrying())
                else f"left out: {len(left_out)} task(s) ({_indexes(left_out)}) that {waiting}"
            )
            + f"{f' ({when})' if when else ''}; once `{queue}` shows they are not waiting, --include-unrecorded "
            "submits them too"
        )
    if args.dry_run:
        _print(
            f"dry run: submission {submission} is not reserved; a later resume may take the same number, "
            "and with it the same record, log and object names: submit with resume, not from this output"
        )
    if args.scheduler == "kubernetes":
        document = kubernetes.manifest(campaign, ledger.campaign_id, planned, tasks=tasks, submission=submission)
        resumed = out.with_name(f"{out.stem}.resume{submission}{out.suffix}")
        try:
            write_file(resumed, (json.dumps(document, indent=2) + "\n").encode("utf-8"))
        except OSError as exc:
            _print(f"campaign: cannot write {exc.filename or resumed}: {exc.strerror or exc}", file=sys.stderr)
            return 1
        _print(f"wrote {_printable(str(resumed))}")
        if not args.dry_run:
            _print(f"submit:  {KUBECTL} {_arg(resumed)}")
            _print(
                f"note:    {files.submission.name} records submission {submission} as written, not created: its "
                "tasks keep their state until they start, so create it once and do not resume again before they start"
            )
        return 0
    code, jobs, refused = _sbatch(campaign, files, slurm.submissions(campaign, tasks), submission, args.dry_run)
    if args.dry_run:
        return code
    if not _record_submission(files, found.added(replace(asked, jobs=jobs, refused=refused))):
        return 1
    _say_refused(args.campaign, files, refused, len(tasks))
    return code


def _check_wrapper(files: TaskFiles, found: Submissions) -> None:
    """Refuse a Slurm resume whose --out names no script, or another script than the one the
    campaign was submitted with (still there): sbatch would refuse the first, and the second
    would run another campaign's tasks, or none."""
    recorded = found.wrapper
    if files.wrapper.is_file() and (recorded is None or recorded == str(files.wrapper) or not Path(recorded).is_file()):
        return
    if files.wrapper.is_file():  # (the recorded one is another, and there)
        raise CampaignError(
            f"{files.wrapper}: not the script campaign {found.campaign_id} was submitted with; resume with --out {recorded}"
        )
    was = (
        f"it was submitted with {recorded}: resume with --out {recorded}"
        if recorded and recorded != str(files.wrapper)
        else "give the --out it was submitted with"
    )
    raise CampaignError(
        f"{files.wrapper}: not a file, so sbatch cannot resubmit campaign {found.campaign_id} from it; {was}"
    )


def _indexes(indexes: list[int]) -> str:
    return ", ".join(str(i) for i in indexes)


def _plan_difference(campaign: Campaign, scheduler: str, planned: dict[str, Any], planned_name: str) -> str:
    """What differs between how the campaign file plans its tasks and how the ledger's
    planned.json (named ``planned_name``) does, in words ('' when nothing): how many tasks, and
    each one's workload, arguments, environment, target, repeat; the environments' image,
    devices, node selector, CPUs, memory, interpreter and Slurm options; where the tasks deliver.
    A resumed task is built from the file (a Kubernetes ConfigMap; Slurm rereads NAME.tasks), so
    an edited file would otherwise run another plan than the ledger says the task is. A plan
    path is resolved in this checkout: resumed from another checkout, the same file names other
    paths."""
    root = campaign.kubernetes.workdir if scheduler == "kubernetes" else slurm.collector_root(campaign)
    current = planned_ledger(campaign, "", scheduler, root, 0)
    now = current["tasks"]
    recorded = planned.get("tasks") if isinstance(planned, dict) else None
    if not isinstance(recorded, list):
        return f"{planned_name} lists no tasks"
    if len(now) != len(recorded):
        return f"the campaign file plans {len(now)} task(s), {planned_name} {len(recorded)}"
    then = {t.get("task"): t for t in recorded if isinstance(t, dict)}
    for task in now:
        i = task["task"]
        was = then.get(i)
        if not isinstance(was, dict):
            return f"{planned_name} does not list task {i}"
        for key, value in task.items():
            if was.get(key) != value:
                hint = f" (resumed from another checkout than {root}?)" if key == "plan" else ""
                return f"task {i}'s {key} is {value!r} here, {was.get(key)!r} in the ledger{hint}"
    # The environments as the scheduler is asked for them (a ledger from before they were
    # recorded is compared by its tasks alone).
    envs = planned.get("environments")
    if isinstance(envs, dict):
        for name in sorted({task["environment"] for task in now}):
            if envs.get(name) != current["environments"].get(name):
                return f"environment {name} asks the scheduler for other resources or another image"
    # And where they deliver: another destination, claim or namespace would put the resumed runs
    # and records where status and the site never look (every resume would submit them again).
    if planned.get("destination") != campaign.destination:
        return f"the destination is {campaign.destination!r} here, {planned.get('destination')!r} in the ledger"
    delivery = planned.get("delivery")
    if isinstance(delivery, dict) and delivery != current["delivery"]:
        return "the tasks deliver elsewhere or otherwise (upload, namespace, volume claim, working folder)"
    return ""


if __name__ == "__main__":
    sys.exit(main())
