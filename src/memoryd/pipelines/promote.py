"""Promotion (daily, 03:00): memories recalled often, for many questions, -> MEMORY.md.

OpenClaw's deep dreaming (seed 002): searches record which memories they
returned (:mod:`memoryd.recall`); promotion scores each recalled memory of an
agent on six signals, each in [0, 1], weighted as OpenClaw weighs them:

=====================  ======  ==================================================
signal                 weight  here
=====================  ======  ==================================================
relevance              0.30    mean relevance of the hits (before time decay)
frequency              0.24    ``log1p(count) / log1p(5)``, capped at 1
query diversity        0.15    distinct queries / 4, capped at 1
recency                0.15    ``0.5 ** (days since last recall / 14)``
consolidation          0.10    distinct days recalled / 2, capped at 1
conceptual richness    0.06    distinct concept words (identifiers, numbers,
                               words of 4+ letters that are not stop words) / 6
=====================  ======  ==================================================

A memory is promoted when it passes every gate (``promote.min_score`` 0.8,
``min_recall_count`` 3, ``min_unique_queries`` 3), has been recalled within
``max_age_days``, is short enough to be one line, is not already in MEMORY.md
and was never promoted before (kv ``promote:<agent>``): deleting a promoted
line from MEMORY.md is how the agent says no. Near-duplicates (the same concepts,
e.g. one fact recalled in two versions) are promoted once, the best scored.
Only what can stand as a fact is promotable: not a task (tasks end; MEMORY.md is
evergreen), not chit-chat, not a table row without its header, not a copied
request or question, not a promise ("I'll page Leo this week"), not a report of
something done once ("Ordered five coffees, a cortado for you.": the order of the day,
not the usual one).

The block is memoryd's and is **rewritten** each night from what is current,
never appended to: a line whose memory was deleted, archived, superseded,
closed or changed since it was promoted leaves the block (and is never promoted
again), and every new candidate is re-checked against the live store (and, for
a diary excerpt, against its diary file) just before the file is written. The
block sits at the end of MEMORY.md (:mod:`memoryd.pipelines.promoted_block`)::

    ## Promoted by memoryd
    <!-- memoryd:promoted · recalled often; added by `memoryd run promote`; edit freely -->
    - The billing service listens on port 8230
    <!-- /memoryd:promoted -->

The file is kept under ``promote.max_lines`` (~200, seed 003): the oldest
promoted lines make room first; lines the agent wrote are never touched (byte
for byte: line ends, blank lines, unusual whitespace), and
:mod:`memoryd.pipelines.sync` never reads memoryd's own lines back as facts. The
file is replaced atomically (write to a temporary file, rename), and only if
nobody changed it since it was read.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from memoryd.extract.claims import (
    Verdict,
    claim,
    compare,
    replaced_value_named,
    reports_action,
    says_otherwise,
)
from memoryd.extract.noise import is_bare_table, is_chitchat
from memoryd.extract.tasks import is_closed, is_task, wants_doing
from memoryd.models import Filters, MemoryRecord, Origin, State
from memoryd.pipelines.dreams_md import HEADER
from memoryd.pipelines.promoted_block import (  # the markers, re-exported for callers
    BLOCK_END as BLOCK_END,
)
from memoryd.pipelines.promoted_block import (
    BLOCK_START as BLOCK_START,
)
from memoryd.pipelines.promoted_block import (
    BLOCK_TITLE as BLOCK_TITLE,
)
from memoryd.pipelines.promoted_block import (
    fit,
    render,
    split_block,
)
from memoryd.pipelines.registry import PipelineContext, RunResult, pipeline
from memoryd.pipelines.sections import plain_text
from memoryd.recall import Recall, is_diary_chunk, summaries
from memoryd.search.current import asks_for
from memoryd.settings import PromoteSettings
from memoryd.workspace import Workspace
from memoryd.workspace.files import SkippedFile, append_section, read_markdown, split_lines

MAX_LINE_CHARS = 300
THEMES = 6  # recurring words the REM part of the DREAMS.md review lists
NEAR_DUPLICATE = 0.6  # concept overlap at which two lines say the same thing
_WORD = re.compile(r"[\w.+#/-]+", re.UNICODE)
_STOP = frozenset(
    [
        "that",
        "this",
        "with",
        "from",
        "have",
        "were",
        "been",
        "will",
        "would",
        "could",
        "should",
        "there",
        "their",
        "they",
        "them",
        "what",
        "when",
        "where",
        "which",
        "while",
        "about",
        "into",
        "over",
        "under",
        "after",
        "before",
        "also",
        "just",
        "than",
        "then",
        "very",
        "more",
        "most",
        "some",
        "such",
        "only",
        "other",
        "each",
        "both",
        "does",
        "done",
        "make",
        "made",
        "using",
        "used",
        "user",
        "assistant",
    ]
)


@dataclass(frozen=True)
class Candidate:
    memory_id: str
    text: str
    score: float
    signals: dict[str, float]
    recall: Recall
    source: str | None = None  # the diary lines a distilled excerpt came from
    picked: str = ""  # the memory's text when it was picked: it must not change before writing


@dataclass
class Review:
    """One agent's dreaming review: what was recalled (light), the themes (REM), and
    the candidates that pass every gate (deep)."""

    recalled: int = 0  # recall summaries of the agent within max_age_days
    excerpts: int = 0  # of them, diary excerpts
    gated: int = 0  # left out by the count / query / age gates
    not_promotable: int = 0  # tasks, chit-chat, table rows, requests, stale memories
    best_below: float | None = None  # the best score that missed min_score
    themes: list[tuple[str, int, int]] = field(default_factory=list)  # word, recalls, days
    candidates: list[Candidate] = field(default_factory=list)


def concepts(text: str) -> set[str]:
    """Words that carry meaning: identifiers, numbers, longer non-stop words."""
    out: set[str] = set()
    for w in _WORD.findall(text.lower()):
        w = w.strip(".-/")
        identifier = any(c.isdigit() or c in "_./#+" for c in w) and len(w) > 1
        if identifier or (len(w) >= 4 and w not in _STOP):
            out.add(w)
    return out


def signals(recall: Recall, text: str, now: datetime, s: PromoteSettings) -> dict[str, float]:
    try:
        last = datetime.fromisoformat(recall.last)
    except ValueError:
        last = now
    age_days = max(0.0, (now - last).total_seconds() / 86400)
    return {
        "relevance": max(0.0, min(1.0, recall.avg_score)),
        "frequency": min(1.0, math.log1p(recall.count) / math.log1p(5)),
        "diversity": min(1.0, len(recall.queries) / 4),
        "recency": 0.5 ** (age_days / s.recency_half_life_days),
        "consolidation": min(1.0, len(recall.days) / 2),
        "richness": min(1.0, len(concepts(text)) / 6),
    }


def score(parts: dict[str, float], weights: dict[str, float]) -> float:
    return sum(weights.get(k, 0.0) * v for k, v in parts.items())


def promoted_key(agent: str) -> str:
    return f"promote:{agent}"


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


@pipeline("promote", schedule="0 3 * * *", description="often-recalled memories -> MEMORY.md")
def promote(ctx: PipelineContext) -> RunResult:
    """Memories recalled often, for several questions, on several days -> MEMORY.md."""
    ctx.memory.recalls.flush()
    result = RunResult()
    ctx.each(result, ctx.agents(), lambda agent: promote_agent(ctx, ctx.workspace(agent)))
    return result


def candidates(ctx: PipelineContext, agent: str) -> list[Candidate]:
    """The agent's recalled memories that pass every gate, best first."""
    return review(ctx, agent).candidates


