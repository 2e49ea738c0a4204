"""LLM and embedding work never blocks the event loop (seed defect: a synchronous
client inside async handlers). A deliberately slow local LLM endpoint holds adds
in flight while /health is timed."""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from memoryd.api import create_app
from memoryd.core import Memory
from memoryd.embed import Embedder
from memoryd.settings import Settings
from tests.fake_llm import FakeLLM


@pytest.fixture
def slow_llm() -> Iterator[FakeLLM]:
    with FakeLLM() as fake:
        fake.delay = 2.0  # every answer takes two seconds
        yield fake


def test_health_answers_fast_while_slow_adds_are_in_flight(
    settings: Settings, embedder: Embedder, slow_llm: FakeLLM, live_server
) -> None:  # type: ignore[no-untyped-def]
    settings.llm.provider = "openai"
    settings.llm.openai.base_url = slow_llm.url
    settings.llm.openai.timeout_s = 10
    with Memory(settings, embedder=embedder) as mem, live_server(create_app(memory=mem)) as server:
        results: list[int] = []

        def slow_add(n: int) -> None:
            body = {"text": f"Fact number {n} is worth keeping.", "user_id": f"u{n}"}
            results.append(
                httpx.post(f"{server.url}/memory/add", json=body, timeout=30).status_code
            )

        with httpx.Client(base_url=server.url, timeout=5) as client:
            client.get("/health")  # warm the connection and the counts query
            adders = [threading.Thread(target=slow_add, args=(n,)) for n in range(6)]
            for t in adders:
                t.start()
            deadline = time.monotonic() + 5
            while len(slow_llm.requests) < 6 and time.monotonic() < deadline:
                time.sleep(0.01)
            assert len(slow_llm.requests) == 6  # all six adds are waiting on the LLM now
            latencies = []
            for _ in range(10):
                started = time.perf_counter()
                assert client.get("/health").status_code == 200
                latencies.append((time.perf_counter() - started) * 1000)
                time.sleep(0.05)
            still_waiting = len(results) == 0
            for t in adders:
                t.join(timeout=30)
    assert still_waiting, "the adds finished before /health was measured"
    assert results == [200] * 6
    assert statistics.median(latencies) < 50, latencies
    assert max(latencies) < 250, latencies  # a busy 2-core machine may hiccup once, not stall


def test_adds_beyond_the_limit_wait_for_a_slot_and_reads_still_answer(
    settings: Settings, embedder: Embedder, slow_llm: FakeLLM, live_server
) -> None:  # type: ignore[no-untyped-def]
    settings.llm.provider = "openai"
    settings.llm.openai.base_url = slow_llm.url
    settings.server.max_concurrent_adds = 2
    slow_llm.delay = 1.0
    with Memory(settings, embedder=embedder) as mem, live_server(create_app(memory=mem)) as server:
        mem.add("Searchable while adds queue", user_id="reader")
        done: list[float] = []
        started = time.perf_counter()

        def slow_add(n: int) -> None:
            body = {"text": f"Queued fact {n} is worth keeping.", "user_id": "writer"}
            httpx.post(f"{server.url}/memory/add", json=body, timeout=30)
            done.append(time.perf_counter() - started)

        adders = [threading.Thread(target=slow_add, args=(n,)) for n in range(4)]
        for t in adders:
            t.start()
        deadline = time.monotonic() + 5
        while len(slow_llm.requests) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.3)
        assert len(slow_llm.requests) == 2  # only two adds reached the LLM; two wait for a slot
        search = httpx.post(
            f"{server.url}/memory/search", json={"query": "searchable", "user_id": "reader"}
        )
        assert search.status_code == 200 and search.elapsed.total_seconds() < 1
        for t in adders:
            t.join(timeout=30)
    assert len(done) == 4 and sorted(done)[-1] > 1.9  # the second pair waited for the first
