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
Promoted lines go to the end of
MEMORY.md inside a clearly marked block::

    ## Promoted by memoryd
    <!-- memoryd:promoted · recalled often; added by `memoryd run promote`; edit freely -->
    - The billing service listens on port 8230
    <!-- /memoryd:promoted -->

The file is kept under ``promote.max_lines`` (~200, seed 003): the oldest
promoted lines make room first; lines the agent wrote are never touched. The
file is replaced atomically (write to a temporary file, rename), and only if
nobody changed it since it was read.
"""

from __future__ import annotations

import math
import os
import re
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from memoryd.models import Origin, State
from memoryd.pipelines.registry import PipelineContext, RunResult, pipeline
from memoryd.recall import Recall, summaries
from memoryd.settings import PromoteSettings
from memoryd.workspace import Workspace

BLOCK_TITLE = "## Promoted by memoryd"
BLOCK_START = (
    "<!-- memoryd:promoted · recalled often; added by `memoryd run promote`; edit freely -->"
)
BLOCK_END = "<!-- /memoryd:promoted -->"
MAX_LINE_CHARS = 300
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
    s = ctx.settings.promote
    now = ctx.now()
    done = set((ctx.memory.store.kv_get(promoted_key(agent)) or {}).keys())
    recalls = [r for r in summaries(ctx.memory.store, agent) if r.count >= s.min_recall_count]
    records = {r.id: r for r in ctx.memory.store.get_many([r.memory_id for r in recalls])}
    out: list[Candidate] = []
    for recall in recalls:
        record = records.get(recall.memory_id)
        if record is None or record.state != State.ACTIVE or record.origin == Origin.CHUNK:
            continue
        if record.user_id != ctx.user_id:
            continue  # MEMORY.md is the workspace owner's: another user's memory never goes in
        if record.metadata.get("source") == "MEMORY.md" or "\n" in record.text.strip():
            continue
        if len(record.text) > MAX_LINE_CHARS or _norm(record.text) in done:
            continue
        if len(set(recall.queries)) < s.min_unique_queries:
            continue
        try:
            last = datetime.fromisoformat(recall.last)
        except ValueError:
            continue
        if (now - last).days > s.max_age_days:
            continue
        parts = signals(recall, record.text, now, s)
        total = score(parts, s.weights)
        if total >= s.min_score:
            out.append(Candidate(record.id, record.text.strip(), total, parts, recall))
    out.sort(key=lambda c: (-c.score, c.memory_id))
    return out


def promote_agent(ctx: PipelineContext, ws: Workspace) -> RunResult:
    result = RunResult()
    s = ctx.settings.promote
    found = candidates(ctx, ws.agent_id)
    if not found:
        return result
    path = ws.memory_file
    for _attempt in range(3):
        before = _stat(path)
        content = path.read_text(encoding="utf-8") if path.is_file() else ""
        present = [line.lstrip("-*+ ").strip() for line in content.splitlines()]
        fresh = distinct(found, present)[: s.limit]
        if not fresh:
            result.count("already_present", len(found))
            return result
        new_content, added, dropped = with_promotions(content, [c.text for c in fresh], s.max_lines)
        if ctx.dry_run:
            for c in fresh[:added]:
                result.note(f"{ws.agent_id}: would promote ({c.score:.2f}) {c.text[:100]!r}")
            result.count("promoted", added)
            return result
        if added == 0:
            result.note(f"{ws.agent_id}: MEMORY.md is at {s.max_lines} lines; nothing promoted")
            return result
        if _stat(path) != before:
            continue  # edited while we were deciding: read it again
        _replace(path, new_content)
        break
    else:
        result.error(f"{ws.agent_id}: MEMORY.md kept changing; promotion skipped this time")
        return result
    stamp = ctx.now().isoformat()
    with ctx.memory.store.atomic():
        done = dict(ctx.memory.store.kv_get(promoted_key(ws.agent_id)) or {})
        for c in fresh[:added]:
            done[_norm(c.text)] = {"id": c.memory_id, "at": stamp, "score": round(c.score, 4)}
        ctx.memory.store.kv_set(promoted_key(ws.agent_id), done)
    result.count("promoted", added)
    result.count("dropped_old_promotions", dropped)
    for c in fresh[:added]:
        result.note(f"{ws.agent_id}: promoted ({c.score:.2f}) {c.text[:100]}")
    return result


def distinct(found: list[Candidate], present: list[str]) -> list[Candidate]:
    """Candidates, best first, without the ones MEMORY.md (or a better candidate) already
    says: the same text, or the same concepts (Jaccard >= ``NEAR_DUPLICATE``)."""
    seen_text = {_norm(t) for t in present if t}
    seen_concepts = [c for c in (concepts(t) for t in present) if c]
    out: list[Candidate] = []
    for c in found:
        mine = concepts(c.text)
        if _norm(c.text) in seen_text or any(
            _jaccard(mine, o) >= NEAR_DUPLICATE for o in seen_concepts
        ):
            continue
        out.append(c)
        seen_text.add(_norm(c.text))
        seen_concepts.append(mine)
    return out


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def with_promotions(content: str, texts: list[str], max_lines: int) -> tuple[str, int, int]:
    """``content`` with ``texts`` appended to the promoted block, within ``max_lines``.

    Returns the new content, how many texts went in and how many older promoted
    lines were dropped to make room.
    """
    lines = content.splitlines()
    try:
        start = lines.index(BLOCK_START)
        end = lines.index(BLOCK_END, start)
    except ValueError:
        start = end = -1
    if start >= 0:
        head = lines[:start]
        block = [ln for ln in lines[start + 1 : end] if ln.strip()]
        tail = lines[end + 1 :]
        if head and head[-1].strip() == BLOCK_TITLE:
            head = head[:-1]
    else:
        head, block, tail = lines, [], []
    while head and not head[-1].strip():
        head = head[:-1]
    # fixed lines: the agent's own (head, tail), a blank line, title, both markers
    room = max_lines - len(head) - len(tail) - 4
    if room <= 0:
        return content, 0, 0
    new = [f"- {t}" for t in texts][:room]
    keep = max(0, room - len(new))
    dropped = max(0, len(block) - keep)
    block = block[dropped:] + new
    out = [*head, "", BLOCK_TITLE, BLOCK_START, *block, BLOCK_END, *tail]
    if not head:
        out = out[1:]
    return "\n".join(out) + "\n", len(new), dropped


def _stat(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return (st.st_mtime_ns, st.st_size)


def _replace(path: Path, content: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".MEMORY.md.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(content)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
