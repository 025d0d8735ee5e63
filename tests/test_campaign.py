"""The campaign file (strict), the Slurm job array, the Kubernetes Indexed Jobs, the task script
and the ledger.

The task script (campaign/task.sh) is run here with bash and a stand-in interpreter to check
what each array index does; the Slurm cluster test (test_campaign_cluster.py) runs it under a
real sbatch. The manifest is loaded through the official kubernetes client's model classes: no
cluster is reachable here, so that is as far as it is checked.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from campaign import kubernetes, slurm
from campaign.__main__ import main
from campaign.spec import CampaignError, load_campaign
from campaign.tasks import TaskFiles
from tests.hostile import deadline

ID = "nightly-20261202T000000Z"


def kubernetes_manifest(campaign: Any, campaign_id: str = ID) -> dict[str, Any]:
    return kubernetes.manifest(campaign, campaign_id, {"tasks": []})


def slurm_script(campaign: Any, logs: Path, name: str = "SCRIPT", campaign_id: str = ID) -> str:
    files = TaskFiles.beside(logs.parent / name, campaign.name)
    return slurm.wrapper(campaign, files, logs, campaign_id)


REPO = Path(__file__).resolve().parent.parent

BASE = """\
[campaign]
name = "nightly"
destination = "{destination}"
repeats = 2

[[workload]]
plan = "collector/workloads/tiny_encoder.toml"
args = ["--modes", "eager", "--only", "b1-*"]

[[workload]]
plan = "/abs/minilm.toml"

[[environment]]
name = "sdk-2.33"
target = "neuron"
python = "/fsx/venvs/neuron-2.33/bin/python"
image = "registry.example/migration-record:2.33"
node_selector = {{ "node.kubernetes.io/instance-type" = "trn1.32xlarge" }}

