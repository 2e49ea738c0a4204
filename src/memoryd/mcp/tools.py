"""The MCP tools: what an agent can do with its memory, described for a model.

Each tool is a thin call into the connection's :class:`~memoryd.scope.Scope`
(its memory operations decide access; its workspace is the agent's files) and
answers with :mod:`memoryd.shapes`' brief views. The
descriptions are the instructions a model reads to decide when to call a tool
and what to pass, so they say *when* as much as *what*.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar, cast

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field
from starlette.requests import Request

from memoryd import wiki
from memoryd.audit import note
from memoryd.core import Memory
from memoryd.errors import InvalidInputError, MemorydError
from memoryd.models import Origin
from memoryd.scope import Scope
from memoryd.search.intent import CATEGORIES
from memoryd.shapes import FilterSpec, HitOut

Tier = Literal["long_term", "short_term"]
SearchTier = Literal["combined", "long_term", "short_term"]
#: The names a search or list may also be restricted to: the organizer's classes of facts
#: stored with no category (extract/classify.py) and its note folders under memory/
#: (seed 003), whose chunks carry the folder as their category.
_ORGANIZED = ("personal", "system", "agents", "entities", "patterns", "summaries", "events")
if TYPE_CHECKING:  # the tools hand the name on as a str; the SDK checks the Literal
    Category = str
    FilterCategory = str
else:
    #: The categories a model picks from: the ones a search's intent names (seed 000's
    #: table, plus ``task``), and ``short_term``. ``experience`` and ``procedural`` are in
    #: the shared pool by default (``search.shared_categories``).
    Category = Literal[(*CATEGORIES, "short_term")]
    FilterCategory = Literal[(*CATEGORIES, "short_term", *_ORGANIZED)]

_F = TypeVar("_F", bound=Callable[..., Any])
# Arguments whose wire name is a Python keyword (OpenClaw's memory_get takes "from"):
# the SDK passes them by alias, the function receives them by parameter name.
_PARAMETER_OF_ALIAS = {"from": "from_line"}


def tool_errors(fn: _F) -> _F:
    """Turn memoryd's named errors into MCP tool errors a model can act on.

    The text carries the error's name, what happened and the hint, e.g.
    ``NotFoundError: no memory with id x in this agent's scope. Hint: take the id from
    memory_search or memory_list``.
    Anything else propagates, and the SDK reports it as an unexpected error.
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        kwargs = {_PARAMETER_OF_ALIAS.get(k, k): v for k, v in kwargs.items()}
        try:
            return fn(*args, **kwargs)
        except MemorydError as exc:
            hint = f" Hint: {exc.hint}" if exc.hint else ""
            raise ToolError(f"{type(exc).__name__}: {exc.message}.{hint}") from exc

    return cast(_F, wrapper)


