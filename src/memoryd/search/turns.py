"""Re-ranking conversation turns among the best candidates of a search.

A conversation turn is a memory with a place in its conversation
(``metadata.turn``: the messages path counts them across ``add(messages=...)``
calls of a session, a diary counts the turn chunks of its file). Among the best
candidates (``POOL_PER_HIT`` x ``top_k``, their conversation columns read with
``Store.turn_rows``, not whole records), two things a ranking by text similarity
misses are scored:

* **neighbours** (``search.neighbour_boost``): an answer is often spread over
  adjacent turns (a question and its reply, a story told over three messages),
  so a turn is lifted by the boost x the best score among the turns within
  ``NEIGHBOUR_SPAN`` of it;
* **what the turn says** (``search.short_turn_penalty``,
  ``search.question_turn_penalty``): chit-chat ("Wow, that's great!") and a
  question put to the other speaker match many queries in wording yet carry
  little to remember. A turn shorter than ``search.full_turn_words`` words loses
  up to the short-turn penalty, on a log scale (a 5-word turn ~54% of it, a
  20-word turn ~23%, a full turn nothing); a turn that ends in a question mark
  loses the question penalty. Length is a document prior in the IR sense
  (longer documents are likelier to be relevant); here it only ever lowers a
  turn, so facts, notes and API texts, which have no turn place, rank as before.

Measured on LoCoMo through the HTTP API (bench/README.md, "turn prior").
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

from memoryd.models import ScoreParts, TurnRow
from memoryd.search.text import word_count
from memoryd.settings import SearchSettings

NEIGHBOUR_SPAN = 2  # turns either side that count as a hit's neighbours
POOL_PER_HIT = 4  # candidates read per hit asked for, to find neighbours among

#: (final score, candidate order, decay weight, score parts, memory id)
Ranked = tuple[float, int, float | None, ScoreParts, str]
Place = tuple[tuple[Any, ...], int]


def active(settings: SearchSettings) -> bool:
    """Whether any turn re-ranking is switched on."""
    return (
        settings.neighbour_boost > 0
        or settings.short_turn_penalty > 0
        or settings.question_turn_penalty > 0
    )


def pool_size(top_k: int) -> int:
    return max(top_k * POOL_PER_HIT, 20)


def place_of(row: TurnRow) -> Place | None:
    """The conversation a turn belongs to and its position there; ``None`` if not a turn."""
    turn = row.metadata.get("turn")
    if not isinstance(turn, int) or isinstance(turn, bool):
        return None
    session = row.metadata.get("session")  # any JSON: compared as its text
    # a diary's turns are told apart by their file
    return (row.user_id, row.agent_id, row.run_id, str(session), row.source_path), turn


@lru_cache(maxsize=65_536)
def _length(text: str) -> float:
    """``log(1 + words)``: the same turns come back as candidates search after search."""
    return math.log1p(word_count(text))


def prior(text: str, settings: SearchSettings) -> float:
    """What a turn loses for saying little (<= 0): short, or a question."""
    full = max(2, settings.full_turn_words)
    short = 1.0 - min(1.0, _length(text) / math.log1p(full)) if settings.short_turn_penalty else 0.0
    asks = text.rstrip().endswith(("?", "？"))
    return -(settings.short_turn_penalty * short + (settings.question_turn_penalty if asks else 0))


def rerank(pool: list[Ranked], rows: dict[str, TurnRow], settings: SearchSettings) -> list[Ranked]:
    """``pool`` (best first) with its turns lifted by their neighbours and lowered by
    their prior, best first again (ties keep the candidates' order)."""
    place: dict[str, Place] = {}
    best: dict[Place, float] = {}
    for final, _, _, _, mid in pool:
        row = rows.get(mid)
        where = place_of(row) if row is not None else None
        if where is not None:
            place[mid] = where
            best[where] = max(best.get(where, 0.0), final)
    if not place:
        return pool
    out: list[Ranked] = []
    for final, order, weight, parts, mid in pool:
        where = place.get(mid)
        if where is not None:
            update: dict[str, float] = {}
            thread, turn = where
            near = max(
                (
                    best.get((thread, turn + d), 0.0)
                    for d in range(-NEIGHBOUR_SPAN, NEIGHBOUR_SPAN + 1)
                    if d
                ),
                default=0.0,
            )
            if near > 0 and settings.neighbour_boost > 0:
                update["neighbours"] = round(settings.neighbour_boost * near, 6)
            said = prior(rows[mid].text, settings)
            if said < 0:
                update["turn"] = round(said, 6)
            if update:
                parts = ScoreParts(**{**parts.__dict__, **update})  # 4 us, model_copy 5
                final = min(1.0, max(0.0, final + sum(update.values())))
        out.append((final, order, weight, parts, mid))
    out.sort(key=lambda t: (-t[0], t[1]))
    return out
