"""Conversations into memory: every turn is found with its context.

A turn like "Yup, we just did it yesterday!" means nothing alone. Every
conversation that reaches memoryd (``POST /memory/add`` and mem0's ``POST
/memories`` with ``messages``, MCP ``memory_add``, ``memoryd import``, and the
diary's turns) is stored one turn per memory, with its own text unchanged, but
indexed with context:

* keyword side (``context``): the speaker, the day it was said, and the
  previous turn ("Melanie: What did you and the kids do yesterday?"), long or
  short (it also tells two equal turns apart; without it agent chats lost 0.014);
* vector side: the embedding of "Speaker: text" (just the text when the speaker
  is a role such as "assistant", which says nothing) mixed with the previous
  turn's (``PREV_WEIGHT``), then re-normalised. A turn that follows a long one
  (more than ``MIX_MAX_WORDS`` words: an assistant's explanation, a window of a
  long message) is its own vector: "Never push to main directly" after 400 words
  about a migration is not half about the migration.

Only the previous turn is used, so a turn is indexed the moment it is said; a
conversation sent over several calls stays linked because the last turn of each
(user, agent, run, session) is remembered. A message longer than the embedding
model's window is stored as consecutive pieces that each fit it (each piece's
previous turn is the piece before), instead of being refused or truncated.

Measured end to end through the HTTP API in bench/paths.py (see bench/README.md).
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np

from memoryd.embed import normalize
from memoryd.errors import InvalidInputError

#: Weight of the previous turn's vector in a turn's vector (tuned on LoCoMo 0-4).
PREV_WEIGHT = 0.5
#: A turn after one of more words than this is not mixed with it (bench/vector_variants.py:
#: agent chats 0.861 -> 0.875 pure-cosine R@10, LoCoMo 0.479 -> 0.481).
MIX_MAX_WORDS = 60
#: Speakers that are roles, not names: "assistant: ..." adds a word that says nothing.
ROLE_SPEAKERS = frozenset({"user", "assistant", "human", "ai", "system", "agent", "model"})
#: Tokens of the model window kept free for [CLS]/[SEP] and the speaker's name.
WINDOW_MARGIN = 32
#: Text blocks of a message's content that carry what was said.
TEXT_BLOCKS = {"text", "input_text", "output_text"}


@dataclass
class Turn:
    """One thing one speaker said. ``speaker`` is a name, or the role when none is known."""

    speaker: str
    text: str
    role: str | None = None
    at: datetime | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class Piece:
    """A turn, or one window of a long turn, ready to be stored."""

    turn: Turn
    message: int  # index of the turn among those given
    text: str
    part: tuple[int, int] | None  # (k, n): piece k of n, for a windowed turn
    context: str
    vector: np.ndarray


def message_text(content: Any) -> str:
    """Text of a message ``content``: a string, or a list of blocks of which only the
    text blocks count (tool calls, images and thinking are not conversation)."""
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping):
        content = [content]
    if not isinstance(content, Sequence):
        return ""
    parts: builtins.list[str] = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, Mapping) and block.get("type", "text") in TEXT_BLOCKS:
            text = block.get("text")
            if isinstance(text, str):
                parts.append(text)
    return "\n".join(parts)


def parse_time(value: Any, field_name: str) -> datetime | None:
    """A message's ``timestamp``: ISO 8601 text or Unix seconds; naive times are UTC."""
    if value is None:
        return None
    if isinstance(value, bool):
        value = None
    when: datetime | None = None
    if isinstance(value, int | float):
        try:
            when = datetime.fromtimestamp(float(value), UTC)
        except (OverflowError, OSError, ValueError):
            when = None
    elif isinstance(value, str):
        try:
            when = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            when = None
    if when is None:
        raise InvalidInputError(
            f"{field_name} is not a time: {str(value)[:60]!r}",
            'send ISO 8601 ("2026-03-27T09:15:00Z") or Unix seconds',
        )
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def turns_from_messages(
    messages: Any, check: Callable[[str, str], str], *, at: datetime | None = None
) -> builtins.list[Turn]:
    """Turns of mem0-style messages: ``{"role", "content", "name"?, "timestamp"?}``.

    ``content`` is text or a list of text blocks; ``name`` is the speaker (the role
    when absent); ``timestamp`` says when it was said (``at`` when absent). Empty
    messages are skipped; ``check(text, field)`` validates each text.
    """
    if not isinstance(messages, list | tuple):
        raise InvalidInputError(
            "messages must be a list", 'pass [{"role": "user", "content": "..."}]'
        )
    turns: builtins.list[Turn] = []
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping) or "content" not in message:
            raise InvalidInputError(
                f"message {i} has no content",
                'each message is {"role": ..., "content": ..., "name"?: ..., "timestamp"?: ...}',
            )
        text = message_text(message.get("content"))
        if not text.strip():
            continue
        role = str(message.get("role") or "user")
        name = message.get("name")
        if name is not None and (not isinstance(name, str) or not name.strip()):
            raise InvalidInputError(
                f"messages[{i}].name must be a non-empty string",
                "name the speaker (e.g. a person's name), or leave name out",
            )
        speaker = check(name.strip(), f"messages[{i}].name") if name else role
        when = parse_time(message.get("timestamp"), f"messages[{i}].timestamp") or at
        turns.append(
            Turn(
                speaker=speaker[:128],
                text=check(text, f"messages[{i}].content"),
                role=role,
                at=when,
            )
        )
    if not turns:
        raise InvalidInputError("every message is empty", "send at least one message with content")
    return turns


