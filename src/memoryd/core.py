"""``Memory``: the one object the CLI, the HTTP API, MCP and the pipelines call.

It validates input, embeds (through a content-hash cache), extracts and
reconciles facts (``infer=True``), writes through the store and runs hybrid
search with time decay, tiers and the shared pool. Everything is synchronous;
async callers run it in a thread (see ``memoryd.api``).
"""

from __future__ import annotations

import builtins
import json
import math
import threading
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import numpy as np

from memoryd import conversation
from memoryd.conversation import split_to_window
from memoryd.embed import Embedder, create_embedder, normalize
from memoryd.errors import (
    InvalidInputError,
    LimitExceededError,
    ModelMismatchError,
    NotFoundError,
    ReadOnlyError,
)
from memoryd.extract import (
    Decision,
    Known,
    NewFact,
    ThresholdReconciler,
    make_extractor,
    make_reconciler,
)
from memoryd.extract.claims import claim, claims_unlike
from memoryd.extract.classify import classify_fact
from memoryd.extract.noise import without_speaker
from memoryd.filters import EVIDENCE_TURN
from memoryd.llm import LLM, create_llm
from memoryd.models import (
    CombinedHits,
    Event,
    Filters,
    HistoryEntry,
    Located,
    MemoryEvent,
    MemoryRecord,
    Origin,
    RankFacts,
    ScoreParts,
    SearchHit,
    Source,
    State,
    content_hash,
    utcnow,
)
from memoryd.recall import RecallLog
from memoryd.search import hybrid_candidates
from memoryd.search import turns as turn_rank
from memoryd.search.current import (
    Evidence,
    asked_attribute_first,
    newer_first,
    query_terms,
    stating_first,
)
from memoryd.search.decay import blend, facts_weight
from memoryd.search.entities import entity_boost
from memoryd.search.hybrid import Candidate, keyword_side
from memoryd.search.pool import merge, pool_filters
from memoryd.search.text import asks_how_wanted, asks_when, names_in
from memoryd.search.tiers import memory_type, run_date
from memoryd.settings import Settings
from memoryd.store import Store, ann, open_store
from memoryd.validate import check_id, check_messages, check_metadata, check_text, check_top_k

if TYPE_CHECKING:
    from memoryd.access import Principal
    from memoryd.scope import Scope

Clock = Callable[[], datetime]
#: kv prefix of idempotency keys recorded by ``Memory.add`` (value: actor and events)
IDEMPOTENCY_PREFIX = "add:idem:"
#: metadata of a fact: the same fact in other words, said with it (an acknowledgement that
#: restates it), compared when a later fact may replace it
SAID_ALSO = "said_also"
MAX_WORDINGS = 3
#: lines between a fact's own and a turn that restated it (said_also) in one exchange
RESTATED_WITHIN = 3
SIBLINGS_SCANNED = 200  # facts of one diary day read to find an exchange's other wording
CHANGES_FOLLOWED = 5  # later changes followed from a superseded fact to the current one


def wordings_of(record: MemoryRecord) -> tuple[str, ...]:
    """The other words ``record``'s fact was said in (metadata ``said_also``)."""
    said = record.metadata.get(SAID_ALSO)
    return tuple(t for t in said if isinstance(t, str)) if isinstance(said, list) else ()


