"""A CPU run names the CPU it measured (the index's device column shows it), not just "x86_64"."""

from __future__ import annotations

import platform
from pathlib import Path

from collector.environment import cpu_model


def test_model_name_from_cpuinfo(tmp_path: Path) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text(
        "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 9654 96-Core Processor\n\nprocessor\t: 1\nmodel name\t: AMD EPYC 9654 96-Core Processor\n",
        encoding="utf-8",
    )
    fact = cpu_model(str(info))
    assert fact == {"value": "AMD EPYC 9654 96-Core Processor", "source": f"{info} model name"}


def test_without_a_model_name_the_platform_says(tmp_path: Path) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nBogoMIPS\t: 50.00\n", encoding="utf-8")
    for path in (info, tmp_path / "missing"):
        fact = cpu_model(str(path))
        assert fact == {"value": platform.processor() or platform.machine(), "source": "platform.processor()"}
