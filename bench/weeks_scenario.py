"""Weeks of an engineering assistant's life, generated from a seed, with the ground truth.

:func:`generate` returns a :class:`Scenario`: what two agents (``dev`` and ``ops``) hear
and say every day (diary exchanges), what they search for, the session transcripts
their tool calls leave (failures with a real fix, and trivial ones: typos, missing
files), what a second user tells her assistant (which must never reach the first), and
the truth a scorer needs: facts whose value changes over time (``values`` with the
moment each became true), facts that only look alike (staging vs production ports),
tasks given with a deadline and later finished, which lessons are real, and the
chit-chat bank.

Nothing here touches memoryd: ``bench/weeks.py`` drives a server with it and
``bench/weeks_score.py`` scores what memoryd made of it. ``variant`` picks a bank of
topics (``eng``: a product engineering team, ``data``: a data platform team); ``seed``
picks which facts change, to what, on which days, the names, tasks and the order of
the days. The same (seed, variant, weeks) always gives the same scenario.
"""

from __future__ import annotations

import json
import random
import re
import uuid
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Any

START = datetime.fromisoformat("2026-03-02T06:00:00+00:00")  # a Monday
AGENTS = ("dev", "ops")
USER = "default"  # the workspace owner
OTHER_USER = "mia"  # the second user: her data must never reach USER
VARIANTS = ("eng", "data", "home")


# -- ground truth ---------------------------------------------------------------------------
@dataclass
class Fact:
    """A fact whose value changes: ``values`` are (when it became true, value token)."""

    key: str
    agent: str
    queries: list[str]
    values: list[tuple[datetime, str]] = field(default_factory=list)

    def current(self, at: datetime) -> str | None:
        now = [v for t, v in self.values if t <= at]
        return now[-1] if now else None

    def superseded(self, at: datetime) -> list[str]:
        now = [v for t, v in self.values if t <= at]
        return now[:-1]

    def changed_by(self, at: datetime) -> bool:
        return len(self.superseded(at)) > 0


@dataclass
class StableFact:
    """A fact that never changes but looks like one that does (production vs staging)."""

    key: str
    agent: str
    query: str
    token: str
    first_said: datetime | None = None  # not judged before it is said

    def said_by(self, at: datetime) -> bool:
        return self.first_said is not None and self.first_said <= at


@dataclass
class Task:
    key: str
    agent: str
    given_at: datetime
    done_at: datetime | None
    subject: str  # regex: the text is about this task
    done_words: str  # regex: the text says it is finished

    def done_by(self, at: datetime) -> bool:
        return self.done_at is not None and self.done_at <= at


@dataclass
class Episode:
    """A tool failure and its fix in a session transcript: a lesson when ``real``."""

    key: str
    agent: str
    at: datetime
    real: bool
    marker: str  # regex: a lesson memory about this episode


@dataclass
class Exchange:
    at: datetime
    agent: str
    user: str
    assistant: str
    kind: str  # fact, change, mention, stable, task, done, chitchat, table, work
    ref: str | None = None


@dataclass
class Search:
    at: datetime
    agent: str
    query: str
    face: str  # "api" (/memory/search) or "files" (/v1/memory_search)


@dataclass
class Transcript:
    at: datetime
    agent: str
    session_id: str
    lines: list[str]


@dataclass
class OtherUserTurn:
    at: datetime
    user: str
    assistant: str


@dataclass
class Scenario:
    seed: int
    variant: str
    weeks: int
    start: datetime
    facts: list[Fact]
    stable: list[StableFact]
    tasks: list[Task]
    episodes: list[Episode]
    exchanges: list[Exchange]
    searches: list[Search]
    transcripts: list[Transcript]
    other_user: list[OtherUserTurn]
    other_markers: list[str]  # regexes: text only the second user ever said
    other_queries: list[str]  # what someone would ask to find her data
    chitchat: list[str]  # every chit-chat sentence the scenario uses
    memory_md: dict[str, str]  # the MEMORY.md each agent writes itself on day 1
    similar: list[str]  # 50 distinct facts about similar things (the infer probe)

    @property
    def end(self) -> datetime:
        return self.start + timedelta(days=7 * self.weeks)

    def checkpoints(self) -> list[datetime]:
        return [self.start + timedelta(days=7 * k) for k in range(1, self.weeks + 1)]

    def truth(self) -> dict[str, Any]:
        """What the scorer knows: facts with their values over time, tasks, episodes."""
        return {
            "facts": [
                {"key": f.key, "agent": f.agent, "queries": f.queries,
                 "values": [(t.isoformat(), v) for t, v in f.values]}
                for f in self.facts
            ],
            "similar": [
                {**asdict(s), "first_said": s.first_said and s.first_said.isoformat()}
                for s in self.stable
            ],
            "tasks": [
                {**asdict(t), "given_at": t.given_at.isoformat(),
                 "done_at": t.done_at and t.done_at.isoformat()}
                for t in self.tasks
            ],
            "episodes": [{**asdict(e), "at": e.at.isoformat()} for e in self.episodes],
        }  # fmt: skip

    def dump(self) -> dict[str, Any]:
        """The whole scenario, every turn and look-up, as JSON-ready data."""

        def timed(items: list[Any]) -> list[dict[str, Any]]:
            return [{**asdict(x), "at": x.at.isoformat()} for x in items]

        return {
            "summary": self.summary(),
            "truth": self.truth(),
            "exchanges": timed(self.exchanges),
            "searches": timed(self.searches),
            "transcripts": timed(self.transcripts),
            "other_user": timed(self.other_user),
            "memory_md": self.memory_md,
            "similar_probe": self.similar,
        }

    def summary(self) -> dict[str, Any]:
        kinds: dict[str, int] = {}
        for e in self.exchanges:
            kinds[e.kind] = kinds.get(e.kind, 0) + 1
        return {
            "seed": self.seed,
            "variant": self.variant,
            "weeks": self.weeks,
            "start": self.start.isoformat(),
            "exchanges": len(self.exchanges),
            "exchanges_by_kind": dict(sorted(kinds.items())),
            "facts_that_change": len(self.facts),
            "changes": sum(len(f.values) - 1 for f in self.facts),
            "stable_similar_facts": len(self.stable),
            "tasks": len(self.tasks),
            "tasks_finished": sum(t.done_at is not None for t in self.tasks),
            "real_lessons": sum(e.real for e in self.episodes),
            "trivial_failures": sum(not e.real for e in self.episodes),
            "searches": len(self.searches),
            "other_user_turns": len(self.other_user),
        }


# -- the banks ------------------------------------------------------------------------------
# A changing fact: (key, agent, value kind, say, change, mention, queries). ``{v}`` is the
# value token; a change may name the old value as ``{old}``. The value kinds are drawn by
# ``_values`` so that no token appears in two facts.
FactBank = tuple[str, str, str, list[tuple[str, str]], list[tuple[str, str]], list[tuple[str, str]], list[str]]  # fmt: skip

