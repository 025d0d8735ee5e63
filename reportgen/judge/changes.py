"""What changed between two runs besides their declared criteria: code and data, and the host.

A comparison names everything that changed before it says fixed, faster or slower. The
criteria are judge.criteria's; this module gives the rest, as plain data both `reportgen diff`
(and the site's history, from run summaries) and `reportgen compare` (from judged runs) name:

* code and data: the collector, its git state, the files it read (workload module and the
  local files it imports, plan file), and the weights and inputs by content sha256 where both
  logs hashed them, else by file sha256; the saved reference outputs by content sha256 where
  both logs hashed them (they derive from named things, weights, inputs, reference device and
  dtype, versions, so only a content difference says something else changed). Where both logs
  hashed the inputs (or reference outputs) of each input shape on its own, only the shapes both
  runs hold are compared: a run of fewer cells saves fewer shapes, which changes the run-wide
  hash and nothing the two runs share. A local import one log lists and the other does not is
  "not imported" there when that log's collector looked for local imports (0.4.0 on, or any log
  that lists one), and "not recorded" when it is older and lists none;
* the host: the device (name, count, instance type, host name), the environment variables
  the collector recorded, the backend settings (each variable the adapter set or relied on,
  with who set it), every version beyond the pages' own version keys, and the host facts
  around the warm loops (torch threads, CPU affinity, count and governor, load average, and
  each reading of the accelerator its backend's adapter logs there, whatever the backend: every
  '<key>_before' and '<key>_after' host fact beyond the generic ones, named by its key in words).

A changed thread count or CPU affinity makes a timing ratio no like-for-like comparison. These
settings (torch threads, CPU affinity, CPU count, governor) are read around each warm loop, and a
fresh process per cell may run under others, so they are compared cell by cell
(``setting_flags``): a cell whose loops ran under another setting on the two sides is flagged,
as a cell of another timing scope is, and the other cells keep their verdicts; a run whose cells
mix settings names each value with its cells among its host facts. A setting the collector
recorded as unknown (a null value with its reason) flags the ratios of its cell too, as a CPU
wait not read does, but for the governor, which every CPU sample records unknown (a VM hides
cpufreq): a governor unknown on both sides is named once among the host changes instead. Where
every loop of each side ran under one value, a change of it is also run-wide
(``host_timing_flag``): every ratio carries it, and a history does not join the two runs. Between
two runs of one target (diff, a history) another machine (device, device count, instance type,
CPU count) flags as well, which compare, two targets by design, names without flagging. A
changed load average is named and does not flag: a busier host shows in the warm series
themselves, which the stability classifier already reads (an unsteady series decides nothing),
while the load figure is a one-minute average read before and after a loop of milliseconds,
which differs between any two runs and would leave no ratio judged. The accelerator's readings
(clocks, temperature) are named the same way and flag nothing: readings around a loop, which a
boosting accelerator changes from one loop to the next; a run whose clock dropped by half is
named before its ratios, never left out of what changed.
"""

from __future__ import annotations

import hashlib
import math
import re
from typing import Collection, Iterable, Mapping, Sequence

from reportgen.contract import events as ev
from reportgen.judge.backend_docs import version_keys
from reportgen.judge.criteria import CriterionChange, bounded, shared_shapes_agree
from reportgen.judge.identity import RECIPE_V1, weights_facts
from reportgen.judge.timing_stability import LOOP_HOST_KEYS, generation_attempts, generation_timing, generation_waited
from reportgen.model.provenance import (
    IMPORT_KEY,
    PACKAGE_KEY,
    READ_KEY,
    READS_ITEM,
    SOURCE_KEY,
    SOURCES_ITEM,
    code_and_data,
    installed_words,
)
from reportgen.model.runmodel import CellRecord, RunModel, per_run

