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

from memoryd.models import MemoryRecord
from memoryd.settings import SearchSettings

SECONDS_PER_DAY = 86_400.0


def recency_weight(age_days: float, half_life_days: float) -> float:
    """0.5 ** (age / half-life): 1.0 now, 0.5 after one half-life. Future dates count as now."""
    if half_life_days <= 0:
        return 1.0
    return float(0.5 ** (max(0.0, age_days) / half_life_days))


def age_days(record: MemoryRecord, now: datetime) -> float:
    when = record.event_at or record.created_at
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    if now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    return (now - when).total_seconds() / SECONDS_PER_DAY


def record_weight(record: MemoryRecord, now: datetime, settings: SearchSettings) -> float:
    if record.metadata.get("evergreen") is True:
        return 1.0
    return recency_weight(age_days(record, now), settings.decay_half_life_days)


def blend(relevance: float, weight: float, settings: SearchSettings) -> float:
    ws, wr = settings.decay_similarity_weight, settings.decay_recency_weight
    total = ws + wr
    if total <= 0:
        return relevance
    return (ws * relevance + wr * weight) / total
