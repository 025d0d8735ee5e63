"""index.parquet: one row per run and planned cell, for DuckDB, Athena, pandas or Spark.

index.csv and index.json hold one row per run; a fleet's questions are about cells ("which cells
of this workload fail on torch-neuronx 2.34 and passed on 2.33?"), so the site also writes every
cell of every run to one Parquet file that those tools read directly, with no loader. The
columns are documented in docs/campaigns.md ("The cell index") and follow ``COLUMNS`` below.

A run whose log planned no cell (it stopped first) still has one row, with a null cell, so that
every run of the index appears. The rows come from the run summaries the site keeps anyway, so
writing the file reads no log. pyarrow is imported only here, when a site is built.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reportgen.judge.comparison import CACHE_HIT, CACHE_MISS, CACHE_UNKNOWN
from reportgen.judge.timing_stability import SERIES_COLUMN, TOTALS, stability_word
from reportgen.model.runmodel import STATUS_ORDER
from reportgen.publish.summary import VERSION_KEYS, CellSummary, RunSummary
from reportgen.storage.local import write_inside
from reportgen.storage.remote import RemoteLog

if TYPE_CHECKING:
    import pyarrow

INDEX_NAME = "index.parquet"
# 2: warm_stability; 3: a generation cell's two warm series; 4: performance_stopped; 5:
# timing_layout_missed; 6: cold_cache_condition; 7: compile_cache. Stored in the file's metadata: a
# reader can tell a later layout.
FORMAT = 7

# (column, arrow type name, what it holds): the order of the file's columns.
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("run_id", "string", "the run's id"),
    ("workload", "string", "the workload's name"),
    (
        "target",
        "string",
        "the target the run ran for (the collector's --target; index.csv's intended_target is the plan's)",
    ),
    ("family", "string", "the backend family the environment event recorded"),
    (
        "device",
        "string",
        "the device name the environment event recorded, else the instance type (null: neither recorded)",
    ),
    ("started_at", "string", "when the run started, ISO 8601 UTC as logged"),
    ("synthetic", "bool", "the log says it is synthetic (hand-written), not measured"),
    (
        "weights_origin",
        "string",
        "where the plan says the weights come from: synthetic weights are measured, but of no trained model (null: not recorded)",
    ),
    ("complete", "bool", "the log ends with a run_end"),
    ("collector", "string", "the collector's version (null: not recorded)"),
    ("schema_version", "string", "the event schema version of the log"),
    ("run_outcome", "string", "the run's disposition: suitable, change or blocked"),
    (
        "performance_stopped",
        "bool",
        "the run's performance acceptance is stopped (mismatching or errored cells without a verdict): no timing of the run is a performance result, stable or not",
    ),
    *(
        (f"version_{key}", "string", f"the {key} version the environment event recorded (null: not recorded)")
        for key in VERSION_KEYS
    ),
    ("cell", "string", "the cell's case key, e.g. b1-l128-contiguous-float32-eager (null: the run planned no cell)"),
    ("dtype", "string", "the cell's compute dtype"),
    ("mode", "string", "eager or compiled"),
    ("status", "string", "the cell's outcome: " + ", ".join(STATUS_ORDER)),
    ("warm_median_s", "float64", "median of the kept warm samples, seconds (only when correctness passed)"),
    ("warm_samples", "int32", "how many warm samples that median is of"),
    (
        "warm_stability",
        "string",
        "the warm series' classification: stable, unstable or unclassified (too short); only a stable median decides anything (null: no kept samples)",
    ),
    *(
        column
        for prefix, words in (
            (SERIES_COLUMN["ttft_warm"], "time to first token, warm"),
            (SERIES_COLUMN["decode_token"], "decode time per token"),
        )
        for column in (
            (
                f"{prefix}_median_s",
                "float64",
                f"a generation cell's {words}: median of its first run's series, seconds (only when correctness passed)",
            ),
            (
                f"{prefix}_stability",
                "string",
                f"that series' classification, as warm_stability's (null: no {words} series)",
            ),
        )
    ),
    ("cold_s", "float64", "the first call, seconds (only when correctness passed)"),
    (
        "cold_cache_condition",
        "string",
        "the cache condition of that call, as details.csv's: fresh_process_empty_cache, persistent_cache, "
        "restart_populated_cache, compiled_in_process or eager_no_compile (a compile from nothing and a first "
        "call from a filled cache are not one quantity: compare cold_s within one condition)",
    ),
    (
        "compile_s",
        "float64",
        "compile and first result of the cell's graph, seconds (compiled cells that passed; empty for a generation cell, whose prefill and decode graphs each compile: the report's generation table gives them)",
    ),
    (
        "compile_cache",
        "string",
        f"whether that compile missed or hit the compile cache: '{CACHE_MISS}', '{CACHE_HIT}' or '{CACHE_UNKNOWN}' "
        "(null: no compile); a compile from nothing and one from a filled cache are not one quantity: compare "
        "compile_s within one outcome",
    ),
    ("cpu_fallback", "bool", "some ops of the cell fell back to the CPU"),
    (
        "timing_layout_missed",
        "string",
        "the timed calls fed another layout than the cell's ('warm', 'cold'; null: none): such a figure is not the cell's",
    ),
    ("log", "string", "where the log is: its s3:// URL, or its copy in the site (runs/<slug>/events.jsonl)"),
    ("log_etag", "string", "the object's ETag as listed when the site was built (null for a local log)"),
    ("page", "string", "the run's page in the site"),
)


def rows(runs: list[tuple[RunSummary, Any]]) -> list[dict[str, Any]]:
    """One record per (run, cell), newest run first; ``runs`` pairs each
    summary with its log (a Path or a RemoteLog). Cells go in case-key order: the stored
    summaries do not keep the plan's order, and a rebuild must give the same bytes."""
    records = []
    for summary, log in sorted(runs, key=lambda pair: pair[0].sort_key, reverse=True):
        run = {
            "run_id": summary.run_id,
            "workload": summary.workload,
            "target": summary.target,
            "family": summary.family,
            "device": summary.device or None,
            "started_at": summary.started_at,
            "synthetic": summary.synthetic,
            "weights_origin": summary.weights_origin,
            "complete": summary.complete,
            "collector": summary.collector or None,
            "schema_version": summary.schema_version or None,
            "run_outcome": summary.outcome,
            "performance_stopped": bool(summary.performance_stopped),
            **{f"version_{key}": summary.versions.get(key) for key in VERSION_KEYS},
            "log": log.url if isinstance(log, RemoteLog) else f"runs/{summary.slug}/events.jsonl",
            "log_etag": log.etag if isinstance(log, RemoteLog) else None,
            "page": f"runs/{summary.slug}/index.html",
        }
        cells: list[tuple[str | None, CellSummary | None]] = [*sorted(summary.cells.items())] or [(None, None)]
        for case, cell in cells:
            records.append(
                {
                    **run,
                    "cell": case,
                    "dtype": getattr(cell, "dtype", None),
                    "mode": getattr(cell, "mode", None),
                    "status": getattr(cell, "status", None),
                    "warm_median_s": getattr(cell, "warm_median_s", None),
                    "warm_samples": getattr(cell, "warm_samples", None),
                    "warm_stability": stability_word(
                        cell.warm_samples_s,
                        cell.warm_waited,
                        cell.warm_before,
                        cell.warm_logged,
                        unread=cell.warm_wait_unread,
                    )
                    if cell is not None and cell.warm_median_s is not None
                    else None,
                    **{
                        f"{prefix}_{what}": value
                        for series, prefix in SERIES_COLUMN.items()
                        for what, value in _series(cell, series)
                    },
                    "cold_s": getattr(cell, "cold_s", None),
                    "cold_cache_condition": getattr(cell, "cold_condition", None),
                    "compile_s": getattr(cell, "compile_s", None),
                    "compile_cache": getattr(cell, "compile_cache", None),
                    "cpu_fallback": getattr(cell, "cpu_fallback", None),
                    # The timed calls fed another layout than the cell's ('warm', 'cold'): such a
                    # figure is not the cell's (None: none; a cell of a passing run only).
                    "timing_layout_missed": ";".join(cell.layout_missed) or None if cell is not None else None,
                }
            )
    return records


