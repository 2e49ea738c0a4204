"""Session-start context: what an agent reads to wake up (seed 004 section 3, seed 000).

Identity files, ``MEMORY.md``, today's and yesterday's diary, and the memories
most relevant to an optional query, in one text within a character budget.
Today's diary holds what no pipeline has digested yet and yesterday's covers
the gap before the nightly run, so with the search results there are no blind
spots across a session reset.

The budget is shared fairly: sections that fit are shown whole and the rest
split what is left equally (water-filling). A cut section keeps its head and
its tail (where a diary's newest entries are) around a visible marker that
says how much is missing and how to read it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from memoryd.access import workspace_owner
from memoryd.core import Memory
from memoryd.errors import InvalidInputError
from memoryd.models import Origin
from memoryd.workspace.bootstrap import BOOTSTRAP_FILE
from memoryd.workspace.files import SkippedFile, read_markdown
from memoryd.workspace.layout import IDENTITY_FILES, Workspace, local_today

MIN_BUDGET = 500
MAX_BUDGET = 1_000_000
_HEAD_SHARE = 0.7


@dataclass
class Section:
    title: str
    path: str | None
    body: str
    shown: str = ""
    truncated: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "path": self.path,
            "chars": len(self.body),
            "shown_chars": len(self.shown),
            "truncated": self.truncated,
        }


@dataclass
class SessionContext:
    agent_id: str
    today: str
    budget: int
    text: str
    sections: list[Section] = field(default_factory=list)

    @property
    def truncated(self) -> bool:
        return any(s.truncated for s in self.sections)

    def to_json(self) -> dict[str, Any]:
        return {
            "agent_id": self.agent_id,
            "today": self.today,
            "budget": self.budget,
            "chars": len(self.text),
            "truncated": self.truncated,
            "sections": [s.to_json() for s in self.sections],
            "text": self.text,
        }


def marker(shown: int, total: int, path: str | None) -> str:
    where = f'; read it all with memory_get("{path}")' if path else ""
    return f"\n[… truncated: {total - shown:,} of {total:,} characters not shown{where} …]\n"


def _cut(body: str, allowance: int, path: str | None) -> str:
    """Head and tail of ``body`` around a marker, within ``allowance`` characters."""
    if len(body) <= allowance:
        return body
    mark = marker(0, len(body), path)  # the longest the marker can be
    room = max(0, allowance - len(mark))
    head_len = int(room * _HEAD_SHARE)
    tail_len = room - head_len
    head = body[:head_len]
    nl = head.rfind("\n")
    if nl > head_len // 2:
        head = head[: nl + 1]  # end on a line boundary when that costs little
    tail = body[len(body) - tail_len :] if tail_len else ""
    nl = tail.find("\n")
    if 0 <= nl < tail_len // 2:
        tail = tail[nl + 1 :]
    return head + marker(len(head) + len(tail), len(body), path) + tail


def _fair_caps(sizes: list[int], available: int) -> list[int]:
    """Water-filling: the largest cap ``c`` with ``sum(min(size, c)) <= available``."""
    caps = [0] * len(sizes)
    left = max(0, available)
    order = sorted(range(len(sizes)), key=lambda i: sizes[i])
    for n, i in enumerate(order):
        share = left // (len(order) - n)
        caps[i] = min(sizes[i], share)
        left -= caps[i]
    return caps


def build_context(
    memory: Memory,
    ws: Workspace,
    *,
    query: str | None = None,
    budget: int | None = None,
    user_id: str | None = None,
    top_k: int = 8,
) -> SessionContext:
    """Everything the agent should read at session start, within ``budget`` characters."""
    budget = ws.settings.context_chars if budget is None else budget
    if (
        isinstance(budget, bool)
        or not isinstance(budget, int)
        or not MIN_BUDGET <= budget <= MAX_BUDGET
    ):
        raise InvalidInputError(
            f"budget must be between {MIN_BUDGET} and {MAX_BUDGET} characters, got {budget!r}",
            "the default (workspace.context_chars) is 20000",
        )
    today = local_today(ws.settings, memory.clock)
    yesterday = today - timedelta(days=1)
    sections: list[Section] = []
    for name in (*IDENTITY_FILES[:4], BOOTSTRAP_FILE, *IDENTITY_FILES[4:]):
        _add_file(sections, ws, name, name)
    _add_file(sections, ws, ws.rel(ws.memory_file), ws.rel(ws.memory_file))
    for day, label in ((today, "today"), (yesterday, "yesterday")):
        rel = ws.rel(ws.diary_path(day))
        _add_file(sections, ws, rel, f"{rel} ({label}'s diary)")
    if query and query.strip():
        shown_files = {s.path for s in sections}
        body = _relevant(memory, ws, query, user_id, top_k, shown_files)
        if body:
            sections.append(Section(f"Relevant memories for: {query.strip()[:200]}", None, body))

    title = (
        f"# Session context: agent {ws.agent_id}, {today.isoformat()} ({ws.settings.timezone})\n"
    )
    headers = [f"\n## {s.title}\n" for s in sections]
    available = budget - len(title) - sum(len(h) for h in headers)
    caps = _fair_caps([len(s.body) for s in sections], available)
    for section, cap in zip(sections, caps, strict=True):
        section.shown = _cut(section.body, cap, section.path)
        section.truncated = section.shown != section.body
    text = title + "".join(h + s.shown for h, s in zip(headers, sections, strict=True))
    if len(text) > budget:  # only when the budget cannot even hold the headers
        end = marker(0, len(text), None)
        text = text[: max(0, budget - len(end))] + end
        text = text[:budget]
        for s in sections:
            s.truncated = True
    return SessionContext(ws.agent_id, today.isoformat(), budget, text, sections)


def _add_file(sections: list[Section], ws: Workspace, rel: str, title: str) -> None:
    path = ws.root / rel
    if not os.path.lexists(path) or path.is_dir():
        return
    try:
        _, text = read_markdown(path, ws.settings.max_file_bytes, ws.fs)
    except SkippedFile as skip:  # a symlink out of the workspace is not shown either
        sections.append(Section(title, rel, f"(not shown: {skip.reason})"))
        return
    text = text.strip("\n")
    if text.strip():
        sections.append(Section(title, rel, text + "\n"))


def _relevant(
    memory: Memory,
    ws: Workspace,
    query: str,
    user_id: str | None,
    top_k: int,
    shown_files: set[str | None],
) -> str:
    """Top memories for ``query``: the user's memories with this agent and its chunks.

    Chunks of files already shown in full above are left out: they would only
    repeat what the agent has just read.
    """
    owner = workspace_owner(memory.settings)
    users = list(dict.fromkeys([user_id or owner, owner]))
    hits = []
    for uid in users:
        hits.extend(
            memory.search(
                query,
                user_id=uid,
                agent_id=ws.agent_id,
                top_k=top_k * 2,
                min_score=ws.settings.min_score,
            )
        )
    hits.sort(key=lambda h: -h.score)
    lines: list[str] = []
    seen: set[str] = set()
    for hit in hits:
        record = hit.record
        if hit.id in seen:
            continue
        seen.add(hit.id)
        if record.origin == Origin.CHUNK and record.source and record.source.path in shown_files:
            continue
        where = record.source.citation if record.source else (record.category or str(record.origin))
        when = (record.event_at or record.created_at).date().isoformat()
        text = " ".join(record.text.split())
        lines.append(f"- {text} ({where}, {when}, score {hit.score:.2f})")
        if len(lines) >= top_k:
            break
    return "\n".join(lines) + ("\n" if lines else "")
