"""Recall through the paths users take, end to end over HTTP.

Each path starts a real ``memoryd serve`` (temporary home, free loopback port,
shipped defaults, no LLM), sends a dataset's conversations the way a user or an
agent would, then asks every question through the search route that path's
users call, and checks which evidence turns come back:

* ``api-messages``: ``POST /memory/add`` with ``messages`` (``name``,
  ``timestamp``), ``infer: false``, one call per session; ``POST /memory/search``.
* ``api-text``: ``POST /memory/add`` with ``text`` "Speaker: words", one turn per
  call, ``infer: false``; ``POST /memory/search``.
* ``diary``: ``POST /v1/diary`` per exchange (two consecutive turns, as the
  OpenClaw plugin sends a finished turn), with the session's ``timestamp``;
  ``POST /v1/memory_search`` with the shipped defaults (what the OpenClaw
  plugin's ``memory_search`` returns).
* ``digest-facts``: the diary written today, then ``memoryd run digest`` (offline
  extractor);
  ``POST /memory/search`` over the facts, each mapped to turns by the line it
  cites.

Metrics, over categories that are not adversarial (and adversarial apart):
evidence recall@5/10/25 (the fraction of a question's evidence turns among the
first k hits), recall within 250/500/1,000/2,000 tokens of returned text
(hits are read in order and their text, as returned, costs model tokens), and
the p50/p95 latency of the search call as the client sees it. Conversations are
split in two halves: ``tune`` (the first) and ``heldout`` (the second).
``--modes vector,keyword`` measures a path again with the fusion reduced to one
of its parts (the server's ``search.*_weight`` settings), to check that the
default beats both. ``--datasets`` runs several datasets through the same paths and
modes, and the plain baselines (bench/plain.py: plain MiniLM, plain 0.7/0.3 hybrid) run
on the same conversations, scored by the same ``score``; the tables put each dataset's
runs side by side and say, computed from the numbers, what the default beats on both
halves.

    python bench/paths.py --dataset locomo --paths api-messages,diary --out FILE
    python bench/paths.py --datasets locomo,realtalk,agentchat --data realtalk=REALTALK/data \
        --paths api-messages --modes default,vector,keyword --out FILE
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from _common import REPO_ROOT, loadavg, machine_info, percentile_ms
from datasets import Conversation, Question, load
from memoryd.embed import create_embedder
from memoryd.settings import EmbedSettings
from plain import MODES as PLAIN_MODES
from plain import PlainIndex

K = (5, 10, 25)
BUDGETS = (250, 500, 1000, 2000)
ADVERSARIAL = "adversarial"
Hit = dict[str, Any]


# -- the server ---------------------------------------------------------------------------------
def add_set_option(ap: argparse.ArgumentParser) -> None:
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="MEMORYD_NAME=VALUE",
        help="a server setting beyond the shipped defaults (another embedding model: "
        "MEMORYD_EMBED__ONNX__MODEL_DIR=DIR); repeatable, recorded in the results",
    )


def server_settings(items: list[str]) -> dict[str, str]:
    """``--set`` values as the server's environment."""
    pairs = [item.partition("=") for item in items]
    if any(not key.startswith("MEMORYD_") or not eq for key, eq, _ in pairs):
        raise SystemExit("--set takes MEMORYD_NAME=VALUE")
    return {key: value for key, _, value in pairs}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """``memoryd serve`` on a temporary home; shipped defaults, no scheduler."""

    def __init__(self, home: Path, settings: dict[str, str] | None = None) -> None:
        self.home = home
        port = _free_port()
        self.url = f"http://127.0.0.1:{port}"
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")},
            "MEMORYD_HOME": str(home),
            "MEMORYD_WORKSPACE__OPENCLAW_DIR": str(home / "openclaw"),  # never the real one
            "MEMORYD_PIPELINES__SCHEDULER": "false",
            **(settings or {}),
        }
        self.env = env
        self.log = (home / "server.log").open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "memoryd.cli", "serve", "--port", str(port)],
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        self.http = httpx.Client(base_url=self.url, timeout=120)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"memoryd serve exited early; see {home / 'server.log'}")
            try:
                if self.http.get("/health").status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.2)
        raise SystemExit("memoryd serve did not answer /health in 120 s")

    def post(self, route: str, body: dict[str, Any]) -> Any:
        r = self.http.post(route, json=body)
        if r.status_code >= 400:
            raise SystemExit(f"{route} answered {r.status_code}: {r.text[:500]}")
        return r.json()

    def close(self) -> None:
        self.http.close()
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


