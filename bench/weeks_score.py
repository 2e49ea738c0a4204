"""How true memoryd's memory stays: the weeks benchmark's scorer (ground truth from
``weeks_scenario``). Pure functions of texts and the truth, so they can be tested on
planted lines; ``bench/weeks.py`` feeds them what the server returned and stored.

The rules, each the narrowest that still reads what a person would:

* a text *says* a fact's value when it contains the value token (whole word, any case)
  and is about the fact (shares a content word with one of the fact's questions): it
  says the current value if the current token is in it, else a superseded value if an
  older token is ("moved from 5434 to 6432" says the current one);
* a text *states a task as open* when it names the task (its subject pattern) without
  any of the words that finish it ("rotated", "merged");
* a text is *chit-chat* when every sentence of it is close to a sentence of the
  scenario's chit-chat bank (acknowledgements, greetings, weather, sign-offs: word
  Jaccard >= 0.5, or 80% of its words in one bank sentence: "It's pouring here
  today." is part of one), or it is table rows without their header;
* a promoted MEMORY.md line is *junk* when it is chit-chat, a copied request (a
  question, "please ...") or carries diary markup (``**user**``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from weeks_scenario import Fact, Scenario, Task

_STOP_WORDS = (
    "which what when where does do did is are the this that with from have has for how who "
    "should about there their they them your into onto than then also just only much many "
    "long used uses using use and not now our you can was its all any off out get got why let"
)
STOP = frozenset(_STOP_WORDS.split())
_WORDS = re.compile(r"[a-z0-9][a-z0-9_\-]*")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_MARKUP = re.compile(r"\*\*(user|assistant)\*\*:?|^\s*[-*]\s+|^\s*(user|assistant):", re.I)
_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}")
_REQUEST = re.compile(r"\?\s*$|^\s*(please|can you|could you|let's|send me)\b", re.I)


def words(text: str) -> list[str]:
    return _WORDS.findall(text.lower())


def mentions(text: str, token: str) -> bool:
    return re.search(rf"(?<![\w.]){re.escape(token)}(?![\w])", text, re.I) is not None


def _prefixes(queries: Iterable[str]) -> set[str]:
    return {w[:5] for q in queries for w in words(q) if len(w) >= 3 and w not in STOP}


def about(text: str, fact: Fact) -> bool:
    return bool(_prefixes(fact.queries) & {w[:5] for w in words(text) if len(w) >= 3})


def value_said(text: str, fact: Fact, at: datetime) -> str | None:
    """``current``, ``stale`` (a superseded value only) or None, at time ``at``.

    A text is about the fact when it shares a word with the fact's questions, or when it
    names two of the fact's values ("Sold the Toyota Corolla, we bought a Honda Civic":
    a change of the car, said without the word "car")."""
    current = fact.current(at)
    if current is None:
        return None
    named = [v for v in dict.fromkeys((current, *fact.superseded(at))) if mentions(text, v)]
    if not (about(text, fact) or len(named) >= 2):
        return None
    if mentions(text, current):
        return "current"
    if any(mentions(text, old) for old in fact.superseded(at)):
        return "stale"
    return None


def states_open(text: str, task: Task) -> bool:
    return bool(re.search(task.subject, text, re.I)) and not re.search(task.done_words, text, re.I)


class ChitChat:
    """Is a text nothing but chit-chat (or bare table rows)?"""

    def __init__(self, bank: Iterable[str]) -> None:
        self.bank = [set(words(s)) for b in bank for s in _SENTENCE.split(b) if words(s)]

    def _sentence(self, sentence: str) -> bool:
        w = set(words(sentence))
        if not w:
            return True
        return any(len(w & b) / len(w | b) >= 0.5 or len(w & b) >= 0.8 * len(w) for b in self.bank)

    def __call__(self, text: str) -> bool:
        if bare_table(text):
            return True
        clean = _MARKUP.sub(" ", text)
        parts = [p for p in _SENTENCE.split(clean) if p.strip()]
        return bool(parts) and all(self._sentence(p) for p in parts)


def bare_table(text: str) -> bool:
    """Table rows without their header rule (``| search | 9200 | Ravi |``)."""
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return (
        bool(lines)
        and all(_TABLE_ROW.match(ln) for ln in lines)
        and not any(_TABLE_RULE.match(ln) for ln in lines)
    )


def promoted_lines(memory_md: str, title: str) -> list[str]:
    """The bullet lines of MEMORY.md's promoted block(s): under ``title``, up to the next
    heading or the block's end marker."""
    out: list[str] = []
    inside = False
    for line in memory_md.splitlines():
        if line.startswith("#"):
            inside = line.strip() == title
        elif "<!-- /memoryd:promoted" in line:
            inside = False
        elif inside and line.lstrip().startswith("- "):
            out.append(line.strip()[2:])
    return out


@dataclass
class LineVerdict:
    text: str
    stale: list[str] = field(default_factory=list)  # fact keys
    done_as_open: list[str] = field(default_factory=list)  # task keys
    junk: bool = False


def judge_line(line: str, sc: Scenario, at: datetime, chit: ChitChat) -> LineVerdict:
    v = LineVerdict(line)
    v.stale = [f.key for f in sc.facts if value_said(line, f, at) == "stale"]
    v.done_as_open = [t.key for t in sc.tasks if t.done_by(at) and states_open(line, t)]
    v.junk = chit(line) or bool(_REQUEST.search(line)) or "**user**" in line.lower()
    return v


@dataclass
class Ranked:
    """One question's hits on one face, judged against one fact."""

    fact: str
    query: str
    face: str
    labels: list[str | None]

    @property
    def current_first(self) -> bool:
        return bool(self.labels) and self.labels[0] == "current"

    @property
    def stale_above(self) -> bool:
        """A superseded value ranks above the current one (or the current one is absent)."""
        first = {lab: i for i, lab in reversed(list(enumerate(self.labels)))}
        return first.get("stale", 10**6) < first.get("current", 10**6)


def rank_facts(hits_of: dict[tuple[str, str, str], list[str]], sc: Scenario, at: datetime) -> list[Ranked]:  # fmt: skip
    """Judge every changed fact's questions: ``hits_of[(fact, query, face)]`` are hit texts."""
    facts = {f.key: f for f in sc.facts}
    return [
        Ranked(key, q, face, [value_said(t, facts[key], at) for t in texts])
        for (key, q, face), texts in hits_of.items()
    ]


def lesson_real(text: str, sc: Scenario) -> str | None:
    """The real episode a lesson memory is about, if any."""
    for e in sc.episodes:
        if e.real and re.search(e.marker, text, re.I):
            return e.key
    return None


def leaks_in(texts: Iterable[str], markers: Iterable[str]) -> int:
    pats = [re.compile(m, re.I) for m in markers]
    return sum(1 for t in texts if any(p.search(t) for p in pats))


def share(n: int, d: int) -> float | None:
    return round(n / d, 3) if d else None
