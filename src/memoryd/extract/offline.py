"""Facts without an LLM: split, drop noise, keep every identifier.

The offline extractor never rewrites a sentence, so names, ports, paths, ids
and numbers survive exactly; it only decides where one fact ends and whether
a piece is worth remembering. Noise is what the seed's diary plugin filters
too: greetings, thanks, acknowledgements, filler, bare timestamps, questions.

A line (a bullet, a message, a paragraph) is one fact with its noise
sentences trimmed, as long as it is short (``max_fact_chars``, 280): a
second sentence often leans on the first ("kiro-cli: use exec(pty=true).
Never add & in command."), and split apart it would lose its subject.
Longer lines are split into sentences. Markdown headings are dropped (they
label facts, they are not facts), bullet markers and speaker prefixes are
removed, fenced code blocks stay whole.

Chit-chat (:func:`memoryd.extract.noise.is_chitchat`: acknowledgements,
sign-offs, weather, requests) is never a fact; the turn that said it stays
searchable as conversation evidence. A Markdown table becomes one fact per row
that names its columns ("service: search; port: 9200; owner: Ravi"), and table
rows without their header are dropped: cells without their meaning.
"""

from __future__ import annotations

import re
from datetime import date

from memoryd.extract.noise import is_chitchat
from memoryd.settings import LimitSettings

