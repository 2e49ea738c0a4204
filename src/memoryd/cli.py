"""The ``memoryd`` command: thin, it calls :class:`memoryd.Memory` and prints.

Tables for people, ``--json`` for scripts.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from memoryd.cli_store import register as register_store_commands
from memoryd.cli_workspace import print_workspace_status
from memoryd.cli_workspace import register as register_workspace
from memoryd.core import Memory
from memoryd.errors import MemorydError
from memoryd.mcp.cli import register as register_mcp
from memoryd.models import HistoryEntry, MemoryRecord, SearchHit
from memoryd.settings import Settings
from memoryd.workspace.status import all_workspace_status
from memoryd.setup_agents import register as register_setup

app = typer.Typer(
    help="memoryd: long-term memory for AI agents.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
console = Console()
err = Console(stderr=True)

UserOpt = Annotated[str, typer.Option("--user", "-u", help="user id (scope)")]
AgentOpt = Annotated[str | None, typer.Option("--agent", "-a", help="agent id (scope)")]
RunOpt = Annotated[
    str | None, typer.Option("--run", "-r", help="run id, YYYY-MM-DD for short-term")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="print JSON for scripts")]


@contextmanager
def _memory(**kwargs: Any) -> Iterator[Memory]:
    try:
        mem = Memory(Settings(), **kwargs)
    except MemorydError as exc:
        _fail(exc)
    try:
        yield mem
    except MemorydError as exc:
        _fail(exc)
    finally:
        mem.close()


def _fail(exc: MemorydError) -> None:
    err.print(f"[red]error:[/red] {exc.message}")
    if exc.hint:
        err.print(f"[yellow]hint:[/yellow] {exc.hint}")
    raise typer.Exit(code=2)


def _print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")


def record_json(r: MemoryRecord) -> dict[str, Any]:
    data = r.model_dump(mode="json")
    data["memory"] = r.text
    if r.source:
        data["citation"] = r.source.citation
    return data


def hit_json(h: SearchHit) -> dict[str, Any]:
    return {
        "id": h.id,
        "memory": h.text,
        "score": round(h.score, 6),
        "parts": h.parts.model_dump(exclude_none=True),
        "metadata": h.record.metadata,
        "created_at": h.record.created_at.isoformat(),
        "user_id": h.record.user_id,
        "agent_id": h.record.agent_id,
        "run_id": h.record.run_id,
        "origin": str(h.record.origin),
        "citation": h.record.source.citation if h.record.source else None,
    }


@app.command()
def add(
    text: Annotated[str | None, typer.Argument(help="the text to remember")] = None,
    user: UserOpt = "default",
    agent: AgentOpt = None,
    run: RunOpt = None,
    text_opt: Annotated[str | None, typer.Option("--text", "-t", help="text (alternative)")] = None,
    metadata: Annotated[str | None, typer.Option("--metadata", "-m", help="JSON object")] = None,
    category: Annotated[str | None, typer.Option("--category", "-c")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Remember a piece of text."""
    body = text if text is not None else text_opt
    if body is None:
        err.print("[red]error:[/red] nothing to add; pass TEXT or --text")
        raise typer.Exit(code=2)
    meta = _parse_json_object(metadata)
    with _memory() as mem:
        events = mem.add(
            body, user_id=user, agent_id=agent, run_id=run, metadata=meta, category=category
        )
    if as_json:
        _print_json({"results": [e.model_dump(mode="json") for e in events]})
        return
    for e in events:
        console.print(f"[bold]{e.event}[/bold] {e.id}  {e.memory}")


def _parse_json_object(raw: str | None) -> dict[str, Any] | None:
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        err.print(f"[red]error:[/red] --metadata is not valid JSON: {exc}")
        raise typer.Exit(code=2) from None
    if not isinstance(value, dict):
        err.print(
            '[red]error:[/red] --metadata must be a JSON object, e.g. \'{"category": "decision"}\''
        )
        raise typer.Exit(code=2)
    return value


