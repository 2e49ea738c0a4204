"""Scale benchmark: ingest rate, search latency and memory at 10k-100k+ memories.

Synthetic memories (seeded, varied sentences of 15-30 words) are written through
``Memory.write_records`` in batches of 512, then 200 distinct queries are timed
in each search mode. With ``--sqlite-vec`` the same vectors are loaded into a
sqlite-vec ``vec0`` table (through apsw, which can load extensions) and the same
KNN queries are timed there too. With ``--store postgres`` each corpus is also
copied to PostgreSQL + pgvector and timed there side by side (``scale_pg.py``).
Every timed query includes embedding the query.

    python bench/scale.py --sizes 10000,100000 --sqlite-vec --out bench/results/scale.json
    python bench/scale.py --sizes 10000,100000 --store postgres --out bench/results/scale_pg.json
    python bench/scale.py --sizes 100000,1000000 --synthetic-vectors --sqlite-vec \
        --store postgres --pg-max-size 100000 --http-ingest 2000 --out FILE   # every target

Each size runs in a fresh child process so resident memory is not polluted by
the previous size.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import numpy as np

from _common import (
    CpuWatch,
    embed_settings,
    exit_on_sigterm,
    loadavg,
    machine_info,
    percentile_ms,
    proc_status_kb,
    rss_mb,
    run_child,
)
from memoryd.core import Memory
from memoryd.models import Filters, MemoryRecord, Origin
from memoryd.settings import Settings
from scale_pg import LIVE_WRITES, pg_markdown, run_postgres, server, server_info

BATCH = 512
SYNTHETIC_BATCH = 20_000
SYNTHETIC_BASE = 5_000
QUERIES = 200
WARMUP = 10
TOP_K = 10
USER = "bench"
SEED = 20240601


# -- synthetic text ----------------------------------------------------------------------------
def _words(text: str) -> list[str]:
    return text.split()


NAMES = _words(
    """
Aaliyah Abebe Adrian Aiko Alejandro Amara Anders Anika Arjun Astrid Babajide Beatriz
Benedikt Bianca Bogdan Camille Carlos Chen Chiara Dagny Dario Deepa Desmond Dmitri Ebony
Elif Emeka Esther Farah Felipe Fiona Florin Gabriel Gideon Greta Gustavo Hana Hamid Hannah
Haruto Helga Hugo Ifeoma Ignacio Ilse Imran Ingrid Isabela Ivan Jamal Jana Javier Jonas
Joanna Jun Kaito Kamala Karim Katarina Kemal Keziah Kofi Lars Leila Lena Liam Lucia Luka
Mads Maeve Mahmoud Malia Marco Mariam Mateo Mei Mikael Mira Nadia Naveen Nikolai Noor Obinna
Olga Omar Oskar Pablo Paloma Priya Quentin Rafael Rania Ravi Renata Rohan Rosa Saanvi Samir
Sana Santiago Selin Seo-yeon Sofia Soren Stellan Tariq Thandiwe Theo Tomasz Uma Valentina
Vikram Wanjiru Xavier Yara Yusuf Zainab Zeynep Zoltan
"""
)

PLACES = _words(
    """
Lisbon Oslo Nairobi Kyoto Montreal Valparaiso Tbilisi Hanoi Reykjavik Marrakesh Porto Krakow
Edinburgh Seville Bergen Dubrovnik Tallinn Ljubljana Cusco Oaxaca Medellin Zanzibar Istanbul
Bruges Salzburg Galway Hobart Queenstown Tromso Lyon Bologna Naples Palermo Granada Bilbao
Ghent Utrecht Leipzig Dresden Gdansk Riga Vilnius Helsinki Uppsala Aarhus Malmo Cork Belfast
Cardiff Bristol Manchester Glasgow Inverness Boston Denver Portland Austin Chicago Seattle
Vancouver Calgary Halifax Quebec Havana Cartagena Quito Lima Santiago Mendoza Montevideo
Recife Salvador Accra Lagos Dakar Kigali Kampala Addis Cairo Tunis Amman Beirut Muscat Doha
Mumbai Pune Kochi Jaipur Kathmandu Colombo Dhaka Bangkok Chiangmai Penang Manila Cebu Bali
Osaka Sapporo Busan Taipei Auckland Wellington Perth Adelaide Darwin
"""
)

ACTIVITIES = _words(
    """
