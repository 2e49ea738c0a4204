"""Search intent (the organizer's ``--smart``, seed 003): which kinds of memory a
query is after, so the search can look there first.

"what mistakes did we make with the deploy" wants lessons (``experience``), "how
do I rotate the keys" a how-to (``procedural``, or the lesson that taught it),
"why did we choose pgvector" a ``decision``. With an LLM configured it is asked
(JSON: the categories and a query rewritten for retrieval); without one, or when
its answer is unusable, a small rule set over the query's words decides. An
intent with no categories leaves the search as it is.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field

from memoryd.errors import MemorydError
from memoryd.extract.jsonfix import loads_lenient
from memoryd.llm import LLM

log = logging.getLogger("memoryd.search")

#: the categories an intent may name (seed 000's table plus ``task``)
CATEGORIES = (
    "decision",
    "preference",
    "environment",
    "project",
    "experience",
    "procedural",
    "task",
)
#: names people use for a category on the command line
ALIASES = {"lesson": "experience", "lessons": "experience", "howto": "procedural", "tasks": "task"}
#: the organizer's classes (extract/classify.py) that facts given no category are stored
#: under, searched together with the category they overlap: a port fact classed
#: ``system`` answers an ``environment`` question, a taste classed ``personal`` a
#: ``preference`` question
CLASSES_OF = {"environment": ("system",), "preference": ("personal",)}

_RULES: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = tuple(
    (re.compile(p, re.IGNORECASE), cats)
    for p, cats in (
        (r"\b(mistakes?|lessons?|pitfalls?|went wrong|gotchas?|fail(ed|ure|ures)?|broke)\b", ("experience",)),
        (r"\bhow (do|to|can|should|did)\b|\bsteps?\b|\bprocedures?\b|\brecipe\b", ("procedural", "experience")),
        (r"\b(decid\w*|decisions?|chose|choose|chosen|why did we)\b", ("decision",)),
        (r"\b(prefers?|preferences?|preferred|favou?rite|likes?)\b", ("preference",)),
        (r"\b(hosts?|ports?|servers?|urls?|endpoints?|config\w*|paths?)\b", ("environment",)),
        (r"\b(todo|tasks?|pending|open items?|working on)\b", ("task",)),
    )
)  # fmt: skip


@dataclass
class Intent:
    query: str
    categories: list[str] = field(default_factory=list)
    source: str = "rules"  # rules | llm

    def to_json(self) -> dict[str, object]:
        return {"query": self.query, "categories": self.categories, "source": self.source}


def category_name(name: str) -> str:
    """A category as typed (``lessons``) in the name memoryd stores (``experience``)."""
    key = name.strip().lower()
    return ALIASES.get(key, key)


def analyse(query: str, llm: LLM | None = None) -> Intent:
    if llm is not None:
        try:
            return _ask(llm, query)
        except (MemorydError, ValueError, TypeError, KeyError) as exc:
            log.warning("search intent: the LLM's answer was unusable (%s); using rules", exc)
    cats: list[str] = []
    for pattern, names in _RULES:
        if pattern.search(query):
            cats += [c for c in names if c not in cats]
    return Intent(query, _with_classes(cats))


def _with_classes(categories: list[str]) -> list[str]:
    """``categories`` followed by the organizer classes that overlap them (:data:`CLASSES_OF`)."""
    out = list(categories)
    for c in categories:
        out += [k for k in CLASSES_OF.get(c, ()) if k not in out]
    return out


def _ask(llm: LLM, query: str) -> Intent:
    prompt = (
        "Classify what a memory search is looking for. Answer with JSON only: "
        '{"query": "<the question rewritten as search keywords>", "categories": [...]} '
        f"where categories are any of {', '.join(CATEGORIES)} (empty when unsure)."
    )
    reply = llm.complete(
        [{"role": "system", "content": prompt}, {"role": "user", "content": query}]
    )
    data = loads_lenient(reply)
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    cats = [c for c in data.get("categories") or [] if c in CATEGORIES]
    rewritten = data.get("query")
    text = rewritten.strip() if isinstance(rewritten, str) and rewritten.strip() else query
    return Intent(text, _with_classes(cats), "llm")
