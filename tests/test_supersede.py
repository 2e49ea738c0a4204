"""Facts with time (issue 31, item 1): a newer fact on the same subject and attribute
supersedes the older one (kept, closed, linked, in history); distinct facts are never
merged. Real model, real store; the LLM path through the fake OpenAI-protocol server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from memoryd.core import Memory
from memoryd.embed import Embedder
from memoryd.extract import Known, NewFact, ThresholdReconciler
from memoryd.extract.claims import Verdict, claim, compare, inner_claims, replaced_value_named
from memoryd.models import Event, Filters, Origin, State
from memoryd.settings import ExtractSettings, Settings
from tests.fake_llm import FakeLLM

PAIRS = json.loads((Path(__file__).parent / "data" / "supersede_pairs.json").read_text())


def _scores(pairs: list[list[str]], embedder: Embedder) -> tuple[float, float, float, list[str]]:
    """Precision and recall of UPDATE (supersede), accuracy over all three labels, and
    the mistakes, deciding each pair as ``Memory.add`` does: through the offline
    reconciler with the real model's similarity."""
    reconciler = ThresholdReconciler(ExtractSettings())
    tp = fp = fn = right = 0
    wrong = []
    for old, new, label in pairs:
        v_old, v_new = embedder.embed([old, new])
        sim = float(v_old @ v_new)
        (d,) = reconciler.decide([NewFact(0, new, v_new, [(Known(0, "m", old), sim)])])
        got = d.event.value
        right += got == label
        tp += got == label == "UPDATE"
        fp += got == "UPDATE" != label
        fn += label == "UPDATE" != got
        if got != label:
            wrong.append(f"{label} -> {got}: {old!r} / {new!r} ({d.reason})")
    return tp / max(1, tp + fp), tp / max(1, tp + fn), right / len(pairs), wrong


def _holds(key: str, embedder: Embedder, precision: float, recall: float) -> None:
    """The pairs under ``key`` are decided with at least this precision and recall of
    UPDATE (printed, with the mistakes)."""
    p, r, accuracy, wrong = _scores(PAIRS[key], embedder)
    print(f"\n{key}: P {p:.3f} R {r:.3f} accuracy {accuracy:.3f}", wrong)
    assert p >= precision and r >= recall, wrong


def test_supersede_precision_and_recall_on_labelled_pairs(embedder: Embedder) -> None:
    assert len(PAIRS["pairs"]) >= 60
    _holds("pairs", embedder, precision=0.95, recall=0.95)
    _holds("held_out", embedder, precision=0.9, recall=0.9)


def test_a_tickets_key_names_what_the_fact_is_about(embedder: Embedder) -> None:
    """Release notes and reviews of two tickets are two facts, though "fixed timezone
    handling" and "draining workers" read as attributes and the keys as their values (weeks,
    home seed 4: every day's release notes superseded the day before's, and a search for
    the streaming plan was shown the latest ticket's notes as what replaced an older one's).
    A change of one ticket's fact still supersedes."""
    _holds("tickets", embedder, precision=1.0, recall=1.0)


