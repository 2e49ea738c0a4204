"""The pipeline registry: every pipeline by name, what it needs, and what it returns.

A pipeline is one function of a :class:`PipelineContext` (the ``Memory``, the
agents' workspaces, a clock, the dry-run flag, the agent filter, the run id and
a logger) that returns a :class:`RunResult` (counts, notes, errors). It is
registered once, under a unique name, with a default schedule::

    from memoryd.pipelines.registry import PipelineContext, RunResult, pipeline

    @pipeline("decay", schedule="30 3 * * *", description="expired memories -> lessons")
    def decay(ctx: PipelineContext) -> RunResult:
        result = RunResult()
        for agent in ctx.agents():          # the --agent filter, or every known agent
            ws = ctx.workspace(agent)       # memoryd.workspace.Workspace
            ...
            if not ctx.dry_run:
                ctx.memory.delete(mid, actor=ctx.actor, reason="...")
            result.count("archived")
        return result

The API (kept stable; other modules register into it):

* ``@pipeline(name, *, schedule, description)`` registers the function and
  returns it unchanged. ``schedule`` is a 5-field crontab (``"*/15 * * * *"``,
  ``"0 2 * * *"``) in ``settings.pipelines.timezone``; ``settings.pipelines.
  schedules[name]`` overrides it and ``settings.pipelines.disabled`` turns a
  pipeline off in ``serve`` (it still runs with ``memoryd run``).
* ``get(name)`` / ``all_specs()`` look pipelines up; built-in pipeline modules
  (:data:`BUILTIN_MODULES`) are imported on first lookup, so registering is just
  defining the function in one of them.
* A pipeline must be safe to kill at any instant and to run again: it keeps
  its progress in ``ctx.memory.store`` (``kv_get``/``kv_set`` inside
  ``store.atomic()`` together with the writes it covers), never in memory.
* With ``ctx.dry_run`` it writes nothing (no memories, no kv, no files) and
  says in ``counts``/``notes`` what it would have done.
* Memory writes carry ``actor=ctx.actor`` (``"<name>:<run_id>"``) so a run's
  changes can be found in history (``memoryd dream rollback`` does).
* Raising fails the run (recorded with the error); a problem with one agent
  that should not stop the others goes into ``result.errors`` instead, which
  also marks the run ``error`` but keeps the counts.
* A loop over agents (or other independent units: decay groups) goes through
  ``ctx.each(result, agents, step)``: a step that raises is logged with its
  traceback and recorded in ``result.errors`` as ``agent NAME: ...``, and the
  loop goes on with the next one, so one broken agent never blocks the others.
  When some units failed and others ran through, the run's status is
  ``partial``; when every unit failed it is ``error``.

Running (lock, run record, interrupted runs) is :mod:`memoryd.pipelines.runs`'s
job; scheduling is :mod:`memoryd.pipelines.scheduler`'s.
"""

from __future__ import annotations

import importlib
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from memoryd.access import workspace_owner
from memoryd.errors import InvalidInputError, NotFoundError

if TYPE_CHECKING:
    from memoryd.core import Memory
    from memoryd.settings import Settings
    from memoryd.workspace import Workspace

Clock = Callable[[], datetime]
Sleep = Callable[[float], None]
T = TypeVar("T")

#: Modules that define the built-in pipelines; imported lazily, in this order. A module
#: that does not exist yet (a pipeline still being written) is skipped.
BUILTIN_MODULES = (
    "memoryd.pipelines.digest",
    "memoryd.pipelines.sync",
    "memoryd.pipelines.dream",
    "memoryd.pipelines.promote",
    "memoryd.pipelines.decay",
    "memoryd.pipelines.structured",
    "memoryd.pipelines.commitments",
    "memoryd.pipelines.lessons",
    "memoryd.pipelines.wiki",
)


@dataclass
class RunResult:
    """What one run did: ``counts`` (e.g. ``{"batches": 3, "added": 12}``), ``notes``
    (human-readable lines: what was skipped and why, what a dry run would do),
    ``errors`` (problems that did not stop the run; any makes its status ``error``),
    and, from :meth:`PipelineContext.each`, the units (agents) that ``failed`` and
    how many ``succeeded``: some of each makes the status ``partial``."""

    counts: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    succeeded: int = 0

    def count(self, key: str, n: int = 1) -> None:
        self.counts[key] = self.counts.get(key, 0) + n

    def note(self, text: str) -> None:
        self.notes.append(text)

    def error(self, text: str) -> None:
        self.errors.append(text)

    def merge(self, other: RunResult) -> None:
        for k, v in other.counts.items():
            self.count(k, v)
        self.notes.extend(other.notes)
        self.errors.extend(other.errors)
        self.failed.extend(other.failed)
        self.succeeded += other.succeeded

    @property
    def status(self) -> str:
        if self.failed and self.succeeded:
            return "partial"
        return "error" if self.errors else "ok"


