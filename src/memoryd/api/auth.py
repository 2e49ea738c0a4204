"""API keys over HTTP: the FastAPI dependency resolving a request's caller.

What a caller may do is decided in :mod:`memoryd.access` (every face asks
there); this module only turns a request into its :class:`Principal`:
``Authorization: Bearer <key>`` or ``X-API-Key: <key>``. With no keys
configured every caller is an anonymous admin (loopback only).
"""

from __future__ import annotations

from fastapi import Request

from memoryd.access import (
    ANONYMOUS,
    AuthenticationError,
    Principal,
    authenticate,
    token_from,
)
from memoryd.settings import Settings

__all__ = [
    "ANONYMOUS",
    "AuthenticationError",
    "Principal",
    "authenticate",
    "principal",
    "token_from",
]


async def principal(request: Request) -> Principal:
    """FastAPI dependency: ``p: Principal = Depends(principal)``."""
    settings: Settings = request.app.state.memory.settings
    return authenticate(settings, token_from(request))
