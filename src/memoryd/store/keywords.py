"""An in-memory BM25 inverted index over the rows of a :class:`VectorIndex`.

Why not FTS5's ``bm25()``: an OR-query of common words makes SQLite score
every matching row through the virtual-table interface, ~50 ms at 100k
memories on two cores, more than the rest of a hybrid search together. Here
each term's postings are two numpy arrays (row, term frequency) and a query is
a handful of vectorised adds into one score array, ~1-2 ms at 100k, filtered
by the same scope mask as the vector side.

BM25's statistics (N, average length, document frequencies) are those of the
rows that mask admits, not of the whole store: a store shared by many users
ranks each user's memories as if they were alone in it. They are computed per
query from the mask (a gather per query term), so no per-user counts are kept.

Text is analysed like FTS5's ``unicode61 remove_diacritics`` tokenizer plus a
Snowball (Porter 2) stemmer: Unicode word characters, case-folded, accents
dropped. Rows are owned by the vector index (it assigns them and tells this
index when a row dies or when rows are compacted).
"""

from __future__ import annotations

import math
import sys
import threading
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from itertools import chain
from typing import NamedTuple

import numpy as np
import Stemmer

from memoryd.search.text import keyword_terms, words

K1 = 1.2  # BM25 term-frequency saturation (FTS5's and Lucene's default)
B = 0.75  # BM25 length normalisation
#: BM25 scores reach a search divided by the best match's, but never by less than this
#: share of the query's ceiling (:attr:`Scored.ceiling`): a best match on a fraction of the
#: query's words (one common word of a long question) is a weak match, not a perfect one,
#: and keeps a fraction of the keyword weight in the fusion. Chosen on the tune halves of
#: LoCoMo and REALTALK (0 / 0.2 / 0.25 / 0.3 / 0.35 / 0.4: mean R@10 0.7110 / 0.7114 /
#: 0.7115 / 0.7123 / 0.7102 / 0.7115); on the held-out halves 0.6669 -> 0.6712
#: (bench/README.md, "weak keyword matches").
MIN_SCALE = 0.3


def bm25_idf(live: int | float, df: int) -> float:
    """BM25's inverse document frequency of a term in ``df`` of ``live`` documents."""
    return math.log(1.0 + (live - df + 0.5) / (df + 0.5))


def bm25_weights(idf: float, tfs: np.ndarray, lengths: np.ndarray, avgdl: float) -> np.ndarray:
    """One term's BM25 contribution to each document: its frequency there (``tfs``),
    saturated, and normalised by the document's length against the average."""
    return idf * tfs * (K1 + 1.0) / (tfs + K1 * (1.0 - B + B * lengths / avgdl))


def bm25_top(
    postings: Iterable[tuple[np.ndarray, np.ndarray, np.ndarray]],
    live: float,
    total_len: float,
    limit: int,
) -> tuple[np.ndarray, np.ndarray, float]:
    """The ``limit`` best documents for a query whose terms' postings in scope are
    ``postings`` (per term: document ids, term frequencies, document lengths), with
    ``live`` documents of ``total_len`` terms in that scope: (ids, scores) best first,
    ties to the lower id, and the query's ceiling (:class:`Scored`). The statistics
    and the formula are :meth:`KeywordIndex.scores`'; for a store that reads a
    scope's postings rather than keeping them (PostgreSQL)."""
    avgdl = total_len / live
    ids: list[np.ndarray] = []
    parts: list[np.ndarray] = []
    ceiling = 0.0
    for docs, tfs, lengths in postings:
        if not docs.size:
            continue
        idf = bm25_idf(live, int(docs.size))
        ids.append(docs)
        parts.append(bm25_weights(idf, tfs.astype(np.float64), lengths.astype(np.float64), avgdl))
        ceiling += idf * (K1 + 1.0)
    if not ids:
        return np.zeros(0, dtype=np.int64), np.zeros(0), 0.0
    docs, where = np.unique(np.concatenate(ids), return_inverse=True)
    scores = np.bincount(where, weights=np.concatenate(parts), minlength=docs.size)
    best = np.lexsort((docs, -scores))[:limit]
    return docs[best], scores[best], ceiling


