"""Digest: new diary bytes -> short-term memory, once, section-aligned, thresholded."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from memoryd.core import Memory
from memoryd.embed import Embedder
from memoryd.models import Filters
from memoryd.pipelines.digest import offset_key
from memoryd.pipelines.runs import run_pipeline
from memoryd.settings import Settings
from tests.fake_llm import FakeLLM
from tests.pipelines_kit import (
    FixedClock,
    fill_diary,
    pipeline_settings,
    snapshot,
    workspace,
    write_section,
)

DAY = "2026-03-27"


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock(f"{DAY}T12:00:00+00:00")


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return pipeline_settings(tmp_path / "home")


@pytest.fixture
def mem(settings: Settings, embedder: Embedder, clock: FixedClock) -> Iterator[Memory]:
    m = Memory(settings, embedder=embedder, clock=clock)
    yield m
    m.close()


def short_term(mem: Memory, agent: str = "alpha") -> list[str]:
    return sorted(
        r.text
        for r in mem.store.iter_all(Filters(agent_id=agent, short_term_only=True))
        if r.category == "short_term"
    )


def test_digest_reads_new_sections_into_short_term_once(mem: Memory, settings: Settings) -> None:
    root = workspace(settings, "alpha")
    fill_diary(root, DAY, 6)
    first = run_pipeline(mem, "digest")
    assert first.status == "ok"
    assert first.counts["batches"] == 1 and first.counts["added"] > 0
    texts = short_term(mem)
    assert any("port 8000" in t for t in texts)
    records = mem.list(agent_id="alpha", run_id=DAY)
    assert {r.run_id for r in records} == {DAY}
    assert all(r.source and r.source.path == f"memory/{DAY}.md" for r in records)
    size = (root / "memory" / f"{DAY}.md").stat().st_size
    assert mem.store.kv_get(offset_key("alpha", mem.clock().date())) == size

    again = run_pipeline(mem, "digest")  # nothing new: nothing read, nothing written
    assert again.counts == {} and short_term(mem) == texts

    fill_diary(root, DAY, 12, start_hour=9)  # more turns: only the new bytes are read
    third = run_pipeline(mem, "digest")
    assert third.counts["bytes"] == (root / "memory" / f"{DAY}.md").stat().st_size - size
    assert any("port 8006" in t for t in short_term(mem))
    assert len(short_term(mem)) == len(set(short_term(mem)))  # no duplicates


def test_digest_waits_for_enough_new_text_and_for_the_last_section(
    mem: Memory, settings: Settings, clock: FixedClock
) -> None:
    root = workspace(settings, "alpha")
    write_section(root, DAY, "11:59", ["**user**: The staging database moved to host db-7."])
    run = run_pipeline(mem, "digest")
    assert short_term(mem) == []  # one minute old: may still be growing (settle 2 min)
    assert any("still being written" in n for n in run.notes)
    clock.now = clock.now.replace(minute=5, hour=13)
    run = run_pipeline(mem, "digest")
    assert short_term(mem) == [] and run.counts["waiting_bytes"] < 500
    assert any("waiting for 500" in n for n in run.notes)
    fill_diary(root, DAY, 6, start_hour=12)  # now well over 500 bytes
    run_pipeline(mem, "digest")
    assert any("db-7" in t for t in short_term(mem))


def test_yesterdays_tail_is_digested_even_when_small(
    mem: Memory, settings: Settings, clock: FixedClock
) -> None:
    root = workspace(settings, "alpha")
    write_section(root, "2026-03-26", "23:58", ["**user**: The release branch is frozen now."])
    run_pipeline(mem, "digest")  # the day is over: the last section is finished, however small
    records = mem.list(agent_id="alpha", run_id="2026-03-26")
    assert [r.text for r in records if "frozen" in r.text]


def test_batches_are_section_aligned_and_bounded(embedder: Embedder, tmp_path: Path) -> None:
    settings = pipeline_settings(tmp_path / "home", digest={"max_batch_bytes": 1_000})
    root = workspace(settings, "alpha")
    fill_diary(root, DAY, 20)
    with Memory(settings, embedder=embedder, clock=FixedClock(f"{DAY}T23:00:00+00:00")) as mem:
        run = run_pipeline(mem, "digest", dry_run=True)
        assert mem.count(Filters()) == 0  # a dry run writes nothing
        assert mem.store.kv_get(offset_key("alpha", mem.clock().date())) is None
        ranges = [n.split("bytes ")[1].split(" ")[0] for n in run.notes if "would digest" in n]
        data = (root / "memory" / f"{DAY}.md").read_bytes()
        assert len(ranges) == run.counts["batches"] >= 4
        cursor = 0
        for r in ranges:
            start, end = (int(x) for x in r.split("-"))
            assert start == cursor and end - start <= 1_000
            assert data[start:].startswith(b"## ") or start == 0
            cursor = end
        assert cursor == len(data)
        run_pipeline(mem, "digest")
        assert mem.store.kv_get(offset_key("alpha", mem.clock().date())) == len(data)


def test_a_batch_repeated_after_a_crash_writes_nothing_twice(
    mem: Memory, settings: Settings, embedder: Embedder, clock: FixedClock, tmp_path: Path
) -> None:
    """The state a kill between a committed pass and the offset save leaves behind:
    the passes are recorded, the offset is not. The re-run must not write again."""
    root = workspace(settings, "alpha")
    fill_diary(root, DAY, 6)
    run_pipeline(mem, "digest")
    done = snapshot(mem)
    mem.store.kv_set(offset_key("alpha", clock().date()), 0)  # as if killed before the save
    again = run_pipeline(mem, "digest")
    assert again.counts["batches"] == 1
    assert snapshot(mem) == done


def test_diary_that_shrank_is_read_again_without_duplicates(
    mem: Memory, settings: Settings
) -> None:
    root = workspace(settings, "alpha")
    fill_diary(root, DAY, 6)
    run_pipeline(mem, "digest")
    before = short_term(mem)
    path = root / "memory" / f"{DAY}.md"
    path.write_text(path.read_text()[:200])  # the agent rewrote its diary
    run = run_pipeline(mem, "digest")
    assert any("shrank" in n for n in run.notes)
    assert short_term(mem) == before


def test_llm_digest_uses_digest_and_task_prompts(tmp_path: Path, embedder: Embedder) -> None:
    with FakeLLM() as fake:
        settings = pipeline_settings(tmp_path / "home")
        settings.llm.provider = "openai"
        settings.llm.openai.base_url = fake.url
        root = workspace(settings, "alpha")
        fill_diary(root, DAY, 6)
        fake.script(
            '{"facts": ["Billing service moved to port 8000 (clashed with Grafana)"]}',
            '{"facts": ["[dev] Moved billing service to port 8000"]}',
        )
        clock = FixedClock(f"{DAY}T12:00:00+00:00")
        with Memory(settings, embedder=embedder, clock=clock) as mem:
            run = run_pipeline(mem, "digest")
            assert run.status == "ok"
            systems = [r["messages"][0]["content"] for r in fake.requests[:2]]
            assert "technical" in systems[0].lower() or "identifier" in systems[0].lower()
            assert "task" in systems[1].lower()
            by_category = {r.category: r.text for r in mem.list(agent_id="alpha")}
            assert by_category == {
                "short_term": "Billing service moved to port 8000 (clashed with Grafana)",
                "task": "[dev] Moved billing service to port 8000",
            }


def test_a_run_cut_short_is_finished_as_planned_even_below_the_threshold(
    embedder: Embedder, tmp_path: Path
) -> None:
    """Killed after its first batch, a run leaves less than min_bytes behind: the next
    run must still digest it, in the same batches, or the result would differ from an
    uninterrupted run's (found by the kill test)."""
    from memoryd.pipelines.digest import _run_batches, target_key
    from memoryd.pipelines.registry import PipelineContext, RunResult
    from memoryd.pipelines.sections import batches, read_from, split_sections
    from memoryd.settings import WorkspaceSettings
    from memoryd.workspace.safefs import WorkspaceFS

    now = f"{DAY}T23:00:00+00:00"
    homes = []
    for name in ("uninterrupted", "cut"):
        settings = pipeline_settings(tmp_path / name, digest={"max_batch_bytes": 1_000})
        fill_diary(workspace(settings, "alpha"), DAY, 5)
        homes.append(settings)
    with Memory(homes[0], embedder=embedder, clock=FixedClock(now)) as mem:
        run_pipeline(mem, "digest")
        expected = snapshot(mem)
    with Memory(homes[1], embedder=embedder, clock=FixedClock(now)) as mem:
        ws = workspace(homes[1], "alpha")
        full = read_from(ws / "memory" / f"{DAY}.md", 0, WorkspaceFS.of(ws, WorkspaceSettings()))
        sections = split_sections(full)
        first = batches(sections, 1_000)[0]
        assert len(full) - first.end < 500  # what is left alone would wait for more
        ctx = PipelineContext(memory=mem, name="digest", run_id="cut", clock=mem.clock)
        day = mem.clock().date()
        mem.store.kv_set(target_key("alpha", day), len(full))  # the plan of the killed run
        done = [s for s in sections if s.end <= first.end]
        _run_batches(ctx, ctx.workspace("alpha"), day, f"memory/{DAY}.md", full, done, RunResult())
        assert mem.store.kv_get(offset_key("alpha", day)) == first.end
        run_pipeline(mem, "digest")
        assert snapshot(mem) == expected


