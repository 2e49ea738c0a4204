"""The in-memory search index: an embedding matrix, BM25 postings and scope columns.

Brute-force cosine over a contiguous numpy matrix beat sqlite-vec by ~10x at
100k rows on this class of machine, and filters become vectorised masks that
the keyword side (:mod:`memoryd.store.keywords`) shares, so both halves of a
hybrid search see exactly the same rows (and BM25 counts its statistics over
those rows only).

Above ``COARSE_MIN_ROWS`` candidate rows, vector search runs in two stages:
a coarse pass over the rows projected onto the corpus's top ``COARSE_DIMS``
principal directions (a quarter of the bytes to stream), then exact cosine
over the best ``COARSE_CANDIDATES``. Streaming 100k x 384 floats per query is
what a brute-force search costs; ``bench/scale.py`` reports the top-10
agreement of the two-stage search with the exact one. Once two-stage, the
full vectors are kept in float16 (they only re-score a shortlist, or a small
scope's rows): 768 bytes a memory instead of 1,536 at 384 dimensions.
A scope admitting under a quarter of the rows (one user of many) is scored
on its own rows, gathered, rather than on every row. Above ``ANN_MIN_ROWS``
rows an HNSW graph (:mod:`memoryd.store.ann`) replaces the projection pass for
larger scopes: its candidates are re-scored exactly the same way.

Rows are stable: a memory keeps its row while its text is unchanged; a
removed memory, or one whose text changed, leaves a dead row behind (its
text is re-indexed in a new row). Dead rows are compacted away once they are
a quarter of the index. The owner (a store) keeps it in sync with its rows.
"""

from __future__ import annotations

import hashlib
import logging
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memoryd.models import Filters, RankFacts
from memoryd.search.entities import names_of
from memoryd.store import ann
from memoryd.store.keywords import MIN_SCALE, KeywordIndex

log = logging.getLogger(__name__)

#: columns held as small integer codes; ``thread`` is a turn's conversation (search.turns)
_CODED = (
    "user_id", "agent_id", "run_id", "category", "origin", "state", "speaker", "person", "thread"
)  # fmt: skip
_DEAD = -2  # a code no filter value matches
COARSE_MIN_ROWS = 20_000  # below this, exact search is already fast
COARSE_DIMS = 96
COARSE_CANDIDATES = 512  # re-scored exactly (at least 8 x k)
_FIT_SAMPLE = 20_000
GATHER_BELOW = 4  # a scope admitting under 1/4 of the rows is scored on its rows only


