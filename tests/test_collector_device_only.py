"""collector/ holds exactly the code that runs on the device host.

Every module in collector/ is reached from what the device runs: ``python -m collector`` and the
child processes it starts (``collector.cellproc``, ``collector.coldstart``); the example workloads
are loaded by their plans, each backend's adapter by the adapter table of
``collector.backends``, from the file its descriptor names, and a descriptor's ``before_torch``
hook by ``collector.descriptors``, before torch is imported. A module nothing on the device
imports (a documentation generator, a scheduler front end) belongs elsewhere. The README's file
list names each module; the adapters it lists as one row, ``backends/*.py``.
"""

from __future__ import annotations

import ast
from pathlib import Path

from collector.descriptors import read_descriptor
from tests.conftest import REPO

COLLECTOR = REPO / "collector"
# What the device starts: the command and the child processes it runs by module name.
ENTRY_POINTS = ("collector.__main__", "collector.cellproc", "collector.coldstart")


def _modules(collector: Path) -> dict[str, Path]:
    found = {}
    for path in collector.rglob("*.py"):
        name = ".".join(path.relative_to(collector.parent).with_suffix("").parts).removesuffix(".__init__")
        if not name.startswith("collector.workloads"):  # example workloads: loaded by their plans
            found[name] = path
    return found


def _adapter_files(collector: Path) -> set[Path]:
    """The adapter files the built-in descriptors name (``collector/backends/NAME.toml``)."""
    return {read_descriptor(path).adapter_file for path in (collector / "backends").glob("*.toml")}


def _hook_files(collector: Path) -> set[Path]:
    """The before_torch hook files the built-in descriptors name."""
    found = (read_descriptor(path) for path in (collector / "backends").glob("*.toml"))
    return {d.path.parent / d.before_torch.split(":", 1)[0] for d in found if d.before_torch}


def _imports(path: Path, known: dict[str, Path]) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return {name for name in names if name in known}


def unreached(collector: Path) -> list[str]:
    """The modules of a collector folder that nothing the device runs imports or loads."""
    known = _modules(collector)
    adapters = {name for name, path in known.items() if path.resolve() in _adapter_files(collector)}
    hooks = {name for name, path in known.items() if path.resolve() in _hook_files(collector)}
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
        if name == "collector.backends":  # its adapter table loads the adapter each descriptor names
            todo += sorted(adapters)
        if name == "collector.descriptors":  # before_torch loads the hook each descriptor names
            todo += sorted(hooks)
    return sorted(set(known) - seen)


def unlisted(collector: Path) -> list[str]:
    """The modules of a collector folder that its README's file list does not name."""
    readme = (collector / "README.md").read_text(encoding="utf-8")
    listed = readme.split("## Files", 1)[1].split("\n## ", 1)[0]
    adapters = _adapter_files(collector) if "`backends/*.py`" in listed else set()
    missing = []
    for path in sorted(collector.rglob("*.py")):
        relative = path.relative_to(collector).as_posix()
        if relative.startswith("workloads/") or path.name == "__init__.py" or path.resolve() in adapters:
            continue
        if f"`{relative}`" not in listed:
            missing.append(relative)
    return missing


def test_every_collector_module_is_reached_from_what_runs_on_the_device() -> None:
    assert unreached(COLLECTOR) == [], "modules in collector/ that nothing on the device imports"


def test_the_collector_readme_lists_every_module() -> None:
    assert unlisted(COLLECTOR) == [], "collector/README.md's file list does not name these"
