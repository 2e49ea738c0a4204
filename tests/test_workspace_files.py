"""memory_get stays inside the workspace; appends never interleave."""

from __future__ import annotations

import multiprocessing
import threading
from pathlib import Path

import pytest

from memoryd.atomic import replace_bytes
from memoryd.errors import InvalidInputError, LimitExceededError, PermissionDeniedError
from memoryd.settings import Settings, WorkspaceSettings
from memoryd.workspace import Workspace, resolve_workspace
from memoryd.workspace.bootstrap import init_workspace
from memoryd.workspace.files import (
    LockedDiary,
    append_atomic,
    append_section,
    create_exclusive,
    memory_get,
)
from memoryd.workspace.safefs import WorkspaceFS


def _fs(root: Path) -> WorkspaceFS:
    return WorkspaceFS.of(root, WorkspaceSettings())


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    settings = Settings(home=tmp_path / "home", workspace={"agents": {"dev": tmp_path / "ws"}})
    w = resolve_workspace(settings, "dev")
    init_workspace(w.root)
    (w.memory_dir / "2026-03-27.md").write_text(
        "\n".join(f"line {i}" for i in range(1, 41)) + "\n", encoding="utf-8"
    )
    return w


def test_reads_the_requested_lines(ws: Workspace) -> None:
    got = memory_get(ws, "memory/2026-03-27.md", 12, 19)
    assert got.text == "\n".join(f"line {i}" for i in range(12, 31))
    assert (got.from_line, got.lines, got.total_lines) == (12, 19, 40)
    assert memory_get(ws, "memory/2026-03-27.md", 39).text == "line 39\nline 40"
    assert memory_get(ws, "memory/2026-03-27.md", 100, 5).text == ""
    whole = memory_get(ws, "MEMORY.md")
    assert whole.text == (ws.root / "MEMORY.md").read_text().rstrip("\n")


def test_a_missing_file_is_empty_not_an_error(ws: Workspace) -> None:
    got = memory_get(ws, "memory/2026-03-28.md")
    assert got.text == "" and got.missing and got.total_lines is None


@pytest.mark.parametrize(
    "path",
    [
        "../secret.md",
        "memory/../../secret.md",
        "memory/..\\..\\secret.md",
        "/etc/passwd",
        "/etc/hosts.md",
        "",
        "memory/notes.txt",
        "SOUL.md\x00.md",
    ],
)
def test_paths_outside_the_workspace_are_refused(ws: Workspace, path: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        memory_get(ws, path)
    assert info.value.hint  # says what to do instead


def test_symlinks_that_escape_are_refused(ws: Workspace, tmp_path: Path) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text("the vault password is hunter2\n")
    (ws.memory_dir / "leak.md").symlink_to(secret)
    (ws.root / "linked").symlink_to(tmp_path)
    for path in ("memory/leak.md", "linked/secret.md"):
        with pytest.raises(PermissionDeniedError):
            memory_get(ws, path)
    (ws.memory_dir / "alias.md").symlink_to(ws.root / "MEMORY.md")  # inside: fine
    assert memory_get(ws, "memory/alias.md").text.startswith("# MEMORY.md")


def test_bad_ranges_say_what_to_do(ws: Workspace) -> None:
    with pytest.raises(InvalidInputError, match="from"):
        memory_get(ws, "MEMORY.md", 0)
    with pytest.raises(InvalidInputError, match="lines"):
        memory_get(ws, "MEMORY.md", 1, 0)
    with pytest.raises(LimitExceededError):
        memory_get(ws, "MEMORY.md", 1, 1_000_000)


def _append_many(path: str, writer: int, count: int) -> None:
    for i in range(count):
        block = "\n".join(f"w{writer} entry {i} line {j} " + "x" * 200 for j in range(20))
        append_atomic(Path(path), f"## w{writer}-{i}\n{block}\n", fs=_fs(Path(path).parent))


def _check_blocks(path: Path, writers: int, count: int) -> None:
    text = path.read_text()
    blocks = [b for b in text.split("## ") if b.strip()]
    assert len(blocks) == writers * count
    for block in blocks:
        head, *body = block.rstrip("\n").split("\n")
        writer, i = head.split("-")
        assert body == [f"{writer} entry {i} line {j} " + "x" * 200 for j in range(20)]


def test_concurrent_appends_from_threads_never_interleave(tmp_path: Path) -> None:
    path = tmp_path / "memory" / "2026-03-27.md"
    threads = [threading.Thread(target=_append_many, args=(str(path), w, 40)) for w in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    _check_blocks(path, 6, 40)


def test_concurrent_appends_from_processes_never_interleave(tmp_path: Path) -> None:
    path = tmp_path / "2026-03-27.md"
    path.write_text("no final newline")  # the first append must add one
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_append_many, args=(str(path), w, 30)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert path.read_text().startswith("no final newline\n## w")
    path.write_text(path.read_text().removeprefix("no final newline\n"))
    _check_blocks(path, 4, 30)


def test_new_files_appear_whole_and_are_never_replaced(tmp_path: Path) -> None:
    target = tmp_path / "memory" / "2026-03-27-redis.md"
    create_exclusive(target, "first\n", fs=_fs(tmp_path))
    with pytest.raises(FileExistsError):
        create_exclusive(target, "second\n", fs=_fs(tmp_path))
    assert target.read_text() == "first\n"
    assert [p.name for p in target.parent.iterdir()] == [target.name]  # no temp file left


def test_an_append_waiting_while_the_file_is_replaced_lands_in_the_new_file(
    tmp_path: Path,
) -> None:
    """A rollback replaces DREAMS.md whole under its lock; a writer that was waiting for
    the lock must append to the new file, not to the replaced one (lost with it)."""
    path = tmp_path / "DREAMS.md"
    path.write_text("# Dreams\n\nold block\n")
    with LockedDiary(path, fs=_fs(tmp_path)) as held:
        assert held.read() == b"# Dreams\n\nold block\n"
        waiting = threading.Thread(
            target=append_section, args=(path, "## later\n"), kwargs={"fs": _fs(tmp_path)}
        )
        waiting.start()
        waiting.join(timeout=0.3)
        assert waiting.is_alive()  # blocked on the lock
        replace_bytes(path, b"# Dreams\n")
    waiting.join(timeout=10)
    assert path.read_text() == "# Dreams\n\n## later\n"
