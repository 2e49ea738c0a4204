"""``wiki lint``: what is wrong with a vault, as a list a person or an agent can work
through with ``wiki apply``.

Kinds: ``broken-link`` (a ``[[link]]`` to no page), ``no-evidence``,
``bad-evidence`` (a citation that no longer resolves: a deleted memory, a file
gone, lines past its end), ``evidence-changed`` (the lines an applied claim
cites now say something else), ``contradiction``, ``stale-page`` (every
current claim stale), ``orphan`` (an entity page nothing links to) and
``damaged-journal``. It reads the vault as compiled last (a vault never
compiled is compiled first), and every Markdown file a person wrote in it.
"""

from __future__ import annotations

import json

from memoryd.core import Memory
from memoryd.errors import MemorydError, OutsideWorkspaceError
from memoryd.wiki.compile import LINK, wiki_dir
from memoryd.wiki.evidence import Resolver
from memoryd.wiki.ops import state
from memoryd.wiki.render import DASHBOARDS, STATE_DIR
from memoryd.wiki.sources import EDITS_FILE, load_edits
from memoryd.workspace.layout import Workspace


def lint(memory: Memory, ws: Workspace) -> list[dict[str, str]]:
    """Problems, each ``{"kind", "where", "message"}``, in a stable order."""
    pages = state(memory, ws)
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
        try:
            text = ws.fs.read_text(path, errors="replace")
        except (OSError, OutsideWorkspaceError) as exc:
            say("unreadable", f"wiki/{rel}", str(exc))
            continue
        for m in LINK.finditer(text):
            target = " ".join(m.group(1).split())
            if rel != "index.md" and not rel.startswith(f"{DASHBOARDS}/"):  # navigation only
                linked.add(target.casefold())
            if target.casefold() not in titles and not (root / f"{target}.md").is_file():
                say("broken-link", f"wiki/{rel}", f"[[{m.group(1)}]] leads to no page")
    resolver = Resolver(memory, ws)
    edits = load_edits(ws)
    cited = {  # the lines each citation of an applied claim said then (the latest edit's)
        item: digest
        for e in edits
        if e.get("op") == "add" and isinstance(e.get("lines"), dict)
        for item, digest in e["lines"].items()
    }
    for p in pages:
        title = str(p.get("title"))
        live = [c for c in p.get("claims") or [] if c.get("status") != "superseded"]
        for c in p.get("claims") or []:
            where = f"wiki/{p.get('file')}#^{c.get('id')}"
            evidence = c.get("evidence")
            if not evidence:
                say("no-evidence", where, f"{c.get('text')!r} cites nothing")
                continue
            try:
                resolver.check(list(evidence), allow_deleted=c.get("status") == "superseded")
            except MemorydError as exc:
                say("bad-evidence", where, f"{exc.message} ({exc.hint})")
            else:
                changed = [
                    item
                    for item in evidence
                    if c.get("origin") == "applied"
                    and item in cited
                    and resolver.digest(item) != cited[item]
                ]
                for item in changed:
                    say(
                        "evidence-changed",
                        where,
                        f"{item} no longer says what it did when the claim was applied",
                    )
            if c.get("status") == "contested":
                say("contradiction", where, f"{c.get('text')!r}: {c.get('note')}")
        if live and all(c.get("status") == "stale" for c in live):
            say("stale-page", f"wiki/{p.get('file')}", f"every claim of {title!r} is stale")
        if p.get("kind") == "entity" and title.casefold() not in linked:
            say("orphan", f"wiki/{p.get('file')}", f"no page links to [[{title}]]")
    journal = root / STATE_DIR / EDITS_FILE
    if journal.is_file() and not load_edits(ws):
        try:
            json.loads(ws.fs.read_text(journal))
        except (ValueError, OSError, OutsideWorkspaceError):
            say("damaged-journal", f"wiki/{STATE_DIR}/{EDITS_FILE}", "not valid JSON")
    return problems
