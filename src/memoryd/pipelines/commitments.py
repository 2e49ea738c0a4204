"""Inferred commitments (seed 002): short-lived follow-ups an agent owes its user.

"I have an interview tomorrow" deserves a check-in after it; nobody asked for a
reminder, so nothing is scheduled. Opt-in (``commitments.enabled``), a
background pass (the ``commitments`` pipeline, every 15 minutes) reads the
last ``lookback_days`` of each agent's diary and infers dated intentions: the
configured LLM does when there is one (JSON ``[{"text", "due"}]``, validated;
an unusable answer falls back to the rules), word rules otherwise ("tomorrow",
"on Friday", "next week", "in 3 days", an ISO date, next to an intention: an
interview, a meeting, "remind me", "I'll", "follow up", ...). Each commitment
keeps the agent, the channel of the turn that made it (the diary heading's
``· channel NAME``, else ``default``), its due time and the diary lines it came
from. At most ``max_per_day`` are inferred per agent and day.

One commitment per intent: the user's "remind me on Friday to renew the domain"
and the assistant's "I'll remind you on Friday" (in the same exchange or one a
little later) are one follow-up. A statement said at most ``same_intent_hours``
after an earlier commitment of the same channel, due the same day and about the
same thing (:func:`same_intent`), is merged into it (listed in its ``also``), not
added.

They are delivered through a heartbeat: ``memoryd commitments due``,
``POST /v1/commitments/due`` or the MCP tool ``commitments_due`` return what is
due for an agent (and channel) and mark it delivered; ``done`` closes one; one
not closed ``expire_after_hours`` after it was due expires. Commitments live in
the store's key/value table (``commitments:<agent>``), never in ``MEMORY.md``,
search or promotion: they are errands, not knowledge. A commitment's id is a
digest of where it was said and what it says, so a pass killed anywhere and run
again infers the same ones and adds none twice.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field
from datetime import date, datetime, time, timedelta, tzinfo
from typing import Any

from memoryd.core import Memory
from memoryd.errors import InvalidInputError, MemorydError, NotFoundError
from memoryd.extract.claims import content
from memoryd.pipelines.registry import PipelineContext, RunResult, pipeline
from memoryd.pipelines.sections import Batch, line_range, plain_text, split_sections
from memoryd.validate import check_id
from memoryd.workspace import Workspace
from memoryd.workspace.files import SkippedFile, read_markdown
from memoryd.workspace.layout import local_now

KV_PREFIX = "commitments:"
KEEP_CLOSED_DAYS = 30
_CHANNEL = re.compile(r"· channel ([\w.:@-]{1,64})")
_TIME = re.compile(r"^##\s+(\d{1,2}):(\d{2})\b")
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_INTENT = re.compile(
    r"\b(remind me|check in|check back|follow up|follow-up|don't forget|do not forget|"
    r"i'll|i will|i'm going to|i am going to|i have (?:a|an|my)|we have (?:a|an)|"
    r"interview|meeting|appointment|exam|surgery|flight|deadline|presentation|demo|"
    r"launch|doctor|dentist|trip)\b",
    re.IGNORECASE,
)
_WHEN = re.compile(
    r"\b(tomorrow|tonight|today|this evening|next week|next month|"
    r"in (\d{1,2}) (day|days|hour|hours|week|weeks)|"
    r"(?:on |this |next )?(monday|tuesday|wednesday|thursday|friday|saturday|sunday)|"
    r"(\d{4}-\d{2}-\d{2}))\b",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_SPEAKER = re.compile(r"^[\w .-]{1,40}: ")


@dataclass
class Commitment:
    id: str
    agent: str
    channel: str
    text: str
    due: str  # ISO, the agent's time zone
    source: str  # memory/YYYY-MM-DD.md#Lx-Ly
    created: str
    status: str = "pending"  # pending | delivered | done | expired
    delivered_at: str | None = None
    closed_at: str | None = None
    # later statements of the same intent merged into this one: {"text", "source"}
    also: list[dict[str, str]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _due_at(phrase: re.Match[str], day: date, at: time, tz: tzinfo) -> datetime | None:
    """When a time phrase said on ``day`` at ``at`` falls due (a check-in after it)."""
    word = phrase.group(1).lower()
    base = datetime.combine(day, at, tz)
    if word in ("today", "tonight", "this evening"):
        return base + timedelta(hours=3)
    if word == "tomorrow":
        return datetime.combine(day + timedelta(days=1), time(18, 0), tz)
    if word == "next week":
        return datetime.combine(day + timedelta(days=7), time(10, 0), tz)
    if word == "next month":
        return datetime.combine(day + timedelta(days=30), time(10, 0), tz)
    if phrase.group(2):
        n, unit = int(phrase.group(2)), phrase.group(3).lower()
        if unit.startswith("hour"):
            return base + timedelta(hours=n)
        return base + timedelta(days=n * (7 if unit.startswith("week") else 1))
    if phrase.group(4):
        ahead = (_WEEKDAYS.index(phrase.group(4).lower()) - day.weekday()) % 7 or 7
        return datetime.combine(day + timedelta(days=ahead), time(18, 0), tz)
    if phrase.group(5):
        try:
            return datetime.combine(date.fromisoformat(phrase.group(5)), time(18, 0), tz)
        except ValueError:
            return None
    return None


def detect(text: str, day: date, at: time, tz: tzinfo) -> list[tuple[str, datetime]]:
    """Dated intentions in ``text`` (plain conversation lines): (follow-up, due)."""
    found: list[tuple[str, datetime]] = []
    for line in text.splitlines():
        line = _SPEAKER.sub("", line.strip().lstrip("-* ").strip())
        for sentence in _SENTENCE.split(line):
            sentence = sentence.strip()
            when = _WHEN.search(sentence)
            if not when or not _INTENT.search(sentence) or len(sentence) > 300:
                continue
            due = _due_at(when, day, at, tz)
            if due is not None and due > datetime.combine(day, at, tz):
                found.append((f"Follow up: {sentence}", due))
    return found


_PROMPT = (
    "You find follow-ups an assistant should bring up later, from one conversation turn. "
    'Reply with JSON: {"commitments": [{"text": "...", "due": "YYYY-MM-DDTHH:MM"}]}, '
    "due in the user's local time; only dated intentions (an interview tomorrow, a trip "
    'next week, "remind me on Friday"), never undated wishes; an empty list when none.'
)


def detect_llm(
    memory: Memory, text: str, day: date, at: time, tz: tzinfo
) -> list[tuple[str, datetime]]:
    """The LLM's follow-ups for one section (``ValueError`` when its answer is unusable)."""
    assert memory.llm is not None
    answer = memory.llm.complete(
        [
            {"role": "system", "content": _PROMPT},
            {"role": "user", "content": f"Said on {day.isoformat()} at {at:%H:%M}:\n{text}"},
        ],
        json_output=True,
    )
    data = json.loads(answer)
    items = data.get("commitments") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise ValueError("no commitments list in the answer")
    out: list[tuple[str, datetime]] = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("text"), str):
            raise ValueError("a commitment without text")
        due = datetime.fromisoformat(str(item.get("due")))
        due = due if due.tzinfo else due.replace(tzinfo=tz)
        if due > datetime.combine(day, at, tz) and item["text"].strip():
            out.append((" ".join(item["text"].split())[:300], due))
    return out


