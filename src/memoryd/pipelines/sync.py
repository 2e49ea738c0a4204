"""MEMORY.md sync (daily, 01:00): each agent's curated MEMORY.md -> long-term memory.

Seed 001's ``memory_sync``: MEMORY.md is the agent's own distilled knowledge,
so it goes straight to long-term memory (no ``run_id``, no extraction, no LLM),
and a file whose hash has not changed since the last sync costs nothing.

Each entry of the file (a bullet with its indented continuation lines, a
paragraph with its wrapped lines joined, a table row, a fenced code block;
headings give context, comments are skipped) becomes one long-term memory with
``metadata.source = "MEMORY.md"``, ``metadata.source_line_hash`` and
``metadata.evergreen`` (curated knowledge: no time decay in search, no TTL
decay; it goes when the line goes). The boilerplate of the ``memoryd init``
template (:data:`~memoryd.workspace.bootstrap` ``MEMORY.md``) is not memory
and is skipped, and so are the lines memoryd itself wrote into the promoted
block (:mod:`memoryd.pipelines.promote`): they are derived from memories that
already exist, and reading them back would make each one an evergreen copy that
outlives its source (the promote -> sync loop). A line the agent wrote or edited
inside the block is the agent's and is synced. Lines are split on ``\n`` only
(:func:`~memoryd.workspace.files.split_lines`), as the indexer cites them. The mapping entry hash -> memory id is kept
in kv ``sync:<agent>``, so a changed file reconciles deterministically:

* an entry that is still there is left alone;
* an edited entry (a new entry in place of a removed one, at least
  ``EDIT_SIMILARITY`` alike) updates its memory, so history shows old -> new;
* a removed entry's memory is deleted with reason "removed from MEMORY.md"
  (superseded, kept in history, restorable), not silently kept;
* a new entry is added.

All writes and the new mapping commit in one transaction: a run killed at any
point leaves either the old state or the new one. The stored file hash covers
:data:`FORMAT` too, so a file synced by an older parser is read once more.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from memoryd.models import MemoryRecord, Origin, Source, State
from memoryd.pipelines.promote import promoted_key
from memoryd.pipelines.promoted_block import entry_text, split_block
from memoryd.pipelines.registry import PipelineContext, RunResult, pipeline
from memoryd.workspace import Workspace
from memoryd.workspace.bootstrap import template_text
from memoryd.workspace.files import split_lines

EDIT_SIMILARITY = 0.6
#: Mixed into the stored file hash: bump it when parsing changes, so every file is re-read.
FORMAT = b"memoryd-sync-3\n"
_BULLET = re.compile(r"^\s{0,3}(?:[-*+]|\d{1,3}[.)])\s+(?:\[[ xX]\]\s+)?")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}")


@dataclass(frozen=True)
class Entry:
    text: str
    section: str  # heading path, "" at the top
    start_line: int
    end_line: int

    @property
    def key(self) -> str:
        return line_hash(self.text)


def line_hash(text: str) -> str:
    return hashlib.sha256(" ".join(text.split()).casefold().encode()).hexdigest()[:16]


def parse_entries(content: str) -> list[Entry]:
    """The entries of a MEMORY.md, in file order, each text once."""
    entries: list[Entry] = []
    headings: list[tuple[int, str]] = []
    current: list[str] = []
    paragraph = False  # current is a paragraph: a following plain line is one of its lines
    start = 0
    end = 0
    in_comment = False
    fence: list[str] | None = None
    fence_start = 0

    def flush() -> None:
        nonlocal current
        text = " ".join(part.strip() for part in current if part.strip())
        if len(text) >= 3:
            section = " › ".join(h for _, h in headings)
            entries.append(Entry(text, section, start, end))
        current = []

    for n, raw in enumerate(split_lines(content), start=1):
        line = raw.rstrip()
        if fence is not None:
            fence.append(raw)
            if line.strip().startswith("```"):
                flush()
                current, start, end = ["\n".join(fence)], fence_start, n
                flush()
                fence = None
            continue
        if in_comment:
            in_comment = "-->" not in line
            continue
        stripped = line.strip()
        if stripped.startswith("<!--"):
            flush()
            in_comment = "-->" not in stripped
            continue
        if stripped.startswith("```"):
            flush()
            fence, fence_start = [raw], n
            continue
        heading = _HEADING.match(stripped)
        if heading and not raw.startswith(" "):
            flush()
            level = len(heading.group(1))
            headings = [h for h in headings if h[0] < level] + [(level, heading.group(2))]
            continue
        if not stripped or _TABLE_RULE.match(stripped):
            flush()
            continue
        bullet = _BULLET.match(line)
        row = stripped.startswith("|")  # table rows are one entry each
        if bullet:
            flush()
            current, start, end = [line[bullet.end() :]], n, n
            paragraph = False
        elif current and (raw[:1] in (" ", "\t") or (paragraph and not row)):
            current.append(stripped)  # continuation of the bullet or paragraph above
            end = n
        else:
            flush()
            current, start, end = [stripped], n, n
            paragraph = not row
    if fence is not None:
        current, start, end = ["\n".join(fence)], fence_start, fence_start + len(fence) - 1
    flush()
    seen: set[str] = set()
    unique = []
    for e in entries:
        if e.key not in seen:
            seen.add(e.key)
            unique.append(e)
    return unique


@cache
def template_keys() -> frozenset[str]:
    """The entries of the ``memoryd init`` MEMORY.md template: boilerplate, not memory."""
    return frozenset(e.key for e in parse_entries(template_text("MEMORY.md")))


def promoted_lines(ctx: PipelineContext, agent: str, content: str) -> set[tuple[int, str]]:
    """(line, entry key) of the lines promotion wrote into ``content``'s promoted block:
    a line inside the block whose text is one promotion recorded (kv ``promote:<agent>``)."""
    block = split_block(content)
    if not block.found:
        return set()
    wrote = {
        " ".join(k.split()).casefold() for k in ctx.memory.store.kv_get(promoted_key(agent)) or {}
    }
    out: set[tuple[int, str]] = set()
    lines = split_lines(content)
    for n in range(block.first_line, min(block.last_line, len(lines)) + 1):
        text = entry_text(lines[n - 1])
        if text and " ".join(text.split()).casefold() in wrote:
            out.add((n, line_hash(text)))
    return out


def state_key(agent: str) -> str:
    return f"sync:{agent}"


@pipeline("sync", schedule="0 1 * * *", description="MEMORY.md -> long-term memory")
def sync(ctx: PipelineContext) -> RunResult:
    """Each agent's MEMORY.md -> long-term memory, skipped when unchanged."""
    result = RunResult()
    ctx.each(result, ctx.agents(), lambda agent: sync_agent(ctx, ctx.workspace(agent)))
    return result


