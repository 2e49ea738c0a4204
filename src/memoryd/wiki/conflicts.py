"""Which claims of a vault contradict each other, and which restate a superseded fact:
decided by the fact store's own offline test (:mod:`memoryd.extract.claims`), so the
wiki and the store agree on what "the same subject and attribute, another value" is.

Embeddings only pick the pairs worth comparing (cosine at least
``wiki.contradiction_similarity``); the words decide. Each text is parsed once
(:func:`claims.claim`) and pairs the words already tell apart (another environment,
attribute or kind of value: :func:`claims.claims_unlike`) are skipped before the
full comparison, so a vault of 1,500 alike claims is checked in seconds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from memoryd.extract.claims import Claim, Verdict, claim, claims_unlike, compare

NEGATION_SIMILARITY = 0.8  # a denial contradicts only what it is this alike
_NEGATION = re.compile(r"\b(?:not|never|no longer|no|none|n't)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Parsed:
    text: str
    claim: Claim
    negated: bool


def parse(text: str) -> Parsed:
    return Parsed(text, claim(text), bool(_NEGATION.search(text)))


def disagree(a: Parsed, b: Parsed, cosine: float) -> bool:
    """Two statements about the same subject and attribute with different values: the fact
    store's test (:func:`~memoryd.extract.claims.compare`) finds a new value either way,
    and the two name one attribute (port, owner, ...) or give values that differ ("moved
    to Lisbon" / "runs the Lisbon office" name neither). Or, ``cosine`` at least
    :data:`NEGATION_SIMILARITY` alike, one denies what the other says."""
    if claims_unlike(a.claim, b.claim) is not None:
        return False
    x, y = a.claim, b.claim
    values = bool(x.attributes & y.attributes or (x.values and y.values and x.values != y.values))
    if values and Verdict.SUPERSEDES in (compare(a.text, b.text)[0], compare(b.text, a.text)[0]):
        return True
    return a.negated != b.negated and cosine >= NEGATION_SIMILARITY


def restates(a: Parsed, b: Parsed) -> bool:
    """``a`` says what ``b`` says, nothing more or less either way (a rewording)."""
    if claims_unlike(a.claim, b.claim) is not None:
        return False
    return compare(a.text, b.text)[0] == compare(b.text, a.text)[0] == Verdict.SAME


def contradictions(texts: list[str], vecs: np.ndarray, limit: float) -> dict[int, list[int]]:
    """Index -> the indexes of the texts it contradicts (``vecs`` row-aligned, unit length)."""
    parsed = [parse(t) for t in texts]
    sims = vecs @ vecs.T
    out: dict[int, list[int]] = {}
    for i, j in zip(*np.nonzero(np.triu(sims, 1) >= limit), strict=True):
        a, b = int(i), int(j)
        if disagree(parsed[a], parsed[b], float(sims[a, b])):
            out.setdefault(a, []).append(b)
            out.setdefault(b, []).append(a)
    return out


def restated(
    lines: list[str],
    line_vecs: np.ndarray,
    old: list[str],
    old_vecs: np.ndarray,
    limit: float,
) -> dict[int, int]:
    """Line index -> the index of an ``old`` text it restates (the first, by similarity)."""
    if not lines or not old:
        return {}
    ours, theirs = [parse(t) for t in lines], [parse(t) for t in old]
    sims = line_vecs @ old_vecs.T
    out: dict[int, int] = {}
    for i, j in zip(*np.nonzero(sims >= limit), strict=True):
        a, b = int(i), int(j)
        if a not in out and restates(ours[a], theirs[b]):
            out[a] = b
    return out
