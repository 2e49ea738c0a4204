"""The organizer's search flags (seed 003): --category, --all-agents, --smart, on the
local store and through a running server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memoryd.api import create_app
from memoryd.cli import app
from memoryd.core import Memory
from memoryd.search.intent import analyse, category_name
from tests.fake_llm import FakeLLM, Reply

FACTS = [
    ("dev", "experience", "The deploy failed because the migration ran before the backup; back up first"),
    ("ops", "experience", "Rotating the TLS certificate broke the ingress until nginx was reloaded"),
    ("dev", "procedural", "To rotate the deploy keys: vault write, then argocd app sync"),
    ("dev", "decision", "We chose pgvector over OpenSearch for the deploy search: simpler to run"),
    ("ops", "environment", "The deploy server listens on port 8443 on deploy-1"),
]  # fmt: skip


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("MEMORYD_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()

    def invoke(*args: str) -> tuple[int, str]:
        result = runner.invoke(app, list(args))
        return result.exit_code, result.output

    for agent, category, text in FACTS:
        meta = json.dumps({"category": category})
        code, out = invoke("add", "--user", "boss", "--agent", agent, "--text", text,
                           "--metadata", meta, "--no-infer")  # fmt: skip
        assert code == 0, out
    return invoke


def _search(run, *args: str) -> dict:  # type: ignore[no-untyped-def,type-arg]
    code, out = run("search", "--user", "boss", "--json", "--top-k", "10", *args)
    assert code == 0, out
    return json.loads(out)  # type: ignore[no-any-return]


def test_category_restricts_the_search_and_knows_lessons(run) -> None:  # type: ignore[no-untyped-def]
    lessons = _search(
        run, "--query", "deploy", "--category", "lessons", "--all-agents", "--min-score", "0"
    )
    assert {h["memory"][:20] for h in lessons["results"]} == {
        "The deploy failed be",
        "Rotating the TLS cer",
    }
    two = _search(run, "--query", "deploy", "-c", "decision", "-c", "environment")
    assert {h["memory"].split()[1] for h in two["results"]} == {"chose", "deploy"}
    code, out = run("search", "--user", "boss", "--agent", "dev", "--all-agents", "--query", "x")
    assert code == 2 and "leave out --agent" in out


def test_smart_looks_where_the_question_points(run) -> None:  # type: ignore[no-untyped-def]
    got = _search(run, "--query", "what mistakes did we make with the deploy?", "--smart")
    assert got["intent"] == {
        "query": "what mistakes did we make with the deploy?",
        "categories": ["experience"],
        "source": "rules",
    }
    assert got["results"] and all(
        "deploy" in h["memory"] or "TLS" in h["memory"] for h in got["results"]
    )
    assert {h["memory"][:8] for h in got["results"]} <= {"The depl", "Rotating"}
    # a question that points nowhere searches everywhere
    anywhere = _search(run, "--query", "deploy-1", "--smart")
    assert anywhere["intent"]["categories"] == [] and anywhere["results"]


def test_smart_finds_facts_the_organizer_classed(run) -> None:  # type: ignore[no-untyped-def]
    """A fact stored with no category is classed system/personal (extract/classify.py);
    an environment question must still find it while an environment fact matches too."""
    code, out = run("add", "--user", "boss", "--agent", "ops", "--no-infer", "--text",
                    "The staging database listens on port 5433", "--metadata",
                    json.dumps({"category": "system"}))  # fmt: skip
    assert code == 0, out
    got = _search(run, "--query", "which port does the staging database use", "--smart")
    assert got["intent"]["categories"] == ["environment", "system"]
    found = [h["memory"] for h in got["results"]]
    assert "The staging database listens on port 5433" in found
    assert "The deploy server listens on port 8443 on deploy-1" in found


def test_the_flags_work_through_a_server(run, tmp_path: Path, live_server) -> None:  # type: ignore[no-untyped-def]
    from memoryd.settings import Settings

    memory = Memory(Settings(home=tmp_path / "home"))
    try:
        with live_server(create_app(memory=memory)) as server:
            got = _search(run, "--url", server.url, "--query", "deploy", "-c", "procedural")
            smart = _search(run, "--url", server.url, "--query", "how do I rotate keys", "--smart")
    finally:
        memory.close()
    assert [h["memory"][:9] for h in got["results"]] == ["To rotate"]
    assert smart["intent"]["categories"] == ["procedural", "experience"]
    assert smart["results"][0]["memory"].startswith("To rotate the deploy keys")


def test_intent_rules_and_the_llm() -> None:
    from memoryd.llm import create_llm
    from memoryd.settings import LLMSettings

    assert category_name("Lessons") == "experience" and category_name("decision") == "decision"
    assert analyse("why did we choose pgvector").categories == ["decision"]
    # a fact the organizer classed system/personal answers environment/preference questions
    assert analyse("which port does staging use").categories == ["environment", "system"]
    assert analyse("what is her favourite food").categories == ["preference", "personal"]
    assert analyse("tell me about Lisbon").categories == []
    with FakeLLM() as fake:
        settings = LLMSettings(provider="openai")
        settings.openai.base_url = fake.url
        settings.openai.timeout_s = 2.0
        llm = create_llm(settings)
        fake.script('{"query": "deploy backup order", "categories": ["experience", "bogus"]}')
        asked = analyse("what went wrong last time?", llm)
        assert "what went wrong last time?" in json.dumps(fake.requests[-1])
        fake.script(Reply(raw="no json here"), Reply(raw="no json here"))
        broken = analyse("what went wrong last time?", llm)
    assert asked.to_json() == {
        "query": "deploy backup order",
        "categories": ["experience"],
        "source": "llm",
    }
    assert broken.source == "rules" and broken.categories == ["experience"]
