"""TTL decay (seed 003's organizer): expired memories are archived; real lessons are kept.

Every memory category belongs to a TTL class (``settings.decay.classes``;
defaults: preferences and personal facts -> ``personal``, environment ->
``system``, decisions and experience -> ``knowledge``, all three never expire;
tasks -> ``tasks``, 7 days; project and agent state -> ``agents``, 30 days;
anything else -> ``default_class``, never). A memory expires when it has not
been written for its class's TTL (``max(created_at, updated_at)`` against the
run's clock).

Expired memories are grouped by user, agent and category (at most
``max_group`` per group, oldest first) and each group is summarised into
lessons: by the configured LLM, or extractively offline
(:mod:`memoryd.pipelines.decay_summary`). Tasks are not summarised: a to-do
that expired teaches nothing ("I'm heading out for the day, see you tomorrow"
is no lesson), so a task group keeps as lessons only those of its memories that
pass the lesson gate on their own. Every lesson, from any group and either
summariser, passes :func:`~memoryd.pipelines.lessons_text.lesson_problem` (a
failure and what fixed it, with substance) or is not stored: the shared pool
gets lessons only. The lessons are stored as shared
``experience`` memories (every agent of the user finds them) and, when the user
owns the workspaces (``workspace.user_id``), appended to the agent's
``memory/lessons.md`` (another user's lessons never enter the owner's files);
the group's memories are archived (state
``archived``, history event ``ARCHIVE``, actor ``decay:<run>``, a reason):
out of default search, still found with ``--include-archived``, never deleted.

Only memories written through the API or extracted as facts decay: workspace
chunks mirror files, and short-term memories (``run_id`` set) are the dream's
to consolidate unless ``decay.include_short_term`` is set.

Safe to kill at any instant: a group's lessons and its archiving commit in one
store transaction together with the journal entry for ``lessons.md``
(:mod:`memoryd.pipelines.lessons_md`), and lesson ids are derived from the ids
of the memories they summarise, so a re-run redoes exactly the groups that did
not commit and never writes a lesson twice. A group that fails is recorded in
the run and the others go on. ``memory/INDEX.md`` is regenerated at the end
(:mod:`memoryd.pipelines.index_md`, from the owner's memories only).

MEMORY.md is evergreen: memories synced from it (``metadata.evergreen``) never
expire, whatever their category's class.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from memoryd.core import Memory
from memoryd.errors import UpstreamError
from memoryd.extract.tasks import TASK_CATEGORY
from memoryd.models import Event, Filters, MemoryRecord, Origin, State
from memoryd.pipelines.decay_summary import llm_lessons, offline_lesson, touched_at
from memoryd.pipelines.index_md import refresh_indexes
from memoryd.pipelines.lessons_md import PendingBlock, flush, journal, lessons_path
from memoryd.pipelines.lessons_text import clip, end_sentence, lesson_problem
from memoryd.pipelines.registry import PipelineContext, RunResult, pipeline
from memoryd.settings import DecaySettings
from memoryd.workspace.layout import local_today

NAME = "decay"
LESSON_CATEGORY = "experience"
#: Lesson ids are uuid5 names in this namespace, so a re-run derives the same ids.
NAMESPACE = uuid.UUID("6f1d3a52-1c55-4f43-9a53-0c4bb1f0d3e7")


def ttl_class(category: str | None, settings: DecaySettings) -> str:
    """The TTL class of a category (case-insensitive); ``default_class`` when unmapped."""
    if category is None:
        return settings.default_class
    return settings.classes.get(
        category, settings.classes.get(category.lower(), settings.default_class)
    )


def ttl_of(record: MemoryRecord, settings: DecaySettings) -> tuple[str, float | None]:
    cls = ttl_class(record.category, settings)
    return cls, settings.ttl_days[cls]


def is_expired(record: MemoryRecord, now: datetime, settings: DecaySettings) -> bool:
    if record.metadata.get("evergreen") is True:
        return False  # curated (MEMORY.md): kept until the file says otherwise
    _, days = ttl_of(record, settings)
    return days is not None and now - touched_at(record) >= timedelta(days=days)


@dataclass
class Group:
    """Expired memories of one user, agent and category, summarised together."""

    user_id: str
    agent_id: str | None
    category: str | None
    ttl_class: str
    ttl_days: float
    members: list[MemoryRecord] = field(default_factory=list)

    def lesson_id(self, n: int) -> str:
        key = "\n".join(sorted(m.id for m in self.members))
        return str(uuid.uuid5(NAMESPACE, f"decay\n{key}\n{n}"))

    @property
    def label(self) -> str:
        who = f" of agent {self.agent_id}" if self.agent_id else ""
        return f"{len(self.members)} {self.category or 'uncategorised'} memories{who}"


def find_expired(memory: Memory, now: datetime, agent_id: str | None = None) -> list[MemoryRecord]:
    """Active, written (not chunk) memories whose TTL has run out at ``now``."""
    s = memory.settings.decay
    filters = Filters(
        agent_id=agent_id,
        states=[State.ACTIVE],
        origins=[Origin.API, Origin.FACT],
        long_term_only=not s.include_short_term,
    )
    return [r for r in memory.store.iter_all(filters) if is_expired(r, now, s)]


def group_expired(records: list[MemoryRecord], settings: DecaySettings) -> list[Group]:
    """Groups in a stable order, each at most ``max_group`` memories, oldest first.

    The split is a function of the set of records alone, so after a killed run the
    groups that did not commit come out exactly as before.
    """
    by_key: dict[tuple[str, str, str], list[MemoryRecord]] = {}
    for r in records:
        by_key.setdefault((r.user_id, r.agent_id or "", r.category or ""), []).append(r)
    groups: list[Group] = []
    for (user, agent, category), members in sorted(by_key.items()):
        members.sort(key=lambda m: (touched_at(m), m.id))
        cls, days = ttl_of(members[0], settings)
        assert days is not None  # only expired (so expiring) records get here
        for start in range(0, len(members), settings.max_group):
            groups.append(
                Group(
                    user,
                    agent or None,
                    category or None,
                    cls,
                    days,
                    members[start : start + settings.max_group],
                )
            )
    return groups


def is_task_group(group: Group) -> bool:
    return group.ttl_class == "tasks" or group.category == TASK_CATEGORY


def summarise(ctx: PipelineContext, group: Group, result: RunResult) -> tuple[list[str], str]:
    """The group's lessons that pass the lesson gate, and how they were made (``llm``,
    ``offline``, ``offline-fallback``, ``task``).

    A dry run previews the offline lesson: it does not spend LLM calls on a preview.
    """
    lessons, how = _summarise(ctx, group, result)
    kept = []
    for text in lessons:
        problem = lesson_problem(text)
        if problem is None:
            kept.append(text)
        else:
            result.count("not_a_lesson")
            result.note(f"{group.label}: no lesson ({problem}): {clip(text, 160)}")
    return kept, how


def _task_lessons(group: Group, max_chars: int) -> list[str]:
    """A task group's lessons: its memories that are lessons on their own, nothing more."""
    who = f" of agent {group.agent_id}" if group.agent_id else ""
    return [
        clip(
            f"Lesson from an expired {group.category or 'task'} memory{who} "
            f"({touched_at(m).date().isoformat()}): {end_sentence(m.text)}",
            max_chars,
        )
        for m in group.members
        if lesson_problem(m.text) is None
    ]


