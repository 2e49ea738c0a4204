"""Conversations reach memory one turn at a time, each indexed with its context.

Every path that takes a conversation (``Memory.add(messages)``, ``POST
/memory/add``, mem0's ``POST /memories``, the diary) stores turn-sized memories
that know their speaker, their day and the turn before them.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import httpx
import numpy as np
import pytest

from memoryd.api import create_app
from memoryd.core import Memory
from memoryd.errors import InvalidInputError
from memoryd.models import Filters, Origin
from memoryd.pipelines import diary
from memoryd.search.text import asks_when, states_time
from memoryd.workspace.bootstrap import init_workspace
from memoryd.workspace.indexer import index_workspace
from memoryd.workspace.layout import resolve_workspace

SESSION_1 = [
    {
        "role": "user",
        "name": "Caroline",
        "content": "I went to the LGBTQ support group yesterday.",
        "timestamp": "2023-05-08T13:56:00Z",
    },
    {"role": "user", "name": "Melanie", "content": "Wow, how was it?"},
]


def _say(memory: Memory, talk: list[tuple[str, str]]) -> None:
    """``talk`` ((speaker, words) pairs) added as one session of user ``u``."""
    memory.add(
        messages=[{"role": "user", "name": n, "content": t} for n, t in talk],
        user_id="u",
        metadata={"session": "s1"},
    )


def _stored(memory: Memory, user: str = "u") -> dict[str, object]:
    return {r.text: r for r in memory.store.iter_all(Filters(user_id=user))}


def test_each_message_is_one_turn_with_speaker_day_and_previous_turn(memory: Memory) -> None:
    events = memory.add(messages=SESSION_1, user_id="u", infer=False, metadata={"session": "D1"})
    assert [e.event for e in events] == ["ADD", "ADD"] and [e.message for e in events] == [0, 1]
    first = memory.get(events[0].id or "")
    second = memory.get(events[1].id or "")
    assert first.text == SESSION_1[0]["content"]  # the text is stored unchanged
    assert first.context == "Caroline on 8 May 2023"
    assert first.event_at == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert first.metadata["speaker"] == "Caroline" and first.metadata["session"] == "D1"
    # the reply is found by the question it answers: the previous turn is in its context
    assert second.context == "Melanie\nCaroline: I went to the LGBTQ support group yesterday."
    assert second.origin == Origin.TURN
    hits = memory.search("LGBTQ support group", user_id="u", top_k=2, time_decay=False)
    assert {h.id for h in hits} == {first.id, second.id}


def test_a_conversation_sent_over_several_calls_stays_linked_per_session(memory: Memory) -> None:
    memory.add(messages=SESSION_1, user_id="u", infer=False, metadata={"session": "D1"})
    later = memory.add(
        messages=[{"role": "user", "name": "Caroline", "content": "It was powerful."}],
        user_id="u",
        infer=False,
        metadata={"session": "D1"},
    )
    other = memory.add(
        messages=[{"role": "user", "name": "Caroline", "content": "New day, new plans."}],
        user_id="u",
        infer=False,
        metadata={"session": "D2"},
    )
    assert memory.get(later[0].id or "").context == "Caroline\nMelanie: Wow, how was it?"
    assert memory.get(other[0].id or "").context == "Caroline"  # another session: no link


def test_turns_know_their_place_and_matching_neighbours_lift_each_other(
    memory: Memory,
) -> None:
    """Each turn records its place in its conversation, counted across calls; a search
    lifts a turn by ``neighbour_boost`` x the best score of the turns within two of it,
    and leaves memories without a place (a plain text) as they were."""
    talk = [
        ("Ana", "We adopted a puppy last weekend."),
        ("Ben", "No way! What breed is the puppy?"),
        ("Ana", "A beagle puppy called Biscuit, he loves the park."),
        ("Ben", "I need to fix my bike's brakes this week."),
    ]
    first = [{"role": "user", "name": n, "content": t} for n, t in talk[:2]]
    second = [{"role": "user", "name": n, "content": t} for n, t in talk[2:]]
    memory.add(messages=first, user_id="u", metadata={"session": "s1"})
    memory.add(messages=second, user_id="u", metadata={"session": "s1"})
    memory.add("Biscuits are best with tea.", user_id="u")
    stored = _stored(memory)
    assert [stored[t].metadata["turn"] for _, t in talk] == [0, 1, 2, 3]
    query = "what breed is Ana's puppy"
    memory.settings.search.neighbour_boost = 0.0
    alone = {h.id: h for h in memory.search(query, user_id="u", top_k=10, time_decay=False)}
    memory.settings.search.neighbour_boost = 0.2
    lifted = memory.search(query, user_id="u", top_k=10, time_decay=False)
    near = [h for h in lifted if h.parts.neighbours]
    assert len(near) >= 2  # the puppy turns lift each other
    for h in lifted:
        extra = h.parts.neighbours or 0.0
        assert h.score == pytest.approx(min(1.0, alone[h.id].score + extra), abs=1e-6)
        if h.record.metadata.get("turn") is None:
            assert h.parts.neighbours is None  # no place in a conversation: never lifted
    puppy = [h.id for h in lifted if "puppy" in h.text]
    assert puppy == [h.id for h in lifted[: len(puppy)]]  # the conversation's puppy turns lead


def test_a_turn_that_says_little_ranks_below_one_that_answers(memory: Memory) -> None:
    """Chit-chat and a question put to the other speaker match a query's words yet carry
    little: among the best candidates a short turn loses up to ``short_turn_penalty`` on a
    log scale and a question ``question_turn_penalty``; a stored fact is never lowered."""
    talk = [
        ("Ben", "How was your trip to Lisbon in May?"),
        ("Ana", "Lovely: two weeks with my sister, walking the old town and eating custard tarts."),
        ("Ben", "Lisbon in May, wow!"),
    ]
    _say(memory, talk)
    memory.add("Lisbon", user_id="u")  # a one-word memory, not a turn
    s = memory.settings.search
    query = "How was Ana's trip to Lisbon in May?"
    s.short_turn_penalty = s.question_turn_penalty = 0.0
    # no lifts: both turns would pass 1.0 with them (Ana is named, they are neighbours),
    # and the one lifted more leads whatever the prior does
    s.neighbour_boost = s.entity_boost = 0.0
    # and no reordering after the ranking: statements-first would move the answer above
    # the question too, and change the scores compared below
    s.stating_first_margin = 0.0
    before = memory.search(query, user_id="u", top_k=10, time_decay=False)
    assert before[0].text == talk[0][1]  # by wording alone the question leads
    plain = {h.text: h for h in before}
    s.short_turn_penalty, s.question_turn_penalty, s.full_turn_words = 0.3, 0.05, 50
    hits = memory.search(query, user_id="u", top_k=10, time_decay=False)
    said = {h.text: h for h in hits}
    assert set(said) == set(plain)
    assert hits[0].text == talk[1][1]  # the answer leads
    for text, h in said.items():
        assert plain[text].parts.turn is None
        if text == "Lisbon":
            assert h.parts.turn is None and h.score == pytest.approx(plain[text].score)
            continue
        words = len(text.split())
        short = 0.3 * (1 - np.log1p(words) / np.log1p(50))
        asks = 0.05 if text.endswith("?") else 0.0
        assert h.parts.turn == pytest.approx(-(short + asks), abs=1e-6)
        # scores stay within [0, 1]: a turn at the ceiling may stay there
        assert h.score <= plain[text].score
        assert h.score == pytest.approx(
            min(1.0, max(0.0, h.parts.fused + (h.parts.neighbours or 0) + h.parts.turn)), abs=1e-6
        )
    question, answer = said[talk[0][1]], said[talk[1][1]]
    assert question.parts.turn < answer.parts.turn < 0  # 8 words and asking vs 14 words


@pytest.mark.parametrize(
    ("text", "dated"),
    [
        ("We adopted a puppy last week.", True),
        ("I went to the support group yesterday", True),
        ("Two years ago, in 2021, we moved.", True),
        ("See you on Friday!", True),
        ("Back in May we painted the house.", True),
        ("I may paint the house.", False),  # a month name only when capitalised
        ("We love painting together.", False),
        ("The meeting is at the weekend office.", False),
    ],
)
def test_a_turn_is_dated_when_it_states_a_time(text: str, dated: bool) -> None:
    assert states_time(text) is dated


@pytest.mark.parametrize(
    ("query", "when"),
    [
        ("When did Ana adopt the puppy?", True),
        ("what year did they move?", True),
        ("How long ago was the trip?", True),
        ("Which month did Ben start running?", True),
        ("What did Ana adopt?", False),
        ("Why did they move when the rent went up?", False),
    ],
)
def test_a_query_asks_when(query: str, when: bool) -> None:
    assert asks_when(query) is when


def test_a_when_question_lifts_the_turns_that_state_a_time(memory: Memory) -> None:
    """Among the best candidates, a query asking when something happened lifts the turns
    that state a time by ``when_turn_boost``; other queries and undated turns are not."""
    talk = [
        ("Ana", "The shelter puppy adoption took so much paperwork and patience."),
        ("Ben", "Was the shelter strict about the puppy adoption?"),
        ("Ana", "Very! We finally brought the puppy home last week."),
    ]
    _say(memory, talk)
    s = memory.settings.search
    s.neighbour_boost = 0.0  # the three turns are neighbours: their lifts would hide this one
    query = "When did Ana adopt the puppy from the shelter?"
    s.when_turn_boost = 0.0
    before = memory.search(query, user_id="u", top_k=10, time_decay=False)
    assert before[0].text == talk[0][1]  # by wording alone the paperwork leads
    plain = {h.text: h for h in before}
    s.when_turn_boost = 0.1
    hits = memory.search(query, user_id="u", top_k=10, time_decay=False)
    assert hits[0].text == talk[2][1]  # the turn that says when leads
    for h in hits:
        assert plain[h.text].parts.when is None
        if h.text == talk[2][1]:
            assert h.parts.when == pytest.approx(0.1)
            assert h.score == pytest.approx(min(1.0, plain[h.text].score + 0.1), abs=1e-6)
        else:
            assert h.parts.when is None
            assert h.score == pytest.approx(plain[h.text].score, abs=1e-6)
    other = memory.search("Why did Ana adopt the puppy?", user_id="u", top_k=10)
    assert other and all(h.parts.when is None for h in other)


def test_the_vector_carries_the_previous_turn(memory: Memory) -> None:
    events = memory.add(messages=SESSION_1, user_id="u", infer=False)
    reply = memory.get(events[1].id or "")
    own, before = memory.embed_texts(
        ["Melanie: Wow, how was it?", "Caroline: I went to the LGBTQ support group yesterday."]
    )
    stored = memory.store.vector_scores(own, [reply.id])[reply.id]
    assert stored < 0.99  # not the turn's own vector alone ...
    query = memory.store.vector_scores(before, [reply.id])[reply.id]
    alone = float(np.dot(own, before))
    assert query > alone + 0.1  # ... it leans towards the question it answers


def test_a_turn_after_a_long_message_is_its_own_vector_and_roles_are_not_prefixed(
    memory: Memory,
) -> None:
    explanation = " ".join(
        f"Step {i}: the migration copies table {i} to the new cluster." for i in range(12)
    )
    assert len(explanation.split()) > 60
    events = memory.add(
        messages=[
            {"role": "assistant", "content": explanation},
            {"role": "user", "content": "Never push to main directly. Always open a PR."},
            {"role": "assistant", "content": "Understood."},
        ],
        user_id="u",
        infer=False,
    )
    rule, ack = (memory.get(e.id or "") for e in events[1:])
    # a client that names no speaker: the role is not embedded ("user: ..." says nothing)
    own, with_role, ack_own = memory.embed_texts(
        [
            "Never push to main directly. Always open a PR.",
            "user: Never push to main directly. Always open a PR.",
            "Understood.",
        ]
    )
    # after 120 words about a migration, the instruction is not half about the migration
    assert memory.store.vector_scores(own, [rule.id])[rule.id] > 0.999
    assert memory.store.vector_scores(with_role, [rule.id])[rule.id] < 0.99
    # after a short turn, a turn still leans towards it
    assert memory.store.vector_scores(ack_own, [ack.id])[ack.id] < 0.99
    leaning = memory.store.vector_scores(own, [ack.id])[ack.id]
    assert leaning > float(np.dot(ack_own, own)) + 0.1


def test_the_same_turn_sent_twice_is_stored_once(memory: Memory) -> None:
    memory.add(messages=SESSION_1, user_id="u", infer=False, metadata={"session": "D1"})
    again = memory.add(messages=SESSION_1[:1], user_id="u", infer=False, metadata={"session": "X"})
    # same text, same speaker and day, no previous turn in session X: the same turn
    assert again[0].event == "NONE" and again[0].id is not None
    short = [{"role": "user", "name": "Melanie", "content": "Yes!"}]
    a = memory.add(messages=short, user_id="u", infer=False, metadata={"session": "D1"})
    b = memory.add(messages=short, user_id="u", infer=False, metadata={"session": "D1"})
    # "Yes!" after another turn is another turn (its context differs): both kept
    assert a[0].event == "ADD" and b[0].event == "ADD"


def test_a_long_message_is_stored_in_window_sized_pieces(memory: Memory) -> None:
    words = " ".join(f"word{i} about the migration plan" for i in range(1500))
    assert len(words) > memory.settings.limits.max_text_chars  # once refused for length
    events = memory.add(
        messages=[{"role": "assistant", "content": words}], user_id="u", infer=False
    )
    assert len(events) > 10 and {e.message for e in events} == {0}
    window = memory.embedder.max_tokens
    records = [memory.get(e.id or "") for e in events]
    assert all(memory.embedder.count_tokens(r.text) <= window for r in records)
    assert " ".join(r.text for r in records).split() == words.split()  # nothing lost
    assert [r.metadata["piece"] for r in records][:2] == [[1, len(events)], [2, len(events)]]
    hits = memory.search("word1499", user_id="u", top_k=1, mode="keyword")
    assert hits and "word1499" in hits[0].text


@pytest.mark.parametrize(
    "bad",
    [
        [{"role": "user", "content": "hi there", "timestamp": "yesterday"}],
        [{"role": "user", "content": "hi there", "name": 7}],
        [{"role": "user"}],
        "not a list",
    ],
)
def test_bad_messages_get_a_clear_error(memory: Memory, bad: object) -> None:
    with pytest.raises(InvalidInputError) as err:
        memory.add(messages=bad, user_id="u", infer=False)  # type: ignore[arg-type]
    assert err.value.hint
    assert not _stored(memory)


def test_http_add_and_mem0_add_store_turns_with_context(memory: Memory, live_server) -> None:  # type: ignore[no-untyped-def]
    with live_server(create_app(memory=memory)) as server:
        r = httpx.post(
            f"{server.url}/memory/add",
            json={"user_id": "u", "messages": SESSION_1, "infer": False, "timestamp": 1683554160},
        )
        assert r.status_code == 200, r.text
        results = r.json()["results"]
        assert [x["message"] for x in results] == [0, 1]
        m = httpx.post(
            f"{server.url}/memories",
            json={"user_id": "w", "messages": SESSION_1, "infer": False},
        )
        assert m.status_code == 200, m.text
        bad = httpx.post(
            f"{server.url}/memory/add",
            json={"user_id": "u", "messages": SESSION_1, "infer": False, "timestamp": "soon"},
        )
        assert bad.status_code == 422 and "timestamp" in bad.json()["detail"]
    reply = memory.get(results[1]["id"])
    assert reply.context is not None and reply.context.startswith("Melanie on 8 May 2023\n")
    assert "Caroline: I went" in (_stored(memory, "w")["Wow, how was it?"].context or "")  # type: ignore[attr-defined]


def test_diary_turns_are_indexed_one_by_one_with_context(memory: Memory, tmp_path: Path) -> None:
    at = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    turns = [
        ("I went to the LGBTQ support group yesterday.", "Wow! How did it feel?"),
        ("It felt freeing. I am researching adoption agencies now.", "That is great news!"),
    ]
    for n, (said, answer) in enumerate(turns):
        diary.capture(
            memory,
            agent_id="conv",
            session_id="D1",
            turn_id=f"t{n}",
            at=at,
            messages=[
                {"role": "user", "name": "Caroline", "content": said},
                {"role": "assistant", "name": "Melanie", "content": answer},
            ],
        )
    ws = resolve_workspace(memory.settings, "conv", memory.store)
    rel = "memory/2023-05-08.md"  # the day the turns happened, not today
    lines = (ws.root / rel).read_text().splitlines()
    # a note the agent wrote by hand between the turns is kept as a note
    with (ws.root / rel).open("a") as f:
        f.write("\nAgent note: follow up on adoption next week.\n")
    index_workspace(memory, ws)
    chunks = sorted(
        memory.store.iter_all(Filters(agent_id="conv", origins=[Origin.CHUNK])),
        key=lambda r: r.source.start_line if r.source else 0,
    )
    turn_chunks = [c for c in chunks if "speaker" in c.metadata]
    assert len(turn_chunks) == 4
    places = [c.metadata["turn"] for c in turn_chunks]  # their order in the file, for search
    assert places == sorted(places) and len(set(places)) == 4
    for chunk in turn_chunks:
        assert chunk.source is not None and chunk.source.start_line == chunk.source.end_line
        assert chunk.text == lines[chunk.source.start_line - 1]  # cites exactly its line
    adoption = next(c for c in turn_chunks if "adoption" in c.text)
    assert adoption.metadata["speaker"] == "Caroline"
    assert adoption.context is not None
    assert "Caroline on 8 May 2023\nMelanie: Wow! How did it feel?" in adoption.context
    note = [c for c in chunks if "speaker" not in c.metadata]
    assert any("Agent note" in c.text for c in note)
    hits = memory.search(
        "how did the support group feel",
        user_id=memory.settings.workspace.user_id,
        agent_id="conv",
        top_k=2,
        time_decay=False,
    )
    assert any(h.text.endswith("Wow! How did it feel?") for h in hits)


# -- provenance: every extracted fact says where it was said ----------------------------------
def test_facts_from_messages_name_the_turn_that_said_them(memory: Memory) -> None:
    events = memory.add(
        messages=[
            {"role": "user", "content": "I moved to Lisbon last year and I work as a nurse."},
            {"role": "assistant", "content": "Nice! How do you like Lisbon?"},
            {"role": "user", "content": "My dog is called Biscuit and he loves the beach."},
        ],
        user_id="u",
        infer=True,
    )
    facts = [memory.get(e.id or "") for e in events if e.event == "ADD"]
    assert facts and all(f.origin == Origin.FACT for f in facts)
    turns = {r.id: r for r in memory.store.iter_all(Filters(user_id="u", origins=[Origin.TURN]))}
    assert len(turns) == 3  # the conversation is kept beside the facts, as their evidence
    for fact in facts:
        (turn_id,) = fact.metadata["evidence"]
        said = turns[turn_id].text
        key = "Biscuit" if "Biscuit" in fact.text else "Lisbon"
        assert key in said and said != "Nice! How do you like Lisbon?"


def test_digested_facts_cite_the_line_that_said_them(memory: Memory, tmp_path: Path) -> None:
    from memoryd.pipelines.runs import run_pipeline

    memory.settings.pipelines.scheduler = False
    memory.settings.digest.min_bytes = 0
    memory.settings.digest.settle_minutes = 0
    day = memory.clock().date()
    ws = resolve_workspace(memory.settings, "alpha", memory.store)
    said = [
        ("We moved the staging database to port 5434 because of a clash.", "Noted, port 5434."),
        ("The deploy pipeline now runs on ArgoCD in cluster prod-eu-1.", "Understood."),
        ("Alice owns the billing service from now on.", "Got it, Alice owns billing."),
    ]
    for n, (user, answer) in enumerate(said):
        diary.capture(
            memory,
            agent_id="alpha",
            turn_id=f"t{n}",
            messages=[{"role": "user", "content": user}, {"role": "assistant", "content": answer}],
        )
    run = run_pipeline(memory, "digest")
    assert run.status == "ok", run
    lines = (ws.root / "memory" / f"{day:%Y-%m-%d}.md").read_text().splitlines()
    facts = list(memory.store.iter_all(Filters(agent_id="alpha", origins=[Origin.FACT])))
    assert facts
    for fact in facts:
        assert fact.source is not None and fact.source.start_line == fact.source.end_line
        line = lines[(fact.source.start_line or 0) - 1]
        # the cited line is the one that said it (one of the three subjects)
        subject = next(w for w in ("5434", "ArgoCD", "Alice") if w in fact.text)
        assert subject in line


def test_workspace_search_returns_turns_within_a_token_budget(memory: Memory) -> None:
    from memoryd.workspace.search import memory_search

    for n in range(40):
        diary.capture(
            memory,
            agent_id="alpha",
            turn_id=f"t{n}",
            messages=[
                {"role": "user", "content": f"Ticket {n}: the deploy of service {n} failed on db."},
                {
                    "role": "assistant",
                    "content": f"Rolled back service {n}; the deploy is retried.",
                },
            ],
        )
    ws = resolve_workspace(memory.settings, "alpha", memory.store)
    index_workspace(memory, ws)
    hits = memory_search(memory, ws, "which deploy failed and was rolled back")
    shown = [h.to_json()["snippet"] for h in hits]
    assert all(text.startswith("user: ") or text.startswith("assistant: ") for text in shown)
    tokens = sum(memory.embedder.count_tokens(text) for text in shown)
    # OpenClaw's 6 hits of ~700 characters cost ~1,000 tokens; turn-sized hits fit many more
    assert len(hits) > 6 and tokens <= ws.settings.result_tokens
    assert all(
        h.hit.record.source and h.hit.record.source.start_line == h.hit.record.source.end_line
        for h in hits
    )
    assert len(memory_search(memory, ws, "deploy failed", max_results=35)) == 35  # asked: a count


def test_the_token_budget_is_filled_best_first_past_a_hit_too_long(memory: Memory) -> None:
    """A hit too long for what is left of the budget is passed over, and shorter ones
    after it still come back (a budget that stopped at the first misfit returned less)."""
    from memoryd.workspace.search import memory_search

    ws = resolve_workspace(memory.settings, "alpha", memory.store)
    init_workspace(ws.root)
    long_story = " ".join(f"the deploy of service 3 failed at step {n};" for n in range(20))
    (ws.memory_dir / "deploys.md").write_text(
        "# Deploys\n\n"
        + "".join(f"## Service {n}\nThe deploy of service {n} failed.\n\n" for n in range(4))
        + "## Step by step\n" + long_story + "\n\n"
        + "".join(f"## Week {n}\nWe talked about deploys in week {n}.\n\n" for n in range(6))
    )  # fmt: skip
    index_workspace(memory, ws)
    query = "the deploy of service 3 failed"
    ranked = memory_search(memory, ws, query, max_results=20)
    cost = [memory.embedder.count_tokens(h.to_json()["snippet"]) for h in ranked]
    long_at = cost.index(max(cost))
    assert cost[long_at] > 100 and 0 < long_at < len(ranked) - 1  # a long hit amid short ones
    budget = sum(cost[:long_at]) + 30
    got = [h.hit.id for h in memory_search(memory, ws, query, max_tokens=budget)]
    want, used = [], 0
    for h, c in zip(ranked, cost, strict=True):
        if not want or used + c <= budget:
            want.append(h.hit.id)
            used += c
    assert got == want and ranked[long_at].hit.id not in got
    assert ranked[long_at + 1].hit.id in got  # the next, shorter hit still fits
