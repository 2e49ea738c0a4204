"""Indexing workspace Markdown into the store: citeable, incremental, safe."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from memoryd.core import Memory
from memoryd.embed import Embedder
from memoryd.models import Filters, Origin
from memoryd.settings import Settings
from memoryd.store.sqlite import SQLiteStore
from memoryd.workspace import Workspace
from memoryd.workspace.files import memory_get
from memoryd.workspace.indexer import index_workspace
from memoryd.workspace.search import memory_search
from memoryd.workspace.status import workspace_status
from tests.test_workspace_support import calls, lines_of, make_workspace


@pytest.fixture
def ws(memory: Memory, tmp_path: Path) -> Workspace:
    return make_workspace(memory, tmp_path / "ws-dev")


def chunks(memory: Memory, agent: str = "dev") -> list:  # type: ignore[type-arg]
    return memory.store.list(
        Filters(user_id="default", agent_id=agent, origins=[Origin.CHUNK]), limit=10_000
    )


def test_chunks_are_records_that_cite_their_lines(memory: Memory, ws: Workspace) -> None:
    report = index_workspace(memory, ws)
    assert report.count("indexed") == 2 and report.count("skipped") == 0
    by_path = {}
    for r in chunks(memory):
        by_path.setdefault(r.source.path, []).append(r)
    assert set(by_path) == {"MEMORY.md", "memory/2026-03-27.md"}
    diary = sorted(by_path["memory/2026-03-27.md"], key=lambda r: r.source.start_line)
    first = diary[0]
    assert first.origin == Origin.CHUNK and first.user_id == "default" and first.agent_id == "dev"
    assert first.context == "memory/2026-03-27.md > 2026-03-27 > 09:15"
    assert first.metadata["kind"] == "diary" and first.metadata["evergreen"] is False
    assert first.event_at == datetime(2026, 3, 27, tzinfo=UTC)
    long_term = by_path["MEMORY.md"][0]
    assert long_term.metadata["kind"] == "memory" and long_term.metadata["evergreen"] is True
    assert long_term.event_at is None

    (hit,) = memory_search(
        memory, ws, "which database did we choose for the project?", max_results=1
    )
    src = hit.hit.record.source
    assert src is not None and src.citation == "memory/2026-03-27.md#L1-L5"
    assert "PostgreSQL" in hit.to_json()["snippet"]
    got = memory_get(ws, src.path, src.start_line, src.end_line - src.start_line + 1)
    assert got.text == hit.hit.text == lines_of(ws.memory_dir / "2026-03-27.md", 1, 5)


def test_reindexing_unchanged_files_embeds_nothing(memory: Memory, ws: Workspace) -> None:
    index_workspace(memory, ws)
    before, ids = calls(memory), {r.id for r in chunks(memory)}
    again = index_workspace(memory, ws)
    assert calls(memory) == before and again.embedded == 0
    assert again.count("unchanged") == 2 and {r.id for r in chunks(memory)} == ids
    forced = index_workspace(memory, ws, force=True)  # re-chunks, still from the cache
    assert forced.count("indexed") == 2 and calls(memory) == before
    assert {r.id for r in chunks(memory)} == ids  # deterministic ids


def test_an_edit_embeds_only_the_changed_chunk(memory: Memory, ws: Workspace) -> None:
    index_workspace(memory, ws)
    diary = ws.memory_dir / "2026-03-27.md"
    kept = {r.id for r in chunks(memory) if r.source.start_line == 1}
    before = calls(memory)
    diary.write_text(diary.read_text().replace("dark mode", "light mode"), encoding="utf-8")
    report = index_workspace(memory, ws)
    assert report.count("indexed") == 1 and report.embedded == 1
    assert calls(memory) - before == 1
    assert kept <= {r.id for r in chunks(memory)}
    top = memory_search(memory, ws, "light mode editor theme", max_results=1)[0]
    assert "light mode" in top.hit.text and "dark mode" not in top.hit.text

    # Blank lines inserted above move citations without embedding anything.
    diary.write_text("\n\n" + diary.read_text(), encoding="utf-8")
    before = calls(memory)
    index_workspace(memory, ws)
    assert calls(memory) == before
    top = memory_search(memory, ws, "which database did we choose for the project", max_results=1)[
        0
    ]
    assert top.hit.record.source.citation == "memory/2026-03-27.md#L3-L7"
    assert top.hit.text == lines_of(diary, 3, 7)


def test_deleted_files_and_sections_lose_their_chunks(memory: Memory, ws: Workspace) -> None:
    index_workspace(memory, ws)
    diary = ws.memory_dir / "2026-03-27.md"
    diary.write_text(diary.read_text().split("## 14:30")[0], encoding="utf-8")
    index_workspace(memory, ws)
    assert not [r for r in chunks(memory) if "ArgoCD" in r.text]
    diary.unlink()
    status = workspace_status(memory, ws)
    assert status["deleted"] == ["memory/2026-03-27.md"]
    report = index_workspace(memory, ws)
    assert report.count("removed") == 1
    assert {r.source.path for r in chunks(memory)} == {"MEMORY.md"}
    assert workspace_status(memory, ws)["deleted"] == []


def test_binary_and_huge_files_are_skipped_with_a_logged_reason(
    memory: Memory, ws: Workspace, caplog: pytest.LogCaptureFixture
) -> None:
    (ws.memory_dir / "blob.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00" + os.urandom(512))
    (ws.memory_dir / "latin1.md").write_bytes("caf\xe9 notes\n".encode("latin-1"))
    memory.settings.workspace.max_file_bytes = 4096
    (ws.memory_dir / "huge.md").write_text("# Big\n" + "word " * 2000, encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="memoryd.workspace"):
        report = index_workspace(memory, ws)
    skipped = {f.path: f.reason for f in report.files if f.status == "skipped"}
    assert set(skipped) == {"memory/blob.md", "memory/latin1.md", "memory/huge.md"}
    assert "binary" in skipped["memory/blob.md"]
    assert "UTF-8" in skipped["memory/latin1.md"]
    assert "max_file_bytes" in skipped["memory/huge.md"]
    for path in skipped:
        assert path in caplog.text
    assert report.count("indexed") == 2  # the good files still went in
    assert {s["path"] for s in workspace_status(memory, ws)["skipped"]} == set(skipped)


def test_odd_unicode_paths_work(memory: Memory, ws: Workspace) -> None:
    names = [
        "memory/projets/café naïve 🚀.md",  # NFC, emoji, space
        "memory/cafe\u0301-nfd.md",  # combining accent
        "memory/プロジェクト メモ.md",
        "memory/2026-03-26-ünïcödé-slug.md",
    ]
    for n, name in enumerate(names):
        path = ws.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# Note {n}\n- zebra-{n} quokka fact number {n}\n", encoding="utf-8")
    index_workspace(memory, ws)
    for n, name in enumerate(names):
        hits = memory_search(memory, ws, f"zebra-{n} quokka", max_results=1, min_score=0)
        src = hits[0].hit.record.source
        assert src.path == name and f"zebra-{n}" in hits[0].hit.text
        assert memory_get(ws, src.path, src.start_line, 2).text.endswith(f"number {n}")
    dated = next(r for r in chunks(memory) if r.source.path == names[3])
    assert dated.metadata["kind"] == "session" and dated.event_at is not None


def test_symlinks_out_of_the_workspace_are_not_indexed(
    memory: Memory, ws: Workspace, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text("# Secret\n- the vault password is hunter2\n", encoding="utf-8")
    (ws.memory_dir / "leak.md").symlink_to(secret)
    (ws.memory_dir / "alias.md").symlink_to(ws.memory_dir / "2026-03-27.md")  # stays inside
    index_workspace(memory, ws)
    assert not [r for r in chunks(memory) if "hunter2" in r.text]
    assert "memory/alias.md" not in {r.source.path for r in chunks(memory)}  # indexed once


class EditingEmbedder:
    """A real embedder (it wraps the ONNX model) that edits a file the first time it
    is asked to embed: the edit lands exactly between reading and committing."""

    def __init__(self, inner: Embedder, path: Path, new_text: str) -> None:
        self.inner, self.path, self.new_text = inner, path, new_text
        self.name, self.dim, self.max_tokens = inner.name, inner.dim, inner.max_tokens
        self.edited = False

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not self.edited:
            self.edited = True
            self.path.write_text(self.new_text, encoding="utf-8")
        return self.inner.embed(texts)


def test_a_file_edited_while_indexing_ends_indexed_at_its_final_content(
    settings: Settings, embedder: Embedder, tmp_path: Path
) -> None:
    root = tmp_path / "ws"
    (root / "memory").mkdir(parents=True)
    note = root / "memory" / "topic.md"
    note.write_text("# Topic\n- the first version mentions walruses\n", encoding="utf-8")
    editing = EditingEmbedder(embedder, note, "# Topic\n- the final version mentions narwhals\n")
    settings.workspace.agents["dev"] = root
    with Memory(settings, embedder=editing) as mem:
        from memoryd.workspace import resolve_workspace

        ws = resolve_workspace(settings, "dev", mem.store)
        report = index_workspace(mem, ws)
        assert editing.edited and report.count("indexed") == 1
        texts = [r.text for r in chunks(mem)]
        assert texts == ["# Topic\n- the final version mentions narwhals"]


def test_two_indexer_processes_on_one_store_never_corrupt_it(tmp_path: Path) -> None:
    FILES = 8
    home = tmp_path / "home"
    root = tmp_path / "ws"
    (root / "memory").mkdir(parents=True)
    for n in range(FILES):
        body = "\n".join(f"- day {n} item {i}: shipped build {n * 100 + i}" for i in range(12))
        (root / "memory" / f"2026-02-{n + 1:02d}.md").write_text(f"# Day {n}\n{body}\n")
    env = {
        **os.environ,
        "MEMORYD_HOME": str(home),
        "MEMORYD_WORKSPACE__AGENTS": f'{{"dev": "{root}"}}',
        "MEMORYD_WORKSPACE__OPENCLAW_DIR": str(tmp_path / "none"),
    }
    cmd = [sys.executable, "-m", "memoryd.cli", "index", "--agent", "dev", "--force", "--json"]
    procs = [
        subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(2)
    ]
    # meanwhile the files keep changing under both of them
    for n in range(FILES):
        path = root / "memory" / f"2026-02-{n + 1:02d}.md"
        path.write_text(path.read_text() + f"- late edit {n}\n")
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (_, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err.decode()
    store = SQLiteStore(str(home / "memoryd.db"))
    try:
        assert store.integrity_check() == []
        records = store.list(Filters(agent_id="dev", origins=[Origin.CHUNK]), limit=100_000)
        ids = [r.id for r in records]
        assert len(ids) == len(set(ids))
        by_file: dict[str, set[str]] = {}
        for r in records:
            by_file.setdefault(r.source.path, set()).add(r.metadata["file_hash"])
        assert len(by_file) == FILES and all(len(h) == 1 for h in by_file.values())
    finally:
        store.close()
    # whatever raced, one more pass brings every file to its final content
    with Memory(Settings(home=home, workspace={"agents": {"dev": root}})) as mem:
        from memoryd.workspace import resolve_workspace

        index_workspace(mem, resolve_workspace(mem.settings, "dev", mem.store))
        for n in range(FILES):
            path = f"memory/2026-02-{n + 1:02d}.md"
            assert any(f"late edit {n}" in r.text for r in chunks(mem) if r.source.path == path)


def test_extra_paths_are_indexed_and_readable(
    memory: Memory, ws: Workspace, tmp_path: Path
) -> None:
    docs = tmp_path / "team-docs"
    docs.mkdir()
    (docs / "runbook.md").write_text("# Runbook\n- restart the ingest worker with systemctl\n")
    (ws.root / "notes").mkdir()
    (ws.root / "notes" / "ideas.md").write_text("# Ideas\n- a pelican themed logo\n")
    memory.settings.workspace.extra_paths = [docs, Path("notes")]
    index_workspace(memory, ws)
    paths = {r.source.path for r in chunks(memory)}
    assert f"{docs.as_posix()}/runbook.md" in paths and "notes/ideas.md" in paths
    assert "systemctl" in memory_get(ws, f"{docs}/runbook.md").text
