"""Weeks of agent life through memoryd's public routes, scored each week (issue 31, item 8).

```
python bench/weeks.py [--weeks 5] [--seed 1] [--variant eng|data|home] [--out PATH]
```

A seeded scenario (``weeks_scenario.py``: two agents, a second user, facts that change,
tasks that get done, real and trivial tool failures, chit-chat, tables) is played
against a real HTTP server (uvicorn on a free loopback port, shipped defaults, no LLM,
API keys: one for the workspace owner, one for the second user, an admin key for the
probe). The server's ``Memory`` runs on a clock the driver moves in 15-minute steps;
at each step the turns of that quarter hour go through ``POST /v1/diary`` (the second
user's through ``POST /memory/add``), the agents' look-ups through ``POST
/memory/search`` and ``POST /v1/memory_search``, tool transcripts land where OpenClaw
writes them, and every pipeline whose default schedule came due runs (the scheduler's
own catch-up rule, ``scheduler.missed``, as ``serve`` would). At the end of every week
the scorer (``weeks_score.py``) measures the columns of issue 31's table; the scoring
searches do not record recalls (promotion must not see the examiner). After the last
week, 50 distinct similar facts are added one by one with ``infer: true`` for a fresh
user, and the memories counted.

Writes ``bench/results/weeks-<date>.json`` (or ``--out``) and prints the table.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from pydantic import SecretStr

import memoryd
from _common import REPO_ROOT, machine_info
from memoryd.api.app import create_app
from memoryd.core import Memory
from memoryd.models import Filters, Origin
from memoryd.pipelines.promote import BLOCK_TITLE
from memoryd.pipelines.runs import run_pipeline
from memoryd.pipelines.scheduler import SINCE_KEY, missed
from memoryd.search.tiers import SHARED, memory_type
from memoryd.settings import ApiKey, Settings
from weeks_scenario import AGENTS, OTHER_USER, USER, VARIANTS, Scenario, generate
from weeks_score import (
    ChitChat,
    judge_line,
    leaks_in,
    lesson_real,
    mentions,
    promoted_lines,
    rank_facts,
    share,
    states_open,
)

STEP = timedelta(minutes=15)
KEYS = {"owner": "weeks-owner-key", "other": "weeks-other-key", "admin": "weeks-admin-key"}
TOP_K = 10


class Clock:
    """The server's clock: it moves only when the driver says so."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now


def bench_settings(home: Path, llm_url: str | None = None) -> Settings:
    """Shipped defaults, except: no watcher or scheduler thread (the driver runs what is
    due on the moved clock), OpenClaw's directory inside ``home``, API keys, and the LLM
    at ``llm_url`` (OpenAI protocol) when one is given."""
    s = Settings(home=home)
    if llm_url is not None:
        s.llm.provider = "openai"
        s.llm.openai.base_url = llm_url
    s.workspace.openclaw_dir = home / "openclaw"
    s.workspace.watch = False
    s.pipelines.scheduler = False
    s.auth.keys = [
        ApiKey(name="owner", key=SecretStr(KEYS["owner"]), users=[USER]),
        ApiKey(name="other", key=SecretStr(KEYS["other"]), users=[OTHER_USER]),
        ApiKey(name="admin", key=SecretStr(KEYS["admin"]), admin=True),
    ]
    return s


