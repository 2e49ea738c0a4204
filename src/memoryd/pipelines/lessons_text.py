"""Small text tools the lesson pipelines share: content words, overlap, sentences.

Word overlap is seed 003's duplicate test ("word overlap > 70%"). It is
measured on content words (no stop words, no lesson-template words), as the
share of the *new* lesson's words already present in an existing one: a new
lesson that says nothing an old one does not already say is a duplicate, even
when the old one says more.
"""

from __future__ import annotations

import re
import unicodedata

_WORD = re.compile(r"[^\W_]+(?:[-'.][^\W_]+)*", re.UNICODE)
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+|\n+")
_STOPWORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been
    before being below between both but by can could did do does doing done down during each
    few for from further had has have having he her here hers him his how i if in into is it
    its itself just me more most my no nor not now of off on once only or other our ours out
    over own same she should so some such than that the their them then there these they
    this those through to too under until up us very was we were what when where which while
    who whom why will with would you your yours ok okay please thanks thank yes yeah
    when wrong right correct approach scenario reason lesson worked failed instead""".split()  # noqa: SIM905
)


def words(text: str) -> list[str]:
    """Lower-cased words of ``text`` in order (NFKC-normalised, any script)."""
    return [w.lower() for w in _WORD.findall(unicodedata.normalize("NFKC", text))]


def content_words(text: str) -> set[str]:
    """The words that carry meaning: no stop words, no one-letter tokens."""
    return {w for w in words(text) if w not in _STOPWORDS and (len(w) > 1 or not w.isascii())}


def overlap(new: str, old: str) -> float:
    """Share of ``new``'s content words that ``old`` has too, in [0, 1]."""
    a = content_words(new)
    if not a:
        return 1.0 if not content_words(old) else 0.0
    return len(a & content_words(old)) / len(a)


def sentences(text: str) -> list[str]:
    """Sentences (and lines) of ``text``, stripped, empty ones dropped."""
    return [s.strip() for s in _SENTENCE.split(text) if s and s.strip()]


def clip(text: str, limit: int) -> str:
    """``text`` on one line, at most ``limit`` characters (an ellipsis marks a cut)."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    return flat[: max(1, limit - 1)].rstrip() + "…"


def end_sentence(text: str) -> str:
    text = text.strip()
    return text if not text or text[-1] in ".!?。！？…" else text + "."
