"""The HTTP API on a real uvicorn server."""

from __future__ import annotations

import httpx

from memoryd.api import create_app
from memoryd.core import Memory


def test_health_reports_store_model_and_counts(memory: Memory, live_server) -> None:  # type: ignore[no-untyped-def]
    memory.add("something", user_id="a")
    with live_server(create_app(memory=memory)) as server:
        body = httpx.get(f"{server.url}/health").json()
    assert body["status"] == "ok" and body["model"] == memory.embedder.name
    assert body["counts"] == {"active": 1}