class Server:
    """The app on ``memory`` served by uvicorn in a thread, and clients with each key."""

    def __init__(self, memory: Memory) -> None:
        import socket

        import uvicorn

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = int(sock.getsockname()[1])
        config = uvicorn.Config(
            create_app(memory=memory), host="127.0.0.1", port=self.port, log_level="warning"
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        url = f"http://127.0.0.1:{self.port}"
        self.clients = {
            who: httpx.Client(base_url=url, timeout=120, headers={"X-API-Key": key})
            for who, key in KEYS.items()
        }

    def __enter__(self) -> Server:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the benchmark's server did not start within 30 s")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        for c in self.clients.values():
            c.close()
        self.server.should_exit = True
        self.thread.join(timeout=10)

    def post(self, who: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
        r = self.clients[who].post(path, json=body)
        if r.status_code != 200:
            raise RuntimeError(f"POST {path} -> {r.status_code}: {r.text[:300]}")
        out: dict[str, Any] = r.json()
        return out

    def get(self, who: str, path: str, params: dict[str, Any]) -> dict[str, Any]:
        r = self.clients[who].get(path, params=params)
        if r.status_code != 200:
            raise RuntimeError(f"GET {path} -> {r.status_code}: {r.text[:300]}")
        out: dict[str, Any] = r.json()
        return out

    # the two search faces, as the agents call them
    def search(self, agent: str, query: str, who: str = "owner", user: str = USER) -> list[dict[str, Any]]:  # fmt: skip
        body = {"query": query, "user_id": user, "agent_id": agent, "top_k": TOP_K}
        hits: list[dict[str, Any]] = self.post(who, "/memory/search", body)["results"]
        return hits

    def memory_search(self, agent: str, query: str) -> list[dict[str, Any]]:
        hits: list[dict[str, Any]] = self.post(
            "owner", "/v1/memory_search", {"agent_id": agent, "query": query}
        )["results"]
        return hits


def hit_text(hit: dict[str, Any]) -> str:
    return str(hit.get("memory") or hit.get("snippet") or "")


# -- the driver -----------------------------------------------------------------------------
class Run:
    def __init__(self, sc: Scenario, mem: Memory, clock: Clock, srv: Server) -> None:
        self.sc, self.mem, self.clock, self.srv = sc, mem, clock, srv
        self.home = mem.settings.home
        self.tally: Counter[str] = Counter()
        self.pipeline_runs: Counter[str] = Counter()
        self.pipeline_errors: list[dict[str, str]] = []
        self.chit = ChitChat(sc.chitchat)
        self.dirty = True  # workspace files changed since the last index

    def events(self) -> list[tuple[datetime, str, Any]]:
        ev: list[tuple[datetime, str, Any]] = []
        ev += [(e.at, "exchange", e) for e in self.sc.exchanges]
        ev += [(s.at, "search", s) for s in self.sc.searches]
        ev += [(t.at, "transcript", t) for t in self.sc.transcripts]
        ev += [(o.at, "other", o) for o in self.sc.other_user]
        return sorted(ev, key=lambda x: x[0])

    def do(self, kind: str, e: Any) -> None:
        at = self.clock.now.isoformat()
        if kind == "exchange":
            out = self.srv.post("owner", "/v1/diary", {
                "agent_id": e.agent, "user_id": USER, "session_id": f"{e.agent}-{at[:10]}",
                "turn_id": f"{e.agent}-{at}-{self.tally['exchange']}", "timestamp": at,
                "messages": [{"role": "user", "content": e.user},
                             {"role": "assistant", "content": e.assistant}],
            })  # fmt: skip
            self.tally["exchange"] += 1
            self.tally["diary_written" if out.get("written") else "diary_dropped"] += 1
        elif kind == "search":
            self.index()
            if e.face == "api":
                self.srv.search(e.agent, e.query)
            else:
                self.srv.memory_search(e.agent, e.query)
            self.tally[f"search_{e.face}"] += 1
        elif kind == "transcript":
            d = self.mem.settings.workspace.openclaw_dir / "agents" / e.agent / "sessions"
            d.mkdir(parents=True, exist_ok=True)
            (d / f"{e.session_id}.jsonl").write_text("\n".join(e.lines) + "\n")
            self.tally["transcript"] += 1
        elif kind == "other":
            self.srv.post("other", "/memory/add", {
                "user_id": OTHER_USER, "agent_id": "dev", "infer": True, "timestamp": at,
                "messages": [{"role": "user", "content": e.user},
                             {"role": "assistant", "content": e.assistant}],
            })  # fmt: skip
            self.tally["other_user_add"] += 1

    def index(self) -> None:
        """What ``serve``'s workspace watcher does when a file changes: index the agent's
        files (the diary, MEMORY.md, lessons.md...) so searches find them. Done before the
        next search rather than after every write: a search sees the same files, and the
        run takes half the time."""
        if self.dirty:
            for agent in AGENTS:
                self.srv.post("owner", "/v1/index", {"agent_id": agent})
            self.dirty = False

    def run_due(self) -> list[str]:
        """Run every pipeline whose default schedule came due; the names of those that ran."""
        due = missed(self.mem, self.clock.now)
        for name in due:
            record = run_pipeline(self.mem, name, trigger="schedule")
            self.pipeline_runs[name] += 1
            if record.status != "ok":
                self.pipeline_errors.append(
                    {"at": self.clock.now.isoformat(), "pipeline": name, "error": str(record.error)}
                )
        return due

    def play(self, progress: bool = True) -> list[dict[str, Any]]:
        for agent in AGENTS:
            root = self.home / "workspaces" / agent
            (root / "memory").mkdir(parents=True, exist_ok=True)
            (root / "MEMORY.md").write_text(self.sc.memory_md[agent])
        self.mem.store.kv_set(SINCE_KEY, self.sc.start.isoformat())
        events = self.events()
        checkpoints = self.sc.checkpoints()
        results: list[dict[str, Any]] = []
        i, t, t0 = 0, self.sc.start, time.monotonic()
        while t <= self.sc.end:
            busy = False  # events in this quarter hour
            while i < len(events) and events[i][0] <= t:
                self.clock.now = max(events[i][0], self.clock.now)
                self.do(events[i][1], events[i][2])
                busy, i = True, i + 1
            self.clock.now = t
            ran = self.run_due()
            if busy or ran:  # files may have changed: index before the next search
                self.dirty = True
            if checkpoints and t >= checkpoints[0]:
                week = len(results) + 1
                results.append({"week": week, "at": t.isoformat(), **self.score(t)})
                checkpoints.pop(0)
                if progress:
                    print(f"week {week} scored at {time.monotonic() - t0:.0f} s", file=sys.stderr)
            t += STEP
        return results

    # -- the scorer's view --------------------------------------------------------------------
    def score(self, at: datetime) -> dict[str, Any]:
        self.mem.recalls.enabled = False  # the examiner's questions are not recalls
        self.index()
        try:
            return {
                "changed_facts": self.score_facts(at),
                "memory_md": self.score_memory_md(at),
                "tasks": self.score_tasks(at),
                "lessons": self.score_lessons(at),
                "long_term": self.score_long_term(),
                "leaks": self.score_leaks(),
                "store": {"active": self.mem.count(Filters(user_id=USER))},
            }
        finally:
            self.mem.recalls.enabled = self.mem.settings.promote.record_recalls

    def score_facts(self, at: datetime) -> dict[str, Any]:
        hits: dict[tuple[str, str, str], list[str]] = {}
        for f in self.sc.facts:
            if not f.changed_by(at):
                continue
            for q in f.queries:
                hits[(f.key, q, "api")] = [hit_text(h) for h in self.srv.search(f.agent, q)]
                hits[(f.key, q, "files")] = [
                    hit_text(h) for h in self.srv.memory_search(f.agent, q)
                ]
        ranked = rank_facts(hits, self.sc, at)
        by_face = {
            face: [r for r in ranked if r.face == face] for face in ("api", "files")
        }  # fmt: skip
        stale_examples = [
            {"fact": r.fact, "query": r.query, "face": r.face,
             "first": hits[(r.fact, r.query, r.face)][0][:160],
             "stale_hit": next(hits[(r.fact, r.query, r.face)][i][:160]
                               for i, lab in enumerate(r.labels) if lab == "stale")}
            for r in ranked if r.stale_above
        ][:8]  # fmt: skip
        stable = {}
        for s in self.sc.stable:
            if not s.said_by(at):
                continue  # not said yet: nothing to keep intact
            api = self.srv.search(s.agent, s.query)
            files = self.srv.memory_search(s.agent, s.query)
            stable[s.key] = {
                "api": bool(api) and mentions(hit_text(api[0]), s.token),
                "files": bool(files) and mentions(hit_text(files[0]), s.token),
            }
        return {
            "facts": sum(f.changed_by(at) for f in self.sc.facts),
            "judged": len(ranked),
            "current_first": {
                face: share(sum(r.current_first for r in rs), len(rs))
                for face, rs in by_face.items()
            },
            "stale_above": sum(r.stale_above for r in ranked),
            "stale_examples": stale_examples,
            "similar_intact": share(
                sum(v["api"] + v["files"] for v in stable.values()), 2 * len(stable)
            ),
        }

    def score_memory_md(self, at: datetime) -> dict[str, Any]:
        lines = promoted = stale = done_open = junk = 0
        bad: list[dict[str, Any]] = []
        for agent in AGENTS:
            path = self.home / "workspaces" / agent / "MEMORY.md"
            text = path.read_text() if path.is_file() else ""
            lines += sum(1 for ln in text.splitlines() if ln.strip())
            for line in promoted_lines(text, BLOCK_TITLE):
                promoted += 1
                v = judge_line(line, self.sc, at, self.chit)
                stale += bool(v.stale)
                done_open += bool(v.done_as_open)
                junk += v.junk
                if v.stale or v.done_as_open or v.junk:
                    bad.append({"agent": agent, **{k: x for k, x in v.__dict__.items() if x}})
        return {
            "lines": lines, "promoted": promoted, "stale": stale, "done_as_open": done_open,
            "junk": junk, "bad_lines": bad[:20],
        }  # fmt: skip

    def records(self, **filters: Any) -> list[Any]:
        f = Filters(user_id=USER, **filters)
        return [r for r in self.mem.store.iter_all(f) if r.origin != Origin.CHUNK]

    def score_tasks(self, at: datetime) -> dict[str, Any]:
        active = self.records()
        back: set[str] = set()
        still_open: set[str] = set()
        examples: list[dict[str, Any]] = []
        finished = [t for t in self.sc.tasks if t.done_by(at)]
        for t in finished:
            assert t.done_at is not None
            for r in active:
                if not states_open(r.text, t):
                    continue
                created = r.created_at if r.created_at.tzinfo else r.created_at.replace(tzinfo=UTC)
                if created >= t.done_at:
                    back.add(t.key)
                    if len(examples) < 8:
                        examples.append({"task": t.key, "memory": r.text[:160],
                                         "category": r.category,
                                         "by": r.metadata.get("pipeline") or r.origin.value})  # fmt: skip
                else:
                    still_open.add(t.key)
        return {
            "finished": len(finished), "back_as_active": len(back),
            "never_closed": len(still_open - back), "examples": examples,
        }  # fmt: skip

    def score_lessons(self, at: datetime) -> dict[str, Any]:
        lessons = self.records(categories=["experience"])
        shared_cats = self.mem.settings.search.shared_categories
        real_keys = [lesson_real(r.text, self.sc) for r in lessons]
        junk = [r for r, k in zip(lessons, real_keys, strict=True) if k is None]
        return {
            "all": len(lessons),
            "real": sum(k is not None for k in real_keys),
            "learned": len({k for k in real_keys if k}),
            "real_episodes": sum(e.real and e.at <= at for e in self.sc.episodes),
            "junk_shared": sum(memory_type(r, shared_cats) == SHARED for r in junk),
            "junk_examples": [r.text[:160] for r in junk[:8]],
        }

    def score_long_term(self) -> dict[str, Any]:
        facts = self.records(long_term_only=True)
        chit = [r for r in facts if self.chit(r.text)]
        by = Counter(str(r.metadata.get("pipeline") or r.origin.value) for r in chit)
        return {
            "facts": len(facts),
            "chitchat": len(chit),
            "chitchat_share": share(len(chit), len(facts)),
            "chitchat_by": dict(by),
            "examples": [r.text[:120] for r in chit[:8]],
        }

    def score_leaks(self) -> dict[str, Any]:
        markers = self.sc.other_markers
        searched: list[str] = []
        for agent in AGENTS:
            for q in self.sc.other_queries:
                searched += [hit_text(h) for h in self.srv.search(agent, q)]
                searched += [hit_text(h) for h in self.srv.memory_search(agent, q)]
        stored = [r.text for r in self.mem.store.iter_all(Filters(states=[]))
                  if r.user_id != OTHER_USER]  # fmt: skip
        files = [p.read_text(errors="replace")
                 for p in (self.home / "workspaces").rglob("*.md")]  # fmt: skip
        # and the other way: what the second user's key finds of the owner's
        foreign = 0
        for f in self.sc.facts:
            for h in self.srv.search("dev", f.queries[0], who="other", user=OTHER_USER):
                foreign += h.get("user_id") != OTHER_USER
        out = {
            "search": leaks_in(searched, markers),
            "store": leaks_in(stored, markers),
            "files": leaks_in(files, markers),
            "other_user_sees_owner": foreign,
        }
        out["total"] = sum(out.values())
        return out

    def probe_similar(self) -> dict[str, Any]:
        """50 distinct facts about similar things, one add each with inference."""
        user = "probe"
        events: Counter[str] = Counter()
        for text in self.sc.similar:
            out = self.srv.post("admin", "/memory/add", {"text": text, "user_id": user,
                                                         "infer": True})  # fmt: skip
            events.update(e.get("event", "?") for e in out["results"])
        listed = self.srv.get("admin", "/memory/list", {"user_id": user, "limit": 1000})
        return {"added": len(self.sc.similar), "memories": listed["total"], "events": dict(events)}


# -- output ---------------------------------------------------------------------------------
COLUMNS = [
    ("week", "after week"),
    ("current_first", "changed fact: current value first (search / memory_search)"),
    ("superseded_above", "superseded ranked above current"),
    ("memory_md_lines", "MEMORY.md lines (promoted)"),
    ("stale_open_junk", "stale / done-as-open / junk lines"),
    ("tasks_back", "finished tasks back as active"),
    ("lessons", "lesson memories real / all (junk seen by the other agent)"),
    ("chitchat", "long-term facts that are chit-chat"),
    ("leaks", "leaks between users"),
]


def row(c: dict[str, Any]) -> dict[str, str]:
    cf, md, ta, le, lt = (c["changed_facts"], c["memory_md"], c["tasks"], c["lessons"],
                          c["long_term"])  # fmt: skip

    def f(x: float | None) -> str:
        return "—" if x is None else f"{x:.2f}"

    pct = lt["chitchat_share"]
    return {
        "week": str(c["week"]),
        "current_first": f"{f(cf['current_first']['api'])} / {f(cf['current_first']['files'])}",
        "superseded_above": f"{cf['stale_above']} of {cf['judged']}",
        "memory_md_lines": f"{md['lines']} ({md['promoted']})",
        "stale_open_junk": f"{md['stale']} / {md['done_as_open']} / {md['junk']}",
        "tasks_back": f"{ta['back_as_active']} of {ta['finished']}",
        "lessons": f"{le['real']} / {le['all']} ({le['junk_shared']})",
        "chitchat": "—" if pct is None else f"{100 * pct:.1f}%",
        "leaks": str(c["leaks"]["total"]),
    }


def targets(result: dict[str, Any]) -> dict[str, bool | None]:
    """Issue 31's "done when", each over every weekly checkpoint (None: not measured)."""
    cps = result["checkpoints"]

    def every(ok: Any) -> bool:
        return all(ok(c) for c in cps)

    def first(c: dict[str, Any]) -> bool:
        cf = c["changed_facts"]["current_first"]
        return all(v is None or v >= 0.95 for v in cf.values())

    def lessons(c: dict[str, Any]) -> bool:
        le = c["lessons"]
        return le["junk_shared"] == 0 and (le["all"] == 0 or le["real"] >= 0.9 * le["all"])

    probe = result["similar_probe"]
    return {
        "current value first >= 95% (both faces)": every(first),
        "no superseded value above the current one": every(
            lambda c: c["changed_facts"]["stale_above"] == 0
        ),
        "MEMORY.md: 0 stale, 0 done-as-open, 0 junk": every(
            lambda c: (
                c["memory_md"]["stale"] + c["memory_md"]["done_as_open"] + c["memory_md"]["junk"]
                == 0
            )
        ),
        "0 finished tasks back": every(lambda c: c["tasks"]["back_as_active"] == 0),
        ">= 90% of lessons real, no junk in the pool": every(lessons),
        "<= 3% of long-term facts chit-chat": every(
            lambda c: (c["long_term"]["chitchat_share"] or 0) <= 0.03
        ),
        "50 similar facts stay 50": probe["memories"] == probe["added"] if probe["added"] else None,
        "0 leaks": every(lambda c: c["leaks"]["total"] == 0),
    }


def _mark(ok: bool | None) -> str:
    return "-" if ok is None else "x" if ok else " "


def markdown(result: dict[str, Any]) -> str:
    head = "| " + " | ".join(title for _, title in COLUMNS) + " |"
    rule = "|" + "---|" * len(COLUMNS)
    body = ["| " + " | ".join(row(c)[k] for k, _ in COLUMNS) + " |" for c in result["checkpoints"]]
    p = result["similar_probe"]
    sc = result["scenario"]
    tail = [
        "",
        f"50 distinct similar facts added one by one (infer: true): {p['memories']} memories "
        f"({', '.join(f'{k} {v}' for k, v in sorted(p['events'].items()))}).",
        f"Scenario: seed {sc['seed']}, variant {sc['variant']}, {sc['weeks']} weeks, "
        f"{sc['exchanges']} exchanges, {sc['facts_that_change']} facts changing "
        f"{sc['changes']} times, {sc['tasks']} tasks ({sc['tasks_finished']} finished), "
        f"{sc['real_lessons']} real lessons + {sc['trivial_failures']} trivial failures; "
        f"{result['elapsed_s']} s ({result.get('cpu_s', '?')} s of CPU).",
    ]
    met = targets(result)
    tail.append(
        f"Targets met: {sum(ok is True for ok in met.values())} of {len(met)}"
        + "".join(f"\n- [{_mark(ok)}] {name}" for name, ok in met.items())
    )
    return "\n".join([head, rule, *body, *tail])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--weeks", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--variant", default="eng", choices=list(VARIANTS))
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--no-probe", action="store_true", help="skip the 50 similar facts")
    ap.add_argument("--table", type=Path, help="only print the table of this result JSON")
    ap.add_argument("--dump", type=Path, help="only write the scenario (every turn) as JSON")
    ap.add_argument("--label", default=None, help="what code ran (e.g. a commit), kept in meta")
    ap.add_argument(
        "--llm-url",
        default=None,
        help="an OpenAI-compatible endpoint (e.g. http://127.0.0.1:11434/v1): every pipeline "
        "and inferring add then asks this LLM instead of the offline rules",
    )
    args = ap.parse_args(argv)
    if args.table:
        print(markdown(json.loads(args.table.read_text())))
        return
    if args.dump:
        sc = generate(args.seed, args.variant, args.weeks)
        args.dump.write_text(json.dumps(sc.dump(), indent=1) + "\n")
        return
    result = run(args.weeks, args.seed, args.variant, probe=not args.no_probe, llm_url=args.llm_url)
    result["meta"]["label"] = args.label
    out = args.out or REPO_ROOT / "bench" / "results" / f"weeks-{datetime.now(UTC):%Y-%m-%d}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, default=str) + "\n")
    print(markdown(result))
    print(f"\nwrote {out}", file=sys.stderr)


def run(weeks: int, seed: int, variant: str, *, probe: bool = True, home: Path | None = None,
        progress: bool = True, llm_url: str | None = None) -> dict[str, Any]:  # fmt: skip
    """Play the scenario on a fresh store under ``home`` (a temporary one by default), with
    the LLM at ``llm_url`` (OpenAI protocol) when given."""
    sc = generate(seed, variant, weeks)
    meta = {**machine_info(), "memoryd_src": str(Path(memoryd.__file__).parent)}
    t0, cpu0 = time.monotonic(), time.process_time()
    with tempfile.TemporaryDirectory(prefix="memoryd-weeks-") as tmp:
        settings = bench_settings(home or Path(tmp) / "home", llm_url)
        clock = Clock(sc.start)
        with Memory(settings, clock=clock) as mem, Server(mem) as srv:
            r = Run(sc, mem, clock, srv)
            checkpoints = r.play(progress=progress)
            similar = r.probe_similar() if probe else {"added": 0, "memories": 0, "events": {}}
            return {
                "meta": meta,
                "scenario": sc.summary(),
                "elapsed_s": round(time.monotonic() - t0, 1),
                "cpu_s": round(time.process_time() - cpu0, 1),  # server and driver: one process
                "driver": dict(r.tally),
                "pipeline_runs": dict(r.pipeline_runs),
                "pipeline_errors": r.pipeline_errors[:20],
                "checkpoints": checkpoints,
                "similar_probe": similar,
                "truth": sc.truth(),
            }


if __name__ == "__main__":
    main()
