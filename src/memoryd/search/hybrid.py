"""Vector + BM25 candidates, fused by weight (default) or reciprocal rank.

Both sides over-fetch ``top_k * candidate_multiplier`` candidates. Keyword
candidates also get their exact vector score (a dot product against the
in-memory matrix, nearly free), so a hit found only by BM25 is not penalised
for being outside the vector shortlist. Every candidate keeps its parts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from memoryd.models import Filters, ScoreParts
from memoryd.settings import SearchSettings
from memoryd.store import Store


@dataclass
class Candidate:
    id: str
    parts: ScoreParts

    @property
    def score(self) -> float:
        return self.parts.fused


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
            parts = ScoreParts(
                vector=vector_hits.get(i, 0.0),
                keyword=keyword_hits.get(i, 0.0),
                fused=raw / best if best else 0.0,
            )
            out.append(Candidate(i, parts))
    else:
        wv, wk = settings.vector_weight, settings.keyword_weight
        if mode == "vector":
            wv, wk = 1.0, 0.0
        elif mode == "keyword":
            wv, wk = 0.0, 1.0
        total = (wv + wk) or 1.0
        for i in ids:
            v, kw = vector_hits.get(i, 0.0), keyword_hits.get(i, 0.0)
            out.append(
                Candidate(i, ScoreParts(vector=v, keyword=kw, fused=(wv * v + wk * kw) / total))
            )
    out.sort(key=lambda c: -c.parts.fused)
    return out


def hybrid_candidates(
    store: Store,
    query: str,
    query_vector: np.ndarray | None,
    filters: Filters,
    n: int,
    settings: SearchSettings,
    mode: str = "hybrid",
) -> list[Candidate]:
    """Ranked candidates for ``query`` within ``filters``; ``n`` per side."""
    vector_hits: dict[str, float] = {}
    keyword_hits: dict[str, float] = {}
    if mode in ("hybrid", "vector") and query_vector is not None:
        vector_hits = dict(store.vector_search(query_vector, filters, n))
    if mode in ("hybrid", "keyword"):
        keyword_hits = dict(store.keyword_search(query, filters, n))
        missing = [i for i in keyword_hits if i not in vector_hits]
        if missing and query_vector is not None and mode == "hybrid":
            vector_hits.update(store.vector_scores(query_vector, missing))
    return fuse(vector_hits, keyword_hits, settings, mode)
