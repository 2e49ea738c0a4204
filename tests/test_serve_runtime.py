"""``memoryd serve`` runs on uvicorn's fast event loop and HTTP parser.

The server leaves uvicorn's ``loop`` and ``http`` on "auto", which picks uvloop and
httptools when they are installed and falls back to asyncio and h11 without a word.
Both are pinned dependencies: over HTTP they take 1-2 ms off the p50 of a search of a small
user on PostgreSQL (bench/team.py, README "Running memoryd for a team").
"""

from __future__ import annotations

import sys

import pytest
from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


def test_http_parser_is_httptools() -> None:
    config = Config(app="memoryd.api.app:create_app", factory=True)
    assert config.http == "auto"  # what uvicorn.run uses in `memoryd serve`
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    assert AutoHTTPProtocol is HttpToolsProtocol, "pip install httptools (a pinned dependency)"


@pytest.mark.skipif(sys.platform == "win32", reason="uvloop has no Windows build")
def test_event_loop_is_uvloop() -> None:
    import uvloop

    config = Config(app="memoryd.api.app:create_app", factory=True)
    assert config.loop == "auto"
    factory = config.get_loop_factory()
    assert factory is not None
    loop = factory()
    try:
        assert isinstance(loop, uvloop.Loop), "pip install uvloop (a pinned dependency)"
    finally:
        loop.close()