# -- the paths: ingest, then a search that returns (hits, the turn ids of each hit) ---------------
Search = Callable[[Conversation, str], tuple[list[Hit], list[set[str]]]]


def api_messages(srv: Server, convs: list[Conversation]) -> Search:
    turn_of: dict[str, str] = {}
    for conv in convs:
        for session in conv.sessions:
            if not session.turns:
                continue
            messages = session.messages()
            results = srv.post(
                "/memory/add",
                {
                    "user_id": conv.id,
                    "messages": messages,
                    "infer": False,
                    "metadata": {"session": session.id},
                },
            )["results"]
            for n, r in enumerate(results):
                index = r.get("message", n)
                if r.get("id"):
                    turn_of.setdefault(r["id"], session.turns[index].id)
    return _memory_search(srv, turn_of)


def api_text(srv: Server, convs: list[Conversation]) -> Search:
    turn_of: dict[str, str] = {}
    for conv in convs:
        for session in conv.sessions:
            for t in session.turns:
                results = srv.post(
                    "/memory/add",
                    {"user_id": conv.id, "text": f"{t.speaker}: {t.text}", "infer": False},
                )["results"]
                for r in results:
                    if r.get("id"):
                        turn_of.setdefault(r["id"], t.id)
    return _memory_search(srv, turn_of)


def _memory_search(srv: Server, turn_of: dict[str, str]) -> Search:
    def search(conv: Conversation, query: str) -> tuple[list[Hit], list[set[str]]]:
        body = {"query": query, "user_id": conv.id, "top_k": 25, "time_decay": False}
        hits = srv.post("/memory/search", body)["results"]
        for h in hits:
            h["shown"] = h["memory"]
        return hits, [{turn_of[h["id"]]} if h["id"] in turn_of else set() for h in hits]

    return search


def diary(srv: Server, convs: list[Conversation]) -> Search:
    lines = _write_diaries(srv, convs)

    def search(conv: Conversation, query: str) -> tuple[list[Hit], list[set[str]]]:
        hits = srv.post("/v1/memory_search", {"agent_id": conv.id, "query": query})["results"]
        for h in hits:
            h["shown"] = h["snippet"]
        return hits, [_cited(lines, conv.id, h) for h in hits]

    return search


def digest_facts(srv: Server, convs: list[Conversation]) -> Search:
    # the digest reads today's diary as it grows, so the turns are said today here
    lines = _write_diaries(srv, convs, dated=False)
    run = subprocess.run(
        [sys.executable, "-m", "memoryd.cli", "run", "digest"],
        env={**srv.env, "MEMORYD_DIGEST__MIN_BYTES": "0", "MEMORYD_DIGEST__SETTLE_MINUTES": "0"},
        capture_output=True,
        text=True,
        check=False,
    )
    if run.returncode not in (0, 1):
        raise SystemExit(f"memoryd run digest failed: {run.stderr[-2000:]}")

    def search(conv: Conversation, query: str) -> tuple[list[Hit], list[set[str]]]:
        body = {
            "query": query,
            "user_id": "default",
            "agent_id": conv.id,
            "top_k": 25,
            "time_decay": False,
            "filters": {"origin": "fact"},
        }
        hits = srv.post("/memory/search", body)["results"]
        for h in hits:
            h["shown"] = h["memory"]
            if h.get("citation") is None and h.get("source"):
                h["citation"] = h["source"]
        return hits, [_cited(lines, conv.id, h) for h in hits]

    return search


def _write_diaries(
    srv: Server, convs: list[Conversation], *, dated: bool = True
) -> dict[tuple[str, str, int], str]:
    """Post every exchange to the diary (on the session's day, or today when not
    ``dated``); returns (agent, path, line) -> turn id."""
    for conv in convs:
        for session in conv.sessions:
            when = session.at.isoformat() if session.at and dated else None
            for i in range(0, len(session.turns), 2):
                pair = session.turns[i : i + 2]
                messages = [
                    {"role": role, "name": t.speaker, "content": t.text}
                    for role, t in zip(("user", "assistant"), pair, strict=False)
                ]
                srv.post(
                    "/v1/diary",
                    {
                        "agent_id": conv.id,
                        "user_id": "default",
                        "session_id": session.id,
                        "turn_id": f"{session.id}-{i}",
                        "timestamp": when,
                        "messages": messages,
                    },
                )
        srv.post("/v1/index", {"agent_id": conv.id})
    return _line_map(srv.home, convs)


