"""Connect an agent stack to memoryd (``memoryd setup claude-code|codex|openclaw``,
whose command line is :mod:`memoryd.cli.setup`).

Each target's configuration file gets a ``memoryd`` MCP server entry (and for
OpenClaw, the diary plugin with its skill). The change is computed first as a
:class:`ConfigChange` (old text, new text), shown as a diff and written only
after confirmation. Other entries in the file are never touched, an entry
that already says the same thing is left alone (running setup twice changes
nothing), and the write is atomic (temporary file, then rename).

Where each file lives (paths overridable with ``--config`` and ``HOME``):

- Claude Code: ``.mcp.json`` in the project (``--scope project``, the default) or
  ``~/.claude.json`` (``--scope user``), under ``mcpServers``.
- Codex: ``~/.codex/config.toml`` (``$CODEX_HOME``; ``--scope user``, the default)
  or ``.codex/config.toml`` in the project, as ``[mcp_servers.memoryd]``.
- OpenClaw: ``openclaw.json`` in OpenClaw's state directory (``$OPENCLAW_CONFIG_PATH``,
  else ``$OPENCLAW_STATE_DIR``, ``~/.openclaw-<profile>`` or ``~/.openclaw``):
  ``plugins.load.paths``, ``plugins.entries.memoryd`` and ``mcp.servers.memoryd``; and
  one system per job (``jobs``): by default memoryd keeps the session notes and the
  nightly dream, so OpenClaw's ``session-memory`` hook and memory-core's managed
  dreaming are turned off (``jobs="openclaw"`` leaves them on and turns memoryd's
  session notes off instead). Then ``openclaw plugins install --link`` records the
  install, so OpenClaw trusts the plugin (run when ``openclaw`` is on PATH, else shown).

No secret is written: an API key is referenced by the name of the environment
variable that holds it.
"""

from __future__ import annotations

import difflib
import json
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from memoryd.atomic import replace_bytes
from memoryd.errors import InvalidInputError

Target = Literal["claude-code", "codex", "openclaw"]
TARGETS: tuple[Target, ...] = ("claude-code", "codex", "openclaw")
SERVER_NAME = "memoryd"
PLUGIN_ID = "memoryd"


@dataclass(frozen=True)
class Connection:
    """How the agent reaches memoryd: start ``memoryd mcp`` (stdio) or call ``serve``'s /mcp."""

    agent_id: str
    user_id: str | None = None
    transport: Literal["stdio", "http"] = "stdio"
    url: str = "http://127.0.0.1:8230"
    api_key_env: str | None = None  # the env var holding the API key, for http
    home: Path | None = None  # MEMORYD_HOME for the stdio server
    config_file: Path | None = None  # MEMORYD_CONFIG, when setup itself ran with one
    command: str = "memoryd"

    def stdio_args(self) -> list[str]:
        args = ["mcp", "--agent", self.agent_id]
        if self.user_id:
            args += ["--user", self.user_id]
        return args

    def stdio_env(self) -> dict[str, str]:
        """What the agent's ``memoryd mcp`` needs to open the same store as ``serve``:
        the agent starts it elsewhere (its project), where no memoryd.toml is found."""
        env = {"MEMORYD_HOME": str(self.home)} if self.home else {}
        if self.config_file:
            env["MEMORYD_CONFIG"] = str(self.config_file)
        return env

    @property
    def mcp_url(self) -> str:
        return self.url.rstrip("/") + "/mcp"

    def scope_headers(self) -> dict[str, str]:
        headers = {"X-Memoryd-Agent": self.agent_id}
        if self.user_id:
            headers["X-Memoryd-User"] = self.user_id
        return headers


@dataclass
class ConfigChange:
    """One file's content before and after; ``notes`` are the next steps to print;
    ``commands`` are run after the write (each an argv)."""

    path: Path
    before: str
    after: str
    notes: list[str] = field(default_factory=list)
    commands: list[list[str]] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        return "".join(
            difflib.unified_diff(
                self.before.splitlines(keepends=True),
                self.after.splitlines(keepends=True),
                fromfile=f"{self.path} (now)" if self.before else "/dev/null",
                tofile=f"{self.path} (after)",
            )
        )

    def write(self) -> None:
        """Replace the file atomically, keeping its permissions (``~/.claude.json`` is private)."""
        mode = None if self.path.exists() else 0o600
        replace_bytes(self.path, self.after.encode("utf-8"), mode=mode)