# -- one commitment per intent ---------------------------------------------------------------
#: Words of how a follow-up is asked for or promised, not of what it is about.
_ASKING = frozenset(
    """follow up remind reminder reminding check back ll i'll going sure ok okay course
    absolutely don't forget promise make sure let know ping nudge tomorrow tonight today
    evening morning afternoon next week month day days hour hours monday tuesday wednesday
    thursday friday saturday sunday""".split()  # noqa: SIM905
)


def _about(text: str) -> set[str]:
    """What a follow-up is about: its content words, less asking and timing words."""
    words = content(text.removeprefix("Follow up:"))
    return {_stem(w) for w in words if len(w) > 1 and w not in _ASKING}


def _stem(word: str) -> str:
    """ "calling" / "call", "renewed" / "renew": enough to tell one errand from another."""
    if len(word) > 5 and word.endswith("ing"):
        return word[:-3]
    return word[:-2] if len(word) > 4 and word.endswith("ed") else word


def same_intent(
    items: list[Commitment], channel: str, text: str, made: str, due: datetime, hours: float
) -> Commitment | None:
    """The commitment ``text`` repeats, if any: the user's "remind me on Friday to renew
    the domain" and the assistant's "I'll remind you on Friday" (or "I will renew the
    domain on Friday") are one intent. Same channel, said at most ``hours`` after it, due
    the same day, and about the same thing: more than half the words of
    the shorter one are in the other, or it says nothing but the asking and the time."""
    said_at = datetime.fromisoformat(made)
    words = _about(text)
    best: tuple[float, float, Commitment] | None = None
    for c in items:
        if c.channel != channel or c.status == "expired":
            continue
        before = (said_at - datetime.fromisoformat(c.created)).total_seconds()
        if not 0 <= before <= hours * 3600:  # said before this one, and not long before
            continue
        when = datetime.fromisoformat(c.due)
        if when.date() != due.date():
            continue
        theirs = _about(c.text)
        if words and theirs and 2 * len(words & theirs) <= min(len(words), len(theirs)):
            continue
        rank = (abs((when - due).total_seconds()), before)  # the same due, then the nearest
        if best is None or rank < best[:2]:
            best = (*rank, c)
    return best[2] if best else None


