"""The memory wiki (memoryd/wiki/): durable memory compiled into pages of claims with
evidence; byte-exact rebuilds, statuses (superseded, contested, stale), structured
edits that must cite evidence that resolves, lint; and the CLI, HTTP and MCP faces.
Real files, the real store and model."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from memoryd import wiki
from memoryd.api.app import create_app
from memoryd.cli import app as cli_app
from memoryd.core import Memory
from memoryd.embed import Embedder
from memoryd.errors import InvalidInputError, NotFoundError
from tests.mcp_client import McpSession
from tests.pipelines_kit import FixedClock, face_env
from tests.wiki_kit import claims, make_settings, seed, vault, ws_of


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock("2026-03-10T09:30:00+00:00")


@pytest.fixture
def mem(tmp_path: Path, embedder: Embedder, clock: FixedClock) -> Iterator[Memory]:
    m = Memory(make_settings(tmp_path), embedder=embedder, clock=clock)
    yield m
    m.close()


def test_pages_claims_evidence_and_statuses(mem: Memory) -> None:
    ids = seed(mem)
    report = wiki.compile_wiki(mem, ws_of(mem))
    files = vault(mem)
    # an entity named in two or more claims gets a page; the rest go to topic pages
    assert {"Ana Ruiz.md", "Lisbon.md", "Orion.md", "Key Facts.md", "index.md"} <= set(files)
    assert "Infra Servers.md" in files  # a heading's slash never becomes a folder
    page = files["Ana Ruiz.md"].decode()
    assert page.startswith('---\ntitle: "Ana Ruiz"\nkind: entity\n')
    assert "[[Lisbon]]" in page  # Obsidian links between pages
    got = claims(mem)
    moved = got["Ana Ruiz moved to Lisbon in May"]
    assert moved["evidence"] == [f"fact:{ids['moved']}", "memory/2026-03-09.md#L4"]
    assert moved["status"] == "current" and moved["valid_from"] == "2026-03-10"
    assert got["Ana Ruiz runs the Lisbon office"]["evidence"] == ["MEMORY.md#L5"]
    # the text a fact had before its update is a superseded claim, with its end date
    old = got["Ana Ruiz prefers tea over coffee"]
    (update,) = [h for h in mem.history(ids["tea"]) if h.event.value == "UPDATE"]
    assert old["status"] == "superseded"
    assert old["valid_until"] == update.created_at.date().isoformat()
    assert got["Ana Ruiz prefers green tea over coffee"]["status"] == "current"
    # two alike claims with different numbers contradict each other
    first = got["The staging database of Orion listens on port 5433"]
    second = got["The staging database of Orion listens on port 5432"]
    assert first["status"] == second["status"] == "contested"
    assert first["note"] == f"contradicts {second['id']}"
    assert report.contested == 2
    board = files["_dashboards/contradictions.md"].decode()
    assert "port 5433" in board and "port 5432" in board
    assert "Superseded" in page and "^" + old["id"] in page


def test_a_rebuild_of_unchanged_input_changes_no_byte(mem: Memory) -> None:
    seed(mem)
    wiki.compile_wiki(mem, ws_of(mem))
    before = vault(mem)
    again = wiki.compile_wiki(mem, ws_of(mem))
    assert again.written == [] and again.removed == [] and vault(mem) == before
    for name in ("Ana Ruiz.md", ".state/claims.json", "_dashboards/stale.md"):
        (ws_of(mem).root / "wiki" / name).unlink()
    rebuilt = wiki.compile_wiki(mem, ws_of(mem))
    assert sorted(rebuilt.written) == sorted(
        ["Ana Ruiz.md", ".state/claims.json", "_dashboards/stale.md"]
    )
    assert vault(mem) == before


def test_claims_go_stale_and_pages_nothing_compiles_to_are_removed(
    mem: Memory, clock: FixedClock
) -> None:
    ids = seed(mem)
    wiki.compile_wiki(mem, ws_of(mem))
    clock.now += timedelta(days=mem.settings.wiki.stale_days + 1)
    report = wiki.compile_wiki(mem, ws_of(mem))
    assert claims(mem)["Ana Ruiz moved to Lisbon in May"]["status"] == "stale"
    assert report.stale >= 1
    assert "Ana Ruiz moved to Lisbon in May" in vault(mem)["_dashboards/stale.md"].decode()
    mem.delete(ids["port1"])
    mem.delete(ids["port2"])
    gone = wiki.compile_wiki(mem, ws_of(mem))
    assert "Orion.md" in gone.removed and "Orion.md" not in vault(mem)


def test_apply_adds_and_retires_claims_that_survive_recompiles(mem: Memory) -> None:
    ids = seed(mem)
    ws = ws_of(mem)
    claim, _ = wiki.apply(
        mem,
        ws,
        wiki.Edit(
            op="add",
            page="Ana Ruiz",
            text="Ana Ruiz speaks Portuguese",
            evidence=["memory/2026-03-09.md#L4", f"fact:{ids['moved']}"],
            confidence=0.7,
        ),
    )
    assert claim is not None and claim.origin == "applied" and claim.confidence == 0.7
    retired, _ = wiki.apply(
        mem,
        ws,
        wiki.Edit(
            op="retire",
            claim=claims(mem)["Ana Ruiz runs the Lisbon office"]["id"],
            reason="she left",
        ),
    )
    assert retired is not None and retired.status == "superseded" and retired.note == "she left"
    before = vault(mem)
    assert wiki.compile_wiki(mem, ws).written == []  # both edits are part of the input now
    assert vault(mem) == before
    got = claims(mem)
    assert got["Ana Ruiz speaks Portuguese"]["status"] == "current"
    assert got["Ana Ruiz runs the Lisbon office"]["status"] == "superseded"


@pytest.mark.parametrize(
    ("evidence", "says"),
    [
        ([], "needs evidence"),
        (["memory/2026-03-09.md#L99"], "not in memory/2026-03-09.md"),
        (["memory/nope.md#L1"], "does not exist"),
        (["../../etc/passwd.md#L1"], "'..'"),
        (["fact:no-such-id"], "no such memory"),
        (["somewhere"], "neither fact:<id> nor path"),
    ],
)
def test_an_edit_without_evidence_that_resolves_is_refused(
    mem: Memory, evidence: list[str], says: str
) -> None:
    seed(mem)
    wiki.compile_wiki(mem, ws_of(mem))
    before = vault(mem)
    with pytest.raises(InvalidInputError) as err:
        wiki.apply(
            mem, ws_of(mem), wiki.Edit(op="add", page="Ana Ruiz", text="x y z", evidence=evidence)
        )
    assert says in err.value.message and err.value.hint
    assert vault(mem) == before  # nothing journalled, nothing rewritten


def test_bad_titles_and_unknown_claims_are_clear_errors(mem: Memory) -> None:
    seed(mem)
    ws = ws_of(mem)
    for title in ("../../outside", "a/b", "..."):
        with pytest.raises(InvalidInputError):
            wiki.apply(
                mem, ws, wiki.Edit(op="add", page=title, text="t", evidence=["MEMORY.md#L4"])
            )
    assert not (ws.root / "outside.md").exists() and not (ws.root.parent / "outside.md").exists()
    claim, _ = wiki.apply(  # an odd but harmless title is made safe, not refused
        mem,
        ws,
        wiki.Edit(op="add", page="Café: Zürich notes", text="Open late", evidence=["MEMORY.md#L4"]),
    )
    assert claim is not None and claim.page == "Café Zürich notes"
    assert (ws.root / "wiki" / "Café Zürich notes.md").is_file()
    with pytest.raises(NotFoundError):
        wiki.apply(mem, ws, wiki.Edit(op="retire", claim="c0000000000"))
    with pytest.raises(NotFoundError):
        wiki.get(mem, ws, "Nobody")
    with pytest.raises(InvalidInputError):
        wiki.apply(
            mem, ws, wiki.Edit(op="add", page="P", text="x" * 5000, evidence=["MEMORY.md#L4"])
        )


def test_search_get_and_lint(mem: Memory) -> None:
    seed(mem)
    ws = ws_of(mem)
    hits = wiki.search(mem, ws, "which port does the staging database use?")  # compiles first
    assert hits[0]["page"] == "Orion" and "port" in hits[0]["text"]
    assert wiki.search(mem, ws, "green tea")[0]["text"] == "Ana Ruiz prefers green tea over coffee"
    page = wiki.get(mem, ws, "ana ruiz")
    assert page["title"] == "Ana Ruiz" and page["markdown"].startswith("---")
    # a person's own page in the vault is never touched by the compiler; lint reads it
    mine = ws.root / "wiki" / "Notes.md"
    mine.write_text("# Notes\n\nSee [[Ana Ruiz]] and [[Nobody Here]].\n")
    wiki.compile_wiki(mem, ws)
    assert mine.read_text() == "# Notes\n\nSee [[Ana Ruiz]] and [[Nobody Here]].\n"
    kinds = {(p["kind"], p["where"]) for p in wiki.lint(mem, ws)}
    assert ("broken-link", "wiki/Notes.md") in kinds
    assert any(k == "contradiction" and w.startswith("wiki/Orion.md#^") for k, w in kinds)
    assert ("orphan", "wiki/Orion.md") in kinds  # no page links to Orion
    assert not any(w == "wiki/Ana Ruiz.md" and k == "orphan" for k, w in kinds)  # Notes does


def test_cli_http_and_mcp(tmp_path: Path, embedder: Embedder, live_server: Any) -> None:
    settings = make_settings(tmp_path)
    with Memory(settings, embedder=embedder) as m:
        seed(m)
    env = face_env(tmp_path)
    runner = CliRunner()
    out = runner.invoke(cli_app, ["wiki", "compile", "-a", "dev", "--json"], env=env)
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["contested"] == 2
    out = runner.invoke(cli_app, ["wiki", "search", "green tea", "-a", "dev"], env=env)
    assert out.exit_code == 0 and "Ana Ruiz prefers green tea over coffee" in out.output
    out = runner.invoke(cli_app, ["wiki", "get", "../../MEMORY", "-a", "dev"], env=env)
    assert out.exit_code == 2 and "looks like a path" in out.output
    out = runner.invoke(cli_app, ["wiki", "get", "Orion", "-a", "dev"], env=env)
    assert out.exit_code == 0 and "port 5433" in out.output
    out = runner.invoke(
        cli_app,
        ["wiki", "apply", "-a", "dev", "--page", "Orion", "--text", "Orion runs on Kubernetes"],
        env=env,
    )
    assert out.exit_code == 2 and "needs evidence" in out.output
    out = runner.invoke(cli_app, ["wiki", "lint", "-a", "dev"], env=env)
    assert out.exit_code == 1 and "contradiction" in out.output

    m = Memory(settings, embedder=embedder)
    try:
        with live_server(create_app(memory=m)) as server:
            got = httpx.get(
                f"{server.url}/v1/wiki/search", params={"agent_id": "dev", "q": "staging port"}
            )
            assert got.status_code == 200, got.text
            assert got.json()["results"][0]["page"] == "Orion"
            added = httpx.post(
                f"{server.url}/v1/wiki/apply",
                json={
                    "agent_id": "dev",
                    "op": "add",
                    "page": "Orion",
                    "text": "Orion's staging moved to port 5433 for good",
                    "evidence": ["MEMORY.md#L4"],
                },
            )
            assert added.status_code == 200, added.text
            assert added.json()["claim"]["origin"] == "applied"
            refused = httpx.post(
                f"{server.url}/v1/wiki/apply",
                json={
                    "agent_id": "dev",
                    "op": "add",
                    "page": "Orion",
                    "text": "t",
                    "evidence": ["MEMORY.md#L999"],
                },
            )
            assert refused.status_code == 422 and "not in MEMORY.md" in refused.text
            page = httpx.get(f"{server.url}/v1/wiki/pages/Orion", params={"agent_id": "dev"})
            assert "for good" in page.json()["result"]["markdown"]
            assert (
                httpx.get(
                    f"{server.url}/v1/wiki/pages/Nope", params={"agent_id": "dev"}
                ).status_code
                == 404
            )
            lint = httpx.get(f"{server.url}/v1/wiki/lint", params={"agent_id": "dev"})
            assert any(p["kind"] == "contradiction" for p in lint.json()["problems"])
    finally:
        m.close()

    memoryd = str(Path(sys.executable).with_name("memoryd"))
    with McpSession.stdio(memoryd, ["mcp"], env) as mcp:
        hits = mcp.call("wiki_search", query="green tea")["results"]
        assert hits[0]["page"] == "Ana Ruiz"
        page = mcp.call("wiki_get", page="Ana Ruiz")["result"]
        claim = next(
            c for c in page["claims"] if c["text"] == "Ana Ruiz prefers green tea over coffee"
        )
        by_id = mcp.call("wiki_get", page=claim["id"])["result"]
        assert by_id["title"] == "Ana Ruiz" and by_id["claim"]["id"] == claim["id"]
        done = mcp.call(
            "wiki_apply", op="retire", claim_id=claim["id"], status="stale", reason="ask again"
        )
        assert done["claim"]["status"] == "stale"
        problems = mcp.call("wiki_lint")["problems"]
        assert any(p["kind"] == "contradiction" for p in problems)


def test_the_nightly_pipeline_is_opt_in(mem: Memory) -> None:
    from memoryd.pipelines.runs import run_pipeline
    from memoryd.pipelines.scheduler import enabled_specs

    seed(mem)
    assert "wiki" not in {spec.name for spec in enabled_specs(mem)}
    mem.settings.wiki.enabled = True
    assert "wiki" in {spec.name for spec in enabled_specs(mem)}
    run = run_pipeline(mem, "wiki")
    assert run.counts["files_updated"] >= 5 and run.counts["contested_claims"] == 2
    assert (ws_of(mem).root / "wiki" / "Ana Ruiz.md").is_file()
    assert "files_updated" not in run_pipeline(mem, "wiki").counts  # nothing changed since


def test_a_vault_rebuilt_from_nothing_by_another_process_is_byte_identical(
    tmp_path: Path, embedder: Embedder
) -> None:
    """Deterministic across processes too: nothing depends on the hash seed (set ordering)
    or on which files were there before: wiki/ deleted and compiled again by another
    process (``memoryd wiki compile``) is the same bytes."""
    import shutil
    import subprocess

    root = tmp_path / "workspaces" / "dev" / "wiki"

    def files() -> dict[str, bytes]:
        return {
            p.relative_to(root).as_posix(): p.read_bytes()
            for p in root.rglob("*")
            if p.is_file() and p.name != "lock"
        }

    with Memory(make_settings(tmp_path), embedder=embedder) as m:
        seed(m)
        assert wiki.compile_wiki(m, ws_of(m)).pages >= 5
        before = files()
        shutil.rmtree(root)
        hash_seed = "1" if os.environ.get("PYTHONHASHSEED") != "1" else "2"  # not this one's
        env = {**face_env(tmp_path), "PATH": os.environ["PATH"], "PYTHONHASHSEED": hash_seed}
        out = subprocess.run(
            [sys.executable, "-m", "memoryd.cli", "wiki", "compile", "-a", "dev", "--json"],
            env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert out.returncode == 0, out.stdout + out.stderr
        assert files() == before
        assert wiki.compile_wiki(m, ws_of(m)).written == []


def test_cli_adds_and_retires_http_compiles_and_mcp_adds(
    tmp_path: Path, embedder: Embedder, live_server: Any
) -> None:
    settings = make_settings(tmp_path)
    with Memory(settings, embedder=embedder) as m:
        ids = seed(m)
    env, runner = face_env(tmp_path), CliRunner()
    out = runner.invoke(
        cli_app,
        ["wiki", "apply", "-a", "dev", "--page", "Orion", "--text", "Orion runs on Kubernetes",
         "-e", "MEMORY.md#L4", "--confidence", "0.6", "--json"],
        env=env,
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    added = json.loads(out.output)["claim"]
    assert (added["page"], added["status"], added["confidence"]) == ("Orion", "current", 0.6)
    assert added["evidence"] == ["MEMORY.md#L4"] and added["origin"] == "applied"
    out = runner.invoke(
        cli_app, ["wiki", "apply", "-a", "dev", "--retire", added["id"], "--reason", "moved"],
        env=env,
    )  # fmt: skip
    assert out.exit_code == 0 and out.output.startswith("superseded: Orion runs on Kubernetes")
    out = runner.invoke(cli_app, ["wiki", "get", "Orion", "-a", "dev", "--json"], env=env)
    (retired,) = [c for c in json.loads(out.output)["claims"] if c["id"] == added["id"]]
    assert retired["status"] == "superseded" and retired["note"] == "moved"

    m = Memory(settings, embedder=embedder)
    try:
        with live_server(create_app(memory=m)) as server:
            compiled = httpx.post(
                f"{server.url}/v1/wiki/compile", json={"agent_id": "dev", "dry_run": True}
            )
            assert compiled.status_code == 200, compiled.text
            assert compiled.json()["written"] == [] and compiled.json()["contested"] == 2
            with McpSession.http(f"{server.url}/mcp", {"X-Memoryd-Agent": "dev"}) as mcp:
                got = mcp.call(
                    "wiki_apply", op="add", page="Ana Ruiz", text="Ana Ruiz speaks Portuguese",
                    evidence=[f"fact:{ids['moved']}"], confidence=0.5,
                )  # fmt: skip
                assert got["claim"]["page"] == "Ana Ruiz" and got["compile"]["written"]
                assert "Error" in mcp.error("wiki_apply", op="add", page="Ana Ruiz", text="t")
        page = wiki.get(m, ws_of(m), "Ana Ruiz")
        assert "Ana Ruiz speaks Portuguese" in page["markdown"]
    finally:
        m.close()


def test_a_claims_id_survives_a_recompile_that_moves_it_to_another_page(mem: Memory) -> None:
    from tests.wiki_kit import remember

    ws = ws_of(mem)
    said = "Bruno Costa keeps the billing runbook"
    remember(mem, said)  # one mention of Bruno: no page of his own yet
    wiki.compile_wiki(mem, ws)
    before = claims(mem)[said]
    remember(mem, "Bruno Costa is on call this week")  # the second mention: his page
    wiki.compile_wiki(mem, ws)
    after = claims(mem)[said]
    assert after["page"] == "Bruno Costa" != before["page"]  # the claim moved
    assert after["id"] == before["id"]
    retired, _ = wiki.apply(mem, ws, wiki.Edit(op="retire", claim=before["id"], reason="moved"))
    assert retired is not None and retired.page == "Bruno Costa"
    assert claims(mem)[said]["status"] == "superseded"


def test_a_journal_that_retired_claims_by_their_old_page_ids_still_does(mem: Memory) -> None:
    from memoryd.wiki.model import page_claim_id

    seed(mem)
    ws = ws_of(mem)
    wiki.compile_wiki(mem, ws)
    claim = claims(mem)["Ana Ruiz runs the Lisbon office"]
    journal = ws.root / "wiki" / ".state" / "edits.json"
    old_id = page_claim_id(claim["page"], claim["text"])  # as an older memoryd wrote it
    journal.write_text(json.dumps([{"op": "retire", "claim": old_id, "status": "stale"}]))
    wiki.compile_wiki(mem, ws)
    assert claims(mem)["Ana Ruiz runs the Lisbon office"]["status"] == "stale"