# -- Claude Code -------------------------------------------------------------------------
def claude_code_change(
    conn: Connection, *, scope: str, config: Path | None = None, project_dir: Path | None = None
) -> ConfigChange:
    if config is None:
        config = (
            Path.home() / ".claude.json"
            if scope == "user"
            else (project_dir or Path.cwd()) / ".mcp.json"
        )
    before = _read(config)
    data = _load_json(config, before)
    if conn.transport == "stdio":
        entry: dict[str, Any] = {
            "type": "stdio",
            "command": conn.command,
            "args": conn.stdio_args(),
            "env": conn.stdio_env(),
        }
    else:
        headers = conn.scope_headers()
        if conn.api_key_env:
            headers["Authorization"] = f"Bearer ${{{conn.api_key_env}}}"
        entry = {"type": "http", "url": conn.mcp_url, "headers": headers}
    servers = data.setdefault("mcpServers", {})
    _require_object(servers, config, "mcpServers")
    servers[SERVER_NAME] = entry
    notes = ["restart Claude Code (or run /mcp) to load the memoryd tools"]
    if scope == "project":
        notes.append("Claude Code asks once to approve servers from a project .mcp.json")
    return ConfigChange(config, before, _dump_json(data, before), notes)


# -- Codex -------------------------------------------------------------------------------
def codex_change(
    conn: Connection, *, scope: str, config: Path | None = None, project_dir: Path | None = None
) -> ConfigChange:
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    if config is None:
        if scope == "user":
            home = Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex").expanduser()
            config = home / "config.toml"
        else:
            config = (project_dir or Path.cwd()) / ".codex" / "config.toml"
    before = _read(config)
    try:
        doc = tomlkit.parse(before)
    except TOMLKitError as exc:
        raise InvalidInputError(
            f"{config} is not valid TOML: {exc}",
            "fix the file (or move it away) and run setup again",
        ) from None
    entry = tomlkit.table()
    if conn.transport == "stdio":
        entry["command"] = conn.command
        entry["args"] = conn.stdio_args()
        env = tomlkit.inline_table()
        env.update(conn.stdio_env())
        entry["env"] = env
    else:
        entry["url"] = conn.mcp_url
        if conn.api_key_env:
            entry["bearer_token_env_var"] = conn.api_key_env
        headers = tomlkit.inline_table()
        headers.update(conn.scope_headers())
        entry["http_headers"] = headers
    servers = doc.get("mcp_servers")
    if servers is None:
        servers = tomlkit.table(is_super_table=True)
        doc["mcp_servers"] = servers
    elif not isinstance(servers, dict):
        raise InvalidInputError(
            f"mcp_servers in {config} is not a table", "make it a [mcp_servers] table"
        )
    current = servers.get(SERVER_NAME)
    if current is None or _plain(current) != entry.unwrap():
        servers[SERVER_NAME] = entry
    after = tomlkit.dumps(doc)
    notes = ["start a new Codex session to load the memoryd tools"]
    if scope == "project":
        notes.append("Codex reads .codex/config.toml only in trusted projects")
    return ConfigChange(config, before, after, notes)


def _plain(item: Any) -> Any:
    return item.unwrap() if hasattr(item, "unwrap") else item


# -- OpenClaw ----------------------------------------------------------------------------
Jobs = Literal["memoryd", "openclaw"]
JOBS: tuple[Jobs, ...] = ("memoryd", "openclaw")


def openclaw_config_path() -> Path:
    """OpenClaw's config file: ``$OPENCLAW_CONFIG_PATH``, else ``openclaw.json`` in its
    state directory."""
    from memoryd.settings import openclaw_state_dir

    explicit = os.environ.get("OPENCLAW_CONFIG_PATH")
    if explicit:
        return Path(explicit).expanduser()
    return openclaw_state_dir().expanduser() / "openclaw.json"


