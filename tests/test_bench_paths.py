"""bench/paths.py with several datasets at once: each through the same HTTP messages path
and modes (a real ``memoryd serve`` per mode), the plain baselines on the same
conversations, one JSON and one table block per dataset whose "beats" line is computed
from the numbers. The datasets are tiny files in LoCoMo's and REALTALK's own formats,
read by their real loaders, so the run takes seconds. It checks the instrument, not
that memoryd wins."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import paths

FILLER = [
    "The weather turned cold again this morning.",
    "I finally finished that long novel about the sea.",
    "Work has been busy with quarterly reports.",
    "We tried a new bakery downtown last weekend.",
    "My sister is visiting next month with her kids.",
    "The train was late twice this week.",
    "I have been learning to play the guitar slowly.",
    "Our neighbours painted their fence bright blue.",
    "The gym was crowded so I went for a run instead.",
    "I watched a documentary about volcanoes yesterday.",
    "Cooking dinner at home saves a lot of money.",
    "The garden needs watering every other day now.",
]
#: per conversation: (the fact said once, its question, category)
FACTS = [
    [
        ("My turtle is called Zorbleflax and he loves lettuce.", "What is the turtle called?", 4),
        ("I started pottery classes at the Clayhouse studio.", "Where are the pottery classes?", 4),
        ("We moved the band rehearsal to Thursday evenings.", "When is band rehearsal?", 2),
    ],
    [
        ("My new job is at Quillmore Labs as a chemist.", "Where does she work now?", 4),
        ("I adopted a parrot named Pistachio last spring.", "What is the parrot's name?", 4),
        ("The marathon in Lisbon is on the tenth of October.", "When is the marathon?", 2),
    ],
]


def _sessions(conv: int) -> list[list[tuple[str, str]]]:
    """Two sessions of (speaker, text): filler with the conversation's facts among it."""
    lines = [(("Ana", "Ben")[i % 2], f"{FILLER[(i + conv) % len(FILLER)]}") for i in range(16)]
    for n, (fact, _, _) in enumerate(FACTS[conv]):
        lines[3 + 5 * n] = ("Ana", fact)
    return [lines[:8], lines[8:]]


def _chat(conv: int, text: str, date: str) -> tuple[dict[str, Any], dict[str, str]]:
    """One conversation's sessions as LoCoMo and REALTALK write them (``text``: the key of a
    message's words, ``date``: a session date with ``{s}`` for its number), and each fact's
    message id."""
    chat: dict[str, Any] = {"speaker_a": "Ana", "speaker_b": "Ben"}
    ids: dict[str, str] = {}
    for s, lines in enumerate(_sessions(conv), start=1):
        chat[f"session_{s}_date_time"] = date.format(s=s)
        chat[f"session_{s}"] = [
            {"speaker": who, "dia_id": f"D{s}:{t}", text: words}
            for t, (who, words) in enumerate(lines, start=1)
        ]
        ids |= {words: f"D{s}:{t}" for t, (_, words) in enumerate(lines, start=1)}
    return chat, ids


def _locomo(path: Path) -> None:
    samples = []
    for conv in range(2):
        chat, ids = _chat(conv, "text", "1:56 pm on {s} May, 2023")
        qa = [
            {"question": q, "answer": "x", "evidence": [ids[fact]], "category": cat}
            for fact, q, cat in FACTS[conv]
        ]
        samples.append({"conversation": chat, "qa": qa})
    path.write_text(json.dumps(samples))


def _realtalk(folder: Path) -> None:
    folder.mkdir()
    for conv in range(2):
        chat, ids = _chat(conv, "clean_text", "0{s}.05.2023, 13:56:00")
        chat["qa"] = [  # REALTALK's categories: 1 multi-hop, 2 temporal
            {"question": q, "evidence": [ids[fact]], "category": 1 if cat == 4 else 2}
            for fact, q, cat in FACTS[conv]
        ]
        (folder / f"Chat_{conv + 1}_Ana_Ben.json").write_text(json.dumps(chat))


def _row(table: str, label: str) -> list[str]:
    line = next(ln for ln in table.splitlines() if ln.startswith(f"| {label} |"))
    return [c.strip() for c in line.strip("|").split("|")][1:]


