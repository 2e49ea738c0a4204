"""The Memory object: behaviour a caller relies on, on the real model and store."""

from __future__ import annotations

from pathlib import Path

import pytest

from memoryd import (
    InvalidInputError,
    LimitExceededError,
    Memory,
    ModelMismatchError,
    NotFoundError,
    Settings,
    StoreError,
)
from memoryd.embed import Embedder
from memoryd.models import Event, Filters


def test_add_then_search_finds_it_with_score_parts(memory: Memory) -> None:
    events = memory.add("I prefer dark mode in every editor", user_id="alice")
    assert [e.event for e in events] == [Event.ADD]
    memory.add("The staging database runs on port 5433", user_id="alice")
    hits = memory.search("theme preference", user_id="alice")
    assert hits[0].id == events[0].id
    parts = hits[0].parts
    assert 0 < parts.vector <= 1 and 0 <= parts.keyword <= 1
    s = memory.settings.search  # fused by the default weights (0.6 / 0.4)
    fused = s.vector_weight * parts.vector + s.keyword_weight * parts.keyword
    assert hits[0].original_score == pytest.approx(fused)
    # just written, so time decay's recency weight is 1.0: 0.7 * relevance + 0.3
    assert parts.decay == pytest.approx(1.0)
    assert hits[0].score == pytest.approx(0.7 * hits[0].original_score + 0.3)
    assert memory.search("theme preference", user_id="bob") == []


def test_hybrid_beats_each_side_on_an_identifier_and_a_paraphrase(memory: Memory) -> None:
    memory.add("Deploy ticket OPS-4471 is blocked on the firewall change", user_id="u")
    memory.add("The user enjoys hiking in the mountains on weekends", user_id="u")
    memory.add("Lunch is usually at noon", user_id="u")
    assert memory.search("OPS-4471", user_id="u", top_k=1)[0].text.startswith("Deploy ticket")
    top = memory.search("outdoor activities they like", user_id="u", top_k=1)[0]
    assert "hiking" in top.text and top.parts.keyword == 0.0


def test_identical_text_in_scope_is_not_stored_twice(memory: Memory) -> None:
    first = memory.add("Uses uv for Python packaging", user_id="alice")[0]
    again = memory.add("Uses uv for Python packaging", user_id="alice")[0]
    assert again.event == Event.NONE and again.id == first.id
    other = memory.add("Uses uv for Python packaging", user_id="bob")[0]
    assert other.event == Event.ADD
    assert memory.store.count(Filters()) == 2


def test_messages_become_one_memory_each_with_role(memory: Memory) -> None:
    events = memory.add(
        messages=[
            {"role": "user", "content": "I live in Lisbon"},
            {"role": "assistant", "content": "Noted: Lisbon."},
            {"role": "user", "content": "   "},
        ],
        user_id="alice",
    )
    assert len(events) == 2
    roles = {memory.get(e.id).metadata["role"] for e in events if e.id}
    assert roles == {"user", "assistant"}


