"""The Store contract: every backend passes this suite unchanged."""

from __future__ import annotations

import itertools
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from memoryd.errors import InvalidInputError, NotFoundError
from memoryd.models import Event, Filters, MemoryRecord, Origin, Source, State, content_hash
from memoryd.search.decay import facts_of
from memoryd.store import Store


def vec(seed: int, dim: int = 8) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=dim).astype(np.float32)
    return v / np.linalg.norm(v)


def rec(i: int, text: str, **kw: object) -> MemoryRecord:
    r = MemoryRecord(id=f"m{i}", text=text, user_id=str(kw.pop("user_id", "alice")), **kw)  # type: ignore[arg-type]
    r.embedding = vec(i)
    return r


def test_add_get_roundtrip(store: Store) -> None:
    r = rec(
        1,
        "Uses PostgreSQL 16 on port 5432",
        agent_id="dev",
        run_id="2026-03-27",
        category="environment",
        metadata={"k": [1, {"x": "é"}]},
        origin=Origin.CHUNK,
        source=Source(path="memory/2026-03-27.md", start_line=3, end_line=9),
        context="## Infra",
    )
    store.add([r])
    got = store.get("m1")
    assert got is not None
    assert (got.text, got.agent_id, got.run_id, got.category) == (
        r.text,
        "dev",
        "2026-03-27",
        "environment",
    )
    assert got.metadata == {"k": [1, {"x": "é"}]}
    assert got.origin == Origin.CHUNK and got.source == r.source and got.context == "## Infra"
    assert got.hash == r.hash and got.state == State.ACTIVE
    assert abs((got.created_at - r.created_at).total_seconds()) < 1e-3


def test_get_unknown_is_none(store: Store) -> None:
    assert store.get("nope") is None


def test_duplicate_id_is_rejected_and_leaves_nothing(store: Store) -> None:
    store.add([rec(1, "first")])
    with pytest.raises(InvalidInputError):
        store.add([rec(2, "second"), rec(1, "again")])
    assert store.get("m2") is None  # the whole batch rolled back
    assert store.keyword_search("second", Filters(), 10) == []
    assert [i for i, _ in store.vector_search(vec(2), Filters(), 10)] == ["m1"]


def test_list_filters_and_paging(store: Store) -> None:
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    store.add(
        [
            rec(
                i,
                f"note {i}",
                user_id="alice" if i % 2 else "bob",
                agent_id="dev" if i < 5 else "ops",
                run_id=None if i % 3 else "2026-01-01",
                category="task" if i == 4 else None,
                created_at=t0 + timedelta(days=i),
            )
            for i in range(10)
        ]
    )
    alice = store.list(Filters(user_id="alice"))
    assert {r.id for r in alice} == {"m1", "m3", "m5", "m7", "m9"}
    assert [r.id for r in alice] == ["m9", "m7", "m5", "m3", "m1"]  # newest first
    assert [r.id for r in store.list(Filters(user_id="alice"), limit=2, offset=1)] == ["m7", "m5"]
    assert {r.id for r in store.list(Filters(agent_id="ops"))} == {"m5", "m6", "m7", "m8", "m9"}
    assert {r.id for r in store.list(Filters(long_term_only=True, user_id="bob"))} == {
        "m2",
        "m4",
        "m8",
    }
    assert {r.id for r in store.list(Filters(short_term_only=True))} == {"m0", "m3", "m6", "m9"}
    assert [r.id for r in store.list(Filters(categories=["task"]))] == ["m4"]
    window = Filters(created_after=t0 + timedelta(days=2), created_before=t0 + timedelta(days=4))
    assert {r.id for r in store.list(window)} == {"m2", "m3"}
    assert store.count(Filters(user_id="bob")) == 5
    assert store.counts_by("user_id", Filters()) == {"alice": 5, "bob": 5}


