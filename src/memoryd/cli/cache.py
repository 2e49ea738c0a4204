"""``memoryd cache clean``: the optimised ONNX graphs the local model caches
(:mod:`memoryd.embed.onnx`), ~90 MB each. Opening the model removes stale ones by
itself; this removes what is left (an older memoryd's at ``~/.cache/memoryd/onnx``)
or, with ``--all``, everything (the next start rebuilds the current one in ~1 s)."""

from __future__ import annotations

from typing import Annotated

import typer

from memoryd.cli.common import JsonOpt, command_group, console, print_json
from memoryd.settings import Settings

cache_app = command_group("The local model's cache of optimised graphs.")


def register(app: typer.Typer) -> None:
    app.add_typer(cache_app, name="cache")


@cache_app.command(
    "clean",
    help="Remove stale optimised model graphs (another onnxruntime's, a changed or moved "
    "model's, an older memoryd's).",
)
def clean_command(
    everything: Annotated[
        bool, typer.Option("--all", help="also the current model's graph (rebuilt on next use)")
    ] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="list; remove nothing")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Remove the stale graphs; see ``help`` above (one line in ``--help``)."""
    from memoryd.embed.onnx import (
        LEGACY_CACHE_DIR,
        CacheReport,
        clean_cache,
        current_cache_file,
        model_cache_dir,
    )

    config = Settings().embed.onnx
    current = model_cache_dir(config.cache_dir)
    keep = None if everything else current_cache_file(config)
    places = [p for p in (current, LEGACY_CACHE_DIR.expanduser()) if p is not None]
    total = CacheReport()
    for place in dict.fromkeys(p.resolve() for p in places):
        legacy = place != (current.resolve() if current else None)
        found = clean_cache(place, keep=keep, everything=everything or legacy, dry_run=dry_run)
        total.removed += found.removed
        total.kept += found.kept
        total.freed_bytes += found.freed_bytes
    if as_json:
        print_json({**total.to_json(), "cache_dir": str(current), "dry_run": dry_run})
        return
    verb = "would remove" if dry_run else "removed"
    console.print(
        f"{verb} {len(total.removed)} cached graphs ({total.freed_bytes / 1e6:.0f} MB); "
        f"kept {len(total.kept)} in {current}",
        highlight=False,
    )
