"""The prompts memoryd sends to an LLM, by name.

Extraction prompts say *what* to pull out of a text; the answer format is
appended by :func:`memoryd.extract.facts.extraction_messages`, so a
``custom_extraction_prompt`` only has to describe the content it wants.

Named prompts (``PROMPTS``): ``default`` (durable facts of any kind),
``digest`` (work logs and diaries, keeps technical identifiers) and ``task``
(finished work outcomes, stored with ``category=task``).
"""

from __future__ import annotations

from memoryd.errors import InvalidInputError

DEFAULT_EXTRACTION_PROMPT = """\
You extract durable facts from a conversation or a note so that an AI agent can \
remember them in later sessions.

Extract facts of these kinds:
- the user's preferences, habits, personal details, plans and intentions;
- decisions and the reasons for them;
- project status, outcomes, and who is doing what;
- configuration and environment: services, hosts, ports, paths, versions, accounts;
- lessons learned: what went wrong, the fix, and how to do things correctly.

Rules:
- One self-contained fact per item, understandable without the conversation \
(name the subject; never "it" or "this").
- Keep names, numbers, versions, ports, paths, URLs, ids and dates exactly as written.
- Write each fact in the language of the input.
- Skip greetings, small talk, questions nobody answered, and anything that is only \
true for the next few minutes.
- Never invent anything that is not in the input. If nothing is worth remembering, \
return an empty list."""

DIGEST_EXTRACTION_PROMPT = """\
You turn an agent's work diary into concise memories that preserve technical context.

Extract:
- work progress and results (what was built, fixed, merged, deployed, measured);
- key decisions and their reasons;
- pitfalls and their fixes (symptom, root cause, resolution);
- performance numbers and measurements, with their units and conditions;
- environment facts: project names, cluster and instance ids, service names, \
hostnames, ports, paths, commands, branch and PR numbers, versions.

Rules:
- Copy every technical identifier exactly: names, ids, ports, paths, commands, \
numbers, error messages. Never generalise "port 8230" to "a port".
- One self-contained fact per item; name the project or service it is about.
- Write each fact in the language of the input.
- Skip chit-chat, greetings, status pings and restated instructions.
- Never invent anything that is not in the input. If nothing is worth remembering, \
return an empty list."""

TASK_EXTRACTION_PROMPT = """\
List the work tasks the agent actually completed in the text below: final \
outcomes only, not plans, attempts or work in progress.

Write each task as "[type] description", where type is one of: dev, fix, docs, \
config, analysis, deploy, other. Keep identifiers (PR numbers, issue ids, \
services, versions) exactly as written. At most 5 tasks. Write in the language \
of the input. If no task was completed, return an empty list."""

RECONCILE_PROMPT = """\
You keep an AI agent's memory consistent. You get EXISTING memories, each with a \
small integer id, and NEW facts, each with an index. Decide one event per new fact:

- ADD: the fact is new information that no existing memory covers.
- UPDATE: the fact changes, corrects or adds detail to existing memory <id>. Give \
the merged text that replaces that memory: keep every detail that is still true, \
prefer the new fact where they disagree, and copy identifiers exactly.
- DELETE: the fact says existing memory <id> is no longer true and there is nothing \
new worth keeping (for example a plan that was cancelled).
- NONE: existing memory <id> already says the same thing.

Answer with only a JSON object, one decision per new fact:
{"decisions": [{"fact": 0, "event": "UPDATE", "id": 3, "text": "merged memory", \
"reason": "why"}]}
"id" is required for UPDATE, DELETE and NONE and must be one of the EXISTING ids. \
"text" is required for ADD and UPDATE."""

PROMPTS: dict[str, str] = {
    "default": DEFAULT_EXTRACTION_PROMPT,
    "digest": DIGEST_EXTRACTION_PROMPT,
    "task": TASK_EXTRACTION_PROMPT,
}


def get_prompt(name: str) -> str:
    """A named extraction prompt (``default``, ``digest``, ``task``)."""
    try:
        return PROMPTS[name]
    except KeyError:
        raise InvalidInputError(
            f"no extraction prompt named {name!r}",
            f"use one of {', '.join(sorted(PROMPTS))}, or pass the prompt text itself",
        ) from None
