"""Lessons from session logs: failure -> retry -> success episodes in OpenClaw session
transcripts (synthetic ones in tests/data/sessions, in OpenClaw's JSONL format) become
shared `experience` lessons and lines of memory/lessons.md. Real store, real embedding
model, real files; the LLM paths against a local OpenAI-protocol server."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memoryd.core import Memory
from memoryd.embed import Embedder
from memoryd.errors import InvalidInputError
from memoryd.models import Filters
from memoryd.pipelines import registry
from memoryd.pipelines.lessons import lessons, sessions_dir
from memoryd.pipelines.lessons_md import marker
from memoryd.pipelines.lessons_sessions import ScanState, is_failure, scan
from memoryd.pipelines.lessons_text import overlap
from memoryd.pipelines.registry import PipelineContext, RunResult
from memoryd.settings import Settings
from tests.fake_llm import FakeLLM

DATA = Path(__file__).parent / "data" / "sessions"
PIP = "3f6c2a10-8b1e-4d2a-9c55-1e2f3a4b5c6d.jsonl"
PIP_AGAIN = "5e4d3c2b-1a09-4f8e-b7d6-c5b4a3928170.jsonl"
READ = "9a7b5c3d-2e1f-4a6b-8c9d-0e1f2a3b4c5d.jsonl"
NPM = "c1d2e3f4-a5b6-4c7d-8e9f-a0b1c2d3e4f5.jsonl"


def run(memory: Memory, clock, run_id: str = "r1", **kw: Any) -> RunResult:  # type: ignore[no-untyped-def]
    return lessons(PipelineContext(memory=memory, name="lessons", run_id=run_id, clock=clock, **kw))


def install(settings: Settings, agent: str = "dev", names: tuple[str, ...] = ()) -> Path:
    """Copy fixture transcripts where OpenClaw keeps them: <openclaw_dir>/agents/<agent>/sessions."""
    target = settings.workspace.openclaw_dir / "agents" / agent / "sessions"
    target.mkdir(parents=True, exist_ok=True)
    for path in sorted(DATA.glob("*.jsonl")):
        if not names or path.name in names:
            shutil.copy(path, target / path.name)
    (target / "sessions.json").write_text("{}")  # OpenClaw's session store: not a transcript
    return target


def stored(memory: Memory) -> list[Any]:
    return sorted(
        memory.list(filters=Filters(categories=["experience"])), key=lambda r: r.metadata["tool"]
    )


def lessons_md(memory: Memory, agent: str = "dev") -> Path:
    return memory.settings.home / "workspaces" / agent / "memory" / "lessons.md"


# -- reading transcripts -----------------------------------------------------------------------


def test_episodes_in_the_fixture_transcripts() -> None:
    found = {}
    for path in sorted(DATA.glob("*.jsonl")):
        result = scan(path.read_bytes(), ScanState(), session_id=path.stem, retry_window=6)
        found[path.name] = result
    pip = found[PIP].episodes
    assert len(pip) == 1
    assert pip[0].session_id == PIP.removesuffix(".jsonl")
    assert pip[0].scenario == (
        "Install the requests package and check the status page of claw-stack."
    )  # the channel's timestamp prefix is gone
    assert pip[0].failures[0].args == {"command": "pip install requests"}
    assert "venv" in pip[0].success.args["command"]
    assert any("externally managed" in n for n in pip[0].notes)
    assert found[PIP].state.offset == (DATA / PIP).stat().st_size  # nothing left open

    read = found[READ]
    # the case-sensitive path is a lesson; the timeout retried as is and the refused rm are not
    assert [e.tool for e in read.episodes] == ["read"]
    rm_line = next(
        n for n, line in enumerate((DATA / READ).read_text().splitlines(), 1) if "call_rm" in line
    )
    assert read.state.line == rm_line - 1  # resumes at the failure still waiting for a retry

    npm = found[NPM].episodes  # no isError field: the exit codes decide
    assert len(npm) == 1 and npm[0].success.args == {"command": "npm test -- --runInBand"}
    assert found[PIP_AGAIN].bad_lines == 1


@pytest.mark.parametrize(
    ("message", "output", "failed"),
    [
        ({"isError": True}, "ok", True),
        ({"isError": False}, "all good", False),
        ({"isError": False, "details": {"exitCode": 2}}, "", True),
        ({"isError": False}, "FAIL\nCommand exited with code 1", True),
        ({}, "bash: rg: command not found", True),
        ({}, "Traceback (most recent call last):", True),
        ({}, "printed an error count of 0", False),
        ({"isError": False}, "ERROR lines in the log: 3", False),  # isError is believed
    ],
)
def test_failure_detection(message: dict[str, Any], output: str, failed: bool) -> None:
    assert is_failure(message, output) is failed


def test_anthropic_style_blocks_are_read_too() -> None:
    lines = [
        {"type": "session", "version": 3, "id": "s-anthropic"},
        {"type": "message", "message": {"role": "user", "content": "List the open ports."}},
        {
            "type": "message",
            "message": {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "tu1",
                        "name": "bash",
                        "input": {"command": "netstat -tlnp"},
                    }
                ],
            },
        },
        {
            "type": "message",
            "message": {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "tu1",
                        "is_error": True,
                        "content": "netstat: command not found",
                    }
                ],
            },
        },
        {
            "type": "message",
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "netstat is not installed here; ss does the same."},
                    {
                        "type": "tool_use",
                        "id": "tu2",
                        "name": "bash",
                        "input": {"command": "ss -tlnp"},
                    },
                ],
            },
        },
        {
            "type": "message",
            "message": {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "tu2", "content": "LISTEN 0 128 *:22"}
                ],
            },
        },
    ]
    data = "".join(json.dumps(x) + "\n" for x in lines).encode()
    result = scan(data, ScanState(), session_id="file-stem", retry_window=6)
    (episode,) = result.episodes
    assert episode.session_id == "s-anthropic" and episode.scenario == "List the open ports."
    assert episode.notes == ["netstat is not installed here; ss does the same."]


# -- the pipeline ------------------------------------------------------------------------------


def test_lessons_from_transcripts(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    install(memory.settings)
    result = run(memory, clock)
    assert result.status == "ok", result.errors
    assert result.counts["sessions"] == 4 and result.counts["episodes"] == 4
    assert result.counts["lessons"] == 3
    assert result.counts["duplicates_overlap"] == 1  # the pip lesson of the second session
    assert result.counts["bad_lines"] == 1
    memory.recalls.flush()  # the duplicate checks searched, but are not recalls to promote
    assert not [k for k in memory.store.kv_items() if k.startswith("recall:")]

    records = {r.metadata["lesson"]["correct_approach"]: r for r in stored(memory)}
    pip = records["exec: python3 -m venv .venv && .venv/bin/pip install requests"]
    assert pip.agent_id == "dev" and pip.user_id == memory.settings.workspace.user_id
    assert pip.metadata["lesson"]["wrong_approach"] == (
        "exec: pip install requests failed: error: externally-managed-environment"
    )
    assert "externally managed" in pip.metadata["lesson"]["reason"]
    assert pip.metadata["extractor"] == "offline"
    read = records["read /home/ada/projects/claw-stack/README.md"]
    assert "case-sensitive" in read.metadata["lesson"]["reason"]
    npm = records["exec: npm test -- --runInBand"]
    assert "SQLITE_BUSY: database is locked" in npm.metadata["lesson"]["wrong_approach"]

    # shared: another agent of the user finds it
    hits = memory.search(
        "pip install externally managed environment",
        user_id=memory.settings.workspace.user_id,
        agent_id="ops",
    )
    assert hits[0].id == pip.id and hits[0].memory_type == "shared"

    md = lessons_md(memory).read_text()
    for record in (pip, read, npm):
        assert md.count(marker(record.id)) == 1
    assert "- **Scenario**: Summarise the README of the claw-stack project." in md
    assert "- **Correct approach**: exec: npm test -- --runInBand" in md
    assert (lessons_md(memory).parent / "INDEX.md").is_file()


def test_rerun_and_lost_progress_store_nothing_twice(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    install(memory.settings)
    run(memory, clock)
    md = lessons_md(memory).read_bytes()
    ids = sorted(r.id for r in stored(memory))

    again = run(memory, clock, run_id="r2")
    assert again.counts.get("lessons", 0) == 0 and again.counts.get("episodes", 0) == 0
    # as if killed after storing the lessons but before saving the read offsets
    memory.store.kv_set("lessons:sessions:dev", {})
    third = run(memory, clock, run_id="r3")
    assert third.counts.get("lessons", 0) == 0 and third.counts["already_stored"] == 3
    assert sorted(r.id for r in stored(memory)) == ids
    assert lessons_md(memory).read_bytes() == md


def test_a_session_still_being_written(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    target = install(memory.settings, names=())
    for p in target.glob("*.jsonl"):
        p.unlink()
    full = (DATA / PIP).read_bytes().splitlines(keepends=True)
    retry = next(n for n, line in enumerate(full) if b"call_pip2" in line)
    session = target / PIP
    # the failure is written, the retry not yet, and the last line is half-written
    session.write_bytes(b"".join(full[:retry]) + full[retry][:40])
    first = run(memory, clock)
    assert first.counts.get("lessons", 0) == 0
    state = memory.store.kv_get("lessons:sessions:dev")[PIP]
    assert state["last_user"].startswith("Install the requests package")

    session.write_bytes(b"".join(full))  # the agent finished
    second = run(memory, clock, run_id="r2")
    assert second.counts["lessons"] == 1
    (lesson,) = stored(memory)
    # the scenario came from before the resume point
    assert lesson.metadata["lesson"]["scenario"].startswith("Install the requests package")
    assert run(memory, clock, run_id="r3").counts.get("lessons", 0) == 0


def test_dry_run_writes_nothing(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    install(memory.settings)
    kv_before = memory.store.kv_items()
    result = run(memory, clock, dry_run=True)
    assert result.counts["would_store"] >= 3
    assert any(n.startswith("would store (dev):") for n in result.notes)
    assert memory.count() == 0 and memory.store.kv_items() == kv_before
    assert not lessons_md(memory).exists()


def test_agent_filter_and_configured_sessions_dir(memory: Memory, clock, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copy(DATA / NPM, elsewhere / NPM)
    install(memory.settings, agent="ops", names=(READ,))
    memory.settings.lessons.sessions = {"qa": elsewhere}
    assert sessions_dir(memory.settings, "qa") == elsewhere
    only = run(memory, clock, agent="qa")
    assert only.counts["lessons"] == 1 and {r.agent_id for r in stored(memory)} == {"qa"}
    every = run(memory, clock, run_id="r2")  # finds ops by its transcript directory
    assert every.counts["lessons"] == 1
    assert {r.agent_id for r in stored(memory)} == {"qa", "ops"}

    memory.settings.lessons.sessions_dir = "{home}/transcripts/{agent}"
    assert sessions_dir(memory.settings, "dev") == memory.settings.home / "transcripts" / "dev"
    memory.settings.lessons.sessions_dir = "{nope}/{agent}"
    with pytest.raises(InvalidInputError) as err:
        sessions_dir(memory.settings, "dev")
    assert "{openclaw_dir}" in (err.value.hint or "")


def test_missing_sessions_dir_is_a_note_not_an_error(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    result = run(memory, clock, agent="nobody")
    assert result.status == "ok" and "no session transcripts" in result.notes[0]


def test_overlap_measure() -> None:
    a = "pip install into system python refused; use a venv"
    assert overlap(a, a) == 1.0
    assert overlap(a, a + " and then retry the install") == 1.0  # nothing new in a
    assert overlap("npm tests lock sqlite; run serially", a) < 0.2


def _episode(user: str, calls: list[tuple[str, str, bool]], note: str | None = None) -> list[Any]:
    """An OpenClaw transcript: the user's request, then (command, output, failed) calls."""
    out: list[Any] = [
        {"type": "session", "version": 3, "id": "s-trivial"},
        {"type": "message", "message": {"role": "user", "content": user}},
    ]
    for n, (command, output, failed) in enumerate(calls):
        content: list[Any] = []
        if n and note:
            content.append({"type": "text", "text": note})
        content.append(
            {"type": "toolCall", "id": f"c{n}", "name": "exec", "arguments": {"command": command}}
        )
        out.append({"type": "message", "message": {"role": "assistant", "content": content}})
        out.append(
            {
                "type": "message",
                "message": {
                    "role": "toolResult",
                    "toolCallId": f"c{n}",
                    "toolName": "exec",
                    "content": [{"type": "text", "text": output}],
                    "isError": failed,
                },
            }
        )
    return out


