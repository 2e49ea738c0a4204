"""Backup, restore, export and import of a whole store.

* :func:`backup` copies a SQLite store with SQLite's online backup API: one read
  transaction, so the copy is a consistent snapshot even while a server keeps
  writing (WAL readers never block writers). PostgreSQL has ``pg_dump`` for that.
* :func:`restore` copies a backup back over the configured store, through the
  same API, and refuses to replace memories that are there unless forced.
* :func:`export_jsonl` / :func:`import_jsonl` are the portable form: one JSON
  object per memory with its full record (state, timestamps, hash, the embedding
  as base64 of float32 bytes) and its history, oldest first. Store-internal
  history ids are left out so that export → import → export gives identical
  lines. Import skips ids the store already has, so running it twice is harmless.
"""

from __future__ import annotations

import base64
import json
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np
from pydantic import ValidationError

from memoryd.errors import (
    InvalidInputError,
    ModelMismatchError,
    NotFoundError,
    StoreError,
)
from memoryd.models import HistoryEntry, MemoryRecord
from memoryd.settings import LimitSettings, StoreSettings
from memoryd.store import Store, open_store
from memoryd.store.sqlite import SQLiteStore
from memoryd.validate import check_id

_SQLITE_MAGIC = b"SQLite format 3\x00"
_BATCH = 500


class BackupNotSupportedError(InvalidInputError):
    """The store is not a SQLite file, so memoryd cannot copy it page by page."""


class StoreNotEmptyError(StoreError):
    """A restore would replace memories that are in the store."""

    status_code = 409


@dataclass
class BackupReport:
    path: str
    memories: int
    bytes: int

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.path, "memories": self.memories, "bytes": self.bytes}


@dataclass
class ImportReport:
    read: int = 0
    imported: int = 0
    skipped: int = 0  # ids the store already had

    def as_dict(self) -> dict[str, int]:
        return {"read": self.read, "imported": self.imported, "skipped": self.skipped}


def sqlite_path(url: str) -> Path:
    """The file behind a SQLite store URL; a named error for any other store."""
    scheme = url.split("://", 1)[0] if "://" in url else "sqlite"
    if scheme != "sqlite":
        raise BackupNotSupportedError(
            f"backup and restore copy SQLite files; the store is {scheme} ({_redact(url)})",
            "for PostgreSQL use pg_dump / pg_restore, or `memoryd export FILE` for a "
            "portable copy of the memories",
        )
    path = url.removeprefix("sqlite:///").removeprefix("sqlite://")
    if path == ":memory:":
        raise BackupNotSupportedError(
            "the store is in memory; there is no file to back up",
            "configure a file store (MEMORYD_STORE__URL=/path/memoryd.db)",
        )
    return Path(path).expanduser()


def _redact(url: str) -> str:
    """A URL without its password, for messages."""
    if "@" not in url or "://" not in url:
        return url
    scheme, rest = url.split("://", 1)
    return f"{scheme}://…@{rest.rsplit('@', 1)[1]}"


def _copy(source: Path, target: Path) -> None:
    """Copy database ``source`` into ``target`` with the online backup API (all pages in
    one step: one read transaction, so a consistent snapshot)."""
    src = sqlite3.connect(f"file:{source}?mode=ro", uri=True, timeout=30)
    try:
        dst = sqlite3.connect(str(target), timeout=30)
        try:
            src.backup(dst)
        finally:
            dst.close()
    finally:
        src.close()


def backup(store_url: str, dest: Path, settings: StoreSettings | None = None) -> BackupReport:
    """Write a consistent copy of the SQLite store at ``store_url`` to ``dest`` (a new file)."""
    source = sqlite_path(store_url)
    if not source.exists():
        raise NotFoundError(
            f"there is no store at {source} yet",
            "add a memory first, or point MEMORYD_HOME / MEMORYD_STORE__URL at the store",
        )
    dest = dest.expanduser()
    if dest.exists():
        raise InvalidInputError(
            f"{dest} already exists",
            "back up into a new file; move or delete the old backup first",
        )
    if dest.resolve().parent == source.resolve().parent and dest.name == source.name:
        raise InvalidInputError("the backup path is the store itself", "choose another path")
    dest.parent.mkdir(parents=True, exist_ok=True)
    partial = dest.with_name(dest.name + ".partial")
    partial.unlink(missing_ok=True)
    try:
        _copy(source, partial)
        memories = _checked_count(partial, settings)
        partial.rename(dest)  # a reader never sees a half-written backup under ``dest``
    finally:
        partial.unlink(missing_ok=True)
    return BackupReport(path=str(dest), memories=memories, bytes=dest.stat().st_size)