ENG_FACTS: list[FactBank] = [
    (
        "staging_pg_port",
        "dev",
        "port",
        [
            (
                "The staging PostgreSQL database listens on port {v}.",
                "Noted: staging Postgres is on port {v}, I'll use it in the connection strings.",
            )
        ],
        [
            (
                "Heads up: staging Postgres moved to port {v} after the pgbouncer change.",
                "Understood, staging PostgreSQL now uses port {v}; I updated the connection strings.",
            ),
            (
                "Staging Postgres is no longer on {old}, it's on port {v} now.",
                "Thanks, the staging database port is {v} from now on.",
            ),
        ],
        [
            (
                "Can you check the slow queries on staging Postgres?",
                "Connected to staging Postgres on port {v}: the slowest query is the orders report at 2.3 s.",
            )
        ],
        [
            "which port does staging Postgres use",
            "staging PostgreSQL port",
            "how do I connect to the staging database",
        ],
    ),
    (
        "ingest_lib",
        "dev",
        "httplib",
        [
            (
                "The ingestion service uses {v} for its HTTP calls.",
                "Got it: ingestion makes its HTTP calls with {v}.",
            )
        ],
        [
            (
                "We switched the ingestion service from {old} to {v} this morning.",
                "Understood, the ingestion service now uses {v} for HTTP.",
            ),
            (
                "Ingestion is on {v} now, the migration landed.",
                "Great, ingestion's HTTP client library is {v} from now on.",
            ),
        ],
        [
            (
                "Why are the ingestion retries so slow?",
                "The ingestion service's {v} client has a 30 second pool timeout; I lowered it to 10.",
            )
        ],
        [
            "which HTTP library does the ingestion service use",
            "ingestion HTTP client",
            "what do we use for HTTP calls in ingestion",
        ],
    ),
    (
        "oncall",
        "ops",
        "person",
        [
            (
                "{v} is on call this week for the platform team.",
                "Noted, {v} is the platform on-call; I'll page {v} if an alert fires.",
            )
        ],
        [
            (
                "On-call handover: {v} takes over the platform pager from today.",
                "Understood, {v} is now the platform on-call engineer.",
            ),
            (
                "{old} handed the pager to {v}, so page {v} from now on.",
                "Got it, platform on-call is {v} now.",
            ),
        ],
        [
            (
                "The disk alert on db-3 fired again.",
                "I paged {v}, the platform on-call, and attached the disk graph.",
            )
        ],
        [
            "who is on call for the platform team",
            "platform on-call engineer",
            "who should I page for an alert",
        ],
    ),
    (
        "answer_format",
        "dev",
        "format",
        [
            (
                "Please give me status updates as {v}, that's easiest for me to read.",
                "Understood, I'll write your status updates as {v}.",
            )
        ],
        [
            (
                "Actually I changed my mind: I prefer {v} for status updates now.",
                "Noted, status updates will be written as {v} from now on.",
            ),
            ("Switch my status updates to {v} please.", "Sure, your status updates will use {v}."),
        ],
        [
            (
                "Send me the status update for today.",
                "Here is today's status update, written as {v} as you prefer.",
            )
        ],
        [
            "how does the user like status updates",
            "status update format preference",
            "how should I format the status update",
        ],
    ),
    (
        "deploy_day",
        "ops",
        "weekday",
        [
            (
                "Production deploys happen on {v} afternoons only.",
                "Got it, production deploys are on {v} afternoons.",
            )
        ],
        [
            (
                "New release policy: production deploys move to {v} afternoons.",
                "Understood, production deploys now happen on {v} afternoons.",
            ),
            (
                "We deploy to production on {v} now, not {old}.",
                "Noted, the production deploy day is {v}.",
            ),
        ],
        [
            (
                "Is the release train ready?",
                "Yes, the release train is ready for the {v} afternoon production deploy.",
            )
        ],
        [
            "which day do we deploy to production",
            "production deploy day",
            "when are production deploys allowed",
        ],
    ),
    (
        "ci_jobs",
        "dev",
        "jobs",
        [("The CI runners execute {v}.", "Noted, CI runs {v} per pipeline.")],
        [
            ("We bumped the CI runners to {v}.", "Understood, CI now runs {v}."),
            ("CI parallelism is {v} now.", "Got it, the CI runners use {v}."),
        ],
        [
            (
                "The CI pipeline took 14 minutes today.",
                "With {v} the CI pipeline is bound by the integration suite.",
            )
        ],
        [
            "how many parallel jobs do the CI runners run",
            "CI parallelism",
            "CI runner parallel jobs",
        ],
    ),
    (
        "redis_mem",
        "ops",
        "gigabytes",
        [("The cache Redis has a maxmemory of {v}.", "Noted, the cache Redis maxmemory is {v}.")],
        [
            (
                "We raised the cache Redis maxmemory to {v}.",
                "Understood, cache Redis now has {v} of maxmemory.",
            ),
            ("Cache Redis maxmemory is {v} now.", "Got it, the cache Redis limit is {v}."),
        ],
        [
            (
                "Redis evictions are up.",
                "The cache Redis is at 91% of its {v} maxmemory, so evictions are expected.",
            )
        ],
        [
            "what is the cache Redis maxmemory",
            "Redis memory limit",
            "how much memory does the cache Redis have",
        ],
    ),
    (
        "api_timeout",
        "dev",
        "seconds",
        [
            (
                "The public API gateway timeout is {v}.",
                "Noted, the API gateway times out requests after {v}.",
            )
        ],
        [
            (
                "We changed the API gateway timeout to {v}.",
                "Understood, the gateway timeout is {v} now.",
            ),
            ("Gateway timeout is {v} from today.", "Got it, the API gateway timeout is {v}."),
        ],
        [
            (
                "Some exports are being cut off.",
                "The exports take longer than the API gateway's {v} timeout.",
            )
        ],
        [
            "what is the API gateway timeout",
            "gateway request timeout",
            "how long before the API gateway times out",
        ],
    ),
    (
        "log_retention",
        "ops",
        "days",
        [
            (
                "Application logs are kept for {v} in Loki.",
                "Noted, Loki keeps application logs for {v}.",
            )
        ],
        [
            ("Log retention in Loki is now {v}.", "Understood, application logs are kept for {v}."),
            ("We extended Loki retention to {v}.", "Got it, log retention is {v} now."),
        ],
        [
            (
                "Can we still see the logs from the incident?",
                "Yes, Loki keeps application logs for {v}, so the incident logs are still there.",
            )
        ],
        ["how long are application logs kept", "Loki log retention", "log retention period"],
    ),
    (
        "python_version",
        "dev",
        "python",
        [("The backend services run on Python {v}.", "Noted, the backend runs Python {v}.")],
        [
            (
                "We upgraded the backend services to Python {v}.",
                "Understood, the backend now runs on Python {v}.",
            ),
            ("Backend is on Python {v} now.", "Got it, the backend Python version is {v}."),
        ],
        [
            (
                "The type checker complains about the new syntax.",
                "The backend targets Python {v}, so I set mypy's python_version to match.",
            )
        ],
        [
            "which Python version does the backend run",
            "backend Python version",
            "what Python are the services on",
        ],
    ),
    (
        "dashboard_owner",
        "ops",
        "person",
        [
            (
                "{v} owns the Grafana SLO dashboards.",
                "Noted, {v} is the owner of the Grafana SLO dashboards.",
            )
        ],
        [
            (
                "{v} took over the Grafana SLO dashboards from the platform team.",
                "Understood, the SLO dashboards belong to {v} now.",
            ),
            (
                "Ask {v} about the SLO dashboards from now on, not {old}.",
                "Got it, {v} owns the SLO dashboards.",
            ),
        ],
        [
            (
                "The latency panel on the SLO dashboard is empty.",
                "I asked {v}, who owns the SLO dashboards, to fix the latency panel.",
            )
        ],
        [
            "who owns the Grafana SLO dashboards",
            "SLO dashboard owner",
            "who maintains the SLO dashboards",
        ],
    ),
    (
        "release_branch",
        "dev",
        "branch",
        [("The current release branch is {v}.", "Noted, releases are cut from {v}.")],
        [
            ("We cut a new release branch: {v}.", "Understood, the release branch is {v} now."),
            ("Release fixes go to {v} from today.", "Got it, the active release branch is {v}."),
        ],
        [
            (
                "Where should this hotfix go?",
                "The hotfix goes to {v}, the active release branch, and then to main.",
            )
        ],
        ["which is the current release branch", "active release branch", "where do hotfixes go"],
    ),
]

