"""What the wiki is compiled from: statements (:class:`Said`) gathered from the store,
``MEMORY.md`` and the journal of applied edits, before they are placed on pages.

* the workspace owner's long-term facts and API memories of the agent, and the
  same user's shared pool (``search.shared_categories``): one statement each,
  citing ``fact:<id>`` and the lines the fact was taken from;
* what a fact said before each update (its history): a superseded statement
  whose ``valid_until`` is the day of the update;
* a fact that reconciliation deleted because a newer one replaced it: a
  superseded statement too. A memory a person deleted is gone from the wiki as
  from recall: deleting is how one makes memoryd forget;
* each bullet of ``MEMORY.md``, under its section's heading, citing its line;
* the claims added with ``wiki apply`` (``wiki/.state/edits.json``);
* and, only to tell names from sentence case, ``USER.md`` and the recent diary.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from memoryd.core import Memory
from memoryd.errors import InvalidInputError
from memoryd.models import Event, Filters, HistoryEntry, MemoryRecord, Origin, State
from memoryd.search.pool import pool_filters
from memoryd.wiki.model import normalise
from memoryd.workspace.files import SkippedFile, read_markdown
from memoryd.workspace.layout import WIKI_DIR, Workspace, file_date

STATE_DIR = ".state"
EDITS_FILE = "edits.json"
GENERAL = "General"
# how core.py words the reason of a fact that reconciliation replaced (``_reason``)
RECONCILED = "reconcile delete"
_BULLET = re.compile(r"^\s*[-*+]\s+(?:\[[ xX]\]\s+)?(.+?)\s*$")
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")


@dataclass
class Said:
    """A statement before it is placed on pages."""

    text: str
    evidence: list[str]
    topic: str
    valid_from: str | None
    confirmed: str | None
    valid_until: str | None = None
    status: str = "current"
    origin: str = "fact"  # fact | memory-md | applied
    confidence: float = 1.0
    note: str | None = None
    names: list[str] = field(default_factory=list)  # who it is about, besides its text's names


def _day(value: Any) -> str | None:
    return value.date().isoformat() if value is not None else None


def _fact_evidence(r: MemoryRecord) -> list[str]:
    out = [f"fact:{r.id}"]
    if r.source is not None and r.source.path and r.source.start_line:
        end = r.source.end_line or r.source.start_line
        span = f"L{r.source.start_line}" + (f"-L{end}" if end != r.source.start_line else "")
        out.append(f"{r.source.path}#{span}")
    return out


def fact_scopes(memory: Memory, ws: Workspace, states: list[State]) -> list[Filters]:
    """The filters of what the agent's wiki may say: its own facts and its user's pool."""
    mine = Filters(
        user_id=ws.settings.user_id,
        agent_id=ws.agent_id,
        long_term_only=True,
        origins=[Origin.FACT, Origin.API],
        states=states,
    )
    pool = pool_filters(mine, memory.settings.search.shared_categories)
    return [mine] if pool is None else [mine, pool]


def _superseded_texts(r: MemoryRecord, history: list[HistoryEntry], topic: str) -> list[Said]:
    """What ``r`` said before each of its updates."""
    out = []
    valid_from = _day(r.event_at or r.created_at)
    for h in history:
        old = normalise(h.old_text or "")
        if h.event == Event.UPDATE and old and old != normalise(r.text):
            when = _day(h.created_at)
            out.append(Said(old, [f"fact:{r.id}"], topic, valid_from, when, when, "superseded"))
    return out


def facts(memory: Memory, ws: Workspace) -> list[Said]:
    seen: set[str] = set()
    out: list[Said] = []
    for scope in fact_scopes(memory, ws, [State.ACTIVE, State.DELETED, State.SUPERSEDED]):
        for r in memory.store.iter_all(scope):
            if r.id in seen:
                continue
            seen.add(r.id)
            topic = (r.category or GENERAL).strip() or GENERAL
            person = r.metadata.get("person")
            names = [person.strip()] if isinstance(person, str) and person.strip() else []
            valid_from = _day(r.event_at or r.created_at)
            # every record's history: with one clock an update in the same instant as the
            # add leaves updated_at == created_at, so the times cannot say who changed
            history = memory.store.history(r.id)
            if r.state == State.DELETED:
                deleted = [h for h in history if h.event == Event.DELETE]
                if not deleted or not (deleted[-1].reason or "").startswith(RECONCILED):
                    continue  # a person deleted it: forgotten here too
                when = _day(deleted[-1].created_at)
                said = Said(normalise(r.text), _fact_evidence(r), topic, valid_from, when, when)
                said.status, said.note = "superseded", "replaced by a newer fact"
            elif r.state == State.SUPERSEDED:  # a newer fact superseded it (Memory.add)
                when = _day(r.valid_until or r.updated_at)
                said = Said(normalise(r.text), _fact_evidence(r), topic, valid_from, when, when)
                said.status, said.note = "superseded", "replaced by a newer fact"
            else:
                said = Said(
                    normalise(r.text), _fact_evidence(r), topic, valid_from, _day(r.updated_at)
                )
            said.names = names
            out.append(said)
            for old in _superseded_texts(r, history, topic):
                old.names = names
                out.append(old)
    return out


def memory_md(ws: Workspace) -> list[Said]:
    """Each bullet of MEMORY.md, under its section's heading (memoryd's promoted blocks too:
    a line equal to a fact's text merges with it)."""
    path = ws.memory_file
    try:
        lines = ws.fs.read_text(path, errors="replace").splitlines()
    except OSError:
        return []
    rel = ws.rel(path)
    topic, out = GENERAL, []
    for n, line in enumerate(lines, start=1):
        heading = _HEADING.match(line)
        if heading:
            if len(heading.group(1)) > 1:  # the file's own "# MEMORY.md" title is no topic
                topic = " ".join(re.sub(r"[`*_]", "", heading.group(2)).split()) or GENERAL
            continue
        bullet = _BULLET.match(line)
        if bullet and not line.lstrip().startswith("<!--"):
            text = normalise(bullet.group(1))
            if len(text) >= 3:
                out.append(Said(text, [f"{rel}#L{n}"], topic, None, None, origin="memory-md"))
    return out