def review(ctx: PipelineContext, agent: str) -> Review:
    """Light: the agent's recent recalls, facts and diary excerpts, each excerpt distilled
    into one line; REM: the words they keep coming back to; deep: what passes the gates."""
    s = ctx.settings.promote
    now = ctx.now()
    out = Review()
    done = set((ctx.memory.store.kv_get(promoted_key(agent)) or {}).keys())
    recent = [r for r in summaries(ctx.memory.store, agent) if _age_days(r, now) <= s.max_age_days]
    records = {r.id: r for r in ctx.memory.store.get_many([r.memory_id for r in recent])}
    words: Counter[str] = Counter()
    word_days: dict[str, set[str]] = {}
    for recall in recent:
        record = records.get(recall.memory_id)
        if record is None or record.state != State.ACTIVE:
            continue
        if record.user_id != ctx.user_id:
            continue  # MEMORY.md is the workspace owner's: another user's memory never goes in
        out.recalled += 1
        text, source = record.text.strip(), None
        if record.origin == Origin.CHUNK:
            if not is_diary_chunk(record) or record.source is None:
                continue
            out.excerpts += 1
            text = _distil(ctx, record.text, now)
            source = record.source.citation
        for word in concepts(text):
            words[word] += recall.count
            word_days.setdefault(word, set()).update(recall.days)
        if not text or record.metadata.get("source") == "MEMORY.md" or "\n" in text:
            continue
        if len(text) > MAX_LINE_CHARS or _norm(text) in done:
            continue
        if why_not_current(record, now) or not_promotable(text):
            out.not_promotable += 1
            continue
        if recall.count < s.min_recall_count or len(set(recall.queries)) < s.min_unique_queries:
            out.gated += 1
            continue
        parts = signals(recall, text, now, s)
        total = score(parts, s.weights)
        if total >= s.min_score:
            out.candidates.append(
                Candidate(record.id, text, total, parts, recall, source, record.text)
            )
        elif out.best_below is None or total > out.best_below:
            out.best_below = total
    out.candidates.sort(key=lambda c: (-c.score, c.memory_id))
    out.themes = [
        (w, n, len(word_days[w])) for w, n in sorted(words.items(), key=lambda t: (-t[1], t[0]))
    ][:THEMES]
    return out


