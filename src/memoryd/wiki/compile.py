"""Compile an agent's durable memory into the wiki vault (``<workspace>/wiki/``).

Input (gathered by :mod:`memoryd.wiki.sources`): the agent's long-term facts,
its user's shared pool, what facts said before they were updated or replaced,
the bullets of ``MEMORY.md``, the edits applied with
:func:`memoryd.wiki.ops.apply`, and the notes people wrote on pages.

Output, a pure function of that input and today's date (so a rebuild of an
unchanged store and workspace changes no byte):

* one page per entity named in at least ``wiki.min_mentions`` statements (a
  capitalised name such as "Ana Ruiz" or "Postgres", or the ``person`` a fact
  is about; names differing only in case are one entity), and one topic page
  per category or ``MEMORY.md`` section for the statements that name none;
* on each page, its claims, each with its evidence, status, validity,
  confidence and when a source last confirmed it; superseded claims apart;
  then the notes line, below which a person's text is kept as it is;
* ``_dashboards/contradictions.md``, ``stale.md``, ``orphans.md`` and ``index.md``;
* ``.state/claims.json``: the same claims, machine-readable, for search, get,
  lint and apply.

Statuses: ``superseded`` (a fact's text before an update or its replacement; an
applied retirement), ``stale`` (not confirmed for ``wiki.stale_days``; applied),
``contested`` (two current claims of a page that say different values about
the same thing: texts at least ``wiki.contradiction_similarity`` alike whose
numbers or negation differ), else ``current``. ``MEMORY.md`` lines carry no
date: they are what the agent holds true now, so they never go stale.

memoryd owns the generated part of the pages it writes (they carry
:data:`~memoryd.wiki.render.MARKER`). A Markdown file in ``wiki/`` without it
is a person's and is never touched, unless a compiled page takes its name:
then it is kept whole below that page's notes line, and given back as it was
when nothing compiles to the page any more. The vault is not indexed for
search: its claims are the facts themselves, searchable already.
"""

from __future__ import annotations

import fcntl
import os
import re
import threading
from collections import Counter, defaultdict
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from memoryd.core import Memory
from memoryd.errors import MemorydError, PermissionDeniedError
from memoryd.wiki.model import (
    RESERVED_TITLES,
    Claim,
    Page,
    claim_id,
    page_claim_id,
    page_title,
)
from memoryd.wiki.render import MARKER, STATE_DIR, notes_of, render
from memoryd.wiki.sources import (
    Said,
    applied,
    entity_names,
    facts,
    load_edits,
    memory_md,
    merge,
)
from memoryd.workspace.layout import WIKI_DIR, Workspace
from memoryd.workspace.safefs import WorkspaceFS

LOCK_FILE = "lock"
_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")
_NEGATION = re.compile(r"\b(?:not|never|no longer|no|none|n't)\b", re.IGNORECASE)
LINK = re.compile(r"\[\[([^\]|#]+)(?:[#|][^\]]*)?\]\]")
_RANK = {"current": 0, "stale": 1, "contested": 2, "superseded": 3}
_held = threading.local()


def wiki_dir(ws: Workspace) -> Path:
    return ws.root / WIKI_DIR


@dataclass
class CompileReport:
    agent_id: str
    pages: int = 0
    claims: int = 0
    written: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0
    contested: int = 0
    stale: int = 0
    adopted: list[str] = field(default_factory=list)  # people's pages now below a notes line
    released: list[str] = field(default_factory=list)  # notes given back as a person's page

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@contextmanager
def vault_lock(ws: Workspace) -> Iterator[None]:
    """Hold the vault for one compile or edit: an exclusive ``flock`` on
    ``wiki/.state/lock``, so a nightly compile and an ``apply`` over HTTP (threads or
    processes) never interleave, and no journalled edit is lost. Re-entrant per thread."""
    root = wiki_dir(ws)
    if root.is_symlink():
        raise PermissionDeniedError(
            f"{root} is a symlink; memoryd writes the wiki only as a real folder",
            "replace the symlink with a folder",
        )
    path = root / STATE_DIR / LOCK_FILE
    held: set[str] = getattr(_held, "paths", set())
    _held.paths = held
    if str(path) in held:
        yield
        return
    fd = ws.fs.open_append(path)  # created in the checked wiki/.state/, never through a symlink
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        held.add(str(path))
        try:
            yield
        finally:
            held.discard(str(path))
    finally:
        os.close(fd)  # releases the lock


