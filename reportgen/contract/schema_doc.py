"""Generate the committed JSON Schema and field reference of the event log from its Structs.

Run from the repository root after changing ``reportgen/contract/events.py``::

    python -m reportgen.contract.schema_doc

The examples in the reference are lines of the synthetic fixtures in ``tests/fixtures/``
(``EXAMPLES_PATHS``), so they are known to validate.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import msgspec

from reportgen.contract.events import EVENT_MODELS, INSPECTION_MODELS, SCHEMA_VERSION, Event, OpCount, WideTensor

SCHEMA_DIR = Path(__file__).parent / "schema"
SCHEMA_PATH = SCHEMA_DIR / "events.schema.json"
DOC_PATH = SCHEMA_DIR / "EVENTS.md"
EXAMPLES_PATHS = (
    Path("tests/fixtures/synthetic_complete.jsonl"),
    Path("tests/fixtures/synthetic_training.jsonl"),
    Path("tests/fixtures/synthetic_localized.jsonl"),
    Path("tests/fixtures/synthetic_generation.jsonl"),
)

_INTRO = """\
# The run-log contract (schema {version})

A run log is a UTF-8 file named `events.jsonl`: one JSON object per line, each ending with a
newline, written in order and flushed as written. This page is generated from
`reportgen/contract/events.py` by `python -m reportgen.contract.schema_doc`; the machine-readable form is
[`events.schema.json`](events.schema.json). Check a log you wrote with
`reportgen validate events.jsonl`.

## Rules every log follows

* Every line carries the envelope: `schema_version` (`"{version}"`), `seq` (0, 1, 2, ...
  strictly increasing), `time` (UTC, ISO 8601) and `kind`.
* The first line is `run_start`; `environment` and `plan` follow. The plan, with its
  tolerances, comes before any result (`reference`, `case_result`, `operators`, `compile`,
  `timing`, `profile`). Each planned cell has at most one `case_result`; a cell without one is
  reported as **untested**.
* The last line is `run_end`. A log without it, or whose last line is cut off, is readable but
  reported as an incomplete run.
* Numbers are finite: write `null` where a value is not a finite number (`NaN` is not JSON).
* A value that could not be read is a fact with `value: null` and an `unknown_reason`, never
  left out. A list that could not be measured says so (`status: unmeasured` plus `reason`),
  never an empty list.
* Unknown fields and kinds are errors at the same schema version. A log from a newer *minor*
  version validates with warnings (what is unknown is ignored); a newer *major* version is
  refused.
* A fixture that is not a measurement says `"origin": "synthetic"` in `run_start`.
* A status or flag agrees with the figures beside it, by the rules the collector decides them
  with: a `case_result` with `status: pass` has `error_stats.mismatched` 0 (judged regions
  only) and no `task_metric.passed: false`; `task_metric.criterion` is the plan's task criterion
  for the cell's dtype, and `task_metric.passed: true` meets it;
  a `generation` line's `steps_agreeing`, `first_divergent_step`, `tokens_passed` and
  `top_k_passed` are what its `tokens`, `reference_tokens`, `top_k_overlap` and the plan's
  criteria give; a `train_step`'s `loss_within` is its loss against `reference_loss` under the
  plan's loss tolerance, and a training cell with a failing step, gradient or parameter does not
  pass; a `generation` line has `timing` only when its cell's `case_result` passed, its
  `request_length` is its planned cell's length, and its `bucket` and `truncated` are what the
  `request` naming its cell decided (a `request` is padded to a bucket at least its `length`,
  truncated to a shorter one, refused without one; a cell is named by one request); a run has
  at most one weights `artifact`, which gives the plan's `weights_sha256`/`weights_content_sha256` and
  does not call unknown a content hash the plan gives, and a measured run of schema 1.2 or later
  whose `run_end` says complete has one; an artifact has a `content_sha256` or a
  `content_unknown_reason`, not both, and its file, where one lies beside the log (its `path`
  under the log's folder), has the `bytes` and `sha256` the artifact gives (a file not there is
  no finding: logs travel without their artifacts); `run_start.collector` in the collector's form
  (`collector <version>`) names the version `provenance.collector_version` gives; a
  planned cell whose `case` is in the collector's form (`b<batch>-l<length>-<layout>-<dtype>-<mode>`,
  `-repeat` on a cache check) names its own fields; a `localization` judges with the plan's
  tolerance for its cell's dtype, and each module's figures agree with each other as a
  `case_result`'s `error_stats` do; an `environment`'s `backend_family` belongs to the backend of
  its `device_type`; a cell's `timing` lines with a warm series number it 1, 2, ... in order
  (`attempt`, and `stability.attempt` alike; 1 or absent starts the count again: the cell
  measured from the start, as after its fresh process ended), at most 1 + the plan's
  `remeasure_rounds`, each after one whose `stability.verdict` is `unstable`; a `case_result`
  with `status` `pass` or `mismatch` has `error_stats` (and `task_metric` where the plan gives
  its dtype a task criterion), of a training plan after its cell's `train_step` and
  `train_result`; `layout_fed` is the layout of `inputs_fed` (non-contiguous when any tensor is)
  and `layout_achieved: true` has the planned layout there; a judged cell of a `cpu` or `cuda`
  run (`environment.device_type`) was fed at least one tensor on that device; a pass has no more
  non-finite `outputs` than its shape's `reference` (without judged regions; a training cell,
  none); a cache check whose `compile` event counts a graph built is not `recompiled: false`;
  `run_end.cells_planned` is the plan's cell count and `cells_recorded` the `case_result` lines
  (at most as many in an aborted run); a `case_result`'s `error_stats.allowed_at_worst` is 0 or
  at least the atol that judged it (the plan's for its dtype, a training plan's loss atol), and
  elements outside the tolerance come with a `max_abs` beyond that atol or of 1 or more (in all
  and per output); a `localization` is of an inference plan's cell, once, after its
  `case_result`, in the cell's `mode`, its `reason` the cell's status (`mismatch`, `nonfinite`)
  or `plan` for a pass; a `timing` line's `scope` flags are the stages its `timed_region` holds;
  every line has `run_start`'s `schema_version` (a line of a newer minor than this reader's is
  read with its warning). A line that contradicts itself is an error: the log is not evidence.