def headroom(rows: int) -> int:
    """The capacity to give ``rows`` rows: an eighth more (as Python's lists do), so
    growing one row at a time stays amortised O(1) while a large index carries 12.5%
    of unused rows, not up to 100% (doubling) or 25%: at 1M memories each spare row
    is ~1.2 KB of arrays."""
    return max(1024, rows + rows // 8)


@dataclass
class _Build:
    """A nearest-neighbour graph being built in the background over rows ``[0, rows)``;
    ``dirty`` are rows changed meanwhile (re-added when the graph is adopted)."""

    rows: int
    dirty: set[int] = field(default_factory=set)
    graph: ann.AnnGraph | None = None  # set when complete
    done: threading.Event = field(default_factory=threading.Event)
    stop: threading.Event = field(default_factory=threading.Event)  # give up (compaction, exit)


class VectorIndex:
    def __init__(self, dim: int, capacity: int = 1024) -> None:
        self.dim = dim
        self.ann_min_rows = ann.ANN_MIN_ROWS  # rows from which a graph is built (if usearch is)
        self._ann: ann.AnnGraph | None = None
        self._ann_build: _Build | None = None
        self._ann_guard = threading.Lock()  # adoption vs writers' graph updates
        self._ann_failed = False  # a build failed: this process scans from then on
        self.keywords = KeywordIndex()
        self._vecs = np.zeros((capacity, dim), dtype=np.float32)
        self._cols = {c: np.full(capacity, -1, dtype=np.int32) for c in _CODED}
        self._created = np.zeros(capacity, dtype=np.float64)
        self._when = np.zeros(capacity, dtype=np.float64)  # event_at, else created_at
        self._evergreen = np.zeros(capacity, dtype=bool)
        self._turn = np.full(capacity, -1, dtype=np.int32)  # a turn's position; -1: not a turn
        self._words = np.zeros(capacity, dtype=np.uint16)  # a turn's length in words
        self._asks = np.zeros(capacity, dtype=bool)  # a turn ending in a question mark
        self._dated = np.zeros(capacity, dtype=bool)  # a turn stating a time
        self._directs = np.zeros(capacity, dtype=bool)  # an instruction or preference
        self._alive = np.zeros(capacity, dtype=bool)
        self._has_vec = np.zeros(capacity, dtype=bool)
        self._codes: dict[str, dict[str, int]] = {c: {} for c in _CODED}
        self.ids: list[str | None] = []  # by row; None for a dead row
        self._digest = np.zeros(capacity, dtype=np.int64)  # text_digest of each row's text
        self._row: dict[str, int] = {}
        self._proj: np.ndarray | None = None  # dim x COARSE_DIMS, once fitted
        # rows projected on _proj; None before the fit, and once a graph replaces the pass
        self._coarse: np.ndarray | None = None
        self._names_by_codes: dict[tuple[int, int], frozenset[str]] = {}
        self._threads: list[str] = []  # thread code -> its key, rebuilt when codes grow
        self._version = 0  # bumped by every change: masks are cached per version
        self._last_mask: tuple[int, str, np.ndarray] | None = None

    def __len__(self) -> int:
        return len(self._row)

    def __contains__(self, memory_id: object) -> bool:
        return memory_id in self._row

    def live_ids(self) -> set[str]:
        return set(self._row)

    def _code(self, column: str, value: str | None, create: bool) -> int:
        if value is None:
            return -1
        codes = self._codes[column]
        code = codes.get(value)
        if code is None:
            if not create:
                return _DEAD  # matches no row
            code = codes[value] = len(codes)
        return code

    def _reserve(self, rows: int) -> None:
        cap = self._vecs.shape[0]
        if rows <= cap:
            return
        cap = max(rows, headroom(cap))
        self._vecs = np.resize(self._vecs, (cap, self.dim))
        for c in _CODED:
            self._cols[c] = np.resize(self._cols[c], cap)
        self._created = np.resize(self._created, cap)
        self._digest = np.resize(self._digest, cap)
        self._when = np.resize(self._when, cap)
        self._evergreen = np.resize(self._evergreen, cap)
        self._turn = np.resize(self._turn, cap)
        self._words = np.resize(self._words, cap)
        self._asks = np.resize(self._asks, cap)
        self._dated = np.resize(self._dated, cap)
        self._directs = np.resize(self._directs, cap)
        self._alive = np.resize(self._alive, cap)
        self._has_vec = np.resize(self._has_vec, cap)
        self._alive[len(self.ids) :] = False
        if self._coarse is not None:
            self._coarse = np.resize(self._coarse, (cap, COARSE_DIMS))

    def _set(self, row: int, vector: np.ndarray | None, attrs: dict[str, Any]) -> None:
        self._version += 1
        if vector is None:
            self._vecs[row] = 0.0
        else:
            self._vecs[row] = vector
        if self._coarse is not None and self._proj is not None:
            self._coarse[row] = 0.0 if vector is None else vector.astype(np.float32) @ self._proj
        self._has_vec[row] = vector is not None
        for c in _CODED:
            self._cols[c][row] = self._code(c, attrs.get(c), create=True)
        self._created[row] = attrs.get("created_at", 0.0)
        event_at = attrs.get("event_at")
        self._when[row] = self._created[row] if event_at is None else event_at
        self._evergreen[row] = bool(attrs.get("evergreen"))
        place = attrs.get("turn")  # a conversation turn's (thread key, position)
        thread = -1 if place is None else self._code("thread", place[0], create=True)
        self._cols["thread"][row] = thread
        self._turn[row] = -1 if place is None else place[1]
        self._words[row] = min(int(attrs.get("words", 0)), _MAX_WORDS)
        self._asks[row] = bool(attrs.get("asks"))
        self._dated[row] = bool(attrs.get("dated"))
        self._directs[row] = bool(attrs.get("directs"))
        self._graph_note(row, vector)

    def _graph_note(self, row: int, vector: np.ndarray | None) -> None:
        """Keep the graph (or the one being built) in step with row ``row``."""
        if self._ann is None and self._ann_build is None:
            return
        with self._ann_guard:
            if self._ann is not None:
                self._ann.replace(row, vector)
            elif self._ann_build is not None:
                self._ann_build.dirty.add(row)

    def _append(
        self, memory_id: str, vector: np.ndarray | None, attrs: dict[str, Any], text: str
    ) -> int:
        row = len(self.ids)
        self._reserve(row + 1)
        self.ids.append(memory_id)
        self._digest[row] = text_digest(text)
        self._row[memory_id] = row
        self._alive[row] = True
        self._set(row, vector, attrs)
        return row

    def upsert(
        self, memory_id: str, vector: np.ndarray | None, attrs: dict[str, Any], text: str = ""
    ) -> None:
        """Index one memory (``vector`` None: keyword-only); ``text`` is what BM25 sees."""
        row = self._row.get(memory_id)
        if row is not None and self._digest[row] == text_digest(text):
            self._set(row, vector, attrs)  # same text: scope/state/vector change in place
            return
        if row is not None:
            self.remove(memory_id)
        self.keywords.add(self._append(memory_id, vector, attrs, text), text)

    def load_block(
        self,
        ids: Sequence[str],
        vectors: np.ndarray,
        has_vec: np.ndarray,
        columns: Mapping[str, Sequence[str | None]],
        created: np.ndarray,
        texts: Sequence[str],
        when: np.ndarray | None = None,
        evergreen: np.ndarray | None = None,
        turns: Sequence[dict[str, Any]] | None = None,
    ) -> None:
        """Bulk-load memories not in the index yet (an index's first load); ``when``
        defaults to ``created``, ``evergreen`` to False; ``turns`` holds each row's
        conversation facts (:func:`memoryd.search.turns.facts`; empty: not a turn)."""
        start, m = len(self.ids), len(ids)
        self._version += 1
        if any(i in self._row for i in ids):
            raise ValueError("load_block is for memories not in the index yet")
        self._reserve(start + m)
        block = slice(start, start + m)
        self._vecs[block] = vectors
        self._has_vec[block] = has_vec
        self._alive[block] = True
        for c in _CODED:
            values = columns.get(c, [None] * m)
            codes = {v: self._code(c, v, create=True) for v in set(values)}
            self._cols[c][block] = np.fromiter(map(codes.__getitem__, values), np.int32, m)
        self._created[block] = created
        self._when[block] = created if when is None else when
        self._evergreen[block] = False if evergreen is None else evergreen
        self._turn[block], self._words[block] = -1, 0
        self._asks[block], self._dated[block], self._directs[block] = False, False, False
        for offset, t in enumerate(turns or ()):
            if t:
                row = start + offset
                key, self._turn[row] = t["turn"]
                self._cols["thread"][row] = self._code("thread", key, create=True)
                self._words[row] = min(t["words"], _MAX_WORDS)
                self._asks[row] = t["asks"]
                self._dated[row] = t["dated"]
                self._directs[row] = t["directs"]
        if self._coarse is not None and self._proj is not None:
            self._coarse[block] = vectors.astype(np.float32) @ self._proj
        if self._ann is not None or self._ann_build is not None:
            for row in range(start, start + m):
                self._graph_note(row, vectors[row - start] if has_vec[row - start] else None)
        self.ids.extend(ids)
        self._digest[block] = np.fromiter(map(text_digest, texts), np.int64, m)
        self._row.update(zip(ids, range(start, start + m), strict=True))
        self.keywords.add_many(range(start, start + m), texts)

    def remove(self, memory_id: str) -> None:
        row = self._row.pop(memory_id, None)
        if row is None:
            return
        self._version += 1
        self.ids[row] = None
        self._alive[row] = False
        self._has_vec[row] = False
        for c in _CODED:
            self._cols[c][row] = _DEAD
        self.keywords.drop(row)
        self._graph_note(row, None)
        dead = len(self.ids) - len(self._row)
        if dead > max(1024, len(self.ids) // 4):
            self.compact()

    def compact(self) -> None:
        """Drop dead rows; live rows keep their order."""
        self._version += 1
        n = len(self.ids)
        alive = self._alive[:n]
        new_row = np.full(n, -1, dtype=np.int64)
        new_row[alive] = np.arange(int(alive.sum()))
        keep = np.flatnonzero(alive)
        cap = headroom(keep.size)
        self._vecs = _take(self._vecs, keep, cap)
        for c in _CODED:
            self._cols[c] = _take(self._cols[c], keep, cap)
        self._created = _take(self._created, keep, cap)
        self._when = _take(self._when, keep, cap)
        self._evergreen = _take(self._evergreen, keep, cap)
        self._turn = _take(self._turn, keep, cap)
        self._words = _take(self._words, keep, cap)
        self._asks = _take(self._asks, keep, cap)
        self._dated = _take(self._dated, keep, cap)
        self._directs = _take(self._directs, keep, cap)
        self._alive = _take(self._alive, keep, cap)
        self._has_vec = _take(self._has_vec, keep, cap)
        if self._coarse is not None:
            self._coarse = _take(self._coarse, keep, cap)
        self.ids = [self.ids[r] for r in keep]
        self._digest = _take(self._digest, keep, cap)
        self._row = {mid: r for r, mid in enumerate(self.ids) if mid is not None}
        self.keywords.remap(new_row, keep.size)
        with self._ann_guard:
            if self._ann_build is not None:  # built for the old row numbers: dropped
                self._ann_build.stop.set()
            self._ann_build = None
            if self._ann is not None:  # dead rows left the graph when they died
                self._ann.renumber(keep, np.arange(keep.size))

    def memory_bytes(self) -> int:
        """Bytes this index holds (arrays at their capacity, ids, the id map, BM25)."""
        arrays: list[np.ndarray] = [self._vecs, self._created, self._when]
        arrays += [] if self._coarse is None else [self._coarse]
        arrays += [self._evergreen, self._turn, self._words, self._asks, self._dated]
        arrays += [self._directs]
        arrays += [self._alive, self._has_vec, self._digest, *self._cols.values()]
        total = sum(a.nbytes for a in arrays)
        total += sys.getsizeof(self.ids) + sum(sys.getsizeof(i) for i in self.ids)
        total += sys.getsizeof(self._row)  # its keys are the ids' strings, counted above
        if self._ann is not None:
            total += self._ann.memory_bytes()
        return total + self.keywords.memory_bytes()

    # -- persistence (see memoryd.store.snapshot) ---------------------------------------------
    def state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """Everything needed to rebuild this index: JSON-able facts and numpy arrays.

        Dead rows are compacted away first, so the state holds live rows only."""
        if len(self.ids) != len(self._row):
            self.compact()
        n = len(self.ids)
        meta: dict[str, Any] = {"dim": self.dim, "ids": self.ids, "codes": self._codes}
        arrays: dict[str, np.ndarray] = {
            "vecs": self._vecs[:n],
            "created": self._created[:n],
            "when": self._when[:n],
            "evergreen": self._evergreen[:n],
            "turn": self._turn[:n],
            "words": self._words[:n],
            "asks": self._asks[:n],
            "dated": self._dated[:n],
            "directs": self._directs[:n],
            "has_vec": self._has_vec[:n],
            "text": self._digest[:n],
            **{f"col_{c}": self._cols[c][:n] for c in _CODED},
        }
        if self._proj is not None:
            arrays["proj"] = self._proj
        if self._coarse is not None:
            arrays["coarse"] = self._coarse[:n]
        if self._ann is not None:
            arrays["ann"] = self._ann.to_array()
        words, keyword_arrays = self.keywords.state()
        meta["terms"] = words
        arrays |= {f"kw_{k}": v for k, v in keyword_arrays.items()}
        return meta, arrays

    @classmethod
    def from_state(cls, meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray]) -> VectorIndex:
        """The inverse of :meth:`state` (``ValueError`` when the parts do not fit)."""
        ids = [str(i) for i in meta["ids"] if isinstance(i, str)]
        n = len(ids)
        index = cls(int(meta["dim"]), capacity=0)
        vecs = arrays["vecs"]
        if vecs.shape != (n, index.dim) or n != len(meta["ids"]):
            raise ValueError("index snapshot: rows do not match ids")
        # the loaded arrays become the index's own (the first write after grows them)
        # float16 once the index is two-stage (see _fit), float32 before
        half = "proj" in arrays
        index._vecs = np.ascontiguousarray(vecs, dtype=np.float16 if half else np.float32)
        index._created = np.asarray(arrays["created"], dtype=np.float64)
        index._when = np.asarray(arrays["when"], dtype=np.float64)
        index._evergreen = np.asarray(arrays["evergreen"], dtype=bool)
        index._turn = np.asarray(arrays["turn"], dtype=np.int32)
        index._words = np.asarray(arrays["words"], dtype=np.uint16)
        index._asks = np.asarray(arrays["asks"], dtype=bool)
        index._dated = np.asarray(arrays["dated"], dtype=bool)
        index._directs = np.asarray(arrays["directs"], dtype=bool)
        ranking = (
            index._when,
            index._evergreen,
            index._turn,
            index._words,
            index._asks,
            index._dated,
            index._directs,
        )
        if any(a.shape != (n,) for a in ranking):
            raise ValueError("index snapshot: ranking columns do not match the rows")
        index._has_vec = np.asarray(arrays["has_vec"], dtype=bool)
        index._alive = np.ones(n, dtype=bool)
        for c in _CODED:
            index._cols[c] = np.asarray(arrays[f"col_{c}"], dtype=np.int32)
            index._codes[c] = {str(k): int(v) for k, v in meta["codes"][c].items()}
            if index._cols[c].shape != (n,):
                raise ValueError(f"index snapshot: column {c} does not match the rows")
        index.ids = list(ids)
        index._digest = np.asarray(arrays["text"], dtype=np.int64)
        index._row = {mid: r for r, mid in enumerate(ids)}
        if len(index._row) != n or index._digest.shape != (n,):
            raise ValueError("index snapshot: duplicate ids or missing text digests")
        if "ann" in arrays and ann.available():
            index._ann = ann.AnnGraph.from_array(index.dim, arrays["ann"])
            if len(index._ann) > n:
                raise ValueError("index snapshot: the graph holds rows the index has not")
        if "proj" in arrays:
            index._proj = np.ascontiguousarray(arrays["proj"], dtype=np.float32)
            if index._proj.shape != (index.dim, COARSE_DIMS):
                raise ValueError("index snapshot: the coarse projection does not match")
            if index._ann is None and "coarse" in arrays:  # with a graph, no coarse pass
                index._coarse = np.ascontiguousarray(arrays["coarse"], dtype=np.float32)
                if index._coarse.shape != (n, COARSE_DIMS):
                    raise ValueError("index snapshot: the coarse rows do not match")
            elif index._ann is None:  # saved with a graph this process cannot load
                index._coarse = index._project(n)
        kw = {k.removeprefix("kw_"): v for k, v in arrays.items() if k.startswith("kw_")}
        index.keywords = KeywordIndex.from_state(meta["terms"], kw, rows=n)
        return index

    def mask(self, filters: Filters) -> np.ndarray:
        """The rows ``filters`` admit (a new array: the caller may change it). The last
        one is cached until the index changes: a hybrid search asks twice."""
        key = filters.model_dump_json()
        last = self._last_mask
        if last is not None and last[0] == self._version and last[1] == key:
            return last[2].copy()
        mask = self._mask(filters)
        self._last_mask = (self._version, key, mask)
        return mask.copy()

    def _mask(self, filters: Filters) -> np.ndarray:
        n = len(self.ids)
        mask = self._alive[:n].copy()
        for column in ("user_id", "agent_id", "run_id"):
            value = getattr(filters, column)
            if value is not None:
                mask &= self._cols[column][:n] == self._code(column, value, create=False)
        if filters.long_term_only:
            mask &= self._cols["run_id"][:n] == -1
        if filters.short_term_only:
            mask &= self._cols["run_id"][:n] != -1
        for column, values in (
            ("category", filters.categories),
            ("origin", [str(o) for o in filters.origins] if filters.origins else None),
            ("state", [str(s) for s in filters.states] if filters.states else None),
        ):
            if values is not None:
                col = self._cols[column][:n]
                codes = {self._code(column, v, create=False) for v in values}
                if len(codes) == 1:
                    mask &= col == codes.pop()
                else:
                    mask &= np.isin(col, list(codes), kind="table")
        if filters.created_after is not None:
            mask &= self._created[:n] >= filters.created_after.timestamp()
        if filters.created_before is not None:
            mask &= self._created[:n] < filters.created_before.timestamp()
        return mask

    def mask_ids(self, ids: set[str]) -> np.ndarray:
        """A row mask of the given memories (for filters the columns cannot express)."""
        mask = np.zeros(len(self.ids), dtype=bool)
        rows = [self._row[i] for i in ids if i in self._row]
        mask[rows] = True
        return mask

    def search(self, query: np.ndarray, mask: np.ndarray | None, k: int) -> list[tuple[str, float]]:
        n = len(self.ids)
        if n == 0 or k <= 0:
            return []
        mask = (self._alive[:n] if mask is None else mask) & self._has_vec[:n]
        query = query.astype(np.float32)
        allowed = int(np.count_nonzero(mask))
        # a scope of a small part of the index (one user of many) is scored on its own
        # rows, gathered, instead of scoring every row and masking most of them away
        rows = np.flatnonzero(mask) if allowed * GATHER_BELOW < n else None
        graph = self._graph(allowed) if rows is None else None
        if graph is not None:
            found = self._graph_search(graph, query, mask, allowed, k)
            if found is not None:
                return found
        if allowed < COARSE_MIN_ROWS or not self._fit() or self._coarse is None:
            # exact: a small index or scope, or a graph (which replaced the coarse pass)
            # that found too few rows in scope
            if rows is None and self._proj is None:  # float32: one pass over the matrix
                return self._top(self._vecs[:n] @ query, mask, k, normalise=False)
            rows = np.flatnonzero(mask) if rows is None else rows
            scores = self._vecs[rows].astype(np.float32) @ query
            best = _best(scores, k)
            return self._ranked(rows[best], scores[best], k, normalise=False)
        assert self._proj is not None
        wanted = max(COARSE_CANDIDATES, 8 * k)
        if rows is None:
            shortlist = self._top_rows(self._coarse[:n] @ (query @ self._proj), mask, wanted)
        else:
            shortlist = rows[_best(self._coarse[rows] @ (query @ self._proj), wanted)]
        exact = self._vecs[shortlist].astype(np.float32) @ query
        return self._ranked(shortlist, exact, k, normalise=False)

    def _graph_search(
        self, graph: ann.AnnGraph, query: np.ndarray, mask: np.ndarray, allowed: int, k: int
    ) -> list[tuple[str, float]] | None:
        """The graph's candidates within ``mask``, re-scored exactly; None when too few
        of them are in scope (the caller scans instead)."""
        n = mask.shape[0]  # the rows as of this search: writers may append meanwhile
        candidates, ef = ann.search_width(n)
        wanted = max(candidates, 8 * k)
        rows = graph.search(query, min(n, -(-wanted * n // allowed)), ef)  # over-fetch: 1/share
        rows = rows[(rows >= 0) & (rows < n)]
        rows = rows[mask[rows]]
        if rows.size < min(k, allowed):
            return None
        exact = self._vecs[rows].astype(np.float32) @ query
        return self._ranked(rows, exact, k, normalise=False)

    def _graph(self, allowed: int) -> ann.AnnGraph | None:
        """The nearest-neighbour graph once it is ready; starts building it when the
        index is large enough (None meanwhile: the caller scans)."""
        if self._ann is not None:
            return self._ann
        if allowed < self.ann_min_rows or self._ann_failed or not ann.available():
            return None
        build = self._ann_build
        if build is None:
            if ann.builds_in_background():
                self._start_graph()
        elif build.done.is_set():
            self._adopt_graph(build)
        return self._ann

    def _start_graph(self) -> _Build:
        with self._ann_guard:
            if self._ann_build is not None:
                return self._ann_build
            build = self._ann_build = _Build(len(self.ids))
        ann.run_build(lambda: self._build_graph(build), build.stop)
        return build

    def _build_graph(self, build: _Build) -> None:
        """The background builder: rows ``[0, build.rows)`` as they are now (rows changed
        meanwhile are in ``build.dirty``); abandoned when the rows are compacted."""
        try:
            graph = ann.AnnGraph(self.dim)
            for start in range(0, build.rows, ann.BUILD_BLOCK):
                if build.stop.is_set():
                    return
                rows = np.arange(start, min(build.rows, start + ann.BUILD_BLOCK))
                vecs, has_vec, alive = self._vecs, self._has_vec, self._alive
                rows = rows[has_vec[rows] & alive[rows]]
                graph.add(rows, vecs[rows].astype(np.float32))
            build.graph = graph
        except Exception:  # the scan keeps answering, as without a graph
            log.exception("building the nearest-neighbour graph failed; searches scan")
            with self._ann_guard:
                self._ann_failed = True
                if self._ann_build is build:
                    self._ann_build = None
        finally:
            build.done.set()

    def _adopt_graph(self, build: _Build) -> None:
        """Bring a finished graph up to date (rows written since it started) and use it."""
        with self._ann_guard:
            if self._ann_build is not build or build.graph is None:
                return
            graph, n = build.graph, len(self.ids)
            changed = np.fromiter(build.dirty, np.int64, len(build.dirty))
            later = np.arange(build.rows, n)
            redo = np.union1d(changed[changed < n], later)
            graph.remove(changed[changed < build.rows])
            redo = redo[self._has_vec[redo] & self._alive[redo]]
            graph.add(redo, self._vecs[redo].astype(np.float32))
            self._ann, self._ann_build = graph, None
            self._coarse = None  # the graph's candidates replace the coarse pass

    def stop_building(self, timeout: float = 30.0) -> None:
        """Stop a graph build under way and wait for its thread (the store is closing)."""
        build = self._ann_build
        if build is not None:
            build.stop.set()
            build.done.wait(timeout)

    @property
    def graph_size(self) -> int:
        """Rows in the nearest-neighbour graph searches use (0: none yet, they scan)."""
        return 0 if self._ann is None else len(self._ann)

    @property
    def prepared(self) -> bool:
        """Whether the one-off work of :meth:`prepare` is done (or not needed yet)."""
        return self._proj is not None and (self._ann is not None or not self._wants_graph())

    def _wants_graph(self) -> bool:
        return int(np.count_nonzero(self._has_vec[: len(self.ids)])) >= self.ann_min_rows and (
            ann.available()
        )

    def prepare(self, wait: bool = False) -> None:
        """Do now the one-off work a first search would (fitting the coarse projection;
        the nearest-neighbour graph: started in the background where this process
        builds there, built before returning with ``wait``), so a snapshot taken next
        holds it and a new process skips it."""
        self._fit()
        if not self._wants_graph():
            return
        build = self._ann_build if self._ann is None else None
        if self._ann is None and build is None and (wait or ann.builds_in_background()):
            build = self._start_graph()
        if build is not None and wait:
            build.done.wait()
            self._adopt_graph(build)

    def _project(self, capacity: int) -> np.ndarray:
        """The coarse rows: every row projected on ``_proj`` (in blocks: no full float32
        copy of a half-precision matrix)."""
        assert self._proj is not None
        n = len(self.ids)
        coarse = np.zeros((capacity, COARSE_DIMS), dtype=np.float32)
        for start in range(0, n, 65_536):
            block = self._vecs[start : min(n, start + 65_536)].astype(np.float32)
            coarse[start : start + block.shape[0]] = block @ self._proj
        return coarse

    def _fit(self) -> bool:
        """Fit the coarse projection (once): top principal directions of a row sample."""
        if self._proj is not None:
            return True
        n = len(self.ids)
        rows = np.flatnonzero(self._has_vec[:n])
        if rows.size < COARSE_MIN_ROWS or self.dim <= COARSE_DIMS:
            return False
        sample = self._vecs[np.sort(_sample(rows, _FIT_SAMPLE))].astype(np.float64)
        _, eigvecs = np.linalg.eigh(sample.T @ sample)  # ascending eigenvalues
        self._proj = np.ascontiguousarray(eigvecs[:, ::-1][:, :COARSE_DIMS], dtype=np.float32)
        if self._ann is None:  # a graph replaces the coarse pass
            self._coarse = self._project(self._vecs.shape[0])
        # from here on the coarse pass finds candidates and the full vectors only re-score
        # a shortlist (or a small scope's rows): half precision is plenty for that and
        # halves what the index keeps per memory (768 bytes, not 1,536, at 384 dims)
        self._vecs = self._vecs.astype(np.float16)
        return True

    def _top_rows(self, scores: np.ndarray, mask: np.ndarray, k: int) -> np.ndarray:
        """The (unordered) rows of the ``k`` best ``scores`` within ``mask``."""
        if k < scores.shape[0] and np.count_nonzero(mask) == scores.shape[0]:
            return np.argpartition(-scores, k - 1)[:k]  # every row: no gather
        allowed = np.flatnonzero(mask)
        scores = scores[allowed]
        if k >= scores.shape[0]:
            return allowed
        return allowed[np.argpartition(-scores, k - 1)[:k]]

    def keyword_search(
        self, query: str, mask: np.ndarray | None, k: int
    ) -> list[tuple[str, float]]:
        """BM25 top ``k`` within ``mask``, in (0, 1]: divided by the best one, or by
        ``MIN_SCALE`` x the query's ceiling when the best is below that (a weak best
        match keeps a weak score; see keywords.py).

        The BM25 statistics are the mask's rows' (see :meth:`KeywordIndex.scores`)."""
        n = len(self.ids)
        if n == 0 or k <= 0:
            return []
        if mask is not None and np.count_nonzero(mask) == len(self._row):
            mask = None  # every live row: BM25's corpus statistics are kept, not counted
        found = self.keywords.scored(query, n, mask)
        if found is None:
            return []
        rows, scores, ceiling = found  # the matched rows in scope, ascending
        if k < rows.size:
            best = np.argpartition(-scores, k - 1)[:k]
            rows, scores = rows[best], scores[best]
        return self._ranked(rows, scores, k, normalise=True, floor=MIN_SCALE * ceiling)

    def _top(
        self, scores: np.ndarray, mask: np.ndarray, k: int, normalise: bool
    ) -> list[tuple[str, float]]:
        rows = self._top_rows(scores, mask, k)
        return self._ranked(rows, scores[rows], k, normalise)

    def _ranked(
        self, rows: np.ndarray, scores: np.ndarray, k: int, normalise: bool, floor: float = 0.0
    ) -> list[tuple[str, float]]:
        """The ``k`` best of ``rows`` (``scores`` aligned with them), best first; with
        ``normalise``, divided by the best score or ``floor``, whichever is larger."""
        if rows.size == 0:
            return []
        order = np.argsort(-scores, kind="stable")[:k]
        best = max(float(scores[order[0]]), floor) if normalise else 1.0
        return [(self.ids[rows[i]], _clip(float(scores[i]) / best)) for i in order]

    def scores(self, query: np.ndarray, ids: Sequence[str]) -> dict[str, float]:
        rows = [(i, self._row[i]) for i in ids if i in self._row]
        rows = [(i, r) for i, r in rows if self._has_vec[r]]
        if not rows:
            return {}
        sims = self._vecs[[r for _, r in rows]].astype(np.float32) @ query.astype(np.float32)
        return {i: _clip(float(s)) for (i, _), s in zip(rows, sims, strict=True)}

    def rank_facts(self, ids: Sequence[str]) -> dict[str, RankFacts]:
        """:class:`RankFacts` of the indexed ``ids`` (the others are left out)."""
        found = [(mid, row) for mid in ids if (row := self._row.get(mid)) is not None]
        if not found:
            return {}
        rows = np.fromiter((r for _, r in found), np.int64, len(found))
        who = zip(
            self._cols["speaker"][rows].tolist(), self._cols["person"][rows].tolist(), strict=True
        )
        columns = (
            self._when[rows].tolist(),
            self._evergreen[rows].tolist(),
            who,
            self._turn[rows].tolist(),
            self._cols["thread"][rows].tolist(),
            self._words[rows].tolist(),
            self._asks[rows].tolist(),
            self._dated[rows].tolist(),
            self._directs[rows].tolist(),
        )
        out: dict[str, RankFacts] = {}
        for (mid, _), when, ever, pair, turn, thread, words, asks, dated, directs in zip(
            found, *columns, strict=True
        ):
            names = self._names(pair)
            if turn < 0:
                out[mid] = RankFacts(when=when, evergreen=ever, names=names)
            else:
                place = (self._thread(thread), turn)
                out[mid] = RankFacts(when, ever, names, place, words, asks, dated, directs)
        return out

    def _thread(self, code: int) -> str:
        """The key of a thread code (codes only ever grow: the list is extended)."""
        if code >= len(self._threads):
            by_code = {c: v for v, c in self._codes["thread"].items()}
            self._threads = [by_code[c] for c in range(len(by_code))]
        return self._threads[code]

    def _names(self, codes: tuple[int, int]) -> frozenset[str]:
        """The names of a (speaker, person) code pair, worked out once per pair."""
        names = self._names_by_codes.get(codes)
        if names is None:
            by_code = [{c: v for v, c in self._codes[col].items()} for col in ("speaker", "person")]
            names = names_of(by_code[i].get(code) for i, code in enumerate(codes))
            self._names_by_codes[codes] = names
        return names


_MAX_WORDS = 65_535  # a turn's word count is held as uint16; longer turns are full anyway


def _best(scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` highest ``scores`` (unordered; all of them if fewer)."""
    if k >= scores.shape[0]:
        return np.arange(scores.shape[0])
    return np.argpartition(-scores, k - 1)[:k]


def text_digest(text: str) -> int:
    """A stable 64-bit digest of a row's indexed text (``hash()`` differs per process)."""
    raw = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(raw, "little", signed=True)


def _sample(rows: np.ndarray, k: int) -> np.ndarray:
    """Up to ``k`` of ``rows``, the same ones for the same index (seeded)."""
    if rows.size <= k:
        return rows
    return np.random.default_rng(0).choice(rows, size=k, replace=False)


def _take(a: np.ndarray, rows: np.ndarray, cap: int) -> np.ndarray:
    out = np.zeros((cap, *a.shape[1:]), dtype=a.dtype)
    out[: rows.size] = a[rows]
    return out


def _clip(x: float) -> float:
    return 0.0 if x < 0 else (1.0 if x > 1 else x)
