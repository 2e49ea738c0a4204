"""Recall features that LoCoMo tuning earned: stopword-free keyword queries,
the entity boost and contextual conversation indexing."""

from __future__ import annotations

import numpy as np
import pytest

from memoryd.conversation import Turn, pieces
from memoryd.core import Memory
from memoryd.search.text import keyword_terms, names_in, word_count


def test_word_count_counts_words_and_each_cjk_character() -> None:
    """A turn's length (memoryd.search.turns) must not call a Chinese or Japanese
    sentence, written without spaces, one word."""
    assert word_count("Wow, that's great!") == 4
    assert word_count("我喜欢喝茶") == 5
    assert word_count("東京に行きました yesterday") == 9
    assert word_count("  \n\t ") == 0


def test_keyword_terms_drop_stopwords_unless_nothing_is_left() -> None:
    assert keyword_terms("How do we deploy the API?") == ["deploy", "api"]
    assert keyword_terms("who are we") == ["who", "are", "we"]
    assert names_in("What did Caroline research with Mel's help?") == {"caroline", "mel"}
    assert names_in("Where did James's dog and Chris’ cat go?") == {"james", "chris"}


def test_stopword_only_overlap_earns_no_keyword_score(memory: Memory) -> None:
    memory.add("We evaluate rerankers on Fridays", user_id="u")
    memory.add("Deploys go through ArgoCD", user_id="u")
    hits = {h.text: h for h in memory.search("how do we deploy?", user_id="u", top_k=5)}
    assert hits["Deploys go through ArgoCD"].parts.keyword == pytest.approx(1.0)
    assert "We evaluate rerankers on Fridays" not in hits or (
        hits["We evaluate rerankers on Fridays"].parts.keyword == 0.0
    )


def test_entity_boost_prefers_the_named_speakers_own_words(memory: Memory) -> None:
    memory.add(
        messages=[
            {
                "role": "user",
                "name": "Caroline",
                "content": "I researched adoption agencies all week.",
            },
            {
                "role": "user",
                "name": "Melanie",
                "content": "Wow Caroline, researching adoption is a big step!",
            },
        ],
        user_id="conv",
        infer=False,
        metadata={"session": "s1"},
    )
    top = memory.search("What did Caroline research?", user_id="conv", top_k=2, time_decay=False)
    assert top[0].text == "I researched adoption agencies all week."
    assert top[0].parts.entity == pytest.approx(memory.settings.search.entity_boost)
    assert top[1].parts.entity is None
    memory.settings.search.entity_boost = 0.0
    plain = memory.search("What did Caroline research?", user_id="conv", top_k=2, time_decay=False)
    assert all(h.parts.entity is None for h in plain)


def test_turns_keep_their_text_and_are_indexed_with_the_previous_turn(memory: Memory) -> None:
    events = memory.add(
        messages=[
            {"role": "user", "name": "Jon", "content": "Which trail did you hike on Saturday?"},
            {"role": "user", "name": "Gina", "content": "Yup, the whole loop, it took five hours!"},
        ],
        user_id="conv",
        infer=False,
        metadata={"session": "s1"},
    )
    ids = [e.id for e in events]
    second = memory.get(ids[1] or "")
    assert second.text == "Yup, the whole loop, it took five hours!"
    assert second.context is not None and "Which trail did you hike" in second.context
    assert second.metadata == {
        "speaker": "Gina",
        "session": "s1",
        "role": "user",
        "message": 1,
        "turn": 1,
    }
    # the answer turn is found by words only its question contains
    hits = memory.search("hike trail", user_id="conv", top_k=2, mode="keyword")
    assert ids[1] in [h.id for h in hits]


def test_contextual_vector_mixes_in_the_previous_turn(memory: Memory) -> None:
    turns = [Turn("A", "We adopted a puppy named Biscuit."), Turn("B", "That is wonderful news!")]
    kw = {
        "embed": memory.embed_texts,
        "count_tokens": memory.embedder.count_tokens,
        "max_tokens": memory.embedder.max_tokens,
    }
    records = pieces(turns, **kw)  # type: ignore[arg-type]
    own = memory.embed_texts(["A: We adopted a puppy named Biscuit.", "B: That is wonderful news!"])
    expected = own[1] + 0.5 * own[0]
    expected /= np.linalg.norm(expected)
    assert np.allclose(records[1].vector, expected, atol=1e-5)
    assert np.allclose(records[0].vector, own[0], atol=1e-5)
    appended = pieces([turns[1]], previous=turns[0], **kw)  # type: ignore[arg-type]
    assert np.allclose(appended[0].vector, records[1].vector, atol=1e-5)
