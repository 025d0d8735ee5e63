"""Comparison pages on the site: which pairs a site configuration asks for, and their pages.

A site configuration is TOML. ``reportgen site --config FILE`` names it; without the option a
``site.toml`` directly inside a folder given to ``reportgen site`` is used. Example::

    # For each workload, the latest run on one target against the latest run on another.
    [[compare_latest]]
    baseline_target = "cuda"
    candidate_target = "neuron"
    workloads = ["tiny-encoder"]      # optional: only these workloads

    # Cells the workload histories always chart and list, beside those that changed most.
    [history]
    cases = ["b1-l128-contiguous-float32-compiled"]

    # One pair, by run id.
    [[compare]]
    baseline = "tiny-encoder-cuda-20261129T225259Z-866a85"
    candidate = "tiny-encoder-neuron-20261201T101010Z-123abc"

    # Replicates: a list of run ids a side (one workload and target each); the interval then
    # includes the variation between runs (see `reportgen compare --help`).
    [[compare]]
    baseline = ["tiny-encoder-cuda-...-a", "tiny-encoder-cuda-...-b", "tiny-encoder-cuda-...-c"]
    candidate = ["tiny-encoder-neuron-...-a", "tiny-encoder-neuron-...-b", "tiny-encoder-neuron-...-c"]

Nothing is compared across workloads: a declared pair of two workloads is refused like any
pair ``reportgen compare`` refuses, and reported; the rest of the site is built. A page is
written again only when either run's log (or annotations) changed.
"""

from __future__ import annotations

import hashlib
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from collector import planschema
from collector.tomltext import toml_text
from collector.visible import visible
from reportgen.judge.backend_docs import backend_name
from reportgen.judge.comparison import CompareRefused
from reportgen.contract.times import placeable
from reportgen.publish.diff import where
from reportgen.publish.site_quick import SiteConfigError
from reportgen.publish.summary import RunSummary, slug
from reportgen.render.compare import LocationError, gather, write_comparison
from reportgen.render.report import ReportInputError
from reportgen.render.templating import Assets
from reportgen.storage.local import (
    DEFAULT_MAX_LOG_BYTES,
    MAX_SIDE_FILE_BYTES,
    NotReadable,
    UnsafeOutput,
    read_bounded,
    remove_inside,
)
from reportgen.storage.sources import LogRef


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


RunIds = (
    Annotated[str, Field(min_length=1)]
    | Annotated[list[Annotated[str, Field(min_length=1)]], Field(min_length=1, max_length=50)]
)


class _Pair(_Strict):
    baseline: RunIds = Field(description="Run id of the baseline run, or a list of replicate runs' ids.")
    candidate: RunIds = Field(description="Run id of the candidate run, or a list of replicate runs' ids.")

    def ids(self, side: str) -> list[str]:
        value = getattr(self, side)
        return [value] if isinstance(value, str) else list(value)


class _Latest(_Strict):
    baseline_target: str = Field(min_length=1)
    candidate_target: str = Field(min_length=1)
    workloads: list[str] | None = None


class _History(_Strict):
    cases: list[str] = Field(
        default_factory=list,
        max_length=50,
        description="Case keys every history charts and lists, beside the cells that changed most.",
    )


# Each declared comparison renders a page, and each compare_latest rule looks at every run: a
# configuration asks for at most these many (a site.toml is read like any other input).
MAX_COMPARE = 1000
MAX_COMPARE_LATEST = 100


class SiteConfig(_Strict):
    compare: list[_Pair] = Field(default_factory=list, max_length=MAX_COMPARE)
    compare_latest: list[_Latest] = Field(default_factory=list, max_length=MAX_COMPARE_LATEST)
    history: _History = Field(default_factory=_History)


