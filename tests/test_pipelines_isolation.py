"""One agent's failure does not stop the others: digest and dream go on with the next
agent, and the run record says which agent failed and that the run was partial.

The failure is real: a local OpenAI-protocol server (tests/fake_llm.py) that rejects
every request quoting one agent's diary, so that agent's batch fails on every run."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memoryd.core import Memory
from memoryd.embed import Embedder
from memoryd.models import Filters
from memoryd.pipelines.digest import offset_key
from memoryd.pipelines.runs import get_run, run_pipeline
from memoryd.settings import Settings
from tests.fake_llm import FakeLLM, Reply, rule_based
from tests.pipelines_kit import FixedClock, pipeline_settings, workspace, write_section

DAY = "2026-03-27"
POISON = "poisoned-batch-marker"


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    with FakeLLM() as server:

        def answer(body: dict[str, Any]) -> str | Reply:
            if POISON in str(body.get("messages")):
                return Reply(status=400)  # a client error: not retried, fails every time
            return rule_based(body)

        server.default = answer
        yield server


@pytest.fixture
def settings(tmp_path: Path, fake: FakeLLM) -> Settings:
    s = pipeline_settings(tmp_path / "home", digest={"task_pass": False, "min_bytes": 0})
    s.llm.provider = "openai"
    s.llm.openai.base_url = fake.url
    return s


def diaries(settings: Settings, day: str) -> None:
    """Agents alpha (whose diary the LLM always rejects), beta and gamma."""
    for agent in ("alpha", "beta", "gamma"):
        extra = [f"The {POISON} is in this section."] if agent == "alpha" else []
        write_section(
            workspace(settings, agent),
            day,
            "09:00",
            [f"We moved the {agent} service to port 80{len(agent)}0 because of a clash.", *extra],
        )


def facts_of(mem: Memory, agent: str) -> list[str]:
    return [r.text for r in mem.store.iter_all(Filters(agent_id=agent))]


def test_digest_goes_on_after_an_agent_whose_batch_always_fails(
    settings: Settings, embedder: Embedder
) -> None:
    diaries(settings, DAY)
    with Memory(settings, embedder=embedder, clock=FixedClock(f"{DAY}T23:00:00+00:00")) as mem:
        for _attempt in range(2):  # the failing batch fails again; the others are not blocked
            record = run_pipeline(mem, "digest")
            assert record.status == "partial"
            assert len(record.errors) == 1 and record.errors[0].startswith("agent alpha: ")
            assert "UpstreamError" in record.errors[0]
            assert facts_of(mem, "alpha") == []
            assert mem.store.kv_get(offset_key("alpha", mem.clock().date())) is None
        for agent in ("beta", "gamma"):  # after alpha in the loop, and digested once
            assert len(facts_of(mem, agent)) == 1, agent
        stored = get_run(mem, record.run_id)
        assert stored is not None and stored.status == "partial" and stored.errors == record.errors


def test_dream_goes_on_after_an_agent_whose_diary_always_fails(
    settings: Settings, embedder: Embedder
) -> None:
    diaries(settings, DAY)
    with Memory(settings, embedder=embedder, clock=FixedClock("2026-03-28T02:00:00+00:00")) as mem:
        record = run_pipeline(mem, "dream")
        assert record.status == "partial"
        assert [e.split(":")[0] for e in record.errors] == ["agent alpha"]
        assert facts_of(mem, "alpha") == []
        for agent in ("beta", "gamma"):
            assert len(facts_of(mem, agent)) == 1, agent
            dreams = (workspace(settings, agent) / "DREAMS.md").read_text()
            assert record.run_id in dreams


def test_a_run_where_every_agent_fails_is_an_error(settings: Settings, embedder: Embedder) -> None:
    diaries(settings, DAY)
    with Memory(settings, embedder=embedder, clock=FixedClock(f"{DAY}T23:00:00+00:00")) as mem:
        record = run_pipeline(mem, "digest", agent="alpha")
        assert record.status == "error" and "agent alpha" in (record.error or "")
