"""Newer evidence first (memoryd.search.current): of two hits that answer one question
differently, the newer ranks first; which hits come back never changes, and hits the
words tell apart (another environment, another named thing) keep their order.
Real model, real store (SQLite, and PostgreSQL with MEMORYD_TEST_PG=1)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memoryd.core import Memory
from memoryd.extract.claims import claim
from memoryd.models import MemoryRecord, ScoreParts, SearchHit
from memoryd.search.current import (
    Evidence,
    asked_attribute_first,
    asks_for,
    newer_first,
    query_terms,
    stating_first,
)
from memoryd.search.text import names_in
from memoryd.settings import SearchSettings
from tests.conftest import FakeClock


def _said(memory: Memory, clock: FakeClock, *texts: str, days: int) -> None:
    clock.now = datetime(2026, 3, 2, 9, tzinfo=UTC) + timedelta(days=days)
    for text in texts:
        memory.add(text, user_id="u")


def _texts(memory: Memory, query: str, **how: object) -> list[str]:
    return [h.text for h in memory.search(query, user_id="u", top_k=5, **how)]


def test_the_newer_value_of_one_thing_comes_first(memory: Memory, clock: FakeClock) -> None:
    _said(
        memory,
        clock,
        "Noted, Omar is the platform on-call; I'll page Omar if an alert fires.",
        days=0,
    )
    _said(memory, clock, "Got it, platform on-call is Kenji now.", days=9)
    _said(memory, clock, "The ingestion service uses aiohttp for its HTTP calls.", days=1)
    _said(memory, clock, "Great, ingestion's HTTP client library is httpx from now on.", days=12)
    clock.now = datetime(2026, 3, 20, 9, tzinfo=UTC)

    oncall = _texts(memory, "who is on call for the platform team")
    assert "Kenji" in oncall[0], oncall
    assert any("Omar" in t for t in oncall)  # the old statement stays findable, below
    http = _texts(memory, "which HTTP library does the ingestion service use")
    assert "httpx" in http[0], http

    # the same search with the rule off: the older statement ranked first (so the rule,
    # not recency decay, put the newer one first)
    memory.settings.search = SearchSettings(newer_first_similarity=1.0)
    off = _texts(memory, "which HTTP library does the ingestion service use")
    assert "aiohttp" in off[0], off
    assert set(off) == set(http)  # the same hits, only their order differs


def test_what_the_words_tell_apart_keeps_its_order(memory: Memory, clock: FakeClock) -> None:
    _said(memory, clock, "The production PostgreSQL database listens on port 5432.", days=0)
    _said(memory, clock, "The staging PostgreSQL database listens on port 6432.", days=10)
    _said(memory, clock, "Team Atlas holds its standup at 9:30 every morning.", days=0)
    _said(memory, clock, "Team Orion holds its standup at 10:00 every morning.", days=10)
    clock.now = datetime(2026, 3, 20, 9, tzinfo=UTC)

    port = _texts(memory, "which port does the production PostgreSQL database listen on")
    assert "production" in port[0], port
    standup = _texts(memory, "when does Team Atlas hold its standup")
    assert "Atlas" in standup[0], standup


def test_a_search_as_of_a_past_day_is_left_alone(memory: Memory, clock: FakeClock) -> None:
    _said(memory, clock, "The ingestion service uses aiohttp for its HTTP calls.", days=0)
    _said(memory, clock, "Great, ingestion's HTTP client library is httpx from now on.", days=12)
    clock.now = datetime(2026, 3, 20, 9, tzinfo=UTC)
    query = "which HTTP library does the ingestion service use"
    now = _texts(memory, query)
    past = _texts(memory, query, as_of=datetime(2026, 3, 30, tzinfo=UTC))
    assert "httpx" in now[0]
    memory.settings.search = SearchSettings(newer_first_similarity=1.0)
    assert past == _texts(memory, query, as_of=datetime(2026, 3, 30, tzinfo=UTC))


def test_another_thing_of_one_subject_keeps_its_order(memory: Memory, clock: FakeClock) -> None:
    _said(memory, clock, "Ravi owns the search service and its on-call rota.", days=0)
    _said(memory, clock, "Ravi owns the billing service and its on-call rota.", days=10)
    clock.now = datetime(2026, 3, 20, 9, tzinfo=UTC)
    owner = _texts(memory, "who owns the search service")
    assert "search" in owner[0], owner
    # "belong to" names the owner: a newer line about the dashboard's panel says nothing
    # of who owns it and stays below
    _said(memory, clock, "Understood, the SLO dashboards belong to Nadia now.", days=0)
    _said(memory, clock, "The latency panel on the SLO dashboard is empty.", days=10)
    clock.now = datetime(2026, 3, 20, 9, tzinfo=UTC)
    dashboards = _texts(memory, "SLO dashboard owner")
    assert "Nadia" in dashboards[0], dashboards


def _ordered(memory: Memory, query: str, older: str, newer: str) -> list[str]:
    """``older`` (said six days before ``newer``, scored a little higher) and ``newer`` as
    newer-first orders them for ``query``."""
    hits = _hits((older, 0.80), (newer, 0.78))
    found = newer_first(
        hits,
        [Evidence(when=0.0), Evidence(when=6 * 86400.0)],
        lambda: memory.embed_texts([h.text for h in hits]),
        names_in(query),
        query_terms(query),
        similarity=0.3,
        margin=0.25,
        gap_hours=1.0,
    )
    return [h.text for h in found]


def test_a_change_of_something_else_keeps_its_order(memory: Memory) -> None:
    """A newer change passes an older statement only when it says some of what the query
    asks that the older one says, outside the value it names as replaced (the controls: a
    change of the asked thing passes)."""
    cases = [
        (
            "backfill window",
            "Got it, the backfill window is 11 days.",
            "We changed the events topic retention to 96 hours.",
            "We changed the backfill window to 14 days.",
        ),
        (
            "Airflow ETL schedule",
            "Got it, ETL start is 5:40 UTC.",
            "Alerts post in #data-alerts from today, not #etl-oncall.",
            "The ETL starts at 1:50 UTC from today, not 5:40.",
        ),
        # it says "timeout", but of another subject than the gateway the query names
        (
            "gateway request timeout",
            "Understood, the gateway timeout is 40 seconds now.",
            "The ingestion service's aiohttp client has a 30 second pool timeout; I lowered it to 10.",
            "The API gateway timeout is 20 seconds from today.",
        ),
    ]
    for query, older, other, change in cases:
        assert _ordered(memory, query, older, other)[0] == older, query
        assert _ordered(memory, query, older, change)[0] == change, query


def test_words_compare_by_stem_and_as_one_word(memory: Memory, clock: FakeClock) -> None:
    """The newer hit says the query's words though in another form: "paged" is "page",
    "timeout" is "times out" (the rule once compared surface words and held these back)."""
    _said(memory, clock, "Noted, the API gateway times out requests after 40 seconds.", days=0)
    _said(memory, clock, "The API gateway timeout is 45 seconds.", days=10)
    _said(memory, clock, "Noted, Omar is on call; I'll page Omar if an alert fires.", days=0)
    _said(
        memory, clock, "The disk alert fired at night and I paged Kenji, who is on call.", days=10
    )
    clock.now = datetime(2026, 3, 20, 9, tzinfo=UTC)
    timeout = "how long before the API gateway times out"
    page = "who should I page for an alert"
    on = {q: _texts(memory, q) for q in (timeout, page)}
    memory.settings.search = SearchSettings(newer_first_similarity=1.0)
    off = {q: _texts(memory, q) for q in (timeout, page)}
    assert "40 seconds" in off[timeout][0], off  # without the rule the older one leads
    assert "Omar" in off[page][0], off
    assert "45 seconds" in on[timeout][0], on
    assert "Kenji" in on[page][0], on


def test_a_newer_request_does_not_pass_what_was_said(memory: Memory) -> None:
    """ "Send me today's data quality report" asks for the report; it says nothing about how
    the user wants it, and, newer, must not move above the preference that does (which a
    newer statement would pass: the control)."""
    said = "The data quality report comes as numbered checklists."
    newer = {
        "request": "Send me today's data quality report.",
        "statement": "The data quality report goes out as short prose paragraphs.",
    }
    query = "how does the user want the data quality report"
    order = {kind: _ordered(memory, query, said, text) for kind, text in newer.items()}
    assert order["request"][0] == said, order
    assert order["statement"][0] == newer["statement"], order
    # a request that says the query's word, close in meaning, is a request all the same
    said = "OK, your plan is Netflix Basic now."
    newer = {
        "request": "Plan a Netflix movie night for this week.",
        "statement": "The plan is Netflix Premium from today.",
    }
    order = {
        kind: _ordered(memory, "which plan do we have", said, text) for kind, text in newer.items()
    }
    assert order["request"][0] == said, order
    assert order["statement"][0] == newer["statement"], order


def test_a_newer_hit_that_repeats_what_a_change_set_does_not_pass_it(memory: Memory) -> None:
    """ "Here are five pescatarian dinners for the week." repeats the value "Actually I'm
    pescatarian now, not vegetarian anymore." set: nothing newer to tell, and the change is
    the answer. A newer hit with another value passes it (the control), and so does one
    that says the change's old value again ("vegetarian" is back)."""
    query = "what diet do I follow"
    change = "Actually I'm pescatarian now, not vegetarian anymore."
    newer = {
        "repeats": "Here are five pescatarian dinners for the week.",
        "another": "Actually I'm vegan now, not pescatarian anymore.",
        "old again": "I'm vegetarian again, please plan dinners with that in mind.",
    }
    order = {kind: _ordered(memory, query, change, text)[0] for kind, text in newer.items()}
    assert order == {
        "repeats": change,
        "another": newer["another"],
        "old again": newer["old again"],
    }


