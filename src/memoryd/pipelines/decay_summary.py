"""Expired memories -> lessons: by the configured LLM, or extractively offline.

The LLM gets the group's memories (same user, agent and category) and returns
at most ``n`` self-contained lessons as JSON; a malformed answer gets one
corrective retry (:func:`memoryd.extract.ask.ask_json`).

Offline, the lesson is *extractive*: the group's key sentences, chosen by how
central they are (their content words recur across the group's memories) and
whether they carry a lesson cue ("fixed", "because", "instead", "avoid", ...),
without near-duplicates, in time order, behind a line that says where they
come from. It invents nothing and is deterministic, so a re-run after a kill
writes the same lesson.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from memoryd.extract.ask import InvalidAnswer, ask_json
from memoryd.llm import LLM, ChatMessage
from memoryd.models import MemoryRecord
from memoryd.pipelines.lessons_text import clip, content_words, end_sentence, overlap, sentences

DECAY_LESSON_PROMPT = """\
You turn an AI agent's expired memories into lessons worth keeping.

The memories below are about to be archived: they are no longer current (old \
tasks, finished work, stale agent state). Keep only what will still help later:
- what worked and what did not, and why;
- pitfalls and their fixes; procedures that proved right;
- durable outcomes (what was built, decided or measured) that later work depends on.

Rules:
- At most {n} lessons; fewer is better; an empty list when nothing is worth keeping.
- Each lesson is one or two self-contained sentences: name the project, tool or \
service; never "it" or "this".
- Copy identifiers exactly: names, versions, ports, paths, commands, numbers.
- Write in the language of the memories. Never invent anything that is not in them.

Answer with only a JSON object: {{"lessons": ["...", "..."]}}"""

#: Words that mark a sentence as a lesson rather than a status line.
_CUES = frozenset(
    """fix fixed fixes fixing because cause caused root instead avoid avoided should must
    always never learned lesson lessons workaround solution solved resolved failed failure
    fails error errors broke broken wrong right correct works worked prefer use don't
    remember important note""".split()  # noqa: SIM905
)


def touched_at(record: MemoryRecord) -> datetime:
    """When a memory was last written: its TTL counts from here."""
    return max(record.created_at, record.updated_at)


def llm_lessons(
    llm: LLM,
    members: Sequence[MemoryRecord],
    *,
    category: str | None,
    agent_id: str | None,
    n: int,
    max_chars: int,
) -> list[str]:
    """Up to ``n`` lessons from the LLM; ``UpstreamError`` when it twice answers garbage."""
    payload = {
        "category": category,
        "agent": agent_id,
        "memories": [
            {"date": touched_at(m).date().isoformat(), "text": clip(m.text, 2000)} for m in members
        ],
    }
    messages: list[ChatMessage] = [
        {"role": "system", "content": DECAY_LESSON_PROMPT.format(n=n)},
        {"role": "user", "content": json.dumps(payload, ensure_ascii=False)},
    ]

    def validate(answer: Any) -> list[str]:
        if isinstance(answer, list):
            items = answer
        elif isinstance(answer, dict) and isinstance(answer.get("lessons"), list):
            items = answer["lessons"]
        else:
            raise InvalidAnswer('expected {"lessons": [...]}')
        out: list[str] = []
        for item in items:
            if isinstance(item, dict):
                item = item.get("lesson") or item.get("text")
            if not isinstance(item, str):
                raise InvalidAnswer("each lesson must be a string")
            if item.strip():
                out.append(clip(item, max_chars))
        return list(dict.fromkeys(out))[:n]

    return ask_json(llm, messages, validate, what="the decay lessons")


def offline_lesson(
    members: Sequence[MemoryRecord],
    *,
    category: str | None,
    agent_id: str | None,
    n: int,
    max_chars: int,
) -> str:
    """One extractive lesson: where it comes from, then the ``n`` key sentences."""
    ordered = sorted(members, key=lambda m: (touched_at(m), m.id))
    candidates: list[tuple[int, str]] = []  # (position, sentence)
    doc_freq: Counter[str] = Counter()
    for m in ordered:
        doc_freq.update(content_words(m.text))
        for s in sentences(m.text):
            if content_words(s):
                candidates.append((len(candidates), clip(s, 400)))
    scored = sorted(candidates, key=lambda c: (-_score(c[1], doc_freq, len(ordered)), c[0]))
    chosen: list[tuple[int, str]] = []
    for pos, s in scored:
        if any(overlap(s, other) > 0.7 for _, other in chosen):
            continue
        chosen.append((pos, s))
        if len(chosen) == n:
            break
    chosen.sort()
    head = _provenance(ordered, category, agent_id)
    body = " ".join(end_sentence(s) for _, s in chosen)
    return clip(f"{head}: {body}", max_chars)


def _score(sentence: str, doc_freq: Counter[str], total: int) -> float:
    found = content_words(sentence)
    if not found:
        return 0.0
    # centrality: how many of the group's memories share this sentence's words
    central = sum(doc_freq[w] for w in found) / (total * math.sqrt(len(found)))
    cues = sum(1 for w in sentence.lower().replace(",", " ").split() if w.strip(".:;!?") in _CUES)
    return central + 0.5 * min(cues, 3)


def _provenance(ordered: Sequence[MemoryRecord], category: str | None, agent: str | None) -> str:
    kind = f"{category} " if category else ""
    who = f" of agent {agent}" if agent else ""
    plural = "memory" if len(ordered) == 1 else "memories"
    first, last = _day(touched_at(ordered[0])), _day(touched_at(ordered[-1]))
    span = first if first == last else f"{first} to {last}"
    return f"Lesson from {len(ordered)} expired {kind}{plural}{who} ({span})"


def _day(dt: datetime) -> str:
    return dt.date().isoformat()