DATA_FACTS: list[FactBank] = [
    (
        "warehouse",
        "dev",
        "warehouse",
        [("Our analytics warehouse is {v}.", "Noted, the analytics warehouse is {v}.")],
        [
            (
                "We finished the migration: the analytics warehouse is {v} now.",
                "Understood, analytics queries go to {v} from now on.",
            ),
            ("Analytics moved from {old} to {v}.", "Got it, the warehouse is {v}."),
        ],
        [
            (
                "The weekly revenue query is slow.",
                "The weekly revenue query scans the whole events table in the {v} warehouse; I added a partition filter.",
            )
        ],
        [
            "which analytics warehouse do we use",
            "analytics warehouse",
            "where do analytics queries run",
        ],
    ),
    (
        "airflow_slot",
        "ops",
        "hour",
        [("The nightly Airflow ETL starts at {v} UTC.", "Noted, the nightly ETL runs at {v} UTC.")],
        [
            (
                "We moved the nightly Airflow ETL to {v} UTC.",
                "Understood, the nightly ETL now starts at {v} UTC.",
            ),
            ("Nightly ETL is at {v} UTC from today.", "Got it, ETL start is {v} UTC."),
        ],
        [
            (
                "The morning dashboards were stale.",
                "The nightly ETL starts at {v} UTC and finished late; the dashboards refreshed after it.",
            )
        ],
        ["when does the nightly ETL start", "Airflow ETL schedule", "nightly ETL start time"],
    ),
    (
        "dbt_version",
        "dev",
        "dbt",
        [("The dbt project is pinned to dbt {v}.", "Noted, dbt is pinned to {v}.")],
        [
            ("We upgraded the dbt project to {v}.", "Understood, dbt runs {v} now."),
            ("dbt is on {v} now.", "Got it, the dbt version is {v}."),
        ],
        [
            (
                "The dbt build warns about deprecated configs.",
                "Those warnings come from dbt {v}; I updated the model configs.",
            )
        ],
        ["which dbt version are we on", "dbt version", "what is dbt pinned to"],
    ),
    (
        "kafka_retention",
        "ops",
        "hours",
        [
            (
                "The events topic in Kafka keeps {v} of data.",
                "Noted, Kafka retention on the events topic is {v}.",
            )
        ],
        [
            (
                "We changed the events topic retention to {v}.",
                "Understood, the events topic keeps {v} now.",
            ),
            ("Kafka events retention is {v} from today.", "Got it, events retention is {v}."),
        ],
        [
            (
                "Can we replay yesterday's events?",
                "Yes, the events topic keeps {v}, so yesterday is still there.",
            )
        ],
        [
            "how long does the events topic keep data",
            "Kafka events retention",
            "events topic retention",
        ],
    ),
    (
        "alert_channel",
        "ops",
        "channel",
        [("Pipeline alerts go to the {v} Slack channel.", "Noted, pipeline alerts post to {v}.")],
        [
            ("We moved pipeline alerts to {v}.", "Understood, pipeline alerts go to {v} now."),
            ("Alerts post in {v} from today, not {old}.", "Got it, the alert channel is {v}."),
        ],
        [
            (
                "Did anyone see the failed load alert?",
                "It was posted to {v}, the pipeline alerts channel, at 04:12.",
            )
        ],
        ["where do pipeline alerts go", "pipeline alert channel", "Slack channel for alerts"],
    ),
    (
        "pipeline_owner",
        "ops",
        "person",
        [("{v} owns the ingestion pipelines.", "Noted, {v} is the ingestion pipeline owner.")],
        [
            (
                "{v} took over the ingestion pipelines this week.",
                "Understood, {v} owns the ingestion pipelines now.",
            ),
            ("Ask {v} about ingestion from now on, not {old}.", "Got it, {v} owns ingestion."),
        ],
        [
            (
                "The ingestion of the CRM export failed.",
                "I told {v}, who owns the ingestion pipelines, and opened a ticket.",
            )
        ],
        [
            "who owns the ingestion pipelines",
            "ingestion pipeline owner",
            "who do I ask about ingestion",
        ],
    ),
    (
        "spark_executors",
        "dev",
        "executors",
        [("The Spark jobs run with {v}.", "Noted, Spark jobs use {v}.")],
        [
            ("We raised the Spark jobs to {v}.", "Understood, Spark now uses {v}."),
            ("Spark runs {v} now.", "Got it, {v} for Spark."),
        ],
        [
            (
                "The sessionisation job is slow.",
                "The sessionisation job is shuffle bound even with {v}.",
            )
        ],
        ["how many executors do the Spark jobs use", "Spark executor count", "Spark executors"],
    ),
    (
        "report_format",
        "dev",
        "format",
        [
            (
                "Please send me the data quality report as {v}.",
                "Understood, the data quality report will come as {v}.",
            )
        ],
        [
            (
                "I prefer the data quality report as {v} now.",
                "Noted, I'll send the data quality report as {v}.",
            ),
            ("Switch the data quality report to {v} please.", "Sure, {v} it is."),
        ],
        [
            (
                "Send me today's data quality report.",
                "Here is today's data quality report, as {v} as you prefer.",
            )
        ],
        [
            "how does the user want the data quality report",
            "data quality report format",
            "report format preference",
        ],
    ),
    (
        "bq_dataset",
        "dev",
        "dataset",
        [("Curated tables live in the {v} dataset.", "Noted, curated tables are in {v}.")],
        [
            (
                "We renamed the curated dataset to {v}.",
                "Understood, curated tables live in {v} now.",
            ),
            ("Curated tables are in {v} from today.", "Got it, the curated dataset is {v}."),
        ],
        [("Where is the customers table?", "The customers table is in the {v} curated dataset.")],
        [
            "which dataset holds the curated tables",
            "curated dataset name",
            "where are the curated tables",
        ],
    ),
    (
        "backfill_window",
        "ops",
        "days",
        [("Backfills may reprocess at most {v} of data.", "Noted, the backfill window is {v}.")],
        [
            ("The backfill window is {v} now.", "Understood, backfills may reprocess {v}."),
            ("We set the backfill limit to {v}.", "Got it, the backfill window is {v}."),
        ],
        [
            (
                "Can I backfill last month?",
                "Backfills may reprocess at most {v}, so last month needs an exception.",
            )
        ],
        ["how far back may a backfill go", "backfill window", "backfill limit"],
    ),
    (
        "freshness_sla",
        "ops",
        "minutes",
        [
            (
                "The freshness SLA of the sales mart is {v}.",
                "Noted, the sales mart must be {v} fresh.",
            )
        ],
        [
            ("The sales mart freshness SLA is {v} now.", "Understood, the freshness SLA is {v}."),
            ("We relaxed the sales mart SLA to {v}.", "Got it, sales mart freshness is {v}."),
        ],
        [
            (
                "The sales mart is late again.",
                "The sales mart is 20 minutes past its {v} freshness SLA; I opened an incident.",
            )
        ],
        [
            "what is the sales mart freshness SLA",
            "sales mart freshness",
            "freshness SLA of the sales mart",
        ],
    ),
]

