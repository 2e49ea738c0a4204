"""Concurrent embed calls share model runs (embed/coalesce.py), with the real model
and with a model run we can hold still to see who goes next."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from memoryd.core import Memory
from memoryd.embed import Embedder
from memoryd.embed.coalesce import Coalescer
from memoryd.embed.onnx import GROUP_MAX, GROUP_RATIO, GROUP_SLACK, OnnxEmbedder, length_groups
from memoryd.models import Event
from memoryd.settings import OnnxEmbedSettings, Settings
from tests.conftest import FakeClock


def _code(text: str) -> np.ndarray:
    return np.array([len(text), ord(text[0])], dtype=np.float32)


class HeldModel:
    """A model run that waits for ``release`` and records each batch it is given."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.entered = threading.Event()
        self.release = threading.Event()

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.batches.append(list(texts))
        self.entered.set()
        assert self.release.wait(10)
        if "boom" in texts:
            raise RuntimeError("the model failed on this batch")
        return np.stack([_code(t) for t in texts])


def _wait_queued(c: Coalescer, jobs: int) -> None:
    deadline = time.monotonic() + 10
    while len(c._jobs) < jobs:
        assert time.monotonic() < deadline, "callers never queued"
        time.sleep(0.005)


def test_callers_that_arrive_while_the_model_runs_share_the_next_batch() -> None:
    model = HeldModel()
    c = Coalescer(model, dim=2, batch_size=64)
    with ThreadPoolExecutor(8) as pool:
        first = pool.submit(c.embed, ["warm"])
        assert model.entered.wait(10)
        later = [pool.submit(c.embed, [f"t{i}" * (i + 1)]) for i in range(6)]
        _wait_queued(c, 6)  # six callers wait while the first batch runs
        model.release.set()
        assert np.array_equal(first.result(10), [_code("warm")])
        for i, f in enumerate(later):
            assert np.array_equal(f.result(10), [_code(f"t{i}" * (i + 1))])
    assert c.runs == 2 and sorted(map(len, model.batches)) == [1, 6]


def test_a_short_call_never_waits_behind_a_bulk_one_for_more_than_a_batch() -> None:
    model = HeldModel()
    c = Coalescer(model, dim=2, batch_size=4)
    with ThreadPoolExecutor(3) as pool:
        first = pool.submit(c.embed, ["warm"])
        assert model.entered.wait(10)
        bulk = pool.submit(c.embed, [f"bulk{i}" for i in range(20)])
        _wait_queued(c, 1)
        query = pool.submit(c.embed, ["query"])
        _wait_queued(c, 2)
        model.release.set()
        assert query.result(10).shape == (1, 2)
        assert bulk.result(10).shape == (20, 2) and first.result(10).shape == (1, 2)
    # the batch after the running one is the query's, alone: not padded with bulk texts
    assert model.batches[1] == ["query"]
    assert all(len(b) <= 4 for b in model.batches) and len(model.batches) == 7
    assert sum(map(len, model.batches)) == 22


def test_a_failed_batch_fails_its_callers_only_and_the_next_batch_runs() -> None:
    model = HeldModel()
    c = Coalescer(model, dim=2, batch_size=2)
    with ThreadPoolExecutor(3) as pool:
        first = pool.submit(c.embed, ["boom"])
        assert model.entered.wait(10)
        other = pool.submit(c.embed, ["fine", "also fine", "third"])
        _wait_queued(c, 1)
        model.release.set()
        with pytest.raises(RuntimeError, match="failed on this batch"):
            first.result(10)
        assert np.array_equal(
            other.result(10), np.stack([_code("fine"), _code("also fine"), _code("third")])
        )
    assert np.array_equal(c.embed(["after"]), [_code("after")])
    assert c.embed([]).shape == (0, 2)


def test_the_real_model_gives_each_caller_its_own_vectors_under_concurrency(
    embedder: Embedder,
) -> None:
    texts = [f"memory number {i}: " + "the quick brown fox " * (i % 5) for i in range(48)]
    alone = np.stack([embedder.embed([t])[0] for t in texts])
    with ThreadPoolExecutor(12) as pool:
        together = list(pool.map(lambda t: embedder.embed([t])[0], texts))
        mixed = list(pool.map(embedder.embed, [texts[i : i + 5] for i in range(0, 48, 5)]))
    assert np.allclose(np.stack(together), alone, atol=1e-5)
    assert np.allclose(np.concatenate(mixed), alone, atol=1e-5)


