"""How the two sides of a hybrid search are fused (``memoryd.search.hybrid.fuse``)."""

from __future__ import annotations

import pytest

from memoryd.search.hybrid import fuse
from memoryd.settings import SearchSettings


def test_a_keyword_match_without_meaning_counts_for_little() -> None:
    s = SearchSettings(vector_weight=0.7, keyword_weight=0.3, keyword_meaning_floor=0.2)
    # a window of code that shares "project" and "team" with the question, cosine ~0,
    # against a short statement that means what was asked
    fused = {c.id: c for c in fuse({"code": 0.0, "said": 0.35}, {"code": 1.0, "said": 0.4}, s)}
    assert fused["code"].fused == pytest.approx(0.0)
    assert fused["said"].fused == pytest.approx(0.7 * 0.35 + 0.3 * 0.4)
    # half the floor's meaning: half the keyword score counts; the parts shown are unscaled
    half = fuse({"x": 0.1}, {"x": 1.0}, s)[0]
    assert half.fused == pytest.approx(0.7 * 0.1 + 0.3 * 0.5) and half.keyword == 1.0


def test_without_the_floor_and_outside_hybrid_keyword_scores_count_in_full() -> None:
    off = SearchSettings(vector_weight=0.7, keyword_weight=0.3, keyword_meaning_floor=0.0)
    assert fuse({"code": 0.0}, {"code": 1.0}, off)[0].fused == pytest.approx(0.3)
    on = SearchSettings(vector_weight=0.7, keyword_weight=0.3, keyword_meaning_floor=0.2)
    # keyword-only search is BM25 alone, whatever the floor
    assert fuse({}, {"code": 1.0}, on, mode="keyword")[0].fused == pytest.approx(1.0)


def test_a_long_turn_keeps_its_keyword_match_only_beside_meaning() -> None:
    """After fusion, among a search's best candidates: a turn longer than
    ``long_turn_words`` (a window of an assistant's explanation) loses the part of its
    keyword score its meaning does not back; a short turn and a fact keep theirs."""
    from memoryd.models import RankFacts
    from memoryd.search.hybrid import Candidate
    from memoryd.search.turns import rerank

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
