"""Re-index workspace files as they change, inside ``memoryd serve``.

watchfiles (inotify/FSEvents through Rust's ``notify``) reports changes under
every known workspace; a burst is debounced (``workspace.debounce_ms`` of quiet,
at most ~1 s of grouping) and only the changed Markdown files are re-indexed,
in a worker thread so the event loop keeps serving. When something other than
a Markdown file changes (a directory renamed, say) the whole workspace is
re-checked, which costs hashing, not embedding. Every few seconds the set of
workspaces is looked at again, so an agent created while serving is watched
too. At start every workspace gets one full pass, which picks up edits made
while the server was down.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path

from starlette.concurrency import run_in_threadpool

from memoryd.core import Memory
from memoryd.errors import MemorydError
from memoryd.workspace.indexer import index_workspace
from memoryd.workspace.layout import Workspace, known_agents, resolve_workspace

log = logging.getLogger("memoryd.workspace")

MAX_GROUP_MS = 1000  # never hold a burst of changes back longer than this


class WorkspaceWatcher:
    """Watches every known agent workspace and keeps its chunks in step with the files."""

    def __init__(self, memory: Memory, *, rescan_s: float = 5.0) -> None:
        self.memory = memory
        self.rescan_s = rescan_s
        self.passes = 0  # indexing passes run; lets callers see it working
        self._stop = asyncio.Event()
        self.caught_up = False  # the first full pass over the workspaces has finished
        self._task: asyncio.Task[None] | None = None
        self._catch_up: list[asyncio.Task[None]] = []

    def workspaces(self) -> list[Workspace]:
        settings = self.memory.settings
        return [
            resolve_workspace(settings, agent, self.memory.store)
            for agent in known_agents(settings, self.memory.store)
        ]

    async def start(self) -> None:
        """Start watching; returns at once (the catch-up pass runs in the background)."""
        self._task = asyncio.create_task(self._run(), name="memoryd-workspace-watcher")

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            await self._task
        if self._catch_up:
            await asyncio.gather(*self._catch_up)

    async def _run(self) -> None:
        caught_up: set[Path] = set()
        while not self._stop.is_set():
            spaces = self.workspaces()
            fresh = [ws for ws in spaces if ws.root not in caught_up and ws.root.is_dir()]
            if fresh:
                # Once the watch below is in place, index everything once: edits made
                # while the server was down. Any edit racing this is seen by either.
                caught_up.update(ws.root for ws in fresh)
                self._catch_up.append(asyncio.create_task(self._initial(fresh)))
            roots = _roots(spaces)
            if not roots:
                with suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), timeout=self.rescan_s)
                continue
            await self._watch(spaces, roots)

    async def _initial(self, spaces: list[Workspace]) -> None:
        await asyncio.sleep(0.2)  # let the watch start first
        for ws in spaces:
            if not self._stop.is_set():
                await self._index(ws, None)
        self.caught_up = True

    async def _watch(self, spaces: list[Workspace], roots: list[Path]) -> None:
        """Watch ``roots`` until stopped or until the set of workspaces changes."""
        from watchfiles import awatch

        step = max(10, self.memory.settings.workspace.debounce_ms)
        async for changes in awatch(
            *roots,
            stop_event=self._stop,
            step=step,
            debounce=max(step, MAX_GROUP_MS),
            rust_timeout=int(self.rescan_s * 1000),
            yield_on_timeout=True,
            ignore_permission_denied=True,
        ):
            if changes:
                await self._handle({Path(p) for _, p in changes}, spaces)
            current = self.workspaces()
            if _roots(current) != roots:
                return

    async def _handle(self, paths: set[Path], spaces: list[Workspace]) -> None:
        for ws in spaces:
            mine = [p for p in paths if _under(p, ws)]
            if not mine:
                continue
            if any(p.suffix.lower() != ".md" and not _hidden(p, ws) for p in mine):
                await self._index(ws, None)  # a directory moved or similar: check everything
                continue
            wanted = [p for p in mine if ws.is_indexed_path(p)]
            if wanted:
                await self._index(ws, sorted(wanted))

    async def _index(self, ws: Workspace, paths: list[Path] | None) -> None:
        try:
            report = await run_in_threadpool(index_workspace, self.memory, ws, paths=paths)
        except MemorydError as exc:  # log and keep watching: the next change retries
            log.error("workspace %s: indexing failed: %s", ws.agent_id, exc)
            return
        except OSError as exc:
            log.error("workspace %s: indexing failed: %s", ws.agent_id, exc)
            return
        self.passes += 1
        changed = [f for f in report.files if f.status != "unchanged"]
        if changed:
            log.info(
                "workspace %s: %s", ws.agent_id, ", ".join(f"{f.path} {f.status}" for f in changed)
            )


def _roots(spaces: list[Workspace]) -> list[Path]:
    roots: set[Path] = set()
    for ws in spaces:
        for root in (ws.root, *ws.extra_roots()):
            if root.is_dir():
                roots.add(root)
            elif root.is_file():
                roots.add(root.parent)
    return sorted(roots)


def _under(path: Path, ws: Workspace) -> bool:
    return any(path == r or path.is_relative_to(r) for r in (ws.root, *ws.extra_roots()))


def _hidden(path: Path, ws: Workspace) -> bool:
    try:
        rel = path.relative_to(ws.root)
    except ValueError:
        return path.name.startswith(".")
    return any(part.startswith(".") for part in rel.parts)


@asynccontextmanager
async def watching(memory: Memory) -> AsyncIterator[WorkspaceWatcher | None]:
    """Run the watcher for the lifetime of the server when ``workspace.watch`` is on."""
    if not memory.settings.workspace.watch:
        yield None
        return
    watcher = WorkspaceWatcher(memory)
    await watcher.start()
    try:
        yield watcher
    finally:
        await watcher.stop()