_ABBREVIATIONS = {
    "e.g.",
    "i.e.",
    "etc.",
    "vs.",
    "mr.",
    "mrs.",
    "ms.",
    "dr.",
    "prof.",
    "st.",
    "no.",
    "approx.",
    "cf.",
    "fig.",
    "inc.",
    "ltd.",
    "jr.",
    "sr.",
}
# End of sentence: . ! ? followed by space and something that starts a sentence,
# or CJK full stops (no space needed).
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[*`])|(?<=[。！？])")
_SPEAKER = re.compile(
    r"^\s*(?:\*\*)?(?:user|assistant|human|ai|system|agent|bot)(?:\*\*)?\s*[:：]\s*(?:\*\*)?\s*",
    re.IGNORECASE,
)
_BULLET = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+(?:\[[ xX]\]\s+)?")
_HEADING = re.compile(r"^\s*#{1,6}\s")
_TIME_ONLY = re.compile(r"^\[?\d{1,2}:\d{2}(?::\d{2})?\]?$")
_WORD = re.compile(r"\w", re.UNICODE)
_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?\s*$")
_NOISE_PHRASES = {
    "hi",
    "hello",
    "hey",
    "hiya",
    "yo",
    "good morning",
    "good afternoon",
    "good evening",
    "good night",
    "morning",
    "thanks",
    "thank you",
    "thanks a lot",
    "thank you so much",
    "many thanks",
    "thx",
    "ty",
    "cheers",
    "ok",
    "okay",
    "k",
    "kk",
    "ok thanks",
    "okay thanks",
    "sure",
    "sure thing",
    "yes",
    "yeah",
    "yep",
    "yup",
    "no",
    "nope",
    "nah",
    "got it",
    "noted",
    "understood",
    "cool",
    "great",
    "nice",
    "awesome",
    "perfect",
    "lol",
    "haha",
    "hmm",
    "um",
    "uh",
    "bye",
    "goodbye",
    "see you",
    "see you later",
    "see ya",
    "later",
    "you're welcome",
    "youre welcome",
    "welcome",
    "np",
    "no problem",
    "no worries",
    "sounds good",
    "will do",
    "done",
    "alright",
    "all right",
    "let me check",
    "one moment",
    "just a moment",
    "happy to help",
    "my pleasure",
    "glad to help",
    "good",
    "fine",
    "好",
    "好的",
    "嗯",
    "嗯嗯",
    "谢谢",
    "多谢",
    "收到",
    "明白",
    "了解",
    "你好",
    "您好",
    "早上好",
    "晚安",
    "再见",
    "哈哈",
    "没问题",
    "行",
    "可以",
}
_GREETING_TO = re.compile(r"^(?:hi|hello|hey|thanks|thank you|bye)(?: there)?(?: \w+)?$")


class OfflineExtractor:
    """Sentence-level facts, verbatim. Ignores custom prompts (it has no model)."""

    follows_prompts = False

    def __init__(self, limits: LimitSettings, max_fact_chars: int = 280) -> None:
        self.limits = limits
        self.max_fact_chars = max_fact_chars

    def extract(self, text: str, prompt: str | None = None, today: date | None = None) -> list[str]:
        facts: list[str] = []
        seen: set[str] = set()
        for unit in self.units(text):
            key = unit.casefold()
            if key not in seen and not is_noise(unit) and not is_chitchat(unit):
                seen.add(key)
                facts.append(unit)
        return facts

    def units(self, text: str) -> list[str]:
        """Candidate facts in order: code blocks whole, other lines split into sentences."""
        out: list[str] = []
        lines = text.replace("\r\n", "\n").split("\n")
        i = 0
        while i < len(lines):
            line = lines[i]
            if line.strip().startswith("```"):
                block = [line]
                i += 1
                while i < len(lines) and not lines[i].strip().startswith("```"):
                    block.append(lines[i])
                    i += 1
                if i < len(lines):
                    block.append(lines[i])
                i += 1
                out.extend(self._fit("\n".join(block).strip()))
                continue
            if _TABLE_ROW.match(line):
                rows = []
                while i < len(lines) and _TABLE_ROW.match(lines[i]):
                    rows.append(lines[i])
                    i += 1
                out.extend(u for row in table_facts(rows) for u in self._fit(row))
                continue
            i += 1
            if not line.strip() or _HEADING.match(line):
                continue
            line = _SPEAKER.sub("", line)
            line = _BULLET.sub("", line).strip()
            kept = [s for s in split_sentences(line) if not is_noise(s) and not is_chitchat(s)]
            joined = "".join(
                f"{x} " if not x.endswith(("。", "！", "？")) else x for x in kept
            ).strip()
            if len(joined) <= self.max_fact_chars:
                out.extend(self._fit(joined))  # a short line is one fact, chatter trimmed
            else:
                for sentence in kept:
                    out.extend(self._fit(sentence))
        return out

    def _fit(self, unit: str) -> list[str]:
        """Split a unit longer than a memory may be on whitespace, never mid-word."""
        limit = self.limits.max_text_chars
        if len(unit) <= limit:
            return [unit] if unit else []
        pieces: list[str] = []
        while len(unit) > limit:
            cut = unit.rfind(" ", 0, limit)
            cut = cut if cut > 0 else limit
            pieces.append(unit[:cut].strip())
            unit = unit[cut:].strip()
        if unit:
            pieces.append(unit)
        return pieces


def table_facts(rows: list[str]) -> list[str]:
    """One fact per data row of a Markdown table, each cell named by its column
    ("service: search; port: 9200"); none for rows without a header rule."""
    cells = [[c.strip() for c in row.strip().strip("|").split("|")] for row in rows]
    if len(rows) < 2 or not _TABLE_RULE.match(rows[1]):
        return []
    header = cells[0]
    facts = []
    for row in cells[2:]:
        named = [f"{h}: {v}" if h else v for h, v in zip(header, row, strict=False) if v]
        if named:
            facts.append("; ".join(named))
    return facts


def split_sentences(text: str) -> list[str]:
    parts = [p.strip() for p in _SENTENCE_END.split(text) if p and p.strip()]
    merged: list[str] = []
    for part in parts:
        if merged and merged[-1].rsplit(" ", 1)[-1].casefold() in _ABBREVIATIONS:
            merged[-1] = f"{merged[-1]} {part}"
        else:
            merged.append(part)
    return merged


def is_noise(unit: str) -> bool:
    stripped = unit.strip()
    if stripped.endswith(("?", "？")):
        return True  # a question is not a fact
    if _TIME_ONLY.match(stripped):
        return True
    words = "".join(ch if (ch.isalnum() or ch in " '") else " " for ch in stripped.casefold())
    normal = " ".join(words.split())
    if not normal:
        return True  # punctuation or emoji only
    if normal in _NOISE_PHRASES or _GREETING_TO.match(normal):
        return True
    # one or two word characters with no digit ("a", "hm") carry nothing
    return len(_WORD.findall(normal)) < 3 and not any(ch.isdigit() for ch in normal)