def sync_agent(ctx: PipelineContext, ws: Workspace) -> RunResult:
    result = RunResult()
    path = ws.memory_file
    if not path.is_file():
        return result
    raw = ws.fs.read_bytes(path)  # a MEMORY.md leading out of the workspace is refused
    digest = hashlib.sha256(FORMAT + raw).hexdigest()
    store = ctx.memory.store
    state = store.kv_get(state_key(ws.agent_id)) or {}
    if state.get("hash") == digest:
        result.count("unchanged_files")
        return result
    boilerplate = template_keys()
    content = raw.decode("utf-8", "replace")
    derived = promoted_lines(ctx, ws.agent_id, content)
    entries = [
        e
        for e in parse_entries(content)
        if e.key not in boilerplate and (e.start_line, e.key) not in derived
    ]
    if derived:
        result.count("promoted_lines_skipped", len(derived))
    old: dict[str, str] = dict(state.get("lines") or {})
    wanted = {e.key: e for e in entries}
    removed = [k for k in old if k not in wanted]
    added = [e for e in entries if e.key not in old]
    kept = {old[k]: wanted[k] for k in old if k in wanted}
    texts = {r.id: r for r in ctx.memory.store.get_many([old[k] for k in removed])}
    # synced before MEMORY.md memories were marked evergreen: mark them now, once
    unmarked = [
        r
        for r in ctx.memory.store.get_many(list(kept))
        if r.state == State.ACTIVE and r.metadata.get("evergreen") is not True
    ]
    edits = _pair_edits(removed, added, old, texts)
    paired_new = {e.key for _, e in edits}
    paired_old = {k for k, _ in edits}
    fresh = [e for e in added if e.key not in paired_new]
    gone = [k for k in removed if k not in paired_old]
    rel = ws.rel(path)
    result.count("entries", len(entries))
    result.count("added", len(fresh))
    result.count("updated", len(edits))
    result.count("removed", len(gone))
    if unmarked:
        result.count("marked_evergreen", len(unmarked))
    if ctx.dry_run:
        for e in fresh:
            result.note(f"{ws.agent_id}: would add {e.text[:100]!r}")
        for k, e in edits:
            result.note(
                f"{ws.agent_id}: would update {texts[old[k]].text[:60]!r} -> {e.text[:60]!r}"
            )
        for k in gone:
            record = texts.get(old[k])
            result.note(f"{ws.agent_id}: would remove {(record.text if record else k)[:100]!r}")
        return result
    now = ctx.now()
    records = [
        MemoryRecord(
            id=ctx.memory.new_id(),
            text=e.text,
            user_id=ctx.user_id,
            agent_id=ws.agent_id,
            metadata=_meta(e),
            origin=Origin.API,
            source=Source(path=rel, start_line=e.start_line, end_line=e.end_line),
            context=_context(e),
            created_at=now,
            updated_at=now,
        )
        for e in fresh
    ]
    # embed before the transaction, so it holds the store only for the writes
    edited = [texts[old[k]].model_copy(update={"text": e.text}) for k, e in edits]
    ctx.memory.embed_texts([r.index_text for r in [*records, *edited]])
    lines = {k: v for k, v in old.items() if k not in removed}
    with store.atomic():
        ctx.memory.write_records(records, actor=ctx.actor, reason=f"from {rel}")
        lines.update({r.metadata["source_line_hash"]: r.id for r in records})
        for k, e in edits:
            mid = old[k]
            if texts[mid].state == State.ACTIVE:
                ctx.memory.update(
                    mid,
                    e.text,
                    metadata=_meta(e),
                    actor=ctx.actor,
                    reason=f"edited in {rel}",
                )
            lines[e.key] = mid
        for record in unmarked:
            ctx.memory.update(
                record.id,
                metadata=_meta(kept[record.id]),
                actor=ctx.actor,
                reason=f"synced from {rel}: evergreen",
            )
        for k in gone:
            record = texts.get(old[k])
            if record is not None and record.state == State.ACTIVE:
                ctx.memory.delete(
                    record.id, actor=ctx.actor, reason=f"removed from {rel}: superseded"
                )
        store.kv_set(state_key(ws.agent_id), {"hash": digest, "lines": lines})
    result.count("synced_files")
    return result


def _pair_edits(
    removed: list[str], added: list[Any], old: dict[str, str], texts: dict[str, MemoryRecord]
) -> list[tuple[str, Entry]]:
    """Removed entries paired with the new entry that most resembles each (an edit)."""
    pairs: list[tuple[float, str, Entry]] = []
    for k in removed:
        record = texts.get(old[k])
        if record is None:
            continue
        for e in added:
            ratio = difflib.SequenceMatcher(None, record.text, e.text).ratio()
            if ratio >= EDIT_SIMILARITY:
                pairs.append((ratio, k, e))
    pairs.sort(key=lambda p: -p[0])
    used_old: set[str] = set()
    used_new: set[str] = set()
    out: list[tuple[str, Entry]] = []
    for _, k, e in pairs:
        if k not in used_old and e.key not in used_new:
            used_old.add(k)
            used_new.add(e.key)
            out.append((k, e))
    return out


def _meta(e: Entry) -> dict[str, Any]:
    return {
        "source": "MEMORY.md",
        "source_line_hash": e.key,
        "section": e.section,
        "evergreen": True,  # curated, like MEMORY.md's own chunks: never time-decayed
    }


def _context(e: Entry) -> str | None:
    return f"MEMORY.md › {e.section}" if e.section else None
