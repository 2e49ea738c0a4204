"""Turn re-ranking among a search's best candidates (``memoryd.search.turns.rerank``):
rules that hold on casual chats and on a person's conversations with an agent."""

from __future__ import annotations

import pytest

from memoryd.models import RankFacts
from memoryd.search.hybrid import Candidate
from memoryd.search.turns import rerank
from memoryd.settings import SearchSettings


def test_a_long_turn_keeps_its_keyword_match_only_beside_meaning() -> None:
    """After fusion, among a search's best candidates: a turn longer than
    ``long_turn_words`` (a window of an assistant's explanation) loses the part of its
    keyword score its meaning does not back; a short turn and a fact keep theirs."""
    s = SearchSettings(
        vector_weight=0.6,
        keyword_weight=0.4,
        long_turn_words=60,
        long_turn_meaning_floor=0.4,
        neighbour_boost=0.0,
        short_turn_penalty=0.0,
        question_turn_penalty=0.0,
    )
    window = Candidate("window", vector=0.1, keyword=1.0, fused=0.6 * 0.1 + 0.4 * 1.0)
    said = Candidate("said", vector=0.35, keyword=0.5, fused=0.6 * 0.35 + 0.4 * 0.5)
    fact = Candidate("fact", vector=0.1, keyword=1.0, fused=0.6 * 0.1 + 0.4 * 1.0)
    known = {
        "window": RankFacts(when=0.0, turn=("chat", 1), words=180),
        "said": RankFacts(when=0.0, turn=("chat", 9), words=7),
        "fact": RankFacts(when=0.0),  # not a turn: never re-ranked
    }
    pool = [(c.fused, n, None, c) for n, c in enumerate([window, fact, said])]
    out = {t[3].id: t for t in rerank(pool, known, s)}
    # a quarter of the floor's meaning: three quarters of its keyword part go
    assert out["window"][3].extra["meaning"] == pytest.approx(-0.4 * 0.75)
    assert out["window"][0] == pytest.approx(window.fused - 0.3)
    assert "meaning" not in out["said"][3].extra and out["said"][0] == pytest.approx(said.fused)
    assert out["fact"][0] == pytest.approx(fact.fused)
    assert [t[3].id for t in rerank(pool, known, s)] == ["fact", "said", "window"]
    # a window with meaning enough keeps everything; with the floor off nothing changes
    meant = Candidate("window", vector=0.5, keyword=1.0, fused=0.7)
    assert rerank([(0.7, 0, None, meant)], known, s)[0][0] == pytest.approx(0.7)
    off = s.model_copy(update={"long_turn_meaning_floor": 0.0})
    assert [t[3].id for t in rerank(pool, known, off)] == ["window", "fact", "said"]


def test_turns_lifted_past_the_top_keep_their_order() -> None:
    """Two turns whose boosts take both past 1.0 are returned at 1.0 but ordered by what
    they scored: the one with the larger lift is not left behind by candidate order."""
    s = SearchSettings(
        neighbour_boost=0.1,
        short_turn_penalty=0.0,
        question_turn_penalty=0.0,
        directive_turn_boost=0.3,
        long_turn_meaning_floor=0.0,
    )
    request = Candidate("request", vector=0.9, keyword=1.0, fused=0.95)
    reply = Candidate("reply", vector=0.5, keyword=0.5, fused=0.5)
    preference = Candidate("preference", vector=0.9, keyword=0.9, fused=0.93)
    known = {
        "request": RankFacts(when=0.0, turn=("chat", 1), words=6),  # its reply lifts it 0.05
        "reply": RankFacts(when=0.0, turn=("chat", 2), words=30),
        "preference": RankFacts(when=0.0, turn=("chat", 9), words=9, directs=True),  # 0.3
    }
    pool = [(1.0, 0, None, request), (1.0, 1, None, preference), (0.5, 2, None, reply)]
    out = rerank(pool, known, s, how_wanted=True)
    assert [t[3].id for t in out] == ["preference", "request", "reply"]
    assert out[0][0] == 1.0 and out[1][0] == 1.0  # scores stay within [0, 1]