def _age_days(recall: Recall, now: datetime) -> float:
    """Whole days since the last recall (inf when the stamp does not parse)."""
    try:
        return (now - datetime.fromisoformat(recall.last)).days
    except ValueError:
        return float("inf")


def _distil(ctx: PipelineContext, excerpt: str, now: datetime) -> str:
    """The line a recalled diary excerpt stands for: of the facts the extractor finds in
    it (the LLM when configured, the offline extractor otherwise), the richest one."""
    facts = [f.strip() for f in ctx.memory.extractor.extract(plain_text(excerpt), None, now.date())]
    facts = [f for f in facts if f and "\n" not in f and len(f) <= MAX_LINE_CHARS]
    if not facts:
        return ""
    return max(facts, key=lambda f: (len(concepts(f)), -len(f)))


_REQUEST = re.compile(
    r"^(?:please|pls|can you|could you|would you|will you|let'?s|\w+ me\b|"
    r"(?:user|assistant|human|ai)\s*:)",
    re.IGNORECASE,
)
_PROMISE = re.compile(r"\b(?:I'll|I will|I'm going to|I am going to|I shall)\b", re.IGNORECASE)


def not_promotable(text: str) -> str | None:
    """Why ``text`` cannot stand in MEMORY.md as a fact, or None when it can."""
    if is_bare_table(text) or text.lstrip().startswith("|"):
        return "a table row without its header"
    if is_chitchat(text):
        return "chit-chat"
    if text.rstrip().endswith("?") or _REQUEST.match(text.strip()) or asks_for(text):
        return "a copied request or question"
    if _PROMISE.search(text):
        return "a promise, not a fact"
    if reports_action(text):
        return "a report of something done once, not a lasting fact"
    if wants_doing(None, text):
        return "a task, not a lasting fact"
    return None


def _superseded(record: MemoryRecord, now: datetime) -> bool:
    """A newer fact replaced it, or it stopped being true by ``now``."""
    until = record.valid_until
    return record.superseded_by is not None or (until is not None and until <= now)


