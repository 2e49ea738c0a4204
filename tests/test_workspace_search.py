"""memory_search over the workspace: OpenClaw defaults, MMR diversity, new agents watched."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from memoryd.core import Memory
from memoryd.workspace import resolve_workspace
from memoryd.workspace.bootstrap import init_workspace
from memoryd.workspace.indexer import index_workspace
from memoryd.workspace.search import memory_search
from memoryd.workspace.watcher import WorkspaceWatcher
from tests.test_workspace_support import make_workspace


def test_mmr_makes_room_for_a_different_relevant_hit(memory: Memory, tmp_path: Path) -> None:
    ws = make_workspace(memory, tmp_path / "ws")
    for n in range(4):  # the same reminder written into four diary days
        (ws.memory_dir / f"2026-03-2{n}.md").write_text(
            f"# 2026-03-2{n}\n\n## 10:00\n- Reminder: production deploys go through ArgoCD\n"
        )
    (ws.memory_dir / "rollback.md").write_text(
        "# Rollbacks\n- A bad production deploy is rolled back by reverting the commit; "
        "ArgoCD resyncs\n"
    )
    index_workspace(memory, ws)
    query = "how do production deploys go"
    plain = [h.hit.record.source.path for h in memory_search(memory, ws, query, max_results=3)]
    diverse = [
        h.hit.record.source.path for h in memory_search(memory, ws, query, max_results=3, mmr=True)
    ]
    assert all(p.startswith("memory/2026-03-2") for p in plain)  # three copies of one reminder
    assert diverse[0] == plain[0] and "memory/rollback.md" in diverse
    ws_settings = memory.settings.workspace  # a relevance floor, not OpenClaw's 0.35; ~1,000 tokens
    assert ws_settings.min_score == 0.2
    assert ws_settings.result_tokens == 1000


def test_the_watcher_picks_up_an_agent_created_while_serving(
    memory: Memory, tmp_path: Path
) -> None:
    memory.settings.workspace.watch = True

    async def scenario() -> float:
        watcher = WorkspaceWatcher(memory, rescan_s=0.3)
        await watcher.start()
        try:
            await asyncio.sleep(0.2)
            ws = resolve_workspace(memory.settings, "newbie", memory.store)  # under MEMORYD_HOME
            init_workspace(ws.root)
            (ws.memory_dir / "2026-03-27.md").write_text(
                "# Today\n- adopted a tortoise named Gus\n"
            )
            start = time.monotonic()
            while time.monotonic() - start < 10:
                hits = memory_search(memory, ws, "tortoise named Gus", max_results=1)
                if hits and "Gus" in hits[0].hit.text:
                    return time.monotonic() - start
                await asyncio.sleep(0.05)
            raise AssertionError("the new agent's diary was never indexed")
        finally:
            await watcher.stop()

    assert asyncio.run(scenario()) < 5
