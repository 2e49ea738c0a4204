"""``memoryd run``, ``memoryd pipelines``, ``memoryd rem-backfill``, ``memoryd dream
rollback`` and ``memoryd commitments``.

Thin: each command opens the configured ``Memory`` and calls the
:class:`~memoryd.operator.Operator` (runs and rollbacks: the same functions ``serve``'s
scheduler calls), the scope's pipelines view (as ``GET /v1/pipelines``) or the agent's
files (``scope.files()``, as every face), then prints a table, or JSON with ``--json``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import typer
from rich.table import Table

from memoryd.access import LOCAL
from memoryd.cli.common import (
    AgentReq,
    JsonOpt,
    agent_files,
    command_group,
    console,
    err,
    open_memory,
    print_json,
)
from memoryd.operator import Operator, RollbackReport
from memoryd.scope import AgentFiles

dream_app = command_group("The nightly dream: undo a run.")
commitments_app = command_group("Inferred follow-ups (opt-in: commitments.enabled).")


def register(app: typer.Typer) -> None:
    """Add ``run``, ``pipelines`` and ``dream rollback`` to ``app``."""
    app.command("run")(run_command)
    app.command("pipelines")(pipelines_command)
    app.command("rem-backfill")(rem_backfill_command)
    app.add_typer(dream_app, name="dream")
    app.add_typer(commitments_app, name="commitments")


def run_command(
    name: Annotated[str, typer.Argument(help="pipeline: digest, sync, dream, promote, ...")],
    agent: Annotated[
        str | None, typer.Option("--agent", "-a", help="only this agent (default: every agent)")
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="show what would happen; write nothing")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Run one pipeline now (it takes the same lock as the scheduler and is recorded)."""
    with open_memory() as mem:
        record = Operator(mem).run_pipeline(name, agent=agent, dry_run=dry_run)
    if as_json:
        print_json(record.to_dict())
    else:
        style = {"ok": "green", "skipped": "yellow"}.get(record.status, "red")
        label = " (dry run)" if record.dry_run else ""
        console.print(f"[bold]{record.name}[/bold]{label} [{style}]{record.status}[/{style}]")
        console.print(f"run id: {record.run_id}")
        for key, value in record.counts.items():
            console.print(f"  {key}: {value}")
        for note in record.notes:
            console.print(f"  {note}", markup=False, highlight=False)
        if record.error:
            err.print(f"[red]error:[/red] {record.error}", markup=True, highlight=False)
    if record.status not in ("ok", "skipped"):
        raise typer.Exit(code=1)