[[environment]]
name = "cuda-baseline"
target = "cuda"
python = "/fsx/venvs/cuda/bin/python"
image = "registry.example/migration-record:cuda"
devices = 2
"""


def write(tmp_path: Path, text: str, name: str = "campaign.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_tasks_are_repeats_by_environments_by_workloads(tmp_path: Path) -> None:
    """Replicates interleave: each round of repeats takes every environment once."""
    campaign = load_campaign(write(tmp_path, BASE.format(destination="s3://fleet-runs/nightly")))
    tasks = campaign.tasks()
    assert len(tasks) == 2 * 2 * 2
    assert [t.index for t in tasks] == list(range(8))
    assert [t.label for t in tasks] == [
        "tiny_encoder/sdk-2.33/r1",
        "minilm/sdk-2.33/r1",
        "tiny_encoder/cuda-baseline/r1",
        "minilm/cuda-baseline/r1",
        "tiny_encoder/sdk-2.33/r2",
        "minilm/sdk-2.33/r2",
        "tiny_encoder/cuda-baseline/r2",
        "minilm/cuda-baseline/r2",
    ]
    assert campaign.remote and campaign.destination == "s3://fleet-runs/nightly"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda t: t + "\n[extra]\nx = 1\n", "unknown key 'extra'"),
        (lambda t: t.replace("repeats = 2", "repeats = 2\nrepeat = 3"), "campaign: unknown key 'repeat'"),
        (lambda t: t.replace("repeats = 2", 'repeats = "2"'), "campaign.repeats: expected an integer, got a string"),
        (lambda t: t.replace("repeats = 2", "repeats = 0"), "campaign.repeats: must be at least 1"),
        (lambda t: t.replace("repeats = 2", "repeats = true"), "campaign.repeats: expected an integer, got a boolean"),
        (lambda t: t.replace('name = "nightly"', 'name = "../x"'), "campaign.name: use letters"),
        (lambda t: t.replace('name = "nightly"', 'name = "nightly-"'), "campaign.name: use letters"),
        (lambda t: t.replace('name = "cuda-baseline"', 'name = "cuda baseline"'), "environment[1].name: use letters"),
        (lambda t: t.replace('target = "cuda"', 'target = "tpu"'), "environment[1].target: one of cpu, cuda, neuron"),
        (lambda t: t.replace("devices = 2", "devices = 2\ngpus = 1"), "environment[1]: unknown key 'gpus'"),
        (lambda t: t.replace('name = "cuda-baseline"', 'name = "sdk-2.33"'), "environment names must be unique"),
        (lambda t: t.replace('"--modes", "eager"', '"--out", "/tmp/x"'), "'--out' sets the collector's --out"),
        (lambda t: t.replace('"--modes", "eager"', '"--target=cpu"'), "'--target=cpu' sets the collector's --target"),
        (lambda t: t.replace("args = [", "args = [1, "), "workload[0].args: expected a list of single-line strings"),
        (lambda t: t.replace('plan = "/abs/minilm.toml"', ""), "workload[1]: missing 'plan'"),
        (
            lambda t: t.replace("s3://fleet-runs/nightly", "gs://bucket/x"),
            "campaign.destination: a folder or an s3:// prefix",
        ),
        (lambda t: t.replace("s3://fleet-runs/nightly", "s3://"), "has no valid bucket name"),
        (lambda t: t.replace("s3://fleet-runs/nightly", "s3://fleet..runs/x"), "has no valid bucket name"),
        (lambda t: t.replace("s3://fleet-runs/nightly", "s3://fleet-runs/a//b"), "no empty, '.' or '..' parts"),
        (lambda t: t.replace("s3://fleet-runs/nightly", "s3://fleet-runs/a/../b"), "no empty, '.' or '..' parts"),
        (lambda t: t.replace("s3://fleet-runs/nightly", "s3://fleet-runs/./b"), "no empty, '.' or '..' parts"),
        (lambda t: t.replace("s3://fleet-runs/nightly", "runs/here"), "a folder is an absolute path"),
        (lambda t: t + '\n[slurm]\ncollector_root = "fsx/mr"\n', "slurm.collector_root: an absolute path"),
        (lambda t: t + '\n[slurm]\nscratch = "$(reboot)"\n', "slurm.scratch: an absolute path"),
        (lambda t: t + '\n[slurm]\nsbatch = ["--constraint=trn1\\n#SBATCH --uid=0"]\n', "workload"),
        (
            lambda t: t + '\n[slurm]\nsbatch = ["--constraint=trn1 --uid=0"]\n',
            "slurm.sbatch: each entry is one long option",
        ),
        (lambda t: t + '\n[slurm]\ntime = "soon"\n', "slurm.time: a Slurm time"),
        (lambda t: t + '\n[slurm]\ntime = "\u0660\u0662:00:00"\n', "slurm.time: a Slurm time"),
        (lambda t: t + '\n[slurm]\npartition = "trn1 --uid=0"\n', "slurm.partition: partition names"),
        (lambda t: t + '\n[kubernetes]\nnamespace = "Prod_1"\n', "kubernetes.namespace: a DNS label"),
        # Kubernetes values: what the API server (or a shell, or a YAML reader) would take apart.
        (
            lambda t: t.replace(":cuda", ":1 $(id) `id`"),
            "environment[1].image: an image reference such as",
        ),
        (lambda t: t.replace(":cuda", ":1$(id)"), "environment[1].image: an image reference such as"),
        (
            lambda t: t.replace('"node.kubernetes.io/instance-type" =', '"bad key $(id)" ='),
            "environment[0].node_selector: 'bad key $(id)' is not a label key",
        ),
        (
            lambda t: t.replace('"node.kubernetes.io/instance-type" =', '"Bad_Host.example/type" ='),
            "environment[0].node_selector: 'Bad_Host.example/type' is not a label key",
        ),
        (
            lambda t: t.replace('"node.kubernetes.io/instance-type" =', '"x/' + "n" * 64 + '" ='),
            "is not a label key",
        ),
        (
            lambda t: t.replace('"trn1.32xlarge"', '"v a l\\u0007"'),
            "environment[0].node_selector.node.kubernetes.io/instance-type: a label value",
        ),
        (lambda t: t.replace('"trn1.32xlarge"', '"' + "v" * 64 + '"'), "instance-type: a label value"),
        (
            lambda t: t + '\n[kubernetes]\nservice_account = "SA with space"\n',
            "kubernetes.service_account: a Kubernetes object name",
        ),
        (
            lambda t: t + '\n[kubernetes]\nvolume_claim = "My Claim!"\n',
            "kubernetes.volume_claim: a Kubernetes object name",
        ),
        (
            lambda t: t.replace("s3://fleet-runs/nightly", "/fsx/../etc"),
            "campaign.destination: an absolute path with no '.' or '..' parts, got '/fsx/../etc'",
        ),
        (
            lambda t: t + '\n[kubernetes]\nworkdir = "/opt/./mr/.."\n',
            "kubernetes.workdir: an absolute path with no '.' or '..' parts",
        ),
        # Kubernetes expands $(NAME) and $$ in a task's environment, not in a mount path.
        (
            lambda t: t.replace("s3://fleet-runs/nightly", "/fsx/runs$$x/$(MIGRATION_RECORD_CAMPAIGN_ID)"),
            "campaign.destination: no '$'",
        ),
        (lambda t: t.replace("s3://fleet-runs/nightly", "s3://fleet-runs/$(HOME)"), "campaign.destination: no '$'"),
        (lambda t: t + '\n[kubernetes]\nworkdir = "/opt/$(HOME)"\n', "kubernetes.workdir: no '$'"),
        (
            lambda t: t + "\n[kubernetes]\ndeadline_s = 9223372036854775807\n",
            "kubernetes.deadline_s: must be at most 2147483647, got 9223372036854775807",
        ),
        (
            lambda t: t + "\n[kubernetes]\ngrace_period_s = 2147483648\n",
            "kubernetes.grace_period_s: must be at most 2147483647",
        ),
        # Counts Kubernetes keeps in 32 bits; tomllib reads integers of any size.
        (
            lambda t: t + "\n[kubernetes]\nbackoff_limit_per_index = 2147483648\n",
            "kubernetes.backoff_limit_per_index: must be at most 2147483647",
        ),
        (lambda t: t.replace("devices = 2", "devices = " + "9" * 40), "environment[1].devices: must be at most"),
        (lambda t: t.replace("devices = 2", "devices = 2\ncpus = 2147483648"), "environment[1].cpus: must be at most"),
        (lambda t: t.replace("s3://fleet-runs/nightly", "//"), "campaign.destination: a folder below the root"),
        # So many digits that int() refuses them (a traceback once).
        (lambda t: t + '\n[slurm]\ntime = "' + "9" * 5000 + '-00"\n', "slurm.time: a Slurm time"),
        (
            lambda t: t + '\n[[workload]]\nplan = "/abs/minilm.toml"\n',
            "workload[2]: the same plan and args as workload[1]; for more runs of it raise campaign.repeats",
        ),
        # The same plan spelt otherwise, or an option joined to its value, is the same (a review:
        # three tasks of one run).
        (
            lambda t: (
                t
                + '\n[[workload]]\nplan = "/abs/minilm.toml"\nargs = ["--modes=eager"]\n'
                + '\n[[workload]]\nplan = "/abs/minilm.toml"\nargs = ["--modes", "eager"]\n'
            ),
            "workload[3]: the same plan and args as workload[2]; for more runs of it raise campaign.repeats",
        ),
        (
            lambda t: t + '\n[[workload]]\nplan = "/abs//./minilm.toml"\n',
            "workload[2]: the same plan and args as workload[1]; for more runs of it raise campaign.repeats",
        ),
        (lambda t: t + "\n[campaign2]\n", "unknown key 'campaign2'"),
        (lambda t: t.replace("[[environment]]", "[environment_x]", 1), "unknown key"),
        (lambda t: "[campaign\n", "not valid TOML"),
        (lambda t: t + "\nx = " + "[" * 100_000 + "]" * 100_000 + "\n", "not valid TOML: nested too deeply"),
    ],
)
def test_campaign_file_is_strict(tmp_path: Path, change: Any, message: str) -> None:
    path = write(tmp_path, change(BASE.format(destination="s3://fleet-runs/nightly")))
    with pytest.raises(CampaignError) as err:
        load_campaign(path)
    text = str(err.value)
    assert text.startswith(str(path)), text
    if message == "workload":  # a newline smuggled into an #SBATCH line
        assert "single-line" in text, text
    else:
        assert message in text, text


@pytest.mark.parametrize(
    ("arg", "option"),
    [
        ("--targ=cuda", "--target"),
        ("--t", "--target"),
        ("--ou=/x", "--out"),
        ("--o", "--out"),  # ambiguous for argparse (--only too): refused all the same
        ("--work=/p/heat_solver.toml", "--workload"),
        ("--w", "--workload"),
        ("--lis", "--list"),
        ("--list", "--list"),
    ],
)
def test_workload_args_cannot_set_reserved_options_by_prefix(tmp_path: Path, arg: str, option: str) -> None:
    """An earlier collector's argparse took an unambiguous prefix of a long option: --targ=cuda
    switched the target the ledger records. This one refuses it; the campaign refuses it at submit."""
    path = write(tmp_path, BASE.format(destination="s3://fleet-runs/nightly").replace('"--modes", "eager"', f'"{arg}"'))
    with pytest.raises(CampaignError) as err:
        load_campaign(path)
    whole = arg.split("=", 1)[0] == option
    said = "sets the collector's" if whole else "is a prefix of the collector's"
    assert f"workload[0].args: {arg!r} {said} {option}" in str(err.value)


def test_reserved_options_are_the_collectors_and_other_args_pass(tmp_path: Path) -> None:
    """The reserved list names options of the collector's own parser (read from it, not copied),
    and the options a workload may set (--modes, --only, --warm, --profile, ...) still pass."""
    import argparse

    import collector.__main__ as collector_cli
    from campaign.spec import RESERVED_ARGS

    seen: list[argparse.ArgumentParser] = []

    def capture(self: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        seen.append(self)
        raise SystemExit(0)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(collector_cli._Parser, "parse_args", capture)
        with pytest.raises(SystemExit):
            collector_cli.parse_args([])
    options = set(seen[0]._option_string_actions)
    assert set(RESERVED_ARGS) <= options
    allowed = ["--modes=eager", "--only", "b1-*", "--warm", "5", "--profile", "--cold=off", "--max-cells=3", "--"]
    path = write(
        tmp_path,
        BASE.format(destination="s3://fleet-runs/nightly").replace('"--modes", "eager"', json.dumps(allowed)[1:-1]),
    )
    assert load_campaign(path).workloads[0].args[: len(allowed)] == tuple(allowed)


def test_cli_bad_campaign_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, BASE.format(destination="s3://fleet-runs/nightly").replace("repeats = 2", "repeats = -1"))
    assert main(["submit", str(path), "--scheduler", "slurm", "--dry-run", "--out", str(tmp_path / "x.sbatch")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "campaign.repeats: must be at least 1" in err
    assert not (tmp_path / "x.sbatch").exists()


def test_unreadable_or_unwritable_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["submit", str(tmp_path / "missing.toml"), "--scheduler", "slurm", "--dry-run"]) == 2
    assert "missing.toml: cannot read" in capsys.readouterr().err
    path = write(tmp_path, BASE.format(destination="s3://fleet-runs/nightly"))
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert main(["submit", str(path), "--scheduler", "kubernetes", "--out", str(blocker / "jobs.json")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("campaign: cannot write") and err.count("\n") == 1
    assert main(["submit", str(path), "--scheduler", "slurm", "--dry-run", "--out", str(blocker / "x.sbatch")]) == 1
    assert "\ncampaign: cannot write" in capsys.readouterr().err


def test_scheduler_specific_requirements(tmp_path: Path) -> None:
    no_python = BASE.format(destination="s3://b-1/x").replace('python = "/fsx/venvs/cuda/bin/python"\n', "")
    with pytest.raises(CampaignError, match="'cuda-baseline' has no 'python'"):
        slurm_script(load_campaign(write(tmp_path, no_python)), tmp_path)
    no_image = BASE.format(destination="s3://b-1/x").replace('image = "registry.example/migration-record:cuda"\n', "")
    with pytest.raises(CampaignError, match="'cuda-baseline' has no 'image'"):
        kubernetes_manifest(load_campaign(write(tmp_path, no_image)))
    clash = BASE.format(destination="s3://b-1/x").replace('name = "cuda-baseline"', 'name = "SDK_2.33"')
    with pytest.raises(CampaignError, match="same Job name 'nightly-sdk-2-33'"):
        kubernetes_manifest(load_campaign(write(tmp_path, clash)))
    folder = BASE.format(destination="/fsx/runs")
    with pytest.raises(CampaignError, match="needs kubernetes.volume_claim"):
        kubernetes_manifest(load_campaign(write(tmp_path, folder)))


def test_kubernetes_values_kubernetes_takes_pass(tmp_path: Path) -> None:
    """The checks refuse only what Kubernetes would: a prefixed label key, an empty label value,
    an image with a registry port and a digest, dotted object names all pass into the manifest."""
    image = "registry.example:5000/team/migration-record:2.33@sha256:" + "a" * 64
    text = (
        BASE.format(destination="/fsx/runs")
        .replace("registry.example/migration-record:cuda", image)
        .replace('"trn1.32xlarge" }', '"trn1.32xlarge", "example.com/pool" = "", "Tier_1" = "A.b-c_9" }')
        + '\n[kubernetes]\nservice_account = "runs-writer.v1"\nvolume_claim = "fsx.runs-1"\nworkdir = "/opt/mr"\n'
    )
    manifest = kubernetes_manifest(load_campaign(write(tmp_path, text)))
    neuron, cuda = manifest["items"][1:]
    for job in (neuron, cuda):
        _check_model(job, "V1Job", "job")
    assert neuron["spec"]["template"]["spec"]["nodeSelector"] == {
        "node.kubernetes.io/instance-type": "trn1.32xlarge",
        "example.com/pool": "",
        "Tier_1": "A.b-c_9",
    }
    pod = cuda["spec"]["template"]["spec"]
    assert pod["containers"][0]["image"] == image and pod["serviceAccountName"] == "runs-writer.v1"
    assert pod["volumes"][1]["persistentVolumeClaim"] == {"claimName": "fsx.runs-1"}


def test_kubernetes_deadlines_stay_within_what_kubernetes_takes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The largest deadline_s and grace_period_s accepted give a pod deadline Kubernetes takes
    (at most 2**31 - 1) and a Job deadline far inside an int64; a [slurm] time longer than
    that, the default deadline, is refused for Kubernetes with one line naming it."""
    most = (1 << 31) - 1
    text = BASE.format(destination="s3://fleet-runs/nightly").replace("repeats = 2", "repeats = 2\nmax_parallel = 2")
    path = write(tmp_path, text + f"\n[kubernetes]\ndeadline_s = {most}\ngrace_period_s = {most}\n")
    for job in kubernetes_manifest(load_campaign(path))["items"][1:]:
        assert job["spec"]["parallelism"] == 1 and job["spec"]["completions"] == 4
        assert job["spec"]["template"]["spec"]["activeDeadlineSeconds"] == most
        assert job["spec"]["activeDeadlineSeconds"] == 2 * most * 4 < 1 << 63
    path.write_text(text + '\n[slurm]\ntime = "30000-00:00:00"\n')
    out = tmp_path / "jobs.json"
    assert main(["submit", str(path), "--scheduler", "kubernetes", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert (
        err.count("\n") == 1
        and (
            f"{path}: slurm.time 30000-00:00:00 is 2592000000 s, more than the {most} s Kubernetes lets a pod run; set kubernetes.deadline_s"
        )
        in err
    )
    assert not out.exists() and not (tmp_path / "nightly.planned.json").exists()
    path.write_text(text + '\n[slurm]\ntime = "30000-00:00:00"\n[kubernetes]\ndeadline_s = 86400\n')
    assert main(["submit", str(path), "--scheduler", "kubernetes", "--out", str(out)]) == 0


def test_kubernetes_config_map_past_1_mib_is_refused_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A ConfigMap's data may hold 1 MiB; 4,000 tasks' lists and planned tasks hold more. Such a
    campaign is refused with one line saying how large and what to do; half of it passes."""
    text = BASE.format(destination="s3://fleet-runs/nightly")
    path = write(tmp_path, text.replace("repeats = 2", "repeats = 1000"))
    out = tmp_path / "jobs.json"
    assert main(["submit", str(path), "--scheduler", "kubernetes", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{path}: the Kubernetes ConfigMap for its 4000 task(s) would hold " in err
    assert "more than the 1,048,576 bytes Kubernetes allows; split the campaign into campaigns of fewer tasks" in err
    assert not out.exists() and not list(tmp_path.glob("nightly.*"))
    path.write_text(text.replace("repeats = 2", "repeats = 500"))
    assert main(["submit", str(path), "--scheduler", "kubernetes", "--out", str(out)]) == 0
    assert f"submit:  kubectl create -f {out}" in capsys.readouterr().out
    data = json.loads(out.read_text())["items"][0]["data"]
    assert 512 * 1024 < sum(len(v.encode()) for v in data.values()) <= 1 << 20


def test_task_labels_are_unique(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The same plan with other args, or two plans of the same file name, would share labels:
    each such workload's label carries its position. The same plan and args twice is refused
    (test_campaign_file_is_strict)."""
    text = BASE.format(destination="s3://fleet-runs/nightly").replace("repeats = 2", "repeats = 1") + (
        '\n[[workload]]\nplan = "collector/workloads/tiny_encoder.toml"\nargs = ["--modes", "compiled"]\n'
        '\n[[workload]]\nplan = "/other/minilm.toml"\n'
    )
    path = write(tmp_path, text)
    assert main(["submit", str(path), "--scheduler", "slurm", "--list"]) == 0
    labels = [line.split("\t")[1] for line in capsys.readouterr().out.splitlines()]
    assert labels[:4] == [
        "tiny_encoder[0]/sdk-2.33/r1",
        "minilm[1]/sdk-2.33/r1",
        "tiny_encoder[2]/sdk-2.33/r1",
        "minilm[3]/sdk-2.33/r1",
    ]
    assert len(set(labels)) == len(labels) == 8
    # A stem that looks like a suffixed one cannot make two labels alike either.
    clash = text.replace('plan = "/abs/minilm.toml"', 'plan = "/abs/tiny_encoder[2].toml"')
    with pytest.raises(
        CampaignError, match=r"workload\[2\]: its tasks would be labelled 'tiny_encoder\[2\]' as workload\[1\]'s are"
    ):
        load_campaign(write(tmp_path, clash))


def test_kubernetes_folder_destination_is_not_written_on_this_host(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """On Kubernetes a folder destination is the claim's mount path inside the pods: submit
    writes no ledger folder there on this host (the tasks write it), says where it goes, and
    makes no Slurm log folder. A Slurm dry run writes nothing into the destination either (a
    site built from it would list a campaign never submitted); a Slurm submission to a folder
    the login node mounts gets planned.json at once."""
    runs = tmp_path / "runs"
    path = write(tmp_path, BASE.format(destination=runs) + '\n[kubernetes]\nvolume_claim = "fsx-runs"\n')
    assert main(["submit", str(path), "--scheduler", "kubernetes", "--out", str(tmp_path / "jobs.json")]) == 0
    out = capsys.readouterr().out
    assert not runs.exists() and not (tmp_path / "nightly-logs").exists()
    assert f"ledger:  the tasks write it into {runs}/_campaigns/nightly-" in out and "on claim fsx-runs" in out
    # Its files (nightly.planned.json, nightly.submission) are that campaign's: the Slurm one's go elsewhere.
    slurm = tmp_path / "slurm"
    slurm.mkdir()
    assert main(["submit", str(path), "--scheduler", "slurm", "--dry-run", "--out", str(slurm / "n.sbatch")]) == 0
    assert not runs.exists() and str(runs) not in capsys.readouterr().out
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sbatch").write_text("#!/bin/bash\necho 4242\n")
    (bin_dir / "sbatch").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    assert main(["submit", str(path), "--scheduler", "slurm", "--out", str(slurm / "n.sbatch")]) == 0
    assert len(list((runs / "_campaigns").glob("nightly-*/planned.json"))) == 1


# ---- Slurm script ---------------------------------------------------------------------------

FAKE_PYTHON = """\
#!/bin/bash
# Stands in for an environment's interpreter: records its arguments, writes a run folder.
out=""; prev=""
for arg in "$@"; do [ "$prev" = "--out" ] && out="$arg"; prev="$arg"; done
printf '%s\\n' "$PWD" "$PYTHONPATH" "$@" > "{record}"
env | grep '^MIGRATION_RECORD_' | sort >> "{record}"
mkdir -p "$out/run-$SLURM_ARRAY_TASK_ID"
echo '{{"partial": true}}' > "$out/run-$SLURM_ARRAY_TASK_ID/events.jsonl"
exit {code}
"""


def _script_for(tmp_path: Path, code: int) -> tuple[Path, Path, Path]:
    record = tmp_path / "args.txt"
    fake = tmp_path / "fake-python"
    fake.write_text(FAKE_PYTHON.format(record=record, code=code))
    fake.chmod(0o755)
    text = f"""\
[campaign]
name = "unit"
destination = "{tmp_path / "shared" / "runs"}"

[[workload]]
plan = "plans/enc oder.toml"           # relative to collector_root
args = ["--modes", "eager", "--only", "b1-* $(touch {tmp_path}/pwned)"]

[[environment]]
name = "cpu"
target = "cpu"
python = "{fake}"

[slurm]
partition = "trn1"
sbatch = ["--constraint=trn1.32xlarge"]
collector_root = "{tmp_path}"
scratch = "{tmp_path / "scratch"}"
"""
    campaign = write(tmp_path, text)
    script = tmp_path / "unit.sbatch"
    assert main(["submit", str(campaign), "--scheduler", "slurm", "--dry-run", "--out", str(script)]) == 0
    (tmp_path / "shared" / "runs").mkdir(parents=True)  # the shared folder, as a submit finds it mounted
    return script, record, tmp_path / "shared" / "runs"


def test_slurm_script_headers_are_editable_sbatch_lines(tmp_path: Path) -> None:
    script, _, _ = _script_for(tmp_path, 0)
    text = script.read_text()
    headers = [line for line in text.splitlines() if line.startswith("#SBATCH")]
    assert "#SBATCH --array=0" in headers and "#SBATCH --exclusive" in headers
    assert "#SBATCH --partition=trn1" in headers and "#SBATCH --constraint=trn1.32xlarge" in headers
    assert f'#SBATCH --output="{tmp_path}/unit-logs/%x-%A_%a.out"' in headers
    # sbatch stops reading #SBATCH lines at the first command: all of them come first.
    first_command = next(i for i, line in enumerate(text.splitlines()) if line and not line.startswith("#"))
    assert all(i < first_command for i, line in enumerate(text.splitlines()) if line.startswith("#SBATCH"))
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    assert (tmp_path / "unit-logs").is_dir()


def _sbatch_argument(text: str) -> str:
    """One #SBATCH argument as sbatch reads it (src/sbatch/opt.c _get_argument): quotes group,
    a backslash escapes the next character, an unquoted '#' or whitespace ends it."""
    out, quote, escape = [], "", False
    for char in text:
        if escape:
            escape = False
        elif char == "\\":
            escape = True
            continue
        elif quote:
            if char == quote:
                quote = ""
                continue
        elif char in "\"'":
            quote = char
            continue
        elif char == "#" or char.isspace():
            break
        out.append(char)
    return "".join(out)


def test_slurm_script_keeps_outside_names_out_of_its_lines(tmp_path: Path) -> None:
    """A campaign file name with a newline cannot end the comment it is written in (the rest
    would run as a command, and sbatch would stop reading #SBATCH lines there), and a folder
    with a space or '%' is one --output argument. The script is parsed, never run."""
    folder = tmp_path / "my dir %j"
    folder.mkdir()
    path = write(folder, BASE.format(destination="s3://fleet-runs/nightly"), name="nightly\nid > PWNED #\n.toml")
    script = folder / "out dir" / "n.sbatch"
    script.parent.mkdir()
    assert main(["submit", str(path), "--scheduler", "slurm", "--dry-run", "--out", str(script)]) == 0
    lines = script.read_text().splitlines()
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    first_command = next(i for i, line in enumerate(lines) if line and not line.startswith("#"))
    assert lines[first_command].startswith("export MIGRATION_RECORD_CAMPAIGN=")
    assert not any("PWNED" in line and not line.startswith("#") for line in lines)
    assert any("nightly<U+000A>id > PWNED #<U+000A>.toml" in line for line in lines[:first_command])
    headers = {line.split("=", 1)[0]: line for line in lines[:first_command] if line.startswith("#SBATCH --")}
    assert {"#SBATCH --array", "#SBATCH --time", "#SBATCH --output", "#SBATCH --job-name"} <= set(headers)
    output = _sbatch_argument(headers["#SBATCH --output"].split("=", 1)[1])
    assert output == f"{folder}/out dir/nightly-logs/%x-%A_%a.out".replace("%j", "%%j")
    assert not (tmp_path / "PWNED").exists() and not Path("PWNED").exists()


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _dev_null(path: Path) -> None:
    path.symlink_to("/dev/null")


def _link_to_a_file(path: Path) -> None:
    (path.parent.parent / "elsewhere").mkdir()
    (path.parent.parent / "elsewhere" / "kept").write_text("kept\n")
    path.symlink_to("../elsewhere/kept")


def _dangling_link(path: Path) -> None:
    (path.parent.parent / "elsewhere").mkdir()
    path.symlink_to("../elsewhere/made")


@pytest.mark.parametrize(
    "make", [_fifo, _dev_null, _link_to_a_file, _dangling_link], ids=["fifo", "device", "link", "dangling-link"]
)
@pytest.mark.parametrize("scheduler", ["slurm", "kubernetes"])
def test_an_output_that_is_not_a_regular_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], scheduler: str, make: Any
) -> None:
    """--out naming a FIFO waited for a reader for ever (a device was written to). Now one
    line, exit 1, and no temporary file is left beside it. A link was followed: the file it led
    to was replaced, the other files written beside that one (into /dev for a link to
    /dev/null), a dangling link's target made; plan-check and annotate refuse a link."""
    path = write(tmp_path, BASE.format(destination="s3://fleet-runs/nightly"))
    out = tmp_path / "out" / ("n.sbatch" if scheduler == "slurm" else "jobs.json")
    out.parent.mkdir()
    make(out)
    with deadline(20):
        code = main(["submit", str(path), "--scheduler", scheduler, "--dry-run", "--out", str(out)])
    assert code == 1
    lines = [line for line in capsys.readouterr().err.splitlines() if "cannot write" in line]
    assert (
        len(lines) == 1
        and lines[0]
        == f"campaign: cannot write {out}: not a regular file (a directory, link, device or pipe); only a file is replaced"
    )
    assert [p.name for p in out.parent.iterdir()] == [out.name], "nothing written beside it, no temporary file"
    if (tmp_path / "elsewhere").exists():
        assert [p.name for p in (tmp_path / "elsewhere").iterdir()] == (["kept"] if out.exists() else [])
        assert not out.exists() or out.read_text() == "kept\n"


@pytest.mark.parametrize(
    "argv",
    [
        ["submit", "CAMPAIGN", "--scheduler", "slurm", "--dry-run", "--out", ""],
        ["submit", "CAMPAIGN", "--scheduler", "kubernetes", "--out", ""],
        ["resume", "CAMPAIGN", "--scheduler", "slurm", "--dry-run", "--out", ""],
        ["submit", "", "--scheduler", "slurm", "--dry-run"],
        ["status", ""],
    ],
    ids=["submit-slurm-out", "submit-kubernetes-out", "resume-out", "campaign", "status"],
)
def test_an_empty_path_is_a_usage_error_and_nothing_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    """Path("") is the current folder: --out "" made NAME-logs/ in the folder above it (the
    files go beside --out) before failing to replace the current folder with the script."""
    path = write(tmp_path, BASE.format(destination=str(tmp_path / "runs")))
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    with pytest.raises(SystemExit) as exc:
        main([str(path) if word == "CAMPAIGN" else word for word in argv])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1].endswith("an empty path; name a file"), err
    assert "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["campaign.toml", "here"] and not any(here.iterdir())


