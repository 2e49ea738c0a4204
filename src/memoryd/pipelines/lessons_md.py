"""``memory/lessons.md``: the human-readable list of lessons, appended exactly once.

Both lesson pipelines (TTL decay and lessons from session logs) store a lesson
as a shared ``experience`` memory *and* append it to the agent's
``memory/lessons.md`` (seed 003). The store and the file cannot commit
together, so the file append is journaled:

1. In the store transaction that writes the lesson memory, :func:`journal`
   adds the Markdown block to a pending list in kv (``<pipeline>:lessons_md``).
2. After the commit, :func:`flush` appends each pending block whose marker
   (``<!-- lesson:ID -->``) is not in the file yet, then clears the list.

Killed before the commit: neither the memory nor the block exists. Killed after
it: the next run's :func:`flush` appends what is missing; a block appended just
before the kill is recognised by its marker and not appended twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from memoryd.settings import WorkspaceSettings
from memoryd.store import Store
from memoryd.workspace.files import append_atomic
from memoryd.workspace.layout import Workspace
from memoryd.workspace.safefs import WorkspaceFS

LESSONS_FILE = "lessons.md"
HEADER = (
    "# Lessons\n\n"
    "Lessons learned from past failures, retries and expired memories. memoryd appends\n"
    "here (TTL decay and session logs); each lesson is also a shared `experience` memory.\n"
)


@dataclass(frozen=True)
class PendingBlock:
    lesson_id: str
    path: str  # absolute path of the lessons.md it goes to
    block: str  # Markdown, starting with a ``##`` heading and containing the marker


def lessons_path(ws: Workspace) -> Path:
    return ws.memory_dir / LESSONS_FILE


def marker(lesson_id: str) -> str:
    return f"<!-- lesson:{lesson_id} -->"


def _key(pipeline: str) -> str:
    return f"{pipeline}:lessons_md"


def journal(store: Store, pipeline: str, blocks: Sequence[PendingBlock]) -> None:
    """Add ``blocks`` to the pending list; call inside the ``store.atomic()`` that
    writes their lesson memories, so both commit or neither does."""
    if not blocks:
        return
    with store.atomic():
        pending = list(store.kv_get(_key(pipeline)) or [])
        known = {p["lesson_id"] for p in pending}
        for b in blocks:
            if b.lesson_id not in known:
                pending.append({"lesson_id": b.lesson_id, "path": b.path, "block": b.block})
        store.kv_set(_key(pipeline), pending)


def flush(store: Store, pipeline: str, workspace: WorkspaceSettings | None = None) -> int:
    """Append every pending block that is not in its file yet; return how many were.

    Each file is ``<workspace>/memory/lessons.md``, written without leaving that
    workspace (and ``workspace.allowed_roots`` when ``workspace`` settings are given)."""
    pending = list(store.kv_get(_key(pipeline)) or [])
    if not pending:
        return 0
    appended = 0
    contents: dict[str, str] = {}
    for p in pending:
        path = Path(p["path"])
        fs = WorkspaceFS.of(path.parent.parent, workspace or WorkspaceSettings())
        if p["path"] not in contents:
            contents[p["path"]] = fs.read_if_exists(path).decode("utf-8", "replace")
        if marker(p["lesson_id"]) in contents[p["path"]]:
            continue  # appended before a kill; the journal was not cleared yet
        append_atomic(path, "\n" + p["block"].rstrip("\n") + "\n", fs=fs, header=HEADER)
        contents[p["path"]] += p["block"]
        appended += 1
    with store.atomic():
        # blocks journaled meanwhile by another run of the same pipeline stay pending
        now = list(store.kv_get(_key(pipeline)) or [])
        done = {p["lesson_id"] for p in pending}
        store.kv_set(_key(pipeline), [p for p in now if p["lesson_id"] not in done])
    return appended


def pending_count(store: Store, pipeline: str) -> int:
    return len(store.kv_get(_key(pipeline)) or [])
