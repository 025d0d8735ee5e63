"""Jinja2 environments, shared assets and deterministic file writing.

HTML is rendered with autoescape on and StrictUndefined; Markdown with its own environment whose
``md`` filter escapes what would break a table or inject markup. In both, every value a template
prints (a chart's labels too) shows invisible and reordering characters visibly,
as ``<U+202E>`` (``collector.visible``): a log's text cannot pass for other text.

Assets are copied once under content-hashed names, so a page links ``assets/report-<hash>.css``
by a relative path and works from file:// with no network.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from markupsafe import Markup

from collector.visible import visible
from reportgen.render.locations import templates_dir
from reportgen.storage.local import write_inside

if TYPE_CHECKING:  # jinja2 is imported where a page is rendered, not by commands that render none
    import jinja2

ASSET_SOURCES = ("report.css", "site.js", "print.js")
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>|#!~&])")
_BACKTICK_RUNS = re.compile(r"`+")


def shown(value: Any) -> Any:
    """A printed value with its hidden characters made visible (see the module docstring).
    Markup is our own HTML, made from text that was already passed through here."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return visible(value)
    return value


def visible_data(value: Any) -> Any:
    """Every string of data a page embeds as JSON through ``visible``."""
    if isinstance(value, str):
        return visible(value)
    if isinstance(value, dict):
        return {visible_data(k): visible_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [visible_data(v) for v in value]
    return value


def json_text(data: Any, **options: Any) -> str:
    """Data as strict JSON: a float that is not finite (a ratio past a float's range) is null,
    never the ``Infinity`` or ``NaN`` that Python writes and jq and browsers refuse."""
    return json.dumps(_finite(data), allow_nan=False, **options)


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def md_escape(value: Any) -> str:
    """Text safe inside a Markdown table cell: no pipes, backticks, markup or line breaks."""
    text = visible(" ".join(str(value).split()))  # whitespace first: a \r joins lines as a space
    return _MD_SPECIAL.sub(_backslashed, text)


def _backslashed(match: re.Match[str]) -> str:
    # Speed: a function, not the template r"\\\1", which Python 3.11 expands in Python per match.
    return "\\" + match.group()


def md_quote(value: Any) -> str:
    """Free text (an annotation's Markdown) as a block quote: each paragraph kept, its code spans
    kept as code spans (fenced anew), every other markup escaped."""
    from reportgen.judge.nextstep import (
        Words,
    )  # here, not at the top: a site build with nothing to render never imports the judge

    paragraphs = [md_words(Words.marked(" ".join(p.split()))) for p in re.split(r"\n[ \t]*\n", str(value)) if p.strip()]
    return "\n>\n".join(f"> {p}" for p in paragraphs) or "> (empty)"


def clip(value: Any, limit: int) -> str:
    """Text cut to ``limit`` characters with an ellipsis (the full text is in the full report)."""
    text = visible(str(value))
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


def md_code(value: Any) -> str:
    """An identifier as a Markdown code span (longer fences when it holds backticks), one line.
    Nothing inside a code span is an escape: a | stays as it is (see md_code_cell)."""
    text = visible(" ".join(str(value).split()))  # whitespace first: a \r joins lines as a space
    longest = max(map(len, _BACKTICK_RUNS.findall(text)), default=0) if "`" in text else 0
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or longest else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def md_words(value: Any) -> str:
    """A sentence with its code marked (judge.nextstep.Words) as Markdown: the text escaped, the
    code as code spans, the spaces between parts kept."""
    out = []
    for text, code in value.parts:
        if code:
            out.append(md_code(text))
            continue
        lead = " " if text[:1].isspace() else ""
        tail = " " if text[-1:].isspace() and text.strip() else ""
        out.append(lead + md_escape(text) + tail)
    return "".join(out)


def md_code_cell(value: Any) -> str:
    """md_code for a table cell: a table splits its rows at every |, even inside a code span, and
    takes \\| as a | of the cell's text (outside a table the backslash would show)."""
    return md_code(value).replace("|", "\\|")


TEMPLATE_CACHE_ENV = "REPORTGEN_TEMPLATE_CACHE"  # "off": compile every template in each process


def _bytecode_cache(settings: dict[str, Any]) -> jinja2.BytecodeCache | None:
    """Compiled templates kept between commands, in Jinja's own per-user folder under the temp
    dir (created private to the user; Jinja refuses one it does not own). Compiling the report
    templates cost a third of a small report's whole command. A cached template is used only
    when its source is unchanged (Jinja compares a checksum); the file names carry Jinja's
    version and these settings, so code compiled under other settings is never loaded. Any
    failure to read or write the cache only means compiling again."""
    import os
    import pickle

    import jinja2

    if os.environ.get(TEMPLATE_CACHE_ENV, "").lower() in ("off", "0", "no", "false"):
        return None
    fingerprint = hashlib.sha256(repr((jinja2.__version__, sorted(settings.items()))).encode()).hexdigest()[:12]

    class QuietCache(jinja2.FileSystemBytecodeCache):
        def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
            try:
                super().load_bytecode(bucket)
            except (
                OSError,
                EOFError,
                ValueError,
                TypeError,
                pickle.UnpicklingError,
            ):  # unreadable or corrupt: compile instead
                bucket.reset()

        def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
            try:
                super().dump_bytecode(bucket)
            except OSError:
                pass

    try:
        return QuietCache(pattern=f"__reportgen_{fingerprint}_%s.cache")
    except (OSError, RuntimeError):  # no private temp folder to be had
        return None


def _environment(autoescape: bool) -> jinja2.Environment:
    import jinja2

    settings = {
        "autoescape": autoescape,
        "undefined": "StrictUndefined",
        "keep_trailing_newline": True,
        "trim_blocks": True,
        "lstrip_blocks": True,
        "finalize": "shown",
    }
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(templates_dir()),
        autoescape=autoescape,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=shown,
        bytecode_cache=_bytecode_cache(settings),
    )


