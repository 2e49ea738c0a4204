"""API keys and scopes.

A request presents ``Authorization: Bearer <key>`` or ``X-API-Key: <key>``.
The key resolves to a :class:`Principal` whose scope every handler checks
before it reads or writes: a key never reaches outside its users and agents.
With no keys configured every caller is an anonymous admin (loopback only).
"""

from __future__ import annotations

import hmac

from fastapi import Request
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


def token_from(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    if header.lower().startswith("bearer "):
        return header[7:].strip() or None
    return request.headers.get("x-api-key") or request.cookies.get("memoryd_key") or None


async def principal(request: Request) -> Principal:
    """FastAPI dependency: ``p: Principal = Depends(principal)``."""
    settings: Settings = request.app.state.memory.settings
    return authenticate(settings, token_from(request))
