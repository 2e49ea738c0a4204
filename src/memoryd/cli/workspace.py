"""Workspace commands: ``init``, ``index``, ``context``, ``memory-get``,
``memory-search``, ``session-end``, ``flush``. Registered on the main CLI by
:func:`register`. ``init`` and ``index`` set up and index workspaces (operator
commands, through :class:`~memoryd.operator.Operator`); the others are one agent's
files, through ``scope.files()`` (:func:`memoryd.cli.common.agent_files`) as every face."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn
from rich.table import Table

from memoryd.cli.common import (
    AgentReq,
    JsonOpt,
    agent_files,
    console,
    err,
    known_agent,
    open_memory,
    print_json,
)
from memoryd.errors import InvalidInputError
from memoryd.operator import IndexReport, Operator
from memoryd.scope import AgentFiles


def register(app: typer.Typer) -> None:
    """Add the workspace commands to ``app``."""
    app.command("init")(init)
    app.command("index")(index)
    app.command("context")(context)
    app.command("memory-get")(memory_get_command)
    app.command("memory-search")(memory_search_command)
    app.command("session-end")(session_end)
    app.command("flush")(flush_command)


def init(
    agent: AgentReq,
    path: Annotated[
        Path | None, typer.Option("--path", help="workspace directory (default: see README)")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Create an agent workspace: MEMORY.md, memory/, identity templates. Never overwrites."""

    with open_memory() as mem:
        report, indexed = Operator(mem).init_workspace(agent, path)
    if as_json:
        print_json(
            {
                "agent_id": agent,
                "workspace": str(report.root),
                "created": report.created,
                "kept": report.kept,
                "chunks": indexed.chunks_written,
            }
        )
        return
    console.print(f"workspace for [bold]{agent}[/bold]: {report.root}")
    for name in report.created:
        console.print(f"  [green]created[/green] {name}")
    for name in report.kept:
        console.print(f"  [dim]kept[/dim]    {name}")