# -- assembling the pages -----------------------------------------------------------------------
def _entities(said: list[Said], min_mentions: int) -> dict[str, str]:
    """Case-folded name -> its spelling (the most used; then the first in sort order),
    for the names at least ``min_mentions`` statements mention."""
    mentions: dict[str, Counter[str]] = defaultdict(Counter)
    for s in said:
        for key, spelling in {n.casefold(): n for n in _names(s)}.items():
            mentions[key][spelling] += 1
    return {
        key: min(spellings, key=lambda n: (-spellings[n], n))
        for key, spellings in mentions.items()
        if sum(spellings.values()) >= min_mentions
    }


def _names(s: Said, known: Collection[str] = ()) -> list[str]:
    return list(dict.fromkeys([*s.names, *entity_names(s.text, known)]))


def _absorb(kept: Claim, other: Claim) -> None:
    """The same statement twice on one page (a fact and an applied claim saying it): one
    claim, with the evidence of both."""
    kept.evidence = list(dict.fromkeys([*kept.evidence, *other.evidence]))
    kept.confirmed = max(filter(None, [kept.confirmed, other.confirmed]), default=None)
    kept.valid_from = min(filter(None, [kept.valid_from, other.valid_from]), default=None)
    kept.confidence = max(kept.confidence, other.confidence)
    if _RANK[other.status] < _RANK[kept.status]:
        kept.status, kept.valid_until, kept.note = other.status, other.valid_until, other.note


def build(memory: Memory, ws: Workspace, today: date | None = None) -> dict[str, Page]:
    """Title -> page, from the store, MEMORY.md and the applied edits (nothing written)."""
    cfg = memory.settings.wiki
    today = today or memory.clock().date()
    edits = load_edits(ws)
    said = [*merge([*facts(memory, ws), *memory_md(ws)]), *applied(edits)]
    entities = _entities(said, cfg.min_mentions)
    pages: dict[str, Page] = {}  # by case-folded title: one file on every file system
    by_id: dict[tuple[str, str], Claim] = {}

    def page(title: str, kind: str) -> Page:
        title = page_title(title, strict=False)
        if title.casefold() in RESERVED_TITLES:  # the vault's own files
            title = f"{title} ({kind})"
        return pages.setdefault(title.casefold(), Page(title, kind))

    entity_title = {key: page(name, "entity").title for key, name in sorted(entities.items())}
    for s in said:
        names = _names(s, entity_title)
        where = [entity_title[n.casefold()] for n in names if n.casefold() in entity_title]
        if s.origin == "applied":  # an applied claim goes where it was put
            where = [s.topic]
        targets = [page(t, "entity") for t in dict.fromkeys(where)] or [page(s.topic, "topic")]
        for p in targets:
            c = Claim(
                id=claim_id(s.text),
                page=p.title,
                text=s.text,
                evidence=list(s.evidence),
                status=s.status,
                valid_from=s.valid_from,
                valid_until=s.valid_until,
                confirmed=s.confirmed,
                confidence=s.confidence,
                origin=s.origin,
                note=s.note,
            )
            if (p.title, c.id) in by_id:
                _absorb(by_id[(p.title, c.id)], c)
                continue
            by_id[(p.title, c.id)] = c
            p.claims.append(c)
    retired = {
        str(e["claim"]): e
        for e in edits
        if e.get("op") == "retire" and isinstance(e.get("claim"), str)
    }
    stale_before = (today - timedelta(days=cfg.stale_days)).isoformat()
    for p in pages.values():
        for c in p.claims:
            legacy = page_claim_id(p.title, c.text)
            if c.id in retired or legacy in retired:
                e = retired.get(c.id) or retired[legacy]
                c.status, c.note = str(e.get("status", "superseded")), e.get("reason")
                c.valid_until = c.valid_until or e.get("at")
            elif c.status == "current" and c.confirmed and c.confirmed < stale_before:
                c.status = "stale"
        _mark_contradictions(memory, p)
        p.claims.sort(key=lambda c: (c.status == "superseded", c.valid_from or "", c.text))
        named = {n.casefold() for c in p.claims for n in entity_names(c.text, entity_title)}
        p.links = sorted(
            {entity_title[k] for k in named if k in entity_title} - {p.title},
            key=lambda t: (t.casefold(), t),
        )
    return {p.title: p for p in sorted(pages.values(), key=lambda p: (p.title.casefold(), p.title))}


