"""Search behaviour of the memory service: time decay, tiers, the shared pool,
combined search. Real model and store; time moves by the fake clock."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest

from memoryd.core import Memory
from memoryd.embed import Embedder
from memoryd.errors import InvalidInputError
from memoryd.models import Filters
from memoryd.search.decay import recency_weight
from memoryd.settings import Settings


def test_recency_weight_halves_every_half_life() -> None:
    assert recency_weight(0, 30) == 1.0
    assert recency_weight(30, 30) == pytest.approx(0.5)
    assert recency_weight(7, 30) == pytest.approx(0.85, abs=0.01)  # seed 000's table
    assert recency_weight(1, 30) == pytest.approx(0.98, abs=0.01)
    assert recency_weight(-3, 30) == 1.0  # a future date is "now", never above 1


def test_decay_blends_relevance_and_recency_and_keeps_the_original(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    memory.add("The release train leaves every Tuesday", user_id="u")
    clock.advance(days=30)
    hit = memory.search("when does the release train leave", user_id="u")[0]
    assert hit.parts.decay == pytest.approx(0.5)
    assert hit.original_score == pytest.approx(hit.parts.fused)
    assert hit.score == pytest.approx(0.7 * hit.original_score + 0.3 * 0.5)
    plain = memory.search("when does the release train leave", user_id="u", time_decay=False)[0]
    assert plain.original_score is None and plain.parts.decay is None
    assert plain.score == pytest.approx(hit.original_score)


def test_newer_outranks_older_at_equal_relevance(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    old = memory.add("Deploy window: Friday 16:00 UTC", user_id="u")[0]
    clock.advance(days=90)
    new = memory.add("Deploy window: Friday 16:00 UTC (staging)", user_id="u")[0]
    hits = memory.search("deploy window friday", user_id="u")
    assert [h.id for h in hits] == [new.id, old.id]
    assert hits[1].parts.decay == pytest.approx(0.125)  # three half-lives


def test_event_at_and_evergreen_decide_the_age(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    memory.add(
        "Diary: migrated the queue to NATS",
        user_id="u",
        event_at=clock.now - timedelta(days=60),  # happened two months before it was indexed
    )
    memory.add("Curated: the queue runs on NATS", user_id="u", metadata={"evergreen": True})
    clock.advance(days=365)
    by_text = {h.text: h for h in memory.search("queue NATS", user_id="u")}
    assert by_text["Diary: migrated the queue to NATS"].parts.decay == pytest.approx(
        0.5 ** (425 / 30)
    )
    assert by_text["Curated: the queue runs on NATS"].parts.decay == 1.0


def test_weights_and_half_life_are_settings(settings: Settings, embedder: Embedder, clock) -> None:  # type: ignore[no-untyped-def]
    settings.search.decay_similarity_weight = 0.5
    settings.search.decay_recency_weight = 0.5
    settings.search.decay_half_life_days = 10
    settings.search.time_decay = False
    with Memory(settings, embedder=embedder, clock=clock) as mem:
        mem.add("Backups run nightly at 02:00", user_id="u")
        clock.advance(days=10)
        assert mem.search("backups", user_id="u")[0].original_score is None  # off by default
        hit = mem.search("backups", user_id="u", time_decay=True)[0]
        assert hit.parts.decay == pytest.approx(0.5)
        assert hit.score == pytest.approx(0.5 * hit.original_score + 0.5 * 0.5)  # type: ignore[operator]


def test_min_score_is_a_relevance_threshold_not_a_freshness_bonus(memory: Memory) -> None:
    memory.add("Prefers green tea in the afternoon", user_id="u")
    # unrelated, but fresh: recency alone lifts the score (relevance 0 here)
    hits = memory.search("kubernetes ingress controller", user_id="u", min_score=0)
    assert hits and hits[0].score >= 0.3 > hits[0].original_score  # type: ignore[operator]
    # the default relevance floor (search.min_score) keeps it out
    assert memory.search("kubernetes ingress controller", user_id="u") == []
    # min_score is compared with the relevance, so recency cannot carry it past the threshold
    assert memory.search("kubernetes ingress controller", user_id="u", min_score=0.3) == []
    weak = memory.search("what to drink", user_id="u", top_k=1)[0]
    assert weak.original_score < weak.score  # type: ignore[operator]
    threshold = (weak.original_score + weak.score) / 2  # type: ignore[operator]
    assert memory.search("what to drink", user_id="u", min_score=threshold) == []
    with pytest.raises(InvalidInputError, match="min_score"):
        memory.search("x", user_id="u", min_score=1.5)


def test_memory_type_by_tier_and_category(memory: Memory) -> None:
    memory.add("Long-term: the API is on port 8230", user_id="u", agent_id="dev")
    memory.add(
        "Short-term: discussed port 8230 today", user_id="u", agent_id="dev", run_id="2026-03-27"
    )
    memory.add(
        "Lesson: restart uvicorn after changing port 8230",
        user_id="u",
        agent_id="dev",
        metadata={"category": "experience"},
    )
    types = {h.text.split(":")[0]: h.memory_type for h in memory.search("port 8230", user_id="u")}
    assert types == {"Long-term": "long_term", "Short-term": "short_term", "Lesson": "shared"}


@pytest.fixture
def team(memory: Memory) -> Iterator[Memory]:
    """boss's agents dev and ops, and another user, carol, with the same kinds of memories."""
    memory.add(
        "kiro-cli: always use exec(pty=true, background=true); never add & to the command",
        user_id="boss",
        agent_id="ops",
        metadata={"category": "procedural"},
    )
    memory.add(
        "Postmortem: kiro-cli hung because the command ended with &",
        user_id="boss",
        agent_id="ops",
        metadata={"category": "experience"},
    )
    memory.add(
        "ops decided kiro-cli runs only on the build host",
        user_id="boss",
        agent_id="ops",
        metadata={"category": "decision"},
    )
    memory.add(
        "carol's kiro-cli tip: run it inside tmux",
        user_id="carol",
        agent_id="ops",
        metadata={"category": "procedural"},
    )
    yield memory


