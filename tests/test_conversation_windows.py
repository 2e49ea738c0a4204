"""Long messages: the windows of a whole conversation go through the model together,
and what is stored is what embedding each window alone would store."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from tokenizers import Tokenizer

from memoryd import conversation
from memoryd.core import Memory
from memoryd.embed import Embedder
from memoryd.embed.onnx import COUNT_CACHE_CHARS, DEFAULT_TOKENIZER, OnnxEmbedder


def _technical(n: int, name: str) -> str:
    """An assistant's long message: code, a traceback and tool output, ``n`` blocks."""
    blocks = []
    for i in range(n):
        blocks.append(
            f"def {name}_{i}(rows: list[dict[str, int]], limit: int = {i * 7}) -> int:\n"
            f'    """Sum the {name} column of rows {i}, at most {{limit}} of them."""\n'
            f"    return sum(r['{name}'] for r in rows[:limit])  # see issue #{100 + i}\n"
            f'Traceback (most recent call last):\n  File "app/{name}.py", line {i + 3}, '
            f"in {name}_{i}\nKeyError: '{name}_{i}'\n"
            f"$ pytest -q tests/test_{name}.py::test_{i} → 1 failed, {i} passed in 0.{i}3s"
        )
    return "\n".join(blocks)


MESSAGES = [
    {"role": "user", "name": "Dana", "content": "Why does the billing import fail?"},
    {"role": "assistant", "content": _technical(14, "invoice")},
    {"role": "user", "name": "Dana", "content": "And the refunds job?"},
    {"role": "assistant", "content": _technical(11, "refund")},
]


def _uncached_count() -> Callable[[str], int]:
    """Token counts straight from a tokenizer of the test's own (no cache, no truncation)."""
    tokenizer = Tokenizer.from_file(str(DEFAULT_TOKENIZER))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return lambda text: len(tokenizer.encode(text, add_special_tokens=False).ids)


def test_batched_windows_store_the_texts_and_vectors_of_each_window_alone(
    memory: Memory,
) -> None:
    embedder = memory.embedder
    assert isinstance(embedder, OnnxEmbedder)
    runs = embedder.runs
    events = memory.add(messages=MESSAGES, user_id="u", infer=False, metadata={"session": "s"})
    batched_runs = embedder.runs - runs
    stored = [memory.get(e.id or "") for e in events]

    # the reference: windows cut with uncached counts, each embedded in a model run of its own
    def one_at_a_time(texts: Sequence[str]) -> np.ndarray:
        return np.stack([embedder.embed([t])[0] for t in texts])

    turns = conversation.turns_from_messages(MESSAGES, lambda text, _name: text)
    alone = conversation.pieces(
        turns,
        embed=one_at_a_time,
        count_tokens=_uncached_count(),
        max_tokens=embedder.max_tokens,
    )
    assert sum(p.part is not None for p in alone) >= 5  # both long messages were windowed
    assert batched_runs < len(alone)  # ... and their windows shared model runs
    assert [r.text for r in stored] == [p.text for p in alone]
    assert [r.context for r in stored] == [p.context for p in alone]
    assert [r.metadata.get("piece") for r in stored] == [
        list(p.part) if p.part else None for p in alone
    ]
    assert [r.metadata["message"] for r in stored] == [p.message for p in alone]
    for record, piece in zip(stored, alone, strict=True):
        vector = memory.store.get_embedding(record.id)
        assert vector is not None
        np.testing.assert_allclose(vector, piece.vector, atol=1e-5)


def test_remembered_token_counts_are_the_tokenizers(embedder: Embedder) -> None:
    """Short texts' counts are remembered (a long message is cut word by word); asked
    again, and for long texts, the counts are still the tokenizer's own."""
    count = _uncached_count()
    words = ["def", "rows[:limit])", "KeyError:", "naïve", "→", "x" * COUNT_CACHE_CHARS]
    long = " ".join(words * 20)
    for text in [*words, *words, long, "", "a" * (COUNT_CACHE_CHARS + 1)]:
        assert embedder.count_tokens(text) == count(text), text
