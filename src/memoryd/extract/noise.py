"""Chit-chat: text that is worth keeping as conversation evidence, never as a fact.

Five weeks of an engineering assistant stored 23.8% of its long-term facts as
acknowledgements, greetings, sign-offs and weather ("Noted, I'll keep that in
mind.", "I'm heading out for the day, see you tomorrow", "It's pouring here
today."), and promoted bare table rows ("| search | 9200 | Ravi |") and copied
requests. :func:`is_chitchat` is the one test every writer of long-term facts
asks (the extractors, the dream, promotion, decay); the turn itself stays
searchable through the messages path.

The rule is per clause: a text is chit-chat when every clause of it (split at
sentence ends, commas and dashes) is. "Noted, I'll keep that in mind." is
("noted" + a generic acknowledgement); "Got it, I'll page Leo this week" is
not (the second clause says something). Short instructions and preferences
("always use type hints", "answer in bullet points", "I prefer dark mode")
match no pattern and are never chit-chat; a question or a request that states
something durable ("could you always reply in English?") is kept too.
"""

from __future__ import annotations

import re
from functools import lru_cache

# -- clauses that say nothing ------------------------------------------------------------------
_ACK = (
    r"(?:ok(?:ay)?|k|kk|sure(?: thing)?|noted|got it|gotcha|understood|will do|on it|i'?m on it"
    r"|sounds (?:good|great|fine|perfect)|makes sense|that makes sense|perfect|great|cool|nice"
    r"|awesome|excellent|wonderful|brilliant|lovely|right|alright|all right|yes|yeah|yep|yup"
    r"|no|nope|nah|no problem|no worries|of course|absolutely|definitely|done|fair enough"
    r"|good point|great question|good question|i see|ah|oh|aha|ahh|hmm+|um+|uh+|wow|oops|yikes"
    r"|ugh|lol|ha+|haha+|hehe|fine|good|very good|very well|agreed|exactly|indeed|true|right on"
    r"|ack|roger(?: that)?|copy(?: that)?|confirmed|thumbs up|np|my bad|sorry|oh well|nvm"
    r"|never ?mind|hah|mhm|uh huh|okey dokey|gotcha|excellent thanks|ok then|okay then)"
)
_THANKS = (
    r"(?:thanks|thank you|thx|ty|tysm|many thanks|cheers|much appreciated|appreciate it"
    r"|i appreciate it|appreciated)(?: (?:so|very) much| a lot| a ton| a bunch| again| all"
    r"| everyone| team)?(?: for (?:\S+ ?){1,8})?"
)
_GREETING = (
    r"(?:hi|hello|hey|hiya|heya|yo|howdy|greetings|good (?:morning|afternoon|evening|day)"
    r"|morning|evening|afternoon|welcome back|hey there|hi there|hello there)"
    r"(?: (?:there|all|everyone|everybody|team|folks|guys|again|\w+))?"
    r"|how are you(?: doing)?(?: today)?|how'?s it going|how are things|what'?s up|sup"
    r"|how was (?:your|the) (?:weekend|day|morning|holiday|vacation|trip)"
    r"|hope you(?:'re| are)(?: doing)? (?:well|good|great|fine)"
    r"|hope you (?:had|have) a (?:good|great|nice|lovely) (?:weekend|day|evening|holiday|one)"
    r"|happy (?:monday|tuesday|wednesday|thursday|friday|weekend|new year|holidays)"
    r"|nice to (?:meet|see) you|good to (?:see|hear from) you|long time no see"
)
_SIGN_OFF = (
    r"(?:see (?:you|ya)|talk(?: to you)?|catch you|speak)(?: (?:later|soon|tomorrow|then"
    r"|next week|monday|on monday|after the weekend|in the morning|around))?"
    r"|ttyl|brb|bye(?: for now| bye)?|goodbye|good ?night|nite|later"
    r"|have a (?:good|great|nice|lovely|relaxing) (?:day|evening|weekend|night|one|holiday|lunch)"
    r"|enjoy (?:your|the) (?:weekend|evening|day|lunch|holiday)"
    r"|(?:i'?m |i am )?(?:heading|head|going|logging|signing|checking) (?:out|off|home)"
    r"(?: (?:for|now|early)(?: (?:the|to|today|tonight|lunch|a bit|a while))?(?: day| night"
    r"| weekend| lunch| today)?)?(?: now)?"
    r"|(?:i'?m |i am )?(?:off|done|out) for (?:the |to)?(?:day|today|tonight|weekend|lunch|now)"
    r"|(?:i'?m |i am )?(?:calling it a (?:day|night)|wrapping up for (?:the day|today))"
    r"|that'?s (?:it|all) for (?:today|now|the day)|gotta (?:run|go)|got to go|i'?m back"
    r"|back from (?:lunch|the meeting|my break)|(?:i'?ll )?be (?:right )?back(?: soon| later| in \w+)?"
    r"|back (?:soon|later|in a bit)|until tomorrow"
)
_GENERIC = (
    r"i'?(?:ll| will) (?:keep (?:that|this|it) in mind|remember (?:that|this|it)"
    r"|make a note(?: of (?:that|this|it))?|note (?:that|this|it)(?: down)?|take note"
    r"|look into (?:it|that|this)|get (?:on|to) (?:it|that|this)|check|have a look|take a look"
    r"|let you know|get back to you|do that|do it)"
    r"|i(?:'ve| have) noted (?:that|this|it)|keeping (?:that|this|it) in mind"
    r"|thanks for (?:letting me know|the heads[ -]up|sharing|the update|the info(?:rmation)?)"
    r"|good to know|that'?s (?:good|great|helpful|useful|interesting|fine|ok|okay|fair|right)"
    r"(?: to know)?|that (?:helps|works|worked)|glad (?:that|it) (?:helped|worked)"
    r"|(?:i'?m )?(?:happy|glad) (?:to|i could) help|my pleasure|you'?re welcome|anytime"
    r"|(?:i )?hope (?:this|that) helps|let me (?:check|see|think|look)(?: into it)?"
    r"|one (?:moment|sec(?:ond)?)|just a (?:moment|sec(?:ond)?)|hold on|give me a (?:moment|sec)"
    r"|let me know if (?:you need|there'?s|you have) (?:\S+ ?){1,6}|anything else"
    r"|(?:how|what) can i (?:help|do)(?: you)?(?: with)?(?: today)?"
    r"|no (?:rush|hurry)|take your time|all good|it'?s fine|it'?s ok(?:ay)?|not a problem"
    r"|will keep (?:that|this|it) in mind|keep (?:me|us) posted"
    r"|that (?:fixed|solved|did) it|it(?:'?s)? work(?:s|ing)(?: now| again)?|works now|all set"
    r"|no problem at all|yes please|sounds like a plan|(?:great|good|nice) (?:work|job|catch)"
    r"(?: everyone| team| all)?|(?:i )?appreciate (?:the|your) help|interesting|fair point"
    r"|enjoy|take care|mate|grabbing (?:lunch|coffee|a coffee|a bite)|lunch time|coffee time"
    r"|sounds (?:lovely|nice|great|fun|awesome|like fun)|glad to hear(?: it| that)?"
    r"|ready when you are|let me know what'?s next|what'?s next|oh no|brr+|yay|phew|ugh"
    r"|glad you made it"
    r"|(?:let'?s )?call it a (?:day|night)|happy \w+(?: \w+)?"
)
_PATTERNS = (_ACK, _THANKS, _GREETING, _SIGN_OFF, _GENERIC)
_ANY = "|".join(_PATTERNS)
_EMPTY_CLAUSE = re.compile(r"^(?:" + _ANY + r")(?: (?:" + _ANY + r"))*$")

