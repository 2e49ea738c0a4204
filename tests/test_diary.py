"""Diary capture: a finished turn becomes one whole ``## HH:MM`` section of today's diary."""

from __future__ import annotations

import multiprocessing
import re
import threading
from pathlib import Path

import pytest

from memoryd import InvalidInputError, Memory, PermissionDeniedError
from memoryd.pipelines import diary
from memoryd.settings import DiarySettings, WorkspaceSettings
from memoryd.workspace.files import append_section
from memoryd.workspace.safefs import WorkspaceFS


@pytest.fixture(autouse=True)
def _no_real_openclaw(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Workspaces resolve under the test's HOME, never a real ~/.openclaw."""
    monkeypatch.setenv("HOME", str(tmp_path / "userhome"))


def turn(user: str, assistant: str) -> list[dict[str, object]]:
    return [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]


def test_a_turn_is_appended_as_a_timestamped_section(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    result = diary.capture(
        memory,
        agent_id="dev",
        session_id="s-1",
        messages=turn(
            "Which port does the staging database use?", "Staging Postgres listens on 5433."
        ),
    )
    path = memory.settings.home / "workspaces" / "dev" / "memory" / "2026-03-27.md"
    assert result.written and result.path == "memory/2026-03-27.md" and result.time == "09:00"
    assert path.read_text() == (
        "# 2026-03-27\n\n"
        "## 09:00 · session s-1\n"
        "- **user**: Which port does the staging database use?\n"
        "- **assistant**: Staging Postgres listens on 5433.\n"
    )
    clock.advance(minutes=75)
    diary.capture(memory, agent_id="dev", messages=turn("Deploy went fine?", "Yes, v2.3 is live."))
    text = path.read_text()
    assert text.endswith(
        "Staging Postgres listens on 5433.\n\n## 10:15\n"
        "- **user**: Deploy went fine?\n- **assistant**: Yes, v2.3 is live.\n"
    )
    clock.advance(days=1)
    later = diary.capture(memory, agent_id="dev", messages=turn("New day, new task?", "Yes."))
    assert later.path == "memory/2026-03-28.md"


def test_multiline_content_cannot_open_a_new_section(memory: Memory, tmp_path: Path) -> None:
    reply = "Here is the plan:\n## Step 1\nrun the migration\n\n## Step 2\nverify"
    diary.capture(
        memory, agent_id="dev", messages=turn("Plan the migration", reply), workspace=tmp_path
    )
    text = (tmp_path / "memory" / "2026-03-27.md").read_text()
    assert re.findall(r"^## .*$", text, re.M) == ["## 09:00"]
    assert "  ## Step 1\n  run the migration\n\n  ## Step 2\n  verify" in text


@pytest.mark.parametrize(
    ("messages", "reason"),
    [
        (turn("hi", "Hello! How can I help you today?"), "greeting"),
        (turn("thanks!", "You're welcome, anytime."), "thanks"),
        (turn("Read HEARTBEAT.md if it exists. If nothing needs attention, reply HEARTBEAT_OK.", "HEARTBEAT_OK"), "heartbeat"),
        (turn("ok", "NO_REPLY"), "silent reply"),
        (turn("why?", "Dunno."), "too short"),
        ([{"role": "toolResult", "content": "x" * 500}], "tool chatter only"),
        ([], "empty"),
    ],
)  # fmt: skip
def test_noise_is_dropped(memory: Memory, tmp_path: Path, messages, reason) -> None:  # type: ignore[no-untyped-def]
    result = diary.capture(memory, agent_id="dev", messages=messages, workspace=tmp_path)
    assert not result.written and result.reason == "noise", reason
    assert not (tmp_path / "memory" / "2026-03-27.md").exists()


def test_content_is_cleaned_and_tool_chatter_removed(memory: Memory, tmp_path: Path) -> None:
    log = "\n".join(f"line {i}: ok" for i in range(300))
    messages = [
        {
            "role": "user",
            "content": "[Fri 2026-03-27 09:00 GMT+1] <relevant-memories>\n- old stuff\n"
            "</relevant-memories>\nWhy did the nightly build fail?",
        },
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "let me look at the logs"},
                {"type": "toolCall", "name": "exec", "arguments": {"cmd": "cat build.log"}},
            ],
        },
        {"role": "toolResult", "content": [{"type": "text", "text": log}]},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "text",
                    "text": "<system-reminder>be brief</system-reminder>The linker ran out of "
                    f"memory. Log:\n```\n{log}\n```",
                }
            ],
        },
    ]
    result = diary.capture(memory, agent_id="dev", messages=messages, workspace=tmp_path)
    assert result.written and result.kept == 2 and result.dropped == 2
    text = (tmp_path / "memory" / "2026-03-27.md").read_text()
    assert "- **user**: Why did the nightly build fail?" in text
    assert "- **assistant**: The linker ran out of memory." in text
    for gone in ("relevant-memories", "old stuff", "GMT+1", "be brief", "system-reminder"):
        assert gone not in text
    assert "lines trimmed" in text and "line 0: ok" in text and "line 299: ok" in text
    assert "line 150: ok" not in text


def test_huge_messages_keep_head_and_tail() -> None:
    limits = DiarySettings(max_message_chars=200)
    cleaned = diary.clean_content("start " + "x" * 5000 + " end", limits)
    assert cleaned.startswith("start") and cleaned.endswith("end")
    assert "characters trimmed" in cleaned and len(cleaned) < 300