def test_update_history_delete_restore(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    mid = memory.add("Team standup at 9:30", user_id="alice", metadata={"category": "project"})[
        0
    ].id
    assert mid is not None
    clock.advance(hours=1)
    memory.update(
        mid, "Team standup moved to 10:00", user_id="alice", actor="alice", reason="moved"
    )
    assert (
        memory.search("when is standup", user_id="alice")[0].text == "Team standup moved to 10:00"
    )
    memory.delete(mid, user_id="alice")
    assert memory.search("standup", user_id="alice") == []
    with pytest.raises(NotFoundError):
        memory.get(mid)
    memory.restore(mid, user_id="alice")
    assert memory.get(mid).text == "Team standup moved to 10:00"
    events = memory.history(mid)
    assert [e.event for e in events] == [Event.ADD, Event.UPDATE, Event.DELETE, Event.RESTORE]
    assert events[1].old_text == "Team standup at 9:30"


def test_scoped_get_does_not_leak(memory: Memory) -> None:
    mid = memory.add("alice's secret plan", user_id="alice")[0].id
    assert mid is not None
    with pytest.raises(NotFoundError):
        memory.get(mid, user_id="bob")
    with pytest.raises(NotFoundError):
        memory.update(mid, "hijacked", user_id="bob")
    with pytest.raises(NotFoundError):
        memory.history(mid, user_id="bob")


def test_reset_wipes_only_its_scope(memory: Memory) -> None:
    memory.add("alice one", user_id="alice", agent_id="dev")
    memory.add("alice two", user_id="alice", agent_id="ops")
    memory.add("bob one", user_id="bob", agent_id="dev")
    assert memory.reset(user_id="alice", agent_id="dev") == 1
    assert {r.text for r in memory.list()} == {"alice two", "bob one"}
    with pytest.raises(InvalidInputError):
        memory.reset(user_id="")


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"text": "", "user_id": "a"}, InvalidInputError),
        ({"text": "   \n\t", "user_id": "a"}, InvalidInputError),
        ({"text": "x" * 20_001, "user_id": "a"}, LimitExceededError),
        ({"text": "ok", "user_id": ""}, InvalidInputError),
        ({"text": "ok", "user_id": "../etc"}, InvalidInputError),
        ({"text": "ok", "user_id": "a/b"}, InvalidInputError),
        ({"text": "ok", "user_id": "a\x07b"}, InvalidInputError),
        ({"text": "ok", "user_id": "a", "agent_id": "a b"}, InvalidInputError),
        (
            {
                "text": "ok",
                "user_id": "a",
                "metadata": {"d": {"d": {"d": {"d": {"d": {"d": {"d": {"d": 1}}}}}}}},
            },
            LimitExceededError,
        ),
        ({"text": "ok", "user_id": "a", "metadata": {"big": "x" * 20_000}}, LimitExceededError),
        ({"text": "bad \udc80 surrogate", "user_id": "a"}, InvalidInputError),
    ],
)
def test_bad_input_is_refused_and_stores_nothing(memory: Memory, kwargs: dict, error: type) -> None:
    with pytest.raises(error) as info:
        memory.add(**kwargs)
    assert info.value.hint  # every error says what to do
    assert memory.store.count(Filters(states=[])) == 0
    assert memory.store.vector_search(memory.embed_query("ok"), Filters(states=[]), 5) == []


@pytest.mark.parametrize("top_k", [0, 101, -1])
def test_top_k_out_of_range(memory: Memory, top_k: int) -> None:
    with pytest.raises(InvalidInputError, match="top_k"):
        memory.search("x", user_id="a", top_k=top_k)


def test_unknown_id(memory: Memory) -> None:
    with pytest.raises(NotFoundError):
        memory.get("does-not-exist")
    with pytest.raises(NotFoundError):
        memory.delete("does-not-exist")


def test_nul_is_dropped_not_stored(memory: Memory) -> None:
    mid = memory.add("null\x00byte", user_id="a")[0].id
    assert memory.get(mid).text == "nullbyte"  # type: ignore[arg-type]


def test_embedding_cache_means_no_second_embed(memory: Memory, embedder: Embedder) -> None:
    memory.add("a sentence embedded once", user_id="a")
    before = embedder.calls  # type: ignore[attr-defined]
    memory.add("a sentence embedded once", user_id="b")
    memory.reindex()
    assert embedder.calls == before  # type: ignore[attr-defined]


def test_long_text_is_embedded_window_by_window(memory: Memory, embedder: Embedder) -> None:
    filler = " ".join(f"word{i}" for i in range(600))
    text = filler + " The launch code phrase is purple otter."
    mid = memory.add(text, user_id="a")[0].id
    hit = memory.search("purple otter launch code", user_id="a", mode="vector", min_score=0)[0]
    truncated = float(embedder.embed([text])[0] @ memory.embed_query("purple otter launch code"))
    # the model alone never sees the tail; the windowed vector does
    assert hit.id == mid and hit.parts.vector > truncated + 0.05


