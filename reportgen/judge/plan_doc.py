"""Generate collector/PLAN.md, the plan reference, from the schema in collector/planschema.py.

Run from the repository root after changing the schema::

    python -m reportgen.judge.plan_doc
"""

from __future__ import annotations

from pathlib import Path

from collector import planschema
from collector.planschema import SCHEMA, Key, Table

# The plan reference stays beside the code that reads plans on the device.
DOC_PATH = Path(__file__).resolve().parents[2] / "collector" / "PLAN.md"

_TYPES = {
    "str": "string",
    "int": "integer",
    "number": "number",
    "bool": "boolean",
    "list[str]": "list of strings",
    "list[int]": "list of integers",
    "shapes": "list of [batch, length]",
    "range": "[smallest, largest]",
    "globs": "string or list of strings",
    "table(free)": "table of string, number or boolean",
    "text-policy": "string (policy)",
}

_INTRO = """\
# The workload plan (TOML)

A plan says, before anything runs, what a run will test and what counts as correct. The
collector runs it (`python -m collector --workload PLAN.toml`) and `reportgen plan-check PLAN.toml`
reviews it against a backend's documented constraints. This page is generated from
`collector/planschema.py` by `python -m reportgen.judge.plan_doc`; both programs validate a plan
against that one schema.

## Rules

* **Strict keys.** A key that is not listed here, or is written in the wrong table, is an error:
  one line naming the file, the line, the key path and what is expected, with a "did you mean"
  when a close key exists (`plan.toml:7: workload.dynamic: unknown key in [workload]; it belongs
  in [compile] as compile.dynamic`). The collector exits 2 and writes nothing; plan-check exits 1.
* **Types are checked** (a boolean is not a number, `warm_repetitions = "x"` is an error), and so
  are ranges: shapes are positive, counts have the minimum shown.
* **Defaults** apply to keys left out; a key marked *required* must be written when its table is.
* **Proposals are not approvals.** `reportgen plan-check --write-revised` marks every value it
  proposes: `proposed = true` in the table that holds proposed tolerances or a proposed bucket
  ladder, and `UNDECIDED: ...` for a policy only the owner can decide. A plan holding either still
  checks as "needs a revised test plan" (exit 3), and the collector refuses to run it, naming each
  one, until a person writes the agreed values and removes the marks.
* **Targets.** The collector refuses `[compile]` options that the target's constraint data
  rejects (for Neuron: `dynamic = true`, a mode other than `"default"`), naming the constraint
  and its source; plan-check proposes the supported value.
* "Read by" says which part uses a key: the collector when it runs the plan, plan-check when it
  reviews it. The collector records in the plan event what it read, and the `[compile]` options
  in each compile event as well.

## Tables
"""


def _allowed(key: Key) -> str:
    if key.kind == "text-policy":
        return "starts with " + ", ".join(f"`{c}`" for c in key.choices) + " (or `UNDECIDED: ...`)"
    if key.choices:
        return ", ".join(f"`{c}`" for c in key.choices)
    if key.minimum is not None and key.maximum is not None:
        return f"{key.minimum:g} to {key.maximum:g}"
    if key.minimum is not None:
        return f">= {key.minimum:g}"
    return ""


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _header(table: Table) -> str:
    return f"[{table.path.replace('<dtype>', 'DTYPE').replace('<name>', 'NAME').replace('<group>', 'GROUP')}]"


def _example(table: Table) -> str:
    header = _header(table)
    if table.inline:
        parent, name = header.strip("[]").replace("DTYPE", "float32").rsplit(".", 1)
        body = ", ".join(f"{k.name} = {k.example}" for k in table.keys if k.name != "proposed")
        return f"[{parent}]\n{name} = {{ {body} }}"
    lines = [
        header.replace("DTYPE", "float32")
        .replace("outputs.NAME", "outputs.hidden")
        .replace("NAME", "input_ids")
        .replace("GROUP", "biases")
    ]
    if table.example:
        return "\n".join(lines + [table.example])
    lines += [f"{k.name} = {k.example}" for k in table.keys if k.example and k.name != "proposed"]
    return "\n".join(lines)


def render_doc() -> str:
    out = [_INTRO]
    for table in SCHEMA:
        required = " (required)" if table.required else ""
        out.append(f"### `{_header(table)}`{required}\n")
        out.append(table.doc + "\n")
        if table.each:
            names = ", ".join(f"`{n}`" for n in table.names) if table.names else "any name"
            out.append(
                f"One sub-table per name ({names}); its keys are listed under `{_header(planschema.TABLES[table.each])}`.\n"
            )
            continue
        if not table.keys:
            out.append("It holds only the sub-tables below.\n")
            continue
        out.append("| key | type | default | allowed | read by | meaning |")
        out.append("|---|---|---|---|---|---|")
        for key in table.keys:
            out.append(
                f"| `{key.name}` | {_TYPES[key.kind]} | {_cell(planschema.default_text(key))} | {_cell(_allowed(key))} | {key.readers} | {_cell(key.doc)} |"
            )
        out.append("\nExample:\n\n```toml\n" + _example(table) + "\n```\n")
    moved = ", ".join(f"`{old}` -> `{new}`" for old, new in planschema.MOVED.items())
    out.append("## Keys that moved\n")
    out.append(f"Older plans and first guesses are answered with where the key belongs now: {moved}.\n")
    return "\n".join(out)


if __name__ == "__main__":
    DOC_PATH.write_text(render_doc(), encoding="utf-8")
    print(f"wrote {DOC_PATH}")
