"""The pipeline registry: names, schedules, lookups and the context pipelines get."""

from __future__ import annotations

import pytest

from memoryd.core import Memory
from memoryd.errors import InvalidInputError, NotFoundError
from memoryd.pipelines import registry
from memoryd.pipelines.registry import PipelineContext, PipelineSpec, RunResult, pipeline


def _noop(ctx: PipelineContext) -> RunResult:
    return RunResult()


def test_register_and_get_roundtrip() -> None:
    registry.register(PipelineSpec("test-noop", _noop, "*/5  * * * *", "does nothing"))
    spec = registry.get("test-noop")
    assert spec.fn is _noop
    assert spec.schedule == "*/5 * * * *"  # normalised
    assert "test-noop" in [s.name for s in registry.all_specs()]
    registry.unregister("test-noop")
    assert "test-noop" not in [s.name for s in registry.all_specs()]


def test_bad_schedule_is_refused_with_a_hint() -> None:
    with pytest.raises(InvalidInputError) as err:
        registry.register(PipelineSpec("test-bad", _noop, "every day", ""))
    assert "crontab" in str(err.value) and err.value.hint


def test_two_functions_cannot_share_a_name() -> None:
    @pipeline("test-dup", schedule="0 1 * * *")
    def first(ctx: PipelineContext) -> RunResult:
        """First one."""
        return RunResult()

    assert registry.get("test-dup").description == "First one."

    def second(ctx: PipelineContext) -> RunResult:
        return RunResult()

    with pytest.raises(InvalidInputError):
        registry.register(PipelineSpec("test-dup", second, "0 1 * * *", ""))
    registry.unregister("test-dup")


def test_unknown_pipeline_names_the_known_ones() -> None:
    with pytest.raises(NotFoundError) as err:
        registry.get("no-such-pipeline")
    assert "memoryd pipelines" in (err.value.hint or "")


def test_result_counts_and_status() -> None:
    r = RunResult()
    r.count("added")
    r.count("added", 2)
    assert r.counts == {"added": 3} and r.status == "ok"
    other = RunResult()
    other.error("agent b: diary unreadable")
    r.merge(other)
    assert r.status == "error" and r.errors == ["agent b: diary unreadable"]


def test_context_agents_and_workspace(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    (memory.settings.home / "workspaces" / "alpha").mkdir(parents=True)
    ctx = PipelineContext(memory=memory, name="digest", run_id="r1", clock=clock)
    assert ctx.agents() == ["alpha"]
    assert ctx.workspace("alpha").root == (memory.settings.home / "workspaces" / "alpha")
    assert ctx.actor == "digest:r1"
    only = PipelineContext(memory=memory, name="digest", run_id="r1", clock=clock, agent="beta")
    assert only.agents() == ["beta"]
