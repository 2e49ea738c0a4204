"""Tiers: what kind of memory a record is, from its scope alone.

* ``short_term``: it has a ``run_id``. A date (``YYYY-MM-DD``) is the usual
  run id (seed 001: the day's digest); any other run id is a session and
  just as transient.
* ``long_term``: no ``run_id``.
* ``shared``: its category is in ``search.shared_categories`` (default
  ``experience`` and ``procedural``), whatever its run id. Every agent of the
  same user finds it (see :mod:`memoryd.search.pool`).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from datetime import date

from memoryd.models import MemoryRecord

SHORT_TERM = "short_term"
LONG_TERM = "long_term"
SHARED = "shared"
MEMORY_TYPES = (LONG_TERM, SHORT_TERM, SHARED)

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def run_date(run_id: str | None) -> date | None:
    """The date a ``YYYY-MM-DD`` run id names, else ``None``."""
    if not run_id or not _DATE.match(run_id):
        return None
    try:
        return date.fromisoformat(run_id)
    except ValueError:
        return None


def tier(record: MemoryRecord) -> str:
    return SHORT_TERM if record.run_id else LONG_TERM


def memory_type(record: MemoryRecord, shared_categories: Collection[str]) -> str:
    if record.category is not None and record.category in shared_categories:
        return SHARED
    return tier(record)
