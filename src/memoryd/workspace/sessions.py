"""Session notes (``/new``) and the pre-compaction flush (seed 004, section 6).

* :func:`write_session_note`: the last N messages of a finished session become
  ``memory/YYYY-MM-DD-<slug>.md``. The slug comes from the LLM when one is
  configured (a 1-2 word name) and from the conversation's keywords otherwise;
  the time (HHMM) is the last resort, as in OpenClaw.
* :func:`flush`: durable notes appended to today's diary before the agent
  compacts its context: a ``## HH:MM`` section of bullets, appended atomically.

Both index what they wrote straight away, so it is searchable without waiting
for the watcher.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from memoryd.core import Memory
from memoryd.errors import InvalidInputError, LimitExceededError, MemorydError
from memoryd.llm import LLM
from memoryd.workspace.files import append_section, create_exclusive
from memoryd.workspace.indexer import index_workspace
from memoryd.workspace.layout import SUMMARIES_DIR, Workspace, local_now

log = logging.getLogger("memoryd.workspace")

MAX_MESSAGES = 200
MAX_NOTES_CHARS = 50_000
_ROLES = {"user": "user", "human": "user", "assistant": "assistant", "ai": "assistant"}
_WORD = re.compile(r"[^\W_]+(?:[-'][^\W_]+)*", re.UNICODE)
_STOPWORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been
    before being below between both but by can could did do does doing done down during each
    few for from further get got had has have having he her here hers him his how i if in
    into is it its itself just let like me more most my no nor not now of off on once only or
    other our ours out over own please same she should so some such than that the their them
    then there these they this those through to too under until up us very was we were what
    when where which while who whom why will with would yes you your yours yourself ok okay
    thanks thank sure hi hello hey yeah yep nope good great fine well really think know want
    need make use used using one two also maybe still already going go see look looks said
    say says tell told way thing things lot something anything everything today tomorrow
    yesterday time day week month year new let's i'm it's that's don't can't i'll we'll you're
    could would should might must shall""".split()  # noqa: SIM905 (a word list reads better)
)


@dataclass
class SessionNote:
    path: str
    slug: str
    slug_source: str  # llm | keywords | time
    messages: int
    chunks: int

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "slug": self.slug,
            "slug_source": self.slug_source,
            "messages": self.messages,
            "chunks": self.chunks,
        }


def conversation(messages: Sequence[Any], limit: int) -> list[tuple[str, str]]:
    """``(role, text)`` of the last ``limit`` user/assistant messages with text."""
    if not isinstance(messages, Sequence) or isinstance(messages, str | bytes):
        raise InvalidInputError(
            "messages must be a list", 'send [{"role": "user", "content": "..."}]'
        )
    if len(messages) > 10_000:
        raise LimitExceededError(
            f"{len(messages)} messages in one request", "send only the end of the session"
        )
    out: list[tuple[str, str]] = []
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping):
            raise InvalidInputError(
                f"message {i} is not an object", 'each message is {"role": ..., "content": ...}'
            )
        role = _ROLES.get(str(m.get("role", "")).lower())
        text = _text(m.get("content")).replace("\x00", "").strip()
        if role and text:
            out.append((role, text))
    return out[-limit:] if limit else []


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        parts = [
            b.get("text", "")
            for b in content
            if isinstance(b, Mapping)
            and b.get("type", "text") in {"text", "input_text", "output_text"}
        ]
        return "\n".join(p for p in parts if isinstance(p, str))
    return ""


def clean_slug(raw: str, max_len: int = 40) -> str:
    """Lowercase words joined by ``-``; letters of any script kept, nothing else."""
    text = unicodedata.normalize("NFKC", raw).lower()
    words = _WORD.findall(text.replace("'", ""))
    slug = "-".join(w.replace("'", "") for w in words)
    return slug[:max_len].strip("-")


