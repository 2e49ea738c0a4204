"""``memory_search`` over an agent's workspace: chunk hits with citations.

Hybrid search restricted to the agent's chunk records (``search`` settings),
``workspace.min_score`` 0.2 (the floor of every search; OpenClaw's 0.35 is for its
own score scale and dropped evidence on ours), then optional MMR re-ranking
(lambda 0.7) so that five near-copies of one diary entry do not crowd out
everything else. Each hit carries ``path#Lx-Ly`` and a snippet, ready for
``memory_get``.

How much comes back is a token budget (``workspace.result_tokens``, 1,000 of
the embedding model's tokens) as well as a count (``workspace.max_results``):
OpenClaw's 6 hits of ~700 characters cost about 1,000 tokens, and diary turns
are chunked one by one, so the same budget now holds ~25 turns instead of 6
two-turn sections. The best hit is always returned, whatever its size; a hit
too long for what is left of the budget is passed over for shorter ones after
it, so the budget is filled, best first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from memoryd.access import workspace_owner
from memoryd.core import Memory
from memoryd.models import Filters, MemoryRecord, Origin, SearchHit
from memoryd.shapes import snippet
from memoryd.workspace.chunking import turn_words
from memoryd.workspace.layout import Workspace


def said(record: MemoryRecord) -> str:
    """What a chunk says, for reading: a diary turn as "Speaker: words" without its
    list markup (``memory_get`` on the citation still returns the exact lines)."""
    speaker = record.metadata.get("speaker")
    if record.origin == Origin.CHUNK and isinstance(speaker, str):
        return f"{speaker}: {turn_words(record.text)}"
    return record.text


def citation_fields(record: MemoryRecord, snippet_chars: int = 700) -> dict[str, Any]:
    """``citation`` and ``snippet`` for a hit that came from a file; nothing otherwise.

    For any search result serializer (HTTP, CLI, MCP): adds the fields, never removes.
    """
    if record.source is None:
        return {}
    return {
        "citation": record.source.citation,
        "snippet": snippet(said(record), snippet_chars),
        "path": record.source.path,
        "start_line": record.source.start_line,
        "end_line": record.source.end_line,
    }


@dataclass
class WorkspaceHit:
    hit: SearchHit

    def to_json(self, snippet_chars: int = 700) -> dict[str, Any]:
        record = self.hit.record
        return {
            "id": self.hit.id,
            **citation_fields(record, snippet_chars),
            "score": round(self.hit.score, 6),
            "parts": self.hit.parts.model_dump(exclude_none=True),
            "kind": record.metadata.get("kind"),
            "context": record.context,
        }


def memory_search(
    memory: Memory,
    ws: Workspace,
    query: str,
    *,
    max_results: int | None = None,
    min_score: float | None = None,
    mmr: bool | None = None,
    max_tokens: int | None = None,
) -> list[WorkspaceHit]:
    """The agent's best chunk hits for ``query``, best first, within ``max_tokens``
    (default: ``workspace.result_tokens`` unless ``max_results`` is given)."""
    settings = ws.settings
    k = settings.max_results if max_results is None else max_results
    # a caller that asks for a number of hits gets that number; the budget is the default
    default_budget = settings.result_tokens if max_results is None else None
    budget = default_budget if max_tokens is None else max_tokens
    use_mmr = settings.mmr if mmr is None else mmr
    hits = memory.search(
        query,
        user_id=workspace_owner(memory.settings),
        agent_id=ws.agent_id,
        top_k=min(memory.settings.search.max_top_k, k * 3) if use_mmr else k,
        min_score=settings.min_score if min_score is None else min_score,
        filters=Filters(origins=[Origin.CHUNK]),
    )
    if use_mmr and len(hits) > 1:
        hits = mmr_rerank(memory, hits, settings.mmr_lambda, k)
    out: list[WorkspaceHit] = []
    used = 0
    for hit in hits[:k]:
        cost = memory.embedder.count_tokens(snippet(said(hit.record), settings.snippet_chars))
        if out and budget is not None and used + cost > budget:
            continue  # too long for what is left: a shorter hit further down may fit
        out.append(WorkspaceHit(hit))
        used += cost
    return out


def mmr_rerank(memory: Memory, hits: list[SearchHit], lam: float, k: int) -> list[SearchHit]:
    """Maximal marginal relevance: ``lam * relevance - (1 - lam) * max similarity to chosen``.

    Vectors come from the embedding cache (same text, same model), so this
    costs no model calls.
    """
    vectors = memory.embed_texts([h.record.index_text for h in hits])
    sims = np.clip(vectors @ vectors.T, 0.0, 1.0)
    chosen: list[int] = []
    left = list(range(len(hits)))
    while left and len(chosen) < k:
        best, best_value = left[0], -np.inf
        for i in left:
            redundancy = max((float(sims[i, j]) for j in chosen), default=0.0)
            value = lam * hits[i].score - (1 - lam) * redundancy
            if value > best_value:
                best, best_value = i, value
        chosen.append(best)
        left.remove(best)
    return [hits[i] for i in chosen]