def index(
    agent: Annotated[
        str | None, typer.Option("--agent", "-a", help="one agent (default: every workspace)")
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="re-chunk every file")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Index workspace Markdown into the store: only changed files, only new chunks embedded."""

    reports: list[IndexReport] = []
    with open_memory() as mem:
        op = Operator(mem)
        agents = [known_agent(mem, agent)] if agent else op.agents()
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[file]}"),
            console=err,
            transient=True,
            disable=as_json,
        ) as progress:
            for name in agents:
                task = progress.add_task(f"indexing {name}", total=None, file="")

                def show(done: int, total: int, rel: str, task: TaskID = task) -> None:
                    progress.update(task, completed=done, total=total, file=rel)

                reports.append(op.index(name, force=force, progress=show))
    if as_json:
        print_json({"results": [r.to_json() for r in reports]})
        return
    if not reports:
        console.print("[dim]no workspaces; create one with `memoryd init --agent NAME`[/dim]")
    for r in reports:
        console.print(
            f"[bold]{r.agent_id}[/bold]: {r.count('indexed')} indexed, {r.count('unchanged')} "
            f"unchanged, {r.count('removed')} removed, {r.count('skipped')} skipped; "
            f"{r.chunks_written} chunks written, {r.embedded} embedded "
            f"(chunks of {r.plan.size} tokens, {r.plan.overlap} overlap) in {r.seconds:.2f}s"
        )
        for f in r.files:
            if f.status == "skipped":
                console.print(f"  [yellow]skipped[/yellow] {f.path}: {f.reason}")


def context(
    agent: AgentReq,
    query: Annotated[
        str | None, typer.Option("--query", "-q", help="add the memories most relevant to this")
    ] = None,
    budget: Annotated[
        int | None, typer.Option("--budget", help="characters (default workspace.context_chars)")
    ] = None,
    user: Annotated[str | None, typer.Option("--user", "-u", help="user id for the search")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Print the session-start context: identity, MEMORY.md, today's and yesterday's diary."""

    with open_memory() as mem:
        ctx = agent_files(mem, agent).context(query, budget, user_id=user)
    if as_json:
        print_json(ctx.to_json())
        return
    sys.stdout.write(ctx.text)


def _existing_files(mem: Any, agent: str) -> AgentFiles:
    """The agent's files, or a clear error when it has no workspace (a typo in --agent
    would otherwise read an empty directory and print nothing)."""
    files = agent_files(mem, agent)
    if not files.workspace.root.is_dir():
        raise InvalidInputError(
            f"agent {agent!r} has no workspace (looked in {files.workspace.root})",
            f"check --agent (memoryd status lists them), or create it: memoryd init --agent {agent}",
        )
    return files


def memory_get_command(
    path: Annotated[str, typer.Argument(help='workspace-relative path, e.g. "MEMORY.md"')],
    agent: AgentReq,
    from_line: Annotated[int | None, typer.Option("--from", help="first line (1-based)")] = None,
    lines: Annotated[int | None, typer.Option("--lines", "-n", help="how many lines")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Read lines of a workspace memory file (empty for a missing file)."""

    with open_memory() as mem:
        got = _existing_files(mem, agent).read(path, from_line, lines)
    if as_json:
        print_json(got.to_json())
        return
    sys.stdout.write(got.text + ("\n" if got.text else ""))


def memory_search_command(
    query: Annotated[str, typer.Argument(help="what to look for")],
    agent: AgentReq,
    max_results: Annotated[int | None, typer.Option("--max-results", "-k")] = None,
    min_score: Annotated[float | None, typer.Option("--min-score")] = None,
    mmr: Annotated[bool | None, typer.Option("--mmr/--no-mmr", help="diversify hits")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Search the agent's workspace files: hits cite path#Lx-Ly for memory-get."""

    with open_memory() as mem:
        files = _existing_files(mem, agent)
        hits = files.search(query, max_results=max_results, min_score=min_score, mmr=mmr)
        chars = files.workspace.settings.snippet_chars
    if as_json:
        print_json({"results": [h.to_json(chars) for h in hits]})
        return
    table = Table("score", "citation", "snippet")
    for h in hits:
        data = h.to_json(chars)
        table.add_row(f"{h.hit.score:.3f}", data["citation"], data["snippet"])
    console.print(table if hits else "[dim]nothing in the workspace matched[/dim]")


def _read_messages(source: str) -> list[Any]:
    """A JSON list of messages, or JSON lines (a session transcript), from a file or ``-``."""
    raw = sys.stdin.read() if source == "-" else Path(source).read_text("utf-8")
    stripped = raw.strip()
    if stripped.startswith("["):
        return list(_json(stripped, f"{source} is not valid JSON", "pass a JSON list"))
    messages: list[Any] = []
    for n, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        item = _json(line, f"{source} line {n} is not JSON", "pass a JSON list or JSON lines")
        if isinstance(item, dict) and isinstance(item.get("message"), dict):
            item = item["message"]  # OpenClaw transcript lines wrap the message
        if isinstance(item, dict) and "role" in item:
            messages.append(item)
    return messages


def _json(text: str, what: str, hint: str) -> Any:
    """``text`` parsed, or an error that says ``what`` (with the parser's reason) and ``hint``."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"{what}: {exc}", hint) from None
    except RecursionError:
        raise InvalidInputError(f"{what}: nested deeper than memoryd reads", hint) from None


def session_end(
    agent: AgentReq,
    transcript: Annotated[
        str, typer.Option("--transcript", "-t", help="JSON list or JSONL file of messages, or -")
    ] = "-",
    session_id: Annotated[str | None, typer.Option("--session-id")] = None,
    messages: Annotated[
        int | None, typer.Option("--messages", "-n", help="last N messages (default 15)")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Write the end of a session to memory/YYYY-MM-DD-<slug>.md and index it."""

    with open_memory() as mem:
        files = agent_files(mem, agent)
        try:
            items = _read_messages(transcript)
        except OSError as exc:
            raise InvalidInputError(f"cannot read {transcript}: {exc}", "check the path") from None
        note = files.session_end(items, session_id=session_id, limit=messages)
    if as_json:
        print_json(note.to_json())
        return
    console.print(f"wrote {note.path} ({note.messages} messages, slug by {note.slug_source})")


def flush_command(
    agent: AgentReq,
    notes: Annotated[list[str], typer.Argument(help="durable notes, one per argument")],
    as_json: JsonOpt = False,
) -> None:
    """Append durable notes to today's diary (before the agent compacts its context)."""

    with open_memory() as mem:
        result = agent_files(mem, agent).flush(notes)
    if as_json:
        print_json(result.to_json())
        return
    console.print(f"appended {result.appended} notes to {result.path}")


def print_workspace_status(console: Any, statuses: list[dict[str, Any]]) -> None:
    """The per-agent part of ``memoryd status``."""
    if not statuses:
        console.print("[bold]workspaces[/bold]: none (create one with `memoryd init --agent NAME`)")
        return
    table = Table("agent", "files", "chunks", "waiting", "skipped", "last index", "workspace")
    for s in statuses:
        waiting = len(s["pending"]) + len(s["deleted"])
        table.add_row(
            s["agent_id"],
            str(s["files"]),
            str(s["chunks"]),
            f"[yellow]{waiting}[/yellow]" if waiting else "0",
            str(len(s["skipped"])),
            s["last_index"] or "never",
            s["workspace"],
        )
    console.print(table)