def keyword_slug(turns: Sequence[tuple[str, str]], words: int = 2) -> str:
    """The conversation's most frequent content words (user words count double)."""
    counts: Counter[str] = Counter()
    first: dict[str, int] = {}
    for role, text in turns:
        for token in _WORD.findall(unicodedata.normalize("NFKC", text).lower()):
            token = token.replace("'", "")
            if len(token) < 3 and not (token.isalpha() and not token.isascii()):
                continue
            if token in _STOPWORDS or token.isdigit():
                continue
            counts[token] += 2 if role == "user" else 1
            first.setdefault(token, len(first))
    best = sorted(counts, key=lambda t: (-counts[t], first[t]))[:words]
    return clean_slug("-".join(best))


def llm_slug(llm: LLM, turns: Sequence[tuple[str, str]]) -> str:
    transcript = "\n".join(f"{role}: {text[:2000]}" for role, text in turns)[-12_000:]
    answer = llm.complete(
        [
            {
                "role": "system",
                "content": "You name files. Reply with a 1-2 word lowercase slug for the "
                "conversation's main topic, words joined by a hyphen, nothing else.",
            },
            {"role": "user", "content": f"Conversation:\n{transcript}\n\nSlug:"},
        ]
    )
    return clean_slug(answer.strip().strip("`\"'").splitlines()[0] if answer.strip() else "", 40)


def write_session_note(
    memory: Memory,
    ws: Workspace,
    messages: Sequence[Any],
    *,
    session_id: str | None = None,
    limit: int | None = None,
) -> SessionNote:
    """Write the end of a session to ``memory/YYYY-MM-DD-<slug>.md`` and index it.

    The slug comes from ``memory.llm`` when one is configured, else from keywords.
    """
    n = ws.settings.session_messages if limit is None else limit
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_MESSAGES:
        raise InvalidInputError(f"limit must be 1-{MAX_MESSAGES}, got {n!r}", "the default is 15")
    total = conversation(messages, 10_000)
    turns = total[-n:]
    if not turns:
        raise InvalidInputError(
            "no user or assistant message with text", "send the session's messages"
        )
    now = local_now(ws.settings, memory.clock)
    slug, source = "", "keywords"
    llm = memory.llm
    if llm is not None:
        try:
            slug, source = llm_slug(llm, turns), "llm"
        except MemorydError as exc:  # the LLM failed: the note still gets written
            log.warning("session slug: the LLM failed (%s); using keywords", exc)
    if not slug:
        slug, source = keyword_slug(turns), "keywords"
    if not slug:
        slug, source = now.strftime("%H%M"), "time"
    body = _render_note(ws, now.strftime("%Y-%m-%d %H:%M %Z"), session_id, turns, len(total))
    rel = _create_unique(ws, f"{now.date().isoformat()}-{slug}", body)
    report = index_workspace(memory, ws, paths=[ws.root / rel])
    return SessionNote(rel, slug, source, len(turns), report.chunks_written)


def _render_note(
    ws: Workspace, when: str, session_id: str | None, turns: Sequence[tuple[str, str]], total: int
) -> str:
    lines = [f"# Session: {when}", "", f"- **Agent**: {ws.agent_id}"]
    if session_id:
        lines.append(f"- **Session ID**: {' '.join(session_id.split())[:200]}")
    # No "## Conversation" heading: the metadata and a short session stay one chunk.
    lines += [f"- **Messages**: last {len(turns)} of {total}", ""]
    for role, text in turns:
        first, *rest = text.split("\n")
        lines.append(f"- **{role}**: {first}")
        lines.extend(f"  {line}" if line.strip() else "" for line in rest)
    return "\n".join(lines) + "\n"


def _create_unique(ws: Workspace, stem: str, body: str) -> str:
    """The note as ``memory/<stem>.md`` (OpenClaw's layout), or under ``memory/summaries/``
    when the workspace has that folder (seed 003's layout: session summaries there)."""
    summaries = ws.memory_dir / SUMMARIES_DIR
    folder = summaries if summaries.is_dir() and not summaries.is_symlink() else ws.memory_dir
    for n in range(1, 1000):
        name = f"{stem}.md" if n == 1 else f"{stem}-{n}.md"
        try:
            create_exclusive(folder / name, body, fs=ws.fs)
        except FileExistsError:
            continue
        return ws.rel(folder / name)
    raise LimitExceededError(
        f"too many session notes named {stem}", "pass a session with different content"
    )