hiking bouldering kayaking sailing birdwatching gardening knitting pottery woodworking
baking fermenting brewing painting sketching photography calligraphy journaling running
cycling swimming rowing fencing archery climbing skiing snowboarding surfing skateboarding
juggling volunteering tutoring mentoring composting beekeeping foraging camping stargazing
fishing meditating stretching dancing singing drumming songwriting podcasting blogging
coding soldering chess origami quilting embroidery genealogy
"""
)

FOODS = _words(
    """
ramen dumplings tacos risotto paella curry falafel shakshuka pho bibimbap lasagna gnocchi
ceviche empanadas pierogi goulash moussaka tagine biryani dosa sushi tempura kimchi
sourdough croissants baklava churros tiramisu cheesecake brownies pancakes waffles granola
hummus tabbouleh gazpacho borscht laksa rendang jollof injera arepas pupusas poutine
"""
)

OBJECTS = _words(
    """
bicycle guitar laptop camera kettle backpack notebook telescope violin keyboard umbrella
lantern compass microscope tablet headphones printer drone projector thermos blender easel
saddle helmet tent hammock canoe paddle harmonica accordion typewriter sewing-machine
bookshelf desk lamp sofa rug mirror clock aquarium terrarium greenhouse wheelbarrow ladder
toolbox drill chisel loom spindle kiln
"""
)

ADJECTIVES = _words(
    """
old new tiny huge bright quiet noisy cheerful gloomy rusty shiny sturdy fragile vintage
modern handmade borrowed expensive cheap heavy lightweight colourful faded cosy spacious
cramped reliable broken secondhand elegant clumsy curious stubborn patient generous anxious
ambitious calm chaotic tidy messy ancient remote crowded peaceful windy rainy sunny frosty
humid dusty
"""
)

TOPICS = _words(
    """
budget mortgage promotion interview deadline migration refactor outage rollout database
dashboard invoice contract lawsuit vaccine surgery therapy diet marathon wedding divorce
funeral birthday anniversary graduation scholarship thesis internship apprenticeship startup
layoff merger audit strategy roadmap prototype patent grant election campaign petition
protest renovation relocation adoption pregnancy retirement inheritance allergy insomnia
podcast novel screenplay exhibition concert festival tournament workshop conference
hackathon certification license passport visa lease warranty subscription
"""
)

PROFESSIONS = _words(
    """
nurse architect carpenter teacher librarian paramedic pilot chef baker plumber electrician
journalist translator lawyer accountant pharmacist veterinarian dentist engineer physicist
chemist biologist geologist astronomer economist historian photographer illustrator animator
composer conductor potter jeweller tailor gardener farmer fisherman firefighter detective
diplomat
"""
)

VERBS = _words(
    """
bought sold fixed borrowed lent painted cleaned repaired replaced forgot lost found visited
cancelled postponed organised planned booked discussed negotiated finished started abandoned
recommended praised criticised reviewed shipped tested measured photographed sketched
"""
)

TIMES = """yesterday|last weekend|last Tuesday|two weeks ago|in early March|at the end of
April|over the summer|during the holidays|last autumn|this morning|on Friday night|after
lunch|before the trip|in January|around midnight|three days ago|last spring|on her
birthday|on his day off|during the storm""".replace("\n", " ").split("|")

FEELINGS = _words(
    """
excited nervous relieved proud frustrated grateful disappointed hopeful exhausted thrilled
worried amused surprised confused inspired
"""
)

SYLLABLES = _words(
    """
