"""The faces (HTTP routes, dashboard, MCP tools, CLI) reach the engine through
Scope/Memory, the Operator (whole-deployment commands) and the shapes only: none
imports the store, the pipelines or the workspace modules (issue 19). The few
modules that must are listed with why."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src" / "memoryd"
FACES = ("api", "mcp", "cli")
ENGINE = ("store", "pipelines", "workspace")  # memoryd.<these> and their modules

#: face modules that may import the engine, and why
ALLOWED = {
    "api/app.py": "the composition root: starts the pipeline scheduler and the file watcher",
}  # the CLI's operator commands (init, index, status, run, backup, migrate, ...) go
# through memoryd.operator.Operator


def _is_engine(name: str) -> bool:
    parts = name.split(".")
    return parts[0] == "memoryd" and len(parts) > 1 and parts[1] in ENGINE


def _imports(path: Path) -> list[str]:
    """Every module (and imported name) ``path`` imports, at the top or inside a function."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found += [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
    return found


def _engine_imports(path: Path) -> list[str]:
    """Every engine module ``path`` imports, at the top or inside a function."""
    return sorted({n for n in _imports(path) if _is_engine(n)})


def test_faces_import_no_store_pipeline_or_workspace_module() -> None:
    checked = 0
    offenders = {}
    for face in FACES:
        for path in sorted((SRC / face).glob("*.py")):
            rel = path.relative_to(SRC).as_posix()
            if rel in ALLOWED:
                continue
            checked += 1
            if imports := _engine_imports(path):
                offenders[rel] = imports
    assert checked >= 15  # the routes, the dashboard, the MCP tools, the CLI's memory commands
    assert offenders == {}, "go through memory.scope(...) / scope.files(), Operator and the shapes"


def test_the_allowed_list_names_modules_that_exist_and_need_it() -> None:
    for rel in ALLOWED:
        assert _engine_imports(SRC / rel), f"{rel} imports no engine module: drop it from ALLOWED"


def test_the_check_sees_both_import_forms(tmp_path: Path) -> None:
    sample = tmp_path / "face.py"
    sample.write_text(
        "from memoryd import pipelines\nimport memoryd.store.sql\n"
        "def f():\n    from memoryd.workspace.layout import DREAMS_FILE\n"
        "from memoryd.scope import Scope\nfrom memoryd import wiki\n"
    )
    assert _engine_imports(sample) == [
        "memoryd.pipelines",
        "memoryd.store.sql",
        "memoryd.workspace.layout",
        "memoryd.workspace.layout.DREAMS_FILE",
    ]


#: which face may import which: the CLI starts the server and the stdio MCP server,
#: the server mounts the MCP tools over HTTP; nothing points back
FACE_EDGES = {("cli", "api"), ("cli", "mcp"), ("api", "mcp")}


def test_no_import_loop_between_faces() -> None:
    edges = set()
    for face in FACES:
        for path in (SRC / face).rglob("*.py"):
            for name in _imports(path):
                parts = name.split(".")
                if parts[0] == "memoryd" and len(parts) > 1 and parts[1] in set(FACES) - {face}:
                    edges.add((face, parts[1]))
    assert ("api", "mcp") in edges  # the check sees the lazy import of the /mcp mount
    assert edges <= FACE_EDGES, f"a face imports one it must not: {sorted(edges - FACE_EDGES)}"
    engine_to_face = {
        (path.relative_to(SRC).as_posix(), name)
        for path in SRC.rglob("*.py")
        if path.relative_to(SRC).parts[0] not in FACES
        for name in _imports(path)
        if name.split(".")[:2] in [["memoryd", f] for f in FACES]
    }
    assert engine_to_face == set(), "the engine imports no face"
