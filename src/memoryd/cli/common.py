"""What every ``memoryd`` command shares: the consoles, the scope options, command
groups, opening the configured :class:`~memoryd.core.Memory` (or, for the store-level
commands, its :class:`~memoryd.operator.Operator`), and how a memoryd error is printed.

Defined once here; the command modules (``memory``, ``workspace``, ``pipelines``,
``store``, ``backup``, ``setup``, ``mcp``) import from this module and never from
each other or from ``app``, so the package has no import loop.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from memoryd.access import LOCAL
from memoryd.core import Memory
from memoryd.errors import MemorydError
from memoryd.operator import Operator
from memoryd.scope import AgentFiles
from memoryd.settings import Settings

console = Console(soft_wrap=True)  # never wrap: output is read by scripts and tests
err = Console(stderr=True, soft_wrap=True)

UserOpt = Annotated[str, typer.Option("--user", "-u", help="user id (scope)")]
AgentOpt = Annotated[str | None, typer.Option("--agent", "-a", help="agent id (scope)")]
AgentReq = Annotated[str, typer.Option("--agent", "-a", help="agent id")]
RunOpt = Annotated[
    str | None, typer.Option("--run", "-r", help="run id, YYYY-MM-DD for short-term")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="print JSON for scripts")]


def command_group(help: str) -> typer.Typer:
    """A group of subcommands (``memoryd store ...``); called bare, it prints its help."""
    return typer.Typer(help=help, no_args_is_help=True)


@contextmanager
def open_memory(**kwargs: Any) -> Iterator[Memory]:
    """The configured ``Memory`` for one command; a memoryd error prints and exits 2."""
    try:
        mem = Memory(Settings(), **kwargs)
    except MemorydError as exc:
        fail(exc)
    try:
        yield mem
    except MemorydError as exc:
        fail(exc)
    finally:
        mem.close()


@contextmanager
def store_operator() -> Iterator[Operator]:
    """The configured store's operator, without a ``Memory`` (backup, restore, export,
    import, migrate work on a store a ``Memory`` would refuse); an error prints, exits 2."""
    op = Operator(Settings())
    try:
        yield op
    except MemorydError as exc:
        fail(exc)


def agent_files(mem: Memory, agent: str) -> AgentFiles:
    """``agent``'s workspace, as the local process (which may use every agent's files)."""
    return mem.scope(LOCAL, agent_id=agent).files()


def fail(exc: MemorydError) -> NoReturn:
    """Print ``exc`` and what to do next; exit 2."""
    err.print(f"[red]error:[/red] {escape(exc.message)}", highlight=False)
    if exc.hint:
        err.print(f"[yellow]hint:[/yellow] {escape(exc.hint)}", highlight=False)
    raise typer.Exit(code=2)


def usage(message: str) -> NoReturn:
    """A mistake in the command line itself: print it, exit 2."""
    err.print(f"[red]error:[/red] {escape(message)}", highlight=False)
    raise typer.Exit(code=2)


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")