# -- small talk about the weather ------------------------------------------------------------
_WEATHER = re.compile(
    r"\b(?:weather|rain(?:s|ing|y)?|pouring|drizzl\w*|snow(?:s|ing|y)?|sunny|sunshine|cloudy"
    r"|overcast|foggy|windy|stormy?|thunder\w*|humid|muggy|freezing|chilly|scorching"
    r"|heat ?wave|cold|hot|warm)\b"
)
_SMALL_TALK_PLACE = re.compile(
    r"\b(?:here|today|outside|tonight|this (?:morning|afternoon|evening|week)|out there"
    r"|all day|again|lately|it'?s|what a|so)\b"
)
#: Words that make a weather sentence a fact about someone (where they live, what they like).
#: Small talk about the day: food, coffee, commute, weekends, being tired ("Traffic was
#: terrible today.", "Back from lunch, that pasta place was busy."). A clause about one of
#: these with no number and no word of work is chatter.
_SMALL_TALK = re.compile(
    r"\b(?:weekends?|lunch|coffee|breakfast|dinner|snack|pasta|pizza|sandwich|food|traffic"
    r"|commute|sweater|umbrella|park|sleep|slept|tired|exhausted|sleepy|starving|hungry"
    r"|brain is fried|vacation|holidays?|stuck in (?:traffic|a meeting)|made me laugh|funny"
    r"|dry off|sunshine|sun)\b"
)
_WORK = re.compile(
    r"\b(?:services?|servers?|deploy\w*|releases?|standup|sprint|pr|prs|tickets?|builds?"
    r"|pipelines?|databases?|db|api|clusters?|prod\w*|staging|customers?|clients?|migrat\w*"
    r"|backups?|cache|redis|postgres\w*|kubernetes|k8s|ci|repo\w*|branch\w*|bugs?|incidents?"
    r"|outages?|alerts?|on-?call|dashboards?|config\w*|ports?|versions?|tests?|code|review)\b"
)
#: Wishes and remarks about someone's day ("hope you dry off soon", "mine was too short").
_REMARK = re.compile(r"^(?:(?:i )?hope|hoping|mine|yours|ours)\b")
_PERSONAL = re.compile(
    r"\b(?:prefer\w*|likes?|loves?|hates?|allergic|lives?|living|moved|moving|born|grew up"
    r"|favou?rite|always|never|usually|enjoys|vegetarian|vegan|diet|drinks|eats|decaf)\b"
)