ka ri mo ven tal qua bre zor lin dex pho ny sar vik tor ul mir gan fel op sto rux em ba cor
thi len dra wex yo
"""
)

TEMPLATES = [
    "{name} told {name2} that the {adj} {obj} from {place} finally arrived {time} and it "
    "works much better than the {adj2} one they had before",
    "{time} {name} started {act} with a group of {prof}s near {place} because the doctor "
    "suggested something calmer than {act2}",
    "{name} is {feel} about the {topic} at {org} since the {prof} in charge keeps changing "
    "the plan every few weeks",
    "For the {topic}, {name} {verb} a {adj} {obj} and asked {name2} to keep it safe until "
    "the move to {place}",
    "{name} prefers {food} over {food2} and always orders it at the small place near the "
    "station in {place} after {act}",
    "The {prof} from {place} recommended that {name} try {act} twice a week to deal with "
    "the {topic} and the {feel} evenings",
    "{name} and {name2} {verb} the {adj} {obj} {time}, then argued about whether {org} "
    "should pay for the {topic}",
    "{name} wants to become a {prof} one day and is saving for a course in {place} that "
    "covers {act} and {topic} planning for the {code} project",
    "At the {topic} meeting {time}, {name} explained that {org} will need a {adj} {obj} "
    "and a second {prof} before launch",
    "{name} cooked {food} for {name2}'s {topic} party, though the {obj} broke halfway "
    "through and everyone ended up eating {food2}",
    "Remember that {name} is allergic to {food} and gets {feel} when people bring it to "
    "the {act} club in {place}",
    "{name2} says {name} {verb} the {obj} {time} because it was too {adj} for the flat "
    "they rent on {street} Street in {place}",
    "{name} spent the weekend in {place} {act} with the dog {pet} and came back {feel}, "
    "with a {adj} {obj} and photos for {name2}",
    "The {topic} at {org} was delayed again; {name} blames the {adj} {obj} and the {prof} "
    "who {verb} the schedule",
    "{name}'s favourite memory of {place} is {act} at sunrise with {name2} and sharing "
    "{food} from a {adj} {obj}",
    "{time} {name} asked for advice about the {topic}, especially whether a {prof} in "
    "{place} could help with the paperwork",
]
EXTRAS = [
    "and {name2} promised to call back about it",
    "which made the whole {topic} feel less {adj}",
    "so the {obj} now lives in the garage in {place}",
    "although {name2} still thinks {act} is a waste of time",
    "before heading to {place} for a {topic} with {org}",
    "and it reminded {name} of {food} back home",
    "while walking the dog {pet} along {street} Street",
    "because the {code} project at {org} needs it",
]

QUERY_TEMPLATES = [
    "what did {name} say about the {topic}",
    "where did {name} go {act}",
    "which {obj} did {name} buy in {place}",
    "who recommended {act} to {name}",
    "does {name} like {food}",
    "{name} {topic} {org}",
    "when was the {topic} at {org} delayed",
    "what happened to the {adj} {obj}",
    "what does {name} want to become",
    "{prof} in {place} {topic}",
    "is {name} allergic to {food}",
    "how does {name} feel about {act}",
    "who lives on {street} Street",
    "{pet} the dog",
    "{code} project deadline",
]


_ARTICLE = re.compile(r"(^|\s)a ([aeiouAEIOU])")


class TextGen:
    """Seeded generator of sentence-like memories and query-like strings."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.orgs = self._orgs(2000)
        # Rare words (dog names, streets, project code names) give BM25 a long tail.
        self.pets = [self._word(self.rng.randint(2, 3)) for _ in range(3000)]
        self.streets = [self._word(self.rng.randint(2, 4)) for _ in range(3000)]
        self.codes = [self._word(self.rng.randint(3, 4)).upper() for _ in range(3000)]

    def _word(self, parts: int) -> str:
        return "".join(self.rng.choice(SYLLABLES) for _ in range(parts)).capitalize()

    def _orgs(self, n: int) -> list[str]:
        kinds = [
            "Labs",
            "Studio",
            "Systems",
            "Collective",
            "Bakery",
            "Clinic",
            "Partners",
            "Works",
            "Foundation",
            "Logistics",
            "Robotics",
            "Press",
        ]
        return [f"{self._word(self.rng.randint(2, 3))} {self.rng.choice(kinds)}" for _ in range(n)]

    def _fill(self, template: str) -> str:
        r = self.rng
        name, name2 = r.sample(NAMES, 2)
        act, act2 = r.sample(ACTIVITIES, 2)
        food, food2 = r.sample(FOODS, 2)
        adj, adj2 = r.sample(ADJECTIVES, 2)
        return template.format(
            name=name,
            name2=name2,
            act=act,
            act2=act2,
            food=food,
            food2=food2,
            adj=adj,
            adj2=adj2,
            obj=r.choice(OBJECTS),
            place=r.choice(PLACES),
            topic=r.choice(TOPICS),
            prof=r.choice(PROFESSIONS),
            verb=r.choice(VERBS),
            time=r.choice(TIMES),
            feel=r.choice(FEELINGS),
            org=r.choice(self.orgs),
            pet=r.choice(self.pets),
            street=r.choice(self.streets),
            code=r.choice(self.codes),
        )

    def sentence(self) -> str:
        text = self._fill(self.rng.choice(TEMPLATES))
        while len(text.split()) < 22 and self.rng.random() < 0.6:
            extra = self._fill(self.rng.choice(EXTRAS))
            if len(text.split()) + len(extra.split()) > 30:
                break
            text += ", " + extra
        text = _ARTICLE.sub(r"\1an \2", text)
        return text[0].upper() + text[1:] + "."

    def query(self) -> str:
        return self._fill(self.rng.choice(QUERY_TEMPLATES))

    def queries(self, n: int, avoid: set[str] | None = None) -> list[str]:
        seen = set(avoid or ())
        out: list[str] = []
        while len(out) < n:
            q = self.query()
            if q not in seen:
                seen.add(q)
                out.append(q)
        return out


