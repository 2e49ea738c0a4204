"""The memory wiki over HTTP (:mod:`memoryd.wiki`): compile, search, get, apply, lint.

A vault lives in an agent's workspace, which belongs to ``workspace.user_id``
and the agent: every route checks the caller's key against that pair first.
The GETs only read: a vault never compiled is compiled by ``POST /compile`` or
``/apply`` (or MCP, the CLI), never by a GET a link from another site can cause.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from pydantic import Field

from memoryd import wiki
from memoryd.api.auth import Principal, principal
from memoryd.api.routes_workspace import AgentBody, on_files
from memoryd.errors import NotFoundError
from memoryd.file_shapes import CompileOut, WikiApplied, WikiHits, WikiPage, WikiProblems
from memoryd.scope import AgentFiles

router = APIRouter(prefix="/v1/wiki", tags=["wiki"])
#: the GETs read a compiled vault and never compile one (a GET changes nothing)
_UNCOMPILED = "the wiki of agent {!r} has not been compiled yet"
_COMPILE_HINT = "compile it first: POST /v1/wiki/compile, or memoryd wiki compile"


class CompileBody(AgentBody):
    dry_run: bool = False


@router.post("/compile", response_model=CompileOut)
async def compile_vault(
    request: Request, body: CompileBody, p: Principal = Depends(principal)
) -> dict[str, Any]:
    """Compile the agent's durable memory into ``wiki/`` (only changed files are written)."""
    return await on_files(
        request, p, body.agent_id, lambda files: files.wiki_compile(dry_run=body.dry_run).to_json()
    )


@router.get("/search", response_model=WikiHits)
async def search(
    request: Request,
    agent_id: str,
    q: str = Query(max_length=2000),
    limit: int = Query(default=10, ge=1, le=100),
    p: Principal = Depends(principal),
) -> dict[str, Any]:
    """Claims matching ``q``, best first, each with its page, status and evidence
    (none while the vault was never compiled: a GET compiles nothing)."""
    return await on_files(
        request,
        p,
        agent_id,
        lambda files: {"results": files.wiki_search(q, limit) if files.wiki_compiled() else []},
    )


@router.get("/pages/{page}", response_model=WikiPage)
async def get_page(
    request: Request, page: str, agent_id: str, p: Principal = Depends(principal)
) -> dict[str, Any]:
    """One page (by title, or by the id of one of its claims): its claims and its Markdown."""

    def run(files: AgentFiles) -> dict[str, Any]:
        wiki.page_name(page)  # a path-like name is refused whether or not the vault exists
        if not files.wiki_compiled():
            raise NotFoundError(_UNCOMPILED.format(agent_id), _COMPILE_HINT)
        return {"result": files.wiki_get(page)}

    return await on_files(request, p, agent_id, run)


class ApplyBody(AgentBody):
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
    edit = wiki.Edit.of(
        body.op, page=body.page, text=body.text, evidence=body.evidence,
        confidence=body.confidence, claim=body.claim_id, status=body.status, reason=body.reason,
    )  # fmt: skip

    def run(files: AgentFiles) -> dict[str, Any]:
        claim, report = files.wiki_apply(edit)
        return {"claim": claim.to_json() if claim else None, "compile": report.to_json()}

    return await on_files(request, p, body.agent_id, run)


@router.get("/lint", response_model=WikiProblems)
async def lint(
    request: Request, agent_id: str, p: Principal = Depends(principal)
) -> dict[str, Any]:
    """Broken links, claims without evidence, contradictions, stale and orphan pages."""

    def run(files: AgentFiles) -> dict[str, Any]:
        if not files.wiki_compiled():
            problem = f"{_UNCOMPILED.format(agent_id)}: {_COMPILE_HINT}"
            return {"problems": [{"kind": "uncompiled", "where": "wiki/", "message": problem}]}
        return {"problems": files.wiki_lint()}

    return await on_files(request, p, agent_id, run)