def test_names_speakers_ended_values_and_clauses() -> None:
    S, D = Verdict.SUPERSEDES, Verdict.DISTINCT
    # a name of several words is one value, wherever it stands ("Dr. Moreau is ...")
    assert compare("Got it, Dr. Moreau is your dentist from now on.", "My dentist is Dr. Haddad at the Elm Street practice.")[0] == S  # fmt: skip
    assert compare("My GP is Dr. Moreau.", "My dentist is Dr. Haddad at the Elm Street practice.")[0] == D  # fmt: skip
    # the speaker as the subject: "I bank with Barclays" has no other, and an event ("I
    # paged Omar, the platform on-call") or an intention ("I'll send") is not a state
    assert compare("I moved my current account from Barclays to Monzo.", "I bank with Barclays.")[0] == S  # fmt: skip
    assert compare("We migrated billing from MySQL to PostgreSQL.", "The search service uses MySQL.")[0] == D  # fmt: skip
    assert compare("Mei is on call for the data team.", "I paged Omar, the platform on-call, and attached the disk graph.")[0] == D  # fmt: skip
    # a clause that says a value ended names the old value
    assert compare("No more Octopus Energy, we're with EDF now.", "Our electricity supplier is Octopus Energy.")[0] == S  # fmt: skip
    assert compare("Dishoom isn't my favourite anymore, it's Padella now.", "My favourite restaurant is Dishoom.")[0] == S  # fmt: skip
    assert compare("Dishoom isn't open on Mondays anymore, it's shut for repairs.", "My favourite restaurant is Dishoom.")[0] == D  # fmt: skip
    assert compare("I'm done with KLM, use easyJet for flights.", "When you book flights, I prefer KLM.")[0] == S  # fmt: skip
    # a change said in one clause of several, against the memory or a clause of it
    assert compare("The council changed collection, bins go out on Thursday night now.", "Bins go out on Wednesday night.")[0] == S  # fmt: skip
    assert compare("Actually I'm pescatarian now, not vegetarian anymore.", "I'm vegetarian, please keep that in mind for recipes.")[0] == S  # fmt: skip
    assert compare("Recycling goes out on Friday morning now, bins stay on Wednesday.", "Bins go out on Wednesday night.")[0] == D  # fmt: skip
    assert compare("Sold the Honda Civic, we bought a Toyota Corolla last weekend.", "I drive a Honda Civic.")[0] == S  # fmt: skip
    # a change that names the memory's subject more closely, and one that names another
    assert compare("From now on the repeat prescription goes to Boots.", "My prescriptions go to Well Pharmacy on the high street.")[0] == S  # fmt: skip
    assert compare("The repeat prescription goes to Boots.", "My prescriptions go to Well Pharmacy on the high street.")[0] == D  # fmt: skip
    assert compare("The billing service now listens on port 8231.", "The search service listens on port 8230.")[0] == D  # fmt: skip
    assert compare("Nadia took over the Grafana SLO dashboards from the platform team.", "Ravi takes over the platform pager.")[0] == D  # fmt: skip
    assert compare("OK, the home network is NookMesh now.", "Our home wifi network is called Hearth-5G.")[0] == S  # fmt: skip
    assert compare("The home network is NookMesh.", "Our home wifi network is called Hearth-5G.")[0] == D  # fmt: skip
    # the memory's own value named as replaced, a new one in its place and a word in common
    assert compare("Call ext 307 for repairs from today, ext 214 doesn't work anymore.", "The landlord's office number is 020 7946 0000, ext 214.")[0] == S  # fmt: skip
    assert compare("Use 8081 for the dev proxy, 8080 doesn't work anymore.", "Grafana listens on 8080.")[0] == D  # fmt: skip
    # a change verb's plural object names what changed; after an article a verb is a noun
    assert compare("I've switched dentists, I see Dr. Moreau now.", "My dentist is Dr. Lindqvist at the Elm Street practice.")[0] == S  # fmt: skip
    assert compare("I've switched dentists, I see Dr. Moreau now.", "My GP is Dr. Lindqvist.")[0] == D  # fmt: skip
    assert "pescatarian" in claim("I've gone pescatarian since the start of the month.").slot
    # an order from now on changes a preference or an order for its verb, and nothing else
    assert compare("Book easyJet from now on, I joined their loyalty scheme.", "When you book flights, I prefer British Airways.")[0] == S  # fmt: skip
    assert compare("Book KLM from now on, I joined their loyalty scheme.", "Book easyJet from now on, I joined their loyalty scheme.")[0] == S  # fmt: skip
    assert compare("Book TAP Air from now on, I joined their loyalty scheme.", "Book club meets at Marlowe Books on the first Thursday.")[0] == D  # fmt: skip
    assert compare("Book club has moved to Marlowe Books.", "Book British Airways from now on, I joined their loyalty scheme.")[0] == D  # fmt: skip
    assert compare("I'm done with KLM, use easyJet for flights.", "Book KLM from now on, I joined their loyalty scheme.")[0] == S  # fmt: skip
    # "7:30 pm" and "7:15 am" are two times of one thing
    assert compare("They moved spin to 7:30 pm, same day.", "They moved spin to 7:15 am, same day.")[0] == S  # fmt: skip


def test_supersede_on_a_personal_assistants_facts(embedder: Embedder) -> None:
    """Off the engineering words the rules were first written with: doctors, bins, banks
    and lessons, where values are names of several words ("Virgin Media", "Dr. Patel"),
    the subject is often the speaker ("I bank with Barclays") and a change names what
    ended ("No more Tesco, ..."). A distinct fact must never be taken for a change; the
    changes the words cannot link ("We switched broadband from Virgin Media to Sky" after
    "Our internet provider is Virgin Media") stay two memories."""
    assert len(PAIRS["personal"]) >= 30
    _holds("personal", embedder, precision=1.0, recall=0.8)
    _holds("personal_held_out", embedder, precision=1.0, recall=0.6)


def test_supersede_when_a_verb_names_the_attribute(embedder: Embedder) -> None:
    """ "Application logs are kept for 14 days in Loki." and "We extended Loki retention
    to 31 days." are one attribute said two ways: a verb with its preposition ("kept for",
    "expire after", "capped at", "every") names the attribute a noun names elsewhere.
    "Application logs" and "audit logs" stay two subjects, "kept for 7 days" and "run
    every 6 hours" two attributes. Before the rules knew these verbs: development P 0.571
    R 0.333, held-out P 0.333 R 0.143."""
    assert len(PAIRS["wording"]) >= 20
    _holds("wording", embedder, precision=1.0, recall=0.65)
    _holds("wording_held_out", embedder, precision=1.0, recall=0.85)
    S, D = Verdict.SUPERSEDES, Verdict.DISTINCT
    old = "Application logs are kept for 14 days in Loki."
    assert compare("We extended Loki retention to 31 days.", old)[0] == S
    assert compare("Got it, log retention is 31 days now.", old)[0] == S
    assert compare("Audit logs are kept for 365 days in Loki.", old)[0] == D
    # values of an attribute the memory does not name are not a new value of it: the pool
    # timeout says nothing new of the HTTP library (the library's chain ended there)
    pool = "The ingestion service's httpx client has a 30 second pool timeout; I lowered it to 10."
    assert compare(pool, "We switched the ingestion service from aiohttp to httpx this morning.")[0] == D  # fmt: skip
    assert compare(pool, "Ingestion is on httpx now, the migration landed.")[0] == D
    assert compare("Ingestion is on pycurl now, the migration landed.", "We switched the ingestion service from aiohttp to httpx this morning.")[0] == S  # fmt: skip
    # a verb names its attribute only with the word that says so after it
    assert claim("Logs are kept in Loki.").attributes == set()
    assert claim("Logs are kept for 14 days.").attributes == {"retention"}
    assert claim("The events topic in Kafka keeps 72 hours of data.").attributes == {"retention"}
    assert compare("Kafka events retention is 96 hours from today.", "The events topic in Kafka keeps 72 hours of data.")[0] == S  # fmt: skip
    assert claim("Backups run every 6 hours.").attributes == {"interval"}