* A content hash's `content_recipe` is one this reader knows (`tensor-content-v1`); another
  (a newer collector's) validates with a warning: its hashes are not comparable with those.

## Event kinds
"""


def render_schema() -> str:
    schema = msgspec.json.schema(Event)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = f"migration-record run-log event, schema {SCHEMA_VERSION}"
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def _type_name(prop: dict[str, Any]) -> str:
    if "$ref" in prop:
        return prop["$ref"].rsplit("/", 1)[-1]
    if "const" in prop:
        return json.dumps(prop["const"])
    if "enum" in prop:
        return " \\| ".join(json.dumps(v) for v in prop["enum"])
    if "anyOf" in prop:
        by = f" (by `{prop['discriminator']['propertyName']}`)" if "discriminator" in prop else ""
        return " or ".join(_type_name(p) for p in prop["anyOf"]) + by
    kind = prop.get("type", "any")
    if kind == "array":
        return f"list of {_type_name(prop.get('items', {}))}"
    if kind == "object" and "additionalProperties" in prop:
        return f"map of string to {_type_name(prop['additionalProperties'])}"
    return str(kind)


def _field_rows(schema: dict[str, Any]) -> list[str]:
    required = set(schema.get("required", []))
    rows = ["| field | type | required | meaning |", "|---|---|---|---|"]
    for name, prop in schema.get("properties", {}).items():
        meaning = (prop.get("description") or "").replace("|", "\\|").replace("\n", " ")
        need = "yes" if name in required else "no"
        rows.append(f"| `{name}` | {_type_name(prop)} | {need} | {meaning} |")
    return rows


def _definitions() -> dict[str, Any]:
    """The JSON Schema of every Struct of both logs, by name."""
    return msgspec.json.schema_components([Event, *INSPECTION_MODELS.values()])[1]


def _section(title: str, schema: dict[str, Any], example: str | None = None) -> list[str]:
    out = [f"### `{title}`", ""]
    if description := schema.get("description"):
        out += [" ".join(description.split()), ""]
    out += _field_rows(schema) + [""]
    if example:
        out += ["Example:", "", "```json", example, "```", ""]
    return out


def _examples(root: Path, paths: tuple[Path, ...]) -> dict[str, str]:
    """The first line of each kind in these files, as the reference shows it."""
    examples: dict[str, str] = {}
    for path in paths:
        for line in (root / path).read_text(encoding="utf-8").splitlines():
            obj = json.loads(line)
            examples.setdefault(obj["kind"], json.dumps(obj, indent=2, sort_keys=True))
    return examples


def render_doc(root: Path = Path(".")) -> str:
    defs = _definitions()
    examples = _examples(root, EXAMPLES_PATHS)
    out = [_INTRO.format(version=SCHEMA_VERSION)]
    for kind, model in EVENT_MODELS.items():
        out += _section(kind, defs[model.__name__], examples.get(kind))
    out += _inspection_sections(root, defs)
    out += ["## Nested objects", ""]
    top = {m.__name__ for m in EVENT_MODELS.values()}
    for name in sorted(msgspec.json.schema(Event).get("$defs", {})):
        if name not in top:
            out += _section(name, defs[name])
    return "\n".join(out).rstrip("\n") + "\n"


INSPECTION_EXAMPLE = Path("sample_inspections/tiny-encoder.inspection.jsonl")
_INSPECTION_INTRO = """\
## Inspection logs

`python -m collector inspect --workload PLAN.toml` writes a log of its own, before any hardware:
`inspection_start`, one `inspection` per planned input shape, `inspection_end`, with the same
envelope. It is read by `reportgen plan-check PLAN --inspection LOG`, never as a run log:
nothing in it is measured on a device.
"""


def _inspection_sections(root: Path, defs: dict[str, Any]) -> list[str]:
    examples = _examples(root, (INSPECTION_EXAMPLE,))
    out = [_INSPECTION_INTRO]
    for kind, model in INSPECTION_MODELS.items():
        out += _section(kind, defs[model.__name__], examples.get(kind))
    for part in (OpCount, WideTensor):
        out += _section(part.__name__, defs[part.__name__])
    return out


def main() -> int:
    SCHEMA_DIR.mkdir(exist_ok=True)
    SCHEMA_PATH.write_text(render_schema(), encoding="utf-8", newline="\n")
    DOC_PATH.write_text(render_doc(), encoding="utf-8", newline="\n")
    print(f"wrote {SCHEMA_PATH} and {DOC_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