# A personal assistant's life (``home``): the household agent is ``dev``, the health and
# schedule agent ``ops``. Written as a check on wording memoryd's rules were not tuned on.
HOME_FACTS: list[FactBank] = [
    (
        "dentist",
        "ops",
        "surname",
        [("My dentist is Dr. {v} at the Elm Street practice.", "Noted, your dentist is Dr. {v}.")],
        [
            (
                "I've switched dentists, I see Dr. {v} now.",
                "Got it, Dr. {v} is your dentist from now on.",
            ),
            (
                "Dr. {old} retired, so my new dentist is Dr. {v}.",
                "Understood, I'll book with Dr. {v} next time.",
            ),
        ],
        [
            (
                "Can you find a slot for a check-up?",
                "Dr. {v} has a free check-up slot on the 14th at 10:00.",
            )
        ],
        ["who is my dentist", "where do I get my teeth cleaned", "dentist's name"],
    ),
    (
        "gym_class",
        "ops",
        "gymtime",
        [("My spin class is at {v} on Tuesdays.", "Noted, spin class Tuesdays at {v}.")],
        [
            ("They moved spin to {v}, same day.", "OK, spin is at {v} on Tuesdays now."),
            (
                "Spin class starts at {v} from next week instead of {old}.",
                "Updated: spin class at {v}.",
            ),
        ],
        [
            (
                "Remind me what to pack for the gym.",
                "Towel, water bottle and your cycling shoes for spin at {v}.",
            )
        ],
        ["what time is spin class", "when do I cycle at the gym", "gym class time"],
    ),
    (
        "car",
        "dev",
        "car",
        [("I drive a {v}.", "Noted, your car is a {v}.")],
        [
            ("Sold the {old}, we bought a {v} last weekend.", "Congratulations on the {v}!"),
            ("The new car is a {v}.", "Got it, you drive a {v} now."),
        ],
        [
            (
                "The tyre pressure light came on.",
                "For your {v} the recommended pressure is on the sticker inside the door.",
            )
        ],
        ["what car do I drive", "which car model do we have", "my car"],
    ),
    (
        "wifi",
        "dev",
        "wifi",
        [("Our home wifi network is called {v}.", "Noted, home wifi network: {v}.")],
        [
            ("I renamed the wifi to {v}.", "OK, the home network is {v} now."),
            (
                "New router, the network is {v} now, not {old}.",
                "Thanks, I'll use {v} for the smart plugs.",
            ),
        ],
        [
            (
                "The smart plug went offline again.",
                "I reconnected the smart plug to the {v} network.",
            )
        ],
        [
            "what is the wifi network called",
            "home network name",
            "which SSID do the smart plugs use",
        ],
    ),
    (
        "diet",
        "dev",
        "diet",
        [("I'm {v}, please keep that in mind for recipes.", "Of course, {v} recipes only.")],
        [
            ("I've gone {v} since the start of the month.", "Noted, I'll suggest {v} meals."),
            ("Actually I'm {v} now, not {old} anymore.", "Understood, {v} it is."),
        ],
        [("Plan dinners for this week.", "Here are five {v} dinners for the week.")],
        ["what diet do I follow", "what can I eat", "recipe restrictions"],
    ),
    (
        "book_club",
        "ops",
        "venue",
        [("Book club meets at {v} on the first Thursday.", "Noted, book club at {v}.")],
        [
            ("Book club has moved to {v}.", "Got it, book club now meets at {v}."),
            (
                "We're not meeting at {old} anymore, book club is at {v} from now on.",
                "Updated the calendar: book club at {v}.",
            ),
        ],
        [
            (
                "What's the book for this month?",
                "Ishiguro's Klara and the Sun, discussed at {v} on Thursday.",
            )
        ],
        ["where does book club meet", "book club venue", "where is the reading group"],
    ),
    (
        "landlord_ext",
        "ops",
        "ext",
        [("The landlord's office number is 020 7946 0000, {v}.", "Noted, landlord's office: {v}.")],
        [
            (
                "The letting agent changed phones, it's {v} now.",
                "Updated the landlord contact to {v}.",
            ),
            (
                "Call {v} for repairs from today, {old} doesn't work anymore.",
                "OK, repairs line is {v}.",
            ),
        ],
        [
            (
                "The boiler is making that noise again.",
                "I've logged it; call the landlord on {v} if it stops heating.",
            )
        ],
        ["how do I call the landlord", "landlord phone extension", "who do I ring about repairs"],
    ),
    (
        "streaming",
        "dev",
        "plan",
        [("We pay for {v}.", "Noted, your streaming subscription is {v}.")],
        [
            ("I downgraded us to {v} to save money.", "OK, your plan is {v} now."),
            ("Switched the subscription from {old} to {v}.", "Got it, {v} from now on."),
        ],
        [("How much do we spend on subscriptions?", "About 38 a month, most of it {v}.")],
        [
            "which streaming plan do we have",
            "what subscription are we paying for",
            "streaming plan",
        ],
    ),
    (
        "swim_day",
        "ops",
        "swimday",
        [("Mila's swimming lessons are on {v} mornings.", "Noted, Mila swims on {v}.")],
        [
            ("Mila's swimming moved to {v}.", "Updated: swimming lessons on {v} now."),
            (
                "The pool changed the timetable, Mila swims on {v} now instead of {old}.",
                "Got it, {v} for Mila's lessons.",
            ),
        ],
        [("Do I need to pack Mila's goggles?", "Yes, she has her swimming lesson on {v}.")],
        ["when is Mila's swimming lesson", "which day does Mila swim", "swimming day"],
    ),
    (
        "pharmacy",
        "ops",
        "pharmacy",
        [
            (
                "My prescriptions go to {v} on the high street.",
                "Noted, prescriptions are collected at {v}.",
            )
        ],
        [
            ("I moved my prescriptions to {v}, it's closer.", "OK, your pharmacy is {v} now."),
            (
                "From now on the repeat prescription goes to {v}.",
                "Got it, repeat prescriptions at {v}.",
            ),
        ],
        [("Is my inhaler ready?", "{v} says the inhaler is ready to collect.")],
        ["which pharmacy do I use", "where do I pick up my prescription", "pharmacy"],
    ),
    (
        "coffee",
        "dev",
        "coffee",
        [("My usual coffee order is a {v}.", "Noted, a {v} for you.")],
        [
            ("I've switched to a {v} these days.", "Got it, {v} it is."),
            ("No more {old}, I'm on {v} now.", "Understood, your order is a {v}."),
        ],
        [("Order coffee for the meeting.", "Ordered five coffees, a {v} for you.")],
        ["what is my coffee order", "how do I take my coffee", "usual coffee"],
    ),
    (
        "alarm",
        "ops",
        "alarm",
        [("Set my weekday alarm for {v}.", "Done, weekday alarm at {v}.")],
        [
            ("Move my weekday alarm to {v}.", "OK, the alarm is at {v} now."),
            ("I wake up at {v} now, change the alarm.", "Updated, weekday alarm {v}."),
        ],
        [("Did I oversleep?", "No, your alarm went off at {v} as usual.")],
        ["what time is my alarm", "when do I wake up on weekdays", "weekday alarm"],
    ),
    (
        "airline",
        "dev",
        "airline",
        [("When you book flights, I prefer {v}.", "Noted, {v} for flights.")],
        [
            ("Book {v} from now on, I joined their loyalty scheme.", "Understood, I'll book {v}."),
            ("I'm done with {old}, use {v} for flights.", "OK, {v} it is."),
        ],
        [
            (
                "Find me a flight to Lisbon in May.",
                "The best {v} flight to Lisbon leaves at 08:40 on the 3rd.",
            )
        ],
        ["which airline should you book", "preferred airline", "who do I fly with"],
    ),
]


NAMES = ["Leo", "Kenji", "Priya", "Sam", "Ravi", "Ana", "Tomasz", "Ingrid", "Omar", "Yuki",
         "Bruno", "Chidi", "Freya", "Mateo", "Nadia", "Oskar"]  # fmt: skip
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday"]
VALUE_POOLS: dict[str, list[str]] = {
    "httplib": ["aiohttp", "httpx", "urllib3", "pycurl"],
    "format": ["bullet lists", "short prose paragraphs", "numbered checklists"],
    "weekday": WEEKDAYS,
    "python": ["3.10", "3.11", "3.12", "3.13"],
    "branch": ["release/2026.03", "release/2026.04", "release/2026.05", "release/2026.06"],
    "warehouse": ["Redshift", "BigQuery", "Snowflake", "ClickHouse"],
    "dbt": ["1.6.9", "1.7.4", "1.8.2", "1.9.1"],
    "channel": ["#data-alerts", "#pipeline-alerts", "#etl-oncall", "#dq-pager"],
    "dataset": ["analytics_curated", "curated_v2", "gold_tables", "warehouse_gold"],
    # home
    "surname": ["Okoye", "Lindqvist", "Haddad", "Moreau"],
    "gymtime": ["6:30 am", "7:15 am", "6:45 pm", "7:30 pm"],
    "car": ["Honda Civic", "Toyota Corolla", "VW Golf", "Kia Niro"],
    "wifi": ["Hearth-5G", "NookMesh", "Bramble-Net", "Attic-2G"],
    "diet": ["vegetarian", "pescatarian", "vegan", "flexitarian"],
    "venue": ["Marlowe Books", "Ferris Library", "Cafe Lune", "the Old Mill"],
    "ext": ["ext 214", "ext 307", "ext 519", "ext 642"],
    "plan": ["Netflix Basic", "Netflix Premium", "Disney Plus", "Apple TV"],
    "swimday": ["Saturday", "Sunday", "Friday"],
    "pharmacy": ["Boots", "Lloyds", "Superdrug", "Well Pharmacy"],
    "coffee": ["flat white", "oat latte", "cortado", "americano"],
    "alarm": ["6:10", "6:40", "7:05", "5:50"],
    "airline": ["KLM", "easyJet", "British Airways", "TAP Air"],
}


def _values(rng: random.Random, kind: str, n: int, used: set[str]) -> list[str]:
    """``n`` distinct value tokens of ``kind``, none used by another fact."""
    out: list[str] = []
    while len(out) < n:
        if kind == "port":
            v = str(rng.choice([5433, 5434, 5435, 6432, 6433, 6543, 7432, 5532]))
        elif kind == "person":
            v = rng.choice(NAMES)
        elif kind == "jobs":
            v = f"{rng.choice([3, 5, 6, 7, 9, 12, 14])} parallel jobs"
        elif kind == "gigabytes":
            v = f"{rng.choice([2, 3, 6, 10, 12, 24])} GB"
        elif kind == "seconds":
            v = f"{rng.choice([15, 20, 25, 40, 45, 75])} seconds"
        elif kind == "days":
            v = f"{rng.choice([11, 14, 21, 31, 45, 60, 90])} days"
        elif kind == "hours":
            v = f"{rng.choice([36, 48, 72, 96, 120, 168])} hours"
        elif kind == "minutes":
            v = f"{rng.choice([35, 50, 65, 80, 100])} minutes"
        elif kind == "hour":
            v = f"{rng.choice([1, 2, 3, 4, 5])}:{rng.choice(['15', '40', '50'])}"
        elif kind == "executors":
            v = f"{rng.choice([16, 24, 32, 48, 64])} executors"
        else:
            v = rng.choice(VALUE_POOLS[kind])
        if v not in used and v not in out:
            out.append(v)
    used.update(out)
    return out


