"""Grounded backfill (seed 002): replay old daily files and review what was durable.

``memoryd rem-backfill --path memory/`` reads each ``memory/YYYY-MM-DD.md`` under
the path as a standalone day (no context from other days; today's diary, still
being written, is left to the digest and the dream), extracts its durable
candidates the way the dream does (section-aligned batches through the
configured extractor: the LLM when there is one, the offline extractor
otherwise), and appends one review block to the agent's ``DREAMS.md``: a ``##``
section per day listing each candidate with the file and lines it came from
(``memory/2026-03-01.md#L12`` when one line holds it word for word, else the
batch's lines), so a person can check every claim against its source.

``--stage-short-term`` also stores the candidates as short-term memories of
their day (``run_id`` = the day, ``category=short_term``, ``origin`` fact, citing
their lines; actor ``rem-backfill:<run>``, ``metadata.rem_backfill = <run>``):
the same short-term store the digest writes, which searches recall from, which
promotion ranks and the dream consolidates, so they graduate only the normal
way. Nothing is ever written to ``MEMORY.md``.

What a backfill adds is journalled before it is written (kv
``rem-backfill:<agent>``: the run, its days, the review block's offset, length
and digest, the staged memory ids), so ``--rollback`` cuts exactly those bytes
out of ``DREAMS.md`` (the file goes if the backfill created it) and
``--rollback-short-term`` hard-deletes exactly those memories, with their
history and their recall statistics; a run killed half way is found by the same
record and the memories' marker. Diaries, every other ``DREAMS.md`` byte and
every other memory stay as they were. A day already replayed is skipped until
its backfill is rolled back, so running twice adds nothing. A block someone
edited is left in place (and stays listed) rather than cut wrongly.

One backfill or rollback per agent at a time (a store lock); ``DREAMS.md`` is
read, appended and replaced under its file lock, which every ``DREAMS.md``
writer takes.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time
from pathlib import Path, PurePosixPath
from typing import Any

from memoryd.access import workspace_owner
from memoryd.core import Memory
from memoryd.errors import BusyError, InvalidInputError, PermissionDeniedError
from memoryd.models import Event, Filters, Origin, Source
from memoryd.pipelines.dreams_md import HEADER
from memoryd.pipelines.sections import batches, line_range, plain_text, split_sections
from memoryd.recall import PREFIX as RECALL_PREFIX
from memoryd.workspace import Workspace, local_today
from memoryd.workspace.files import LockedDiary, SkippedFile, read_markdown, split_lines

_DAY_FILE = re.compile(r"^(\d{4}-\d{2}-\d{2})\.md$")
KV_PREFIX = "rem-backfill:"  # the journal of an agent's backfills; also its lock's name
MARKER = "memoryd:rem-backfill"


@dataclass
class Candidate:
    text: str
    path: str  # workspace-relative
    start_line: int
    end_line: int

    @property
    def citation(self) -> str:
        lines = (
            f"L{self.start_line}"
            if self.start_line == self.end_line
            else f"L{self.start_line}-L{self.end_line}"
        )
        return f"{self.path}#{lines}"


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
    dry_run: bool = False
    runs: int = 0  # backfill runs nothing is left of
    dreams_bytes_removed: int = 0
    dreams_file_removed: bool = False
    memories_removed: int = 0
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def rem_backfill(
    memory: Memory,
    ws: Workspace,
    *,
    path: str = "memory",
    stage_short_term: bool = False,
    rollback: bool = False,
    rollback_short_term: bool = False,
    dry_run: bool = False,
) -> BackfillReport | RollbackReport:
    """What ``memoryd rem-backfill``, ``POST /v1/rem-backfill`` and the MCP tool run."""
    if rollback or rollback_short_term:
        if stage_short_term:
            raise InvalidInputError(
                "stage_short_term starts a backfill; it cannot go with a rollback",
                "roll back first, then run the backfill again as its own command",
            )
        return undo(memory, ws, dreams=rollback, short_term=rollback_short_term, dry_run=dry_run)
    return backfill(memory, ws, path=path, stage_short_term=stage_short_term, dry_run=dry_run)


# -- the journal and the lock -------------------------------------------------------------------


def _record(memory: Memory, agent: str) -> dict[str, Any]:
    value = memory.store.kv_get(KV_PREFIX + agent)
    return value if isinstance(value, dict) else {"runs": []}


def _save_record(memory: Memory, agent: str, record: dict[str, Any]) -> None:
    memory.store.kv_set(KV_PREFIX + agent, record if record["runs"] else None)


def replayed_days(memory: Memory, agent: str) -> set[str]:
    return {day for run in _record(memory, agent)["runs"] for day in run["days"]}


@contextmanager
def _exclusive(memory: Memory, agent: str) -> Iterator[None]:
    with memory.store.run_lock(KV_PREFIX + agent, memory.settings.pipelines.lock_ttl_s) as got:
        if not got:
            raise BusyError(
                f"another rem-backfill or rollback of agent {agent!r} is running",
                "try again when it has finished",
            )
        yield


def _check_dreams_file(ws: Workspace) -> None:
    if ws.dreams_file.is_symlink():
        raise PermissionDeniedError(
            f"{ws.dreams_file} is a symlink; memoryd writes DREAMS.md only as a real file",
            "replace the symlink with the file it points to",
        )


# -- reading the days ---------------------------------------------------------------------------


def _day_files(ws: Workspace, path: str) -> list[Path]:
    """The Markdown files under ``path`` (a workspace-relative directory or file)."""
    if not isinstance(path, str) or not path.strip() or "\x00" in path:
        raise InvalidInputError("path is empty", 'pass a workspace folder such as "memory/"')
    posix = PurePosixPath(path)
    if posix.is_absolute() or ".." in posix.parts:
        raise InvalidInputError(
            f"path {path!r} is not inside the workspace",
            'pass a path relative to the agent workspace, e.g. "memory/"',
        )
    try:
        target = (ws.root / posix).resolve()
        is_file, is_dir = target.is_file(), target.is_dir()
    except (OSError, RuntimeError) as exc:  # a name too long, a symlink loop, ...
        raise InvalidInputError(
            f"path {path!r} cannot be read: {getattr(exc, 'strerror', None) or exc}",
            'pass a folder such as "memory/"',
        ) from None
    if not target.is_relative_to(ws.root.resolve()):
        raise PermissionDeniedError(
            f"path {path!r} leads outside the workspace of agent {ws.agent_id!r}",
            "rem-backfill reads daily files inside the agent workspace only",
        )
    if is_file:
        return [ws.root / posix]
    if not is_dir:
        raise InvalidInputError(f"{path!r} does not exist in the workspace", "check the path")
    return sorted(p for p in (ws.root / posix).rglob("*.md") if p.is_file())


def _read_days(memory: Memory, ws: Workspace, files: list[Path], report: BackfillReport) -> None:
    root = ws.root.resolve()
    today = local_today(memory.settings.workspace, memory.clock)
    done = replayed_days(memory, ws.agent_id)
    read_from: dict[str, str] = {}
    for file in files:
        rel = ws.rel(file)
        m = _DAY_FILE.match(file.name)
        day = _date(m.group(1)) if m else None
        if day is None:
            report.skipped.append(f"{rel}: not a daily file (YYYY-MM-DD.md)")
        elif not file.resolve().is_relative_to(root):
            report.skipped.append(f"{rel}: a symlink leading outside the workspace; not read")
        elif day >= today:
            report.skipped.append(f"{rel}: today's or a later day; the digest and dream read it")
        elif day.isoformat() in done:
            report.skipped.append(f"{rel}: already replayed (roll back to replay it)")
        elif day.isoformat() in read_from:
            report.skipped.append(f"{rel}: day {day} was read from {read_from[day.isoformat()]}")
        else:
            try:
                report.days[day.isoformat()] = _candidates(memory, ws, file, rel, day)
                read_from[day.isoformat()] = rel
            except SkippedFile as exc:
                report.skipped.append(f"{rel}: {exc.reason}")


def _date(text: str) -> date | None:
    try:
        return date.fromisoformat(text)
    except ValueError:
        return None


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def _candidates(memory: Memory, ws: Workspace, file: Path, rel: str, day: date) -> list[Candidate]:
    """One day's durable facts, each with the lines it came from; ``day`` is "today"
    for the extractor, and no other day's text is in its input."""
    data, text = read_markdown(file, ws.settings.max_file_bytes, ws.fs)
    lines = split_lines(text)
    out: list[Candidate] = []
    seen: set[str] = set()
    for batch in batches(split_sections(data), memory.settings.digest.max_batch_bytes):
        body = plain_text(batch.text)
        if not any(ln.strip() and not ln.startswith("#") for ln in body.splitlines()):
            continue
        first, last = line_range(data, batch)
        for fact in memory.extractor.extract(body, None, day):
            fact = fact.strip()
            if fact and _norm(fact) not in seen:
                seen.add(_norm(fact))
                out.append(Candidate(fact, rel, *_narrow(lines, first, last, fact)))
    return out


