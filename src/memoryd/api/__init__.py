"""The HTTP API (FastAPI)."""

from memoryd.api.app import create_app

__all__ = ["create_app"]