NOT_RECORDED = "not recorded"
NOT_IMPORTED = "not imported"
NO_IMPORTS = "not recorded (a collector before 0.4.0 does not list the local files a workload imports)"
IMPORTS_LISTED_FROM = (0, 4)  # the collector version that lists them (collector/localimports.py)
NO_SOURCES = "not recorded (the log lists none of the collector's own files, as a collector before 0.24.0 does)"
NO_READS = (
    "no workload_reads event: a collector before 0.11.0 writes none, nor a run that ended before its inputs were made"
)
# What the logs identify of the code and data that ran (collector/workload_reads.py, run_start's
# hashes and provenance): a change outside it is in no log, so "none changed" is never "nothing
# changed". Said beside every count of code and data changes.
CODE_SCOPE = (
    "of what the logs identify: the collector (its version, git state, event schema and, from 0.24.0, each of its "
    "own files by sha256), its backend adapter, "
    "descriptor and constraint rules, the plan, the module that defines the workload and the local files it "
    "imports, (schema 1.6 on) the files the workload read through Python in the collector's process until its "
    "reference ran, with the packages loaded by then, and the saved weights, inputs and reference outputs by "
    "hash; code first run later or only in a fresh process (a compiled or device-only branch that imports more) "
    "is in neither"
)
MOST = 100  # environment variables or versions named one by one; beyond, a digest of them all
MOST_READINGS = 10  # a side's replicates that read a host fact differently: the values named, at most
Change = tuple[str, str, str]  # (what, before, after)
REFERENCE_OUTPUTS = "reference outputs"  # the saved reference outputs, as run_hashes keys them
OF_SHAPE = " of input shape "  # run_hashes' key of one input shape's hash: '<role> of input shape <key>'
# Host facts of the timing events that make a timing ratio no like-for-like comparison.
TIMING_HOST_KEYS = ("torch threads", "CPU affinity", "CPU governor")
# Between two runs of one target (diff, a site's history), a change of any of these (both runs
# recorded it) flags every timing ratio of the pair: the threads the loops ran on, or another
# machine (its device, their count, the instance type, the CPUs): a ratio across them is a
# hardware comparison, not the effect of a change. compare sets two targets side by side on
# purpose, and flags only TIMING_HOST_KEYS.
FLAGGING_HOST_KEYS = (*TIMING_HOST_KEYS, "device name", "device count", "instance type", "CPU count")
_HOST_FACTS = (
    ("torch_threads", "torch threads"),
    ("cpu_affinity", "CPU affinity"),
    ("cpu_count", "CPU count"),
    ("cpu_governor", "CPU governor"),
)
# The settings a warm loop ran under, by label, as compared cell by cell.
SETTING_LABELS = tuple(label for _, label in _HOST_FACTS)
# The settings whose value recorded unknown flags a ratio. Not the governor, unless a run of
# either side read it: every CPU sample records it unknown (a VM hides cpufreq), so
# compare_hosts names it once instead; a governor read on one side only may have changed.
UNKNOWN_FLAGS = ("torch threads", "CPU affinity", "CPU count")
_NOUNS = {"torch threads": "thread", "CPU affinity": "affinity", "CPU count": "CPU count", "CPU governor": "governor"}
# How a flag about the settings a cell's loops ran under begins (changed) or ends (unknown).
HOST_CHANGED = "host changed: "
UNKNOWN_SETTING = ": not known to be the same"
# One loop's settings (loop_settings): label -> value, None where the collector recorded it unknown.
Settings = Mapping[str, str | None]
AROUND = " around the warm loops"  # how each reading's label ends
# A reading key's last word, when it is one of these units, is named as the unit:
# 'gpu_sm_clock_mhz' is 'GPU SM clock (MHz)'.
_UNITS = {
    "c": "°C",
    "mhz": "MHz",
    "ghz": "GHz",
    "khz": "kHz",
    "w": "W",
    "mw": "mW",
    "v": "V",
    "mv": "mV",
    "pct": "%",
    "percent": "%",
    "rpm": "rpm",
    "kib": "KiB",
    "mib": "MiB",
    "gib": "GiB",
    "bytes": "bytes",
    "s": "s",
    "ms": "ms",
}
# Any other word of two or three letters is taken for an abbreviation ('gpu', 'sm'), but these.
_PLAIN_WORDS = frozenset(("and", "avg", "die", "fan", "hot", "low", "max", "min", "now", "of", "per", "top", "use"))
WAIT_LABEL = "time the threads waited for a CPU, per second of each warm loop (the series reported)"
LOAD_LABEL = "load average (1 min)" + AROUND
# Warm series the collector measured again (unstable), which the figures of the reported series
# leave out: named, so that a run whose loops were contended until a last attempt says so.
AGAIN_LABEL = "warm series taken before the reported ones (unstable, measured again)"
GENERATION_ONCE = (
    "generation series are measured once: the collector of a log before event schema 1.7 does not re-measure"
    " an unstable one"
)
# What a host reads around its warm loops rather than sets: it varies between replicates.
_READINGS = frozenset((LOAD_LABEL, WAIT_LABEL, AGAIN_LABEL))
# Labels of the host around the warm loops: a run holding none of them kept its device only.
_LOOP_LABELS = (*SETTING_LABELS, LOAD_LABEL, WAIT_LABEL)
_DEVICE_FACTS = (
    ("device_name", "device name"),
    ("device_count", "device count"),
    ("instance_type", "instance type"),
    ("hostname", "host name"),
)


def run_code_data(run: RunModel) -> dict[str, str]:
    """The collector, its git state and the files it read: key -> value (weights and inputs apart)."""
    return {i.key: i.value for i in code_and_data(run) if i.key not in ("weights", "inputs")}


def run_hashes(run: RunModel) -> dict[str, list[str | None]]:
    """The run's weights, run-wide inputs and run-wide reference outputs: [content sha256 or
    None, file sha256 or None, the content hash's recipe]; and, where the log hashed the inputs or reference outputs of each
    input shape on its own (content_by_key), each of those as '<role> of input shape <key>':
    [content sha256, None]."""
    found: dict[str, list[str | None]] = {}
    for artifact in run.artifacts:
        role = {"inputs": "inputs", "reference_output": REFERENCE_OUTPUTS}.get(artifact.role)
        if role is not None and artifact.case is None:
            recipe = artifact.content_recipe or RECIPE_V1
            found[role] = [artifact.content_sha256, artifact.sha256, recipe]
            for key, sha in (artifact.content_by_key or {}).items():
                found[f"{role}{OF_SHAPE}{key}"] = [sha, None, recipe]
    weights = weights_facts(run)  # the plan's hashes, else the weights artifact's
    if weights.content or weights.file:
        # A fourth item marks weights read from a shipped file (WEIGHTS_FILE): its bytes are then
        # named where they change and the content does not.
        found["weights"] = [
            weights.content,
            weights.file,
            weights.recipe,
            *([WEIGHTS_FILE] if weights.external else []),
        ]
    return found


WEIGHTS_FILE = "shipped file"  # run_hashes' mark of weights read from a file the workload ships
GIT_COMMIT = "collector git commit"  # model.provenance's keys
GIT_DIRTY = "collector git dirty"
UNKNOWN = "unknown: "  # a fact the collector could not read (model.provenance._fact)


