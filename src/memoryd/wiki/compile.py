"""Compile an agent's durable memory into the wiki vault (``<workspace>/wiki/``).

Input (gathered by :mod:`memoryd.wiki.sources`): the agent's long-term facts,
its user's shared pool, what facts said before they were updated or replaced,
the bullets of ``MEMORY.md``, the edits applied with
:func:`memoryd.wiki.ops.apply`, and the notes people wrote on pages.

Output, a pure function of that input and today's date (so a rebuild of an
unchanged store and workspace changes no byte):

* one page per entity named in at least ``wiki.min_mentions`` statements (a
  name found by :mod:`memoryd.wiki.entities`, never a day, a language or a word
  capitalised only because it opens a sentence; or the ``person`` a fact is
  about; the spellings of one entity, "Postgres" / "PostgreSQL" / "pg", are one
  page), and one topic page per category or ``MEMORY.md`` section for the
  statements that name none;
* on each page, its claims, each with its evidence, status, validity,
  confidence and when a source last confirmed it; superseded claims apart;
  then the notes line, below which a person's text is kept as it is;
* ``_dashboards/contradictions.md``, ``stale.md``, ``orphans.md`` and ``index.md``;
* ``.state/claims.json``: the same claims, machine-readable, for search, get,
  lint and apply.

Statuses: ``superseded`` (a fact's text before an update or its replacement; an
applied retirement), ``stale`` (not confirmed for ``wiki.stale_days``; applied; a
``MEMORY.md`` line or applied claim that says what a superseded fact said; a claim
that a claim dated later says otherwise of, by the test promotion re-checks with),
``contested`` (two current claims, on any pages, at least
``wiki.contradiction_similarity`` alike, about the same subject and attribute with
different values by the fact store's own offline test, :mod:`~memoryd.wiki.conflicts`), else
``current``. ``MEMORY.md`` lines carry no date: they are what the agent holds true
now, so time alone never makes them stale.

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
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from memoryd.core import Memory
from memoryd.errors import MemorydError, PermissionDeniedError
from memoryd.wiki import conflicts
from memoryd.wiki.entities import Lexicon, fold, lexicon, merge_prefixes
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
    OUTDATED,
    Said,
    applied,
    context,
    facts,
    load_edits,
    memory_md,
    merge,
)
from memoryd.workspace.layout import WIKI_DIR, Workspace
from memoryd.workspace.safefs import WorkspaceFS

LOCK_FILE = "lock"
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
def _lexicon(memory: Memory, ws: Workspace, said: list[Said], today: date) -> Lexicon:
    cfg = memory.settings.wiki
    texts = [*(s.text for s in said), *context(ws, today, cfg.stale_days)]
    return lexicon(texts, cfg.entities, cfg.aliases)


def _entities(said: list[Said], lex: Lexicon, min_mentions: int) -> dict[str, str]:
    """Entity key (:meth:`Lexicon.key`) -> its spelling (the most used of the key's own;
    then the first in sort order), for the names at least ``min_mentions`` statements
    mention. Spellings that the first-letters rule joins are merged first."""
    spellings: dict[str, set[str]] = defaultdict(set)
    named = [_names(s, lex) for s in said]
    for names in named:
        for n in names:
            spellings[lex.key(n)].add(n)
    merge_prefixes(lex, spellings)
    mentions: dict[str, Counter[str]] = defaultdict(Counter)
    for names in named:
        for key, spelling in {lex.key(n): n for n in reversed(names)}.items():
            mentions[key][spelling] += 1
    out = {}
    for key, counts in mentions.items():
        if sum(counts.values()) < min_mentions:
            continue
        own = [n for n in counts if fold(n) == key] or list(counts)
        out[key] = min(own, key=lambda n: (-counts[n], n))
    return out


def _names(s: Said, lex: Lexicon, known: Collection[str] = ()) -> list[str]:
    return list(dict.fromkeys([*s.names, *lex.names(s.text, known)]))


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
    lex = _lexicon(memory, ws, said, today)
    entities = _entities(said, lex, cfg.min_mentions)
    pages: dict[str, Page] = {}  # by case-folded title: one file on every file system
    by_id: dict[tuple[str, str], Claim] = {}

    def page(title: str, kind: str) -> Page:
        title = page_title(title, strict=False)
        if title.casefold() in RESERVED_TITLES:  # the vault's own files
            title = f"{title} ({kind})"
        return pages.setdefault(title.casefold(), Page(title, kind))

    entity_title = {key: page(name, "entity").title for key, name in sorted(entities.items())}
    for s in said:
        keys = [lex.key(n) for n in _names(s, lex, entity_title)]
        where = [entity_title[k] for k in keys if k in entity_title]
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
    _stale_by_supersession(memory, pages)
    _weigh(memory, pages)
    for p in pages.values():
        p.claims.sort(key=lambda c: (c.status == "superseded", c.valid_from or "", c.text))
        named = {lex.key(n) for c in p.claims for n in lex.names(c.text, entity_title)}
        p.links = sorted(
            {entity_title[k] for k in named if k in entity_title} - {p.title},
            key=lambda t: (t.casefold(), t),
        )
    return {p.title: p for p in sorted(pages.values(), key=lambda p: (p.title.casefold(), p.title))}


def _unique(pages: dict[str, Page], keep: Callable[[Claim], bool]) -> dict[str, list[Claim]]:
    """Claim id -> its copies on every page, for the claims ``keep`` picks."""
    out: dict[str, list[Claim]] = defaultdict(list)
    for p in pages.values():
        for c in p.claims:
            if keep(c):
                out[c.id].append(c)
    return out


def _stale_by_supersession(memory: Memory, pages: dict[str, Page]) -> None:
    """A ``MEMORY.md`` line or applied claim that says what a superseded fact said (the
    same words, or a rewording with nothing new either way: :func:`conflicts.restates`)
    and no current fact says is stale: the fact store has since learned another value."""
    said = _unique(pages, lambda c: c.status == "current" and c.origin != "fact")
    gone = _unique(
        pages,
        lambda c: c.origin == "fact" and (c.status == "superseded" or c.note == OUTDATED),
    )
    if not said or not gone:
        return
    now = _unique(pages, lambda c: c.status == "current" and c.origin == "fact")
    limit = memory.settings.wiki.contradiction_similarity
    lines, old, held = sorted(said), sorted(gone), sorted(now)
    line_vecs = memory.embed_texts([said[i][0].text for i in lines])

    def restating(group: dict[str, list[Claim]], keys: list[str]) -> dict[int, int]:
        if not keys:
            return {}
        texts = [group[k][0].text for k in keys]
        return conflicts.restated(
            [said[i][0].text for i in lines], line_vecs, texts, memory.embed_texts(texts), limit
        )

    still_true = restating(now, held)
    for n, m in restating(gone, old).items():
        if n in still_true:
            continue
        was = gone[old[m]][0]
        for c in said[lines[n]]:
            c.status, c.valid_until = "stale", was.valid_until
            c.note = f"the fact saying this ({was.id}) was superseded"


def _weigh(memory: Memory, pages: dict[str, Page]) -> None:
    """Current claims, on any pages, against each other (:func:`conflicts.weigh`): one a
    newer claim says otherwise of is stale; two that contradict each other are contested."""
    live = _unique(pages, lambda c: c.status == "current")
    ids = sorted(live)
    if len(ids) < 2:
        return
    texts = [live[i][0].text for i in ids]
    vecs = memory.embed_texts(texts)  # cached by text
    limit = memory.settings.wiki.contradiction_similarity
    contested, outdated = conflicts.weigh(texts, [live[i][0].valid_from for i in ids], vecs, limit)
    for n, newer in outdated.items():
        by = live[ids[newer]][0]
        for c in live[ids[n]]:
            c.status, c.valid_until = "stale", by.valid_from
            c.note = f"a newer claim says otherwise: {by.id}"
    for n, others in contested.items():
        for c in live[ids[n]]:
            c.status = "contested"
            c.note = "contradicts " + ", ".join(sorted(ids[o] for o in others))


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