def test_a_repeated_turn_id_is_written_once(memory: Memory, tmp_path: Path) -> None:
    msgs = turn("Remember: the VPN config lives in ops/vpn.md", "Noted, ops/vpn.md.")
    first = diary.capture(
        memory, agent_id="dev", messages=msgs, turn_id="run-1", workspace=tmp_path
    )
    again = diary.capture(
        memory, agent_id="dev", messages=msgs, turn_id="run-1", workspace=tmp_path
    )
    other = diary.capture(
        memory, agent_id="dev", messages=msgs, turn_id="run-2", workspace=tmp_path
    )
    assert first.written and not again.written and again.reason == "duplicate" and other.written
    assert (tmp_path / "memory" / "2026-03-27.md").read_text().count("ops/vpn.md\n") == 2


@pytest.mark.parametrize("agent", ["../evil", "a/b", "..", ".hidden", "x y", "/etc", ""])
def test_agent_ids_cannot_reach_outside_the_workspaces(memory: Memory, agent: str) -> None:
    with pytest.raises(InvalidInputError) as err:
        diary.capture(
            memory, agent_id=agent, messages=turn("What is our deploy target?", "prod-eu-1")
        )
    assert err.value.hint
    assert not any((memory.settings.home).rglob("*.md"))


def test_a_symlinked_memory_dir_leading_outside_is_refused(memory: Memory, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    outside = tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    (ws / "memory").symlink_to(outside)
    with pytest.raises(PermissionDeniedError):
        diary.capture(
            memory, agent_id="dev", messages=turn("Where do logs go?", "To Loki."), workspace=ws
        )
    assert list(outside.iterdir()) == []


def test_an_unterminated_hand_written_note_is_not_glued_to_the_next_section(
    memory: Memory, tmp_path: Path
) -> None:
    path = tmp_path / "memory" / "2026-03-27.md"
    path.parent.mkdir(parents=True)
    path.write_text("# 2026-03-27\n\n## 08:30\n- agent note without newline")
    diary.capture(
        memory, agent_id="dev", messages=turn("Any blockers today?", "None."), workspace=tmp_path
    )
    assert "- agent note without newline\n\n## 09:00\n" in path.read_text()


def _sections(text: str) -> list[str]:
    return [s for s in re.split(r"(?m)^(?=## )", text) if s.startswith("## ")]


def test_concurrent_captures_from_threads_never_interleave(memory: Memory, tmp_path: Path) -> None:
    body = "\n".join(f"detail {i} of a long answer that spans many lines" for i in range(40))

    def worker(n: int) -> None:
        for k in range(15):
            diary.capture(
                memory,
                agent_id="dev",
                session_id=f"t{n}",
                messages=turn(f"question {n}-{k} about the rollout", f"answer {n}-{k}\n{body}"),
                workspace=tmp_path,
            )

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    sections = _sections((tmp_path / "memory" / "2026-03-27.md").read_text())
    assert len(sections) == 90
    for section in sections:
        n, k = re.search(r"question (\d+)-(\d+)", section).groups()  # type: ignore[union-attr]
        assert section.startswith(f"## 09:00 · session t{n}\n")
        assert f"answer {n}-{k}\n" in section and section.rstrip().endswith("many lines")
        assert section.count("- **user**") == 1 and section.count("detail 39") == 1


def _append_many(path: str, worker: int, count: int) -> None:
    for k in range(count):
        lines = "\n".join(f"  w{worker} k{k} line {i}" for i in range(60))
        append_section(
            Path(path),
            f"## w{worker} k{k}\n{lines}\n",
            fs=WorkspaceFS.of(Path(path).parent, WorkspaceSettings()),
            header="# day",
        )


def test_concurrent_appends_from_processes_never_interleave_and_readers_see_whole_sections(
    tmp_path: Path,
) -> None:
    path = tmp_path / "memory" / "2026-03-27.md"
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_append_many, args=(str(path), w, 40)) for w in range(4)]
    for p in procs:
        p.start()
    partial_seen = []
    while any(p.is_alive() for p in procs):
        text = diary.read_locked(path, WorkspaceFS.of(path.parent, WorkspaceSettings()))
        if text and not text.endswith("\n"):
            partial_seen.append(len(text))
        for section in _sections(text):
            w, k = re.match(r"## w(\d+) k(\d+)", section).groups()  # type: ignore[union-attr]
            if section.count(f"w{w} k{k} line") != 60:
                partial_seen.append(section[:40])
    for p in procs:
        p.join()
        assert p.exitcode == 0
    assert partial_seen == []
    text = path.read_text()
    assert text.startswith("# day\n\n") and text.count("# day") == 1
    sections = _sections(text)
    assert len(sections) == 160
    for section in sections:
        w, k = re.match(r"## w(\d+) k(\d+)", section).groups()  # type: ignore[union-attr]
        body = [line for line in section.splitlines()[1:] if line.strip()]
        assert body == [f"  w{w} k{k} line {i}" for i in range(60)]


def test_workspace_mapping_and_time_zone_decide_file_and_heading(
    memory: Memory, clock, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    memory.settings.workspace.agents = {"dev": tmp_path / "dev-ws"}
    memory.settings.workspace.timezone = "Asia/Tokyo"
    clock.advance(hours=11)  # 2026-03-27 20:00 UTC is 2026-03-28 05:00 in Tokyo
    result = diary.capture(
        memory, agent_id="dev", messages=turn("Night shift handover?", "All green.")
    )
    assert (result.path, result.time) == ("memory/2026-03-28.md", "05:00")
    assert (
        (tmp_path / "dev-ws" / "memory" / "2026-03-28.md")
        .read_text()
        .startswith("# 2026-03-28\n\n## 05:00\n")
    )
