"""``memoryd wiki compile|search|get|apply|lint``: the memory wiki of an agent
(:mod:`memoryd.wiki`)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape

from memoryd import wiki
from memoryd.cli.common import (
    AgentReq,
    JsonOpt,
    agent_files,
    command_group,
    console,
    open_memory,
    print_json,
)

wiki_app = command_group(
    "The memory wiki: pages of claims with evidence, compiled from durable memory."
)


def register(app: typer.Typer) -> None:
    app.add_typer(wiki_app, name="wiki")


@wiki_app.command("compile")
def compile_command(
    agent: AgentReq,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="write nothing")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Compile the agent's facts and MEMORY.md into wiki/ (only changed files are written)."""
    with open_memory() as mem:
        report = agent_files(mem, agent).wiki_compile(dry_run=dry_run)
    if as_json:
        print_json(report.to_json())
        return
    verb = "would write" if dry_run else "wrote"
    console.print(
        f"{report.pages} pages, {report.claims} claims ({report.contested} contested,"
        f" {report.stale} stale); {verb} {len(report.written)} files,"
        f" {report.unchanged} unchanged, {len(report.removed)} removed",
        highlight=False,
    )


@wiki_app.command("search")
def search_command(
    query: Annotated[str, typer.Argument(help="words to look for")],
    agent: AgentReq,
    limit: Annotated[int, typer.Option(help="claims at most")] = 10,
    as_json: JsonOpt = False,
) -> None:
    """Claims whose words match, best first, with their page and evidence."""
    with open_memory() as mem:
        hits = agent_files(mem, agent).wiki_search(query, limit)
    if as_json:
        print_json(hits)
        return
    for h in hits:
        console.print(
            f"[bold]{escape(h['page'])}[/bold] · {escape(h['text'])} [dim]({h['status']},"
            f" ^{h['id']}; {escape(', '.join(h['evidence']))})[/dim]"
        )
    if not hits:
        console.print("no claim matches")


@wiki_app.command("get")
def get_command(
    page: Annotated[str, typer.Argument(help="the page's title, or the id of one of its claims")],
    agent: AgentReq,
    as_json: JsonOpt = False,
) -> None:
    """A page: its Markdown (or, with --json, its claims too)."""
    with open_memory() as mem:
        found = agent_files(mem, agent).wiki_get(page)
    if as_json:
        print_json(found)
        return
    console.print(found["markdown"], markup=False, highlight=False, end="")


@wiki_app.command("apply")
def apply_command(
    agent: AgentReq,
    page: Annotated[str | None, typer.Option(help="add: the page to put the claim on")] = None,
    text: Annotated[str | None, typer.Option(help="add: the claim")] = None,
    evidence: Annotated[
        list[str] | None,
        typer.Option("--evidence", "-e", help="add: fact:<id> or path#Lx[-Ly] (repeatable)"),
    ] = None,
    confidence: Annotated[float, typer.Option(help="add: 0-1")] = 1.0,
    retire: Annotated[str | None, typer.Option(help="retire: the claim's id")] = None,
    status: Annotated[str, typer.Option(help="retire: superseded or stale")] = "superseded",
    reason: Annotated[str | None, typer.Option(help="retire: why")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Add a claim with its evidence, or retire one (--retire ID); never a free rewrite."""
    edit = wiki.Edit.of(
        "retire" if retire else "add", page=page, text=text, evidence=evidence,
        confidence=confidence, claim=retire, status=status, reason=reason,
    )  # fmt: skip
    with open_memory() as mem:
        claim, report = agent_files(mem, agent).wiki_apply(edit)
    result = {"claim": claim.to_json() if claim else None, "compile": report.to_json()}
    if as_json:
        print_json(result)
        return
    if claim is not None:
        console.print(
            f"{claim.status}: {claim.text} ^{claim.id} on [[{claim.page}]]",
            markup=False,
            highlight=False,
        )


@wiki_app.command("lint")
def lint_command(agent: AgentReq, as_json: JsonOpt = False) -> None:
    """Broken links, claims without or with changed evidence, contradictions, stale and
    orphan pages. Exits 1 when there is any."""
    with open_memory() as mem:
        problems = agent_files(mem, agent).wiki_lint()
    if as_json:
        print_json(problems)
    else:
        for p in problems:
            console.print(
                f"{p['kind']}: {p['where']}: {p['message']}", markup=False, highlight=False
            )
        console.print(f"{len(problems)} problems" if problems else "no problems")
    if problems:
        raise typer.Exit(code=1)