def _hits(*scored: tuple[str, float]) -> list[SearchHit]:
    return [
        SearchHit(
            id=str(n),
            text=t,
            score=s,
            parts=ScoreParts(),
            record=MemoryRecord(id=str(n), text=t, user_id="u"),
        )
        for n, (t, s) in enumerate(scored)
    ]


def test_a_hit_that_states_the_asked_attribute_passes_hits_that_state_another() -> None:
    """bench/weeks (eng seed 21, week 4): "Kenji took over the Grafana SLO dashboards from
    the platform team." (an owner, newer, every word of the query but one) ranked above
    "Understood, Bruno is now the platform on-call engineer." for "who is on call for the
    platform team". A hit that names no attribute is not passed; nor is one too far above."""
    asked = frozenset(claim("who is on call for the platform team").attributes)
    assert asked == {"on-call"}
    owner = "Kenji took over the Grafana SLO dashboards from the platform team."
    oncall = "Understood, Bruno is now the platform on-call engineer."
    neutral = "The platform team meets on Mondays."
    found = asked_attribute_first(_hits((owner, 0.724), (oncall, 0.718)), asked, margin=0.1)
    assert [h.text for h in found] == [oncall, owner]
    assert [h.score for h in found] == [0.724, 0.724]  # scores stay in rank order
    # another attribute, too far above: kept; a hit that names none: kept
    assert [h.text for h in asked_attribute_first(
        _hits((owner, 0.9), (oncall, 0.7)), asked, margin=0.1)] == [owner, oncall]  # fmt: skip
    assert [h.text for h in asked_attribute_first(
        _hits((neutral, 0.72), (oncall, 0.71)), asked, margin=0.1)] == [neutral, oncall]  # fmt: skip
    # a query that asks for no attribute, or the rule off: the order as ranked
    none = frozenset(claim("who should I page for an alert").attributes)
    hits = _hits((owner, 0.724), (oncall, 0.718))
    assert asked_attribute_first(hits, none, margin=0.1) == hits
    assert asked_attribute_first(hits, asked, margin=0.0) == hits