def _narrow(lines: list[str], first: int, last: int, fact: str) -> tuple[int, int]:
    """The one line of ``first..last`` that holds ``fact`` word for word, if one does
    (the offline extractor keeps sentences as written); else the range without its
    leading and trailing headings and blank lines (an LLM rephrases)."""
    last = min(last, len(lines))
    want = _norm(fact.rstrip("."))
    for n in range(first, last + 1):
        if want and want in _norm(plain_text(lines[n - 1])):
            return n, n

    def bare(n: int) -> bool:
        return not lines[n - 1].strip() or lines[n - 1].startswith("#")

    while first < last and bare(first):
        first += 1
    while last > first and bare(last):
        last -= 1
    return first, last


# -- the backfill -------------------------------------------------------------------------------


def backfill(
    memory: Memory,
    ws: Workspace,
    *,
    path: str = "memory",
    stage_short_term: bool = False,
    dry_run: bool = False,
) -> BackfillReport:
    """Replay the daily files under ``path`` (see the module docstring)."""
    files = _day_files(ws, path)
    _check_dreams_file(ws)
    now = memory.clock().astimezone(UTC)
    run_id = f"rem-backfill-{now:%Y%m%dT%H%M%S}-{secrets.token_hex(3)}"
    report = BackfillReport(run_id, ws.agent_id, dry_run)
    with nullcontext() if dry_run else _exclusive(memory, ws.agent_id):
        _read_days(memory, ws, files, report)
        if not dry_run and report.days:
            _write(memory, ws, report, stage_short_term, now)
    return report