class Scored(NamedTuple):
    """The rows a query matches (ascending), their BM25 scores, and the query's
    ``ceiling``: the sum over its terms in scope of ``idf x (K1 + 1)``, the score a
    memory would get by saying every one of them many times (BM25's upper bound)."""

    rows: np.ndarray
    scores: np.ndarray
    ceiling: float


class Analyzer:
    """Text -> stemmed terms, with a cache (a corpus repeats a few thousand words)."""

    def __init__(self) -> None:
        self._stemmer = Stemmer.Stemmer("english")
        self._cache: dict[str, str] = {}

    def fold(self, text: str) -> str:
        text = text.casefold()
        if not text.isascii():
            text = "".join(
                c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c)
            )
        return text

    def stems(self, words: Iterable[str]) -> list[str]:
        cache = self._cache
        words = list(words)
        missing = list({w for w in words if w not in cache})
        if missing:
            stemmed = dict(zip(missing, self._stemmer.stemWords(missing), strict=True))
            if len(cache) < 500_000:
                cache.update(stemmed)
            return [cache.get(w) or stemmed[w] for w in words]
        return [cache[w] for w in words]

    def document(self, text: str) -> list[str]:
        return self.stems(words(self.fold(text)))

    def query(self, text: str) -> list[str]:
        """Distinct stems of the query's content words (stopwords dropped, see text.py)."""
        return list(dict.fromkeys(self.stems(keyword_terms(self.fold(text)))))


_local = threading.local()


def _analyzer() -> Analyzer:
    """This thread's analyzer (a Snowball stemmer object is not safe to share)."""
    found: Analyzer | None = getattr(_local, "analyzer", None)
    if found is None:
        found = _local.analyzer = Analyzer()
    return found


def term_counts(text: str) -> dict[str, int]:
    """Each stem of ``text`` and how often it occurs: a document as BM25 sees it, for a
    store that keeps its postings elsewhere (PostgreSQL); its length is the sum."""
    return dict(Counter(_analyzer().document(text)))


def stems(words: Iterable[str]) -> list[str]:
    """The stem of each of ``words`` (already case-folded), as the keyword index has it."""
    return _analyzer().stems(words)


def document_stems(text: str) -> list[str]:
    """Every word of ``text`` as the keyword index stems it, in order (stopwords kept)."""
    return _analyzer().document(text)


def query_stems(query: str) -> list[str]:
    """The distinct stems a keyword query matches (see :meth:`Analyzer.query`)."""
    return _analyzer().query(query)


class _Postings:
    """A growable (rows, tfs) pair for one term."""

    __slots__ = ("n", "rows", "tfs")

    def __init__(self, rows: np.ndarray, tfs: np.ndarray) -> None:
        self.rows, self.tfs, self.n = rows, tfs, len(rows)

    def extend(self, rows: np.ndarray | list[int], tfs: np.ndarray | list[int]) -> None:
        end = self.n + len(rows)
        if end > len(self.rows):  # grow by doubling: one row at a time stays amortised O(1)
            cap = max(end, 2 * len(self.rows))
            self.rows = np.resize(self.rows, cap)
            self.tfs = np.resize(self.tfs, cap)
        self.rows[self.n : end] = rows
        self.tfs[self.n : end] = tfs
        self.n = end


