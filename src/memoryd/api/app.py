"""FastAPI application factory. Handlers call ``Memory`` in a worker thread so
slow embedding or LLM work never blocks the event loop."""

from __future__ import annotations

import asyncio
import errno
import ipaddress
import logging
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse
from starlette.concurrency import run_in_threadpool
from starlette.middleware.cors import CORSMiddleware

import memoryd
from memoryd.access import AuthenticationError, authenticate, token_from
from memoryd.api.guard import GuardMiddleware
from memoryd.api.limits import LimitsMiddleware
from memoryd.api.routes_diary import router as diary_router
from memoryd.api.routes_mem0_platform import router as mem0_platform_router
from memoryd.api.routes_memory import router as memory_router
from memoryd.api.routes_pipelines import router as pipelines_router
from memoryd.api.routes_wiki import router as wiki_router
from memoryd.api.routes_workspace import router as workspace_router
from memoryd.api.ui import router as ui_router
from memoryd.audit import AuditLog, AuditMiddleware
from memoryd.core import Memory
from memoryd.errors import MemorydError, PermissionDeniedError
from memoryd.pipelines.scheduler import scheduling
from memoryd.settings import Settings
from memoryd.workspace.watcher import watching as watch_workspaces


def create_app(settings: Settings | None = None, memory: Memory | None = None) -> FastAPI:
    settings = settings or (memory.settings if memory else Settings())
    mem = memory or Memory(settings)
    log_paths_only()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # the watcher re-indexes edited workspace files (workspace.watch); the scheduler
        # runs the pipelines on their crontabs (pipelines.scheduler)
        mem.stay_ready()
        async with watch_workspaces(mem), scheduling(app, mem):
            yield
        audit_log.close()
        if memory is None:
            mem.close()

    app = FastAPI(title="memoryd", version=memoryd.__version__, lifespan=lifespan)
    app.state.memory = mem
    # adds beyond this many wait for a slot instead of taking every worker thread
    app.state.add_slots = asyncio.Semaphore(max(1, mem.settings.server.max_concurrent_adds))
    # hostile paths, unencodable text and cross-site or rebinding browsers
    # (memoryd.api.guard), inside the limits, so a body is size-checked before it is read
    app.add_middleware(GuardMiddleware, settings=mem.settings)
    # body size and per-key rate limits (memoryd.api.limits); inside the audit middleware,
    # so refused requests are audited too
    app.add_middleware(LimitsMiddleware, settings=mem.settings)
    audit_log = AuditLog(mem.settings)  # one JSON line per request (memoryd.audit)
    app.add_middleware(AuditMiddleware, log=audit_log, settings=mem.settings)
    if mem.settings.server.cors_origins:  # closed unless configured
        app.add_middleware(
            CORSMiddleware,
            allow_origins=mem.settings.server.cors_origins,
            allow_methods=["*"],
            allow_headers=["*"],
        )

    @app.exception_handler(MemorydError)
    async def _memoryd_error(_: Request, exc: MemorydError) -> JSONResponse:
        return JSONResponse(
            status_code=exc.status_code,
            content={"error": type(exc).__name__, "detail": exc.message, "hint": exc.hint},
        )

    @app.exception_handler(RequestValidationError)
    async def _invalid_request(_: Request, exc: RequestValidationError) -> JSONResponse:
        problems = "; ".join(
            f"{'.'.join(str(x) for x in e.get('loc', ()) if x != 'body') or 'body'}: {e.get('msg')}"
            for e in exc.errors()
        )
        return JSONResponse(
            status_code=422,
            content={
                "error": "InvalidInputError",
                "detail": f"the request is not valid: {problems}",
                "hint": "see the request schema at /docs",
                "errors": jsonable_errors(exc),
            },
        )

    @app.get("/", include_in_schema=False, response_model=None)
    async def root(request: Request) -> RedirectResponse | dict[str, str]:
        """A browser goes to the dashboard; a program learns where things are."""
        if "text/html" in request.headers.get("accept", ""):
            return RedirectResponse("/ui", status_code=307)
        return {
            "service": "memoryd",
            "version": memoryd.__version__,
            "dashboard": "/ui",
            "docs": "/docs",
            "health": "/health",
        }

    @app.get("/health")
    async def health(request: Request) -> dict[str, Any]:
        """Liveness for anyone; what runs for a valid key; how many memories (every
        user's) for an admin key or the keyless loopback server."""
        try:
            caller = authenticate(mem.settings, token_from(request))
        except AuthenticationError:
            return {"status": "ok"}
        answer: dict[str, Any] = {
            "status": "ok",
            "version": memoryd.__version__,
            "store": mem.store.url.split("://")[0] if "://" in mem.store.url else "sqlite",
            "model": mem.embedder.name,
            "llm": mem.llm.name if mem.llm else "none (offline extraction)",
        }
        if caller.admin:
            states = _all_states()
            answer["counts"] = await run_in_threadpool(mem.store.counts_by, "state", states)
        return answer

    app.include_router(memory_router)  # /memory/* (the seed's routes) and mem0's /memories
    app.include_router(mem0_platform_router)  # mem0's platform API: /v1/ping/, /v3/memories/...
    app.include_router(diary_router)
    app.include_router(pipelines_router)  # GET /v1/pipelines
    app.include_router(workspace_router)
    app.include_router(wiki_router)  # /v1/wiki/*
    from memoryd.api.mcp_http import mount as mount_mcp  # lazy: the MCP SDK is slow to import

    mount_mcp(app, mem)
    app.include_router(ui_router)  # the dashboard at /ui
    return app


