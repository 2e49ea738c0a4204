"""Memory text as the dashboard shows it: Markdown rendered safely, or as plain text.

Memories are often Markdown (workspace chunks, diary notes: ``## 10:00``, ``- **user**:``).
:func:`to_html` renders them with markdown-it-py with raw HTML off, so any ``<script>``
or tag in a memory is shown as text, and links keep markdown-it's safe-URL check
(no ``javascript:``). :func:`to_plain` is the text without the markup, for one-line
previews in lists.
"""

from __future__ import annotations

from functools import lru_cache

from markdown_it import MarkdownIt
from markupsafe import Markup


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})


def to_html(text: str | None) -> Markup:
    """``text`` rendered as HTML; raw HTML in it is escaped, never passed through."""
    return Markup(_parser().render(text or ""))


def to_plain(text: str | None) -> str:
    """``text`` without its Markdown markup (headings, emphasis, list marks, links), its
    blocks joined by `` · `` on one line: a clean preview (Jinja escapes it)."""
    blocks: list[str] = []
    for token in _parser().parse(text or ""):
        if token.type == "inline" and token.children is not None:
            words = "".join(
                child.content if child.type in ("text", "code_inline") else " "
                for child in token.children
                if child.type in ("text", "code_inline", "softbreak", "hardbreak")
            )
            if words.strip():
                blocks.append(" ".join(words.split()))
        elif token.type in ("code_block", "fence") and token.content.strip():
            blocks.append(" ".join(token.content.split()))
    return " · ".join(blocks)