def _summarise(ctx: PipelineContext, group: Group, result: RunResult) -> tuple[list[str], str]:
    n = ctx.settings.decay.lessons_per_group
    max_chars = ctx.settings.limits.max_text_chars
    if is_task_group(group):
        return _task_lessons(group, max_chars)[:n], "task"
    llm = ctx.memory.llm
    if llm is not None and not ctx.dry_run:
        try:
            lessons = llm_lessons(
                llm,
                group.members,
                category=group.category,
                agent_id=group.agent_id,
                n=n,
                max_chars=max_chars,
            )
            return lessons, "llm"
        except UpstreamError as exc:
            # the memories still expire; the lesson is the extractive one, and the run says so
            result.count("llm_fallbacks")
            result.note(f"{group.label}: the LLM failed ({exc.message}); used the offline summary")
            how = "offline-fallback"
    else:
        how = "offline"
    lesson = offline_lesson(
        group.members, category=group.category, agent_id=group.agent_id, n=n, max_chars=max_chars
    )
    return [lesson], how


def _block(lesson_id: str, text: str, group: Group, day: str) -> str:
    where = f" · agent {group.agent_id}" if group.agent_id else ""
    return (
        f"## {day} · decay · {group.category or 'uncategorised'}{where}\n"
        f"<!-- lesson:{lesson_id} -->\n"
        f"{text}\n\n"
        f"_From {len(group.members)} memories archived by TTL decay "
        f"(class {group.ttl_class}, {group.ttl_days:g} days)._\n"
    )


