"""OpenClaw's own session store: the transcripts OpenClaw 2026.9 and later keep in SQLite.

Older OpenClaw versions wrote one JSON-lines file per session
(``agents/<id>/sessions/<sessionId>.jsonl``); 2026.9 keeps every session of an
agent in ``agents/<id>/agent/openclaw-agent.sqlite`` and leaves ``sessions/``
empty. Each row of its ``transcript_events`` table (``session_id``, ``seq``) holds
what used to be one line of the file: the ``{"type": "session"}`` header, then
``{"type": "message", "message": {...}}`` and the other entries, as JSON text in
``event_json`` or, for large events, zstd-compressed in ``event_zstd``.
:func:`session_lines` gives a session back as those JSON lines, so every reader
of the JSONL files (lessons from session logs, ``import-transcript``) reads both.

The store belongs to a running gateway: it is opened read-only (a ``mode=ro``
URI), never written. Its schema is discovered, not assumed: the columns named
above are what is needed, and a store without them is refused with an error
that names what is missing.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from memoryd.errors import InvalidInputError

STORE_NAME = "openclaw-agent.sqlite"
EVENTS = "transcript_events"
WINDOWS = "session_windows"
#: a zstd frame's magic number: how a store's compressed events are recognised
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
MAX_EVENT_BYTES = 64 * 1024 * 1024


def store_path(openclaw_dir: Path, agent_id: str) -> Path:
    """Where OpenClaw 2026.9 keeps ``agent_id``'s sessions (the file may not exist)."""
    return openclaw_dir / "agents" / agent_id / "agent" / STORE_NAME


def is_store(path: Path) -> bool:
    """Whether ``path`` is a SQLite file (by its header), not a JSON-lines transcript."""
    try:
        with path.open("rb") as f:
            return f.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


@dataclass(frozen=True)
class StoredSession:
    session_id: str
    session_key: str | None  # e.g. agent:main:main, when the store says
    events: int


@contextmanager
def open_store(path: Path) -> Iterator[sqlite3.Connection]:
    """The store, read-only, with its layout checked (:class:`InvalidInputError` if unknown)."""
    uri = f"file:{quote(str(path.resolve()))}?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=10)
    except sqlite3.Error as exc:
        raise InvalidInputError(
            f"cannot open OpenClaw's session store {path}: {exc}",
            "check the path and that this user may read it",
        ) from None
    with closing(conn):
        try:
            _check_layout(conn, path)
        except sqlite3.DatabaseError as exc:
            raise InvalidInputError(
                f"{path} is not a readable SQLite database: {exc}",
                "pass OpenClaw's agents/<id>/agent/openclaw-agent.sqlite or a JSON-lines transcript",
            ) from None
        yield conn


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f'PRAGMA table_info("{table}")')}


def _check_layout(conn: sqlite3.Connection, path: Path) -> None:
    columns = _columns(conn, EVENTS)
    needed = {"session_id", "seq"}
    missing = sorted(needed - columns)
    if not columns or missing or not columns & {"event_json", "event_zstd"}:
        version = _schema_version(conn)
        what = f"no {EVENTS} table" if not columns else f"{EVENTS} lacks {missing or 'event_json'}"
        raise InvalidInputError(
            f"{path} is not an OpenClaw session store memoryd knows ({what}; "
            f"schema version {version or 'unknown'})",
            "memoryd reads the layout of OpenClaw 2026.9 (transcript_events); for another "
            "version export the session as JSON lines, or update memoryd",
        )


def _schema_version(conn: sqlite3.Connection) -> int | None:
    if "schema_version" not in _columns(conn, "schema_meta"):
        return None
    row = conn.execute("SELECT max(schema_version) FROM schema_meta").fetchone()
    return int(row[0]) if row and row[0] is not None else None


def sessions(conn: sqlite3.Connection) -> list[StoredSession]:
    """The store's sessions, oldest first."""
    has_keys = {"session_id", "session_key"} <= _columns(conn, WINDOWS)
    counts = conn.execute(
        f"SELECT session_id, count(*), min(rowid) FROM {EVENTS} GROUP BY session_id ORDER BY 3"
    ).fetchall()
    keys: dict[str, str] = {}
    if has_keys:
        keys = dict(conn.execute(f"SELECT session_id, session_key FROM {WINDOWS}").fetchall())
    return [StoredSession(str(sid), keys.get(sid), int(n)) for sid, n, _ in counts]


def session_lines(conn: sqlite3.Connection, session_id: str) -> Iterator[str]:
    """The session's events as JSON lines (no newline), in order."""
    columns = _columns(conn, EVENTS)
    text = "event_json" if "event_json" in columns else "NULL"
    blob = "event_zstd" if "event_zstd" in columns else "NULL"
    rows = conn.execute(
        f"SELECT seq, {text}, {blob} FROM {EVENTS} WHERE session_id = ? ORDER BY seq",
        (session_id,),
    )
    for seq, event_json, event_zstd in rows:
        if event_json is not None:
            yield str(event_json)
        elif event_zstd is not None:
            yield _decompress(bytes(event_zstd), session_id, int(seq))


def session_bytes(conn: sqlite3.Connection, session_id: str) -> bytes:
    """The session as the JSON-lines file older OpenClaw versions wrote."""
    return "".join(f"{line}\n" for line in session_lines(conn, session_id)).encode("utf-8")


def _decompress(data: bytes, session_id: str, seq: int) -> str:
    import zstandard

    if not data.startswith(ZSTD_MAGIC):
        raise InvalidInputError(
            f"event {seq} of session {session_id} is neither JSON nor zstd",
            "this store's encoding is unknown to memoryd: export the session as JSON lines",
        )
    try:
        raw = zstandard.ZstdDecompressor().decompress(data, max_output_size=MAX_EVENT_BYTES)
    except zstandard.ZstdError as exc:
        raise InvalidInputError(
            f"event {seq} of session {session_id} does not decompress: {exc}",
            "the store may be damaged; OpenClaw's `openclaw doctor` checks it",
        ) from None
    return raw.decode("utf-8", errors="replace")