def why_not_current(record: MemoryRecord | None, now: datetime, picked: str | None = None) -> str:
    """Why a memory may not stand in MEMORY.md now ('' when it may): gone, deleted,
    archived, superseded, a task (closed or not), or changed since ``picked``."""
    if record is None:
        return "its memory is gone"
    if record.state != State.ACTIVE:
        return f"its memory is {record.state.value}"
    if _superseded(record, now):
        return "superseded by a newer fact"
    if is_closed(record.metadata):
        return "a closed task"
    if record.origin != Origin.CHUNK and is_task(record.category, record.text):
        return "a task, not a lasting fact"
    if picked is not None and _norm(picked) != _norm(record.text):
        return "its memory changed since it was picked"
    return ""


_DAY = re.compile(r"(\d{4}-\d{2}-\d{2})")
NEWER_CANDIDATES = 30  # current memories compared with a line for a newer value
REPLACED_CANDIDATES = 10  # superseded facts compared with a line for a value it names
RETIRED_EXCERPT = "a fact taken from its diary lines was superseded"


def _retired_excerpts(ctx: PipelineContext, records: dict[str, MemoryRecord]) -> set[str]:
    """The diary excerpts among ``records`` whose fact was since superseded."""
    return ctx.memory.says_superseded([r for r in records.values() if r.origin == Origin.CHUNK])


def _why_gone(
    record: MemoryRecord | None, now: datetime, picked: str | None, retired: set[str]
) -> str:
    """:func:`why_not_current`, or :data:`RETIRED_EXCERPT` for an excerpt in ``retired``."""
    why = why_not_current(record, now, picked)
    if not why and record is not None and record.id in retired:
        return RETIRED_EXCERPT
    return why


def said_at(record: MemoryRecord) -> datetime:
    """When what a memory says was said: a diary excerpt's day (the start of it), else
    when the fact became true."""
    if record.origin == Origin.CHUNK and record.source is not None:
        day = _DAY.search(record.source.path)
        if day:
            try:
                return datetime.fromisoformat(day.group(1)).replace(tzinfo=UTC)
            except ValueError:
                pass
    return record.valid_from


def newer_value(ctx: PipelineContext, agent: str, text: str, since: datetime) -> str:
    """A current fact, conversation turn or diary line said after ``since`` that gives
    ``text``'s subject and attribute a new value ("CI runs 16 parallel jobs now" after
    "CI runs 12 parallel jobs"), or ''
    (:func:`~memoryd.extract.claims.says_otherwise`, with ``promote.stale_similarity``).

    A diary excerpt is evidence of what was said that day and is never superseded
    itself; a line distilled from it is stale once a newer fact says otherwise.

    Only memories stored after ``since`` are candidates (nothing said later was stored
    earlier): searched over the whole history, the line's own copies and every older
    statement of the old value filled the candidates, and a change said in other words
    ("We moved pipeline alerts to #dq-pager") never reached the comparison.
    """
    hits = ctx.memory.search(
        text,
        user_id=ctx.user_id,
        agent_id=agent,
        top_k=NEWER_CANDIDATES,
        filters=Filters(
            origins=[Origin.API, Origin.FACT, Origin.TURN, Origin.CHUNK], created_after=since
        ),
        time_decay=False,
        record_recall=False,  # the pipeline looking is not an agent recalling
    )
    newer = [
        hit
        for hit in hits
        # what was said: facts, conversation turns and diary lines (dated to their day);
        # never a curated file's chunk (MEMORY.md's own block is derived, not evidence)
        if (hit.record.origin != Origin.CHUNK or is_diary_chunk(hit.record))
        and said_at(hit.record) > since
        and _norm(hit.text) != _norm(text)
        and not is_task(hit.record.category, hit.text)
        and not is_chitchat(hit.text)
    ]
    if not newer:
        return ""
    vectors = ctx.memory.embed_texts([text, *(hit.text for hit in newer)])
    floor = ctx.settings.promote.stale_similarity
    for hit, vector in zip(newer, vectors[1:], strict=True):
        if says_otherwise(hit.text, text, float(vector @ vectors[0]), floor):
            return hit.text
    return replaced_value(ctx, agent, text)


