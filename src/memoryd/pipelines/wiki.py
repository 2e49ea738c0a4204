"""``wiki``: each agent's memory wiki recompiled nightly after the dream (opt-in:
``wiki.enabled``). The compiler is :mod:`memoryd.wiki`; an unchanged agent writes nothing."""

from __future__ import annotations

from memoryd.pipelines.registry import PipelineContext, RunResult, pipeline
from memoryd.wiki import compile_wiki


@pipeline(
    "wiki",
    schedule="30 4 * * *",
    description="durable memory -> wiki/ pages of claims with evidence (opt-in)",
    opt_in=lambda settings: settings.wiki.enabled,
)
def wiki(ctx: PipelineContext) -> RunResult:
    result = RunResult()

    def one(agent: str) -> None:
        report = compile_wiki(ctx.memory, ctx.workspace(agent), dry_run=ctx.dry_run)
        changed = len(report.written) + len(report.removed)
        if changed:
            result.count("would_update_files" if ctx.dry_run else "files_updated", changed)
        if report.contested:
            result.count("contested_claims", report.contested)

    ctx.each(result, ctx.agents(), one)
    return result
