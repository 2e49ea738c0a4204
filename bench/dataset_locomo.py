"""LoCoMo (snap-research/locomo, CC BY-NC 4.0) in the shape of bench/datasets.py.

Read in place from ``../shared/data/locomo10.json`` (never copied here). The
parsing (session dates, evidence cleaning, categories) is bench/locomo.py's.
"""

from __future__ import annotations

import json
from pathlib import Path

from datasets import Conversation, Question, Session, Turn, register
from locomo import (
    CATEGORIES,
    DEFAULT_DATA,
    normalise_evidence,
    parse_session_date,
    session_numbers,
)


@register("locomo")
def load(path: str | None = None, limit: int | None = None) -> list[Conversation]:
    samples = json.loads(Path(path or DEFAULT_DATA).read_text())
    out: list[Conversation] = []
    for idx, sample in enumerate(samples[:limit] if limit else samples):
        c = sample["conversation"]
        conv = Conversation(id=f"conv{idx}")
        known: set[str] = set()
        for n in session_numbers(c):
            raw_date = c.get(f"session_{n}_date_time", "")
            session = Session(id=f"D{n}", at=parse_session_date(raw_date) if raw_date else None)
            for turn in c[f"session_{n}"]:
                ids, _ = normalise_evidence([turn["dia_id"]])
                text = (turn.get("text") or "").strip()
                caption = (turn.get("blip_caption") or "").strip()
                if caption:
                    text = f"{text} [image: {caption}]".strip()
                if not text or not ids:
                    continue
                session.turns.append(Turn(id=ids[0], speaker=turn.get("speaker", ""), text=text))
                known.add(ids[0])
            conv.sessions.append(session)
        for qa in sample["qa"]:
            evidence, _ = normalise_evidence(qa.get("evidence", []))
            evidence = [e for e in evidence if e in known]
            if evidence:
                category = CATEGORIES.get(int(qa["category"]), str(qa["category"]))
                conv.questions.append(Question(qa["question"], evidence, category))
        out.append(conv)
    return out