class KeywordIndex:
    def __init__(self) -> None:
        self.analyzer = Analyzer()
        self._terms: dict[str, _Postings] = {}
        self._lengths = np.zeros(1024, dtype=np.float32)  # tokens per row, 0 when dead
        self._rows = 0  # rows ever assigned (the vector index's row count)
        self._live = 0  # rows with text
        self._total_len = 0.0

    # -- writes -------------------------------------------------------------------------------
    def _ensure(self, rows: int) -> None:
        if rows > len(self._lengths):
            self._lengths = np.resize(self._lengths, max(rows, 2 * len(self._lengths)))
            self._lengths[self._rows :] = 0
        self._rows = max(self._rows, rows)

    def add(self, row: int, text: str) -> None:
        tokens = self.analyzer.document(text)
        self._ensure(row + 1)
        if not tokens:
            return
        for term, tf in Counter(tokens).items():
            postings = self._terms.get(term)
            if postings is None:
                self._terms[term] = _Postings(
                    np.array([row], dtype=np.int32), np.array([tf], dtype=np.float32)
                )
            else:
                postings.extend([row], [tf])
        self._lengths[row] = len(tokens)
        self._live += 1
        self._total_len += len(tokens)

    def add_many(self, rows: Sequence[int], texts: Sequence[str]) -> None:
        """Bulk :meth:`add`: tokens are counted with one numpy sort, not per posting."""
        if not rows:
            return
        self._ensure(max(rows) + 1)
        fold = self.analyzer.fold
        word_lists = [words(fold(t)) for t in texts]
        lens = np.fromiter((len(w) for w in word_lists), dtype=np.int64, count=len(word_lists))
        corpus = list(chain.from_iterable(word_lists))
        if not corpus:
            return
        distinct = list(dict.fromkeys(corpus))
        stems = self.analyzer.stems(distinct)
        names = list(dict.fromkeys(stems))
        term_of = {t: i for i, t in enumerate(names)}
        word_term = {w: term_of[s] for w, s in zip(distinct, stems, strict=True)}
        tokens = np.fromiter(map(word_term.__getitem__, corpus), np.int64, len(corpus))
        docs = np.repeat(np.asarray(rows, dtype=np.int64), lens)
        keys, tfs = np.unique(docs * len(names) + tokens, return_counts=True)  # by row, term
        post_rows, post_terms = keys // len(names), keys % len(names)
        order = np.argsort(post_terms, kind="stable")  # by term, rows ascending within
        post_rows, post_terms, tfs = post_rows[order], post_terms[order], tfs[order]
        bounds = np.searchsorted(post_terms, np.arange(len(names) + 1))
        for tid, term in enumerate(names):
            lo, hi = int(bounds[tid]), int(bounds[tid + 1])
            if lo == hi:
                continue
            r = post_rows[lo:hi].astype(np.int32)
            f = tfs[lo:hi].astype(np.float32)
            postings = self._terms.get(term)
            if postings is None:
                self._terms[term] = _Postings(r, f)
            else:
                postings.extend(r, f)
        self._lengths[np.asarray(rows)] = lens
        self._live += int(np.count_nonzero(lens))
        self._total_len += float(lens.sum())

    def drop(self, row: int) -> None:
        """Row ``row`` is dead: it stops counting and scoring.

        Its postings stay until :meth:`remap`; document frequencies count live rows only."""
        if row >= self._rows or self._lengths[row] == 0:
            return
        self._total_len -= float(self._lengths[row])
        self._lengths[row] = 0
        self._live -= 1

    def remap(self, new_row: np.ndarray, rows: int) -> None:
        """Apply a compaction: row r moves to ``new_row[r]`` (-1: gone); ``rows`` remain."""
        lengths = np.zeros(max(1024, rows), dtype=np.float32)
        keep = new_row[: self._rows] >= 0
        lengths[new_row[: self._rows][keep]] = self._lengths[: self._rows][keep]
        self._lengths, self._rows = lengths, rows
        for term in list(self._terms):
            p = self._terms[term]
            moved = new_row[p.rows[: p.n]]
            alive = moved >= 0
            if not alive.any():
                del self._terms[term]
                continue
            self._terms[term] = _Postings(moved[alive].astype(np.int32), p.tfs[: p.n][alive])

    def memory_bytes(self) -> int:
        """Bytes this index holds: postings arrays, their objects and terms, row lengths."""
        total = self._lengths.nbytes + sys.getsizeof(self._terms)
        for term, p in self._terms.items():
            total += p.rows.nbytes + p.tfs.nbytes + sys.getsizeof(p) + sys.getsizeof(term)
        return total

    # -- persistence ---------------------------------------------------------------------------
    def state(self) -> tuple[list[str], dict[str, np.ndarray]]:
        """The terms and the postings as flat arrays (term i's are ``starts[i]:starts[i+1]``)."""
        terms = list(self._terms)
        sizes = np.fromiter((self._terms[t].n for t in terms), np.int64, len(terms))
        starts = np.zeros(len(terms) + 1, dtype=np.int64)
        np.cumsum(sizes, out=starts[1:])
        rows = np.zeros(int(starts[-1]), dtype=np.int32)
        tfs = np.zeros(int(starts[-1]), dtype=np.float32)
        for i, term in enumerate(terms):
            p = self._terms[term]
            rows[starts[i] : starts[i + 1]] = p.rows[: p.n]
            tfs[starts[i] : starts[i + 1]] = p.tfs[: p.n]
        lengths = self._lengths[: self._rows]
        return terms, {"starts": starts, "rows": rows, "tfs": tfs, "lengths": lengths}

    @classmethod
    def from_state(
        cls, terms: Sequence[str], arrays: Mapping[str, np.ndarray], rows: int
    ) -> KeywordIndex:
        """The inverse of :meth:`state` for an index of ``rows`` rows."""
        index = cls()
        starts, post_rows, tfs = arrays["starts"], arrays["rows"], arrays["tfs"]
        lengths = arrays["lengths"]
        if starts.shape != (len(terms) + 1,) or lengths.shape[0] > rows:
            raise ValueError("index snapshot: keyword postings do not match their terms")
        if post_rows.size and int(post_rows.max()) >= rows:
            raise ValueError("index snapshot: a keyword posting points past the last row")
        index._ensure(rows)
        index._lengths[: lengths.shape[0]] = lengths
        for i, term in enumerate(terms):
            lo, hi = int(starts[i]), int(starts[i + 1])
            index._terms[term] = _Postings(post_rows[lo:hi], tfs[lo:hi])
        index._live = int(np.count_nonzero(lengths))
        index._total_len = float(lengths.sum(dtype=np.float64))
        return index

    # -- reads --------------------------------------------------------------------------------
    def scores(self, query: str, n: int, scope: np.ndarray | None = None) -> np.ndarray | None:
        """BM25 of every row in ``[0, n)`` for ``query`` (None: no term of it is in scope)."""
        found = self._score(query, n, scope)
        return None if found is None else found[0]

    def _score(
        self, query: str, n: int, scope: np.ndarray | None
    ) -> tuple[np.ndarray, float] | None:
        """BM25 of every row in ``[0, n)`` and the query's ceiling (see :class:`Scored`).

        The statistics are those of the rows being searched: with a ``scope`` (a row
        mask of length ``n``, the search's filter) N, the average length and each
        term's document frequency count only the live rows it admits, so one user's
        memories never change another's ranking, and only those rows are scored.
        That is one gather of the mask per query term, and a sum over it. Without
        one, every live row counts (and scores): the same as a scope of every live
        row, without the pass over the mask."""
        if scope is None:
            live, total_len = self._live, self._total_len
        else:
            in_scope = self._lengths[:n][scope]
            live, total_len = int(np.count_nonzero(in_scope)), float(in_scope.sum(dtype=np.float64))
        if live == 0:
            return None
        avgdl = total_len / live
        out: np.ndarray | None = None
        ceiling = 0.0
        for term in self.analyzer.query(query):
            p = self._terms.get(term)
            if p is None:
                continue
            rows, tfs = p.rows[: p.n], p.tfs[: p.n]
            if rows.size and rows[-1] >= n:  # rows added after the caller sized its view
                keep = rows < n
                rows, tfs = rows[keep], tfs[keep]
            # dead rows keep their postings until the next compaction (length 0, and
            # out of any scope, which admits live rows only)
            keep = self._lengths[rows] > 0 if scope is None else scope[rows]
            rows, tfs = (rows, tfs) if keep.all() else (rows[keep], tfs[keep])
            df = rows.size
            if df == 0:
                continue
            idf = bm25_idf(live, df)
            if out is None:
                out = np.zeros(n, dtype=np.float32)
            out[rows] += bm25_weights(idf, tfs, self._lengths[rows], avgdl)
            ceiling += idf * (K1 + 1.0)
        return None if out is None else (out, ceiling)

    def scored(self, query: str, n: int, scope: np.ndarray | None = None) -> Scored | None:
        """The rows :meth:`scores` gives a score (ascending), those scores and the
        query's ceiling: the matches only, so a caller ranks them without a pass over
        every row."""
        found = self._score(query, n, scope)
        if found is None:
            return None
        out, ceiling = found
        rows = np.flatnonzero(out)  # every term's weight is > 0: matched rows are > 0
        return Scored(rows, out[rows], ceiling)
