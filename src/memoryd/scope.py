"""``memory.scope(caller, user_id, agent_id)``: what one caller may read and change.

Every face (the HTTP routes, the dashboard, the MCP tools, the CLI) takes a
:class:`Scope` and calls its operations; none decides access itself. The rules,
all here:

- **read**: a memory of the scope (its user, and its agent when the scope names
  one) that the caller's key covers; with an agent, also the user's shared pool
  (other agents' lessons, ``search.shared_categories``). Anything else answers
  "not found", exactly like a missing id, so a key cannot probe other users' ids.
- **write** (update, delete, restore): only a memory of the scope the key
  covers; another agent's shared memory is refused (:class:`PermissionDeniedError`),
  and a chunk of a workspace file is refused by :class:`~memoryd.core.Memory`
  (:class:`ReadOnlyError`: edit the file; the index follows it).
- **workspace**: an agent's files (and their chunks, wiki, commitments, backfill,
  context and pipeline runs) belong to :func:`~memoryd.access.workspace_owner` and
  the agent; only a key covering that pair may use them. Naming the agent is not
  enough: a key for users U reaches no data of a user outside U, on any face.
- **search**: the scope's memories and shared pool and, when the scope's user is
  not the workspace owner but the key covers the owner too, the agent's own file
  chunks (owner-chunk rule).
- **pipelines**: a run's notes and errors can quote memory text, so only an admin
  key sees them; another key sees the runs of the agents whose files it may use.

Operations answer in :mod:`memoryd.shapes`, the same models for every face.
"""

from __future__ import annotations

import builtins
from datetime import datetime
from itertools import product
from typing import TYPE_CHECKING, Any, overload

from memoryd.access import Principal, workspace_owner
from memoryd.errors import InvalidInputError, NotFoundError, PermissionDeniedError
from memoryd.models import CombinedHits, Filters, MemoryRecord, Origin, SearchHit
from memoryd.pipelines.status import pipelines_status
from memoryd.search.intent import Intent, analyse
from memoryd.search.tiers import SHARED, memory_type
from memoryd.shapes import (
    Combined,
    Deleted,
    EventOut,
    FilterSpec,
    HistoryOut,
    HitOut,
    MemoryOut,
    Page,
)
from memoryd.workspace.agent import AgentFiles
from memoryd.workspace.layout import known_agents, local_today, resolve_workspace

if TYPE_CHECKING:
    from memoryd.core import Memory
    from memoryd.pipelines.scheduler import PipelineScheduler

__all__ = ["AgentFiles", "Scope", "WorkspaceAccess"]


