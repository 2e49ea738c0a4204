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
