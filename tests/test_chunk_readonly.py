"""A workspace chunk mirrors its file: no face can edit or delete it in the store.

Before, ``PUT /memory/update``, ``DELETE /memory/{id}``, the dashboard and the
CLI changed the chunk; the indexer then saw the file unchanged and the edited
lines stayed unsearchable until ``index --force``.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from memoryd.api import create_app
from memoryd.cli import app
from memoryd.core import Memory
from memoryd.errors import ReadOnlyError
from memoryd.models import Filters, Origin, State
from memoryd.settings import Settings
from memoryd.workspace.indexer import index_workspace
from tests.test_ui_pages import cookie_token
from tests.test_workspace_support import make_workspace


def _chunk(memory: Memory, tmp_path: Path) -> str:
    ws = make_workspace(memory, tmp_path / "ws")
    index_workspace(memory, ws)
    chunks = list(memory.store.iter_all(Filters(agent_id="dev", origins=[Origin.CHUNK])))
    assert chunks
    return chunks[0].id


def _unchanged(memory: Memory, chunk_id: str, text: str) -> None:
    record = memory.store.get(chunk_id)
    assert record is not None and record.state == State.ACTIVE and record.text == text


def test_memory_refuses_to_edit_or_delete_a_chunk(memory: Memory, tmp_path: Path) -> None:
    cid = _chunk(memory, tmp_path)
    before = memory.get(cid).text
    with pytest.raises(ReadOnlyError) as err:
        memory.update(cid, "rewritten")
    assert err.value.hint and ".md" in err.value.hint  # names the file to edit
    with pytest.raises(ReadOnlyError):
        memory.delete(cid)
    _unchanged(memory, cid, before)


def test_http_and_dashboard_refuse_with_409(memory: Memory, tmp_path: Path, live_server) -> None:  # type: ignore[no-untyped-def]
    cid = _chunk(memory, tmp_path)
    before = memory.get(cid).text
    with live_server(create_app(memory=memory)) as server:
        put = httpx.put(f"{server.url}/memory/update", json={"memory_id": cid, "text": "rewritten"})
        delete = httpx.delete(f"{server.url}/memory/{cid}")
        mem0 = httpx.put(f"{server.url}/memories/{cid}", json={"text": "rewritten"})
        with httpx.Client(base_url=server.url) as browser:
            csrf = cookie_token(browser, f"/ui/memory/{cid}")  # no form offered
            form = {"text": "rewritten", "csrf": csrf}
            edit = browser.post(f"/ui/memory/{cid}/edit", data=form)
            ui_delete = browser.post(f"/ui/memory/{cid}/delete", data={"csrf": csrf})
    for r in (put, delete, mem0):
        assert r.status_code == 409, r.text
        assert r.json()["error"] == "ReadOnlyError" and ".md" in r.json()["hint"]
    assert edit.status_code == 409 and "excerpt of" in edit.text
    assert ui_delete.status_code == 409 and "excerpt of" in ui_delete.text
    _unchanged(memory, cid, before)


def test_cli_refuses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedder) -> None:  # type: ignore[no-untyped-def]
    home = tmp_path / "home"
    monkeypatch.setenv("MEMORYD_HOME", str(home))
    settings = Settings(home=home)
    settings.workspace.openclaw_dir = tmp_path / "no-openclaw"
    with Memory(settings, embedder=embedder) as memory:
        cid = _chunk(memory, tmp_path)
        before = memory.get(cid).text
    monkeypatch.setenv("MEMORYD_WORKSPACE__AGENTS", '{"dev": "%s"}' % (tmp_path / "ws"))
    update = CliRunner().invoke(app, ["update", cid, "--text", "rewritten"])
    delete = CliRunner().invoke(app, ["delete", cid])
    assert update.exit_code == 2 and "excerpt of" in update.output
    assert delete.exit_code == 2 and "excerpt of" in delete.output
    with Memory(Settings(home=home), embedder=embedder) as memory:
        _unchanged(memory, cid, before)
