"""The shapes of the ``/v1`` answers about an agent's files: the workspace routes
(``memory_get``, ``memory_search``, context, session notes, flush, backfill,
commitments, index, status), the wiki, the diary and the pipelines.

:mod:`memoryd.shapes` holds the memory routes' shapes; these are their siblings
for the agent's files. The routes declare them as response models so the OpenAPI
schema shows them; each field is exactly what the route has always answered
(``integrations/openclaw`` reads ``memory_search``'s hits field by field), so the
JSON on the wire does not change. Answers that come from stored JSON (wiki
claims and pages, pipeline runs) keep any further field they hold
(``extra="allow"``).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SerializationInfo, model_serializer

from memoryd.shapes import _Shape

# -- the workspace -----------------------------------------------------------------------------


class FileSliceOut(BaseModel):
    """``memory_get``: lines of a Markdown file; empty ``text`` when it does not exist."""

    model_config = ConfigDict(populate_by_name=True)

    path: str
    text: str
    from_line: int = Field(alias="from", description="the first line, 1-based")
    lines: int = Field(description="how many lines text holds")
    total_lines: int | None = Field(description="None when the file is missing")
    missing: bool


_CITATION = ("citation", "snippet", "path", "start_line", "end_line")


class FileHitOut(BaseModel):
    """One ``memory_search`` hit: a chunk of a file, cited ``path#Lx-Ly``. The citation
    fields are there exactly when the hit came from a file (always, for a chunk)."""

    id: str
    citation: str | None = None
    snippet: str | None = None
    path: str | None = None
    start_line: int | None = None
    end_line: int | None = None
    score: float
    parts: dict[str, float]
    kind: Any = Field(description="the chunk's metadata kind (e.g. a diary turn), or null")
    context: str | None

    # left unannotated on purpose: the JSON schema (OpenAPI) then stays the fields' own
    @model_serializer(mode="wrap")
    def _cited_only(self, handler: Any, info: SerializationInfo):
        out = handler(self)
        if isinstance(out, dict) and out.get("path", 0) is None:
            for name in _CITATION:
                out.pop(name, None)
        return out


class FileHits(BaseModel):
    results: list[FileHitOut]


class SectionOut(BaseModel):
    title: str
    path: str | None
    chars: int
    shown_chars: int
    truncated: bool


class ContextOut(BaseModel):
    """Session-start context: ``text`` to show the agent, and what each section held."""

    agent_id: str
    today: str
    budget: int
    chars: int
    truncated: bool
    sections: list[SectionOut]
    text: str


class SessionNoteOut(BaseModel):
    path: str
    slug: str
    slug_source: str = Field(description="llm, keywords or time")
    messages: int
    chunks: int


class FlushOut(BaseModel):
    path: str
    appended: int = Field(description="notes written")
    chunks: int


class BackfillCandidate(BaseModel):
    text: str
    source: str


class BackfillOut(BaseModel):
    model_config = ConfigDict(extra="forbid")  # told apart from RollbackOut by its fields

    run_id: str
    agent_id: str
    dry_run: bool
    days: dict[str, list[BackfillCandidate]]
    candidates: int
    staged: int
    skipped: list[str]
    dreams_bytes: int


class RollbackOut(BaseModel):
    model_config = ConfigDict(extra="forbid")

    agent_id: str
    dry_run: bool
    runs: int
    dreams_bytes_removed: int
    dreams_file_removed: bool
    memories_removed: int
    notes: list[str]


class CommitmentOut(BaseModel):
    id: str
    agent: str
    channel: str
    text: str
    due: str
    source: str
    created: str
    status: str = Field(description="pending, delivered, done or expired")
    delivered_at: str | None
    closed_at: str | None
    also: list[dict[str, str]] = Field(
        default_factory=list,
        description="later statements of the same intent merged into it: text, source",
    )


class Commitments(BaseModel):
    results: list[CommitmentOut]


class SkippedFileOut(BaseModel):
    path: str
    reason: str | None  # always given today; the indexer's record allows none


class IndexOut(BaseModel):
    agent_id: str
    chunk_tokens: int
    chunk_overlap: int
    indexed: int
    unchanged: int
    removed: int
    skipped: list[SkippedFileOut]
    chunks_written: int
    embedded: int
    seconds: float


class WorkspaceStatusOut(BaseModel):
    agent_id: str
    workspace: str
    exists: bool
    files: int
    indexed_files: int
    chunks: int
    model: str
    chunk_tokens: int
    chunk_overlap: int
    last_index: str | None
    pending: list[str]
    deleted: list[str]
    skipped: list[SkippedFileOut]


class Workspaces(BaseModel):
    results: list[WorkspaceStatusOut]


# -- the wiki ----------------------------------------------------------------------------------


class ClaimOut(BaseModel):
    """One statement on a wiki page, with the evidence that says it."""

    model_config = ConfigDict(extra="allow")

    id: str
    page: str
    text: str
    evidence: list[str]
    status: str = "current"
    valid_from: str | None = None
    valid_until: str | None = None
    confirmed: str | None = None
    confidence: float = 1.0
    origin: str = "fact"
    note: str | None = None


class WikiHitOut(ClaimOut):
    file: str
    score: float


class WikiHits(BaseModel):
    results: list[WikiHitOut]


class WikiPageOut(_Shape):
    """A page: its claims and its Markdown; ``claim`` when it was asked for by a claim id."""

    model_config = ConfigDict(extra="allow")
    _OMIT_NONE = ("claim",)

    title: str
    kind: str
    file: str
    links: list[str]
    claims: list[ClaimOut]
    path: str
    markdown: str
    claim: ClaimOut | None = None


class WikiPage(BaseModel):
    result: WikiPageOut


class CompileOut(BaseModel):
    agent_id: str
    pages: int
    claims: int
    written: list[str]
    removed: list[str]
    unchanged: int
    contested: int
    stale: int
    adopted: list[str]
    released: list[str]


class WikiApplied(BaseModel):
    claim: ClaimOut | None
    compile: CompileOut


class ProblemOut(BaseModel):
    kind: str
    where: str
    message: str


class WikiProblems(BaseModel):
    problems: list[ProblemOut]


# -- the diary and the pipelines ---------------------------------------------------------------


class DiaryOut(BaseModel):
    """What a captured turn did: ``written`` is false for noise or a repeated turn id."""

    agent_id: str
    path: str
    date: str
    time: str
    written: bool
    reason: str | None
    kept: int
    dropped: int
    bytes: int


class RunOut(BaseModel):
    """One recorded pipeline run (notes and errors only for admin keys)."""

    model_config = ConfigDict(extra="allow")

    name: str
    run_id: str
    agent: str | None
    started_at: str
    finished_at: str | None = None
    status: str = "running"
    counts: dict[str, Any] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
    error: str | None = None
    dry_run: bool = False
    trigger: str = "manual"


class PipelineOut(BaseModel):
    name: str
    description: str
    schedule: str
    timezone: str
    enabled: bool
    next_run: str | None
    last_run: RunOut | None


class Pipelines(BaseModel):
    scheduler: bool = Field(description="whether this server runs the scheduler")
    pipelines: list[PipelineOut]
    runs: list[RunOut]