def openclaw_change(
    conn: Connection,
    *,
    plugin_dir: Path,
    config: Path | None = None,
    jobs: Jobs = "memoryd",
    openclaw_command: str | None = None,
) -> ConfigChange:
    """The openclaw.json change; ``openclaw_command`` (the ``openclaw`` executable, when
    found) records the plugin's install after the write."""
    config = config or openclaw_config_path()
    manifest = plugin_dir / "openclaw.plugin.json"
    if not manifest.is_file():
        raise InvalidInputError(
            f"no OpenClaw plugin at {plugin_dir} (openclaw.plugin.json is missing)",
            "pass --plugin-dir pointing at memoryd's OpenClaw plugin "
            "(integrations/openclaw in a checkout)",
        )
    before = _read(config)
    data = _load_json(config, before, openclaw_hint=_openclaw_commands(conn, plugin_dir))

    plugins = _object_at(data, config, "plugins")
    load = _object_at(plugins, config, "plugins.load")
    paths = load.setdefault("paths", [])
    if not isinstance(paths, list):
        raise InvalidInputError(f"plugins.load.paths in {config} is not a list", "make it a list")
    if str(plugin_dir) not in paths:
        paths.append(str(plugin_dir))
    allow = plugins.get("allow")
    if isinstance(allow, list) and PLUGIN_ID not in allow:
        allow.append(PLUGIN_ID)  # an allowlist is in force: memoryd must be on it
    entries = _object_at(plugins, config, "plugins.entries")
    entry = _object_at(entries, config, f"plugins.entries.{PLUGIN_ID}")
    entry["enabled"] = True
    _object_at(entry, config, "hooks")["allowConversationAccess"] = True
    plugin_config = _object_at(entry, config, "config")
    plugin_config["url"] = conn.url.rstrip("/")
    if conn.api_key_env:
        plugin_config["apiKey"] = f"${{{conn.api_key_env}}}"
    if conn.user_id:
        plugin_config["userId"] = conn.user_id

    servers = _object_at(_object_at(data, config, "mcp"), config, "mcp.servers")
    servers[SERVER_NAME] = _openclaw_mcp_server(conn)

    notes = []
    if jobs == "memoryd":
        plugin_config.pop("sessionNotes", None)
        hooks = _object_at(_object_at(data, config, "hooks"), config, "hooks.internal")
        session_memory = _object_at(
            _object_at(hooks, config, "hooks.internal.entries"),
            config,
            "hooks.internal.entries.session-memory",
        )
        session_memory["enabled"] = False
        core = _object_at(entries, config, "plugins.entries.memory-core")
        dreaming = _object_at(
            _object_at(core, config, "config"),
            config,
            "plugins.entries.memory-core.config.dreaming",
        )
        dreaming["enabled"] = False
    else:
        plugin_config["sessionNotes"] = False
        notes.append(
            "OpenClaw keeps session notes and dreams: add dream to pipelines.disabled in "
            "memoryd.toml so memoryd's 02:00 dream does not rewrite MEMORY.md as well"
        )
    install = ["plugins", "install", "--link", "--force", "--accept-capabilities", str(plugin_dir)]
    commands = [[openclaw_command, *install]] if openclaw_command else []
    if not openclaw_command:
        notes.append(
            f"record the plugin's install (openclaw not found on PATH): openclaw {' '.join(install)}"
        )
    notes += [
        "a running gateway applies the config at once; restart it to load a newly installed "
        "plugin: openclaw gateway restart",
        f"memoryd serve must be running at {conn.url} for diary capture",
    ]
    return ConfigChange(config, before, _dump_json(data, before), notes, commands)


def _openclaw_mcp_server(conn: Connection) -> dict[str, Any]:
    if conn.transport == "stdio":
        server: dict[str, Any] = {"command": conn.command, "args": conn.stdio_args()}
        if conn.stdio_env():
            server["env"] = conn.stdio_env()
        return server
    headers = conn.scope_headers()
    if conn.api_key_env:
        headers["Authorization"] = f"Bearer ${{{conn.api_key_env}}}"
    return {"url": conn.mcp_url, "transport": "streamable-http", "headers": headers}


def _openclaw_commands(conn: Connection, plugin_dir: Path) -> str:
    return (
        "it has comments (JSON5), which setup will not rewrite; follow the by-hand steps in "
        f"{plugin_dir / 'README.md'} instead (openclaw plugins install --link --force "
        f"--accept-capabilities {plugin_dir}, then openclaw config patch)"
    )