# -- the store ------------------------------------------------------------------------------
def _load(memory: Memory, agent: str) -> list[Commitment]:
    raw = memory.store.kv_get(KV_PREFIX + agent) or []
    return [Commitment(**item) for item in raw if isinstance(item, dict)]


def _save(memory: Memory, agent: str, items: list[Commitment]) -> None:
    memory.store.kv_set(KV_PREFIX + agent, [c.to_json() for c in items] or None)


def _expire(items: list[Commitment], now: datetime, hours: float) -> int:
    n = 0
    for c in items:
        late = now >= datetime.fromisoformat(c.due) + timedelta(hours=hours)
        if c.status in ("pending", "delivered") and late:
            c.status, c.closed_at = "expired", now.isoformat()
            n += 1
    return n


def _prune(items: list[Commitment], now: datetime) -> list[Commitment]:
    cutoff = now - timedelta(days=KEEP_CLOSED_DAYS)
    return [
        c
        for c in items
        if c.status in ("pending", "delivered")
        or datetime.fromisoformat(c.closed_at or c.due) >= cutoff
    ]


def infer(memory: Memory, ws: Workspace, *, dry_run: bool = False) -> dict[str, int]:
    """One pass over the agent's recent diary days; returns counts."""
    s = memory.settings.commitments
    now = local_now(ws.settings, memory.clock)
    tz = now.tzinfo
    assert tz is not None
    counts = {"found": 0, "added": 0, "merged": 0, "over_daily_cap": 0, "expired": 0}
    counts["llm_fallbacks"] = 0
    with memory.store.atomic():
        items = _load(memory, ws.agent_id)
        known = {c.id for c in items}
        per_day: dict[str, int] = {}
        for c in items:
            per_day[c.created[:10]] = per_day.get(c.created[:10], 0) + 1
        for back in range(s.lookback_days - 1, -1, -1):
            day = now.date() - timedelta(days=back)
            path = ws.diary_path(day)
            try:
                data, _ = read_markdown(path, ws.settings.max_file_bytes, ws.fs)
            except SkippedFile:
                continue
            for section in split_sections(data):
                m = _TIME.match(section.header)
                if not m:
                    continue  # the file's title, or text not written by diary capture
                at = time(int(m.group(1)), int(m.group(2)))
                channel = _CHANNEL.search(section.header)
                text = plain_text(section.data.decode("utf-8"))
                found = _detect(memory, text, day, at, tz, counts)
                first, last = line_range(data, Batch(section.start, section.end, section.data))
                source = f"{ws.rel(path)}#L{first}-L{last}"
                for said, due in found:
                    counts["found"] += 1
                    key = f"{ws.agent_id}\0{source}\0{said}".encode()
                    cid = hashlib.sha256(key).hexdigest()[:16]
                    if cid in known:
                        continue
                    made = datetime.combine(day, at, tz).isoformat()
                    here = channel.group(1) if channel else "default"
                    kept = same_intent(items, here, said, made, due, s.same_intent_hours)
                    if kept is not None:
                        later = {"text": said, "source": source}
                        if later not in kept.also:
                            kept.also.append(later)
                            counts["merged"] += 1
                        continue
                    if per_day.get(day.isoformat(), 0) >= s.max_per_day:
                        counts["over_daily_cap"] += 1
                        continue
                    items.append(
                        Commitment(
                            id=cid,
                            agent=ws.agent_id,
                            channel=here,
                            text=said,
                            due=due.isoformat(),
                            source=source,
                            created=made,
                        )
                    )
                    known.add(cid)
                    per_day[day.isoformat()] = per_day.get(day.isoformat(), 0) + 1
                    counts["added"] += 1
        counts["expired"] = _expire(items, now, s.expire_after_hours)
        if not dry_run:
            _save(memory, ws.agent_id, _prune(items, now))
    return counts


