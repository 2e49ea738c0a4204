"""What the faces call: ``search``, ``get``, ``apply`` and ``lint`` on a compiled vault.

They read ``wiki/.state/claims.json`` (what :mod:`memoryd.wiki.compile` wrote),
never the pages' prose. :func:`apply` is the only way to change a generated
page: a structured edit (add a claim with its evidence, or retire one), kept
in ``wiki/.state/edits.json`` so it survives every recompile, then compiled.
It is refused without evidence, or with evidence that does not resolve: a
``fact:<id>`` the agent cannot see, a file outside the workspace, lines past
its end.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from memoryd.atomic import replace_bytes
from memoryd.core import Memory
from memoryd.errors import InvalidInputError, MemorydError, NotFoundError
from memoryd.store.keywords import Analyzer
from memoryd.wiki.compile import (
    CLAIMS_FILE,
    DASHBOARDS,
    EDITS_FILE,
    STATE_DIR,
    CompileReport,
    compile_wiki,
    load_edits,
    wiki_dir,
)
from memoryd.wiki.model import RETIRED, Claim, normalise, page_title
from memoryd.workspace.files import safe_path
from memoryd.workspace.layout import Workspace

_EVIDENCE = re.compile(r"^(?P<path>[^#]+)#L(?P<start>\d+)(?:-L(?P<end>\d+))?$")
_LINK = re.compile(r"\[\[([^\]|#]+)(?:[#|][^\]]*)?\]\]")
MAX_EVIDENCE = 20
TITLE_WEIGHT = 0.25  # a query word found only in the page title
_analyzer = Analyzer()


def _state(memory: Memory, ws: Workspace) -> list[dict[str, Any]]:
    """The compiled claims; a vault never compiled is compiled first."""
    path = wiki_dir(ws) / STATE_DIR / CLAIMS_FILE
    if not path.exists():
        compile_wiki(memory, ws)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InvalidInputError(
            f"wiki/{STATE_DIR}/{CLAIMS_FILE} cannot be read ({exc})",
            "compile the wiki again: it rewrites the file",
        ) from None
    pages = data.get("pages") if isinstance(data, dict) else None
    return [p for p in pages or [] if isinstance(p, dict)]


def search(memory: Memory, ws: Workspace, query: str, limit: int = 10) -> list[dict[str, Any]]:
    """Claims (and page titles) sharing words with ``query``, best first (BM25-like idf
    weights over the vault's claims; superseded claims rank below the rest)."""
    if not isinstance(query, str) or not query.strip():
        raise InvalidInputError("the query is empty", "ask for a name or a topic")
    limit = max(1, min(int(limit), 100))
    pages = _state(memory, ws)
    docs: list[tuple[dict[str, Any], dict[str, Any], set[str], set[str]]] = []
    for p in pages:
        title_terms = set(_analyzer.document(str(p.get("title", ""))))
        for c in p.get("claims") or []:
            docs.append((p, c, set(_analyzer.document(str(c.get("text", "")))), title_terms))
    terms = _analyzer.query(query)
    df = {t: sum(t in d or t in title for _, _, d, title in docs) for t in terms}
    n = len(docs)
    hits = []
    for p, c, words, title in docs:
        idf = {t: math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in terms}
        # the claim's own words count whole; its page's title only a little
        score = sum(
            idf[t] if t in words else TITLE_WEIGHT * idf[t] for t in terms if t in words | title
        )
        if score <= 0:
            continue
        if c.get("status") == "superseded":
            score *= 0.5
        hits.append((-score, str(p.get("title")), str(c.get("id")), p, c))
    hits.sort(key=lambda h: h[:3])
    return [
        {"page": p.get("title"), "file": f"wiki/{p.get('file')}", "score": round(-s, 4), **c}
        for s, _, _, p, c in hits[:limit]
    ]


def get(memory: Memory, ws: Workspace, name: str) -> dict[str, Any]:
    """A page: its claims (structured) and its Markdown."""
    if not isinstance(name, str):
        raise InvalidInputError("a page name must be text", 'e.g. "Ana Ruiz"')
    title = page_title(name.removesuffix(".md"))
    for p in _state(memory, ws):
        if str(p.get("title", "")).casefold() == title.casefold():
            path = wiki_dir(ws) / str(p["file"])
            text = path.read_text(encoding="utf-8") if path.is_file() else ""
            return {**p, "path": f"wiki/{p['file']}", "markdown": text}
    raise NotFoundError(
        f"the wiki of agent {ws.agent_id!r} has no page {title!r}",
        "search it first: memoryd wiki search QUERY",
    )


@dataclass
class Edit:
    """``op`` "add": ``page``, ``text``, ``evidence`` (and ``confidence``, ``valid_from``);
    ``op`` "retire": ``claim`` (its id), ``status`` (superseded or stale), ``reason``."""

    op: str
    page: str | None = None
    text: str | None = None
    evidence: list[str] = field(default_factory=list)
    confidence: float = 1.0
    valid_from: str | None = None
    claim: str | None = None
    status: str = "superseded"
    reason: str | None = None


def check_evidence(memory: Memory, ws: Workspace, evidence: list[str]) -> list[str]:
    """``evidence`` as given, once each, after checking every item resolves."""
    if not isinstance(evidence, list) or not evidence:
        raise InvalidInputError(
            "a claim needs evidence",
            'cite a memory ("fact:<id>") or lines of a workspace file ("memory/2026-03-01.md#L4")',
        )
    if len(evidence) > MAX_EVIDENCE:
        raise InvalidInputError(f"at most {MAX_EVIDENCE} evidence items", "cite the best ones")
    out = []
    for item in evidence:
        if not isinstance(item, str) or not item.strip():
            raise InvalidInputError("an evidence item is empty", "remove it")
        item = item.strip()
        if item.startswith("fact:"):
            record = memory.store.get(item[5:])
            if record is None or record.user_id != ws.settings.user_id:
                raise InvalidInputError(
                    f"evidence {item!r}: no such memory of this agent's user",
                    "cite the id of a memory (memoryd search ... --json shows ids)",
                )
        else:
            m = _EVIDENCE.match(item)
            if not m:
                raise InvalidInputError(
                    f"evidence {item!r} is neither fact:<id> nor path#Lstart[-Lend]",
                    'e.g. "memory/2026-03-01.md#L12-L14"',
                )
            path = safe_path(ws, m["path"])  # refuses traversal and files outside the workspace
            start, end = int(m["start"]), int(m["end"] or m["start"])
            try:
                total = len(path.read_text(encoding="utf-8", errors="replace").splitlines())
            except OSError:
                raise InvalidInputError(
                    f"evidence {item!r}: {m['path']} does not exist", "cite a file that does"
                ) from None
            if not 1 <= start <= end <= total:
                raise InvalidInputError(
                    f"evidence {item!r}: lines {start}-{end} are not in {m['path']} "
                    f"({total} lines)",
                    "cite lines the file has",
                )
        out.append(item)
    return list(dict.fromkeys(out))


def apply(memory: Memory, ws: Workspace, edit: Edit) -> tuple[Claim | None, CompileReport]:
    """Record ``edit`` in the journal and recompile; returns the claim it made or retired."""
    today = memory.clock().date().isoformat()
    record: dict[str, Any]
    if edit.op == "add":
        text = normalise(edit.text or "")
        limit = memory.settings.wiki.max_edit_chars
        if not text:
            raise InvalidInputError("the claim's text is empty", "say what is true")
        if len(text) > limit:
            raise InvalidInputError(
                f"the claim is {len(text)} characters (at most {limit})", "state one thing"
            )
        if not 0.0 <= float(edit.confidence) <= 1.0:
            raise InvalidInputError("confidence must be between 0 and 1", "e.g. 0.8")
        page = page_title(edit.page or "")
        record = {
            "op": "add",
            "page": page,
            "text": text,
            "evidence": check_evidence(memory, ws, edit.evidence),
            "confidence": float(edit.confidence),
            "valid_from": edit.valid_from or today,
            "at": today,
        }
    elif edit.op == "retire":
        if edit.status not in RETIRED:
            raise InvalidInputError(
                f"status {edit.status!r} cannot be applied", f"use one of {', '.join(RETIRED)}"
            )
        known = {str(c.get("id")) for p in _state(memory, ws) for c in p.get("claims") or []}
        if not edit.claim or edit.claim not in known:
            raise NotFoundError(
                f"no claim {edit.claim!r} in the wiki of agent {ws.agent_id!r}",
                "find its id with memoryd wiki search or get",
            )
        record = {
            "op": "retire",
            "claim": edit.claim,
            "status": edit.status,
            "reason": (edit.reason or "").strip()[:500] or None,
            "at": today,
        }
    else:
        raise InvalidInputError(f"unknown edit {edit.op!r}", "use add or retire")
    journal = wiki_dir(ws) / STATE_DIR / EDITS_FILE
    edits = [*load_edits(ws), record]
    journal.parent.mkdir(parents=True, exist_ok=True)
    replace_bytes(journal, (json.dumps(edits, ensure_ascii=False, indent=1) + "\n").encode())
    report = compile_wiki(memory, ws)
    claims = [Claim.from_json(c) for p in _state(memory, ws) for c in p.get("claims") or []]
    if record["op"] == "retire":
        return next((c for c in claims if c.id == record["claim"]), None), report
    wanted = (record["page"], record["text"].casefold())
    return next((c for c in claims if (c.page, c.text.casefold()) == wanted), None), report


def lint(memory: Memory, ws: Workspace) -> list[dict[str, str]]:
    """Problems, each ``{"kind", "where", "message"}``: broken links, claims without or
    with unresolvable evidence, contradictions, stale pages, orphan pages (of the vault as
    compiled last; a vault never compiled is compiled first)."""
    pages = _state(memory, ws)
    titles = {str(p.get("title", "")).casefold() for p in pages}
    problems: list[dict[str, str]] = []

    def say(kind: str, where: str, message: str) -> None:
        problems.append({"kind": kind, "where": where, "message": message})

    root = wiki_dir(ws)
    linked: set[str] = set()
    for path in sorted(root.rglob("*.md")):
        rel = path.relative_to(root).as_posix()
        if any(part.startswith(".") for part in path.relative_to(root).parts):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for m in _LINK.finditer(text):
            target = " ".join(m.group(1).split()).casefold()
            if rel != "index.md" and not rel.startswith(f"{DASHBOARDS}/"):  # navigation only
                linked.add(target)
            if target not in titles and not (root / f"{m.group(1).strip()}.md").is_file():
                say("broken-link", f"wiki/{rel}", f"[[{m.group(1)}]] leads to no page")
    for p in pages:
        title = str(p.get("title"))
        live = [c for c in p.get("claims") or [] if c.get("status") != "superseded"]
        for c in p.get("claims") or []:
            where = f"wiki/{p.get('file')}#^{c.get('id')}"
            if not c.get("evidence"):
                say("no-evidence", where, f"{c.get('text')!r} cites nothing")
                continue
            try:
                check_evidence(memory, ws, list(c["evidence"]))
            except MemorydError as exc:
                say("bad-evidence", where, exc.message)
            if c.get("status") == "contested":
                say("contradiction", where, f"{c.get('text')!r}: {c.get('note')}")
        if live and all(c.get("status") == "stale" for c in live):
            say("stale-page", f"wiki/{p.get('file')}", f"every claim of {title!r} is stale")
        if p.get("kind") == "entity" and title.casefold() not in linked:
            say("orphan", f"wiki/{p.get('file')}", f"no page links to [[{title}]]")
    if (root / STATE_DIR / EDITS_FILE).is_file() and not load_edits(ws):
        try:
            json.loads((root / STATE_DIR / EDITS_FILE).read_text(encoding="utf-8"))
        except ValueError:
            say("damaged-journal", f"wiki/{STATE_DIR}/{EDITS_FILE}", "not valid JSON")
    return problems