# (key, agent, query, say user, say assistant, token): similar to a changing fact, never changes
STABLE: dict[str, list[tuple[str, str, str, str, str, str]]] = {
    "eng": [
        (
            "prod_pg_port",
            "dev",
            "production PostgreSQL port",
            "Production PostgreSQL stays on the default port 5432.",
            "Noted, production Postgres listens on 5432.",
            "5432",
        ),
        (
            "staging_redis_port",
            "ops",
            "staging Redis port",
            "The staging Redis listens on port 6380.",
            "Noted, staging Redis is on 6380.",
            "6380",
        ),
        (
            "prod_gateway_host",
            "dev",
            "production API gateway hostname",
            "The production API gateway is gw.prod.orion.internal.",
            "Noted, the production gateway host is gw.prod.orion.internal.",
            "gw.prod.orion.internal",
        ),
    ],
    "data": [
        (
            "prod_kafka_port",
            "ops",
            "production Kafka broker port",
            "The production Kafka brokers listen on port 9094.",
            "Noted, production Kafka is on 9094.",
            "9094",
        ),
        (
            "staging_warehouse",
            "dev",
            "staging warehouse project",
            "The staging warehouse project is wh-staging-17.",
            "Noted, staging uses the wh-staging-17 project.",
            "wh-staging-17",
        ),
        (
            "raw_dataset",
            "dev",
            "raw events dataset",
            "Raw events land in the raw_events_v3 dataset.",
            "Noted, raw events go to raw_events_v3.",
            "raw_events_v3",
        ),
    ],
    "home": [
        (
            "home_postcode",
            "dev",
            "home postcode",
            "Our home postcode is N4 2HB.",
            "Noted, home postcode N4 2HB.",
            "N4 2HB",
        ),
        (
            "office_postcode",
            "ops",
            "office postcode",
            "The office postcode is EC1V 9LT.",
            "Noted, the office is at EC1V 9LT.",
            "EC1V 9LT",
        ),
        (
            "school_phone",
            "ops",
            "Mila's school phone number",
            "Mila's school office is on 020 7946 0321.",
            "Noted, school office 020 7946 0321.",
            "020 7946 0321",
        ),
    ],
}

# (key, agent, give user, give assistant, done user, done assistant, subject, done words)
TASKS: dict[str, list[tuple[str, str, str, str, str, str, str, str]]] = {
    "eng": [
        (
            "aws_keys",
            "ops",
            "Please rotate the AWS access keys by Friday.",
            "Will do, I'll rotate the AWS access keys before Friday.",
            "Rotated the AWS access keys; the old ones are revoked.",
            "Confirmed, the AWS access key rotation is complete.",
            r"AWS (access )?keys?|AWS access key",
            r"rotated|rotation is complete|revoked",
        ),
        (
            "pr_review",
            "dev",
            "Review PR #{n} tomorrow, it touches the billing migration.",
            "OK, I'll review PR #{n} tomorrow morning.",
            "PR #{n} is reviewed and merged.",
            "Great, PR #{n} is merged into main.",
            r"PR #{n}",
            r"merged|reviewed and",
        ),
        (
            "tls_cert",
            "ops",
            "Renew the TLS certificate for api.orion.dev before the 20th.",
            "Noted, I'll renew the api.orion.dev TLS certificate before the 20th.",
            "Renewed the TLS certificate for api.orion.dev, it is valid until next year.",
            "Done, the new certificate for api.orion.dev is live.",
            r"TLS certificate|certificate for api\.orion\.dev",
            r"renewed|is live|valid until",
        ),
        (
            "k8s_upgrade",
            "ops",
            "Upgrade the staging cluster to Kubernetes 1.{k} this week.",
            "I'll plan the staging cluster upgrade to Kubernetes 1.{k} for this week.",
            "The staging cluster is upgraded to Kubernetes 1.{k}.",
            "Confirmed, staging runs Kubernetes 1.{k} now.",
            r"Kubernetes 1\.{k}",
            r"upgraded|runs Kubernetes",
        ),
        (
            "postmortem",
            "dev",
            "Write the postmortem for the checkout outage by Monday.",
            "Sure, I'll have the checkout outage postmortem written by Monday.",
            "The postmortem for the checkout outage is written and shared with the team.",
            "Thanks, the checkout postmortem is published.",
            r"postmortem",
            r"written and shared|published",
        ),
        (
            "cron_migration",
            "ops",
            "Migrate the cron jobs off the old VM by the end of next week.",
            "OK, I'll migrate the cron jobs off the old VM by the end of next week.",
            "All cron jobs are migrated off the old VM, it can be shut down.",
            "Great, the cron migration is finished.",
            r"cron (jobs|migration)",
            r"migrated|finished",
        ),
        (
            "s3_cleanup",
            "ops",
            "Clean up the unused S3 buckets by Thursday.",
            "Will do, I'll clean up the unused S3 buckets by Thursday.",
            "Deleted the unused S3 buckets, 14 in total.",
            "Confirmed, the unused S3 buckets are gone.",
            r"S3 buckets",
            r"deleted|are gone",
        ),
        (
            "ranking_bench",
            "dev",
            "Benchmark the new search ranking before the demo on Friday.",
            "I'll benchmark the new search ranking before Friday's demo.",
            "Benchmarked the new search ranking: recall is up 4 points.",
            "The search ranking benchmark is done and in the demo deck.",
            r"search ranking",
            r"benchmarked|benchmark is done",
        ),
        (
            "capacity_plan",
            "ops",
            "Send Ravi the capacity plan by Tuesday.",
            "Noted, I'll send Ravi the capacity plan by Tuesday.",
            "Sent Ravi the capacity plan for the next quarter.",
            "Ravi has the capacity plan now.",
            r"capacity plan",
            r"sent|has the capacity plan",
        ),
        (
            "flaky_test",
            "dev",
            "Fix the flaky test test_refund_rounding before the release.",
            "I'll fix the flaky test_refund_rounding before the release.",
            "Fixed the flaky test_refund_rounding, it was a timezone assumption.",
            "Good, test_refund_rounding is stable now.",
            r"test_refund_rounding",
            r"fixed|is stable",
        ),
        (
            "planning_room",
            "dev",
            "Book the big room for quarterly planning by tomorrow.",
            "Will do, I'll book the big room for quarterly planning.",
            "Booked the big room for quarterly planning on the 12th.",
            "Thanks, quarterly planning has its room.",
            r"quarterly planning",
            r"booked|has its room",
        ),
        (
            "sbom",
            "dev",
            "Generate the SBOM for the audit by next Wednesday.",
            "OK, I'll generate the SBOM for the audit by next Wednesday.",
            "Generated the SBOM and sent it to the auditors.",
            "The SBOM is with the auditors.",
            r"SBOM",
            r"generated|with the auditors",
        ),
    ],
    "data": [
        (
            "gdpr_delete",
            "ops",
            "Run the GDPR deletion job for ticket DPR-{n} by Friday.",
            "Will do, I'll run the GDPR deletion for DPR-{n} by Friday.",
            "Ran the GDPR deletion for DPR-{n}; 312 rows removed.",
            "Confirmed, DPR-{n} is closed.",
            r"DPR-{n}",
            r"ran the gdpr|is closed|removed",
        ),
        (
            "backfill_q1",
            "dev",
            "Backfill the Q1 orders table by Thursday.",
            "OK, I'll backfill the Q1 orders table by Thursday.",
            "Backfilled the Q1 orders table, row counts match the source.",
            "Great, the Q1 backfill is complete.",
            r"Q1 (orders|backfill)",
            r"backfilled|complete",
        ),
        (
            "schema_review",
            "dev",
            "Review the new events schema tomorrow.",
            "Sure, I'll review the events schema tomorrow.",
            "Reviewed and approved the new events schema.",
            "Thanks, the events schema is approved.",
            r"events schema",
            r"approved",
        ),
        (
            "dq_checks",
            "ops",
            "Add data quality checks to the payments mart by next week.",
            "I'll add data quality checks to the payments mart next week.",
            "Added 9 data quality checks to the payments mart.",
            "The payments mart checks are live.",
            r"payments mart",
            r"added|are live",
        ),
        (
            "cost_report",
            "ops",
            "Send Freya the warehouse cost report by Monday.",
            "Noted, I'll send Freya the cost report by Monday.",
            "Sent Freya the warehouse cost report.",
            "Freya has the cost report now.",
            r"cost report",
            r"sent|has the cost report",
        ),
        (
            "airflow_upgrade",
            "ops",
            "Upgrade Airflow to 2.{k} this week.",
            "I'll plan the Airflow 2.{k} upgrade for this week.",
            "Airflow is upgraded to 2.{k}.",
            "Confirmed, Airflow 2.{k} is running.",
            r"Airflow (to )?2\.{k}",
            r"upgraded|is running",
        ),
        (
            "pii_scan",
            "dev",
            "Scan the staging tables for PII before the audit.",
            "I'll scan the staging tables for PII before the audit.",
            "Finished the PII scan: two columns masked.",
            "The PII scan is done.",
            r"PII scan|for PII",
            r"finished|done|masked",
        ),
        (
            "doc_lineage",
            "dev",
            "Document the lineage of the revenue model by Wednesday.",
            "OK, I'll document the revenue model lineage by Wednesday.",
            "Documented the lineage of the revenue model in the wiki.",
            "The revenue lineage doc is published.",
            r"lineage",
            r"documented|published",
        ),
        (
            "drop_tmp",
            "ops",
            "Drop the temp_ tables older than 30 days by Friday.",
            "Will do, I'll drop the old temp_ tables by Friday.",
            "Dropped 41 temp_ tables older than 30 days.",
            "The old temp_ tables are gone.",
            r"temp_ tables",
            r"dropped|are gone",
        ),
        (
            "onboard",
            "dev",
            "Onboard Nadia to the dbt project by Tuesday.",
            "Sure, I'll onboard Nadia to the dbt project by Tuesday.",
            "Onboarded Nadia: she has access and ran her first build.",
            "Nadia is onboarded.",
            r"onboard(ed)? Nadia|Nadia is onboarded",
            r"onboarded",
        ),
        (
            "kafka_acl",
            "ops",
            "Fix the Kafka ACL for the billing consumer today.",
            "I'll fix the billing consumer's Kafka ACL today.",
            "Fixed the Kafka ACL, the billing consumer reads again.",
            "The billing consumer ACL is fixed.",
            r"Kafka ACL|consumer ACL",
            r"fixed|reads again",
        ),
    ],
    "home": [
        (
            "passport",
            "ops",
            "Renew my passport by the end of the month.",
            "I'll remind you to renew the passport before the month ends.",
            "Passport renewed, the new one arrives in three weeks.",
            "Great, the passport renewal is done.",
            r"passport",
            r"renewed|renewal is done",
        ),
        (
            "plumber",
            "dev",
            "Call the plumber about the leaking tap tomorrow.",
            "OK, I'll remind you to call the plumber tomorrow.",
            "Called the plumber, he comes on Thursday to fix the tap.",
            "Good, the plumber is sorted.",
            r"plumber",
            r"called|sorted|comes on",
        ),
        (
            "flights",
            "dev",
            "Book flights to Porto for the June trip by Friday.",
            "Will do, I'll book the Porto flights by Friday.",
            "Booked the Porto flights, booking reference {n}X.",
            "Confirmed, the Porto flights are booked.",
            r"flights? to Porto|Porto flights",
            r"booked|booking reference",
        ),
        (
            "council_tax",
            "ops",
            "Pay the council tax bill by Monday.",
            "Noted, the council tax is due Monday.",
            "Paid the council tax, reference {n}.",
            "Thanks, the council tax is paid.",
            r"council tax",
            r"paid",
        ),
        (
            "present",
            "dev",
            "Order a birthday present for Mum before Saturday.",
            "I'll remind you to order Mum's present before Saturday.",
            "Ordered Mum's present, it arrives on Friday.",
            "Lovely, the present is ordered.",
            r"present for Mum|Mum's present",
            r"ordered|arrives",
        ),
        (
            "mot",
            "dev",
            "Book the car's MOT this week.",
            "OK, the MOT gets booked this week.",
            "MOT booked for the {k}th at the Station Road garage.",
            "Done, the MOT is booked.",
            r"\bMOT\b",
            r"booked",
        ),
        (
            "vet",
            "ops",
            "Take Biscuit to the vet for her jab by next week.",
            "I'll remind you about Biscuit's vaccination.",
            "Biscuit had her jab at the vet this morning.",
            "Great, Biscuit is vaccinated.",
            r"Biscuit",
            r"had her jab|vaccinated",
        ),
        (
            "insurance",
            "ops",
            "Renew the home insurance before the 20th.",
            "Noted, the home insurance renewal is before the 20th.",
            "Renewed the home insurance with the same cover.",
            "The home insurance renewal is done.",
            r"home insurance",
            r"renewed|renewal is done",
        ),
        (
            "trip_form",
            "ops",
            "Sign Mila's school trip form by Wednesday.",
            "I'll remind you to sign the trip form by Wednesday.",
            "Signed and returned Mila's trip form.",
            "Good, the trip form is handed in.",
            r"trip form",
            r"signed|handed in",
        ),
        (
            "gutters",
            "dev",
            "Clean the gutters before the weekend.",
            "OK, the gutters before the weekend.",
            "Cleaned the gutters, they were full of leaves.",
            "Nice, the gutters are clean.",
            r"gutters",
            r"cleaned|are clean",
        ),
    ],
}

