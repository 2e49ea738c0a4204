"""Reading and writing workspace files safely.

One line-splitting rule is used everywhere (``\\n`` separates lines, a trailing
``\\r`` is dropped, a leading byte-order mark is ignored), so the line numbers
the indexer cites are exactly the lines :func:`memory_get` returns.
"""

from __future__ import annotations

import fcntl
import logging
import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath

from memoryd.errors import InvalidInputError, LimitExceededError, OutsideWorkspaceError
from memoryd.workspace.layout import Workspace
from memoryd.workspace.safefs import WorkspaceFS

log = logging.getLogger("memoryd.workspace")

MAX_GET_LINES = 10_000
_SNIFF_BYTES = 8192


class SkippedFile(Exception):
    """A file the indexer will not index; ``reason`` says why (it is logged)."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


def split_lines(text: str) -> list[str]:
    """Lines as editors number them: split on ``\\n`` only, drop a trailing ``\\r``."""
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # a final newline ends the last line; it does not start a new one
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def read_markdown(path: Path, max_bytes: int, fs: WorkspaceFS) -> tuple[bytes, str]:
    """The raw bytes and text of an indexable file, or :class:`SkippedFile`.

    Huge files, binary or non-UTF-8 files and symlinks leading out of the workspace
    are refused with a reason instead of being indexed as garbage (or as someone
    else's file). Read through ``fs``, so what is checked is what is read.
    """
    try:
        fd = fs.open_read(path)
    except OutsideWorkspaceError as exc:
        raise SkippedFile(path, exc.message) from None
    except (OSError, InvalidInputError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise SkippedFile(path, f"cannot read: {reason}") from None
    try:
        size = os.fstat(fd).st_size
        if size > max_bytes:
            raise SkippedFile(
                path,
                f"{size} bytes is over workspace.max_file_bytes={max_bytes}; "
                "split the file or raise the limit",
            )
        data = os.pread(fd, max_bytes + 1, 0)
        while len(data) <= max_bytes and (more := os.pread(fd, 1 << 20, len(data))):
            data += more
    except OSError as exc:
        raise SkippedFile(path, f"cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if len(data) > max_bytes:  # grew since stat
        raise SkippedFile(path, f"{len(data)} bytes is over workspace.max_file_bytes={max_bytes}")
    if b"\x00" in data[:_SNIFF_BYTES]:
        raise SkippedFile(path, "binary file (contains NUL bytes)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SkippedFile(path, f"not UTF-8 text (byte {exc.start})") from None
    return data, text


# -- memory_get -------------------------------------------------------------------------------


@dataclass(frozen=True)
class FileSlice:
    """What ``memory_get`` returns: ``text`` is empty when the file does not exist."""

    path: str
    text: str
    from_line: int
    lines: int  # how many lines ``text`` holds
    total_lines: int | None  # None when the file is missing
    missing: bool = False

    def to_json(self) -> dict[str, object]:
        return {
            "path": self.path,
            "text": self.text,
            "from": self.from_line,
            "lines": self.lines,
            "total_lines": self.total_lines,
            "missing": self.missing,
        }


def safe_path(ws: Workspace, path: str) -> Path:
    """Resolve a caller-supplied path, refusing anything that could leave the workspace.

    Relative paths only (absolute ones only inside a configured extra path),
    no ``..`` components, Markdown files only. Where a symlink leads is checked when
    the file is opened (:class:`~memoryd.workspace.safefs.WorkspaceFS`), on the
    descriptor that is then read.
    """
    if not isinstance(path, str) or not path.strip():
        raise InvalidInputError("path is empty", 'pass a workspace-relative path like "MEMORY.md"')
    if "\x00" in path:
        raise InvalidInputError("path contains a NUL character", "pass a plain file path")
    posix = PurePosixPath(path)
    if ".." in posix.parts or ".." in PureWindowsPath(path).parts:
        raise InvalidInputError(
            f"path {path!r} contains '..'",
            'paths are relative to the agent workspace, e.g. "memory/2026-03-27.md"',
        )
    if posix.is_absolute() or PureWindowsPath(path).drive:
        target = Path(path)
        extras = [*ws.fs.bases[1:], *(Path(os.path.realpath(e)) for e in ws.fs.bases[1:])]
        if not any(target.is_relative_to(e) for e in extras):
            raise InvalidInputError(
                f"path {path!r} is absolute",
                'pass a path relative to the agent workspace, e.g. "MEMORY.md"',
            )
    else:
        target = ws.root / posix
    if target.suffix.lower() != ".md":
        raise InvalidInputError(
            f"path {path!r} is not a Markdown file",
            "memory_get reads the workspace's .md memory files only",
        )
    return target


def memory_get(
    ws: Workspace, path: str, from_line: int | None = None, lines: int | None = None
) -> FileSlice:
    """Lines ``from_line`` .. ``from_line + lines - 1`` (1-based) of a workspace file.

    The whole file when neither is given. A missing file gives empty text (as
    OpenClaw's ``memory_get`` does) so an agent can probe for today's diary.
    """
    start = 1 if from_line is None else from_line
    if isinstance(start, bool) or not isinstance(start, int) or start < 1:
        raise InvalidInputError(
            f"from must be a line number >= 1, got {from_line!r}", "lines count from 1"
        )
    if lines is not None and (isinstance(lines, bool) or not isinstance(lines, int) or lines < 1):
        raise InvalidInputError(
            f"lines must be >= 1, got {lines!r}", "omit lines to read to the end"
        )
    if lines is not None and lines > MAX_GET_LINES:
        raise LimitExceededError(
            f"lines={lines} is over the limit of {MAX_GET_LINES}",
            "read the file in smaller ranges",
        )
    target = safe_path(ws, path)
    try:
        fd = ws.fs.open_read(target)
    except OutsideWorkspaceError as exc:
        raise OutsideWorkspaceError(
            f"path {path!r} leads outside the workspace of agent {ws.agent_id!r} ({exc.message})",
            "memory_get only reads files inside the agent workspace (symlinks out are refused)",
        ) from None
    except FileNotFoundError:
        return FileSlice(
            path=path, text="", from_line=start, lines=0, total_lines=None, missing=True
        )
    except (IsADirectoryError, NotADirectoryError):
        raise InvalidInputError(
            f"path {path!r} is not a file", "pass the path of a .md file"
        ) from None
    end = None if lines is None else start + lines - 1
    count_all = os.fstat(fd).st_size <= ws.settings.max_file_bytes
    out: list[str] = []
    total: int | None = 0
    with os.fdopen(fd, "rb") as fh:
        for number, raw in enumerate(fh, 1):
            total = number
            if number < start or len(out) >= MAX_GET_LINES:
                continue
            if end is not None and number > end:
                if not count_all:
                    total = None  # a huge file: do not read it all just to count
                    break
                continue
            line = raw.decode("utf-8", errors="replace")
            if number == 1 and line.startswith("\ufeff"):
                line = line[1:]
            if line.endswith("\n"):
                line = line[:-1]
            if line.endswith("\r"):
                line = line[:-1]
            out.append(line)
    return FileSlice(
        path=path, text="\n".join(out), from_line=start, lines=len(out), total_lines=total
    )


# -- writing ----------------------------------------------------------------------------------


def append_atomic(path: Path, text: str, *, fs: WorkspaceFS, header: str | None = None) -> None:
    """Append ``text`` as whole lines, atomically with respect to other writers.

    An exclusive ``flock`` on the file serialises concurrent appenders (other
    threads, other processes, the diary capture); the text goes out in one
    ``write`` and is ``fsync``-ed before the lock is released, so a reader sees
    all of it or none of it. A missing final newline in the file is added first;
    ``header`` starts a file that is empty.
    """
    body = text if text.endswith("\n") else text + "\n"
    fd = fs.open_append(path)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            size = os.fstat(fd).st_size
            if size:
                last = os.pread(fd, 1, size - 1)
                if last != b"\n":
                    body = "\n" + body
            elif header:
                body = header.rstrip("\n") + "\n" + body
            data = body.encode("utf-8")
            written = 0
            while written < len(data):
                written += os.write(fd, data[written:])
            os.fsync(fd)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def create_exclusive(path: Path, text: str, *, fs: WorkspaceFS) -> None:
    """Write a new file that appears complete or not at all, never replacing one.

    The text goes to a hidden temporary file (hidden files are never indexed),
    is fsync-ed, then hard-linked to ``path``; ``FileExistsError`` if ``path`` exists.
    """
    fs.create_exclusive(path, text.encode("utf-8"))


# -- the diary's section writer -------------------------------------------------------------
class LockedDiary:
    """A diary file held under an exclusive ``flock`` while a section is appended.

    ``with LockedDiary(path) as diary: diary.append(text)``: each ``append`` is one
    ``write`` followed by ``fsync``; everything done inside the block (checking
    for a repeated turn, recording it) is serialised with every other writer.
    A writer that replaces the file whole (:meth:`WorkspaceFS.replace_bytes`)
    does so inside this lock, and a writer that was waiting then opens the new
    file, so no append is lost to a replaced one.
    """

    def __init__(self, path: Path, *, fs: WorkspaceFS, header: str | None = None) -> None:
        self.path = path
        self.fs = fs
        self.header = header
        self._fd = -1

    def __enter__(self) -> LockedDiary:
        while True:
            fd = self.fs.open_append(self.path)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                if _same_file(fd, self.path):
                    self._fd = fd
                    return self
            except BaseException:
                os.close(fd)
                raise
            # the file was replaced whole (a rollback cut a block out of DREAMS.md) while
            # we waited: what we would append to is gone, so open the new one
            os.close(fd)

    def __exit__(self, *exc: object) -> None:
        try:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        finally:
            os.close(self._fd)

    @property
    def size(self) -> int:
        """The file's length now (where the next append starts)."""
        return os.fstat(self._fd).st_size

    def framed(self, section: str) -> bytes:
        """The bytes :meth:`append` would write for ``section``: a new (empty) file first
        gets ``header``; a blank line separates the new section from what is there,
        even when the last line (an agent's hand-written note) has no newline."""
        size = self.size
        if size == 0:
            lead = f"{self.header}\n\n" if self.header else ""
        else:
            tail = os.pread(self._fd, 2, max(0, size - 2))
            lead = "" if tail.endswith(b"\n\n") else ("\n" if tail.endswith(b"\n") else "\n\n")
        return (lead + section).encode("utf-8")

    def append(self, section: str) -> int:
        """Append ``section`` (framed as :meth:`framed` says); returns the bytes written."""
        return self.write(self.framed(section))

    def write(self, data: bytes) -> int:
        """Append ``data`` as it is, in one go, then fsync."""
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]
        os.fsync(self._fd)
        return len(data)

    def read(self) -> bytes:
        """The whole file (the lock keeps every other writer out meanwhile)."""
        chunks: list[bytes] = []
        offset = 0
        while chunk := os.pread(self._fd, 1 << 20, offset):
            chunks.append(chunk)
            offset += len(chunk)
        return b"".join(chunks)


def _same_file(fd: int, path: Path) -> bool:
    try:
        st = os.stat(path)  # a symlink inside the workspace is followed, as opening did
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino)


def append_section(path: Path, section: str, *, fs: WorkspaceFS, header: str | None = None) -> int:
    """Append ``section`` to ``path`` as one locked write, then fsync."""
    with LockedDiary(path, fs=fs, header=header) as diary:
        return diary.append(section)
