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
    """The last warm series' peak device memory as the report words it: "not measured" (one
    word per row; the reason stays in the log) for a log before schema 1.3 or a target with no
    device allocator."""
    peak = cell.peak_device_bytes
    return NOT_MEASURED if peak is None else bytes_text(peak)
