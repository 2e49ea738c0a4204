"""TTL decay: expired memories become lessons and are archived (never deleted), and
memory/INDEX.md is regenerated. Real store, real embedding model, real files, a fake clock;
the LLM path against a local OpenAI-protocol server with scripted answers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pydantic import ValidationError

from memoryd.core import Memory
from memoryd.embed import Embedder
from memoryd.models import Event, Filters, MemoryRecord, Origin, State
from memoryd.pipelines import registry
from memoryd.pipelines.decay import decay, ttl_class
from memoryd.pipelines.decay_summary import offline_lesson
from memoryd.pipelines.index_md import render_index, write_index
from memoryd.pipelines.lessons_md import PendingBlock, flush, journal, marker
from memoryd.pipelines.registry import PipelineContext, RunResult
from memoryd.settings import DecaySettings, Settings
from tests.fake_llm import FakeLLM

TASKS = [
    "Deploy the billing service to staging before Friday.",
    "The flaky login test failed because the mock clock drifted; fixed it by using a fake clock.",
    "Rotate the API keys of the CI runner.",
]


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """Ada owns the workspaces: her lessons.md and INDEX.md are written there."""
    settings.workspace.user_id = "ada"
    return settings


def run(memory: Memory, clock, run_id: str = "r1", **kw) -> RunResult:  # type: ignore[no-untyped-def]
    return decay(PipelineContext(memory=memory, name="decay", run_id=run_id, clock=clock, **kw))


def workspace(memory: Memory, agent: str) -> Path:
    return memory.settings.home / "workspaces" / agent / "memory"


def seed(memory: Memory, agent: str = "dev", user: str = "ada") -> dict[str, str]:
    """Three tasks, a project fact, a preference, a decision and an uncategorised note."""
    ids: dict[str, str] = {}
    for n, text in enumerate(TASKS):
        ids[f"task{n}"] = memory.add(text, user_id=user, agent_id=agent, category="task")[0].id
    for key, text, category in [
        ("project", "The claw-stack website is served by nginx on port 8080.", "project"),
        ("preference", "Ada prefers answers in British English.", "preference"),
        ("decision", "We chose SQLite over PostgreSQL for single-host installs.", "decision"),
        ("note", "The office wifi is called clawnet.", None),
    ]:
        ids[key] = memory.add(text, user_id=user, agent_id=agent, category=category)[0].id
    return ids


def states(memory: Memory) -> dict[str, State]:
    return {r.id: r.state for r in memory.store.iter_all(Filters(states=[]))}


def test_tasks_expire_after_7_days_and_only_a_real_lesson_among_them_is_kept(
    memory: Memory, clock
) -> None:  # type: ignore[no-untyped-def]
    ids = seed(memory)
    clock.advance(days=6, hours=23)
    assert run(memory, clock).counts.get("archived", 0) == 0  # not yet

    clock.advance(hours=2)
    result = run(memory, clock)
    assert result.status == "ok"
    assert result.counts["archived"] == 3 and result.counts["lessons"] == 1
    now = states(memory)
    assert [now[ids[f"task{n}"]] for n in range(3)] == [State.ARCHIVED] * 3
    for key in ("project", "preference", "decision", "note"):
        assert now[ids[key]] == State.ACTIVE

    lessons = memory.list(filters=Filters(categories=["experience"]))
    assert len(lessons) == 1
    lesson = lessons[0]
    assert lesson.agent_id == "dev" and lesson.user_id == "ada"
    assert lesson.metadata["lesson_source"] == "decay"
    assert sorted(lesson.metadata["sources"]) == sorted(ids[f"task{n}"] for n in range(3))
    assert "flaky login test" in lesson.text  # a failure and its fix: a lesson on its own
    assert "Deploy the billing" not in lesson.text and "Rotate the API" not in lesson.text
    assert result.counts.get("not_a_lesson", 0) == 0  # to-dos are not even candidates

    # the lesson is in the shared pool: another agent of the same user finds it
    hits = memory.search("flaky login test mock clock", user_id="ada", agent_id="ops")
    assert hits and hits[0].id == lesson.id and hits[0].memory_type == "shared"

    md = (workspace(memory, "dev") / "lessons.md").read_text()
    assert md.startswith("# Lessons")
    assert md.count(marker(lesson.id)) == 1 and "flaky login test" in md


def test_an_expired_task_is_archived_not_written_up_as_a_lesson(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    """Issue 31: "Lesson from 1 expired task memory of agent ops: I'm heading out for the
    day, see you tomorrow." reached every agent through the shared pool."""
    sign_off = memory.add(
        "I'm heading out for the day, see you tomorrow.", user_id="ada", agent_id="ops",
        category="task",
    )[0].id  # fmt: skip
    todo = memory.add("Rotate the AWS access keys by Friday.", user_id="ada", agent_id="ops",
                      category="task")[0].id  # fmt: skip
    clock.advance(days=8)
    result = run(memory, clock)
    assert result.counts["archived"] == 2 and "lessons" not in result.counts
    assert memory.list(filters=Filters(categories=["experience"])) == []
    assert not (workspace(memory, "ops") / "lessons.md").exists()
    for mid in (sign_off, todo):
        assert memory.get(mid).state == State.ARCHIVED
        assert "nothing worth a lesson" in (memory.history(mid)[-1].reason or "")


