"""memoryd: long-term memory for AI agents."""

from memoryd.core import Memory
from memoryd.errors import (
    BusyError,
    InvalidInputError,
    LimitExceededError,
    MemorydError,
    ModelMismatchError,
    NotFoundError,
    PermissionDeniedError,
    ReadOnlyError,
    StoreError,
)
from memoryd.models import Filters, MemoryRecord, Origin, ScoreParts, SearchHit, Source, State
from memoryd.settings import Settings

__version__ = "0.1.0"

__all__ = [
    "BusyError",
    "Filters",
    "InvalidInputError",
    "LimitExceededError",
    "Memory",
    "MemoryRecord",
    "MemorydError",
    "ModelMismatchError",
    "NotFoundError",
    "Origin",
    "PermissionDeniedError",
    "ReadOnlyError",
    "ScoreParts",
    "SearchHit",
    "Settings",
    "Source",
    "State",
    "StoreError",
    "__version__",
]
