"""Long messages: the HTTP messages path's tokens/s against the embedder's own, same windows.

An agent's assistant messages are long (code, tracebacks, tool output: 200-660
words in ``agentchat``), so ``POST /memory/add`` with ``messages`` splits each
into windows that fit the model (:func:`memoryd.conversation.pieces`) and
embeds them. Is that path bound by the model or by what surrounds it? One run
measures both on exactly the same windows, alternating so that both see the same
machine load:

* **messages path**: a real ``memoryd serve`` (temporary home, shipped defaults)
  receives each agentchat session as one request (``infer: false``, the session
  in ``metadata``), one after the other, as an agent would send them;
* **embedder alone**: a fresh Python process opens the same model with the same
  settings and embeds, per session, the windows the server embedded for it
  (``Embedder.embed`` with the session's texts: the same batches).

Tokens are the embedder's count (``count_tokens``) over the texts the model was
given ("Speaker: window"); the windows are computed with memoryd's own
:func:`~memoryd.conversation.pieces`, and the server's stored pieces are checked
to be exactly those windows. ``ratio`` is the messages path's tokens/s over the
embedder's (1.0: the path costs nothing beside the model). CPU seconds of the
server and of the embedder process are reported too: they vary less with the
load of other processes than wall time does.

    python bench/ingest_messages.py --rounds 2 --out bench/results/ingest-messages.json
    python bench/ingest_messages.py --conversations 2 --rounds 1   # a quick look
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from _common import CpuWatch, loadavg, machine_info, percentile_ms
from datasets import Conversation, load
from memoryd import conversation
from memoryd.embed import Embedder, create_embedder
from memoryd.settings import Settings
from paths import Server

Request = dict[str, Any]  # the body of one POST /memory/add


def requests_of(convs: list[Conversation]) -> list[Request]:
    """One request per session, as paths.py's api-messages path sends them."""
    return [
        {
            "user_id": conv.id,
            "messages": session.messages(),
            "infer": False,
            "metadata": {"session": session.id},
        }
        for conv in convs
        for session in conv.sessions
        if session.turns
    ]


def model_batches(requests: list[Request], embedder: Embedder) -> list[list[str]]:
    """Per request, the texts the server's model embeds for it, in order.

    memoryd's own :func:`conversation.pieces` gives each session's texts; a text
    already embedded (by an earlier request) is skipped, as the embedding cache
    skips it. Every session has its own ``metadata.session``, so none continues
    another (no previous turn)."""
    seen: set[str] = set()
    out: list[list[str]] = []
    for body in requests:
        turns = conversation.turns_from_messages(body["messages"], lambda text, _name: text)
        given: list[str] = []
        conversation.pieces(
            turns,
            embed=partial(_record, given, embedder.dim),
            count_tokens=embedder.count_tokens,
            max_tokens=embedder.max_tokens,
        )
        fresh = [t for t in dict.fromkeys(given) if t not in seen]
        seen.update(fresh)
        out.append(fresh)
    return out