def test_the_lesson_gate() -> None:
    """One gate for every lesson writer: a failure and what fixed it, with substance."""
    from memoryd.pipelines.lessons_text import lesson_problem

    real = [
        "The flaky login test failed because the mock clock drifted; fixed it by using a fake clock.",
        "Install requests. Wrong: exec: pip install requests failed: error: externally-managed-"
        "environment. Right: exec: python3 -m venv .venv && .venv/bin/pip install requests. "
        "Why: pip refuses because the environment is externally managed.",
        "Summarise the README. Wrong: read /x/readme.md failed: ENOENT: no such file or "
        "directory. Right: read /x/README.md. Why: The file name is case-sensitive on this host.",
    ]
    junk = {
        "Lesson from 1 expired task memory of agent ops (2026-03-20): I'm heading out for "
        "the day, see you tomorrow.": "chit-chat",
        "Search the TODOs. Wrong: exec: grep -rn TODO srcc failed: grep: srcc: No such file or "
        "directory. Right: exec: grep -rn TODO src. Why: the first attempt failed with: grep: "
        "srcc: No such file or directory.": "a typo corrected on retry",
        "Show the notes. Wrong: exec: cat notes.txt failed: cat: notes.txt: No such file or "
        "directory. Right: exec: cat docs/notes.txt. Why: the first attempt failed with: cat: "
        "notes.txt: No such file or directory.": "a missing file",
        "Rotate the AWS access keys of the CI runner by Friday.": "no failure",
        "The billing deploy failed twice on Tuesday afternoon.": "no fix",
    }
    assert [lesson_problem(t) for t in real] == [None, None, None]
    for text, why in junk.items():
        assert (lesson_problem(text) or "").startswith(why), text


def test_archived_memories_leave_default_search_but_are_never_deleted(
    memory: Memory, clock
) -> None:  # type: ignore[no-untyped-def]
    ids = seed(memory)
    clock.advance(days=8)
    run(memory, clock, run_id="r7")
    target = ids["task0"]

    default = memory.search("deploy billing service staging", user_id="ada", agent_id="dev")
    assert target not in [h.id for h in default]
    archived = memory.search(
        "deploy billing service staging", user_id="ada", agent_id="dev", include_archived=True
    )
    assert archived[0].id == target and archived[0].record.state == State.ARCHIVED

    history = memory.history(target)
    assert [h.event for h in history] == [Event.ADD, Event.ARCHIVE]
    assert history[-1].actor == "decay:r7"
    assert "TTL decay" in (history[-1].reason or "") and "tasks" in (history[-1].reason or "")
    # restore undoes it
    assert memory.restore(target).state == State.ACTIVE


