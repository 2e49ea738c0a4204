"""Agent conversations (generated, seeded) in the shape of bench/datasets.py.

LoCoMo and REALTALK are casual chats between friends; memoryd mostly serves an
agent's conversations with its user: long technical assistant messages (code
blocks, tool output, 200-600 words) between short user messages, and among
those, instructions and preferences said once and relied on much later ("from
now on, always use type hints", "I prefer polars over pandas"), facts that change
between sessions (the staging host moved) and events whose order matters.

:func:`generate` writes ``conversations`` such chats (6 sessions of ~10 messages,
a week apart) from ``seed``: no data is downloaded, the same seed gives the same
text. Each conversation has its own project, instructions, preferences, updated
facts, events and added dependencies, and questions whose ``evidence`` names the
user messages that answer them, in five categories:

* ``instruction``: how the user told the agent to work ("Can I push this fix
  straight to main?" -> "never push to main directly, open a PR");
* ``preference``: what the user likes or would choose;
* ``knowledge-update``: a fact's latest value (the message that changed it);
* ``multi-session``: things said in several sessions (every dependency added);
* ``event-ordering``: which of two events came first (both messages).

The assistant's messages reuse the questions' words on purpose (code with type
hints, ``git push origin main`` in tool output, bullet lists) so that sharing a
word with the question is not enough. Conversations 0-4 are the tune half,
5-9 held out (paths.py splits by position).

    python bench/paths.py --dataset agentchat --paths api-messages --modes default,vector,keyword
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from datasets import Conversation, Question, Session, Turn, register

USER_NAMES = ["Dana", "Ravi", "Mei", "Tomás", "Ingrid", "Kofi", "Lena", "Yusuf", "Aiko", "Pavel"]
ASSISTANT = "assistant"


@dataclass(frozen=True)
class Project:
    name: str
    language: str
    about: str
    modules: tuple[str, ...]
    functions: tuple[str, ...]


PROJECTS = [
    Project(
        "orderflow",
        "Python",
        "an order-processing REST service",
        ("orders/api.py", "orders/models.py", "billing/invoice.py", "workers/queue.py"),
        ("create_order", "apply_discount", "render_invoice", "retry_payment"),
    ),
    Project(
        "tilemap",
        "Python",
        "a map tile rendering pipeline",
        ("tiles/render.py", "tiles/cache.py", "ingest/osm.py", "cli/main.py"),
        ("render_tile", "evict_stale", "parse_ways", "build_index"),
    ),
    Project(
        "ledgerly",
        "Python",
        "a personal finance importer",
        ("importers/csv_bank.py", "core/ledger.py", "reports/monthly.py", "sync/plaid.py"),
        ("import_statement", "reconcile", "monthly_report", "categorise"),
    ),
    Project(
        "sensorhub",
        "Python",
        "an IoT telemetry collector",
        ("collector/mqtt.py", "storage/timeseries.py", "alerts/rules.py", "api/routes.py"),
        ("on_message", "downsample", "evaluate_rule", "list_devices"),
    ),
    Project(
        "docsearch",
        "Python",
        "an internal document search engine",
        ("index/tokenize.py", "index/postings.py", "serve/app.py", "crawl/fetch.py"),
        ("tokenize", "merge_postings", "search_handler", "fetch_page"),
    ),
    Project(
        "shipyard",
        "Python",
        "a deployment orchestration tool",
        ("deploy/plan.py", "deploy/apply.py", "inventory/hosts.py", "notify/slack.py"),
        ("make_plan", "apply_step", "load_inventory", "post_update"),
    ),
    Project(
        "gradebook",
        "Python",
        "a school grading web app",
        ("grades/views.py", "grades/forms.py", "accounts/auth.py", "exports/pdf.py"),
        ("submit_grade", "validate_form", "login_teacher", "export_report"),
    ),
    Project(
        "pricewatch",
        "Python",
        "a price tracking scraper",
        ("scrape/shops.py", "scrape/parse.py", "db/history.py", "notify/email.py"),
        ("scrape_shop", "parse_price", "record_price", "send_alert"),
    ),
    Project(
        "chatops",
        "Python",
        "a chat bot for on-call engineers",
        ("bot/commands.py", "bot/pager.py", "integrations/jira.py", "store/state.py"),
        ("handle_command", "page_oncall", "open_ticket", "save_state"),
    ),
    Project(
        "labqueue",
        "Python",
        "a lab sample tracking system",
        ("samples/track.py", "samples/barcode.py", "reports/export.py", "api/server.py"),
        ("register_sample", "scan_barcode", "export_batch", "health_check"),
    ),
]


@dataclass(frozen=True)
class Directive:
    """An instruction or a preference: ways to say it, ways to ask about it, and a
    sentence an assistant message may contain that shares its words."""

    said: tuple[str, ...]
    asked: tuple[str, ...]
    decoy: str


INSTRUCTIONS = [
    Directive(
        (
            "From now on, always use type hints in any Python you write for me.",
            "Please always add type hints to every function, no exceptions.",
        ),
        (
            "Are there coding conventions I should follow when writing Python functions for "
            "this user?",
            "Should the new helper functions be annotated?",
        ),
        "The annotations on `{fn}` already say what the hints mean for the caller.",
    ),
    Directive(
        (
            "Never push to main directly. Always open a PR, even for one-line fixes.",
            "Rule for this repo: don't push straight to main, go through a pull request.",
        ),
        (
            "The hotfix is ready. Can I push it straight to the main branch?",
            "How does the user want changes to land in the repository?",
        ),
        "```\n$ git push origin main\nEverything up-to-date\n```",
    ),
    Directive(
        (
            "Answer in bullet points please, I skim.",
            "Can you format your answers as bullet points from now on?",
        ),
        ("How should I format my answers for this user?", "What answer style does the user want?"),
        "- the first point of the list\n- the second point of the list",
    ),
    Directive(
        (
            "Don't add new dependencies without asking me first.",
            "Please never add a dependency to the project unless I approve it.",
        ),
        (
            "Can I just add a new library to requirements to solve this?",
            "What must I do before adding a package to the project?",
        ),
        "Adding a dependency here is optional; the standard library covers it.",
    ),
    Directive(
        (
            "Always write tests with pytest, never unittest.",
            "Tests go in pytest style, not unittest classes, please.",
        ),
        (
            "Which test framework should the new tests use?",
            "How should I write the unit tests for this change?",
        ),
        "```\n$ python -m pytest -q\n12 passed in 0.84s\n```",
    ),
    Directive(
        (
            "Keep commit messages under 50 characters, imperative mood.",
            "Short commit messages only: imperative, 50 characters max.",
        ),
        (
            "How should I write the commit message for this change?",
            "What does the user expect commit messages to look like?",
        ),
        "```\n$ git log --oneline -3\na1b2c3d Fix the retry loop\n```",
    ),
    Directive(
        (
            "Never log secrets or tokens, not even at debug level.",
            "Make sure tokens and passwords never end up in the logs.",
        ),
        (
            "Can I log the API token while debugging the auth flow?",
            "What must never appear in log output for this user?",
        ),
        "```\nDEBUG auth: token refreshed for client web-1\n```",
    ),
    Directive(
        (
            "Use f-strings for formatting, never % or .format().",
            "Please stick to f-strings for string formatting.",
        ),
        (
            "How should strings be formatted in the code I write?",
            "Is str.format fine for building the error message?",
        ),
        "The message is built once, so the formatting cost does not matter.",
    ),
    Directive(
        (
            "Before you change a function's signature, ask me.",
            "Don't change any public function signature without checking with me.",
        ),
        (
            "Can I add a parameter to an existing public function?",
            "What should I do before changing an API's arguments?",
        ),
        "The signature of `{fn}` stays as it is; only its body changes.",
    ),
    Directive(
        (
            "Always show me the diff before running migrations.",
            "Please show the migration diff first, never run migrations blind.",
        ),
        (
            "Can I run the database migration now?",
            "What does the user want to see before schema changes are applied?",
        ),
        "```\n$ alembic upgrade head\nINFO  Running upgrade 3f1a -> 9c2b\n```",
    ),
    Directive(
        (
            "Reply in English even if I write in German.",
            "Whatever language I use, answer me in English.",
        ),
        (
            "The user wrote in German; which language should the reply be in?",
            "What language does the user want replies in?",
        ),
        "The error text comes from the locale; the English catalogue is the default.",
    ),
    Directive(
        (
            "Use pathlib for file paths, not os.path.",
            "Please always use pathlib.Path instead of os.path joins.",
        ),
        (
            "How should file paths be handled in new code?",
            "Is os.path.join okay for building the cache location?",
        ),
        "The path is resolved relative to the working directory at start-up.",
    ),
]

PREFERENCES = [
    Directive(
        (
            "I prefer polars over pandas for anything tabular.",
            "I like polars a lot more than pandas, fwiw.",
        ),
        (
            "Which dataframe library would the user pick for the report?",
            "Should I use pandas for the CSV aggregation?",
        ),
        "The frame is grouped by day and summed; any dataframe library does that.",
    ),
    Directive(
        (
            "I prefer PostgreSQL over MySQL for new services.",
            "For databases I'd always go with Postgres rather than MySQL.",
        ),
        ("Which database should the new service use?", "What database does the user favour?"),
        "```\n$ psql -c 'select 1'\n ?column?\n----------\n        1\n```",
    ),
    Directive(
        (
            "I like small functions, ideally under 20 lines each.",
            "I want functions kept short, twenty lines or so at most.",
        ),
        (
            "How long should the functions in this module be?",
            "Does the user mind one long function for the whole import?",
        ),
        "The function is long mostly because of the error handling branches.",
    ),
    Directive(
        (
            "I want logs in JSON so Loki can parse them.",
            "I'd like all our logs as JSON lines, please.",
        ),
        ("What log format does the user want?", "Should the new worker log plain text lines?"),
        '```\n{{"level": "info", "msg": "worker started"}}\n```',
    ),
    Directive(
        (
            "I prefer dataclasses to plain dicts for records.",
            "I'd rather have dataclasses than dicts flying around.",
        ),
        ("How should I represent the parsed records?", "Is a dict fine for the config object?"),
        "The record is a mapping from field name to value after parsing.",
    ),
    Directive(
        (
            "I like explanations short; skip the theory unless I ask.",
            "Keep the explanations brief, I don't need the background.",
        ),
        (
            "How much explanation does the user want with a fix?",
            "Should I include background theory in my answer?",
        ),
        "A short explanation of why the cache misses: the key includes the timestamp.",
    ),
    Directive(
        ("I prefer httpx over requests.", "For HTTP calls I'd go with httpx, not requests."),
        (
            "Which HTTP client library should the scraper use?",
            "Should I use requests for the webhook call?",
        ),
        "```\nGET /health 200 OK (12 ms)\n```",
    ),
    Directive(
        (
            "I want every TODO to have a ticket number next to it.",
            "I'd like TODO comments to always cite a ticket.",
        ),
        ("How does the user want TODO comments written?", "Can I leave a plain TODO in the code?"),
        "# the TODO list in the README is out of date",
    ),
    Directive(
        (
            "I prefer early returns over nested ifs.",
            "I like guard clauses and early returns, not deep nesting.",
        ),
        (
            "How should I structure the validation logic?",
            "What does the user think of deeply nested conditionals?",
        ),
        "The nesting comes from the three validation branches in `{fn}`.",
    ),
    Directive(
        (
            "I'd rather use Docker Compose than Kubernetes for dev environments.",
            "For local dev I prefer docker compose, k8s is overkill.",
        ),
        (
            "What should the local development setup use?",
            "Should I write Kubernetes manifests for the dev environment?",
        ),
        "```\n$ docker ps\nCONTAINER ID   IMAGE   STATUS\n```",
    ),
]


@dataclass(frozen=True)
class Changing:
    """A fact whose value changes: the first statement, the update, the question."""

    first: str
    update: str
    question: str
    values: tuple[str, ...]


CHANGING = [
    Changing(
        "FYI the staging server is at {v}.",
        "Heads up: staging moved to a new box, it's {v} now.",
        "What is the address of the staging server?",
        ("10.0.3.12", "10.0.7.41", "10.2.9.30", "10.4.1.17"),
    ),
    Changing(
        "The release deadline is {v}.",
        "The deadline got pushed, we now ship on {v}.",
        "When is the release due?",
        ("March 3", "March 17", "April 2", "April 14"),
    ),
    Changing(
        "We run Python {v} in production.",
        "Production was upgraded, it runs Python {v} now.",
        "Which Python version runs in production?",
        ("3.10", "3.11", "3.12", "3.13"),
    ),
    Changing(
        "{v} is the tech lead on this project.",
        "{v} took over as tech lead this week.",
        "Who is the tech lead of the project?",
        ("Sanjay", "Olga", "Brett", "Noor"),
    ),
    Changing(
        "The worker pool runs {v} processes.",
        "We bumped the worker pool to {v} processes.",
        "How many worker processes does the pool run?",
        ("4", "8", "12", "16"),
    ),
    Changing(
        "Our CI runs on {v}.",
        "We switched CI over to {v}.",
        "Which CI service does the project use?",
        ("Jenkins", "GitHub Actions", "GitLab CI", "Buildkite"),
    ),
]

EVENTS = [
    ("I merged the auth refactor this morning.", "merging the auth refactor"),
    ("We rolled out the caching layer to production yesterday.", "rolling out the caching layer"),
    ("Finally upgraded the CI runners to Ubuntu 24.04.", "upgrading the CI runners"),
    ("I tagged and released v2.0 today.", "releasing v2.0"),
    ("We migrated the sessions from Redis to Postgres over the weekend.", "the Redis migration"),
    ("I fixed the memory leak in the background worker.", "fixing the memory leak"),
    ("The security audit came back today, two medium findings.", "the security audit"),
    ("We onboarded the first external customer this week.", "onboarding the first customer"),
]

LIBRARIES = ["structlog", "tenacity", "pydantic", "orjson", "rich", "hypothesis", "attrs", "typer"]
JOINERS = [
    ("Priya joined the team to work on the frontend.", "Priya"),
    ("Marco is helping us with infra from now on.", "Marco"),
    ("Jun joined last week as our second backend dev.", "Jun"),
    ("Elif started today, she'll own the data exports.", "Elif"),
]

# -- the long, technical messages around them -----------------------------------------------
TASKS = [
    "Can you look at `{fn}` in {mod}? It's slow on big inputs.",
    "`{fn}` throws when the input is empty, here's what I get:\n\n```\n{trace}\n```",
    "Let's add retries around the network call in {mod}.",
    "Refactor {mod} so `{fn}` is easier to test.",
    "Why does the test for `{fn}` fail only on CI?\n\n```\n{pytest}\n```",
    "Write a CLI entry point that calls `{fn}` with a config file.",
    "Can you review this diff for {mod}?\n\n```diff\n{diff}\n```",
    "The logs from {mod} are too noisy, can we clean that up?",
    "Add caching to `{fn}`; the same keys come in over and over.",
    "What would it take to make `{fn}` async?",
    "ok that worked, thanks. next: {mod} needs input validation.",
    "Explain why `{fn}` returns None sometimes.",
]
PARAGRAPHS = [
    "Looking at `{fn}` in {mod}, the time goes into rebuilding the lookup table on every call. "
    "The table only depends on the configuration, which is read once at start-up, so it can "
    "be built once and reused; the call then does a dictionary lookup instead of a scan over "
    "every entry. On the sample input you sent this takes the function from roughly {ms} ms "
    "to under a millisecond, and the behaviour for unknown keys stays the same.",
    "The failure comes from an assumption in `{fn}` that the list always has a first element. "
    "When the upstream call returns an empty page, indexing it raises before any of the "
    "validation runs, which is why the traceback points at the line after the request rather "
    "than at the request itself. Checking for the empty case first and returning an empty "
    "result keeps the caller's contract and makes the error path explicit.",
    "There are two places where this could be handled: in the caller, which knows whether an "
    "empty result is acceptable, or in {mod} itself. I would keep it in {mod}, because three "
    "other call sites go through the same code and none of them handles the empty case today. "
    "That also means the fix is covered by one test instead of three.",
    "For the retries I would wrap only the network call, not the whole function, so a "
    "validation error is never retried. A small exponential backoff starting at {ms} ms with "
    "jitter and at most five attempts is enough for the transient errors in the logs; "
    "anything still failing after that is surfaced to the caller with the last error attached.",
    "The test passes locally because your machine has the timezone set to UTC, while the CI "
    "image uses the system default. `{fn}` builds a naive datetime and compares it with an "
    "aware one from the database, which only works when both happen to agree. Making the "
    "datetime aware at the boundary fixes it everywhere and the test no longer depends on "
    "the environment it runs in.",
    "Caching here is safe because the result of `{fn}` depends only on its arguments and the "
    "configuration, both of which are immutable during a run. A bounded LRU cache of {n} "
    "entries covers the working set you described; an unbounded one would grow with every "
    "distinct key and eventually cost more memory than it saves time.",
    "Making `{fn}` async is mostly mechanical: the HTTP client becomes the async one, the "
    "three helper calls get awaited, and the CLI entry point runs the coroutine with "
    "asyncio.run. The part that needs care is the database session, which is not safe to "
    "share between tasks, so each task should open its own from the pool.",
    "The noise in the logs comes from the polling loop in {mod}, which logs every iteration "
    "at info level even when nothing changed. Logging only state changes at info and the "
    "rest at debug brings it from about {n} lines a minute to a handful, without losing "
    "anything you would need when something goes wrong.",
    "Input validation fits best at the boundary, where the request is parsed, rather than deep "
    "inside {mod}. Invalid input is then rejected with a message that names the field, and "
    "the internal functions can assume they get well-formed values, which removes several "
    "defensive checks that were never exercised by the tests.",
    "`{fn}` returns None when none of its branches match: the final else is missing, so the "
    "function falls off the end. Python does not warn about that, which is why it slipped "
    "through. Raising a clear error for the unexpected case makes the bug visible at the "
    "point where it happens instead of three calls later.",
    "I also noticed that {mod} imports the settings module at import time, which means the "
    "tests cannot change the configuration without reloading the module. Passing the "
    "settings in explicitly would make that easier, but it touches {n} call sites, so I left "
    "it out of this change and noted it for later.",
    "To confirm the change I ran the existing tests plus two new ones: one for the empty "
    "input and one for the large input that was slow before. Both pass, and the benchmark "
    "script shows the median dropping from {ms} ms to about a tenth of that.",
]
CODES = [
    "```python\ndef {fn}(items, config):\n    table = build_table(config)\n    out = []\n"
    "    for item in items:\n        key = item.key.lower()\n        if key in table:\n"
    "            out.append(table[key])\n    return out\n```",
    "```python\n@lru_cache(maxsize={n})\ndef {fn}(key, version):\n    row = fetch_row(key)\n"
    "    if row is None:\n        raise KeyError(f'no row for {{key}}')\n    return row.value\n```",
    "```python\nasync def {fn}(client, url):\n    for attempt in range(5):\n        try:\n"
    "            response = await client.get(url, timeout=10)\n"
    "            response.raise_for_status()\n            return response.json()\n"
    "        except TransportError:\n            await asyncio.sleep(0.1 * 2 ** attempt)\n"
    "    raise RuntimeError('gave up after 5 attempts')\n```",
    "```python\ndef test_{fn}_empty():\n    assert {fn}([], CONFIG) == []\n\n\n"
    "def test_{fn}_large():\n    items = make_items(10_000)\n"
    "    assert len({fn}(items, CONFIG)) == 10_000\n```",
]
TRACES = [
    'Traceback (most recent call last):\n  File "{mod}", line {n}, in {fn}\n'
    "    first = rows[0]\nIndexError: list index out of range",
    'Traceback (most recent call last):\n  File "{mod}", line {n}, in {fn}\n'
    "    return value.strip()\nAttributeError: 'NoneType' object has no attribute 'strip'",
]
PYTESTS = [
    "FAILED tests/test_{fn}.py::test_{fn}_dates - AssertionError: assert "
    "datetime(2026, 1, 5, 9, 0) == datetime(2026, 1, 5, 9, 0, tzinfo=UTC)\n"
    "1 failed, {n} passed in 3.21s",
]
DIFFS = [
    "-    result = compute(items)\n+    if not items:\n+        return []\n"
    "+    result = compute(items)\n     return result",
]
ACKS = [
    "Got it, I'll keep that in mind for everything from here on.",
    "Understood. I'll follow that from now on.",
    "Noted, thanks for telling me.",
]
CLOSERS = ["thanks, that's it for today", "perfect, merging this", "great, let's stop here"]


class _Writer:
    def __init__(self, rng: random.Random, project: Project) -> None:
        self.rng, self.project = rng, project

    def fill(self, template: str) -> str:
        rng, p = self.rng, self.project
        slots = {
            "fn": rng.choice(p.functions),
            "mod": rng.choice(p.modules),
            "ms": str(rng.choice([40, 85, 120, 300, 900])),
            "n": str(rng.randint(12, 480)),
        }
        slots["trace"] = rng.choice(TRACES).format(**slots)
        slots["pytest"] = rng.choice(PYTESTS).format(**slots)
        slots["diff"] = rng.choice(DIFFS)
        return template.format(**slots)

    def task(self) -> str:
        return self.fill(self.rng.choice(TASKS))

    def answer(self, decoys: list[str]) -> str:
        """An assistant message of 200-600 words: paragraphs, code, maybe a decoy."""
        rng = self.rng
        target = rng.randint(200, 600)
        blocks: list[str] = []
        words = 0
        paragraphs = rng.sample(PARAGRAPHS, len(PARAGRAPHS))
        while words < target and paragraphs:
            block = self.fill(paragraphs.pop())
            if rng.random() < 0.35:
                block += "\n\n" + self.fill(rng.choice(CODES))
            blocks.append(block)
            words += len(block.split())
        if decoys and rng.random() < 0.6:
            blocks.insert(rng.randrange(len(blocks) + 1), self.fill(decoys.pop()))
        return "\n\n".join(blocks)


def _conversation(idx: int, seed: int, sessions: int = 6, per_session: int = 10) -> Conversation:
    rng = random.Random(seed * 1000 + idx)
    project = PROJECTS[idx % len(PROJECTS)]
    user = USER_NAMES[idx % len(USER_NAMES)]
    writer = _Writer(rng, project)
    instructions = rng.sample(INSTRUCTIONS, 3)
    preferences = rng.sample(PREFERENCES, 3)
    changing = rng.sample(CHANGING, 2)
    events = rng.sample(EVENTS, 3)
    libraries = rng.sample(LIBRARIES, 3)
    joiners = rng.sample(JOINERS, 2)
    decoys = [d.decoy for d in rng.sample(INSTRUCTIONS + PREFERENCES, 10)]
    decoys += [f"I added {lib} to the dependencies." for lib in rng.sample(LIBRARIES, 2)]

    # what the user says and in which session: (session, text, key)
    plants: list[tuple[int, str, str]] = []
    for n, d in enumerate(instructions):
        plants.append((rng.choice([0, 0, 1, 2]), rng.choice(d.said), f"instruction{n}"))
    for n, d in enumerate(preferences):
        plants.append((rng.choice([0, 1, 1, 2, 3]), rng.choice(d.said), f"preference{n}"))
    for n, c in enumerate(changing):
        old, new = rng.sample(c.values, 2)
        first = rng.choice([0, 1, 2])
        plants.append((first, c.first.format(v=old), f"first{n}"))
        plants.append((rng.randint(first + 2, sessions - 1), c.update.format(v=new), f"update{n}"))
    for n, (s, (text, _)) in enumerate(
        zip(sorted(rng.sample(range(sessions), 3)), events, strict=True)
    ):
        plants.append((s, text, f"event{n}"))
    lib_lines = [
        "I added {lib} to the dependencies.",
        "We now depend on {lib} too, I pulled it in yesterday.",
        "Pulled in {lib} for this, it's in requirements now.",
    ]
    lib_sessions = sorted(rng.sample(range(sessions), 3))
    for n, (s, line, lib) in enumerate(zip(lib_sessions, lib_lines, libraries, strict=True)):
        plants.append((s, line.format(lib=lib), f"library{n}"))
    for n, (s, (text, _)) in enumerate(
        zip(sorted(rng.sample(range(sessions), 2)), joiners, strict=True)
    ):
        plants.append((s, text, f"joiner{n}"))

    start = datetime(2026, 1, 5, 9, 0, tzinfo=UTC) + timedelta(days=idx)
    conv = Conversation(id=f"agentchat{idx}")
    where: dict[str, str] = {}
    for s in range(sessions):
        session = Session(id=f"D{s + 1}", at=start + timedelta(days=7 * s))
        mine = [(text, key) for at, text, key in plants if at == s]
        rng.shuffle(mine)
        exchanges = max(per_session // 2, len(mine) + 2)
        slots = sorted(rng.sample(range(1, exchanges - 1), len(mine)))
        said = dict(zip(slots, mine, strict=True))
        turns: list[Turn] = []

        def add(
            speaker: str, text: str, key: str | None = None, s: int = s, turns: list[Turn] = turns
        ) -> None:
            tid = f"D{s + 1}:{len(turns) + 1}"
            turns.append(Turn(tid, speaker, text, "assistant" if speaker == ASSISTANT else "user"))
            if key is not None:
                where[key] = tid

        for e in range(exchanges):
            if e in said:
                text, key = said[e]
                if rng.random() < 0.3:  # said along with a task, as people do
                    add(user, f"{text} {writer.task()}", key)
                    add(ASSISTANT, writer.answer(decoys))
                else:
                    add(user, text, key)
                    add(
                        ASSISTANT,
                        rng.choice(ACKS)
                        if key.startswith(("instr", "pref"))
                        else writer.answer(decoys),
                    )
            elif e == exchanges - 1:
                add(user, rng.choice(CLOSERS))
                add(ASSISTANT, "You're welcome. The changes are summarised above.")
            else:
                add(user, writer.task())
                add(ASSISTANT, writer.answer(decoys))
        session.turns = turns
        conv.sessions.append(session)

    def ask(text: str, keys: list[str], category: str) -> None:
        conv.questions.append(Question(text, [where[k] for k in keys], category))

    for n, d in enumerate(instructions):
        for q in d.asked:
            ask(q, [f"instruction{n}"], "instruction")
    for n, d in enumerate(preferences):
        for q in d.asked:
            ask(q, [f"preference{n}"], "preference")
    for n, c in enumerate(changing):
        ask(c.question, [f"update{n}"], "knowledge-update")
    ask(
        "Which libraries has the user added to the project's dependencies?",
        [f"library{n}" for n in range(3)],
        "multi-session",
    )
    ask(
        "Who joined the team while we worked on the project?",
        [f"joiner{n}" for n in range(2)],
        "multi-session",
    )
    for a, b in ((0, 1), (1, 2)):
        first, second = events[a][1], events[b][1]
        pair = (first, second) if rng.random() < 0.5 else (second, first)
        ask(
            f"Which happened first: {pair[0]} or {pair[1]}?",
            [f"event{a}", f"event{b}"],
            "event-ordering",
        )
    return conv


@register("agentchat")
def load(
    path: str | None = None, limit: int | None = None, seed: int = 35, conversations: int = 10
) -> list[Conversation]:
    """``path`` is unused (the data is generated); ``seed`` picks the text."""
    del path
    return [_conversation(i, seed) for i in range(limit or conversations)]
