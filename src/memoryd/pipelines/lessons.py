"""Lessons from session logs (seed 003's lessons extractor).

For each agent, every OpenClaw session transcript is scanned from where the last
run stopped: the ``*.jsonl`` files in ``settings.lessons.sessions[agent]``, else
``lessons.sessions_dir`` with ``{openclaw_dir}``/``{home}``/``{agent}`` filled in
(by default ``~/.openclaw/agents/<agent>/sessions``, older OpenClaw), and every
session in OpenClaw 2026.9's own SQLite store
(``{openclaw_dir}/agents/<agent>/agent/openclaw-agent.sqlite``, read-only through
:mod:`memoryd.workspace.openclaw_store`, each session read as the JSON lines it
used to be written as). The scan looks for failure -> retry -> success episodes
(:mod:`memoryd.pipelines.lessons_sessions`). Each episode becomes a lesson,
scenario / wrong approach / correct approach / reason, by the LLM when one is
configured and offline otherwise (:mod:`memoryd.pipelines.lessons_extract`);
an episode that teaches nothing (a typo corrected on retry, a missing file found
with nothing learned about why: :func:`~memoryd.pipelines.lessons_text.lesson_problem`,
the gate every lesson writer uses) is not stored, and a lesson that duplicates an existing one (word overlap, then the LLM's
DUPLICATE/NOVEL check) is dropped. New lessons are stored as shared
``experience`` memories of the agent (``infer=False``) and appended to its
``memory/lessons.md``; ``memory/INDEX.md`` is regenerated.

Progress is kept per transcript (a file's name, ``sqlite:<sessionId>`` for a
session in the store) in store kv (``lessons:sessions:<agent>``): the
byte offset read up to (before any failure still waiting for its retry), the
context needed to resume there, and the episodes already decided past it. A
lesson's id is derived from its session and tool-call ids, and it commits in
one transaction with its ``lessons.md`` journal entry, so a run killed at any
point and run again stores each lesson once and appends it once.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from memoryd.errors import InvalidInputError, UpstreamError
from memoryd.models import Event, Origin
from memoryd.pipelines.index_md import refresh_indexes
from memoryd.pipelines.lessons_extract import Lesson, find_duplicate, llm_lesson, offline_lesson
from memoryd.pipelines.lessons_md import PendingBlock, flush, journal, lessons_path
from memoryd.pipelines.lessons_sessions import Episode, ScanState, scan
from memoryd.pipelines.lessons_text import clip, lesson_problem
from memoryd.pipelines.registry import PipelineContext, RunResult, pipeline
from memoryd.settings import Settings
from memoryd.validate import check_id
from memoryd.workspace import openclaw_store
from memoryd.workspace.layout import local_today

NAME = "lessons"
LESSON_CATEGORY = "experience"
NAMESPACE = uuid.UUID("0b8f3f0e-5a0c-4a41-9d27-8a3c3f6b2e91")


def lesson_id(episode: Episode) -> str:
    return str(uuid.uuid5(NAMESPACE, f"lessons\n{episode.key}"))


def sessions_dir(settings: Settings, agent_id: str) -> Path:
    """Where ``agent_id``'s transcripts are."""
    configured = settings.lessons.sessions.get(agent_id)
    if configured is not None:
        return configured.expanduser()
    template = settings.lessons.sessions_dir
    try:
        raw = template.format(
            openclaw_dir=settings.workspace.openclaw_dir.expanduser(),
            home=settings.home,
            agent=agent_id,
        )
    except (KeyError, IndexError, ValueError) as exc:
        raise InvalidInputError(
            f"lessons.sessions_dir {template!r} cannot be filled in ({exc})",
            "use only {openclaw_dir}, {home} and {agent}, e.g. "
            "{openclaw_dir}/agents/{agent}/sessions",
        ) from None
    return Path(raw).expanduser()


def session_agents(ctx: PipelineContext) -> list[str]:
    """``--agent``, else every known agent, configured one, and agent with transcripts."""
    if ctx.agent is not None:
        return [ctx.agent]
    found = set(ctx.agents()) | set(ctx.settings.lessons.sessions)
    root = ctx.settings.workspace.openclaw_dir.expanduser() / "agents"
    if root.is_dir():
        found.update(
            p.name
            for p in root.iterdir()
            if (p / "sessions").is_dir() or openclaw_store.store_path(root.parent, p.name).is_file()
        )
    valid = []
    for agent in sorted(found):
        try:
            check_id(agent, "agent_id", ctx.settings.limits, required=True)
        except InvalidInputError:
            continue
        valid.append(agent)
    return valid


