"""The shared pool: knowledge every agent of a user finds.

The seed copied each ``experience`` memory to a second user (``shared``) and
searched that user too. Copies go stale when the original is updated or
deleted, appear twice, and leak across users. Here nothing is copied: a
search scoped to an agent also runs over the *same user's* memories in the
shared categories, from any agent, with every other filter unchanged (tier,
run, dates, origin). The two candidate lists are merged by id, so a memory
is never returned twice.
"""

from __future__ import annotations

from collections.abc import Collection

from memoryd.models import Filters
from memoryd.search.hybrid import Candidate


def pool_filters(filters: Filters, shared_categories: Collection[str]) -> Filters | None:
    """The filters of the pool search for ``filters``, or ``None`` when there is no pool."""
    if filters.agent_id is None or filters.user_id is None or not shared_categories:
        return None  # without an agent filter every agent is searched already
    categories = [c for c in shared_categories if not filters.categories or c in filters.categories]
    if not categories:
        return None
    return filters.model_copy(update={"agent_id": None, "categories": categories})


def merge(*lists: list[Candidate]) -> list[Candidate]:
    """One ranked list; a candidate found twice keeps its better score."""
    best: dict[str, Candidate] = {}
    for candidates in lists:
        for c in candidates:
            if c.id not in best or c.fused > best[c.id].fused:
                best[c.id] = c
    return sorted(best.values(), key=lambda c: -c.fused)