def _write(
    memory: Memory, ws: Workspace, report: BackfillReport, stage: bool, now: datetime
) -> None:
    agent, run_id = ws.agent_id, report.run_id
    record = _record(memory, agent)
    run: dict[str, Any] = {
        "run_id": run_id,
        "days": list(report.days),
        "memories": [],
        "dreams": None,
        "staging": stage,  # until the ids are recorded, rollback finds them by their marker
    }
    record["runs"].append(run)
    _save_record(memory, agent, record)
    if stage:
        for day, cands in report.days.items():
            for c in cands:
                events = memory.add(
                    c.text,
                    user_id=workspace_owner(memory.settings),
                    agent_id=agent,
                    run_id=day,
                    category="short_term",
                    origin=Origin.FACT,
                    source=Source(path=c.path, start_line=c.start_line, end_line=c.end_line),
                    metadata={"pipeline": "rem-backfill", "rem_backfill": run_id},
                    event_at=datetime.combine(date.fromisoformat(day), time(12), UTC),
                    actor=f"rem-backfill:{run_id}",
                )
                report.staged += [e.id for e in events if e.event == Event.ADD and e.id]
        run["memories"], run["staging"] = list(report.staged), False
        _save_record(memory, agent, record)
    block = _render(report, agent, f"{now:%Y-%m-%d %H:%M} UTC")
    existed = ws.dreams_file.exists()
    with LockedDiary(ws.dreams_file, fs=ws.fs, header=HEADER) as dreams:
        offset, data = dreams.size, dreams.framed(block)
        run["dreams"] = {
            "offset": offset,
            "length": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
            "prefix": data.index(block.encode()),  # the blank line or header put before it
            "created": not existed,
        }
        _save_record(memory, agent, record)  # first: a kill now leaves a record, not bytes
        dreams.write(data)
    report.dreams_bytes = len(data)


def _render(report: BackfillReport, agent: str, when: str) -> str:
    lines = [f"<!-- {MARKER} {report.run_id} -->"]
    for day, cands in report.days.items():
        lines += ["", f"## REM backfill · {day} · grounded replay · {when}", ""]
        if not cands:
            lines.append("- no durable candidate in this day")
        for c in cands:
            lines.append(f"- {c.text} — `{c.citation}`")
    total = sum(map(len, report.days.values()))
    if report.staged:
        done = f"{len(report.staged)} staged as short-term"
        flags = "--rollback --rollback-short-term"
    else:
        done, flags = "review only (not staged)", "--rollback"
    undo_with = f"`memoryd rem-backfill -a {agent} {flags}`"
    lines += ["", f"_{total} candidates, {done}; undo with {undo_with}_"]
    lines.append(f"<!-- /{MARKER} {report.run_id} -->")
    return "\n".join(lines) + "\n"


