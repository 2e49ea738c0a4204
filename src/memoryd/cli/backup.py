"""``memoryd backup|restore-backup|export|import``: copies of the configured store.

Registered on the main CLI by :func:`register`; the work is in :mod:`memoryd.backup`,
reached through :class:`~memoryd.operator.Operator` (no ``Memory`` needed).
``restore-backup`` is not called ``restore`` because ``memoryd restore ID`` already
brings back one deleted memory (mem0's verb).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from memoryd.backup import BackupReport, ImportReport
from memoryd.cli.common import JsonOpt, console, err, store_operator

PathArg = Annotated[Path, typer.Argument(help="file path")]
ForceOpt = Annotated[bool, typer.Option("--force", help="replace a store that holds memories")]


def register(app: typer.Typer) -> None:
    """Add the backup commands to ``app``."""
    app.command("backup")(backup_command)
    app.command("restore-backup")(restore_command)
    app.command("export")(export_command)
    app.command("import")(import_command)


def _done(report: BackupReport | ImportReport, text: str, as_json: bool) -> None:
    """The report as one JSON line, or ``text`` with its fields filled in."""
    data = report.as_dict()
    if as_json:
        sys.stdout.write(json.dumps(data) + "\n")
    else:
        console.print(text.format(**data), highlight=False)


def backup_command(path: PathArg, as_json: JsonOpt = False) -> None:
    """Write a consistent copy of the store to PATH (a new file), safe while serving."""
    with store_operator() as op:
        report = op.backup(path)
    _done(report, "backed up {memories} memories to {path} ({bytes} bytes)", as_json)


def restore_command(path: PathArg, force: ForceOpt = False, as_json: JsonOpt = False) -> None:
    """Replace the store with a backup written by `memoryd backup`. Stop the server first."""
    with store_operator() as op:
        report = op.restore(path, force=force)
    _done(report, "restored {memories} memories into {path}", as_json)


def export_command(
    file: Annotated[Path, typer.Argument(help="JSON lines file to write ('-': stdout)")],
) -> None:
    """Every memory (any state) with its embedding and history, one JSON object a line."""
    with store_operator() as op:
        count = op.export_jsonl(sys.stdout if str(file) == "-" else file)
    if str(file) != "-":
        err.print(f"exported {count} memories to {file}", highlight=False)


def import_command(
    file: Annotated[Path, typer.Argument(help="JSON lines file written by `memoryd export`")],
    as_json: JsonOpt = False,
) -> None:
    """Add the memories in FILE exactly as exported; ids the store has are skipped."""
    with store_operator() as op:
        report = op.import_jsonl(file)
    _done(report, "imported {imported} memories ({skipped} already there, {read} read)", as_json)
