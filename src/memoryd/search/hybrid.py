"""Vector + BM25 candidates, fused by weight (default) or reciprocal rank.

Both sides over-fetch ``top_k * candidate_multiplier`` candidates. Keyword
candidates also get their exact vector score, so a hit found only by BM25 is
not penalised for being outside the vector shortlist. A new query's keyword
side runs off the search's path (:func:`keyword_side`, while the query is
embedded), and is waited for only once the vector side has searched. Every
candidate keeps its parts, as plain floats: a search builds
:class:`~memoryd.models.ScoreParts` only for the hits it returns (a pydantic
model per candidate was ~1 ms of a top-25 search).
"""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, field

import numpy as np

from memoryd.models import Filters, RankFacts, ScoreParts
from memoryd.settings import SearchSettings
from memoryd.store import Store


@dataclass(slots=True)
class Candidate:
    """A memory's relevance so far. ``fused`` is what it ranks by; ``extra`` holds the
    adjustments made after fusion (``entity``, ``neighbours``, ``turn``: the
    :class:`ScoreParts` fields of the same names), already counted in ``fused``."""

    id: str
    vector: float = 0.0
    keyword: float = 0.0
    fused: float = 0.0
    extra: dict[str, float] = field(default_factory=dict)

    @property
    def score(self) -> float:
        return self.fused

    def adjusted(self, fused: float, **extra: float) -> Candidate:
        """A copy ranked by ``fused``, with ``extra`` added to its adjustments."""
        return Candidate(self.id, self.vector, self.keyword, fused, {**self.extra, **extra})

    def parts(self, decay: float | None = None) -> ScoreParts:
        """The score's parts as the API shows them (``decay``: the recency weight, when
        time decay was applied)."""
        return ScoreParts(
            vector=self.vector, keyword=self.keyword, fused=self.fused, decay=decay, **self.extra
        )


def meaning_share(vector: float, floor: float) -> float:
    """The share of a keyword score that counts beside ``vector`` meaning: min(1, vector /
    floor); all of it without a floor (``search.keyword_meaning_floor`` and
    ``search.long_turn_meaning_floor``)."""
    return min(1.0, vector / floor) if floor > 0 else 1.0


def fuse(
    vector_hits: dict[str, float],
    keyword_hits: dict[str, float],
    settings: SearchSettings,
    mode: str = "hybrid",
) -> list[Candidate]:
    """Combine normalised per-side scores into one ranked list."""
    ids = list(dict.fromkeys([*vector_hits, *keyword_hits]))
    out: list[Candidate] = []
    if mode == "vector":
        ids = list(vector_hits)
    elif mode == "keyword":
        ids = list(keyword_hits)
    if settings.fusion == "rrf" and mode == "hybrid":
        vrank = {i: r for r, i in enumerate(sorted(vector_hits, key=lambda i: -vector_hits[i]))}
        krank = {i: r for r, i in enumerate(sorted(keyword_hits, key=lambda i: -keyword_hits[i]))}
        k = settings.rrf_k
        best = settings.vector_weight / (k + 1) + settings.keyword_weight / (k + 1)
        for i in ids:
            raw = 0.0
            if i in vrank:
                raw += settings.vector_weight / (k + 1 + vrank[i])
            if i in krank:
                raw += settings.keyword_weight / (k + 1 + krank[i])
            fused = raw / best if best else 0.0
            out.append(Candidate(i, vector_hits.get(i, 0.0), keyword_hits.get(i, 0.0), fused))
    else:
        wv, wk = settings.vector_weight, settings.keyword_weight
        if mode == "vector":
            wv, wk = 1.0, 0.0
        elif mode == "keyword":
            wv, wk = 0.0, 1.0
        total = (wv + wk) or 1.0
        floor = settings.keyword_meaning_floor if mode == "hybrid" else 0.0
        for i in ids:
            v, kw = vector_hits.get(i, 0.0), keyword_hits.get(i, 0.0)
            counted = kw * meaning_share(v, floor)
            out.append(Candidate(i, v, kw, (wv * v + wk * counted) / total))
    out.sort(key=lambda c: -c.fused)
    return out


@dataclass(frozen=True, slots=True)
class KeywordSide:
    """A scope's keyword candidates found off the search's path (while the query is
    embedded), and the facts the store read with them."""

    hits: list[tuple[str, float]]
    facts: dict[str, RankFacts]


def keyword_side(store: Store, query: str, filters: Filters, n: int) -> KeywordSide:
    """The keyword side of a hybrid search, for a worker thread."""
    facts: dict[str, RankFacts] = {}
    return KeywordSide(store.keyword_search(query, filters, n, facts=facts), facts)


def hybrid_candidates(
    store: Store,
    query: str,
    query_vector: np.ndarray | None,
    filters: Filters,
    n: int,
    settings: SearchSettings,
    mode: str = "hybrid",
    early: Future[KeywordSide] | None = None,
    facts: dict[str, RankFacts] | None = None,
) -> list[Candidate]:
    """Ranked candidates for ``query`` within ``filters``; ``n`` per side.
    ``early`` is the :func:`keyword_side` of this scope running in a worker (a new
    query's): it is waited for only after the vector side has searched. ``facts``
    gathers the candidates' :class:`RankFacts` where the store reads them with the
    candidates (see :class:`~memoryd.store.Store`)."""
    vector_hits: dict[str, float] = {}
    keyword_hits: dict[str, float] = {}
    if mode in ("hybrid", "vector") and query_vector is not None:
        vector_hits = dict(store.vector_search(query_vector, filters, n, facts=facts))
    if mode in ("hybrid", "keyword"):
        if early is not None:
            side = early.result()
            keyword_hits = dict(side.hits)
            if facts is not None:
                facts.update(side.facts)
        else:
            keyword_hits = dict(store.keyword_search(query, filters, n, facts=facts))
        missing = [i for i in keyword_hits if i not in vector_hits]
        if missing and query_vector is not None and mode == "hybrid":
            vector_hits.update(store.vector_scores(query_vector, missing, facts=facts))
    return fuse(vector_hits, keyword_hits, settings, mode)