def rem_backfill_command(
    agent: Annotated[str, typer.Option("--agent", "-a", help="agent id")],
    path: Annotated[
        str, typer.Option("--path", help="daily files to replay (workspace-relative)")
    ] = "memory",
    stage_short_term: Annotated[
        bool,
        typer.Option("--stage-short-term", help="also store the candidates as short-term memory"),
    ] = False,
    rollback: Annotated[
        bool, typer.Option("--rollback", help="remove the backfills' DREAMS.md entries")
    ] = False,
    rollback_short_term: Annotated[
        bool,
        typer.Option("--rollback-short-term", help="remove the memories backfills staged"),
    ] = False,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run", help="show the candidates (or what a rollback removes); write nothing"
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Replay old daily files as standalone days: grounded review entries in DREAMS.md."""
    with open_memory() as mem:
        files = agent_files(mem, agent)
        report = files.backfill(
            path=path,
            stage_short_term=stage_short_term,
            rollback=rollback,
            rollback_short_term=rollback_short_term,
            dry_run=dry_run,
        )
    if as_json:
        print_json(report.to_json())
        return
    label = " (dry run)" if dry_run else ""
    if isinstance(report, RollbackReport):
        would = "would roll back" if dry_run else "rolled back"
        console.print(
            f"{would} {_count(report.runs, 'backfill run')}: {report.dreams_bytes_removed} bytes"
            f" of DREAMS.md, {_count(report.memories_removed, 'staged memory', 'staged memories')}"
        )
        for note in report.notes:
            console.print(f"  {note}", markup=False, highlight=False)
        return
    for day, cands in report.days.items():
        console.print(f"[bold]{day}[/bold]{label}: {_count(len(cands), 'candidate')}")
        for c in cands:
            console.print(f"  - {c.text}  ({c.citation})", markup=False, highlight=False)
    for note in report.skipped:
        console.print(f"  skipped {note}", markup=False, highlight=False)
    if report.staged:
        console.print(
            f"staged {_count(len(report.staged), 'short-term memory', 'short-term memories')}"
        )
    if not dry_run and report.days:
        undo = "--rollback --rollback-short-term" if report.staged else "--rollback"
        console.print(
            f"review: {files.workspace.dreams_file} · undo: memoryd rem-backfill -a {agent} {undo}",
            markup=False,
            highlight=False,
        )


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"


def _commitments(
    agent: str, as_json: bool, empty: str, op: Callable[[AgentFiles], list[Any]]
) -> None:
    """``op`` on the agent's files (as the HTTP routes do), its commitments printed."""
    with open_memory() as mem:
        items = op(agent_files(mem, agent))
    if as_json:
        print_json([c.to_json() for c in items])
        return
    if not items:
        console.print(empty)
    for c in items:
        console.print(
            f"{c.id}  {c.status:<9} due {c.due[:16]}  [{c.channel}]  {c.text}  ({c.source})",
            markup=False,
            highlight=False,
        )


@commitments_app.command("due")
def commitments_due_command(
    agent: AgentReq,
    channel: Annotated[str | None, typer.Option("--channel", help="only this channel")] = None,
    as_json: JsonOpt = False,
) -> None:
    """What is due now (a heartbeat): printed, and marked delivered."""
    _commitments(agent, as_json, "nothing due", lambda f: f.commitments(due=True, channel=channel))


@commitments_app.command("list")
def commitments_list_command(
    agent: AgentReq,
    status: Annotated[
        str | None, typer.Option("--status", help="pending, delivered, done or expired")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Every commitment of the agent, by due time."""
    _commitments(agent, as_json, "no commitments", lambda f: f.commitments(status=status))


@commitments_app.command("done")
def commitments_done_command(
    agent: AgentReq,
    commitment_id: Annotated[str, typer.Argument(help="the id from `commitments list`")],
    as_json: JsonOpt = False,
) -> None:
    """Close one commitment."""
    _commitments(agent, as_json, "", lambda f: [f.close_commitment(commitment_id)])


def pipelines_command(
    name: Annotated[str | None, typer.Option("--name", help="only runs of this pipeline")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", help="recent runs to show")] = 20,
    as_json: JsonOpt = False,
) -> None:
    """The pipelines, their schedules, next and last runs, and recent runs."""
    with open_memory() as mem:
        status = (
            mem.scope(LOCAL).workspaces().pipelines(name=name, limit=limit)
        )  # all of it: an admin's view
    if as_json:
        print_json(status)
        return
    table = Table(title="pipelines")
    for col in ("name", "schedule", "enabled", "next run", "last run", "status", "description"):
        table.add_column(col)
    for p in status["pipelines"]:
        last = p["last_run"] or {}
        table.add_row(
            p["name"],
            f"{p['schedule']} ({p['timezone']})",
            "yes" if p["enabled"] else "no",
            _short(p["next_run"]),
            _short(last.get("started_at")),
            last.get("status", "never"),
            p["description"],
        )
    console.print(table)
    runs = Table(title="recent runs")
    for col in ("run id", "agent", "started", "finished", "status", "counts", "error"):
        runs.add_column(col)
    for r in status["runs"]:
        counts = ", ".join(f"{k} {v}" for k, v in r["counts"].items() if v)
        runs.add_row(
            r["run_id"] + (" (dry)" if r.get("dry_run") else ""),
            r.get("agent") or "all",
            _short(r.get("started_at")),
            _short(r.get("finished_at")),
            r["status"],
            counts,
            (r.get("error") or "")[:80],
        )
    console.print(runs)


def _short(stamp: str | None) -> str:
    return stamp[:19].replace("T", " ") if stamp else "—"


@dream_app.command("rollback")
def rollback_command(
    run_id: Annotated[str, typer.Argument(help="the dream run to undo (see memoryd pipelines)")],
    as_json: JsonOpt = False,
) -> None:
    """Undo a dream run: delete what it added, revert what it updated, restore what it
    deleted (short-term memories included)."""
    with open_memory() as mem:
        undone = Operator(mem).rollback_dream(run_id)
    if as_json:
        print_json({"run_id": run_id, **undone.counts(), "skipped": undone.skipped})
        return
    console.print(
        f"rolled back {run_id}: {undone.deleted} added memories deleted, "
        f"{undone.reverted} updates reverted, {undone.restored} deletions restored"
    )
    for line in undone.skipped:
        console.print(f"  left alone: {line}", markup=False)
