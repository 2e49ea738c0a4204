"""The memory wiki (seed 002's memory-wiki companion): durable memory compiled into a
vault of Markdown pages, one per entity or topic, whose claims each carry their
evidence, status, validity and freshness, beside recall (which stays with search).

:func:`compile_wiki` builds ``<workspace>/wiki/`` deterministically (offline, no
LLM) from what :mod:`~memoryd.wiki.sources` gathers, rendered by
:mod:`~memoryd.wiki.render`; :mod:`~memoryd.wiki.ops` searches, reads and applies
structured edits (citations checked by :mod:`~memoryd.wiki.evidence`);
:mod:`~memoryd.wiki.lint` reports problems. The faces: ``memoryd wiki ...``,
``/v1/wiki/...`` and the MCP tools ``wiki_search``, ``wiki_get``, ``wiki_apply``,
``wiki_lint``.
"""

from memoryd.wiki.compile import CompileReport, compile_wiki
from memoryd.wiki.lint import lint
from memoryd.wiki.model import Claim, Page
from memoryd.wiki.ops import Edit, apply, get, page_name, search

__all__ = [
    "Claim",
    "CompileReport",
    "Edit",
    "Page",
    "apply",
    "compile_wiki",
    "get",
    "lint",
    "page_name",
    "search",
]
