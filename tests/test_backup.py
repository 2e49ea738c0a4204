"""Backup, restore, export and import (issue #10 item 7): real SQLite, the real model."""

from __future__ import annotations

import io
import json
import sqlite3
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memoryd import backup as bk
from memoryd.cli import app
from memoryd.core import Memory
from memoryd.embed import Embedder
from memoryd.errors import InvalidInputError, NotFoundError, StoreError
from memoryd.settings import Settings
from memoryd.store import open_store
from memoryd.store.sqlite import SQLiteStore

TEXTS = [
    "Alice prefers dark mode in every editor",
    "The deploy runs from the release branch on Fridays",
    "Bob is allergic to peanuts",
    "We chose pgvector for local development",
    "שלום — right-to-left text with combining e\u0301 marks",
    "Meeting notes: the budget for Q3 is approved",
]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MEMORYD_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("MEMORYD_STORE__URL", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path / "home"


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def _memory(url: str, embedder: Embedder, home: Path) -> Memory:
    settings = Settings(home=home)
    settings.store.url = url
    settings.workspace.watch = False
    settings.pipelines.scheduler = False
    return Memory(settings, embedder=embedder)


def _fill(mem: Memory) -> list[str]:
    """Memories in every state, with updates, so records and history are varied."""
    ids = []
    for i, text in enumerate(TEXTS):
        out = mem.add(
            text,
            user_id="alice" if i % 2 else "bob",
            infer=False,
            metadata={"n": i, "tags": ["x", "ü"]},
        )
        ids.append(str(out[0].id))
    mem.update(ids[1], "The deploy runs from main on Fridays")
    mem.delete(ids[2])
    return ids


def _count(path: Path) -> int:
    store = open_store(str(path))
    try:
        return store.totals()["memories"]
    finally:
        store.close()


def test_backup_while_a_thread_writes_is_consistent(
    home: Path, embedder: Embedder, tmp_path: Path
) -> None:
    db = home / "memoryd.db"
    mem = _memory(str(db), embedder, home)
    _fill(mem)
    stop = threading.Event()
    errors: list[BaseException] = []

    def writer() -> None:
        i = 0
        try:
            while not stop.is_set():
                mem.add(f"note number {i} about the weather", user_id="w", infer=False)
                i += 1
        except BaseException as exc:  # surfaced by the assertion below
            errors.append(exc)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        while mem.store.totals()["memories"] < len(TEXTS) + 5:  # writer is under way
            pass
        before = mem.store.totals()["memories"]
        code, out = _cli("backup", str(tmp_path / "snap.db"), "--json")
        after = mem.store.totals()["memories"]
    finally:
        stop.set()
        thread.join()
    assert code == 0, out
    assert not errors
    assert after > before  # the writer kept writing through the backup
    copy = open_store(str(tmp_path / "snap.db"))
    assert isinstance(copy, SQLiteStore)
    try:
        assert copy.integrity_check() == []
        n = copy.totals()["memories"]
    finally:
        copy.close()
    assert before <= n <= after
    assert json.loads(out)["memories"] == n
    mem.close()


def test_backup_refuses_existing_file_and_postgres(home: Path, tmp_path: Path) -> None:
    assert _cli("add", "one memory", "--user", "a")[0] == 0
    target = tmp_path / "b.db"
    target.write_text("keep me")
    code, out = _cli("backup", str(target))
    assert code == 2 and "already exists" in out and "hint" in out
    assert target.read_text() == "keep me"
    with pytest.raises(bk.BackupNotSupportedError, match="pg_dump"):
        bk.backup("postgresql://u:secret@localhost/db", tmp_path / "x.db")
    with pytest.raises(bk.BackupNotSupportedError) as info:
        bk.restore("postgresql://u:secret@localhost/db", tmp_path / "x.db")
    assert "secret" not in info.value.message


def test_restore_refuses_non_empty_without_force(home: Path, tmp_path: Path) -> None:
    assert _cli("add", "the original fact", "--user", "a")[0] == 0
    snap = tmp_path / "snap.db"
    assert _cli("backup", str(snap))[0] == 0
    assert _cli("add", "a later fact", "--user", "a")[0] == 0

    code, out = _cli("restore-backup", str(snap))
    assert code == 2 and "holds 2 memories" in out and "--force" in out
    assert _count(home / "memoryd.db") == 2  # nothing replaced

    code, out = _cli("restore-backup", str(snap), "--force", "--json")
    assert code == 0, out
    assert json.loads(out)["memories"] == 1
    code, out = _cli("list", "--user", "a", "--json")
    assert [m["memory"] for m in json.loads(out)["results"]] == ["the original fact"]


def test_restore_into_empty_store_and_validates_the_file(home: Path, tmp_path: Path) -> None:
    assert _cli("add", "kept in the backup", "--user", "a")[0] == 0
    snap = tmp_path / "snap.db"
    assert _cli("backup", str(snap))[0] == 0
    (home / "memoryd.db").unlink()
    for suffix in ("-wal", "-shm"):
        (home / f"memoryd.db{suffix}").unlink(missing_ok=True)
    assert _cli("restore-backup", str(snap))[0] == 0
    code, out = _cli("search", "backup", "--user", "a", "--json")
    assert json.loads(out)["results"][0]["memory"] == "kept in the backup"

    text = tmp_path / "notes.txt"
    text.write_text("not a database")
    code, out = _cli("restore-backup", str(text), "--force")
    assert code == 2 and "not a memoryd backup" in out
    foreign = tmp_path / "other.db"
    con = sqlite3.connect(foreign)
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()
    with pytest.raises(StoreError, match="not a memoryd store"):
        bk.restore(str(home / "memoryd.db"), foreign, force=True)
    with pytest.raises(NotFoundError):
        bk.restore(str(home / "memoryd.db"), tmp_path / "missing.db", force=True)
    assert _count(home / "memoryd.db") == 1


def test_export_import_round_trip_is_exact(home: Path, embedder: Embedder, tmp_path: Path) -> None:
    src = _memory(str(tmp_path / "src.db"), embedder, home)
    _fill(src)
    first = list(bk.export_lines(src.store))
    assert len(first) == len(TEXTS)
    rec = json.loads(first[1])
    assert [h["event"] for h in rec["history"]] == ["ADD", "UPDATE"]
    assert json.loads(first[2])["state"] == "deleted"
    assert isinstance(rec["embedding"], str) and rec["hash"] and rec["created_at"]

    dst_store = open_store(str(tmp_path / "dst.db"))
    report = bk.import_lines(dst_store, first)
    assert report.as_dict() == {"read": 6, "imported": 6, "skipped": 0}
    assert list(bk.export_lines(dst_store)) == first
    dst_store.close()

    dst = _memory(str(tmp_path / "dst.db"), embedder, home)  # same model: no mismatch
    for query in ("editor theme", "when do we deploy", "food allergy", "budget"):
        for user in ("alice", "bob"):
            a = [h.id for h in src.search(query, user_id=user, min_score=0, record_recall=False)]
            b = [h.id for h in dst.search(query, user_id=user, min_score=0, record_recall=False)]
            assert a == b and a

    def events(mem: Memory) -> list[dict[str, object]]:
        return [e.model_dump(exclude={"id"}) for e in mem.history(rec["id"])]

    assert events(dst) == events(src)
    src.close()
    dst.close()


def test_import_is_idempotent_and_reports_counts(home: Path, tmp_path: Path) -> None:
    for text in TEXTS[:3]:
        assert _cli("add", text, "--user", "a")[0] == 0
    out_file = tmp_path / "all.jsonl"
    code, out = _cli("export", str(out_file))
    assert code == 0 and "exported 3" in out
    lines = out_file.read_text().splitlines()
    code, out = _cli("export", str(out_file))
    assert code == 2 and "already exists" in out

    code, out = _cli("import", str(out_file), "--json")
    assert code == 0 and json.loads(out) == {"read": 3, "imported": 0, "skipped": 3}

    other = tmp_path / "other"  # a second home holding one of the three
    store = open_store(str(other / "memoryd.db"))
    bk.import_lines(store, lines[:1])
    store.close()
    (tmp_path / "extra.jsonl").write_text("\n".join(lines) + "\n")
    code, out = _cli("import", str(tmp_path / "extra.jsonl"), "--json")
    assert json.loads(out)["skipped"] == 3
    store = open_store(str(other / "memoryd.db"))
    assert bk.import_lines(store, lines).as_dict() == {"read": 3, "imported": 2, "skipped": 1}
    assert store.totals()["memories"] == 3
    store.close()


def test_import_rejects_bad_lines_with_the_line_number(tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "s.db"))
    good = {"id": "m1", "text": "fine", "user_id": "u", "history": []}
    bad_lines = [
        "not json",
        "[1, 2]",
        json.dumps({"id": "m2", "user_id": "u"}),  # no text
        json.dumps({**good, "embedding": "%%%"}),
        json.dumps(
            {
                **good,
                "history": [
                    {"memory_id": "other", "event": "ADD", "created_at": "2026-01-01T00:00:00Z"}
                ],
            }
        ),
    ]
    for bad in bad_lines:
        with pytest.raises(InvalidInputError, match="line 2") as info:
            bk.import_jsonl(store, io.StringIO(json.dumps(good) + "\n" + bad + "\n"))
        assert info.value.hint
    # batches commit whole: the first good line was not imported alone mid-batch
    assert store.totals()["memories"] == 0
    store.set_meta("embed_model", "m")
    store.set_meta("embed_dim", "3")
    with pytest.raises(InvalidInputError, match="2-dim"):
        bk.import_lines(store, [json.dumps({**good, "embedding": [0.1, 0.2]})])
    store.close()