def _lesson_agent(ctx: PipelineContext, agent_id: str | None) -> str:
    """Whose workspace gets the lesson: its agent's, or ``decay.default_agent``'s."""
    return agent_id or ctx.settings.decay.default_agent


def _lessons_file(ctx: PipelineContext, group: Group) -> str | None:
    """The ``lessons.md`` a group's lessons are appended to, or None for another user's.

    A workspace and everything memoryd writes into it belong to ``workspace.user_id``
    (its files are indexed as that user's chunks), so another user's lessons are
    stored as their memories only, never written into the owner's files.
    """
    if group.user_id != ctx.user_id:
        return None
    return str(lessons_path(ctx.workspace(_lesson_agent(ctx, group.agent_id))))


def apply_group(ctx: PipelineContext, group: Group, result: RunResult) -> None:
    """Store the group's lessons and archive its memories, all in one transaction."""
    memory = ctx.memory
    lessons, how = summarise(ctx, group, result)
    if lessons:
        memory.embed_texts(lessons)  # outside the transaction: the add inside hits the cache
    path = _lessons_file(ctx, group)
    day = local_today(ctx.settings.workspace, ctx.clock).isoformat()
    first, last = touched_at(group.members[0]), touched_at(group.members[-1])
    ids = [group.lesson_id(n) for n in range(len(lessons))]
    blocks: list[PendingBlock] = []
    with memory.store.atomic():
        for lesson_id, text in zip(ids, lessons, strict=True):
            events = memory.add(
                text,
                user_id=group.user_id,
                agent_id=group.agent_id,
                category=LESSON_CATEGORY,
                origin=Origin.FACT,
                memory_id=lesson_id,
                actor=ctx.actor,
                metadata={
                    "lesson_source": NAME,
                    "summariser": how,
                    "ttl_class": group.ttl_class,
                    "source_category": group.category,
                    "sources": [m.id for m in group.members],
                    "period": [first.date().isoformat(), last.date().isoformat()],
                },
            )
            if events and events[0].event == Event.ADD:
                if path is not None:
                    block = _block(lesson_id, text, group, day)
                    blocks.append(PendingBlock(lesson_id, path, block))
                result.count("lessons")
            else:
                result.count("lessons_known")  # the same text is already a lesson here
        kept = f"summarised into lesson {', '.join(ids)}" if ids else "nothing worth a lesson"
        for m in group.members:
            memory.archive(
                m.id,
                actor=ctx.actor,
                reason=f"TTL decay: {m.category or 'uncategorised'} is class {group.ttl_class} "
                f"({group.ttl_days:g} days), last written {touched_at(m).date().isoformat()}; "
                f"{kept}",
            )
        journal(memory.store, NAME, blocks)
    result.count("archived", len(group.members))


def preview_group(ctx: PipelineContext, group: Group, result: RunResult) -> None:
    """What a dry run says about a group."""
    lessons, _ = summarise(ctx, group, result)
    result.count("would_archive", len(group.members))
    result.count("would_write_lessons", len(lessons))
    preview = clip(lessons[0], 240) if lessons else "(no lesson)"
    result.note(
        f"would archive {group.label} (class {group.ttl_class}, "
        f"{group.ttl_days:g} days) into: {preview}"
    )


@pipeline(
    NAME,
    schedule="30 3 * * *",
    description="TTL decay: expired memories become lessons and are archived; INDEX.md",
)
def decay(ctx: PipelineContext) -> RunResult:
    """TTL decay: expired memories become lessons and are archived; INDEX.md regenerated."""
    result = RunResult()
    store = ctx.memory.store
    if not ctx.dry_run:
        # lessons.md blocks a killed run committed but did not write
        recovered = flush(store, NAME, ctx.settings.workspace)
        if recovered:
            result.count("lessons_md_recovered", recovered)
    now = ctx.now()
    groups = group_expired(find_expired(ctx.memory, now, ctx.agent), ctx.settings.decay)
    result.count("expired", sum(len(g.members) for g in groups))
    result.count("groups", len(groups))
    touched: set[str] = set()

    def decay_group(group: Group) -> None:
        if group.user_id == ctx.user_id:
            touched.add(_lesson_agent(ctx, group.agent_id))
        if ctx.dry_run:
            preview_group(ctx, group, result)
        else:
            apply_group(ctx, group, result)

    ctx.each(result, groups, decay_group, label=lambda g: f"{g.label} of user {g.user_id}")
    if not ctx.dry_run:
        flush(store, NAME, ctx.settings.workspace)
    refresh_indexes(ctx, result, sorted(touched | set(ctx.agents())))
    return result