# -- the rollbacks ------------------------------------------------------------------------------


def undo(
    memory: Memory,
    ws: Workspace,
    *,
    dreams: bool = True,
    short_term: bool = False,
    dry_run: bool = False,
) -> RollbackReport:
    """Remove what backfills added: their DREAMS.md blocks and/or their staged memories.
    ``dry_run`` says what would go and changes nothing."""
    agent = ws.agent_id
    report = RollbackReport(agent, dry_run)
    if dreams:
        _check_dreams_file(ws)
    with nullcontext() if dry_run else _exclusive(memory, agent):
        record = _record(memory, agent)
        for run in reversed(record["runs"]):
            if dreams and run.get("dreams") and _remove_block(ws, run, report):
                run["dreams"] = None
            if short_term and (run.get("memories") or run.get("staging")):
                report.memories_removed += _purge_staged(memory, agent, run, dry_run)
                run["memories"], run["staging"] = [], False
            if not (run.get("dreams") or run.get("memories") or run.get("staging")):
                report.runs += 1
        if not dry_run:
            record["runs"] = [
                r
                for r in record["runs"]
                if r.get("dreams") or r.get("memories") or r.get("staging")
            ]
            _save_record(memory, agent, record)
    return report


def _remove_block(ws: Workspace, run: dict[str, Any], report: RollbackReport) -> bool:
    """Cut the run's block out of DREAMS.md; False if it stays (edited by someone)."""
    info, path, run_id = run["dreams"], ws.dreams_file, run["run_id"]
    if not path.is_file():
        report.notes.append(f"{run_id}: DREAMS.md is gone; nothing to remove")
        return True
    with LockedDiary(path, fs=ws.fs) as dreams:
        data = dreams.read()
        start, length = int(info["offset"]), int(info["length"])
        if not _matches(data[start : start + length], info):
            # the file was edited above the block: find the block by its marker
            at = data.find(f"<!-- {MARKER} {run_id} -->".encode())
            start = at - int(info.get("prefix", 0))
            if at < 0:
                report.notes.append(f"{run_id}: its block is no longer in DREAMS.md")
                return True
            if start < 0 or not _matches(data[start : start + length], info):
                report.notes.append(
                    f"{run_id}: its DREAMS.md block was edited, so it is left in place; "
                    "delete it by hand (rollback then forgets it)"
                )
                return False
        rest = data[:start] + data[start + length :]
        if info.get("created") and rest:
            # the backfill started the file and others wrote after it: the header it
            # put on top is theirs now too, so it stays, as their first write would put it
            rest = data[start : start + int(info.get("prefix", 0))] + rest.lstrip(b"\n")
        report.dreams_bytes_removed += len(data) - len(rest)
        if report.dry_run:
            return True
        if info.get("created") and not rest:
            ws.fs.unlink(path)
            report.dreams_file_removed = True
        else:
            ws.fs.replace_bytes(path, rest)
    return True


def _matches(piece: bytes, info: dict[str, Any]) -> bool:
    return hashlib.sha256(piece).hexdigest() == info["sha256"]


def _purge_staged(memory: Memory, agent: str, run: dict[str, Any], dry_run: bool) -> int:
    """Hard-delete the run's staged memories, their history and their recall statistics:
    the ids it recorded, and (for a run killed before recording them) any short-term
    fact of the agent carrying its marker."""
    store = memory.store
    ids = set(run.get("memories") or [])
    mine = Filters(agent_id=agent, short_term_only=True, origins=[Origin.FACT], states=[])
    ids |= {r.id for r in store.iter_all(mine) if r.metadata.get("rem_backfill") == run["run_id"]}
    found = sorted(store.existing_ids(sorted(ids)))
    if dry_run or not found:
        return len(found)
    memory.recalls.flush()  # buffered statistics must not bring a purged memory back
    with store.atomic():
        removed = store.purge(Filters(ids=found, agent_id=agent))
        for memory_id in found:
            if store.kv_get(RECALL_PREFIX + memory_id) is not None:
                store.kv_set(RECALL_PREFIX + memory_id, None)
    return removed