def code_and_data_changes(
    before_code: Mapping[str, str],
    before_hashes: Mapping[str, Sequence[str | None]],
    after_code: Mapping[str, str],
    after_hashes: Mapping[str, Sequence[str | None]],
    sides: tuple[str, str] = ("before", "after"),
) -> list[Change]:
    """(item, before, after) for each change of code or data: weights, inputs and the saved
    reference outputs by content sha256 where both logs hashed them, else by file sha256 (and the
    item says so, naming the logs by ``sides``)."""
    changes = []
    # A log from before the collector recorded what the workload read (1.6) against one that did:
    # one line for them all, not a line for each file and package 'not recorded'.
    unrecorded = [side for side, code in zip(sides, (before_code, after_code)) if not _reads_recorded(code)]
    if len(unrecorded) == 1:
        other = after_code if unrecorded[0] == sides[0] else before_code
        files = sum(k.startswith(READ_KEY) for k in other)
        packages = sum(k.startswith(PACKAGE_KEY) for k in other)
        recorded = f"{files} file(s) read, {packages} package(s)"
        absent = f"not recorded ({NO_READS})"
        changes.append((READS_ITEM, absent, recorded) if unrecorded[0] == sides[0] else (READS_ITEM, recorded, absent))
    # The collector's own files, hashed from 0.24.0: a log without them against one with them is
    # one line, not a line a file.
    hashed = [SOURCES_ITEM in code for code in (before_code, after_code)]
    if hashed[0] != hashed[1]:
        changes.append(
            (SOURCES_ITEM, *(before_code.get(SOURCES_ITEM, NO_SOURCES), after_code.get(SOURCES_ITEM, NO_SOURCES)))
        )
    for key in sorted(set(before_code) | set(after_code)):
        if key in (READS_ITEM, SOURCES_ITEM) or (unrecorded and key.startswith((READ_KEY, PACKAGE_KEY))):
            continue
        if not all(hashed) and key.startswith(SOURCE_KEY):
            continue
        a, b = before_code.get(key, _absent(key, before_code)), after_code.get(key, _absent(key, after_code))
        if a != b:
            changes.append((key, a, b))
        elif key == GIT_COMMIT and a.startswith(UNKNOWN):
            # Unknown in both runs is no "same": the collector's code may differ (its own files,
            # where both logs hashed them, are compared one by one), and so may any other file of
            # a checkout around it, which a commit would have identified.
            told = (
                "the collector's own files are compared by their hashes; the rest of its checkout cannot be told the same"
                if all(hashed)
                else "the same code cannot be told"
            )
            changes.append((f"{key} (unknown in both runs: {told})", a, b))
        elif key == GIT_DIRTY and a == "true":
            # Uncommitted changes in both checkouts, anywhere in them: the same commit, maybe not
            # the same code or data, whatever files the logs hashed.
            changes.append((f"{key} (in both runs: their uncommitted changes cannot be told apart)", a, b))
        elif key != GIT_DIRTY and a.startswith(UNKNOWN):
            # A file neither run could hash is no "same" either.
            changes.append((f"{key} (not hashed in either run: cannot be told the same)", a, b))
    for role in ("weights", "inputs", REFERENCE_OUTPUTS):
        # [content, file, recipe]; a site's state from before the recipe was kept holds two.
        ca, fa, ra = hash_triple(before_hashes.get(role, ()))
        cb, fb, rb = hash_triple(after_hashes.get(role, ()))
        if ca and cb and (ra or RECIPE_V1) != (rb or RECIPE_V1):
            # Content hashes of two recipes say nothing of each other: the files decide.
            if fa != fb:
                changes.append(
                    (
                        f"{role} (by file sha256: content hashes of two recipes, {ra} and {rb}, are not compared)",
                        fa or NOT_RECORDED,
                        fb or NOT_RECORDED,
                    )
                )
            continue
        # Each input shape hashed on its own in both logs: the shapes both runs hold decide, and
        # each shape that differs is named with its two hashes.
        shapes_a, shapes_b = _by_shape(role, before_hashes), _by_shape(role, after_hashes)
        agree = shared_shapes_agree(shapes_a, shapes_b)
        if ca and cb:
            if agree is False:
                # One change for the role, naming the input shapes it differs in; its two values
                # are the shapes' hashes where they all changed alike, else the run-wide hashes,
                # else one digest a side of the shapes' hashes.
                differ = [k for k in sorted(set(shapes_a) & set(shapes_b)) if shapes_a[k] != shapes_b[k]]
                pairs = {(shapes_a[k], shapes_b[k]) for k in differ}
                named = ", ".join(bounded(k) for k in differ[:MOST]) + (
                    f" and {len(differ) - MOST} more" if len(differ) > MOST else ""
                )
                of = OF_SHAPE if len(differ) == 1 else " of input shapes "
                if len(pairs) == 1:
                    before, after = next(iter(pairs))
                elif ca != cb:
                    before, after = ca, cb
                else:
                    before, after = _digest([shapes_a[k] for k in differ]), _digest([shapes_b[k] for k in differ])
                changes.append((f"{role}{of}{named} (by content sha256)", before, after))
            elif ca != cb and agree is None:
                changes.append((f"{role} (by content sha256)", ca, cb))
            elif (
                fa
                and fb
                and fa != fb
                and WEIGHTS_FILE in (*before_hashes.get(role, ())[3:], *after_hashes.get(role, ())[3:])
            ):
                # The same tensors, yet a shipped weights file of other bytes: another format or
                # key order, or data the state_dict does not hold (a buffer kept out of it), as
                # compare names it.
                changes.append(
                    (
                        f"{role} file (by file sha256; the same weights by content sha256: another format or key order, or data the weights do not hold)",
                        fa,
                        fb,
                    )
                )
        elif fa != fb:
            lacking = [w for w, c in zip(sides, (ca, cb)) if not c]
            changes.append(
                (
                    f"{role} (by file sha256: no content hash in the {' and '.join(lacking)} log{'s' if len(lacking) > 1 else ''}, so the same tensors written another way also differ)",
                    fa or NOT_RECORDED,
                    fb or NOT_RECORDED,
                )
            )
    return changes