class MemoryTools:
    """The tools of one MCP server. ``scope_of`` maps a call's context to its scope."""

    def __init__(self, memory: Memory, scope_of: Callable[[Context], Scope]) -> None:
        self.memory = memory
        self.scope_of = scope_of

    # -- reading --------------------------------------------------------------------------
    @tool_errors
    def memory_search(
        self,
        query: Annotated[
            str, Field(description="what to look for: a question, topic or identifier")
        ],
        ctx: Context,
        top_k: Annotated[int, Field(ge=1, le=50, description="how many hits to return")] = 8,
        tier: Annotated[
            SearchTier,
            Field(
                description="combined (default): long-term memory plus the last recent_days of "
                "short-term notes; long_term or short_term alone"
            ),
        ] = "combined",
        category: Annotated[
            FilterCategory | None, Field(description="only memories of this category")
        ] = None,
        recent_days: Annotated[
            int, Field(ge=1, le=365, description="how far back short-term notes count")
        ] = 7,
        min_score: Annotated[
            float | None,
            Field(ge=0, le=1, description="drop hits scoring below this (0-1); default: none"),
        ] = None,
        include_superseded: Annotated[
            bool,
            Field(description="also facts a newer fact replaced (old ports, former owners)"),
        ] = False,
        as_of: Annotated[
            datetime | None,
            Field(description="what was true at this time (ISO 8601), instead of now"),
        ] = None,
    ) -> dict[str, Any]:
        """Search memory: facts, decisions, preferences, lessons, recent notes and the
        agent's Markdown memory files, ranked by meaning and exact words together.

        Call it BEFORE answering anything about prior work, decisions, dates, people,
        preferences, environments, or open tasks, and at the start of every task
        ("what do I already know about X?"). Query in plain language, or with exact
        identifiers (ticket ids, hostnames, ports, error codes) when you have them.
        Each hit has a score with its parts (vector = meaning, keyword = exact words,
        decay = recency weight), a memory_type (long_term, short_term, shared: shared
        hits come from other agents' lessons) and, for file excerpts, a citation
        like memory/2026-03-27.md#L12-L30 that memory_get can open.
        """
        scope = self._begin(ctx, "memory_search")
        hits = self._search(
            scope, query, top_k, tier, category, recent_days, min_score,
            {"include_superseded": include_superseded, "as_of": as_of},
        )  # fmt: skip
        _note(ctx, count=len(hits), top_score=round(hits[0].score, 4) if hits else None)
        return {"scope": _ids(scope), "results": [h.brief() for h in hits]}

    @tool_errors
    def memory_list(
        self,
        ctx: Context,
        category: Annotated[FilterCategory | None, Field(description="only this category")] = None,
        tier: Annotated[Tier | None, Field(description="only long_term or short_term")] = None,
        limit: Annotated[int, Field(ge=1, le=200)] = 20,
        offset: Annotated[int, Field(ge=0, le=2**62)] = 0,  # SQLite integers are 64-bit
    ) -> dict[str, Any]:
        """List remembered facts, newest first (not a search: use memory_search to find
        something; Markdown file excerpts are not listed, read them with memory_get). Useful to review what is remembered in a category, e.g. every
        open task or every preference, or to find an id to update or delete."""
        scope = self._begin(ctx, "memory_list")
        spec = FilterSpec(
            category=category,
            origins=[Origin.API, Origin.FACT],  # file excerpts are read with memory_get
            memory_type=tier,
        )
        page = scope.list(filters=spec, limit=limit, offset=offset)
        _note(ctx, count=len(page.results))
        return {"scope": _ids(scope), "results": [r.brief() for r in page.results]}

    @tool_errors
    def memory_history(
        self,
        memory_id: Annotated[str, Field(description="the id from memory_search or memory_list")],
        ctx: Context,
    ) -> dict[str, Any]:
        """Every change to one memory, oldest first: when it was added, updated (old and
        new text), deleted or restored, by whom and why. Use it to see how a fact
        evolved or to recover what a memory said before an update."""
        scope = self._begin(ctx, "memory_history")
        entries = scope.history(memory_id)
        return {"id": memory_id, "history": [e.model_dump() for e in entries]}

    @tool_errors
    def memory_get(
        self,
        path: Annotated[
            str,
            Field(
                description="workspace-relative Markdown path, e.g. MEMORY.md or "
                "memory/2026-03-27.md (the part of a citation before #)"
            ),
        ],
        ctx: Context,
        from_line: Annotated[
            int | None,
            Field(alias="from", ge=1, description="first line, 1-based (a citation's Lx)"),
        ] = None,
        lines: Annotated[
            int | None, Field(ge=1, description="how many lines; omit to read to the end")
        ] = None,
    ) -> dict[str, Any]:
        """Read lines of one of this agent's Markdown memory files: MEMORY.md, a daily
        diary memory/YYYY-MM-DD.md, a session note or topic note. Use it after
        memory_search to read around a hit (its citation memory/2026-03-27.md#L12-L30
        means path memory/2026-03-27.md, from 12, lines 19), or to read today's
        and yesterday's diary at session start. A file that does not exist gives
        empty text (nothing was written that day). Only files inside the agent's
        workspace can be read."""
        scope = self._begin(ctx, "memory_get")
        got = scope.files().read(path, from_line, lines)
        return got.to_json()

    @tool_errors
    def memory_context(
        self,
        ctx: Context,
        query: Annotated[
            str | None,
            Field(description="the topic of the conversation, to add the most relevant memories"),
        ] = None,
        budget: Annotated[
            int | None,
            Field(ge=500, le=200_000, description="characters (default 20000)"),
        ] = None,
    ) -> dict[str, Any]:
        """Session-start context, in one call: the agent's identity files, MEMORY.md,
        today's and yesterday's diary (the only copy of what happened since the last
        nightly consolidation) and, with a query, the most relevant memories. Call it
        once at the start of every session, before the first answer; then use
        memory_search for specific questions. Long files are cut in the middle with a
        marker that says how to read the rest with memory_get."""
        scope = self._begin(ctx, "memory_context")
        built = scope.files().context(query, budget)
        return built.to_json()

    # -- writing --------------------------------------------------------------------------
    @tool_errors
    def memory_add(
        self,
        ctx: Context,
        text: Annotated[
            str | None,
            Field(
                description="one self-contained fact with its identifiers, e.g. 'Deploys go "
                "through ArgoCD on cluster prod-eu-1' (or send messages)"
            ),
        ] = None,
        texts: Annotated[
            list[str] | None,
            Field(
                description="several self-contained facts of one category at once, each "
                "stored as its own memory (instead of text)"
            ),
        ] = None,
        category: Annotated[
            Category | None,
            Field(
                description="decision | preference | environment | project | experience | "
                "procedural | task | short_term (leave out for a conversation)"
            ),
        ] = None,
        messages: Annotated[
            list[dict[str, Any]] | None,
            Field(
                description='a conversation instead of text: [{"role", "content", "name"?, '
                '"timestamp"?}]; each message is kept as one turn, found with its speaker, '
                "time and the turn before it"
            ),
        ] = None,
        tier: Annotated[
            Tier,
            Field(
                description="long_term (default): kept until changed; short_term: today's "
                "context, consolidated into long-term memory by the nightly dream"
            ),
        ] = "long_term",
        infer: Annotated[
            bool,
            Field(
                description="true: memoryd splits the text into facts and reconciles each with "
                "similar memories (ADD, UPDATE, NONE); use it for a longer note. false (default): "
                "stored as given"
            ),
        ] = False,
    ) -> dict[str, Any]:
        """Remember something for later sessions. Write when a decision is made, a
        preference is stated, an environment detail is learned (host, port, path), a
        task is finished, or a mistake teaches a lesson. One self-contained fact per
        text, with names and identifiers, readable without this conversation (several
        facts of one category: texts).

        Categories: decision (a choice and why), preference (how the user likes
        things), environment (hosts, ports, paths, configs), project (status,
        progress), experience (a pitfall and its fix; every agent sees it),
        procedural (a correct how-to; every agent sees it), task (work done or
        open), short_term (today's context). Search first: if the fact is already
        there but changed, use memory_update instead. Never store secrets
        (passwords, tokens, keys) or small talk. To keep a conversation (e.g. an
        exchange worth finding later, word for word), send messages instead of text.
        """
        scope = self._begin(ctx, "memory_add")
        if sum(x is not None for x in (text, texts, messages)) != 1:
            raise InvalidInputError(
                "memory_add needs text, texts or messages, one of them",
                "text for one fact (with a category), texts for several of one category, "
                "messages for a conversation",
            )
        if messages is None and category is None:
            raise InvalidInputError(
                "memory_add with text or texts needs a category",
                "pick one: decision, preference, environment, project, experience, "
                "procedural, task, short_term",
            )
        run_id = scope.today() if tier == "short_term" or category == "short_term" else None
        events = scope.add(
            text, texts=texts, messages=messages, run_id=run_id, category=category, infer=infer
        )
        _note(ctx, count=len(events), run_id=run_id)
        return {
            "results": [e.model_dump() for e in events],
            "tier": "short_term" if run_id else "long_term",
        }

    @tool_errors
    def memory_flush(
        self,
        ctx: Context,
        notes: Annotated[
            list[str] | None,
            Field(
                description="the durable facts to keep, each self-contained (decisions, "
                "preferences, open tasks, names and identifiers)"
            ),
        ] = None,
        messages: Annotated[
            list[dict[str, Any]] | None,
            Field(
                description="instead of notes: the conversation about to be compacted; memoryd "
                "keeps what today's diary does not already hold"
            ),
        ] = None,
    ) -> dict[str, Any]:
        """Save what must survive before your context is compacted or cut: call it when
        the host says compaction is near, or before a long tool run that may overflow
        the context. Send the durable notes yourself (best), or the messages and let
        memoryd pick out what the diary lacks. They are appended to today's diary,
        searchable at once."""
        scope = self._begin(ctx, "memory_flush")
        done = scope.files().flush(notes, messages=messages)
        return done.to_json()

    @tool_errors
    def memory_session_end(
        self,
        ctx: Context,
        messages: Annotated[
            list[dict[str, Any]],
            Field(description='the session\'s messages, [{"role", "content"}], oldest first'),
        ],
        session_id: Annotated[str | None, Field(description="the host's session id")] = None,
    ) -> dict[str, Any]:
        """Keep the end of a session when it closes (the user starts a new one with
        /new or /reset, or the task is done): its last messages become a session note,
        memory/YYYY-MM-DD-<slug>.md, found by later searches."""
        scope = self._begin(ctx, "memory_session_end")
        note = scope.files().session_end(messages, session_id=session_id)
        return note.to_json()

    @tool_errors
    def memory_rem_backfill(
        self,
        ctx: Context,
        path: Annotated[
            str, Field(description='daily files to replay, workspace-relative (e.g. "memory/")')
        ] = "memory",
        stage_short_term: Annotated[
            bool, Field(description="also store the candidates as short-term memory")
        ] = False,
        rollback: Annotated[
            bool, Field(description="instead: remove what earlier backfills wrote to DREAMS.md")
        ] = False,
        rollback_short_term: Annotated[
            bool, Field(description="instead: remove the memories earlier backfills staged")
        ] = False,
        dry_run: Annotated[
            bool,
            Field(description="list the candidates (or what a rollback removes); write nothing"),
        ] = False,
    ) -> dict[str, Any]:
        """Replay old daily diary files (memory/YYYY-MM-DD.md) as standalone days and write
        their durable candidates, each citing its lines, to DREAMS.md for review; with
        stage_short_term they also enter short-term memory, from where only the normal
        dream and promotion can take them to long-term or MEMORY.md. Rollback removes
        exactly what backfills added."""
        scope = self._begin(ctx, "memory_rem_backfill")
        report = scope.files().backfill(
            path=path,
            stage_short_term=stage_short_term,
            rollback=rollback,
            rollback_short_term=rollback_short_term,
            dry_run=dry_run,
        )
        return report.to_json()

    @tool_errors
    def memory_commitments(
        self,
        ctx: Context,
        action: Annotated[
            Literal["due", "list", "done"],
            Field(
                description="due: what to bring up now (marked delivered); list; done: close one"
            ),
        ] = "due",
        commitment_id: Annotated[
            str | None, Field(description="for done: the commitment's id")
        ] = None,
        channel: Annotated[
            str | None, Field(description="for due: only this channel (telegram, slack, ...)")
        ] = None,
    ) -> dict[str, Any]:
        """Follow-ups memoryd inferred from your diary (an interview tomorrow, a trip next
        week) when commitments are on. On each heartbeat call it with action "due": check
        in with the user about each result, then call it with action "done" and its id.
        Never put these in MEMORY.md; they are short-lived."""
        scope = self._begin(ctx, "memory_commitments")
        files = scope.files()
        if action == "done":
            if not commitment_id:
                raise InvalidInputError("done needs a commitment_id", "pass the id from due/list")
            return {"result": files.close_commitment(commitment_id).to_json()}
        items = files.commitments(due=action == "due", channel=channel)
        return {"results": [c.to_json() for c in items]}

    @tool_errors
    def wiki_search(
        self,
        ctx: Context,
        query: Annotated[str, Field(description="a name or topic, e.g. 'Ana Ruiz' or 'staging'")],
        limit: Annotated[int, Field(ge=1, le=100, description="claims at most")] = 10,
    ) -> dict[str, Any]:
        """Search the memory wiki: the agent's durable knowledge compiled into pages (one per
        person, project or topic) of claims, each with its evidence (fact ids, file lines),
        status (current, contested, stale, superseded) and dates. Use it for "what do we
        know about X"; use memory_search for what was said in conversations."""
        scope = self._begin(ctx, "wiki_search")
        return {"results": scope.files().wiki_search(query, limit)}

    @tool_errors
    def wiki_get(
        self,
        ctx: Context,
        page: Annotated[
            str, Field(description="the page's title, or a claim's id (c...), from wiki_search")
        ],
    ) -> dict[str, Any]:
        """Read one wiki page (a person, project or topic) after wiki_search found it: its
        claims, each with evidence to cite or check with memory_get, status and dates, and
        the page's Markdown. Given a claim id, the page holding that claim."""
        scope = self._begin(ctx, "wiki_get")
        return {"result": scope.files().wiki_get(page)}

    @tool_errors
    def wiki_apply(
        self,
        ctx: Context,
        op: Annotated[
            Literal["add", "retire"],
            Field(description="add a claim with evidence, or retire a claim that no longer holds"),
        ],
        page: Annotated[str | None, Field(description="add: the page (entity or topic)")] = None,
        text: Annotated[str | None, Field(description="add: the claim, one statement")] = None,
        evidence: Annotated[
            list[str] | None,
            Field(description='add: "fact:<memory id>" or "memory/2026-03-01.md#L4-L6" items'),
        ] = None,
        confidence: Annotated[float, Field(ge=0, le=1, description="add: 0-1")] = 1.0,
        claim_id: Annotated[str | None, Field(description="retire: the claim's id")] = None,
        status: Annotated[
            Literal["superseded", "stale"], Field(description="retire: the new status")
        ] = "superseded",
        reason: Annotated[str | None, Field(description="retire: why")] = None,
    ) -> dict[str, Any]:
        """Change the wiki by a structured edit, never a free rewrite: add a claim citing
        where it was said (refused without evidence that resolves), or retire a claim.
        The page is recompiled; the edit survives later compiles."""
        scope = self._begin(ctx, "wiki_apply")
        edit = wiki.Edit.of(
            op, page=page, text=text, evidence=evidence, confidence=confidence, claim=claim_id,
            status=status, reason=reason,
        )  # fmt: skip
        claim, report = scope.files().wiki_apply(edit)
        return {"claim": claim.to_json() if claim else None, "compile": report.to_json()}

    @tool_errors
    def wiki_lint(self, ctx: Context) -> dict[str, Any]:
        """Problems of the wiki to fix with wiki_apply: broken [[links]], claims without or
        with unresolvable evidence, cited lines that changed since a claim was applied,
        contradictions (retire the claim that no longer holds), stale pages, orphan pages."""
        scope = self._begin(ctx, "wiki_lint")
        return {"problems": scope.files().wiki_lint()}

    @tool_errors
    def memory_update(
        self,
        memory_id: Annotated[str, Field(description="the id from memory_search or memory_list")],
        ctx: Context,
        text: Annotated[str | None, Field(description="the corrected, complete fact")] = None,
        category: Annotated[Category | None, Field(description="a new category")] = None,
        reason: Annotated[str | None, Field(description="why it changed, kept in history")] = None,
    ) -> dict[str, Any]:
        """Correct or refresh a memory when a fact changed (a port moved, a decision was
        reversed, a task finished). Pass the whole new text, not a diff; the old
        version stays in memory_history. Only memories of this agent can be changed."""
        scope = self._begin(ctx, "memory_update")
        metadata = {"category": category} if category else None
        return {"result": scope.update(memory_id, text, metadata, reason=reason).brief()}

    @tool_errors
    def memory_delete(
        self,
        memory_id: Annotated[str, Field(description="the id from memory_search or memory_list")],
        ctx: Context,
        reason: Annotated[str | None, Field(description="why, kept in history")] = None,
    ) -> dict[str, Any]:
        """Delete a memory that is wrong or obsolete and has no corrected version (when
        it has one, use memory_update). The memory leaves search but stays in
        memory_history and can be restored by an operator."""
        scope = self._begin(ctx, "memory_delete")
        return {"id": scope.delete(memory_id, reason=reason).id, "deleted": True}

    # -- helpers --------------------------------------------------------------------------
    def _begin(self, ctx: Context, tool: str) -> Scope:
        """The call's scope, noted in the audit log entry of its HTTP request."""
        scope = self.scope_of(ctx)
        _note(ctx, op=f"mcp.{tool}", user_id=scope.user_id, agent_id=scope.agent_id)
        return scope

    def _search(
        self,
        scope: Scope,
        query: str,
        top_k: int,
        tier: str,
        category: str | None,
        recent_days: int,
        min_score: float | None,
        when: dict[str, Any] | None = None,
    ) -> list[HitOut]:
        """One ranked list; ``combined`` is long-term plus the recent short-term notes.
        ``when``: include_superseded and as_of, as :meth:`Scope.search` takes them."""
        when = when or {}
        if tier == "combined":
            both = scope.search_combined(
                query, long_term_top_k=top_k, short_term_top_k=top_k, recent_days=recent_days,
                min_score=min_score, filters=FilterSpec(category=category), **when,
            )  # fmt: skip
            return both.results[:top_k]
        since = self.memory.clock() - timedelta(days=recent_days)
        spec = (
            FilterSpec(category=category, memory_type="long_term")
            if tier == "long_term"
            else FilterSpec(category=category, memory_type="short_term", created_after=since)
        )
        return scope.search(query, top_k=top_k, min_score=min_score, filters=spec, **when)


def _ids(scope: Scope) -> dict[str, str | None]:
    return {"user_id": scope.user_id, "agent_id": scope.agent_id}


def _note(ctx: Context, **fields: Any) -> None:
    """Add to the audit entry of the HTTP request carrying this call (none over stdio)."""
    request = ctx.request_context.request
    if isinstance(request, Request):
        note(request, **fields)
