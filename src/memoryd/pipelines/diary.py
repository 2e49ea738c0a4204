"""Diary capture: one finished agent turn becomes a ``## HH:MM`` section of the
agent's ``memory/YYYY-MM-DD.md``.

This is what the OpenClaw plugin's ``agent_end`` hook feeds (seed 000/001): the
diary is the raw daily layer the digest and dream pipelines distil later, so it
must never lose a turn and never interleave two. The write is one ``write`` of
the whole section under an exclusive ``flock`` on the file, then ``fsync``:
concurrent writers (threads, processes, the agent itself appending by hand)
each land whole, and a reader holding a shared lock sees either none or all of
a section.

Noise is dropped before it reaches the file (greetings, heartbeats, tool
chatter, exchanges too short to mean anything) and content is cleaned (system
tags, injected memory blocks, channel metadata, huge tool output trimmed),
following the seed plugin's ``isNoise`` / ``cleanContent``. Message text is
written as an indented list item, so no line of a message can start a new
``##`` section and break the digest's section-aligned batches.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from memoryd.conversation import message_text
from memoryd.core import Memory
from memoryd.errors import InvalidInputError
from memoryd.settings import DiarySettings
from memoryd.validate import check_id
from memoryd.workspace.files import LockedDiary
from memoryd.workspace.layout import diary_path, local_now, resolve_workspace
from memoryd.workspace.safefs import WorkspaceFS

# Roles that carry conversation; everything else (tool results, system) is tool chatter.
_CONVERSATION_ROLES = {"user": "user", "human": "user", "assistant": "assistant", "ai": "assistant"}

# Blocks injected by the system or by memory plugins: dropped with their content.
_DROPPED_TAGS = (
    "system",
    "system-reminder",
    "system-message",
    "relevant-memories",
    "memory-context",
    "memoryd-context",
    "context",
    "thinking",
    "antThinking",
    "tool_call",
    "tool_result",
    "function_calls",
    "function_results",
)
_TAG_BLOCK = re.compile(
    r"<(" + "|".join(_DROPPED_TAGS) + r")(\s[^>]*)?>.*?</\1\s*>", re.DOTALL | re.IGNORECASE
)
_LONE_TAG = re.compile(r"</?(" + "|".join(_DROPPED_TAGS) + r")(\s[^>]*)?/?>", re.IGNORECASE)
# Channel metadata OpenClaw puts in front of inbound messages, e.g. "[Fri 2026-04-10 22:20 GMT+8] ".
_TIMESTAMP_PREFIX = re.compile(r"^\[\w{3} \d{4}-\d{2}-\d{2}[^\]]*\]\s*")
_METADATA_LINE = re.compile(
    r"^(\[message_id:[^\]]*\]|Conversation info \(untrusted metadata\):?|"
    r"Sender \(untrusted metadata\):?|Current time:.*|System:\s.*)$",
    re.IGNORECASE,
)
_JSON_FENCE = re.compile(r"```json\s*\n\s*\{.*?\}\s*\n```", re.DOTALL)
_FENCE = re.compile(r"```[^\n]*\n.*?\n```", re.DOTALL)
_BLANKS = re.compile(r"\n{3,}")

# A whole message that is only one of these says nothing worth keeping.
_GREETINGS = {
    "hi", "hello", "hey", "hiya", "yo", "morning", "good morning", "good afternoon",
    "good evening", "good night", "gm", "gn", "thanks", "thank you", "thx", "ty", "cheers",
    "ok", "okay", "k", "kk", "sure", "cool", "nice", "great", "got it", "yes", "no", "yep",
    "nope", "bye", "goodbye", "see you", "lol", "你好", "您好", "嗨", "谢谢", "好的", "好",
    "嗯", "收到", "再见", "早", "早上好", "晚安",
}  # fmt: skip
_SYSTEM_TOKENS = re.compile(r"^(NO_REPLY|HEARTBEAT_OK|ANNOUNCE_SKIP|REPLY_SKIP)\W*$")
_HEARTBEAT = re.compile(r"(Read HEARTBEAT\.md|heartbeat poll|Pre-compaction memory flush)", re.I)
_PUNCT = re.compile(r"[\s!?.,;:~…。！？，、😀-🙏👋-👏]+")


@dataclass(frozen=True)
class Message:
    """One conversation message after normalisation and cleaning."""

    role: str
    text: str
    name: str | None = None  # the speaker's name, when the caller gave one


@dataclass
class DiaryResult:
    """What a capture did. ``written`` is False when the turn was noise or a repeat."""

    agent_id: str
    path: str  # relative to the workspace: memory/YYYY-MM-DD.md
    date: str
    time: str
    written: bool
    reason: str | None = None
    kept: int = 0
    dropped: int = 0
    bytes: int = 0
    messages: list[Message] = field(default_factory=list, repr=False)

    def as_dict(self) -> dict[str, Any]:
        return {
            "agent_id": self.agent_id,
            "path": self.path,
            "date": self.date,
            "time": self.time,
            "written": self.written,
            "reason": self.reason,
            "kept": self.kept,
            "dropped": self.dropped,
            "bytes": self.bytes,
        }


# -- cleaning and noise -------------------------------------------------------------------
def clean_content(text: str, limits: DiarySettings) -> str:
    """Strip system tags, injected memory, channel metadata; trim huge output."""
    text = text.replace("\r\n", "\n").replace("\x00", "")
    text = _TAG_BLOCK.sub("", text)
    text = _LONE_TAG.sub("", text)
    text = _JSON_FENCE.sub(lambda m: "" if "message_id" in m.group(0) else m.group(0), text)
    lines = []
    for line in text.split("\n"):
        if line.lstrip().startswith("["):
            line = _TIMESTAMP_PREFIX.sub("", line.lstrip())
        if not _METADATA_LINE.match(line.strip()):
            lines.append(line)
    text = "\n".join(lines)
    text = _FENCE.sub(lambda m: _trim_block(m.group(0), limits.max_block_lines), text)
    text = _BLANKS.sub("\n\n", text).strip()
    return _trim_chars(text, limits.max_message_chars)


def _trim_block(block: str, max_lines: int) -> str:
    lines = block.split("\n")
    if len(lines) <= max_lines + 2:
        return block
    keep = max(2, max_lines // 2)
    cut = len(lines) - 2 - 2 * keep
    return "\n".join([*lines[: 1 + keep], f"… [{cut} lines trimmed] …", *lines[-1 - keep :]])


def _trim_chars(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = int(limit * 0.7)
    tail = limit - head
    return f"{text[:head].rstrip()}\n… [{len(text) - limit} characters trimmed] …\n{text[-tail:].lstrip()}"


def is_noise(text: str) -> bool:
    """True when a message says nothing worth a diary line."""
    stripped = text.strip()
    if not stripped:
        return True
    if _SYSTEM_TOKENS.match(stripped) or _HEARTBEAT.search(stripped):
        return True
    words = _PUNCT.sub(" ", stripped).strip().lower()
    return not words or words in _GREETINGS


def normalize_messages(messages: Sequence[Any], limits: DiarySettings) -> tuple[list[Message], int]:
    """Conversation messages worth keeping, and how many were dropped.

    A turn whose user side is only noise (a greeting, a heartbeat prompt) is
    dropped whole: the assistant's answer to "hi" is chatter too.
    """
    kept: list[Message] = []
    dropped = 0
    user_seen = user_kept = 0
    for i, raw in enumerate(messages):
        if not isinstance(raw, Mapping):
            raise InvalidInputError(
                f"messages[{i}] is not an object",
                'send each message as {"role": "user" | "assistant", "content": "..."}',
            )
        role = _CONVERSATION_ROLES.get(str(raw.get("role", "")).lower())
        text = clean_content(message_text(raw.get("content")), limits) if role else ""
        if role == "user":
            user_seen += 1
        if role is None or is_noise(text):
            dropped += 1
            continue
        if role == "user":
            user_kept += 1
        kept.append(Message(role=role, text=text, name=_speaker_name(raw.get("name"))))
    if user_seen and not user_kept:
        return [], dropped + len(kept)
    if sum(len(m.text) for m in kept) < limits.min_chars:
        return [], dropped + len(kept)
    return kept, dropped


def _speaker_name(value: Any) -> str | None:
    """A message's ``name`` fit for a diary line: one line, no Markdown emphasis."""
    if not isinstance(value, str):
        return None
    name = " ".join(value.replace("*", "").replace("(", "").replace(")", "").split())[:80]
    return name.rstrip(":") or None