def hash_triple(hashes: Sequence[str | None]) -> tuple[str | None, str | None, str | None]:
    """A run_hashes entry as (content sha256, file sha256, recipe); a site's state from before
    the recipe was kept holds two, and an absent role none."""
    content, file, recipe = (list(hashes) + [None, None, None])[:3]
    return content, file, recipe


def _by_shape(role: str, hashes: Mapping[str, Sequence[str | None]]) -> dict[str, str]:
    """The content sha256 of each input shape's ``role`` (run_hashes), by input shape key; {}
    where the log hashed none on its own (schema before per-shape hashes)."""
    prefix = f"{role}{OF_SHAPE}"
    return {
        key.removeprefix(prefix): sha[0] for key, sha in hashes.items() if key.startswith(prefix) and sha and sha[0]
    }


def _reads_recorded(code: Mapping[str, str]) -> bool:
    """Whether a run's log holds its workload_reads event (model.provenance names it by
    READS_ITEM): a collector before 0.11.0 writes none, and a later one's run that ended before
    its inputs were made has none either."""
    return READS_ITEM in code


def _absent(key: str, code: Mapping[str, str]) -> str:
    """What a run's code and data say of an item they lack: a local import is 'not imported'
    when the run's collector looked for local imports, else not recorded."""
    if key.startswith(IMPORT_KEY):
        looked = any(k.startswith(IMPORT_KEY) for k in code) or _version(code.get("collector")) >= IMPORTS_LISTED_FROM
        return NOT_IMPORTED if looked else NO_IMPORTS
    if key.startswith(READ_KEY):
        return "not read"  # the run's collector watched what its workload read (_reads_recorded)
    if key.startswith(PACKAGE_KEY):
        return "not loaded"
    if key.startswith(SOURCE_KEY):
        return "no such file"  # the run's collector hashed its own files (code_and_data_changes)
    return NOT_RECORDED


def _version(text: str | None) -> tuple[int, ...]:
    """(0, 4) from 'collector 0.4.0' (the code-and-data item); () when it names no version."""
    found = re.fullmatch(r"collector (\d{1,6})\.(\d{1,6})(?:\.\d{1,6})?", text or "")
    return (int(found[1]), int(found[2])) if found else ()


def _loop_waits(run: RunModel) -> list[tuple[float, float] | None]:
    """Each reported warm loop's (seconds waited for a CPU, seconds it took), a timed cell's and a
    generation cell's alike; None for a loop whose host has the figures' keys (1.4 logs on) but
    no readable figure. Loops of older logs, which have no such keys, are left out."""
    found: list[tuple[float, float] | None] = [
        c.warm_waited for c in run.cells if c.warm_waited is not None or c.warm_wait_unread
    ]
    return found + [generation_waited(t) for t, host in _generation_loops(run) if "cpu_wait_s" in host]


def _generation_timings(run: RunModel) -> list[ev.GenerationTiming]:
    """The timings of the run's passing generation cells that were timed."""
    timings = (generation_timing(cell) for cell in run.cells_with("generation") if cell.status == "pass")
    return [t for t in timings if t is not None]


def _generation_loops(run: RunModel) -> list[tuple[ev.GenerationTiming, dict[str, ev.HostFact]]]:
    """The timing and host of each passing generation cell whose warm generations recorded it."""
    return [(t, t.host) for t in _generation_timings(run) if t.host]


def _timing_hosts(run: RunModel) -> list[dict[str, str]]:
    """The host facts read around each timed cell's warm loop, cell by cell, and around each
    generation cell's warm generations: a fresh process per cell may run under other threads or
    affinity, and each load or clock reading is its own."""
    hosts = [dict(c.host) for c in run.cells if c.host]
    return hosts + [
        {k: f.value for k, f in host.items() if isinstance(f.value, str) and f.value}
        for _, host in _generation_loops(run)
    ]


def _value(fact: object) -> str | None:
    value = getattr(fact, "value", None)
    return str(value) if value not in (None, "") else None


def host_facts(run: RunModel) -> dict[str, str]:
    """The host a run measured on, in words: device, environment variables, versions beyond the
    pages' own (python, torch, each target's packages: those are compared as versions), and the
    host facts around its warm loops. Plain data, kept in a run's summary."""
    facts: dict[str, str] = {}
    env = run.environment
    if env is not None:
        for key, label in _DEVICE_FACTS:
            if (value := _value(env.device.get(key))) is not None:
                facts[label] = bounded(value)
        facts.update(_listed("environment variable", env.env_vars))
        # The variables the backend's adapter set or relied on, each with who set it: a run with
        # the collector's setting and one with the user's are not one configuration.
        settings = {
            s.name: f"{'unset' if s.value is None else s.value} (set by {s.set_by})" for s in env.backend_settings or []
        }
        facts.update(_listed("backend setting", settings))
        shown = set(version_keys())
        others = {n: v for n, fact in env.versions.items() if n not in shown and (v := _value(fact)) is not None}
        facts.update(_listed("version", others))
        # The installed build of torch (and what it brought): one version string names builds
        # from other installers, wheels or local files, each of which times differently.
        for artifact in env.artifacts:
            facts[bounded(f"installed {artifact.name}")] = bounded(installed_words(artifact))
    facts.update(loop_host_facts(run))
    # A setting every loop recorded as unknown (a null value with its reason: the governor of a
    # VM, which hides cpufreq) is kept as such, so that two runs neither of which knows it are told
    # from two that do not hold it at all (compare_hosts names the first, and only the first).
    for label in SETTING_LABELS:
        held = [settings[label] for _, settings in run_loop_settings(run) if label in settings]
        if held and not any(held):
            facts[label] = NOT_RECORDED
    return facts


