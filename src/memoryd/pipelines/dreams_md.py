"""The dream's reports: ``DREAMS.md`` for people, the audit log for machines.

``DREAMS.md`` (OpenClaw's human review surface, seed 002) sits in the agent's
workspace and is never indexed for search. Each dream appends one section::

    ## Dream · 2026-03-28 02:00 UTC · dream-20260328T020000-3fa2c1

    - Step 1 · diary 2026-03-27 (12.4 KB) -> long-term: ADD 10 · UPDATE 2 · DELETE 0 · NONE 2
    - Step 2 · 38 short-term memories older than 7 days -> long-term: ADD 5 · UPDATE 3 · ...
    - Removed from short-term: 38 (kept in history)
    - Compression: 38 short-term -> 5 new long-term (7.6x)
    - Long-term memory: 120 -> 135
    - Undo with `memoryd dream rollback dream-20260328T020000-3fa2c1`

Appends go through the diary's locked append, so a report lands whole.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from memoryd.audit import AuditLog
from memoryd.core import Memory
from memoryd.models import Event, MemoryEvent
from memoryd.pipelines.rollback import Undone
from memoryd.settings import Settings
from memoryd.workspace import Workspace, resolve_workspace
from memoryd.workspace.files import append_section

DECISIONS = (Event.ADD, Event.UPDATE, Event.DELETE, Event.NONE)


@dataclass
class AgentDream:
    """What one agent's dream did (or, in a dry run, would do)."""

    agent: str
    run_id: str
    started: datetime
    dry_run: bool = False
    short_term_days: int = 7
    days: list[str] = field(default_factory=list)
    diary_bytes: int = 0
    step1: dict[str, int] = field(default_factory=lambda: {e.value: 0 for e in DECISIONS})
    step2: dict[str, int] = field(default_factory=lambda: {e.value: 0 for e in DECISIONS})
    consolidated: int = 0  # short-term memories processed in step 2
    removed: int = 0  # ... and deleted from short-term
    left_out: int = 0  # ... of them not re-added: closed or expired tasks, chit-chat
    tasks_closed: int = 0  # open tasks a statement of finished work closed
    long_term_before: int = 0
    long_term_after: int = 0
    net: int = 0  # change of long-term memories so far (ADD +1, DELETE -1)
    aborted: str | None = None
    undone: Undone | None = None

    def tally(self, step: dict[str, int], events: list[MemoryEvent]) -> None:
        for e in events:
            step[e.event.value] = step.get(e.event.value, 0) + 1
            if e.event == Event.ADD:
                self.net += 1
            elif e.event == Event.DELETE:
                self.net -= 1

    @property
    def compression(self) -> float | None:
        """Short-term memories consumed per new long-term memory."""
        if not self.consolidated:
            return None
        return self.consolidated / max(1, self.step2[Event.ADD.value])

    def counts(self) -> dict[str, int]:
        out = {
            "diary_days": len(self.days),
            "short_term_consolidated": self.consolidated,
            "short_term_removed": self.removed,
            "short_term_left_out": self.left_out,
            "tasks_closed": self.tasks_closed,
            "long_term_before": self.long_term_before,
            "long_term_after": self.long_term_after,
        }
        for name, step in (("step1", self.step1), ("step2", self.step2)):
            for event, n in step.items():
                out[f"{name}_{event.lower()}"] = n
        return out


HEADER = "# Dreams\n\nWhat memoryd's nightly dream did. Newest at the bottom."


def _decisions(step: dict[str, int]) -> str:
    return " · ".join(f"{e.value} {step.get(e.value, 0):,}" for e in DECISIONS)


def _size(n: int) -> str:
    return f"{n / 1024:.1f} KB" if n >= 1024 else f"{n} B"


def render_report(d: AgentDream) -> str:
    """One ``##`` section describing what a dream did for one agent."""
    when = d.started.astimezone(UTC)
    title = "Dream (dry run)" if d.dry_run else "Dream"
    lines = [f"## {title} · {when:%Y-%m-%d %H:%M} UTC · {d.run_id}", ""]
    if d.days:
        days = ", ".join(d.days)
        lines.append(
            f"- Step 1 · diary {days} ({_size(d.diary_bytes)}) -> long-term: {_decisions(d.step1)}"
        )
    else:
        lines.append("- Step 1 · no new diary day to digest")
    if d.consolidated:
        lines.append(
            f"- Step 2 · {d.consolidated:,} short-term memories older than "
            f"{d.short_term_days} days -> long-term: {_decisions(d.step2)}"
        )
        if d.dry_run:
            lines.append(f"- Would remove from short-term: {d.consolidated:,}")
        else:
            lines.append(f"- Removed from short-term: {d.removed:,} (kept in history)")
        ratio = d.compression
        adds = d.step2.get(Event.ADD.value, 0)
        lines.append(
            f"- Compression: {d.consolidated:,} short-term -> {adds:,} new long-term"
            + (f" ({ratio:.1f}x)" if ratio is not None else "")
        )
    else:
        lines.append("- Step 2 · no short-term memory old enough to consolidate")
    if d.left_out:
        lines.append(
            f"- Not carried to long-term: {d.left_out:,} (closed or expired tasks, chit-chat)"
        )
    if d.tasks_closed:
        lines.append(f"- Tasks closed by a statement that finished them: {d.tasks_closed:,}")
    lines.append(f"- Long-term memory: {d.long_term_before:,} -> {d.long_term_after:,}")
    if d.aborted:
        lines.append(f"- **Aborted** · {d.aborted}")
        if d.undone is not None:
            u = d.undone
            lines.append(
                f"- Undone: {u.deleted} added removed, {u.reverted} updates reverted, "
                f"{u.restored} deletions restored"
            )
    elif not d.dry_run:
        lines.append(f"- Undo with `memoryd dream rollback {d.run_id}`")
    return "\n".join(lines) + "\n"


def write_report(d: AgentDream, ws: Workspace) -> None:
    append_section(ws.dreams_file, render_report(d), fs=ws.fs, header=HEADER)


def audit_dream(settings: Settings, d: AgentDream) -> None:
    """One audit line per agent and run (the audit log keeps no memory text)."""
    log = AuditLog(settings)
    try:
        log.write(
            {
                "ts": datetime.now(UTC).isoformat(timespec="milliseconds"),
                "method": "PIPELINE",
                "path": "pipelines/dream",
                "op": "dream.aborted" if d.aborted else "dream",
                "status": 500 if d.aborted else 200,
                "principal": f"dream:{d.run_id}",
                "agent_id": d.agent,
                "run_id": d.run_id,
                "count": sum(d.step1.values()) + sum(d.step2.values()),
            }
        )
    finally:
        log.close()


def write_rollback_note(memory: Memory, run_id: str, agents: list[str], undone: Undone) -> None:
    """Tell the readers of each touched agent's DREAMS.md that a run was undone."""
    now = memory.clock().astimezone(UTC)
    for agent in agents:
        ws = resolve_workspace(memory.settings, agent, memory.store)
        if not ws.dreams_file.is_file():
            continue
        append_section(
            ws.dreams_file,
            f"## Rollback · {now:%Y-%m-%d %H:%M} UTC · {run_id}\n\n"
            f"- Undone: {undone.deleted} added removed, {undone.reverted} updates reverted, "
            f"{undone.restored} deletions restored"
            + (f"; {len(undone.skipped)} changed again since, left alone" if undone.skipped else "")
            + "\n",
            fs=ws.fs,
            header=HEADER,
        )
