"""LoCoMo retrieval benchmark: is the evidence turn in the top k?

Every dialogue turn of the LoCoMo conversations becomes one memory (scoped by
``user_id=conv{idx}``); every question is searched in each mode of ``--modes``
(bm25, vector, the previous 0.7/0.3 hybrid, today's default hybrid, and
the default over contextually indexed turns; see ``MODES``), and the ranked turns are scored
against the question's evidence turns. No LLM is involved: this measures
retrieval only.

    python bench/locomo.py --out bench/results/locomo.json

The data (CC BY-NC 4.0) is read in place from ``../shared/data/locomo10.json``
next to the repository; it is never copied into the repository.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from _common import (
    REPO_ROOT,
    CpuWatch,
    embed_settings,
    exit_on_sigterm,
    loadavg,
    machine_info,
    percentile_ms,
)
from memoryd.core import Memory
from memoryd.models import MemoryRecord, Origin
from memoryd.settings import Settings

DEFAULT_DATA = REPO_ROOT.parent / "shared/data/locomo10.json"

# Numeric category -> name, as in snap-research/locomo task_eval (evaluation.py
# scores 1 as multi-hop and 5 as adversarial; gpt_utils.py adds the date hint
# for 2). The paper lists the types in another order (single-hop first).
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
ADVERSARIAL = 5
SPLITS = {"tune": range(0, 5), "heldout": range(5, 10)}
# mode -> (search mode, ingest, default search settings).  "hybrid-prev" is the
# foundation's hybrid (0.7/0.3, no entity boost); "contextual" is the default since
# issue 11: turns indexed with the previous turn (memoryd.conversation), searched with
# the default settings (0.6/0.4 and the entity boost).
MODES = {
    "bm25": ("keyword", "plain", True),
    "vector": ("vector", "plain", True),
    "hybrid-prev": ("hybrid", "plain", False),
    "hybrid": ("hybrid", "plain", True),
    "contextual": ("hybrid", "contextual", True),
}
PREVIOUS = {"vector_weight": 0.7, "keyword_weight": 0.3, "entity_boost": 0.0}
TOP_K = 25
BATCH = 256
WARMUP = 10

_EVIDENCE_TOKEN = re.compile(r"^D:?(\d+):(\d+)$")


# -- data --------------------------------------------------------------------------------------
@dataclass
class Question:
    conv: int
    qid: int
    text: str
    category: int
    raw_evidence: list[str]
    evidence: list[str] = field(default_factory=list)  # normalised and resolved: "D1:3"
    unresolved: list[str] = field(default_factory=list)


def parse_session_date(value: str) -> datetime | None:
    """'1:56 pm on 8 May, 2023' -> an aware datetime (UTC; the data has no zone)."""
    text = " ".join(value.replace(",", ", ").split())
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%I:%M %p on %B %d, %Y"):
        try:
            return datetime.strptime(text, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    return None


def normalise_evidence(raw: list[str]) -> tuple[list[str], list[str]]:
    """Split and normalise evidence strings: 'D8:6; D9:17', 'D:11:26', 'D30:05'.

    Returns (normalised ids, tokens that are not dialogue ids at all).
    """
    ids: list[str] = []
    bad: list[str] = []
    for item in raw:
        for token in re.split(r"[;,\s]+", str(item).strip()):
            if not token:
                continue
            m = _EVIDENCE_TOKEN.match(token)
            if m:
                ids.append(f"D{int(m[1])}:{int(m[2])}")
            else:
                bad.append(token)
    return list(dict.fromkeys(ids)), bad


def session_numbers(conversation: dict[str, Any]) -> list[int]:
    return sorted(
        int(k.split("_")[1])
        for k, v in conversation.items()
        if re.fullmatch(r"session_\d+", k) and isinstance(v, list)
    )


def build_records(conv: int, sample: dict[str, Any]) -> tuple[list[MemoryRecord], dict[str, int]]:
    """One record per turn, and each normalised dia_id's session number."""
    c = sample["conversation"]
    records: list[MemoryRecord] = []
    sessions: dict[str, int] = {}
    for n in session_numbers(c):
        raw_date = c.get(f"session_{n}_date_time", "")
        when = parse_session_date(raw_date) if raw_date else None
        date_text = f"{when.day} {when:%B %Y}" if when else raw_date
        for turn in c[f"session_{n}"]:
            ids, _ = normalise_evidence([turn["dia_id"]])
            dia_id = ids[0] if ids else turn["dia_id"]
            text = (turn.get("text") or "").strip()
            caption = (turn.get("blip_caption") or "").strip()
            if caption:
                text = f"{text} [image: {caption}]".strip()
            if not text:
                continue
            speaker = turn.get("speaker", "")
            records.append(
                MemoryRecord(
                    id=f"c{conv}:{dia_id}",
                    text=text,
                    user_id=f"conv{conv}",
                    metadata={"dia_id": dia_id, "session": n, "speaker": speaker},
                    context=f"{speaker} on {date_text}" if date_text else speaker,
                    event_at=when,
                    origin=Origin.API,
                )
            )
            sessions[dia_id] = n
    return records, sessions