def load_site_config(path: Path) -> SiteConfig:
    try:
        text = toml_text(read_bounded(path, MAX_SIDE_FILE_BYTES).decode("utf-8"))
        data = tomllib.loads(text)
    except (NotReadable, OSError, UnicodeDecodeError) as exc:
        raise SiteConfigError(
            f"{path}: cannot read the site configuration: {getattr(exc, 'strerror', None) or exc}"
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise SiteConfigError(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:
        raise SiteConfigError(f"{path}: not valid TOML: nested too deeply") from None
    except ValueError:  # tomllib's one other refusal: an integer past Python's digit limit
        raise SiteConfigError(
            f"{path}: not valid TOML: an integer of more than {sys.get_int_max_str_digits():,} digits"
        ) from None
    try:
        return SiteConfig.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        # Each problem at the line its key is written on (best effort: a table of an array of
        # tables points at the array's first), in this tool's words for an unknown key.
        lines = planschema.Checker(str(path), planschema.key_lines(text))
        shown = []
        for e in errors[:5]:
            key = visible(".".join(str(p) for p in e["loc"]), keep="")[:200]  # text from the file, shown
            line = lines.line_of(".".join(str(p) for p in e["loc"] if not isinstance(p, int)))
            what = "a required key, missing" if e["type"] == "missing" else e["msg"]
            if e["type"] == "extra_forbidden":
                top = " (a site configuration has compare, compare_latest and history)" if len(e["loc"]) == 1 else ""
                name = str(e["loc"][-1])
                what = f"unknown key{top}{_close_key(name) if len(name) <= 200 else ''}"
            shown.append(f"{f'line {line}: ' if line else ''}{key}: {what}")
        more = f"; … and {len(errors) - 5:,} more" if len(errors) > 5 else ""
        raise SiteConfigError(f"{path}: {'; '.join(shown)}{more}") from None


def _close_key(name: str) -> str:
    """'; did you mean KEY?' for a misspelled key of a site configuration, or ''."""
    import difflib

    schema = SiteConfig.model_json_schema()
    keys = {key for part in [schema, *schema.get("$defs", {}).values()] for key in part.get("properties", {})}
    close = difflib.get_close_matches(name, sorted(keys), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


@dataclass(frozen=True)
class PlannedPair:
    baseline: RunSummary
    candidate: RunSummary
    baseline_more: tuple[RunSummary, ...] = ()  # replicates beyond the first run of each side
    candidate_more: tuple[RunSummary, ...] = ()

    @property
    def slug(self) -> str:
        if not (self.baseline_more or self.candidate_more):
            return slug(f"{self.baseline.run_id}-vs-{self.candidate.run_id}", limit=80)
        every = (
            [r.run_id for r in (self.baseline, *self.baseline_more)]
            + ["vs"]
            + [r.run_id for r in (self.candidate, *self.candidate_more)]
        )
        return slug(
            f"{self.baseline.run_id}-x{1 + len(self.baseline_more)}-vs-{self.candidate.run_id}-x{1 + len(self.candidate_more)}-"
            + "\0".join(every),
            limit=80,
        )

    def runs(self, side: str) -> list[RunSummary]:
        return [self.baseline, *self.baseline_more] if side == "baseline" else [self.candidate, *self.candidate_more]


def placed(summary: RunSummary) -> bool:
    """Whether the run's start is a time a history can place (contract.times.placeable): a run
    that cannot be placed is never the latest."""
    return placeable(summary.started_at)


def plan_pairs(
    config: SiteConfig, summaries: list[RunSummary], source: str = ""
) -> tuple[list[PlannedPair], list[str], list[str]]:
    """The pairs the configuration asks for, in a stable order; what it names but cannot have
    (errors); and rules that made no page (warnings: the runs may not exist yet, or a name is
    mistyped, so each says what the site holds)."""
    by_id = {s.run_id: s for s in summaries}
    pairs: dict[tuple[str, str], PlannedPair] = {}
    problems: list[str] = []
    named = f"site configuration {source}" if source else "site configuration"  # source: the file it came from
    for number, pair in enumerate(config.compare, 1):
        base_ids, cand_ids = pair.ids("baseline"), pair.ids("candidate")
        missing = [rid for rid in base_ids + cand_ids if rid not in by_id]
        if missing:
            # Each id cut, and at most a few named: a rule of fifty 19,000-character ids printed
            # one line of 1.9 MB.
            def cut(value: object) -> str:
                text = repr(value)
                return text if len(text) <= 120 else text[:119] + "…"

            more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
            problems.append(
                f"{named}: [[compare]] #{number}: comparison {cut(pair.baseline)} against {cut(pair.candidate)} skipped: "
                f"no run with id {', '.join(cut(m) for m in missing[:5])}{more}"
            )
            continue
        base, cand = [by_id[r] for r in base_ids], [by_id[r] for r in cand_ids]
        pairs[("\0".join(base_ids), "\0".join(cand_ids))] = PlannedPair(
            base[0], cand[0], tuple(base[1:]), tuple(cand[1:])
        )
    notes: list[str] = []
    for rule in config.compare_latest:
        what = f"site configuration: compare_latest {rule.baseline_target!r} against {rule.candidate_target!r}"
        # A target word names its backend: "trainium" and "neuron" are one target.
        sides = (backend_name(rule.baseline_target), backend_name(rule.candidate_target))
        if sides[0] == sides[1]:
            problems.append(f"{what} skipped: both sides name one target")
            continue
        found = 0  # pairs this rule finds, whether or not an earlier rule or [[compare]] planned them
        by_workload: dict[str, list[RunSummary]] = {}
        chosen = None if rule.workloads is None else set(rule.workloads)
        for s in summaries:
            if chosen is None or s.workload in chosen:
                by_workload.setdefault(s.workload, []).append(s)
        for workload, runs in sorted(by_workload.items()):
            latest = {}
            for target in sides:
                # Planned for the target and run on a backend that is evidence for it: a run
                # planned for neuron that ran on the host CPU is no latest run on neuron.
                on_target = [s for s in runs if where(s) == target and placed(s)]
                if on_target:
                    latest[target] = max(on_target, key=lambda s: s.sort_key)
            if len(latest) == 2:
                base_run, cand_run = latest[sides[0]], latest[sides[1]]
                pairs[(base_run.run_id, cand_run.run_id)] = PlannedPair(base_run, cand_run)
                found += 1
        unknown = sorted((chosen or set()) - {s.workload for s in summaries})
        if unknown:
            from reportgen.judge.plancheck import listed

            notes.append(f"{what}: no run of workload {listed(map(repr, unknown))} in the site")
        if not found and not by_workload:
            notes.append(f"{what} made no page: it names no workload of the site")
        elif not found:
            targets = ", ".join(sorted({where(s) for s in summaries})) or "none"
            notes.append(f"{what} made no page: no workload has runs on both (targets in the site: {targets})")
    return [pairs[k] for k in sorted(pairs)], problems, notes


@dataclass
class ComparisonLink:
    """One comparison as the index lists it."""

    workload: str
    baseline: str
    candidate: str
    baseline_target: str
    candidate_target: str
    headline: str
    href: str
    synthetic: bool

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ComparisonLink:
        return cls(**data)


@dataclass
class ComparisonPages:
    links: list[ComparisonLink] = field(default_factory=list)
    written: list[Path] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)


def build_comparisons(
    pairs: list[PlannedPair],
    logs: dict[str, tuple[LogRef, str]],
    out_dir: Path,
    assets: Assets,
    cached: dict[str, Any],
    max_bytes: int = DEFAULT_MAX_LOG_BYTES,
) -> ComparisonPages:
    """Write comparisons/<slug>/index.html and compare.md for each pair whose inputs changed.

    ``logs`` maps a run id to its log and input key; ``cached`` is the previous build's state;
    ``max_bytes`` is the site's limit on a log, which its comparisons keep too.
    """
    pages = ComparisonPages()
    for pair in pairs:
        found = [[logs[r.run_id] for r in pair.runs(side)] for side in ("baseline", "candidate")]
        keys = f"{found[0][0][1]}\0{found[1][0][1]}"
        if len(found[0]) > 1 or len(found[1]) > 1:  # replicates: every run's key, side by side
            keys = "\1".join("\0".join(key for _, key in side) for side in found)
        key = hashlib.sha256(keys.encode()).hexdigest()
        page_dir = out_dir / "comparisons" / pair.slug
        previous = cached.get(pair.slug)
        if previous and previous.get("key") == key and (page_dir / "index.html").is_file():
            link = ComparisonLink.from_dict(previous["link"])
        else:
            try:
                comparison = gather([log for log, _ in found[0]], [log for log, _ in found[1]], max_bytes=max_bytes)
            except (CompareRefused, ReportInputError, LocationError) as exc:
                pages.rejected.append(
                    f"comparison {pair.baseline.run_id} against {pair.candidate.run_id} not built: {exc}"
                )
                continue
            nav = [
                ("All runs", "../../index.html"),
                (pair.baseline.workload, f"../../workloads/{pair.baseline.workload_slug}/index.html"),
            ]
            # Every run of each side, replicates too, links to its page.
            runs = {
                r.run_id: f"../../runs/{r.slug}/index.html"
                for side in ("baseline", "candidate")
                for r in pair.runs(side)
            }
            pages.written += write_comparison(
                comparison,
                page_dir,
                ("html", "md"),
                assets,
                root="../../",
                nav=nav,
                html_name="index.html",
                out_root=out_dir,
                run_hrefs=runs,
            )
            link = ComparisonLink(
                workload=comparison.workload,
                baseline=pair.baseline.run_id,
                candidate=pair.candidate.run_id,
                baseline_target=comparison.baseline.label,
                candidate_target=comparison.candidate.label,
                headline=comparison.headline,
                href=f"comparisons/{pair.slug}/index.html",
                synthetic=comparison.baseline.synthetic or comparison.candidate.synthetic,
            )
        pages.links.append(link)
        pages.state[pair.slug] = {"key": key, "link": link.__dict__}
    return pages


def remove_stale_comparisons(out_dir: Path, cached: dict[str, Any], keep: set[str]) -> None:
    """Remove the pages of comparisons no longer asked for (never anything outside out_dir)."""
    for name in cached:
        if name not in keep:
            try:
                remove_inside(out_dir, out_dir / "comparisons" / name)
            except (UnsafeOutput, OSError):
                pass  # a page left in place is harmless; nothing outside is touched
