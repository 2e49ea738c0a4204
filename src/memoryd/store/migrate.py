"""Copy one store into another: ``memoryd store migrate --to URL [--from URL]``.

Any store to any store (SQLite → PostgreSQL and back) through the bulk-copy part
of the :class:`~memoryd.store.Store` protocol: memories in every state with
their vectors, their history, the embedding cache, the pipelines' key/value
state and the store's meta (which embedding model built it).

Resumable: memories go over in insertion-ordered batches, and each batch
commits in the same transaction as the progress record in the target's kv
(``migrate:progress``), so a copy that is killed continues after the last
committed batch and never copies a row twice. Ids already in the target are
skipped. Running it again after it finished copies only what the source gained
since. The row counts of both stores are compared at the end.

Stop the servers that write to the source first: a memory changed after its
batch was copied is not copied again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from memoryd.errors import InvalidInputError, StoreError
from memoryd.store import Store

PROGRESS_KEY = "migrate:progress"
_OWN_PREFIX = "migrate:"  # kv keys of this module: never copied between stores

Progress = Callable[[str, int, int], None]  # (phase, done, total)


@dataclass
class MigrateReport:
    """What one run did, and the counts that were checked."""

    source: str
    target: str
    copied: int = 0  # memories inserted by this run
    skipped: int = 0  # memories already in the target
    cache: int = 0  # embedding cache entries offered to the target
    kv: int = 0
    resumed: bool = False
    source_totals: dict[str, int] = field(default_factory=dict)
    target_totals: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "target": self.target,
            "copied": self.copied,
            "skipped": self.skipped,
            "cache": self.cache,
            "kv": self.kv,
            "resumed": self.resumed,
            "source_totals": self.source_totals,
            "target_totals": self.target_totals,
        }


def migrate(
    source: Store,
    target: Store,
    *,
    batch: int = 500,
    progress: Progress | None = None,
) -> MigrateReport:
    """Copy everything in ``source`` into ``target``; see the module docstring."""
    if batch < 1:
        raise InvalidInputError(f"batch is {batch}", "use a batch size of at least 1")
    if source.url == target.url:
        raise InvalidInputError(
            f"the source and the target are the same store ({source.url})",
            "pass --to a different store URL",
        )
    state: dict[str, Any] = target.kv_get(PROGRESS_KEY) or {}
    if state and state.get("source") != source.url:
        raise StoreError(
            f"{target.url} holds a copy from {state.get('source')}, not from {source.url}",
            "migrate into an empty store, or resume with the original --from URL",
        )
    before = target.totals()
    if not state and before["memories"]:
        raise StoreError(
            f"{target.url} already holds {before['memories']} memories",
            "migrate into an empty store (a new database, schema or file)",
        )
    report = MigrateReport(source=source.url, target=target.url, resumed=bool(state))
    state = {"source": source.url, "memories_after": 0, "cache_after": None, **state}
    state["done"] = False
    total = source.totals()

    with target.bulk_load():
        _copy_memories(source, target, state, batch, report, total["memories"], progress)
    _copy_cache(source, target, state, batch * 4, report, total["cache"], progress)
    kv = {k: v for k, v in source.kv_items().items() if not k.startswith(_OWN_PREFIX)}
    with target.atomic():
        for key, value in kv.items():
            target.kv_set(key, value)
        for key, text in source.meta_items().items():
            target.set_meta(key, text)
    report.kv = len(kv)

    report.source_totals = source.totals()
    report.target_totals = target.totals()
    _check_counts(report, kv, target)
    target.kv_set(PROGRESS_KEY, {**state, "done": True})
    return report


def _copy_memories(
    source: Store,
    target: Store,
    state: dict[str, Any],
    batch: int,
    report: MigrateReport,
    total: int,
    progress: Progress | None,
) -> None:
    done = 0
    while True:
        records, history, cursor = source.export_memories(state["memories_after"], batch)
        if not records:
            return
        with target.atomic():  # the batch and the progress record, or neither
            inserted = target.import_memories(records, history)
            state["memories_after"] = cursor
            target.kv_set(PROGRESS_KEY, state)
        report.copied += inserted
        report.skipped += len(records) - inserted
        done += len(records)
        if progress:
            progress("memories", done, total)


def _copy_cache(
    source: Store,
    target: Store,
    state: dict[str, Any],
    batch: int,
    report: MigrateReport,
    total: int,
    progress: Progress | None,
) -> None:
    while True:
        after = state["cache_after"]
        items = source.export_cache(tuple(after) if after else None, batch)
        if not items:
            return
        with target.atomic():
            target.import_cache(items)
            state["cache_after"] = [items[-1][0], items[-1][1]]
            target.kv_set(PROGRESS_KEY, state)
        report.cache += len(items)
        if progress:
            progress("embedding cache", report.cache, total)


def _check_counts(report: MigrateReport, kv: dict[str, Any], target: Store) -> None:
    src, dst = report.source_totals, report.target_totals
    wrong = [
        f"{k}: source {src[k]}, target {dst[k]}"
        for k in ("memories", "history", "cache")
        if src[k] != dst[k]
    ]
    missing = [k for k, v in kv.items() if target.kv_get(k) != v]
    if missing:
        wrong.append(f"kv keys not copied: {', '.join(missing[:5])}")
    if wrong:
        raise StoreError(
            "the copy does not match the source (" + "; ".join(wrong) + ")",
            "stop every server writing to either store and run the same command again (it "
            "copies what is missing); if memories changed after they were copied, migrate "
            "into a fresh store instead",
        )
