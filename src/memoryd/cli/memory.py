"""The memory commands: add, search, list, get, update, delete, restore, history.

Each works on the local store, or on a running server with ``--url`` (or
``MEMORYD_URL``; key from ``--key`` / ``MEMORYD_API_KEY``): the same commands,
flags and output either way. The seed service's CLI commands work as they
are with ``memoryd`` in place of ``python3 cli.py``::

    memoryd add --user boss --agent dev --text "..." --metadata '{"category":"decision"}'
    memoryd search --user boss --agent dev --query "..." --combined --recent-days 7
    memoryd get --id <id>; memoryd delete --id <id>; memoryd history --id <id>

``add`` extracts and reconciles facts like the seed's server did (``--no-infer``
stores the text as given).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from pydantic import BaseModel
from rich import box
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from memoryd.cli.common import (
    AgentOpt,
    JsonOpt,
    RunOpt,
    UserOpt,
    console,
    err,
    fail,
    print_fields,
    print_json,
    progress_bar,
    usage,
)
from memoryd.client import MemoryClient
from memoryd.errors import MemorydError, NotFoundError
from memoryd.scope import Scope
from memoryd.search.intent import category_name
from memoryd.shapes import Deleted, EventOut, FilterSpec, HistoryOut, HitOut, MemoryOut

UrlOpt = Annotated[
    str | None,
    typer.Option(
        "--url", envvar="MEMORYD_URL", help="a running memoryd (default: the local store)"
    ),
]
KeyOpt = Annotated[
    str | None, typer.Option("--key", envvar="MEMORYD_API_KEY", help="API key for --url")
]
IdOpt = Annotated[str | None, typer.Option("--id", help="memory id (or pass it as an argument)")]
IdArg = Annotated[str | None, typer.Argument(help="memory id")]
T = TypeVar("T")


@contextmanager
def backend(
    url: str | None,
    key: str | None,
    user: str | None = None,
    agent: str | None = None,
    *,
    writes: bool = False,
) -> Iterator[Scope | MemoryClient]:
    """The scope of (user, agent) on the local store, or on the server at ``url``: the
    same operations and answers either way. memoryd errors print and exit 2.

    The default user rule, the same as HTTP's: with no ``user``, reads cover every
    user the caller may see, and ``writes`` go to ``settings.default_user`` (the
    server's own, with ``url``)."""
    from memoryd.access import LOCAL
    from memoryd.core import Memory
    from memoryd.settings import Settings

    memory: Memory | None = None
    try:
        chosen: Scope | MemoryClient
        if url:
            chosen = MemoryClient(url, api_key=key, user_id=user, agent_id=agent)
        else:
            settings = Settings()
            memory = Memory(settings)
            acting = settings.acting_user(user) if writes else user
            chosen = memory.scope(LOCAL, acting, agent, actor="cli")
    except MemorydError as exc:
        fail(exc)
    try:
        yield chosen
    except MemorydError as exc:
        fail(exc)
    finally:
        if memory is not None:
            memory.close()
        elif isinstance(chosen, MemoryClient):
            chosen.close()


def _json_arg(raw: str | None, flag: str, kind: type, example: str) -> Any:
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        usage(f"{flag} is not valid JSON: {exc}")
    except RecursionError:
        usage(f"{flag} nests JSON deeper than memoryd reads: flatten it")
    if not isinstance(value, kind):
        usage(f"{flag} must be a JSON {'object' if kind is dict else 'list'}, e.g. '{example}'")
    return value


def _on_id(
    url: str | None,
    key: str | None,
    arg: str | None,
    opt: str | None,
    op: Callable[[Scope | MemoryClient, str], T],
) -> T:
    """``op`` on the memory whose id is the argument or ``--id``, locally or at ``url``."""
    with backend(url, key) as mem:
        chosen = arg or opt
        if not chosen:
            usage("which memory? pass its id (memoryd get ID, or --id ID)")
        try:
            return op(mem, chosen)
        except NotFoundError as exc:
            raise _not_found(mem, chosen, exc) from None


def _not_found(mem: Scope | MemoryClient, memory_id: str, exc: NotFoundError) -> NotFoundError:
    """``exc`` with the CLI's next step: a deleted memory says so and how to bring it
    back; an unknown id, where to copy a whole id from."""
    try:
        events = mem.history(memory_id)
    except MemorydError:
        events = []
    if events and events[-1].event == "DELETE":
        return NotFoundError(
            f"memory {memory_id} was deleted",
            f"see it with `memoryd history {memory_id}`; "
            f"bring it back with `memoryd restore {memory_id}`",
        )
    return NotFoundError(
        exc.message,
        "copy the whole id from `memoryd list` or `memoryd search` (add --user to narrow)",
    )


def _say(result: BaseModel, as_json: bool, line: str) -> None:
    """``result`` as JSON for scripts (``--json``), else ``line`` for people."""
    if as_json:
        print_json(result.model_dump())
    else:
        console.print(line)


def add(
    text: Annotated[str | None, typer.Argument(help="the text to remember")] = None,
    user: UserOpt = None,
    agent: AgentOpt = None,
    run: RunOpt = None,
    text_opt: Annotated[str | None, typer.Option("--text", "-t", help="text (alternative)")] = None,
    messages: Annotated[
        str | None, typer.Option("--messages", help='JSON list of {"role", "content"}')
    ] = None,
    lines: Annotated[
        Path | None,
        typer.Option(
            "--lines",
            help="a file (- for stdin) whose every non-empty line is one memory, stored "
            "in batches of 100 lines (each one transaction); a progress bar on a terminal, "
            "then a summary",
        ),
    ] = None,
    metadata: Annotated[str | None, typer.Option("--metadata", "-m", help="JSON object")] = None,
    category: Annotated[str | None, typer.Option("--category", "-c")] = None,
    infer: Annotated[
        bool, typer.Option("--infer/--no-infer", help="extract and reconcile facts")
    ] = True,
    prompt: Annotated[
        str | None, typer.Option("--prompt", help="custom extraction prompt for this add")
    ] = None,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="--lines: one line per event, too")
    ] = False,
    url: UrlOpt = None,
    key: KeyOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Remember text (or a conversation): facts are extracted and reconciled."""

    body = text if text is not None else text_opt
    if body == "-":  # memoryd add --text - < note.md
        import sys

        body = sys.stdin.read()
    msgs = _json_arg(messages, "--messages", list, '[{"role": "user", "content": "..."}]')
    many = _lines(lines) if lines is not None else None
    if sum(x is not None for x in (body, msgs, many)) != 1:
        usage("pass the text (TEXT or --text), --messages or --lines, one of them")
    meta = _json_arg(metadata, "--metadata", dict, '{"category": "decision"}') or {}
    if category:
        meta["category"] = category
    with backend(url, key, user, agent, writes=True) as mem:
        if many is None:
            events = mem.add(
                body, messages=msgs, run_id=run, metadata=meta or None, infer=infer,
                prompt=prompt,
            )  # fmt: skip
        else:  # in adds of LINES_PER_ADD lines (or limits.max_texts), each one transaction
            from memoryd.settings import Settings

            step, events = min(LINES_PER_ADD, Settings().limits.max_texts), []
            with progress_bar("adding lines", len(many), quiet=as_json) as advance:
                for start in range(0, len(many), step):
                    chunk = many[start : start + step]
                    events += mem.add(
                        texts=chunk, run_id=run, metadata=meta or None, infer=infer,
                        prompt=prompt,
                    )  # fmt: skip
                    advance(len(chunk))
    if as_json:
        print_json({"results": [e.model_dump() for e in events]})
        return
    if not events:
        err.print(
            "nothing stored: extraction found no fact worth remembering in that text. "
            "To store it as given, add --no-infer."
        )
        raise typer.Exit(code=1)
    if many is None or verbose:
        for e in events:
            console.print(f"[bold]{e.event}[/bold] {e.id}  {escape(e.memory)}", highlight=False)
    if many is not None:
        console.print(f"{len(many)} lines: {event_counts(events)}", highlight=False)


LINES_PER_ADD = 100  # --lines: one add (one model run, one transaction) per this many lines


def event_counts(events: list[EventOut]) -> str:
    """``ADD 2990, NONE 10``: how many events of each kind, in a fixed order."""
    counts = Counter(e.event for e in events)
    order = ["ADD", "UPDATE", "DELETE", "NONE"]
    kinds = order + sorted(k for k in counts if k not in order)
    return ", ".join(f"{k} {counts[k]}" for k in kinds if counts[k]) or "nothing stored"


def _lines(path: Path) -> list[str]:
    """The non-empty lines of ``path`` (stdin for ``-``), stripped."""
    import sys

    try:
        raw = sys.stdin.read() if str(path) == "-" else path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        usage(f"cannot read --lines {path}: {e}")
    found = [line.strip() for line in raw.splitlines() if line.strip()]
    if not found:
        usage(f"--lines {path} has no non-empty line")
    return found


def search(
    query: Annotated[str | None, typer.Argument(help="what to look for")] = None,
    user: UserOpt = None,
    agent: AgentOpt = None,
    run: RunOpt = None,
    query_opt: Annotated[
        str | None, typer.Option("--query", "-q", help="query (alternative)")
    ] = None,
    top_k: Annotated[int, typer.Option("--top-k", "-k", help="results, 1-100")] = 5,
    min_score: Annotated[float | None, typer.Option("--min-score", help="0-1 relevance")] = None,
    combined: Annotated[
        bool, typer.Option("--combined", help="long-term plus recent short-term memories")
    ] = False,
    recent_days: Annotated[
        int, typer.Option("--recent-days", help="short-term window of --combined")
    ] = 7,
    decay: Annotated[bool, typer.Option("--decay/--no-decay", help="time decay")] = True,
    mode: Annotated[str, typer.Option(help="hybrid, vector or keyword")] = "hybrid",
    include_archived: Annotated[
        bool, typer.Option("--include-archived", help="also memories archived by TTL decay")
    ] = False,
    include_superseded: Annotated[
        bool, typer.Option("--include-superseded", help="also facts a newer fact replaced")
    ] = False,
    as_of: Annotated[
        datetime | None,
        typer.Option("--as-of", help="what was true then, e.g. 2026-03-01 (UTC)"),
    ] = None,
    category: Annotated[
        list[str] | None,
        typer.Option("--category", "-c", help="only these categories (repeat; 'lessons' too)"),
    ] = None,
    all_agents: Annotated[
        bool, typer.Option("--all-agents", help="every agent of the user (leave out --agent)")
    ] = False,
    smart: Annotated[
        bool,
        typer.Option(
            "--smart", help="look first where the question points (lessons, how-tos, decisions)"
        ),
    ] = False,
    url: UrlOpt = None,
    key: KeyOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Hybrid search (vector + BM25, time decay, shared pool) within a scope."""

    q = query if query is not None else query_opt
    if q is None:
        usage("nothing to search for; pass QUERY or --query")
    assert q is not None
    if combined and run:
        usage("--combined searches long-term and recent short-term; leave out --run")
    if combined and include_archived:
        usage("--include-archived works with a plain search; leave out --combined")
    if all_agents and agent:
        usage("--all-agents searches every agent of the user; leave out --agent")
    if smart and category:
        usage("--smart picks the categories itself; leave out --category")
    categories = [category_name(c) for c in category or []] or None
    intent = None
    with backend(url, key, user, agent) as mem:

        def run_search(text: str, cats: list[str] | None) -> list[HitOut]:
            spec = FilterSpec(categories=cats) if cats else None
            if combined:
                return mem.search_combined(
                    text, long_term_top_k=top_k, short_term_top_k=top_k, recent_days=recent_days,
                    min_score=min_score, time_decay=decay, mode=mode, filters=spec,
                    include_superseded=include_superseded, as_of=as_of,
                ).results  # fmt: skip
            return mem.search(
                text, run_id=run, top_k=top_k, min_score=min_score, time_decay=decay, mode=mode,
                include_archived=include_archived, filters=spec,
                include_superseded=include_superseded, as_of=as_of,
            )  # fmt: skip

        if smart:
            intent = mem.intent(q)
            hits = run_search(intent.query, intent.categories or None) if intent.categories else []
            if not hits:  # nothing where the question points: everywhere
                hits = run_search(intent.query, None)
        else:
            hits = run_search(q, categories)
    if as_json:
        found = [h.model_dump() for h in hits]
        print_json({"results": found, **({"intent": intent.to_json()} if intent else {})})
        return
    if intent is not None:
        where = ", ".join(intent.categories) or "everywhere"
        console.print(
            f"[dim]intent ({intent.source}): {where}; query: {escape(intent.query)}[/dim]"
        )
    table = _table()
    table.add_column("score", no_wrap=True)
    parts = console.width >= WIDE  # the score's parts, when there is room for them
    if parts:
        for name in ("vector", "keyword", "decay"):
            table.add_column(name, no_wrap=True)
    table.add_column("type", no_wrap=True)
    table.add_column("memory", ratio=1, min_width=20)
    table.add_column("id / source", no_wrap=True)  # whole: get, history, delete take it
    for h in hits:
        decay_part = h.parts.get("decay")
        cells = [f"{h.score:.3f}"]
        if parts:
            cells += [
                f"{h.parts.get('vector', 0):.3f}",
                f"{h.parts.get('keyword', 0):.3f}",
                "" if decay_part is None else f"{decay_part:.2f}",
            ]
        cells += [
            _tier(h.memory_type),
            f"[dim]({h.state})[/dim] {escape(h.memory)}" if h.state else escape(h.memory),
            escape(h.citation or h.id),
        ]
        table.add_row(*cells)
    console.print(table if hits else "[dim]no memories matched[/dim]")


