"""Turn re-ranking among a search's best candidates (``memoryd.search.turns.rerank``):
rules that hold on casual chats and on a person's conversations with an agent."""

from __future__ import annotations

import pytest

from memoryd.models import RankFacts
from memoryd.search.hybrid import Candidate
from memoryd.search.turns import rerank
from memoryd.settings import SearchSettings


def _pool(*candidates: Candidate) -> list[tuple[float, int, None, Candidate]]:
    """A search's best candidates, in order, as the reranker takes them."""
    return [(c.fused, n, None, c) for n, c in enumerate(candidates)]


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
    pool = _pool(window, fact, said)
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


def test_a_turn_is_lifted_by_its_neighbours_only_beside_meaning_of_its_own() -> None:
    """A window of code next to the turn that matches (cosine ~0 to the query) is not
    part of the answer: it gets no neighbour lift, so a short statement that answers in
    other words ("We now depend on rich too") stays above it; a turn with half the
    floor's meaning gets half the lift, and with the floor off every neighbour gets all."""
    s = SearchSettings(
        neighbour_boost=0.2,
        neighbour_meaning_floor=0.25,
        short_turn_penalty=0.0,
        question_turn_penalty=0.0,
        long_turn_meaning_floor=0.0,
    )
    answer = Candidate("answer", vector=0.7, keyword=0.9, fused=0.78)
    window = Candidate("window", vector=0.0, keyword=0.375, fused=0.15)
    reply = Candidate("reply", vector=0.125, keyword=0.0, fused=0.075)
    statement = Candidate("statement", vector=0.3, keyword=0.0, fused=0.18)
    known = {
        "answer": RankFacts(when=0.0, turn=("chat", 1), words=30),
        "window": RankFacts(when=0.0, turn=("chat", 2), words=40),
        "reply": RankFacts(when=0.0, turn=("chat", 3), words=20),
        "statement": RankFacts(when=0.0, turn=("chat", 9), words=8),  # no turn near it
    }
    pool = _pool(answer, statement, window, reply)
    out = {t[3].id: t for t in rerank(pool, known, s)}
    assert "neighbours" not in out["window"][3].extra
    assert out["window"][0] == pytest.approx(0.15)
    assert out["reply"][3].extra["neighbours"] == pytest.approx(0.2 * 0.78 * 0.5)
    assert [t[3].id for t in rerank(pool, known, s)] == ["answer", "statement", "reply", "window"]
    off = s.model_copy(update={"neighbour_meaning_floor": 0.0})
    lifted = {t[3].id: t for t in rerank(pool, known, off)}
    assert lifted["window"][0] == pytest.approx(0.15 + 0.2 * 0.78)
    assert [t[3].id for t in rerank(pool, known, off)][:3] == ["answer", "window", "reply"]


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
    # matched by meaning alone: a how-question takes the keyword part of a turn that is
    # not a directive (topic_cut), which is not what this test is about
    request = Candidate("request", vector=0.95, keyword=0.0, fused=0.95)
    reply = Candidate("reply", vector=0.5, keyword=0.0, fused=0.5)
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


def test_a_how_question_ranks_turns_that_are_not_directives_by_meaning_alone() -> None:
    """A question about how the user wants something done names a topic the work shares
    word for word ("validation"): there, a turn that is not an instruction or preference
    loses its keyword part, long or short, and the preference said in other words comes
    first; any other question leaves both as fused."""
    s = SearchSettings(
        vector_weight=0.6,
        keyword_weight=0.4,
        neighbour_boost=0.0,
        short_turn_penalty=0.0,
        question_turn_penalty=0.0,
        long_turn_meaning_floor=0.25,
        directive_turn_boost=0.15,
    )
    window = Candidate("window", vector=0.24, keyword=0.9, fused=0.6 * 0.24 + 0.4 * 0.9)
    request = Candidate("request", vector=0.05, keyword=1.0, fused=0.6 * 0.05 + 0.4 * 1.0)
    liked = Candidate("liked", vector=0.3, keyword=0.2, fused=0.6 * 0.3 + 0.4 * 0.2)
    known = {
        "window": RankFacts(when=0.0, turn=("chat", 2), words=180),  # an explanation
        "request": RankFacts(when=0.0, turn=("chat", 5), words=9),  # "next: add validation"
        "liked": RankFacts(when=0.0, turn=("chat", 9), words=10, directs=True),
    }
    pool = _pool(window, request, liked)
    out = {t[3].id: t for t in rerank(pool, known, s, how_wanted=True)}
    assert out["window"][3].extra["meaning"] == pytest.approx(-0.4 * 0.9)
    assert out["window"][0] == pytest.approx(0.6 * 0.24)
    assert out["request"][0] == pytest.approx(0.6 * 0.05)
    assert "meaning" not in out["liked"][3].extra
    assert out["liked"][0] == pytest.approx(liked.fused + 0.15)
    assert rerank(pool, known, s, how_wanted=True)[0][3].id == "liked"
    # another question: the window keeps its keywords (it has meaning enough for the floor
    # but for 0.01), the short request keeps all of its score
    other = {t[3].id: t for t in rerank(pool, known, s)}
    assert other["request"][0] == pytest.approx(request.fused)
    assert other["window"][0] == pytest.approx(window.fused - 0.4 * 0.9 * (1 - 0.24 / 0.25))
    assert rerank(pool, known, s)[0][3].id == "window"
