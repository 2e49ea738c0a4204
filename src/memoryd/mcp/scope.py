"""Whose memory an MCP tool call may touch.

The scope never comes from a tool argument: a model could be talked into
passing another agent's id. Over stdio (``memoryd mcp``) it is the server's
configuration (``settings.mcp``, or ``--user`` / ``--agent``). Over HTTP
(``/mcp`` in ``memoryd serve``) the request's API key decides: the key's users
and agents bound it, and the ``X-Memoryd-User`` / ``X-Memoryd-Agent`` headers,
set once in the client's MCP configuration, pick within those bounds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from memoryd.access import Principal
from memoryd.errors import PermissionDeniedError
from memoryd.models import MemoryRecord
from memoryd.settings import Settings
from memoryd.validate import check_id

USER_HEADER = "x-memoryd-user"
AGENT_HEADER = "x-memoryd-agent"


@dataclass(frozen=True)
class Scope:
    """The user (and, when set, the agent) every tool call of a connection acts as."""

    user_id: str
    agent_id: str | None = None
    principal: str = "local"  # the key's name, recorded as the actor of writes

    @property
    def actor(self) -> str:
        return f"mcp:{self.principal}"

    def owns(self, record: MemoryRecord) -> bool:
        """Whether this scope may change ``record``."""
        if record.user_id != self.user_id:
            return False
        return self.agent_id is None or record.agent_id == self.agent_id

    def as_dict(self) -> dict[str, str | None]:
        return {"user_id": self.user_id, "agent_id": self.agent_id}


def configured_scope(settings: Settings) -> Scope:
    """The scope of ``memoryd mcp`` over stdio: the server's own configuration."""
    limits = settings.limits
    user = check_id(settings.mcp.user_id, "mcp.user_id", limits, required=True)
    agent = check_id(settings.mcp.agent_id, "mcp.agent_id", limits)
    assert user is not None
    return Scope(user_id=user, agent_id=agent)


def request_scope(settings: Settings, principal: Principal, headers: Mapping[str, str]) -> Scope:
    """The scope of an HTTP request, from its key and scope headers.

    Raises :class:`PermissionDeniedError` when the headers ask for a user or
    agent outside the key, or when the key covers several and none is named.
    """
    limits = settings.limits
    user = _pick(headers.get(USER_HEADER), principal.users, settings.mcp.user_id, "user")
    agent = _pick(headers.get(AGENT_HEADER), principal.agents, settings.mcp.agent_id, "agent")
    user = check_id(user, "X-Memoryd-User", limits, required=True)
    agent = check_id(agent, "X-Memoryd-Agent", limits)
    assert user is not None
    principal.check(user, agent)
    return Scope(user_id=user, agent_id=agent, principal=principal.name)


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
