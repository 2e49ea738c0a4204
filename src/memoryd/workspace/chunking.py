"""Markdown into overlapping, citeable chunks.

Headings come first: each section (a heading and the lines up to the next
heading) is chunked on its own, so a chunk never straddles two topics and its
heading path ("MEMORY.md > Projects > memoryd") can be indexed with it. A
section longer than the chunk size is cut into windows of whole lines that
overlap by about ``overlap`` tokens; a single line longer than a chunk is cut
between words. Every chunk knows its 1-based inclusive line range, and its text
is exactly those lines joined by ``\\n`` (so ``memory_get`` on the cited range
returns the chunk text), except when one over-long line had to be cut.

Sizes are in the embedding model's own tokens and are capped by its window:
a chunk the model would truncate is a chunk whose tail is never searchable.

Conversation files (daily diaries, session notes) are cut by turn instead:
each ``- **Speaker**: text`` item (with its indented continuation lines) is a
chunk of its own that knows its speaker, so a hit costs what one turn costs and
the indexer can index it with the turn before it (:mod:`memoryd.conversation`).
Lines between turns (an agent's own notes) are chunked as above.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass

from memoryd.settings import WorkspaceSettings

TokenCounter = Callable[[str], int]

#: Tokens kept free in the model window for [CLS]/[SEP] and the heading path.
CONTEXT_TOKENS = 30
WINDOW_MARGIN = CONTEXT_TOKENS + 2

_HEADING = re.compile(r"^(#{1,6})(?:[ \t]+(.*?))?[ \t]*#*[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


@dataclass(frozen=True)
class ChunkPlan:
    """The chunk size and overlap actually used, in model tokens."""

    size: int
    overlap: int

    @property
    def label(self) -> str:
        return f"{self.size}/{self.overlap}"


def chunk_plan(settings: WorkspaceSettings, model_max_tokens: int) -> ChunkPlan:
    """``min(chunk_tokens, model window - margin)``; the overlap keeps its ratio.

    With the defaults (400/80) and all-MiniLM-L6-v2's 256-token window this is
    224 tokens with a 45-token overlap.
    """
    window = max(16, model_max_tokens - WINDOW_MARGIN)
    size = max(16, min(settings.chunk_tokens, window))
    overlap = settings.chunk_overlap
    if size < settings.chunk_tokens:
        overlap = round(settings.chunk_overlap * size / settings.chunk_tokens)
    return ChunkPlan(size=size, overlap=min(overlap, size // 2))


@dataclass(frozen=True)
class Chunk:
    text: str
    start_line: int  # 1-based, inclusive
    end_line: int  # 1-based, inclusive
    headings: tuple[str, ...]
    speaker: str | None = None  # a conversation turn's speaker (``turns=True``)

    @property
    def hash(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass
class _Section:
    start: int  # 0-based index of the first line (the heading, if any)
    end: int  # 0-based, exclusive
    headings: tuple[str, ...]
    has_body: bool


def _sections(lines: list[str]) -> list[_Section]:
    sections: list[_Section] = []
    stack: list[tuple[int, str]] = []
    current = _Section(0, 0, (), False)
    fence: str | None = None
    for i, line in enumerate(lines):
        fence_match = _FENCE.match(line)
        if fence is not None:
            if (
                fence_match
                and fence_match.group(1)[0] == fence[0]
                and len(fence_match.group(1)) >= len(fence)
            ):
                fence = None
            current.has_body = True
            continue
        if fence_match:
            fence = fence_match.group(1)
            current.has_body = True
            continue
        m = _HEADING.match(line)
        if m:
            current.end = i
            sections.append(current)
            level, title = len(m.group(1)), (m.group(2) or "").strip()
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, title or "#" * level))
            current = _Section(i, i, tuple(t for _, t in stack), False)
            continue
        if line.strip():
            current.has_body = True
    current.end = len(lines)
    sections.append(current)
    # A heading with nothing under it (e.g. "# Title" right before "## Part") joins
    # the next section instead of becoming a chunk of one line.
    merged: list[_Section] = []
    carry: int | None = None
    for s in sections:
        if s.end <= s.start:
            continue
        start = carry if carry is not None else s.start
        if not s.has_body:
            carry = start
            continue
        carry = None
        merged.append(_Section(start, s.end, s.headings, True))
    if carry is not None and not merged:  # only headings in the whole file: still a chunk
        merged.append(_Section(carry, len(lines), sections[-1].headings, True))
    return merged


#: A turn item: ``- **user**: text`` (a role) or ``- **Name** (role): text`` (a speaker).
_TURN = re.compile(
    r"^[-*] \*\*(?:(user|assistant|human|ai)\*\*|([^*\n]{1,80})\*\* \((?:user|assistant|human|ai)\)):"
    r"[ \t]?(.*)$",
    re.IGNORECASE,
)


def chunk_markdown(
    lines: list[str], count_tokens: TokenCounter, plan: ChunkPlan, *, turns: bool = False
) -> list[Chunk]:
    """Chunks of at most ``plan.size`` tokens, in file order; one per turn with ``turns``."""
    chunks: list[Chunk] = []
    for section in _sections(lines):
        spans = _turn_spans(lines, section.start, section.end) if turns else []
        if not spans:
            spans = [(section.start, section.end, None)]
        for start, end, speaker in spans:
            while start < end and not lines[start].strip():
                start += 1
            while end > start and not lines[end - 1].strip():
                end -= 1
            if start >= end:
                continue
            costs = [count_tokens(lines[i]) for i in range(start, end)]
            pieces = _windows(lines, costs, start, end, section.headings, plan, count_tokens)
            if speaker is not None:
                pieces = [
                    Chunk(c.text, c.start_line, c.end_line, c.headings, speaker) for c in pieces
                ]
            chunks.extend(pieces)
    return chunks


def _turn_spans(lines: list[str], start: int, end: int) -> list[tuple[int, int, str | None]]:
    """``(start, end, speaker)`` line spans of a section: one per turn item, and the
    lines around them (the heading, free notes) with no speaker. Empty: no turns."""
    spans: list[tuple[int, int, str | None]] = []
    i, plain = start, start
    while i < end:
        m = _TURN.match(lines[i])
        if m is None:
            i += 1
            continue
        if plain < i:
            spans.append((plain, i, None))
        j = i + 1  # continuation lines are indented (or blank inside the item)
        while j < end and (lines[j].startswith((" ", "\t")) or not lines[j].strip()):
            j += 1
        spans.append((i, j, (m.group(1) or m.group(2)).strip()))
        i = plain = j
    if not any(s for _, _, s in spans):
        return []
    if plain < end:
        spans.append((plain, end, None))
    # a section's heading alone is no chunk: it is in every turn's context already
    return [sp for sp in spans if sp[2] is not None or _has_body(lines, sp[0], sp[1])]


def _has_body(lines: list[str], start: int, end: int) -> bool:
    return any(line.strip() and not _HEADING.match(line) for line in lines[start:end])


def turn_words(text: str) -> str:
    """A turn chunk's words: the list markup and indentation taken off."""
    first, *rest = text.split("\n")
    m = _TURN.match(first)
    head = m.group(3) if m else first
    return "\n".join([head, *(line.strip() for line in rest)]).strip()


