"""Annotation Markdown to HTML, for text written by anybody: nothing in it can run, load or
point at the reader's own files.

* raw HTML is off: ``<script>`` and friends are shown as text;
* images are never loaded: an image is shown as its description and address, as text;
* a link is kept only when it is http(s) (then marked external, with
  ``rel="noopener noreferrer"``) or a relative address that stays inside the report's folder
  (no ``..``, no absolute or drive path, no other scheme); any other link stays the literal
  Markdown text, address included, so the reader sees where it pointed.

The page's Content-Security-Policy (templates/base.html.j2) backs this up in the browser.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote, urlsplit

from markdown_it import MarkdownIt
from markdown_it.rules_core import StateCore
from markdown_it.token import Token
from markupsafe import Markup

from collector.visible import visible

_WINDOWS_PATH = re.compile(r"^[a-z]:", re.IGNORECASE)
MAX_NESTING = 20


def is_external(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme.lower() in ("http", "https") and bool(parts.netloc)


def is_local_relative(url: str) -> bool:
    """A relative address that stays inside the folder of the page (or a #fragment)."""
    if url.startswith("#"):
        return True
    decoded = unquote(url)
    if not decoded or "\\" in decoded or decoded.startswith("/") or _WINDOWS_PATH.match(decoded):
        return False
    parts = urlsplit(decoded)
    if parts.scheme or parts.netloc or any(ord(ch) < 32 for ch in decoded):
        return False
    return ".." not in parts.path.split("/")


def allowed_link(url: str) -> bool:
    url = url.strip()
    return is_external(url) or is_local_relative(url)


def _images_as_text(state: StateCore) -> None:
    """Replace every image by text naming it: a report never loads an image from an annotation."""
    for block in state.tokens:
        if block.type != "inline" or not block.children:
            continue
        for index, token in enumerate(block.children):
            if token.type == "image":
                text = Token("text", "", 0)
                alt = "".join(child.content for child in token.children or [])
                text.content = f"[image not shown: {alt or 'no description'}, {token.attrGet('src') or 'no address'}]"
                block.children[index] = text


def _link_open(self: Any, tokens: list[Token], idx: int, options: Any, env: Any) -> str:
    token = tokens[idx]
    href = str(token.attrGet("href") or "")
    if is_external(href):
        token.attrSet("rel", "noopener noreferrer")
        token.attrSet("class", "external")
        token.attrSet("title", href)
    return str(self.renderToken(tokens, idx, options, env))


def _markdown() -> MarkdownIt:
    md = MarkdownIt("js-default", {"html": False, "linkify": False, "typographer": False, "maxNesting": MAX_NESTING})
    md.validateLink = allowed_link  # type: ignore[method-assign]
    md.core.ruler.push("images_as_text", _images_as_text)
    md.add_render_rule("link_open", _link_open)
    return md


_MD = _markdown()


def render_markdown(text: str) -> Markup:
    """Annotation Markdown as HTML (see the module docstring for what is allowed)."""
    return Markup(_MD.render(visible(text)))