def contextual_ingest(ctx: Memory, records: list[MemoryRecord]) -> dict[str, str]:
    """The same turns sent session by session as a conversation through the public
    ``Memory.add(messages=..., infer=False)`` path; returns stored id -> dia_id."""
    by_session: dict[tuple[str, int], list[MemoryRecord]] = defaultdict(list)
    for r in records:
        by_session[(r.user_id, int(r.metadata["session"]))].append(r)
    dia_of: dict[str, str] = {}
    for (user, session), rows in by_session.items():
        messages = [
            {
                "role": "user",
                "name": str(r.metadata["speaker"]),
                "content": r.text,
                "timestamp": r.event_at.isoformat() if r.event_at else None,
            }
            for r in rows
        ]
        events = ctx.add(
            messages=messages, user_id=user, infer=False, metadata={"session": f"D{session}"}
        )
        for e in events:
            if e.id is not None and e.message is not None:
                dia_of.setdefault(e.id, str(rows[e.message].metadata["dia_id"]))
    return dia_of


def load_questions(conv: int, sample: dict[str, Any], turns: dict[str, int]) -> list[Question]:
    out = []
    for qid, qa in enumerate(sample["qa"]):
        q = Question(
            conv, qid, str(qa["question"]), int(qa["category"]), list(qa.get("evidence") or [])
        )
        ids, bad = normalise_evidence(q.raw_evidence)
        q.evidence = [i for i in ids if i in turns]
        q.unresolved = bad + [i for i in ids if i not in turns]
        out.append(q)
    return out


def parse_convs(spec: str) -> list[int]:
    convs: set[int] = set()
    for part in spec.split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            lo, hi = part.split("-", 1)
            convs.update(range(int(lo), int(hi) + 1))
        else:
            convs.add(int(part))
    return sorted(convs)


# -- metrics -----------------------------------------------------------------------------------
def score(q: Question, ranked: list[str], sessions: dict[str, int]) -> dict[str, float]:
    """Metrics of one ranked list of dia_ids against the question's evidence."""
    gold = set(q.evidence)
    gold_sessions = {sessions[e] for e in gold}
    row: dict[str, float] = {}
    for k in (5, 10, 25):
        row[f"evidence_recall@{k}"] = len(gold & set(ranked[:k])) / len(gold)
    row["session_recall_any@5"] = float(any(sessions.get(d) in gold_sessions for d in ranked[:5]))
    dcg = sum(1.0 / math.log2(i + 2) for i, d in enumerate(ranked[:10]) if d in gold)
    idcg = sum(1.0 / math.log2(i + 2) for i in range(min(len(gold), 10)))
    row["ndcg@10"] = dcg / idcg
    first = next((i for i, d in enumerate(ranked) if d in gold), None)
    row["mrr"] = 0.0 if first is None else 1.0 / (first + 1)
    return row


METRICS = (
    "evidence_recall@5",
    "evidence_recall@10",
    "evidence_recall@25",
    "session_recall_any@5",
    "ndcg@10",
    "mrr",
)


