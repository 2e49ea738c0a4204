"""Failure -> retry -> success episodes in OpenClaw session transcripts.

OpenClaw writes one transcript per session, ``~/.openclaw/agents/<agentId>/
sessions/<sessionId>.jsonl``: one JSON object per line, append-only. The first
line is the header (``{"type": "session", "version": 3, "id": ...}``); the
conversation is ``{"type": "message", "id", "parentId", "timestamp",
"message": {...}}`` entries whose ``message.role`` is

* ``user``: ``content`` is a string or a list of ``{"type": "text"}`` blocks;
* ``assistant``: ``content`` blocks of ``text``, ``thinking`` and ``toolCall``
  (``{"type": "toolCall", "id", "name", "arguments"}``);
* ``toolResult``: ``{"toolCallId", "toolName", "content", "isError"}`` (``details``
  may carry an ``exitCode``, and in OpenClaw 2026.9 the ``error`` a failed tool
  reported, which is then the failure's text).

Other entry types (``model_change``, ``custom``, ``compaction``, ...) are skipped,
and so are lines that are not JSON. Anthropic-style ``tool_use`` /
``tool_result`` blocks are read too. Entries are taken in file order; the
``parentId`` tree only matters for branched sessions, where file order still
keeps each attempt before its retry.

An *episode* is one or more failed calls of a tool followed, within
``retry_window`` tool calls, by a successful call of the same tool with
different arguments (the same arguments succeeding is a transient error, not a
lesson). :func:`scan` reads a byte range and returns the episodes it closes,
plus where the next scan must start: before the first failure that is still
waiting for its retry, so an episode cut by the end of the file is found whole
on a later run.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from memoryd.pipelines.lessons_text import clip, sentences

_EXIT_CODE = re.compile(
    r"(?:exit(?:ed)?\s+(?:with\s+)?(?:status|code)|exit\s+code|return\s+code)\s*[:=]?\s*([1-9]\d*)",
    re.IGNORECASE,
)
_ERROR_START = re.compile(
    r"^\s*(?:error|fatal|traceback|exception|panic|failed|failure)\b", re.IGNORECASE
)
_ERROR_ANYWHERE = re.compile(
    r"command not found|no such file or directory|permission denied|"
    r"modulenotfounderror|connection refused|not recognized as",
    re.IGNORECASE,
)
#: Lines that say what went wrong, strongest first; the first line matching a tier wins.
_ERROR_TIERS = (
    re.compile(
        r"error|exception|fatal|denied|not found|no such|refused|locked|timed? ?out|"
        r"enoent|eacces|cannot|can't|unable|invalid|missing",
        re.IGNORECASE,
    ),
    re.compile(r"fail|exit(?:ed)? (?:with )?code", re.IGNORECASE),
)
_TIMESTAMP_PREFIX = re.compile(r"^\[\w{3} \d{4}-\d{2}-\d{2}[^\]]*\]\s*")
_METADATA_LINE = re.compile(
    r"^(\[message_id:[^\]]*\]|Conversation info \(untrusted metadata\):?|"
    r"Sender \(untrusted metadata\):?|Current time:.*|System:\s.*)$",
    re.IGNORECASE,
)
_TAGS = re.compile(r"<(relevant-memories|memoryd-context|system-reminder)>.*?</\1>", re.DOTALL)


@dataclass
class Attempt:
    """One tool call and, once it arrives, its result."""

    call_id: str
    tool: str
    args: Any
    offset: int  # byte offset of the line holding the call
    line: int  # 1-based line number of that line
    seq: int  # order of the call among everything read
    user: str | None  # the user's request the call was made for
    ok: bool | None = None  # None: no result (yet)
    output: str = ""
    result_seq: int = -1
    result_line: int = 0

    @property
    def signature(self) -> str:
        return json.dumps(self.args, sort_keys=True, ensure_ascii=False, default=str)


@dataclass
class Episode:
    """Failed attempts of one tool, then the attempt that worked."""

    session_id: str
    tool: str
    scenario: str | None
    failures: list[Attempt]
    success: Attempt
    notes: list[str]  # what the agent said between the first failure and the fix

    @property
    def key(self) -> str:
        return f"{self.session_id}:{self.failures[0].call_id}:{self.success.call_id}"


@dataclass
class ScanState:
    """Where a transcript was read up to, and the context needed to resume there."""

    offset: int = 0
    line: int = 0  # lines before ``offset``
    session_id: str | None = None
    last_user: str | None = None
    decided: list[str] = field(default_factory=list)  # episode keys past ``offset``

    def to_json(self) -> dict[str, Any]:
        return {
            "offset": self.offset,
            "line": self.line,
            "session_id": self.session_id,
            "last_user": self.last_user,
            "decided": self.decided,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> ScanState:
        if not data:
            return cls()
        return cls(
            offset=int(data.get("offset", 0)),
            line=int(data.get("line", 0)),
            session_id=data.get("session_id"),
            last_user=data.get("last_user"),
            decided=list(data.get("decided", [])),
        )


@dataclass
class ScanResult:
    episodes: list[Episode]
    state: ScanState  # where the next scan starts
    lines: int = 0  # complete lines read
    bad_lines: int = 0  # lines that were not JSON objects


def _lines(data: bytes, start: int, first_line: int) -> Iterator[tuple[int, int, bytes]]:
    """``(offset, line number, raw)`` of each complete line; a partial last line is left."""
    pos = 0
    line = first_line
    while True:
        end = data.find(b"\n", pos)
        if end < 0:
            return
        line += 1
        yield start + pos, line, data[pos:end]
        pos = end + 1


def text_of(content: Any) -> str:
    """The text of a message ``content``: a string, or the text of its text blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            b.get("text", "")
            for b in content
            if isinstance(b, Mapping) and b.get("type") in ("text", "input_text", "output_text")
        ]
        return "\n".join(p for p in parts if isinstance(p, str))
    return ""


