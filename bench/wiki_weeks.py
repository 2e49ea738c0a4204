"""The memory wiki compiled from weeks of agent life (issue 31, item 7), scored.

```
python bench/wiki_weeks.py [--weeks 5] [--seed 1] [--variant eng|data] [--out PATH]
```

A cheaper cousin of ``bench/weeks.py``: the same seeded scenario
(``weeks_scenario.py``), but only what the wiki is compiled from. Each exchange goes to
the agent's diary (``capture``) and every statement of a fact (stated, changed,
mentioned, the look-alike stable facts) is added with ``infer: true`` on a clock moved
to when it was said, so the fact store supersedes what changed; each agent keeps the
``MEMORY.md`` it wrote on day 1. Then each agent's wiki is compiled once, and scored:

* ``entity_pages`` and the ``accidents`` among them (a day, month, language or
  nationality, or a common word: a title the scenario also writes in lower case);
* ``split``: entity pages whose titles fold to one name (``Postgres`` / ``PostgreSQL``);
* ``contested`` claims, and ``false_contested``: those that contradict no claim
  saying a value of the same changing fact (by the scenario's truth);
* ``stale_as_current``: current claims that state a superseded value of a changed fact.

Writes ``bench/results/wiki-weeks-<date>.json`` (or ``--out``) and prints the figures.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

from _common import REPO_ROOT, machine_info
from memoryd import wiki
from memoryd.core import Memory
from memoryd.embed import Embedder
from memoryd.pipelines.diary import capture
from memoryd.settings import Settings
from memoryd.workspace import resolve_workspace
from weeks_scenario import AGENTS, USER, Fact, Scenario, generate

FACT_KINDS = ("fact", "change", "mention", "stable")
CALENDAR = set(
    """monday tuesday wednesday thursday friday saturday sunday january february march
    april may june july august september october november december english french german
    spanish portuguese italian dutch chinese japanese""".split()  # noqa: SIM905
)


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def play(sc: Scenario, home: Path, embedder: Embedder | None = None) -> Memory:
    settings = Settings(home=home)
    settings.workspace.user_id = USER
    settings.workspace.openclaw_dir = home / "openclaw"
    settings.workspace.watch = False
    settings.pipelines.scheduler = False
    clock = Clock(sc.start)
    m = Memory(settings, embedder=embedder, clock=clock)
    for agent in AGENTS:
        root = resolve_workspace(settings, agent, m.store).root
        (root / "memory").mkdir(parents=True, exist_ok=True)
        (root / "MEMORY.md").write_text(sc.memory_md[agent])
    for ex in sorted(sc.exchanges, key=lambda e: e.at):
        clock.now = ex.at
        messages = [
            {"role": "user", "content": ex.user},
            {"role": "assistant", "content": ex.assistant},
        ]
        capture(m, agent_id=ex.agent, messages=messages)
        if ex.kind in FACT_KINDS:
            m.add(ex.user, user_id=USER, agent_id=ex.agent, infer=True)
    clock.now = sc.end
    return m


def fold(title: str) -> str:
    return re.sub(r"\W+", "", title.casefold())


def values_in(facts: list[Fact], text: str) -> set[tuple[str, str]]:
    """(fact key, value) of every value of a changing fact that ``text`` states."""
    return {
        (f.key, v)
        for f in facts
        for _, v in f.values
        if re.search(rf"(?<![\w.]){re.escape(v)}(?![\w])", text)
    }


def score(m: Memory, sc: Scenario) -> dict[str, Any]:
    lower_words = {
        w
        for ex in sc.exchanges
        for w in re.findall(r"\b[a-z][a-z'-]+\b", f"{ex.user} {ex.assistant}")
    }
    out: dict[str, Any] = {}
    for agent in AGENTS:
        ws = resolve_workspace(m.settings, agent, m.store)
        report = wiki.compile_wiki(m, ws)
        state = json.loads((ws.root / "wiki" / ".state" / "claims.json").read_text())
        pages = state["pages"]
        entities = sorted(p["title"] for p in pages if p["kind"] == "entity")
        accidents = [
            t
            for t in entities
            if " " not in t and (t.casefold() in CALENDAR or t.casefold() in lower_words)
        ]
        folded: dict[str, list[str]] = {}
        for t in entities:
            folded.setdefault(fold(t).removesuffix("ql"), []).append(t)
        claims = {c["id"]: c for p in pages for c in p["claims"]}
        facts = [f for f in sc.facts if f.agent == agent]

        contested = [c for c in claims.values() if c["status"] == "contested"]
        false = 0
        for c in contested:
            mine = {k for k, _ in values_in(facts, c["text"])}
            others = [
                claims[i]
                for i in (c.get("note") or "").removeprefix("contradicts ").split(", ")
                if i in claims
            ]
            if not any(mine & {k for k, _ in values_in(facts, o["text"])} for o in others):
                false += 1
        stale_as_current = [
            c["text"]
            for c in claims.values()
            if c["status"] == "current"
            and any(
                v in f.superseded(sc.end) and f.key == k
                for f in facts
                for k, v in values_in(facts, c["text"])
            )
            and not any(
                v == f.current(sc.end) and f.key == k
                for f in facts
                for k, v in values_in(facts, c["text"])
            )
        ]
        # a stale claim that states the current value of a changed fact, and no older one
        false_stale = [
            c["text"]
            for c in claims.values()
            if c["status"] == "stale"
            and any(
                v == f.current(sc.end) and f.key == k
                for f in facts
                for k, v in values_in(facts, c["text"])
            )
            and not any(
                v in f.superseded(sc.end) and f.key == k
                for f in facts
                for k, v in values_in(facts, c["text"])
            )
        ]
        out[agent] = {
            "pages": report.pages,
            "claims": len(claims),
            "entity_pages": len(entities),
            "entities": entities,
            "accidents": accidents,
            "split": [ts for ts in folded.values() if len(ts) > 1],
            "contested": len(contested),
            "false_contested": false,
            "stale_claims": sum(c["status"] == "stale" for c in claims.values()),
            "stale_as_current": stale_as_current,
            "false_stale": false_stale,
            "stale": sorted(c["text"] for c in claims.values() if c["status"] == "stale"),
            "contested_texts": sorted(c["text"] for c in contested),
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--weeks", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--variant", default="eng")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    sc = generate(args.seed, args.variant, args.weeks)
    with tempfile.TemporaryDirectory() as tmp:
        m = play(sc, Path(tmp))
        try:
            result = {
                "scenario": {"seed": args.seed, "variant": args.variant, "weeks": args.weeks},
                "agents": score(m, sc),
                "machine": machine_info(),
            }
        finally:
            m.close()
    for agent, figures in result["agents"].items():
        shown = {
            k: (len(v) if isinstance(v, list) and k != "accidents" else v)
            for k, v in figures.items()
        }
        print(agent, json.dumps({k: v for k, v in shown.items() if k != "entities"}))
        print("  entity pages:", ", ".join(figures["entities"]))
    out = args.out or REPO_ROOT / "bench" / "results" / f"wiki-weeks-{datetime.now():%Y-%m-%d}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
