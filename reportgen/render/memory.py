"""Peak device memory per cell as the report words it (beside the cell's timings)."""

from __future__ import annotations

from reportgen.model.runmodel import CellRecord

NOT_MEASURED = "not measured"


def bytes_text(value: int) -> str:
    """Binary units with 3-4 significant digits: 812 B, 1.5 KiB, 243.1 MiB, 1.04 GiB."""
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{value} B" if unit == "B" else f"{size:.4g} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def peak_memory_text(cell: CellRecord) -> str:
    """The warm series' peak device memory, or "not measured": a log before schema 1.3
    recorded none, and a CPU run has no device allocator."""
    memory = cell.device_memory
    if memory is None:
        return NOT_MEASURED
    if (
        memory.status != "measured" or memory.peak_allocated_bytes is None
    ):  # the reason stays in the log: one word per row here
        return NOT_MEASURED
    return bytes_text(memory.peak_allocated_bytes)
