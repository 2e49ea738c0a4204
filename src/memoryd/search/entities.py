"""Entity boost: a query that names a person favours that person's memories.

"What did Caroline research?" is about what *Caroline* said, yet the turns
that contain her name are mostly the other speaker's ("Wow, Caroline!"), so
neither BM25 nor the embedding finds her own words reliably. Records that
know who said or owns them (``metadata.speaker``, ``metadata.person``) get
``entity_boost`` added to their fused score when the query names that person.
On LoCoMo (tuned on conversations 0-4) a boost of 0.2 lifted multi-hop
evidence recall@10 from 0.44 to 0.49 and the overall figure by ~0.03.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from memoryd.models import MemoryRecord
from memoryd.search.hybrid import Candidate

ENTITY_KEYS = ("speaker", "person")


def record_names(record: MemoryRecord) -> set[str]:
    names: set[str] = set()
    for key in ENTITY_KEYS:
        value = record.metadata.get(key)
        if isinstance(value, str) and value.strip():
            full = value.strip().lower()
            names.add(full)
            names.add(full.split()[0])
    return names


def boost_named(
    candidates: Sequence[Candidate],
    records: Mapping[str, MemoryRecord],
    query_names: set[str],
    boost: float,
) -> list[Candidate]:
    """Candidates re-ranked with the boost applied (fused stays comparable: capped at 1)."""
    if not query_names or boost <= 0:
        return list(candidates)
    out: list[Candidate] = []
    for c in candidates:
        record = records.get(c.id)
        if record is not None and record_names(record) & query_names:
            parts = c.parts.model_copy(
                update={"entity": boost, "fused": min(1.0, c.parts.fused + boost)}
            )
            c = Candidate(c.id, parts)
        out.append(c)
    out.sort(key=lambda c: -c.parts.fused)
    return out
