"""Where an agent's Markdown lives and what each file is.

The layout is OpenClaw's (seeds 002 and 004): ``MEMORY.md`` (curated, always
loaded), ``memory/YYYY-MM-DD.md`` (the daily diary), ``memory/YYYY-MM-DD-slug.md``
(session notes), other ``memory/**/*.md`` (topic notes), ``DREAMS.md`` (dreaming
reports for people, not indexed) and the identity files read at session start.
The files are the source of truth; everything memoryd derives from them can be
rebuilt.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from functools import cached_property
from pathlib import Path
from zoneinfo import ZoneInfo

from memoryd.settings import Settings, WorkspaceSettings
from memoryd.store import Store
from memoryd.validate import check_id
from memoryd.workspace.safefs import WorkspaceFS

MEMORY_FILE = "MEMORY.md"
MEMORY_DIR = "memory"
DREAMS_FILE = "DREAMS.md"
#: ``memory/structured/``: facts exported per category (pipelines/structured.py); not indexed,
#: its lines are memories already searchable.
STRUCTURED_DIR = "structured"
#: ``memory/INDEX.md``: the map of an agent's memory that memoryd regenerates
#: (pipelines/index_md.py); not indexed: its counts and "recent" lines are copies of
#: memories already searchable, and as an undated note they would never decay
INDEX_FILE = "INDEX.md"
# seed 003's on-demand folders under memory/: a file there is found by searching its
# folder as a category (``memoryd search --category entities``); session notes go to
# summaries/ when a workspace has that folder
ORGANIZER_FOLDERS = ("entities", "patterns", "summaries", "events")
SUMMARIES_DIR = "summaries"
WIKI_DIR = "wiki"  # the memory wiki's vault (memoryd/wiki/): compiled, not indexed
#: Read at session start, in this order (seed 004, section 3), before MEMORY.md.
IDENTITY_FILES = ("SOUL.md", "IDENTITY.md", "USER.md", "AGENTS.md", "TOOLS.md")
#: Where ``memoryd init --path`` records workspaces that are not at the default place.
REGISTRY_KEY = "workspace:paths"

_DATED = re.compile(r"^(\d{4})-(\d{2})-(\d{2})(?:[-_ .](.*))?\.md$", re.IGNORECASE)


@dataclass(frozen=True)
class FileKind:
    """What a workspace file is, which decides how its chunks rank over time."""

    kind: str  # memory | diary | session | note | extra
    evergreen: bool  # no time decay (MEMORY.md, undated notes)
    day: date | None  # the diary day, for dated files

    @property
    def event_at(self) -> datetime | None:
        if self.day is None:
            return None
        return datetime(self.day.year, self.day.month, self.day.day, tzinfo=UTC)


def diary_path(root: Path, day: date) -> Path:
    """Where the diary of ``day`` lives in the workspace at ``root``: the one place
    that says so (diary capture, flush, digest, dream and commitments all ask here)."""
    return root / MEMORY_DIR / f"{day.isoformat()}.md"


def file_date(name: str) -> date | None:
    """The date a ``YYYY-MM-DD*.md`` file name carries, if it is a real date."""
    m = _DATED.match(name)
    if not m:
        return None
    try:
        return date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return None


def folder_category(rel_path: str) -> str | None:
    """``entities`` for ``memory/entities/acme.md`` (seed 003's folders), else ``None``."""
    parts = rel_path.split("/")
    if len(parts) >= 3 and parts[0] == MEMORY_DIR and parts[1] in ORGANIZER_FOLDERS:
        return parts[1]
    return None


def classify(rel_path: str) -> FileKind:
    """The kind of a file from its workspace-relative path (POSIX separators)."""
    parts = rel_path.split("/")
    name = parts[-1]
    day = file_date(name)
    if len(parts) == 1 and name.lower() == MEMORY_FILE.lower():
        return FileKind("memory", True, None)
    if len(parts) >= 2 and parts[0] == MEMORY_DIR:
        if day is not None:
            m = _DATED.match(name)
            is_diary = m is not None and not m.group(4)
            return FileKind("diary" if is_diary else "session", False, day)
        return FileKind("note", True, None)
    return FileKind("extra", day is None, day)


@dataclass(frozen=True)
class Workspace:
    """One agent's workspace directory and the settings that shape it."""

    agent_id: str
    root: Path
    settings: WorkspaceSettings

    @property
    def memory_file(self) -> Path:
        lower = self.root / "memory.md"
        main = self.root / MEMORY_FILE
        if not main.exists() and lower.is_file() and not _same_file(main, lower):
            return lower  # OpenClaw's fallback name
        return main

    @property
    def memory_dir(self) -> Path:
        return self.root / MEMORY_DIR

    @property
    def dreams_file(self) -> Path:
        return self.root / DREAMS_FILE

    def diary_path(self, day: date) -> Path:
        return diary_path(self.root, day)

    def extra_roots(self) -> list[Path]:
        """Configured extra paths, absolute (relative ones are inside the workspace)."""
        out: list[Path] = []
        for p in self.settings.extra_paths:
            p = p.expanduser()
            out.append(p if p.is_absolute() else self.root / p)
        return out

    @cached_property
    def fs(self) -> WorkspaceFS:
        """The one door every read and write of this workspace's files goes through."""
        return WorkspaceFS.of(self.root, self.settings)

    def allowed_roots(self) -> list[Path]:
        """Resolved directories (or files) that reads may reach: the workspace, extras and
        ``workspace.allowed_roots``."""
        return [Path(r) for r in self.fs.roots]

    def rel(self, path: Path) -> str:
        """The name a file is cited by: relative to the workspace, else absolute."""
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return path.as_posix()

    def files(self) -> list[Path]:
        """Every Markdown file that is indexed, sorted, each once.

        ``MEMORY.md``, ``memory/**/*.md`` (not what memoryd derives from the store:
        ``memory/structured/`` and ``memory/INDEX.md``) and the extra paths. Hidden files and
        directories (e.g. ``memory/.dreams/``) are skipped, and so are symlinks
        that lead outside the workspace and extra paths: what is indexed must be
        readable with ``memory_get``.
        """
        candidates: list[Path] = []
        if self.memory_file.is_file():
            candidates.append(self.memory_file)
        candidates.extend(
            p
            for p in _markdown_under(self.memory_dir)
            if not _derived(p.relative_to(self.memory_dir).parts)
        )
        for extra in self.extra_roots():
            if extra.is_file() and extra.suffix.lower() == ".md":
                candidates.append(extra)
            else:
                candidates.extend(_markdown_under(extra))
        roots = self.allowed_roots()
        seen: set[Path] = set()
        out: list[Path] = []
        for path in candidates:
            try:
                real = path.resolve()
            except OSError:
                continue
            if real in seen or not any(real.is_relative_to(r) for r in roots):
                continue
            seen.add(real)
            out.append(path)
        return sorted(out, key=lambda p: self.rel(p))

    def is_indexed_path(self, path: Path) -> bool:
        """Whether a changed path (from the watcher) is one :meth:`files` would list."""
        if path.suffix.lower() != ".md":
            return False
        if path == self.memory_file or path == self.root / MEMORY_FILE:
            return True
        for base in (self.memory_dir, *self.extra_roots()):
            if path == base:
                return True
            try:
                rel = path.relative_to(base)
            except ValueError:
                continue
            if base == self.memory_dir and _derived(rel.parts):
                return False
            return not any(part.startswith(".") for part in rel.parts)
        return False


def _derived(parts: tuple[str, ...]) -> bool:
    """Is the file at ``parts`` under ``memory/`` one memoryd derives from the store
    (``structured/``, ``INDEX.md``), so not indexed?"""
    return parts[0] == STRUCTURED_DIR or parts == (INDEX_FILE,)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.samefile(b)
    except OSError:
        return False


def _markdown_under(base: Path) -> Iterator[Path]:
    if not base.is_dir():
        return
    stack = [base]
    while stack:
        current = stack.pop()
        try:
            entries = list(current.iterdir())
        except OSError:
            continue
        for entry in entries:
            if entry.name.startswith("."):
                continue
            if entry.is_dir():
                if not entry.is_symlink():  # no symlink loops
                    stack.append(entry)
            elif entry.suffix.lower() == ".md" and entry.is_file():
                yield entry


def default_root(settings: Settings, agent_id: str) -> Path:
    """Where an agent's workspace is when nothing names it explicitly: OpenClaw's
    workspace for that agent when it exists (read from ``openclaw.json``, see
    :mod:`memoryd.workspace.openclaw`), else ``$MEMORYD_HOME/workspaces/{agent}``."""
    from memoryd.workspace.openclaw import workspace_of

    base = settings.workspace.openclaw_dir.expanduser()
    # OpenClaw's answer first; ``workspace-{agent}`` also for older installs of ``main``
    for candidate in (workspace_of(base, agent_id), base / f"workspace-{agent_id}"):
        if candidate.is_dir():
            return candidate
    return settings.home / "workspaces" / agent_id


def resolve_workspace(settings: Settings, agent_id: str, store: Store | None = None) -> Workspace:
    """The workspace of ``agent_id``.

    Order: ``settings.workspace.agents``, then a path recorded by ``memoryd init
    --path`` in the store, then OpenClaw's workspace for the agent if it exists
    (``~/.openclaw/workspace`` for ``main``, per-agent paths from
    ``openclaw.json``, ``~/.openclaw/workspace-{agent}``), then
    ``$MEMORYD_HOME/workspaces/{agent}``. The agent id is validated, so it
    can never name a path outside those places.
    """
    check_id(agent_id, "agent_id", settings.limits, required=True)
    ws = settings.workspace
    root = ws.agents.get(agent_id)
    if root is None and store is not None:
        registered = store.kv_get(REGISTRY_KEY) or {}
        if agent_id in registered:
            root = Path(registered[agent_id])
    if root is None:
        root = default_root(settings, agent_id)
    return Workspace(agent_id=agent_id, root=root.expanduser().absolute(), settings=ws)


def register_workspace(store: Store, agent_id: str, root: Path) -> None:
    """Remember a non-default workspace path so every later command finds it."""
    with store.atomic():
        registered = dict(store.kv_get(REGISTRY_KEY) or {})
        registered[agent_id] = str(root.expanduser().absolute())
        store.kv_set(REGISTRY_KEY, registered)


def known_agents(settings: Settings, store: Store | None = None) -> list[str]:
    """Agents with a workspace: configured, registered, or found on disk."""
    from memoryd.workspace.openclaw import configured_agents

    found: set[str] = set(settings.workspace.agents)
    found.update(configured_agents(settings.workspace.openclaw_dir.expanduser()))
    if store is not None:
        found.update((store.kv_get(REGISTRY_KEY) or {}).keys())
    for parent, prefix in (
        (settings.home / "workspaces", ""),
        (settings.workspace.openclaw_dir.expanduser(), "workspace-"),
    ):
        if not parent.is_dir():
            continue
        for entry in parent.iterdir():
            if entry.is_dir() and entry.name.startswith(prefix) and entry.name != prefix:
                found.add(entry.name[len(prefix) :])
    valid = []
    for agent in found:
        try:
            check_id(agent, "agent_id", settings.limits, required=True)
        except ValueError:
            continue
        valid.append(agent)
    return sorted(valid)


def local_today(settings: WorkspaceSettings, clock: Callable[[], datetime]) -> date:
    """Today's date in the workspace time zone (diaries are named by local day)."""
    now = clock()
    if now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    return now.astimezone(ZoneInfo(settings.timezone)).date()


def local_now(settings: WorkspaceSettings, clock: Callable[[], datetime]) -> datetime:
    now = clock()
    if now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    return now.astimezone(ZoneInfo(settings.timezone))
