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
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from memoryd.access import LOCAL
from memoryd.core import Memory
from memoryd.errors import InvalidInputError, MemorydError
from memoryd.operator import Operator
from memoryd.scope import AgentFiles
from memoryd.settings import Settings

console = Console(soft_wrap=True)  # never wrap: output is read by scripts and tests
err = Console(stderr=True, soft_wrap=True)

UserOpt = Annotated[
    str | None,
    typer.Option(
        "--user", "-u", help="user id (reads: default every user; writes: settings.default_user)"
    ),
]
AgentOpt = Annotated[str | None, typer.Option("--agent", "-a", help="agent id (scope)")]
AgentReq = Annotated[str, typer.Option("--agent", "-a", help="agent id")]
RunOpt = Annotated[
    str | None, typer.Option("--run", "-r", help="run id, YYYY-MM-DD for short-term")
]
_json = {"on": False}  # whether the running command was given --json


def json_mode(value: bool) -> bool:
    """Remember whether ``--json`` was given (the option's callback), so an error in the
    command is printed as JSON too."""
    _json["on"] = bool(value)
    return value


JsonOpt = Annotated[
    bool, typer.Option("--json", help="print JSON for scripts (errors too)", callback=json_mode)
]


HELP_OPTIONS = {"help_option_names": ["-h", "--help"]}


def command_group(help: str) -> typer.Typer:
    """A group of subcommands (``memoryd store ...``); called bare, it prints its help."""
    return typer.Typer(help=help, no_args_is_help=True, context_settings=HELP_OPTIONS)


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


def known_agent(mem: Memory, agent: str) -> str:
    """``agent`` if it has a workspace (configured, registered or on disk); otherwise an
    error naming the known agents and how to add one: a typo in ``--agent`` would
    otherwise create a new, empty workspace."""
    known = Operator(mem).agents()
    if agent in known:
        return agent
    listed = ", ".join(known) if known else "none yet"
    raise InvalidInputError(
        f"agent {agent!r} has no workspace (known agents: {listed})",
        f"check --agent, or create its workspace first: memoryd init --agent {agent}",
    )


def agent_files(mem: Memory, agent: str) -> AgentFiles:
    """A known ``agent``'s workspace (:func:`known_agent`), as the local process (which
    may use every agent's files)."""
    return mem.scope(LOCAL, agent_id=known_agent(mem, agent)).files()


def error_out(message: str, hint: str | None = None, *, as_json: bool | None = None) -> None:
    """Print an error and what to do next on stderr: ``{"error", "hint"}`` under
    ``--json``, a red line (and a yellow hint) otherwise."""
    if as_json if as_json is not None else _json["on"]:
        sys.stderr.write(json.dumps({"error": message, "hint": hint}, ensure_ascii=False) + "\n")
        return
    err.print(f"[red]error:[/red] {escape(message)}", highlight=False)
    if hint:
        err.print(f"[yellow]hint:[/yellow] {escape(hint)}", highlight=False)


def fail(exc: MemorydError) -> NoReturn:
    """Print ``exc`` and what to do next; exit 2."""
    error_out(exc.message, exc.hint)
    raise typer.Exit(code=2)


def usage(message: str, hint: str | None = None) -> NoReturn:
    """A mistake in the command line itself: print it, exit 2."""
    error_out(message, hint)
    raise typer.Exit(code=2)


def _shown(value: Any) -> str:
    """One field's value for people: no Python reprs (None, dicts, lists)."""
    if value is None or value == {} or value == []:
        return "-"
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={_shown(v)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return ", ".join(_shown(v) for v in value)
    return str(value)


def print_fields(fields: Mapping[str, Any]) -> None:
    """``name: value`` lines, the names aligned, the values as people read them."""
    width = max((len(k) for k in fields), default=0)
    for name, value in fields.items():
        console.print(
            f"[bold]{escape(name.ljust(width))}[/bold]  {escape(_shown(value))}", highlight=False
        )


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")


@contextmanager
def progress_bar(label: str, total: int, *, quiet: bool = False) -> Iterator[Callable[[int], None]]:
    """A progress bar for long work, on stderr and only on a terminal (scripts and pipes
    get none; nor does ``--json``): yields ``advance(n)``."""
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        console=err,
        transient=True,
        disable=quiet or not err.is_terminal,
    ) as progress:
        task = progress.add_task(label, total=total)
        yield lambda n: progress.advance(task, n)