def context(ws: Workspace, today: date, days: int) -> list[str]:
    """What else the workspace says, read only to tell names from sentence case
    (:func:`memoryd.wiki.entities.lexicon`): ``USER.md`` and the diary days of the last
    ``days``. A project that opens every fact extracted about it ("Orion deploys ...")
    is still named mid-sentence in the conversations the facts came from."""
    paths = [ws.root / "USER.md"]
    since = today - timedelta(days=days)
    for name in ws.fs.names(ws.memory_dir, ".md"):
        day = file_date(name)
        if day is not None and since <= day <= today:
            paths.append(ws.memory_dir / name)
    out = []
    for path in paths:
        try:
            _, text = read_markdown(path, ws.settings.max_file_bytes, ws.fs)
        except SkippedFile:
            continue
        out.append(text)
    return out


def load_edits(ws: Workspace, *, strict: bool = False) -> list[dict[str, Any]]:
    """The journal of applied edits. A damaged one compiles as empty (lint reports it);
    ``strict`` (before appending to it) refuses it instead, so nothing in it is lost."""
    path = ws.root / WIKI_DIR / STATE_DIR / EDITS_FILE
    try:
        data = json.loads(ws.fs.read_text(path))
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        if strict:
            raise InvalidInputError(
                f"wiki/{STATE_DIR}/{EDITS_FILE} cannot be read ({exc})",
                "repair the JSON (memoryd wiki lint points at it) or move the file away",
            ) from None
        return []
    return [e for e in data if isinstance(e, dict)] if isinstance(data, list) else []


def applied(edits: list[dict[str, Any]]) -> list[Said]:
    """The claims ``wiki apply`` added, each to the page it was put on."""
    out = []
    for e in edits:
        if e.get("op") == "add" and isinstance(e.get("text"), str):
            out.append(
                Said(
                    normalise(e["text"]),
                    [str(x) for x in e.get("evidence") or []],
                    str(e.get("page") or GENERAL),
                    e.get("valid_from"),
                    e.get("at"),
                    origin="applied",
                    confidence=float(e.get("confidence", 1.0)),
                )
            )
    return out


#: The note of a claim whose words a superseded fact said (no current fact says them).
OUTDATED = "the fact saying this was superseded by a newer one"
_RANK = {"current": 0, "stale": 1, "contested": 2, "superseded": 3}


def merge(said: Iterable[Said]) -> list[Said]:
    """One statement per text: the evidence of repeats joined, the liveliest status kept
    (a text a fact has again after an update is current, not superseded).

    A ``MEMORY.md`` line that says, word for word, what a fact said before the store
    superseded it (and no current fact says) is stale: a newer value is known."""
    by_key: dict[str, Said] = {}
    facts_now: dict[str, bool] = {}  # key -> a current fact says it
    replaced: dict[str, Said] = {}  # key -> a superseded fact that said it
    for s in said:
        key = s.text.casefold()
        if s.origin == "fact":
            facts_now[key] = facts_now.get(key, False) or s.status == "current"
            if s.status == "superseded":
                replaced.setdefault(key, s)
        if key not in by_key:
            by_key[key] = s
            continue
        kept = by_key[key]
        if _RANK[s.status] < _RANK[kept.status]:
            kept.status, kept.valid_until, kept.note = s.status, s.valid_until, s.note
        kept.evidence = list(dict.fromkeys([*kept.evidence, *s.evidence]))
        kept.confirmed = max(filter(None, [kept.confirmed, s.confirmed]), default=None)
        kept.valid_from = min(filter(None, [kept.valid_from, s.valid_from]), default=None)
        kept.names = list(dict.fromkeys([*kept.names, *s.names]))
        if kept.origin != s.origin and s.origin == "fact":
            kept.topic, kept.origin = s.topic, s.origin
    for key, old in replaced.items():
        kept = by_key[key]
        if not facts_now[key] and kept.status == "current":
            kept.status, kept.valid_until = "stale", old.valid_until
            kept.note = OUTDATED
    return list(by_key.values())
