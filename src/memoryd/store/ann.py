"""An approximate nearest-neighbour graph over the search index's rows (HNSW, usearch).

A linear scan streams every row per query: at 1M memories even the 96-dimension
projection pass of :class:`~memoryd.store.vectors.VectorIndex` is ~50 ms. Above
``ANN_MIN_ROWS`` rows the index also keeps an HNSW graph (usearch, int8, cosine)
keyed by row number; a search asks it for a few hundred candidates and re-scores
them exactly against the index's own vectors, so a hit's score is the same as
with the scan. ``bench/scale.py`` reports the top-10 agreement with the exact scan.

The graph is built in a background thread by a long-lived process (``memoryd
serve`` calls :func:`build_in_background`): the index keeps answering by the scan
meanwhile (the build takes one core ~30 s at 100k rows, ~8 minutes at 1M) and adopts the graph when it is
complete. It is then kept up to date row by row, renamed when the index compacts
its rows, and saved in the index snapshot, so every later process (a CLI command,
an MCP server) starts with it. A short-lived process never starts a build it would
not live to finish: without a graph in the snapshot it scans, as below the
threshold. Every graph operation holds the graph's lock:
usearch's Python binding grows its capacity on add, which must not race a search.

usearch is installed with memoryd; where it cannot be (a platform without a wheel),
the index scans as before.
"""

from __future__ import annotations

import atexit
import importlib.util
import logging
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

ANN_MIN_ROWS = 50_000  # below this the projection scan is a few milliseconds
CANDIDATES = 128  # graph candidates re-scored exactly, at the least (and 8 x k)
CONNECTIVITY = 16
EXPANSION_ADD = 128
EXPANSION_SEARCH = 320  # the graph's search breadth (ef), at the least
BUILD_BLOCK = 1024  # rows a builder adds between looks at its stop flag (~0.3 s)


_background = threading.Event()


def build_in_background(enabled: bool = True) -> None:
    """Let indexes of this process build their graph in a background thread (a
    process that lives long enough to finish and use it: the HTTP server)."""
    if enabled:
        _background.set()
    else:
        _background.clear()


def builds_in_background() -> bool:
    return _background.is_set()


_running: set[tuple[threading.Thread, threading.Event]] = set()
_running_lock = threading.Lock()


def run_build(work: Callable[[], None], stop: threading.Event) -> None:
    """Run ``work`` (a graph build that returns soon after ``stop`` is set) in a daemon
    thread that the process stops and waits for at exit: a process leaving while usearch
    is inside an ``add`` aborts ("terminate called without an active exception")."""

    def run() -> None:
        try:
            work()
        finally:
            with _running_lock:
                _running.discard(entry)

    thread = threading.Thread(target=run, name="memoryd-ann-build", daemon=True)
    entry = (thread, stop)
    with _running_lock:
        _running.add(entry)
    thread.start()


@atexit.register
def stop_builds(timeout: float = 30.0) -> None:
    """Stop every graph build of this process and wait for them (registered to run at
    exit; a closing store stops its own, :meth:`VectorIndex.stop_building`)."""
    with _running_lock:
        running = list(_running)
    for _, stop in running:
        stop.set()
    for thread, _ in running:
        thread.join(timeout)


