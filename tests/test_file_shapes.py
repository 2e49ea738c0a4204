"""The /v1 routes about an agent's files declare their answers' shapes (OpenAPI
shows them), and answering through them leaves the JSON on the wire as the
engine writes it (the OpenClaw plugin reads memory_search's hits field by field)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from memoryd.access import LOCAL
from memoryd.api import create_app
from memoryd.core import Memory
from memoryd.workspace import Workspace
from tests.test_workspace_support import make_workspace

ROUTES = {
    ("/v1/memory_get", "get"): "FileSliceOut",
    ("/v1/memory_search", "post"): "FileHits",
    ("/v1/context", "get"): "ContextOut",
    ("/v1/sessions/end", "post"): "SessionNoteOut",
    ("/v1/flush", "post"): "FlushOut",
    ("/v1/rem-backfill", "post"): "RollbackOut",
    ("/v1/commitments", "get"): "Commitments",
    ("/v1/commitments/due", "post"): "Commitments",
    ("/v1/commitments/{commitment_id}/done", "post"): "CommitmentOut",
    ("/v1/index", "post"): "IndexOut",
    ("/v1/workspaces", "get"): "Workspaces",
    ("/v1/wiki/compile", "post"): "CompileOut",
    ("/v1/wiki/search", "get"): "WikiHits",
    ("/v1/wiki/pages/{page}", "get"): "WikiPage",
    ("/v1/wiki/apply", "post"): "WikiApplied",
    ("/v1/wiki/lint", "get"): "WikiProblems",
    ("/v1/diary", "post"): "DiaryOut",
    ("/v1/pipelines", "get"): "Pipelines",
}


@pytest.fixture
def ws(memory: Memory, tmp_path: Path) -> Workspace:
    return make_workspace(memory, tmp_path / "ws")


def test_the_file_routes_declare_the_shapes_they_answer(memory: Memory, live_server: Any) -> None:
    with live_server(create_app(memory=memory)) as server:
        spec = httpx.get(f"{server.url}/openapi.json", timeout=60).json()
    for (path, method), shape in ROUTES.items():
        ok = spec["paths"][path][method]["responses"]["200"]["content"]["application/json"]
        assert shape in str(ok["schema"]), (path, method)
    assert "BackfillOut" in str(
        spec["paths"]["/v1/rem-backfill"]["post"]["responses"]["200"]["content"]
    )
    schemas = spec["components"]["schemas"]
    hit = schemas["FileHitOut"]
    assert {"id", "score", "parts", "kind", "context"} <= set(hit["required"])
    assert {"citation", "snippet", "path", "start_line", "end_line"} <= set(hit["properties"])
    assert "from" in schemas["FileSliceOut"]["properties"]


def test_the_wire_is_what_the_engine_writes(
    memory: Memory, ws: Workspace, live_server: Any
) -> None:
    files = memory.scope(LOCAL, agent_id="dev").files()
    files.index()
    with live_server(create_app(memory=memory)) as server:
        url = server.url
        found = httpx.post(
            f"{url}/v1/memory_search", json={"agent_id": "dev", "query": "dark mode editor"}
        ).json()
        got = httpx.get(
            f"{url}/v1/memory_get",
            params={"agent_id": "dev", "path": "memory/2026-03-27.md", "from": 2, "lines": 3},
        ).json()
        status = httpx.get(f"{url}/v1/workspaces").json()
        context = httpx.get(f"{url}/v1/context", params={"agent_id": "dev", "query": "editor"})
    hits = files.search("dark mode editor")
    assert hits
    assert found == {"results": [h.to_json(files.workspace.settings.snippet_chars) for h in hits]}
    assert got == files.read("memory/2026-03-27.md", 2, 3).to_json()
    assert status == {"results": [files.status()]}
    assert context.json() == files.context("editor").to_json()