def batches(total: int, size: int, seed: int) -> Iterator[tuple[int, list[str]]]:
    gen = TextGen(seed)
    seen: set[str] = set()
    made = 0
    while made < total:
        chunk: list[str] = []
        while len(chunk) < min(size, total - made):
            s = gen.sentence()
            if s not in seen:  # identical text would be embedded once (content-hash cache)
                seen.add(s)
                chunk.append(s)
        yield made, chunk
        made += len(chunk)


# -- one size (child process) ------------------------------------------------------------------
def _lat(times: list[float]) -> dict[str, Any]:
    return {
        "p50_ms": percentile_ms(times, 50),
        "p95_ms": percentile_ms(times, 95),
        "mean_ms": round(1000 * sum(times) / len(times), 2),
    }


def synthetic_vectors(mem: Memory, seed: int) -> Callable[[int], np.ndarray]:
    """Vectors for ``--synthetic-vectors``: each a random blend of two of 5,000 real
    embeddings of the corpus's own sentences, so the matrix has the structure of real
    embeddings (clusters, a skewed spectrum) without embedding a million texts."""
    base = mem.embed_texts(next(batches(SYNTHETIC_BASE, SYNTHETIC_BASE, seed + 7))[1])
    rng = np.random.default_rng(seed)

    def make(n: int) -> np.ndarray:
        a, b = rng.integers(0, len(base), n), rng.integers(0, len(base), n)
        v = base[a] + rng.uniform(0.2, 0.8, (n, 1)).astype(np.float32) * base[b]
        return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)

    return make


