"""One chart path: every figure is computed in reportgen/render/charts.py and drawn by
templates/_charts.html.j2.

A page's figures (a report's, a comparison's, the site's trends) are made by charts.py's
functions as plain geometry; no other module of reportgen makes a ``Figure`` or imports a chart
library, no Python module writes SVG markup, and no other template draws an ``<svg>`` chart.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CHARTS = REPO / "reportgen" / "render" / "charts.py"
CHART_LIBRARIES = {"plotly", "matplotlib", "bokeh", "altair", "pygal"}
# An SVG element's opening tag, as Python code would have to write it to assemble a chart.
SVG_MARKUP = re.compile(r"<(?:svg|circle|rect|polyline|polygon|path|line|text|g)[\s>/]")


def chart_making(source: str) -> list[str]:
    """Where a module's source imports a chart library or calls ``Figure(...)`` (by that name or as an attribute)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [
                f"line {node.lineno}: import {a.name}" for a in node.names if a.name.split(".")[0] in CHART_LIBRARIES
            ]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in CHART_LIBRARIES:
            found.append(f"line {node.lineno}: from {node.module} import ...")
        elif isinstance(node, ast.Call):
            name = (
                node.func.id
                if isinstance(node.func, ast.Name)
                else node.func.attr
                if isinstance(node.func, ast.Attribute)
                else ""
            )
            if name == "Figure":
                found.append(f"line {node.lineno}: Figure(...)")
    return found


def test_only_charts_py_builds_figures() -> None:
    modules = [p for p in sorted((REPO / "reportgen").rglob("*.py")) if p != CHARTS]
    assert len(modules) > 50
    found = [f"{p.relative_to(REPO)} {where}" for p in modules for where in chart_making(p.read_text(encoding="utf-8"))]
    assert found == [], "figures are built in reportgen/render/charts.py only:\n" + "\n".join(found)
    assert chart_making(CHARTS.read_text(encoding="utf-8"))  # the check finds charts.py's own


def test_a_planted_figure_elsewhere_is_found() -> None:
    assert chart_making("import plotly.graph_objects as go\n")
    assert chart_making("from plotly import graph_objects\n")
    assert chart_making("def f(go):\n    return go.Figure(layout={})\n")
    assert chart_making("x = Figure('id', 't', 'c', {})\n")
    assert chart_making("from reportgen.render.charts import Figure\n") == []  # the type alone is no figure


def svg_in_strings(source: str) -> list[str]:
    """Where a module's string literals hold SVG markup (a chart assembled in Python)."""
    return [
        f"line {node.lineno}: {node.value[:40]!r}"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and SVG_MARKUP.search(node.value)
    ]


def test_no_python_module_writes_svg() -> None:
    modules = sorted((REPO / "reportgen").rglob("*.py"))
    found = [
        f"{p.relative_to(REPO)} {where}" for p in modules for where in svg_in_strings(p.read_text(encoding="utf-8"))
    ]
    assert found == [], "charts are drawn by templates/_charts.html.j2 only:\n" + "\n".join(found)
    assert svg_in_strings('x = f"<circle cx={x}/>"\n') and svg_in_strings("y = '<svg viewBox=\"0 0 1 1\">'\n")
    assert svg_in_strings("z = 'a < b and g > f'\n") == []


def test_one_template_draws_every_chart() -> None:
    templates = sorted((REPO / "templates").glob("*.j2"))
    drawing = [p.name for p in templates if "<svg" in p.read_text(encoding="utf-8")]
    assert drawing == ["_charts.html.j2"], drawing
    users = [p.name for p in templates if "figures(" in p.read_text(encoding="utf-8") and p.name != "_macros.html.j2"]
    assert set(users) >= {"report.html.j2", "compare.html.j2", "workload.html.j2"}, users