# (key, user ask, tool, failing command, error, explanation, fixing command, output, marker)
REAL_FAILURES = [
    (
        "pep668",
        "Install requests for the status checker.",
        "exec",
        "pip install requests",
        "error: externally-managed-environment\n× This environment is externally managed",
        "pip refuses to install into the system Python because the environment is externally "
        "managed (PEP 668), so I need a virtualenv.",
        "python3 -m venv .venv && .venv/bin/pip install requests",
        "Successfully installed requests-2.32.5",
        r"externally.managed|PEP 668|python3 -m venv",
    ),
    (
        "sqlite_busy",
        "Run the dashboard test suite.",
        "exec",
        "npm test",
        "FAIL src/db.test.ts\n  SQLITE_BUSY: database is locked\nCommand exited with code 1",
        "The tests share one SQLite file and lock it when jest runs them in parallel; running "
        "them serially avoids the lock.",
        "npm test -- --runInBand",
        "PASS src/db.test.ts\nTests: 42 passed, 42 total",
        r"SQLITE_BUSY|runInBand|serially",
    ),
    (
        "disk_full",
        "Build the worker image.",
        "exec",
        "docker build -t worker .",
        "ERROR: failed to solve: write /var/lib/docker/tmp: no space left on device",
        "The Docker build cache filled the disk; pruning the builder cache frees the space.",
        "docker builder prune -af && docker build -t worker .",
        "Successfully tagged worker:latest",
        r"no space left|builder prune|build cache",
    ),
    (
        "non_ff",
        "Push the release notes branch.",
        "exec",
        "git push origin notes",
        "! [rejected] notes -> notes (non-fast-forward)\nerror: failed to push some refs",
        "The remote branch has commits I don't have; rebasing onto it keeps history linear.",
        "git pull --rebase origin notes && git push origin notes",
        "To github.com:orion/app.git\n   3f2a1b0..9c8d7e6  notes -> notes",
        r"non.fast.forward|pull --rebase|rebas",
    ),
    (
        "eresolve",
        "Install the frontend dependencies.",
        "exec",
        "npm install",
        "npm ERR! code ERESOLVE\nnpm ERR! ERESOLVE unable to resolve dependency tree",
        "The date picker still declares a peer dependency on React 17; legacy peer resolution "
        "installs it until the library is updated.",
        "npm install --legacy-peer-deps",
        "added 1284 packages in 41s",
        r"ERESOLVE|legacy-peer-deps|peer dependenc",
    ),
    (
        "alembic",
        "Apply the new migration to the local database.",
        "exec",
        "alembic revision --autogenerate -m add_refunds",
        "ERROR [alembic.util.messaging] Target database is not up to date.",
        "Autogenerate compares against the current schema, so the database must be at head first.",
        "alembic upgrade head && alembic revision --autogenerate -m add_refunds",
        "Generating migrations/versions/4c1d_add_refunds.py ...  done",
        r"alembic|not up to date|upgrade head",
    ),
    (
        "eks_auth",
        "List the pods in the staging cluster.",
        "exec",
        "kubectl get pods -n app",
        "error: You must be logged in to the server (Unauthorized)",
        "The kubeconfig token expired; regenerating it with the AWS CLI restores access.",
        "aws eks update-kubeconfig --name staging && kubectl get pods -n app",
        "NAME READY STATUS\napi-7d9f 1/1 Running",
        r"Unauthorized|update-kubeconfig|kubeconfig",
    ),
    (
        "editable",
        "Run the unit tests of the backend.",
        "exec",
        "pytest -q",
        "ModuleNotFoundError: No module named 'orion'\nexit code 2",
        "The package is not installed in the virtualenv; an editable install puts it on the path.",
        "pip install -e . && pytest -q",
        "212 passed in 9.8s",
        r"No module named|editable install|pip install -e",
    ),
]
TRIVIAL_FAILURES = [
    (
        "grep_typo",
        "Find the TODOs in the code.",
        "exec",
        "grep -rn TODO srcc",
        "grep: srcc: No such file or directory",
        "",
        "grep -rn TODO src",
        "src/app.py:12: # TODO",
    ),
    (
        "readme_case",
        "Show me the README.",
        "read",
        "READMEE.md",
        "ENOENT: no such file or directory, open 'READMEE.md'",
        "",
        "README.md",
        "# Orion",
    ),
    (
        "git_typo",
        "What's the git status?",
        "exec",
        "gti status",
        "bash: gti: command not found",
        "",
        "git status",
        "On branch main\nnothing to commit",
    ),
    (
        "ls_typo",
        "List the test folder.",
        "exec",
        "ls tset/",
        "ls: cannot access 'tset/': No such file or directory",
        "",
        "ls tests/",
        "test_api.py test_models.py",
    ),
    (
        "python_typo",
        "Run the report script.",
        "exec",
        "pyhton report.py",
        "bash: pyhton: command not found",
        "",
        "python report.py",
        "report written to out.csv",
    ),
    (
        "cd_typo",
        "Check the nginx logs.",
        "exec",
        "tail -n 20 /var/lgo/nginx/error.log",
        "tail: cannot open '/var/lgo/nginx/error.log': No such file or directory",
        "",
        "tail -n 20 /var/log/nginx/error.log",
        "2026/03/04 10:01:12 [warn] upstream slow",
    ),
]