def mean_metrics(rows: list[dict[str, float]]) -> dict[str, Any]:
    out: dict[str, Any] = {"n": len(rows)}
    for m in METRICS:
        out[m] = round(sum(r[m] for r in rows) / len(rows), 4) if rows else None
    return out


def summarise(scored: list[tuple[Question, dict[str, float]]]) -> dict[str, Any]:
    main = [r for q, r in scored if q.category != ADVERSARIAL]
    out = mean_metrics(main)
    out["by_category"] = {
        str(cat): {
            "name": CATEGORIES[cat],
            **mean_metrics([r for q, r in scored if q.category == cat]),
        }
        for cat in sorted(CATEGORIES)
        if cat != ADVERSARIAL
    }
    out["adversarial"] = mean_metrics([r for q, r in scored if q.category == ADVERSARIAL])
    return out


# -- run ---------------------------------------------------------------------------------------
def run(args: argparse.Namespace) -> dict[str, Any]:
    data_path = Path(args.data).expanduser().resolve()
    if not data_path.is_file():
        sys.exit(f"LoCoMo data not found at {data_path}; pass --data PATH")
    raw_bytes = data_path.read_bytes()
    samples = json.loads(raw_bytes)
    convs = [c for c in parse_convs(args.convs) if 0 <= c < len(samples)]
    if args.split != "all":
        convs = [c for c in convs if c in SPLITS[args.split]]
    if not convs:
        sys.exit("no conversations selected")
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    for m in modes:
        if m not in MODES:
            sys.exit(f"unknown mode {m!r}; use {', '.join(MODES)}")

    info = machine_info()
    with tempfile.TemporaryDirectory(prefix="memoryd-locomo-") as tmp:
        mem = Memory(Settings(home=Path(tmp) / "plain"))
        ctx = Memory(Settings(home=Path(tmp) / "contextual"), embedder=mem.embedder)
        try:
            return _run(args, mem, ctx, samples, convs, modes, info, data_path, raw_bytes)
        finally:
            mem.close()
            ctx.close()