class Scope:
    """One caller acting as ``user_id`` (and ``agent_id``); ``None`` means any, within
    the caller's key. ``actor`` is recorded in history (default: the key's name)."""

    def __init__(
        self,
        memory: Memory,
        caller: Principal,
        user_id: str | None = None,
        agent_id: str | None = None,
        *,
        actor: str | None = None,
    ) -> None:
        self.memory = memory
        self.caller = caller
        self.user_id = user_id
        self.agent_id = agent_id
        self.actor = actor or caller.name
        self.shared = list(memory.settings.search.shared_categories)

    # -- the rules -------------------------------------------------------------------------------
    def check(self) -> None:
        """Raise unless the caller's key covers this scope's user and agent (403)."""
        self.caller.check(self.user_id, self.agent_id)

    def _owns(self, record: MemoryRecord) -> bool:
        """Whether this scope may change ``record`` (a file chunk aside: Memory refuses it)."""
        return (
            self.user_id in (None, record.user_id)
            and self.agent_id in (None, record.agent_id)
            and self.caller.can_access(record.user_id, record.agent_id)
        )

    def sees(self, record: MemoryRecord) -> bool:
        """Own memories, and with an agent the user's shared pool."""
        pooled = (
            self.agent_id is not None
            and record.user_id == self.user_id
            and memory_type(record, self.shared) == SHARED
            and self.caller.can_access(self.user_id, self.agent_id)
        )
        return pooled or self._owns(record)

    def spans(self) -> builtins.list[Scope]:
        """This scope as scopes the key covers one by one, for a face that merges their
        answers (the dashboard): an admin or unscoped key's is the scope itself; a key
        for users [a, b] asked for any user spans a and b. Naming a user or agent outside
        the key is refused, not emptied, so the person sees why nothing is there."""
        caller = self.caller
        for value, allowed, what in (
            (self.user_id, caller.users, "user"),
            (self.agent_id, caller.agents, "agent"),
        ):
            if value and allowed and not caller.admin and value not in allowed:
                raise PermissionDeniedError(
                    f"key {caller.name!r} may not read {what} {value!r}",
                    f"pick one of {', '.join(allowed)}, or sign in with a key for that {what}",
                )
        if caller.admin:
            return [self]
        users: builtins.list[str | None] = [self.user_id] if self.user_id else [*caller.users]
        agents: builtins.list[str | None] = [self.agent_id] if self.agent_id else [*caller.agents]
        return [
            Scope(self.memory, caller, user, agent, actor=self.actor)
            for user, agent in product(users or [None], agents or [None])
        ]

    def record(self, memory_id: str, *, include_deleted: bool = False) -> MemoryRecord:
        """The memory if this scope sees it; otherwise "not found", the same either way."""
        try:
            record: MemoryRecord | None = self.memory.get(
                memory_id, include_deleted=include_deleted
            )
        except NotFoundError:
            record = None
        if record is None or not self.sees(record):
            raise NotFoundError(
                f"no memory with id {memory_id}",
                "take the id from memory_search or memory_list (MCP), or any search or list",
            )
        return record

    def _writable(self, memory_id: str, *, include_deleted: bool = False) -> MemoryRecord:
        record = self.record(memory_id, include_deleted=include_deleted)
        if not self._owns(record):
            raise PermissionDeniedError(
                f"memory {memory_id} is shared by agent {record.agent_id!r}; only it can change it",
                "write your own memory instead (e.g. the corrected lesson)",
            )
        return record

    def files(self) -> AgentFiles:
        """The scope's agent's workspace, if the caller may use its files."""
        if self.agent_id is None:
            raise InvalidInputError(
                "this call acts for no agent, and files live in an agent's workspace",
                "name the agent: `memoryd mcp --agent ID`, the X-Memoryd-Agent header, or agent_id",
            )
        if self.user_id is not None:
            self.check()  # the files act for this user too (the diary's memories are theirs)
        if not self.workspaces().may_use(self.agent_id):
            self.caller.check(workspace_owner(self.memory.settings), self.agent_id)  # 403
        ws = resolve_workspace(self.memory.settings, self.agent_id, self.memory.store)
        return AgentFiles(self.memory, ws, self.user_id)

    def workspaces(self) -> WorkspaceAccess:
        """The agents' workspaces the caller may use: which, and their pipeline runs."""
        return WorkspaceAccess(self)

    def today(self) -> str:
        """Today's date in the workspace time zone: the run id of today's short-term
        memories (and the name of today's diary file)."""
        return local_today(self.memory.settings.workspace, self.memory.clock).isoformat()

    def _user(self) -> str:
        self.check()
        if not self.user_id:
            raise InvalidInputError("user_id is required", "memoryd scopes every memory to a user")
        return self.user_id

    def _filters(self, spec: FilterSpec | Filters | None, run_id: str | None = None) -> Filters:
        """The store's filters for a search or list in this scope (the key checked); a
        face may pass the engine's :class:`Filters`, whose user and agent are replaced."""
        self.check()
        if isinstance(spec, Filters):
            f = spec.model_copy(update={"user_id": None, "agent_id": None})
        else:
            f = (spec or FilterSpec()).to_filters(self.shared)
        named = {"user_id": self.user_id, "agent_id": self.agent_id, "run_id": run_id}
        return f.model_copy(update={k: v for k, v in named.items() if v is not None})

    def _with_files(
        self, hits: builtins.list[SearchHit], query: str, f: Filters, top_k: int, **how: Any
    ) -> builtins.list[SearchHit]:
        """The owner-chunk rule: the agent's own file chunks join a search by another user
        when the caller's key covers the workspace owner too."""
        owner = workspace_owner(self.memory.settings)
        if (
            self.agent_id is None
            or self.user_id in (None, owner)
            or not self.caller.can_access(owner, self.agent_id)
            or f.run_id is not None
            or f.categories
            or f.short_term_only
            or (f.origins is not None and Origin.CHUNK not in f.origins)
        ):
            return hits
        files = Filters(origins=[Origin.CHUNK], states=f.states, source_path=f.source_path)
        hits = hits + self.memory.search(
            query, user_id=owner, agent_id=self.agent_id, top_k=top_k, filters=files,
            include_shared=False, **how,
        )  # fmt: skip
        unique = {h.id: h for h in sorted(hits, key=lambda h: h.score)}  # best score wins
        return sorted(unique.values(), key=lambda h: h.score, reverse=True)[:top_k]

    # -- writes ----------------------------------------------------------------------------------
    def add(
        self,
        text: str | None = None,
        *,
        messages: builtins.list[dict[str, Any]] | None = None,
        texts: builtins.list[str] | None = None,
        run_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        category: str | None = None,
        infer: bool = False,
        prompt: str | None = None,
        event_at: datetime | None = None,
    ) -> builtins.list[EventOut]:
        events = self.memory.add(
            text, messages=messages, texts=texts, user_id=self._user(), agent_id=self.agent_id,
            run_id=run_id, metadata=metadata, category=category, infer=infer, prompt=prompt,
            event_at=event_at, actor=self.actor,
        )  # fmt: skip
        return [EventOut.of(e) for e in events]

    def update(
        self,
        memory_id: str,
        text: str | None = None,
        metadata: dict[str, Any] | None = None,
        *,
        reason: str | None = None,
    ) -> MemoryOut:
        record = self._writable(memory_id)
        new = self.memory.update(
            record.id, text, metadata=metadata, user_id=record.user_id, actor=self.actor,
            reason=reason,
        )  # fmt: skip
        return MemoryOut.of(new, self.shared)

    def delete(self, memory_id: str, *, reason: str | None = None) -> Deleted:
        record = self._writable(memory_id)
        self.memory.delete(record.id, user_id=record.user_id, actor=self.actor, reason=reason)
        return Deleted(id=record.id)

    def restore(self, memory_id: str) -> MemoryOut:
        record = self._writable(memory_id, include_deleted=True)
        back = self.memory.restore(record.id, user_id=record.user_id, actor=self.actor)
        return MemoryOut.of(back, self.shared)

    def reset(self, *, run_id: str | None = None) -> int:
        """Erase every memory of exactly this scope: an admin key, and always a user."""
        self.caller.require_admin()
        if not self.user_id:
            raise InvalidInputError(
                "reset needs a user_id: memoryd never wipes every user at once",
                "pass user_id (and agent_id / run_id to narrow it further)",
            )
        return self.memory.reset(user_id=self.user_id, agent_id=self.agent_id, run_id=run_id)

    # -- reads -----------------------------------------------------------------------------------
    def get(self, memory_id: str) -> MemoryOut:
        return MemoryOut.of(self.record(memory_id), self.shared)

    def history(self, memory_id: str) -> builtins.list[HistoryOut]:
        record = self.record(memory_id, include_deleted=True)
        return [HistoryOut.of(h) for h in self.memory.history(record.id)]

    def list(
        self,
        *,
        run_id: str | None = None,
        filters: FilterSpec | None = None,
        limit: int = 100,
        offset: int = 0,
        include_turns: bool = False,
    ) -> Page:
        """A page of the scope's memories, newest first. A conversation added with
        inference keeps its turns as the facts' evidence: they are searchable, and
        listed only with ``include_turns`` (or a filter on origin ``turn``), so the
        conversation shows once."""
        f = self._filters(filters, run_id)
        if not include_turns and not (f.origins and Origin.TURN in f.origins):
            f = f.model_copy(update={"evidence_turns": False})
        records = self.memory.list(filters=f, limit=limit, offset=offset)
        return Page(
            results=[MemoryOut.of(r, self.shared) for r in records], total=self.memory.count(f)
        )

    @overload
    def count(self, filters: Filters | None = None, *, by: None = None) -> int: ...
    @overload
    def count(self, filters: Filters | None = None, *, by: str) -> dict[str, int]: ...
    def count(self, filters: Filters | None = None, *, by: str | None = None) -> Any:
        """How many of the scope's memories match ``filters`` (active ones by default);
        ``by`` a column (state, user_id, agent_id, category, origin): how many per value."""
        f = self._filters(filters)
        return self.memory.count(f) if by is None else self.memory.store.counts_by(by, f)

    def page(
        self,
        filters: Filters | None = None,
        *,
        limit: int = 100,
        offset: int = 0,
        oldest_first: bool = False,
    ) -> builtins.list[MemoryRecord]:
        """:meth:`list`'s page as the engine's records, newest first or ``oldest_first``
        (the dashboard renders these)."""
        f = self._filters(filters)
        if oldest_first:
            return self.memory.store.list(f, limit=limit, offset=offset, newest_first=False)
        return self.memory.list(filters=f, limit=limit, offset=offset)

    def hits(
        self,
        query: str,
        *,
        run_id: str | None = None,
        top_k: int = 5,
        min_score: float | None = None,
        filters: FilterSpec | Filters | None = None,
        mode: str = "hybrid",
        time_decay: bool | None = None,
        include_shared: bool = True,
        include_archived: bool = False,
        include_superseded: bool = False,
        as_of: datetime | None = None,
    ) -> builtins.list[SearchHit]:
        """:meth:`search`'s hits as the engine's records (the dashboard renders these)."""
        f = self._filters(filters, run_id)
        how: dict[str, Any] = {"min_score": min_score, "mode": mode, "time_decay": time_decay}
        hits = self.memory.search(
            query, top_k=top_k, filters=f, include_shared=include_shared,
            include_archived=include_archived, include_superseded=include_superseded,
            as_of=as_of, **how,
        )  # fmt: skip
        return self._with_files(hits, query, f, top_k, **how)

    def search(
        self,
        query: str,
        *,
        run_id: str | None = None,
        top_k: int = 5,
        min_score: float | None = None,
        filters: FilterSpec | None = None,
        mode: str = "hybrid",
        time_decay: bool | None = None,
        include_shared: bool = True,
        include_archived: bool = False,
        include_superseded: bool = False,
        as_of: datetime | None = None,
    ) -> builtins.list[HitOut]:
        """Hybrid search with time decay, the shared pool and the owner-chunk rule.
        Superseded facts only with ``include_superseded``, or what was true ``as_of``."""
        found = self.hits(
            query, run_id=run_id, top_k=top_k, min_score=min_score, filters=filters, mode=mode,
            time_decay=time_decay, include_shared=include_shared,
            include_archived=include_archived, include_superseded=include_superseded,
            as_of=as_of,
        )  # fmt: skip
        return [HitOut.of(h) for h in found]

    def intent(self, query: str) -> Intent:
        """What the query is after (``--smart``): the LLM when one is configured, else rules."""
        return analyse(query, self.memory.llm)

    def search_combined(
        self,
        query: str,
        *,
        long_term_top_k: int = 5,
        short_term_top_k: int = 5,
        recent_days: int = 7,
        min_score: float | None = None,
        filters: FilterSpec | None = None,
        mode: str = "hybrid",
        time_decay: bool | None = None,
        include_superseded: bool = False,
        as_of: datetime | None = None,
    ) -> Combined:
        """Long-term memories (with the agent's files, by the owner-chunk rule) plus the
        last ``recent_days`` of short-term ones, in one ranking."""
        f = self._filters(filters)
        how: dict[str, Any] = {"min_score": min_score, "mode": mode, "time_decay": time_decay}
        both = self.memory.search_combined(
            query, user_id=self._user(), agent_id=self.agent_id,
            long_term_top_k=long_term_top_k, short_term_top_k=short_term_top_k,
            recent_days=recent_days, filters=f, include_superseded=include_superseded,
            as_of=as_of, **how,
        )  # fmt: skip
        long_term = self._with_files(both.long_term, query, f, long_term_top_k, **how)
        ranked = CombinedHits(long_term=long_term, short_term=both.short_term).results
        return Combined(
            results=[HitOut.of(h) for h in ranked],
            counts={"long_term": len(long_term), "short_term": len(both.short_term)},
        )


