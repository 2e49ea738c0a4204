"""Re-ranking conversation turns among the best candidates of a search.

A conversation turn is a memory with a place in its conversation
(``metadata.turn``: the messages path counts them across ``add(messages=...)``
calls of a session, a diary counts the turn chunks of its file). Among the best
candidates (``POOL_PER_HIT`` x ``top_k``, at least ``search.min_candidates``), what
a ranking by text similarity misses is scored, from the
:class:`~memoryd.models.RankFacts` the store's index holds (:func:`facts`: no
record is read):

* **neighbours** (``search.neighbour_boost``): an answer is often spread over
  adjacent turns (a question and its reply, a story told over three messages),
  so a turn is lifted by the boost x the best score among the turns within
  ``NEIGHBOUR_SPAN`` of it, in proportion to its own meaning
  (``search.neighbour_meaning_floor``: x min(1, vector / floor)): a window of code
  or tool output beside a matching turn shares no meaning with the query and is not
  part of the answer, yet a full lift put it above a short statement that is
  ("We now depend on rich too" for "Which libraries has the user added?");
* **what the turn says** (``search.short_turn_penalty``,
  ``search.question_turn_penalty``): chit-chat ("Wow, that's great!") and a
  question put to the other speaker match many queries in wording yet carry
  little to remember. A turn shorter than ``search.full_turn_words`` words loses
  up to the short-turn penalty, on a log scale (a 5-word turn ~54% of it, a
  20-word turn ~23%, a full turn nothing); a turn that ends in a question mark
  loses the question penalty. Length is a document prior in the IR sense
  (longer documents are likelier to be relevant); here it only ever lowers a
  turn, so facts, notes and API texts, which have no turn place, rank as before.
  An instruction or a preference ("Never push to main directly", "I prefer polars";
  :func:`memoryd.search.text.directs`) loses neither: on agent conversations those
  short turns are what the agent must remember (bench/dataset_agentchat.py);
* **keywords without meaning** (``search.long_turn_meaning_floor``): a turn longer than
  ``search.long_turn_words`` (a window of an explanation, code, tool output) shares
  words with most questions ("project", "test", "team") at cosine ~0; its keyword score
  counts only in proportion to min(1, vector / floor);
* **how the user wants it** (``search.directive_turn_boost``): a query asking how the
  user wants something done or what they would pick ("Should I use pandas here?") lifts
  the turns that are instructions or preferences, and every other turn loses its keyword
  score (:func:`topic_cut`): the query's words name the topic, which the work around it
  shares ("validation", "functions", "logs"), while the preference that answers it is in
  other words;
* **a time for a when-question** (``search.when_turn_boost``): a query that asks
  when something happened ("When did Caroline go to the support group?") lifts the
  turns that state a time ("I went yesterday", "last May", "in 2022"): the answer
  is in one of them, and a turn about the same thing that names no time is not it.

Measured on LoCoMo through the HTTP API (bench/README.md, "turn prior").
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

from memoryd.models import RankFacts
from memoryd.search.hybrid import meaning_share
from memoryd.search.text import directs, states_time, word_count
from memoryd.settings import SearchSettings

if TYPE_CHECKING:
    from memoryd.search.hybrid import Candidate

NEIGHBOUR_SPAN = 2  # turns either side that count as a hit's neighbours
POOL_PER_HIT = 4  # candidates re-ranked per hit asked for, to find neighbours among

#: (final score, candidate order, decay weight, the candidate)
Ranked = tuple[float, int, float | None, "Candidate"]


def thread_key(
    user_id: str | None,
    agent_id: str | None,
    run_id: str | None,
    session: Any,
    source_path: str | None,
) -> str:
    """The conversation a turn belongs to, as one string: its scope, its
    ``metadata.session`` (any JSON) and the file it was read from (a diary's turns
    are told apart by their file). Canonical JSON, so every store says the same."""
    where = [user_id, agent_id, run_id, session, source_path or None]
    return json.dumps(where, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def facts(
    metadata_turn: Any,
    thread: tuple[str | None, str | None, str | None, Any, str | None],
    text: str | None,
) -> dict[str, Any]:
    """The :class:`RankFacts` fields of a memory whose ``metadata.turn`` is
    ``metadata_turn`` (a turn only when it is an integer), ``thread`` the arguments of
    :func:`thread_key`, ``text`` what it says: empty for a memory that is not a turn."""
    if not isinstance(metadata_turn, int) or isinstance(metadata_turn, bool) or text is None:
        return {}
    return {
        "turn": (thread_key(*thread), metadata_turn),
        "words": word_count(text),
        "asks": text.rstrip().endswith(("?", "？")),
        "dated": states_time(text),
        "directs": directs(text),
    }


def active(settings: SearchSettings) -> bool:
    """Whether any turn re-ranking is switched on."""
    return (
        settings.neighbour_boost > 0
        or settings.short_turn_penalty > 0
        or settings.question_turn_penalty > 0
        or settings.when_turn_boost > 0
        or settings.directive_turn_boost > 0
        or settings.long_turn_meaning_floor > 0
    )


def pool_size(top_k: int, settings: SearchSettings) -> int:
    """How many of the best candidates are re-ranked: as many as each side fetched for a
    small ``top_k``, so the first hits of a short search are those of a longer one."""
    return max(top_k * POOL_PER_HIT, settings.min_candidates)


def prior(words: int, asks: bool, settings: SearchSettings, directs: bool = False) -> float:
    """What a turn of ``words`` words loses for saying little (<= 0): short, or a
    question (``asks``). An instruction or a preference (``directs``) loses nothing:
    "Never push to main directly." is short and says what matters most."""
    if directs:
        return 0.0
    full = max(2, settings.full_turn_words)
    short = 0.0
    if settings.short_turn_penalty:
        short = 1.0 - min(1.0, math.log1p(words) / math.log1p(full))
    return -(settings.short_turn_penalty * short + (settings.question_turn_penalty if asks else 0))


def meaning_cut(c: Candidate, words: int, settings: SearchSettings) -> float:
    """What a long turn's fused score loses (<= 0) when its keyword match has little
    meaning beside it: its keyword score counts min(1, vector / floor) of itself."""
    floor = settings.long_turn_meaning_floor
    if floor <= 0 or words <= settings.long_turn_words or settings.fusion == "rrf":
        return 0.0
    if settings.keyword_meaning_floor > 0:  # fusion scaled every keyword score already
        return 0.0
    wv, wk = settings.vector_weight, settings.keyword_weight
    lost = c.keyword * (1.0 - meaning_share(c.vector, floor))
    return -round(wk * lost / ((wv + wk) or 1.0), 6)


def topic_cut(c: Candidate, settings: SearchSettings) -> float:
    """What a turn that is neither an instruction nor a preference loses (<= 0) when the
    query asks how the user wants something done: its keyword part of the fused score.
    Such a query names a topic ("How should I structure the validation logic?") that the
    work around it shares word for word; the answer says what the user wants in other words
    ("I like guard clauses and early returns"), so there a turn ranks by meaning alone."""
    if settings.directive_turn_boost <= 0 or settings.fusion == "rrf":
        return 0.0
    wv, wk = settings.vector_weight, settings.keyword_weight
    return -round(wk * c.keyword / ((wv + wk) or 1.0), 6)


def rerank(
    pool: list[Ranked],
    known: dict[str, RankFacts],
    settings: SearchSettings,
    when_question: bool = False,
    how_wanted: bool = False,
) -> list[Ranked]:
    """``pool`` (best first) with its turns lifted by their neighbours and lowered by
    their prior (and, for a ``when_question``, lifted when they state a time; for a
    question asking ``how_wanted``, lifted when they are an instruction or preference),
    best first again (ties keep the candidates' order)."""
    best: dict[tuple[str, int], float] = {}
    for final, _, _, c in pool:
        place = known[c.id].turn
        if place is not None:
            best[place] = max(best.get(place, 0.0), final)
    if not best:
        return pool
    span = [d for d in range(-NEIGHBOUR_SPAN, NEIGHBOUR_SPAN + 1) if d]
    out: list[tuple[float, Ranked]] = []  # (the unclipped score, what is returned)
    for final, order, weight, c in pool:
        raw = final
        f = known[c.id]
        if f.turn is not None:
            update: dict[str, float] = {}
            thread, turn = f.turn
            near = max(best.get((thread, turn + d), 0.0) for d in span)
            if near > 0 and settings.neighbour_boost > 0:
                lift = settings.neighbour_boost * near
                lift *= meaning_share(c.vector, settings.neighbour_meaning_floor)
                if lift > 0:
                    update["neighbours"] = round(lift, 6)
            said = prior(f.words, f.asks, settings, f.directs)
            if said < 0:
                update["turn"] = round(said, 6)
            if when_question and f.dated and settings.when_turn_boost > 0:
                update["when"] = settings.when_turn_boost
            if how_wanted and f.directs and settings.directive_turn_boost > 0:
                update["directs"] = settings.directive_turn_boost
            if how_wanted and not f.directs:
                cut = topic_cut(c, settings)
            else:
                cut = meaning_cut(c, f.words, settings)
            if cut < 0:
                update["meaning"] = cut
            if update:
                c = c.adjusted(c.fused, **update)
                raw = final + sum(update.values())
                final = min(1.0, max(0.0, raw))
        out.append((raw, (final, order, weight, c)))
    # ordered by the unclipped score: two turns lifted past 1.0 keep their difference
    out.sort(key=lambda t: (-t[0], t[1][1]))
    return [r for _, r in out]