# -- requests and questions copied from the conversation ------------------------------------
_REQUEST = re.compile(
    r"^(?:(?:can|could|would|will|can't|won't) (?:you|u|we)|would you mind|do you mind"
    r"|please (?:can|could) you|please (?:check|look(?: at| into)?|have a look|take a look"
    r"|review|summari[sz]e|explain|tell me|show me|help(?: me)?|find|search|send|share|run|ping)"
    r"|is there any way|any (?:idea|update|news)s?|do you know|did you|have you"
    r"|(?:please )?(?:send|give|show|tell|get|fetch|find|pull|draft|write|make|bring) me)\b"
)
#: What makes a request or question durable: it states a standing rule or a preference.
_DURABLE = re.compile(
    r"\b(?:always|never|from now on|going forward|in (?:the )?future|every ?time|whenever"
    r"|by default|prefer\w*|don'?t|do not|remind|remember|each time|instead of|rather than"
    r"|as (?:bullet|a list|lists|a table|tables|prose|markdown|json|csv|a summary|pdf)"
    r"|in (?:bullet|english|german|french|spanish|markdown|json|csv|prose|short))\b"
)
#: A question without its question mark ("what time is the standup", "where is the log"),
#: not a statement that starts with a wh-word ("where the config lives is /etc/memoryd").
_QUESTION_START = re.compile(
    r"^(?:what|how|why|when|where|who|which)(?: \w+)? (?:is|are|was|were|do|does|did|can"
    r"|could|would|will|should|shall|has|have)\b"
)

# -- tables ------------------------------------------------------------------------------------
_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?\s*$")

_SPEAKER = re.compile(
    # "user: ", "**assistant**: ", and as a diary's list item "- **user**: "
    r"^\s*(?:[-*+]\s+)?(?:\*\*)?(?:user|assistant|human|ai|system|agent|bot)(?:\*\*)?"
    r"\s*[:：]\s*(?:\*\*)?\s*",
    re.IGNORECASE,
)
_CLAUSE_SPLIT = re.compile(r"(?<=[.!?;])\s+|\s*[,;:]\s+|\s+[-–—]+\s+|\s*[.!?…]+\s*$|\n+")
_NOT_WORD = re.compile(r"[^\w\s']+", re.UNICODE)


