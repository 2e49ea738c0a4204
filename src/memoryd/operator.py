"""``Operator``: what the person running memoryd does to the whole deployment.

The faces reach one caller's memories through ``memory.scope(...)``; the operator
commands of the CLI (``init``, ``index``, ``status``, ``run``, ``dream rollback``,
``backup``, ``restore-backup``, ``export``, ``import``, ``store migrate``) act on
every workspace or on the store itself, so no scope fits them. They come here, and
each method hands off to the engine function that does the work (the same ones
``serve``'s scheduler and watcher call), so the CLI imports no store, pipeline or
workspace module (``tests/test_faces_imports.py``).

Built from a :class:`~memoryd.core.Memory`, or from :class:`~memoryd.settings.Settings`
alone for the store-level actions (backup, restore, export, import, migrate), which
must work on a store a ``Memory`` would refuse to open (another embedding model, a
store being restored).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from memoryd import backup as bk
from memoryd.core import Memory
from memoryd.errors import InvalidInputError
from memoryd.pipelines.backfill import BackfillReport, RollbackReport
from memoryd.settings import Settings
from memoryd.store import Store, open_store
from memoryd.store.migrate import MigrateReport, migrate
from memoryd.store.migrate import Progress as MigrateProgress
from memoryd.validate import check_id
from memoryd.workspace import register_workspace, resolve_workspace
from memoryd.workspace.bootstrap import InitReport, init_workspace
from memoryd.workspace.indexer import IndexReport, index_workspace
from memoryd.workspace.indexer import Progress as IndexProgress
from memoryd.workspace.layout import known_agents
from memoryd.workspace.status import all_workspace_status

if TYPE_CHECKING:
    from memoryd.pipelines.rollback import Undone
    from memoryd.pipelines.runs import RunRecord

__all__ = [  # with the reports the operator commands print
    "BackfillReport",
    "IndexProgress",
    "IndexReport",
    "InitReport",
    "MigrateProgress",
    "MigrateReport",
    "Operator",
    "RollbackReport",
]


class Operator:
    """Whole-deployment actions: ``Operator(memory)``, or ``Operator(settings)`` for the
    store-level ones. Each returns the engine's report; printing is the caller's."""

    def __init__(self, source: Memory | Settings) -> None:
        self._memory = source if isinstance(source, Memory) else None
        self.settings = source.settings if isinstance(source, Memory) else source

    @property
    def memory(self) -> Memory:
        if self._memory is None:
            raise InvalidInputError(
                "this action needs the memory, and the operator was built from Settings",
                "build it from the Memory: Operator(Memory(settings))",
            )
        return self._memory

    # -- workspaces ------------------------------------------------------------------------------
    def agents(self) -> list[str]:
        """Every agent with a workspace: configured, registered, or found on disk."""
        return known_agents(self.settings, self.memory.store)

    def workspace_status(self) -> list[dict[str, Any]]:
        """Per agent: files, chunks, model, last index and files waiting."""
        return all_workspace_status(self.memory)

    def init_workspace(
        self, agent: str, path: Path | None = None
    ) -> tuple[InitReport, IndexReport]:
        """Create ``agent``'s workspace (at ``path``, remembered, or the default place)
        without overwriting a file, then index it."""
        mem = self.memory
        if path is not None:
            agent_id = check_id(agent, "agent_id", self.settings.limits, required=True) or agent
            register_workspace(mem.store, agent_id, path)
        ws = resolve_workspace(self.settings, agent, mem.store)
        return init_workspace(ws.root), index_workspace(mem, ws)

    def index(
        self, agent: str, *, force: bool = False, progress: IndexProgress | None = None
    ) -> IndexReport:
        """Index ``agent``'s workspace now: changed files only, unless ``force``;
        ``progress(done, total, path)`` after each file."""
        ws = resolve_workspace(self.settings, agent, self.memory.store)
        return index_workspace(self.memory, ws, force=force, progress=progress)

    # -- pipelines -------------------------------------------------------------------------------
    def run_pipeline(
        self, name: str, *, agent: str | None = None, dry_run: bool = False
    ) -> RunRecord:
        """Run pipeline ``name`` once, under the scheduler's lock, and record the run."""
        from memoryd.pipelines.runs import run_pipeline

        return run_pipeline(self.memory, name, agent=agent, dry_run=dry_run)

    def rollback_dream(self, run_id: str) -> Undone:
        """Undo dream run ``run_id``: what it added deleted, updated reverted, deleted restored."""
        from memoryd.pipelines.dream import rollback

        return rollback(self.memory, run_id)

    # -- the store -------------------------------------------------------------------------------
    def backup(self, path: Path) -> bk.BackupReport:
        """A consistent copy of the SQLite store in the new file ``path``."""
        return bk.backup(self.settings.store_url, path, self.settings.store)

    def restore(self, path: Path, *, force: bool = False) -> bk.BackupReport:
        """Replace the store with the backup at ``path`` (``force``: even one with memories)."""
        return bk.restore(self.settings.store_url, path, force=force, settings=self.settings.store)

    def export_jsonl(self, target: Path | IO[str]) -> int:
        """Every memory as JSON lines into ``target``: an open stream, or a new file (written
        beside it as ``.partial`` and renamed when complete). Returns how many."""
        if isinstance(target, Path) and target.exists():
            raise InvalidInputError(f"{target} already exists", "export into a new file")
        with self._store() as store:
            if not isinstance(target, Path):
                return bk.export_jsonl(store, target)
            partial = target.with_name(target.name + ".partial")
            with partial.open("w", encoding="utf-8") as fh:
                count = bk.export_jsonl(store, fh)
            partial.rename(target)
            return count

    def import_jsonl(self, file: Path) -> bk.ImportReport:
        """Add the memories of a ``memoryd export`` file as they were; known ids are skipped."""
        if not file.is_file():
            raise InvalidInputError(f"there is no file at {file}", "check the path")
        with self._store() as store, file.open(encoding="utf-8") as fh:
            return bk.import_jsonl(store, fh)

    def migrate(
        self,
        to: str,
        *,
        source_url: str | None = None,
        batch: int = 500,
        progress: MigrateProgress | None = None,
    ) -> MigrateReport:
        """Copy the store (or ``source_url``'s) into the store at ``to``; resumable."""
        with self._store(source_url) as source, self._store(to) as target:
            return migrate(source, target, batch=batch, progress=progress)

    def duplicate_jobs(self) -> list[str]:
        """Jobs OpenClaw and memoryd both do (session notes, dreaming), as warnings."""
        from memoryd.workspace.openclaw import duplicate_jobs

        return duplicate_jobs(
            self.settings.workspace.openclaw_dir.expanduser(),
            dream_enabled="dream" not in self.settings.pipelines.disabled,
        )

    @staticmethod
    def openclaw_sessions(
        path: Path, session: str | None = None
    ) -> list[tuple[str, list[str]]] | None:
        """``(session id, its events as JSON lines)`` of an OpenClaw session store (all its
        sessions, or ``session``), read-only; None when ``path`` is not one (a JSONL file)."""
        from memoryd.workspace import openclaw_store

        if not openclaw_store.is_store(path):
            return None
        with openclaw_store.open_store(path) as conn:
            ids = [s.session_id for s in openclaw_store.sessions(conn)]
            if session is not None and session not in ids:
                raise InvalidInputError(
                    f"{path} has no session {session!r} (it has: {', '.join(ids) or 'none'})",
                    "pass one of them with --session, or none to import them all",
                )
            return [
                (sid, list(openclaw_store.session_lines(conn, sid)))
                for sid in ([session] if session else ids)
            ]

    @contextmanager
    def _store(self, url: str | None = None) -> Iterator[Store]:
        """The store at ``url`` (default: the configured one), closed afterwards."""
        store = open_store(url or self.settings.store_url, self.settings.store)
        try:
            yield store
        finally:
            store.close()