def _record(given: list[str], dim: int, texts: Sequence[str]) -> np.ndarray:
    """An ``embed`` for :func:`conversation.pieces` that notes the texts it is given."""
    given.extend(texts)
    return np.zeros((len(texts), dim), dtype=np.float32)


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` and its threads so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _check_stored(server: Server, requests: list[Request], batches: list[list[str]]) -> None:
    """The server stored exactly the windows this benchmark counts (else the ratio
    would compare different work)."""
    stored: set[str] = set()
    for user in dict.fromkeys(body["user_id"] for body in requests):
        params = {"user_id": user, "limit": 10_000, "include_turns": True}
        hits = server.http.get("/memory/list", params=params)
        hits.raise_for_status()
        for m in hits.json()["results"]:
            stored.add(f"{m['metadata']['speaker']}: {m['memory']}")
    counted = {t for batch in batches for t in batch}
    if stored != counted:
        raise SystemExit(
            f"the server stored {len(stored)} pieces, the benchmark counts {len(counted)} "
            f"windows ({len(stored - counted)} stored only, {len(counted - stored)} counted "
            "only): model_batches no longer matches what the messages path embeds"
        )


class EmbedderProcess:
    """The embedder alone in a fresh process, opened as ``memoryd serve`` opens it
    (``--embed-alone``): told a batch's number on stdin, it embeds that batch in one
    call (``all``: every text in one call) and answers its wall and CPU seconds."""

    def __init__(self, batches_file: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--embed-alone", str(batches_file)],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self._read()  # "ready": the model is open and warm

    def embed(self, which: int | str) -> dict[str, float]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{which}\n")
        self.proc.stdin.flush()
        return dict(json.loads(self._read()))

    def _read(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"the embedder-alone process exited ({self.proc.wait()})")
        return line

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(30)


def embed_alone(batches_file: Path) -> None:
    """The child process of :class:`EmbedderProcess`."""
    batches = json.loads(batches_file.read_text())
    every = [t for batch in batches for t in batch]
    embedder = create_embedder(Settings().embed)
    embedder.embed(["warm up the model"])
    print("ready", flush=True)
    for line in sys.stdin:
        texts = every if line.strip() == "all" else batches[int(line)]
        cpu0, started = time.process_time(), time.perf_counter()
        embedder.embed(texts)
        took = {"seconds": time.perf_counter() - started, "cpu_seconds": time.process_time() - cpu0}
        print(json.dumps(took), flush=True)


def one_round(
    requests: list[Request],
    batches: list[list[str]],
    paths: dict[str, dict[str, str]],
    child_env: dict[str, str],
    batches_file: Path,
) -> dict[str, Any]:
    """Fresh servers (one per entry of ``paths``: extra environment) and a fresh
    embedder process; request by request, the embedder embeds that request's batch
    and each server answers it (in alternating order), so every side sees the same
    load at the same moment. Then the embedder embeds every text in one call."""
    sides = ["embedder", *paths]
    seconds = dict.fromkeys(sides, 0.0)
    cpu = dict.fromkeys(sides, 0.0)
    latencies: dict[str, list[float]] = {name: [] for name in paths}
    load0 = loadavg()
    with contextlib.ExitStack() as stack:
        servers: dict[str, Server] = {}
        for name, env in paths.items():
            home = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="memoryd-ingest-")))
            servers[name] = server = Server(home, env)
            stack.callback(server.close)
            server.post("/memory/add", {"text": "warm up the model", "user_id": "warm-up"})
        alone = EmbedderProcess(batches_file, child_env)
        stack.callback(alone.close)
        for i, body in enumerate(requests):
            for side in sides if i % 2 == 0 else sides[::-1]:
                if side == "embedder":
                    took = alone.embed(i)
                    seconds[side] += took["seconds"]
                    cpu[side] += took["cpu_seconds"]
                    continue
                server = servers[side]
                cpu0, started = _cpu_seconds(server.proc.pid), time.perf_counter()
                r = server.http.post("/memory/add", json=body)
                took_s = time.perf_counter() - started
                if r.status_code != 200:
                    raise SystemExit(f"/memory/add answered {r.status_code}: {r.text[:300]}")
                seconds[side] += took_s
                cpu[side] += _cpu_seconds(server.proc.pid) - cpu0
                latencies[side].append(took_s)
        bulk = alone.embed("all")
        for server in servers.values():
            _check_stored(server, requests, batches)
    row: dict[str, Any] = {"loadavg_before": load0, "loadavg_after": loadavg()}
    for side in sides:
        row[side] = {"seconds": round(seconds[side], 2), "cpu_seconds": round(cpu[side], 2)}
        if side in latencies:
            row[side]["request_p50_ms"] = percentile_ms(latencies[side], 50)
            row[side]["request_p95_ms"] = percentile_ms(latencies[side], 95)
    row["embedder_bulk"] = {k: round(v, 2) for k, v in bulk.items()}
    return row


def run(conversations: int, rounds: int, before_src: Path | None = None) -> dict[str, Any]:
    for module in sorted(Path(__file__).parent.glob("dataset_*.py")):
        importlib.import_module(module.stem)
    convs = load("agentchat")[:conversations]
    requests = requests_of(convs)
    embedder = create_embedder(Settings().embed)
    batches = model_batches(requests, embedder)
    tokens = sum(embedder.count_tokens(t) for batch in batches for t in batch)
    messages = sum(len(body["messages"]) for body in requests)
    paths: dict[str, dict[str, str]] = {"messages_path": {}}
    if before_src is not None:  # the same path served by another checkout's code
        paths["messages_path_before"] = {"PYTHONPATH": str(before_src.resolve())}
    rows: list[dict[str, Any]] = []
    watch = CpuWatch()
    with tempfile.TemporaryDirectory(prefix="memoryd-embed-alone-") as tmp:
        batches_file = Path(tmp) / "batches.json"
        batches_file.write_text(json.dumps(batches))
        child_env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")},
            "MEMORYD_HOME": tmp,
        }
        for n in range(rounds):
            row = {"round": n, **one_round(requests, batches, paths, child_env, batches_file)}
            for side in row.values():
                if isinstance(side, dict):
                    side["tokens_per_s"] = round(tokens / side["seconds"], 1)
                    side["tokens_per_cpu_s"] = round(tokens / side["cpu_seconds"], 1)
            alone, bulk = row["embedder"], row["embedder_bulk"]
            for name in paths:
                path = row[name]
                path["ratio"] = round(path["tokens_per_s"] / alone["tokens_per_s"], 3)
                path["cpu_ratio"] = round(path["tokens_per_cpu_s"] / alone["tokens_per_cpu_s"], 3)
                path["ratio_to_bulk"] = round(path["tokens_per_s"] / bulk["tokens_per_s"], 3)
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    keys = ("tokens_per_s", "ratio", "cpu_ratio", "ratio_to_bulk")
    median = {
        name: {key: round(statistics.median(r[name][key] for r in rows), 3) for key in keys}
        | {
            "messages_per_s": round(
                statistics.median(messages / r[name]["seconds"] for r in rows), 2
            )
        }
        for name in paths
    }
    return {
        "workload": {
            "dataset": "agentchat",
            "conversations": len(convs),
            "requests": len(requests),
            "messages": messages,
            "words": sum(len(m["content"].split()) for b in requests for m in b["messages"]),
            "windows": sum(len(b) for b in batches),
            "tokens": tokens,
            "max_tokens": embedder.max_tokens,
        },
        "rounds": rows,
        "median": median,
        "cpu": watch.report(),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--conversations", type=int, default=10, help="agentchat has 10")
    ap.add_argument("--rounds", type=int, default=2, help="embedder then messages path, N times")
    ap.add_argument(
        "--before-src",
        type=Path,
        help="also serve the messages path from this src/ (another checkout: before/after)",
    )
    ap.add_argument("--out", help="write the JSON results here")
    ap.add_argument("--embed-alone", type=Path, help=argparse.SUPPRESS)  # the child process
    args = ap.parse_args()
    if args.embed_alone:
        embed_alone(args.embed_alone)
        return
    info = machine_info()
    result = run(args.conversations, args.rounds, args.before_src)
    out = {"meta": {**info, "loadavg_end": loadavg()}, **result}
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    w = result["workload"]
    print(
        f"{w['requests']} requests, {w['messages']} messages, {w['windows']} windows, "
        f"{w['tokens']} tokens"
    )
    print("| round | side | tokens/s | ratio | CPU ratio | ratio to bulk |")
    print("|---|---|---|---|---|---|")
    for r in result["rounds"]:
        for name in ("embedder", "embedder_bulk", "messages_path", "messages_path_before"):
            if name in r:
                side = r[name]
                print(
                    f"| {r['round']} | {name} | {side['tokens_per_s']} | {side.get('ratio', '')} "
                    f"| {side.get('cpu_ratio', '')} | {side.get('ratio_to_bulk', '')} |"
                )


if __name__ == "__main__":
    main()
