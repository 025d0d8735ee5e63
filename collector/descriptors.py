"""Backend descriptors: what a backend is, as data, read by both halves (standard library only).

A backend is three files: this descriptor (``NAME.toml``), an adapter module (the Python class
that synchronises, compiles, lists caches and reads operators on the device) and a constraints
file (what the backend's documentation says, read by ``reportgen``). The built-in descriptors
sit beside their adapters in ``collector/backends/``; their constraints files are in
``reportgen/judge/constraints/``. More backends come from the folders named in the environment
variable ``MIGRATION_RECORD_BACKENDS`` (separated like ``PATH``), each folder holding
descriptors with their adapter and constraints files beside them (docs/backends.md).

Every key is checked on load: a misspelled or mistyped key is a one-line :class:`DescriptorError`
naming the file and the key, never a silently applied default.
"""

from __future__ import annotations

import difflib
import importlib.util
import os
import re
import tomllib
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any

from collector.tomltext import toml_text

PLUGIN_ENV = "MIGRATION_RECORD_BACKENDS"
BUILTIN_DIR = Path(__file__).resolve().parent / "backends"
# Words a backend may not take: "auto" is the collector's choice, "unknown" a family no rule decided.
RESERVED = ("auto", "unknown")
_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


class DescriptorError(ValueError):
    """A descriptor that cannot be used as written; the message names the file and the key."""


@dataclass(frozen=True)
class VersionProbe:
    """How one version is read on the device: a pip distribution, a module attribute, a file or
    a command's output. ``column``: shown as a column beside python and torch on the site."""

    key: str
    distribution: str = ""
    module: str = ""
    attribute: str = ""
    file: str = ""
    command: tuple[str, ...] = ()
    what: str = ""
    column: bool = True


@dataclass(frozen=True)
class CacheDir:
    """A compile cache the backend fills: the variable that moves it, and where it is otherwise."""

    role: str
    variable: str
    default: str


@dataclass(frozen=True)
class Descriptor:
    name: str
    path: Path  # the descriptor file
    adapter: str  # "FILE.py:Class", FILE beside the descriptor
    constraints: str  # the constraints file's name
    families: dict[str, str]  # backend family a log may record -> the reader's words
    compile_backend: str
    aliases: tuple[str, ...] = ()
    auto_order: int | None = None  # --target auto tries lower numbers first; None: never
    distributions: tuple[str, ...] = ()
    env_prefixes: tuple[str, ...] = ()
    caches: tuple[CacheDir, ...] = ()
    versions: tuple[VersionProbe, ...] = ()
    device_resource: str = ""  # Kubernetes extended resource a campaign pod asks for
    node_taint: str = ""  # taint key device nodes commonly carry; campaign pods tolerate it
    slurm_gres: str = ""  # Slurm GRES name a campaign task asks for (--gres=NAME:N)
    # The adapter feeds every input on the torch device named as the target (cpu, cuda, neuron):
    # a log's inputs_fed is then checked against its environment.device_type. False (the
    # default) where the adapter's device may have another name: nothing is checked then.
    inputs_on_device: bool = False
    device_facts: bool = False
    before_torch: str = ""  # "FILE.py:function" beside the descriptor, run before torch is imported
    autoload_module: str = (
        ""  # the module torch autoloads for this backend (--target auto: the hook runs where it is installed)
    )
    notes: str = ""

    @property
    def builtin(self) -> bool:
        return self.path.parent == BUILTIN_DIR

    @property
    def adapter_file(self) -> Path:
        return self.path.parent / self.adapter.split(":", 1)[0]

    @property
    def adapter_class(self) -> str:
        return self.adapter.split(":", 1)[1]

    @property
    def column_versions(self) -> tuple[str, ...]:
        return tuple(probe.key for probe in self.versions if probe.column)