def _run(
    args: argparse.Namespace,
    mem: Memory,
    ctx: Memory,
    samples: list[dict[str, Any]],
    convs: list[int],
    modes: list[str],
    info: dict[str, Any],
    data_path: Path,
    raw_bytes: bytes,
) -> dict[str, Any]:
    # Build everything first so parsing is not timed as ingest.
    all_records: list[MemoryRecord] = []
    sessions: dict[int, dict[str, int]] = {}
    questions: list[Question] = []
    undated = 0
    for conv in convs:
        records, turn_sessions = build_records(conv, samples[conv])
        undated += sum(1 for r in records if r.event_at is None)
        all_records.extend(records)
        sessions[conv] = turn_sessions
        questions.extend(load_questions(conv, samples[conv], turn_sessions))

    mem.embed_query("warm up the embedding model")
    ingest_watch = CpuWatch()
    started = time.perf_counter()
    for i in range(0, len(all_records), args.batch):
        mem.write_records(all_records[i : i + args.batch])
    ingest_s = time.perf_counter() - started
    cpu = {"ingest": ingest_watch.report()}
    print(
        f"ingested {len(all_records)} turns in {ingest_s:.1f}s "
        f"({len(all_records) / ingest_s:.1f} turns/s)",
        file=sys.stderr,
    )

    ctx_s = 0.0
    ctx_dia: dict[str, str] = {}
    if any(MODES[m][1] == "contextual" for m in modes):
        started = time.perf_counter()
        ctx_dia = contextual_ingest(ctx, all_records)
        ctx_s = time.perf_counter() - started
        print(f"contextual ingest: {len(all_records) / ctx_s:.1f} turns/s", file=sys.stderr)

    usable = [q for q in questions if q.evidence]
    excluded = [q for q in questions if not q.evidence]
    unresolved = [(q, tok) for q in questions for tok in q.unresolved]

    defaults = mem.settings.search.model_copy()

    def search(q: Question, mode: str) -> list[str]:
        search_mode, ingest, default = MODES[mode]
        target = ctx if ingest == "contextual" else mem
        target.settings.search = defaults.model_copy(update={} if default else PREVIOUS)
        hits = target.search(
            q.text,
            user_id=f"conv{q.conv}",
            top_k=args.top_k,
            mode=search_mode,
            time_decay=False,  # the turns are years old; recency says nothing here
            record_recall=False,
        )
        return [str(h.record.metadata.get("dia_id") or ctx_dia.get(h.id)) for h in hits]

    for q in usable[:WARMUP]:  # load the vector index, warm caches and the model
        for mode in modes:
            search(q, mode)
    latencies: dict[str, list[float]] = {m: [] for m in modes}
    per_mode: dict[str, list[tuple[Question, dict[str, float]]]] = {m: [] for m in modes}
    search_watch = CpuWatch()
    for n, q in enumerate(usable):
        # Round-robin over the modes (rotating the order) so load spikes hit all alike.
        for mode in modes[n % len(modes) :] + modes[: n % len(modes)]:
            _clear_query_cache(mem)  # every timed search pays for its query embedding
            _clear_query_cache(ctx)
            t0 = time.perf_counter()
            ranked = search(q, mode)
            latencies[mode].append(time.perf_counter() - t0)
            per_mode[mode].append((q, score(q, ranked, sessions[q.conv])))
    results: dict[str, Any] = {}
    for mode in modes:
        summary = summarise(per_mode[mode])
        times = latencies[mode]
        summary["p50_ms"] = percentile_ms(times, 50)
        summary["p95_ms"] = percentile_ms(times, 95)
        summary["mean_ms"] = round(1000 * sum(times) / len(times), 2)
        results[mode] = summary
        print(
            f"{mode}: R@10 {summary['evidence_recall@10']}, p50 {summary['p50_ms']} ms",
            file=sys.stderr,
        )
    cpu["search"] = search_watch.report()

    splits: dict[str, Any] = {}
    for name, members in (("overall", convs), *SPLITS.items()):
        chosen = set(convs) & set(members)
        if not chosen:
            continue
        splits[name] = {"convs": sorted(chosen)}
        for mode in modes:
            splits[name][mode] = summarise([(q, r) for q, r in per_mode[mode] if q.conv in chosen])

    def count_by_cat(qs: list[Question]) -> dict[str, int]:
        counts: dict[str, int] = defaultdict(int)
        for q in qs:
            counts[str(q.category)] += 1
        return dict(sorted(counts.items()))

    info["loadavg_end"] = loadavg()
    results["splits"] = splits
    results["meta"] = {
        **info,
        "data": data_path.name,
        "data_sha256": hashlib.sha256(raw_bytes).hexdigest(),
        "convs": convs,
        "split": args.split,
        "modes": modes,
        "top_k": args.top_k,
        "n_turns": len(all_records),
        "n_turns_without_date": undated,
        "n_questions": sum(1 for q in questions if q.category != ADVERSARIAL),
        "n_questions_scored": sum(1 for q in usable if q.category != ADVERSARIAL),
        "n_adversarial": sum(1 for q in questions if q.category == ADVERSARIAL),
        "n_adversarial_scored": sum(1 for q in usable if q.category == ADVERSARIAL),
        "questions_by_category": count_by_cat(questions),
        "unresolved_evidence_ids": len(unresolved),
        "unresolved_evidence": [
            {
                "conv": q.conv,
                "qa_index": q.qid,
                "category": q.category,
                "id": tok,
                "raw": q.raw_evidence,
            }
            for q, tok in unresolved
        ],
        "questions_without_resolvable_evidence": len(excluded),
        "questions_without_resolvable_evidence_by_category": count_by_cat(excluded),
        "cpu_contention": cpu,
        "ingest_seconds": round(ingest_s, 2),
        "ingest_turns_per_s": round(len(all_records) / ingest_s, 1),
        "contextual_ingest_turns_per_s": round(len(all_records) / ctx_s, 1) if ctx_s else None,
        "ingest_batch": args.batch,
        "embed_model": mem.embedder.name,
        "embed_dim": mem.embedder.dim,
        "search_settings": mem.settings.search.model_dump(mode="json"),
        "embed_settings": embed_settings(mem),
        "category_names": {str(k): v for k, v in CATEGORIES.items()},
    }
    return results