def test_update_records_history_and_reindexes(store: Store) -> None:
    store.add([rec(1, "the deploy uses blue green")], actor="tester")
    r = store.get("m1")
    assert r is not None
    r.text = "the deploy uses canary releases"
    r.embedding = vec(99)
    store.update(r, actor="tester", reason="changed strategy")
    assert store.get("m1").text == "the deploy uses canary releases"  # type: ignore[union-attr]
    assert store.keyword_search("blue green", Filters(), 10) == []
    assert store.keyword_search("canary", Filters(), 10)[0][0] == "m1"
    assert store.vector_search(vec(99), Filters(), 1)[0][0] == "m1"
    events = store.history("m1")
    assert [e.event for e in events] == [Event.ADD, Event.UPDATE]
    assert events[1].old_text == "the deploy uses blue green"
    assert events[1].new_text == "the deploy uses canary releases"
    assert events[1].actor == "tester" and events[1].reason == "changed strategy"


def test_update_unknown_raises(store: Store) -> None:
    with pytest.raises(NotFoundError):
        store.update(rec(5, "ghost"))


def test_soft_delete_hides_from_search_and_restore_brings_back(store: Store) -> None:
    store.add([rec(1, "kiro-cli needs pty true"), rec(2, "unrelated")])
    store.set_state("m1", State.DELETED, event=Event.DELETE, reason="obsolete")
    assert [i for i, _ in store.keyword_search("kiro", Filters(), 10)] == []
    assert "m1" not in [i for i, _ in store.vector_search(vec(1), Filters(), 10)]
    assert store.get("m1").state == State.DELETED  # type: ignore[union-attr]
    store.set_state("m1", State.ACTIVE, event=Event.RESTORE)
    assert store.vector_search(vec(1), Filters(), 1)[0][0] == "m1"
    assert [e.event for e in store.history("m1")] == [Event.ADD, Event.DELETE, Event.RESTORE]


def test_archived_only_when_asked(store: Store) -> None:
    store.add([rec(1, "old task about invoices")])
    store.set_state("m1", State.ARCHIVED, event=Event.ARCHIVE)
    assert store.keyword_search("invoices", Filters(), 10) == []
    both = Filters(states=[State.ACTIVE, State.ARCHIVED])
    assert store.keyword_search("invoices", both, 10)[0][0] == "m1"
    assert store.vector_search(vec(1), both, 1)[0][0] == "m1"


def test_purge_wipes_only_the_scope(store: Store) -> None:
    store.add(
        [
            rec(1, "a", user_id="alice"),
            rec(2, "b", user_id="bob"),
            rec(3, "c", user_id="alice", agent_id="x"),
        ]
    )
    assert store.purge(Filters(user_id="alice", agent_id="x")) == 1
    assert store.get("m3") is None and store.history("m3") == []
    assert store.purge(Filters(user_id="alice")) == 1
    assert store.get("m2") is not None
    assert [i for i, _ in store.vector_search(vec(1), Filters(), 10)] == ["m2"]


def test_keyword_search_stems_normalises_and_scopes(store: Store) -> None:
    store.add(
        [
            rec(1, "Alice prefers running in the morning"),
            rec(2, "Bob ran a marathon", user_id="bob"),
            rec(3, "Breakfast is at eight"),
        ]
    )
    hits = store.keyword_search("runs", Filters(user_id="alice"), 10)
    assert [i for i, _ in hits] == ["m1"]  # stemming: runs ~ running; bob is out of scope
    assert all(0.0 <= s <= 1.0 for _, s in hits) and hits[0][1] == pytest.approx(1.0)
    assert store.keyword_search('"; DROP TABLE memories; --', Filters(), 5) == []
    assert store.keyword_search("   ", Filters(), 5) == []


