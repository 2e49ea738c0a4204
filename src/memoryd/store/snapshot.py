"""The search index saved beside an SQLite store, so a process starts without re-indexing.

Building the in-memory index (:class:`~memoryd.store.vectors.VectorIndex`) from
the rows means reading every embedding and tokenising every text: ~5 s at
100k memories, paid by every ``memoryd serve``, CLI command and MCP server that
searches. A snapshot is that index as numpy arrays in one ``.npz`` file
(``<store>.index``), loaded in a fraction of the time.

A snapshot is a cache, never a source of truth. It records the change-log
position it reflects (``seq``) and the ``memory_id`` logged at that position,
so a process loading it replays only what was written since; a snapshot whose
position is no longer in the log (pruned, or a store restored from a backup
whose log never held that entry) is ignored and the index is built from the
rows. Files are written to a temporary name and renamed, so a reader sees the
old snapshot or the new one, never half of one; no pickle is involved
(``allow_pickle=False``): ids and terms travel as JSON.
"""

from __future__ import annotations

import json
import logging
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from memoryd.atomic import replacing
from memoryd.store.vectors import VectorIndex

#: 2: the conversation columns of turns (search.turns); 3: whether a turn is dated;
#: 4: whether a turn is an instruction or a preference
FORMAT = 4
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Position:
    """Where in the change log an index is: ``seq`` and the memory id logged there."""

    seq: int
    memory_id: str


def path_for(store_path: Path) -> Path:
    return store_path.with_name(store_path.name + ".index")


def save(path: Path, index: VectorIndex, at: Position) -> None:
    """Write ``index`` (as of ``at``) to ``path`` atomically."""
    meta, arrays = index.state()
    header = {"format": FORMAT, "seq": at.seq, "memory_id": at.memory_id, **meta}
    blob = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    with replacing(path, mode=0o600) as out:  # memories' vectors: private like the store
        np.savez(out, header=blob, **arrays)  # type: ignore[arg-type]


def load(path: Path) -> tuple[VectorIndex, Position] | None:
    """The index saved at ``path`` and its position; None when there is no usable one."""
    try:
        with np.load(path, allow_pickle=False) as data:
            header = json.loads(data["header"].tobytes())
            if header.get("format") != FORMAT:
                return None
            arrays = {k: data[k] for k in data.files if k != "header"}
        index = VectorIndex.from_state(header, arrays)
        return index, Position(int(header["seq"]), str(header["memory_id"]))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile) as exc:
        log.warning("ignoring the search index snapshot %s (%s); rebuilding it", path, exc)
        return None