def loop_host_facts(run: RunModel) -> dict[str, str]:
    """The host around the run's warm loops, in words: threads, CPU affinity, count and governor
    (settings_words: the value, or each value with its cells), the load average's range (1 minute, before and after each
    loop) and the accelerator's readings' ranges. What a reader needs beside any warm figure:
    a stable series on a host running other work at once is still a figure of that host."""
    hosts = _timing_hosts(run)
    facts = settings_words(run_loop_settings(run))
    loads = [
        float(v.split()[0])
        for h in hosts
        for key in ("load_avg_before", "load_avg_after")
        if (v := h.get(key)) is not None and v.split() and _number(v.split()[0])
    ]
    if loads:
        facts[LOAD_LABEL] = f"{min(loads):.2f} to {max(loads):.2f}"
    waits = _loop_waits(run)
    rates = [w[0] / w[1] for w in waits if w is not None and w[1] > 0]
    unread = sum(w is None for w in waits)
    shown = [f"{min(rates):.3f} to {max(rates):.3f} s"] if rates else []
    shown += [f"not read for {unread} loop(s): contention not judged there"] if unread else []
    if shown:
        facts[WAIT_LABEL] = "; ".join(shown)
    again = [c for c in run.cells if c.warm_series > 1]
    # A generation cell's series of warm generations, taken again from 1.7 on (earlier ones kept
    # in its event); before 1.7 the collector never re-measured one: said where "none" would read
    # as "every generation series was stable the first time".
    retaken = [t for t in _generation_timings(run) if generation_attempts(t) > 1]
    older = ev.schema_tuple(run.start.schema_version) < (1, 7)
    once = f"; {GENERATION_ONCE}" if older and run.kind_counts.get("generation") else ""
    if again or retaken:  # the series before the reported ones: unstable, and on a host the figures above leave out
        earlier = sum(c.warm_series - 1 for c in again) + sum(generation_attempts(t) - 1 for t in retaken)
        rates = [r for c in again if (r := c.warm_before_wait) is not None]
        rates += [w[0] / w[1] for t in retaken for e in t.earlier if (w := generation_waited(e)) and w[1] > 0]
        waited = f"; their threads waited up to {max(rates):.3f} s for a CPU per second of loop" if rates else ""
        facts[AGAIN_LABEL] = f"{earlier}, of {len(again) + len(retaken)} cell(s){waited}{once}"
    elif hosts and ev.schema_tuple(run.start.schema_version) >= (1, 2):  # 1.2 on numbers attempts: none again
        facts[AGAIN_LABEL] = f"none{once}"
    facts.update(_accelerator_facts(hosts))
    return facts


def loop_settings(host: Mapping[str, object] | None) -> dict[str, str | None] | None:
    """The settings one warm loop ran under, by label (torch threads, CPU affinity, CPU count,
    governor): its value, or None where the collector recorded it unknown (a null value with its
    reason); a setting the host does not hold is left out. ``host``: the loop's host facts, each a
    value (text) or a HostFact. None where the loop recorded no host (a log before 1.2)."""
    if not host:
        return None
    found: dict[str, str | None] = {}
    for key, label in _HOST_FACTS:
        if key in host:
            fact = host[key]
            value = fact if isinstance(fact, str) else getattr(fact, "value", None)
            found[label] = value if isinstance(value, str) and value else None
    return found


def cell_loop_settings(
    cell: CellRecord, generation: ev.GenerationTiming | None = None, every_key: bool = True
) -> dict[str, str | None] | None:
    """The settings the cell's reported warm loop ran under (a generation cell's: its warm
    generations'), as loop_settings gives them; None where no loop of it recorded a host. The run
    model keeps a timing host's values only. ``every_key``: the log's schema (1.2 on) has every
    host key present, a value or why it is unknown, so a setting the run model lacks was recorded
    unknown; else (a log that may leave keys out) the warm timing event is read for it."""
    if cell.host:
        host: dict[str, object] = dict(cell.host)
        missing = [key for key, _ in _HOST_FACTS if key not in host]
        if missing and every_key:
            host.update(dict.fromkeys(missing, ""))
        elif missing:
            logged = next(
                (
                    getattr(r.event, "host", None)
                    for r in reversed(cell.logged)
                    if r.kind == "timing" and getattr(r.event, "warm", None)
                ),
                None,
            )
            if isinstance(logged, dict):
                host = {**logged, **host}
        return loop_settings(host)
    return loop_settings(generation.host) if generation is not None and generation.host else None


def every_host_key(run: RunModel) -> bool:
    """Whether the log's schema has every key of a warm loop's host present (1.2 on)."""
    return ev.schema_tuple(run.start.schema_version) >= (1, 2)


@per_run
def run_loop_settings(run: RunModel) -> list[tuple[str, dict[str, str | None]]]:
    """(case, loop settings) of each cell whose warm loop recorded a host, and of each passing
    generation cell whose warm generations did, in the run's order (worked out once per run)."""
    found = []
    every_key = every_host_key(run)
    # Looked up by case: a cell's generation event is read from its line, which a long log of
    # tens of thousands of cells without one need not do.
    generating = {cell.case for cell in run.cells_with("generation")}
    for cell in run.cells:
        if cell.host:
            settings = cell_loop_settings(cell, None, every_key)
        elif cell.status == "pass" and cell.case in generating and cell.generation is not None:
            settings = cell_loop_settings(cell, generation_timing(cell), every_key)
        else:
            continue
        if settings is not None:
            found.append((cell.case, settings))
    return found