# key -> (type, required, what it is); a table's keys are checked by the same rule.
_TOP: dict[str, tuple[type | tuple[type, ...], bool, str]] = {
    "name": (str, True, "the target name (lower case, as --target takes it)"),
    "adapter": (str, True, '"FILE.py:Class", the adapter beside this file'),
    "constraints": (str, True, "the constraints file's name"),
    "families": (dict, True, "backend family -> the reader's words"),
    "compile_backend": (str, True, "torch.compile's backend name"),
    "aliases": (list, False, "other names for the target"),
    "auto_order": (int, False, "--target auto tries lower numbers first"),
    "distributions": (list, False, "pip distributions whose versions and wheel tags are recorded"),
    "env_prefixes": (list, False, "prefixes of the environment variables recorded"),
    "cache": (list, False, "[[cache]] tables"),
    "version": (list, False, "[[version]] tables"),
    "kubernetes": (dict, False, "[kubernetes] table"),
    "slurm": (dict, False, "[slurm] table"),
    "inputs_on_device": (bool, False, "every input is fed on the torch device named as the target"),
    "device_facts": (bool, False, "the adapter reads its devices' name and count (not the host's CPUs)"),
    "before_torch": (dict, False, "[before_torch] table"),
    "notes": (str, False, "documentation notes"),
}
_CACHE = {"role": (str, True, ""), "variable": (str, True, ""), "default": (str, True, "")}
_VERSION = {
    "key": (str, True, ""),
    "distribution": (str, False, ""),
    "module": (str, False, ""),
    "attribute": (str, False, ""),
    "file": (str, False, ""),
    "command": (list, False, ""),
    "what": (str, False, ""),
    "column": (bool, False, ""),
}
_KUBERNETES = {"device_resource": (str, True, ""), "node_taint": (str, False, "")}
_SLURM = {"gres": (str, True, "")}
_BEFORE_TORCH = {"hook": (str, True, ""), "module": (str, False, "")}
_FILE_OBJECT = re.compile(r"^[A-Za-z0-9_]+\.py:[A-Za-z_][A-Za-z0-9_]*$")
_MODULE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")  # a top-level module: finding it imports nothing


