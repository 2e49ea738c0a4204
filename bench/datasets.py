"""Conversational retrieval datasets in one shape, for the benchmarks.

Every loader returns ``list[Conversation]``: sessions of turns with stable ids,
and questions whose ``evidence`` names the turn ids that answer them. The
benchmarks ingest the turns through one of memoryd's public paths and check
which evidence turns come back. Data is read where it lies (``../shared/data``
or an installed package); it is never copied into this repository.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime


@dataclass
class Turn:
    id: str  # unique within its conversation, e.g. "D3:7"
    speaker: str
    text: str
    role: str = "user"  # the message role a chat client would send ("assistant" for an agent)


@dataclass
class Session:
    id: str  # e.g. "D3"
    at: datetime | None  # when the session happened (UTC), if the dataset says
    turns: list[Turn] = field(default_factory=list)

    def messages(self) -> list[dict[str, str | None]]:
        """The session as the messages a chat client sends (``Memory.add(messages=...)``)."""
        when = self.at.isoformat() if self.at else None
        return [
            {"role": t.role, "name": t.speaker, "content": t.text, "timestamp": when}
            for t in self.turns
        ]


@dataclass
class Question:
    text: str
    evidence: list[str]  # turn ids (or session ids when ``unit`` is "session")
    category: str  # e.g. "multi-hop", "temporal", "single-hop"
    unit: str = "turn"  # "session": a hit counts for its turn's session ("D3:7" -> "D3")

    def units(self, turn_ids: set[str]) -> set[str]:
        """``turn_ids`` as this question counts them."""
        if self.unit == "session":
            return {t.rpartition(":")[0] for t in turn_ids}
        return turn_ids


@dataclass
class Conversation:
    id: str  # e.g. "conv0"
    sessions: list[Session] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)

    def turns(self) -> list[Turn]:
        return [t for s in self.sessions for t in s.turns]


#: name -> loader; each loader takes keyword options (paths, limits) with defaults.
LOADERS: dict[str, Callable[..., list[Conversation]]] = {}


def register(
    name: str,
) -> Callable[[Callable[..., list[Conversation]]], Callable[..., list[Conversation]]]:
    def wrap(fn: Callable[..., list[Conversation]]) -> Callable[..., list[Conversation]]:
        LOADERS[name] = fn
        return fn

    return wrap


def load(name: str, **options: object) -> list[Conversation]:
    if name not in LOADERS:
        raise SystemExit(f"unknown dataset {name!r}; known: {', '.join(sorted(LOADERS))}")
    return LOADERS[name](**options)