def run_size(
    size: int, sqlite_vec: bool, seed: int, pg_url: str | None = None, synthetic: bool = False
) -> dict[str, Any]:
    out: dict[str, Any] = {"size": size, "rss_start_mb": rss_mb(), "synthetic_vectors": synthetic}
    with tempfile.TemporaryDirectory(prefix="memoryd-scale-") as tmp:
        mem = Memory(Settings(home=Path(tmp)))
        mem.embed_texts(["warm up the model"])
        out["rss_model_loaded_mb"] = rss_mb()

        ingest_s = 0.0
        generated = 0
        make = synthetic_vectors(mem, seed) if synthetic else None
        watch = CpuWatch()
        for start, texts in batches(size, SYNTHETIC_BATCH if make else BATCH, seed):
            records = [
                MemoryRecord(id=f"m{start + i}", text=t, user_id=USER, origin=Origin.API)
                for i, t in enumerate(texts)
            ]
            if make is not None:  # the text is real (BM25 sees it); the vector is made up
                for record, vector in zip(records, make(len(records)), strict=True):
                    record.embedding = vector
            t0 = time.perf_counter()
            mem.write_records(records)
            ingest_s += time.perf_counter() - t0
            generated += len(texts)
            if (start // BATCH) % 20 == 0:
                print(
                    f"  {size}: {generated} written, {generated / ingest_s:.0f}/s",
                    file=sys.stderr,
                    flush=True,
                )
        out["cpu_ingest"] = watch.report()  # includes text generation (not timed)
        out["ingest_seconds"] = round(ingest_s, 2)
        out["ingest_per_s"] = round(size / ingest_s, 1)
        out["rss_after_ingest_mb"] = rss_mb()

        gen = TextGen(seed + 1)
        warm = gen.queries(WARMUP)
        queries = gen.queries(QUERIES, avoid=set(warm))
        out["queries"] = len(queries)

        def clear() -> None:
            cache = getattr(mem, "_query_cache", None)
            if isinstance(cache, dict):
                cache.clear()

        t0 = time.perf_counter()
        mem.search(warm[0], user_id=USER, top_k=TOP_K, mode="vector")  # loads the index
        out["index_load_seconds"] = round(time.perf_counter() - t0, 2)
        out["rss_after_index_load_mb"] = rss_mb()
        index = getattr(mem.store, "_index", None)
        if index is not None and hasattr(index, "graph_size"):
            # what `memoryd serve` builds in the background above 50k rows (store/ann.py),
            # then saved in the snapshot as the server does at exit
            t0 = time.perf_counter()
            index.prepare(wait=True)
            out["graph_build_seconds"] = round(time.perf_counter() - t0, 2)
            out["graph_rows"] = index.graph_size
            mem.store._save_snapshot(index)  # type: ignore[attr-defined]
            out["rss_after_graph_mb"] = rss_mb()
        out["restart"] = first_search_in_new_process(Path(tmp), warm[1])

        scope = Filters(user_id=USER)

        def index_knn(q: str) -> list[str]:
            vec = mem.embedder.embed([q])[0]
            return [i for i, _ in mem.store.vector_search(vec, scope, TOP_K)]

        def searcher(mode: str) -> Any:
            def search(q: str) -> list[str]:
                clear()  # distinct queries anyway; this also defeats cross-mode cache hits
                return [h.id for h in mem.search(q, user_id=USER, top_k=TOP_K, mode=mode)]

            return search

        runs = {
            "hybrid": searcher("hybrid"),
            "vector": searcher("vector"),
            "bm25": searcher("keyword"),
            "vector_index_knn": index_knn,
            "embed_only": lambda q: mem.embedder.embed([q])[0],
        }
        watch = CpuWatch()
        times, outs = _interleaved(runs, warm, queries)
        out["cpu_search"] = watch.report()
        modes = {name: _lat(t) for name, t in times.items()}
        ours = outs["vector_index_knn"]
        out["modes"] = modes
        out["vector_top10_agreement_with_exact"] = exact_agreement(mem, scope, queries, ours)
        out["rss_after_search_mb"] = rss_mb()
        index = getattr(mem.store, "_index", None)  # SQLite's in-memory search index
        if index is not None:
            out["index_bytes_per_memory"] = round(index.memory_bytes() / size)
        hwm = proc_status_kb("VmHWM")
        out["rss_peak_mb"] = None if hwm is None else round(hwm / 1024, 1)
        db = Path(mem.settings.store_url)
        out["db_mb"] = round(
            sum(p.stat().st_size for p in db.parent.glob(db.name + "*")) / 2**20, 1
        )
        dim = mem.embedder.dim
        out["embed_model"] = mem.embedder.name
        out["embed_dim"] = dim
        out["search_settings"] = mem.settings.search.model_dump(mode="json")
        out["embed_settings"] = embed_settings(mem)
        if sqlite_vec:
            out["sqlite_vec"] = run_sqlite_vec(
                db, Path(tmp), dim, mem, queries, warm, ours, index_knn
            )
        if pg_url:  # last: it adds LIVE_WRITES memories to this store
            live = [t for _, chunk in batches(LIVE_WRITES, LIVE_WRITES, seed + 2) for t in chunk]
            out["postgres"] = run_postgres(
                mem, pg_url, user=USER, top_k=TOP_K, warm=warm, queries=queries, live_texts=live
            )
        mem.close()
    return out


_RESTART = """
import json, sys, time
t0 = time.perf_counter()
from pathlib import Path
from memoryd.core import Memory
from memoryd.settings import Settings
t1 = time.perf_counter()
mem = Memory(Settings(home=Path(sys.argv[1])))
t2 = time.perf_counter()
mem.search(sys.argv[2], user_id=sys.argv[3], top_k=10)
t3 = time.perf_counter()
index = mem.store._index
sys.path.insert(0, sys.argv[4])  # after the timings: bench/_common is not start-up
from _common import rss_mb
print(json.dumps({"import_s": t1 - t0, "open_s": t2 - t1, "first_search_s": t3 - t2,
                  "index_bytes": index.memory_bytes(), "rows": len(index.ids),
                  "rss_mb": rss_mb()}))
"""


def first_search_in_new_process(home: Path, query: str) -> dict[str, Any]:
    """A new process (what `memoryd serve`, a CLI command or an MCP server is) opens the
    store and answers one search: with the index snapshot the first search replays the
    change log instead of re-indexing every row (``index_load_seconds`` is that full
    build, paid once per store and then saved). It reports its index's bytes per memory
    and its RSS: what a restarted server holds (the process that wrote the rows also
    carries the arrays' growth headroom, up to 1/8 of the rows)."""
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _RESTART, str(home), query, USER, str(Path(__file__).parent)],
        capture_output=True,
        text=True,
        check=True,
    )
    wall = time.perf_counter() - t0
    parts = json.loads(done.stdout.strip().splitlines()[-1])
    snap = home / "memoryd.db.index"
    rows = parts.pop("rows")
    return {
        "index_bytes_per_memory": round(parts.pop("index_bytes") / max(1, rows)),
        **{k: round(v, 3) for k, v in parts.items()},
        "process_wall_s": round(wall, 3),
        "snapshot_mb": round(snap.stat().st_size / 2**20, 1) if snap.exists() else None,
    }