def test_the_shared_pool_reaches_every_agent_of_the_user(team: Memory) -> None:
    hits = team.search("how to run kiro-cli", user_id="boss", agent_id="dev", top_k=10)
    texts = {h.text for h in hits}
    # procedural and experience from ops are visible to dev (the seed only shared experience)
    assert any(t.startswith("kiro-cli: always") for t in texts)
    assert any(t.startswith("Postmortem") for t in texts)
    assert all(h.memory_type == "shared" for h in hits)
    assert not any("decided" in t for t in texts)  # ops's decision stays ops's
    assert not any("carol" in t for t in texts)  # and another user's pool is not boss's
    assert team.search("kiro-cli", user_id="boss", agent_id="dev", include_shared=False) == []


def test_the_shared_categories_are_configurable(settings: Settings, embedder: Embedder) -> None:
    settings.search.shared_categories = ["decision"]
    with Memory(settings, embedder=embedder) as mem:
        mem.add("Chose pgvector for local dev", user_id="b", agent_id="ops", category="decision")
        mem.add("Restart with systemctl", user_id="b", agent_id="ops", category="procedural")
        texts = [h.text for h in mem.search("pgvector systemctl", user_id="b", agent_id="dev")]
        assert texts == ["Chose pgvector for local dev"]


def test_nothing_is_returned_twice(team: Memory) -> None:
    # dev also wrote the same lesson: one hit, not two (seed: a copy per agent plus the pool copy)
    team.add(
        "Postmortem: kiro-cli hung because the command ended with &",
        user_id="boss",
        agent_id="dev",
        metadata={"category": "experience"},
    )
    hits = team.search("kiro-cli hung", user_id="boss", agent_id="dev", top_k=10)
    texts = [h.text for h in hits]
    assert len(texts) == len(set(texts))
    assert texts.count("Postmortem: kiro-cli hung because the command ended with &") == 1
    assert len({h.id for h in hits}) == len(hits)


def test_the_keyword_side_run_beside_the_embedding_finds_what_it_finds_inline(
    team: Memory,
) -> None:
    """A new query's keyword searches (the agent's scope and the shared pool) run while
    the query is embedded; a repeated query's embedding is cached and they run inline.
    Both give the same hits, scores and parts, the keyword-only match included."""
    query = "kiro-cli tmux build host"
    team._query_cache.clear()
    first = team.search(query, user_id="boss", agent_id="ops", top_k=10)
    assert query in team._query_cache
    again = team.search(query, user_id="boss", agent_id="ops", top_k=10)
    assert [(h.id, h.score, h.parts) for h in first] == [(h.id, h.score, h.parts) for h in again]
    assert {h.memory_type for h in first} >= {"shared"}  # the pool's side came back too
    assert any(h.parts.keyword > 0 for h in first)


def test_no_user_id_is_hard_coded(memory: Memory) -> None:
    # the seed searched a fixed user "shared" for everyone; here that is just another user
    memory.add(
        "Secret of the user called shared", user_id="shared", metadata={"category": "experience"}
    )
    assert memory.search("secret", user_id="alice", agent_id="dev") == []
    memory.add("zoe's tip", user_id="zoe", agent_id="a1", metadata={"category": "experience"})
    assert [h.text for h in memory.search("tip", user_id="zoe", agent_id="a2")] == ["zoe's tip"]


def test_search_is_hybrid_not_vector_only(memory: Memory) -> None:
    memory.add("Ticket OPS-4471 blocks the firewall change", user_id="u")
    memory.add("The team enjoys hiking on weekends", user_id="u")
    vector_only = memory.search("OPS-4471", user_id="u", mode="vector", time_decay=False)
    hit = memory.search("OPS-4471", user_id="u")[0]
    assert hit.text.startswith("Ticket OPS-4471") and hit.parts.keyword == 1.0
    assert hit.original_score > vector_only[0].score  # type: ignore[operator]