@app.command()
def search(
    query: Annotated[str | None, typer.Argument(help="what to look for")] = None,
    user: UserOpt = "default",
    agent: AgentOpt = None,
    run: RunOpt = None,
    query_opt: Annotated[
        str | None, typer.Option("--query", "-q", help="query (alternative)")
    ] = None,
    top_k: Annotated[int, typer.Option("--top-k", "-k", help="results, 1-100")] = 5,
    min_score: Annotated[float | None, typer.Option("--min-score")] = None,
    mode: Annotated[str, typer.Option(help="hybrid, vector or keyword")] = "hybrid",
    as_json: JsonOpt = False,
) -> None:
    """Hybrid search (vector + BM25) within a scope."""
    q = query if query is not None else query_opt
    if q is None:
        err.print("[red]error:[/red] nothing to search for; pass QUERY or --query")
        raise typer.Exit(code=2)
    with _memory() as mem:
        hits = mem.search(
            q, user_id=user, agent_id=agent, run_id=run, top_k=top_k, min_score=min_score, mode=mode
        )
    if as_json:
        _print_json({"results": [hit_json(h) for h in hits]})
        return
    table = Table("score", "vector", "keyword", "memory", "id / source")
    for h in hits:
        where = h.record.source.citation if h.record.source else h.id
        table.add_row(
            f"{h.score:.3f}", f"{h.parts.vector:.3f}", f"{h.parts.keyword:.3f}", h.text, where
        )
    console.print(table if hits else "[dim]no memories matched[/dim]")


@app.command("list")
def list_(
    user: UserOpt = "default",
    agent: AgentOpt = None,
    run: RunOpt = None,
    limit: Annotated[int, typer.Option("--limit", "-n")] = 50,
    offset: Annotated[int, typer.Option("--offset")] = 0,
    as_json: JsonOpt = False,
) -> None:
    """List memories in a scope, newest first."""
    with _memory() as mem:
        records = mem.list(user_id=user, agent_id=agent, run_id=run, limit=limit, offset=offset)
    if as_json:
        _print_json({"results": [record_json(r) for r in records]})
        return
    table = Table("id", "created", "category", "memory")
    for r in records:
        table.add_row(r.id, r.created_at.strftime("%Y-%m-%d %H:%M"), r.category or "", r.text)
    console.print(table)


@app.command()
def get(memory_id: str, as_json: JsonOpt = False) -> None:
    """Show one memory."""
    with _memory() as mem:
        record = mem.get(memory_id)
    if as_json:
        _print_json(record_json(record))
        return
    for key, value in record_json(record).items():
        console.print(f"[bold]{key}[/bold]: {value}")


@app.command()
def delete(memory_id: str, as_json: JsonOpt = False) -> None:
    """Delete a memory (kept in history; restorable)."""
    with _memory() as mem:
        record = mem.delete(memory_id)
    if as_json:
        _print_json({"id": record.id, "deleted": True})
        return
    console.print(f"deleted {record.id}")


@app.command()
def history(memory_id: str, as_json: JsonOpt = False) -> None:
    """Every change to a memory, oldest first."""
    with _memory() as mem:
        entries = mem.history(memory_id)
    if as_json:
        _print_json({"results": [e.model_dump(mode="json") for e in entries]})
        return
    _history_table(entries)


def _history_table(entries: list[HistoryEntry]) -> None:
    table = Table("when", "event", "old", "new", "by", "why")
    for e in entries:
        table.add_row(
            e.created_at.strftime("%Y-%m-%d %H:%M:%S"),
            str(e.event),
            e.old_text or "",
            e.new_text or "",
            e.actor or "",
            e.reason or "",
        )
    console.print(table)


@app.command()
def status(as_json: JsonOpt = False) -> None:
    """Store, model and counts; per agent: files, chunks, last index, files waiting."""
    with _memory() as mem:
        info = mem.status()
        info["workspaces"] = all_workspace_status(mem)
    if as_json:
        _print_json(info)
        return
    for key, value in info.items():
        if key != "workspaces":
            console.print(f"[bold]{key}[/bold]: {value}")
    print_workspace_status(console, info["workspaces"])


@app.command()
def reindex() -> None:
    """Re-embed every memory with the configured embedding model."""
    with _memory(allow_model_change=True) as mem, Progress(console=err) as progress:
        task = progress.add_task("re-embedding", total=None)
        count = mem.reindex(lambda done, total: progress.update(task, completed=done, total=total))
    console.print(f"re-embedded {count} memories with {mem.embedder.name}")


@app.command()
def serve(
    host: Annotated[str | None, typer.Option(help="bind address (default 127.0.0.1)")] = None,
    port: Annotated[int | None, typer.Option(help="port (default 8230)")] = None,
) -> None:
    """Run the HTTP API."""
    import uvicorn

    from memoryd.api import create_app

    settings = Settings()
    if host:
        settings.server.host = host
    if port:
        settings.server.port = port
    try:
        application = create_app(settings)
    except MemorydError as exc:
        _fail(exc)
    uvicorn.run(application, host=settings.server.host, port=settings.server.port, log_level="info")


register_mcp(app)
register_setup(app)
register_store_commands(app)


register_workspace(app)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
