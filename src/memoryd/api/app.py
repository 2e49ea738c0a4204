"""FastAPI application factory. Handlers call ``Memory`` in a worker thread so
slow embedding or LLM work never blocks the event loop."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

import memoryd
from memoryd.api.routes_diary import router as diary_router
from memoryd.core import Memory
from memoryd.errors import MemorydError
from memoryd.settings import Settings


def create_app(settings: Settings | None = None, memory: Memory | None = None) -> FastAPI:
    settings = settings or (memory.settings if memory else Settings())
    mem = memory or Memory(settings)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        if memory is None:
            mem.close()

    app = FastAPI(title="memoryd", version=memoryd.__version__, lifespan=lifespan)
    app.state.memory = mem

    @app.exception_handler(MemorydError)
    async def _memoryd_error(_: Request, exc: MemorydError) -> JSONResponse:
        return JSONResponse(
            status_code=exc.status_code,
            content={"error": type(exc).__name__, "detail": exc.message, "hint": exc.hint},
        )

    @app.get("/health")
    async def health() -> dict[str, Any]:
        counts = await run_in_threadpool(lambda: mem.store.counts_by("state", _all_states()))
        return {
            "status": "ok",
            "version": memoryd.__version__,
            "store": mem.store.url.split("://")[0] if "://" in mem.store.url else "sqlite",
            "model": mem.embedder.name,
            "counts": counts,
        }

    app.include_router(diary_router)
    from memoryd.mcp.server import mount as mount_mcp  # lazy: the MCP SDK imports api.auth

    mount_mcp(app, mem)
    return app


def _all_states() -> Any:
    from memoryd.models import Filters

    return Filters(states=[])