def test_a_change_said_by_when_it_began() -> None:
    """ "I've gone vegetarian since the start of the month" and "The new car is a Honda
    Civic" announce a change as surely as "now" does; "since" giving a reason does not."""
    assert claim("I've gone vegetarian since the start of the month.").changes
    assert claim("The team has gone fully remote.").changes
    assert claim("We've used Vault since March.").changes
    assert not claim("Since the API is slow, we cache the results.").changes
    assert not claim("I have the car keys.").changes
    assert compare("The new car is a Honda Civic.", "Noted, your car is a Toyota Corolla.")[0] == Verdict.SUPERSEDES  # fmt: skip
    assert compare("The new intern is Priya.", "Noted, your car is a Toyota Corolla.")[0] == Verdict.DISTINCT  # fmt: skip


def test_a_persons_habit_is_named_by_its_verb(embedder: Embedder) -> None:
    """ "I drive a Kia Niro now" gives "I drive a Toyota Corolla" a new value: with no noun
    for what the value is of, the verb of the same person says it, once said to change.
    Someone else's habit, or one more value of the verb not said to replace the first,
    stays a fact of its own."""
    _holds("habits", embedder, precision=1.0, recall=0.7)
    S, D = Verdict.SUPERSEDES, Verdict.DISTINCT
    assert claim("I drive a Toyota Corolla.").verb == "household:drive:a"
    assert claim("Got it, you drive a Kia Niro now.").verb == "household:drive:a"
    assert claim("We live in Leeds.").verb == "household:live:in"
    assert claim("My sister drives a Kia Niro.").verb == ""
    assert claim("I'm vegan.").verb == claim("We have a Kia Niro.").verb == ""
    assert compare("I drive a Kia Niro now.", "I drive a Toyota Corolla.")[0] == S
    assert compare("I drive a Kia Niro.", "I drive a Toyota Corolla.")[0] == D
    assert compare("He drives a Kia Niro now.", "I drive a Toyota Corolla.")[0] == D
    # the speaker's habit is not already said by a memory of someone else's
    assert compare("I drive a Kia Niro now.", "My sister drives a Kia Niro now.")[0] == D
    assert compare("I drive a Kia Niro.", "Noted, you drive a Kia Niro.")[0] == Verdict.SAME
    # the value joined to the verb another way is another habit of it
    assert compare("I drive to work now.", "I drive a Toyota Corolla.")[0] == D
    assert compare("I drive to work now.", "I drive a Ford.")[0] == D
    assert compare("I take the 17:50 train home.", "I take the 7:42 train to work.")[0] == D