CHITCHAT: list[tuple[str, str]] = [
    ("Good morning! Hope the coffee machine works today.", "Good morning! Ready when you are."),
    ("Thanks, that's all for today.", "You're welcome, have a good evening!"),
    (
        "It's pouring here today, I got soaked on the way in.",
        "Oh no! Hope you dry off soon, grab a hot coffee.",
    ),
    ("Such a sunny day, I might work from the park later.", "Sounds lovely, enjoy the sunshine!"),
    ("I'm heading out for the day, see you tomorrow.", "See you tomorrow, have a good evening!"),
    ("Great, thanks a lot for the help today!", "Happy to help, anytime!"),
    ("Back from lunch, that pasta place was busy.", "Welcome back! Let me know what's next."),
    ("Happy Friday everyone!", "Happy Friday! Any plans for the weekend?"),
    (
        "How was your weekend? Mine was way too short.",
        "I don't have weekends, but I hope yours was relaxing!",
    ),
    ("Sorry, I was stuck in a meeting for ages.", "No problem at all, take your time."),
    ("It's freezing in the office today.", "Brr, maybe grab a sweater!"),
    ("Let's call it a day, my brain is fried.", "Sounds good, talk tomorrow."),
    ("Ha, that made me laugh.", "Glad to hear it!"),
    ("Morning! Traffic was terrible today.", "Morning! Sorry about the traffic, glad you made it."),
]
ACKS = ["Got it, I'll keep that in mind.", "Noted, thanks!", "Sure thing.", "Understood.",
        "Okay, noted."]  # fmt: skip

WORK = [
    (
        "We spent the afternoon on ticket {p}-{n}: the refund export drops rows with null "
        "currency codes.",
        "{p}-{n} is fixed: null currency codes now default to the account's "
        "currency and the export test covers it.",
    ),
    (
        "Ticket {p}-{n} is about the invoice PDF rendering the wrong locale.",
        "I traced {p}-{n} to the renderer ignoring the account locale and patched it.",
    ),
    (
        "Let's look at {p}-{n}, the slow search on the admin page.",
        "{p}-{n}: the admin search did a full scan; an index on customer email brings it to 40 ms.",
    ),
    (
        "Can you summarise what changed in the {p}-{n} incident review?",
        "The {p}-{n} review added an alert on queue depth and a runbook step for draining workers.",
    ),
    (
        "Draft the release notes for ticket {p}-{n}.",
        "Release notes for {p}-{n}: faster exports, fixed timezone handling in reports.",
    ),
]
TABLES = [
    (
        "Which services does each team own?",
        "Here is the ownership table:\n\n| service | port | owner |\n|---|---|---|\n"
        "| search | 9200 | {a} |\n| billing | 8080 | {b} |\n| ingest | 7070 | {c} |",
    ),
    (
        "Give me the error budget per service.",
        "Error budgets this month:\n\n| service | budget left | burn rate |\n|---|---|---|\n"
        "| api | 62% | 0.8 |\n| worker | 35% | 1.4 |\n| web | 81% | 0.3 |",
    ),
]

OTHER_USER_TURNS = [
    ("My team's staging Postgres runs on port 7719.", "Noted, your staging Postgres is on 7719."),
    (
        "My project codename is Bluefin, keep it confidential.",
        "Understood, Bluefin stays confidential.",
    ),
    (
        "I have a dentist appointment with Dr. Okafor on the 14th.",
        "Noted: dentist, Dr. Okafor, on the 14th.",
    ),
    (
        "I keep my notes in the Harborlight vault in Obsidian.",
        "Got it, your notes live in the Harborlight vault.",
    ),
    ("My on-call buddy is Zdenka this month.", "Noted, Zdenka is your on-call buddy."),
    (
        "My home lab router is a Mikrotik hEX at 10.44.0.1.",
        "Noted, your lab router is the Mikrotik hEX at 10.44.0.1.",
    ),
]
OTHER_MARKERS = [r"\b7719\b", r"Bluefin", r"Okafor", r"Harborlight", r"Zdenka", r"10\.44\.0\.1"]
OTHER_QUERIES = ["project codename", "dentist appointment", "which vault are the notes in",
                 "who is my on-call buddy", "home lab router address", "staging Postgres port"]  # fmt: skip


def similar_facts(rng: random.Random) -> list[str]:
    """50 distinct facts about similar things (same services, environments, attributes)."""
    envs = ["staging", "production", "development", "QA", "canary"]
    things = [("PostgreSQL", "port", lambda: str(rng.randint(5400, 5499))),
              ("Redis", "port", lambda: str(rng.randint(6370, 6399))),
              ("Kafka", "broker count", lambda: str(rng.randint(3, 12))),
              ("Elasticsearch", "version", lambda: f"8.{rng.randint(1, 15)}"),
              ("RabbitMQ", "queue limit", lambda: f"{rng.randint(1, 90)}k messages"),
              ("Nginx", "worker count", lambda: str(rng.randint(2, 64))),
              ("MinIO", "bucket quota", lambda: f"{rng.randint(50, 900)} GB"),
              ("Vault", "token TTL", lambda: f"{rng.randint(5, 90)} minutes"),
              ("Grafana", "admin user", lambda: rng.choice(NAMES).lower() + "-admin"),
              ("Celery", "concurrency", lambda: str(rng.randint(2, 32)))]  # fmt: skip
    out = [f"The {env} {name} {attr} is {gen()}." for env in envs for name, attr, gen in things]
    rng.shuffle(out)
    return out


# -- transcripts ----------------------------------------------------------------------------
def transcript(at: datetime, sid: str, failure: tuple[str, ...]) -> list[str]:
    """An OpenClaw session: the ask, a failing tool call, (an explanation and) the fix."""
    _, ask, tool, bad, error, why, good, output = failure[:8]

    def ts(s: int) -> str:
        return (at + timedelta(seconds=s)).strftime("%Y-%m-%dT%H:%M:%S.000Z")

    def args(command: str) -> dict[str, str]:
        return {"command": command} if tool == "exec" else {"path": command}

    def msg(i: int, message: dict[str, Any]) -> dict[str, Any]:
        parent = f"{sid[:8]}{i - 1:04d}" if i > 1 else None
        return {"type": "message", "id": f"{sid[:8]}{i:04d}", "parentId": parent,
                "timestamp": ts(i), "message": message}  # fmt: skip

    first: list[dict[str, Any]] = [{"type": "toolCall", "id": "call_1", "name": tool,
                                    "arguments": args(bad)}]  # fmt: skip
    second: list[dict[str, Any]] = [{"type": "toolCall", "id": "call_2", "name": tool,
                                     "arguments": args(good)}]  # fmt: skip
    if why:
        second.insert(0, {"type": "text", "text": why})
    entries: list[dict[str, Any]] = [
        {"type": "session", "version": 3, "id": sid, "timestamp": ts(0), "cwd": "/srv/orion"},
        msg(1, {"role": "user", "content": [{"type": "text", "text": ask}]}),
        msg(2, {"role": "assistant", "content": first, "stopReason": "toolUse"}),
        msg(3, {"role": "toolResult", "toolCallId": "call_1", "toolName": tool,
                "content": [{"type": "text", "text": error}], "isError": True}),
        msg(4, {"role": "assistant", "content": second, "stopReason": "toolUse"}),
        msg(5, {"role": "toolResult", "toolCallId": "call_2", "toolName": tool,
                "content": [{"type": "text", "text": output}], "isError": False}),
        msg(6, {"role": "assistant", "content": [{"type": "text", "text": "Done."}]}),
    ]  # fmt: skip
    return [json.dumps(e) for e in entries]


