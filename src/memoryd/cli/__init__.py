"""The ``memoryd`` command (a Typer app): thin, it calls :class:`memoryd.Memory` and prints.

One module per command group: ``memory`` (add/search/list/..., local or ``--url``),
``workspace`` (index, memory-search, flush, session-end, ...), ``pipelines`` (run,
pipelines, rem-backfill, dream, commitments), ``store`` (migrate), ``backup``,
``setup`` (connect an agent), ``mcp``, ``wiki``; ``common`` holds what they share and
``app`` puts them together.
"""

from memoryd.cli.app import app, main

__all__ = ["app", "main"]
