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

from memoryd.extract.claims import Claim, Verdict, claim, claims_unlike, compare, says_otherwise

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


def weigh(
    texts: list[str], dates: list[str | None], vecs: np.ndarray, limit: float
) -> tuple[dict[int, list[int]], dict[int, int]]:
    """Which of these current claims contradict each other, and which a newer one replaced.

    ``vecs`` are row-aligned unit vectors, ``dates`` when each became true (ISO; None for
    an undated ``MEMORY.md`` line). Of two claims at least ``limit`` alike:

    * the older is *outdated* by the newer (dated, on a later day) when the newer says
      otherwise (:func:`claims.says_otherwise`, the test promotion re-checks
      ``MEMORY.md`` lines with): a new value of the same thing, or a change announced
      ("Nadia took over the SLO dashboards", "Log retention is now 31 days") of what the
      words do not tell apart;
    * else both are *contested* when they :func:`disagree`.

    Returns (index -> the indexes it contradicts, index -> the newer index outdating it);
    an outdated claim contradicts nothing, and nothing is contested by it alone."""
    parsed = [parse(t) for t in texts]
    sims = vecs @ vecs.T
    contested: dict[int, list[int]] = {}
    outdated: dict[int, int] = {}
    for i, j in zip(*np.nonzero(np.triu(sims, 1) >= limit), strict=True):
        a, b = int(i), int(j)
        cosine = float(sims[a, b])
        if claims_unlike(parsed[a].claim, parsed[b].claim) is not None:
            continue
        da, db = dates[a], dates[b]
        if da and db and da != db:
            new, old = (a, b) if da > db else (b, a)
            if says_otherwise(texts[new], texts[old], cosine, limit):
                newest = outdated.get(old)
                if newest is None or (dates[newest] or "") < (dates[new] or ""):
                    outdated[old] = new  # the newest claim that says otherwise
                continue
        if disagree(parsed[a], parsed[b], cosine):
            contested.setdefault(a, []).append(b)
            contested.setdefault(b, []).append(a)
    live = {
        n: [o for o in others if o not in outdated]
        for n, others in contested.items()
        if n not in outdated
    }
    return {n: others for n, others in live.items() if others}, outdated


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