def settings_words(loops: Sequence[tuple[str, Settings]]) -> dict[str, str]:
    """Each setting the loops ran under, by label, in words: its value where every loop that holds
    it ran under one; else each value (or 'not recorded') with its cells, the most common counted,
    the others named ('2 intra-op, 2 inter-op (13 cells); 1 intra-op, 1 inter-op (b1-l32-...)'),
    so that two runs whose cells mix settings differently differ here. A setting no loop recorded
    is left out (compare_hosts names one that neither of two runs recorded)."""
    facts: dict[str, str] = {}
    for label in SETTING_LABELS:
        groups: dict[str | None, list[str]] = {}
        for case, settings in loops:
            if label in settings:
                groups.setdefault(settings[label], []).append(case)
        if not groups or list(groups) == [None]:
            continue
        if len(groups) == 1:
            facts[label] = bounded(str(next(iter(groups))))
            continue
        most = max(groups.values(), key=len)
        facts[label] = bounded(
            "; ".join(
                f"{NOT_RECORDED if value is None else value} ({_cells_named(cases, cases is most)})"
                for value, cases in groups.items()
            )
        )
    return facts


def _cells_named(cases: Sequence[str], counted: bool) -> str:
    """'13 cells', or the cells by name: at most two, then how many more."""
    if counted and len(cases) > 1:
        return f"{len(cases)} cells"
    more = f" and {len(cases) - 2} more" if len(cases) > 2 else ""
    return ", ".join(cases[:2]) + more


def uniform_settings(loops: Iterable[Settings | None]) -> dict[str, str]:
    """The settings every loop of a side (each cell of each of its runs) ran under alike, by
    label: those each loop recorded, with one value. A change of one between two sides is
    run-wide (host_timing_flag); any other is judged cell by cell (setting_flags)."""
    seen = [settings for settings in loops if settings is not None]
    found = {}
    for label in SETTING_LABELS:
        values = {settings.get(label) for settings in seen}
        if len(values) == 1 and isinstance(value := next(iter(values)), str):
            found[label] = value
    return found


def setting_flags(
    before: Sequence[Settings | None],
    after: Sequence[Settings | None],
    keys: Collection[str] = FLAGGING_HOST_KEYS,
    roles: tuple[str, str] = ("before", "after"),
    run_wide: Collection[str] = (),
) -> list[str]:
    """Why a ratio of one cell is no like-for-like comparison by the settings its warm loops ran
    under: ``before`` and ``after`` hold each run's settings of the cell (loop_settings; None: the
    loop recorded no host, a log before 1.2, which the host changes name and which flags nothing).
    A setting among ``keys`` whose values differ (between the sides, or between the runs of a
    side) flags it, as host_timing_flag words a run-wide change; one recorded unknown in a run
    (UNKNOWN_FLAGS; the governor only where another run read it) flags it too, since its
    sameness cannot be told.
    ``run_wide``: the settings every loop of each side ran under alike, whose change the run-wide
    flag already carries."""
    sides = [[settings for settings in side if settings is not None] for side in (before, after)]
    if not sides[0] or not sides[1]:
        return []
    changed: list[tuple[str, str, str]] = []
    unknown: dict[tuple[str, ...], list[str]] = {}
    for label in SETTING_LABELS:
        if label not in keys or label in run_wide:
            continue
        values = [[settings[label] for settings in side if label in settings] for side in sides]
        lacking = tuple(role for role, side in zip(roles, values) if None in side)
        if lacking and (label in UNKNOWN_FLAGS or any(v is not None for side in values for v in side)):
            unknown.setdefault(lacking, []).append(label)
            continue
        known = [list(dict.fromkeys(v for v in side if v is not None)) for side in values]
        if known[0] and known[1] and (len(known[0]) > 1 or known[0] != known[1]):
            changed.append((label, " or ".join(known[0]), " or ".join(known[1])))
    flags = [
        f"{_and(labels)} not recorded on the {' and '.join(lacking)}{UNKNOWN_SETTING}"
        for lacking, labels in unknown.items()
    ]
    flag = host_timing_flag(sorted(changed, key=lambda c: c[0]), tuple(keys))
    return ([flag] if flag else []) + flags


def _and(words: Sequence[str], last: str = "and") -> str:
    """'a', 'a and b', 'a, b and c' (``last``: the word before the last, 'or' for 'a, b or c')."""
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} {last} {words[-1]}"


def is_setting_flag(flag: str) -> bool:
    """Whether a timing ratio's flag is about the settings its loops ran under (setting_flags,
    host_timing_flag): changed, or not recorded."""
    return flag.startswith(HOST_CHANGED) or flag.endswith(UNKNOWN_SETTING)


def _accelerator_facts(hosts: Sequence[Mapping[str, str]]) -> dict[str, str]:
    """The range of each accelerator reading around the warm loops (every '<key>_before' and
    '<key>_after' host fact beyond the generic ones), by label; beyond MOST of them (a log is
    untrusted), the first MOST by label and one digest of the rest."""
    readings: dict[str, list[float]] = {}
    for host in hosts:
        for key, value in host.items():
            read = re.fullmatch(r"(.+)_(?:before|after)", key)
            if read and key not in LOOP_HOST_KEYS and _number(value):
                readings.setdefault(reading_label(read[1]), []).append(float(value))
    labels = sorted(readings)
    facts = {label: f"{min(readings[label]):g} to {max(readings[label]):g}" for label in labels[:MOST]}
    if len(labels) > MOST:
        rest = [(label, sorted(readings[label])) for label in labels[MOST:]]
        digest = hashlib.sha256(repr(rest).encode("utf-8", "replace")).hexdigest()[:12]
        facts[f"accelerator readings (all {len(labels)}; the first {MOST} by name listed){AROUND}"] = (
            f"sha256 {digest}..."
        )
    return facts