def _series(cell: CellSummary | None, series: str) -> tuple[tuple[str, Any], tuple[str, Any]]:
    """A generation cell's median and stability word of one warm series (None, None for others)."""
    samples = cell.generation.get(series) if cell is not None else None
    median = cell.generation_median_s.get(series) if cell is not None and samples else None
    waited = cell.generation_waited if cell is not None else None
    before = (cell.generation_before or {}).get(series) if cell is not None else None
    # A decode series decides nothing where its repetitions' whole decode times (tokens/s) are
    # unstable either, as diff and compare say.
    decode = cell if cell is not None and series == "decode_token" else None
    repetitions = decode.generation_repetitions if decode is not None else None
    totals = (decode.generation_before or {}).get(TOTALS) if decode is not None else None
    unread = cell.generation_wait_unread if cell is not None else False
    word = (
        stability_word(samples, waited, before, repetitions=repetitions, totals_before=totals, unread=unread)
        if samples
        else None
    )
    return ("median_s", median), ("stability", word)


def _schema() -> pyarrow.Schema:
    import pyarrow as pa

    types = {"string": pa.string(), "bool": pa.bool_(), "float64": pa.float64(), "int32": pa.int32()}
    return pa.schema(
        [pa.field(name, types[kind]) for name, kind, _ in COLUMNS],
        metadata={"migration-record.cell-index": str(FORMAT)},
    )


def parquet_bytes(records: list[dict[str, Any]]) -> bytes:
    """The records as one Parquet file (Snappy, one row group per 64k rows): the same records
    give the same bytes, so an unchanged site rewrites nothing."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pylist(records, schema=_schema())
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="snappy", row_group_size=65536)
    return sink.getvalue()


def write_cell_index(runs: list[tuple[RunSummary, Any]], out_dir: Path) -> Path | None:
    """Writes out_dir/index.parquet when its bytes change; returns the path when it did."""
    path = out_dir / INDEX_NAME
    return path if write_inside(out_dir, path, parquet_bytes(rows(runs))) else None