def _checked_count(path: Path, settings: StoreSettings | None) -> int:
    """Open ``path`` as a memoryd store, run its integrity check, count its memories."""
    store = open_store(str(path), settings)
    try:
        problems = store.integrity_check() if isinstance(store, SQLiteStore) else []
        if problems:
            raise StoreError(
                f"{path} failed its integrity check: {'; '.join(problems)}",
                "do not rely on this copy; take another backup",
            )
        return store.totals()["memories"]
    finally:
        store.close()


def _validate_backup(path: Path, settings: StoreSettings | None) -> int:
    if not path.is_file():
        raise NotFoundError(f"there is no backup file at {path}", "check the path")
    with path.open("rb") as fh:
        if fh.read(len(_SQLITE_MAGIC)) != _SQLITE_MAGIC:
            raise InvalidInputError(
                f"{path} is not a memoryd backup (not an SQLite file)",
                "pass a file written by `memoryd backup`; for JSON lines use `memoryd import`",
            )
    return _checked_count(path, settings)  # open_store raises StoreError for foreign files


def restore(
    store_url: str, source: Path, *, force: bool = False, settings: StoreSettings | None = None
) -> BackupReport:
    """Replace the SQLite store at ``store_url`` with the backup ``source``.

    Stop servers using the store first: they keep their own view of it."""
    target = sqlite_path(store_url)
    source = source.expanduser()
    if target.exists() and source.resolve() == target.resolve():
        raise InvalidInputError("the backup is the store itself", "pass the backup file")
    memories = _validate_backup(source, settings)
    if target.exists() and target.stat().st_size:
        store = open_store(str(target), settings)
        try:
            present = store.totals()["memories"]
        finally:
            store.close()
        if present and not force:
            raise StoreNotEmptyError(
                f"the store at {target} holds {present} memories; restoring would replace them",
                "stop the server, then run again with --force (or `memoryd backup` it first)",
            )
    target.parent.mkdir(parents=True, exist_ok=True)
    _copy(source, target)
    restored = _checked_count(target, settings)
    if restored != memories:
        raise StoreError(
            f"restored {restored} memories but the backup holds {memories}",
            "stop every process writing to the store and restore again",
        )
    return BackupReport(path=str(target), memories=restored, bytes=target.stat().st_size)


# -- JSON lines ---------------------------------------------------------------------------------


def _line(record: MemoryRecord, history: list[HistoryEntry], model: dict[str, str]) -> str:
    obj = record.model_dump(mode="json")
    vector = record.embedding
    obj["embedding"] = (
        None
        if vector is None
        else base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")
    )
    obj["history"] = [h.model_dump(mode="json", exclude={"id"}) for h in history]
    obj.update(model)
    # ASCII escapes keep lone surrogates and odd Unicode exact through any file encoding
    return json.dumps(obj, sort_keys=True)


def _model_meta(store: Store) -> dict[str, str]:
    name, dim = store.get_meta("embed_model"), store.get_meta("embed_dim")
    return {"embed_model": name, "embed_dim": dim} if name and dim else {}


def export_lines(store: Store) -> Iterator[str]:
    """Every memory in insertion order (any state), one JSON line each."""
    model = _model_meta(store)
    after = 0
    while True:
        records, history, after = store.export_memories(after, _BATCH)
        if not records:
            return
        by_id: dict[str, list[HistoryEntry]] = {}
        for entry in history:
            by_id.setdefault(entry.memory_id, []).append(entry)
        for record in records:
            yield _line(record, by_id.get(record.id, []), model)