class PathOnly(logging.Filter):
    """uvicorn's access log line with the path only: a query string carries search
    text and ids (``/memory/list?user_id=...``), which the log must not keep."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) == 5 and isinstance(args[2], str):
            record.args = (args[0], args[1], args[2].split("?", 1)[0], args[3], args[4])
        return True


def log_paths_only() -> None:
    """Put :class:`PathOnly` on ``uvicorn.access`` once (uvicorn's log config keeps
    a logger's filters)."""
    access = logging.getLogger("uvicorn.access")
    if not any(isinstance(f, PathOnly) for f in access.filters):
        access.addFilter(PathOnly())


def is_loopback(host: str) -> bool:
    if host.strip("[]").lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name other than localhost may resolve anywhere


def check_bind(settings: Settings) -> None:
    """Without API keys the API is open, so it may only listen on loopback unless
    ``server.allow_remote_without_auth`` says otherwise."""
    host = settings.server.host
    if settings.auth.keys or settings.server.allow_remote_without_auth or is_loopback(host):
        return
    raise PermissionDeniedError(
        f"refusing to listen on {host} without API keys: anyone who can reach it could "
        "read and erase every memory",
        "configure keys (MEMORYD_AUTH__KEYS or [[auth.keys]] in memoryd.toml), bind to "
        "127.0.0.1, or pass --allow-remote-without-auth if the network is trusted",
    )


def check_port(settings: Settings) -> None:
    """Fail before start-up when ``server.port`` is taken (another ``memoryd serve``?),
    rather than after loading the model with a raw uvicorn error."""
    host, port = settings.server.host, settings.server.port
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind((host.strip("[]"), port))
        except OSError as exc:
            taken = exc.errno == errno.EADDRINUSE
            raise MemorydError(
                f"cannot listen on {host}:{port}: "
                + ("the port is in use (another memoryd serve?)" if taken else str(exc)),
                f"stop what uses it, or pick another port: memoryd serve --port {port + 1} "
                "(or MEMORYD_SERVER__PORT)",
            ) from None


def jsonable_errors(exc: RequestValidationError) -> list[dict[str, Any]]:
    """Pydantic's error list without the offending input (it may be large or private)."""
    return [
        {"loc": list(e.get("loc", ())), "msg": e.get("msg"), "type": e.get("type")}
        for e in exc.errors()
    ]


def _all_states() -> Any:
    from memoryd.models import Filters

    return Filters(states=[])
