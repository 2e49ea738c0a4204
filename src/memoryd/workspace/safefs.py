"""The one door for reading and writing files under an agent workspace.

A workspace is a folder people and agents edit, so any name in it may be a
symlink. memoryd follows a symlink only while it stays inside the allowed roots:
the workspace itself, its ``workspace.extra_paths`` and the folders the operator
lists in ``workspace.allowed_roots``. Anything else (a symlink out, a broken
symlink, a loop) is refused with :class:`~memoryd.errors.OutsideWorkspaceError`.

The check is made on the opened descriptor, never on a path checked first and
opened again, so swapping a file for a symlink between the two cannot win:

- a read opens the file (following symlinks, without side effects: no create,
  no truncate, non-blocking), asks the kernel where the descriptor really is
  (``/proc/self/fd``) and reads through that descriptor only if it is inside;
- a write opens each folder from the workspace root down (``mkdir`` then open
  relative to the parent's descriptor, each checked), then creates, renames or
  appends relative to the checked folder's descriptor, never through a symlink
  it has not checked. An existing file is opened without creating anything and
  checked before a byte is written; a refused write leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import stat
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from memoryd.atomic import create_at, replacing_at
from memoryd.errors import InvalidInputError, OutsideWorkspaceError
from memoryd.settings import WorkspaceSettings

log = logging.getLogger("memoryd.workspace")

_READ = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_APPEND = os.O_RDWR | os.O_APPEND | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_PATH = (os.O_PATH | os.O_CLOEXEC) if hasattr(os, "O_PATH") and sys.platform == "linux" else 0
_HINT = (
    "memoryd reads and writes only inside the workspace: replace the symlink with a real "
    "file or folder, or list its target in workspace.allowed_roots"
)


def fd_path(fd: int) -> str:
    """Where an open descriptor really is (symlinks resolved by the kernel)."""
    if sys.platform == "darwin":  # pragma: no cover - Linux is what CI runs
        return os.fsdecode(fcntl.fcntl(fd, fcntl.F_GETPATH, b"\0" * 1024).rstrip(b"\0"))
    return os.readlink(f"/proc/self/fd/{fd}")


def _inside(real: str, roots: Sequence[str]) -> bool:
    return any(real == r or real.startswith(r.rstrip("/") + "/") for r in roots)


@dataclass
class FolderSync:
    written: list[str] = field(default_factory=list)  # folder-relative paths
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0


@dataclass(frozen=True)
class WorkspaceFS:
    """Reads and writes under one workspace. ``bases`` are the folders paths are written
    relative to (the workspace root as configured, then the extra paths); ``roots`` the
    real folders a descriptor may be in."""

    bases: tuple[Path, ...]
    roots: tuple[str, ...]

    @classmethod
    def of(cls, root: Path, settings: WorkspaceSettings) -> WorkspaceFS:
        root = Path(os.path.abspath(root.expanduser()))
        bases = [root]
        for p in settings.extra_paths:
            p = p.expanduser()
            bases.append(Path(os.path.abspath(p if p.is_absolute() else root / p)))
        allowed = [*bases, *(p.expanduser() for p in settings.allowed_roots)]
        return cls(tuple(bases), tuple(os.path.realpath(p) for p in allowed))

    @property
    def root(self) -> Path:
        return self.bases[0]

    # -- checks ---------------------------------------------------------------------------
    def name(self, path: Path | str) -> str:
        """How errors name ``path``: relative to the workspace (clients never see where
        the server keeps it), else its last component."""
        path = Path(os.path.abspath(path))
        for base in self.bases:
            if path.is_relative_to(base):
                return path.relative_to(base).as_posix() or "the workspace folder"
        return path.name

    def check(self, fd: int, path: Path | str) -> None:
        """Refuse (and close) ``fd`` unless it is inside the allowed roots."""
        try:
            real = fd_path(fd)
        except OSError as exc:  # no /proc: refuse rather than guess
            os.close(fd)
            raise OutsideWorkspaceError(
                f"cannot tell where {self.name(path)} leads ({exc.strerror or exc})",
                "memoryd checks workspace files through /proc/self/fd: mount /proc",
            ) from None
        if not _inside(real, self.roots):
            os.close(fd)
            log.warning("refused %s: it leads to %s, outside %s", path, real, self.roots)
            raise OutsideWorkspaceError(f"{self.name(path)} leads outside the workspace", _HINT)

    def _wrong_kind(self, path: Path | str, what: str) -> InvalidInputError:
        """A write meets a file where a folder must be, or a folder where a file must be
        (``memory`` a file, today's diary a folder): named, never an OSError (a 500)."""
        return InvalidInputError(
            f"{self.name(path)} {what}",
            "memoryd writes Markdown files in folders of the workspace: rename or remove it",
        )

    def _refuse_link(self, path: Path | str, exc: OSError) -> OutsideWorkspaceError:
        what = "a symlink loop" if exc.errno == errno.ELOOP else "a broken symlink"
        return OutsideWorkspaceError(f"{self.name(path)} is {what}", _HINT)

    # -- reading --------------------------------------------------------------------------
    def open_read(self, path: Path | str) -> int:
        """A descriptor on the regular file ``path``, checked to be inside.

        ``FileNotFoundError`` when it does not exist, ``IsADirectoryError`` for a folder,
        :class:`OutsideWorkspaceError` for anything leading out."""
        return self._open_checked(path, _READ)

    def _open_checked(self, path: Path | str, flags: int) -> int:
        """Open the regular file ``path`` (symlinks followed) with ``flags`` once the kernel
        says where it is. On Linux the file is first opened ``O_PATH`` (which opens nothing:
        a FIFO or device out there is never really opened), checked, then reopened through
        ``/proc/self/fd``, which reaches that same file whatever the path says by then."""
        try:
            fd = os.open(path, _PATH if _PATH else flags)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise self._refuse_link(path, exc) from None
            raise
        self.check(fd, path)
        try:
            mode = os.fstat(fd).st_mode
            if stat.S_ISDIR(mode):
                raise IsADirectoryError(errno.EISDIR, "is a folder", str(path))
            if not stat.S_ISREG(mode):
                raise InvalidInputError(
                    f"{self.name(path)} is not a regular file",
                    "workspace files are plain Markdown files: remove or rename it",
                )
            if not _PATH:
                return fd
            return os.open(f"/proc/self/fd/{fd}", flags)
        except BaseException:
            if not _PATH:
                os.close(fd)
            raise
        finally:
            if _PATH:
                os.close(fd)

    @contextlib.contextmanager
    def reading(self, path: Path | str, *, shared_lock: bool = False) -> Iterator[int]:
        """``with fs.reading(path) as fd:``; with ``shared_lock`` under a shared ``flock``
        (diary appends take it exclusively, so a read never sees half a section)."""
        fd = self.open_read(path)
        try:
            if shared_lock:
                fcntl.flock(fd, fcntl.LOCK_SH)
            yield fd
        finally:
            os.close(fd)  # releases the lock

    def read_bytes(self, path: Path | str, start: int = 0, *, shared_lock: bool = False) -> bytes:
        with self.reading(path, shared_lock=shared_lock) as fd:
            return _read_all(fd, start)

    def read_text(self, path: Path | str, *, errors: str = "strict") -> str:
        return self.read_bytes(path).decode("utf-8", errors)

    def read_if_exists(
        self, path: Path | str, start: int = 0, *, shared_lock: bool = False
    ) -> bytes:
        """The bytes of ``path`` from ``start``, or ``b""`` when there is no such file."""
        try:
            return self.read_bytes(path, start, shared_lock=shared_lock)
        except FileNotFoundError:
            return b""

    def is_file(self, path: Path | str) -> bool:
        """Whether ``path`` is a regular file inside (a symlink out is not one)."""
        try:
            os.close(self.open_read(path))
        except (OSError, InvalidInputError):
            return False
        return True

    # -- folders --------------------------------------------------------------------------
    def open_dir(self, path: Path | str, *, create: bool = False) -> int:
        """A descriptor on the folder ``path``, each component opened from the workspace
        root down and checked (``create``: missing folders are made, inside only)."""
        path = Path(os.path.abspath(path))
        base = next((b for b in self.bases if path.is_relative_to(b)), None)
        if base is None:
            if create:
                raise OutsideWorkspaceError(f"{self.name(path)} is not under the workspace", _HINT)
            fd = os.open(path, _DIR)
            self.check(fd, path)
            return fd
        if create and base == self.root:
            self.root.mkdir(parents=True, exist_ok=True)  # the configured root is trusted
        fd = os.open(base, _DIR)
        self.check(fd, base)
        here = base
        for part in path.relative_to(base).parts:
            here = here / part
            try:
                if create:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(part, 0o755, dir_fd=fd)
                try:
                    nfd = os.open(part, _DIR, dir_fd=fd)
                except OSError as exc:
                    if exc.errno == errno.ELOOP or (
                        exc.errno == errno.ENOENT and _is_link(part, fd)
                    ):
                        raise self._refuse_link(path, exc) from None
                    if create and exc.errno == errno.ENOTDIR:  # a file where a folder must be
                        raise self._wrong_kind(here, "is not a folder") from None
                    raise
            finally:
                os.close(fd)
            self.check(nfd, path)
            fd = nfd
        return fd

    @contextlib.contextmanager
    def folder(self, path: Path | str, *, create: bool = False) -> Iterator[int]:
        fd = self.open_dir(path, create=create)
        try:
            yield fd
        finally:
            os.close(fd)

    def names(self, folder: Path | str, suffix: str = "") -> list[str]:
        """The sorted entry names of ``folder`` ending in ``suffix`` (none if it is missing)."""
        try:
            with self.folder(folder) as fd:
                return sorted(n for n in os.listdir(fd) if n.endswith(suffix))
        except (FileNotFoundError, NotADirectoryError):
            return []

    # -- writing --------------------------------------------------------------------------
    def open_append(self, path: Path | str, *, create: bool = True) -> int:
        """A read-write, append-only descriptor on ``path``, checked to be inside; the
        file is created (in a checked folder, never through a symlink) when missing."""
        path = Path(path)
        for _ in range(3):
            try:
                return self._open_checked(path, _APPEND)  # no O_CREAT: opening writes nothing
            except IsADirectoryError:
                raise self._wrong_kind(path, "is a folder, not a file") from None
            except (FileNotFoundError, NotADirectoryError):  # the folder names it (below)
                if not create:
                    raise
            with self.folder(path.parent, create=True) as dir_fd:
                try:
                    flags = _APPEND | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                    return os.open(path.name, flags, 0o644, dir_fd=dir_fd)
                except FileExistsError:
                    if _is_link(path.name, dir_fd):
                        # a dangling symlink: creating it would create its target
                        raise OutsideWorkspaceError(
                            f"{self.name(path)} is a broken symlink", _HINT
                        ) from None
                    continue  # another writer created it meanwhile: open theirs
        raise OutsideWorkspaceError(f"{self.name(path)} keeps changing under memoryd", _HINT)

    @contextlib.contextmanager
    def replacing(self, path: Path | str, *, mode: int | None = None) -> Iterator[BinaryIO]:
        """``with fs.replacing(path) as out: out.write(...)``: ``path`` replaced whole
        (:func:`memoryd.atomic.replacing_at`) in its checked folder. A symlinked ``path``
        that stays inside is followed (its target is replaced); one leading out is refused."""
        path = Path(path)
        try:
            fd = self.open_read(path)
        except IsADirectoryError:
            raise self._wrong_kind(path, "is a folder, not a file") from None
        except (FileNotFoundError, NotADirectoryError):  # opening the folder names a file in it
            folder, name = path.parent, path.name
            fd = -1
        if fd >= 0:
            real = fd_path(fd)
            if mode is None:
                mode = os.fstat(fd).st_mode & 0o777
            os.close(fd)
            folder, name = Path(os.path.dirname(real)), os.path.basename(real)
        with self.folder(folder, create=fd < 0) as dir_fd:
            if fd < 0 and _is_link(name, dir_fd):
                raise OutsideWorkspaceError(f"{self.name(path)} is a broken symlink", _HINT)
            with replacing_at(dir_fd, name, mode=0o644 if mode is None else mode) as out:
                yield out

    def replace_bytes(self, path: Path | str, data: bytes, *, mode: int | None = None) -> None:
        with self.replacing(path, mode=mode) as out:
            out.write(data)

    def create_exclusive(self, path: Path | str, data: bytes) -> None:
        """A new file that appears complete or not at all; ``FileExistsError`` if there is one."""
        path = Path(path)
        with self.folder(path.parent, create=True) as dir_fd:
            create_at(dir_fd, path.name, data)

    def unlink(self, path: Path | str) -> None:
        """Remove ``path`` (a symlink itself, never its target) from its checked folder."""
        path = Path(path)
        with self.folder(path.parent) as dir_fd:
            os.unlink(path.name, dir_fd=dir_fd)

    def sync_folder(
        self, folder: Path, wanted: Mapping[str, bytes], marker: str, *, dry_run: bool = False
    ) -> FolderSync:
        """Make the generated files of ``folder`` exactly ``wanted`` (relative path -> bytes).

        A file whose bytes are already right is not rewritten (an unchanged input
        rewrites nothing); the others are replaced whole. A ``*.md`` directly in
        ``folder`` that carries ``marker`` in its first 2,000 bytes but is not wanted
        any more is removed; a file without the marker is a person's and is left alone."""
        done = FolderSync()
        for rel, data in wanted.items():
            try:
                same = self.read_bytes(folder / rel) == data
            except (OSError, InvalidInputError):
                same = False
            if same:
                done.unchanged += 1
                continue
            done.written.append(rel)
            if not dry_run:
                self.replace_bytes(folder / rel, data)
        for name in self.names(folder, ".md"):
            if name in wanted or not self._carries(folder / name, marker):
                continue
            done.removed.append(name)
            if not dry_run:
                self.unlink(folder / name)
        return done

    def _carries(self, path: Path, marker: str) -> bool:
        try:
            with self.reading(path) as fd:
                return marker.encode() in os.pread(fd, 2000, 0)
        except (OSError, InvalidInputError):
            return False  # a symlink out is not ours to remove either


def _is_link(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _read_all(fd: int, start: int = 0) -> bytes:
    chunks: list[bytes] = []
    offset = start
    while chunk := os.pread(fd, 1 << 20, offset):
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)