def test_digest_pauses_between_batches(embedder: Embedder, tmp_path: Path) -> None:
    """Seed 001's rate control: ``digest.batch_pause_s`` between two batches, none before
    the first; the pause goes through the injected sleep, so the test does not wait."""
    from memoryd.pipelines.digest import digest
    from memoryd.pipelines.registry import PipelineContext
    from memoryd.settings import DigestSettings

    assert 0 < DigestSettings().batch_pause_s <= 2  # on by default, and small
    for pause in (0.25, 0.0):
        settings = pipeline_settings(
            tmp_path / str(pause), digest={"max_batch_bytes": 1_000, "batch_pause_s": pause}
        )
        fill_diary(workspace(settings, "alpha"), DAY, 8)
        fill_diary(workspace(settings, "beta"), DAY, 8)
        slept: list[float] = []
        with Memory(settings, embedder=embedder, clock=FixedClock(f"{DAY}T23:00:00+00:00")) as mem:
            ctx = PipelineContext(
                memory=mem, name="digest", run_id="r", clock=mem.clock, sleep=slept.append
            )
            result = digest(ctx)
        assert result.status == "ok" and result.counts["batches"] >= 4
        # across agents too: the LLM sees one batch per pause however the work is split
        assert slept == ([pause] * (result.counts["batches"] - 1) if pause else [])


