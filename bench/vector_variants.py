"""Pure cosine recall of memoryd's ways of indexing messages, outside memoryd (issue 35).

For one dataset, every message is embedded as memoryd's messages path would cut it
(``conversation.split_to_window``) and each indexing choice is scored by cosine alone
(no fusion, no turn re-ranking): the first window only (what a plain index sees), every
window, "Speaker: text", mixed with the previous row at ``PREV_WEIGHT`` 0.5 (memoryd's
indexing), at 0.25, and at 0.5 except for instructions and preferences
(``search.text.directs``). R@10 counts distinct messages.

    python bench/vector_variants.py agentchat
    python bench/vector_variants.py locomo
"""

from __future__ import annotations

import importlib
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from datasets import load
from memoryd.conversation import ROLE_SPEAKERS, WINDOW_MARGIN, split_to_window
from memoryd.embed import create_embedder, normalize
from memoryd.search.text import directs
from memoryd.settings import EmbedSettings


def embed_all(emb, texts: list[str]) -> np.ndarray:  # type: ignore[no-untyped-def]
    return np.vstack([emb.embed(texts[i : i + 64]) for i in range(0, len(texts), 64)])


def mixed(
    own: np.ndarray,
    rows: list[str],
    weight: float,
    skip_directs: bool,
    longest: int | None = None,
    scale: int | None = None,
    own_longest: int | None = None,
) -> np.ndarray:
    """Row k plus ``weight`` x row k-1; not for directives (``skip_directs``), not
    after a row of more than ``longest`` words, and by ``scale / words`` after a
    row of more than ``scale`` words."""
    out = own.copy()
    for k in range(1, len(rows)):
        if skip_directs and directs(rows[k]):
            continue
        words = len(rows[k - 1].split())
        if longest is not None and words > longest:
            continue
        if own_longest is not None and len(rows[k].split()) > own_longest:
            continue
        w = weight * min(1.0, scale / words) if scale is not None and words else weight
        out[k] = own[k] + w * own[k - 1]
    return normalize(out)


def main(name: str, **options: object) -> None:
    for module in sorted(Path(__file__).parent.glob("dataset_*.py")):
        importlib.import_module(module.stem)
    emb = create_embedder(EmbedSettings())
    size = emb.max_tokens - WINDOW_MARGIN
    scores: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for conv in load(name, **options):
        turns = conv.turns()
        rows = [
            (i, w)
            for i, t in enumerate(turns)
            for w in split_to_window(t.text, size, emb.count_tokens)
        ]
        texts = [w for _, w in rows]
        plain = embed_all(emb, texts)
        spoken = embed_all(emb, [f"{turns[i].speaker}: {w}" for i, w in rows])
        named = embed_all(
            emb,
            [
                w if turns[i].speaker.lower() in ROLE_SPEAKERS else f"{turns[i].speaker}: {w}"
                for i, w in rows
            ],
        )
        first = {i: k for k, (i, _) in reversed(list(enumerate(rows)))}
        variants = {
            "plain, first window": (plain, True),
            "plain, every window": (plain, False),
            "Speaker: text": (spoken, False),
            "+ previous 0.5 (memoryd)": (mixed(spoken, texts, 0.5, False), False),
            "+ previous 0.25": (mixed(spoken, texts, 0.25, False), False),
            "+ previous 0.5, not directives": (mixed(spoken, texts, 0.5, True), False),
            "+ previous 0.5, not after > 60 words": (mixed(spoken, texts, 0.5, False, 60), False),
            "+ previous 0.5, neither side > 60 words": (
                mixed(spoken, texts, 0.5, False, 60, None, 60),
                False,
            ),
            "name (not role): text": (named, False),
            "name: text + previous 0.5, not after > 60 words": (
                mixed(named, texts, 0.5, False, 60),
                False,
            ),
            "name: text + previous 0.5, neither side > 60 words": (
                mixed(named, texts, 0.5, False, 60, None, 60),
                False,
            ),
        }
        questions = [q for q in conv.questions if q.category != "adversarial"]
        qv = emb.embed([q.text for q in questions])
        for label, (vecs, first_only) in variants.items():
            keep = [k for k, (i, _) in enumerate(rows) if not first_only or first[i] == k]
            sims = vecs[keep] @ qv.T
            for n, q in enumerate(questions):
                order = np.argsort(-sims[:, n])
                ranked = list(dict.fromkeys(turns[rows[keep[k]][0]].id for k in order[:50]))
                scores[label].append(
                    (q.category, len(set(q.evidence) & set(ranked[:10])) / len(q.evidence))
                )
    for label, rs in scores.items():
        cats = sorted({c for c, _ in rs})
        by = ", ".join(f"{c} {np.mean([r for cc, r in rs if cc == c]):.3f}" for c in cats)
        print(f"| {label} | {np.mean([r for _, r in rs]):.3f} | {by} |")


if __name__ == "__main__":
    main(
        sys.argv[1] if len(sys.argv) > 1 else "agentchat",
        **({"path": sys.argv[2]} if len(sys.argv) > 2 else {}),
    )