class WorkspaceAccess:
    """Which agents' workspaces one scope's caller may use, and what of their pipeline
    runs it may see (:meth:`Scope.workspaces`); :meth:`Scope.files` opens one."""

    def __init__(self, scope: Scope) -> None:
        self.scope = scope
        self.memory = scope.memory

    def may_use(self, agent_id: str) -> bool:
        """Whether the caller may use ``agent_id``'s workspace (its files, chunks, runs):
        only a key covering the workspace owner and the agent. Acting as the agent
        grants nothing: the files are the owner's data."""
        return self.scope.caller.can_access(workspace_owner(self.memory.settings), agent_id)

    def agents(self) -> builtins.list[str]:
        """The workspace agents whose files the caller may use."""
        known = known_agents(self.memory.settings, self.memory.store)
        return [agent for agent in known if self.may_use(agent)]

    def pipelines(
        self,
        scheduler: PipelineScheduler | None = None,
        *,
        name: str | None = None,
        limit: int = 50,
    ) -> dict[str, Any]:
        """The pipelines (schedule, next and last run) and recent runs, newest first, as the
        caller may see them: run notes can quote memory text, so only an admin key sees
        notes and errors; another key sees the runs of the agents whose files it may use
        (and runs for no agent), without them. ``scheduler``: this process's, if it runs one."""
        status = pipelines_status(self.memory, scheduler, name=name, limit=limit)
        if self.scope.caller.admin:
            return status
        hidden: dict[str, Any] = {"notes": [], "errors": [], "error": None}
        status["runs"] = [
            {**run, **hidden}
            for run in status["runs"]
            if run.get("agent") is None or self.may_use(run["agent"])
        ]
        for spec in status["pipelines"]:
            if spec.get("last_run"):
                spec["last_run"] = {**spec["last_run"], **hidden}
        return status