def _globals(env: jinja2.Environment) -> jinja2.Environment:
    from reportgen.render.labels import human
    from reportgen.render.sections.common import fmt_time
    from reportgen.render.view import SECTIONS

    env.globals["sections"] = SECTIONS
    # Every page shows tokens and times in the same words: labels.human and fmt_time.
    env.filters["human"] = human
    env.filters["fmt_time"] = fmt_time
    return env


@lru_cache(maxsize=None)
def html_env() -> jinja2.Environment:
    env = _globals(_environment(autoescape=True))
    return env


@lru_cache(maxsize=None)
def md_env() -> jinja2.Environment:
    env = _globals(_environment(autoescape=False))
    env.filters["md"] = md_escape
    env.filters["code"] = md_code
    env.filters["words"] = md_words
    env.filters["code_cell"] = md_code_cell
    env.filters["clip"] = clip
    env.filters["md_quote"] = md_quote
    return env


@dataclass(frozen=True)
class Assets:
    """Relative names of the copied assets, by role."""

    css: str
    site_js: str
    print_js: str = ""
    # A single-file page (--single-file): each asset's own text by role, written into the page
    # instead of linked; the policy then allows exactly these scripts by their hashes.
    inline: dict[str, str] | None = None
    script_hashes: tuple[str, ...] = ()

    @property
    def linked(self) -> list[str]:
        """The relative names of the files a page links (none for an inline or asset-free page)."""
        return [name for name in (self.css, self.site_js, self.print_js) if name]


def _hashed_name(name: str, data: bytes) -> str:
    stem, dot, ext = name.rpartition(".")
    return f"{stem}-{hashlib.sha256(data).hexdigest()[:10]}{dot}{ext}"


def _asset_files() -> dict[str, tuple[str, bytes]]:
    """Each asset's role -> (content-hashed file name, bytes)."""
    files = {}
    for source in ASSET_SOURCES:
        data = (templates_dir() / "assets" / source).read_bytes()
        files[source] = (_hashed_name(source, data), data)
    return files