def list_(
    user: UserOpt = None,
    agent: AgentOpt = None,
    run: RunOpt = None,
    category: Annotated[str | None, typer.Option("--category", "-c")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, max=1000)] = 50,
    offset: Annotated[int, typer.Option("--offset", min=0)] = 0,
    turns: Annotated[
        bool,
        typer.Option(
            "--turns",
            help="also the turns of conversations added with inference (kept as the facts' "
            "evidence; left out by default so a conversation shows once)",
        ),
    ] = False,
    url: UrlOpt = None,
    key: KeyOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """List memories in a scope, newest first."""

    with backend(url, key, user, agent) as mem:
        spec = FilterSpec(category=category) if category else None
        page = mem.list(run_id=run, filters=spec, limit=limit, offset=offset, include_turns=turns)
    if as_json:
        print_json(page.model_dump())
        return
    table = _table()
    table.add_column("id", no_wrap=True)  # whole: get, history and delete take it
    table.add_column("created", no_wrap=True)
    wide = console.width >= WIDE
    if wide:
        table.add_column("type", no_wrap=True)
        table.add_column("category", no_wrap=True, max_width=16, overflow="ellipsis")
    table.add_column("memory", ratio=1)
    for r in page.results:
        cells = [r.id, r.created_at[:16].replace("T", " ")]
        if wide:
            cells += [_tier(r.memory_type), escape(r.category or "")]
        # one line per memory, cut with an ellipsis (`memoryd get ID` shows it whole)
        table.add_row(*cells, Text(r.memory, no_wrap=True, overflow="ellipsis"))
    console.print(table)
    console.print(f"[dim]{len(page.results)} of {page.total}[/dim]")