def _detect(
    memory: Memory, text: str, day: date, at: time, tz: tzinfo, counts: dict[str, int]
) -> list[tuple[str, datetime]]:
    if memory.llm is not None and memory.settings.commitments.use_llm:
        try:
            return detect_llm(memory, text, day, at, tz)
        except (MemorydError, ValueError, TypeError):
            counts["llm_fallbacks"] += 1  # an unusable answer: the rules still run
    return detect(text, day, at, tz)


def due(memory: Memory, agent: str, channel: str | None = None) -> list[Commitment]:
    """What is due now for ``agent`` (in ``channel``), marked delivered: a heartbeat."""
    if channel is not None:
        check_id(channel, "channel", memory.settings.limits)
    now = memory.clock()
    with memory.store.atomic():
        items = _load(memory, agent)
        _expire(items, now, memory.settings.commitments.expire_after_hours)
        out = [
            c
            for c in items
            if c.status == "pending"
            and datetime.fromisoformat(c.due) <= now
            and (channel is None or c.channel == channel)
        ]
        for c in out:
            c.status, c.delivered_at = "delivered", now.isoformat()
        _save(memory, agent, items)
    return sorted(out, key=lambda c: (c.due, c.id))


def close(memory: Memory, agent: str, commitment_id: str) -> Commitment:
    """Mark one commitment done."""
    with memory.store.atomic():
        items = _load(memory, agent)
        for c in items:
            if c.id == commitment_id:
                c.status, c.closed_at = "done", memory.clock().isoformat()
                _save(memory, agent, items)
                return c
    raise NotFoundError(
        f"no commitment {commitment_id!r} for agent {agent!r}",
        "list them with `memoryd commitments list` or GET /v1/commitments",
    )


def listing(memory: Memory, agent: str, status: str | None = None) -> list[Commitment]:
    if status is not None and status not in ("pending", "delivered", "done", "expired"):
        raise InvalidInputError(
            f"unknown status {status!r}", "use pending, delivered, done or expired"
        )
    items = _load(memory, agent)
    return sorted((c for c in items if status in (None, c.status)), key=lambda c: c.due)


@pipeline(
    "commitments",
    schedule="*/15 * * * *",
    description="dated intentions in the diary -> follow-ups (opt-in)",
    opt_in=lambda settings: settings.commitments.enabled,
)
def commitments(ctx: PipelineContext) -> RunResult:
    result = RunResult()
    if not ctx.settings.commitments.enabled:
        result.note("commitments are off (commitments.enabled = true turns them on)")
        return result

    def one(agent: str) -> None:
        for key, n in infer(ctx.memory, ctx.workspace(agent), dry_run=ctx.dry_run).items():
            if n:
                result.count(key, n)

    ctx.each(result, ctx.agents(), one)
    return result
