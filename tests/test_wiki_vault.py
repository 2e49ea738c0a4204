"""The memory wiki's vault as people and agents live with it: notes below a page's notes
line and people's own pages survive every recompile byte for byte; names differing in
case are one page; odd, long or hostile titles; a claim stated twice is one claim;
replaced facts stay as superseded claims while deleted ones are forgotten; citations an
agent may make; lint noticing cited lines that changed; concurrent edits; a damaged
journal. Real files, the real store and model."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr

from memoryd import wiki
from memoryd.api.app import create_app
from memoryd.core import Memory
from memoryd.embed import Embedder
from memoryd.errors import InvalidInputError
from memoryd.models import Event
from memoryd.settings import ApiKey
from memoryd.wiki.model import MAX_TITLE_BYTES, page_title
from memoryd.wiki.render import NOTES
from tests.fake_llm import FakeLLM
from tests.pipelines_kit import FixedClock
from tests.wiki_kit import claims, make_settings, pages, remember, seed, vault, ws_of


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock("2026-03-10T09:30:00+00:00")


@pytest.fixture
def mem(tmp_path: Path, embedder: Embedder, clock: FixedClock) -> Iterator[Memory]:
    m = Memory(make_settings(tmp_path), embedder=embedder, clock=clock)
    yield m
    m.close()


def test_notes_below_the_line_survive_recompiles_and_are_given_back(mem: Memory) -> None:
    ids = seed(mem)
    ws = ws_of(mem)
    wiki.compile_wiki(mem, ws)
    page = ws.root / "wiki" / "Orion.md"
    generated = page.read_bytes()
    assert generated.endswith(f"\n{NOTES}\n".encode())
    notes = "## My notes\n\nAsk [[Orion]]'s owner about the failover — see [[Ana Ruiz]].\n"
    page.write_bytes(generated + notes.encode())
    # the notes link to Orion, so it is no orphan any more; the page itself is not rewritten
    assert wiki.compile_wiki(mem, ws).written == ["_dashboards/orphans.md"]
    assert "- [[Orion]]" not in vault(mem)["_dashboards/orphans.md"].decode()
    before = vault(mem)
    assert wiki.compile_wiki(mem, ws).written == []  # notes are input: nothing to rewrite
    assert vault(mem) == before
    remember(mem, "Orion backups are kept for 30 days")  # the generated part changes ...
    report = wiki.compile_wiki(mem, ws)
    assert "Orion.md" in report.written
    text = page.read_text()
    assert "Orion backups are kept for 30 days" in text
    assert text.endswith(f"{NOTES}\n{notes}")  # ... the notes stay, byte for byte
    for key in ("port1", "port2"):
        mem.delete(ids[key])
    mem.delete(next(r.id for r in mem.list(agent_id="dev") if "backups" in r.text))
    gone = wiki.compile_wiki(mem, ws)  # nothing compiles to Orion now: the notes are given back
    assert gone.released == ["Orion.md"] and "Orion.md" not in gone.removed
    assert page.read_text() == notes
    assert wiki.compile_wiki(mem, ws).written == [] and page.read_text() == notes


def test_notes_survive_an_editor_that_rewrote_the_page_with_crlf(mem: Memory) -> None:
    seed(mem)
    ws = ws_of(mem)
    wiki.compile_wiki(mem, ws)
    page = ws.root / "wiki" / "Orion.md"
    page.write_bytes(page.read_bytes().replace(b"\n", b"\r\n") + b"Call Ana first.\r\n")
    wiki.compile_wiki(mem, ws)
    data = page.read_bytes()
    assert data.endswith(f"{NOTES}\nCall Ana first.\r\n".encode()) and b"\r" not in data[:-2]
    assert wiki.compile_wiki(mem, ws).written == []


def test_a_persons_page_a_compiled_page_takes_is_kept_whole_and_given_back(
    mem: Memory,
) -> None:
    ws = ws_of(mem)
    mine = ws.root / "wiki" / "Orion.md"
    mine.parent.mkdir(parents=True)
    original = "# Orion\n\nMy own page: the cluster we run staging on.\n"
    mine.write_text(original)
    ids = seed(mem)
    report = wiki.compile_wiki(mem, ws)
    assert report.adopted == ["Orion.md"]
    text = mine.read_text()
    assert "port 5433" in text and text.endswith(f"{NOTES}\n{original}")
    assert wiki.compile_wiki(mem, ws).written == []
    mem.delete(ids["port1"])
    mem.delete(ids["port2"])
    back = wiki.compile_wiki(mem, ws)
    assert back.released == ["Orion.md"]
    assert mine.read_text() == original  # the very bytes the person wrote


def test_names_differing_only_in_case_are_one_page(mem: Memory) -> None:
    seed(mem)
    remember(mem, "The ORION cluster lives in eu-west-1")
    ws = ws_of(mem)
    wiki.compile_wiki(mem, ws)
    orion = pages(mem)["Orion"]  # the spelling most statements use
    assert "The ORION cluster lives in eu-west-1" in {c["text"] for c in orion["claims"]}
    assert "ORION" not in pages(mem)
    claim, _ = wiki.apply(
        mem,
        ws,
        wiki.Edit(
            op="add", page="ana ruiz", text="Ana Ruiz speaks Portuguese", evidence=["MEMORY.md#L5"]
        ),
    )
    assert claim is not None and claim.page == "Ana Ruiz"
    names = {p.name for p in (ws.root / "wiki").glob("*.md")}
    assert "Ana Ruiz.md" in names and "ana ruiz.md" not in names


@pytest.mark.parametrize(
    ("raw", "title"),
    [
        ("Ana\u202eRuiz", "AnaRuiz"),  # a bidi override cannot disguise a file name
        ("Zo\u200be", "Zoe"),  # nor a zero-width space split one
        ("Orion\u2028notes", "Orion notes"),  # a line separator is a space
        ("Café ☕ Zürich", "Café ☕ Zürich"),
        ("bad\ud800name", "badname"),  # a lone surrogate has no file name
        ("  spaced\tout  ", "spaced out"),
    ],
)
def test_odd_unicode_titles_become_safe_file_names(raw: str, title: str) -> None:
    assert page_title(raw) == title


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ("漢" * 100, "bytes in UTF-8"),  # 100 characters, 300 bytes: too long a file name
        ("x" * 500, "at most 120 characters"),
        ("index", "the vault's own file"),
        ("\u200b\u202e", "not a usable page title"),
        ("../x", "looks like a path"),
        (".hidden", "looks like a path"),
    ],
)
def test_unusable_titles_are_refused_with_what_to_do(raw: str, says: str) -> None:
    with pytest.raises(InvalidInputError) as err:
        page_title(raw)
    assert says in err.value.message and err.value.hint


def test_a_long_category_still_compiles_to_a_page_whose_name_fits(mem: Memory) -> None:
    remember(mem, "The night shift rota changes weekly", category="夜" * 150)
    report = wiki.compile_wiki(mem, ws_of(mem))
    (topic,) = [t for t in pages(mem) if t.startswith("夜")]
    assert len(topic.encode()) <= MAX_TITLE_BYTES
    assert f"{topic}.md" in report.written


def test_a_claim_stated_by_a_fact_and_an_edit_is_one_claim(mem: Memory) -> None:
    ids = seed(mem)
    ws = ws_of(mem)
    claim, _ = wiki.apply(
        mem,
        ws,
        wiki.Edit(
            op="add",
            page="Ana Ruiz",
            text="Ana Ruiz prefers  green tea over coffee",  # the same words, other spacing
            evidence=["MEMORY.md#L5"],
        ),
    )
    assert claim is not None
    assert claim.evidence == [f"fact:{ids['tea']}", "MEMORY.md#L5"]
    page = pages(mem)["Ana Ruiz"]
    ids_on_page = [c["id"] for c in page["claims"]]
    assert len(ids_on_page) == len(set(ids_on_page))
    assert page_text_count(ws.root / "wiki" / "Ana Ruiz.md", claim.id) == 1


def page_text_count(path: Path, claim_id: str) -> int:
    return path.read_text().count(f"^{claim_id}")


@pytest.fixture
def llm_mem(
    tmp_path: Path, embedder: Embedder, clock: FixedClock
) -> Iterator[tuple[Memory, FakeLLM]]:
    with FakeLLM() as fake:
        settings = make_settings(tmp_path)
        settings.llm.provider = "openai"
        settings.llm.openai.base_url = fake.url
        with Memory(settings, embedder=embedder, clock=clock) as m:
            yield m, fake


def test_a_replaced_fact_is_superseded_and_a_deleted_one_forgotten(
    llm_mem: tuple[Memory, FakeLLM], clock: FixedClock
) -> None:
    mem, fake = llm_mem
    plan = remember(mem, "Plan: migrate the Orion billing to Postgres in Q3")
    remember(mem, "Orion billing runs on MySQL 8")
    secret = remember(mem, "Orion root password hint is the cat's name")
    fake.script(
        json.dumps({"facts": ["The Orion billing migration to Postgres was cancelled"]}),
        json.dumps({"decisions": [{"fact": 0, "event": "DELETE", "id": 0, "reason": "cancelled"}]}),
    )
    events = mem.add(
        "we cancelled the Orion billing migration",
        user_id=mem.settings.workspace.user_id,
        agent_id="dev",
        infer=True,
    )
    assert [(e.event, e.id) for e in events] == [(Event.DELETE, plan)]
    mem.delete(secret)  # a person's delete: forget it
    wiki.compile_wiki(mem, ws_of(mem))
    got = claims(mem)
    old = got["Plan: migrate the Orion billing to Postgres in Q3"]
    deleted = mem.history(plan)[-1]
    assert deleted.event == Event.DELETE
    assert old["status"] == "superseded"
    assert old["valid_until"] == deleted.created_at.date().isoformat()
    assert old["note"] == "replaced by a newer fact" and old["evidence"] == [f"fact:{plan}"]
    assert not any("password" in text for text in got)
    assert "password" not in "".join(b.decode() for b in vault(mem).values())
    problems = wiki.lint(mem, ws_of(mem))  # a superseded claim may cite its deleted fact
    assert not [p for p in problems if p["kind"] == "bad-evidence"]
    with pytest.raises(InvalidInputError, match="was deleted"):  # a new claim may not
        wiki.apply(
            mem,
            ws_of(mem),
            wiki.Edit(op="add", page="Orion", text="Orion plans", evidence=[f"fact:{plan}"]),
        )


def test_a_claim_cites_only_what_the_agent_may_draw_on(mem: Memory) -> None:
    seed(mem)
    ws = ws_of(mem)
    private = remember(mem, "Ops keeps the pager rota", agent="ops")
    shared = remember(
        mem, "Restarting Orion needs a drain first", agent="ops", category="procedural"
    )
    with pytest.raises(InvalidInputError, match="no such memory of this agent"):
        wiki.apply(
            mem,
            ws,
            wiki.Edit(op="add", page="Ops", text="Ops has a rota", evidence=[f"fact:{private}"]),
        )
    claim, _ = wiki.apply(
        mem,
        ws,
        wiki.Edit(
            op="add", page="Orion", text="Drain Orion before a restart", evidence=[f"fact:{shared}"]
        ),
    )
    assert claim is not None and claim.evidence == [f"fact:{shared}"]
    # the pool's fact is compiled into this agent's wiki too; the private one is not
    assert "Restarting Orion needs a drain first" in claims(mem)
    assert "Ops keeps the pager rota" not in claims(mem)


def test_lint_notices_when_cited_lines_change_or_go(mem: Memory) -> None:
    seed(mem)
    ws = ws_of(mem)
    diary = ws.root / "memory" / "2026-03-09.md"
    claim, _ = wiki.apply(
        mem,
        ws,
        wiki.Edit(
            op="add",
            page="Ana Ruiz",
            text="Ana Ruiz lives in Lisbon",
            evidence=["memory/2026-03-09.md#L4"],
        ),
    )
    assert claim is not None
    where = f"wiki/Ana Ruiz.md#^{claim.id}"
    assert not [p for p in wiki.lint(mem, ws) if p["where"] == where]
    diary.write_text(diary.read_text().replace("Lisbon in May", "Porto in June"))
    (changed,) = [p for p in wiki.lint(mem, ws) if p["where"] == where]
    assert changed["kind"] == "evidence-changed" and "memory/2026-03-09.md#L4" in changed["message"]
    diary.write_text("# 2026-03-09\n")
    (gone,) = [p for p in wiki.lint(mem, ws) if p["where"] == where]
    assert gone["kind"] == "bad-evidence" and "not in memory/2026-03-09.md" in gone["message"]


def test_a_page_is_found_by_the_id_of_one_of_its_claims(mem: Memory) -> None:
    seed(mem)
    ws = ws_of(mem)
    wiki.compile_wiki(mem, ws)
    wanted = claims(mem)["Ana Ruiz prefers green tea over coffee"]
    found = wiki.get(mem, ws, wanted["id"])
    assert found["title"] == "Ana Ruiz" and found["claim"]["id"] == wanted["id"]
    assert f"^{wanted['id']}" in found["markdown"]


def test_concurrent_edits_lose_nothing(mem: Memory) -> None:
    seed(mem)
    ws = ws_of(mem)
    wiki.compile_wiki(mem, ws)
    errors: list[BaseException] = []

    def add(n: int) -> None:
        try:
            wiki.apply(
                mem,
                ws,
                wiki.Edit(
                    op="add",
                    page="Orion",
                    text=f"Orion node {n} is in rack {n}",
                    evidence=["MEMORY.md#L4"],
                ),
            )
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=add, args=(n,)) for n in range(6)]
    threads.append(threading.Thread(target=lambda: wiki.compile_wiki(mem, ws)))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    journal = json.loads((ws.root / "wiki" / ".state" / "edits.json").read_text())
    assert sorted(e["text"] for e in journal) == sorted(
        f"Orion node {n} is in rack {n}" for n in range(6)
    )
    on_page = {c["text"] for c in pages(mem)["Orion"]["claims"]}
    assert {f"Orion node {n} is in rack {n}" for n in range(6)} <= on_page


def test_a_damaged_journal_is_refused_not_overwritten(mem: Memory) -> None:
    seed(mem)
    ws = ws_of(mem)
    wiki.compile_wiki(mem, ws)
    journal = ws.root / "wiki" / ".state" / "edits.json"
    journal.write_text('[{"op": "add", "page": "Orion", "te')
    with pytest.raises(InvalidInputError) as err:
        wiki.apply(
            mem,
            ws,
            wiki.Edit(op="add", page="Orion", text="Orion is big", evidence=["MEMORY.md#L4"]),
        )
    assert "edits.json cannot be read" in err.value.message and "repair" in err.value.hint
    assert journal.read_text() == '[{"op": "add", "page": "Orion", "te'
    assert any(p["kind"] == "damaged-journal" for p in wiki.lint(mem, ws))


def test_http_checks_the_key_and_refuses_bad_input(
    tmp_path: Path, embedder: Embedder, live_server: object
) -> None:
    settings = make_settings(tmp_path)
    settings.auth.keys = [
        ApiKey(
            name="dev", key=SecretStr("k-dev"), users=[settings.workspace.user_id], agents=["dev"]
        )
    ]
    with Memory(settings, embedder=embedder) as m:
        seed(m)
        with live_server(create_app(memory=m)) as server:  # type: ignore[operator]
            key = {"X-API-Key": "k-dev"}
            url = f"{server.url}/v1/wiki"
            assert httpx.get(f"{url}/lint", params={"agent_id": "dev"}).status_code == 401
            other = httpx.get(f"{url}/search", params={"agent_id": "ops", "q": "x"}, headers=key)
            assert other.status_code == 403
            sneaky = httpx.get(
                f"{url}/pages/..%2F..%2FMEMORY", params={"agent_id": "dev"}, headers=key
            )
            assert sneaky.status_code in (404, 422) and "Owner timezone" not in sneaky.text
            dotted = httpx.get(f"{url}/pages/.state", params={"agent_id": "dev"}, headers=key)
            assert dotted.status_code == 422 and "looks like a path" in dotted.text
            body = {"agent_id": "dev", "op": "add", "page": "Orion", "evidence": ["MEMORY.md#L4"]}
            huge = httpx.post(f"{url}/apply", json={**body, "text": "x" * 5000}, headers=key)
            assert huge.status_code == 422 and "at most 2000" in huge.text
            bare = httpx.post(
                f"{url}/apply", json={**body, "text": "t", "evidence": []}, headers=key
            )
            assert bare.status_code == 422 and "needs evidence" in bare.text
            away = httpx.post(
                f"{url}/apply",
                json={**body, "text": "t", "evidence": ["../other/MEMORY.md#L1"]},
                headers=key,
            )
            assert away.status_code == 422 and "'..'" in away.text
            ok = httpx.post(
                f"{url}/apply", json={**body, "text": "Orion is in Frankfurt"}, headers=key
            )
            assert ok.status_code == 200, ok.text
            by_id = httpx.get(
                f"{url}/pages/{ok.json()['claim']['id']}", params={"agent_id": "dev"}, headers=key
            )
            assert by_id.json()["result"]["title"] == "Orion"


README = Path(__file__).resolve().parents[1] / "README.md"


def _shape(text: str) -> str:
    """A page with its ids and dates replaced, to compare with the README's excerpt."""
    text = re.sub(r"fact:[0-9a-f-]{8,}", "fact:ID", text)
    text = re.sub(r"\bc[0-9a-f]{10}\b", "CLAIM", text)
    return re.sub(r"\d{4}-\d{2}-\d{2}", "DATE", text)