def test_keyword_statistics_are_those_of_the_searched_scope(store: Store) -> None:
    """One user's memories never change another user's keyword ranking."""
    store.add(
        [
            rec(1, "kubernetes cluster upgrade planned for friday"),
            rec(2, "ansible playbook for the database hosts"),
        ]
    )
    alice = Filters(user_id="alice")
    before = store.keyword_search("kubernetes ansible", alice, 10)
    assert {i for i, _ in before} == {"m1", "m2"}
    # bob talks about kubernetes all day, in long memories: globally "kubernetes" is
    # now a common word and the average length grows
    store.add(
        [
            rec(10 + i, f"kubernetes note {i} " + "pods and nodes " * 10, user_id="bob")
            for i in range(30)
        ]
    )
    after = store.keyword_search("kubernetes ansible", alice, 10)
    assert [i for i, _ in after] == [i for i, _ in before]
    assert [s for _, s in after] == pytest.approx([s for _, s in before], abs=1e-6)


def test_a_match_on_one_word_of_many_is_a_weak_keyword_match(store: Store) -> None:
    """The best hit is scaled to 1 only when it matches enough of the query: a hit on
    one of four query words keeps a fraction of the keyword score, so it cannot outrank
    a vector-only hit on keyword weight it did not earn."""
    topics = ("kubernetes", "ansible", "terraform", "upgrade")
    store.add(
        [
            rec(i, f"{word} notes from the weekly platform meeting with the whole team")
            for i, word in enumerate(topics)
        ]
        + [rec(10 + i, f"lunch plans for friday number {i} with the team") for i in range(6)]
    )
    alice = Filters(user_id="alice")
    query = "kubernetes ansible terraform upgrade"
    weak = store.keyword_search(query, alice, 10)
    assert {i for i, _ in weak} == {"m0", "m1", "m2", "m3"}
    assert all(0.0 < s < 0.8 for _, s in weak), weak
    store.add([rec(20, "kubernetes ansible terraform upgrade checklist for the team")])
    strong = store.keyword_search(query, alice, 10)
    assert strong[0] == ("m20", pytest.approx(1.0))
    assert all(s < 0.5 for _, s in strong[1:]), strong


def test_vector_search_ranks_and_filters(store: Store) -> None:
    store.add([rec(i, f"memory {i}", user_id="alice" if i < 5 else "bob") for i in range(10)])
    hits = store.vector_search(vec(3), Filters(user_id="alice"), 3)
    assert hits[0][0] == "m3" and hits[0][1] == pytest.approx(1.0, abs=1e-5)
    assert len(hits) == 3 and all(i in {f"m{k}" for k in range(5)} for i, _ in hits)
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
    assert store.vector_search(vec(3), Filters(user_id="carol"), 3) == []
    scores = store.vector_scores(vec(3), ["m3", "m7", "missing"])
    assert set(scores) == {"m3", "m7"} and scores["m3"] == pytest.approx(1.0, abs=1e-5)


def test_find_by_hash(store: Store) -> None:
    r = rec(1, "same words")
    store.add([r])
    assert [x.id for x in store.find_by_hash(r.hash, Filters(user_id="alice"))] == ["m1"]
    assert store.find_by_hash(r.hash, Filters(user_id="bob")) == []


