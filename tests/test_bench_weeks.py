"""The weeks benchmark (bench/weeks.py): the scenario is seeded, the scorer reads what it
should, and one small week runs end to end through a real server. It checks the
instrument, not that memoryd meets issue 31's targets."""

from __future__ import annotations

import json
import re
import sys
from datetime import timedelta
from pathlib import Path

from memoryd.core import Memory
from memoryd.embed import Embedder
from memoryd.pipelines.promote import BLOCK_TITLE
from tests.fake_llm import FakeLLM

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import weeks
import weeks_scenario
import weeks_score


def test_a_seed_is_a_scenario() -> None:
    a, b = weeks_scenario.generate(1, "eng", 2), weeks_scenario.generate(1, "eng", 2)
    assert a.summary() == b.summary() and [e.user for e in a.exchanges] == [
        e.user for e in b.exchanges
    ]
    other = weeks_scenario.generate(2, "eng", 2)
    assert [f.values[0][1] for f in other.facts] != [f.values[0][1] for f in a.facts]
    data = weeks_scenario.generate(1, "data", 2)
    assert {f.key for f in data.facts}.isdisjoint({f.key for f in a.facts})
    home = weeks_scenario.generate(1, "home", 2)  # a personal assistant's life
    assert {f.key for f in home.facts}.isdisjoint({f.key for f in a.facts + data.facts})
    for sc in (a, other, data, home, weeks_scenario.generate(4, "home", 5)):
        tokens = [v for f in sc.facts for _, v in f.values]
        assert len(tokens) == len(set(tokens))  # no value token means two facts
        assert all(len(f.values) >= 2 for f in sc.facts)  # every fact changes
        assert any(t.done_at for t in sc.tasks) and any(not t.done_at for t in sc.tasks)
        assert {e.real for e in sc.episodes} == {True, False}


def test_a_lesson_is_matched_to_its_own_failure_only() -> None:
    failures = weeks_scenario.REAL_FAILURES + weeks_scenario.TRIVIAL_FAILURES
    for f in failures:
        told = " ".join(f[1:8])  # the ask, the call, the error, the explanation, the fix
        real = [g[0] for g in weeks_scenario.REAL_FAILURES if re.search(g[8], told, re.I)]
        assert real == ([f[0]] if f in weeks_scenario.REAL_FAILURES else []), f[0]


def test_the_scorer_reads_values_tasks_and_chitchat() -> None:
    sc = weeks_scenario.generate(3, "eng", 2)
    fact = sc.facts[0]
    (t0, old), (t1, new) = fact.values[0], fact.values[1]
    subject = fact.queries[0]
    assert weeks_score.value_said(f"{subject}: {old}", fact, t0) == "current"
    assert weeks_score.value_said(f"{subject}: {old}", fact, t1) == "stale"
    assert weeks_score.value_said(f"{subject} moved from {old} to {new}", fact, t1) == "current"
    assert weeks_score.value_said(f"the lunch order was {old}", fact, t1) is None  # not about it
    # two of the fact's values say what it is about, without a word of its questions
    assert weeks_score.value_said(f"Sold the {old}, we bought the {new}", fact, t1) == "current"

    task = next(t for t in sc.tasks if t.done_at)
    assert task.done_at is not None
    given = next(e.user for e in sc.exchanges if e.kind == "task" and e.ref == task.key)
    done = next(e.user for e in sc.exchanges if e.kind == "done" and e.ref == task.key)
    assert weeks_score.states_open(given, task) and not weeks_score.states_open(done, task)

    chit = weeks_score.ChitChat(sc.chitchat)
    assert chit("Noted, I'll keep that in mind.") and chit("It's pouring here today.")
    assert chit("| search | 9200 | Ravi |")
    assert not chit("| service | port |\n|---|---|\n| search | 9200 |")  # a table with its header
    assert not chit("Staging Postgres moved to port 6432. Got it, I'll keep that in mind.")

    md = f"# MEMORY\n\n- my own line\n\n{BLOCK_TITLE}\n<!-- x -->\n- {subject}: {old}\n"
    md += f"- {given}\n- Good morning! Ready when you are.\n- {subject}: {fact.current(sc.end)}\n"
    lines = weeks_score.promoted_lines(md, BLOCK_TITLE)
    assert len(lines) == 4
    verdicts = [weeks_score.judge_line(ln, sc, sc.end, chit) for ln in lines]
    assert [bool(v.stale) for v in verdicts] == [True, False, False, False]
    assert [bool(v.done_as_open) for v in verdicts] == [False, True, False, False]
    assert [v.junk for v in verdicts][::2] == [False, True] and not verdicts[3].junk