WIDE = 120  # columns from which tables show their secondary columns


def _table() -> Table:
    """A table that fits the terminal: no side borders, so the text gets the room."""
    return Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)


def _tier(memory_type: str) -> str:
    """``long`` for ``long_term``: the tier in a narrow column."""
    return memory_type.removesuffix("_term")


def update(
    memory_id: IdArg = None,
    id_opt: IdOpt = None,
    text: Annotated[str | None, typer.Option("--text", "-t", help="new text")] = None,
    metadata: Annotated[str | None, typer.Option("--metadata", "-m", help="JSON object")] = None,
    url: UrlOpt = None,
    key: KeyOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Change a memory's text or metadata (the old version stays in history)."""

    meta = _json_arg(metadata, "--metadata", dict, '{"category": "decision"}')
    record = _on_id(url, key, memory_id, id_opt, lambda mem, i: mem.update(i, text, meta))
    _say(record, as_json, f"updated {record.id}: {escape(record.memory)}")


def _by_id(
    name: str,
    doc: str,
    op: Callable[[Scope | MemoryClient, str], T],
    show: Callable[[T, bool], None],
) -> Callable[..., None]:
    """The command ``name`` on one memory, named by its id (the argument or ``--id``),
    here or at ``--url``: ``op`` reads or changes it, ``show`` prints what it answers."""

    def command(
        memory_id: IdArg = None,
        id_opt: IdOpt = None,
        url: UrlOpt = None,
        key: KeyOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        show(_on_id(url, key, memory_id, id_opt, op), as_json)

    command.__name__ = command.__qualname__ = name
    command.__doc__ = doc
    return command


def _show_memory(record: MemoryOut, as_json: bool) -> None:
    fields = record.model_dump()
    if as_json:
        print_json(fields)
        return
    print_fields(fields)


def _show_history(entries: list[HistoryOut], as_json: bool) -> None:
    if as_json:
        print_json({"results": [e.model_dump() for e in entries]})
        return
    table = _table()
    table.add_column("when", no_wrap=True)
    table.add_column("event", no_wrap=True)
    for name in ("old", "new", "by", "why"):
        table.add_column(name, ratio=1 if name in ("old", "new") else None)
    for e in entries:
        table.add_row(
            e.created_at[:19].replace("T", " "),
            e.event,
            escape(e.old_memory or ""),
            escape(e.new_memory or ""),
            escape(e.actor or ""),
            escape(e.reason or ""),
        )
    console.print(table)


def _show_deleted(result: Deleted, as_json: bool) -> None:
    _say(result, as_json, f"deleted {result.id}")


def _show_restored(record: MemoryOut, as_json: bool) -> None:
    _say(record, as_json, f"restored {record.id}: {escape(record.memory)}")


get = _by_id("get", "Show one memory.", lambda mem, i: mem.get(i), _show_memory)
delete = _by_id(
    "delete",
    "Delete a memory (kept in history; restorable).",
    lambda mem, i: mem.delete(i),
    _show_deleted,
)
restore = _by_id(
    "restore", "Bring back a deleted memory.", lambda mem, i: mem.restore(i), _show_restored
)
history = _by_id(
    "history",
    "Every change to a memory, oldest first.",
    lambda mem, i: mem.history(i),
    _show_history,
)


def import_transcript(
    path: Annotated[
        str,
        typer.Argument(help="a JSON-lines transcript, OpenClaw's session store, or - for stdin"),
    ],
    user: UserOpt = None,
    agent: AgentOpt = None,
    run: RunOpt = None,
    session: Annotated[
        str | None,
        typer.Option(
            "--session",
            help="session id (default: the file's, or its name); in a session store, "
            "the one session to import (default: all)",
        ),
    ] = None,
    batch: Annotated[int, typer.Option("--batch", min=1, max=1000, help="messages per add")] = 200,
    url: UrlOpt = None,
    key: KeyOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Import a conversation transcript turn by turn (each turn indexed with its speaker,
    time and previous turn). Reads JSON lines of {"role", "content", "name"?,
    "timestamp"?}, an older OpenClaw session file (~/.openclaw/agents/<id>/sessions/*.jsonl)
    or OpenClaw 2026.9's session store (~/.openclaw/agents/<id>/agent/openclaw-agent.sqlite,
    read-only: every session, or the one --session names)."""
    transcripts = _read_transcripts(path, session)
    added = same = skipped = 0
    total = sum(len(t.messages) for _, t in transcripts)
    with (
        backend(url, key, user, agent, writes=True) as mem,
        progress_bar("importing messages", total, quiet=as_json) as advance,
    ):
        for name, transcript in transcripts:
            for start in range(0, len(transcript.messages), batch):
                chunk = transcript.messages[start : start + batch]
                events = mem.add(
                    None,
                    messages=chunk,
                    run_id=run,
                    metadata={"session": name} if name else None,
                    infer=False,
                )
                added += sum(1 for e in events if e.event == "ADD")
                same += sum(1 for e in events if e.event == "NONE")
                advance(len(chunk))
            skipped += transcript.skipped
    messages = total
    names = [name for name, _ in transcripts]
    summary = {
        "messages": messages,
        "added": added,
        "already_stored": same,
        "skipped_entries": skipped,
        "session": names[0] if len(names) == 1 else None,
        "sessions": names,
    }
    if as_json:
        print_json(summary)
        return
    console.print(
        f"imported {messages} messages as {added} turns"
        f" ({same} already stored, {skipped} non-conversation entries skipped)"
    )


def _read_transcripts(path: str, session: str | None) -> list[tuple[str | None, Any]]:
    """``(session name, Transcript)`` for each session ``path`` holds (one, except in an
    OpenClaw session store); usage errors exit with the reason."""
    import sys

    from memoryd.conversation import read_transcript
    from memoryd.operator import Operator

    found: list[tuple[str | None, Any]] = []
    try:
        if path == "-":
            transcript = read_transcript(sys.stdin, "stdin")
            found.append((session or transcript.session, transcript))
        elif (stored := Operator.openclaw_sessions(Path(path), session)) is not None:
            for sid, lines in stored:
                found.append((sid, read_transcript(lines, f"{path} session {sid}")))
        else:
            with Path(path).open(encoding="utf-8") as f:
                transcript = read_transcript(f, path)
            found.append((session or transcript.session or Path(path).stem, transcript))
    except OSError as exc:
        usage(f"cannot read {path}: {exc.strerror or exc}")
    except (MemorydError, UnicodeDecodeError) as exc:
        usage(str(getattr(exc, "message", exc)))
    if not any(t.messages for _, t in found):
        usage(f"{path} has no user or assistant messages to import")
    return [(name, t) for name, t in found if t.messages]


def register(app: typer.Typer) -> None:
    app.command()(add)
    app.command("import-transcript")(import_transcript)
    app.command()(search)
    app.command("list")(list_)
    app.command()(get)
    app.command()(update)
    app.command()(delete)
    app.command()(restore)
    app.command()(history)
