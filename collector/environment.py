"""Read where the run really happens: backend family, versions, device, variables, artifacts.

Every value is a fact: ``{"value", "source"}`` when read, ``{"value": None, "unknown_reason"}``
when it could not be. Nothing is left out silently.

Native TorchNeuron and the older XLA-based product share the pip name ``torch-neuronx``, so the
family is decided from versions and module probes, never from the name (see
shared/reference/torchneuron-2.33-notes.md section 1).
"""

from __future__ import annotations

import importlib.metadata as metadata
import importlib.util
import json
import os
import platform
import socket
import subprocess
from pathlib import Path
from typing import Any

Fact = dict[str, Any]

ENV_PREFIXES = ("TORCH_NEURONX_", "NEURON_", "TORCHINDUCTOR_", "TORCH_LOGS", "CUDA_", "XLA_", "PJRT_", "OMP_NUM_THREADS")
DISTRIBUTIONS = ("torch", "torch-neuronx", "neuronx-cc", "nki", "torch-xla", "libneuronxla", "triton")
NATIVE_NEURONX_FAMILIES = ("2.13.3.", "2.14.3.")


def known(value: Any, source: str) -> Fact:
    return {"value": str(value), "source": source}


def unknown(reason: str) -> Fact:
    return {"value": None, "unknown_reason": reason}


def dist_version(name: str) -> Fact:
    try:
        return known(metadata.version(name), f"package metadata of {name}")
    except metadata.PackageNotFoundError:
        return unknown(f"{name} is not installed")


def read_text_file(path: str, what: str) -> Fact:
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace").strip()
    except OSError as exc:
        return unknown(f"{path} unreadable: {exc.strerror}")
    return known(text, path) if text else unknown(f"{path} is empty ({what})")


def run_command(argv: list[str], timeout: float = 15) -> Fact:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except FileNotFoundError:
        return unknown(f"{argv[0]} not found")
    except subprocess.TimeoutExpired:
        return unknown(f"{' '.join(argv)} timed out after {timeout:.0f}s")
    output = (done.stdout or done.stderr).strip()
    if done.returncode != 0 or not output:
        return unknown(f"{' '.join(argv)} exited {done.returncode}: {output[:200]}")
    return known(output.splitlines()[0], " ".join(argv))


def os_release() -> Fact:
    try:
        lines = Path("/etc/os-release").read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        return unknown(f"/etc/os-release unreadable: {exc.strerror}")
    fields = dict(line.split("=", 1) for line in lines if "=" in line)
    name = fields.get("PRETTY_NAME", "").strip('"')
    return known(name, "/etc/os-release PRETTY_NAME") if name else unknown("no PRETTY_NAME in /etc/os-release")


def version_tuple(text: str) -> tuple[int, ...]:
    parts = []
    for piece in text.split("+")[0].split("."):
        digits = "".join(ch for ch in piece if ch.isdigit())
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


def decide_backend_family(target: str, probes: dict[str, Any]) -> tuple[str, str]:
    """The backend family the cells run on, and how it was decided.

    ``probes`` holds plain facts so the rule can be tested without any device: torch_version,
    neuronx_version (None when not installed), privateuse1 (registered backend name),
    xla_present (torch_xla / libneuronxla / torch_neuronx.xla_impl found), cuda_available.
    """
    if target == "cpu":
        return "cpu", "target cpu: cells run on the host CPU"
    if target == "cuda":
        if probes.get("cuda_available"):
            return "cuda", "target cuda and torch.cuda.is_available() is True"
        return "unknown", "target cuda but torch.cuda.is_available() is False"
    neuronx = probes.get("neuronx_version")
    torch_version = probes.get("torch_version") or ""
    if not neuronx:
        return "unknown", "target neuron but the torch-neuronx distribution is not installed"
    if neuronx.startswith("2.9.") or version_tuple(torch_version) < (2, 10) or probes.get("xla_present"):
        why = [f"torch-neuronx {neuronx}", f"torch {torch_version}"]
        if probes.get("xla_present"):
            why.append("XLA modules present (torch_xla, libneuronxla or torch_neuronx.xla_impl)")
        return "neuron-xla", "XLA-based PyTorch NeuronX: " + ", ".join(why)
    if probes.get("privateuse1") != "neuron":
        return "unknown", (
            f"torch-neuronx {neuronx} is installed but the 'neuron' device is not registered "
            f"(privateuse1 backend is {probes.get('privateuse1')!r})"
        )
    family_note = "a 2.33 release family" if neuronx.startswith(NATIVE_NEURONX_FAMILIES) else "not a 2.33 release family"
    return "neuron-native", (
        f"torch-neuronx {neuronx} ({family_note}) with torch {torch_version} >= 2.10, "
        "privateuse1 backend 'neuron' registered, no XLA modules"
    )