def test_locate_finds_the_admitted_records_by_text_or_cited_file(store: Store) -> None:
    day, other_day = "memory/2026-03-04.md", "memory/2026-03-05.md"

    def fact(i: int, path: str, lines: tuple[int, int], **kw: object) -> MemoryRecord:
        kw.setdefault("state", State.SUPERSEDED)
        source = Source(path=path, start_line=lines[0], end_line=lines[1])
        return rec(i, f"fact {i}", origin=Origin.FACT, source=source, **kw)

    store.add(
        [
            fact(1, day, (24, 24), agent_id="ops"),
            fact(2, day, (30, 31), agent_id="ops", state=State.ACTIVE),
            fact(3, day, (7, 7), agent_id="dev"),
            fact(4, day, (5, 6), agent_id="ops", user_id="bob"),
            fact(5, other_day, (2, 2), agent_id="ops"),
            rec(6, "said once", agent_id="ops", origin=Origin.FACT, state=State.SUPERSEDED),
            rec(7, "said once", agent_id="ops", origin=Origin.TURN, state=State.SUPERSEDED),
        ]
    )
    retired = Filters(user_id="alice", origins=[Origin.FACT], states=[State.SUPERSEDED])
    by_file = store.locate(retired, [], [day])
    assert sorted((x.id, x.agent_id, x.path, x.start_line, x.end_line) for x in by_file) == [
        ("m1", "ops", day, 24, 24),
        ("m3", "dev", day, 7, 7),
    ]
    by_text = store.locate(retired, [content_hash("said once"), content_hash("never")], [])
    assert [(x.id, x.hash) for x in by_text] == [("m6", content_hash("said once"))]
    assert store.locate(retired, [], []) == []
    both = store.locate(
        retired.model_copy(update={"user_id": None}), [content_hash("fact 5")], [day]
    )
    assert sorted(x.id for x in both) == ["m1", "m3", "m4", "m5"]


def test_atomic_rolls_back_everything(store: Store) -> None:
    with pytest.raises(RuntimeError), store.atomic():
        store.add([rec(1, "inside a failed transaction")])
        store.kv_set("offset", 42)
        raise RuntimeError("boom")
    assert store.get("m1") is None and store.kv_get("offset") is None
    assert store.keyword_search("transaction", Filters(), 5) == []


def test_embedding_cache_and_kv(store: Store) -> None:
    store.cache_put("model-a", {"h1": vec(1), "h2": vec(2)})
    got = store.cache_get("model-a", ["h1", "h3"])
    assert set(got) == {"h1"} and np.allclose(got["h1"], vec(1))
    assert store.cache_get("model-b", ["h1"]) == {}
    store.kv_set("digest:offset", {"file": "a.md", "bytes": 10})
    assert store.kv_get("digest:offset") == {"file": "a.md", "bytes": 10}
    store.set_meta("embed_model", "x")
    assert store.get_meta("embed_model") == "x"


def test_long_id_lists_cross_the_binding_batch(store: Store) -> None:
    """SQLite binds lists 500 values per statement, PostgreSQL as one array: the same
    answers either way, in the order asked for."""
    n = 1201
    store.add([rec(i, f"row {i}", user_id="bulk") for i in range(n)])
    ids = [f"m{i}" for i in reversed(range(n))]
    assert [r.id for r in store.get_many([*ids, "nope"])] == ids
    assert store.existing_ids(["nope", *ids]) == set(ids)
    assert store.count(Filters(ids=ids[:700])) == 700
    store.cache_put("model-a", {f"h{i}": vec(i) for i in range(n)})
    assert len(store.cache_get("model-a", [f"h{i}" for i in range(n)] + ["h1"])) == n
    assert store.purge(Filters(user_id="bulk")) == n
    assert store.get_many(ids) == [] and store.history("m7") == []


def test_empty_lists_in_filters_match_nothing(store: Store) -> None:
    store.add([rec(1, "one", category="task")])
    assert store.count(Filters(ids=[])) == 0 and store.list(Filters(categories=[])) == []
    assert store.count(Filters(categories=["task"], ids=["m1"])) == 1
    assert store.get_many([]) == [] and store.existing_ids([]) == set()
    assert store.cache_get("model-a", []) == {}


def test_kv_and_meta_overwrite_and_list(store: Store) -> None:
    store.kv_set("a", 1)
    store.kv_set("a", [2])
    store.kv_set("b", None)  # removing what is not there is fine
    store.set_meta("m", "x")
    store.set_meta("m", "y")
    assert store.kv_items() == {"a": [2]} and store.meta_items()["m"] == "y"
    store.kv_set("a", None)
    assert store.kv_get("a") is None


