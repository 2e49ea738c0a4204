"""``POST /v1/diary``: an agent's finished turn, appended to its daily diary.

This is what the OpenClaw plugin's ``agent_end`` hook calls after every turn
(see ``integrations/openclaw``). The work is the agent's files' ``diary``
(:meth:`memoryd.workspace.agent.AgentFiles.diary`); this module only checks the
caller's key and moves the call off the event loop.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from memoryd.access import workspace_owner
from memoryd.api.auth import Principal, principal
from memoryd.audit import note
from memoryd.conversation import parse_time
from memoryd.core import Memory
from memoryd.file_shapes import DiaryOut

router = APIRouter(tags=["diary"])


class DiaryMessage(BaseModel):
    """One message as OpenClaw's ``agent_end`` event carries it: ``content`` is text
    or a list of content blocks (only ``text`` blocks are kept)."""

    role: str
    content: Any = None
    name: str | None = Field(default=None, description="the speaker's name (default: the role)")


class DiaryRequest(BaseModel):
    agent_id: str = Field(description="the agent whose workspace diary gets the turn")
    session_id: str | None = Field(default=None, description="shown in the section heading")
    channel: str | None = Field(
        default=None,
        description="where the turn happened (telegram, slack, ...): in the heading, and the "
        "channel an inferred commitment is delivered to",
    )
    turn_id: str | None = Field(
        default=None, description="idempotency key: a repeated turn id is not written twice"
    )
    user_id: str | None = Field(
        default=None,
        description="the user the agent works for (checked against the key's scope); "
        "default: workspace.user_id",
    )
    messages: list[DiaryMessage] = Field(description="the finished turn's messages, in order")
    timestamp: str | float | None = Field(
        default=None,
        description="when the turn happened (ISO 8601 or Unix seconds; default now): "
        "a turn replayed from an older transcript goes to that day's diary",
    )


@router.post("/v1/diary", response_model=DiaryOut)
async def post_diary(
    body: DiaryRequest, request: Request, p: Principal = Depends(principal)
) -> dict[str, Any]:
    """Append the turn as a ``## HH:MM`` section of ``memory/YYYY-MM-DD.md``.

    Noise (greetings, heartbeats, tool chatter, tiny exchanges) is dropped and the
    answer says so (``written: false, reason: "noise"``); that is not an error.
    """
    mem: Memory = request.app.state.memory
    user_id = body.user_id or workspace_owner(mem.settings)
    scope = mem.scope(p, user_id, body.agent_id)
    scope.check()
    at = parse_time(body.timestamp, "timestamp")

    def run() -> dict[str, Any]:
        return scope.files().diary(
            [m.model_dump() for m in body.messages], session_id=body.session_id,
            turn_id=body.turn_id, channel=body.channel, at=at,
        ).as_dict()  # fmt: skip

    result = await run_in_threadpool(run)
    note(request, op="diary", user_id=user_id, agent_id=body.agent_id, count=result["kept"])
    return result