def gather_probes(torch: Any) -> dict[str, Any]:
    neuronx = dist_version("torch-neuronx")["value"]
    xla = any(importlib.util.find_spec(m) is not None for m in ("torch_xla", "libneuronxla"))
    if neuronx and not xla:
        try:
            xla = importlib.util.find_spec("torch_neuronx.xla_impl") is not None
        except (ImportError, ValueError):
            xla = False
    try:
        privateuse1 = torch._C._get_privateuse1_backend_name()
    except AttributeError:
        privateuse1 = None
    return {
        "torch_version": torch.__version__,
        "neuronx_version": neuronx,
        "privateuse1": privateuse1,
        "xla_present": xla,
        "cuda_available": bool(torch.cuda.is_available()),
    }


def installed_artifact(name: str) -> dict[str, Any] | None:
    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return None
    wheel = dist.read_text("WHEEL") or ""
    direct = dist.read_text("direct_url.json")
    url = None
    if direct:
        try:
            url = json.loads(direct).get("url")
        except ValueError:
            url = None
    return {
        "name": name,
        "version": dist.version,
        "installer": (dist.read_text("INSTALLER") or "").strip() or None,
        "wheel_tags": [line.split(":", 1)[1].strip() for line in wheel.splitlines() if line.startswith("Tag:")],
        "source_url": url,
    }


def relevant_env_vars() -> dict[str, str]:
    return {k: v for k, v in sorted(os.environ.items()) if k.startswith(ENV_PREFIXES)}


def neuron_versions() -> dict[str, Fact]:
    return {
        "torch_neuronx": dist_version("torch-neuronx"),
        "neuronx_cc": dist_version("neuronx-cc"),
        "nki": dist_version("nki"),
        "neuron_driver": read_text_file("/sys/module/neuron/version", "neuron driver version"),
        "neuron_runtime": run_command(["dpkg-query", "-W", "-f", "${Version}", "aws-neuronx-runtime-lib"]),
    }


def read_versions(torch: Any) -> dict[str, Fact]:
    versions = {
        "python": known(platform.python_version(), "platform.python_version()"),
        "torch": known(torch.__version__, "torch.__version__"),
        "os_release": os_release(),
        "kernel": known(platform.release(), "platform.release()"),
    }
    versions.update(neuron_versions())
    cuda = getattr(torch.version, "cuda", None)
    versions["cuda"] = known(cuda, "torch.version.cuda") if cuda else unknown("torch build without CUDA")
    return versions


def read_device(torch: Any, device_type: str, backend_module: Any = None) -> dict[str, Fact]:
    device: dict[str, Fact] = {
        "hostname": known(socket.gethostname(), "socket.gethostname()"),
        "instance_type": read_text_file("/sys/devices/virtual/dmi/id/product_name", "DMI product name"),
    }
    try:
        if device_type == "cuda":
            device["device_name"] = known(torch.cuda.get_device_name(0), "torch.cuda.get_device_name(0)")
            device["device_count"] = known(torch.cuda.device_count(), "torch.cuda.device_count()")
        elif device_type == "neuron" and backend_module is not None:
            device["device_name"] = known(backend_module.get_device_name(0), "torch.neuron.get_device_name(0)")
            device["device_count"] = known(backend_module.device_count(), "torch.neuron.device_count() (logical NeuronCores)")
        else:
            device["device_name"] = known(platform.processor() or platform.machine(), "platform.processor()")
            device["device_count"] = known(os.cpu_count(), "os.cpu_count()")
    except Exception as exc:  # a device query failing is a fact to record, not a crash
        device.setdefault("device_name", unknown(f"device query failed: {type(exc).__name__}: {exc}"))
        device.setdefault("device_count", unknown(f"device query failed: {type(exc).__name__}: {exc}"))
    return device


def read_environment(torch: Any, target: str, backend_module: Any = None) -> dict[str, Any]:
    family, reason = decide_backend_family(target, gather_probes(torch))
    return {
        "backend_family": family,
        "backend_family_reason": reason,
        "device_type": target,
        "versions": read_versions(torch),
        "device": read_device(torch, target, backend_module),
        "env_vars": relevant_env_vars(),
        "artifacts": [a for a in (installed_artifact(n) for n in DISTRIBUTIONS) if a],
    }