def search_width(rows: int) -> tuple[int, int]:
    """(candidates to re-score, search breadth ef) for a graph of ``rows``. At a fixed
    ef an HNSW graph finds less of the true top 10 as it grows (measured here: ef 320
    and 128 candidates agree with the exact scan on 0.996 of the top 10 at 100k rows,
    0.986 at 300k, 0.863 at 1M), so ef grows with the rows past 160,000: 320 up to
    there, 600 at 300k, 2,000 at 1M (0.98 there, ~8 ms). A wider search at 100k buys
    little (ef 632: 0.9995 agreement instead of 0.9955, for 3.64 instead of 1.88 ms)."""
    ef = max(EXPANSION_SEARCH, rows // 500)
    return max(CANDIDATES, ef // 2), ef


def available() -> bool:
    return importlib.util.find_spec("usearch") is not None


def _index_class() -> Any:
    # onnxruntime must be imported before usearch: the other way round the process
    # crashes in onnxruntime's import (usearch 2.26.6 with onnxruntime 1.31.1 on Linux x86-64)
    import onnxruntime  # noqa: F401
    from usearch.index import Index

    return Index


class AnnGraph:
    """An HNSW graph of row numbers; thread-safe."""

    def __init__(self, dim: int, graph: Any = None) -> None:
        index_class = _index_class()
        self.dim = dim
        self._lock = threading.Lock()
        self._index: Any = (
            graph
            if graph is not None
            else index_class(
                ndim=dim,
                metric="cos",
                dtype="i8",
                connectivity=CONNECTIVITY,
                expansion_add=EXPANSION_ADD,
                expansion_search=EXPANSION_SEARCH,
            )
        )

    def __len__(self) -> int:
        return len(self._index)

    def add(self, rows: np.ndarray, vectors: np.ndarray) -> None:
        if rows.size:
            keys = rows.astype(np.uint64)
            with self._lock:
                self._index.add(keys, np.asarray(vectors, dtype=np.float32), threads=1)

    def remove(self, rows: np.ndarray) -> None:
        if rows.size:
            with self._lock:
                self._index.remove(rows.astype(np.uint64))

    def replace(self, row: int, vector: np.ndarray | None) -> None:
        """Row ``row`` now holds ``vector`` (None: no vector, or a dead row)."""
        key = np.array([row], dtype=np.uint64)
        with self._lock:
            if self._index.contains(row):
                self._index.remove(key)
            if vector is not None:
                self._index.add(key, np.asarray(vector, dtype=np.float32)[None], threads=1)

    def renumber(self, old: np.ndarray, new: np.ndarray) -> None:
        """Rows ``old`` became ``new`` (a compaction: every row moves down or stays, so
        renaming in ascending order never lands on a key still in use)."""
        moved = old != new
        old, new = old[moved], new[moved]
        order = np.argsort(old, kind="stable")
        with self._lock:
            for start in range(0, order.size, BUILD_BLOCK):
                part = order[start : start + BUILD_BLOCK]
                self._index.rename(old[part].astype(np.uint64), new[part].astype(np.uint64))

    def search(self, query: np.ndarray, count: int, ef: int = EXPANSION_SEARCH) -> np.ndarray:
        """Up to ``count`` rows nearest ``query`` (best first), searched ``ef`` wide."""
        with self._lock:
            if len(self._index) == 0:
                return np.zeros(0, dtype=np.int64)
            self._index.expansion_search = max(ef, count)
            found = self._index.search(np.asarray(query, dtype=np.float32), count)
        return np.asarray(found.keys, dtype=np.int64)

    def to_array(self) -> np.ndarray:
        with self._lock:
            return np.frombuffer(self._index.save(), dtype=np.uint8)  # a bytearray: no copy

    @classmethod
    def from_array(cls, dim: int, data: np.ndarray) -> AnnGraph:
        # restore copies what it reads: the array itself goes in, no bytes copy of it first
        try:
            graph = _index_class().restore(np.ascontiguousarray(data, dtype=np.uint8))
        except Exception as exc:  # usearch raises its own errors: the snapshot is unusable
            raise ValueError(f"the saved nearest-neighbour graph does not load: {exc}") from exc
        if graph is None or int(graph.ndim) != dim:
            raise ValueError("the saved nearest-neighbour graph does not match the index")
        graph.expansion_search = EXPANSION_SEARCH
        return cls(dim, graph)

    def memory_bytes(self) -> int:
        """The graph's bytes as saved (its int8 vectors, links and keys: ~530 a row); a
        process's resident size grows by about that much. usearch's own ``memory_usage``
        counts its arenas' reserved capacity (~1.1 KB a row at any connectivity)."""
        with self._lock:
            return int(self._index.serialized_length)