def _clear_query_cache(mem: Memory) -> None:
    cache = getattr(mem, "_query_cache", None)
    if isinstance(cache, dict):
        cache.clear()


# -- report ------------------------------------------------------------------------------------
def _fmt(x: Any) -> str:
    if x is None:
        return "-"
    return f"{x:.3f}" if isinstance(x, float) and x <= 1.0 else str(x)


def markdown(results: dict[str, Any]) -> str:
    modes = [m for m in results if m in MODES]
    meta = results["meta"]
    lines = [
        f"LoCoMo retrieval, convs {meta['convs'][0]}-{meta['convs'][-1]}: {meta['n_turns']} turns, "
        f"{meta['n_questions_scored']} questions (categories 1-4) scored, "
        f"ingest {meta['ingest_turns_per_s']} turns/s",
        "",
        "| mode | R@5 | R@10 | R@25 | sess-any@5 | NDCG@10 | MRR | p50 ms | p95 ms |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for m in modes:
        r = results[m]
        lines.append(
            f"| {m} | "
            + " | ".join(_fmt(r[k]) for k in METRICS)
            + f" | {r['p50_ms']} | {r['p95_ms']} |"
        )
    lines += [
        "",
        "Evidence recall@10 by category:",
        "",
        "| mode | " + " | ".join(f"{c} {CATEGORIES[c]}" for c in CATEGORIES) + " |",
        "|---|" + "---|" * len(CATEGORIES),
    ]
    for m in modes:
        r = results[m]
        cells = [
            _fmt(r["by_category"][str(c)]["evidence_recall@10"])
            for c in CATEGORIES
            if c != ADVERSARIAL
        ]
        cells.append(_fmt(r["adversarial"]["evidence_recall@10"]))
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    counts = (
        "| n | "
        + " | ".join(
            str(results[modes[0]]["by_category"][str(c)]["n"])
            for c in CATEGORIES
            if c != ADVERSARIAL
        )
        + f" | {results[modes[0]]['adversarial']['n']} |"
    )
    lines.append(counts)
    splits = results["splits"]
    lines += [
        "",
        "Evidence recall@10 / NDCG@10 by split:",
        "",
        "| mode | " + " | ".join(splits) + " |",
        "|---|" + "---|" * len(splits),
    ]
    for m in modes:
        lines.append(
            f"| {m} | "
            + " | ".join(
                f"{_fmt(splits[s][m]['evidence_recall@10'])} / {_fmt(splits[s][m]['ndcg@10'])}"
                for s in splits
            )
            + " |"
        )
    lines += [
        "",
        f"Unresolved evidence ids: {meta['unresolved_evidence_ids']}; questions "
        f"without resolvable evidence (excluded): "
        f"{meta['questions_without_resolvable_evidence']}",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="write the JSON results here")
    p.add_argument("--data", default=str(DEFAULT_DATA), help="path to locomo10.json")
    p.add_argument("--convs", default="0-9", help="conversation indexes, e.g. 0-9 or 0,3,5-7")
    p.add_argument("--modes", default=",".join(MODES), help=f"comma list of {', '.join(MODES)}")
    p.add_argument(
        "--split",
        choices=["tune", "heldout", "all"],
        default="all",
        help="tune = conversations 0-4, heldout = 5-9 (intersected with --convs)",
    )
    p.add_argument("--top-k", type=int, default=TOP_K)
    p.add_argument("--batch", type=int, default=BATCH, help="records per write_records call")
    args = p.parse_args(argv)
    exit_on_sigterm()
    if args.top_k < 25:
        p.error("--top-k must be at least 25 (recall@25 is reported)")
    results = run(args)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(markdown(results))


if __name__ == "__main__":
    main()