def context_of(speaker: str, at: datetime | None, previous: str | None) -> str:
    """What is indexed with a turn besides its text: who, when, and what came before."""
    who = f"{speaker} on {at.day} {at:%B %Y}" if at is not None else speaker
    return f"{who}\n{previous}" if previous else who


def spoken(speaker: str, text: str) -> str:
    """What a turn's vector is the embedding of: "Speaker: text", or the text alone
    when the speaker is a role (a client that sends no names)."""
    return text if speaker.strip().lower() in ROLE_SPEAKERS else f"{speaker}: {text}"


def mixes(previous_text: str) -> bool:
    """Whether a turn's vector takes in the turn before it, whose text is ``previous_text``."""
    return len(previous_text.split()) <= MIX_MAX_WORDS


def pieces(
    turns: Sequence[Turn],
    *,
    embed: Callable[[Sequence[str]], np.ndarray],
    count_tokens: Callable[[str], int],
    max_tokens: int,
    previous: Turn | None = None,
    prev_weight: float = PREV_WEIGHT,
) -> builtins.list[Piece]:
    """Consecutive ``turns`` of one conversation as pieces with contextual vectors.

    ``previous`` is the turn said just before ``turns[0]`` (when appending to a
    conversation that is already stored); only its last window is used.
    """
    size = max(16, max_tokens - WINDOW_MARGIN)
    flat: builtins.list[tuple[int, Turn, str, tuple[int, int] | None]] = []
    for n, turn in enumerate(turns):
        windows = split_to_window(turn.text, size, count_tokens)
        for k, window in enumerate(windows):
            flat.append((n, turn, window, (k + 1, len(windows)) if len(windows) > 1 else None))
    if not flat:
        return []
    chain: builtins.list[tuple[Turn, str]] = [(t, w) for _, t, w, _ in flat]
    if previous is not None:
        last = split_to_window(previous.text, size, count_tokens)[-1]
        chain.insert(0, (previous, last))
    vectors = contextual_vectors(
        embed([spoken(t.speaker, w) for t, w in chain]),
        [k > 0 and mixes(chain[k - 1][1]) for k in range(len(chain))],
        prev_weight,
    )
    offset = 1 if previous is not None else 0
    out: builtins.list[Piece] = []
    for i, (n, turn, window, part) in enumerate(flat):
        k = i + offset
        before = chain[k - 1] if k > 0 else None
        prior = f"{before[0].speaker}: {before[1]}" if before is not None else None
        out.append(
            Piece(
                turn=turn,
                message=n,
                text=window,
                part=part,
                context=context_of(turn.speaker, turn.at, prior),
                vector=vectors[k],
            )
        )
    return out


