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

from memoryd.cli_backup import register as register_backup
from memoryd.cli_memory import register as register_memory
from memoryd.cli_pipelines import register as register_pipelines
from memoryd.cli_store import register as register_store_commands
from memoryd.cli_workspace import print_workspace_status
from memoryd.cli_workspace import register as register_workspace
from memoryd.core import Memory
from memoryd.errors import MemorydError
from memoryd.mcp.cli import register as register_mcp
from memoryd.settings import Settings
from memoryd.setup_agents import register as register_setup
from memoryd.workspace.status import all_workspace_status

app = typer.Typer(
    help="memoryd: long-term memory for AI agents.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
console = Console(soft_wrap=True)  # never wrap: output is read by scripts and tests
err = Console(stderr=True, soft_wrap=True)

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
    allow_remote_without_auth: Annotated[
        bool,
        typer.Option(
            "--allow-remote-without-auth", help="bind beyond loopback with no API keys (unsafe)"
        ),
    ] = False,
) -> None:
    """Run the HTTP API."""
    import uvicorn

    from memoryd.api import create_app
    from memoryd.api.app import check_bind

    settings = Settings()
    if host:
        settings.server.host = host
    if port:
        settings.server.port = port
    if allow_remote_without_auth:
        settings.server.allow_remote_without_auth = True
    try:
        check_bind(settings)  # no keys: loopback only, unless explicitly allowed
        application = create_app(settings)
    except MemorydError as exc:
        _fail(exc)
    uvicorn.run(application, host=settings.server.host, port=settings.server.port, log_level="info")


register_memory(app)  # add/search/list/get/update/delete/restore/history, local or --url
register_mcp(app)
register_setup(app)
register_store_commands(app)
register_pipelines(app)  # run, pipelines, dream rollback
register_backup(app)  # backup, restore-backup, export, import


register_workspace(app)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