def test_agent_memories_expire_after_30_days_and_personal_ones_never(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    ids = seed(memory)
    clock.advance(days=29)
    run(memory, clock)
    assert states(memory)[ids["project"]] == State.ACTIVE
    clock.advance(days=2)
    result = run(memory, clock, run_id="r2")
    assert result.counts["archived"] == 1
    clock.advance(days=3650)
    run(memory, clock, run_id="r3")
    now = states(memory)
    assert now[ids["project"]] == State.ARCHIVED
    for key in ("preference", "decision", "note"):
        assert now[ids[key]] == State.ACTIVE
    # lessons are "knowledge": they never decay into lessons of lessons
    assert all(
        r.state == State.ACTIVE for r in memory.list(filters=Filters(categories=["experience"]))
    )


def test_rerun_changes_nothing(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    seed(memory)
    clock.advance(days=8)
    run(memory, clock)
    md = (workspace(memory, "dev") / "lessons.md").read_bytes()
    index = workspace(memory, "dev") / "INDEX.md"
    index_before = index.read_bytes()
    before = {r.id: (r.state, r.text) for r in memory.store.iter_all(Filters(states=[]))}

    again = run(memory, clock, run_id="r2")
    assert again.counts["expired"] == 0 and "index_updated" not in again.counts
    assert {r.id: (r.state, r.text) for r in memory.store.iter_all(Filters(states=[]))} == before
    assert (workspace(memory, "dev") / "lessons.md").read_bytes() == md
    assert index.read_bytes() == index_before


def test_dry_run_writes_nothing(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    seed(memory)
    clock.advance(days=8)
    before = states(memory)
    kv_before = memory.store.kv_items()
    result = run(memory, clock, dry_run=True)
    assert result.counts["would_archive"] == 3 and result.counts["would_write_lessons"] == 1
    assert any("would archive 3 task memories of agent dev" in n for n in result.notes)
    assert states(memory) == before
    assert memory.store.kv_items() == kv_before
    assert not workspace(memory, "dev").exists()


def test_agent_filter_only_touches_that_agent(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    seed(memory, agent="dev")
    seed(memory, agent="ops")
    clock.advance(days=8)
    result = run(memory, clock, agent="ops")
    assert result.counts["archived"] == 3
    by_agent = memory.store.counts_by("agent_id", Filters(states=[State.ARCHIVED]))
    assert by_agent == {"ops": 3}
    assert (workspace(memory, "ops") / "lessons.md").is_file()
    assert not (workspace(memory, "dev") / "lessons.md").exists()


def test_memories_without_agent_go_to_the_default_agents_lessons(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    memory.add(
        "Renewing the TLS certificate of docs.example.org failed because port 80 is closed; "
        "fixed it by using the DNS challenge instead.",
        user_id="ada",
        category="task",
    )
    clock.advance(days=8)
    run(memory, clock)
    lesson = memory.list(filters=Filters(categories=["experience"]))[0]
    assert lesson.agent_id is None
    assert marker(lesson.id) in (workspace(memory, "main") / "lessons.md").read_text()


def test_recently_updated_memories_do_not_expire(settings: Settings, embedder: Embedder) -> None:
    """An update restarts the TTL (the store stamps it with the Memory's clock)."""
    from tests.conftest import FakeClock

    clock = FakeClock("2026-03-17T09:00:00+00:00")
    with Memory(settings, embedder=embedder, clock=clock) as memory:
        old = memory.add("Write the Q3 report.", user_id="ada", agent_id="dev", category="task")
        kept = memory.add("Ship the Q3 launch.", user_id="ada", agent_id="dev", category="task")
        clock.advance(days=5)
        memory.update(kept[0].id, "Ship the Q3 launch on Monday.")  # updated_at: day 5
        clock.advance(days=3)
        run(memory, clock)
        assert memory.get(old[0].id).state == State.ARCHIVED
        assert memory.get(kept[0].id).state == State.ACTIVE


def test_short_term_memories_and_workspace_chunks_are_left_alone(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    short = memory.add(
        "Debugged the cache.", user_id="ada", agent_id="dev", run_id="2026-03-27", category="task"
    )
    chunk = MemoryRecord(
        id="chunk-1",
        text="- [ ] renew the domain",
        user_id="ada",
        agent_id="dev",
        category="task",
        origin=Origin.CHUNK,
        created_at=clock(),
        updated_at=clock(),
    )
    memory.write_records([chunk])
    clock.advance(days=30)
    assert run(memory, clock).counts["expired"] == 0
    assert memory.get(short[0].id).state == State.ACTIVE
    assert memory.get("chunk-1").state == State.ACTIVE

    memory.settings.decay.include_short_term = True
    assert run(memory, clock, run_id="r2").counts["archived"] == 1


def test_mapping_is_configurable_and_checked() -> None:
    s = DecaySettings()
    assert ttl_class("preference", s) == "personal"
    assert ttl_class("Environment", s) == "system"
    assert ttl_class("task", s) == "tasks"
    assert ttl_class("project", s) == "agents"
    assert ttl_class("experience", s) == "knowledge"
    assert ttl_class(None, s) == ttl_class("unheard-of", s) == "personal"
    custom = DecaySettings(classes={"decision": "agents"}, default_class="tasks")
    assert ttl_class("decision", custom) == "agents" and ttl_class(None, custom) == "tasks"
    with pytest.raises(ValidationError, match="ttl_days"):
        DecaySettings(classes={"decision": "forever"})
    with pytest.raises(ValidationError, match="positive"):
        DecaySettings(
            ttl_days={"personal": None, "system": None, "knowledge": None, "tasks": 0, "agents": 30}
        )


def test_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "MEMORYD_DECAY__TTL_DAYS",
        json.dumps({"personal": None, "system": None, "knowledge": None, "tasks": 3, "agents": 14}),
    )
    monkeypatch.setenv("MEMORYD_DECAY__CLASSES", json.dumps({"ticket": "tasks"}))
    s = Settings()
    assert s.decay.ttl_days["tasks"] == 3 and ttl_class("ticket", s.decay) == "tasks"


def test_offline_lesson_keeps_key_sentences_in_order(clock) -> None:  # type: ignore[no-untyped-def]
    texts = [
        "Checked the dashboard.",
        "The deploy failed because the disk was full; fixed it by pruning old images.",
        "Checked the dashboard again.",
        "Always prune docker images before a deploy on the small VPS.",
        "Lunch at noon.",
    ]
    members = [
        MemoryRecord(
            id=f"m{n}",
            text=t,
            user_id="ada",
            created_at=clock() + timedelta(hours=n),
            updated_at=clock() + timedelta(hours=n),
        )
        for n, t in enumerate(texts)
    ]
    lesson = offline_lesson(members, category="task", agent_id="dev", n=2, max_chars=2000)
    assert lesson.startswith("Lesson from 5 expired task memories of agent dev (2026-03-27)")
    body = lesson.split(": ", 1)[1]
    assert body == texts[1] + " " + texts[3]
    assert offline_lesson(members, category="task", agent_id="dev", n=2, max_chars=2000) == lesson


def test_big_groups_are_split(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    memory.settings.decay.max_group = 4
    for n in range(10):
        memory.add(
            f"Ticket {n}: close stale issue number {n * 7}.",
            user_id="ada",
            agent_id="dev",
            category="task",
        )
        clock.advance(minutes=1)
    clock.advance(days=8)
    result = run(memory, clock)
    assert result.counts["groups"] == 3 and result.counts["archived"] == 10
    assert "lessons" not in result.counts  # closing tickets teaches nothing


# -- LLM ---------------------------------------------------------------------------------------


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


@pytest.fixture
def llm_memory(settings: Settings, embedder: Embedder, clock, fake: FakeLLM) -> Iterator[Memory]:  # type: ignore[no-untyped-def]
    settings.llm.provider = "openai"
    settings.llm.openai.base_url = fake.url
    settings.llm.openai.timeout_s = 2.0
    with Memory(settings, embedder=embedder, clock=clock) as m:
        yield m


PROJECT = [
    "The login tests were flaky because the mock clock drifted; a fake clock fixed them.",
    "The billing service deploys to staging every Friday.",
    "The claw-stack docs moved to docs.claw-stack.example.",
]


def seed_project(memory: Memory) -> list[str]:
    """Project state (class agents: 30 days), the group the LLM summarises."""
    return [
        memory.add(text, user_id="ada", agent_id="dev", category="project")[0].id
        for text in PROJECT
    ]


def test_the_llm_writes_the_lessons_and_only_lessons_are_kept(
    llm_memory: Memory, fake: FakeLLM, clock
) -> None:  # type: ignore[no-untyped-def]
    seed_project(llm_memory)
    clock.advance(days=31)
    fake.script(
        json.dumps(
            {
                "lessons": [
                    "Use a fake clock in the login tests: the mock clock drifted and made them flaky.",
                    "Deploy the billing service to staging before the Friday release.",
                ]
            }
        )
    )
    result = run(llm_memory, clock)
    assert result.counts["lessons"] == 1 and result.counts["not_a_lesson"] == 1
    texts = sorted(r.text for r in llm_memory.list(filters=Filters(categories=["experience"])))
    assert texts == [
        "Use a fake clock in the login tests: the mock clock drifted and made them flaky."
    ]
    assert any("no lesson (no failure" in n and "Deploy the billing" in n for n in result.notes)
    shown = fake.requests[-1]["messages"]
    assert "expired memories" in shown[0]["content"]
    assert {m["text"] for m in json.loads(shown[1]["content"])["memories"]} == set(PROJECT)
    lesson = llm_memory.list(filters=Filters(categories=["experience"]))[0]
    assert lesson.metadata["summariser"] == "llm"


def test_malformed_llm_json_is_retried_then_falls_back_offline(
    llm_memory: Memory, fake: FakeLLM, clock
) -> None:  # type: ignore[no-untyped-def]
    seed_project(llm_memory)
    clock.advance(days=31)
    # a fenced answer with a trailing comma is repaired; no retry needed
    fake.script(
        '```json\n{"lessons": ["Use short-lived CI runner keys: an expired key failed'
        ' every build in March.",]}\n```'
    )
    assert run(llm_memory, clock).counts["lessons"] == 1

    seed_project(llm_memory)  # the same memories again (the first ones are archived)
    clock.advance(days=31)
    fake.script("not json at all", '{"lesson": 42}')  # twice unusable
    result = run(llm_memory, clock, run_id="r2")
    assert result.counts["llm_fallbacks"] == 1 and result.counts["archived"] == 3
    lesson = [
        r
        for r in llm_memory.list(filters=Filters(categories=["experience"]))
        if r.metadata["summariser"] == "offline-fallback"
    ]
    assert lesson and "mock clock drifted" in lesson[0].text  # the extractive lesson
    assert any("the LLM failed" in n for n in result.notes)


def test_the_llm_may_keep_no_lesson(llm_memory: Memory, fake: FakeLLM, clock) -> None:  # type: ignore[no-untyped-def]
    seed_project(llm_memory)
    clock.advance(days=31)
    fake.script('{"lessons": []}')
    result = run(llm_memory, clock)
    assert result.counts["archived"] == 3 and "lessons" not in result.counts
    history = llm_memory.history(llm_memory.list(filters=Filters(states=[State.ARCHIVED]))[0].id)
    assert "nothing worth a lesson" in (history[-1].reason or "")


# -- lessons.md journal ------------------------------------------------------------------------


def test_a_journaled_block_is_appended_exactly_once(memory: Memory, tmp_path: Path) -> None:
    path = tmp_path / "memory" / "lessons.md"
    block = PendingBlock("L1", str(path), f"## day\n{marker('L1')}\nA lesson.\n")
    journal(memory.store, "decay", [block])
    # killed after appending but before clearing the journal: the marker prevents a repeat
    flush(memory.store, "decay")
    journal(memory.store, "decay", [block])
    assert flush(memory.store, "decay") == 0
    assert path.read_text().count(marker("L1")) == 1
    assert memory.store.kv_get("decay:lessons_md") == []


# -- INDEX.md ----------------------------------------------------------------------------------


def test_index_lists_counts_recent_items_and_topic_files(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    seed(memory)
    mem_dir = workspace(memory, "dev")
    (mem_dir / "entities").mkdir(parents=True)
    (mem_dir / "entities" / "claw-stack.md").write_text("# claw-stack\n")
    (mem_dir / "2026-03-27.md").write_text("# diary\n")  # a diary is not a topic file
    clock.advance(days=8)
    run(memory, clock)
    text = (mem_dir / "INDEX.md").read_text()
    assert text.startswith("# Memory index: dev")
    assert "5 active, 3 archived" in text
    assert "| task |" not in text and "| experience | 1 |" in text
    assert "- [entities/claw-stack.md](entities/claw-stack.md)" in text
    assert "- [lessons.md](lessons.md)" in text
    assert "2026-03-27.md" not in text
    assert "## Recent" in text and "British English" in text
    assert not [p for p in mem_dir.iterdir() if p.name.startswith(".")]  # no temp files left


def test_index_stays_within_its_budget_and_is_deterministic(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    for n in range(60):
        memory.add(
            f"Fact number {n} about the {['alpha', 'beta', 'gamma'][n % 3]} service, which is rather long-winded "
            "so that the recent list needs trimming.",
            user_id="ada",
            agent_id="dev",
            category=f"cat{n % 12}",
        )
    mem_dir = workspace(memory, "dev")
    for n in range(60):
        (mem_dir / "topics").mkdir(parents=True, exist_ok=True)
        (mem_dir / "topics" / f"topic-{n:02d}.md").write_text("x\n")
    ws = PipelineContext(memory=memory, name="decay", run_id="x", clock=clock).workspace("dev")
    text = render_index(memory, ws, max_bytes=2048, recent=8)
    assert len(text.encode()) <= 2048
    assert "more in memory/" in text and "| … " in text and "## Recent" not in text
    assert "[topics/topic-00.md](topics/topic-00.md)" in text
    assert render_index(memory, ws, max_bytes=2048, recent=8) == text
    first = write_index(memory, ws)
    assert first.changed and first.bytes <= 2048
    assert not write_index(memory, ws).changed


def test_decay_is_registered() -> None:
    spec = registry.get("decay")
    assert spec.fn is decay and spec.schedule == "30 3 * * *"


# -- interfaces: --include-archived on the CLI (local and --url) and over HTTP -------------------


def test_search_include_archived_on_the_cli_and_over_http(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedder: Embedder, live_server
) -> None:  # type: ignore[no-untyped-def]
    import httpx
    from typer.testing import CliRunner

    from memoryd.api import create_app
    from memoryd.cli import app
    from tests.conftest import FakeClock

    monkeypatch.setenv("MEMORYD_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("MEMORYD_AUDIT__ENABLED", "false")
    monkeypatch.chdir(tmp_path)
    settings = Settings()
    settings.workspace.watch = False
    clock = FakeClock((datetime.now(UTC) - timedelta(days=10)).isoformat())
    query = "rotate the CI runner API keys"
    with Memory(settings, embedder=embedder, clock=clock) as memory:
        (event,) = memory.add(TASKS[2], user_id="ada", agent_id="dev", category="task")
        clock.now = datetime.now(UTC)
        assert run(memory, clock).counts["archived"] == 1

        runner = CliRunner()

        def cli(*args: str) -> list[dict]:
            result = runner.invoke(app, ["search", query, "--user", "ada", "--json", *args])
            assert result.exit_code == 0, result.output
            return json.loads(result.output)["results"]

        assert event.id not in [h["id"] for h in cli()]
        (hit,) = [h for h in cli("--include-archived") if h["id"] == event.id]
        assert hit["state"] == "archived"
        refused = runner.invoke(app, ["search", query, "--include-archived", "--combined"])
        assert refused.exit_code != 0 and "--combined" in refused.output

        with live_server(create_app(memory=memory)) as server:
            body = {"query": query, "user_id": "ada", "include_archived": True}
            found = httpx.post(f"{server.url}/memory/search", json=body).json()["results"]
            assert [h["state"] for h in found if h["id"] == event.id] == ["archived"]
            body["include_archived"] = False
            found = httpx.post(f"{server.url}/memory/search", json=body).json()["results"]
            assert event.id not in [h["id"] for h in found]
            remote = cli("--include-archived", "--url", server.url)
            assert event.id in [h["id"] for h in remote]


def test_settings_from_a_toml_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "memoryd.toml"
    config.write_text(
        "[decay]\n"
        "ttl_days = { tasks = 3, agents = 14, system = inf }\n"  # merged over the defaults
        'default_class = "agents"\n'
        "[decay.classes]\n"
        'ticket = "tasks"\n'
        "[lessons]\n"
        'sessions_dir = "/srv/openclaw/{agent}/sessions"\n'
    )
    monkeypatch.setenv("MEMORYD_CONFIG", str(config))
    s = Settings()
    assert s.decay.ttl_days == {
        "personal": None,
        "system": None,
        "knowledge": None,
        "tasks": 3,
        "agents": 14,
    }
    assert ttl_class("ticket", s.decay) == "tasks" and ttl_class(None, s.decay) == "agents"
    assert ttl_class("project", s.decay) == "agents"  # the default mappings stay
    assert s.lessons.sessions_dir == "/srv/openclaw/{agent}/sessions"


def test_the_readme_config_example_is_valid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    readme = (Path(__file__).parent.parent / "README.md").read_text()
    section = readme.split("## Lessons and TTL decay", 1)[1]
    example = section.split("```toml\n", 1)[1].split("```", 1)[0]
    (tmp_path / "memoryd.toml").write_text(example)
    monkeypatch.setenv("MEMORYD_CONFIG", str(tmp_path / "memoryd.toml"))
    s = Settings()
    assert ttl_class("ticket", s.decay) == "tasks" and s.decay.ttl_days["personal"] is None
    assert s.decay.ttl_days == DecaySettings().ttl_days  # the example spells out the defaults


def test_memoryd_run_decay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedder: Embedder
) -> None:
    from typer.testing import CliRunner

    from memoryd.cli import app
    from tests.conftest import FakeClock

    monkeypatch.setenv("MEMORYD_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("MEMORYD_AUDIT__ENABLED", "false")
    monkeypatch.chdir(tmp_path)
    clock = FakeClock((datetime.now(UTC) - timedelta(days=10)).isoformat())
    with Memory(Settings(), embedder=embedder, clock=clock) as memory:
        ids = seed(memory)
    runner = CliRunner()

    dry = runner.invoke(app, ["run", "decay", "--dry-run", "--json"])
    assert dry.exit_code == 0, dry.output
    record = json.loads(dry.output)
    assert record["dry_run"] and record["counts"]["would_archive"] == 3
    real = runner.invoke(app, ["run", "decay", "--agent", "dev"])
    assert real.exit_code == 0, real.output
    assert "archived: 3" in real.output and "lessons: 1" in real.output
    with Memory(Settings(), embedder=embedder) as memory:
        assert memory.get(ids["task0"]).state == State.ARCHIVED
        (run_record,) = [r for r in memory.store.kv_get("pipelines:runs") if not r["dry_run"]]
        assert memory.history(ids["task0"])[-1].actor == f"decay:{run_record['run_id']}"
