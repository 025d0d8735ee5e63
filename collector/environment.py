"""Read where the run really happens: backend family, versions, device, variables, artifacts.

Every value is a fact: ``{"value", "source"}`` when read, ``{"value": None, "unknown_reason"}``
when it could not be. Nothing is left out silently.

What is particular to a target (its distributions, variables, family rule, versions and
device) is asked of its adapter (``collector/backends/``); this module knows no target by name.
"""

from __future__ import annotations

import importlib.metadata as metadata
import json
import os
import platform
import socket
from typing import Any

from collector.backends import ADAPTERS
from collector.facts import Fact, known, os_release, read_text_file, unknown

__all__ = ["Fact", "decide_backend_family", "known", "os_release", "read_environment", "read_text_file", "unknown"]


# The host's thread pools, math libraries, allocator and torch's own switches: they change the
# CPU work of every backend (the reference runs on the CPU for all), its speed and its results,
# so every run records them, whatever its backend.
HOST_ENV_PREFIXES = (
    "OMP_",
    "GOMP_",
    "KMP_",
    "MKL_",
    "ONEDNN_",
    "DNNL_",
    "OPENBLAS_",
    "MALLOC_",
    "LD_PRELOAD",
    "PYTORCH_",
)


def env_prefixes() -> tuple[str, ...]:
    """Variables recorded on every run: the host's, then each backend descriptor's prefixes."""
    descriptors = (p for adapter in ADAPTERS.values() for p in adapter.descriptor.env_prefixes)
    return tuple(dict.fromkeys((*HOST_ENV_PREFIXES, *descriptors)))


def distributions() -> tuple[str, ...]:
    """Distributions whose versions and wheel tags are recorded: torch, then each descriptor's."""
    return tuple(
        dict.fromkeys(["torch", *(d for adapter in ADAPTERS.values() for d in adapter.descriptor.distributions)])
    )


def decide_backend_family(target: str, probes: dict[str, Any]) -> tuple[str, str]:
    """The backend family the cells run on, and how it was decided (by the target's adapter).

    ``probes`` holds plain facts so the rule can be tested without any device: torch_version
    and what each adapter's ``probe`` reads (neuron: neuronx_version, privateuse1, xla_present;
    cuda: cuda_available).
    """
    return ADAPTERS[target].decide_family(probes)


def gather_probes(torch: Any) -> dict[str, Any]:
    probes: dict[str, Any] = {"torch_version": torch.__version__}
    for adapter in ADAPTERS.values():
        probes.update(adapter.probe(torch))
    return probes


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
    prefixes = env_prefixes()
    return {k: v for k, v in sorted(os.environ.items()) if k.startswith(prefixes)}


def read_versions(torch: Any) -> dict[str, Fact]:
    versions = {
        "python": known(platform.python_version(), "platform.python_version()"),
        "torch": known(torch.__version__, "torch.__version__"),
        "os_release": os_release(),
        "kernel": known(platform.release(), "platform.release()"),
    }
    for adapter in ADAPTERS.values():
        versions.update(adapter.versions(torch))
    return versions


CPUINFO = "/proc/cpuinfo"


def cpu_model(cpuinfo: str = CPUINFO) -> Fact:
    """The CPU's model name (the first "model name" of /proc/cpuinfo, e.g. "AMD EPYC 9654"); where
    the file has none (another OS, some ARM kernels) what platform.processor() says, else the machine."""
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as handle:
            for line in handle.read(1 << 20).splitlines():
                key, _, value = line.partition(":")
                if key.strip() == "model name" and value.strip():
                    return known(value.strip(), f"{cpuinfo} model name")
    except OSError:
        pass
    return known(platform.processor() or platform.machine(), "platform.processor()")


def read_device(torch: Any, device_type: str) -> dict[str, Fact]:
    device: dict[str, Fact] = {
        "hostname": known(socket.gethostname(), "socket.gethostname()"),
        "instance_type": read_text_file("/sys/devices/virtual/dmi/id/product_name", "DMI product name"),
    }
    try:
        adapter = ADAPTERS.get(device_type)
        own = adapter.device_facts(torch) if adapter is not None else None
        if own is not None:
            device.update(own)
        else:
            device["device_name"] = cpu_model()
            device["device_count"] = known(os.cpu_count(), "os.cpu_count()")
    except Exception as exc:  # a device query failing is a fact to record, not a crash
        device.setdefault("device_name", unknown(f"device query failed: {type(exc).__name__}: {exc}"))
        device.setdefault("device_count", unknown(f"device query failed: {type(exc).__name__}: {exc}"))
    return device


def read_environment(torch: Any, target: str) -> dict[str, Any]:
    family, reason = decide_backend_family(target, gather_probes(torch))
    return {
        "backend_family": family,
        "backend_family_reason": reason,
        "device_type": target,
        "versions": read_versions(torch),
        "device": read_device(torch, target),
        "env_vars": relevant_env_vars(),
        "artifacts": [a for a in (installed_artifact(n) for n in distributions()) if a],
    }
