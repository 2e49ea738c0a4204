"""Grounded backfill (seed 002): replay old daily files and review what was durable.

``memoryd rem-backfill --path memory/`` reads each ``memory/YYYY-MM-DD.md`` under
the path as a standalone day (no context from other days), extracts its
durable candidates with the configured extractor (the LLM when there is one,
the offline extractor otherwise) section by section, and appends one review
block to the agent's ``DREAMS.md``: a ``##`` section per day listing each
candidate with the file and lines it came from (``memory/2026-03-01.md#L12-L18``),
so a person can check every claim against its source.

``--stage-short-term`` also stores the candidates as short-term memories of
their day (``run_id`` = the day, ``origin`` fact, citing their lines): the same
short-term store digest writes and dream / promotion read, so they graduate
only the normal way. Nothing is ever written to ``MEMORY.md``.

What a backfill added is recorded (kv ``rem-backfill:<agent>``: the review
block's bytes, offset and digest, the staged memory ids), so
``--rollback`` removes exactly those bytes from ``DREAMS.md`` (the file is
deleted if the backfill created it) and ``--rollback-short-term`` purges
exactly those memories and their history; diaries, other DREAMS.md entries
and every other memory are left as they were. A day already replayed is
skipped until its backfill is rolled back, so running twice adds nothing.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time
from pathlib import Path, PurePosixPath
from typing import Any

from memoryd.atomic import replace_bytes
from memoryd.core import Memory
from memoryd.errors import InvalidInputError, PermissionDeniedError
from memoryd.models import Event, Filters, Origin, Source
from memoryd.pipelines.dreams_md import HEADER
from memoryd.pipelines.sections import Batch, line_range, plain_text, split_sections
from memoryd.workspace import Workspace
from memoryd.workspace.files import SkippedFile, append_atomic, read_markdown

_DAY_FILE = re.compile(r"^(\d{4}-\d{2}-\d{2})\.md$")
KV_PREFIX = "rem-backfill:"


@dataclass
class Candidate:
    text: str
    path: str  # workspace-relative
    start_line: int
    end_line: int

    @property
    def citation(self) -> str:
        return f"{self.path}#L{self.start_line}-L{self.end_line}"


@dataclass
class BackfillReport:
    run_id: str
    agent_id: str
    dry_run: bool
    days: dict[str, list[Candidate]] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)  # "<file>: why"
    staged: list[str] = field(default_factory=list)  # memory ids
    dreams_bytes: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "agent_id": self.agent_id,
            "dry_run": self.dry_run,
            "days": {
                day: [{"text": c.text, "source": c.citation} for c in cands]
                for day, cands in self.days.items()
            },
            "candidates": sum(len(c) for c in self.days.values()),
            "staged": len(self.staged),
            "skipped": self.skipped,
            "dreams_bytes": self.dreams_bytes,
        }


@dataclass
class RollbackReport:
    agent_id: str
    runs: int = 0
    dreams_bytes_removed: int = 0
    dreams_file_removed: bool = False
    memories_removed: int = 0
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _day_files(ws: Workspace, path: str) -> list[Path]:
    """The daily files under ``path`` (a workspace-relative directory or file)."""
    if not isinstance(path, str) or not path.strip() or "\x00" in path:
        raise InvalidInputError("path is empty", 'pass a workspace folder such as "memory/"')
    posix = PurePosixPath(path)
    if posix.is_absolute() or ".." in posix.parts:
        raise InvalidInputError(
            f"path {path!r} is not inside the workspace",
            'pass a path relative to the agent workspace, e.g. "memory/"',
        )
    target = (ws.root / posix).resolve()
    root = ws.root.resolve()
    if not target.is_relative_to(root):
        raise PermissionDeniedError(
            f"path {path!r} leads outside the workspace of agent {ws.agent_id!r}",
            "rem-backfill reads daily files inside the agent workspace only",
        )
    if target.is_file():
        return [target]
    if not target.is_dir():
        raise InvalidInputError(f"{path!r} does not exist in the workspace", "check the path")
    return sorted(p for p in target.rglob("*.md") if p.is_file())


def _record(memory: Memory, agent: str) -> dict[str, Any]:
    value = memory.store.kv_get(KV_PREFIX + agent)
    return value if isinstance(value, dict) else {"runs": []}


def _save_record(memory: Memory, agent: str, record: dict[str, Any]) -> None:
    memory.store.kv_set(KV_PREFIX + agent, record if record["runs"] else None)


def replayed_days(memory: Memory, agent: str) -> set[str]:
    return {day for run in _record(memory, agent)["runs"] for day in run["days"]}


def _candidates(memory: Memory, ws: Workspace, file: Path, day: date) -> list[Candidate]:
    data, _ = read_markdown(file, ws.settings.max_file_bytes)
    rel = file.resolve().relative_to(ws.root.resolve()).as_posix()
    out: list[Candidate] = []
    seen: set[str] = set()
    for section in split_sections(data):
        text = plain_text(section.data.decode("utf-8")).strip()
        if not text:
            continue
        first, last = line_range(data, Batch(section.start, section.end, section.data))
        for fact in memory.extractor.extract(text, None, day):
            key = fact.strip().casefold()
            if key and key not in seen:
                seen.add(key)
                out.append(Candidate(fact.strip(), rel, first, last))
    return out


def _render(report: BackfillReport, when: str) -> str:
    lines = [f"<!-- memoryd:rem-backfill {report.run_id} -->"]
    for day, cands in report.days.items():
        lines += ["", f"## REM backfill · {day} · grounded replay · {when}", ""]
        if not cands:
            lines.append("- no durable candidate in this day")
        for c in cands:
            lines.append(f"- {c.text} — `{c.citation}`")
    lines.append("")
    staged = "staged as short-term" if report.staged else "review only (not staged)"
    lines.append(f"_{sum(map(len, report.days.values()))} candidates, {staged}; undo with "
                 "`memoryd rem-backfill --rollback`_")  # fmt: skip
    lines.append(f"<!-- /memoryd:rem-backfill {report.run_id} -->")
    return "\n".join(lines) + "\n"


def backfill(
    memory: Memory,
    ws: Workspace,
    *,
    path: str = "memory",
    stage_short_term: bool = False,
    dry_run: bool = False,
) -> BackfillReport:
    """Replay the daily files under ``path`` (see the module docstring)."""
    agent = ws.agent_id
    now = memory.clock().astimezone(UTC)
    run_id = f"rem-backfill-{now:%Y%m%dT%H%M%S}-{secrets.token_hex(3)}"
    report = BackfillReport(run_id, agent, dry_run)
    done = replayed_days(memory, agent)
    for file in _day_files(ws, path):
        m = _DAY_FILE.match(file.name)
        if not m:
            report.skipped.append(f"{file.name}: not a daily file (YYYY-MM-DD.md)")
            continue
        try:
            day = date.fromisoformat(m.group(1))
        except ValueError:
            report.skipped.append(f"{file.name}: not a calendar date")
            continue
        if day.isoformat() in done:
            report.skipped.append(f"{file.name}: already replayed (roll back to replay it)")
            continue
        try:
            report.days[day.isoformat()] = _candidates(memory, ws, file, day)
        except SkippedFile as exc:
            report.skipped.append(f"{file.name}: {exc.reason}")
    if dry_run or not report.days:
        return report
    actor = f"rem-backfill:{run_id}"
    if stage_short_term:
        for key, cands in report.days.items():
            for c in cands:
                events = memory.add(
                    c.text,
                    user_id=memory.settings.workspace.user_id,
                    agent_id=agent,
                    run_id=key,
                    origin=Origin.FACT,
                    source=Source(path=c.path, start_line=c.start_line, end_line=c.end_line),
                    metadata={"rem_backfill": run_id},
                    event_at=datetime.combine(date.fromisoformat(key), time(12), UTC),
                    actor=actor,
                )
                report.staged += [e.id for e in events if e.event == Event.ADD and e.id]
    block = _render(report, f"{now:%Y-%m-%d %H:%M} UTC").encode()
    existed = ws.dreams_file.is_file()
    before = ws.dreams_file.stat().st_size if existed else 0
    append_atomic(ws.dreams_file, block.decode(), header=HEADER)
    after = ws.dreams_file.read_bytes()
    at = after.find(block, before)  # ours, whatever another writer appended after it
    added = after[before : at + len(block)]  # with the newline or header put before it
    report.dreams_bytes = len(added)
    record = _record(memory, agent)
    record["runs"].append(
        {
            "run_id": run_id,
            "days": list(report.days),
            "dreams": {
                "offset": before,
                "length": len(added),
                "sha256": hashlib.sha256(added).hexdigest(),
                "prefix": at - before,
                "created": not existed,
            },
            "memories": report.staged,
        }
    )
    _save_record(memory, agent, record)
    return report


def rollback(
    memory: Memory, ws: Workspace, *, dreams: bool = True, short_term: bool = False
) -> RollbackReport:
    """Remove what backfills added: their DREAMS.md blocks and/or their staged memories."""
    agent = ws.agent_id
    report = RollbackReport(agent)
    record = _record(memory, agent)
    for run in reversed(record["runs"]):
        if dreams and run.get("dreams"):
            _remove_block(ws, run, report)
            run["dreams"] = None
        if short_term and run.get("memories"):
            ours = Filters(ids=run["memories"], agent_id=agent)
            report.memories_removed += memory.store.purge(ours)
            run["memories"] = []
        if not run.get("dreams") and not run.get("memories"):
            report.runs += 1
    record["runs"] = [r for r in record["runs"] if r.get("dreams") or r.get("memories")]
    _save_record(memory, agent, record)
    return report


def _remove_block(ws: Workspace, run: dict[str, Any], report: RollbackReport) -> None:
    info = run["dreams"]
    path = ws.dreams_file
    if not path.is_file():
        report.notes.append(f"{run['run_id']}: DREAMS.md is gone; nothing to remove")
        return
    data = path.read_bytes()
    start, length = int(info["offset"]), int(info["length"])
    piece = data[start : start + length]
    if hashlib.sha256(piece).hexdigest() != info["sha256"]:
        # the file was edited above the block: find the block by its marker
        at = data.find(f"<!-- memoryd:rem-backfill {run['run_id']} -->".encode())
        start = at - int(info.get("prefix", 0))
        piece = data[start : start + length] if at >= 0 and start >= 0 else b""
        if hashlib.sha256(piece).hexdigest() != info["sha256"]:
            report.notes.append(
                f"{run['run_id']}: its DREAMS.md block was edited; left in place, remove it by hand"
            )
            return
    rest = data[:start] + data[start + length :]
    report.dreams_bytes_removed += length
    if info.get("created") and not rest:
        path.unlink()
        report.dreams_file_removed = True
    else:
        replace_bytes(path, rest)
