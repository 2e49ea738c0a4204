"""Files replaced whole: a reader sees the old file or the new one, never half of one.

Everything memoryd regenerates (``MEMORY.md`` promotions, ``memory/INDEX.md``,
``memory/structured/``, ``DREAMS.md`` after a rollback, the search index
snapshot, agent configs) is written to a hidden temporary file in the same
folder (hidden: the workspace indexer and watcher never pick it up), fsync-ed,
renamed over the target, and the folder fsync-ed so the rename survives a
power cut. A failure leaves the target as it was and no temporary file behind.
:func:`sync_folder` keeps a folder of generated files (``memory/structured/``,
the wiki) equal to what its generator wants, rewriting only what changed.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO


@contextmanager
def replacing(path: Path, *, mode: int | None = None) -> Iterator[BinaryIO]:
    """``with replacing(path) as f: f.write(...)``: ``path`` becomes what was written
    when the block ends without an error. ``mode`` defaults to the file's current
    permissions (0644 for a new file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if mode is None:
        try:
            mode = path.stat().st_mode & 0o777
        except FileNotFoundError:
            mode = 0o644
    tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with os.fdopen(fd, "wb") as out:
            yield out
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, mode)  # the umask may have narrowed it
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def replace_bytes(path: Path, data: bytes, *, mode: int | None = None) -> None:
    """Replace ``path`` with ``data`` (see :func:`replacing`)."""
    with replacing(path, mode=mode) as out:
        out.write(data)


@dataclass
class FolderSync:
    written: list[str] = field(default_factory=list)  # folder-relative paths
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0


def sync_folder(
    folder: Path, wanted: Mapping[str, bytes], marker: str, *, dry_run: bool = False
) -> FolderSync:
    """Make the generated files of ``folder`` exactly ``wanted`` (relative path -> bytes).

    A file whose bytes are already right is not rewritten (an unchanged input
    rewrites nothing); the others are replaced whole. A ``*.md`` directly in
    ``folder`` that carries ``marker`` in its first 2,000 bytes but is not wanted
    any more is removed; a file without the marker is a person's and is left alone."""
    done = FolderSync()
    for rel, data in wanted.items():
        path = folder / rel
        try:
            same = path.read_bytes() == data
        except OSError:
            same = False
        if same:
            done.unchanged += 1
            continue
        done.written.append(rel)
        if not dry_run:
            replace_bytes(path, data)
    if folder.is_dir():
        for path in sorted(folder.glob("*.md")):
            if path.name in wanted or not _carries(path, marker):
                continue
            done.removed.append(path.name)
            if not dry_run:
                path.unlink()
    return done


def _carries(path: Path, marker: str) -> bool:
    try:
        with path.open("rb") as f:
            return marker.encode() in f.read(2000)
    except OSError:
        return False
