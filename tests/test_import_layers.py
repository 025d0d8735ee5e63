"""reportgen's layers import downward only (README, Contributing), and no two of its modules
import each other, whether at the top of a file or inside a function: read from the sources."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "reportgen"
# Highest first: a layer may import the layers after it, never one before it.
LAYERS = ("cli", "publish", "render", "judge", "model", "contract", "storage")


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The reportgen modules ``name`` imports anywhere in its file (``from pkg import module`` as
    that module when it is one)."""
    out: set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names if alias.name in known}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else [])
                )
            for alias in node.names:
                target = f"{base}.{alias.name}"
                if target in known:
                    out.add(target)
                elif base in known:
                    out.add(base)
    out.discard(name)
    return out


def _layer(module: str) -> int | None:
    part = module.split(".")[1] if "." in module else ""
    part = "cli" if part in ("cli", "__main__") else part
    return LAYERS.index(part) if part in LAYERS else None


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, set(modules)) for name, path in modules.items()}


def test_no_layer_imports_a_layer_above_it() -> None:
    upward = [
        f"{name} imports {target}"
        for name, targets in _graph().items()
        for target in targets
        if (a := _layer(name)) is not None and (b := _layer(target)) is not None and b < a
    ]
    assert not upward, upward


def test_no_two_modules_import_each_other() -> None:
    graph = _graph()
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    cycles: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                cycles.append(path[path.index(target) :] + [target])
            elif target not in state:
                visit(target, path + [target])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert not cycles, cycles


def test_the_reader_finds_imports_inside_functions() -> None:
    graph = _graph()
    # reportgen.render.report imports the backend documents inside a function only.
    assert "reportgen.judge.backend_docs" in graph["reportgen.render.report"]
    assert len(graph) > 50 and all(_layer(name) is not None for name in graph if name.count(".") >= 2)
