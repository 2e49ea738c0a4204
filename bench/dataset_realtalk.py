"""REALTALK (danny911kr/REALTALK) in the shape of bench/datasets.py.

Ten real messaging-app conversations between two people over 21 days (18-25
sessions, 410-1,548 messages each, 8,944 in all), with 728 memory-probing
questions whose ``evidence`` names the messages that answer them, in LoCoMo's
format (``session_N`` lists of ``{"clean_text", "speaker", "date_time",
"dia_id", "blip_caption"?}``, ``qa`` with categories 1-3). Unlike LoCoMo the
chats were written by people, not generated: short messages, typos, slang,
several messages in a row by one speaker.

The repository ships no licence file; it is read in place from a clone and
never copied here::

    git clone https://github.com/danny911kr/REALTALK
    python bench/paths.py --dataset realtalk --data REALTALK/data --paths api-messages
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

from datasets import Conversation, Question, Session, Turn, register

#: the paper's memory-probing question types
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "commonsense"}


def parse_time(value: str) -> datetime | None:
    """'29.12.2023, 22:42:04' -> an aware datetime (UTC; the data has no zone)."""
    try:
        return datetime.strptime(value.strip(), "%d.%m.%Y, %H:%M:%S").replace(tzinfo=UTC)
    except ValueError:
        return None


_ID = re.compile(r"D(\d+):(\d+)")


def evidence_ids(raw: list[str]) -> list[str]:
    """The message ids of a question's evidence, as the annotators wrote them: 'D5:3.',
    'D11:17; D16:1', 'D13:45:D20:19' (two ids), 'D12:3-D12:5' (a range in one session)."""
    out: list[str] = []
    for entry in raw:
        for piece in re.split(r"[;,]", entry):
            ends = _ID.findall(piece)
            if "-" in piece and len(ends) == 2 and ends[0][0] == ends[1][0]:
                session, first, last = ends[0][0], int(ends[0][1]), int(ends[1][1])
                out += [f"D{session}:{n}" for n in range(first, last + 1)]
            else:
                out += [f"D{a}:{b}" for a, b in ends]
    return list(dict.fromkeys(out))


def _session_numbers(chat: dict[str, object]) -> list[int]:
    return sorted(
        int(k.removeprefix("session_"))
        for k, v in chat.items()
        if k.startswith("session_") and k.removeprefix("session_").isdigit() and isinstance(v, list)
    )


@register("realtalk")
def load(path: str | None = None, limit: int | None = None) -> list[Conversation]:
    if path is None:
        raise SystemExit(
            "REALTALK is read from a clone: git clone https://github.com/danny911kr/REALTALK, "
            "then pass --data REALTALK/data"
        )
    files = sorted(
        Path(path).glob("Chat_*.json"), key=lambda p: int(p.name.split("_")[1])
    )  # Chat_1 ... Chat_10
    if not files:
        raise SystemExit(f"no Chat_*.json under {path}: pass REALTALK's data/ folder")
    out: list[Conversation] = []
    for idx, file in enumerate(files[:limit] if limit else files):
        chat = json.loads(file.read_text())
        conv = Conversation(id=f"realtalk{idx}")
        known: set[str] = set()
        for n in _session_numbers(chat):
            raw = chat.get(f"session_{n}_date_time")
            session = Session(id=f"D{n}", at=parse_time(raw) if isinstance(raw, str) else None)
            for message in chat[f"session_{n}"]:
                text = (message.get("clean_text") or "").strip()
                caption = (message.get("blip_caption") or "").strip()
                if caption:
                    text = f"{text} [image: {caption}]".strip()
                turn_id = message.get("dia_id")
                if not text or not turn_id:
                    continue
                session.turns.append(
                    Turn(id=turn_id, speaker=message.get("speaker", ""), text=text)
                )
                known.add(turn_id)
            conv.sessions.append(session)
        for qa in chat.get("qa", []):
            evidence = [e for e in evidence_ids(qa.get("evidence", [])) if e in known]
            if evidence:
                category = CATEGORIES.get(int(qa["category"]), str(qa["category"]))
                conv.questions.append(Question(qa["question"], evidence, category))
        out.append(conv)
    return out