def test_the_readme_page_excerpt_is_what_the_compiler_writes(mem: Memory) -> None:
    section = README.read_text().split("### Memory wiki", 1)[1].split("\n## ", 1)[0]
    excerpt = section.split("```markdown\n", 1)[1].split("```", 1)[0]
    seed(mem)
    wiki.compile_wiki(mem, ws_of(mem))
    real = _shape((ws_of(mem).root / "wiki" / "Orion.md").read_text()).splitlines()
    at = 0
    for line in _shape(excerpt).splitlines():
        if "…" in line or "[[Orion]]" in line:  # an elided fact id; the reader's own note
            continue
        assert line in real[at:], f"README line {line!r} is not in the page as compiled"
        at = real.index(line, at) + 1


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (wiki.Edit(op="add", page="Orion", text="bad \ud800", evidence=["MEMORY.md#L4"]), "text"),
        (wiki.Edit(op="add", page="Orion", text="ok", evidence=["memory/\ud800.md#L1"]), "item"),
        (wiki.Edit(op="add", page="Orion", text="ok", evidence=["fact:\ud800"]), "item"),
    ],
)
def test_text_that_is_not_unicode_is_refused_before_anything_is_written(
    mem: Memory, edit: wiki.Edit, says: str
) -> None:
    """MCP and the Python API bypass the HTTP guard: a lone surrogate must not reach a file."""
    seed(mem)
    wiki.compile_wiki(mem, ws_of(mem))
    before = vault(mem)
    with pytest.raises(InvalidInputError) as err:
        wiki.apply(mem, ws_of(mem), edit)
    assert says in err.value.message and "unpaired surrogate" in err.value.message
    assert vault(mem) == before
