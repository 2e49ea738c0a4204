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
from memoryd.validate import check_id


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
#: whoever runs this process (the CLI on the local store, ``memoryd mcp`` over stdio)
LOCAL = Principal(name="local", admin=True)
USER_HEADER = "x-memoryd-user"
AGENT_HEADER = "x-memoryd-agent"


def authenticate(settings: Settings, token: str | None) -> Principal:
    """The principal for ``token``; anonymous admin when no keys are configured."""
    keys = settings.auth.keys
    if not keys:
        return ANONYMOUS
    if not token:
        raise AuthenticationError(
            "an API key is required",
            "send Authorization: Bearer <key> (or Token <key>) or X-API-Key: <key>",
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
    """``Authorization: Bearer <key>`` (or ``Token <key>``, as mem0's SDKs send it),
    ``X-API-Key`` or the dashboard's cookie."""
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() in ("bearer", "token"):
        return value.strip() or None
    return request.headers.get("x-api-key") or request.cookies.get("memoryd_key") or None


def workspace_owner(settings: Settings) -> str:
    """The user every agent workspace (its files, chunks and pipelines) belongs to."""
    return settings.workspace.user_id


def configured_ids(settings: Settings) -> tuple[str, str | None]:
    """The (user, agent) of ``memoryd mcp`` over stdio: the server's own configuration
    (``settings.mcp``, or ``--user`` / ``--agent``), never a tool argument."""
    limits = settings.limits
    user = check_id(settings.mcp.user_id, "mcp.user_id", limits, required=True)
    agent = check_id(settings.mcp.agent_id, "mcp.agent_id", limits)
    assert user is not None
    return user, agent


def requested_ids(
    settings: Settings, principal: Principal, headers: Mapping[str, str]
) -> tuple[str, str | None]:
    """The (user, agent) an MCP request over HTTP acts as: the key bounds it, and the
    ``X-Memoryd-User`` / ``X-Memoryd-Agent`` headers (set once in the client's MCP
    configuration) pick within those bounds; a key's only user or agent is the default.

    Raises :class:`PermissionDeniedError` when the headers ask for a user or agent
    outside the key, or when the key covers several and none is named.
    """
    limits = settings.limits
    user = _pick(headers.get(USER_HEADER), principal.users, settings.mcp.user_id, "user")
    agent = _pick(headers.get(AGENT_HEADER), principal.agents, settings.mcp.agent_id, "agent")
    user = check_id(user, "X-Memoryd-User", limits, required=True)
    agent = check_id(agent, "X-Memoryd-Agent", limits)
    assert user is not None
    principal.check(user, agent)
    return user, agent


def _pick(asked: str | None, allowed: list[str], default: str | None, what: str) -> str | None:
    if asked:
        return asked
    if len(allowed) == 1:
        return allowed[0]
    if allowed and default not in allowed:
        raise PermissionDeniedError(
            f"this key covers several {what}s ({', '.join(allowed)}) and the request names none",
            f"send the X-Memoryd-{what.title()} header with one of them in your MCP client config",
        )
    return default
