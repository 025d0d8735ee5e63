"""Reading the charts a page draws (inline SVG, templates/_charts.html.j2) back into numbers.

Each ``<svg class="chart">`` is parsed as XML on its own; tests then check what a reader sees:
the points and bars, their titles (the exact values), the ticks and reference lines.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass

NUM = r"-?\d+(?:\.\d+)?"
SVG = re.compile(r'<svg class="chart".*?</svg>', re.DOTALL)


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _title(element: ET.Element) -> str:
    for child in element:
        if _local(child.tag) == "title":
            return child.text or ""
    return ""


@dataclass(frozen=True)
class DrawnPoint:
    series: str
    mark: str
    x: float
    y: float
    title: str
    whisker: tuple[float, float] | None  # the interval's ends along its axis


@dataclass(frozen=True)
class DrawnBar:
    series: str
    x: float
    y: float
    width: float
    height: float
    title: str


@dataclass(frozen=True)
class DrawnChart:
    id: str
    width: float
    height: float
    title: str
    desc: str
    role: str
    points: list[DrawnPoint]
    bars: list[DrawnBar]
    x_ticks: list[tuple[float, str, str]]  # (coordinate, label, full text in its title)
    y_ticks: list[tuple[float, str, str]]
    rules: list[tuple[float, float, float, float, str]]
    texts: list[str]  # every text node in the chart
    plot: tuple[float, float, float, float]  # the plot box (left, top, right, bottom), from the axes' line


def _numbers(path: str) -> list[float]:
    return [float(n) for n in re.findall(NUM, path)]


def _whisker(d: str) -> tuple[float, float]:
    """The two ends of a whisker path M x lo V hi ... or M lo y H hi ..."""
    vertical = re.match(rf"M({NUM}) ({NUM})V({NUM})", d)
    if vertical:
        return float(vertical.group(2)), float(vertical.group(3))
    horizontal = re.match(rf"M({NUM}) ({NUM})H({NUM})", d)
    assert horizontal, d
    return float(horizontal.group(1)), float(horizontal.group(3))


def parse_chart(markup: str) -> DrawnChart:
    root = ET.fromstring(markup)
    _, _, width, height = (float(v) for v in root.attrib["viewBox"].split())
    points, bars, rules = [], [], []
    x_ticks: list[tuple[float, str, str]] = []
    y_ticks: list[tuple[float, str, str]] = []
    plot = (0.0, 0.0, 0.0, 0.0)
    for group in root:
        kind = group.attrib.get("class", "")
        if kind.startswith("series"):
            name, mark = group.attrib["data-name"], group.attrib["data-mark"]
            for item in group:
                tag = _local(item.tag)
                if tag == "rect":
                    a = item.attrib
                    bars.append(
                        DrawnBar(
                            name, float(a["x"]), float(a["y"]), float(a["width"]), float(a["height"]), _title(item)
                        )
                    )
                elif tag == "g":
                    shape = next(
                        c
                        for c in item
                        if _local(c.tag) in ("circle", "path", "rect") and "whisker" not in c.attrib.get("class", "")
                    )
                    if _local(shape.tag) == "circle":
                        x, y = float(shape.attrib["cx"]), float(shape.attrib["cy"])
                    elif _local(shape.tag) == "rect":  # a dash drawn open: 18 wide, 5 high, around its place
                        x, y = float(shape.attrib["x"]) + 9, float(shape.attrib["y"]) + 2.5
                    else:  # a dash: M x-9 y h18
                        left, y = _numbers(shape.attrib["d"])[:2]
                        x = left + 9
                    whisker = next((c for c in item if c.attrib.get("class") == "whisker"), None)
                    points.append(
                        DrawnPoint(
                            name,
                            mark,
                            round(x, 1),
                            y,
                            _title(item),
                            None if whisker is None else _whisker(whisker.attrib["d"]),
                        )
                    )
        elif kind == "axis":
            for item in group:
                if _local(item.tag) == "path":
                    m = re.match(rf"M({NUM}) ({NUM})V({NUM})H({NUM})", item.attrib["d"])
                    assert m
                    plot = (float(m.group(1)), float(m.group(2)), float(m.group(4)), float(m.group(3)))
                elif item.attrib.get("class") == "tick":
                    full = _title(item)
                    label = item.text or ""
                    if item.attrib.get("text-anchor") == "end" and "transform" not in item.attrib:
                        y_ticks.append((float(item.attrib["y"]), label, full))
                    else:
                        x_ticks.append((float(item.attrib["x"]), label, full))
        elif kind == "rule":
            (line,) = [c for c in group if _local(c.tag) == "path"]
            x1, y1, x2, y2 = _numbers(line.attrib["d"])
            label = next((c.text or "" for c in group if _local(c.tag) == "text"), "")
            rules.append((x1, y1, x2, y2, label))
    texts = [t for t in root.itertext() if t.strip()]
    return DrawnChart(
        root.attrib["id"],
        width,
        height,
        _title(root),
        next((c.text or "" for c in root if _local(c.tag) == "desc"), ""),
        root.attrib.get("role", ""),
        points,
        bars,
        x_ticks,
        y_ticks,
        rules,
        texts,
        plot,
    )


def page_charts(html: str) -> dict[str, DrawnChart]:
    """Every chart on a page, by its id."""
    charts = [parse_chart(m) for m in SVG.findall(html)]
    return {c.id: c for c in charts}


def chart_markup(figure: object) -> str:
    """One figure's chart drawn by the page's macro (its legend, in HTML under it, left out)."""
    from reportgen.render.templating import html_env

    template = html_env().from_string('{% from "_charts.html.j2" import chart %}{{ chart(fig) }}')
    found = SVG.search(template.render(fig=figure))
    assert found is not None
    return found.group()