def test_several_datasets_side_by_side_with_the_plain_baselines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _locomo(tmp_path / "locomo.json")
    _realtalk(tmp_path / "realtalk")
    out = tmp_path / "paths.json"
    paths.main(
        [
            "--datasets=locomo,realtalk",
            f"--data=locomo={tmp_path / 'locomo.json'}",
            f"--data=realtalk={tmp_path / 'realtalk'}",
            "--paths=api-messages",
            "--modes=default,vector,keyword",
            f"--out={out}",
        ]
    )
    results = json.loads(out.read_text())
    table = out.with_suffix(".md").read_text()
    assert table.strip() == capsys.readouterr().out.strip()
    assert list(results["datasets"]) == ["locomo", "realtalk"]
    for name, data in results["datasets"].items():
        runs = data["runs"]
        assert list(runs) == [
            "api-messages",
            "api-messages[vector]",
            "api-messages[keyword]",
            "plain-minilm",
            "plain-hybrid",
        ]
        assert data["conversations"] == 2 and data["questions"] == 6
        for run in runs.values():  # the same questions, split the same way, for every run
            assert run["tune"]["questions"] == run["heldout"]["questions"] == 3
            cats = run["overall"]["by_category"]
            assert sum(c["n"] for c in cats.values()) == 6 and len(cats) == 2
        # every evidence message is among the 16 a plain index ranks, so R@25 is 1 there
        assert runs["plain-minilm"]["overall"]["recall@25"] == 1.0

        block = table.split(f"### {name}: 2 conversations, 6 questions")[1].split("### ")[0]
        labels = ["default", "vector only", "keyword only", "plain MiniLM", "plain hybrid 0.7/0.3"]
        for label, run in zip(labels, runs.values(), strict=True):
            cells = _row(block, label)
            want = [run[s]["recall@10"] for s in ("overall", "tune", "heldout")]
            want += [c["recall@10"] for _, c in sorted(run["overall"]["by_category"].items())]
            assert cells == [f"{v:.3f}" for v in want], label

        default = runs["api-messages"]
        expected = {
            key: all(default[h]["recall@10"] > r[h]["recall@10"] for h in ("tune", "heldout"))
            for key, r in runs.items()
            if key != "api-messages"
        }
        assert data["beats"] == {"api-messages": expected}
        line = next(ln for ln in block.splitlines() if ln.startswith("default beats"))
        won = re.match(r"default beats on both halves: (.*?)(;| \(every)", line)
        assert won is not None
        named = [labels[1 + list(expected).index(k)] for k, ok in expected.items() if ok]
        assert won[1] == (", ".join(named) or "none")


def run(mode: str, tune: float | None, heldout: float | None, **extra: str) -> dict[str, Any]:
    split = {
        name: {"recall@10": value, "by_category": {}}
        for name, value in (("tune", tune), ("heldout", heldout))
        if value is not None
    }
    overall = {"recall@10": 0.5, "by_category": {}}
    path = "plain" if mode.startswith("plain") else "api-messages"
    return {"path": path, "mode": mode, "store": "sqlite", "overall": overall, **split, **extra}


def test_the_default_beats_a_row_only_when_above_it_on_both_halves() -> None:
    runs = {
        "api-messages": run("default", 0.8, 0.7),
        "api-messages[vector]": run("vector", 0.7, 0.6),
        "api-messages[keyword]": run("keyword", 0.9, 0.6),  # above on tune only
        "api-messages[vector]@postgres": run("vector", 0.1, 0.1, store="postgres"),  # not its own
        "plain-minilm": run("plain-minilm", 0.8, 0.6),  # a tie is no win
        "plain-hybrid": run("plain-hybrid", 0.5, None),  # no held-out half
    }
    runs["api-messages@postgres"] = run("default", 0.2, 0.2, store="postgres")
    verdicts = paths.beats(runs)
    assert verdicts["api-messages"] == {
        "api-messages[vector]": True,
        "api-messages[keyword]": False,
        "plain-minilm": False,
        "plain-hybrid": False,
    }
    assert verdicts["api-messages@postgres"] == {
        "api-messages[vector]@postgres": True,
        "plain-minilm": False,
        "plain-hybrid": False,
    }
    data = {"conversations": 2, "questions": 4, "runs": runs, "beats": verdicts}
    lines = paths.side_by_side("x", data)
    assert (
        "api-messages@sqlite default beats on both halves: api-messages@sqlite vector only; "
        "not: api-messages@sqlite keyword only (tune 0.800 vs 0.900, held-out 0.700 vs 0.600), "
        "plain MiniLM (tune 0.800 vs 0.800, held-out 0.700 vs 0.600), "
        "plain hybrid 0.7/0.3 (tune 0.800 vs 0.500, held-out 0.700 vs -)." in lines
    )


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--datasets", "locomo,realtalk", "--data", "/x"], "--data realtalk=/x"),
        (["--datasets", "locomo", "--data", "agentchat=/x"], "'agentchat' is not in --datasets"),
        (["--baselines", "plain-bm25"], "unknown baseline 'plain-bm25'; known: plain-minilm"),
        (["--modes", "default,fast"], "unknown mode 'fast'"),
    ],
)
def test_bad_arguments_say_what_to_pass(argv: list[str], says: str) -> None:
    with pytest.raises(SystemExit, match=re.escape(says)):
        paths.main(argv)