def _check(where: str, table: Any, keys: dict[str, tuple[Any, bool, str]]) -> dict[str, Any]:
    if not isinstance(table, dict):
        raise DescriptorError(f"{where}: expected a table, found {type(table).__name__}")
    for key, value in table.items():
        if key not in keys:
            close = difflib.get_close_matches(key, list(keys), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else f"; allowed: {', '.join(keys)}"
            raise DescriptorError(f"{where}.{key}: unknown key{hint}")
        kind = keys[key][0]
        # bool is an int in Python: a count must not be written true
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise DescriptorError(
                f"{where}.{key}: expected {getattr(kind, '__name__', kind)}, found {type(value).__name__}"
            )
        if kind is list and not all(isinstance(item, dict if key in ("cache", "version") else str) for item in value):
            raise DescriptorError(
                f"{where}.{key}: expected a list of {'tables' if key in ('cache', 'version') else 'strings'}"
            )
    missing = [key for key, (_, required, _) in keys.items() if required and key not in table]
    if missing:
        raise DescriptorError(f"{where}.{missing[0]}: missing (required)")
    return table


def _backend_name(where: str, value: str) -> str:
    """A name a --target may give (a backend's name or one of its aliases), with the reason it is refused."""
    if value in RESERVED:
        raise DescriptorError(
            f"{where}: {value!r} is reserved ({' and '.join(RESERVED)} name no backend); choose another name"
        )
    if not _NAME.match(value):
        raise DescriptorError(
            f"{where}: {value!r} must be lower case letters, digits, - or _ (a letter first, at most 32)"
        )
    return value


def _probe(where: str, table: dict[str, Any]) -> VersionProbe:
    _check(where, table, _VERSION)
    ways = [name for name in ("distribution", "module", "file", "command") if name in table]
    if len(ways) != 1:
        raise DescriptorError(
            f"{where}: give exactly one of distribution, module (with attribute), file or command; found {ways or 'none'}"
        )
    if ("module" in table) != ("attribute" in table):
        raise DescriptorError(f"{where}.attribute: module and attribute go together")
    if not _KEY.match(table["key"]):
        raise DescriptorError(f"{where}.key: {table['key']!r} is not a plain name")
    return VersionProbe(**{**table, "command": tuple(table.get("command", ()))})


def read_descriptor(path: Path) -> Descriptor:
    """One descriptor file, checked key by key."""
    where = path.name
    try:
        data = tomllib.loads(toml_text(path.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise DescriptorError(f"{path}: cannot be read: {exc}") from None
    _check(where, data, _TOP)
    name = _backend_name(f"{where}.name", data["name"])
    if name != path.stem:
        raise DescriptorError(f"{where}.name: {name!r} must be the file's name without .toml ({path.stem!r})")
    adapter = data["adapter"]
    if not _FILE_OBJECT.match(adapter):
        raise DescriptorError(f"{where}.adapter: {adapter!r} is not FILE.py:Class with FILE beside the descriptor")
    if "/" in data["constraints"] or "\\" in data["constraints"] or not data["constraints"].endswith(".toml"):
        raise DescriptorError(
            f"{where}.constraints: {data['constraints']!r} must be a file name ending .toml (no folder)"
        )
    families = data["families"]
    if not families or not all(
        isinstance(v, str) and _NAME.match(k) and k not in RESERVED for k, v in families.items()
    ):
        raise DescriptorError(
            f'{where}.families: expected family = "reader\'s words" pairs, family names lower case and not {" or ".join(RESERVED)}'
        )
    for alias in data.get("aliases", []):
        _backend_name(f"{where}.aliases", alias)
    kubernetes = _check(f"{where}.kubernetes", data.get("kubernetes", {}), _KUBERNETES) if "kubernetes" in data else {}
    slurm = _check(f"{where}.slurm", data.get("slurm", {}), _SLURM) if "slurm" in data else {}
    before = _check(f"{where}.before_torch", data["before_torch"], _BEFORE_TORCH) if "before_torch" in data else {}
    if before and not _FILE_OBJECT.match(before["hook"]):
        raise DescriptorError(
            f"{where}.before_torch.hook: {before['hook']!r} is not FILE.py:function with FILE beside the descriptor"
        )
    if before.get("module") and not _MODULE.match(before["module"]):
        raise DescriptorError(f"{where}.before_torch.module: {before['module']!r} is not a top-level module name")
    if before and "auto_order" in data and not before.get("module"):
        # --target auto learns which target it runs only once torch is imported: the module is
        # how it knows, before that, whether to run this hook at all.
        raise DescriptorError(
            f"{where}.before_torch.module: missing; a target --target auto tries (auto_order) names the module"
            " torch autoloads for it, so auto can run its hook where that module is installed"
        )
    caches = tuple(CacheDir(**_check(f"{where}.cache[{i}]", c, _CACHE)) for i, c in enumerate(data.get("cache", [])))
    versions = tuple(_probe(f"{where}.version[{i}]", v) for i, v in enumerate(data.get("version", [])))
    return Descriptor(
        name=name,
        path=path.resolve(),
        adapter=adapter,
        constraints=data["constraints"],
        families=dict(families),
        compile_backend=data["compile_backend"],
        aliases=tuple(data.get("aliases", [])),
        auto_order=data.get("auto_order"),
        distributions=tuple(data.get("distributions", [])),
        env_prefixes=tuple(data.get("env_prefixes", [])),
        caches=caches,
        versions=versions,
        device_resource=kubernetes.get("device_resource", ""),
        node_taint=kubernetes.get("node_taint", ""),
        slurm_gres=slurm.get("gres", ""),
        inputs_on_device=data.get("inputs_on_device", False),
        device_facts=data.get("device_facts", False),
        before_torch=before.get("hook", ""),
        autoload_module=before.get("module", ""),
        notes=data.get("notes", ""),
    )


def plugin_dirs(environ: dict[str, str] | None = None) -> tuple[Path, ...]:
    value = (os.environ if environ is None else environ).get(PLUGIN_ENV, "")
    return tuple(Path(part) for part in value.split(os.pathsep) if part)


def descriptors() -> dict[str, Descriptor]:
    """Every backend: the built-in ones by name, then those of the plugin folders by name."""
    return _load(plugin_dirs())


@lru_cache(maxsize=8)
def _load(folders: tuple[Path, ...]) -> dict[str, Descriptor]:
    found: dict[str, Descriptor] = {}
    owners: dict[str, str] = {}  # every name, alias and family -> the file that claims it
    for folder in (BUILTIN_DIR, *folders):
        if not folder.is_dir():
            raise DescriptorError(f"{PLUGIN_ENV}: {folder} is not a folder")
        paths = sorted(folder.glob("*.toml"))
        named = _constraints_named(paths) if folder != BUILTIN_DIR else set()
        for path in paths:
            if path.name in named:  # a constraints file beside its descriptor
                continue
            descriptor = read_descriptor(path)
            for word in (descriptor.name, *descriptor.aliases, *(f"family {f}" for f in descriptor.families)):
                if word in owners:
                    raise DescriptorError(f"{path}: {word!r} is already claimed by {owners[word]}")
                owners[word] = str(path)
            found[descriptor.name] = descriptor
    # The targets --target auto tries come first, in its order, then the others by name.
    return dict(sorted(found.items(), key=lambda item: (item[1].auto_order is None, item[1].auto_order or 0, item[0])))


def _constraints_named(paths: list[Path]) -> set[str]:
    """The files of a plugin folder that a descriptor there names as its constraints file; every
    other .toml file is read as a descriptor (so a stray or misspelled one is an error)."""
    named = set()
    for path in paths:
        try:
            value = tomllib.loads(toml_text(path.read_text(encoding="utf-8"))).get("constraints")
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            continue  # read_descriptor reports it
        if isinstance(value, str):
            named.add(value)
    return named


def target_names() -> tuple[str, ...]:
    """Every target: those --target auto tries, in its order, then the others by name."""
    return tuple(descriptors())


def target_choices() -> tuple[str, ...]:
    """What a --target option takes: every target and every alias."""
    return tuple(sorted({word for d in descriptors().values() for word in (d.name, *d.aliases)}))


def resolve_target(word: str) -> str:
    """The target a name or alias stands for (DescriptorError for one no descriptor claims)."""
    for descriptor in descriptors().values():
        if word == descriptor.name or word in descriptor.aliases:
            return descriptor.name
    raise DescriptorError(f"unknown target {word!r}; choose {', '.join(target_choices())}")


def default_target() -> str:
    """The target a plan is reviewed against when neither ``--target`` nor the plan names one:
    the first one ``--target auto`` tries (``descriptors()`` lists those first, in its order)."""
    return next(iter(descriptors()))


def module_name(prefix: str, backend: str) -> str:
    """A module name of its own for a backend's file: ``_`` and ``-`` written apart (``_u``,
    ``_d``), so my-accel and my_accel never share one."""
    return prefix + backend.replace("_", "_u").replace("-", "_d")


def load_beside(descriptor: Descriptor, name: str, path: Path, role: str) -> ModuleType:
    """The Python file ``path`` beside a descriptor, loaded as module ``name`` (a plugin's
    adapter, a before_torch hook): a file that is missing or raises is one DescriptorError line
    naming the descriptor, the role and the file."""
    spec = importlib.util.spec_from_file_location(name, path) if path.is_file() else None
    if spec is None or spec.loader is None:
        raise DescriptorError(f"{descriptor.path}: {role}: {path} is not a file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:  # the backend's own code: said in one line with its file
        del sys.modules[name]
        raise DescriptorError(
            f"{descriptor.path}: {role}: {path.name} raised {type(exc).__name__}: {str(exc)[:300]}"
        ) from None
    return module


def hook_module(descriptor: Descriptor) -> ModuleType:
    """The module of a descriptor's ``before_torch`` hook, loaded once from the file beside the
    descriptor. It runs before torch is imported, so it is loaded by its path, never through
    ``collector.backends``, whose adapters import torch; the adapter reads it back through here."""
    name = module_name("collector_before_torch_", descriptor.name)
    if name in sys.modules:  # python -m collector ran it; the adapter reads its settings back
        return sys.modules[name]
    path = descriptor.path.parent / descriptor.before_torch.split(":", 1)[0]
    return load_beside(descriptor, name, path, "before_torch.hook")


def before_torch(
    requested: str, intended: str | None, installed: Callable[[str], object] = importlib.util.find_spec
) -> tuple[str, ...]:
    """Run the ``before_torch`` hook of the target this run will use, before torch is imported
    (torch autoloads a backend's module, which may read its variables then), and name it.

    A named target (or alias) runs its own hook. ``--target auto`` runs the hook of the plan's
    target, or, for a plan that names none, of the first target auto tries whose hook names a
    ``module`` that is installed: which target auto runs is known only once torch is imported,
    and a module torch autoloads is the sign of its backend. Under auto a hook whose ``module``
    is not installed does not run (a target auto tries must name one; another runs its hook under
    auto only as the plan's target)."""
    known = descriptors()
    if requested != "auto":
        chosen = [known[resolve_target(requested)]]
    elif intended is not None:
        planned = known.get(intended)
        usable = planned is not None and (not planned.autoload_module or _installed(planned.autoload_module, installed))
        chosen = [planned] if planned is not None and usable else []
    else:
        tried = (d for d in known.values() if d.auto_order is not None and d.before_torch and d.autoload_module)
        chosen = next(([d] for d in tried if _installed(d.autoload_module, installed)), [])
    ran = []
    for descriptor in chosen:
        if not descriptor.before_torch:
            continue
        hook = getattr(hook_module(descriptor), descriptor.before_torch.split(":", 1)[1], None)
        if not callable(hook):
            raise DescriptorError(f"{descriptor.path}: before_torch.hook: {descriptor.before_torch} is not a function")
        try:
            hook()
        except (Exception, SystemExit) as exc:  # the backend's own code: said in one line with its file
            raise DescriptorError(
                f"{descriptor.path}: before_torch.hook: {descriptor.before_torch} raised {type(exc).__name__}: {str(exc)[:300]}"
            ) from None
        ran.append(descriptor.name)
    return tuple(ran)


def _installed(module: str, installed: Callable[[str], object]) -> bool:
    """Whether a top-level module can be imported here (finding it imports nothing); one already
    imported without a spec (find_spec raises ValueError then) is there."""
    try:
        return installed(module) is not None
    except (ImportError, ValueError):
        return module in sys.modules


def backend_families() -> tuple[str, ...]:
    """Every backend family a log may record: each descriptor's, then "unknown"."""
    return (*(family for d in descriptors().values() for family in d.families), "unknown")


def plan_rules(constraints: dict[str, Any], constraints_file: str) -> dict[str, Any]:
    """The plan rules of a constraints file (its constraints' ``plan_rule`` entries), as the
    collector checks a plan before a run: ``collector/target_rules.json`` holds them for the
    built-in targets (``python -m reportgen.judge.backend_docs``), a plugin backend's are read
    from its constraints file (``plugin_plan_rules``)."""
    sources = constraints.get("sources", {})
    return {
        "release": constraints["release"],
        "constraints_file": constraints_file,
        "rules": [
            {
                "key": rule["key"],
                "allowed": list(rule["allowed"]),
                "constraint": c["id"],
                "title": c["title"],
                "source": c["source"],
                "source_urls": {
                    name.strip(): sources[name.strip()] for name in c["source"].split(",") if name.strip() in sources
                },
            }
            for c in constraints.get("constraint", [])
            for rule in c.get("plan_rule", [])
        ],
    }


def plugin_plan_rules(target: str) -> dict[str, Any]:
    """A plugin backend's plan rules, read from the constraints file beside its descriptor (a
    built-in target's come from target_rules.json); empty for a target none describes."""
    found = descriptors().get(target)
    if found is None or found.builtin:
        return {}
    path = found.path.parent / found.constraints
    try:
        data = tomllib.loads(toml_text(path.read_text(encoding="utf-8")))
        return plan_rules(data, str(path))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, KeyError, TypeError, AttributeError) as exc:
        raise DescriptorError(f"{path}: the plan rules cannot be read: {type(exc).__name__}: {exc}") from None
