"""A run page on the site links its previous and next run (same workload and target) and the
comparisons it is part of; the links follow when a run is added, though that page's log did not change."""

from __future__ import annotations

import json
import re
from pathlib import Path

from reportgen.publish.site import build_site
from tests.logbuilder import dumps, timing_log
from tests.test_compare import _site_runs


def _page(site: Path, run_id: str) -> tuple[str, str]:
    (folder,) = [p for p in (site / "runs").iterdir() if p.name.startswith(run_id + "-")]
    return folder.name, (folder / "index.html").read_text(encoding="utf-8")


def _nav(page: str) -> str:
    found = re.search(r'<nav class="run-links".*?</nav>', page, re.DOTALL)
    assert found is not None
    return found.group(0)


def test_previous_next_and_comparison_links(tmp_path: Path) -> None:
    runs = _site_runs(tmp_path)  # cpu: old then new; cuda: one; minilm: one on cuda
    (runs / "site.toml").write_text(
        '[[compare_latest]]\nbaseline_target = "cpu"\ncandidate_target = "cuda"\n', encoding="utf-8"
    )
    site = tmp_path / "site"
    assert build_site([runs], site).rejected == []
    old_slug, old = _page(site, "synthetic-cpu-old")
    new_slug, new = _page(site, "synthetic-cpu-new")
    cuda_slug, cuda = _page(site, "synthetic-cuda")
    assert f'rel="next" href="../{new_slug}/index.html"' in _nav(old) and "no earlier run" in _nav(old)
    assert f'rel="prev" href="../{old_slug}/index.html"' in _nav(new) and "no later run" in _nav(new)
    # The cuda run is alone on its target: the cpu runs are never its neighbours.
    assert (
        "no earlier run" in _nav(cuda)
        and "no later run" in _nav(cuda)
        and 'rel="prev"' not in _nav(cuda)
        and 'rel="next"' not in _nav(cuda)
    )
    (comparison,) = (site / "comparisons").iterdir()
    href = f"../../comparisons/{comparison.name}/index.html"
    assert f'href="{href}">cuda against cpu</a>' in _nav(new) and "this run is the baseline" in _nav(new)
    assert f'href="{href}">cuda against cpu</a>' in _nav(cuda) and "this run is the candidate" in _nav(cuda)
    assert "Comparisons with this run" not in _nav(old)  # the rule pairs the latest cpu run only
    assert (site / "runs" / cuda_slug / href).resolve().is_file()

    # A later cpu run: the one that was latest now links to it, and the comparison moves to it.
    later = timing_log("synthetic-cpu-later", scale=1.0, noise=0.01, seed=5)
    later[0]["started_at"] = "2026-01-03T00:00:00Z"
    (runs / "e").mkdir()
    (runs / "e" / "events.jsonl").write_text(dumps(later), encoding="utf-8")
    again = build_site([runs], site)
    assert again.rejected == [] and again.warnings == []
    later_slug, _ = _page(site, "synthetic-cpu-later")
    _, new = _page(site, "synthetic-cpu-new")
    assert f'rel="next" href="../{later_slug}/index.html"' in _nav(new)
    assert "Comparisons with this run" not in _nav(new)
    assert site / "runs" / old_slug / "index.html" not in again.written, (
        "a page whose links did not change is not rendered again"
    )
    state = json.loads((site / ".reportgen-state.json").read_text(encoding="utf-8"))
    assert set(state["links"]) == {p.name for p in (site / "runs").iterdir()}


def test_a_planted_links_record_is_harmless(tmp_path: Path) -> None:
    runs = _site_runs(tmp_path)
    site = tmp_path / "site"
    build_site([runs], site)
    path = site / ".reportgen-state.json"
    state = json.loads(path.read_text(encoding="utf-8"))
    state["links"] = ["../../etc"]
    path.write_text(json.dumps(state), encoding="utf-8")
    (runs / "a" / "events.jsonl").touch()  # something to do: not the no-op path
    result = build_site([runs], site)
    assert result.rejected == []
    _, old = _page(site, "synthetic-cpu-old")
    assert 'rel="next"' in _nav(old)
