"""Markdown files into chunk records in the one store, incrementally.

Each chunk is an ordinary :class:`~memoryd.models.MemoryRecord` with
``origin=chunk``, owned by ``settings.workspace.user_id`` and the agent, with
its file and line range in ``source`` and its heading path in ``context``.

Incremental by content, not by timestamps: a file whose hash (and chunking)
matches what its chunks record is skipped; a changed file is re-chunked and
its chunks replaced in one transaction. Chunk ids are derived from the agent,
the path and the chunk's text, and vectors come through the (model, text
hash) cache, so only chunks whose text really changed are embedded.

Safe under concurrency: the replacement transaction re-reads the file and
starts over if it changed since it was chunked, so whichever indexer commits
last (in this process or another sharing the store) wrote the file's content
at that moment, and a file edited while it is indexed ends up indexed at its
final content.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memoryd.access import workspace_owner
from memoryd.conversation import context_of, contextual_vectors, mixes, spoken
from memoryd.core import Memory
from memoryd.errors import OutsideWorkspaceError
from memoryd.models import Filters, MemoryRecord, Origin, Source, content_hash
from memoryd.workspace.chunking import (
    CONTEXT_TOKENS,
    ChunkPlan,
    chunk_markdown,
    chunk_plan,
    turn_words,
)
from memoryd.workspace.files import SkippedFile, read_markdown, split_lines
from memoryd.workspace.layout import Workspace, classify, folder_category

log = logging.getLogger("memoryd.workspace")

_NAMESPACE = uuid.UUID("5b0f3c62-6f1e-4f55-9a43-7d2d0c6e2f10")
_MAX_ATTEMPTS = 8
_LAST_INDEX = "workspace:last_index:{agent}"

Progress = Callable[[int, int, str], None]


@dataclass
class FileResult:
    path: str
    status: str  # indexed | unchanged | removed | skipped
    chunks: int = 0
    embedded: int = 0
    reason: str | None = None


@dataclass
class IndexReport:
    agent_id: str
    plan: ChunkPlan
    files: list[FileResult] = field(default_factory=list)
    seconds: float = 0.0

    def count(self, status: str) -> int:
        return sum(1 for f in self.files if f.status == status)

    @property
    def embedded(self) -> int:
        return sum(f.embedded for f in self.files)

    @property
    def chunks_written(self) -> int:
        return sum(f.chunks for f in self.files if f.status == "indexed")

    def to_json(self) -> dict[str, Any]:
        return {
            "agent_id": self.agent_id,
            "chunk_tokens": self.plan.size,
            "chunk_overlap": self.plan.overlap,
            "indexed": self.count("indexed"),
            "unchanged": self.count("unchanged"),
            "removed": self.count("removed"),
            "skipped": [
                {"path": f.path, "reason": f.reason} for f in self.files if f.status == "skipped"
            ],
            "chunks_written": self.chunks_written,
            "embedded": self.embedded,
            "seconds": round(self.seconds, 3),
        }


class _ChangedUnderUs(Exception):
    """The file changed between chunking and committing: roll back, read it again."""


_locks_guard = threading.Lock()
_locks: dict[tuple[str, str], threading.Lock] = {}


def _agent_lock(store_url: str, agent_id: str) -> threading.Lock:
    """One indexing pass per agent at a time in this process (the watcher, the API, the CLI)."""
    with _locks_guard:
        return _locks.setdefault((store_url, agent_id), threading.Lock())


def chunk_id(user_id: str, agent_id: str, rel_path: str, index_hash: str, ordinal: int) -> str:
    """Deterministic: the same chunk of the same file always gets the same id."""
    key = f"memoryd-chunk\0{user_id}\0{agent_id}\0{rel_path}\0{index_hash}\0{ordinal}"
    return str(uuid.uuid5(_NAMESPACE, key))


#: File kinds written as conversations (``- **Speaker**: text`` items): indexed turn by turn.
CONVERSATION_KINDS = frozenset({"diary", "session"})


def _file_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Indexer:
    """Indexes one agent's workspace into ``memory``'s store."""

    def __init__(self, memory: Memory, workspace: Workspace) -> None:
        self.memory = memory
        self.ws = workspace
        self.user_id = workspace_owner(memory.settings)
        self.plan = chunk_plan(workspace.settings, memory.embedder.max_tokens)

    # -- what is indexed --------------------------------------------------------------------
    def _scope(self, rel_path: str | None = None) -> Filters:
        return Filters(
            user_id=self.user_id,
            agent_id=self.ws.agent_id,
            origins=[Origin.CHUNK],
            states=[],
            source_path=rel_path,
        )

    def indexed_files(self) -> dict[str, tuple[str, str]]:
        """``{path: (file_hash, chunking)}`` for every file that has chunks in the store."""
        out: dict[str, tuple[str, str]] = {}
        for record in self.memory.store.iter_all(self._scope()):
            if record.source is not None and record.source.path not in out:
                out[record.source.path] = (
                    str(record.metadata.get("file_hash", "")),
                    str(record.metadata.get("chunking", "")),
                )
        return out

    def _stored_state(self, rel_path: str) -> tuple[str, str] | None:
        found = self.memory.store.list(self._scope(rel_path), limit=1)
        if not found:
            return None
        meta = found[0].metadata
        return str(meta.get("file_hash", "")), str(meta.get("chunking", ""))

    # -- running ----------------------------------------------------------------------------
    def run(
        self,
        *,
        force: bool = False,
        paths: Sequence[Path] | None = None,
        progress: Progress | None = None,
    ) -> IndexReport:
        """Index every file (``paths=None``; deleted files lose their chunks) or just ``paths``."""
        started = time.monotonic()
        report = IndexReport(agent_id=self.ws.agent_id, plan=self.plan)
        with _agent_lock(self.memory.store.url, self.ws.agent_id):
            if paths is None:
                current = self.ws.files()
                known = self.indexed_files()
                present = {self.ws.rel(p) for p in current}
                gone = [p for p in known if p not in present]
                total = len(current) + len(gone)
                for n, path in enumerate(current, 1):
                    report.files.append(self._index_file(path, force, known.get(self.ws.rel(path))))
                    if progress:
                        progress(n, total, self.ws.rel(path))
                for n, rel in enumerate(gone, len(current) + 1):
                    report.files.append(self._remove(rel))
                    if progress:
                        progress(n, total, rel)
            else:
                for n, path in enumerate(paths, 1):
                    path = Path(path)
                    if not path.is_absolute():
                        path = self.ws.root / path
                    rel = self.ws.rel(path)
                    if path.exists() or path.is_symlink():
                        if not self.ws.is_indexed_path(path):
                            continue
                        if path.is_symlink() and path not in self.ws.files():
                            continue  # an alias or a link out: a full scan skips it too
                        report.files.append(self._index_file(path, force, self._stored_state(rel)))
                    else:
                        report.files.append(self._remove(rel))
                    if progress:
                        progress(n, len(paths), rel)
        report.seconds = time.monotonic() - started
        if paths is None or any(f.status != "unchanged" for f in report.files):
            self.memory.store.kv_set(
                _LAST_INDEX.format(agent=self.ws.agent_id),
                {"at": self.memory.clock().isoformat(), **report.to_json()},
            )
        for f in report.files:
            if f.status == "skipped":
                log.warning("workspace %s: skipped %s: %s", self.ws.agent_id, f.path, f.reason)
        return report

    def _remove(self, rel: str) -> FileResult:
        removed = self.memory.store.purge(self._scope(rel))
        return FileResult(rel, "removed" if removed else "unchanged", chunks=0)

    def _index_file(self, path: Path, force: bool, stored: tuple[str, str] | None) -> FileResult:
        rel = self.ws.rel(path)
        done: FileResult | None = None
        embedded_total = 0
        for _attempt in range(_MAX_ATTEMPTS):
            if not path.exists():
                return self._remove(rel)
            try:
                data, text = read_markdown(path, self.ws.settings.max_file_bytes, self.ws.fs)
            except SkippedFile as skip:  # a symlink out of the workspace too
                self.memory.store.purge(self._scope(rel))  # stale chunks would lie about the file
                return FileResult(rel, "skipped", reason=skip.reason)
            digest = _file_hash(data)
            if not force and stored == (digest, self.label(rel)):
                return done or FileResult(rel, "unchanged")
            records = self._records(rel, digest, split_lines(text))
            embedded_total += self._prefetch(records)
            try:
                with self.memory.store.atomic():
                    if not path.exists() or _file_hash(self.ws.fs.read_bytes(path)) != digest:
                        raise _ChangedUnderUs
                    self._replace(rel, records)
            except _ChangedUnderUs:
                continue
            except (OSError, OutsideWorkspaceError):
                continue  # read again: a file swapped for a symlink out is skipped then
            done = FileResult(rel, "indexed", chunks=len(records), embedded=embedded_total)
            # Go round once more: if the file changed after the commit, index it again.
            stored, force = (digest, self.label(rel)), False
        return FileResult(rel, "skipped", reason="the file kept changing while it was indexed")

    def _records(self, rel: str, digest: str, lines: list[str]) -> list[MemoryRecord]:
        kind = classify(rel)
        count = self.memory.embedder.count_tokens
        chunks = chunk_markdown(lines, count, self.plan, turns=kind.kind in CONVERSATION_KINDS)
        now = self.memory.clock()
        seen: dict[str, int] = {}
        records: list[MemoryRecord] = []
        for n, chunk in enumerate(chunks):
            context = self._context(rel, chunk.headings)
            if chunk.speaker is not None:
                before = chunks[n - 1] if n and chunks[n - 1].speaker is not None else None
                prior = f"{before.speaker}: {turn_words(before.text)}" if before else None
                context += "\n" + context_of(chunk.speaker, kind.event_at, prior)
            index_hash = hashlib.sha256(
                f"{context}\n{chunk.text}".encode("utf-8", "surrogatepass")
            ).hexdigest()
            ordinal = seen.get(index_hash, 0)
            seen[index_hash] = ordinal + 1
            records.append(
                MemoryRecord(
                    id=chunk_id(self.user_id, self.ws.agent_id, rel, index_hash, ordinal),
                    text=chunk.text,
                    user_id=self.user_id,
                    agent_id=self.ws.agent_id,
                    origin=Origin.CHUNK,
                    category=folder_category(rel),
                    source=Source(path=rel, start_line=chunk.start_line, end_line=chunk.end_line),
                    context=context,
                    metadata={
                        "file_hash": digest,
                        "chunk_hash": chunk.hash,
                        "kind": kind.kind,
                        "evergreen": kind.evergreen,
                        "chunking": self.label(rel),
                        # a turn's place in its file: search lifts turns whose neighbours match
                        **(
                            {"speaker": chunk.speaker, "turn": n}
                            if chunk.speaker is not None
                            else {}
                        ),
                    },
                    created_at=now,
                    updated_at=now,
                    event_at=kind.event_at,
                )
            )
        return records

    def label(self, rel: str) -> str:
        """How ``rel`` is chunked; a file whose chunks say otherwise is chunked again."""
        turns = classify(rel).kind in CONVERSATION_KINDS
        # "turns2": turn chunks carry their place (metadata.turn); older ones are redone once
        label = f"{self.plan.label}/turns2" if turns else self.plan.label
        # files indexed before their folder became a category are indexed again, once
        return f"{label}/category" if folder_category(rel) else label

    def _context(self, rel: str, headings: tuple[str, ...]) -> str:
        """The heading path, kept within the tokens the chunk plan leaves for it."""
        count = self.memory.embedder.count_tokens
        parts = [rel, *headings]
        context = " > ".join(parts)
        while count(context) > CONTEXT_TOKENS and len(parts) > 2:
            parts.pop(1)  # drop outer headings first; the innermost says the most
            context = " > ".join([parts[0], "…", *parts[1:]])
        if count(context) > CONTEXT_TOKENS:
            words = context.split()
            while words and count(" ".join(words)) > CONTEXT_TOKENS:
                words.pop()
            context = " ".join(words)
        return context

    def _prefetch(self, records: list[MemoryRecord]) -> int:
        """Embed outside the write transaction; returns how many texts were not cached.

        A conversation turn (``metadata.speaker``) gets the contextual vector of
        :mod:`memoryd.conversation`: "Speaker: words" mixed with the turn before it.
        """
        if not records:
            return 0
        turn = [r.metadata.get("speaker") is not None for r in records]
        texts = [
            spoken(str(r.metadata["speaker"]), turn_words(r.text)) if t else r.index_text
            for r, t in zip(records, turn, strict=True)
        ]
        cached = self.memory.store.cache_get(
            self.memory.embedder.name, [content_hash(t) for t in texts]
        )
        missing = len({content_hash(t) for t in texts} - set(cached))
        own = self.memory.embed_texts(texts)
        follows = [
            k > 0 and turn[k] and turn[k - 1] and mixes(turn_words(records[k - 1].text))
            for k in range(len(records))
        ]
        mixed = contextual_vectors(own, follows)
        for record, vector in zip(records, mixed, strict=True):
            record.embedding = vector  # rows that follow no turn are their own vector
        return missing

    def _replace(self, rel: str, records: list[MemoryRecord]) -> None:
        store = self.memory.store
        old = {r.id: r for r in store.iter_all(self._scope(rel))}
        for record in records:
            previous = old.get(record.id)
            if previous is not None:
                record.created_at = previous.created_at  # the chunk itself is not new
        store.purge(self._scope(rel))
        self.memory.write_records(records, actor="workspace-indexer", reason=f"indexed {rel}")


def last_index(memory: Memory, agent_id: str) -> dict[str, Any] | None:
    value = memory.store.kv_get(_LAST_INDEX.format(agent=agent_id))
    return value if isinstance(value, dict) else None


def index_workspace(
    memory: Memory,
    workspace: Workspace,
    *,
    force: bool = False,
    paths: Sequence[Path] | None = None,
    progress: Progress | None = None,
) -> IndexReport:
    """Index one agent's workspace (all files, or just ``paths``)."""
    return Indexer(memory, workspace).run(force=force, paths=paths, progress=progress)
