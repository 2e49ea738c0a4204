"""``memoryd setup claude-code|codex|openclaw``: the command line of
:mod:`memoryd.setup_agents` (show the change as a diff, then write it once confirmed)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Annotated

import typer

from memoryd.errors import InvalidInputError, MemorydError
from memoryd.settings import Settings
from memoryd.setup_agents import (
    DEFAULT_AGENT,
    JOBS,
    TARGETS,
    ConfigChange,
    Connection,
    Jobs,
    config_in_effect,
    default_plugin_dir,
    memoryd_command,
    plan,
)
from memoryd.validate import check_id


def register(app: typer.Typer) -> None:
    """Add ``memoryd setup`` to the main CLI."""
    app.command("setup")(setup)


def setup(
    target: Annotated[str, typer.Argument(help="claude-code, codex or openclaw")],
    scope: Annotated[
        str | None,
        typer.Option(help="user or project (default: project for claude-code, user otherwise)"),
    ] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="write without asking")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="show the diff only")] = False,
    config: Annotated[
        Path | None, typer.Option(help="the configuration file to edit (default: per target)")
    ] = None,
    project_dir: Annotated[
        Path | None, typer.Option(help="project for --scope project (default: here)")
    ] = None,
    agent: Annotated[
        str | None,
        typer.Option("--agent", "-a", help="agent id the tools act as (default: the target)"),
    ] = None,
    user: Annotated[
        str | None, typer.Option("--user", "-u", help="user id (default: mcp.user_id)")
    ] = None,
    transport: Annotated[
        str, typer.Option(help="stdio: start `memoryd mcp`; http: use serve's /mcp")
    ] = "stdio",
    url: Annotated[
        str | None, typer.Option(help="memoryd serve URL (default: server.host/port)")
    ] = None,
    api_key_env: Annotated[
        str | None, typer.Option(help="env var holding the API key (http and plugin)")
    ] = None,
    plugin_dir: Annotated[
        Path | None,
        typer.Option(help="the OpenClaw plugin (default: the one shipped with memoryd)"),
    ] = None,
    show_plugin_dir: Annotated[
        bool,
        typer.Option(
            "--show-plugin-dir", help="print the OpenClaw plugin's directory and exit (by hand)"
        ),
    ] = False,
    jobs: Annotated[
        str | None,
        typer.Option(
            help="openclaw: who keeps session notes and the nightly dream, memoryd (turns off "
            "OpenClaw's session-memory hook and managed dreaming) or openclaw "
            "(default: asked; memoryd without a terminal or with --yes)"
        ),
    ] = None,
) -> None:
    """Connect Claude Code, Codex or OpenClaw to memoryd: shows the change, then writes it."""
    if show_plugin_dir:
        typer.echo(plugin_dir or default_plugin_dir())
        return
    try:
        if jobs is None and target == "openclaw" and not (yes or dry_run) and sys.stdin.isatty():
            jobs = _ask_jobs()
        change = _plan_from_options(
            target,
            scope,
            config,
            project_dir,
            agent,
            user,
            transport,
            url,
            api_key_env,
            plugin_dir,
            jobs or "memoryd",
        )
    except MemorydError as exc:
        typer.echo(f"error: {exc.message}", err=True)
        if exc.hint:
            typer.echo(f"hint: {exc.hint}", err=True)
        raise typer.Exit(code=2) from None
    if not change.changed:
        typer.echo(f"{change.path} already connects {target} to memoryd; nothing to change")
    else:
        for line in change.diff().splitlines():
            color = {"+": "green", "-": "red", "@": "cyan"}.get(line[:1])
            typer.secho(line, fg=color if not line.startswith(("+++", "---")) else None)
    for command in change.commands:
        typer.echo(f"{'would run' if dry_run else 'then runs'}: {' '.join(command)}")
    if dry_run:
        return
    if change.changed:
        if not yes and not _confirm(f"write {change.path}?"):
            typer.echo("nothing written (run again and answer y, or pass --yes)", err=True)
            raise typer.Exit(code=1)
        change.write()
        typer.echo(f"wrote {change.path}")
    for command in change.commands:
        _run(command)
    for note in change.notes:
        typer.echo(f"next: {note}")


def _ask_jobs() -> Jobs:
    """The one question: which system keeps session notes and the nightly dream."""
    answer = typer.prompt(
        "OpenClaw also writes session notes (session-memory hook) and dreams (memory-core). "
        "Who should do these jobs: memoryd (turns OpenClaw's off) or openclaw?",
        default="memoryd",
    )
    return _check_jobs(answer)


def _check_jobs(value: str) -> Jobs:
    if value not in JOBS:
        raise InvalidInputError(
            f"unknown --jobs {value!r}", "use --jobs memoryd or --jobs openclaw"
        )
    return value


def _run(command: list[str]) -> None:
    """Run a follow-up command (``openclaw plugins install``); a failure stops setup."""
    typer.echo(f"running: {' '.join(command)}")
    proc = subprocess.run(command, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        typer.echo(f"error: {' '.join(command)} failed ({proc.returncode})", err=True)
        typer.echo((proc.stderr or proc.stdout).strip()[-2000:], err=True)
        typer.echo("hint: fix what it says and run setup again (the config is written)", err=True)
        raise typer.Exit(code=1)


def _confirm(question: str) -> bool:
    """Ask on the terminal; no answer (closed stdin, as in CI) counts as no."""
    try:
        return typer.confirm(question, default=False)
    except typer.Abort:
        typer.echo(err=True)
        return False


def _plan_from_options(
    target: str,
    scope: str | None,
    config: Path | None,
    project_dir: Path | None,
    agent: str | None,
    user: str | None,
    transport: str,
    url: str | None,
    api_key_env: str | None,
    plugin_dir: Path | None,
    jobs: str = "memoryd",
) -> ConfigChange:
    if target not in TARGETS:
        raise InvalidInputError(f"unknown target {target!r}", f"use one of {', '.join(TARGETS)}")
    if transport not in ("stdio", "http"):
        raise InvalidInputError(f"unknown transport {transport!r}", "use stdio or http")
    settings = Settings()
    agent_id = check_id(agent or DEFAULT_AGENT[target], "--agent", settings.limits, required=True)
    check_id(user, "--user", settings.limits)
    if api_key_env is not None and not api_key_env.replace("_", "a").isalnum():
        raise InvalidInputError(
            f"--api-key-env {api_key_env!r} is not an environment variable name",
            "pass the variable's name, e.g. MEMORYD_API_KEY, never the key itself",
        )
    assert agent_id is not None
    server = settings.server
    conn = Connection(
        agent_id=agent_id,
        user_id=user,
        transport=transport,  # type: ignore[arg-type]
        url=url or f"http://{server.host}:{server.port}",
        api_key_env=api_key_env,
        home=settings.home,
        config_file=config_in_effect(),
        command=memoryd_command(),
    )
    return plan(
        target,
        scope=scope,
        config=config,
        project_dir=project_dir,
        plugin_dir=plugin_dir,
        conn=conn,
        jobs=_check_jobs(jobs),
        openclaw_command=shutil.which("openclaw") if target == "openclaw" else None,
    )
