"""Today's diary swapped for a symlink out while the HTTP faces read and write it (issue 30).

Another process keeps replacing ``memory/<today>.md`` (by rename, so the name always exists)
with a hard link to the real diary or a symlink to a file outside the workspace. At
the same time other threads call the public routes that write today's diary
(``/v1/flush``, ``/v1/diary``) and read it (``/v1/context``, ``/v1/memory_get``) on a
real server. Nothing outside is ever written or answered, every answer is 200 or a
403 refusal, and each write answered 200 is in the real diary exactly once.
MEMORYD_FULL=1 runs 1,000 writes and 2,000 reads of each kind.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from memoryd.api import create_app
from memoryd.core import Memory
from tests.conftest import FULL
from tests.test_workspace_support import make_workspace

SECRET = "TOP-SECRET-9186 outside the workspace"
TODAY = "2026-03-27"  # the FakeClock's day
WRITES = 1_000 if FULL else 40
READS = 2_000 if FULL else 80

# Another process (no GIL shared with the server) that keeps swapping the diary.
SWAPPER = """
import os, sys
real, secret, diary = sys.argv[1:]
n = 0
while True:
    tmp = os.path.join(os.path.dirname(diary), f".swap-{n}")
    if n % 2:
        os.link(real, tmp)
    else:
        os.symlink(secret, tmp)
    os.replace(tmp, diary)
    n += 1
    if n == 10:
        print("swapping", flush=True)
"""


@pytest.fixture
def files_dir(tmp_path: Path) -> Iterator[Path]:
    """Where the workspace and the outside file live: tmpfs when there is one. On a disk
    the server's fsyncs stall the swapper's renames (it sat in submit_bio_wait with the
    diary a real file for the whole run, and no swap was ever seen)."""
    if not Path("/dev/shm").is_dir():
        yield tmp_path
        return
    folder = Path(tempfile.mkdtemp(prefix="memoryd-race-", dir="/dev/shm"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_swapping_todays_diary_for_a_symlink_out_under_http_writes_and_reads(
    memory: Memory, files_dir: Path, live_server
) -> None:  # type: ignore[no-untyped-def]
    ws = make_workspace(memory, files_dir / "ws", agent="dev")
    secret = files_dir / "outside" / "secret.md"
    secret.parent.mkdir()
    secret.write_text(f"# {TODAY}\n\n## 08:00\n- {SECRET}\n")
    secret_before = secret.read_bytes()
    diary = ws.memory_dir / f"{TODAY}.md"
    real = ws.memory_dir / ".real-diary.md"  # hidden: never indexed
    diary.rename(real)
    os.link(real, diary)

    swapper = subprocess.Popen(
        [sys.executable, "-c", SWAPPER, str(real), str(secret), str(diary)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert swapper.stdout is not None and swapper.stdout.readline() == "swapping\n"

    answers: dict[int, int] = {}
    problems: list[str] = []
    written: list[str] = []
    lock = threading.Lock()

    def call(client: httpx.Client, method: str, route: str, **kw: object) -> httpx.Response:
        r = client.request(method, route, timeout=60, **kw)  # type: ignore[arg-type]
        with lock:
            answers[r.status_code] = answers.get(r.status_code, 0) + 1
            if r.status_code not in (200, 403):
                problems.append(f"{method} {route}: {r.status_code} {r.text[:200]}")
            if "TOP-SECRET" in r.text:
                problems.append(f"{method} {route} answered the outside file")
        return r

    def write(url: str, kind: str) -> None:
        with httpx.Client(base_url=url) as client:
            for i in range(WRITES // 2):
                mark = f"{kind}-note-{i:05d}"
                if kind == "flush":
                    body = {"agent_id": "dev", "notes": [f"remember {mark} for later"]}
                    r = call(client, "POST", "/v1/flush", json=body)
                else:
                    msgs = [{"role": "user", "content": f"please remember {mark} for later"}]
                    body = {"agent_id": "dev", "messages": msgs, "turn_id": mark}
                    r = call(client, "POST", "/v1/diary", json=body)
                if r.status_code == 200:
                    with lock:
                        written.append(mark)

    def read(url: str) -> None:
        with httpx.Client(base_url=url) as client:
            for i in range(READS):
                if i % 2:
                    call(client, "GET", "/v1/context", params={"agent_id": "dev"})
                else:
                    params = {"agent_id": "dev", "path": f"memory/{TODAY}.md"}
                    call(client, "GET", "/v1/memory_get", params=params)

    try:
        with live_server(create_app(memory=memory)) as server:
            workers = [
                threading.Thread(target=write, args=(server.url, "flush")),
                threading.Thread(target=write, args=(server.url, "diary")),
                threading.Thread(target=read, args=(server.url,)),
            ]
            for w in workers:
                w.start()
            for w in workers:
                w.join()
    finally:
        swapper.terminate()
        swapper.wait(timeout=30)
    print(f"answers: {answers}, written: {len(written)}")  # shown with pytest -s
    assert problems == []
    if files_dir.is_relative_to("/dev/shm"):  # swaps are fast there: both sides were met
        assert answers.get(403, 0) > 0 and written, answers
    assert secret.read_bytes() == secret_before  # nothing written outside
    text = real.read_text()
    for mark in written:  # every write answered 200 landed inside, once
        assert text.count(mark) == 1, mark
    assert [p.name for p in ws.memory_dir.iterdir() if p.name.endswith(".tmp")] == []