def test_what_digest_reads_in_a_diary_is_said_on_the_diary_day(
    mem: Memory, settings: Settings, clock: FixedClock
) -> None:
    """A short-term memory digest takes from a diary happened on the diary's day, like the
    diary's own lines: written after midnight, it must not rank as newer than the next
    day's change."""
    root = workspace(settings, "alpha")
    user = settings.workspace.user_id
    write_section(root, "2026-03-19", "15:00", ["**assistant**: The exports take longer than the API gateway's 40 seconds timeout."])  # fmt: skip
    clock.now = datetime.fromisoformat("2026-03-20T00:30:00+00:00")
    assert run_pipeline(mem, "digest").status == "ok"
    digested = mem.list(agent_id="alpha", filters=Filters(short_term_only=True), limit=100)
    assert digested and all(r.event_at == datetime.fromisoformat("2026-03-19T00:00:00+00:00") for r in digested)  # fmt: skip
    # the next day's change, as the diary index stores a line of 2026-03-20
    clock.now = datetime.fromisoformat("2026-03-20T10:10:00+00:00")
    mem.add("Got it, the API gateway timeout is 45 seconds.", user_id=user, agent_id="alpha", infer=False, event_at=datetime.fromisoformat("2026-03-20T00:00:00+00:00"))  # fmt: skip
    clock.now = datetime.fromisoformat("2026-03-23T06:00:00+00:00")
    hits = mem.search("how long before the API gateway times out", user_id=user, agent_id="alpha", top_k=3)  # fmt: skip
    assert "45 seconds" in hits[0].text, [h.text for h in hits]