def reading_label(key: str) -> str:
    """An adapter's reading key in words: 'gpu_sm_clock_mhz' is 'GPU SM clock (MHz) around the
    warm loops', 'hip_temperature_c' 'HIP temperature (°C) around the warm loops'. A key that is
    not lower-case words joined by '_' is named as it is."""
    if not re.fullmatch(r"[a-z0-9]+(?:_[a-z0-9]+)*", key):
        return bounded(key) + AROUND
    words = key.split("_")
    unit = _UNITS.get(words[-1]) if len(words) > 1 else None
    named = [w.upper() if 2 <= len(w) <= 3 and w not in _PLAIN_WORDS else w for w in words[: -1 if unit else None]]
    return bounded(" ".join(named) + (f" ({unit})" if unit else "")) + AROUND


# host_facts' labels made from names a log gives (environment variables, versions, installs).
_LISTED = ("environment variable", "version ", "installed ")


def _is_reading(label: str) -> bool:
    """Whether a host fact's label names a reading around the warm loops, which varies between
    replicates: the load average, the CPU wait, or an accelerator reading."""
    return label in _READINGS or (label.endswith(AROUND) and not label.startswith(_LISTED))


def _listed(label: str, found: Mapping[str, str]) -> dict[str, str]:
    """Each of ``found`` as '{label} {name}', or, beyond MOST of them (a log is untrusted: one
    with 100,000 variables must not make every diff and the site state that long), the first
    MOST by name and one digest of them all."""
    names = sorted(found)
    kept = {f"{label} {bounded(n)}": bounded(found[n]) for n in names[:MOST]}
    if len(names) > MOST:
        digest = hashlib.sha256(repr([(n, found[n]) for n in names]).encode("utf-8", "replace")).hexdigest()[:12]
        kept[f"{label}s (all {len(names)}; the first {MOST} by name listed)"] = f"sha256 {digest}..."
    return kept


def _digest(values: Sequence[str]) -> str:
    return f"sha256 {hashlib.sha256(repr(list(values)).encode('utf-8', 'replace')).hexdigest()[:12]}..."


def _number(text: str) -> bool:
    """A finite number (a hostile 'nan' or 'inf' load is no figure to name)."""
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def side_host(hosts: Sequence[tuple[str, Mapping[str, str]]]) -> dict[str, str]:
    """One side's host facts over its runs, (run id, host facts) each, first run first. Its
    replicates agree on every fact but the readings around the warm loops (replicate_changes
    refuses them otherwise), so those are the first run's; a reading the runs gave differently
    (a load, a CPU wait, one run's not recorded) is each value with the runs that gave it, so the
    facts named do not depend on which run was listed first."""
    if not hosts:
        return {}
    merged = dict(hosts[0][1])
    for key in sorted({k for _, host in hosts for k in host if _is_reading(k)}):
        given = [(run_id, host.get(key, NOT_RECORDED)) for run_id, host in hosts]
        values = sorted({value for _, value in given})  # in one order, whichever run came first
        if len(values) > 1:  # each value is named (bounded, as its runs are), not one digest of them all
            parts = [f"{bounded(value)} ({_runs_named(sorted(r for r, v in given if v == value))})" for value in values]
            more = f"; and {len(parts) - MOST_READINGS} more values" if len(parts) > MOST_READINGS else ""
            merged[key] = "; ".join(parts[:MOST_READINGS]) + more
    return merged


def _runs_named(run_ids: list[str]) -> str:
    """Run ids as a side's reading names them: each bounded, at most MOST_READINGS, then how many more."""
    shown = ", ".join(bounded(r) for r in run_ids[:MOST_READINGS])
    return shown + (f" and {len(run_ids) - MOST_READINGS} more runs" if len(run_ids) > MOST_READINGS else "")


def host_changes(before: Mapping[str, str], after: Mapping[str, str]) -> list[Change]:
    """(fact, before, after) for each host fact that differs, the ones that flag timing first."""
    changes = [
        (key, before.get(key, NOT_RECORDED), after.get(key, NOT_RECORDED))
        for key in sorted(set(before) | set(after))
        if before.get(key, NOT_RECORDED) != after.get(key, NOT_RECORDED)
    ]
    return sorted(changes, key=lambda c: (c[0] not in TIMING_HOST_KEYS, c[0]))