def _line_map(home: Path, convs: list[Conversation]) -> dict[tuple[str, str, int], str]:
    """Which turn each diary line holds: a turn's words found on a ``- **`` line."""
    out: dict[tuple[str, str, int], str] = {}
    for conv in convs:
        waiting: dict[str, list[str]] = defaultdict(list)
        for t in conv.turns():
            waiting[" ".join(t.text.split())].append(t.id)
        root = home / "workspaces" / conv.id / "memory"
        for path in sorted(root.glob("*.md")):
            current: str | None = None
            for n, line in enumerate(path.read_text().splitlines(), start=1):
                if line.startswith("- **"):
                    words = " ".join(line.split(": ", 1)[-1].split())
                    ids = waiting.get(words)
                    current = ids.pop(0) if ids else None
                elif not line.startswith("  "):
                    current = None
                if current is not None:
                    out[(conv.id, f"memory/{path.name}", n)] = current
    return out


def _cited(lines: dict[tuple[str, str, int], str], agent: str, hit: Hit) -> set[str]:
    citation = hit.get("citation") or ""
    if "#L" not in citation:
        return set()
    path, span = citation.split("#L", 1)
    start, _, end = span.partition("-L")
    return {
        lines[(agent, path, n)]
        for n in range(int(start), int(end or start) + 1)
        if (agent, path, n) in lines
    }


PATHS: dict[str, Callable[[Server, list[Conversation]], Search]] = {
    "api-messages": api_messages,
    "api-text": api_text,
    "diary": diary,
    "digest-facts": digest_facts,
}


# -- scoring ------------------------------------------------------------------------------------
def score(
    question: Question, hits: list[Hit], turns: list[set[str]], count: Callable[[str], int]
) -> dict[str, float]:
    wanted = set(question.evidence)
    turns = [question.units(t) for t in turns]
    row: dict[str, float] = {}
    for k in K:
        found = set().union(*turns[:k]) if turns[:k] else set()
        row[f"recall@{k}"] = len(wanted & found) / len(wanted)
    used, found = 0, set()
    spent: list[tuple[int, set[str]]] = []
    for hit, got in zip(hits, turns, strict=True):
        used += count(hit["shown"])
        found = found | got
        spent.append((used, found))
    for budget in BUDGETS:
        within = [f for u, f in spent if u <= budget]
        row[f"tokens@{budget}"] = len(wanted & within[-1]) / len(wanted) if within else 0.0
    row["hits"] = len(hits)
    row["tokens_returned"] = used
    return row


def summarise(rows: list[tuple[str, dict[str, float]]]) -> dict[str, Any]:
    def mean(selected: list[dict[str, float]]) -> dict[str, float]:
        keys = selected[0].keys() if selected else []
        return {k: round(float(np.mean([r[k] for r in selected])), 4) for k in keys}

    main = [r for c, r in rows if c != ADVERSARIAL]
    by_cat: dict[str, list[dict[str, float]]] = defaultdict(list)
    for c, r in rows:
        by_cat[c].append(r)
    return {
        "questions": len(main),
        **mean(main),
        "by_category": {c: {"n": len(rs), **mean(rs)} for c, rs in sorted(by_cat.items())},
    }


#: search modes a path can be measured in: the shipped fusion and each of its two parts
MODES: dict[str, dict[str, str]] = {
    "default": {},
    "vector": {"MEMORYD_SEARCH__KEYWORD_WEIGHT": "0", "MEMORYD_SEARCH__VECTOR_WEIGHT": "1"},
    "keyword": {"MEMORYD_SEARCH__KEYWORD_WEIGHT": "1", "MEMORYD_SEARCH__VECTOR_WEIGHT": "0"},
}


