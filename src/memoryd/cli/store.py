"""``memoryd store ...``: store maintenance. Registered on the main CLI by :func:`register`.

``memoryd store migrate --to URL [--from URL]`` copies a whole store (SQLite ⇄
PostgreSQL); the work is :func:`memoryd.store.migrate.migrate`, through
:class:`~memoryd.operator.Operator`.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn
from rich.table import Table

from memoryd.cli.common import JsonOpt, command_group, console, err, store_operator
from memoryd.operator import MigrateReport

store_app = command_group("Store maintenance: copy a store between SQLite and PostgreSQL.")


def register(app: typer.Typer) -> None:
    """Add ``memoryd store ...`` to ``app``."""
    app.add_typer(store_app, name="store")


@store_app.command("migrate")
def migrate_command(
    to: Annotated[
        str, typer.Option("--to", help="target store: postgresql://user@host/db or a SQLite path")
    ],
    source_url: Annotated[
        str | None,
        typer.Option("--from", help="source store URL (default: the configured store)"),
    ] = None,
    batch: Annotated[int, typer.Option(help="memories per transaction")] = 500,
    as_json: JsonOpt = False,
) -> None:
    """Copy every memory (with vectors and history), the embedding cache and pipeline
    state into another store. Resumable: run it again after an interruption."""
    with (
        store_operator() as op,
        Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            console=err,
            disable=as_json or not err.is_terminal,
        ) as bar,
    ):
        tasks: dict[str, TaskID] = {}

        def show(phase: str, done: int, total: int) -> None:
            if phase not in tasks:
                tasks[phase] = bar.add_task(phase, total=total)
            bar.update(tasks[phase], completed=done, total=max(total, done))

        report = op.migrate(to, source_url=source_url, batch=batch, progress=show)
    if as_json:
        sys.stdout.write(json.dumps(report.as_dict(), indent=2) + "\n")
        return
    _print_report(report)


def _print_report(report: MigrateReport) -> None:
    verb = "resumed and copied" if report.resumed else "copied"
    console.print(
        f"{verb} {report.copied} memories from {report.source} to {report.target}"
        + (f" ({report.skipped} already there)" if report.skipped else "")
    )
    table = Table("rows", "source", "target")
    for key in ("memories", "history", "cache"):
        table.add_row(
            key, str(report.source_totals.get(key, 0)), str(report.target_totals.get(key, 0))
        )
    console.print(table)
    console.print(f"[green]counts match[/green]; {report.kv} pipeline state keys copied")