def _assets(names: dict[str, str]) -> Assets:
    return Assets(
        css=names["report.css"],
        site_js=names["site.js"],
        print_js=names["print.js"],
    )


def asset_names() -> Assets:
    """The relative names write_assets gives the assets, without writing them."""
    return _assets({role: f"assets/{name}" for role, (name, _) in _asset_files().items()})


def inline_assets() -> Assets:
    """The assets as text for one self-contained page: nothing beside it to copy or fetch.
    Our own files only; a closing tag inside one would end its element early, so none may hold one."""
    texts = {role: data.decode("utf-8") for role, (_, data) in _asset_files().items()}
    for role, text in texts.items():
        if re.search(r"</(script|style)", text, re.IGNORECASE):
            raise ValueError(f"asset {role} holds a closing script or style tag: it cannot be written inline")
    hashes = tuple(
        base64.b64encode(hashlib.sha256(texts[role].encode("utf-8")).digest()).decode("ascii") for role in ("print.js",)
    )
    return Assets(
        css="",
        site_js="",
        print_js="",
        inline={"css": texts["report.css"], "print_js": texts["print.js"]},
        script_hashes=hashes,
    )


def write_assets(out_dir: Path) -> Assets:
    """Copy the shared assets into out_dir/assets once, under content-hashed names."""
    names = {}
    for role, (name, data) in _asset_files().items():
        write_inside(out_dir, out_dir / "assets" / name, data)
        names[role] = f"assets/{name}"
    return _assets(names)


def render_html(template: str, **context: Any) -> str:
    return html_env().get_template(template).render(**context)


def render_md(template: str, **context: Any) -> str:
    return md_env().get_template(template).render(**context)


# Text a spreadsheet would run as a formula when a cell starts with it: a log's text is
# untrusted, so such a field is written with a leading ' (the spreadsheet then shows it as text).
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_QUOTED = re.compile(r'[,"\r\n]')


def csv_field(value: Any) -> str:
    """One field as csv.writer's minimal quoting writes it (None empty, a number as str gives it),
    with these differences: every hidden character of a text but tabs and line feeds is shown as
    <U+XXXX> (a carriage return too, which csv.writer before Python 3.11.9 left bare, splitting
    the row); text that starts like a formula (FORMULA_START) takes a leading '; and a float
    that is not finite is left empty, as the JSON exports write null (never inf or nan)."""
    if value is None:
        return ""
    if isinstance(value, str):
        text = "'" + value if value.startswith(FORMULA_START) else value
    elif type(value) is float and not math.isfinite(value):
        return ""
    else:
        text = str(value)
    return '"' + text.replace('"', '""') + '"' if _QUOTED.search(text) else text


def csv_text(rows: Any) -> str:
    """Rows as CSV, one newline-terminated line each (see csv_field); a row of one empty field
    is written "" (as csv.writer does), so that it is not read back as no row at all."""
    lines = []
    for row in rows:
        line = ",".join(map(csv_field, row))
        lines.append((line if line or len(row) != 1 else '""') + "\n")
    # Every hidden character but tabs and line feeds shown as <U+XXXX>, as on every page (an
    # escape sequence, a bell or a right-to-left override from a log reached the terminal that
    # showed the file), in one pass over the whole text: the quoting and the separators are
    # none of them.
    return visible("".join(lines))


def write_text(path: Path, text: str, root: Path | None = None) -> bool:
    """Write UTF-8 with LF endings unless the file already holds exactly this; True if written.

    Nothing is written through a symlink or outside ``root`` (default: the file's folder).
    """
    return write_inside(root if root is not None else path.parent, path, text.encode("utf-8"))


def write_bytes_if_changed(path: Path, data: bytes, root: Path | None = None) -> bool:
    """Write bytes unless the file already holds exactly these; True if written (never
    through a symlink or outside ``root``, default: the file's folder)."""
    return write_inside(root if root is not None else path.parent, path, data)