def measure(
    search: Search, convs: list[Conversation], count: Callable[[str], int]
) -> dict[str, Any]:
    """Every question of ``convs`` through ``search``, scored per split (``tune``: the first
    half of the conversations, ``heldout``: the rest) and per category; p50/p95 of the call."""
    search(convs[0], "warm up")
    half = (len(convs) + 1) // 2
    split_rows: dict[str, list[tuple[str, dict[str, float]]]] = defaultdict(list)
    latencies: list[float] = []
    for n, conv in enumerate(convs):
        for q in conv.questions:
            t0 = time.perf_counter()
            hits, got = search(conv, q.text)
            latencies.append(time.perf_counter() - t0)
            row = (q.category, score(q, hits, got, count))
            split_rows["overall"].append(row)
            split_rows["tune" if n < half else "heldout"].append(row)
    return {
        "p50_ms": percentile_ms(latencies, 50),
        "p95_ms": percentile_ms(latencies, 95),
        **{split: summarise(rows) for split, rows in split_rows.items()},
    }


def run_path(
    name: str,
    convs: list[Conversation],
    count: Callable[[str], int],
    mode: str = "default",
    server_env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """``server_env``: settings for the server beyond the shipped defaults (``--set``)."""
    with tempfile.TemporaryDirectory(prefix=f"memoryd-bench-{name}-") as tmp:
        srv = Server(Path(tmp), {**(server_env or {}), **MODES[mode]})
        try:
            started = time.perf_counter()
            search = PATHS[name](srv, convs)
            ingest_s = time.perf_counter() - started
            turns = sum(len(c.turns()) for c in convs)
            print(f"{name}: {turns} turns in {ingest_s:.0f} s", file=sys.stderr)
            measured = measure(search, convs, count)
        finally:
            srv.close()
    return {
        "path": name,
        "mode": mode,
        "ingest_s": round(ingest_s, 1),
        "ingest_turns_per_s": round(turns / ingest_s, 1),
        **measured,
    }


def run_baselines(
    index: PlainIndex, convs: list[Conversation], count: Callable[[str], int], modes: list[str]
) -> dict[str, dict[str, Any]]:
    """The plain baselines (bench/plain.py) on the same conversations, scored as the paths
    are: a hit is one message, shown as written. In-process, so their latency is no HTTP
    call's."""
    text = {(c.id, t.id): t.text for c in convs for t in c.turns()}

    def searcher(mode: str) -> Search:
        def search(conv: Conversation, query: str) -> tuple[list[Hit], list[set[str]]]:
            ids = index.search(conv.id, query, mode)
            return [{"shown": text[(conv.id, i)]} for i in ids], [{i} for i in ids]

        return search

    return {
        mode: {"path": "plain", "mode": mode, **measure(searcher(mode), convs, count)}
        for mode in modes
    }


#: how the side-by-side table names a row
LABELS = {
    "default": "default",
    "vector": "vector only",
    "keyword": "keyword only",
    "plain-minilm": "plain MiniLM",
    "plain-hybrid": "plain hybrid 0.7/0.3",
}
HALVES = ("tune", "heldout")


def _r10(run: dict[str, Any], split: str, category: str | None = None) -> float | None:
    s = run.get(split) or {}
    if category is not None:
        s = s.get("by_category", {}).get(category) or {}
    value = s.get("recall@10")
    return None if value is None else float(value)


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def beats(runs: dict[str, Any]) -> dict[str, dict[str, bool]]:
    """For each memoryd run in the default mode: whether its R@10 is above each rival's on
    the tune half and on the held-out half (rivals: the same path and store in the other
    modes, and the plain baselines). A half either run lacks is no win."""
    out: dict[str, dict[str, bool]] = {}
    for key, run in runs.items():
        if run["path"] == "plain" or run["mode"] != "default":
            continue
        group = (run["path"], run.get("store"))
        out[key] = {}
        for other, rival in runs.items():
            if other == key or (
                rival["path"] != "plain" and (rival["path"], rival.get("store")) != group
            ):
                continue
            pairs = [(_r10(run, h), _r10(rival, h)) for h in HALVES]
            out[key][other] = all(a is not None and b is not None and a > b for a, b in pairs)
    return out


def side_by_side(name: str, data: dict[str, Any]) -> list[str]:
    """One dataset's block: R@10 overall, per half and per category for every run, then
    what each default run beats on both halves."""
    runs = data["runs"]
    groups = {(r["path"], r.get("store")) for r in runs.values() if r["path"] != "plain"}

    def label(key: str) -> str:
        run = runs[key]
        base = LABELS.get(run["mode"], run["mode"])
        if run["path"] == "plain" or len(groups) == 1:
            return base
        return f"{run['path']}@{run.get('store')} {base}"

    cats = sorted({c for r in runs.values() for c in r["overall"]["by_category"]})
    out = [
        f"### {name}: {data['conversations']} conversations, {data['questions']} questions "
        "(adversarial apart); evidence R@10",
        "",
        "| | overall | tune | held-out | " + " | ".join(cats) + " |",
        "|---|---|---|---|" + "---|" * len(cats),
    ]
    for key, run in runs.items():
        cells = [_r10(run, split) for split in ("overall", *HALVES)]
        cells += [_r10(run, "overall", c) for c in cats]
        out.append(f"| {label(key)} | " + " | ".join(_fmt(c) for c in cells) + " |")
    out.append("")
    for key, verdicts in data["beats"].items():
        if any(_r10(runs[key], h) is None for h in HALVES):
            out.append(
                f"{label(key)}: no tune or no held-out half to compare on (too few conversations)."
            )
            continue
        won = [label(k) for k, ok in verdicts.items() if ok]
        lost = [
            f"{label(k)} (tune {_fmt(_r10(runs[key], 'tune'))} vs {_fmt(_r10(runs[k], 'tune'))}, "
            f"held-out {_fmt(_r10(runs[key], 'heldout'))} vs {_fmt(_r10(runs[k], 'heldout'))})"
            for k, ok in verdicts.items()
            if not ok
        ]
        line = f"{label(key)} beats on both halves: {', '.join(won) or 'none'}"
        out.append(line + (f"; not: {', '.join(lost)}." if lost else " (every other row)."))
    return out


def detail(runs: dict[str, Any]) -> list[str]:
    """Every metric of every run: R@5/10/25, recall within token budgets, latency (the plain
    baselines' is in-process), and R@10 / within 1,000 tokens per category."""
    head = "| run | split | n | R@5 | R@10 | R@25 | ≤250 | ≤500 | ≤1000 | ≤2000 | p50 ms | p95 ms |"
    out = [head, "|" + "---|" * 12]
    for name, r in runs.items():
        for split in ("overall", *HALVES):
            s = r.get(split)
            if not s or "recall@10" not in s:
                continue
            cells = [s["recall@5"], s["recall@10"], s["recall@25"]]
            cells += [s[f"tokens@{b}"] for b in BUDGETS]
            out.append(
                f"| {name} | {split} | {s['questions']} | "
                + " | ".join(f"{c:.3f}" for c in cells)
                + f" | {r['p50_ms']} | {r['p95_ms']} |"
            )
    out += ["", "| run | category | n | R@10 | ≤1000 |", "|---|---|---|---|---|"]
    for name, r in runs.items():
        for cat, s in r["overall"]["by_category"].items():
            out.append(
                f"| {name} | {cat} | {s['n']} | {s['recall@10']:.3f} | {s['tokens@1000']:.3f} |"
            )
    return out


def markdown(results: dict[str, Any]) -> str:
    out: list[str] = []
    for name, data in results["datasets"].items():
        out += [*side_by_side(name, data), "", *detail(data["runs"]), ""]
    return "\n".join(out).rstrip()


def data_paths(items: list[str], names: list[str]) -> dict[str, str]:
    """``--data [NAME=]PATH`` values by dataset: a bare PATH when one dataset is run."""
    out: dict[str, str] = {}
    for item in items:
        name, eq, path = item.partition("=")
        if not eq:
            if len(names) != 1:
                raise SystemExit(
                    f"--data {item}: say which dataset it is for, e.g. --data realtalk={item}"
                )
            name, path = names[0], item
        if name not in names:
            raise SystemExit(f"--data {item}: {name!r} is not in --datasets {','.join(names)}")
        out[name] = path
    return out


def _tmpdir() -> tempfile.TemporaryDirectory[str]:
    return tempfile.TemporaryDirectory(prefix="memoryd-bench-pg-")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--datasets",
        "--dataset",
        dest="datasets",
        default="locomo",
        help="datasets, comma-separated, each through the same paths, modes and baselines "
        "(locomo, realtalk, agentchat, longmemeval)",
    )
    ap.add_argument(
        "--data",
        action="append",
        default=[],
        metavar="[NAME=]PATH",
        help="a dataset's file or folder (realtalk=REALTALK/data); repeatable; a bare PATH "
        "when one dataset is run",
    )
    ap.add_argument("--limit", type=int, default=None, help="first N conversations")
    ap.add_argument("--paths", default="api-messages,api-text,diary")
    ap.add_argument(
        "--modes",
        default="default",
        help="search modes, comma-separated: default (shipped fusion), vector, keyword",
    )
    ap.add_argument(
        "--baselines",
        default=",".join(PLAIN_MODES),
        help="plain baselines on the same conversations, no memoryd in them (bench/plain.py), "
        "comma-separated: plain-minilm, plain-hybrid; 'none' for none",
    )
    ap.add_argument(
        "--stores",
        default="sqlite",
        help="stores to run each path on, comma-separated: sqlite (the default), postgres "
        "(a throwaway PostgreSQL, a fresh database per path; results keyed PATH@postgres)",
    )
    add_set_option(ap)
    ap.add_argument("--out", default=None, help="the results JSON; the tables go beside it (.md)")
    args = ap.parse_args(argv)
    server_env = server_settings(args.set)
    names = args.datasets.split(",")
    data = data_paths(args.data, names)
    modes, paths, stores = args.modes.split(","), args.paths.split(","), args.stores.split(",")
    baselines = [] if args.baselines == "none" else args.baselines.split(",")
    for given, known, what in (
        (modes, tuple(MODES), "mode"),
        (paths, tuple(PATHS), "path"),
        (stores, ("sqlite", "postgres"), "store"),
        (baselines, PLAIN_MODES, "baseline"),
    ):
        if unknown := [g for g in given if g not in known]:
            raise SystemExit(f"unknown {what} {unknown[0]!r}; known: {', '.join(known)}")
    for module in sorted(Path(__file__).parent.glob("dataset_*.py")):
        importlib.import_module(module.stem)
    loaded = {n: load(n, path=data.get(n), limit=args.limit) for n in names}
    embedder = create_embedder(EmbedSettings())  # the default model: token counts, baselines
    count = embedder.count_tokens

    results: dict[str, Any] = {
        "meta": {
            "datasets": names,
            "limit": args.limit,
            "machine": machine_info(),
            "loadavg_start": loadavg(),
            "repo": str(REPO_ROOT),
            "server_settings": server_env,  # beyond the shipped defaults
        },
        "datasets": {},
    }
    with contextlib.ExitStack() as stack:
        pg_base = None
        if "postgres" in stores:
            from scale_pg import server  # a throwaway PostgreSQL 18 + pgvector

            pg_base = stack.enter_context(server(None, stack.enter_context(_tmpdir())))
        for dataset, convs in loaded.items():
            runs: dict[str, Any] = {}
            for store in stores:
                for name in paths:
                    for mode in modes:
                        key = name if mode == "default" else f"{name}[{mode}]"
                        env = dict(server_env)
                        if store == "postgres" and pg_base is not None:
                            from tests.pgserver import fresh_database

                            env["MEMORYD_STORE__URL"] = fresh_database(pg_base)
                            key += "@postgres"
                        runs[key] = {**run_path(name, convs, count, mode, env), "store": store}
            if baselines:
                runs.update(run_baselines(PlainIndex(embedder, convs), convs, count, baselines))
            results["datasets"][dataset] = {
                "conversations": len(convs),
                "questions": sum(
                    1 for c in convs for q in c.questions if q.category != ADVERSARIAL
                ),
                "runs": runs,
                "beats": beats(runs),
            }
            if args.out:  # after each dataset: a long run keeps what it has measured
                write(results, Path(args.out))
    results["meta"]["loadavg_end"] = loadavg()
    print(markdown(results))
    if args.out:
        write(results, Path(args.out))


def write(results: dict[str, Any], out: Path) -> None:
    """The JSON at ``out`` and its tables beside it (``.md``)."""
    out.write_text(json.dumps(results, indent=2) + "\n")
    out.with_suffix(".md").write_text(markdown(results) + "\n")


if __name__ == "__main__":
    main()
