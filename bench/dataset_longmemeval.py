"""LongMemEval (xiaowu0162/LongMemEval, MIT) in the shape of bench/datasets.py.

Long chats between a user and an assistant: each item is a haystack of ~40
sessions (~115k tokens, assistant answers of several thousand characters)
and questions whose evidence is the sessions that answer them
(``answer_session_ids``). Recall is therefore counted per session
(``Question.unit = "session"``): a hit counts for the session its turn is in.

The file is read where it lies (``--data``); it is never copied here. Both the
published format (one ``question`` per item) and the excerpt used in
bench/README.md (``questions``/``answers``/``answer_session_ids`` as parallel
lists per haystack) are read. In the excerpt the first question of a haystack
has the item's ``question_type``; the others ask about the topic of one
session and are labelled ``session-topic``.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from datasets import Conversation, Question, Session, Turn, register

SPEAKERS = {"user": "User", "assistant": "Assistant"}


def _when(raw: str) -> datetime | None:
    """``2023/07/12 (Wed) 10:14`` -> 2023-07-12T10:14Z."""
    try:
        day, _, clock = raw.partition(" (")
        return datetime.strptime(f"{day} {clock.split(') ')[-1]}", "%Y/%m/%d %H:%M").replace(
            tzinfo=UTC
        )
    except ValueError:
        return None


@register("longmemeval")
def load(path: str | None = None, limit: int | None = None) -> list[Conversation]:
    if path is None:
        raise SystemExit(
            "longmemeval needs --data: a LongMemEval JSON file (see bench/README.md, "
            "'A second dataset')"
        )
    items = json.loads(Path(path).read_text())
    out: list[Conversation] = []
    for idx, item in enumerate(items[:limit] if limit else items):
        conv = Conversation(id=f"lme{idx}")
        dates = item.get("haystack_dates") or []
        for n, (sid, turns) in enumerate(
            zip(item["haystack_session_ids"], item["haystack_sessions"], strict=True)
        ):
            session = Session(id=sid, at=_when(dates[n]) if n < len(dates) else None)
            for k, t in enumerate(turns):
                text = (t.get("content") or "").strip()
                if text:
                    speaker = SPEAKERS.get(t.get("role", ""), t.get("role", ""))
                    session.turns.append(Turn(id=f"{sid}:{k}", speaker=speaker, text=text))
            conv.sessions.append(session)
        known = {s.id for s in conv.sessions if s.turns}
        if "questions" in item:  # the excerpt: parallel lists
            asked = zip(item["questions"], item["answer_session_ids"], strict=True)
            kinds = [item["question_type"]] + ["session-topic"] * (len(item["questions"]) - 1)
        else:
            asked = iter([(item["question"], item["answer_session_ids"])])
            kinds = [item["question_type"]]
        for (text, sessions), kind in zip(asked, kinds, strict=True):
            evidence = [s for s in sessions if s in known]
            if evidence:
                conv.questions.append(Question(text, evidence, kind, unit="session"))
        out.append(conv)
    return out
