"""The index's rows as compact data, for a page that stays small however many runs there are.

index.html carries the totals and the newest ``FIRST_ROWS`` rows as HTML (what a reader
without scripts sees); every row is in ``index-rows-<hash>.js``, which the page's script
(templates/assets/site.js) reads to filter, sort and draw rows a page at a time. A browser
does not let a page opened from file:// fetch a JSON file, so the data is a script that sets
one global; its name carries a hash of its bytes, so a cached copy never pairs with a newer
index.

Format (``ROWS_FORMAT``)::

    {"format": 1, "statuses": [...], "outcomes": {outcome: [symbol, label]},
     "strings": [...],            # every repeated text once
     "rows": [[workload, workload_slug, run_id, slug, flags, intended, target, family,
               torch, stack, started, outcome, headline, scope, passed, not_passed,
               device, adapter, count per status...], ...]}

``stack`` is the version of the run's own target stack (``RunSummary.stack_version``: the
first version column of its backend descriptor, torch_neuronx on neuron). Texts that repeat
(workload, target, versions, headline, scope, device) are indexes into ``strings``;
``slug`` is only the 8-character hash when the slug is the run id plus that hash; ``flags``
is 1 for a synthetic run, plus 2 for an incomplete one, plus 4 when ``run_id`` leaves out a
leading "<workload>-" or 8 when it leaves out "<workload>-<target>-", plus 16 when a timing of
the run decides nothing (``RunSummary.timing_undecided``), plus 32 when its performance
acceptance is stopped (``RunSummary.performance_stopped``); ``intended`` is -1 when
not recorded; ``adapter`` is the run's adapter note (``RunSummary.adapter_note``: the collector's
adapter for its backend has met no hardware), -1 when it has none. ``started`` is the start time in UTC to the second: the first such row holds
seconds since 1970, each later one the difference from the row before that had one (rows
whose time is not an ISO time hold the text as logged). The rows are newest first, as
index.json.
"""

from __future__ import annotations

import calendar
import hashlib
import json
import re
from typing import Any

from reportgen.contract.times import utc_time
from reportgen.model.runmodel import STATUS_ORDER
from reportgen.publish.summary import RunSummary
from reportgen.render.templating import visible_data

ROWS_FORMAT = 3  # 2: the device name after not_passed; 3: the adapter note after the device
FIRST_ROWS = 100  # rows written as HTML in index.html
ROWS_GLOBAL = "reportgenRuns"


_UTC = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", re.ASCII)  # the whole text (fullmatch), as site.js tests it


def utc_stamp(stamp: str) -> str:
    """An ISO time in UTC to the second ("2026-11-29T22:52:21Z"; one without a zone is taken as
    UTC), or the text as it is when it is not an ISO time."""
    when = utc_time(stamp)
    return stamp if when is None else when.strftime("%Y-%m-%dT%H:%M:%SZ")


def shown_stamp(utc: str) -> str:
    """How the index shows a time utc_stamp gave: "2026-11-29 22:52:21", or the text as it is."""
    return utc[:19].replace("T", " ") if _UTC.fullmatch(utc) else utc


def rows_data(summaries: list[RunSummary], outcomes: dict[str, tuple[str, str]]) -> dict[str, Any]:
    """Every run newest first, texts that repeat stored once."""
    strings: list[str] = []
    index: dict[str, int] = {}

    def ref(text: str) -> int:
        found = index.get(text)
        if found is None:
            found = index[text] = len(strings)
            strings.append(text)
        return found

    rows = []
    previous: int | None = None
    for s in sorted(summaries, key=lambda s: s.sort_key, reverse=True):
        tail = s.slug[-8:] if s.slug == f"{s.run_id}-{s.slug[-8:]}" else s.slug
        run_id, flags = (
            s.run_id,
            (1 if s.synthetic else 0)
            + (0 if s.complete else 2)
            + (16 if s.timing_undecided else 0)
            + (32 if s.performance_stopped else 0),
        )
        for bit, prefix in ((8, f"{s.workload}-{s.target}-"), (4, f"{s.workload}-")):
            if run_id.startswith(prefix) and len(run_id) > len(prefix):
                run_id, flags = run_id[len(prefix) :], flags + bit
                break
        when = utc_time(s.started_at)
        started: int | str = s.started_at  # the text as logged when it is no time
        if when is not None:
            seconds = calendar.timegm(when.utctimetuple())
            started, previous = (seconds if previous is None else previous - seconds), seconds
        scope = json.dumps([s.scope_passed, s.scope_not_passed], ensure_ascii=False)
        passed = s.counts.get("pass", 0)
        rows.append(
            [
                ref(s.workload),
                ref(s.workload_slug),
                run_id,
                tail,
                flags,
                ref(s.intended_target) if s.intended_target else -1,
                ref(s.target),
                ref(s.family),
                ref(s.versions.get("torch", "unknown")),
                ref(s.stack_version),
                started,
                ref(s.outcome),
                ref(s.headline),
                ref(scope),
                passed,
                sum(s.counts.values()) - passed,
                ref(s.device),
                ref(s.adapter_note) if s.adapter_note else -1,
                *(s.counts.get(name, 0) for name in STATUS_ORDER),
            ]
        )
    return {
        "format": ROWS_FORMAT,
        "statuses": list(STATUS_ORDER),
        "outcomes": {k: list(v) for k, v in outcomes.items()},
        "strings": strings,
        "rows": rows,
    }


def rows_script(data: dict[str, Any]) -> tuple[str, str]:
    """(file name, text) of the script that holds the rows."""
    body = json.dumps(visible_data(data), ensure_ascii=False, separators=(",", ":"))  # shown as the pages show text
    text = (
        f"// Every row of index.html, for its script (generated by reportgen site).\nwindow.{ROWS_GLOBAL} = {body};\n"
    )
    name = f"index-rows-{hashlib.sha256(text.encode('utf-8')).hexdigest()[:10]}.js"
    return name, text
