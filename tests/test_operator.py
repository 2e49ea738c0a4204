"""The Operator: the whole-deployment actions the CLI's operator commands call (init,
index, status, run, dream rollback, backup, restore, export, import, migrate), on the
real SQLite store and the real embedding model."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from memoryd.core import Memory
from memoryd.embed import Embedder
from memoryd.errors import InvalidInputError, NotFoundError
from memoryd.operator import Operator
from memoryd.pipelines.runs import get_run
from memoryd.settings import Settings
from tests.pipelines_kit import FixedClock, fill_diary, pipeline_settings, workspace


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return pipeline_settings(tmp_path / "home")


@pytest.fixture
def mem(settings: Settings, embedder: Embedder) -> Iterator[Memory]:
    m = Memory(settings, embedder=embedder, clock=FixedClock("2026-03-20T12:00:00+00:00"))
    yield m
    m.close()


def test_init_registers_a_path_creates_templates_once_and_indexes(
    mem: Memory, tmp_path: Path
) -> None:
    op = Operator(mem)
    root = tmp_path / "elsewhere" / "dev"
    created, indexed = op.init_workspace("dev", root)
    assert created.root == root.absolute() and {"MEMORY.md", "memory/"} <= set(created.created)
    assert indexed.agent_id == "dev" and indexed.count("indexed") > 0
    again, _ = op.init_workspace("dev")  # the registered path is found without --path
    assert again.root == root.absolute() and again.created == [] and "MEMORY.md" in again.kept
    assert op.agents() == ["dev"]
    (status,) = op.workspace_status()
    assert status["workspace"] == str(root.absolute()) and status["pending"] == []
    with pytest.raises(InvalidInputError):
        op.init_workspace("../escape", tmp_path / "x")  # checked before anything is recorded
    assert op.agents() == ["dev"]


def test_index_reports_changed_files_and_calls_progress(mem: Memory, tmp_path: Path) -> None:
    op = Operator(mem)
    root = tmp_path / "ws"
    op.init_workspace("dev", root)
    (root / "memory" / "2026-03-27.md").write_text(
        "# 2026-03-27\n\n## 10:00\n- Rotated the TLS certificates on the edge proxies\n"
    )
    assert op.workspace_status()[0]["pending"] == ["memory/2026-03-27.md"]
    seen: list[tuple[int, int, str]] = []
    report = op.index("dev", progress=lambda done, total, rel: seen.append((done, total, rel)))
    assert report.count("indexed") == 1 and report.embedded == 1
    assert (seen[-1][0], seen[-1][1]) == (len(report.files), len(report.files))
    assert "memory/2026-03-27.md" in {rel for _, _, rel in seen}
    assert op.workspace_status()[0]["pending"] == []
    forced = op.index("dev", force=True)
    assert forced.count("unchanged") == 0 and forced.embedded == 0  # re-chunked, cache hits


def test_run_pipeline_records_the_run_and_rollback_dream_checks_the_id(
    mem: Memory, settings: Settings
) -> None:
    op = Operator(mem)
    fill_diary(workspace(settings, "alpha"), "2026-03-20", 4)
    dry = op.run_pipeline("digest", agent="alpha", dry_run=True)
    assert dry.dry_run and dry.status == "ok" and mem.count() == 0
    record = op.run_pipeline("digest", agent="alpha")
    assert record.status == "ok" and mem.count() > 0
    stored = get_run(mem, record.run_id)
    assert stored is not None and stored.status == "ok"
    with pytest.raises(InvalidInputError, match="not a dream run id"):
        op.rollback_dream(record.run_id)
    with pytest.raises(NotFoundError):
        op.rollback_dream("dream-20990101T000000-abcdef")


def test_store_actions_need_only_settings(
    settings: Settings, embedder: Embedder, tmp_path: Path
) -> None:
    with Memory(settings, embedder=embedder) as mem:
        mem.add("The staging cluster runs on three nodes", user_id="alice")
        mem.add("Deploys freeze on Fridays", user_id="alice", agent_id="dev")
    op = Operator(settings)
    with pytest.raises(InvalidInputError, match="needs the memory"):
        op.agents()

    out = tmp_path / "all.jsonl"
    assert op.export_jsonl(out) == 2 and not (tmp_path / "all.jsonl.partial").exists()
    with pytest.raises(InvalidInputError, match="already exists"):
        op.export_jsonl(out)
    stream = io.StringIO()
    assert op.export_jsonl(stream) == 2 and stream.getvalue() == out.read_text("utf-8")

    other = Operator(pipeline_settings(tmp_path / "other"))
    first, second = other.import_jsonl(out), other.import_jsonl(out)
    assert (first.imported, second.imported, second.skipped) == (2, 0, 2)
    with pytest.raises(InvalidInputError, match="no file"):
        other.import_jsonl(tmp_path / "missing.jsonl")

    copy = op.backup(tmp_path / "backup.db")
    assert copy.memories == 2
    fresh = Operator(pipeline_settings(tmp_path / "fresh"))
    assert fresh.restore(tmp_path / "backup.db").memories == 2
    assert other.restore(tmp_path / "backup.db", force=True).memories == 2

    migrated = op.migrate(str(tmp_path / "copy.db"))
    assert migrated.copied == 2 and migrated.target_totals["memories"] == 2
    again = op.migrate(str(tmp_path / "copy.db"))  # resumable: nothing copied twice
    assert again.copied == 0 and again.target_totals["memories"] == 2
