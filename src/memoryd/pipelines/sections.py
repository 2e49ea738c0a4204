"""Reading diaries by byte offset and cutting them into ``##`` sections and batches.

The digest remembers how far it has read each diary as a byte offset, so it
reads bytes (never decoded text) from there, under the same shared ``flock``
diary capture appends under (:mod:`memoryd.pipelines.diary`): a read sees whole
sections only. Offsets always fall on a section start, so a batch never begins
or ends in the middle of one.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, tzinfo
from pathlib import Path

from memoryd.workspace.safefs import WorkspaceFS

_HEADER = re.compile(rb"^## ", re.MULTILINE)
_SPEAKER = re.compile(r"^- \*\*([\w .-]{1,40})\*\*(?: \(\w{1,20}\))?: ", re.MULTILINE)
_CONTINUATION = re.compile(r"^  (?=\S)", re.MULTILINE)
_TIME = re.compile(r"^##\s+(\d{1,2}):(\d{2})\b")


def read_from(path: Path, start: int, fs: WorkspaceFS) -> bytes:
    """The bytes of ``path`` from ``start`` to its end, read under a shared lock (``b""``
    for a missing file; a symlink out of the workspace is refused by ``fs``)."""
    return fs.read_if_exists(path, start, shared_lock=True)


@dataclass(frozen=True)
class Section:
    """Bytes ``[start, end)`` of a file; ``header`` is its ``## ...`` line ('' before any)."""

    start: int
    end: int
    data: bytes
    header: str

    @property
    def size(self) -> int:
        return self.end - self.start


def split_sections(data: bytes, base: int = 0) -> list[Section]:
    """``data`` (the file from byte ``base``) cut before every ``## `` line."""
    cuts = [m.start() for m in _HEADER.finditer(data)]
    if not cuts or cuts[0] != 0:
        cuts.insert(0, 0)
    out: list[Section] = []
    for n, cut in enumerate(cuts):
        end = cuts[n + 1] if n + 1 < len(cuts) else len(data)
        if end <= cut:
            continue
        chunk = data[cut:end]
        first = chunk.split(b"\n", 1)[0].decode("utf-8", "replace")
        out.append(Section(base + cut, base + end, chunk, first if first.startswith("## ") else ""))
    return out


def section_time(header: str, day: date, tz: tzinfo) -> datetime | None:
    """When a ``## HH:MM`` section was written, on diary ``day`` in ``tz``."""
    m = _TIME.match(header)
    if not m:
        return None
    hour, minute = int(m.group(1)), int(m.group(2))
    if hour > 23 or minute > 59:
        return None
    return datetime.combine(day, time(hour, minute), tzinfo=tz)


def complete_prefix(
    sections: list[Section],
    *,
    day_over: bool,
    now: datetime,
    day: date,
    tz: tzinfo,
    settle: timedelta,
) -> list[Section]:
    """The leading sections that are finished.

    A section followed by another one is finished. The last one is finished when
    the diary's day is over, when it ends with a newline and its ``## HH:MM`` time
    is at least ``settle`` ago, or (no time in the header) when it ends with a
    blank line. Anything else may still be growing and waits for the next run.
    """
    if day_over or not sections:
        return list(sections)
    *done, last = sections
    if not last.data.endswith(b"\n"):
        return done
    when = section_time(last.header, day, tz)
    if when is not None:
        return [*done, last] if now - when >= settle else done
    return [*done, last] if last.data.endswith(b"\n\n") else done


@dataclass(frozen=True)
class Batch:
    start: int
    end: int
    data: bytes

    @property
    def text(self) -> str:
        return self.data.decode("utf-8", "replace")

    def key(self, *parts: str) -> str:
        """A stable id for this batch of this file (same bytes, same place: same key)."""
        h = hashlib.sha256()
        for part in (*parts, str(self.start), str(self.end)):
            h.update(part.encode())
            h.update(b"\0")
        h.update(self.data)
        return h.hexdigest()[:24]


def batches(sections: list[Section], max_bytes: int) -> list[Batch]:
    """Consecutive sections grouped into batches of at most ``max_bytes``.

    A single section larger than that is cut at line ends (then anywhere, for a
    single giant line), so no batch ever exceeds the limit.
    """
    out: list[Batch] = []
    start = end = -1
    parts: list[bytes] = []
    for s in sections:
        if s.size > max_bytes:
            if parts:
                out.append(Batch(start, end, b"".join(parts)))
                parts = []
            out.extend(_cut(s.start, s.data, max_bytes))
            continue
        if parts and end - start + s.size > max_bytes:
            out.append(Batch(start, end, b"".join(parts)))
            parts = []
        if not parts:
            start = s.start
        parts.append(s.data)
        end = s.end
    if parts:
        out.append(Batch(start, end, b"".join(parts)))
    return out


def _cut(base: int, data: bytes, max_bytes: int) -> list[Batch]:
    out: list[Batch] = []
    pos = 0
    while pos < len(data):
        stop = min(len(data), pos + max_bytes)
        if stop < len(data):
            nl = data.rfind(b"\n", pos, stop)
            if nl > pos:
                stop = nl + 1
            else:  # one line longer than a batch: cut on a UTF-8 character boundary
                while stop > pos + 1 and (data[stop] & 0xC0) == 0x80:
                    stop -= 1
        out.append(Batch(base + pos, base + stop, data[pos:stop]))
        pos = stop
    return out


def line_range(full: bytes, batch: Batch) -> tuple[int, int]:
    """1-based first and last line of ``batch`` in the file whose bytes are ``full``."""
    first = full.count(b"\n", 0, batch.start) + 1
    last = first + batch.data.rstrip(b"\n").count(b"\n")
    return first, last


def plain_text(text: str) -> str:
    """Diary text as extraction wants it: ``- **user**: hi`` (diary capture's Markdown)
    becomes ``user: hi``, the way ``Memory.add(messages=...)`` writes turns, and the
    indentation of a message's continuation lines goes."""
    return _CONTINUATION.sub("", _SPEAKER.sub(r"\1: ", text))