def test_the_search_puts_the_asked_attribute_first(memory: Memory, clock: FakeClock) -> None:
    """Through Memory.search: the on-call statement comes before a statement of who owns
    something, three weeks newer (recency alone ranks that one first), for a question
    about the on-call."""
    _said(memory, clock, "Understood, Bruno is now the platform on-call engineer.", days=0)
    _said(memory, clock, "Kenji took over the Grafana SLO dashboards from the platform team.",
          days=20)  # fmt: skip
    clock.now = datetime(2026, 3, 23, 9, tzinfo=UTC)
    query = "who is on call for the platform team"
    assert "Bruno" in _texts(memory, query)[0]
    memory.settings.search = SearchSettings(asked_attribute_margin=0.0)
    assert "Kenji" in _texts(memory, query)[0]  # the rule, not the ranking, put Bruno first


def test_a_statement_comes_before_a_request_or_question_scored_close_above_it() -> None:
    """A request or a question answers nothing: "gym class time" wants the class's time
    before "Remind me what to pack for the gym.", found by the same words. Only within
    ``margin``, and a request that states a value or a standing rule is a statement."""
    request = "- **user**: Remind me what to pack for the gym."
    errand = "- **user**: Book the car's MOT this week."
    question = "user: How much do we spend on subscriptions?"
    change = "- **user**: They moved spin to 7:30 pm, same day."
    reply = "- **assistant**: Towel, water bottle and your cycling shoes for spin at 7:30 pm."
    assert asks_for(request) and asks_for(errand) and asks_for(question)
    assert not asks_for(change) and not asks_for(reply)
    assert not asks_for("Book easyJet from now on, I joined their loyalty scheme.")  # a rule
    assert not asks_for("Set my weekday alarm for 6:10.")  # not an errand verb; a value
    assert not asks_for("Book the 7:30 pm spin class.")  # it states a value
    # a ticket's key names what the errand is about: it is no value the errand sets
    assert asks_for("Draft the release notes for ticket PAY-465.")
    # chit-chat answers nothing either
    chat = "- **user**: Such a sunny day, I might work from the park later."
    lesson = "Yes, she has her swimming lesson on Saturday."
    found = stating_first(_hits((chat, 0.776), (lesson, 0.731)), margin=0.1)
    assert [h.text for h in found] == [lesson, chat]
    found = stating_first(_hits((request, 0.671), (errand, 0.64), (change, 0.618), (reply, 0.6)),
                          margin=0.06)  # fmt: skip
    assert [h.text for h in found] == [change, request, reply, errand]
    assert [h.score for h in found] == [0.671, 0.671, 0.64, 0.64]  # scores stay in rank order
    # further below than the margin, or the rule off: the order as ranked
    hits = _hits((request, 0.7), (change, 0.6))
    assert stating_first(hits, margin=0.06) == hits
    hits = _hits((request, 0.62), (change, 0.6))
    assert stating_first(hits, margin=0.0) == hits