def _state_key(agent: str) -> str:
    return f"{NAME}:sessions:{agent}"


def _read_from(path: Path, offset: int, limit: int) -> bytes:
    with path.open("rb") as f:
        f.seek(offset)
        return f.read(limit)


def extract(ctx: PipelineContext, episode: Episode, result: RunResult) -> tuple[Lesson | None, str]:
    """The episode's lesson and how it was made (``llm``, ``offline``, ``offline-fallback``)."""
    llm = ctx.memory.llm
    if llm is None or ctx.dry_run:
        return offline_lesson(episode), "offline"
    try:
        return llm_lesson(llm, episode), "llm"
    except UpstreamError as exc:
        result.count("llm_fallbacks")
        result.note(f"session {episode.session_id}: the LLM failed ({exc.message}); used offline")
        return offline_lesson(episode), "offline-fallback"


def _is_duplicate(ctx: PipelineContext, text: str, result: RunResult) -> bool:
    s = ctx.settings.lessons
    llm = None if ctx.dry_run else ctx.memory.llm
    try:
        dup = find_duplicate(
            ctx.memory,
            text,
            user_id=ctx.user_id,
            category=LESSON_CATEGORY,
            threshold=s.overlap_threshold,
            llm=llm,
            llm_candidates=s.llm_check_candidates,
        )
    except UpstreamError as exc:
        # keeping a possible duplicate loses less than dropping a lesson
        result.count("llm_check_failures")
        result.note(f"duplicate check: the LLM failed ({exc.message}); kept the lesson")
        return False
    if dup is None:
        return False
    result.count(f"duplicates_{dup.by}")
    return True


def handle_episode(
    ctx: PipelineContext, agent: str, episode: Episode, source: str, result: RunResult
) -> None:
    """Decide one episode: already stored, not a lesson, a duplicate, or a new lesson."""
    memory = ctx.memory
    lid = lesson_id(episode)
    if memory.store.existing_ids([lid]):
        result.count("already_stored")
        return
    lesson, how = extract(ctx, episode, result)
    if lesson is None:
        result.count("not_a_lesson")
        return
    text = clip(lesson.text, ctx.settings.limits.max_text_chars)
    problem = lesson_problem(text)
    if problem is not None:
        result.count("not_a_lesson")
        result.note(f"session {episode.session_id[:12]} ({episode.tool}): no lesson, {problem}")
        return
    if _is_duplicate(ctx, text, result):
        return
    if ctx.dry_run:
        result.count("would_store")
        result.note(f"would store ({agent}): {clip(text, 240)}")
        return
    memory.embed_texts([text])  # outside the transaction: the add inside hits the cache
    day = local_today(ctx.settings.workspace, ctx.clock).isoformat()
    heading = f"{day} · {episode.tool} · session {episode.session_id[:12]}"
    ws = ctx.workspace(agent)
    with memory.store.atomic():
        events = memory.add(
            text,
            user_id=ctx.user_id,
            agent_id=agent,
            category=LESSON_CATEGORY,
            origin=Origin.FACT,
            memory_id=lid,
            actor=ctx.actor,
            metadata={
                "lesson_source": NAME,
                "extractor": how,
                "lesson": lesson.as_dict(),
                "tool": episode.tool,
                "session_id": episode.session_id,
                "session_file": source,
                "lines": [episode.failures[0].line, episode.success.line],
            },
        )
        if events and events[0].event == Event.ADD:
            block = PendingBlock(lid, str(lessons_path(ws)), lesson.markdown(heading, lid))
            journal(memory.store, NAME, [block])
            result.count("lessons")
        else:
            result.count("duplicates_exact")


@dataclass(frozen=True)
class Transcript:
    """One session's transcript: a JSONL file, or a session in OpenClaw's SQLite store
    read as the same JSON lines. ``name`` keys its progress; ``where`` is for people."""

    name: str
    session_id: str
    where: str
    size: int
    read: Callable[[int, int], bytes]  # (offset, limit) -> bytes


def file_transcript(path: Path) -> Transcript:
    return Transcript(
        path.name,
        path.stem,
        str(path),
        path.stat().st_size,
        lambda offset, limit: _read_from(path, offset, limit),
    )


def _slicer(data: bytes) -> Callable[[int, int], bytes]:
    return lambda offset, limit: data[offset : offset + limit]


