"""The report's sections format judged facts and judge nothing.

Every module in reportgen/render/sections/ and reportgen/render/view.py may take from
reportgen.judge only the judgement's data types, constants and a few pure formatting helpers
(listed below, each with why); a judge function imported there would compute a judged fact
while formatting, and fails this test. Imports are read from the source (AST), wherever they
stand in a module (a function's own imports too).
"""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CHECKED = sorted((REPO / "reportgen" / "render" / "sections").glob("*.py")) + [
    REPO / "reportgen" / "render" / "view.py",
    REPO / "reportgen" / "render" / "compare_view.py",  # a comparison's page: which hardware no run is, judged
]

# Data types of the judgement and the constants that go with them.
DATA = {
    ("reportgen.judge.disposition", "Disposition"),
    ("reportgen.judge.disposition", "Reason"),
    ("reportgen.judge.disposition", "Scope"),
    ("reportgen.judge.disposition", "ScopeGroup"),
    ("reportgen.judge.judgement", "Judgement"),
    ("reportgen.judge.judgement", "OwnerExplanation"),
    ("reportgen.judge.judgement", "SHOWN_CELLS"),  # how many cells the judge judges per-cell details for
    ("reportgen.judge.localization", "Localized"),
    ("reportgen.judge.nextstep", "Words"),
    ("reportgen.judge.timing_stability", "SYMBOL"),
    ("reportgen.judge.comparison", "CellComparison"),
    ("reportgen.judge.comparison", "CellTiming"),
    ("reportgen.judge.comparison", "CellSide"),
    ("reportgen.judge.comparison", "Comparison"),
    ("reportgen.judge.comparison", "SeriesTiming"),
    ("reportgen.judge.comparison", "Side"),
    ("reportgen.judge.intervals", "CONFIDENCE"),
    ("reportgen.judge.timing_stability", "FLAG"),
    ("reportgen.judge.timing_stability", "SERIES_COLUMN"),
    ("reportgen.judge.timing_stability", "UNCLASSIFIED_FLAG"),
    ("reportgen.judge.timing_stability", "UNCLASSIFIED_SYMBOL"),
}
# Functions that only turn one value into text, shared with the judge's own sentences so both
# say it the same way.
FORMATTING = {
    ("reportgen.judge.localization", "ratio_text"),  # a ratio to the allowance: '1.5', 'not finite', 'not measured'
    ("reportgen.judge.disposition", "scope_label"),  # a cell's planned shape: '(2, 16) repeat (cache check)'
    ("reportgen.judge.comparison", "compile_cost_text"),  # the judged compile medians, one phrase a cache outcome
    ("reportgen.judge.ratio_words", "estimate_text"),  # a ratio with the digits to read inside its interval
    ("reportgen.judge.ratio_words", "interval_text"),  # an interval's two ends, told apart
    ("reportgen.judge.ratio_words", "ratio_number"),  # a ratio as a figure, or 'out of range'
    ("reportgen.judge.ratio_words", "export_ratio"),  # the same for the exports: the figure, or None
    ("reportgen.judge.backend_docs", "version_keys"),  # which package versions a page lists (the constraint files')
}
ALLOWED = DATA | FORMATTING


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(REPO).with_suffix("").parts)


def judge_imports(source: str, module: str) -> list[tuple[int, str, str]]:
    """(line, module, name) of every name a module's source imports from reportgen.judge
    (name "*" for a whole module or a star import)."""
    package = module.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [
                (node.lineno, a.name, "*")
                for a in node.names
                if a.name == "reportgen.judge" or a.name.startswith("reportgen.judge.")
            ]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolved against this module's package
                parent = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(parent + ([base] if base else []))
            for alias in node.names:
                if base == "reportgen" and alias.name == "judge":
                    found.append((node.lineno, "reportgen.judge", "*"))
                elif base == "reportgen.judge" or base.startswith("reportgen.judge."):
                    found.append((node.lineno, base, alias.name))
    return found


def refused(source: str, module: str) -> list[str]:
    return [
        f"{module}:{line}: imports {name} from {source_module}"
        for line, source_module, name in judge_imports(source, module)
        if (source_module, name) not in ALLOWED
    ]


def test_sections_and_views_import_no_judge_function() -> None:
    assert len(CHECKED) > 5  # the sections are where this test looks for them
    problems = [p for path in CHECKED for p in refused(path.read_text(encoding="utf-8"), _module_name(path))]
    assert problems == [], "a section computes a judged fact; put it in the Judgement instead:\n" + "\n".join(problems)


def test_every_allowed_name_is_data_or_a_listed_formatter() -> None:
    """The allowed list cannot let a judge function in as a 'type': each name is a class or a
    constant, or is listed as a formatting helper."""
    for module, name in sorted(ALLOWED):
        value = getattr(importlib.import_module(module), name)
        if (module, name) in FORMATTING:
            assert inspect.isfunction(value), (module, name)
        else:
            assert inspect.isclass(value) or not callable(value), (
                f"{module}.{name} is callable: list it as formatting with a reason, or move it into the Judgement"
            )


@pytest.mark.parametrize(
    "line",
    [
        "from reportgen.judge.localization import judge_localization",
        "from reportgen.judge.timing_stability import CellStability, flag_text",
        "import reportgen.judge.judgement",
        "from reportgen import judge",
        "from ...judge.localization import where_sentence",
        "def f():\n    from reportgen.judge.disposition import decide\n",
    ],
)
def test_a_planted_judge_import_is_refused(line: str) -> None:
    source = (
        (REPO / "reportgen" / "render" / "sections" / "timings.py").read_text(encoding="utf-8") + "\n" + line + "\n"
    )
    assert refused(source, "reportgen.render.sections.timings")


def test_allowed_imports_are_not_refused() -> None:
    source = (
        "from reportgen.judge.localization import Localized, ratio_text\nfrom ...judge.judgement import Judgement\n"
    )
    assert refused(source, "reportgen.render.sections.problems") == []


def test_the_judge_localises_every_problem_cell_a_page_can_show() -> None:
    """Section 5 details at most DETAIL_CAP problem cells and shows a localisation only where the
    judgement holds one: the judge must localise at least that many."""
    from reportgen.judge.judgement import SHOWN_CELLS
    from reportgen.render.sections.common import DETAIL_CAP

    assert DETAIL_CAP <= SHOWN_CELLS
