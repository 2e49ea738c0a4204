"""An episode -> a lesson (scenario / wrong approach / correct approach / reason),
and the duplicate check every new lesson passes before it is stored.

Extraction is by the configured LLM (:data:`LESSON_EXTRACTION_PROMPT`; it may
answer that the episode teaches nothing) or offline: the user's request is the
scenario, the failed call and its error the wrong approach, the call that
worked the correct approach, and what the agent said in between (else the
error) the reason. Offline extraction copies from the transcript and invents
nothing.

Dedup follows seed 003: a lesson whose content words are more than
``lessons.overlap_threshold`` (70%) in an existing lesson is a duplicate;
otherwise, with an LLM configured, the most similar existing lessons are shown
to it and it answers DUPLICATE or NOVEL.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from memoryd.core import Memory
from memoryd.extract.ask import InvalidAnswer, ask_json
from memoryd.llm import LLM, ChatMessage
from memoryd.models import Filters, Origin
from memoryd.pipelines.lessons_sessions import (
    Episode,
    describe_call,
    error_summary,
    first_sentences,
)
from memoryd.pipelines.lessons_text import clip, end_sentence, overlap

FIELDS = ("scenario", "wrong_approach", "correct_approach", "reason")
_FIELD_CHARS = 400
#: Agent remarks that explain a failure rather than announce the next step.
_EXPLAINS = re.compile(
    r"\b(because|since|due to|requires?|needs?|missing|instead|wrong|should|must|"
    r"not installed|doesn't|does not|isn't|is not|can't|cannot|the (?:error|problem|issue))\b",
    re.IGNORECASE,
)

LESSON_EXTRACTION_PROMPT = """\
You extract a reusable lesson from an AI agent's work session: a tool call failed, \
and a later call of the same tool succeeded.

The input is JSON: "task" (what the user asked for), "attempts" (each call with its \
arguments, whether it failed, and its output, in order) and "notes" (what the agent \
said between the failure and the fix).

Answer with only a JSON object:
{"scenario": "...", "wrong_approach": "...", "correct_approach": "...", "reason": "..."}
- scenario: the situation in one sentence (what was being done; name the tool, \
project or service).
- wrong_approach: what was tried first and failed, with the error.
- correct_approach: what worked.
- reason: why the first attempt failed and the second worked.

Copy commands, paths, package names, versions and error messages exactly. Write in \
the language of the session. Never invent anything that is not in the input.
If the success teaches nothing reusable (e.g. a timeout that passed when simply \
retried), answer {"lesson": null}."""

DUPLICATE_CHECK_PROMPT = """\
You keep a list of lessons an AI agent learned free of duplicates.

Is the NEW lesson a duplicate of one of the EXISTING lessons: the same situation \
and the same fix, even if worded differently? A lesson about a different tool, \
error or fix is NOVEL.