def test_export_then_import_copies_records_history_and_cache(store: Store, tmp_path: Path) -> None:
    from memoryd.store import open_store

    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    store.add([rec(i, f"note {i}", created_at=t0 + timedelta(hours=i)) for i in range(5)])
    first = store.get("m1")
    assert first is not None
    first.text = "note one, edited"
    store.update(first, actor="me", reason="typo")
    store.set_state("m2", State.DELETED, event=Event.DELETE)
    store.cache_put("model-a", {"h1": vec(1)})
    records, history, after = store.export_memories(0, 3)
    more, more_history, _ = store.export_memories(after, 10)
    assert [r.id for r in records + more] == [f"m{i}" for i in range(5)]
    assert all(r.embedding is not None for r in records + more)

    copy = open_store(str(tmp_path / "copy.db"))
    try:
        assert copy.import_memories(records + more, history + more_history) == 5
        assert copy.import_memories(records, history) == 0  # already there: skipped
        for i in range(5):
            a, b = store.get(f"m{i}"), copy.get(f"m{i}")
            assert a is not None and b is not None
            assert a.model_dump() == b.model_dump()
        assert [
            (h.event, h.old_text, h.new_text, h.actor, h.reason) for h in copy.history("m1")
        ] == [(h.event, h.old_text, h.new_text, h.actor, h.reason) for h in store.history("m1")]
        copy.import_cache(store.export_cache(None, 10))
        assert np.allclose(copy.cache_get("model-a", ["h1"])["h1"], vec(1))
    finally:
        copy.close()


def test_odd_unicode_roundtrips(store: Store) -> None:
    text = "שלום עולם e\u0301 \U0001f600 日本語のメモ"
    store.add([rec(1, text)])
    assert store.get("m1").text == text  # type: ignore[union-attr]
    assert store.keyword_search("日本語のメモ", Filters(), 5)[0][0] == "m1"


def test_iter_all_visits_everything_once(store: Store) -> None:
    store.add([rec(i, f"row {i}") for i in range(25)])
    assert sorted(r.id for r in store.iter_all(Filters(), batch=7)) == sorted(
        f"m{i}" for i in range(25)
    )


def test_second_handle_sees_writes_of_the_first(store: Store, store_url: str) -> None:
    from memoryd.store import open_store

    other = open_store(store_url)
    try:
        assert other.vector_search(vec(1), Filters(), 5) == []  # builds its index now
        store.add([rec(1, "written by another process")])
        assert other.vector_search(vec(1), Filters(), 5)[0][0] == "m1"
        store.set_state("m1", State.DELETED, event=Event.DELETE)
        assert other.vector_search(vec(1), Filters(), 5) == []
    finally:
        other.close()


# -- run locks: exactly one holder across handles and processes ----------------------------

_LOCK_CHILD = """
import sys
from memoryd.store import open_store

store = open_store(sys.argv[1])
print("ready", flush=True)
sys.stdin.readline()
with store.run_lock("nightly-dream", ttl_s=float(sys.argv[2])) as got:
    print("won" if got else "lost", flush=True)
    sys.stdin.readline()
store.close()
"""