def store_transcripts(path: Path) -> list[Transcript]:
    """Every session in an OpenClaw SQLite store, each read whole (sessions are small)."""
    out = []
    with openclaw_store.open_store(path) as conn:
        for session in openclaw_store.sessions(conn):
            data = openclaw_store.session_bytes(conn, session.session_id)
            out.append(
                Transcript(
                    f"sqlite:{session.session_id}",
                    session.session_id,
                    f"{path} session {session.session_id}",
                    len(data),
                    _slicer(data),
                )
            )
    return out


def process_file(
    ctx: PipelineContext, agent: str, source: Transcript, state: ScanState, result: RunResult
) -> ScanState:
    """Scan one transcript from ``state`` and decide its new episodes; the next state."""
    s = ctx.settings.lessons
    if source.size < state.offset:
        result.note(f"{source.name} is shorter than last time; reading it again from the start")
        state = ScanState()
    if source.size == state.offset:
        return state
    data = source.read(state.offset, s.max_bytes_per_run)
    scanned = scan(data, state, session_id=source.session_id, retry_window=s.retry_window)
    if scanned.lines == 0 and len(data) >= s.max_bytes_per_run:
        result.error(
            f"agent {agent}: {source.name} has a line longer than lessons.max_bytes_per_run "
            f"({s.max_bytes_per_run} bytes) at byte {state.offset}; raise the limit to read it"
        )
        return state
    result.count("lines", scanned.lines)
    if scanned.bad_lines:
        result.count("bad_lines", scanned.bad_lines)
    decided = set(state.decided)
    nxt = scanned.state
    for episode in scanned.episodes:
        result.count("episodes")
        if episode.key in decided:
            result.count("already_decided")
        else:
            handle_episode(ctx, agent, episode, source.where, result)
        if episode.failures[0].offset >= nxt.offset:
            nxt.decided.append(episode.key)  # the next scan will see it again
    return nxt


def transcripts(ctx: PipelineContext, agent: str, result: RunResult) -> list[Transcript]:
    """``agent``'s transcripts: the JSONL files, then the sessions of OpenClaw's store."""
    found: list[Transcript] = []
    directory = sessions_dir(ctx.settings, agent)
    if directory.is_dir():
        for path in sorted(directory.glob("*.jsonl")):
            if not path.is_file():
                continue
            try:
                found.append(file_transcript(path))
            except OSError as exc:
                result.error(f"agent {agent}: cannot read {path.name}: {exc}")
    store_file = openclaw_store.store_path(ctx.settings.workspace.openclaw_dir.expanduser(), agent)
    if store_file.is_file():
        try:
            found += store_transcripts(store_file)
        except InvalidInputError as exc:
            result.error(f"agent {agent}: {exc.message} ({exc.hint})")
        except (OSError, sqlite3.Error) as exc:
            result.error(f"agent {agent}: cannot read {store_file}: {exc}")
    if not found and ctx.agent is not None:
        result.note(f"agent {agent}: no session transcripts at {directory} or {store_file}")
    return found


def lessons_from_sessions(ctx: PipelineContext, agent: str, result: RunResult) -> bool:
    """Scan ``agent``'s transcripts into ``result``; whether it found a new lesson."""
    store = ctx.memory.store
    found = transcripts(ctx, agent, result)
    if not found:
        return False
    states = dict(store.kv_get(_state_key(agent)) or {})
    before = result.counts.get("lessons", 0) + result.counts.get("would_store", 0)
    for source in found:
        result.count("sessions")
        try:
            nxt = process_file(
                ctx, agent, source, ScanState.from_json(states.get(source.name)), result
            )
        except OSError as exc:
            result.error(f"agent {agent}: cannot read {source.name}: {exc}")
            continue
        states[source.name] = nxt.to_json()
        if not ctx.dry_run:
            store.kv_set(_state_key(agent), states)
    if not ctx.dry_run:
        flush(store, NAME, ctx.settings.workspace)
    return result.counts.get("lessons", 0) + result.counts.get("would_store", 0) > before


@pipeline(
    NAME,
    schedule="45 3 * * *",
    description="Lessons from session logs: failure -> retry -> success in transcripts",
)
def lessons(ctx: PipelineContext) -> RunResult:
    """Lessons from session logs: failure -> retry -> success in OpenClaw transcripts."""
    result = RunResult()
    store = ctx.memory.store
    if not ctx.dry_run:
        recovered = flush(store, NAME, ctx.settings.workspace)
        if recovered:
            result.count("lessons_md_recovered", recovered)
    touched: list[str] = []

    def lessons_agent(agent: str) -> None:
        if lessons_from_sessions(ctx, agent, result):
            touched.append(agent)

    ctx.each(result, session_agents(ctx), lessons_agent)
    refresh_indexes(ctx, result, touched)
    return result