@dataclass
class PipelineContext:
    """Everything a pipeline may use. Pipelines call ``memory`` (never the layers
    below it directly, except ``memory.store`` for kv progress and ``atomic()``)."""

    memory: Memory
    name: str
    run_id: str
    clock: Clock
    dry_run: bool = False
    agent: str | None = None  # only this agent; None: every known agent
    log: logging.Logger = field(default_factory=lambda: logging.getLogger("memoryd.pipelines"))
    options: dict[str, Any] = field(default_factory=dict)  # pipeline-specific, e.g. from the CLI
    sleep: Sleep = time.sleep  # rate-control pauses; tests pass one that records
    _paced: bool = field(default=False, repr=False)

    def pace(self) -> None:
        """Seed 001's rate control: before every LLM batch of a run but the first (across
        agents and days), wait ``digest.batch_pause_s``, so the model sees batches
        spaced however the work is split (digest and the dream's diary step)."""
        pause = self.settings.digest.batch_pause_s
        if self._paced and pause > 0:
            self.sleep(pause)
        self._paced = True

    @property
    def settings(self) -> Settings:
        return self.memory.settings

    @property
    def user_id(self) -> str:
        """The user that owns the workspaces' memories (``workspace.user_id``)."""
        return workspace_owner(self.memory.settings)

    @property
    def actor(self) -> str:
        """What memory writes of this run are attributed to in history."""
        return f"{self.name}:{self.run_id}"

    def now(self) -> datetime:
        return self.clock()

    def agents(self) -> list[str]:
        """The agents this run covers: the ``--agent`` filter, or every known agent."""
        from memoryd.workspace import known_agents

        if self.agent is not None:
            return [self.agent]
        return known_agents(self.memory.settings, self.memory.store)

    def workspace(self, agent_id: str) -> Workspace:
        from memoryd.workspace import resolve_workspace

        return resolve_workspace(self.memory.settings, agent_id, self.memory.store)

    def each(
        self,
        result: RunResult,
        units: Iterable[T],
        step: Callable[[T], RunResult | None],
        *,
        label: Callable[[T], str] = "agent {}".format,
    ) -> None:
        """Run ``step`` for each unit, isolated: one that raises does not stop the rest.

        A returned :class:`RunResult` is merged into ``result``. A failure is logged
        with its traceback and recorded as ``"<label>: <error>"`` in ``result.errors``
        (and the label in ``result.failed``); the unit's progress stays where its last
        commit left it, so the next run retries exactly that unit. Any exception is
        caught, not only the expected ones: a bug that hits one agent's data must not
        stop every other agent, and the run record says what failed.
        """
        for unit in units:
            who = label(unit)
            try:
                part = step(unit)
            except Exception as exc:  # isolated and recorded, never hidden (see above)
                self.log.exception("%s: %s failed; going on with the others", self.name, who)
                message = f"{type(exc).__name__}: {exc}"
                result.error(
                    f"{who}: {message[:500]} (the others went on; "
                    f"`memoryd run {self.name}` retries it, the log has the traceback)"
                )
                result.failed.append(who)
                continue
            if part is not None:
                result.merge(part)
            result.succeeded += 1


PipelineFn = Callable[[PipelineContext], RunResult]


@dataclass(frozen=True)
class PipelineSpec:
    name: str
    fn: PipelineFn
    schedule: str  # 5-field crontab, in settings.pipelines.timezone
    description: str
    # an opt-in pipeline says when it is on; off, it is neither scheduled nor caught up
    opt_in: Callable[[Settings], bool] | None = None

    def is_on(self, settings: Settings) -> bool:
        return self.name not in settings.pipelines.disabled and (
            self.opt_in is None or self.opt_in(settings)
        )


_REGISTRY: dict[str, PipelineSpec] = {}
_loaded = False


def _check_crontab(expr: str, name: str) -> str:
    fields = expr.split()
    if len(fields) != 5:
        raise InvalidInputError(
            f"schedule {expr!r} of pipeline {name!r} is not a 5-field crontab",
            'write "minute hour day month weekday", e.g. "*/15 * * * *" or "0 2 * * *"',
        )
    return " ".join(fields)


def register(spec: PipelineSpec) -> PipelineSpec:
    """Add ``spec``; registering the same function again (a module reload) is harmless."""
    old = _REGISTRY.get(spec.name)
    if old is not None and (old.fn.__module__, old.fn.__qualname__) != (
        spec.fn.__module__,
        spec.fn.__qualname__,
    ):
        raise InvalidInputError(
            f"two pipelines are named {spec.name!r}: {old.fn.__module__} and {spec.fn.__module__}",
            "give one of them another name",
        )
    _REGISTRY[spec.name] = PipelineSpec(
        spec.name,
        spec.fn,
        _check_crontab(spec.schedule, spec.name),
        spec.description,
        spec.opt_in,
    )
    return _REGISTRY[spec.name]


def unregister(name: str) -> None:
    """Remove pipeline ``name`` (tests, plugins being unloaded); unknown names are ignored."""
    _REGISTRY.pop(name, None)


def pipeline(
    name: str,
    *,
    schedule: str,
    description: str = "",
    opt_in: Callable[[Settings], bool] | None = None,
) -> Callable[[PipelineFn], PipelineFn]:
    """Register the decorated function as pipeline ``name`` (see the module docstring)."""

    def wrap(fn: PipelineFn) -> PipelineFn:
        doc = description or (fn.__doc__ or "").strip().split("\n")[0]
        register(PipelineSpec(name, fn, schedule, doc, opt_in))
        return fn

    return wrap


def load_builtin() -> None:
    """Import the built-in pipeline modules (each registers itself)."""
    global _loaded
    if _loaded:
        return
    for module in BUILTIN_MODULES:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:  # the module exists, one of its imports is missing
                raise
    _loaded = True


def all_specs() -> list[PipelineSpec]:
    """Every registered pipeline, built-in ones in :data:`BUILTIN_MODULES` order."""
    load_builtin()
    order = {m: n for n, m in enumerate(BUILTIN_MODULES)}
    return sorted(
        _REGISTRY.values(), key=lambda s: (order.get(s.fn.__module__, len(order)), s.name)
    )


def get(name: str) -> PipelineSpec:
    load_builtin()
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(s.name for s in all_specs()) or "none"
        raise NotFoundError(
            f"no pipeline named {name!r}", f"pick one of: {known} (see `memoryd pipelines`)"
        ) from None
