"""is_chitchat: what is never a long-term fact, and what must stay one (issue 31, item 6)."""

from __future__ import annotations

import pytest

from memoryd.core import Memory
from memoryd.extract import OfflineExtractor
from memoryd.extract.noise import is_bare_table, is_chitchat
from memoryd.models import Filters, Origin
from memoryd.settings import LimitSettings

CHITCHAT = [
    # acknowledgements
    "Noted, I'll keep that in mind.",
    "Got it",
    "Got it, thanks!",
    "Ok.",
    "Sounds good!",
    "Will do.",
    "Understood, I'll remember that.",
    "Perfect, thank you so much!",
    "Makes sense.",
    "No worries, take your time.",
    "Good to know, thanks for the heads-up.",
    "assistant: Sure thing! Let me know if you need anything else.",
    "Happy to help!",
    "I hope this helps.",
    "Let me check.",
    "Thanks, that fixed it!",
    "It works now, thanks",
    "Sure, no problem at all!",
    "Nice, good job.",
    "ok I will do that",
    # greetings
    "Hi",
    "Hello there!",
    "Good morning team!",
    "Hey Ravi, how's it going?",
    "Hope you had a great weekend!",
    "How are you doing today?",
    # thanks
    "Thanks!",
    "Thank you for fixing the deploy so quickly.",
    "Many thanks again.",
    # sign-offs
    "I'm heading out for the day, see you tomorrow",
    "Signing off for today.",
    "See you Monday!",
    "Have a great weekend!",
    "Talk to you later.",
    "I'm off for lunch, back soon",
    "Calling it a day.",
    "Brb, grabbing lunch",
    "Take care!",
    # weather
    "It's pouring here today.",
    "What a sunny day it is outside!",
    "So cold this morning.",
    "Freezing here again, ugh.",
    # small talk about the day
    "Morning! Traffic was terrible today.",
    "Back from lunch, that pasta place was busy.",
    "Sorry, I was stuck in a meeting for ages.",
    "Oh no! Hope you dry off soon, grab a hot coffee.",
    "How was your weekend? Mine was way too short.",
    "Sounds lovely, enjoy the sunshine!",
    "Happy Friday everyone!",
    # bare table rows
    "| search | 9200 | Ravi |",
    "| ingest | 9300 | Mei |\n| search | 9200 | Ravi |",
    "|---|---|---|",
    # copied requests and questions
    "Can you check the logs for the ingest service?",
    "Could you take a look at PR #482",
    "Please summarise the thread.",
    "Send me today's data quality report.",
    "- **user**: Give me the error budget per service.",  # a diary's line
    "What time is the standup?",
    "Which port does staging use?",
    # punctuation and emoji only
    "👍",
    "...",
    "",
]

FACTS = [
    # short instructions and preferences are never chit-chat
    "always use type hints",
    "answer in bullet points",
    "I prefer dark mode",
    "Never push directly to main.",
    "Use pnpm, not npm.",
    "Please always answer in English.",
    "Could you always reply in bullet points from now on?",
    "Remind me to rotate the AWS keys on Friday.",
    "Please send me the data quality report as bullet lists.",
    "Don't use emojis in commit messages.",
    # facts with an acknowledgement in front keep their fact
    "Got it, I'll page Leo this week",
    "Noted, staging Postgres uses port 5432.",
    "Thanks, the staging port is 6432 now.",
    "Hi team, the deploy freeze starts Friday.",
    # facts that look like small talk
    "The staging database is on port 6432.",
    "The weather service API runs on port 8080.",
    "I live in Seattle where it rains all the time.",
    "She hates cold weather and prefers working from Lisbon.",
    "The cache is cold after a deploy, so the first query takes 300 ms.",
    "OK is the status the health check returns.",
    "Where the config lives: /etc/memoryd/app.toml",
    "Ravi owns the search service (port 9200).",
    "PR #482 was merged.",
    "Interesting: the p99 latency doubled after the upgrade.",
    "Great job on the migration to PostgreSQL 16.",
    "Deploy done.",
    # small-talk words in facts
    "I like my coffee black, no sugar.",
    "The user is vegetarian and skips lunch meetings.",
    "The coffee machine on floor 3 is broken.",
    "Standup moved to after lunch for the release week.",
    "I hope to finish the billing migration by Friday.",
    "We decided to use httpx instead of aiohttp.",
    # a table with its header is data, and a fact then a question keeps the fact
    "| service | port | owner |\n|---|---|---|\n| search | 9200 | Ravi |",
    "The port is 6432. Is that right?",
    "服务端口是8230。",
]


@pytest.mark.parametrize("text", CHITCHAT)
def test_chitchat_is_recognised(text: str) -> None:
    assert is_chitchat(text), text


@pytest.mark.parametrize("text", FACTS)
def test_facts_and_instructions_are_not_chitchat(text: str) -> None:
    assert not is_chitchat(text), text


def test_a_table_is_bare_only_without_its_header_rule() -> None:
    assert is_bare_table("| search | 9200 | Ravi |")
    assert not is_bare_table("| service | port |\n|---|---|\n| search | 9200 |")
    assert not is_bare_table("search | 9200 | Ravi")  # a pipe in prose is not a table


# -- the offline extractor asks it -----------------------------------------------------------
def test_the_offline_extractor_keeps_facts_and_drops_chitchat() -> None:
    offline = OfflineExtractor(LimitSettings())
    text = (
        "user: Noted, I'll keep that in mind.\n"
        "assistant: Got it, I'll page Leo this week\n"
        "user: It's pouring here today.\n"
        "user: always use type hints\n"
        "user: I prefer dark mode\n"
        "assistant: Can you check the logs for the ingest service?\n"
        "| search | 9200 | Ravi |\n"
        "user: I'm heading out for the day, see you tomorrow\n"
    )
    assert offline.extract(text) == [
        "Got it, I'll page Leo this week",
        "always use type hints",
        "I prefer dark mode",
    ]


def test_a_table_with_its_header_becomes_named_rows() -> None:
    offline = OfflineExtractor(LimitSettings())
    text = "| service | port | owner |\n|---|---|---|\n| search | 9200 | Ravi |\n| ingest | 9300 | Mei |"
    assert offline.extract(text) == [
        "service: search; port: 9200; owner: Ravi",
        "service: ingest; port: 9300; owner: Mei",
    ]


def test_chitchat_turns_stay_searchable_but_are_no_facts(memory: Memory) -> None:
    chat = [
        {"role": "user", "content": "It's pouring here today."},
        {"role": "assistant", "content": "Noted, I'll keep that in mind."},
        {"role": "user", "content": "The staging database is on port 6432."},
    ]
    events = memory.add(messages=chat, user_id="u", infer=True)
    facts = memory.list(user_id="u", filters=Filters(origins=[Origin.FACT]))
    assert [f.text for f in facts] == ["The staging database is on port 6432."]
    turns = memory.list(user_id="u", filters=Filters(origins=[Origin.TURN]))
    assert len(turns) == 3 and [e.memory for e in events] == [facts[0].text]  # turns kept
    hits = memory.search("pouring rain", user_id="u", top_k=3)
    assert hits and hits[0].text == "It's pouring here today."