def _lock_child(store_url: str, ttl_s: float = 3600) -> subprocess.Popen[str]:
    child = subprocess.Popen(
        [sys.executable, "-c", _LOCK_CHILD, store_url, str(ttl_s)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    return child


def _say(child: subprocess.Popen[str], line: str) -> None:
    assert child.stdin is not None
    child.stdin.write(line + "\n")
    child.stdin.flush()


def test_run_lock_is_exclusive_until_released(store: Store, store_url: str) -> None:
    from memoryd.store import open_store

    other = open_store(store_url)
    try:
        with store.run_lock("digest") as got:
            assert got is True
            with other.run_lock("digest") as again:
                assert again is False
            with store.run_lock("digest") as same_handle:
                assert same_handle is False  # not re-entrant: one holder, full stop
            with other.run_lock("dream") as different:
                assert different is True
        with other.run_lock("digest") as after:
            assert after is True
    finally:
        other.close()


def test_two_processes_contend_and_exactly_one_wins(store_url: str) -> None:
    children = [_lock_child(store_url), _lock_child(store_url)]
    try:
        for child in children:
            _say(child, "go")
        results = sorted(c.stdout.readline().strip() for c in children)  # type: ignore[union-attr]
        assert results == ["lost", "won"]
        for child in children:
            _say(child, "done")
            assert child.wait(timeout=30) == 0
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()


def test_a_crashed_holder_releases_the_lock(store: Store, store_url: str) -> None:
    child = _lock_child(store_url, ttl_s=0.5)
    _say(child, "go")
    assert child.stdout is not None and child.stdout.readline().strip() == "won"
    with store.run_lock("nightly-dream") as got:
        assert got is False
    child.kill()  # SIGKILL: no cleanup runs
    child.wait()
    deadline = time.monotonic() + 15
    while True:  # a real process died, so real time passes: PostgreSQL ends its session,
        with store.run_lock("nightly-dream") as got:  # SQLite lets the lease lapse
            if got:
                break
        assert time.monotonic() < deadline, "the dead holder's lock was never released"
        time.sleep(0.05)


# -- several writers: read-modify-write inside atomic() is never lost ----------------------


def test_read_modify_write_in_atomic_is_never_lost(store: Store, store_url: str) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from memoryd.store import open_store

    store.add([rec(1, "version 0")])
    handles = [store, open_store(store_url)]  # two connections: two servers in miniature

    def work(n: int) -> None:
        s = handles[n % 2]
        for _ in range(15):
            with s.atomic():  # a run list, an offset: what pipelines keep in kv
                s.kv_set("runs", [*(s.kv_get("runs") or []), n])
            with s.atomic():
                r = s.get("m1")
                assert r is not None
                s.update(r.model_copy(update={"text": f"{r.text} +{n}"}))

    try:
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(work, range(4)))
    finally:
        handles[1].close()
    assert sorted(store.kv_get("runs")) == sorted([0, 1, 2, 3] * 15)
    history = store.history("m1")
    assert len(history) == 1 + 60
    for before, after in itertools.pairwise(history):
        assert after.old_text == before.new_text  # each change saw the one before it
    assert store.get("m1").text.count("+") == 60  # type: ignore[union-attr]


def test_rank_facts_are_the_records_own_and_follow_every_write(store: Store) -> None:
    """Search ranks candidates from the store's RankFacts before reading records:
    they must say what the records say (event time, evergreen, speaker/person),
    including after an update, and leave deleted memories out."""
    day = datetime(2025, 3, 1, 12, tzinfo=UTC)
    store.add(
        [
            rec(1, "plain", created_at=day),
            rec(2, "dated", created_at=day, event_at=day - timedelta(days=40)),
            rec(3, "curated", metadata={"evergreen": True}, created_at=day),
            rec(4, "said", metadata={"speaker": "Caroline Smith"}, created_at=day),
            rec(5, "about", metadata={"person": "Mel", "evergreen": "yes"}, created_at=day),
            rec(6, "odd", metadata={"speaker": 7, "person": ["x"]}, created_at=day),
            rec(7, "gone", created_at=day),
        ]
    )
    store.set_state("m7", State.DELETED, event=Event.DELETE)
    ids = [f"m{i}" for i in range(1, 9)]
    expected = {r.id: facts_of(r) for r in store.get_many(ids) if r.state != State.DELETED}
    assert set(expected) == {f"m{i}" for i in range(1, 7)}
    assert store.rank_facts(ids) == expected
    assert expected["m2"].when == (day - timedelta(days=40)).timestamp()
    assert expected["m3"].evergreen and not expected["m5"].evergreen  # only JSON true
    assert expected["m4"].names == {"caroline smith", "caroline"}
    assert expected["m6"].names == frozenset()
    changed = store.get("m1")
    assert changed is not None
    changed.metadata = {"speaker": "Jon", "evergreen": True}
    changed.event_at = day - timedelta(days=3)
    store.update(changed)
    assert store.rank_facts(["m1"]) == {"m1": facts_of(changed)}
    assert store.rank_facts([]) == {}


def test_rank_facts_place_a_turn_in_its_conversation(store: Store) -> None:
    """Search re-ranks turns by their neighbours and what they say from the store's
    RankFacts, never reading records: a turn's conversation (scope, metadata.session as
    any JSON, source file), position, length in words, question mark and stated time must
    be what the record says, on every store, and follow an update."""
    diary = Source(path="memory/d.md")
    store.add(
        [
            rec(1, "a turn, long enough?", agent_id="bot", run_id="r1",
                metadata={"turn": 3, "session": "s"}),
            rec(2, "a diary turn", metadata={"turn": 1}, source=diary),
            rec(3, "no turn at all"),
            rec(4, "object session", metadata={"turn": 4, "session": {"b": 1, "a": [2, "é"]}}),
            rec(5, "number session", metadata={"turn": 5, "session": 7}),
            rec(6, "true session", metadata={"turn": 6, "session": True}),
            rec(7, "null session", metadata={"turn": 7, "session": None}),
            rec(8, "a bool is no turn", metadata={"turn": True}),
            rec(9, "a float is no turn", metadata={"turn": 2.0}),
            rec(10, "我们明天去北京吗？", metadata={"turn": 0, "session": "s"}),
            rec(11, "We moved here last May.", metadata={"turn": 8, "session": "s"}),
            rec(12, "Never push to main directly.", metadata={"turn": 9, "session": "s"}),
        ]
    )  # fmt: skip
    ids = [f"m{i}" for i in range(1, 13)]
    expected = {r.id: facts_of(r) for r in store.get_many(ids)}
    assert store.rank_facts([*ids, "missing"]) == expected
    m1 = expected["m1"]
    assert m1.turn is not None and m1.turn[1] == 3 and (m1.words, m1.asks) == (4, True)
    assert (m1.dated, expected["m11"].dated) == (False, True)
    assert (m1.directs, expected["m12"].directs) == (False, True)  # an instruction
    assert expected["m2"].turn is not None and "memory/d.md" in expected["m2"].turn[0]
    assert expected["m2"].turn[0] != expected["m7"].turn[0]  # type: ignore[union-attr]
    for no_turn in ("m3", "m8", "m9"):
        assert expected[no_turn].turn is None and expected[no_turn].words == 0
    assert (expected["m10"].words, expected["m10"].asks) == (8, True)  # CJK: one word each
    changed = store.get("m5")
    assert changed is not None
    changed.metadata = {"turn": 9, "session": 7}
    changed.text = "now a statement"
    store.update(changed)
    assert store.rank_facts(["m5"]) == {"m5": facts_of(changed)}
    assert store.rank_facts(["m5"])["m5"].turn == (expected["m5"].turn[0], 9)  # type: ignore[index]


def test_searches_while_others_write_and_delete_never_fail(store: Store) -> None:
    """A search runs while other threads add and delete (a server's requests): it
    answers from the rows as they were or as they are, never an error (the index's
    scope mask and its rows came from two moments: 500s in the soak test)."""
    import threading

    store.add([rec(i, f"note {i} about deploys") for i in range(50)])
    stop = threading.Event()
    errors: list[BaseException] = []

    def search() -> None:
        try:
            while not stop.is_set():
                assert store.vector_search(vec(3), Filters(user_id="alice"), 10)
                assert store.keyword_search("deploys", Filters(user_id="alice"), 10)
                store.rank_facts([f"m{i}" for i in range(0, 2000, 7)])
        except BaseException as exc:  # reported in the test's thread
            errors.append(exc)

    readers = [threading.Thread(target=search) for _ in range(6)]
    for t in readers:
        t.start()
    try:
        for i in range(50, 2000):  # one write at a time, deleting past a compaction
            store.add([rec(i, f"note {i} about deploys")])
            if i % 5 < 3:
                store.set_state(f"m{i - 50}", State.DELETED, event=Event.DELETE)
    finally:
        stop.set()
        for t in readers:
            t.join()
    assert not errors, errors[:3]


def test_keyword_scores_equal_the_embedded_stores(store: Store, tmp_path: Path) -> None:
    """Every store scores keyword matches exactly as the embedded store's BM25 does, to
    1e-6, on the same data: the same analyser, the same per-scope statistics, the same
    normalisation (a PostgreSQL deployment ranks like the SQLite it grew out of)."""
    from memoryd.filters import parse
    from memoryd.store import open_store

    reference = open_store(str(tmp_path / "reference.db"))
    rng = np.random.default_rng(34)
    vocab = [
        "deploy",
        "deploys",
        "deployed",
        "kubernetes",
        "cluster",
        "Zürich",
        "café",
        "running",
        "runner",
        "the",
        "a",
        "of",
        "invoice",
        "invoices",
        "budget",
        "quarterly",
        "Lisbon",
        "offsite",
        "river",
        "hotel",
        "postgres",
        "index",
        "vacuum",
        "replica",
        "2024",
        "migration",
        "ops",
        "dev",
        "night",
    ]
    records = []
    for i in range(240):
        text = " ".join(rng.choice(vocab, size=int(rng.integers(1, 14))))
        records.append(
            rec(
                i,
                text,
                user_id=("alice", "bob", "carol")[i % 3],
                agent_id=("dev", "ops", None)[i % 4 % 3],
                run_id="r1" if i % 5 == 0 else None,
                category=("fact", "task")[i % 2],
                context="## Ops notes" if i % 7 == 0 else None,
            )
        )
    records.append(rec(900, "。。。", user_id="alice"))  # no word at all: counts for nothing
    for s in (store, reference):
        s.add(records)
        s.update(_updated(s, "m3", "the quarterly budget moved to Lisbon"), event=Event.UPDATE)
        for mid in ("m5", "m10", "m11"):
            s.set_state(mid, State.DELETED, event=Event.DELETE)
    queries = ["deploy the kubernetes cluster", "Quarterly invoices in Zürich", "the", "café 2024"]
    scopes = [
        Filters(),
        Filters(user_id="alice"),
        Filters(user_id="bob", agent_id="ops"),
        Filters(user_id="alice", long_term_only=True),
        Filters(user_id="carol", run_id="r1"),
        Filters(user_id="alice", states=[State.ACTIVE, State.DELETED]),
        Filters(user_id="bob", categories=["task"]),  # beyond the kept statistics
        Filters(ids=[f"m{i}" for i in range(0, 240, 2)]),
        Filters(where=parse({"OR": [{"user_id": "bob"}, {"agent_id": "dev"}]})),  # filter language
    ]
    compared = 0
    for query in queries:
        for f in scopes:
            want = dict(reference.keyword_search(query, f, 1000))
            got = dict(store.keyword_search(query, f, 1000))
            assert got.keys() == want.keys(), (query, f)
            for mid, score in want.items():
                assert abs(got[mid] - score) <= 1e-6, (query, f, mid, got[mid], score)
            top = [s for _, s in store.keyword_search(query, f, 5)]
            assert top == pytest.approx(sorted(want.values(), reverse=True)[:5], abs=1e-6)
            compared += len(want)
    reference.close()
    assert compared > 1000


def _updated(store: Store, memory_id: str, text: str) -> MemoryRecord:
    found = store.get(memory_id)
    assert found is not None
    found.text = text
    return found
