"""The memory wiki over HTTP (:mod:`memoryd.wiki`): compile, search, get, apply, lint.

A vault lives in an agent's workspace, which belongs to ``workspace.user_id``
and the agent: every route checks the caller's key against that pair first.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from memoryd import wiki
from memoryd.api.auth import Principal, principal
from memoryd.api.routes_workspace import _files, _memory
from memoryd.file_shapes import CompileOut, WikiApplied, WikiHits, WikiPage, WikiProblems

router = APIRouter(prefix="/v1/wiki", tags=["wiki"])


class CompileBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    agent_id: str
    dry_run: bool = False


@router.post("/compile", response_model=CompileOut)
async def compile_vault(
    request: Request, body: CompileBody, p: Principal = Depends(principal)
) -> dict[str, Any]:
    """Compile the agent's durable memory into ``wiki/`` (only changed files are written)."""
    mem = _memory(request)

    def run() -> dict[str, Any]:
        return _files(mem, p, body.agent_id).wiki_compile(dry_run=body.dry_run).to_json()

    return await run_in_threadpool(run)


@router.get("/search", response_model=WikiHits)
async def search(
    request: Request,
    agent_id: str,
    q: str = Query(max_length=2000),
    limit: int = Query(default=10, ge=1, le=100),
    p: Principal = Depends(principal),
) -> dict[str, Any]:
    """Claims matching ``q``, best first, each with its page, status and evidence."""
    mem = _memory(request)

    def run() -> dict[str, Any]:
        return {"results": _files(mem, p, agent_id).wiki_search(q, limit)}

    return await run_in_threadpool(run)


@router.get("/pages/{page}", response_model=WikiPage)
async def get_page(
    request: Request, page: str, agent_id: str, p: Principal = Depends(principal)
) -> dict[str, Any]:
    """One page (by title, or by the id of one of its claims): its claims and its Markdown."""
    mem = _memory(request)

    def run() -> dict[str, Any]:
        return {"result": _files(mem, p, agent_id).wiki_get(page)}

    return await run_in_threadpool(run)


class ApplyBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    agent_id: str
    op: Literal["add", "retire"]
    page: str | None = Field(default=None, max_length=500)
    text: str | None = Field(default=None, max_length=20_000)
    evidence: list[str] = Field(default_factory=list, max_length=100)
    confidence: float = Field(default=1.0, ge=0, le=1)
    claim_id: str | None = Field(default=None, max_length=64)
    status: Literal["superseded", "stale"] = "superseded"
    reason: str | None = Field(default=None, max_length=2000)


@router.post("/apply", response_model=WikiApplied)
async def apply_edit(
    request: Request, body: ApplyBody, p: Principal = Depends(principal)
) -> dict[str, Any]:
    """A structured edit: add a claim with evidence that resolves, or retire a claim."""
    mem = _memory(request)
    edit = wiki.Edit.of(
        body.op, page=body.page, text=body.text, evidence=body.evidence,
        confidence=body.confidence, claim=body.claim_id, status=body.status, reason=body.reason,
    )  # fmt: skip

    def run() -> dict[str, Any]:
        claim, report = _files(mem, p, body.agent_id).wiki_apply(edit)
        return {"claim": claim.to_json() if claim else None, "compile": report.to_json()}

    return await run_in_threadpool(run)


@router.get("/lint", response_model=WikiProblems)
async def lint(
    request: Request, agent_id: str, p: Principal = Depends(principal)
) -> dict[str, Any]:
    """Broken links, claims without evidence, contradictions, stale and orphan pages."""
    mem = _memory(request)

    def run() -> dict[str, Any]:
        return {"problems": _files(mem, p, agent_id).wiki_lint()}

    return await run_in_threadpool(run)