# -- the generator --------------------------------------------------------------------------
def _at(rng: random.Random, day: datetime, hour_lo: int = 8, hour_hi: int = 18) -> datetime:
    """A random minute of working hours on ``day`` (START's date + n days)."""
    base = day.replace(hour=0, minute=0)
    return base + timedelta(hours=rng.randint(hour_lo, hour_hi - 1), minutes=rng.randint(0, 59))


def generate(seed: int = 1, variant: str = "eng", weeks: int = 5) -> Scenario:
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}: choose one of {', '.join(VARIANTS)}")
    if weeks < 1:
        raise ValueError("weeks must be at least 1")
    rng = random.Random(f"{variant}:{seed}")
    days = 7 * weeks
    ex: list[Exchange] = []
    day_of = [START + timedelta(days=d) for d in range(days)]
    workdays = [d for d in range(days) if day_of[d].weekday() < 5]

    # facts that change: stated in week 1, changed once or twice later
    bank = {"eng": ENG_FACTS, "data": DATA_FACTS, "home": HOME_FACTS}[variant]
    chosen = rng.sample(bank, k=min(11, len(bank)))
    used: set[str] = {"5432", "6380", "9094", "7719"}
    facts: list[Fact] = []
    twice = set(rng.sample(range(len(chosen)), k=min(5, len(chosen))))
    for i, (key, agent, kind, says, changes, mentions, queries) in enumerate(chosen):
        n_changes = (2 if i in twice else 1) if days >= 14 else 1
        vals = _values(rng, kind, n_changes + 1, used)
        stated = rng.choice([d for d in workdays if d < (5 if weeks > 1 else 3)])
        later = [d for d in workdays if d > stated + 1] or list(range(stated + 1, days))
        if weeks >= 2:
            later = [d for d in later if d < days - 3] or later
        change_days = sorted(rng.sample(later, k=min(n_changes, len(later)))) if later else []
        fact = Fact(key, agent, queries)
        t0 = _at(rng, day_of[stated])
        u, a = rng.choice(says)
        reply = a.format(v=vals[0]) if rng.random() < 0.7 else rng.choice(ACKS)
        ex.append(Exchange(t0, agent, u.format(v=vals[0]), reply, "fact", key))
        fact.values.append((t0, vals[0]))
        for j, d in enumerate(change_days):
            t = _at(rng, day_of[d])
            u, a = rng.choice(changes)
            v, old = vals[j + 1], vals[j]
            ex.append(Exchange(t, agent, u.format(v=v, old=old), a.format(v=v, old=old),
                               "change", key))  # fmt: skip
            fact.values.append((t, v))
        # mentions: the current value in passing, every few workdays
        for d in workdays:
            if d == stated or d in change_days or rng.random() > 0.3:
                continue
            t = _at(rng, day_of[d])
            cur = fact.current(t)
            if cur is None:
                continue
            u, a = rng.choice(mentions)
            ex.append(Exchange(t, agent, u, a.format(v=cur), "mention", key))
        facts.append(fact)

    stable = []
    for key, agent, query, u, a, token in STABLE[variant]:
        said = [_at(rng, day_of[d]) for d in rng.sample(workdays, k=min(3, len(workdays)))]
        stable.append(StableFact(key, agent, query, token, min(said, default=None)))
        ex += [Exchange(t, agent, u, a, "stable", key) for t in said]

    # tasks: given on a workday, most finished two to six days later
    tasks: list[Task] = []
    left_open = set(rng.sample(range(len(TASKS[variant])), k=2))
    for i, (key, agent, gu, ga, du, da, subject, done) in enumerate(TASKS[variant]):
        n, k = rng.randint(400, 899), rng.randint(28, 33)

        def fill(s: str, n: int = n, k: int = k) -> str:
            return s.replace("{n}", str(n)).replace("{k}", str(k))

        given = rng.choice(workdays[: max(1, len(workdays) - 2)])
        t_given = _at(rng, day_of[given])
        ex.append(Exchange(t_given, agent, fill(gu), fill(ga), "task", key))
        finish = [d for d in range(given + 2, min(given + 7, days)) if day_of[d].weekday() < 5]
        done_at = None
        if finish and i not in left_open:
            done_at = _at(rng, day_of[rng.choice(finish)])
            ex.append(Exchange(done_at, agent, fill(du), fill(da), "done", key))
        tasks.append(Task(key, agent, t_given, done_at, fill(subject), done))

    # lessons: session transcripts with a real fix, and trivial slips
    episodes: list[Episode] = []
    transcripts: list[Transcript] = []
    reals = rng.sample(REAL_FAILURES, k=min(7, len(REAL_FAILURES)))
    trivials = rng.sample(TRIVIAL_FAILURES, k=min(6, len(TRIVIAL_FAILURES)))
    failures: list[tuple[tuple[str, ...], bool]] = [(f, True) for f in reals]
    failures += [(f, False) for f in trivials]
    for failure, real in failures:
        agent = rng.choice(AGENTS)
        at = _at(rng, day_of[rng.choice(workdays)])
        sid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        marker = failure[8] if real else re.escape(failure[3])
        episodes.append(Episode(failure[0], agent, at, real, marker))
        transcripts.append(Transcript(at, agent, sid, transcript(at, sid, failure)))

    # chit-chat, work talk and tables fill the days
    chitchat = [s for pair in CHITCHAT for s in pair] + ACKS
    names = [n for n in NAMES if n not in used]
    for d in range(days):
        weekend = day_of[d].weekday() >= 5
        for _ in range(rng.randint(2, 4) if weekend else rng.randint(5, 7)):
            u, a = rng.choice(CHITCHAT)
            ex.append(Exchange(_at(rng, day_of[d], 7, 20), rng.choice(AGENTS), u, a, "chitchat"))
        for _ in range(rng.randint(1, 3) if weekend else rng.randint(10, 13)):
            u, a = rng.choice(WORK)
            p, n = rng.choice(["PAY", "OPS", "WEB", "API"]), rng.randint(100, 999)
            ex.append(Exchange(_at(rng, day_of[d]), rng.choice(AGENTS),
                               u.format(p=p, n=n), a.format(p=p, n=n), "work"))  # fmt: skip
        if not weekend and rng.random() < 0.3:
            u, a = rng.choice(TABLES)
            a = a.format(a=names[0], b=names[1], c=names[2])
            ex.append(Exchange(_at(rng, day_of[d]), rng.choice(AGENTS), u, a, "table"))
    ex.sort(key=lambda e: e.at)

    # what the agents look up: each workday a few of their own facts, tasks and lessons
    searches: list[Search] = []
    for d in workdays:
        for agent in AGENTS:
            own = [q for f in facts if f.agent == agent for q in f.queries]
            own += [s.query for s in stable if s.agent == agent]
            own += ["what do I need to do this week", "open tasks and deadlines"]
            for q in rng.sample(own, k=min(4, len(own))):
                face = "api" if rng.random() < 0.6 else "files"
                searches.append(Search(_at(rng, day_of[d], 9, 17), agent, q, face))
    searches.sort(key=lambda s: s.at)

    other = []
    for d in range(0, days, 2):
        u, a = OTHER_USER_TURNS[(d // 2) % len(OTHER_USER_TURNS)]
        other.append(OtherUserTurn(_at(rng, day_of[d]), u, a))

    memory_md = {
        "dev": "# MEMORY\n\n## Team\n- The user is Ada, the backend lead of the Orion project\n"
        "- Code review happens in GitHub pull requests\n",
        "ops": "# MEMORY\n\n## Team\n- The ops agent looks after the Orion infrastructure\n"
        "- Incidents are tracked in the #incidents channel\n",
    }
    return Scenario(
        seed=seed, variant=variant, weeks=weeks, start=START, facts=facts, stable=stable,
        tasks=tasks, episodes=episodes, exchanges=ex, searches=searches,
        transcripts=sorted(transcripts, key=lambda t: t.at), other_user=other,
        other_markers=OTHER_MARKERS, other_queries=OTHER_QUERIES, chitchat=chitchat,
        memory_md=memory_md, similar=similar_facts(rng),
    )  # fmt: skip
