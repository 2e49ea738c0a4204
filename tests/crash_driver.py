"""Child process body for the crash tests (tests/test_reliability_crash.py).

``run`` opens a store, says ready, then performs a seeded random stream of
add, update, delete and workspace index calls until it is SIGKILLed. Around
each call it writes to an ack file, flushed and fsynced:

    begin <op> <id> <json text>     before the call (the write may or may not land)
    ack <op> <id> <json text>       after the call returned (the write must be there)

so the parent knows exactly which writes were acknowledged, and which one
(at most) was in flight when the kill landed.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import IO, Any

from memoryd.core import Memory
from memoryd.workspace import resolve_workspace
from memoryd.workspace.indexer import index_workspace
from tests.pipelines_kit import FixedClock, pipeline_settings

USER = "crash"
AGENT = "main"
NOW = "2026-03-27T12:00:00+00:00"


def settings_for(home: Path) -> Any:
    s = pipeline_settings(home)
    s.workspace.agents = {AGENT: home / "ws"}
    return s


def _log(f: IO[str], *fields: Any) -> None:
    f.write(" ".join(str(x) for x in fields) + "\n")
    f.flush()
    os.fsync(f.fileno())


def run(home: str, seed: int, acks: str, ready: Any, ops: tuple[str, ...]) -> None:
    rng = random.Random(seed)
    settings = settings_for(Path(home))
    mem = Memory(settings, clock=FixedClock(NOW))
    mem.embed_texts(["warm up the model before the clock starts"])
    ws = resolve_workspace(settings, AGENT, mem.store)
    notes = ws.root / "MEMORY.md"
    notes.parent.mkdir(parents=True, exist_ok=True)
    live: list[str] = []
    ready.set()
    with open(acks, "a", encoding="utf-8") as f:
        for n in range(100_000):
            op = rng.choice(ops)
            if op in ("update", "delete") and not live:
                op = "add"
            if op == "add":
                text = f"crash fact {seed}-{n}: the {rng.choice(['blue', 'red', 'green'])} service"
                _log(f, "begin", "add", "-", json.dumps(text))
                events = mem.add(text, user_id=USER, agent_id=AGENT, infer=False)
                for e in events:
                    live.append(e.id)
                    _log(f, "ack", "add", e.id, json.dumps(text))
            elif op == "update":
                mid = rng.choice(live)
                text = f"crash fact {seed}-{n}: updated"
                _log(f, "begin", "update", mid, json.dumps(text))
                mem.update(mid, text)
                _log(f, "ack", "update", mid, json.dumps(text))
            elif op == "delete":
                mid = live.pop(rng.randrange(len(live)))
                _log(f, "begin", "delete", mid, '""')
                mem.delete(mid)
                _log(f, "ack", "delete", mid, '""')
            else:  # index: one more line in MEMORY.md, then index the workspace
                marker = f"zz{seed}x{n}"
                _log(f, "begin", "index", "-", json.dumps(marker))
                with notes.open("a", encoding="utf-8") as md:
                    md.write(f"- note {marker} about the {rng.choice(['db', 'cache'])} layer\n")
                index_workspace(mem, ws)
                _log(f, "ack", "index", "-", json.dumps(marker))
    mem.close()
    os._exit(0)
