"""Time decay (seed 000): newer memories outrank older ones of equal relevance.

    score = w_sim * relevance + w_recency * 0.5 ** (age_days / half_life_days)

with the weights normalised to sum to 1 (defaults 0.7 / 0.3, half-life 30
days), so a score stays in [0, 1]. ``relevance`` is the hybrid score before
decay; it is reported as ``original_score``. Age runs from when the
remembered thing happened (``event_at``, e.g. a diary's date) or else from
when it was stored, to ``Memory.clock()``. A record whose metadata says
``"evergreen": true`` (MEMORY.md, undated notes) never decays: weight 1.0.
"""

from __future__ import annotations

from datetime import UTC, datetime

from memoryd.models import MemoryRecord, RankFacts
from memoryd.search import turns
from memoryd.search.entities import record_names
from memoryd.settings import SearchSettings

SECONDS_PER_DAY = 86_400.0


def recency_weight(age_days: float, half_life_days: float) -> float:
    """0.5 ** (age / half-life): 1.0 now, 0.5 after one half-life. Future dates count as now."""
    if half_life_days <= 0:
        return 1.0
    return float(0.5 ** (max(0.0, age_days) / half_life_days))


def _epoch(when: datetime) -> float:
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()


def facts_of(record: MemoryRecord) -> RankFacts:
    """A record's :class:`RankFacts` (what a store's index answers without the record)."""
    r = record
    path = r.source.path if r.source else None
    thread = (r.user_id, r.agent_id, r.run_id, r.metadata.get("session"), path)
    return RankFacts(
        when=_epoch(r.event_at or r.created_at),
        evergreen=r.metadata.get("evergreen") is True,
        names=record_names(r),
        **turns.facts(r.metadata.get("turn"), thread, r.text),
    )


def facts_weight(facts: RankFacts, now: datetime, settings: SearchSettings) -> float:
    """The recency weight: 1.0 for an evergreen memory, else halved every half-life."""
    if facts.evergreen:
        return 1.0
    age = (_epoch(now) - facts.when) / SECONDS_PER_DAY
    return recency_weight(age, settings.decay_half_life_days)


def record_weight(record: MemoryRecord, now: datetime, settings: SearchSettings) -> float:
    return facts_weight(facts_of(record), now, settings)


def blend(relevance: float, weight: float, settings: SearchSettings) -> float:
    ws, wr = settings.decay_similarity_weight, settings.decay_recency_weight
    total = ws + wr
    if total <= 0:
        return relevance
    return (ws * relevance + wr * weight) / total
