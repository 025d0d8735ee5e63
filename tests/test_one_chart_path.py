"""One chart path: every figure is built in reportgen/render/charts.py.

A page's figures (a report's, a comparison's, the site's trends) are made by charts.py's
functions as plain data; no other module of reportgen imports plotly or makes a ``Figure``.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CHARTS = REPO / "reportgen" / "render" / "charts.py"


def chart_making(source: str) -> list[str]:
    """Where a module's source imports plotly or calls ``Figure(...)`` (by that name or as an attribute)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [f"line {node.lineno}: import {a.name}" for a in node.names if a.name.split(".")[0] == "plotly"]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "plotly":
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


def test_the_site_trend_charts_are_made_without_plotly() -> None:
    """The trend charts go the report charts' way (plain data through ``_figure``), not through
    plotly's figure classes: drawing them imports no plotly."""
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from reportgen.publish.frame import history_frame\n"
        "from reportgen.publish.summary import summarize\n"
        "from reportgen.render.charts import trend_figures\n"
        "from reportgen.render.report import judge_log\n"
        "runs = sorted(Path('sample_runs').glob('heat-solver-cpu-*/events.jsonl'))\n"
        "history = history_frame([summarize(judge_log(log)) for log in runs])\n"
        "ids = list(dict.fromkeys(history['run_id']))\n"
        "figures = trend_figures(history, list(dict.fromkeys(history['case']))[:3], 'p', {ids[-1]: (1.1, 1.0, 1.2, 3)})\n"
        "print(len(figures), sorted(m for m in sys.modules if m.split('.')[0] == 'plotly'))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    count, modules = proc.stdout.split(" ", 1)
    assert int(count) >= 3 and modules.strip() == "[]", proc.stdout
