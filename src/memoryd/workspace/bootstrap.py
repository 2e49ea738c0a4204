"""``memoryd init``: create an agent workspace from templates, never overwriting.

The template set is OpenClaw's (seed 004, section 2). ``BOOTSTRAP.md`` (the
first-run ritual) is only created in a brand-new workspace, one where none of
the identity files exist yet: once the agent has deleted it, it never comes back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from memoryd.workspace.layout import DREAMS_FILE, IDENTITY_FILES, MEMORY_DIR, MEMORY_FILE

#: Templates written by ``init`` (BOOTSTRAP.md only into a brand-new workspace).
TEMPLATES = (*IDENTITY_FILES, "HEARTBEAT.md", MEMORY_FILE, DREAMS_FILE)
BOOTSTRAP_FILE = "BOOTSTRAP.md"


@dataclass
class InitReport:
    root: Path
    created: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)


def template_text(name: str) -> str:
    return resources.files("memoryd.workspace").joinpath("templates", name).read_text("utf-8")


def init_workspace(root: Path) -> InitReport:
    """Create the layout under ``root``; existing files are kept as they are."""
    root.mkdir(parents=True, exist_ok=True)
    report = InitReport(root=root)
    brand_new = not any((root / name).exists() for name in IDENTITY_FILES)
    names = list(TEMPLATES) + ([BOOTSTRAP_FILE] if brand_new else [])
    for name in names:
        target = root / name
        try:
            with target.open("x", encoding="utf-8") as fh:  # "x": never overwrite
                fh.write(template_text(name))
        except FileExistsError:
            report.kept.append(name)
        else:
            report.created.append(name)
    memory_dir = root / MEMORY_DIR
    if memory_dir.is_dir():
        report.kept.append(MEMORY_DIR + "/")
    else:
        memory_dir.mkdir(parents=True, exist_ok=True)
        report.created.append(MEMORY_DIR + "/")
    return report
