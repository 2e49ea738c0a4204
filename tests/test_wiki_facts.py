"""The wiki on the fact store's terms (issue 31, item 7): entities that are not
sentence-case accidents, spellings of one entity on one page, contradictions between
current claims on any pages by the store's own offline test (same subject and
attribute, another value), and claims made stale by a fact's supersession. Real
SQLite, the real model, real files."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from memoryd import wiki
from memoryd.core import Memory
from memoryd.embed import Embedder
from memoryd.models import State
from tests.pipelines_kit import FixedClock
from tests.wiki_kit import claims, make_settings, pages, remember, ws_of


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock("2026-03-10T09:30:00+00:00")


@pytest.fixture
def mem(tmp_path: Path, embedder: Embedder, clock: FixedClock) -> Iterator[Memory]:
    m = Memory(make_settings(tmp_path), embedder=embedder, clock=clock)
    yield m
    m.close()


def add_to_memory_md(m: Memory, text: str) -> None:
    path = ws_of(m).memory_file
    path.write_text(path.read_text() + text)


def pages_of(m: Memory, text: str) -> set[str]:
    return {title for title, p in pages(m).items() for c in p["claims"] if c["text"] == text}


def test_days_languages_and_sentence_openers_get_no_page_and_orion_gets_one(
    mem: Memory,
) -> None:
    orion = [
        "Orion deploys every Friday at noon",
        "Orion keeps its build cache for 14 days",
        "The release train of Orion leaves on Friday",  # Orion once mid-sentence
    ]
    for text in [
        *orion,
        "Ana Ruiz speaks English with the team",
        "Bo Chen speaks English at home",
        "Backups are kept for 30 days",
        "Backups are encrypted with age",
    ]:
        remember(mem, text)
    wiki.compile_wiki(mem, ws_of(mem))
    got = pages(mem)
    assert not {"Friday", "English", "Backups"} & set(got)
    assert got["Orion"]["kind"] == "entity"
    assert {c["text"] for c in got["Orion"]["claims"]} == set(orion)


def test_a_name_that_opens_every_fact_is_confirmed_by_the_diary(mem: Memory) -> None:
    diary = ws_of(mem).root / "memory" / "2026-03-08.md"
    diary.write_text("# 2026-03-08\n\n## 16:00\n- **user**: we shipped Vega to staging.\n")
    for text in ("Vega renders the dashboards", "Vega needs 4 GB of memory"):
        remember(mem, text)
    wiki.compile_wiki(mem, ws_of(mem))
    assert pages_of(mem, "Vega renders the dashboards") == {"Vega"}
    diary.unlink()  # nothing else names it mid-sentence: sentence case, a topic page
    wiki.compile_wiki(mem, ws_of(mem))
    assert pages_of(mem, "Vega renders the dashboards") == {"General"}


def test_a_configured_entity_that_only_opens_sentences_gets_its_page(
    tmp_path: Path, embedder: Embedder, clock: FixedClock
) -> None:
    settings = make_settings(tmp_path)
    settings.wiki.entities = ["Vega"]
    with Memory(settings, embedder=embedder, clock=clock) as m:
        remember(m, "Vega renders the dashboards")
        remember(m, "Vega needs 4 GB of memory")
        wiki.compile_wiki(m, ws_of(m))
        assert pages_of(m, "Vega renders the dashboards") == {"Vega"}


def test_spellings_of_one_entity_are_one_page(mem: Memory) -> None:
    postgres = [
        "Orion stores its data in Postgres",
        "We upgraded PostgreSQL to version 16 last week",
        "the nightly job restores postgres from the latest dump",
    ]
    kube = ["Search runs on k8s in two regions", "The Kubernetes cluster has 12 nodes"]
    dynamo = ["Sessions are kept in Dynamo", "The team moved billing to DynamoDB"]
    for text in [*postgres, *kube, *dynamo]:
        remember(mem, text)
    wiki.compile_wiki(mem, ws_of(mem))
    got = pages(mem)
    assert not {"Postgres", "postgres", "k8s", "Dynamo"} & set(got)
    assert {c["text"] for c in got["PostgreSQL"]["claims"]} == set(postgres)
    assert {c["text"] for c in got["Kubernetes"]["claims"]} == set(kube)
    assert {c["text"] for c in got["DynamoDB"]["claims"]} == set(dynamo)


def test_names_are_folded_and_aliases_found_in_any_case() -> None:
    from memoryd.wiki.entities import lexicon, merge_prefixes

    lex = lexicon(
        ["Ana uses Node.js daily", "Reports come from NodeJS"],
        aliases={"Kubernetes": ["k8s"]},
    )
    assert lex.key("Node.js") == lex.key("NodeJS") == lex.key("nodejs")
    assert lex.names("Deploys go to K8S and pg_dump runs nightly") == ["Kubernetes"]
    assert lex.names("Yesterday Ana Ruiz met Bo Chen on Monday") == ["Ana Ruiz", "Bo Chen"]
    assert lex.names("The EU team ships the AI features to Lisbon") == ["Lisbon"]
    assert lex.names("Actually I changed my mind about Lisbon") == ["Lisbon"]
    common = lexicon(["Cache Redis maxmemory is 6 GB now", "the cache Redis evicts keys"])
    assert common.names("Cache Redis maxmemory is 6 GB now") == ["Redis"]
    person = lexicon(["Mark Chen owns billing", "please mark the ticket as done"])
    assert person.names("Mark Chen owns billing") == ["Mark Chen"]
    # the first-letters rule: a short capitalised ending, and never a short name
    spellings = {"dynamo": {"Dynamo"}, "dynamodb": {"DynamoDB"}}
    spellings |= {"maria": {"Maria"}, "mariadb": {"MariaDB"}, "elastic": {"Elastic"}}
    spellings |= {"elasticsearch": {"Elasticsearch"}}
    merge_prefixes(lex, spellings)
    assert lex.key("Dynamo") == "dynamodb"
    assert [lex.key(n) for n in ("Maria", "Elastic")] == ["maria", "elastic"]


def test_contradictions_are_found_across_pages(mem: Memory) -> None:
    port = "The staging database listens on port 5433"
    remember(mem, port, category="infra")
    add_to_memory_md(mem, "\n## Servers\n- The staging database listens on port 5434\n")
    wiki.compile_wiki(mem, ws_of(mem))
    got = claims(mem)
    first, second = got[port], got["The staging database listens on port 5434"]
    assert first["page"] != second["page"]  # two pages
    assert first["status"] == second["status"] == "contested"
    assert first["note"] == f"contradicts {second['id']}"
    assert second["note"] == f"contradicts {first['id']}"
    problems = wiki.lint(mem, ws_of(mem))
    assert {p["where"].split("#^")[1] for p in problems if p["kind"] == "contradiction"} == {
        first["id"],
        second["id"],
    }


def test_two_subjects_each_with_its_own_value_do_not_contradict(mem: Memory) -> None:
    canary = [  # the search API and the search UI, each with its own canary
        "Orion ships the search API behind a 5% canary",
        "Orion ships the search UI behind a 25% canary",
    ]
    for text in canary:
        remember(mem, text)
    report = wiki.compile_wiki(mem, ws_of(mem))
    got = claims(mem)
    assert [got[t]["status"] for t in canary] == ["current", "current"]
    assert report.contested == 0


def test_a_claim_a_newer_one_says_otherwise_of_is_stale(mem: Memory, clock: FixedClock) -> None:
    older = "Ana owns the Grafana SLO dashboards"
    retention = "Application logs are kept for 14 days in Loki"
    remember(mem, older)
    remember(mem, retention)
    clock.now += timedelta(days=14)  # what the store kept side by side, said later
    newer = "Nadia took over the Grafana SLO dashboards from the platform team"
    remember(mem, newer)
    remember(mem, "Log retention in Loki is now 31 days")
    remember(mem, "Nadia also reviews the Loki alert rules")  # alike, another thing
    wiki.compile_wiki(mem, ws_of(mem))
    got = claims(mem)
    assert got[older]["status"] == got[retention]["status"] == "stale"
    assert got[older]["note"] == f"a newer claim says otherwise: {got[newer]['id']}"
    assert got[older]["valid_until"] == got[newer]["valid_from"]
    assert got[newer]["status"] == "current"
    assert got["Log retention in Loki is now 31 days"]["status"] == "current"
    assert got["Nadia also reviews the Loki alert rules"]["status"] == "current"


def test_a_memory_md_line_a_newer_fact_superseded_is_stale(mem: Memory, clock: FixedClock) -> None:
    user = mem.settings.workspace.user_id
    (old,) = mem.add(
        "The staging database is on port 5432.", user_id=user, agent_id="dev", infer=True
    )
    clock.now += timedelta(days=7)
    (new,) = mem.add(
        "Staging Postgres moved to port 6432.", user_id=user, agent_id="dev", infer=True
    )
    assert new.event.value == "UPDATE"  # the store superseded the old port
    assert old.id is not None and mem.get(old.id).state == State.SUPERSEDED  # type: ignore[union-attr]
    # the promoted copy of the old fact, word for word, and a reworded one
    add_to_memory_md(
        mem,
        "\n## Promoted\n- The staging database is on port 5432.\n"
        "- Staging database port: 5432\n- Deploys need two approvals\n",
    )
    wiki.compile_wiki(mem, ws_of(mem))
    got = claims(mem)
    for line in ("The staging database is on port 5432.", "Staging database port: 5432"):
        assert got[line]["status"] == "stale", line
        assert "superseded" in got[line]["note"]
    assert got["Staging Postgres moved to port 6432."]["status"] == "current"  # not contested
    assert got["Deploys need two approvals"]["status"] == "current"
    stale_board = (ws_of(mem).root / "wiki" / "_dashboards" / "stale.md").read_text()
    assert "Staging database port: 5432" in stale_board


def test_the_wiki_bench_reads_values_and_scores_a_small_scenario(
    tmp_path: Path, embedder: Embedder
) -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    import weeks_scenario
    import wiki_weeks

    sc = weeks_scenario.generate(2, "eng", 2)
    fact = next(f for f in sc.facts if f.agent == "dev")
    old, new = fact.values[0][1], fact.values[1][1]
    assert wiki_weeks.values_in([fact], f"it moved from {old} to {new}") == {
        (fact.key, old),
        (fact.key, new),
    }
    assert wiki_weeks.values_in([fact], f"x{old}y") == set()  # a value inside a word: no
    m = wiki_weeks.play(sc, tmp_path, embedder)
    try:
        figures = wiki_weeks.score(m, sc)
    finally:
        m.close()
    assert set(figures) == {"dev", "ops"}
    for agent in figures.values():
        assert agent["claims"] > 0 and agent["entity_pages"] == len(agent["entities"])
        assert agent["false_stale"] == [] and agent["false_contested"] == 0
