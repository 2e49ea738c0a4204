"""Named errors. Each one says what happened and what to do next."""

from __future__ import annotations


class MemorydError(Exception):
    """Base class. ``hint`` tells the caller what to do about it."""

    status_code = 500

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


class InvalidInputError(MemorydError, ValueError):
    """A caller passed something memoryd will not store or search with."""

    status_code = 422


class NotFoundError(MemorydError, KeyError):
    """No memory (or file) with that id exists in the caller's scope."""

    status_code = 404

    def __str__(self) -> str:  # KeyError would quote the message otherwise
        return MemorydError.__str__(self)


class LimitExceededError(InvalidInputError):
    """A configured limit (text length, top_k, metadata size, rate) was exceeded."""

    status_code = 413


class RateLimitedError(LimitExceededError):
    """Too many requests for one API key in a minute (``limits.rate_limit_per_minute``)."""

    status_code = 429


class PermissionDeniedError(MemorydError):
    """The caller's key does not cover the requested scope or operation."""

    status_code = 403


class OutsideWorkspaceError(PermissionDeniedError):
    """A workspace path leads outside the workspace and the roots the operator allows
    (``workspace.allowed_roots``): a symlink out, a broken symlink or a symlink loop.
    memoryd neither reads nor writes through it."""

    status_code = 403


class BusyError(MemorydError):
    """Another caller is running the same job on the same scope right now."""

    status_code = 409


class ReadOnlyError(MemorydError):
    """The memory mirrors a file (a workspace chunk): change the file, not the memory."""

    status_code = 409


class StoreError(MemorydError):
    """The store could not be opened or is not a memoryd store."""

    status_code = 500


class ModelMismatchError(StoreError):
    """The store was built with another embedding model than the one configured."""

    status_code = 409


class DependencyMissingError(MemorydError):
    """An optional dependency is not installed; the message has the pip line."""

    status_code = 500


class UpstreamError(MemorydError):
    """A remote service (LLM or embedding endpoint) failed or answered garbage."""

    status_code = 502


class NotSupportedError(MemorydError):
    """A feature of another API (mem0's platform: organisations, webhooks...) that
    memoryd does not have; the message names it. Never answered with a fake success."""

    status_code = 501