class Memory:
    """Long-term memory for agents: add, search, get, list, update, delete, history."""

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        store: Store | None = None,
        embedder: Embedder | None = None,
        clock: Clock = utcnow,
        id_factory: Callable[[], str] = lambda: str(uuid.uuid4()),
        allow_model_change: bool = False,
        llm: LLM | None = None,
    ) -> None:
        self.settings = settings or Settings()
        self.store = store or open_store(self.settings.store_url, self.settings.store)
        self.embedder = embedder or create_embedder(self.settings.embed)
        self.clock = clock
        self.store.clock = clock  # one clock: the store stamps updates and history with it
        self.new_id = id_factory
        self._query_cache: dict[str, np.ndarray] = {}
        # a search's keyword side runs here while its query is embedded (the model and
        # the store's I/O release the GIL); threads start on first use
        self._side = ThreadPoolExecutor(max_workers=8, thread_name_prefix="memoryd-keywords")
        self.llm = llm if llm is not None else create_llm(self.settings.llm)
        s = self.settings
        self.extractor = make_extractor(self.llm, s.extract, s.limits)
        self.reconciler = make_reconciler(self.llm, s.extract, s.limits)
        # the offline rules, for what is never sent to an LLM (archived facts a change closes)
        self._offline = ThresholdReconciler(s.extract)
        # reconciling one scope is read-decide-write: two adds to the same scope take
        # turns (striped locks: bounded, and different scopes rarely share a stripe)
        self._scope_locks = [threading.Lock() for _ in range(64)]
        # which memories searches return, for promotion into MEMORY.md (memoryd.recall)
        self.recalls = RecallLog(self.store, enabled=self.settings.promote.record_recalls)
        self._check_model(allow_model_change)

    # -- lifecycle ---------------------------------------------------------------------------
    def _check_model(self, allow_change: bool) -> None:
        name, dim = self.store.get_meta("embed_model"), self.store.get_meta("embed_dim")
        if name is None:
            self.store.set_meta("embed_model", self.embedder.name)
            self.store.set_meta("embed_dim", str(self.embedder.dim))
        elif (name != self.embedder.name or dim != str(self.embedder.dim)) and not allow_change:
            raise ModelMismatchError(
                f"the store at {self.store.url} was built with embedding model {name} "
                f"(dim {dim}); the configured model is {self.embedder.name} "
                f"(dim {self.embedder.dim})",
                "run `memoryd reindex` to re-embed every memory with the configured model, "
                "or configure the original model again",
            )

    def close(self) -> None:
        self._side.shutdown(wait=True)
        self.recalls.close()
        self.store.close()

    def stay_ready(self) -> None:
        """Say this process lives long (the HTTP server): a store's in-memory index that
        outgrows a linear scan may then build its nearest-neighbour graph in the
        background (:mod:`memoryd.store.ann`); short-lived processes use the graph
        saved in the index snapshot, or scan."""
        ann.build_in_background()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def scope(
        self,
        caller: Principal,
        user_id: str | None = None,
        agent_id: str | None = None,
        *,
        actor: str | None = None,
    ) -> Scope:
        """What ``caller`` may read and change as ``user_id`` (and ``agent_id``): the one
        object every face calls (:mod:`memoryd.scope` holds the rules)."""
        from memoryd.scope import Scope

        return Scope(self, caller, user_id, agent_id, actor=actor)

    # -- embedding ---------------------------------------------------------------------------
    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors for ``texts``; text already embedded by this model is never embedded again.

        Text longer than the model's window is embedded window by window and the
        windows averaged, instead of silently dropping everything past the window.
        """
        model = self.embedder.name
        hashes = [content_hash(t) for t in texts]
        cached = self.store.cache_get(model, hashes)
        todo = list(dict.fromkeys(h for h in hashes if h not in cached))
        if todo:
            text_of = dict(zip(hashes, texts, strict=True))
            fresh = self._embed_windowed([text_of[h] for h in todo])
            new = dict(zip(todo, fresh, strict=True))
            self.store.cache_put(model, new)
            cached.update(new)
        if not texts:
            return np.zeros((0, self.embedder.dim), dtype=np.float32)
        return np.stack([cached[h] for h in hashes])

    def _embed_windowed(self, texts: builtins.list[str]) -> builtins.list[np.ndarray]:
        limit = max(16, self.embedder.max_tokens - 2)  # room for [CLS] and [SEP]
        pieces: builtins.list[str] = []
        owners: builtins.list[int] = []
        for n, text in enumerate(texts):
            windows = [text]
            if len(text) > limit and self.embedder.count_tokens(text) > limit:
                windows = split_to_window(text, limit, self.embedder.count_tokens)
            pieces.extend(windows)
            owners.extend([n] * len(windows))
        vectors = self.embedder.embed(pieces)
        sums = np.zeros((len(texts), vectors.shape[1]), dtype=np.float32)
        np.add.at(sums, owners, vectors)
        return list(normalize(sums))

    def embed_query(self, query: str) -> np.ndarray:
        vec = self._query_cache.get(query)
        if vec is None:
            vec = self.embedder.embed([query])[0]
            if len(self._query_cache) > 512:
                self._query_cache.clear()
            self._query_cache[query] = vec
        return vec

    # -- writes ------------------------------------------------------------------------------
    def add(
        self,
        text: str | None = None,
        *,
        messages: Sequence[dict[str, Any]] | None = None,
        texts: Sequence[str] | None = None,
        user_id: str,
        agent_id: str | None = None,
        run_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        category: str | None = None,
        origin: Origin = Origin.API,
        source: Source | None = None,
        context: str | None = None,
        event_at: datetime | None = None,
        memory_id: str | None = None,
        actor: str | None = None,
        infer: bool = False,
        prompt: str | None = None,
        idempotency_key: str | None = None,
        dry_run: bool = False,
    ) -> builtins.list[MemoryEvent]:
        """Remember ``text``, each of ``texts``, or each message's content.

        ``infer=False`` stores the text as given; identical text already active in
        the same scope is not stored twice (the event is NONE and names it).
        ``texts`` are independent memories written together: one model run, one
        transaction, every text checked before any is written (the bulk path of
        an agent or an import that has many facts at once).

        ``infer=True`` extracts facts (by the LLM with ``prompt`` or the default
        extraction prompt; offline without an LLM) and reconciles each with the
        similar memories of its dedup scope: ADD, UPDATE, DELETE or NONE. The
        scope is the same run for short-term (``run_id`` set) and every long-term
        memory of the user/agent otherwise (seed 001). Either every decision is
        written or, on any failure, none.

        ``idempotency_key``: an add with a key that was already written returns the
        first add's events and writes nothing; the key is recorded in the same
        transaction as the writes, so a caller killed at any point can simply repeat
        the call (the pipelines do). ``dry_run=True`` extracts and reconciles but
        writes nothing: the events say what would happen.
        """
        limits = self.settings.limits
        check_id(user_id, "user_id", limits, required=True)
        check_id(agent_id, "agent_id", limits)
        check_id(run_id, "run_id", limits)
        metadata = dict(check_metadata(metadata, limits))
        category = category or metadata.get("category")
        if category is not None:
            category = str(category)
            metadata["category"] = category
        if prompt is not None and (not isinstance(prompt, str) or not prompt.strip()):
            raise InvalidInputError(
                "the extraction prompt is empty", "pass a prompt, or leave it out for the default"
            )
        input_limits = (
            limits.model_copy(update={"max_text_chars": self.settings.extract.max_input_chars})
            if infer
            else limits
        )
        if sum(x is not None for x in (text, texts, messages)) > 1:
            raise InvalidInputError(
                "pass one of text, texts or messages",
                "add(text=...), add(texts=[...]) or add(messages=[...])",
            )
        check_messages(messages, limits)
        if infer and memory_id is not None:
            raise InvalidInputError(
                "memory_id cannot be chosen when infer=True",
                "leave memory_id out; extraction decides how many memories to write",
            )
        bodies: builtins.list[str] = []
        roles: builtins.list[str | None] = []
        if messages is None or infer:  # checked before anything is written
            bodies, roles = _input_texts(text, texts, messages, input_limits)
        turns: builtins.list[MemoryEvent] = []
        if messages is not None and not (infer and dry_run):
            # a conversation is stored turn by turn; with infer, beside the facts as their
            # evidence
            turns = self._add_turns(
                messages,
                user_id=user_id,
                agent_id=agent_id,
                run_id=run_id,
                metadata=metadata,
                category=category,
                at=event_at,
                actor=actor,
                idempotency_key=f"{idempotency_key}:turns"
                if infer and idempotency_key
                else idempotency_key,
                dry_run=dry_run,
                evidence=infer,
            )
            if not infer:
                return turns
        if idempotency_key is not None:
            replayed = self._replayed(idempotency_key)
            if replayed is not None:
                return replayed
        if infer:
            return self._add_inferred(
                bodies,
                roles,
                evidence=[e.id for e in turns if e.id is not None],
                user_id=user_id,
                agent_id=agent_id,
                run_id=run_id,
                metadata=metadata,
                category=category,
                source=source,
                event_at=event_at,
                actor=actor,
                prompt=prompt,
                idempotency_key=idempotency_key,
                dry_run=dry_run,
            )
        now = self.clock()
        scope = Filters(user_id=user_id, agent_id=agent_id, run_id=run_id)
        events: builtins.list[MemoryEvent] = []
        records: builtins.list[MemoryRecord] = []
        for n, (body, role) in enumerate(zip(bodies, roles, strict=True)):
            meta = dict(metadata)
            if role is not None:
                meta["role"] = role
            record = MemoryRecord(
                id=memory_id
                if (memory_id and len(bodies) == 1)
                else (f"{memory_id}-{n}" if memory_id else self.new_id()),
                text=body,
                user_id=user_id,
                agent_id=agent_id,
                run_id=run_id,
                category=category,
                metadata=meta,
                origin=origin,
                source=source,
                context=context,
                created_at=now,
                updated_at=now,
                event_at=event_at,
            )
            same = self.store.find_by_hash(record.hash, scope)
            earlier = next((r.id for r in records if r.hash == record.hash), None)
            if same or earlier:  # the NONE names the memory that holds the text
                existing = same[0].id if same else earlier
                events.append(MemoryEvent(id=existing, memory=body, event=Event.NONE))
                continue
            records.append(record)
            events.append(MemoryEvent(id=record.id, memory=body, event=Event.ADD))
        if dry_run:
            return events
        # the model runs before the write lock is taken: concurrent adds then share
        # batches (embed/coalesce.py) instead of queueing for the lock one model run each
        self.embed_records(records)
        with self.store.atomic():
            if idempotency_key is not None and (again := self._replayed(idempotency_key)):
                return again
            self.write_records(records, actor=actor)
            self._remember(idempotency_key, actor, events)
        return events

    def _add_turns(
        self,
        messages: Sequence[dict[str, Any]],
        *,
        user_id: str,
        agent_id: str | None,
        run_id: str | None,
        metadata: dict[str, Any],
        category: str | None,
        at: datetime | None,
        actor: str | None,
        idempotency_key: str | None,
        dry_run: bool,
        evidence: bool = False,
    ) -> builtins.list[MemoryEvent]:
        """A conversation stored turn by turn with context (:mod:`memoryd.conversation`).

        ``evidence``: the turns are stored beside the facts extracted from them, as
        their evidence (metadata ``evidence_turn``): searchable, left out of lists.

        The previous turn of the same (user, agent, run, ``metadata["session"]``) is
        remembered, so a conversation sent over several calls stays linked. A turn
        already stored with the same text and context is not stored again (NONE).
        Messages may be as long as the HTTP body allows: a long one is stored as
        consecutive pieces that each fit the embedding model.
        """
        limits = self.settings.limits
        long_ok = limits.model_copy(
            update={"max_text_chars": max(limits.max_text_chars, limits.max_body_bytes)}
        )
        turns = conversation.turns_from_messages(
            messages, lambda t, name: check_text(t, long_ok, name), at=at
        )
        if idempotency_key is not None and (replayed := self._replayed(idempotency_key)):
            return replayed
        session = metadata.get("session")
        # (a JSON list: PostgreSQL text may not hold the NUL a plain separator would need)
        key = "conversation:last:" + json.dumps([user_id, agent_id, run_id, session])
        scope = Filters(user_id=user_id, agent_id=agent_id, run_id=run_id)
        stripe = hash((user_id, agent_id, run_id)) % len(self._scope_locks)
        with self._scope_locks[stripe]:
            last = self.store.kv_get(key)
            previous = (
                conversation.Turn(speaker=str(last["speaker"]), text=str(last["text"]))
                if isinstance(last, dict) and {"speaker", "text"} <= last.keys()
                else None
            )
            # the turn's place in its conversation, across calls: search lifts a hit whose
            # neighbouring turns match too (search.neighbour_boost)
            base = last.get("turns", 0) if isinstance(last, dict) else 0
            base = base if isinstance(base, int) and base >= 0 else 0
            parts = conversation.pieces(
                turns,
                embed=self.embed_texts,
                count_tokens=self.embedder.count_tokens,
                max_tokens=self.embedder.max_tokens,
                previous=previous,
            )
            now = self.clock()
            events: builtins.list[MemoryEvent] = []
            records: builtins.list[MemoryRecord] = []
            for piece in parts:
                meta = {
                    **metadata,
                    "speaker": piece.turn.speaker,
                    "message": piece.message,
                    "turn": base + piece.message,
                }
                if piece.turn.role is not None:
                    meta["role"] = piece.turn.role
                if piece.part is not None:
                    meta["piece"] = list(piece.part)
                if evidence:
                    meta[EVIDENCE_TURN] = True
                record = MemoryRecord(
                    id=self.new_id(),
                    text=piece.text,
                    user_id=user_id,
                    agent_id=agent_id,
                    run_id=run_id,
                    category=category,
                    metadata=meta,
                    origin=Origin.TURN,
                    context=piece.context,
                    created_at=now,
                    updated_at=now,
                    event_at=piece.turn.at,
                )
                record.embedding = piece.vector
                same = [
                    r for r in self.store.find_by_hash(record.hash, scope) if _same_turn(r, record)
                ]
                if same or any(r.hash == record.hash and _same_turn(r, record) for r in records):
                    existing = same[0].id if same else None
                    events.append(
                        MemoryEvent(
                            id=existing, memory=piece.text, event=Event.NONE, message=piece.message
                        )
                    )
                    continue
                records.append(record)
                events.append(
                    MemoryEvent(
                        id=record.id, memory=piece.text, event=Event.ADD, message=piece.message
                    )
                )
            if dry_run:
                return events
            with self.store.atomic():
                if idempotency_key is not None and (again := self._replayed(idempotency_key)):
                    return again
                self.write_records(records, actor=actor)
                tail = parts[-1]
                self.store.kv_set(
                    key,
                    {
                        "speaker": tail.turn.speaker,
                        "text": tail.text,
                        "turns": base + tail.message + 1,
                    },
                )
                self._remember(idempotency_key, actor, events)
        return events

    def _add_inferred(
        self,
        texts: builtins.list[str],
        roles: builtins.list[str | None],
        *,
        user_id: str,
        agent_id: str | None,
        run_id: str | None,
        metadata: dict[str, Any],
        category: str | None,
        source: Source | None,
        event_at: datetime | None,
        actor: str | None,
        prompt: str | None,
        idempotency_key: str | None = None,
        dry_run: bool = False,
        evidence: builtins.list[str] | None = None,
    ) -> builtins.list[MemoryEvent]:
        now = self.clock()
        body = "\n".join(
            f"{role}: {t}" if role else t for t, role in zip(texts, roles, strict=True)
        )
        facts = self.extractor.extract(body, prompt, now.date())
        facts = list(dict.fromkeys(f for f in (f.strip() for f in facts) if f))
        if not facts:
            return []
        vectors = self.embed_texts(facts)
        scope = dedup_scope(user_id, agent_id, run_id)
        stripe = hash((user_id, agent_id, run_id)) % len(self._scope_locks)
        with self._scope_locks[stripe]:
            pending: builtins.list[NewFact] = []
            events: builtins.list[MemoryEvent | None] = [None] * len(facts)
            for n, (fact, vector) in enumerate(zip(facts, vectors, strict=True)):
                same = self.store.find_by_hash(content_hash(fact), scope)
                if same:  # already stored verbatim: no need to ask anyone
                    events[n] = MemoryEvent(id=same[0].id, memory=fact, event=Event.NONE)
                    continue
                past = self._older_values(vector, scope)
                hits = self._candidates(fact, vector, scope, also=list(past))
                found = {r.id: r for r in self.store.get_many([i for i, _ in hits])}
                similar = [
                    (
                        Known(
                            k,
                            mid,
                            found[mid].text,
                            wordings_of(found[mid]),
                            tuple(past.get(mid, ())),
                        ),
                        score,
                    )
                    for k, (mid, score) in enumerate(hits)
                    if mid in found
                ]
                pending.append(NewFact(n, fact, vector, similar))
            decisions = self.reconciler.decide(pending) if pending else []
            if dry_run:
                return [e for e in events if e is not None] + _preview(decisions)
            outer = self.store.atomic() if idempotency_key is not None else nullcontext()
            with outer:
                if idempotency_key is not None and (again := self._replayed(idempotency_key)):
                    return again
                written = self._apply_decisions(
                    decisions,
                    user_id=user_id,
                    agent_id=agent_id,
                    run_id=run_id,
                    metadata=metadata,
                    category=category,
                    provenance=self._provenance(vectors, body, source, evidence or []),
                    event_at=event_at,
                    actor=actor or "memoryd",
                    now=now,
                )
                out = [e for e in events if e is not None] + written
                self._remember(idempotency_key, actor, out)
        return out

    def _fact_class(self, text: str) -> str | None:
        """Seed 003's class of an extracted fact given no category (extract/classify.py)."""
        return classify_fact(text) if self.settings.extract.classify else None

    def _apply_decisions(
        self,
        decisions: Sequence[Decision],
        *,
        user_id: str,
        agent_id: str | None,
        run_id: str | None,
        metadata: dict[str, Any],
        category: str | None,
        provenance: builtins.list[tuple[Source | None, dict[str, Any]]],
        event_at: datetime | None,
        actor: str,
        now: datetime,
    ) -> builtins.list[MemoryEvent]:
        """Write every decision in one transaction; return the events in decision order.

        ``provenance[fact]`` is where that fact was said (:meth:`_provenance`): its
        source lines and the metadata naming its evidence."""
        changed = [d for d in decisions if d.event in (Event.ADD, Event.UPDATE)]
        # facts were embedded before reconciling, so only merged UPDATE texts are new here
        fresh = self.embed_texts([d.text for d in changed])
        vector_of = {id(d): fresh[n] for n, d in enumerate(changed)}
        events: builtins.list[MemoryEvent] = []
        new_records: builtins.list[MemoryRecord] = []
        # a fact said again in other words within this input keeps those words
        also_said: dict[int, builtins.list[str]] = {}
        for d in decisions:
            if d.event == Event.NONE and d.twin_of is not None:
                also_said.setdefault(d.twin_of, []).append(d.text)
        with self.store.atomic():
            for d in decisions:
                target = d.target
                source, said = provenance[d.fact]
                if d.fact in also_said:
                    said = {**said, SAID_ALSO: also_said[d.fact][:MAX_WORDINGS]}
                if d.event == Event.ADD:
                    kind = category or self._fact_class(d.text)
                    record = MemoryRecord(
                        id=self.new_id(),
                        text=d.text,
                        user_id=user_id,
                        agent_id=agent_id,
                        run_id=run_id,
                        category=kind,
                        metadata={**metadata, **said, **({"category": kind} if kind else {})},
                        origin=Origin.FACT,
                        source=source,
                        created_at=now,
                        updated_at=now,
                        event_at=event_at,
                    )
                    record.embedding = vector_of[id(d)]
                    new_records.append(record)
                    events.append(MemoryEvent(id=record.id, memory=d.text, event=Event.ADD))
                elif d.event == Event.UPDATE and target is not None:
                    old = self.store.get(target.id)
                    if old is None:
                        raise NotFoundError(
                            f"memory {target.id} vanished while reconciling",
                            "retry the add; nothing was stored",
                        )
                    if event_at is not None and event_at < (old.event_at or old.created_at):
                        # said before what it would replace (a week-old short-term memory
                        # the dream carries over): history, not the current value
                        events.append(MemoryEvent(id=old.id, memory=d.text, event=Event.NONE))
                        continue
                    record = self._supersede(
                        old,
                        d,
                        vector_of[id(d)],
                        category=category,
                        now=now,
                        event_at=event_at,
                        actor=actor,
                    )
                    record.metadata = {**metadata, **said, **record.metadata}
                    record.source = source
                    new_records.append(record)
                    events.append(
                        MemoryEvent(
                            id=record.id,
                            memory=d.text,
                            event=Event.UPDATE,
                            previous_memory=old.text,
                        )
                    )
                elif d.event == Event.DELETE and target is not None:
                    self.store.set_state(
                        target.id,
                        State.DELETED,
                        event=Event.DELETE,
                        actor=actor,
                        reason=_reason("delete", d),
                    )
                    events.append(
                        MemoryEvent(
                            id=target.id,
                            memory=target.text,
                            event=Event.DELETE,
                            previous_memory=target.text,
                        )
                    )
                else:
                    events.append(
                        MemoryEvent(
                            id=target.id if target else None, memory=d.text, event=Event.NONE
                        )
                    )
            if new_records:
                self.store.add(new_records, actor=actor, reason="extracted")
        return events

    def _supersede(
        self,
        old: MemoryRecord,
        d: Decision,
        vector: np.ndarray,
        *,
        category: str | None,
        now: datetime,
        event_at: datetime | None,
        actor: str,
    ) -> MemoryRecord:
        """An UPDATE is a supersession: the new fact becomes a memory of its own, true
        from ``event_at`` (or now), and ``old`` is kept, closed at that time, in state
        ``superseded``, each naming the other (``supersedes`` / ``superseded_by``) and
        the change in ``old``'s history. Returns the new record (``vector`` its embedding),
        not yet written."""
        since = event_at or now
        kind = category or old.category or self._fact_class(d.text)
        record = MemoryRecord(
            id=self.new_id(),
            text=d.text,
            user_id=old.user_id,
            agent_id=old.agent_id,
            run_id=old.run_id,
            category=kind,
            metadata={
                **({"category": kind} if kind else {}),
                "supersedes": old.id,
                "valid_from": since.isoformat(),
            },
            origin=Origin.FACT,
            created_at=now,
            updated_at=now,
            event_at=event_at,
        )
        record.embedding = vector
        stale = [old] + [
            r for r in self.store.get_many([k.id for k in d.also]) if r.state == State.ACTIVE
        ]
        known = {r.id for r in stale}
        for r in list(stale):  # and what was said beside each of them, in other words
            alongside = self._said_alongside(r, d.text, known)
            known.update(x.id for x in alongside)
            stale += alongside
        stale += self._copies(stale, known)
        stale += self._archived_alike(old, d.text, vector, {r.id for r in stale})
        for r in stale:  # the old value, and any copy of an older one the fact also replaces
            closed = r.model_copy(
                update={
                    "state": State.SUPERSEDED,
                    "metadata": {
                        **r.metadata,
                        "valid_until": since.isoformat(),
                        "superseded_by": record.id,
                    },
                }
            )
            closed.embedding = None  # keeps the stored vector
            self.store.update(
                closed, event=Event.SUPERSEDE, actor=actor, reason=_reason("supersede", d)
            )
        return record

    def _archived_alike(
        self, old: MemoryRecord, text: str, vector: np.ndarray, known: set[str]
    ) -> builtins.list[MemoryRecord]:
        """The archived facts of ``old``'s user and agent, in any tier, that ``text`` gives
        a new value by the offline rules (a task decay closed: "Noted, Omar is the platform
        on-call; I'll page Omar if an alert fires." when Ravi takes over): superseded with
        ``old``, so the turns that said them are known out of date. Only ever this way: an
        archived fact never makes a new one a duplicate (it is not compared at add)."""
        scope = Filters(
            user_id=old.user_id,
            agent_id=old.agent_id,
            origins=[Origin.FACT],
            states=[State.ARCHIVED],
        )
        hits = self._candidates(text, vector, scope)
        found = {r.id: r for r in self.store.get_many([i for i, _ in hits]) if r.id not in known}
        similar = [
            (Known(k, i, found[i].text, wordings_of(found[i])), sim)
            for k, (i, sim) in enumerate(hits)
            if i in found
        ]
        if not similar:
            return []
        decision = self._offline.decide([NewFact(0, text, vector, similar)])[0]
        if decision.event != Event.UPDATE or decision.target is None:
            return []
        return [found[k.id] for k in (decision.target, *decision.also)]

    def _copies(
        self, stale: builtins.list[MemoryRecord], known: set[str]
    ) -> builtins.list[MemoryRecord]:
        """The current facts of the same user and agent, in any tier, that say word for
        word what ``stale`` says: a day's short-term copy of the old value (digest writes
        one per day it was said) is as old as the long-term fact."""
        first = stale[0]
        scope = Filters(
            user_id=first.user_id,
            agent_id=first.agent_id,
            origins=[Origin.FACT],
            states=[State.ACTIVE],
        )
        found = self.store.locate(scope, [r.hash for r in stale if r.hash], [])
        ids = [at.id for at in found if at.agent_id == first.agent_id and at.id not in known]
        return self.store.get_many(ids) if ids else []

    def _candidates(
        self, fact: str, vector: np.ndarray, scope: Filters, also: Sequence[str] = ()
    ) -> builtins.list[tuple[str, float]]:
        """The memories a new fact is compared with: the closest in meaning, then those
        that share its words (a change said in other words), then ``also`` (the current
        values of chains whose older values are close: :meth:`_older_values`), each with
        its cosine."""
        s = self.settings.extract
        hits = self.store.vector_search(vector, scope, s.candidates_per_fact)
        seen = {i for i, _ in hits}
        words = (
            self.store.keyword_search(fact, scope, s.keyword_candidates)
            if s.keyword_candidates > 0
            else []
        )
        more = list(dict.fromkeys(i for i in [*(i for i, _ in words), *also] if i not in seen))
        if more:  # scored together: one read
            scores = self.store.vector_scores(vector, more)
            hits += [(i, scores.get(i, 0.0)) for i in more]
        return hits

    def _older_values(self, vector: np.ndarray, scope: Filters) -> dict[str, builtins.list[str]]:
        """The current facts in ``scope`` whose chain of changes holds superseded facts
        close to ``vector`` (``extract.superseded_candidates`` of them, at least
        ``linked_similarity``: the words decide, as for a memory that shares the fact's
        words), each with those facts' texts, closest first.

        The current value may not name what it is a value of ("Sold the Toyota Corolla,
        we bought a Honda Civic"); the value it replaced did ("Noted, your car is a Toyota
        Corolla."), and so names it for the next change ("The new car is a Kia Niro.")."""
        s = self.settings.extract
        if s.superseded_candidates <= 0:
            return {}
        replaced = scope.model_copy(update={"states": [State.SUPERSEDED]})
        close = [
            i
            for i, score in self.store.vector_search(vector, replaced, s.superseded_candidates)
            if score >= s.linked_similarity
        ]
        if not close:
            return {}
        now_of = self._current_of(set(close))
        texts = {r.id: r.text for r in self.store.get_many(close)}
        out: dict[str, builtins.list[str]] = {}
        for i in close:
            head = now_of.get(i)
            if head is not None and i in texts and _admits(scope, head):
                out.setdefault(head.id, []).append(texts[i])
        return out

    def _said_alongside(
        self, old: MemoryRecord, new_text: str, known: set[str]
    ) -> builtins.list[MemoryRecord]:
        """The facts said in the same exchange as ``old`` (the adjacent line of its diary:
        "Backfills may reprocess at most 31 days of data." beside the reply "Noted, the
        backfill window is 31 days."; "We switched the ingestion service from httpx to
        pycurl" beside "Understood, the ingestion service now uses pycurl for HTTP.") that
        state its old value: one fact in two wordings, superseded together. The words must
        not tell a sibling apart from ``new_text`` (another environment, attribute or kind
        of value: "prod also uses 5432" stays)."""
        src = old.source
        if old.origin != Origin.FACT or src is None or src.start_line is None:
            return []
        first, last = src.start_line, src.end_line or src.start_line
        old_claim, new_claim = claim(old.text), claim(new_text)
        # the old value: its numbers and ids, else the words it gives as the value ("uses
        # pycurl for HTTP"), that the change does not say
        replaced = old_claim.values - new_claim.values or (
            old_claim.slot - new_claim.words - new_claim.slot
        )
        if not replaced:
            return []
        scope = Filters(
            user_id=old.user_id,
            agent_id=old.agent_id,
            run_id=old.run_id,
            long_term_only=old.run_id is None,
            source_path=src.path,
            origins=[Origin.FACT],
        )
        out: builtins.list[MemoryRecord] = []
        for r in self.store.list(scope, limit=SIBLINGS_SCANNED):
            at = r.source
            if r.id in known or at is None or at.start_line is None:
                continue
            if not (first - 1 <= at.start_line and (at.end_line or at.start_line) <= last + 1):
                continue
            said = claim(r.text)
            if (said.values | said.slot) & replaced and claims_unlike(said, new_claim) is None:
                out.append(r)
        return out

    def _provenance(
        self, facts: np.ndarray, body: str, source: Source | None, evidence: builtins.list[str]
    ) -> builtins.list[tuple[Source | None, dict[str, Any]]]:
        """Where each extracted fact was said: the one line (of ``source``'s range) or
        the one stored turn (of ``evidence``) whose meaning is closest to the fact.

        A fact cites that line (``source``) and names that turn
        (``metadata.evidence``), not the whole batch it was extracted from, so a hit
        can be expanded to what was said (``memory_get`` on the line, or the turn).
        """
        plain: tuple[Source | None, dict[str, Any]] = (source, {})
        if not len(facts):
            return []
        if evidence:
            out_turns: builtins.list[tuple[Source | None, dict[str, Any]]] = []
            for fact in facts:
                scores = self.store.vector_scores(fact, evidence)
                best_id = max(scores, key=lambda i: scores[i]) if scores else None
                out_turns.append((source, {"evidence": [best_id]} if best_id else {}))
            return out_turns
        if source is None or source.start_line is None or source.end_line is None:
            return [plain] * len(facts)
        lines = body.split("\n")
        if len(lines) != source.end_line - source.start_line + 1:
            return [plain] * len(facts)  # the text is not those lines: keep the range
        said = [n for n, line in enumerate(lines) if line.strip() and not line.startswith("#")]
        if not said:
            return [plain] * len(facts)
        best = np.argmax(facts @ self.embed_texts([lines[n] for n in said]).T, axis=1)
        out: builtins.list[tuple[Source | None, dict[str, Any]]] = []
        for b in best:
            line = source.start_line + said[int(b)]
            out.append((Source(path=source.path, start_line=line, end_line=line), {}))
        return out

    def _replayed(self, key: str) -> builtins.list[MemoryEvent] | None:
        """The events of the add that recorded idempotency ``key``, if one did."""
        if not isinstance(key, str) or not key or len(key) > 512:
            raise InvalidInputError(
                "idempotency_key must be a non-empty string of at most 512 characters",
                "derive it from what makes the add unique, e.g. a hash of the input",
            )
        done = self.store.kv_get(IDEMPOTENCY_PREFIX + key)
        if not isinstance(done, dict):
            return None
        return [MemoryEvent.model_validate(e) for e in done.get("events", [])]

    def _remember(
        self, key: str | None, actor: str | None, events: builtins.list[MemoryEvent]
    ) -> None:
        """Record ``key`` (inside the add's transaction) with the actor, for rollbacks."""
        if key is not None:
            self.store.kv_set(
                IDEMPOTENCY_PREFIX + key,
                {"actor": actor, "events": [e.model_dump(mode="json") for e in events]},
            )

    def write_records(
        self,
        records: Sequence[MemoryRecord],
        *,
        actor: str | None = None,
        reason: str | None = None,
    ) -> None:
        """Embed and insert prepared records in one transaction (used by indexers).

        A record that already carries an ``embedding`` (e.g. a contextual vector from
        :mod:`memoryd.conversation`) is stored with it as given."""
        if not records:
            return
        self.embed_records(records)
        self.store.add(records, actor=actor, reason=reason)

    def embed_records(self, records: Sequence[MemoryRecord]) -> None:
        """Give every record without an ``embedding`` the vector of its ``index_text``.

        Call it before taking ``store.atomic()``: the transaction then holds the
        write lock for the writes alone, not for a model run."""
        todo = [r for r in records if r.embedding is None]
        if todo:
            vectors = self.embed_texts([r.index_text for r in todo])
            for record, vector in zip(todo, vectors, strict=True):
                record.embedding = vector

    def update(
        self,
        memory_id: str,
        text: str | None = None,
        *,
        metadata: dict[str, Any] | None = None,
        user_id: str | None = None,
        actor: str | None = None,
        reason: str | None = None,
    ) -> MemoryRecord:
        record = _editable(self.get(memory_id, user_id=user_id))
        if text is None and metadata is None:
            raise InvalidInputError("nothing to update", "pass new text, new metadata or both")
        changes: dict[str, Any] = {}
        if text is not None:
            changes["text"] = check_text(text, self.settings.limits)
        if metadata is not None:
            merged = {**record.metadata, **check_metadata(metadata, self.settings.limits)}
            changes["metadata"] = merged
            if "category" in metadata:
                changes["category"] = metadata["category"]
        new = record.model_copy(update=changes)
        if text is not None:
            new.embedding = self.embed_texts([new.index_text])[0]
        return self.store.update(new, actor=actor, reason=reason)

    def delete(
        self,
        memory_id: str,
        *,
        user_id: str | None = None,
        actor: str | None = None,
        reason: str | None = None,
    ) -> MemoryRecord:
        """Soft delete: out of search and list, kept in history, restorable."""
        record = _editable(self.get(memory_id, user_id=user_id))
        if record.state == State.DELETED:
            return record
        return self.store.set_state(
            memory_id, State.DELETED, event=Event.DELETE, actor=actor, reason=reason
        )

    def archive(
        self,
        memory_id: str,
        *,
        user_id: str | None = None,
        actor: str | None = None,
        reason: str | None = None,
    ) -> MemoryRecord:
        """Out of default search and list, still found with ``include_archived``; never
        deleted (TTL decay, :mod:`memoryd.pipelines.decay`). ``restore`` undoes it."""
        record = self.get(memory_id, user_id=user_id)
        if record.state == State.ARCHIVED:
            return record
        return self.store.set_state(
            memory_id, State.ARCHIVED, event=Event.ARCHIVE, actor=actor, reason=reason
        )

    def restore(
        self, memory_id: str, *, user_id: str | None = None, actor: str | None = None
    ) -> MemoryRecord:
        record = self.get(memory_id, user_id=user_id, include_deleted=True)
        if record.state == State.ACTIVE:
            return record
        if record.state == State.SUPERSEDED:  # current again: no longer closed or replaced
            kept = {
                k: v
                for k, v in record.metadata.items()
                if k not in ("valid_until", "superseded_by")
            }
            reopened = record.model_copy(update={"state": State.ACTIVE, "metadata": kept})
            reopened.embedding = None  # keeps the stored vector
            return self.store.update(reopened, event=Event.RESTORE, actor=actor)
        return self.store.set_state(memory_id, State.ACTIVE, event=Event.RESTORE, actor=actor)

    def reset(self, *, user_id: str, agent_id: str | None = None, run_id: str | None = None) -> int:
        """Erase every memory (and its history) in exactly this scope. Returns the count."""
        limits = self.settings.limits
        check_id(user_id, "user_id", limits, required=True)
        check_id(agent_id, "agent_id", limits)
        check_id(run_id, "run_id", limits)
        return self.store.purge(Filters(user_id=user_id, agent_id=agent_id, run_id=run_id))

    # -- reads -------------------------------------------------------------------------------
    def get(
        self, memory_id: str, *, user_id: str | None = None, include_deleted: bool = False
    ) -> MemoryRecord:
        if not memory_id or not isinstance(memory_id, str):
            raise InvalidInputError("memory id is empty", "pass the id returned by add or list")
        record = self.store.get(memory_id)
        if (
            record is None
            or (user_id is not None and record.user_id != user_id)
            or (record.state == State.DELETED and not include_deleted)
        ):
            raise NotFoundError(
                f"no memory with id {memory_id}", "check the id with `memoryd list`"
            )
        return record

    def list(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        limit: int = 100,
        offset: int = 0,
        filters: Filters | None = None,
    ) -> builtins.list[MemoryRecord]:
        f = (filters or Filters()).model_copy(
            update={
                k: v
                for k, v in {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}.items()
                if v is not None
            }
        )
        return self.store.list(f, limit=max(0, min(limit, 10_000)), offset=max(0, offset))

    def count(self, filters: Filters | None = None) -> int:
        """How many memories match ``filters`` (active ones by default)."""
        return self.store.count(filters or Filters())

    def history(self, memory_id: str, *, user_id: str | None = None) -> builtins.list[HistoryEntry]:
        self.get(memory_id, user_id=user_id, include_deleted=True)
        return self.store.history(memory_id)

    def search(
        self,
        query: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        top_k: int | None = None,
        min_score: float | None = None,
        filters: Filters | None = None,
        mode: str = "hybrid",
        time_decay: bool | None = None,
        include_shared: bool = True,
        include_archived: bool = False,
        include_superseded: bool = False,
        as_of: datetime | None = None,
        record_recall: bool = True,
    ) -> builtins.list[SearchHit]:
        """Hybrid search in a scope. ``mode`` is ``hybrid``, ``vector`` or ``keyword``.

        With an ``agent_id``, the user's shared pool (``search.shared_categories``,
        from any agent) is searched too, unless ``include_shared=False``. With time
        decay (``search.time_decay`` unless ``time_decay`` says otherwise) the score
        blends relevance with recency and ``original_score`` keeps the relevance.
        ``min_score`` is compared with the relevance, so a fresh but unrelated memory
        cannot pass on recency alone; for a question asking how the user wants something
        done, a memory whose meaning (vector score) alone reaches it passes too. Each hit
        carries its ``memory_type``. ``include_archived`` adds memories archived by TTL
        decay to the active ones.
        Superseded facts (a newer fact on the same subject replaced them) are left out
        unless ``include_superseded``; ``as_of`` searches what was true at that time:
        current and superseded facts whose ``valid_from`` .. ``valid_until`` holds it.
        ``record_recall=False`` keeps a pipeline's own lookups (e.g. the lessons
        duplicate check) out of the recall statistics promotion ranks by.
        """
        s = self.settings.search
        top_k = check_top_k(top_k if top_k is not None else s.default_top_k, s.max_top_k)
        query = check_text(query, self.settings.limits, "query")
        if mode not in ("hybrid", "vector", "keyword"):
            raise InvalidInputError(
                f"unknown search mode {mode!r}", "use hybrid, vector or keyword"
            )
        threshold = _check_min_score(s.min_score if min_score is None else min_score)
        decay = s.time_decay if time_decay is None else time_decay
        f = (filters or Filters()).model_copy(
            update={
                k: v
                for k, v in {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}.items()
                if v is not None
            }
        )
        if include_archived and State.ARCHIVED not in f.states:
            f.states = [*f.states, State.ARCHIVED]
        if (include_superseded or as_of is not None) and State.SUPERSEDED not in f.states:
            f.states = [*f.states, State.SUPERSEDED]
        as_of = _aware(as_of) if as_of is not None else None
        # whose vectors the store holds: asked while the query is embedded (a round trip
        # off the search's path), answered before any vector is compared
        matching = self._side.submit(self.vectors_match) if mode != "keyword" else None
        n = max(top_k * s.candidate_multiplier, s.min_candidates)
        pool = pool_filters(f, s.shared_categories) if include_shared else None
        scopes = [f] if pool is None else [f, pool]
        early = (
            [self._side.submit(keyword_side, self.store, query, scope, n) for scope in scopes]
            if mode == "hybrid" and query not in self._query_cache
            else [None] * len(scopes)
        )  # the keyword side runs while the query is embedded
        qvec = self.embed_query(query) if mode != "keyword" else None
        if matching is not None and not matching.result():
            mode, qvec = "keyword", None  # another model's vectors: a rebuild is under way
        candidates: builtins.list[Candidate] = []
        known: dict[str, RankFacts] = {}  # the candidates' facts the store read with them
        for scope, side in zip(scopes, early, strict=True):
            these = hybrid_candidates(self.store, query, qvec, scope, n, s, mode, side, facts=known)
            candidates = merge(candidates, these) if candidates else these
        # a question about how the user wants something is answered by a preference said in
        # other words ("How should I represent the records?" / "I'd rather have dataclasses"):
        # there, a candidate whose meaning alone reaches the threshold passes too, as in a
        # vector-only search (agentchat, issue 35)
        how_wanted = asks_how_wanted(query)
        meant = threshold if how_wanted and s.vector_weight > 0 else math.inf
        candidates = sorted(
            (c for c in candidates if c.fused >= threshold or c.vector >= meant),
            key=lambda c: -c.fused,
        )
        boost = s.entity_boost if mode == "hybrid" else 0.0
        found = self._rank(
            candidates,
            top_k,
            names_in(query) if boost else set(),
            boost,
            decay,
            turns_first=mode == "hybrid" and turn_rank.active(s),
            when_question=asks_when(query),
            how_wanted=how_wanted,
            as_of=as_of,
            query=query,
            scopes=scopes,
            known=known,
        )
        if record_recall:
            self.recalls.record(query, found, self.clock())
        return found

    def _rank(
        self,
        candidates: builtins.list[Candidate],
        top_k: int,
        names: set[str],
        boost: float,
        decay: bool,
        turns_first: bool = False,
        when_question: bool = False,
        how_wanted: bool = False,
        as_of: datetime | None = None,
        query: str = "",
        scopes: Sequence[Filters] = (),
        known: dict[str, RankFacts] | None = None,
    ) -> builtins.list[SearchHit]:
        """The ``top_k`` best of ``candidates`` (sorted by fused relevance), each text once,
        with the entity boost and time decay applied, newer evidence of one thing before
        older (:mod:`memoryd.search.current`; not for an ``as_of`` search).

        Every candidate is ranked from its :class:`RankFacts`, which the store's index
        answers without reading a record; records are read only for the hits returned,
        in rank order (a few more when texts repeat or a memory was deleted meanwhile).
        Ties keep the candidates' order. ``known`` holds facts the store read with the
        candidates; only the others are asked for."""
        s = self.settings.search
        now = self.clock()
        facts = dict(known or {})
        missing = [c.id for c in candidates if c.id not in facts]
        if missing:
            facts.update(self.store.rank_facts(missing))
        ranked: builtins.list[turn_rank.Ranked] = []
        for place, c in enumerate(candidates):
            of = facts.get(c.id)
            if of is None:
                continue
            extra = entity_boost(of.names, names, boost)
            if extra:
                c = c.adjusted(min(1.0, c.fused + extra), entity=extra)
            weight = facts_weight(of, now, s) if decay else None
            final = c.fused if weight is None else blend(c.fused, weight, s)
            ranked.append((final, place, weight, c))
        ranked.sort(key=lambda t: (-t[0], t[1]))
        if turns_first and ranked:
            pool = ranked[: turn_rank.pool_size(top_k, s)]
            reranked = turn_rank.rerank(pool, facts, s, when_question, how_wanted)
            ranked = reranked + ranked[len(pool) :]
        reorder = s.newer_first_similarity < 1.0 and as_of is None
        # newer-first orders the first newer_first_window hits whatever top_k is, so the first
        # hits of a short search are the head of a long one's
        wanted = max(top_k, s.newer_first_window) if reorder else top_k
        found: builtins.list[SearchHit] = []
        seen: set[str] = set()
        done = 0
        while done < len(ranked) and len(found) < wanted:
            batch = ranked[done : done + wanted - len(found) + 2]
            done += len(batch)
            got = {r.id: r for r in self.store.get_many([t[3].id for t in batch])}
            for final, _, weight, c in batch:
                rec = got.get(c.id)
                if rec is None or rec.hash in seen:  # each text once
                    continue
                if as_of is not None and not rec.valid_at(as_of):
                    continue
                seen.add(rec.hash)
                found.append(
                    SearchHit(
                        id=c.id,
                        text=rec.text,
                        score=final,
                        parts=c.parts(weight),
                        record=rec,
                        original_score=None if weight is None else c.fused,
                        memory_type=memory_type(rec, s.shared_categories),
                    )
                )
                if len(found) == wanted:
                    break
        if reorder and len(found) > 1:
            # the turns among the first hits that say what a since superseded fact says
            head = found[: s.newer_first_window]
            retired_by = self._retired_by([h.record for h in head if facts[h.id].turn is not None])
            found = self._current_above(found, retired_by, scopes, s.newer_first_window, facts)
            found = stating_first(found, margin=s.stating_first_margin, window=s.newer_first_window)
            found = asked_attribute_first(
                found,
                frozenset(claim(query).attributes),
                margin=s.asked_attribute_margin,
                window=s.newer_first_window,
            )
            retired = set(retired_by)
            found = newer_first(
                found,
                [
                    Evidence(
                        facts[h.id].when,
                        facts[h.id].asks,
                        h.id in retired,
                        current=h.parts.current is not None,
                    )
                    for h in found
                ],
                lambda: self.embed_texts([h.record.index_text for h in found]),
                names_in(query),
                query_terms(query),
                similarity=s.newer_first_similarity,
                margin=s.newer_first_margin,
                gap_hours=s.newer_first_gap_hours,
                window=s.newer_first_window,
            )
        return found[:top_k]

    def _current_above(
        self,
        found: builtins.list[SearchHit],
        retired_by: dict[str, set[str]],
        scopes: Sequence[Filters],
        window: int,
        facts: dict[str, RankFacts],
    ) -> builtins.list[SearchHit]:
        """``found`` with the current value of each out-of-date turn among the first
        ``window`` hits placed above it.

        A turn that said a value since replaced ("Noted, Omar is the platform on-call")
        can match a question better than the change ever will ("who should I page for
        an alert?" shares no word with "Ravi takes over the platform pager"). The fact
        that superseded what the turn says is known, so the search shows it, or the turn
        that said it, first (brought in when the search did not find it). It answers
        what the turn answered, so it is scored as the turn was, at its own age: the
        turn's score with the turn's recency weight swapped for its own (``parts.current``
        holds that score), and placed by it, at least right above the turn. Only what the
        search's scopes admit comes in, and only a value newer than the turn. ``facts``
        gains the ones brought in."""
        chains = {i for h in found[:window] for i in retired_by.get(h.id, ())}
        if not chains:
            return found
        now_of = self._current_of(chains)
        out = list(found)
        for h in found[:window]:
            currents = [now_of[i] for i in retired_by.get(h.id, ()) if i in now_of]
            if not currents:
                continue
            # the newest; ties broken by what the memories say, not by their random ids
            latest = max(currents, key=lambda r: (r.event_at or r.created_at, r.created_at, r.text))
            if (latest.event_at or latest.created_at).timestamp() <= facts[h.id].when:
                continue  # the turn repeats the old value after the change: not this rule's
            place = next(n for n, x in enumerate(out) if x.id == h.id)
            sayings = self._sayings(latest, scopes)
            if any(x.record.hash in {r.hash for r in sayings} for x in out[:place]):
                continue  # the current value is above it already
            moved = next((x for x in out[place:] if x.id in {r.id for r in sayings}), None)
            if moved is not None:
                out.remove(moved)
                score = self._score_as(h, facts[moved.id])
                hit = moved.model_copy(
                    update={
                        "score": score,
                        "parts": moved.parts.model_copy(update={"current": score}),
                    }
                )
            else:
                same_kind = [r for r in sayings if r.origin == h.record.origin]
                if not sayings:
                    continue
                pick = (same_kind or sayings)[0]
                facts.update(self.store.rank_facts([pick.id]))
                score = self._score_as(h, facts[pick.id])
                hit = SearchHit(
                    id=pick.id,
                    text=pick.text,
                    score=score,
                    parts=ScoreParts(current=score),
                    record=pick,
                    memory_type=memory_type(pick, self.settings.search.shared_categories),
                )
            while place > 0 and out[place - 1].score < score:
                place -= 1
            out.insert(place, hit)
        return out

    def _score_as(self, turn: SearchHit, current: RankFacts) -> float:
        """The score of ``turn`` (a hit that says a replaced value) with its recency weight
        swapped for that of ``current``, the value that replaced it: never below the
        turn's (the current value is the newer)."""
        s = self.settings.search
        weight = turn.parts.decay
        if weight is None:  # ranked without time decay
            return turn.score
        now = facts_weight(current, self.clock(), s)
        return turn.score + max(0.0, blend(0.0, now, s) - blend(0.0, weight, s))

    def _current_of(self, ids: set[str]) -> dict[str, MemoryRecord]:
        """The current fact each of the superseded facts ``ids`` was replaced by, following
        ``superseded_by`` through later changes (a few steps at most)."""
        out: dict[str, MemoryRecord] = {}
        # where the chains are now -> the ids they started from (one change can supersede
        # several facts: their chains join)
        step = {i: [i] for i in ids}
        for _ in range(CHANGES_FOLLOWED):
            if not step:
                break
            nxt: dict[str, builtins.list[str]] = {}
            for r in self.store.get_many(sorted(step)):
                starts = step[r.id]
                if r.state == State.ACTIVE and r.id not in starts:
                    out.update(dict.fromkeys(starts, r))
                elif (after := r.metadata.get("superseded_by")) and isinstance(after, str):
                    nxt.setdefault(after, []).extend(starts)
            step = nxt
        return out

    def _sayings(
        self, fact: MemoryRecord, scopes: Sequence[Filters]
    ) -> builtins.list[MemoryRecord]:
        """``fact`` and the turns of its diary lines that say it, those ``scopes`` admit."""
        ids = [fact.id]
        src = fact.source
        if src is not None and src.start_line is not None:
            first, last = src.start_line, src.end_line or src.start_line
            lines = Filters(user_id=fact.user_id, agent_id=fact.agent_id, origins=[Origin.CHUNK])
            ids += [
                at.id
                for at in self.store.locate(lines, [], [src.path])
                if at.start_line is not None
                and first <= at.start_line
                and (at.end_line or at.start_line) <= last
            ]
        said = {
            r.id: r
            for scope in scopes or [Filters()]
            for r in self.store.list(scope.model_copy(update={"ids": ids}), limit=len(ids))
        }
        turns = [r for r in said.values() if r.origin == Origin.CHUNK]
        # of the diary lines the fact cites, those that say it (a day's digest cites them all)
        own = [r for r in turns if content_hash(without_speaker(r.text)) == fact.hash]
        kept = own or (turns if len(turns) == 1 else [])
        return ([said[fact.id]] if fact.id in said else []) + kept

    def says_superseded(self, records: Sequence[MemoryRecord]) -> set[str]:
        """The ids of ``records`` (turns: a diary's lines, a conversation's messages) that
        say what a fact since superseded says: the fact was extracted from their lines, or
        says word for word what they say (the same thing said again on another day). What
        they said is out of date; they stay as evidence of what was said."""
        return set(self._retired_by(records))

    def _retired_by(self, records: Sequence[MemoryRecord]) -> dict[str, set[str]]:
        """:meth:`says_superseded`, each turn with the ids of the superseded facts it says."""
        turns = list(records)
        if not turns:
            return {}
        users = {r.user_id for r in turns}
        retired = Filters(
            user_id=users.pop() if len(users) == 1 else None,
            origins=[Origin.FACT],
            states=[State.SUPERSEDED],
        )
        said = {r.id: content_hash(without_speaker(r.text)) for r in turns}
        paths = {r.source.path for r in turns if r.source is not None}
        same: dict[tuple[str | None, str | None, str], set[str]] = {}
        spans: dict[tuple[str | None, str | None, str], builtins.list[Located]] = {}
        for at in self.store.locate(retired, list(said.values()), sorted(paths)):
            same.setdefault((at.user_id, at.agent_id, at.hash), set()).add(at.id)
            if at.path is not None and at.start_line is not None:
                spans.setdefault((at.user_id, at.agent_id, at.path), []).append(at)
        out: dict[str, set[str]] = {}
        near: dict[str, builtins.list[str]] = {}  # turn -> retired facts said a few lines off
        for r in turns:
            who = (r.user_id, r.agent_id)
            if (*who, said[r.id]) in same:
                out[r.id] = same[(*who, said[r.id])]
                continue
            src = r.source
            if src is None or src.start_line is None:
                continue
            first, last = src.start_line, src.end_line or src.start_line
            for at in spans.get((*who, src.path), []):
                a, b = at.start_line or 0, at.end_line or at.start_line or 0
                if first <= a and b <= last:
                    out.setdefault(r.id, set()).add(at.id)
                elif a - RESTATED_WITHIN <= last and first <= b + RESTATED_WITHIN:
                    near.setdefault(r.id, []).append(at.id)
        # a fact keeps the words it was restated in (said_also): the restating turn, a line
        # or two off the fact's own, said the retired value too
        ids = sorted({i for r, found in near.items() if r not in out for i in found})
        wordings = {f.id: wordings_of(f) for f in self.store.get_many(ids)} if ids else {}
        for rid, found in near.items():
            if rid in out:
                continue
            restated = {
                i for i in found if any(said[rid] == content_hash(w) for w in wordings.get(i, ()))
            }
            if restated:
                out[rid] = restated
        return out

    def search_combined(
        self,
        query: str,
        *,
        user_id: str,
        agent_id: str | None = None,
        long_term_top_k: int | None = None,
        short_term_top_k: int | None = None,
        recent_days: int | None = None,
        min_score: float | None = None,
        time_decay: bool | None = None,
        filters: Filters | None = None,
        mode: str = "hybrid",
        include_superseded: bool = False,
        as_of: datetime | None = None,
    ) -> CombinedHits:
        """Long-term memories plus the last ``recent_days`` of short-term ones, apart.

        The session-start query of seed 000: durable knowledge and what happened
        this week, each ranked on its own and capped at its own ``top_k``, the
        shared pool included in both, no memory in both lists.
        """
        s = self.settings.search
        days = s.recent_days if recent_days is None else recent_days
        if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= 365:
            raise InvalidInputError(
                f"recent_days must be between 1 and 365, got {days!r}", "pass e.g. recent_days=7"
            )
        base = filters or Filters()
        common: dict[str, Any] = {
            "user_id": user_id,
            "agent_id": agent_id,
            "min_score": min_score,
            "time_decay": time_decay,
            "mode": mode,
            "include_superseded": include_superseded,
            "as_of": as_of,
        }
        long_term = self.search(
            query,
            top_k=long_term_top_k,
            filters=base.model_copy(update={"long_term_only": True, "short_term_only": False}),
            **common,
        )
        since = self.clock() - timedelta(days=days)
        after = max(base.created_after, since) if base.created_after else since
        short_k = short_term_top_k if short_term_top_k is not None else s.default_top_k
        short_term = self.search(
            query,
            top_k=short_k,
            filters=base.model_copy(
                update={"short_term_only": True, "long_term_only": False, "created_after": after}
            ),
            **common,
        )
        seen = {h.id for h in long_term} | {h.record.hash for h in long_term}
        short_term = [
            h
            for h in short_term
            if h.id not in seen
            and h.record.hash not in seen
            and ((day := run_date(h.record.run_id)) is None or day >= since.date())
        ]
        return CombinedHits(long_term=long_term, short_term=short_term)

    def status(self) -> dict[str, Any]:
        everything = Filters(states=[])
        return {
            "store": self.store.url,
            "model": self.embedder.name,
            "dim": self.embedder.dim,
            "memories": self.store.count(Filters()),
            "by_state": self.store.counts_by("state", everything),
            "by_origin": self.store.counts_by("origin", Filters()),
            "by_user": self.store.counts_by("user_id", Filters()),
        }

    def reindex(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Re-embed every memory with the configured model, with no window of mixed vectors.

        Build, then swap. The build embeds every text into the embedding cache under
        the new model, batch by batch, touching no live vector: searches keep using
        the old model's vectors, all consistent (a killed build keeps what it cached,
        so running it again resumes). The swap then writes every new vector and
        records the new model in one transaction: a reader sees all old vectors or
        all new ones, never a mix whose scores would be nonsense. Memories added
        during the build are embedded inside the swap. A process whose model is not
        the store's searches by keyword until it runs the store's model (see
        :meth:`vectors_match`), so no search fails at any point.
        """
        everything = Filters(states=[])
        total = self.store.count(everything)
        done = 0
        batch: builtins.list[str] = []
        for record in self.store.iter_all(everything):
            batch.append(record.index_text)
            if len(batch) == 256:
                self.embed_texts(batch)  # into the cache only
                done += len(batch)
                batch = []
                if progress:
                    progress(done, total)
        self.embed_texts(batch)
        if progress:
            progress(done + len(batch), total)
        with self.store.atomic():
            swapped = 0
            records: builtins.list[MemoryRecord] = []
            for record in self.store.iter_all(everything):
                records.append(record)
                if len(records) == 512:
                    swapped += self._swap_vectors(records)
                    records = []
            swapped += self._swap_vectors(records)
            self.store.set_meta("embed_model", self.embedder.name)
            self.store.set_meta("embed_dim", str(self.embedder.dim))
        if progress:
            progress(swapped, swapped)
        return swapped

    def _swap_vectors(self, records: builtins.list[MemoryRecord]) -> int:
        if not records:
            return 0
        vectors = self.embed_texts([r.index_text for r in records])  # cached by the build
        for record, vector in zip(records, vectors, strict=True):
            record.embedding = vector
        # the memories are unchanged: their updated_at (expiry, recency) and history stay
        self.store.reembed(records)
        return len(records)

    def vectors_match(self) -> bool:
        """Whether the store's vectors were made by this Memory's model.

        Not so in a process started with a new model before its rebuild has
        swapped, nor in one still running the old model after the swap. Searches
        there use keywords only instead of comparing vectors of two models.
        """
        return self.store.get_meta("embed_model") in (None, self.embedder.name)


def _input_texts(
    text: str | None,
    texts: Sequence[str] | None,
    messages: Sequence[dict[str, Any]] | None,
    limits: Any,
) -> tuple[builtins.list[str], builtins.list[str | None]]:
    """The texts of an add (one, each of ``texts``, or one per non-empty message) and
    their roles."""
    if text is not None:
        return [check_text(text, limits)], [None]
    if texts is not None:
        if isinstance(texts, str) or not isinstance(texts, (list, tuple)):
            raise InvalidInputError(
                "texts must be a list of strings", 'pass ["first fact", "second fact"]'
            )
        if not texts:
            raise InvalidInputError("texts is empty", "send at least one text")
        if len(texts) > limits.max_texts:
            raise LimitExceededError(
                f"texts has {len(texts)} items; the limit is {limits.max_texts} (limits.max_texts)",
                f"send them in batches of at most {limits.max_texts}",
            )
        checked = [check_text(t, limits, f"texts[{i}]") for i, t in enumerate(texts)]
        return checked, [None] * len(checked)
    if messages is None:
        raise InvalidInputError(
            "pass one of text, texts or messages",
            "add(text=...), add(texts=[...]) or add(messages=[...])",
        )
    if not isinstance(messages, (list, tuple)):
        raise InvalidInputError(
            "messages must be a list", 'pass [{"role": "user", "content": "..."}]'
        )
    said: builtins.list[str] = []
    roles: builtins.list[str | None] = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or "content" not in message:
            raise InvalidInputError(
                f"message {i} has no content",
                'each message is {"role": ..., "content": ...}',
            )
        content = message.get("content")
        if isinstance(content, str) and content.strip():
            said.append(check_text(content, limits, f"messages[{i}].content"))
            roles.append(str(message.get("role", "user")))
    if not said:
        raise InvalidInputError("every message is empty", "send at least one message with content")
    return said, roles


def _editable(record: MemoryRecord) -> MemoryRecord:
    """``record``, unless it mirrors a Markdown file: a chunk is changed by editing the
    file (the indexer then re-reads it), never in the store, where the next index
    would not see the file as changed and the edit would hide its lines."""
    if record.origin == Origin.CHUNK:
        where = record.source.citation if record.source else "its Markdown file"
        raise ReadOnlyError(
            f"memory {record.id} is an excerpt of {where}; it mirrors the file",
            f"edit {where} itself (memory_get reads it); the index follows the file",
        )
    return record


def _same_turn(a: MemoryRecord, b: MemoryRecord) -> bool:
    """Two records of the same text are one turn said once when their context agrees,
    or when the same speaker said it at the same time in the same session (a
    transcript imported again, whose first turn now follows the stored last one)."""
    if a.context == b.context:
        return True
    keys = ("speaker", "session")
    return (
        a.event_at is not None
        and a.event_at == b.event_at
        and all(a.metadata.get(k) == b.metadata.get(k) for k in keys)
    )


def _preview(decisions: Sequence[Decision]) -> builtins.list[MemoryEvent]:
    """The events ``decisions`` would produce, for a dry run (nothing is written)."""
    out: builtins.list[MemoryEvent] = []
    for d in decisions:
        target = d.target
        if d.event == Event.ADD:
            out.append(MemoryEvent(id=None, memory=d.text, event=Event.ADD))
        elif d.event in (Event.UPDATE, Event.DELETE) and target is not None:
            text = d.text if d.event == Event.UPDATE else target.text
            out.append(
                MemoryEvent(id=target.id, memory=text, event=d.event, previous_memory=target.text)
            )
        else:
            out.append(
                MemoryEvent(id=target.id if target else None, memory=d.text, event=Event.NONE)
            )
    return out


def _check_min_score(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise InvalidInputError(
            f"min_score must be a number from 0 to 1, got {value!r}",
            "scores are normalised to [0, 1]; 0.3 to 0.5 cuts most noise",
        )
    return float(value)


def dedup_scope(user_id: str, agent_id: str | None, run_id: str | None) -> Filters:
    """Where an inferred fact looks for duplicates (seed 001): its own run when it is
    short-term; every long-term memory of the user (and agent) when it is long-term.
    Only written memories take part; workspace chunks mirror files and are not
    rewritten by reconciliation."""
    return Filters(
        user_id=user_id,
        agent_id=agent_id,
        run_id=run_id,
        long_term_only=run_id is None,
        origins=[Origin.API, Origin.FACT],
    )


def _admits(scope: Filters, record: MemoryRecord) -> bool:
    """Is ``record`` in ``scope`` (a :func:`dedup_scope`: its user, agent and run, its
    tier, its origins)?"""
    return (
        (scope.user_id is None or record.user_id == scope.user_id)
        and (scope.agent_id is None or record.agent_id == scope.agent_id)
        and (scope.run_id is None or record.run_id == scope.run_id)
        and not (scope.long_term_only and record.run_id is not None)
        and not (scope.short_term_only and record.run_id is None)
        and (not scope.origins or record.origin in scope.origins)
    )


def _aware(when: datetime) -> datetime:
    """A naive datetime is UTC (as memoryd stores every time)."""
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _reason(verb: str, decision: Decision) -> str:
    why = f": {decision.reason}" if decision.reason else ""
    return f"reconcile {verb} (fact: {decision.text[:200]}){why}"
