"""Files replaced whole: a reader sees the old file or the new one, never half of one.

Everything memoryd regenerates (``MEMORY.md`` promotions, ``memory/INDEX.md``,
``memory/structured/``, ``DREAMS.md`` after a rollback, the search index
snapshot, agent configs) is written to a hidden temporary file in the same
folder (hidden: the workspace indexer and watcher never pick it up), fsync-ed,
renamed over the target, and the folder fsync-ed so the rename survives a
power cut. A failure leaves the target as it was and no temporary file behind.
Files under an agent workspace are written through :mod:`memoryd.workspace.safefs`,
which opens their folder without leaving the workspace and calls
:func:`replacing_at` / :func:`create_at` on it.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import BinaryIO


@contextmanager
def replacing(path: Path, *, mode: int | None = None) -> Iterator[BinaryIO]:
    """``with replacing(path) as f: f.write(...)``: ``path`` becomes what was written
    when the block ends without an error. ``mode`` defaults to the file's current
    permissions (0644 for a new file). For memoryd's own files (the index snapshot,
    agent configs); a file under an agent workspace goes through
    :mod:`memoryd.workspace.safefs`, which opens the folder without leaving the workspace."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if mode is None:
        try:
            mode = path.stat().st_mode & 0o777
        except FileNotFoundError:
            mode = 0o644
    dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with replacing_at(dir_fd, path.name, mode=mode) as out:
            yield out
    finally:
        os.close(dir_fd)


@contextmanager
def replacing_at(dir_fd: int, name: str, *, mode: int = 0o644) -> Iterator[BinaryIO]:
    """:func:`replacing` for the entry ``name`` of an open folder: the temporary file is
    created in that folder (never through a symlink) and renamed over ``name`` there,
    so the write lands in the folder the descriptor holds, whatever its path now is."""
    tmp = f".{name}.{secrets.token_hex(6)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as out:
            yield out
            out.flush()
            os.fchmod(out.fileno(), mode)  # the umask may have narrowed it
            os.fsync(out.fileno())
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise
    os.fsync(dir_fd)  # the rename survives a power cut


def create_at(dir_fd: int, name: str, data: bytes) -> None:
    """A new entry ``name`` in an open folder that appears complete or not at all, never
    replacing one: written to a hidden temporary file, fsync-ed, then hard-linked to
    ``name`` (``FileExistsError`` if ``name`` exists, a symlink included)."""
    tmp = f".{name}.{secrets.token_hex(6)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=dir_fd)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.link(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
    finally:
        os.unlink(tmp, dir_fd=dir_fd)
    os.fsync(dir_fd)


def replace_bytes(path: Path, data: bytes, *, mode: int | None = None) -> None:
    """Replace ``path`` with ``data`` (see :func:`replacing`)."""
    with replacing(path, mode=mode) as out:
        out.write(data)