def test_qualifiers_attributes_and_values_decide() -> None:
    assert compare("The staging PostgreSQL port is 5434.", "The production PostgreSQL port is 5432.")[0] == Verdict.DISTINCT  # fmt: skip
    assert compare("Staging moved to port 6432.", "The staging database is on port 5432.")[0] == Verdict.SUPERSEDES  # fmt: skip
    assert compare("Mei owns the search service now.", "Ravi owns the search service.")[0] == Verdict.SUPERSEDES  # fmt: skip
    assert compare("Ravi owns the billing service.", "Ravi owns the search service.")[0] == Verdict.DISTINCT  # fmt: skip
    assert compare("The user prefers bullet lists.", "The user prefers dark mode.")[0] == Verdict.DISTINCT  # fmt: skip
    assert compare("Staging DB runs on port 5433.", "The staging database runs on port 5433.")[0] == Verdict.SAME  # fmt: skip
    # an acknowledgement in front is not part of the fact; a unit names the attribute
    assert compare("Understood, the gateway timeout is 75 seconds now.", "We changed the API gateway timeout to 20 seconds.")[0] == Verdict.SUPERSEDES  # fmt: skip
    assert compare("Understood, cache Redis now has 24 GB of maxmemory.", "Cache Redis maxmemory is 12 GB now.")[0] == Verdict.SUPERSEDES  # fmt: skip
    # after a change verb the subject runs to "to": two changes of two subjects
    assert compare("We bumped the CI runners to 7 parallel jobs.", "We upgraded the backend services to Python 3.10.")[0] == Verdict.DISTINCT  # fmt: skip
    # an id on the subject side names the subject: two tickets fixed are two facts
    assert compare("PAY-101 is fixed; refunds now round half to even.", "PAY-100 is fixed; refunds now round half to even.")[0] == Verdict.DISTINCT  # fmt: skip
    assert compare("Ravi owns PAY-101.", "Ravi owns PAY-100.")[0] == Verdict.DISTINCT  # fmt: skip
    # with no relation and no attribute, an id names what the sentence is about
    assert compare("Let's look at WEB-660, the slow search on the admin page.", "Let's look at WEB-212, the slow search on the admin page.")[0] == Verdict.DISTINCT  # fmt: skip
    assert compare("Staging host: stg-db-4", "Staging host: stg-db-2")[0] == Verdict.SUPERSEDES  # fmt: skip
    # a snake_case name is a value like an id with a digit ("curated_v2" / "gold_tables")
    assert compare("Curated tables are in gold_tables from today.", "Understood, curated tables live in curated_v2 now.")[0] == Verdict.SUPERSEDES  # fmt: skip
    # "from X to Y" after the change verb's object; a client library names what is used
    assert compare("Ingestion is on aiohttp now, the migration landed.", "We switched the ingestion service from httpx to pycurl this morning.")[0] == Verdict.SUPERSEDES  # fmt: skip
    assert compare("Great, ingestion's HTTP client library is aiohttp from now on.", "Understood, the ingestion service now uses pycurl for HTTP.")[0] == Verdict.SUPERSEDES  # fmt: skip
    assert compare("The SLO dashboards belong to Nadia now.", "Ana is the owner of the SLO dashboards.")[0] == Verdict.SUPERSEDES  # fmt: skip
    assert compare("Ticket PAY-100 is assigned to Mei now.", "Ticket PAY-100 is assigned to Ravi.")[0] == Verdict.SUPERSEDES  # fmt: skip
    # "X, not Y" names the value replaced, even when the memory names the subject more fully
    assert compare("Alerts post in #dq-pager from today, not #pipeline-alerts.", "Pipeline alerts go to the #pipeline-alerts Slack channel.")[0] == Verdict.SUPERSEDES  # fmt: skip
    assert compare("Alerts post in #dq-pager from today, not #pipeline-alerts.", "Incidents are tracked in the #incidents channel.")[0] == Verdict.DISTINCT  # fmt: skip
    # "at most" names a limit, "took over" an owner
    assert compare("We set the backfill limit to 14 days.", "Backfills may reprocess at most 60 days of data.")[0] == Verdict.SUPERSEDES  # fmt: skip
    assert compare("The build timeout is 60 minutes.", "The build takes at most 20 minutes.")[0] == Verdict.DISTINCT  # fmt: skip
    assert compare("Chidi took over the ingestion pipelines this week.", "Kenji owns the ingestion pipelines.")[0] == Verdict.SUPERSEDES  # fmt: skip
    assert compare("Chidi took over the ingestion pipelines this week.", "Kenji owns the billing service.")[0] == Verdict.DISTINCT  # fmt: skip
    # "ask X about Y" names who owns Y; a head noun ("pipelines") does not make another subject
    assert compare("Chidi took over the ingestion pipelines this week.", "Ask Leo about ingestion from now on, not Kenji.")[0] == Verdict.SUPERSEDES  # fmt: skip
    assert compare("Chidi owns the billing service.", "Ask Leo about ingestion.")[0] == Verdict.DISTINCT  # fmt: skip
    # a preamble before a colon introduces the fact
    assert compare("We finished the migration: the analytics warehouse is Redshift now.", "Our analytics warehouse is BigQuery.")[0] == Verdict.SUPERSEDES  # fmt: skip
    # a role after "is" makes the name before it the value, as "owns" does
    assert compare("Understood, Ravi is now the platform on-call engineer.", "Omar is on call this week for the platform team.")[0] == Verdict.SUPERSEDES  # fmt: skip
    assert compare("On-call handover: Ravi takes over the platform pager from today.", "Omar is on call this week for the platform team.")[0] == Verdict.SUPERSEDES  # fmt: skip
    assert compare("Mei is on call for the data team.", "Omar is on call this week for the platform team.")[0] == Verdict.DISTINCT  # fmt: skip
    assert compare("Chidi owns the ingestion pipelines now.", "Kenji is the ingestion pipeline owner.")[0] == Verdict.SUPERSEDES  # fmt: skip
    # days are values of a schedule
    assert compare("Production deploys now happen on Tuesday afternoons.", "Production deploys happen on Wednesday afternoons only.")[0] == Verdict.SUPERSEDES  # fmt: skip
    # a way of writing ("prose paragraphs", "numbered checklists") is a format; "give me X
    # as Y" and "written as Y" make Y the value
    assert compare("Actually I changed my mind: I prefer numbered checklists for status updates now.", "Please give me status updates as short prose paragraphs, that's easiest for me to read.")[0] == Verdict.SUPERSEDES  # fmt: skip
    assert compare("Noted, status updates will be written as numbered checklists from now on.", "Understood, I'll write your status updates as short prose paragraphs.")[0] == Verdict.SUPERSEDES  # fmt: skip
    assert compare("Write the incident report as a PDF.", "Please give me status updates as short prose paragraphs.")[0] == Verdict.DISTINCT  # fmt: skip
    assert compare("The API timeout is 30 seconds now.", "The API returns JSON.")[0] == Verdict.DISTINCT  # fmt: skip