def clean_user_text(text: str) -> str:
    """The user's words without channel metadata, timestamps and injected memory."""
    text = _TAGS.sub("", text)
    kept = []
    for line in text.splitlines():
        line = _TIMESTAMP_PREFIX.sub("", line.strip())
        if line and not _METADATA_LINE.match(line) and not line.startswith("```"):
            kept.append(line)
    return " ".join(kept).strip()


def is_failure(message: Mapping[str, Any], output: str) -> bool:
    """Whether a tool result reports a failure.

    ``isError`` decides when present; a non-zero exit code (in ``details`` or in
    the text, as shell tools report it) is a failure even when ``isError`` is false.
    Without ``isError``, an output that starts like an error or says "command not
    found" / "No such file or directory" / "Permission denied" counts too.
    """
    if message.get("isError") is True or message.get("is_error") is True:
        return True
    details = message.get("details")
    if isinstance(details, Mapping):
        code = details.get("exitCode", details.get("exit_code"))
        if isinstance(code, int) and not isinstance(code, bool) and code != 0:
            return True
    head, tail = output[:1500], output[-500:]
    if _EXIT_CODE.search(head) or _EXIT_CODE.search(tail):
        return True
    if "isError" in message or "is_error" in message:
        return False
    return bool(_ERROR_START.match(head) or _ERROR_ANYWHERE.search(head))


def scan(data: bytes, state: ScanState, *, session_id: str, retry_window: int) -> ScanResult:
    """Episodes closed in ``data`` (the transcript from ``state.offset`` on)."""
    sid = state.session_id or session_id
    last_user = state.last_user
    attempts: list[Attempt] = []
    by_id: dict[str, Attempt] = {}
    notes: list[tuple[int, str]] = []  # (seq, assistant text)
    seq = 0
    lines = bad = 0
    end_offset, end_line = state.offset, state.line

    for offset, line_no, raw in _lines(data, state.offset, state.line):
        lines += 1
        end_offset, end_line = offset + len(raw) + 1, line_no
        try:
            entry = json.loads(raw)
        except ValueError:
            bad += 1 if raw.strip() else 0
            continue
        if not isinstance(entry, dict):
            bad += 1
            continue
        kind = entry.get("type")
        if kind == "session":
            if isinstance(entry.get("id"), str) and entry["id"]:
                sid = entry["id"]
            continue
        message = entry.get("message") if kind == "message" else None
        if not isinstance(message, Mapping):
            continue
        role = message.get("role")
        content = message.get("content")
        if role == "user":
            # Anthropic-style results ride in user messages as tool_result blocks
            for block in content if isinstance(content, list) else []:
                if isinstance(block, Mapping) and block.get("type") == "tool_result":
                    seq += 1
                    _result(by_id, str(block.get("tool_use_id", "")), block, seq, line_no)
            text = clean_user_text(text_of(content))
            if text:
                last_user = text
        elif role == "assistant":
            for block in content if isinstance(content, list) else []:
                if not isinstance(block, Mapping):
                    continue
                seq += 1
                btype = block.get("type")
                if btype == "text" and isinstance(block.get("text"), str):
                    if block["text"].strip():
                        notes.append((seq, block["text"].strip()))
                elif btype in ("toolCall", "tool_use") and block.get("id"):
                    args = block.get("arguments", block.get("input", {}))
                    attempt = Attempt(
                        call_id=str(block["id"]),
                        tool=str(block.get("name") or "tool"),
                        args=args,
                        offset=offset,
                        line=line_no,
                        seq=seq,
                        user=last_user,
                    )
                    attempts.append(attempt)
                    by_id[attempt.call_id] = attempt
            if isinstance(content, str) and content.strip():
                seq += 1
                notes.append((seq, content.strip()))
        elif role == "toolResult":
            seq += 1
            _result(by_id, str(message.get("toolCallId", "")), message, seq, line_no)

    episodes, waiting = _episodes(attempts, notes, sid, retry_window)
    if waiting is not None:
        # resume at the call that may still get its retry (or its result)
        next_state = ScanState(waiting.offset, waiting.line - 1, sid, waiting.user)
    else:
        next_state = ScanState(end_offset, end_line, sid, last_user)
    return ScanResult(episodes, next_state, lines, bad)