def test_combined_search_long_term_plus_the_recent_short_term(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    memory.add("Long-term: redis runs on port 6380", user_id="u", agent_id="dev")
    memory.add(
        "Old short-term: redis restart on 2026-03-27",
        user_id="u",
        agent_id="dev",
        run_id="2026-03-27",
    )
    clock.advance(days=20)  # now 2026-04-16
    memory.add(
        "Recent short-term: redis was slow this morning",
        user_id="u",
        agent_id="dev",
        run_id="2026-04-16",
    )
    memory.add(
        "Lesson: redis needs maxmemory-policy allkeys-lru",
        user_id="u",
        agent_id="ops",
        metadata={"category": "experience"},
    )
    combined = memory.search_combined("redis", user_id="u", agent_id="dev", recent_days=7)
    assert {h.text for h in combined.long_term} == {
        "Long-term: redis runs on port 6380",
        "Lesson: redis needs maxmemory-policy allkeys-lru",
    }
    assert [h.text for h in combined.short_term] == [
        "Recent short-term: redis was slow this morning"
    ]
    assert {h.memory_type for h in combined.results} == {"long_term", "shared", "short_term"}
    wider = memory.search_combined("redis", user_id="u", agent_id="dev", recent_days=30)
    assert len(wider.short_term) == 2
    assert (
        memory.search_combined(
            "redis", user_id="u", agent_id="dev", long_term_top_k=1, short_term_top_k=1
        ).results.__len__()
        == 2
    )
    with pytest.raises(InvalidInputError, match="recent_days"):
        memory.search_combined("redis", user_id="u", recent_days=0)


def test_filters_narrow_search(team: Memory) -> None:
    hits = team.search(
        "kiro-cli", user_id="boss", agent_id="ops", filters=Filters(categories=["decision"])
    )
    assert [h.text for h in hits] == ["ops decided kiro-cli runs only on the build host"]


@pytest.mark.parametrize("decay", [True, False])
def test_a_short_search_is_the_head_of_a_long_one(memory: Memory, clock, decay: bool) -> None:  # type: ignore[no-untyped-def]
    """Records are read only for candidates that can still make the cut: whatever the
    boost, the recency and the duplicates do, top_k=k is the first k of top_k=40."""
    memory.settings.search.min_candidates = 200  # every memory is a candidate for any top_k
    memory.settings.search.entity_boost = 0.5  # a named speaker's weak hits jump the queue
    speakers = ["Caroline", "Melanie"]
    topics = ["painting", "the support group", "adoption", "camping", "a pottery class"]
    for day in range(6):
        clock.advance(days=9)  # older turns decay: recency reorders the relevant ones
        memory.add(
            messages=[
                {
                    "role": "user",
                    "name": speakers[(day + n) % 2],
                    "content": f"Day {day}: I keep thinking about {topics[(day + n) % 5]}.",
                }
                for n in range(5)
            ],
            user_id="u",
            infer=False,
            metadata={"session": f"s{day}"},
        )
        # the same words again under another agent: one hit per text
        memory.add(f"Day {day}: I keep thinking about camping.", user_id="u", agent_id="x")
    for query in ("What did Melanie say about adoption?", "support group", "Caroline camping"):
        full = memory.search(query, user_id="u", top_k=40, time_decay=decay, record_recall=False)
        assert len({h.text for h in full}) == len(full) > 10
        for k in (1, 2, 3, 5, 8):
            head = memory.search(query, user_id="u", top_k=k, time_decay=decay, record_recall=False)
            assert [(h.id, h.score) for h in head] == [(h.id, h.score) for h in full[:k]], k


def test_with_shipped_settings_the_first_hits_do_not_depend_on_top_k(memory: Memory) -> None:
    """A caller asking for 5 or 10 hits gets the first 5 or 10 of a top_k 25 search: both
    sides fetch at least ``search.min_candidates`` and as many are re-ranked. With 20 (the
    old floor), a short search ranked from fewer candidates and its head differed."""
    people = ["Ana", "Ben"]
    things = ["hiking", "the pottery class", "a new puppy", "the garden", "running"]
    for day in range(8):
        memory.add(
            messages=[
                {
                    "role": "user",
                    "name": people[n % 2],
                    "content": f"Day {day}: we talked about {things[(day + n) % 5]} again, "
                    f"and about {things[(day * n + 1) % 5]} for a while.",
                }
                for n in range(8)
            ],
            user_id="u",
            metadata={"session": f"s{day}"},
        )
    queries = ("What did Ana say about the puppy?", "pottery class", "When did Ben go hiking?")

    def heads_match() -> bool:
        same = True
        for query in queries:
            full = memory.search(query, user_id="u", top_k=25, record_recall=False)
            assert len(full) == 25
            for k in (5, 10):
                head = memory.search(query, user_id="u", top_k=k, record_recall=False)
                same &= [h.id for h in head] == [h.id for h in full[:k]]
        return same

    assert heads_match()
    memory.settings.search.min_candidates = 20
    assert not heads_match()