def _windows(
    lines: list[str],
    costs: list[int],
    start: int,
    end: int,
    headings: tuple[str, ...],
    plan: ChunkPlan,
    count_tokens: TokenCounter,
) -> list[Chunk]:
    def cost(i: int) -> int:
        return costs[i - start]

    out: list[Chunk] = []
    i = start
    while i < end:
        if cost(i) > plan.size:  # one line longer than a chunk: cut it between words
            out.extend(_split_line(lines[i], i + 1, headings, plan, cost(i), count_tokens))
            i += 1
            continue
        j, used = i, 0
        while j < end and cost(j) <= plan.size and used + cost(j) <= plan.size:
            used += cost(j)
            j += 1
        a, b = i, j
        while a < b and not lines[a].strip():
            a += 1
        while b > a and not lines[b - 1].strip():
            b -= 1
        if a < b:
            out.append(Chunk("\n".join(lines[a:b]), a + 1, b, headings))
        if j >= end:
            break
        # Step back over whole lines worth about ``overlap`` tokens, always moving forward.
        k, back = j, 0
        while k - 1 > i and cost(k - 1) <= plan.size and back + cost(k - 1) <= plan.overlap:
            back += cost(k - 1)
            k -= 1
        i = k if cost(j) <= plan.size else j
    return out


def _split_line(
    line: str,
    number: int,
    headings: tuple[str, ...],
    plan: ChunkPlan,
    total: int,
    count_tokens: TokenCounter,
) -> list[Chunk]:
    words = line.split()
    if not words:
        return []
    per_word = max(1.0, total / len(words))  # tokens per word, estimated from the whole line
    size = max(1, int(plan.size / per_word))
    step = max(1, size - int(plan.overlap / per_word))
    out: list[Chunk] = []
    for s in range(0, len(words), step):
        piece = " ".join(words[s : s + size])
        # the per-word estimate can be wrong (one 2,000-character "word"): cut what still
        # does not fit between characters, so no chunk is longer than the model's window
        for part in _fit(piece, plan.size, count_tokens):
            out.append(Chunk(part, number, number, headings))
        if s + size >= len(words):
            break
    return out


def _fit(text: str, size: int, count_tokens: TokenCounter) -> list[str]:
    """``text`` as is if it fits in ``size`` tokens, else the longest fitting prefixes."""
    out: list[str] = []
    while text and count_tokens(text) > size:
        lo, hi = 1, len(text)  # the longest prefix that fits: binary search on characters
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if count_tokens(text[:mid]) <= size:
                lo = mid
            else:
                hi = mid - 1
        out.append(text[:lo])
        text = text[lo:].lstrip()
    if text.strip():
        out.append(text)
    return out
