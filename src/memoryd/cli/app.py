"""The ``memoryd`` app: ``status``, ``reindex`` and ``serve``, and every command group
registered from its own module (see the package docstring). Tables for people,
``--json`` for scripts.
"""

from __future__ import annotations

import gc
import sys
from typing import Annotated

import typer
from rich.progress import Progress

from memoryd import __version__
from memoryd.cli import backup, cache, mcp, memory, pipelines, setup, store, wiki, workspace
from memoryd.cli.common import (
    HELP_OPTIONS,
    JsonOpt,
    console,
    err,
    error_out,
    fail,
    json_mode,
    open_memory,
    print_fields,
    print_json,
)
from memoryd.errors import MemorydError
from memoryd.operator import Operator
from memoryd.settings import Settings

app = typer.Typer(
    help="memoryd: long-term memory for AI agents.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings=HELP_OPTIONS,
)


def _print_version(value: bool) -> None:
    if value:
        console.print(f"memoryd {__version__}", highlight=False)
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", "-V", callback=_print_version, is_eager=True, help="print the version"
        ),
    ] = False,
) -> None:
    """memoryd: long-term memory for AI agents."""
    json_mode(False)  # set again by the command's own --json


@app.command()
def status(as_json: JsonOpt = False) -> None:
    """Store, model and counts; per agent: files, chunks, last index, files waiting; and a
    warning for each job OpenClaw and memoryd both do (session notes, dreaming)."""
    with open_memory() as mem:
        info = mem.status()
        info["workspaces"] = Operator(mem).workspace_status()
        info["warnings"] = Operator(mem).duplicate_jobs()
    if as_json:
        print_json(info)
        return
    print_fields({k: v for k, v in info.items() if k not in ("workspaces", "warnings")})
    workspace.print_workspace_status(console, info["workspaces"])
    for warning in info["warnings"]:
        err.print(f"[yellow]warning:[/yellow] {warning}", highlight=False)


@app.command()
def reindex() -> None:
    """Re-embed every memory with the configured embedding model."""
    with open_memory(allow_model_change=True) as mem, Progress(console=err) as progress:
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
    from memoryd.api.app import check_bind, check_port

    settings = Settings()
    if host:
        settings.server.host = host
    if port:
        settings.server.port = port
    if allow_remote_without_auth:
        settings.server.allow_remote_without_auth = True
    try:
        check_bind(settings)  # no keys: loopback only, unless explicitly allowed
        check_port(settings)  # before the model loads, not a raw uvicorn error after
        application = create_app(settings)
    except MemorydError as exc:
        fail(exc)
    # What is alive now (the libraries, the app, the model) lives as long as the server:
    # kept out of the cyclic collector, a full collection walks ~150k fewer objects
    # (~200 ms -> ~6 ms on this machine; 3 in 800 searches ran one).
    gc.collect()
    gc.freeze()
    uvicorn.run(application, host=settings.server.host, port=settings.server.port, log_level="info")


memory.register(app)  # add/search/list/get/update/delete/restore/history, local or --url
mcp.register(app)
setup.register(app)
store.register(app)
pipelines.register(app)  # run, pipelines, rem-backfill, dream, commitments
backup.register(app)  # backup, restore-backup, export, import
workspace.register(app)
wiki.register(app)  # wiki compile/search/get/apply/lint
cache.register(app)  # cache clean


def main() -> None:
    """The ``memoryd`` command. With ``--json``, a mistake in the command line itself
    (an unknown option, a missing argument) is a JSON error too."""
    if "--json" not in sys.argv[1:]:
        app()
        return
    try:
        code = app(standalone_mode=False)
    except typer.TyperException as exc:  # the command line's usage errors
        shown = getattr(exc, "format_message", None)
        message = shown() if callable(shown) else str(exc)
        error_out(message, "see memoryd COMMAND --help", as_json=True)
        sys.exit(getattr(exc, "exit_code", 2))
    sys.exit(code if isinstance(code, int) else 0)
