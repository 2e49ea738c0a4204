"""Callers and their keys: who is asking, and what their key covers.

A caller is a :class:`Principal`: the API key a request presented (its users
and agents bound it; an empty list means any), or the anonymous admin when no
keys are configured. The HTTP API, the dashboard, the MCP server over HTTP and
the audit log all resolve a caller here (:func:`authenticate`,
:func:`token_from`); what a caller may then read and change, as a user and
agent, is decided by :class:`memoryd.scope.Scope` (``memory.scope(...)``).
Workspace files belong to :func:`workspace_owner` and the agent.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from typing import Protocol

from pydantic import BaseModel, Field

from memoryd.errors import MemorydError, PermissionDeniedError
from memoryd.settings import Settings


class AuthenticationError(MemorydError):
    status_code = 401


class Principal(BaseModel):
    name: str
    admin: bool = False
    users: list[str] = Field(default_factory=list)  # empty: any user
    agents: list[str] = Field(default_factory=list)  # empty: any agent

    def can_access(self, user_id: str | None, agent_id: str | None = None) -> bool:
        if self.admin:
            return True
        if self.users and (user_id is None or user_id not in self.users):
            return False
        return not (self.agents and (agent_id is None or agent_id not in self.agents))

    def check(self, user_id: str | None, agent_id: str | None = None) -> None:
        """Raise unless this principal may act on (user_id, agent_id)."""
        if not self.can_access(user_id, agent_id):
            raise PermissionDeniedError(
                f"key {self.name!r} is not allowed to use user_id={user_id!r} agent_id={agent_id!r}",
                "use a key scoped to that user/agent, or pass the user_id/agent_id of your key",
            )

    def require_admin(self) -> None:
        if not self.admin:
            raise PermissionDeniedError(
                f"key {self.name!r} is not an admin key", "this operation needs an admin key"
            )


ANONYMOUS = Principal(name="anonymous", admin=True)


def authenticate(settings: Settings, token: str | None) -> Principal:
    """The principal for ``token``; anonymous admin when no keys are configured."""
    keys = settings.auth.keys
    if not keys:
        return ANONYMOUS
    if not token:
        raise AuthenticationError(
            "an API key is required", "send Authorization: Bearer <key> or X-API-Key: <key>"
        )
    for key in keys:
        if hmac.compare_digest(key.key.get_secret_value().encode(), token.encode()):
            return Principal(name=key.name, admin=key.admin, users=key.users, agents=key.agents)
    raise AuthenticationError(
        "the API key is not valid", "check the key in your client configuration"
    )


class Carrier(Protocol):
    """What carries a key: an HTTP request (Starlette's, or anything alike)."""

    @property
    def headers(self) -> Mapping[str, str]: ...

    @property
    def cookies(self) -> Mapping[str, str]: ...


def token_from(request: Carrier) -> str | None:
    """``Authorization: Bearer <key>``, ``X-API-Key`` or the dashboard's cookie."""
    header = request.headers.get("authorization", "")
    if header.lower().startswith("bearer "):
        return header[7:].strip() or None
    return request.headers.get("x-api-key") or request.cookies.get("memoryd_key") or None


def workspace_owner(settings: Settings) -> str:
    """The user every agent workspace (its files, chunks and pipelines) belongs to."""
    return settings.workspace.user_id
