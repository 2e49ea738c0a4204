"""What the faces call: ``search``, ``get`` and ``apply`` on a compiled vault (``lint``
lives in :mod:`memoryd.wiki.lint`).

They read ``wiki/.state/claims.json`` (what :mod:`memoryd.wiki.compile` wrote),
never the pages' prose. :func:`apply` is the only way to change the generated
part of a page: a structured edit (add a claim with its evidence, or retire
one), kept in ``wiki/.state/edits.json`` so it survives every recompile, then
compiled, both under the vault's lock. It is refused without evidence, or with
evidence that does not resolve (see :mod:`memoryd.wiki.evidence`).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from memoryd.core import Memory
from memoryd.errors import InvalidInputError, NotFoundError
from memoryd.store.keywords import Analyzer
from memoryd.validate import check_text
from memoryd.wiki.compile import CompileReport, compile_wiki, vault_lock, wiki_dir
from memoryd.wiki.evidence import Resolver
from memoryd.wiki.model import RETIRED, Claim, claim_id, normalise, page_title
from memoryd.wiki.render import CLAIMS_FILE, STATE_DIR
from memoryd.wiki.sources import EDITS_FILE, load_edits
from memoryd.workspace.layout import Workspace

TITLE_WEIGHT = 0.25  # a query word found only in the page title
# how much a claim's status lowers its rank: what was true once, or is not confirmed lately
STATUS_WEIGHT = {"superseded": 0.5, "stale": 0.75}
_CLAIM_ID = re.compile(r"^c[0-9a-f]{10}$")
_analyzer = Analyzer()


def state(memory: Memory, ws: Workspace) -> list[dict[str, Any]]:
    """The compiled pages and claims; a vault never compiled is compiled first."""
    path = wiki_dir(ws) / STATE_DIR / CLAIMS_FILE
    if not path.exists():
        compile_wiki(memory, ws)
    try:
        data = json.loads(ws.fs.read_text(path))
    except (OSError, ValueError) as exc:
        raise InvalidInputError(
            f"wiki/{STATE_DIR}/{CLAIMS_FILE} cannot be read ({exc})",
            "compile the wiki again (memoryd wiki compile): it rewrites the file",
        ) from None
    pages = data.get("pages") if isinstance(data, dict) else None
    return [p for p in pages or [] if isinstance(p, dict)]


def search(memory: Memory, ws: Workspace, query: str, limit: int = 10) -> list[dict[str, Any]]:
    """Claims (and page titles) sharing words with ``query``, best first: BM25-like idf
    weights over the vault's claims; superseded and stale claims rank lower."""
    if not isinstance(query, str) or not query.strip():
        raise InvalidInputError("the query is empty", "ask for a name or a topic")
    limit = max(1, min(int(limit), 100))
    docs: list[tuple[dict[str, Any], dict[str, Any], set[str], set[str]]] = []
    for p in state(memory, ws):
        title_terms = set(_analyzer.document(str(p.get("title", ""))))
        for c in p.get("claims") or []:
            docs.append((p, c, set(_analyzer.document(str(c.get("text", "")))), title_terms))
    terms = _analyzer.query(query)
    n = len(docs)
    df = {t: sum(t in words or t in title for _, _, words, title in docs) for t in terms}
    idf = {t: math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in terms}
    hits = []
    for p, c, words, title in docs:
        # the claim's own words count whole; its page's title only a little
        score = sum(
            idf[t] if t in words else TITLE_WEIGHT * idf[t] for t in terms if t in words | title
        )
        if score <= 0:
            continue
        score *= STATUS_WEIGHT.get(str(c.get("status")), 1.0)
        hits.append((-score, str(p.get("title")), str(c.get("id")), p, c))
    hits.sort(key=lambda h: h[:3])
    return [
        {"page": p.get("title"), "file": f"wiki/{p.get('file')}", "score": round(-s, 4), **c}
        for s, _, _, p, c in hits[:limit]
    ]


def page_name(name: object) -> str:
    """The page title ``name`` asks for ("" for a claim id); a path-like name is a 422
    before anything is read."""
    if not isinstance(name, str):
        raise InvalidInputError("a page name must be text", 'e.g. "Ana Ruiz"')
    wanted = name.strip()
    return "" if _CLAIM_ID.match(wanted) else page_title(wanted.removesuffix(".md"))


def get(memory: Memory, ws: Workspace, name: str) -> dict[str, Any]:
    """A page by its title (any case), or the page holding a claim id (``c…``): its
    claims (structured) and its Markdown; ``claim`` is set when asked by claim id."""
    title = page_name(name)
    wanted = name.strip()
    pages = state(memory, ws)
    if not title:
        for p in pages:
            for c in p.get("claims") or []:
                if c.get("id") == wanted:
                    return {**_page(ws, p), "claim": c}
        title = page_title(wanted)
    for p in pages:
        if str(p.get("title", "")).casefold() == title.casefold():
            return _page(ws, p)
    raise NotFoundError(
        f"the wiki of agent {ws.agent_id!r} has no page {title!r}",
        "search it first: memoryd wiki search QUERY",
    )