def _result(
    by_id: dict[str, Attempt], call_id: str, message: Mapping[str, Any], seq: int, line: int
) -> None:
    attempt = by_id.get(call_id)
    if attempt is None:
        return  # its call was before this scan (and was settled then) or is missing
    attempt.output = text_of(message.get("content"))
    attempt.ok = not is_failure(message, attempt.output)
    details = message.get("details")
    if not attempt.ok and isinstance(details, Mapping) and isinstance(details.get("error"), str):
        # OpenClaw 2026.9 reports a tool's failure as JSON text; its details say it plainly
        attempt.output = details["error"]
    attempt.result_seq = seq
    attempt.result_line = line


@dataclass
class _Chain:
    failures: list[Attempt]
    calls_since: int = 0


def _episodes(
    attempts: list[Attempt], notes: list[tuple[int, str]], sid: str, window: int
) -> tuple[list[Episode], Attempt | None]:
    """Closed episodes, and the earliest attempt a later scan must start from (if any)."""
    open_chains: dict[str, _Chain] = {}
    episodes: list[Episode] = []
    for a in attempts:
        for tool in list(open_chains):
            chain = open_chains[tool]
            chain.calls_since += 1
            if chain.calls_since > window:
                del open_chains[tool]  # no retry came: nothing to learn
        if a.ok is None:
            continue  # no result: an aborted call, or one whose result is not written yet
        if a.ok is False:
            chain = open_chains.setdefault(a.tool, _Chain([]))
            chain.failures.append(a)
            chain.calls_since = 0
            continue
        done = open_chains.pop(a.tool, None)
        if done is None or a.signature in {f.signature for f in done.failures}:
            continue  # no failure before it, or the same call simply worked on retry
        first = done.failures[0]
        said = [t for s, t in notes if first.result_seq < s < a.seq]
        episodes.append(Episode(sid, a.tool, first.user, done.failures, a, said))
    waiting = [c.failures[0] for c in open_chains.values()]
    # a call with no result yet might be the first failure of an episode
    tail = attempts[-window:] if window else []
    waiting += [a for a in tail if a.ok is None]
    return episodes, min(waiting, key=lambda a: a.offset) if waiting else None


# -- describing attempts ---------------------------------------------------------------------


def describe_call(attempt: Attempt, limit: int = 200) -> str:
    """A call as a person would write it: the command, or the tool and its main argument."""
    args = attempt.args
    if isinstance(args, Mapping):
        for key in ("command", "cmd", "script", "query", "url"):
            value = args.get(key)
            if isinstance(value, str) and value.strip():
                return clip(f"{attempt.tool}: {value}", limit)
        for key in ("path", "file_path", "file"):
            value = args.get(key)
            if isinstance(value, str) and value.strip():
                rest = {k: v for k, v in args.items() if k != key}
                extra = f" {json.dumps(rest, ensure_ascii=False, default=str)}" if rest else ""
                return clip(f"{attempt.tool} {value}{extra}", limit)
        body = json.dumps(args, ensure_ascii=False, sort_keys=True, default=str)
        return clip(f"{attempt.tool} {body}", limit)
    if isinstance(args, str) and args.strip():
        return clip(f"{attempt.tool}: {args}", limit)
    return attempt.tool


def error_summary(output: str, limit: int = 200) -> str:
    """The line of a failed result that says what went wrong (else its first line)."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    if not lines:
        return "no output"
    for tier in _ERROR_TIERS:
        for line in lines[:40]:
            if tier.search(line):
                return clip(line, limit)
    return clip(lines[0], limit)


def first_sentences(text: str, n: int = 2, limit: int = 240) -> str:
    return clip(" ".join(sentences(text)[:n]), limit)
