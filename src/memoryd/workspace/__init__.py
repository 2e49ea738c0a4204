"""The agents' Markdown workspaces: layout, chunking, indexing, watching, reading.

Files are the source of truth; the chunk records in the store are derived from
them and can always be rebuilt (``memoryd index --force``). Everything here is
called with a :class:`memoryd.Memory`; nothing below ``Memory`` calls back here.
"""

from memoryd.workspace.layout import (
    FileKind,
    Workspace,
    classify,
    known_agents,
    local_now,
    local_today,
    register_workspace,
    resolve_workspace,
)

__all__ = [
    "FileKind",
    "Workspace",
    "classify",
    "known_agents",
    "local_now",
    "local_today",
    "register_workspace",
    "resolve_workspace",
]