@dataclass
class FlushResult:
    path: str
    appended: int  # notes written
    chunks: int

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "appended": self.appended, "chunks": self.chunks}


def flush(
    memory: Memory,
    ws: Workspace,
    notes: str | Sequence[str] | None = None,
    *,
    messages: Sequence[Any] | None = None,
) -> FlushResult:
    """Append durable notes to today's diary as one ``## HH:MM · flush`` section.

    ``notes`` are written as given (the agent chose them). ``messages`` (the
    conversation about to be compacted, as a host's hook sends it) are distilled
    first: by the configured LLM's fact extraction, else sentence by sentence, and
    what the last two days' diary already holds (the turns the diary capture
    wrote) is left out, so an automatic flush writes only what would otherwise be
    lost, and nothing when there is nothing new (``appended: 0``).
    """
    if (notes is None) == (messages is None):
        raise InvalidInputError(
            "send either notes or messages",
            'notes: the durable facts to keep; messages: [{"role": ..., "content": ...}]',
        )
    now = local_now(ws.settings, memory.clock)
    path = ws.diary_path(now.date())
    if messages is not None:
        cleaned = _distil(memory, ws, messages, now.date())
        if not cleaned:
            return FlushResult(ws.rel(path), 0, 0)
    else:
        cleaned = _notes(notes)
    if sum(len(n) for n in cleaned) > MAX_NOTES_CHARS:
        raise LimitExceededError(
            f"notes are longer than {MAX_NOTES_CHARS} characters",
            "flush the durable facts only, not the transcript",
        )
    bullets = "\n".join(n if n.startswith(("- ", "* ")) else f"- {n}" for n in cleaned)
    append_section(
        path, f"## {now:%H:%M} · flush\n{bullets}\n", fs=ws.fs,
        header=f"# {now.date().isoformat()}",
    )  # fmt: skip
    report = index_workspace(memory, ws, paths=[path])
    return FlushResult(ws.rel(path), len(cleaned), report.chunks_written)


def _notes(notes: Any) -> list[str]:
    items = (
        [notes] if isinstance(notes, str) else list(notes) if isinstance(notes, Sequence) else None
    )
    if items is None or not all(isinstance(n, str) for n in items):
        raise InvalidInputError("notes must be text or a list of texts", 'send {"notes": ["..."]}')
    cleaned = [" ".join(n.replace("\x00", "").split()) for n in items]
    cleaned = [n for n in cleaned if n]
    if not cleaned:
        raise InvalidInputError(
            "there are no notes to flush",
            "send the durable facts to keep; when there is nothing to store, do not call flush",
        )
    return cleaned


def _distil(memory: Memory, ws: Workspace, messages: Sequence[Any], today: date) -> list[str]:
    """The facts of ``messages`` that the recent diary does not already hold."""
    turns = conversation(messages, 10_000)
    if not turns:
        return []
    text = "\n".join(f"{role}: {words}" for role, words in turns)
    facts = memory.extractor.extract(text, None, today)
    recent = ""
    for day in (today - timedelta(days=1), today):
        recent += ws.fs.read_if_exists(ws.diary_path(day)).decode("utf-8", "replace")
    known = _squash(recent)
    out: list[str] = []
    size = 0
    for fact in reversed(facts):  # the latest first: a long backlog keeps its end
        flat = " ".join(fact.replace("\x00", "").split())
        if not flat or _squash(flat) in known or flat in out:
            continue
        size += len(flat)
        if size > MAX_NOTES_CHARS:
            break
        out.append(flat)
    return out[::-1]


def _squash(text: str) -> str:
    """Words only, case-folded: "- **user** (user): It's X." and "It's X" compare equal."""
    return " ".join(_WORD.findall(text.casefold()))