def export_jsonl(store: Store, out: IO[str]) -> int:
    """Write :func:`export_lines` to ``out``; returns how many memories were written."""
    count = 0
    for line in export_lines(store):
        out.write(line + "\n")
        count += 1
    return count


def _parse(number: int, line: str) -> tuple[MemoryRecord, list[HistoryEntry], dict[str, str]]:
    try:
        obj = json.loads(line)
        if not isinstance(obj, dict):
            raise ValueError("not a JSON object")
        history = obj.pop("history", None) or []
        vector = obj.pop("embedding", None)
        model = {k: str(obj.pop(k)) for k in ("embed_model", "embed_dim") if k in obj}
        record = MemoryRecord.model_validate(obj)
        if isinstance(vector, str):
            record.embedding = np.frombuffer(base64.b64decode(vector, validate=True), "<f4")
            record.embedding = record.embedding.astype(np.float32)
        elif isinstance(vector, list):
            record.embedding = np.asarray(vector, dtype=np.float32)
        elif vector is not None:
            raise ValueError("embedding must be base64 of float32 bytes or a list of floats")
        entries = [HistoryEntry.model_validate({**h, "id": 0}) for h in history]
        if any(e.memory_id != record.id for e in entries):
            raise ValueError("a history entry names another memory")
        _check_ids(record)
    except (ValueError, TypeError, ValidationError, RecursionError) as exc:
        raise InvalidInputError(
            f"line {number} is not a memoryd export record: {str(exc)[:300]}",
            "pass a file written by `memoryd export`; nothing after that line was imported",
        ) from None
    return record, entries, model


def _check_ids(record: MemoryRecord) -> None:
    """The same id rule as every other way in: an imported user or agent id names
    folders and scopes later (``"../../escape"`` must not)."""
    limits = LimitSettings()
    check_id(record.id, "id", limits, required=True)
    check_id(record.user_id, "user_id", limits, required=True)
    check_id(record.agent_id, "agent_id", limits)
    check_id(record.run_id, "run_id", limits)


def import_lines(store: Store, lines: Iterable[str]) -> ImportReport:
    """Insert every memory in ``lines`` exactly as exported; ids already there are skipped.

    Batches commit one by one: after an error, the batches before it are in the store
    and running the import again skips them."""
    report = ImportReport()
    batch: list[MemoryRecord] = []
    history: list[HistoryEntry] = []
    meta = _model_meta(store)

    def flush() -> None:
        if batch:
            inserted = store.import_memories(batch, history)
            report.imported += inserted
            report.skipped += len(batch) - inserted
            batch.clear()
            history.clear()

    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        record, entries, model = _parse(number, line)
        _check_model(store, meta, model, record, number)
        report.read += 1
        batch.append(record)
        history.extend(entries)
        if len(batch) >= _BATCH:
            flush()
    flush()
    return report


def _check_model(
    store: Store, meta: dict[str, str], model: dict[str, str], record: MemoryRecord, number: int
) -> None:
    """Vectors from another embedding model would poison vector search: refuse them."""
    if record.embedding is None:
        return
    if model and not meta:  # an empty store takes the model of what it is given
        store.set_meta("embed_model", model["embed_model"])
        store.set_meta("embed_dim", model["embed_dim"])
        meta.update(model)
    if meta and model and model != meta:
        raise ModelMismatchError(
            f"line {number} was embedded with {model['embed_model']} (dim {model['embed_dim']});"
            f" this store uses {meta['embed_model']} (dim {meta['embed_dim']})",
            "import into a new store, then `memoryd reindex` it for the configured model",
        )
    if meta and len(record.embedding) != int(meta["embed_dim"]):
        raise InvalidInputError(
            f"line {number} has a {len(record.embedding)}-dim embedding; the store uses "
            f"{meta['embed_dim']}",
            "export and import between stores built with the same embedding model",
        )


def import_jsonl(store: Store, inp: IO[str]) -> ImportReport:
    return import_lines(store, inp)