def replaced_value(ctx: PipelineContext, agent: str, text: str) -> str:
    """The fact that replaced a value ``text`` names in passing, or ''
    (:func:`~memoryd.extract.claims.replaced_value_named`): "the events table in the
    BigQuery warehouse" is out of date once the warehouse is Snowflake, though the line
    is about a query, not about the warehouse."""
    hits = ctx.memory.search(
        text,
        user_id=ctx.user_id,
        agent_id=agent,
        top_k=REPLACED_CANDIDATES,
        filters=Filters(origins=[Origin.API, Origin.FACT], states=[State.SUPERSEDED]),
        time_decay=False,
        record_recall=False,
    )
    ids = sorted({h.record.superseded_by for h in hits if h.record.superseded_by})
    by = {r.id: r for r in ctx.memory.store.get_many(ids)} if ids else {}
    for hit in hits:
        new = by.get(hit.record.superseded_by or "")
        if new is not None and replaced_value_named(text, hit.text, new.text):
            return new.text
    return ""


def promote_agent(ctx: PipelineContext, ws: Workspace) -> RunResult:
    result = RunResult()
    seen = review(ctx, ws.agent_id)
    promoted = _rewrite(ctx, ws, seen.candidates, result)
    if seen.recalled and ctx.settings.promote.dreams_report and not ctx.dry_run:
        append_section(ws.dreams_file, render_review(ctx, seen, promoted), fs=ws.fs, header=HEADER)
    return result


def _read(ws: Workspace, path: Path) -> str:
    """MEMORY.md as it is on disk: no newline translation (CRLF stays CRLF)."""
    return ws.fs.read_if_exists(path).decode("utf-8")


def _agent_lines(content: str, first: int, last: int) -> list[str]:
    """The texts of the lines outside the promoted block (lines ``first``..``last``)."""
    return [
        line.lstrip("-*+ ").strip()
        for n, line in enumerate(split_lines(content), start=1)
        if not first <= n <= last
    ]


def _still_there(ctx: PipelineContext, ws: Workspace, record: MemoryRecord, text: str) -> bool:
    """A diary excerpt's line still says what it said: its concepts are in the cited lines."""
    if record.origin != Origin.CHUNK or record.source is None:
        return True
    try:
        _, content = read_markdown(
            ws.root / record.source.path, ctx.settings.workspace.max_file_bytes, ws.fs
        )
    except SkippedFile:
        return False
    lines = split_lines(content)
    first = (record.source.start_line or 1) - 1
    last = record.source.end_line or len(lines)
    return concepts(text) <= concepts(plain_text("\n".join(lines[first:last])))


def _stale_lines(
    ctx: PipelineContext, agent: str, lines: list[str], done: dict[str, dict[str, object]]
) -> tuple[list[str], list[tuple[str, str]]]:
    """The block's lines split into those that stay and those that leave (with why).

    A line memoryd did not write (no entry in kv ``promote:<agent>``) is the agent's
    edit inside the block: it stays.
    """
    now = ctx.now()
    ids = [str(e.get("id")) for e in (done.get(_norm(t)) for t in lines) if e]
    records = {r.id: r for r in ctx.memory.store.get_many(ids)}
    # a diary excerpt is evidence and never superseded itself; a fact taken from its
    # lines (or saying what it says) may be
    retired = _retired_excerpts(ctx, records)
    kept: list[str] = []
    stale: list[tuple[str, str]] = []
    for text in lines:
        entry = done.get(_norm(text))
        if entry is None:
            kept.append(text)
            continue
        record = records.get(str(entry.get("id")))
        picked = entry.get("text")
        if record is not None and record.origin == Origin.CHUNK:
            picked = None  # a distilled excerpt: its chunk's text is not the line
        why = _why_gone(record, now, picked if isinstance(picked, str) else None, retired)
        why = why or not_promotable(text) or ""
        if not why and record is not None:
            newer = newer_value(ctx, agent, text, said_at(record))
            why = f"a newer fact says {newer[:80]!r}" if newer else ""
        if why:
            stale.append((text, why))
        else:
            kept.append(text)
    return kept, stale