def _interleaved(
    runs: dict[str, Any], warm: list[str], queries: list[str]
) -> tuple[dict[str, list[float]], dict[str, list[Any]]]:
    """Time every run on every query, round-robin, so load spikes hit all runs alike."""
    for q in warm:
        for fn in runs.values():
            fn(q)
    times: dict[str, list[float]] = {name: [] for name in runs}
    outs: dict[str, list[Any]] = {name: [] for name in runs}
    for n, q in enumerate(queries):
        names = list(runs)
        names = names[n % len(names) :] + names[: n % len(names)]  # rotate the order too
        for name in names:
            t0 = time.perf_counter()
            result = runs[name](q)
            times[name].append(time.perf_counter() - t0)
            outs[name].append(result)
    return times, outs


def exact_agreement(mem: Memory, scope: Filters, queries: list[str], ours: list[Any]) -> float:
    """Mean top-10 overlap of the index's vector search (two-stage above
    ``COARSE_MIN_ROWS``) with an exact brute-force scan of the same matrix."""
    index = mem.store._index  # type: ignore[attr-defined]  # the SQLite store's index
    n = len(index.ids)
    mask = index.mask(scope) & index._has_vec[:n]
    overlap = []
    for q, got in zip(queries, ours, strict=True):
        vec = mem.embedder.embed([q])[0]
        exact = index._top(index._vecs[:n] @ vec, mask, TOP_K, normalise=False)
        overlap.append(len({i for i, _ in exact} & set(got)) / TOP_K)
    return round(sum(overlap) / len(overlap), 4)


