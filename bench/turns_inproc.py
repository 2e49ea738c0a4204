"""Turn-ranking rules on every dataset at once, in-process, for choosing settings.

Each dataset's conversations go once through ``Memory.add(messages=..., infer=False)``
(one call per session, as ``paths.py``'s api-messages path sends them over HTTP), then
every question is searched under each ``--variant`` (search settings over the shipped
defaults, ``name=key:value,key:value``; ``default``, ``vector`` and ``keyword`` are
built in) and by the plain baselines (bench/plain.py). Reports evidence R@10 per split
(tune: the first half of the conversations) and per category; the tune halves choose,
the held-out halves report. Over HTTP, ``paths.py`` gives the same figures.

    python bench/turns_inproc.py --datasets locomo,agentchat --out bench/results/turns.json
    python bench/turns_inproc.py --datasets agentchat --variant nopen=short_turn_penalty:0
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from _common import REPO_ROOT, machine_info
from datasets import Conversation, load
from memoryd.core import Memory
from memoryd.settings import Settings
from plain import MODES as PLAIN_MODES
from plain import PlainIndex

BUILT_IN: dict[str, dict[str, Any]] = {
    "default": {},
    "vector": {"keyword_weight": 0.0, "vector_weight": 1.0},
    "keyword": {"keyword_weight": 1.0, "vector_weight": 0.0},
}


def parse_variant(spec: str) -> tuple[str, dict[str, Any]]:
    if spec in BUILT_IN:
        return spec, BUILT_IN[spec]
    name, _, body = spec.partition("=")
    update: dict[str, Any] = {}
    for item in filter(None, body.split(",")):
        key, _, value = item.partition(":")
        update[key] = json.loads(value)
    return name, update


def ingest(mem: Memory, convs: list[Conversation]) -> tuple[dict[str, str], float]:
    turn_of: dict[str, str] = {}
    started = time.perf_counter()
    for conv in convs:
        for session in conv.sessions:
            if not session.turns:
                continue
            messages = session.messages()
            events = mem.add(
                messages=messages,
                user_id=conv.id,
                infer=False,
                metadata={"session": session.id},
            )
            for e in events:
                if e.id is not None and e.message is not None:
                    turn_of.setdefault(e.id, session.turns[e.message].id)
    return turn_of, time.perf_counter() - started


def recall(wanted: list[str], ranked: list[str], k: int = 10) -> float:
    return len(set(wanted) & set(ranked[:k])) / len(set(wanted))


def run_dataset(
    name: str,
    convs: list[Conversation],
    variants: list[tuple[str, dict[str, Any]]],
    keep: Path | None = None,
    plain_modes: tuple[str, ...] = PLAIN_MODES,
) -> dict[str, Any]:
    half = (len(convs) + 1) // 2
    split_of = {c.id: ("tune" if n < half else "heldout") for n, c in enumerate(convs)}
    rows: dict[str, list[tuple[str, str, float]]] = defaultdict(list)  # mode -> (split, cat, r)
    with tempfile.TemporaryDirectory(prefix="memoryd-turns-") as tmp:
        home = keep / name if keep else Path(tmp)
        stored = home / "bench-turns.json"  # a kept store: ranking changes need no ingest
        mem = Memory(Settings(home=home))
        try:
            if stored.is_file():
                turn_of, seconds = json.loads(stored.read_text()), 0.0
            else:
                turn_of, seconds = ingest(mem, convs)
                if keep:
                    stored.write_text(json.dumps(turn_of))
            n_turns = sum(len(c.turns()) for c in convs)
            print(f"{name}: {n_turns} messages in {seconds:.0f} s", file=sys.stderr)
            defaults = mem.settings.search.model_copy()
            for variant, update in variants:
                mem.settings.search = defaults.model_copy(update=update)
                for conv in convs:
                    for q in conv.questions:
                        hits = mem.search(
                            q.text,
                            user_id=conv.id,
                            top_k=25,
                            time_decay=False,
                            record_recall=False,
                        )
                        ranked = list(dict.fromkeys(turn_of.get(h.id, "") for h in hits))
                        rows[variant].append(
                            (split_of[conv.id], q.category, recall(q.evidence, ranked))
                        )
            mem.settings.search = defaults
            plain = PlainIndex(mem.embedder, convs) if plain_modes else None
            for mode in plain_modes if plain else ():
                for conv in convs:
                    for q in conv.questions:
                        ranked = plain.search(conv.id, q.text, mode)
                        rows[mode].append(
                            (split_of[conv.id], q.category, recall(q.evidence, ranked))
                        )
        finally:
            mem.close()
    out: dict[str, Any] = {"messages": n_turns, "ingest_s": round(seconds, 1), "modes": {}}
    for mode, scored in rows.items():
        main = [r for r in scored if r[1] != "adversarial"]

        def mean(xs: list[float]) -> float:
            return round(sum(xs) / len(xs), 4) if xs else float("nan")

        out["modes"][mode] = {
            "overall": mean([r for _, _, r in main]),
            "tune": mean([r for s, _, r in main if s == "tune"]),
            "heldout": mean([r for s, _, r in main if s == "heldout"]),
            "by_category": {
                c: mean([r for _, cat, r in scored if cat == c])
                for c in sorted({cat for _, cat, _ in scored})
            },
        }
    return out


def markdown(results: dict[str, Any]) -> str:
    lines: list[str] = []
    for name, r in results["datasets"].items():
        cats = list(next(iter(r["modes"].values()))["by_category"])
        lines += [
            f"### {name} ({r['messages']} messages, ingest {r['ingest_s']} s): R@10",
            "",
            "| mode | overall | tune | held-out | " + " | ".join(cats) + " |",
            "|---|---|---|---|" + "---|" * len(cats),
        ]
        for mode, m in r["modes"].items():
            cells = [m["overall"], m["tune"], m["heldout"], *(m["by_category"][c] for c in cats)]
            lines.append(f"| {mode} | " + " | ".join(f"{c:.3f}" for c in cells) + " |")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", default="locomo,agentchat")
    ap.add_argument("--realtalk", default=None, help="REALTALK's data/ folder (a clone)")
    ap.add_argument(
        "--variant",
        action="append",
        default=[],
        help="name=setting:value,... over the defaults (repeatable); "
        "default, vector and keyword are always measured",
    )
    ap.add_argument(
        "--built-in",
        default="default,vector,keyword",
        help="which of default, vector, keyword to measure (vector and keyword skip the "
        "turn re-ranking, so a change to it moves only default)",
    )
    ap.add_argument(
        "--agentchat-seed",
        type=int,
        default=None,
        help="draw agentchat's conversations from this seed instead of the shipped one "
        "(35), to check that a rule tuned on one draw holds on another",
    )
    ap.add_argument("--no-plain", action="store_true", help="skip the plain baselines")
    ap.add_argument(
        "--keep",
        default=None,
        help="keep each dataset's store under KEEP/NAME and reuse it on the next run "
        "(for ranking changes: a change to ingest needs a fresh KEEP)",
    )
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    for module in sorted(Path(__file__).parent.glob("dataset_*.py")):
        importlib.import_module(module.stem)
    built_in = [b for b in args.built_in.split(",") if b]
    variants = [parse_variant(v) for v in (*built_in, *args.variant)]
    results: dict[str, Any] = {
        "meta": {
            "machine": machine_info(),
            "repo": str(REPO_ROOT),
            "variants": dict(variants),
            "agentchat_seed": args.agentchat_seed,
        },
        "datasets": {},
    }
    for name in args.datasets.split(","):
        options: dict[str, Any] = {"path": args.realtalk if name == "realtalk" else None}
        if name == "agentchat" and args.agentchat_seed is not None:
            options["seed"] = args.agentchat_seed
        convs = load(name, **options)
        keep = Path(args.keep) if args.keep else None
        plain_modes = () if args.no_plain else PLAIN_MODES
        results["datasets"][name] = run_dataset(name, convs, variants, keep, plain_modes)
    table = markdown(results)
    print(table)
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