def test_a_typo_or_a_missing_file_is_not_a_lesson(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    """Issue 31: "grep ... srcc failed" became a shared lesson. A retry that fixes a slip,
    or finds a file elsewhere with nothing learned about why, teaches nothing."""
    target = install(memory.settings, names=(NPM,))
    typo = _episode(
        "Find the TODOs in the project.",
        [
            ("grep -rn TODO srcc", "grep: srcc: No such file or directory", True),
            ("grep -rn TODO src", "src/app.py:12: # TODO: retry", False),
        ],
    )
    missing = _episode(
        "Show me the release notes.",
        [
            ("cat notes.txt", "cat: notes.txt: No such file or directory", True),
            ("cat docs/notes.txt", "Release 2.3: faster search", False),
        ],
    )
    for name, lines in (("typo.jsonl", typo), ("missing.jsonl", missing)):
        (target / name).write_text("".join(json.dumps(x) + "\n" for x in lines))
    result = run(memory, clock)
    assert result.counts["episodes"] == 3 and result.counts["not_a_lesson"] == 2
    assert result.counts["lessons"] == 1  # the npm one: a real failure, a real fix
    assert [r.metadata["tool"] for r in stored(memory)] == ["exec"]
    assert "srcc" not in lessons_md(memory).read_text()
    assert any("a typo corrected on retry" in n for n in result.notes)
    assert any("a missing file" in n for n in result.notes)


# -- the LLM paths -----------------------------------------------------------------------------


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


def responder(body: dict[str, Any]) -> str:
    """A model that knows these four sessions."""
    system = body["messages"][0]["content"]
    question = json.loads(body["messages"][1]["content"])  # [-1] is the retry request
    if "free of duplicates" in system:
        new = question["new"].lower()
        dup = [
            e["index"]
            for e in question["existing"]
            if "venv" in new and "venv" in e["lesson"].lower()
        ]
        return json.dumps({"verdict": "DUPLICATE", "of": dup[0]} if dup else {"verdict": "NOVEL"})
    task = question["task"]
    if "README" in task:
        return json.dumps({"lesson": None})
    if "status checker" in task:
        return json.dumps(
            {
                "scenario": "Setting up dependencies for the status checker script",
                "wrong_approach": "a global pip install of requests was refused",
                "correct_approach": "create a project venv and pip install inside it",
                "reason": "Debian marks its interpreter as externally managed",
            }
        )
    if "requests" in task:
        return json.dumps(
            {
                "scenario": "Installing Python packages on a host whose system Python is externally managed (PEP 668)",
                "wrong_approach": "pip install requests into the system Python: error externally-managed-environment",
                "correct_approach": "python3 -m venv .venv, then .venv/bin/pip install requests",
                "reason": "PEP 668 forbids pip from changing the system interpreter; a virtualenv is allowed",
            }
        )
    return json.dumps(
        {
            "scenario": "Running the dashboard's jest tests, which share one SQLite file",
            "wrong_approach": "npm test in parallel: SQLITE_BUSY database is locked",
            "correct_approach": "npm test -- --runInBand",
            "reason": "serial runs never hold the SQLite lock at the same time",
        }
    )


def test_the_llm_extracts_and_checks_duplicates(llm_memory: Memory, fake: FakeLLM, clock) -> None:  # type: ignore[no-untyped-def]
    install(llm_memory.settings)
    fake.default = responder
    fake.script("Sure! Here is the lesson: {scenario: pip}")  # malformed: retried once
    result = run(llm_memory, clock)
    assert result.status == "ok" and "llm_fallbacks" not in result.counts
    assert result.counts["lessons"] == 2
    assert result.counts["not_a_lesson"] == 1  # the README episode
    assert result.counts["duplicates_llm"] == 1  # worded apart, the same lesson
    assert any("cannot be used" in m["content"] for m in fake.requests[1]["messages"])
    texts = {r.metadata["lesson"]["correct_approach"] for r in stored(llm_memory)}
    assert texts == {
        "python3 -m venv .venv, then .venv/bin/pip install requests",
        "npm test -- --runInBand",
    }
    assert {r.metadata["extractor"] for r in stored(llm_memory)} == {"llm"}
    md = lessons_md(llm_memory).read_text()
    assert "- **Reason**: PEP 668 forbids pip from changing the system interpreter" in md


def test_an_llm_that_keeps_failing_falls_back_offline(
    llm_memory: Memory, fake: FakeLLM, clock
) -> None:  # type: ignore[no-untyped-def]
    install(llm_memory.settings, names=(NPM,))
    fake.default = lambda body: "I'd rather not answer in JSON."
    result = run(llm_memory, clock)
    assert result.counts["lessons"] == 1 and result.counts["llm_fallbacks"] == 1
    (lesson,) = stored(llm_memory)
    assert lesson.metadata["extractor"] == "offline-fallback"
    assert lesson.metadata["lesson"]["correct_approach"] == "exec: npm test -- --runInBand"


def test_lessons_is_registered() -> None:
    assert registry.get("lessons").fn is lessons


def test_the_readme_example_is_what_the_pipeline_writes(memory: Memory) -> None:
    from tests.conftest import FakeClock

    readme = (Path(__file__).parent.parent / "README.md").read_text()
    section = readme.split("## Lessons and TTL decay", 1)[1]
    example = section.split("```markdown\n", 1)[1].split("```", 1)[0]
    install(memory.settings, names=(PIP,))
    run(memory, FakeClock("2026-03-21T09:00:00+00:00"))
    assert example in lessons_md(memory).read_text()


def test_memoryd_run_lessons(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from memoryd.cli import app

    monkeypatch.setenv("MEMORYD_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("MEMORYD_WORKSPACE__OPENCLAW_DIR", str(tmp_path / "openclaw"))
    monkeypatch.setenv("MEMORYD_AUDIT__ENABLED", "false")
    monkeypatch.chdir(tmp_path)
    install(Settings())
    runner = CliRunner()
    dry = runner.invoke(app, ["run", "lessons", "--dry-run", "--json"])
    assert dry.exit_code == 0, dry.output
    assert json.loads(dry.output)["counts"]["would_store"] >= 3
    real = runner.invoke(app, ["run", "lessons", "--agent", "dev", "--json"])
    assert real.exit_code == 0, real.output
    assert json.loads(real.output)["counts"]["lessons"] == 3
    assert (tmp_path / "home" / "workspaces" / "dev" / "memory" / "lessons.md").is_file()
    found = runner.invoke(app, ["search", "pip externally managed", "--user", "default", "--json"])
    assert "venv" in json.loads(found.output)["results"][0]["memory"]
