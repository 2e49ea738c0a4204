"""A model change rebuilds the index without a window where search fails or mixes models."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np

from memoryd.core import Memory
from memoryd.embed import Embedder, create_embedder
from memoryd.settings import EmbedSettings, OnnxEmbedSettings, Settings
from memoryd.store import Store, open_store
from memoryd.workspace.indexer import index_workspace
from memoryd.workspace.search import memory_search
from tests.test_workspace_support import make_workspace

QUERY = "which database did we choose for the project"
EXPECTED = "memory/2026-03-27.md"


def _new_model_settings(settings: Settings) -> Settings:
    """The same store with another model: MiniLM with CLS pooling gives other vectors."""
    other = settings.model_copy(deep=True)
    other.embed = EmbedSettings(onnx=OnnxEmbedSettings(model_name="minilm-cls", pooling="cls"))
    return other


def test_model_change_rebuilds_with_no_failing_or_mixed_window(
    memory: Memory, settings: Settings, embedder: Embedder, tmp_path: Path
) -> None:
    ws = make_workspace(memory, tmp_path / "ws")
    for n in range(20):
        (ws.memory_dir / f"topic-{n}.md").write_text(
            f"# Topic {n}\n- note {n} about the coffee grinder, the bike and the garden\n"
        )
    index_workspace(memory, ws)
    for n in range(20):
        memory.add(f"unrelated fact number {n} about kites", user_id="default", agent_id="dev")

    def all_vectors(store: Store) -> dict[str, np.ndarray]:
        """Every stored vector, read in one statement: one consistent snapshot."""
        records, _, _ = store.export_memories(0, 100_000)
        return {r.id: r.embedding for r in records}

    old_vectors = all_vectors(memory.store)

    new_settings = _new_model_settings(settings)
    new_settings.workspace.agents = dict(memory.settings.workspace.agents)
    cls_embedder = create_embedder(new_settings.embed)
    rebuilder = Memory(
        new_settings, embedder=cls_embedder, clock=memory.clock, allow_model_change=True
    )

    searches: list[tuple[float, str, float, bool]] = []  # (time, path, vector, pre-swap)
    snapshots: list[str] = []  # each a whole-table read: "old", "new" or "mixed"
    errors: list[BaseException] = []
    stop = threading.Event()

    def search_with_the_old_model() -> None:
        try:
            while not stop.is_set():
                hits = memory_search(memory, ws, QUERY, max_results=1)
                top = hits[0].hit
                assert top.record.source is not None
                # still the old model's store once the search is over: the swap (one
                # transaction) had not committed, so the search ran before it
                before_swap = memory.vectors_match()
                searches.append(
                    (time.monotonic(), top.record.source.path, top.parts.vector, before_swap)
                )
                time.sleep(0.01)  # leave the rebuild some CPU
        except BaseException as exc:  # a failing search is what this test looks for
            errors.append(exc)

    def watch_the_vectors() -> None:
        reader = open_store(settings.store_url, settings.store)  # its own connection
        try:
            while not stop.is_set():
                snapshot = all_vectors(reader)
                same = [
                    np.allclose(v, old_vectors[i], atol=1e-6)
                    for i, v in snapshot.items()
                    if i in old_vectors
                ]
                snapshots.append("old" if all(same) else "new" if not any(same) else "mixed")
                time.sleep(0.02)
        finally:
            reader.close()

    threads = [
        threading.Thread(target=search_with_the_old_model),
        threading.Thread(target=watch_the_vectors),
    ]
    for t in threads:
        t.start()
    added_during_build: list[str] = []

    def progress(done: int, total: int) -> None:
        if not added_during_build:  # a write lands while the build runs
            ev = memory.add("the garage door code changed", user_id="default", agent_id="dev")
            added_during_build.append(str(ev[0].id))

    started = time.monotonic()
    count = rebuilder.reindex(progress)
    swapped_at = time.monotonic()
    deadline = time.monotonic() + 30  # let the readers see the swapped store too
    while not any(s[0] > swapped_at + 0.1 for s in searches) and time.monotonic() < deadline:
        time.sleep(0.05)  # a loaded machine may take longer than a fixed pause
    time.sleep(0.1)
    stop.set()
    for t in threads:
        t.join()

    assert not errors, errors
    assert count == len(old_vectors) + 1
    during = [s for s in searches if started <= s[0] < swapped_at and s[3]]
    assert len(during) >= 3
    assert all(path == EXPECTED and vector > 0 for _, path, vector, _b in during)  # full hybrid
    after = [s for s in searches if s[0] > swapped_at + 0.1]
    assert after and not any(b for *_, b in after)
    assert all(path == EXPECTED for _, path, _v, _b in after)  # keyword-only, still right
    assert "mixed" not in snapshots and "old" in snapshots and snapshots[-1] == "new"

    # the store now belongs to the new model, and the rebuilder searches with vectors again
    assert rebuilder.store.get_meta("embed_model") == "minilm-cls"
    assert rebuilder.vectors_match() and not memory.vectors_match()
    top = memory_search(rebuilder, ws, QUERY, max_results=1)[0].hit
    assert top.record.source is not None and top.record.source.path == EXPECTED
    assert top.parts.vector > 0
    straggler = rebuilder.get(added_during_build[0])
    stored = all_vectors(rebuilder.store)[straggler.id]
    assert np.allclose(stored, cls_embedder.embed([straggler.index_text])[0], atol=1e-5)
    before = cls_embedder.calls  # type: ignore[attr-defined]
    assert index_workspace(rebuilder, ws).embedded == 0  # chunks are current for the new model
    assert cls_embedder.calls == before  # type: ignore[attr-defined]
    rebuilder.close()