def _rechecked(
    ctx: PipelineContext, ws: Workspace, fresh: list[Candidate], result: RunResult
) -> list[Candidate]:
    """The candidates that still hold, read again from the store (and diary) just now."""
    now = ctx.now()
    records = {r.id: r for r in ctx.memory.store.get_many([c.memory_id for c in fresh])}
    retired = _retired_excerpts(ctx, records)
    out = []
    for c in fresh:
        record = records.get(c.memory_id)
        why = _why_gone(record, now, c.picked or None, retired)
        if not why and record is not None and not _still_there(ctx, ws, record, c.text):
            why = "its diary lines changed"
        if why:
            result.count("changed_before_writing")
        elif record is not None and (
            newer := newer_value(ctx, ws.agent_id, c.text, said_at(record))
        ):
            why = f"a newer fact says {newer[:80]!r}"
            result.count("stale_candidates")
        if why:
            result.note(f"{ws.agent_id}: not promoted, {why}: {c.text[:100]!r}")
            continue
        out.append(c)
    return out


def _rewrite(
    ctx: PipelineContext, ws: Workspace, found: list[Candidate], result: RunResult
) -> list[Candidate]:
    """Rewrite MEMORY.md's block from what is current plus the best of ``found``;
    returns what was newly promoted."""
    s = ctx.settings.promote
    path = ws.memory_file
    if not found and not path.is_file():
        return []
    for _attempt in range(3):
        before = _stat(path)
        content = _read(ws, path)
        block = split_block(content)
        done: dict[str, dict[str, object]] = dict(
            ctx.memory.store.kv_get(promoted_key(ws.agent_id)) or {}
        )
        kept, stale = _stale_lines(ctx, ws.agent_id, block.lines, done)
        present = _agent_lines(content, block.first_line, block.last_line) + kept
        unseen = distinct(found, present)[: s.limit]
        fresh = _rechecked(ctx, ws, unseen, result)
        if not fresh and not stale:
            if found and not unseen:
                result.count("already_present", len(found))
            return []
        lines, added, dropped = fit(block, kept, [c.text for c in fresh], s.max_lines)
        if ctx.dry_run:
            for c in fresh[:added]:
                result.note(f"{ws.agent_id}: would promote ({c.score:.2f}) {c.text[:100]!r}")
            for text, why in stale:
                result.note(f"{ws.agent_id}: would drop ({why}) {text[:100]!r}")
            result.count("promoted", added)
            if stale:
                result.count("stale_dropped", len(stale))
            return []
        if added == 0 and not stale:
            result.note(f"{ws.agent_id}: MEMORY.md is at {s.max_lines} lines; nothing promoted")
            return []
        if _stat(path) != before:
            continue  # edited while we were deciding: read it again
        _replace(ws, path, render(block, lines))
        break
    else:
        result.error(f"{ws.agent_id}: MEMORY.md kept changing; promotion skipped this time")
        return []
    stamp = ctx.now().isoformat()
    with ctx.memory.store.atomic():
        done = dict(ctx.memory.store.kv_get(promoted_key(ws.agent_id)) or {})
        for c in fresh[:added]:
            done[_norm(c.text)] = {
                "id": c.memory_id,
                "at": stamp,
                "score": round(c.score, 4),
                "text": c.picked,
            }
        ctx.memory.store.kv_set(promoted_key(ws.agent_id), done)
    if added:
        result.count("promoted", added)
    result.count("dropped_old_promotions", dropped)
    if stale:
        result.count("stale_dropped", len(stale))
    for c in fresh[:added]:
        result.note(f"{ws.agent_id}: promoted ({c.score:.2f}) {c.text[:100]}")
    for text, why in stale:
        result.note(f"{ws.agent_id}: dropped ({why}) {text[:100]}")
    return fresh[:added]