def run_sqlite_vec(
    db: Path,
    tmp: Path,
    dim: int,
    mem: Memory,
    queries: list[str],
    warm: list[str],
    ours: list[list[str]],
    index_knn: Any,
) -> dict[str, Any]:
    try:
        import apsw
        import sqlite_vec
    except ImportError as exc:
        return {"skipped": f"{exc}; pip install apsw==3.54.1.0 sqlite-vec==0.1.9"}
    src = sqlite3.connect(str(db))
    conn = apsw.Connection(str(tmp / "vec.db"))
    conn.enable_load_extension(True)
    conn.load_extension(sqlite_vec.loadable_path())
    conn.execute(
        f"CREATE VIRTUAL TABLE vec_items USING vec0(embedding float[{dim}] distance_metric=cosine)"
    )
    id_of: dict[int, str] = {}
    t0 = time.perf_counter()
    cursor = src.execute("SELECT rowid, id, embedding FROM memories WHERE embedding IS NOT NULL")
    loaded = 0
    while rows := cursor.fetchmany(5000):
        with conn:
            conn.executemany(
                "INSERT INTO vec_items(rowid, embedding) VALUES (?, ?)",
                [(r[0], r[2]) for r in rows],
            )
        id_of.update((r[0], r[1]) for r in rows)
        loaded += len(rows)
    load_s = time.perf_counter() - t0
    src.close()

    def knn(q: str) -> list[str]:
        vec = np.asarray(mem.embedder.embed([q])[0], dtype=np.float32)
        rows = conn.execute(
            "SELECT rowid, distance FROM vec_items WHERE embedding MATCH ? AND k = ? "
            "ORDER BY distance",
            (vec.tobytes(), TOP_K),
        ).fetchall()
        return [id_of[r[0]] for r in rows]

    watch = CpuWatch()
    times, outs = _interleaved({"sqlite_vec": knn, "memoryd": index_knn}, warm, queries)
    cpu = watch.report()
    theirs = outs["sqlite_vec"]
    overlap = [len(set(a) & set(b)) / TOP_K for a, b in zip(ours, theirs, strict=True)]
    conn.close()
    return {
        "vectors": loaded,
        "load_seconds": round(load_s, 2),
        "load_per_s": round(loaded / load_s, 1),
        "knn": _lat(times["sqlite_vec"]),
        "memoryd_index_knn_same_run": _lat(times["memoryd"]),
        "cpu": cpu,
        "top10_agreement_with_memoryd": round(sum(overlap) / len(overlap), 4),
        "file_mb": round((tmp / "vec.db").stat().st_size / 2**20, 1),
        "sqlite_vec": sqlite_vec.__version__,
        "apsw": apsw.apswversion(),
    }