def _page(ws: Workspace, p: dict[str, Any]) -> dict[str, Any]:
    name = str(p.get("file", ""))
    if not name.endswith(".md") or name != PurePosixPath(name).name or name.startswith("."):
        raise InvalidInputError(
            f"wiki/{STATE_DIR}/{CLAIMS_FILE} names {name[:80]!r} as a page file",
            "compile the wiki again (memoryd wiki compile): it rewrites the file",
        )
    path = wiki_dir(ws) / name  # a page symlinked out of the workspace is refused here
    text = ws.fs.read_if_exists(path).decode("utf-8", "replace")
    return {**p, "path": f"wiki/{name}", "markdown": text}


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

    @classmethod
    def of(
        cls,
        op: str,
        *,
        page: str | None = None,
        text: str | None = None,
        evidence: list[str] | None = None,
        confidence: float = 1.0,
        claim: str | None = None,
        status: str = "superseded",
        reason: str | None = None,
    ) -> Edit:
        """The edit a face was asked for (the CLI, ``/v1/wiki/apply``, MCP's ``wiki_apply``):
        a retirement keeps only the claim, status and reason; an addition only the rest."""
        if op == "retire":
            return cls(op="retire", claim=claim, status=status, reason=reason)
        return cls(
            op="add", page=page, text=text, evidence=list(evidence or []), confidence=confidence
        )


def check_evidence(memory: Memory, ws: Workspace, evidence: list[str]) -> list[str]:
    """``evidence`` as given, once each, after checking every item resolves."""
    return Resolver(memory, ws).check(evidence)


def _add_record(memory: Memory, ws: Workspace, edit: Edit, today: str) -> dict[str, Any]:
    if not isinstance(edit.text, str) or not edit.text.strip():
        raise InvalidInputError("the claim's text is empty", "say what is true")
    text = normalise(check_text(edit.text, memory.settings.limits, "the claim's text"))
    limit = memory.settings.wiki.max_edit_chars
    if len(text) > limit:
        raise InvalidInputError(
            f"the claim is {len(text)} characters (at most {limit})", "state one thing"
        )
    if not 0.0 <= float(edit.confidence) <= 1.0:
        raise InvalidInputError("confidence must be between 0 and 1", "e.g. 0.8")
    valid_from = edit.valid_from or today
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", str(valid_from)):
        raise InvalidInputError(f"valid_from {valid_from!r} is not a date", "e.g. 2026-03-01")
    page = page_title(edit.page or "")
    for p in state(memory, ws):  # an existing page in any case is that page
        if str(p.get("title", "")).casefold() == page.casefold():
            page = str(p["title"])
    resolver = Resolver(memory, ws)
    evidence = resolver.check(edit.evidence)
    lines = {e: d for e in evidence if (d := resolver.digest(e)) is not None}
    return {
        "op": "add",
        "page": page,
        "text": text,
        "evidence": evidence,
        "lines": lines,  # what the cited lines said, for lint to notice when they change
        "confidence": float(edit.confidence),
        "valid_from": valid_from,
        "at": today,
    }


def _retire_record(memory: Memory, ws: Workspace, edit: Edit, today: str) -> dict[str, Any]:
    if edit.status not in RETIRED:
        raise InvalidInputError(
            f"status {edit.status!r} cannot be applied", f"use one of {', '.join(RETIRED)}"
        )
    known = {str(c.get("id")) for p in state(memory, ws) for c in p.get("claims") or []}
    if not edit.claim or edit.claim not in known:
        raise NotFoundError(
            f"no claim {str(edit.claim)[:40]!r} in the wiki of agent {ws.agent_id!r}",
            "find its id with memoryd wiki search or get",
        )
    return {
        "op": "retire",
        "claim": edit.claim,
        "status": edit.status,
        "reason": check_text(edit.reason, memory.settings.limits, "the reason")[:500]
        if edit.reason and edit.reason.strip()
        else None,
        "at": today,
    }


def apply(memory: Memory, ws: Workspace, edit: Edit) -> tuple[Claim | None, CompileReport]:
    """Record ``edit`` in the journal and recompile; returns the claim it made or retired."""
    today = memory.clock().date().isoformat()
    if edit.op not in ("add", "retire"):
        raise InvalidInputError(f"unknown edit {str(edit.op)[:40]!r}", "use add or retire")
    with vault_lock(ws):  # the journal is read, extended and compiled as one step
        if edit.op == "add":
            record = _add_record(memory, ws, edit, today)
        else:
            record = _retire_record(memory, ws, edit, today)
        journal = wiki_dir(ws) / STATE_DIR / EDITS_FILE
        edits = [*load_edits(ws, strict=True), record]
        text = json.dumps(edits, ensure_ascii=False, indent=1) + "\n"
        ws.fs.replace_bytes(journal, text.encode("utf-8"))
        report = compile_wiki(memory, ws)
        claims = [Claim.from_json(c) for p in state(memory, ws) for c in p.get("claims") or []]
    if record["op"] == "retire":
        return next((c for c in claims if c.id == record["claim"]), None), report
    page, said = record["page"].casefold(), record["text"]
    found = (c for c in claims if c.page.casefold() == page and c.id == claim_id(said))
    return next(found, None), report