def test_slurm_refuses_an_output_folder_sbatch_cannot_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, BASE.format(destination="s3://fleet-runs/nightly"))
    folder = tmp_path / "a\nb"
    folder.mkdir()
    assert main(["submit", str(path), "--scheduler", "slurm", "--dry-run", "--out", str(folder / "n.sbatch")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "a<U+000A>b" in err and "choose another --out" in err


def _ledger(destination: Path) -> Path:
    (folder,) = (destination / "_campaigns").iterdir()
    return folder


def test_a_queued_task_never_runs_another_campaigns_tasks_file(tmp_path: Path) -> None:
    """A second submit with the same --out replaces NAME.tasks while the first campaign's tasks
    may still be queued or requeued (Slurm keeps each job's script as submitted): such a task ran
    the second campaign's plan and delivered its planned tasks into the first's ledger."""
    script, record, destination = _script_for(tmp_path, 0)
    kept = tmp_path / "first.sbatch"
    kept.write_text(script.read_text())  # the first job's script, as Slurm keeps it
    tasks = tmp_path / "unit.tasks"
    first_id = tasks.read_text().splitlines()[0].split("\t")[1]
    tasks.write_text(tasks.read_text().replace(first_id, "unit-20991231T000000Z"))  # the next submission's
    env = {**os.environ, "SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_JOB_ID": "42", "SLURM_RESTART_COUNT": "1"}
    proc = subprocess.run(["bash", str(kept)], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "now holds the tasks of campaign unit-20991231T000000Z" in proc.stderr
    assert not record.exists() and not any(destination.iterdir())  # nothing ran, nothing delivered


@pytest.mark.parametrize("code", [0, 3])
def test_slurm_task_runs_collector_as_by_hand_and_moves_run(tmp_path: Path, code: int) -> None:
    script, record, destination = _script_for(tmp_path, code)
    env = {**os.environ, "SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_JOB_ID": "42"}
    proc = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == code, proc.stderr
    lines = record.read_text().splitlines()
    assert lines[0] == str(tmp_path) and lines[1].split(":")[0] == str(tmp_path)
    ledger = _ledger(destination)
    scratch = tmp_path / "scratch" / f"{ledger.name}-0-s1-r0"
    assert [line for line in lines[2:] if not line.startswith("MIGRATION_RECORD_")] == [
        "-m",
        "collector",
        "--workload",
        str(tmp_path / "plans" / "enc oder.toml"),
        "--target",
        "cpu",
        "--out",
        str(scratch / "runs"),
        "--modes",
        "eager",
        "--only",
        f"b1-* $(touch {tmp_path}/pwned)",
    ]
    assert not (tmp_path / "pwned").exists()
    # A failed task's partial log is delivered like a complete one; the exit code tells Slurm.
    assert (destination / "run-0" / "events.jsonl").is_file()
    assert scratch.exists() == (code != 0)  # a failed task's scratch stays for a look
    assert f"collector exited {code}" in proc.stderr
    # The ledger: the planned tasks, then this attempt's record and its own log.
    planned = json.loads((ledger / "planned.json").read_text())
    assert planned["campaign_id"] == ledger.name and [t["task"] for t in planned["tasks"]] == [0]
    attempt = json.loads((ledger / "tasks" / "task-0.s1-r0.json").read_text())
    assert attempt["state"] == ("done" if code == 0 else "failed") and attempt["exit_code"] == code
    assert attempt["runs"] == ["run-0"] and attempt["job_id"] == "42_0" and attempt["ended"]
    assert "collector exited" in (ledger / "tasks" / attempt["log"]).read_text()
    # What the collector was told about its task (run_start.scheduled reads these).
    told = dict(line.split("=", 1) for line in lines if line.startswith("MIGRATION_RECORD_"))
    assert told["MIGRATION_RECORD_CAMPAIGN_ID"] == ledger.name and told["MIGRATION_RECORD_TASK_INDEX"] == "0"
    assert told["MIGRATION_RECORD_ATTEMPT"] == "s1-r0" and told["MIGRATION_RECORD_SCHEDULER"] == "slurm"


@pytest.mark.parametrize("upload", ["reportgen", "aws"])
@pytest.mark.parametrize("upload_ok", [True, False])
def test_slurm_task_uploads_to_s3_then_cleans_scratch(tmp_path: Path, upload: str, upload_ok: bool) -> None:
    """The upload step the script runs for an s3:// destination, with stand-ins recording calls."""
    record = tmp_path / "args.txt"
    fake = tmp_path / "fake-python"
    fake.write_text(FAKE_PYTHON.format(record=record, code=0))
    fake.chmod(0o755)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    uploader = bin_dir / ("aws" if upload == "aws" else "reportgen-python")
    # Records each call on a line; fails (when told to) only for the run, not the ledger.
    uploader.write_text(
        f'#!/bin/bash\necho "$*" >> {tmp_path}/upload-calls\ncase "$*" in *_campaigns*) exit 0;; esac\nexit {0 if upload_ok else 1}\n'
    )
    uploader.chmod(0o755)
    text = f"""\
[campaign]
name = "up"
destination = "s3://fleet-runs/nightly/"
upload = "{upload}"
reportgen_python = "{bin_dir / "reportgen-python"}"

[[workload]]
plan = "/plans/x.toml"

[[environment]]
name = "cpu"
target = "cpu"
python = "{fake}"

[slurm]
scratch = "{tmp_path / "scratch"}"
collector_root = "{tmp_path}"
"""
    script = tmp_path / "up.sbatch"
    assert main(["submit", str(write(tmp_path, text)), "--scheduler", "slurm", "--dry-run", "--out", str(script)]) == 0
    env = {
        **os.environ,
        "SLURM_ARRAY_TASK_ID": "0",
        "SLURM_ARRAY_JOB_ID": "7",
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
    }
    proc = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=60)
    campaign_id = json.loads((tmp_path / "up.planned.json").read_text())["campaign_id"]
    scratch = tmp_path / "scratch" / f"{campaign_id}-0-s1-r0"
    run = scratch / "runs" / "run-0"
    calls = (tmp_path / "upload-calls").read_text().splitlines()
    ledger = f"s3://fleet-runs/nightly/_campaigns/{campaign_id}"
    if upload == "aws":
        assert calls[2] == f"s3 cp --recursive --only-show-errors {run} s3://fleet-runs/nightly/run-0/"
        assert calls[0] == f"s3 cp --recursive --only-show-errors {scratch}/plan {ledger}/"
    else:
        assert calls[2] == f"-m reportgen publish {run} s3://fleet-runs/nightly/run-0"
        assert calls[0] == f"-m reportgen publish {scratch}/plan {ledger}"
    # The planned tasks, the running record, the run, then the final record with the log.
    assert (
        len(calls) == 4
        and calls[1].endswith(f"{ledger}/tasks" + ("/" if upload == "aws" else ""))
        and calls[3] == calls[1]
    )
    if upload_ok:
        assert proc.returncode == 0, proc.stderr
        assert not scratch.exists()
    else:
        assert proc.returncode == 1 and "(left in place)" in proc.stderr
        assert (run / "events.jsonl").is_file()
        record = json.loads((scratch / "ledger" / "task-0.s1-r0.json").read_text())
        assert record["state"] == "failed" and record["runs"] == []


def test_slurm_submit_without_sbatch_fails_clearly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, BASE.format(destination="s3://fleet-runs/nightly"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert main(["submit", str(path), "--scheduler", "slurm", "--out", str(tmp_path / "n.sbatch")]) == 1
    assert "sbatch is not on PATH" in capsys.readouterr().err
    assert (tmp_path / "n.sbatch").is_file()


def test_slurm_submit_prints_job_and_how_to_follow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    sbatch = bin_dir / "sbatch"
    sbatch.write_text(f"#!/bin/bash\nprintf '%s\\n' \"$@\" > {tmp_path}/sbatch-args\necho '4242;cluster'\n")
    sbatch.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    path = write(tmp_path, BASE.format(destination="s3://fleet-runs/nightly"))
    assert main(["submit", str(path), "--scheduler", "slurm", "--out", str(tmp_path / "n.sbatch")]) == 0
    out = capsys.readouterr().out
    assert "submitted job 4242 (sdk-2.33: tasks 0-1,4-5)" in out and "squeue -j 4242" in out and "sacct -j 4242" in out
    assert "python -m campaign status" in out
    # The last call: the CUDA environment declares 2 devices, asked for through GRES, no whole node.
    assert (tmp_path / "sbatch-args").read_text().split() == [
        "--parsable",
        "--array=2-3,6-7",
        "--gres=gpu:2",
        str(tmp_path / "n.sbatch"),
    ]
    one_group = BASE.format(destination="s3://fleet-runs/nightly").replace("devices = 2\n", "")
    (tmp_path / "sbatch-args").unlink()
    (tmp_path / "nightly.submission").unlink()  # the first campaign is not queued: submit again here
    assert (
        main(["submit", str(write(tmp_path, one_group)), "--scheduler", "slurm", "--out", str(tmp_path / "n.sbatch")])
        == 0
    )
    # One group of resources: the script's header holds them, sbatch gets the script alone.
    assert (tmp_path / "sbatch-args").read_text().split() == ["--parsable", str(tmp_path / "n.sbatch")]
    assert "submitted job 4242 (sdk-2.33, cuda-baseline: tasks 0-7)" in capsys.readouterr().out


def test_environments_with_own_partition_are_submitted_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    sbatch = bin_dir / "sbatch"
    sbatch.write_text(
        f'#!/bin/bash\necho "$@" >> {tmp_path}/sbatch-calls\necho $((4242 + $(wc -l < {tmp_path}/sbatch-calls)))\n'
    )
    sbatch.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    text = BASE.format(destination="s3://fleet-runs/nightly").replace(
        "devices = 2", 'devices = 2\nsbatch = ["--partition=g5"]'
    )
    text = text.replace(
        'target = "neuron"', 'target = "neuron"\nsbatch = ["--partition=trn1", "--constraint=trn1.2xlarge"]'
    )
    text = text.replace("repeats = 2", "repeats = 2\nmax_parallel = 3")
    path = write(tmp_path, text)
    script = tmp_path / "n.sbatch"
    assert main(["submit", str(path), "--scheduler", "slurm", "--out", str(script)]) == 0
    calls = (tmp_path / "sbatch-calls").read_text().splitlines()
    # max_parallel = 3 holds for the campaign: the two submissions share it (2 + 1).
    assert calls == [
        f"--parsable --array=0-1,4-5%2 --exclusive --partition=trn1 --constraint=trn1.2xlarge {script}",
        f"--parsable --array=2-3,6-7%1 --gres=gpu:2 --partition=g5 {script}",
    ]
    out = capsys.readouterr().out
    assert "submitted job 4243 (sdk-2.33: tasks 0-1,4-5)" in out and "squeue -j 4243,4244" in out
    assert (
        "# Submit cuda-baseline: tasks 2-3,6-7: sbatch --array=2-3,6-7%1 --gres=gpu:2 --partition=g5 n.sbatch"
        in script.read_text()
    )
    too_few = text.replace("max_parallel = 3", "max_parallel = 1")
    with pytest.raises(CampaignError, match="max_parallel: 1 is fewer than the 2 separate Slurm submissions"):
        slurm.submissions(load_campaign(write(tmp_path, too_few)))
    bad = text.replace('"--partition=g5"', '"--array=0-1"')
    with pytest.raises(CampaignError, match="not --array"):
        load_campaign(write(tmp_path, bad))


# ---- Kubernetes manifest ---------------------------------------------------------------------


def _check_model(data: Any, type_name: str, where: str) -> None:
    """Every key is a field of the client's model (recursively); required fields are set."""
    import kubernetes.client as k8s

    if type_name.startswith("List["):
        assert isinstance(data, list), f"{where}: expected a list"
        for i, item in enumerate(data):
            _check_model(item, type_name[5:-1], f"{where}[{i}]")
        return
    if type_name.startswith("Dict["):
        assert isinstance(data, dict), f"{where}: expected a map"
        value_type = type_name[5:-1].split(", ", 1)[1]
        for key, item in data.items():
            _check_model(item, value_type, f"{where}.{key}")
        return
    model = getattr(k8s, type_name, None)
    if model is None:
        expected = {"str": str, "int": int, "bool": bool, "object": object}[type_name]
        assert isinstance(data, expected) and not (expected is int and isinstance(data, bool)), (
            f"{where}: expected {type_name}, got {data!r}"
        )
        return
    assert isinstance(data, dict), f"{where}: expected a {type_name} object"
    by_json = {json_key: attr for attr, json_key in model.attribute_map.items()}
    unknown = sorted(set(data) - set(by_json))
    assert not unknown, f"{where}: {unknown} are not fields of {type_name}"
    for key, value in data.items():
        _check_model(value, model.openapi_types[by_json[key]], f"{where}.{key}")


def test_kubernetes_manifest_loads_through_client_models(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import kubernetes.client as k8s  # the test extra installs it

    path = write(
        tmp_path,
        BASE.format(destination="s3://fleet-runs/nightly").replace("repeats = 2", "repeats = 2\nmax_parallel = 3")
        + '\n[kubernetes]\nnamespace = "migration"\nservice_account = "runs-writer"\ngrace_period_s = 90\n',
    )
    out = tmp_path / "jobs.json"
    assert main(["submit", str(path), "--scheduler", "kubernetes", "--out", str(out)]) == 0
    assert f"kubectl create -f {out}" in capsys.readouterr().out
    manifest = json.loads(out.read_text())
    assert manifest["apiVersion"] == "v1" and manifest["kind"] == "List"
    config, *jobs = manifest["items"]
    _check_model(config, "V1ConfigMap", "config")
    # The task script the pods run is the real file, byte for byte; each Job has its task list.
    assert config["data"]["task.sh"] == (REPO / "campaign" / "task.sh").read_text()
    assert (
        json.loads(config["data"]["planned.json"])["campaign_id"]
        == json.loads((tmp_path / "nightly.planned.json").read_text())["campaign_id"]
    )
    assert len(jobs) == 2  # one Job per environment: a pod template has one image
    api = k8s.ApiClient()
    parallel = []
    for job, env, resource, count in zip(
        jobs, ("sdk-2.33", "cuda-baseline"), ("aws.amazon.com/neuron", "nvidia.com/gpu"), ("1", "2")
    ):
        _check_model(job, "V1Job", "job")
        model = api._ApiClient__deserialize(job, "V1Job")  # the client's own loader
        assert isinstance(model, k8s.V1Job)
        assert api.sanitize_for_serialization(model) == job  # nothing dropped or renamed
        spec = model.spec
        assert spec.completion_mode == "Indexed" and spec.completions == 4 and spec.backoff_limit_per_index == 0
        parallel.append(spec.parallelism)
        pod = spec.template.spec
        assert pod.restart_policy == "Never" and pod.service_account_name == "runs-writer"
        assert pod.termination_grace_period_seconds == 90 and pod.active_deadline_seconds == 7200
        assert spec.active_deadline_seconds >= 7200 + 90
        assert pod.tolerations[0].key == resource and pod.tolerations[0].effect == "NoSchedule"
        container = pod.containers[0]
        assert container.resources.limits == {resource: count} and container.resources.requests == {resource: count}
        assert model.metadata.namespace == "migration" and model.metadata.labels["migration-record/environment"] == env
        assert (
            pod.affinity.pod_anti_affinity.required_during_scheduling_ignored_during_execution[0].topology_key
            == "kubernetes.io/hostname"
        )
        assert container.command[:2] == ["/bin/bash", "/etc/migration-record/campaign/task.sh"]
        tasks = config["data"][container.command[2].rsplit("/", 1)[1]].splitlines()
        assert [line.split("\t")[0] for line in tasks] == ["0", "1", "2", "3"]
        assert all(f" {env} " + ("neuron" if resource.startswith("aws") else "cuda") + " " in line for line in tasks)
        names = {e.name: e for e in container.env}
        assert (
            names["MIGRATION_RECORD_RESTART"].value_from.field_ref.field_path
            == "metadata.annotations['batch.kubernetes.io/job-index-failure-count']"
        )
    assert sum(parallel) <= 3  # max_parallel limits the campaign, not each Job
    assert jobs[0]["spec"]["template"]["spec"]["nodeSelector"] == {"node.kubernetes.io/instance-type": "trn1.32xlarge"}
    # A new submission of the same file gets new names: applying it never collides.
    again = kubernetes_manifest(load_campaign(path), "nightly-20261203T000000Z")
    assert {j["metadata"]["name"] for j in again["items"]}.isdisjoint(
        {j["metadata"]["name"] for j in manifest["items"]}
    )


def test_kubernetes_folder_destination_mounts_a_claim(tmp_path: Path) -> None:
    text = (
        BASE.format(destination="/runs").replace('target = "cuda"', 'target = "cpu"').replace("devices = 2\n", "")
        + '\n[kubernetes]\nvolume_claim = "fsx-runs"\n'
    )
    manifest = kubernetes_manifest(load_campaign(write(tmp_path, text)))
    cpu_job = manifest["items"][2]
    _check_model(cpu_job, "V1Job", "job")
    pod = cpu_job["spec"]["template"]["spec"]
    assert pod["volumes"][1] == {"name": "runs", "persistentVolumeClaim": {"claimName": "fsx-runs"}}
    assert pod["containers"][0]["volumeMounts"][1] == {"name": "runs", "mountPath": "/runs"}
    assert "resources" not in pod["containers"][0] and "tolerations" not in pod  # a cpu task asks for no device


def test_task_script_passes_shellcheck() -> None:
    """The task script is a real file, checked as one (CI installs shellcheck)."""
    import shutil

    if shutil.which("shellcheck") is None:
        if os.environ.get("CI"):
            pytest.fail("shellcheck is not installed; .ci/run installs it")
        pytest.skip("shellcheck not installed (apt-get install shellcheck)")
    proc = subprocess.run(
        ["shellcheck", "--severity=style", str(REPO / "campaign" / "task.sh")], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout


def test_model_check_rejects_a_misspelt_field() -> None:
    with pytest.raises(AssertionError, match="completionsMode"):
        _check_model({"spec": {"completionsMode": "Indexed", "template": {}}}, "V1Job", "job")


def test_list_prints_each_task(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, BASE.format(destination="s3://fleet-runs/nightly"))
    assert main(["submit", str(path), "--scheduler", "slurm", "--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "0\ttiny_encoder/sdk-2.33/r1" and lines[-1] == "7\tminilm/cuda-baseline/r2" and len(lines) == 8
    assert not list(tmp_path.glob("*.sbatch"))


def _imports_outside(folder: Path, allowed: set[str], module_level_only: bool = False) -> dict[str, list[str]]:
    import ast

    found: dict[str, list[str]] = {}
    for path in sorted(folder.rglob("*.py")):
        if "workloads" in path.relative_to(folder).parts:
            continue
        tree = ast.parse(path.read_text())
        for node in tree.body if module_level_only else ast.walk(tree):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and node.level == 0
                else []
            )
            for name in names:
                if name.split(".")[0] not in allowed:
                    found.setdefault(path.name, []).append(name)
    return found


def test_collector_imports_only_stdlib_and_torch() -> None:
    """collector/ is what runs on the device: standard library plus torch (workloads may need
    their model's packages). Campaigns live beside it, in campaign/."""
    assert (
        _imports_outside(
            REPO / "collector", set(sys.stdlib_module_names) | {"torch", "torch_neuronx", "collector", "__future__"}
        )
        == {}
    )
    assert not (REPO / "collector" / "campaign.py").exists()


def test_campaign_imports_only_stdlib_at_load() -> None:
    """The campaign command runs on a login node with the standard library (reading an s3://
    ledger loads reportgen's store inside the function that needs it)."""
    allowed = set(sys.stdlib_module_names) | {"campaign", "collector", "__future__"}
    assert _imports_outside(REPO / "campaign", allowed, module_level_only=True) == {}


def test_help_teaches(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "campaign", "--help"], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0
    assert (
        "submit" in proc.stdout and "status" in proc.stdout and "resume" in proc.stdout and "exit codes" in proc.stdout
    )
    proc = subprocess.run(
        [sys.executable, "-m", "campaign", "submit", "--help"], cwd=REPO, capture_output=True, text=True
    )
    assert proc.returncode == 0 and "--scheduler" in proc.stdout and "--dry-run" in proc.stdout
    # Each subcommand's help ends with examples of its own (they were only at the top), and its
    # description is still wrapped to the terminal.
    for command in ("submit", "status", "resume"):
        proc = subprocess.run(
            [sys.executable, "-m", "campaign", command, "--help"],
            cwd=REPO,
            capture_output=True,
            text=True,
            env={**os.environ, "COLUMNS": "100"},
        )
        assert proc.returncode == 0
        examples = proc.stdout.split("\nexamples:\n", 1)[1]
        assert examples.count(f"python -m campaign {command} ") >= 2, proc.stdout
        assert max(len(line) for line in proc.stdout.split("\nexamples:\n", 1)[0].splitlines()) <= 100


def test_a_misspelled_required_option_is_named(tmp_path: Path) -> None:
    """A review: `--schedular slurm` read only "the following arguments are required:
    --scheduler" (argparse checks the required options before unknown ones), as did the
    collector's `--workloda` and `inspect --workloda`."""
    for argv, said in (
        (["campaign", "submit", str(EXAMPLE), "--schedular", "slurm"], "unrecognized arguments: --schedular"),
        (["collector", "--workloda", "x.toml", "--list"], "unrecognized arguments: --workloda"),
        (["collector", "inspect", "--workloda=x.toml"], "unrecognized arguments: --workloda=x.toml"),
    ):
        proc = subprocess.run(
            [sys.executable, "-m", *argv],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        assert proc.returncode == 2, proc.stderr
        last = proc.stderr.strip().splitlines()[-1]
        assert said in last and "the following arguments are required" in last, proc.stderr
    # With the required option given too, argparse names the unknown one itself.
    proc = subprocess.run(
        [sys.executable, "-m", "campaign", "submit", str(EXAMPLE), "--schedular", "slurm", "--scheduler", "slurm"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert proc.returncode == 2 and "unrecognized arguments: --schedular slurm" in proc.stderr


# ---- the worked example in docs/campaigns.md ----------------------------------------------

DOCS = REPO / "docs" / "campaigns.md"
EXAMPLE = REPO / "docs" / "campaign-example.toml"


def example_outputs() -> dict[str, str]:
    """What the docs show for each marked block: the file, the script and the manifest."""
    campaign = load_campaign(EXAMPLE)
    # As written on a login node whose checkout is /fsx/migration-record, into /fsx/campaigns.
    campaign.slurm.collector_root = campaign.slurm.collector_root or "/fsx/migration-record"
    jobs = kubernetes_manifest(campaign)["items"][1:]  # the ConfigMap carries task.sh itself
    return {
        "docs/campaign-example.toml": EXAMPLE.read_text(),
        "slurm": slurm_script(campaign, Path("/fsx/campaigns/nightly-logs"), "nightly.sbatch"),
        "slurm-tasks": slurm.tasks_lines(campaign, ID),
        "kubernetes": json.dumps(jobs[0], indent=2) + "\n",
    }


def doc_blocks(text: str) -> dict[str, str]:
    blocks = {}
    for part in text.split("<!-- campaign-example: ")[1:]:
        name, rest = part.split(" -->\n", 1)
        fence_open = rest.index("```")
        body_start = rest.index("\n", fence_open) + 1
        blocks[name] = rest[body_start : rest.index("```\n", body_start)]
    return blocks


def test_docs_worked_example_is_what_the_command_writes() -> None:
    blocks = doc_blocks(DOCS.read_text())
    expected = example_outputs()
    assert sorted(blocks) == sorted(expected)
    for name, text in expected.items():
        assert blocks[name] == text, f"docs/campaigns.md block {name!r} is not what the command writes"
    _check_model(json.loads(expected["kubernetes"]), "V1Job", "example job")


if __name__ == "__main__":
    # python -m tests.test_campaign: rewrite the worked example's blocks in docs/campaigns.md.
    text = DOCS.read_text()
    for name, body in example_outputs().items():
        marker = f"<!-- campaign-example: {name} -->\n"
        start = text.index("\n", text.index("```", text.index(marker))) + 1
        text = text[:start] + body + text[text.index("```\n", start) :]
    DOCS.write_text(text)


def test_docs_example_certifies_neuron_only_on_a_generation_the_release_supports() -> None:
    """The worked example's neuron environments ask for instance types of a generation the
    Neuron constraint data supports (it once asked for trn1.2xlarge)."""
    import tomllib

    from reportgen.judge.backend_docs import instance_generation, load_backend_docs

    supported = load_backend_docs("neuron").instances.supported  # type: ignore[union-attr]
    environments = [e for e in tomllib.loads(EXAMPLE.read_text())["environment"] if e["target"] == "neuron"]
    assert environments
    for env in environments:
        instance = env["node_selector"]["node.kubernetes.io/instance-type"]
        assert instance_generation(instance) in supported, instance
        assert not any("trn1" in option for option in env.get("sbatch", []))


# ---- bounds: the campaign file, the number of tasks, the planned tasks ---------------------


def test_campaign_file_must_be_a_small_regular_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A FIFO is refused without being opened (opening it would wait for a writer), a device
    such as /dev/zero without being read, a file over 1 MiB by its size."""
    fifo = tmp_path / "campaign.fifo"
    os.mkfifo(fifo)
    big = write(tmp_path, BASE.format(destination="s3://fleet-runs/nightly") + "#" * (1 << 20), name="big.toml")
    for path, reason in (
        (fifo, "not a regular file"),
        (Path("/dev/zero"), "not a regular file"),
        (big, "larger than the limit of 1048576 bytes"),
    ):
        assert (
            main(["submit", str(path), "--scheduler", "slurm", "--dry-run", "--out", str(tmp_path / "x.sbatch")]) == 2
        )
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"{path}: cannot read: " in err and reason in err, err
    assert not (tmp_path / "x.sbatch").exists()


def test_task_count_is_limited_before_any_task_is_built(tmp_path: Path) -> None:
    path = write(
        tmp_path, BASE.format(destination="s3://fleet-runs/nightly").replace("repeats = 2", "repeats = 100000000")
    )
    with pytest.raises(CampaignError) as err:
        load_campaign(path)
    assert (
        "campaign.repeats: 100000000 repeat(s) x 2 environment(s) x 2 workload(s) is 400000000 tasks, more than the limit of 10,000"
        in str(err.value)
    )
    path.write_text(BASE.format(destination="s3://fleet-runs/nightly").replace("repeats = 2", "repeats = 2500"))
    assert len(load_campaign(path).tasks()) == 10_000


def test_status_reads_whatever_submit_writes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """At the task limit, submit's planned.json is read back by status; planned tasks whose JSON
    would be past the ledger's size limit (long args in each task) are refused at submit; and a
    planned.json past it names no option campaign lacks."""
    runs = tmp_path / "runs"
    text = BASE.format(destination=runs).replace("repeats = 2", "repeats = 2500")
    path = write(tmp_path, text)
    out = tmp_path / "n.sbatch"
    assert main(["submit", str(path), "--scheduler", "slurm", "--dry-run", "--out", str(out)]) == 0
    capsys.readouterr()
    runs.mkdir()  # the destination, mounted on this host (a dry run writes nothing into it)
    assert main(["status", str(tmp_path / "nightly.planned.json")]) == 1  # read: nothing is done yet
    assert "10000 task(s): 10000 " in capsys.readouterr().out
    # A long glob beside one that matches: the args a task gets, 4 kB of them, fill the ledger.
    path.write_text(text.replace('"b1-*"', '"b1-*", "--only", "' + "x" * 4000 + '"'))
    assert main(["submit", str(path), "--scheduler", "slurm", "--dry-run", "--out", str(tmp_path / "m.sbatch")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "more than the 16777216 bytes a ledger may hold" in err
    assert not (tmp_path / "m.sbatch").exists()
    huge = tmp_path / "huge.planned.json"
    huge.write_text(" " * (16 << 20) + "{}")
    assert main(["status", str(huge)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "larger than the limit" in err and "--max-log-size" not in err


def test_output_into_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    """`campaign submit --list | head -1`: the reader closes after one line; the command stops
    with 141 (as a shell reports SIGPIPE) and no traceback. The list is longer than a pipe holds."""
    path = write(tmp_path, BASE.format(destination="s3://fleet-runs/nightly").replace("repeats = 2", "repeats = 2500"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "campaign", "submit", str(path), "--scheduler", "slurm", "--list"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline() == b"0\ttiny_encoder/sdk-2.33/r1\n"
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait() == 141 and err == ""


@pytest.mark.parametrize("scheduler", ["kubernetes", "slurm"])
def test_submit_makes_the_folder_out_names(tmp_path: Path, scheduler: str) -> None:
    # Before: --out in a new folder worked for Slurm and failed for Kubernetes ("No such file").
    path = write(tmp_path, BASE.format(destination="s3://fleet-runs/nightly"))
    out = tmp_path / "new" / "deeper" / ("jobs.json" if scheduler == "kubernetes" else "jobs.sbatch")
    assert main(["submit", str(path), "--scheduler", scheduler, "--out", str(out), "--dry-run"]) == 0
    assert out.is_file() and (out.parent / "nightly.planned.json").is_file()


@pytest.mark.parametrize("scheduler", ["kubernetes", "slurm"])
def test_submit_writes_only_the_files_its_scheduler_reads(tmp_path: Path, scheduler: str) -> None:
    # Before: a Kubernetes submit also wrote NAME.task.sh and an empty NAME.tasks, which nothing
    # read (its ConfigMap carries task.sh and each Job's task list).
    path = write(tmp_path, BASE.format(destination="s3://fleet-runs/nightly"))
    out = tmp_path / "out" / ("nightly.k8s.json" if scheduler == "kubernetes" else "nightly.sbatch")
    assert main(["submit", str(path), "--scheduler", scheduler, "--out", str(out), "--dry-run"]) == 0
    written = sorted(p.name for p in out.parent.iterdir())
    if scheduler == "kubernetes":
        assert written == ["nightly.k8s.json", "nightly.planned.json"]
    else:
        assert written == ["nightly-logs", "nightly.planned.json", "nightly.sbatch", "nightly.task.sh", "nightly.tasks"]
        assert (out.parent / "nightly.tasks").read_text().count("\n") > 1


def test_kubernetes_names_of_a_long_campaign_are_valid_and_unique_per_submission(tmp_path: Path) -> None:
    """A campaign named with 40 or more characters: its Job name left no room for the pods'
    '-<index>' host names (the API refuses them), and its ConfigMap name and campaign-id label,
    cut from the id, were the same for two submissions (the second Job mounted the first's
    tasks; the label selector and anti-affinity mixed the campaigns)."""
    name = "llm-serving-certification-" + "x" * 30
    text = BASE.format(destination="s3://fleet-runs/nightly").replace('name = "nightly"', f'name = "{name}"')
    campaign = load_campaign(write(tmp_path, text.replace('name = "sdk-2.33"', 'name = "trn2-48xlarge-sdk-2-33"')))
    first = kubernetes.manifest(campaign, f"{name}-20261202T000000Z", {"tasks": []})
    second = kubernetes.manifest(campaign, f"{name}-20261202T000100Z", {"tasks": []})
    for document in (first, second):
        config, *jobs = document["items"]
        label = config["metadata"]["labels"]["migration-record/campaign-id"]
        assert len(config["metadata"]["name"]) <= 63 and len(label) <= 63
        for job in jobs:
            hostname = f"{job['metadata']['name']}-{job['spec']['completions'] - 1}"
            assert len(hostname) <= 63 and re.fullmatch(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?", hostname), hostname
    assert first["items"][0]["metadata"]["name"] != second["items"][0]["metadata"]["name"]
    labels = [d["items"][0]["metadata"]["labels"]["migration-record/campaign-id"] for d in (first, second)]
    assert labels[0] != labels[1] and labels[0].endswith("-20261202t000000z")


@pytest.mark.parametrize(
    "change,message",
    [
        # A plan relative to this checkout, where Slurm tasks run when no collector_root is set.
        (
            lambda t: t.replace("tiny_encoder.toml", "tiny_encodr.toml"),
            "workload[0].plan: {repo}/collector/workloads/tiny_encodr.toml: no such file in this checkout",
        ),
        # A plan here that the collector would refuse: one line now, not a failed task per index.
        (
            lambda t: t.replace("collector/workloads/tiny_encoder.toml", "{typo}"),
            "timing.warm_up: unknown key in [timing]; did you mean 'warmup'?",
        ),
        (
            lambda t: t.replace('"--modes", "eager", "--only"', '"--modes", "eager", "--warm", "0", "--only"'),
            "workload[0].args: the collector refuses them: --warm takes a count from 1 to 10000, got 0",
        ),
        (
            lambda t: t.replace('"--modes", "eager"', '"--modes", "eagre"'),
            "workload[0].args: the collector refuses them: --modes takes eager and/or compiled, not 'eagre'",
        ),
        (
            lambda t: t.replace('"--modes", "eager"', '"--wram", "3"'),
            "workload[0].args: the collector refuses them: unrecognized arguments: --wram 3",
        ),
        # Args the collector parses, and refuses once it has read the plan: no cell chosen.
        (
            lambda t: t.replace('"b1-*"', '"nomatch-*"'),
            "workload[0]: the collector refuses its plan and args: --only 'nomatch-*' --modes eager matches none of the 14 planned cells",
        ),
        (
            lambda t: t.replace('"--modes", "eager"', '"--help"'),
            "workload[0].args: the collector refuses them: they ask for its help, and a task would run nothing",
        ),
    ],
)
def test_submit_checks_each_workload_as_the_collector_would_before_writing_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: Any, message: str
) -> None:
    typo = tmp_path / "typo.toml"
    text = (REPO / "collector" / "workloads" / "tiny_encoder.toml").read_text(encoding="utf-8")
    typo.write_text(text.replace("warmup =", "warm_up ="), encoding="utf-8")
    (tmp_path / "tiny_encoder.py").write_text("", encoding="utf-8")
    base = BASE.format(destination="s3://fleet-runs/nightly")
    path = write(tmp_path, change(base).replace("{typo}", str(typo)))
    out = tmp_path / "x.sbatch"
    assert main(["submit", str(path), "--scheduler", "slurm", "--dry-run", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message.format(repo=REPO) in err, err
    assert not out.exists() and not (tmp_path / "nightly.tasks").exists()


def test_submit_takes_the_shipped_example_and_its_workloads(tmp_path: Path) -> None:
    example = REPO / "docs" / "campaign-example.toml"
    for scheduler, name in (("slurm", "x.sbatch"), ("kubernetes", "x.k8s.json")):
        assert main(["submit", str(example), "--scheduler", scheduler, "--dry-run", "--out", str(tmp_path / name)]) == 0
