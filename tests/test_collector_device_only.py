"""collector/ holds exactly the code that runs on the device host.

Every module in collector/ is reached from what the device runs: ``python -m collector`` and the
child processes it starts (``collector.cellproc``, ``collector.coldstart``); the example workloads
are loaded by their plans. A module nothing on the device imports (a documentation generator, a
scheduler front end) belongs elsewhere. The README's file list names each module.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO

COLLECTOR = REPO / "collector"
# What the device starts: the command and the child processes it runs by module name.
ENTRY_POINTS = ("collector.__main__", "collector.cellproc", "collector.coldstart")


def _modules() -> dict[str, Path]:
    found = {}
    for path in COLLECTOR.rglob("*.py"):
        name = ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
        if not name.startswith("collector.workloads"):  # example workloads: loaded by their plans
            found[name] = path
    return found


def _imports(path: Path, known: dict[str, Path]) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return {name for name in names if name in known}


def test_every_collector_module_is_reached_from_what_runs_on_the_device() -> None:
    known = _modules()
    seen: set[str] = set()
    todo = list(ENTRY_POINTS)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        parts = name.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]  # a package's __init__ runs too
        todo += sorted(_imports(known[name], known))
    assert sorted(set(known) - seen) == [], "modules in collector/ that nothing on the device imports"


def test_the_collector_readme_lists_every_module() -> None:
    readme = (COLLECTOR / "README.md").read_text(encoding="utf-8")
    listed = readme.split("## Files", 1)[1].split("\n## ", 1)[0]
    for path in sorted(COLLECTOR.rglob("*.py")):
        relative = path.relative_to(COLLECTOR).as_posix()
        if relative.startswith("workloads/") or path.name == "__init__.py":
            continue
        assert f"`{relative}`" in listed, f"collector/README.md's file list does not name {relative}"
