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

from collections.abc import Iterable

from memoryd.models import MemoryRecord

ENTITY_KEYS = ("speaker", "person")


def names_of(values: Iterable[object]) -> frozenset[str]:
    """The names a memory answers to, from its ``speaker`` / ``person`` values: each
    whole (case-folded) and by its first word ("Caroline Smith" -> both)."""
    names: set[str] = set()
    for value in values:
        if isinstance(value, str) and value.strip():
            full = value.strip().lower()
            names.add(full)
            names.add(full.split()[0])
    return frozenset(names)


def record_names(record: MemoryRecord) -> frozenset[str]:
    return names_of(record.metadata.get(key) for key in ENTITY_KEYS)


def entity_boost(names: frozenset[str], query_names: set[str], boost: float) -> float:
    """``boost`` when the memory is about someone the query names, else 0."""
    return boost if boost > 0 and query_names and not names.isdisjoint(query_names) else 0.0