def _mark_contradictions(memory: Memory, p: Page) -> None:
    live = [c for c in p.claims if c.status == "current"]
    if len(live) < 2:
        return
    vecs = memory.embed_texts([c.text for c in live])  # cached by text: a rebuild is cheap
    sims = vecs @ vecs.T
    limit = memory.settings.wiki.contradiction_similarity
    for i, j in zip(*np.nonzero(np.triu(sims, 1) >= limit), strict=True):
        a, b = live[int(i)], live[int(j)]
        numbers_differ = set(_NUMBER.findall(a.text)) != set(_NUMBER.findall(b.text))
        negation_differs = bool(_NEGATION.search(a.text)) != bool(_NEGATION.search(b.text))
        if numbers_differ or negation_differs:
            for c, other in ((a, b), (b, a)):
                c.status = "contested"
                c.note = f"contradicts {other.id}"


# -- writing ------------------------------------------------------------------------------------
def _carries_marker(data: bytes) -> bool:
    return MARKER.encode() in data[:2000]


def _own_pages(fs: WorkspaceFS, root: Path) -> Iterator[tuple[Path, bytes]]:
    """The ``*.md`` files of the vault that are real files in it (read through ``fs``: a page
    swapped for a symlink out while we read is skipped, never read)."""
    for name in fs.names(root, ".md"):
        path = root / name
        if path.is_symlink():
            continue
        try:
            yield path, fs.read_bytes(path)
        except (OSError, MemorydError):
            continue


def _people_text(
    fs: WorkspaceFS, root: Path, pages: dict[str, Page]
) -> tuple[dict[str, bytes], dict[str, bytes]]:
    """(notes to keep on each compiled page, pages to give back to people), by file name."""
    notes: dict[str, bytes] = {}
    released: dict[str, bytes] = {}
    wanted = {p.file_name for p in pages.values()}
    for path, data in _own_pages(fs, root):
        if path.name == "index.md":
            continue
        kept = notes_of(data) if _carries_marker(data) else data  # a person's page: all of it
        if path.name in wanted:
            notes[path.name] = kept or b""
        elif kept and kept.strip() and _carries_marker(data):
            released[path.name] = kept
    return notes, released


def links_by_hand(
    fs: WorkspaceFS, notes: dict[str, bytes], root: Path, wanted: set[str]
) -> set[str]:
    """Case-folded targets of the ``[[links]]`` people wrote (notes and their own pages)."""
    texts = [n.decode("utf-8", errors="replace") for n in notes.values()]
    for path, data in _own_pages(fs, root):
        if path.name not in wanted and not _carries_marker(data):
            texts.append(data.decode("utf-8", errors="replace"))
    return {" ".join(m.group(1).split()).casefold() for t in texts for m in LINK.finditer(t)}


def compile_wiki(
    memory: Memory, ws: Workspace, *, dry_run: bool = False, today: date | None = None
) -> CompileReport:
    """Bring ``wiki/`` in line with the agent's memory; only changed files are written."""
    if dry_run:
        return _compile(memory, ws, dry_run=True, today=today)
    with vault_lock(ws):
        return _compile(memory, ws, dry_run=False, today=today)


def _compile(memory: Memory, ws: Workspace, *, dry_run: bool, today: date | None) -> CompileReport:
    pages = build(memory, ws, today)
    root = wiki_dir(ws)
    if root.is_symlink():
        raise PermissionDeniedError(
            f"{root} is a symlink; memoryd writes the wiki only as a real folder",
            "replace the symlink with a folder",
        )
    notes, released = _people_text(ws.fs, root, pages)
    wanted = {p.file_name for p in pages.values()}
    files = render(pages, notes, links_by_hand(ws.fs, notes, root, wanted))
    report = CompileReport(ws.agent_id, pages=len(pages))
    report.claims = sum(len(p.claims) for p in pages.values())
    report.contested = sum(c.status == "contested" for p in pages.values() for c in p.claims)
    report.stale = sum(c.status == "stale" for p in pages.values() for c in p.claims)
    report.adopted = sorted(
        name
        for name in notes
        if not _carries_marker(ws.fs.read_if_exists(root / name) or MARKER.encode())
    )
    report.released = sorted(released)
    done = ws.fs.sync_folder(root, {**files, **released}, MARKER, dry_run=dry_run)
    report.written, report.removed, report.unchanged = done.written, done.removed, done.unchanged
    return report