def test_a_value_named_in_passing_is_out_of_date_once_replaced() -> None:
    """Promotion's check for a line that is about something else but names a replaced
    value: it must share what the value is of, be about the same environment, and not
    name the new value (the change itself)."""
    old, new = "Our analytics warehouse is BigQuery.", "Analytics moved from BigQuery to Snowflake."
    query = "The weekly revenue query scans the events table in the BigQuery warehouse."
    assert replaced_value_named(query, old, new) == "bigquery"
    old, new = "Please give me status updates as short prose paragraphs.", "I prefer numbered checklists for status updates now."  # fmt: skip
    assert replaced_value_named("Here is today's status update, written as short prose paragraphs as you prefer.", old, new) in {"prose", "paragraph"}  # fmt: skip
    assert replaced_value_named("Here is today's status update, written as numbered checklists as you prefer.", old, new) is None  # fmt: skip
    assert replaced_value_named("The warehouse moved from BigQuery to Snowflake.", old, new) is None  # fmt: skip
    assert (
        replaced_value_named("The BigQuery export job failed.", old, new) is None
    )  # no "warehouse"
    port, moved = "The staging database is on port 5432.", "Staging moved to port 6432."
    assert replaced_value_named("The staging database backups connect on port 5432.", port, moved) == "5432"  # fmt: skip
    assert replaced_value_named("The production database uses port 5432 too.", port, moved) is None  # fmt: skip


SERVICES = ["search", "ingest", "billing", "auth", "gateway"]
ENVS = ["staging", "production"]
OWNERS = ["Ravi", "Mei", "Leo", "Kenji", "Sofia", "Omar", "Priya", "Tom", "Ana", "Jon"]


def _distinct_facts() -> list[str]:
    """50 facts about similar things: five services, two environments, five attributes."""
    facts = []
    for s, service in enumerate(SERVICES):
        for e, env in enumerate(ENVS):
            n = s * 2 + e
            facts += [
                f"The {env} {service} service runs on port {9200 + 100 * s + e}.",
                f"The {env} {service} service has {2 + n} replicas.",
                f"The {env} {service} service uses Python 3.{8 + n % 5}.",
                f"The owner of the {env} {service} service is {OWNERS[n]}.",
                f"The {env} {service} service timeout is {10 + 5 * n} seconds.",
            ]
    return facts


CHANGES = [  # (index of the fact it changes, the new fact)
    (0, "The staging search service moved to port 9250."),
    (6, "The production search service now has 8 replicas."),
    (12, "The staging ingest service was upgraded to Python 3.13."),
    (18, "The owner of the production ingest service is now Ana."),
    (24, "The staging billing service timeout was lowered to 5 seconds."),
    (25, "The production billing service now runs on port 9450."),
    (31, "The staging auth service was scaled to 12 replicas."),
    (38, "The owner of the production auth service is Jon now."),
    (44, "The staging gateway service timeout is now 90 seconds."),
    (45, "The production gateway service moved to port 9650."),
]