def compare_hosts(
    before: Mapping[str, str], after: Mapping[str, str], names: tuple[str, str] = ("before", "after")
) -> tuple[list[Change], str]:
    """The host changes between two runs, and what is not known: where a run recorded no host
    facts at all (a log whose collector kept none, say an older schema's against a newer one), no
    fact is compared, and the words say so: a host change cannot be ruled out, which is not "no
    host change". ``names`` are what the words call the two runs. Both `reportgen diff` and
    `reportgen compare` ask this, so they say one thing of one pair."""
    lacking = [name for name, facts in zip(names, (before, after)) if not facts]
    if lacking:
        return [], f"host facts not recorded on the {' and '.join(lacking)}: a host change cannot be ruled out"
    changes = host_changes(before, after)
    timed = [facts for facts in (before, after) if any(key in facts for key in _LOOP_LABELS)]
    if not changes and not timed:
        # Both logs kept their device only (from before the collector read the host around its
        # warm loops): the same device name is no evidence of the same threads or load.
        return [], (
            f"threads, CPU affinity and load around the warm loops not recorded on the {' and '.join(names)}: "
            "a host change cannot be ruled out"
        )
    notes = []
    if timed and not any(WAIT_LABEL in facts for facts in (before, after)):
        # Neither collector read the time its threads waited for a CPU (event schema before
        # 1.4): no change to name, and no contention judged on either side either, so a series
        # that reads stable may still be a busy host's. Said beside the changes, not instead.
        notes.append(
            f"time the threads waited for a CPU not recorded on the {' and '.join(names)}: contention not judged on "
            "either"
        )
    # A setting both runs recorded as unknown around every loop (host_facts: the governor of a
    # VM, which hides cpufreq): no change to name, and none ruled out either. Said beside the
    # changes, not instead: a load that changed is no word on the governor.
    unrecorded = [label for label in SETTING_LABELS if before.get(label) == after.get(label) == NOT_RECORDED]
    if unrecorded:
        either = _and([_NOUNS[label] for label in unrecorded], "or")
        notes.append(f"{_and(unrecorded)} not recorded on either side: a {either} change cannot be ruled out")
    return changes, "; ".join(notes)


def host_timing_flag(
    changes: Sequence[Change], keys: tuple[str, ...] = TIMING_HOST_KEYS, run_wide: Collection[str] | None = None
) -> str | None:
    """Why no timing ratio between the two runs decides anything, when the host's threads, CPU
    affinity (or, with FLAGGING_HOST_KEYS as ``keys``, machine) changed (both runs recorded
    them); None otherwise. A log from before host facts
    were kept is named as 'not recorded' and flags nothing: that it is unknown is no change.
    ``run_wide``: the settings (SETTING_LABELS) every loop of each run ran under alike
    (uniform_settings); a change of any other setting is judged cell by cell (setting_flags), not
    here. None: every setting's change is taken as run-wide."""
    # Unknown on one side: named, not flagged.
    flagged = [
        (key, a, b)
        for key, a, b in changes
        if key in keys
        and NOT_RECORDED not in (a, b)
        and (run_wide is None or key not in SETTING_LABELS or key in run_wide)
    ]
    settings = [f"{key} {a} -> {b}" for key, a, b in flagged if key in TIMING_HOST_KEYS]
    # The machine as each log recorded it: another machine, or the same one recorded another way
    # (an older collector wrote the CPU's architecture where a newer one writes its model); the
    # logs cannot tell which, so the words claim no more than that the records differ.
    machine = [f"{key} {a} -> {b}" for key, a, b in flagged if key not in TIMING_HOST_KEYS]
    said = ([f"{HOST_CHANGED}{'; '.join(settings)}"] if settings else []) + (
        [f"machine recorded differently: {'; '.join(machine)}"] if machine else []
    )
    return "; ".join(said) if said else None


def timing_unlike(
    criteria: Sequence[CriterionChange], host: Sequence[Change], run_wide: Collection[str] | None = None
) -> list[str]:
    """Why no timing of the later run is like-for-like with the earlier one's, run-wide: each
    timing criterion declared differently (timing scope, warm repetitions, re-measure rounds)
    and a host change that flags timing (threads, affinity, another machine); [] when none. Every ratio between
    the two runs carries these, and a trend over runs does not join a cell's timings across them.
    ``run_wide``: as host_timing_flag's (a setting changed in some cells only flags those)."""
    found = [f"changed criterion: {c.text}" for c in criteria if c.judges == "timing"]
    flag = host_timing_flag(host, FLAGGING_HOST_KEYS, run_wide)
    return found + ([flag] if flag else [])


def run_versions(run: RunModel) -> dict[str, str]:
    """The pages' own versions (python, torch, each target's packages) the run recorded."""
    env = run.environment
    if env is None:
        return {}
    return {k: value for k in version_keys() if k in env.versions and (value := _value(env.versions[k])) is not None}


def version_changes(before: Mapping[str, str], after: Mapping[str, str]) -> list[Change]:
    """(version, before, after) for each of the pages' own versions that differs ('unknown' where
    a run did not record it)."""
    return [
        (key, before.get(key, "unknown"), after.get(key, "unknown"))
        for key in sorted(set(before) | set(after))
        if before.get(key, "unknown") != after.get(key, "unknown")
    ]


def replicate_changes(
    first: tuple[Mapping[str, str], Mapping[str, str], Mapping[str, Sequence[str | None]], Mapping[str, str]],
    other: tuple[Mapping[str, str], Mapping[str, str], Mapping[str, Sequence[str | None]], Mapping[str, str]],
) -> list[str]:
    """What makes a run no replicate of a side's first run although both declared the same
    criteria, in words: a version, code or data, or a host fact that differs or that one of them
    did not record (device, environment variables, threads, affinity, CPU count, governor), but for the load
    average and the accelerator's readings around the warm loops, which vary from run to run.
    Each is (versions, code and data, hashes, host facts). The interval of a side folds its runs
    into one: a difference inside a side would be named by no page."""
    (versions_a, code_a, hashes_a, host_a), (versions_b, code_b, hashes_b, host_b) = first, other
    found = [f"{key} {a} -> {b}" for key, a, b in version_changes(versions_a, versions_b)]
    # What the runs record alike is no difference between them (a commit unknown in both, which a
    # comparison of the two sides names, does not split one side's replicates).
    found += [f"{key} {a} -> {b}" for key, a, b in code_and_data_changes(code_a, hashes_a, code_b, hashes_b) if a != b]
    found += [
        f"{key} {a} -> {b}"
        for key, a, b in host_changes(host_a, host_b)
        if not _is_reading(key)  # "not recorded" too: replicates come from one collector version
    ]
    return found
