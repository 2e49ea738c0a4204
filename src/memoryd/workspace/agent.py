"""``scope.files()``: one agent's workspace, for the faces.

:meth:`memoryd.scope.Scope.files` checks the caller may use the agent's files and
returns an :class:`AgentFiles`; the HTTP routes, the MCP tools and the dashboard
call its methods, never the workspace or pipeline modules, so what an agent can
do with its files is written once here, each method handing off to the module
that does it. Every answer has a ``to_json()``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from memoryd import wiki
from memoryd.pipelines import commitments as follow_ups
from memoryd.pipelines.backfill import BackfillReport, RollbackReport, rem_backfill
from memoryd.pipelines.commitments import Commitment
from memoryd.pipelines.diary import DiaryResult, capture
from memoryd.validate import check_encodable, check_messages
from memoryd.wiki.compile import wiki_dir
from memoryd.wiki.render import CLAIMS_FILE, STATE_DIR
from memoryd.workspace.context import SessionContext, build_context
from memoryd.workspace.files import FileSlice, memory_get
from memoryd.workspace.indexer import IndexReport, index_workspace
from memoryd.workspace.layout import DREAMS_FILE, Workspace
from memoryd.workspace.search import WorkspaceHit, memory_search
from memoryd.workspace.sessions import FlushResult, SessionNote, flush, write_session_note
from memoryd.workspace.status import workspace_status

if TYPE_CHECKING:
    from memoryd.core import Memory


@dataclass(frozen=True)
class AgentFiles:
    memory: Memory
    workspace: Workspace
    user_id: str | None = None  # whose memories join the context (default: the owner's)

    DREAMS: ClassVar[str] = DREAMS_FILE  # the dream reports people review (seed 002)

    @property
    def agent_id(self) -> str:
        return self.workspace.agent_id

    def read(self, path: str, from_line: int | None = None, lines: int | None = None) -> FileSlice:
        """Lines of a Markdown file of the workspace (empty text for a missing file)."""
        return memory_get(self.workspace, path, from_line, lines)

    def dreams(self) -> FileSlice:
        """``DREAMS.md``: the dream reports and backfilled review entries (empty if none)."""
        return self.read(self.DREAMS)

    def search(self, query: str, **how: Any) -> list[WorkspaceHit]:
        """The agent's best chunk hits, with citations (``workspace.search``'s options)."""
        return memory_search(self.memory, self.workspace, query, **how)

    def context(
        self, query: str | None = None, budget: int | None = None, *, user_id: str | None = None
    ) -> SessionContext:
        """Session-start context: identity files, MEMORY.md, the diary, and the memories of
        ``user_id`` (default: this scope's user, else the owner's) most relevant to ``query``."""
        return build_context(
            self.memory, self.workspace, query=query, budget=budget,
            user_id=user_id or self.user_id,
        )  # fmt: skip

    def flush(
        self, notes: str | Sequence[str] | None = None, *, messages: Sequence[Any] | None = None
    ) -> FlushResult:
        """Durable notes (or what a compacted conversation adds) into today's diary."""
        self._check_input(notes=notes, messages=messages)
        return flush(self.memory, self.workspace, notes, messages=messages)

    def diary(
        self,
        messages: Sequence[Any],
        *,
        session_id: str | None = None,
        turn_id: str | None = None,
        channel: str | None = None,
        at: datetime | None = None,
    ) -> DiaryResult:
        """A finished turn as a ``## HH:MM`` section of today's diary (the day of ``at``
        for a replayed turn); noise and a repeated ``turn_id`` are not written."""
        self._check_input(
            messages=messages, session_id=session_id, turn_id=turn_id, channel=channel
        )
        return capture(
            self.memory, agent_id=self.agent_id, messages=messages, session_id=session_id,
            turn_id=turn_id, workspace=self.workspace.root, at=at, channel=channel,
        )  # fmt: skip

    def session_end(
        self, messages: Sequence[Any], *, session_id: str | None = None, limit: int | None = None
    ) -> SessionNote:
        """A session's last messages as ``memory/YYYY-MM-DD-<slug>.md``, indexed."""
        self._check_input(messages=messages, session_id=session_id)
        return write_session_note(
            self.memory, self.workspace, messages, session_id=session_id, limit=limit
        )

    def _check_input(self, **given: Any) -> None:
        """What every face sends into the files: a bounded count of messages and text a
        file can hold, refused (413/422) before anything is opened for writing."""
        check_messages(given.get("messages"), self.memory.settings.limits)
        check_encodable(given, "body")

    def backfill(self, **how: Any) -> BackfillReport | RollbackReport:
        """Replay old diary days into DREAMS.md (or roll back what backfills added)."""
        return rem_backfill(self.memory, self.workspace, **how)

    def commitments(
        self, *, due: bool = False, channel: str | None = None, status: str | None = None
    ) -> list[Commitment]:
        """The agent's inferred follow-ups: all (by ``status``), or those due now (marked
        delivered, in ``channel``)."""

        if due:
            return follow_ups.due(self.memory, self.agent_id, channel)
        return follow_ups.listing(self.memory, self.agent_id, status)

    def close_commitment(self, commitment_id: str) -> Commitment:
        return follow_ups.close(self.memory, self.agent_id, commitment_id)

    def index(self, *, force: bool = False) -> IndexReport:
        """Index the workspace now (the watcher does it on its own under ``serve``)."""
        return index_workspace(self.memory, self.workspace, force=force)

    def status(self) -> dict[str, Any]:
        """Files, chunks, model, last index and files waiting."""
        return workspace_status(self.memory, self.workspace)

    # -- the wiki (memoryd.wiki) in this workspace ------------------------------------------
    def wiki_compile(self, *, dry_run: bool = False) -> wiki.CompileReport:
        return wiki.compile_wiki(self.memory, self.workspace, dry_run=dry_run)

    def wiki_compiled(self) -> bool:
        """Whether the vault has been compiled: reads over GET never compile one (a GET
        changes nothing), they answer as for an empty vault and say so."""
        return (wiki_dir(self.workspace) / STATE_DIR / CLAIMS_FILE).exists()

    def wiki_search(self, query: str, limit: int = 10) -> list[dict[str, Any]]:
        return wiki.search(self.memory, self.workspace, query, limit)

    def wiki_get(self, page: str) -> dict[str, Any]:
        return wiki.get(self.memory, self.workspace, page)

    def wiki_apply(self, edit: wiki.Edit) -> tuple[wiki.Claim | None, wiki.CompileReport]:
        return wiki.apply(self.memory, self.workspace, edit)

    def wiki_lint(self) -> list[dict[str, str]]:
        return wiki.lint(self.memory, self.workspace)