def test_fifty_distinct_facts_stay_and_ten_changes_supersede(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    facts = _distinct_facts()
    assert len(set(facts)) == 50
    ids = []
    for fact in facts:
        (event,) = memory.add(fact, user_id="u", agent_id="ops", infer=True)
        assert event.event == Event.ADD, (fact, event)
        ids.append(event.id)
        clock.advance(minutes=5)
    assert memory.count(Filters(user_id="u")) == 50

    clock.advance(days=3)
    changed_at = clock()
    for n, text in CHANGES:
        (event,) = memory.add(text, user_id="u", agent_id="ops", infer=True)
        assert (event.event, event.previous_memory) == (Event.UPDATE, facts[n]), text
        old = memory.get(ids[n])
        assert old.state == State.SUPERSEDED and old.superseded_by == event.id
        assert old.valid_until == changed_at
        new = memory.get(event.id)  # type: ignore[arg-type]
        assert new.metadata["supersedes"] == ids[n] and new.valid_from == changed_at
        assert new.origin == Origin.FACT and new.state == State.ACTIVE
        assert [h.event for h in memory.history(ids[n])] == [Event.ADD, Event.SUPERSEDE]
    # 50 current facts (40 untouched, 10 new values), 10 superseded kept
    assert memory.count(Filters(user_id="u")) == 50
    assert memory.count(Filters(user_id="u", states=[State.SUPERSEDED])) == 10

    old_text, new_text = facts[0], CHANGES[0][1]
    hits = memory.search("staging search service port", user_id="u", agent_id="ops")
    texts = [h.text for h in hits]
    assert texts[0] == new_text and old_text not in texts
    wide = memory.search(
        "staging search service port", user_id="u", agent_id="ops", include_superseded=True
    )
    assert old_text in [h.text for h in wide]
    # as of a day before the change: the old value, not the new one
    then = memory.search(
        "staging search service port",
        user_id="u",
        agent_id="ops",
        as_of=changed_at - timedelta(days=1),
    )
    assert then[0].text == old_text and new_text not in [h.text for h in then]
    combined = memory.search_combined("staging search service port", user_id="u", agent_id="ops")
    assert old_text not in [h.text for h in combined.results]


def test_the_same_change_twice_is_known_and_a_third_value_supersedes_again(
    memory: Memory, clock
) -> None:  # type: ignore[no-untyped-def]
    first = memory.add("The staging database is on port 5432.", user_id="u", infer=True)[0]
    clock.advance(days=7)
    second = memory.add("Staging Postgres moved to port 6432.", user_id="u", infer=True)[0]
    again = memory.add("Staging Postgres moved to port 6432.", user_id="u", infer=True)[0]
    assert second.event == Event.UPDATE and (again.event, again.id) == (Event.NONE, second.id)
    clock.advance(days=7)
    third = memory.add("The staging database port changed to 6543.", user_id="u", infer=True)[0]
    assert third.event == Event.UPDATE and third.previous_memory == second.memory
    chain = [memory.get(i) for i in (first.id, second.id, third.id)]  # type: ignore[arg-type]
    assert [r.state for r in chain] == [State.SUPERSEDED, State.SUPERSEDED, State.ACTIVE]
    assert chain[0].superseded_by == chain[1].id and chain[1].superseded_by == chain[2].id
    assert chain[0].valid_until == chain[1].valid_from
    current = memory.list(user_id="u")
    assert [r.text for r in current] == ["The staging database port changed to 6543."]


def test_a_change_replaces_the_current_value_through_the_older_one_it_names(
    memory: Memory, clock
) -> None:  # type: ignore[no-untyped-def]
    """The current value may not name what it is a value of: "Sold the Toyota Corolla, we
    bought a Honda Civic" replaced "I drive a Toyota Corolla". The next change, "I drive a
    Kia Niro now", names the attribute only as that older value did: it is compared with
    the current value through it, and replaces it. Before, the Kia Niro was added beside
    the Honda Civic (the weeks scenario's car at week 5: "Sold the Toyota Corolla, ..."
    answered "what car do I drive")."""
    first = memory.add("I drive a Toyota Corolla.", user_id="u", infer=True)[0]
    clock.advance(days=6)
    sold = "Sold the Toyota Corolla, we bought a Honda Civic last weekend."
    second = memory.add(sold, user_id="u", infer=True)[0]
    assert second.event == Event.UPDATE and second.previous_memory == first.memory
    clock.advance(days=1)
    # someone else's car is another fact, whatever the older value says
    sister = memory.add("My sister drives a Ford Fiesta now.", user_id="u", infer=True)[0]
    assert sister.event == Event.ADD
    clock.advance(days=4)
    third = memory.add("I drive a Kia Niro now.", user_id="u", infer=True)[0]
    assert third.event == Event.UPDATE and third.previous_memory == sold
    current = {r.text for r in memory.list(user_id="u")}
    assert current == {"I drive a Kia Niro now.", "My sister drives a Ford Fiesta now."}
    chain = [memory.get(i) for i in (first.id, second.id, third.id)]  # type: ignore[arg-type]
    assert [r.state for r in chain] == [State.SUPERSEDED, State.SUPERSEDED, State.ACTIVE]
    assert chain[1].superseded_by == chain[2].id


# -- with an LLM: the same contract ----------------------------------------------------------
@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


def test_an_llm_update_supersedes_too(
    settings: Settings, embedder: Embedder, clock, fake: FakeLLM
) -> None:  # type: ignore[no-untyped-def]
    settings.llm.provider = "openai"
    settings.llm.openai.base_url = fake.url
    with Memory(settings, embedder=embedder, clock=clock) as mem:
        fake.script(json.dumps({"facts": ["The ingestion service uses aiohttp."]}))
        (old,) = mem.add("the ingestion service uses aiohttp", user_id="u", infer=True)
        clock.advance(days=2)
        fake.script(
            json.dumps({"facts": ["The ingestion service now uses httpx."]}),
            json.dumps(
                {
                    "decisions": [
                        {
                            "fact": 0,
                            "event": "UPDATE",
                            "id": 0,
                            "text": "The ingestion service uses httpx.",
                            "reason": "switched library",
                        }
                    ]
                }
            ),
        )
        (new,) = mem.add("we moved ingestion to httpx", user_id="u", infer=True)
        assert new.event == Event.UPDATE and new.id != old.id
        kept = mem.get(old.id)  # type: ignore[arg-type]
        assert kept.state == State.SUPERSEDED and kept.superseded_by == new.id
        assert kept.valid_until == clock()
        assert "switched library" in (mem.history(old.id)[-1].reason or "")  # type: ignore[arg-type]
        hits = mem.search("ingestion http library", user_id="u")
        assert [h.text for h in hits] == ["The ingestion service uses httpx."]


# -- every face: HTTP, MCP, CLI (local and --url) ----------------------------------------------
def test_superseded_facts_on_request_on_every_face(
    memory: Memory, clock, live_server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    import httpx
    from typer.testing import CliRunner

    from memoryd.api import create_app
    from memoryd.cli import app
    from tests.mcp_client import McpSession

    old = memory.add("The staging database is on port 5432.", user_id="u", infer=True)[0]
    clock.advance(days=10)
    new = memory.add("The staging database moved to port 6432.", user_id="u", infer=True)[0]
    assert new.event == Event.UPDATE
    query = "staging database port"
    before = (clock() - timedelta(days=5)).isoformat()
    monkeypatch.setenv("HOME", str(tmp_path / "userhome"))
    monkeypatch.setenv("MEMORYD_AUDIT__ENABLED", "false")
    with live_server(create_app(memory=memory)) as server:

        def http(**extra: object) -> list[str]:
            body = {"query": query, "user_id": "u", **extra}
            found = httpx.post(f"{server.url}/memory/search", json=body).json()["results"]
            return [h["id"] for h in found]

        assert old.id not in http() and http()[0] == new.id
        assert old.id in http(include_superseded=True)
        assert http(as_of=before)[0] == old.id and new.id not in http(as_of=before)
        body = {"query": query, "user_id": "u", "include_superseded": True}
        combined = httpx.post(f"{server.url}/memory/search_combined", json=body).json()
        assert old.id in [h["id"] for h in combined["results"]]
        (state,) = [h["state"] for h in http_hits(server.url, query) if h["id"] == old.id]
        assert state == "superseded"

        with McpSession.http(f"{server.url}/mcp", {"X-Memoryd-User": "u"}) as s:
            plain = s.call("memory_search", query=query)["results"]
            wide = s.call("memory_search", query=query, include_superseded=True)["results"]
            then = s.call("memory_search", query=query, as_of=before, tier="long_term")["results"]
        assert old.id not in [h["id"] for h in plain] and old.id in [h["id"] for h in wide]
        assert then[0]["id"] == old.id

        runner = CliRunner()

        def cli(*args: str) -> list[str]:
            result = runner.invoke(
                app, ["search", query, "--user", "u", "--json", "--url", server.url, *args]
            )
            assert result.exit_code == 0, result.output
            return [h["id"] for h in json.loads(result.output)["results"]]

        assert old.id not in cli() and old.id in cli("--include-superseded")
        assert cli("--as-of", before[:10])[0] == old.id


def http_hits(url: str, query: str) -> list[dict]:
    import httpx

    body = {"query": query, "user_id": "u", "include_superseded": True}
    return httpx.post(f"{url}/memory/search", json=body).json()["results"]  # type: ignore[no-any-return]


def test_a_restored_superseded_fact_is_current_again(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    old = memory.add("The cache TTL is 60 seconds.", user_id="u", infer=True)[0]
    clock.advance(days=1)
    new = memory.add("The cache TTL is now 120 seconds.", user_id="u", infer=True)[0]
    assert new.event == Event.UPDATE
    back = memory.restore(old.id)  # type: ignore[arg-type]
    assert back.state == State.ACTIVE and back.valid_until is None and back.superseded_by is None
    assert [h.event for h in memory.history(old.id)] == [Event.ADD, Event.SUPERSEDE, Event.RESTORE]  # type: ignore[arg-type]
    assert back.valid_at(clock())


def test_every_stored_copy_of_the_old_value_is_superseded(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    # two copies of the old value, written verbatim (no reconciliation) by two paths
    a = memory.add("The staging database is on port 5432.", user_id="u")[0]
    b = memory.add("Staging Postgres runs on port 5432.", user_id="u")[0]
    other = memory.add("The production database is on port 5433.", user_id="u")[0]
    clock.advance(days=1)
    new = memory.add("The staging database moved to port 6432.", user_id="u", infer=True)[0]
    assert new.event == Event.UPDATE
    for old in (a, b):
        record = memory.get(old.id)  # type: ignore[arg-type]
        assert record.state == State.SUPERSEDED and record.superseded_by == new.id
    assert memory.get(other.id).state == State.ACTIVE  # type: ignore[arg-type]
    hits = memory.search("staging database port", user_id="u")
    assert hits[0].id == new.id and "5432" not in " ".join(h.text for h in hits)


def test_a_short_term_copy_of_the_old_value_is_superseded_too(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    """Digest keeps a day's facts short-term (run_id the day); the long-term fact and a
    later day's short-term copy say the same old value. A change supersedes both: the
    copy ranked first for "staging database port" before."""
    old = "The staging database is on port 5432."
    long_term = memory.add(old, user_id="u", agent_id="ops", infer=True)[0]
    clock.advance(days=3)
    copy = memory.add(old, user_id="u", agent_id="ops", run_id="2026-03-10", infer=True)[0]
    elsewhere = memory.add(old, user_id="u", agent_id="dev", infer=True)[0]  # another agent
    clock.advance(days=1)
    new = memory.add("The staging database moved to port 6432.", user_id="u", agent_id="ops", infer=True)[0]  # fmt: skip
    assert new.event == Event.UPDATE
    for m in (long_term, copy):
        assert memory.get(m.id).state == State.SUPERSEDED  # type: ignore[arg-type, union-attr]
    assert memory.get(elsewhere.id).state == State.ACTIVE  # type: ignore[arg-type, union-attr]
    hits = memory.search("staging database port", user_id="u", agent_id="ops")
    assert "6432" in hits[0].text, [h.text for h in hits]


def test_a_change_far_in_meaning_supersedes_when_it_names_the_same_attribute(
    memory: Memory, clock
) -> None:  # type: ignore[no-untyped-def]
    """ "Chidi took over the ingestion pipelines" is 0.29 alike to "Ask Leo about ingestion
    from now on, not Kenji." and 0.36 to "Got it, Leo owns ingestion.": the memories that
    share its words are compared too, and superseded when both name the owner. One of
    another subject stays, however many words it shares."""
    said = ["Ask Leo about ingestion from now on, not Kenji.", "Got it, Leo owns ingestion."]
    old = [memory.add(t, user_id="u", agent_id="ops", infer=True)[0] for t in said]
    other = memory.add("Leo owns the billing pipelines.", user_id="u", agent_id="ops", infer=True)[0]  # fmt: skip
    clock.advance(days=2)
    new = memory.add("Chidi took over the ingestion pipelines this week.", user_id="u", agent_id="ops", infer=True)  # fmt: skip
    assert [e.event for e in new] == [Event.UPDATE], new
    for m in old:
        assert memory.get(m.id).state == State.SUPERSEDED  # type: ignore[union-attr]
    assert memory.get(other.id).state == State.ACTIVE  # type: ignore[union-attr]


def test_a_claim_made_within_a_sentence_is_given_its_new_value(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    """ "I told Leo, who owns the ingestion pipelines, and opened a ticket." says who owns
    them in passing; "Omar is the platform on-call; I'll page Omar ..." says it in one of
    two clauses. A change of the owner or the on-call supersedes them; a claim about
    another subject, or an appositive that names no role, does not."""
    assert inner_claims("I told Leo, who owns the ingestion pipelines, and opened a ticket.") == ["Leo owns the ingestion pipelines"]  # fmt: skip
    assert inner_claims("I paged Omar, the platform on-call, and attached the disk graph.") == ["Omar is the platform on-call"]  # fmt: skip
    assert inner_claims("Noted, Omar is the platform on-call; I'll page Omar if an alert fires.") == ["Omar is the platform on-call", "I'll page Omar if an alert fires."]  # fmt: skip
    assert inner_claims("I met Leo, the new guy from Lisbon, at lunch.") == []
    assert inner_claims("Today, the pipeline failed twice.") == []
    cases = [
        (
            "I told Leo, who owns the ingestion pipelines, and opened a ticket.",
            "Chidi took over the ingestion pipelines this week.",
            Event.UPDATE,
        ),
        (
            "I paged Omar, the platform on-call, and attached the disk graph.",
            "On-call handover: Ravi takes over the platform pager from today.",
            Event.UPDATE,
        ),
        (
            "Noted, Omar is the platform on-call; I'll page Omar if an alert fires.",
            "Understood, Ravi is now the platform on-call engineer.",
            Event.UPDATE,
        ),
        (
            "I told Leo, who owns the ingestion pipelines, and opened a ticket.",
            "Kenji owns the billing service.",
            Event.ADD,
        ),
        (
            "I paged Omar, the platform on-call, and attached the disk graph.",
            "Mei is on call for the data team.",
            Event.ADD,
        ),
        (
            "PAY-100 is fixed; refunds now round half to even.",
            "PAY-101 is fixed; refunds now round half to even.",
            Event.ADD,
        ),
        (
            "I met Leo, the new guy from Lisbon, at lunch.",
            "Chidi is the new guy on the data team now.",
            Event.ADD,
        ),
    ]
    for n, (before, after, event) in enumerate(cases):
        old = memory.add(before, user_id=f"u{n}", infer=True)[0]
        clock.advance(days=1)
        new = memory.add(after, user_id=f"u{n}", infer=True)
        assert [e.event for e in new] == [event], (before, after, new)
        state = State.SUPERSEDED if event == Event.UPDATE else State.ACTIVE
        assert memory.get(old.id).state == state, (before, after)  # type: ignore[union-attr]


def test_a_change_far_in_meaning_but_naming_the_subject_is_compared(embedder: Embedder) -> None:
    """ "From now on the repeat prescription goes to Superdrug." is 0.45 similar to "My
    prescriptions go to Well Pharmacy on the high street." (MiniLM): compared from
    ``supersede_similarity`` (0.35) up, the words decide, and they find a change."""
    old = "My prescriptions go to Well Pharmacy on the high street."
    new = "From now on the repeat prescription goes to Superdrug."
    v_old, v_new = embedder.embed([old, new])
    sim = float(v_old @ v_new)
    assert 0.35 <= sim < 0.5
    settings = ExtractSettings()
    (d,) = ThresholdReconciler(settings).decide(
        [NewFact(0, new, v_new, [(Known(0, "m", old), sim)])]
    )
    assert d.event == Event.UPDATE, d.reason
    strict = ExtractSettings(supersede_similarity=0.5)
    (d,) = ThresholdReconciler(strict).decide([NewFact(0, new, v_new, [(Known(0, "m", old), sim)])])
    assert d.event == Event.ADD  # the gate it had before: never compared


def test_an_order_from_now_on_is_compared_with_the_preference_it_changes(
    embedder: Embedder,
) -> None:
    """ "Book TAP Air from now on, I joined their loyalty scheme." is only 0.34 similar to
    "When you book flights, I prefer KLM.": below ``supersede_similarity``, an order is
    compared with a preference or an order naming its verb (``claims.linked``), and
    supersedes it; "Book club meets at Marlowe Books ..." names no preference."""
    new = "Book TAP Air from now on, I joined their loyalty scheme."
    reconciler = ThresholdReconciler(ExtractSettings())
    for old, event in (
        ("When you book flights, I prefer KLM.", Event.UPDATE),
        ("Book club meets at Marlowe Books on the first Thursday.", Event.ADD),
    ):
        v_old, v_new = embedder.embed([old, new])
        sim = float(v_old @ v_new)
        assert sim < ExtractSettings().supersede_similarity
        (d,) = reconciler.decide([NewFact(0, new, v_new, [(Known(0, "m", old), sim)])])
        assert d.event == event, (old, d.reason)
