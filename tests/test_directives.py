"""A user's instructions and preferences are short turns that matter most in an agent's
conversation: they are recognised at ingest (offline rules) and never buried by the
turn priors tuned on casual chats (issue 35)."""

from __future__ import annotations

import pytest

from memoryd.core import Memory
from memoryd.search.text import asks_how_wanted, directs

LONG_REPLY = (
    "I looked at the deploy script. It pushes the build tag to the main branch of the "
    "release repository after the tests pass, then the pipeline picks it up and rolls it out "
    "to staging first and production an hour later. The push itself is a plain git push "
    "with the deploy key; nothing in it changes when the branch is protected, so the same "
    "script keeps working if you turn protection on for main. I also noticed the script "
    "retries the push three times with a fixed delay, which hides real failures for a "
    "while; a shorter timeout and an error that names the branch would be clearer."
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("From now on, always use type hints in any Python you write for me.", True),
        ("Never push to main directly. Always open a PR.", True),
        ("Answer in bullet points please, I skim.", True),
        ("Don't add new dependencies without asking me first.", True),
        ("Tests go in pytest style, not unittest classes, please.", True),
        ("Whatever language I use, answer me in English.", True),
        ("I prefer polars over pandas for anything tabular.", True),
        ("For HTTP calls I'd go with httpx, not requests.", True),
        ("I'd rather have dataclasses than dicts flying around.", True),
        ("Great work. Use pathlib for file paths, not os.path.", True),
        ("Switch my status updates to numbered checklists please.", True),
        ("Please give me status updates as bullet lists, that's easiest for me to read.", True),
        ("Yes please.", False),  # an answer, not an instruction
        ("Can you check it please?", False),
        ("I love that!", False),  # chit-chat: a preference names what is liked
        ("I'd love to hear more about it.", False),
        ("Keep it up!", False),
        ("Keep me posted on how it goes.", False),
        ("Wow, how was the trip?", False),
        ("The test passes locally because your machine has the timezone set to UTC.", False),
        ("We migrated the sessions from Redis to Postgres over the weekend.", False),
    ],
)
def test_instructions_and_preferences_are_recognised(text: str, expected: bool) -> None:
    assert directs(text) is expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("How should I format my answers for this user?", True),
        ("Can I push the hotfix straight to main?", True),
        ("Should I use pandas for the CSV aggregation?", True),
        ("Is str.format fine for building the error message?", True),
        ("Which test framework should the new tests use?", True),
        ("What database does the user favour?", True),
        ("What does the user want in the logs?", True),
        ("How long should the functions in this module be?", True),
        ("How much detail should the commit messages have?", True),
        ("How long did Caroline stay in Paris?", False),
        ("Can we assume, based on the conversation, that Akib likes to read?", False),
        ("What did Sam suggest Evan should do with his keys?", False),
        ("When did Ana adopt the puppy?", False),
        ("What did Caroline research?", False),
        ("How do Jon and Gina both like to destress?", False),
        ("Where did Melanie go camping?", False),
    ],
)
def test_a_query_asks_how_the_user_wants_things(query: str, expected: bool) -> None:
    assert asks_how_wanted(query) is expected


def _talk(memory: Memory) -> list[str]:
    said = [
        ("Dana", "user", "Can you check why the deploy script is slow?"),
        ("assistant", "assistant", LONG_REPLY),
        ("Dana", "user", "Never push to main directly, open a PR."),
        ("assistant", "assistant", "Understood."),
        ("Dana", "user", "ok thanks, main is fine then"),
    ]
    memory.add(
        messages=[{"role": r, "name": n, "content": t} for n, r, t in said],
        user_id="u",
        metadata={"session": "s1"},
    )
    return [t for _, _, t in said]


def test_a_short_instruction_keeps_its_score_where_chit_chat_loses(memory: Memory) -> None:
    """The short-turn and question penalties lower chit-chat; an instruction is as short
    but is never lowered, so it is not ranked below a long reply that shares its words."""
    texts = _talk(memory)
    instruction, chat = texts[2], texts[4]
    query = "Can I push the fix to the main branch?"  # the long reply leads on wording
    hits = memory.search(query, user_id="u", top_k=10, time_decay=False)
    by_text = {h.text: h for h in hits}
    assert by_text[instruction].parts.turn is None  # no penalty for saying it briefly
    assert by_text[chat].parts.turn is not None and by_text[chat].parts.turn < 0
    assert hits[0].text == instruction


def test_a_how_question_lifts_instructions_by_the_directive_boost(memory: Memory) -> None:
    texts = _talk(memory)
    s = memory.settings.search
    s.directive_turn_boost = 0.0
    plain = {h.text: h for h in memory.search("Can I push to main?", user_id="u", top_k=10)}
    s.directive_turn_boost = 0.1
    hits = memory.search("Can I push to main?", user_id="u", top_k=10)
    for h in hits:
        assert plain[h.text].parts.directs is None
        if h.text == texts[2]:
            assert h.parts.directs == pytest.approx(0.1)
            assert h.score == pytest.approx(min(1.0, plain[h.text].score + 0.1), abs=1e-6)
        else:
            assert h.parts.directs is None
    other = memory.search("Why is the deploy script slow?", user_id="u", top_k=10)
    assert other and all(h.parts.directs is None for h in other)


def test_a_how_question_finds_a_preference_said_in_other_words(memory: Memory) -> None:
    """A preference shares no word with the question it answers ("How should I represent
    the parsed records?" / "I'd rather have dataclasses ..."): its fused relevance is its
    meaning x the vector weight. For a how-question it passes the relevance floor on its
    meaning alone, as in a vector-only search; for another question the floor holds."""
    preference = "I'd rather have dataclasses than dicts flying around."
    memory.add(
        messages=[{"role": "user", "name": "Dana", "content": preference}],
        user_id="u",
        metadata={"session": "s1"},
    )
    query = "How should I represent the parsed records?"
    meant = memory.search(query, user_id="u", mode="vector", min_score=0, time_decay=False)
    meaning = meant[0].parts.vector
    floor = 0.8 * meaning  # above what fusion leaves of it (0.6 x), below its meaning
    hits = memory.search(query, user_id="u", min_score=floor, time_decay=False)
    assert [h.text for h in hits] == [preference]
    assert hits[0].parts.keyword == 0.0 and hits[0].parts.fused < floor <= hits[0].parts.vector
    # not a how-question: the relevance floor is the fused score's
    statement = "The parsed records are represented somehow."
    other = memory.search(statement, user_id="u", mode="vector", min_score=0, time_decay=False)
    floor = 0.8 * other[0].parts.vector
    assert memory.search(statement, user_id="u", min_score=floor, time_decay=False) == []