# -- driver ------------------------------------------------------------------------------------
def markdown(results: dict[str, Any]) -> str:
    lines = [
        "| memories | ingest /s | RSS model MB | RSS after ingest MB | RSS after search MB "
        "| hybrid p50/p95 ms | vector p50/p95 ms | bm25 p50/p95 ms | index KNN p50/p95 ms "
        "| sqlite-vec KNN p50/p95 ms | embed p50 ms | vector top-10 = exact | index build s "
        "| new process to first hit s | index B/memory (writer / restarted) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results["sizes"]:
        m = r["modes"]
        sv = r.get("sqlite_vec") or {}
        knn = sv.get("knn")

        def pp(d: dict[str, Any] | None) -> str:
            return "-" if not d else f"{d['p50_ms']} / {d['p95_ms']}"

        lines.append(
            f"| {r['size']:,} | {r['ingest_per_s']} | {r['rss_model_loaded_mb']} "
            f"| {r['rss_after_ingest_mb']} | {r['rss_after_search_mb']} | {pp(m['hybrid'])} "
            f"| {pp(m['vector'])} | {pp(m['bm25'])} | {pp(m['vector_index_knn'])} | {pp(knn)} "
            f"| {m['embed_only']['p50_ms']} | {r.get('vector_top10_agreement_with_exact', '-')} "
            f"| {r['index_load_seconds']} | {(r.get('restart') or {}).get('process_wall_s', '-')} "
            f"| {r.get('index_bytes_per_memory', '-')} "
            f"/ {(r.get('restart') or {}).get('index_bytes_per_memory', '-')} |"
        )
    for r in results["sizes"]:
        sv = r.get("sqlite_vec") or {}
        if sv.get("knn") and sv.get("memoryd_index_knn_same_run"):
            theirs, ours = sv["knn"], sv["memoryd_index_knn_same_run"]
            hybrid = r["modes"]["hybrid"]
            lines.append(
                f"\n{r['size']:,}: sqlite-vec KNN / memoryd KNN (both embedding the query) "
                f"p50 {theirs['p50_ms'] / ours['p50_ms']:.1f}x, p95 "
                f"{theirs['p95_ms'] / ours['p95_ms']:.1f}x; sqlite-vec KNN / memoryd hybrid "
                f"p50 {theirs['p50_ms'] / hybrid['p50_ms']:.1f}x, "
                f"p95 {theirs['p95_ms'] / hybrid['p95_ms']:.1f}x"
            )
    if results.get("http_ingest"):
        lines += ["", "| memories per request | clients | memories/s | request p50 / p95 ms |"]
        lines.append("|---|---|---|---|")
        for run in results["http_ingest"]["runs"]:
            lines.append(
                f"| {run['batch']} | {run['clients']} | {run['per_s']} "
                f"| {run['request_p50_ms']} / {run['request_p95_ms']} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="10000,100000", help="comma list of corpus sizes")
    p.add_argument("--out", help="write the JSON results here")
    p.add_argument(
        "--sqlite-vec",
        action="store_true",
        help="also time the same KNN queries in a sqlite-vec vec0 table",
    )
    p.add_argument(
        "--store",
        choices=["sqlite", "postgres"],
        default="sqlite",
        help="postgres: also copy each corpus to PostgreSQL + pgvector and time it side by side",
    )
    p.add_argument("--pg-url", help="PostgreSQL to use (default: a throwaway server)")
    p.add_argument(
        "--pg-max-size",
        type=int,
        help="with --store postgres: copy only corpora of at most this size (1M rows take hours)",
    )
    p.add_argument(
        "--http-ingest",
        type=int,
        metavar="N",
        help="first, N short facts through a real `memoryd serve` (ingest.py): one per "
        "request, and 64 per request from 1 and 4 clients, so the run has its ingest rate",
    )
    p.add_argument(
        "--synthetic-vectors",
        action="store_true",
        help="real text but made-up vectors (blends of real ones): for 1M, where embedding"
        " every text would take hours; ingest /s then measures the store, not the model",
    )
    p.add_argument("--seed", type=int, default=SEED)
    p.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    p.add_argument("--worker-out", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    exit_on_sigterm()

    if args.worker:
        result = run_size(
            args.worker, args.sqlite_vec, args.seed, args.pg_url, args.synthetic_vectors
        )
        Path(args.worker_out).write_text(json.dumps(result))
        return

    info = machine_info()
    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    results: dict[str, Any] = {"sizes": []}
    if args.http_ingest:
        from ingest import measure  # ingest.py imports this module: imported when needed

        print("http ingest", file=sys.stderr, flush=True)
        settings = [(1, 1), (64, 1), (64, 4)]
        results["http_ingest"] = {
            "kind": "short",
            "runs": measure(settings, args.http_ingest, "short", args.seed),
        }
    with ExitStack() as stack:
        pg_url = None
        if args.store == "postgres":
            pg_url = stack.enter_context(server(args.pg_url, tempfile.mkdtemp(prefix="pg-")))
            info["postgres"] = server_info(pg_url)
        _run_sizes(args, sizes, pg_url, results)
    info["loadavg_end"] = loadavg()
    _finish(args, info, results)


def _run_sizes(
    args: argparse.Namespace, sizes: list[int], pg_url: str | None, results: dict[str, Any]
) -> None:
    for size in sizes:
        print(f"size {size}", file=sys.stderr, flush=True)
        with tempfile.NamedTemporaryFile(suffix=".json") as f:
            cmd = [
                sys.executable,
                str(Path(__file__).resolve()),
                "--worker",
                str(size),
                "--worker-out",
                f.name,
                "--seed",
                str(args.seed),
            ]
            if args.sqlite_vec:
                cmd.append("--sqlite-vec")
            if args.synthetic_vectors:
                cmd.append("--synthetic-vectors")
            if pg_url and (args.pg_max_size is None or size <= args.pg_max_size):
                cmd += ["--pg-url", pg_url]
            run_child(cmd)
            results["sizes"].append(json.loads(Path(f.name).read_text()))


def _finish(args: argparse.Namespace, info: dict[str, Any], results: dict[str, Any]) -> None:
    for key in ("embed_model", "embed_dim", "search_settings", "embed_settings"):
        info[key] = results["sizes"][0].pop(key, None) if results["sizes"] else None
        for r in results["sizes"]:
            r.pop(key, None)
    results["meta"] = {
        **info,
        "batch": BATCH,
        "queries": QUERIES,
        "top_k": TOP_K,
        "seed": args.seed,
        "user_scope": "all memories share one user_id, so every search scans the full corpus",
    }
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    print(markdown(results))
    if any("postgres" in r for r in results["sizes"]):
        print("\n" + pg_markdown(results["sizes"]))


if __name__ == "__main__":
    main()