def test_not_a_memoryd_store(tmp_path: Path, embedder: Embedder) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(StoreError, match="not a memoryd store"):
        Memory(Settings(home=tmp_path, store={"url": str(junk)}), embedder=embedder)
    import sqlite3

    other = tmp_path / "other.db"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE t (x)")
    with pytest.raises(StoreError, match="not a memoryd store"):
        Memory(Settings(home=tmp_path, store={"url": str(other)}), embedder=embedder)


class _RenamedEmbedder:
    """The real model under another name: what a user switching models looks like."""

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.name, self.dim, self.max_tokens = (
            inner,
            "another-model",
            inner.dim,
            inner.max_tokens,
        )

    def embed(self, texts):  # type: ignore[no-untyped-def]
        return self.inner.embed(texts)

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)


def test_model_change_is_a_clear_error_until_reindexed(
    settings: Settings, embedder: Embedder
) -> None:
    with Memory(settings, embedder=embedder) as mem:
        mem.add("remember me", user_id="a")
    renamed = _RenamedEmbedder(embedder)
    with pytest.raises(ModelMismatchError, match="memoryd reindex"):
        Memory(settings, embedder=renamed)  # type: ignore[arg-type]
    with Memory(settings, embedder=renamed, allow_model_change=True) as mem:  # type: ignore[arg-type]
        assert mem.reindex() == 1
    with Memory(settings, embedder=renamed) as mem:  # type: ignore[arg-type]
        assert mem.search("remember", user_id="a")[0].text == "remember me"


def test_rrf_fusion_option(settings: Settings, embedder: Embedder) -> None:
    settings.search.fusion = "rrf"
    with Memory(settings, embedder=embedder) as mem:
        mem.add("Kubernetes cluster prod-eu-1 runs version 1.29", user_id="a")
        mem.add("Cats are independent animals", user_id="a")
        hits = mem.search("which kubernetes version is prod-eu-1 on", user_id="a")
        assert hits[0].text.startswith("Kubernetes") and hits[0].score == pytest.approx(1.0)


def test_recall_statistics_are_written_beside_searches_and_count_every_hit(
    tmp_path: Path, embedder: Embedder
) -> None:
    """Searches by an agent are recorded for promotion, in batches written by a thread of
    the log's own, never by the search that fills one. While another process holds the
    database's write lock past the store's retries (~10 s), searches still answer: a
    search that wrote its batch itself failed with "stayed locked by another process".
    Nothing recorded meanwhile is lost, and four threads searching at once have every
    hit counted exactly once."""
    import sqlite3
    import threading

    from memoryd.recall import FLUSH_EVERY, summaries

    settings = Settings(home=tmp_path / "home")
    settings.store.busy_timeout_ms = 100
    settings.pipelines.scheduler = False
    settings.workspace.watch = False
    memory = Memory(settings, embedder=embedder)
    counted: list[int] = []

    def search(k: int, times: int) -> None:
        for i in range(times):
            hits = memory.search(f"billing worker port {k} {i}", user_id="u", agent_id="dev")
            counted.append(len(hits))

    try:
        for n in range(12):
            memory.add(f"The billing worker {n} listens on port {8200 + n}", user_id="u", agent_id="dev")  # fmt: skip
        other = sqlite3.connect(memory.store.path, isolation_level=None)  # type: ignore[attr-defined]
        other.execute("BEGIN IMMEDIATE")  # another process is writing, for long
        search(0, 16)
        assert sum(counted) > FLUSH_EVERY  # a batch was due
        assert not list(summaries(memory.store, "dev"))  # and could not be written
        other.execute("ROLLBACK")
        other.close()
        errors: list[BaseException] = []

        def searching(k: int) -> None:
            try:
                search(k, 15)
            except BaseException as e:
                errors.append(e)

        threads = [threading.Thread(target=searching, args=(k,)) for k in range(1, 5)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
    finally:
        memory.close()
    reopened = Memory(settings, embedder=embedder)
    try:
        assert sum(s.count for s in summaries(reopened.store, "dev")) == sum(counted)
    finally:
        reopened.close()
