"""The baselines memoryd must beat, with no memoryd in them.

* ``plain-minilm``: one vector per message (the message text as written, the
  embedder truncating it to its window), ranked by cosine similarity to the query;
* ``plain-hybrid``: 0.7 x that cosine + 0.3 x BM25 (k1 1.2, b 0.75, lower-cased
  word tokens, scores divided by the best of the query) over the same messages:
  what a hand-written hybrid index of the chat would give.

Both rank the messages of one conversation and return turn ids, best first.
"""

from __future__ import annotations

import math
import re
from collections import Counter

import numpy as np

from datasets import Conversation
from memoryd.embed import Embedder

_WORD = re.compile(r"\w+")
STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "did",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "he",
        "her",
        "his",
        "how",
        "i",
        "in",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "she",
        "so",
        "that",
        "the",
        "their",
        "them",
        "they",
        "this",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
    ]
)
VECTOR_WEIGHT = 0.7
K1, B = 1.2, 0.75


def words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in STOP]


class PlainIndex:
    """Every message of ``convs`` embedded once (batches of 64)."""

    def __init__(self, embedder: Embedder, convs: list[Conversation]) -> None:
        self.embedder = embedder
        self.ids: dict[str, list[str]] = {}
        self.vecs: dict[str, np.ndarray] = {}
        self.docs: dict[str, list[Counter[str]]] = {}
        self.df: dict[str, Counter[str]] = {}
        for conv in convs:
            turns = conv.turns()
            texts = [t.text for t in turns]
            parts = [embedder.embed(texts[i : i + 64]) for i in range(0, len(texts), 64)]
            self.ids[conv.id] = [t.id for t in turns]
            self.vecs[conv.id] = np.vstack(parts)
            self.docs[conv.id] = [Counter(words(t)) for t in texts]
            df: Counter[str] = Counter()
            for d in self.docs[conv.id]:
                df.update(d.keys())
            self.df[conv.id] = df

    def cosine(self, conv: str, query: str) -> np.ndarray:
        q = self.embedder.embed([query])[0]
        return np.asarray(self.vecs[conv] @ q, dtype=np.float64)

    def bm25(self, conv: str, query: str) -> np.ndarray:
        docs, df = self.docs[conv], self.df[conv]
        n = len(docs)
        avg = sum(sum(d.values()) for d in docs) / max(1, n)
        out = np.zeros(n)
        for term in set(words(query)):
            if not df[term]:
                continue
            idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
            for i, d in enumerate(docs):
                tf = d.get(term, 0)
                if tf:
                    length = sum(d.values())
                    out[i] += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / avg))
        return out

    def search(self, conv: str, query: str, mode: str, k: int = 25) -> list[str]:
        scores = self.cosine(conv, query)
        if mode == "plain-hybrid":
            kw = self.bm25(conv, query)
            best = kw.max() if kw.size else 0.0
            scores = VECTOR_WEIGHT * scores + (1 - VECTOR_WEIGHT) * (kw / best if best else kw)
        order = np.argsort(-scores, kind="stable")[:k]
        return [self.ids[conv][i] for i in order]


MODES = ("plain-minilm", "plain-hybrid")