def without_speaker(text: str) -> str:
    """``text`` without the speaker in front ("- **user**: We moved ..." -> "We moved ...")."""
    return _SPEAKER.sub("", text.strip(), count=1).strip()


@lru_cache(maxsize=4096)
def is_chitchat(text: str) -> bool:
    """True when ``text`` says nothing worth remembering as a fact.

    Acknowledgements, greetings, thanks, sign-offs, weather small talk, table
    rows without their header, and requests or questions that state no standing
    rule. Empty text and punctuation or emoji only are chit-chat too. The test
    is conservative: anything that matches no pattern is kept. Answers are cached
    (4,096 texts): a search asks it of each of its first hits, which recur.
    """
    stripped = text.strip()
    if not stripped:
        return True
    if is_bare_table(stripped):
        return True
    body = _SPEAKER.sub("", stripped).strip()
    if not _NOT_WORD.sub(" ", body).strip(" '"):
        return True  # punctuation or emoji only
    clauses = [c for c in (_normal(c) for c in _CLAUSE_SPLIT.split(body)) if c]
    if not clauses:
        return True
    if all(_chatter(c) for c in clauses):
        return True
    if _is_weather(body):
        return True
    return _is_request(body, clauses)


def is_bare_table(text: str) -> bool:
    """Markdown table rows with no header rule among them: cells without their meaning."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    if not lines or not all(_TABLE_ROW.match(line) or _TABLE_RULE.match(line) for line in lines):
        return False
    return not any(_TABLE_RULE.match(line) for line in lines[1:]) or all(
        _TABLE_RULE.match(line) for line in lines
    )


def _normal(clause: str) -> str:
    words = _NOT_WORD.sub(" ", clause.casefold().replace("’", "'"))
    return " ".join(w.strip("'") for w in words.split() if w.strip("'"))


def _is_weather(body: str) -> bool:
    normal = _normal(body)
    words = normal.split()
    if not words or len(words) > 14 or any(ch.isdigit() for ch in normal):
        return False
    return bool(
        _WEATHER.search(normal)
        and _SMALL_TALK_PLACE.search(normal)
        and not _PERSONAL.search(normal)
    )


def _is_request(body: str, clauses: list[str]) -> bool:
    """A question or a one-off request ("can you check the logs?"), unless it sets a rule."""
    normal = _normal(body)
    if _DURABLE.search(normal):
        return False
    content = [c for c in clauses if not _chatter(c)]
    if not content:
        return False
    if body.rstrip().endswith(("?", "？")):
        # Every sentence a question (or chatter): "The port is 6432. Is that right?" keeps its fact.
        sentences = [s for s in re.split(r"(?<=[.!?？])\s+", body) if s.strip()]
        return all(
            s.rstrip().endswith(("?", "？")) or all(_chatter(c) for c in _clauses(s))
            for s in sentences
        )
    return all(_REQUEST.match(c) or _QUESTION_START.match(c) for c in content)


def _chatter(clause: str) -> bool:
    """A clause that says nothing to remember: an acknowledgement, greeting, thanks or
    sign-off, or small talk (the day, food, commute, a wish) with no number or work in it."""
    if _EMPTY_CLAUSE.match(clause):
        return True
    clause = re.sub(r"^(?:but|and|so|also|anyway) ", "", clause)
    words = clause.split()
    if len(words) > 12 or any(ch.isdigit() for ch in clause) or _WORK.search(clause):
        return False
    if _PERSONAL.search(clause) or _DURABLE.search(clause):
        return False
    return bool(_SMALL_TALK.search(clause) or _WEATHER.search(clause) or _REMARK.match(clause))


def _clauses(sentence: str) -> list[str]:
    return [c for c in (_normal(c) for c in _CLAUSE_SPLIT.split(sentence)) if c]
