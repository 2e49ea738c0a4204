"""SQLite store: processes that open one file at once, and a change log that stays bounded."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

from memoryd.models import Filters, MemoryRecord
from memoryd.settings import StoreSettings
from memoryd.store.sqlite import SQLiteStore

OPEN_AND_WRITE = """
import sys, numpy as np
from memoryd.models import MemoryRecord
from memoryd.store.sqlite import SQLiteStore
store = SQLiteStore(sys.argv[1])
vec = np.ones(4, dtype=np.float32) / 2
store.add([MemoryRecord(id=sys.argv[2], text="hello " + sys.argv[2], user_id="u", embedding=vec)])
store.close()
"""


def test_many_processes_open_a_new_store_at_once(tmp_path: Path) -> None:
    for trial in range(3):
        db = tmp_path / f"trial{trial}.db"
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", OPEN_AND_WRITE, str(db), f"p{n}"],
                stderr=subprocess.PIPE,
                text=True,
            )
            for n in range(6)
        ]
        errors = [p.communicate(timeout=120)[1] for p in procs]
        assert [p.returncode for p in procs] == [0] * 6, errors  # no "database is locked"
        store = SQLiteStore(str(db))
        assert store.count(Filters(user_id="u")) == 6
        store.close()


def _record(n: int) -> MemoryRecord:
    vec = np.zeros(4, dtype=np.float32)
    vec[n % 4] = 1.0
    return MemoryRecord(
        id=f"m{n}", text=f"note number {n} about topic{n}", user_id="u", embedding=vec
    )


def test_the_change_log_is_pruned_and_readers_stay_in_sync(tmp_path: Path) -> None:
    url = str(tmp_path / "s.db")
    settings = StoreSettings(changes_kept=50)
    writer = SQLiteStore(url, settings)
    reader = SQLiteStore(url, settings)  # another process's view of the same file
    writer.add([_record(0)])
    assert reader.keyword_search("topic0", Filters(user_id="u"), 5)  # its index is loaded
    for n in range(1, 400):
        writer.add([_record(n)])
    rows = writer._db.execute("SELECT count(*) FROM changes").fetchone()[0]
    assert rows <= 2 * 50 + 1  # bounded, not one row per write forever
    # the reader fell behind the pruned log: it reloads and sees every write
    hits = reader.keyword_search("topic399", Filters(user_id="u"), 5)
    assert [i for i, _ in hits] == ["m399"]
    assert reader.count(Filters(user_id="u")) == 400
    writer.close()
    reader.close()