def render_section(
    when: datetime,
    session_id: str | None,
    messages: Sequence[Message],
    channel: str | None = None,
) -> str:
    """``## HH:MM`` (`` · session ID``, `` · channel NAME``) and one list item per message,
    ``- **speaker**: text`` (the name when the message has one, else the role);
    continuation lines indented."""
    title = f"## {when:%H:%M}" + (f" · session {session_id}" if session_id else "")
    title += f" · channel {channel}" if channel else ""
    items = []
    for m in messages:
        lines = m.text.split("\n")
        body = "\n".join([lines[0], *[f"  {line}" if line.strip() else "" for line in lines[1:]]])
        speaker = f"**{m.name}** ({m.role})" if m.name else f"**{m.role}**"
        items.append(f"- {speaker}: {body}")
    return title + "\n" + "\n".join(items) + "\n"


# -- reading ------------------------------------------------------------------------
def read_locked(path: Path, fs: WorkspaceFS) -> str:
    """The file's content read under a shared lock: never half a section."""
    return fs.read_if_exists(path, shared_lock=True).decode("utf-8", "replace")


# -- the pipeline step ------------------------------------------------------------------
def capture(
    memory: Memory,
    *,
    agent_id: str,
    messages: Sequence[Any],
    session_id: str | None = None,
    turn_id: str | None = None,
    workspace: Path | None = None,
    at: datetime | None = None,
    channel: str | None = None,
) -> DiaryResult:
    """Append one finished turn to the agent's diary for today (``memory.clock``), or
    for the day of ``at`` when the turn is replayed from an older transcript.

    A ``turn_id`` seen before for this agent and day is not written again, so a
    plugin that retries after a timeout never duplicates a section.
    """
    limits = memory.settings.limits
    check_id(agent_id, "agent_id", limits, required=True)
    if session_id is not None:
        check_id(session_id, "session_id", limits)
    if turn_id is not None:
        check_id(turn_id, "turn_id", limits)
    if channel is not None:
        check_id(channel, "channel", limits)
    if not isinstance(messages, Sequence) or isinstance(messages, str | bytes):
        raise InvalidInputError(
            "messages must be a list", 'send "messages": [{"role": ..., "content": ...}, ...]'
        )
    settings = memory.settings.diary
    if len(messages) > settings.max_messages:
        raise InvalidInputError(
            f"{len(messages)} messages in one turn; the limit is {settings.max_messages}",
            "send only the messages of the finished turn (from the last user message on)",
        )
    now = local_now(memory.settings.workspace, (lambda: at) if at else memory.clock)
    root = workspace or resolve_workspace(memory.settings, agent_id, memory.store).root
    path = diary_path(root, now.date())
    fs = WorkspaceFS.of(root, memory.settings.workspace)  # refuses a symlink out of root
    result = DiaryResult(
        agent_id=agent_id,
        path=path.relative_to(root).as_posix(),
        date=f"{now:%Y-%m-%d}",
        time=f"{now:%H:%M}",
        written=False,
    )
    kept, dropped = normalize_messages(messages, settings)
    result.kept, result.dropped, result.messages = len(kept), dropped, kept
    if not kept:
        result.reason = "noise"
        return result
    seen_key = f"diary:turns:{agent_id}:{result.date}"
    section = render_section(now, session_id, kept, channel)
    with LockedDiary(path, fs=fs, header=f"# {result.date}") as diary:
        seen: list[str] = list(memory.store.kv_get(seen_key) or []) if turn_id else []
        if turn_id is not None and turn_id in seen:
            result.reason = "duplicate"
            return result
        result.bytes = diary.append(section)
        result.written = True
        if turn_id is not None:
            memory.store.kv_set(seen_key, [*seen[-(settings.remember_turns - 1) :], turn_id])
    return result