Answer with only a JSON object: {"verdict": "DUPLICATE", "of": <index>} or \
{"verdict": "NOVEL"}"""


@dataclass(frozen=True)
class Lesson:
    scenario: str
    wrong_approach: str
    correct_approach: str
    reason: str

    @property
    def text(self) -> str:
        """The lesson as one memory: readable alone, and what search matches."""
        return (
            f"{end_sentence(self.scenario)} Wrong: {end_sentence(self.wrong_approach)} "
            f"Right: {end_sentence(self.correct_approach)} Why: {end_sentence(self.reason)}"
        )

    def as_dict(self) -> dict[str, str]:
        return {f: getattr(self, f) for f in FIELDS}

    def markdown(self, heading: str, lesson_id: str) -> str:
        return (
            f"## {heading}\n"
            f"<!-- lesson:{lesson_id} -->\n"
            f"- **Scenario**: {self.scenario}\n"
            f"- **Wrong approach**: {self.wrong_approach}\n"
            f"- **Correct approach**: {self.correct_approach}\n"
            f"- **Reason**: {self.reason}\n"
        )


def offline_lesson(episode: Episode) -> Lesson:
    """The lesson as the transcript states it; deterministic."""
    first, success = episode.failures[0], episode.success
    error = error_summary(first.output)
    scenario = (
        first_sentences(episode.scenario, 1, 200)
        if episode.scenario
        else f"A task that used the {episode.tool} tool"
    )
    wrong = f"{describe_call(first)} failed: {error}"
    if len(episode.failures) > 1:
        wrong += f" (and {len(episode.failures) - 1} more failed attempts)"
    explained = [n for n in episode.notes if _EXPLAINS.search(n)]
    remark = explained[0] if explained else (episode.notes[0] if episode.notes else "")
    reason = (
        first_sentences(remark, 2, 300) if remark else f"the first attempt failed with: {error}"
    )
    return Lesson(
        clip(scenario, _FIELD_CHARS),
        clip(wrong, _FIELD_CHARS),
        clip(describe_call(success), _FIELD_CHARS),
        clip(reason, _FIELD_CHARS),
    )


def llm_lesson(llm: LLM, episode: Episode) -> Lesson | None:
    """The LLM's lesson, ``None`` when it says the episode teaches nothing.

    ``UpstreamError`` when it twice answers something unusable.
    """
    attempts = [
        {
            "call": describe_call(a, 600),
            "failed": True,
            "output": clip(a.output, 1500),
        }
        for a in episode.failures
    ]
    attempts.append(
        {
            "call": describe_call(episode.success, 600),
            "failed": False,
            "output": clip(episode.success.output, 800),
        }
    )
    payload = {
        "task": clip(episode.scenario or "", 1500),
        "tool": episode.tool,
        "attempts": attempts,
        "notes": [clip(n, 800) for n in episode.notes[:6]],
    }
    messages: list[ChatMessage] = [
        {"role": "system", "content": LESSON_EXTRACTION_PROMPT},
        {"role": "user", "content": json.dumps(payload, ensure_ascii=False)},
    ]

    def validate(answer: Any) -> Lesson | None:
        if not isinstance(answer, dict):
            raise InvalidAnswer("expected a JSON object")
        if "lesson" in answer and answer["lesson"] is None and not any(f in answer for f in FIELDS):
            return None
        values = []
        for f in FIELDS:
            value = answer.get(f)
            if not isinstance(value, str) or not value.strip():
                raise InvalidAnswer(f'"{f}" must be a non-empty string')
            values.append(clip(value, _FIELD_CHARS))
        return Lesson(*values)

    return ask_json(llm, messages, validate, what="the session lesson")


@dataclass(frozen=True)
class Duplicate:
    of: str  # the id of the existing lesson
    by: str  # "overlap" or "llm"
    score: float


def find_duplicate(
    memory: Memory,
    text: str,
    *,
    user_id: str,
    category: str,
    threshold: float,
    llm: LLM | None,
    llm_candidates: int,
) -> Duplicate | None:
    """An existing lesson of the user that ``text`` duplicates, if any.

    ``UpstreamError`` from the LLM check propagates; the caller decides.
    """
    hits = memory.search(
        text,
        user_id=user_id,
        filters=Filters(categories=[category], origins=[Origin.API, Origin.FACT]),
        top_k=max(5, llm_candidates),
        time_decay=False,
        record_recall=False,  # the pipeline looking is not an agent recalling
    )
    for h in hits:
        share = overlap(text, h.text)
        if share > threshold:
            return Duplicate(h.id, "overlap", share)
    if llm is None or llm_candidates == 0:
        return None
    floor = memory.settings.extract.llm_min_similarity
    similar = [h for h in hits if h.score >= floor][:llm_candidates]
    if not similar:
        return None
    messages: list[ChatMessage] = [
        {"role": "system", "content": DUPLICATE_CHECK_PROMPT},
        {
            "role": "user",
            "content": json.dumps(
                {
                    "new": text,
                    "existing": [{"index": i, "lesson": h.text} for i, h in enumerate(similar)],
                },
                ensure_ascii=False,
            ),
        },
    ]

    def validate(answer: Any) -> int | None:
        if not isinstance(answer, dict):
            raise InvalidAnswer("expected a JSON object")
        verdict = str(answer.get("verdict", "")).strip().upper()
        if verdict == "NOVEL":
            return None
        if verdict != "DUPLICATE":
            raise InvalidAnswer('"verdict" must be "DUPLICATE" or "NOVEL"')
        of = answer.get("of", 0)
        if isinstance(of, bool) or not isinstance(of, int) or not 0 <= of < len(similar):
            of = 0  # a duplicate of *something* shown; the first is the most similar
        return of

    found = ask_json(llm, messages, validate, what="the duplicate check")
    if found is None:
        return None
    return Duplicate(similar[found].id, "llm", similar[found].score)


__all__ = [
    "DUPLICATE_CHECK_PROMPT",
    "LESSON_EXTRACTION_PROMPT",
    "Duplicate",
    "Lesson",
    "find_duplicate",
    "llm_lesson",
    "offline_lesson",
]