def test_the_optimised_graph_is_cached_and_a_damaged_cache_is_rebuilt(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    embedder: Embedder,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Opening the model saves its optimised graph once (embed/onnx.py); the next
    process loads that instead of optimising again, with the same vectors, and a
    damaged or unwritable cache costs time, never an error."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    texts = ["the staging database runs on port 5433", "Mira prefers tea"]
    first = OnnxEmbedder(OnnxEmbedSettings())
    (cached,) = (tmp_path / "cache" / "memoryd" / "onnx").glob("*.onnx")
    size = cached.stat().st_size
    again = OnnxEmbedder(OnnxEmbedSettings())  # from the cached graph
    assert np.allclose(again.embed(texts), embedder.embed(texts), atol=1e-5)
    assert np.allclose(first.embed(texts), again.embed(texts), atol=1e-6)
    cached.write_bytes(b"not an onnx graph")
    with caplog.at_level(logging.WARNING, logger="memoryd.embed.onnx"):
        repaired = OnnxEmbedder(OnnxEmbedSettings())
    assert "ignoring the cached ONNX graph" in caplog.text
    assert np.allclose(repaired.embed(texts), again.embed(texts), atol=1e-6)
    assert cached.stat().st_size == size  # rebuilt
    monkeypatch.setenv("XDG_CACHE_HOME", "/proc/no-such-place")  # cannot be written
    assert np.allclose(
        OnnxEmbedder(OnnxEmbedSettings()).embed(texts), again.embed(texts), atol=1e-6
    )


def test_the_model_threads_do_not_busy_wait_unless_asked(tmp_path: Path) -> None:
    """Spinning threads hold the cores after every run, which the rest of a search (and
    PostgreSQL's backend) needs on a small machine; ``embed.onnx.spin`` turns it on."""
    key = "session.intra_op.allow_spinning"
    quiet = OnnxEmbedder(OnnxEmbedSettings(cache_dir=tmp_path))
    spinning = OnnxEmbedder(OnnxEmbedSettings(cache_dir=tmp_path, spin=True))
    assert quiet._session.get_session_options().get_session_config_entry(key) == "0"
    assert spinning._session.get_session_options().get_session_config_entry(key) == "1"
    texts = ["the staging database runs on port 5433"]
    assert np.allclose(quiet.embed(texts), spinning.embed(texts), atol=1e-6)


class HeldEmbedder:
    """The real model behind a gate: every call waits until ``release`` is set."""

    def __init__(self, real: Embedder) -> None:
        self.real = real
        self.name, self.dim, self.max_tokens = real.name, real.dim, real.max_tokens
        self.entered: list[str] = []
        self.release = threading.Event()

    def count_tokens(self, text: str) -> int:
        return self.real.count_tokens(text)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.entered.extend(texts)
        assert self.release.wait(20)  # held, so nothing is written before the list below
        return self.real.embed(texts)


def test_an_add_runs_the_model_outside_the_write_transaction(
    settings: Settings, embedder: Embedder, clock: FakeClock
) -> None:
    """While one add's model run is held, a second add reaches the model and a list
    answers: the write lock is taken for the writes alone, so concurrent adds can
    share batches (the Coalescer) instead of queueing for the lock one model run each."""
    held = HeldEmbedder(embedder)
    with Memory(settings, embedder=held, clock=clock) as mem, ThreadPoolExecutor(2) as pool:
        first = pool.submit(mem.add, "Ana moved to Lisbon in May", user_id="u", infer=False)
        deadline = time.monotonic() + 10
        while not held.entered:
            assert time.monotonic() < deadline, "the first add never reached the model"
            time.sleep(0.01)
        second = pool.submit(mem.add, "Ana's cat is called Miso", user_id="u", infer=False)
        while "Ana's cat is called Miso" not in held.entered:
            assert time.monotonic() < deadline, "the second add waited for the first's lock"
            time.sleep(0.01)
        assert mem.list(user_id="u") == []  # reads are not blocked either; nothing written yet
        held.release.set()
        events = first.result(20) + second.result(20)
    assert [e.event for e in events] == [Event.ADD, Event.ADD]


def test_a_run_groups_texts_of_similar_length() -> None:
    lengths = [40, 5, 102, 12, 38, 6, 41, 13, 7, 90, 36] + [20] * 40
    groups = length_groups(lengths)
    assert sorted(i for g in groups for i in g) == list(range(len(lengths)))  # each once
    for g in groups:
        first, last = lengths[g[0]], lengths[g[-1]]
        assert lengths[g[0]] == min(lengths[i] for i in g)
        assert last <= max(first * GROUP_RATIO, first + GROUP_SLACK) and len(g) <= GROUP_MAX
    assert [lengths[g[0]] for g in groups] == sorted(lengths[g[0]] for g in groups)
    assert {5, 6, 7} == {lengths[i] for i in groups[0]}  # within the slack of 4 tokens
    assert [len(g) for g in groups if lengths[g[0]] == 20] == [32, 8]  # at most 32 a run


def test_texts_of_many_lengths_embed_in_one_call_as_they_do_alone(embedder: Embedder) -> None:
    texts = [("word " * n).strip() + f" {n}" for n in (1, 3, 7, 20, 60, 150, 4, 33, 90, 2)]
    alone = np.stack([embedder.embed([t])[0] for t in texts])
    assert np.allclose(embedder.embed(texts), alone, atol=1e-5)
