"""What a claim may cite, and whether a citation still resolves.

A citation is ``fact:<memory id>`` (a memory this agent's wiki may draw on: its
own, or its user's shared pool) or a workspace file's lines,
``memory/2026-03-01.md#L12-L14``. :func:`check` refuses what does not resolve,
with a hint of what to cite instead; :func:`digest` fingerprints cited lines so
lint can tell when the text under an applied claim's citation has changed.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from memoryd.core import Memory
from memoryd.errors import InvalidInputError
from memoryd.models import MemoryRecord, State
from memoryd.validate import check_text
from memoryd.workspace.files import safe_path
from memoryd.workspace.layout import Workspace

MAX_EVIDENCE = 20
MAX_ITEM = 1000  # characters of one citation
_LINES = re.compile(r"^(?P<path>[^#]+)#L(?P<start>\d+)(?:-L(?P<end>\d+))?$")


class Resolver:
    """Checks citations for one workspace, reading each cited file once (lint checks
    every claim of a vault, and many cite the same diary)."""

    def __init__(self, memory: Memory, ws: Workspace) -> None:
        self.memory, self.ws = memory, ws
        self._files: dict[Path, list[str] | None] = {}

    def _lines(self, path: Path) -> list[str] | None:
        if path not in self._files:
            try:
                text = self.ws.fs.read_text(path, errors="replace")
                self._files[path] = text.splitlines()
            except OSError:
                self._files[path] = None
        return self._files[path]

    def sees(self, record: MemoryRecord) -> bool:
        """Whether the agent's wiki may draw on ``record``: its own memory, or its user's pool."""
        if record.user_id != self.ws.settings.user_id:
            return False
        shared = self.memory.settings.search.shared_categories
        return record.agent_id == self.ws.agent_id or (record.category or "") in shared

    def lines(self, item: str) -> list[str]:
        """The lines ``item`` (``path#Lx[-Ly]``) cites; refused when they are not there."""
        m = _LINES.match(item)
        if not m:
            raise InvalidInputError(
                f"evidence {item!r} is neither fact:<id> nor path#Lstart[-Lend]",
                'e.g. "memory/2026-03-01.md#L12-L14" or "fact:<memory id>"',
            )
        path = safe_path(self.ws, m["path"])  # refuses traversal; reading refuses symlinks out
        start, end = int(m["start"]), int(m["end"] or m["start"])
        lines = self._lines(path)
        if lines is None:
            raise InvalidInputError(
                f"evidence {item!r}: {m['path']} does not exist",
                "cite a file of the workspace (memoryd memory-search finds the lines)",
            )
        if not 1 <= start <= end <= len(lines):
            raise InvalidInputError(
                f"evidence {item!r}: lines {start}-{end} are not in {m['path']}"
                f" ({len(lines)} lines)",
                "cite lines the file has",
            )
        return lines[start - 1 : end]

    def fact(self, item: str, *, allow_deleted: bool = False) -> MemoryRecord:
        record = self.memory.store.get(item[5:])
        if record is None or not self.sees(record):
            raise InvalidInputError(
                f"evidence {item!r}: no such memory of this agent or its user's shared pool",
                "cite the id of a memory (memoryd search ... --json shows ids)",
            )
        if record.state == State.DELETED and not allow_deleted:
            raise InvalidInputError(
                f"evidence {item!r}: that memory was deleted",
                "cite a memory that is still held, or the diary lines it came from",
            )
        return record

    def check(self, evidence: object, *, allow_deleted: bool = False) -> list[str]:
        """``evidence`` as given, once each, after checking every item resolves."""
        if not isinstance(evidence, list) or not evidence:
            raise InvalidInputError(
                "a claim needs evidence",
                'cite a memory ("fact:<id>") or lines of a workspace file'
                ' ("memory/2026-03-01.md#L4")',
            )
        if len(evidence) > MAX_EVIDENCE:
            raise InvalidInputError(f"at most {MAX_EVIDENCE} evidence items", "cite the best ones")
        out = []
        for item in evidence:
            if not isinstance(item, str) or not item.strip():
                raise InvalidInputError("an evidence item is empty", "remove it")
            item = check_text(item, self.memory.settings.limits, "an evidence item")
            if len(item) > MAX_ITEM:
                raise InvalidInputError(
                    f"an evidence item is {len(item)} characters (at most {MAX_ITEM})",
                    'cite "fact:<id>" or "path#Lx-Ly", not the text itself',
                )
            if item.startswith("fact:"):
                self.fact(item, allow_deleted=allow_deleted)
            else:
                self.lines(item)
            out.append(item)
        return list(dict.fromkeys(out))

    def digest(self, item: str) -> str | None:
        """A fingerprint of the lines ``item`` cites (``None`` for a fact)."""
        if item.startswith("fact:"):
            return None
        text = "\n".join(self.lines(item))
        return hashlib.blake2b(text.encode("utf-8", errors="replace"), digest_size=8).hexdigest()