def default_plugin_dir() -> Path:
    """The plugin shipped with memoryd: ``memoryd/integrations/openclaw`` in the installed
    package (the wheel's copy), else ``<repo>/integrations/openclaw`` in a checkout."""
    import memoryd

    package = Path(memoryd.__file__).resolve().parent
    shipped = package / "integrations" / "openclaw"
    if (shipped / "openclaw.plugin.json").is_file():
        return shipped.resolve()  # in a checkout, a link to <repo>/integrations/openclaw
    return package.parents[1] / "integrations" / "openclaw"


# -- JSON helpers --------------------------------------------------------------------------
def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""


def _load_json(path: Path, text: str, *, openclaw_hint: str | None = None) -> dict[str, Any]:
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(
            f"{path} is not plain JSON ({exc.msg} at line {exc.lineno})",
            openclaw_hint or "fix the file (or move it away) and run setup again",
        ) from None
    except RecursionError:
        raise InvalidInputError(
            f"{path} nests JSON deeper than memoryd reads",
            openclaw_hint or "fix the file (or move it away) and run setup again",
        ) from None
    if not isinstance(data, dict):
        raise InvalidInputError(f"{path} does not hold a JSON object", "fix the file first")
    return data


def _dump_json(data: dict[str, Any], before: str) -> str:
    """JSON in the file's own indentation (2 spaces when new), ending with a newline."""
    indent = 2
    for line in before.splitlines()[1:]:
        stripped = line.lstrip(" ")
        if stripped and len(line) > len(stripped):
            indent = len(line) - len(stripped)
            break
    return json.dumps(data, indent=indent, ensure_ascii=False) + "\n"


def _object_at(parent: dict[str, Any], path: Path, name: str) -> dict[str, Any]:
    key = name.rsplit(".", 1)[-1]
    value = parent.setdefault(key, {})
    _require_object(value, path, name)
    return value


def _require_object(value: Any, path: Path, name: str) -> None:
    if not isinstance(value, dict):
        raise InvalidInputError(
            f"{name} in {path} is not an object", f"make {name} a JSON object and run setup again"
        )


# -- the command -------------------------------------------------------------------------
def memoryd_command() -> str:
    """The absolute path of this memoryd, so the agent finds it without our PATH."""
    beside = Path(sys.executable).with_name("memoryd")
    if beside.is_file():
        return str(beside)
    return shutil.which("memoryd") or "memoryd"


DEFAULT_AGENT: dict[str, str] = {"claude-code": "claude-code", "codex": "codex", "openclaw": "main"}
DEFAULT_SCOPE: dict[str, str] = {"claude-code": "project", "codex": "user", "openclaw": "user"}


def plan(
    target: str,
    *,
    scope: str | None = None,
    config: Path | None = None,
    project_dir: Path | None = None,
    plugin_dir: Path | None = None,
    conn: Connection,
    jobs: Jobs = "memoryd",
    openclaw_command: str | None = None,
) -> ConfigChange:
    """The change ``memoryd setup`` would make, without writing anything."""
    scope = scope or DEFAULT_SCOPE[target]
    if scope not in ("user", "project"):
        raise InvalidInputError(f"unknown scope {scope!r}", "use --scope user or --scope project")
    if target == "claude-code":
        return claude_code_change(conn, scope=scope, config=config, project_dir=project_dir)
    if target == "codex":
        return codex_change(conn, scope=scope, config=config, project_dir=project_dir)
    if target == "openclaw":
        if scope != "user":
            raise InvalidInputError(
                "OpenClaw has one configuration per user", "run setup openclaw without --scope"
            )
        return openclaw_change(
            conn,
            plugin_dir=plugin_dir or default_plugin_dir(),
            config=config,
            jobs=jobs,
            openclaw_command=openclaw_command,
        )
    raise InvalidInputError(f"unknown target {target!r}", f"use one of {', '.join(TARGETS)}")


def config_in_effect() -> Path | None:
    """The memoryd.toml this process reads that another working directory would miss:
    ``$MEMORYD_CONFIG`` or ``./memoryd.toml`` (the one in ``MEMORYD_HOME`` is found anyway)."""
    explicit = os.environ.get("MEMORYD_CONFIG")
    if explicit:
        return Path(explicit).expanduser().absolute()
    local = Path("memoryd.toml")
    return local.absolute() if local.is_file() else None


__all__ = [
    "JOBS",
    "ConfigChange",
    "Connection",
    "Jobs",
    "claude_code_change",
    "codex_change",
    "config_in_effect",
    "openclaw_change",
    "openclaw_config_path",
    "plan",
]
