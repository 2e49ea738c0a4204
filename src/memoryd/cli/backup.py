"""``memoryd backup|restore-backup|export|import``: copies of the configured store.

Registered on the main CLI by :func:`register`; the work is in :mod:`memoryd.backup`.
``restore-backup`` is not called ``restore`` because ``memoryd restore ID`` already
brings back one deleted memory (mem0's verb).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from memoryd import backup as bk
from memoryd.cli.common import JsonOpt, console, err, fail
from memoryd.errors import InvalidInputError, MemorydError
from memoryd.settings import Settings
from memoryd.store import open_store

PathArg = Annotated[Path, typer.Argument(help="file path")]


def register(app: typer.Typer) -> None:
    """Add the backup commands to ``app``."""
    app.command("backup")(backup_command)
    app.command("restore-backup")(restore_command)
    app.command("export")(export_command)
    app.command("import")(import_command)


def _done(data: dict[str, Any], text: str, as_json: bool) -> None:
    if as_json:
        sys.stdout.write(json.dumps(data) + "\n")
    else:
        console.print(text, highlight=False)


def backup_command(path: PathArg, as_json: JsonOpt = False) -> None:
    """Write a consistent copy of the store to PATH (a new file), safe while serving."""
    settings = Settings()
    try:
        report = bk.backup(settings.store_url, path, settings.store)
    except MemorydError as exc:
        fail(exc)
    _done(
        report.as_dict(),
        f"backed up {report.memories} memories to {report.path} ({report.bytes} bytes)",
        as_json,
    )


def restore_command(
    path: PathArg,
    force: Annotated[
        bool, typer.Option("--force", help="replace a store that holds memories")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Replace the store with a backup written by `memoryd backup`. Stop the server first."""
    settings = Settings()
    try:
        report = bk.restore(settings.store_url, path, force=force, settings=settings.store)
    except MemorydError as exc:
        fail(exc)
    _done(report.as_dict(), f"restored {report.memories} memories into {report.path}", as_json)


def export_command(
    file: Annotated[Path, typer.Argument(help="JSON lines file to write ('-': stdout)")],
) -> None:
    """Every memory (any state) with its embedding and history, one JSON object a line."""
    settings = Settings()
    try:
        if str(file) != "-" and file.exists():
            raise InvalidInputError(f"{file} already exists", "export into a new file")
        store = open_store(settings.store_url, settings.store)
        try:
            if str(file) == "-":
                count = bk.export_jsonl(store, sys.stdout)
            else:
                partial = file.with_name(file.name + ".partial")
                with partial.open("w", encoding="utf-8") as fh:
                    count = bk.export_jsonl(store, fh)
                partial.rename(file)
        finally:
            store.close()
    except MemorydError as exc:
        fail(exc)
    if str(file) != "-":
        err.print(f"exported {count} memories to {file}", highlight=False)


def import_command(
    file: Annotated[Path, typer.Argument(help="JSON lines file written by `memoryd export`")],
    as_json: JsonOpt = False,
) -> None:
    """Add the memories in FILE exactly as exported; ids the store has are skipped."""
    settings = Settings()
    try:
        if not file.is_file():
            raise InvalidInputError(f"there is no file at {file}", "check the path")
        store = open_store(settings.store_url, settings.store)
        try:
            with file.open(encoding="utf-8") as fh:
                report = bk.import_jsonl(store, fh)
        finally:
            store.close()
    except MemorydError as exc:
        fail(exc)
    _done(
        report.as_dict(),
        f"imported {report.imported} memories ({report.skipped} already there, {report.read} read)",
        as_json,
    )