def test_a_week_end_to_end_and_a_planted_stale_line(tmp_path: Path, embedder: Embedder) -> None:
    sc = weeks_scenario.generate(5, "eng", 1)
    light = [
        e for i, e in enumerate(sc.exchanges) if e.kind not in ("work", "chitchat") or i % 4 == 0
    ]
    sc.exchanges = light  # a lighter week: every fact, task and lesson, a quarter of the rest
    settings = weeks.bench_settings(tmp_path / "home")
    clock = weeks.Clock(sc.start)
    with Memory(settings, embedder=embedder, clock=clock) as mem, weeks.Server(mem) as srv:
        run = weeks.Run(sc, mem, clock, srv)
        [week] = run.play(progress=False)
        assert week["week"] == 1 and run.tally["exchange"] == len(sc.exchanges)
        assert run.pipeline_runs["dream"] == 7 and run.pipeline_runs["digest"] >= 600
        assert week["leaks"]["total"] == 0
        cf = week["changed_facts"]
        assert cf["facts"] == sum(f.changed_by(clock.now) for f in sc.facts) > 0
        assert cf["judged"] == 2 * sum(len(f.queries) for f in sc.facts if f.changed_by(clock.now))
        assert week["lessons"]["real_episodes"] == 7

        # the scorer sees a stale line planted in the promoted block, and a junk one
        fact = next(f for f in sc.facts if f.changed_by(clock.now))
        path = settings.home / "workspaces" / fact.agent / "MEMORY.md"
        before = run.score_memory_md(clock.now)
        stale = f"- {fact.queries[0]}: {fact.values[0][1]}\n- Sounds good, talk tomorrow.\n"
        path.write_text(path.read_text() + f"\n{BLOCK_TITLE}\n{stale}")
        after = run.score_memory_md(clock.now)
        assert after["stale"] == before["stale"] + 1
        assert after["junk"] == before["junk"] + 1
        assert after["promoted"] >= before["promoted"] + 2

        # and a memory of the second user's, planted for the owner, is a leak
        mem.add("My project codename is Bluefin.", user_id="default", agent_id="dev", infer=False)
        assert run.score_leaks()["store"] == 1
        assert clock.now == sc.end and sc.end - sc.start == timedelta(days=7)
        row = weeks.row(week)
        assert set(row) == {k for k, _ in weeks.COLUMNS}
        probe = {"added": 0, "memories": 0, "events": {}}
        result = {"checkpoints": [week], "similar_probe": probe, "scenario": sc.summary()}
        met = weeks.targets({**result, "elapsed_s": 0})
        assert met["0 leaks"] is True and met["50 similar facts stay 50"] is None


def test_a_week_with_an_llm_configured(tmp_path: Path, embedder: Embedder) -> None:
    """The same scenario and pipelines with an LLM (the fake OpenAI-protocol server): every
    pipeline runs without an error, the LLM is asked, and the week is scored."""
    sc = weeks_scenario.generate(6, "data", 1)
    sc.exchanges = [
        e for i, e in enumerate(sc.exchanges) if e.kind not in ("work", "chitchat") or i % 8 == 0
    ]
    with FakeLLM() as fake:
        settings = weeks.bench_settings(tmp_path / "home", fake.url)
        clock = weeks.Clock(sc.start)
        with Memory(settings, embedder=embedder, clock=clock) as mem, weeks.Server(mem) as srv:
            run = weeks.Run(sc, mem, clock, srv)
            [week] = run.play(progress=False)
        assert run.pipeline_errors == []
        assert run.pipeline_runs["dream"] == 7 and run.pipeline_runs["digest"] >= 600
        asked = [json.dumps(r) for r in fake.requests]
        assert len(asked) > 10, "the pipelines never asked the LLM"
        assert week["leaks"]["total"] == 0
        assert week["long_term"]["facts"] > 0  # the LLM's facts reached long-term memory
        assert week["lessons"]["real_episodes"] == 7


def test_no_statement_of_one_fact_supersedes_another_facts() -> None:
    """Precision across facts, over every variant's templates: what a user says about one
    fact (its statement and its changes, with values drawn as the scenario draws them)
    never gives another fact a new value by the offline rules, except the pairs the words
    cannot tell apart, named here: the two format preferences (status updates / the data
    quality report, both "as numbered checklists now"). "Book TAP Air from now on" (an
    order) does not change "Book club meets at ..." (a book), which names no preference."""
    import itertools
    import random

    from memoryd.extract.claims import Verdict, compare

    said: dict[str, list[str]] = {}
    for variant, bank in (
        ("eng", weeks_scenario.ENG_FACTS),
        ("data", weeks_scenario.DATA_FACTS),
        ("home", weeks_scenario.HOME_FACTS),
    ):
        for n, (key, _agent, kind, says, changes, _mentions, _queries) in enumerate(bank):
            v = weeks_scenario._values(random.Random(n), kind, 2, set())
            texts = [u.format(v=v[0]) for u, _ in says]
            texts += [u.format(v=v[1], old=v[0]) for u, _ in changes]
            said[f"{variant}:{key}"] = texts
    allowed = {frozenset({"eng:answer_format", "data:report_format"})}
    wrong = [
        (a, b, new, old)
        for (a, news), (b, olds) in itertools.permutations(said.items(), 2)
        if frozenset({a, b}) not in allowed
        for new in news
        for old in olds
        if compare(new, old)[0] == Verdict.SUPERSEDES
    ]
    assert len(said) >= 30
    assert wrong == []