def contextual_vectors(
    own: np.ndarray, follows: Sequence[bool], weight: float = PREV_WEIGHT
) -> np.ndarray:
    """Each row's embedding mixed with the row before it where ``follows[k]`` says
    row k is the turn right after row k-1, then re-normalised."""
    out = np.array(own, dtype=np.float32, copy=True)
    for k in range(1, len(follows)):
        if follows[k]:
            out[k] = own[k] + weight * own[k - 1]
    return normalize(out)


def split_to_window(text: str, limit: int, count: Callable[[str], int]) -> builtins.list[str]:
    """``text`` as is when it fits ``limit`` tokens, else whitespace-split pieces that do.

    Line breaks inside a piece are kept, so a windowed message still reads as written.
    """
    if count(text) <= limit:
        return [text]
    pieces_: builtins.list[str] = []
    current: builtins.list[str] = []
    used = 0
    for line in text.split("\n"):
        words = line.split(" ")
        for w, word in enumerate(words):
            cost = (count(word) or 1) if word else 0
            if current and used + cost > limit:
                pieces_.append("".join(current).strip())
                current, used = [], 0
            current.append(word if w == 0 or not current else " " + word)
            used += cost
        current.append("\n")
    if "".join(current).strip():
        pieces_.append("".join(current).strip())
    return [p for p in pieces_ if p] or [text]


# -- transcripts ------------------------------------------------------------------------------
#: Roles whose messages are conversation; tool results, system prompts and the like are not.
CONVERSATION_ROLES = {"user", "assistant", "human", "ai"}


def read_transcript(lines: Iterable[str], source: str = "transcript") -> Transcript:
    """Messages of a JSON-lines transcript, ready for ``Memory.add(messages=...)``.

    Two shapes are read, line by line: plain messages (``{"role", "content",
    "name"?, "timestamp"?}``) and OpenClaw session files (a ``{"type": "session",
    "id"}`` header, then ``{"type": "message", "timestamp", "message": {"role",
    "content"}}`` entries). Only user and assistant text is kept; other entries
    (tool calls and results, model changes, compactions) are skipped. A line that
    is not JSON is an error naming it: nothing is imported from a file half read.
    """
    out = Transcript()
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            entry = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise InvalidInputError(
                f"{source} line {number} is not JSON: {exc.msg}",
                "a transcript has one JSON object per line (JSON lines)",
            ) from None
        except RecursionError:
            raise InvalidInputError(
                f"{source} line {number} nests JSON deeper than memoryd reads",
                "a transcript line is one message object: flatten or drop that line",
            ) from None
        if not isinstance(entry, Mapping):
            raise InvalidInputError(
                f"{source} line {number} is not a JSON object",
                'write {"role": ..., "content": ...}',
            )
        if entry.get("type") == "session":
            out.session = out.session or str(entry.get("id") or "") or None
            continue
        message = entry.get("message") if entry.get("type") == "message" else entry
        if not isinstance(message, Mapping) or "content" not in message:
            out.skipped += 1
            continue
        role = str(message.get("role") or "").lower()
        text = message_text(message.get("content"))
        if role not in CONVERSATION_ROLES or not text.strip():
            out.skipped += 1
            continue
        item: dict[str, Any] = {"role": role, "content": text}
        if isinstance(message.get("name"), str):
            item["name"] = message["name"]
        # an OpenClaw entry's own timestamp is ISO 8601; its message's is epoch milliseconds
        stamp = entry.get("timestamp") if message is not entry else None
        when = parse_time(
            stamp if stamp is not None else message.get("timestamp"),
            f"{source} line {number} timestamp",
        )
        if when is not None:
            item["timestamp"] = when.isoformat()
        out.messages.append(item)
    return out


@dataclass
class Transcript:
    messages: builtins.list[dict[str, Any]] = field(default_factory=list)
    session: str | None = None  # the session id an OpenClaw header names
    skipped: int = 0  # entries that are not conversation (tool calls, headers, ...)