def why(c: Candidate) -> str:
    """Why a line was promoted, in the signals' own terms."""
    r = c.recall
    parts = ", ".join(f"{k} {v:.2f}" for k, v in c.signals.items())
    said = f"; from `{c.source}`" if c.source else ""
    return (
        f"score {c.score:.2f} ({parts}): recalled {r.count} times for {len(set(r.queries))}"
        f" questions on {len(r.days)} days, last {r.last[:10]}{said}"
    )


def render_review(ctx: PipelineContext, seen: Review, promoted: list[Candidate]) -> str:
    """The DREAMS.md section of one agent's promotion run: light, REM and deep phases."""
    when = ctx.now().astimezone(UTC)
    s = ctx.settings.promote
    lines = [f"## Dreaming · {when:%Y-%m-%d %H:%M} UTC · {ctx.run_id}", ""]
    lines.append(
        f"- Light · {seen.recalled} memories recalled in the last {s.max_age_days} days"
        f" ({seen.excerpts} diary excerpts, each distilled into one line);"
        f" {seen.gated} not recalled often or widely enough yet"
    )
    if seen.themes:
        themes = ", ".join(f"{w} ({n}x, {d} days)" for w, n, d in seen.themes)
        lines.append(f"- REM · recurring themes: {themes}")
    if promoted:
        lines.append(f"- Deep · promoted to MEMORY.md: {len(promoted)}")
        lines += [f"  - {c.text} — {why(c)}" for c in promoted]
    else:
        best = f"; best score {seen.best_below:.2f}" if seen.best_below is not None else ""
        lines.append(f"- Deep · nothing promoted (gate: score >= {s.min_score:.2f}{best})")
    return "\n".join(lines) + "\n"


def distinct(found: list[Candidate], present: list[str]) -> list[Candidate]:
    """Candidates, best first, without the ones MEMORY.md (or a better candidate) already
    says: the same text, or the same fact in other words (:func:`same_line`)."""
    seen_text = {_norm(t) for t in present if t}
    said = [(t, concepts(t)) for t in present if t]
    out: list[Candidate] = []
    for c in found:
        mine = concepts(c.text)
        if _norm(c.text) in seen_text or any(same_line(c.text, mine, t, o) for t, o in said):
            continue
        out.append(c)
        seen_text.add(_norm(c.text))
        said.append((c.text, mine))
    return out


def same_line(a: str, a_concepts: set[str], b: str, b_concepts: set[str]) -> bool:
    """Do lines ``a`` and ``b`` say one fact? The same concepts (Jaccard >=
    ``NEAR_DUPLICATE``: one fact recalled in two versions) unless the offline comparison
    finds each a fact the other is not ("The search service listens on port 8230." /
    "The billing service ..."), or one value of one subject in other words, neither
    saying more than the other but a word ("Understood, Spark now uses 48 executors." /
    "We raised the Spark jobs to 48 executors.")."""
    if not a_concepts & b_concepts:
        return False  # nothing in common (most pairs): no need to compare
    verdicts = {compare(a, b)[0], compare(b, a)[0]}
    if _jaccard(a_concepts, b_concepts) >= NEAR_DUPLICATE:
        return verdicts != {Verdict.DISTINCT}
    x, y = claim(a), claim(b)
    return bool(x.values and x.values == y.values and x.words | x.attributes) and (
        Verdict.SAME in verdicts
    )


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def with_promotions(content: str, texts: list[str], max_lines: int) -> tuple[str, int, int]:
    """``content`` with ``texts`` added after the block's lines, within ``max_lines``.

    Returns the new content, how many texts went in and how many older promoted
    lines were dropped to make room.
    """
    block = split_block(content)
    lines, added, dropped = fit(block, block.lines, texts, max_lines)
    if added == 0 and dropped == 0:
        return content, 0, 0
    return render(block, lines), added, dropped


def _stat(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return (st.st_mtime_ns, st.st_size)


def _replace(ws: Workspace, path: Path, content: str) -> None:
    ws.fs.replace_bytes(path, content.encode("utf-8"))