def test_the_search_puts_a_statement_above_a_request(memory: Memory, clock: FakeClock) -> None:
    """Through Memory.search: the spin class's time comes before the request that shares
    the query's word "gym" (among other facts of a household, so the scores are close)."""
    _said(memory, clock, "My spin class is at 6:30 am on Tuesdays.",
          "The boiler is making that noise again.", "Our home wifi network is called Hearth-5G.",
          "I drive a Honda Civic.", "My dentist is Dr. Haddad.",
          "Book club meets at Cafe Lune on the first Thursday.",
          "Mila's swimming lessons are on Saturday mornings.", "We pay for Netflix Premium.",
          "My usual coffee order is a cortado.", days=0)  # fmt: skip
    _said(memory, clock, "Remind me what to pack for the gym.", days=1)
    clock.now = datetime(2026, 3, 5, 9, tzinfo=UTC)
    query = "gym class time"
    memory.settings.search = SearchSettings(stating_first_margin=0.0)
    ranked = _texts(memory, query)
    assert ranked[0].startswith("Remind me")  # what the ranking alone puts first
    memory.settings.search = SearchSettings()
    found = _texts(memory, query)
    assert found[0] == "My spin class is at 6:30 am on Tuesdays.", found
    assert set(found) == set(ranked)  # the same hits, in another order
