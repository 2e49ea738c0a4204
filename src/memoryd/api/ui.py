"""The web dashboard at ``/ui``: server-rendered Jinja2 pages, enhanced with htmx.

Why server-rendered: each page is a few ``Memory`` calls, so rendering on the
server keeps one place for scope checks and formatting, needs no front-end
build at install time, and every page still works with JavaScript off. htmx
only adds live search/filtering; Chart.js draws the overview charts. Both are
committed under ``static/vendor`` (see ``static/VENDORED.md``): nothing is
loaded from a CDN, so the dashboard works on a machine with no network.

Every handler is a plain ``def`` (FastAPI runs it in its threadpool, so the
embedding work of a search never blocks the event loop). The caller is
resolved exactly as the JSON API resolves it (``auth.authenticate`` on a
header or the ``memoryd_key`` cookie the login form sets), and every read and
write is narrowed to the principal's scope: a scoped key never sees, counts or
opens another user's memory.
"""

from __future__ import annotations

import difflib
import functools
import hmac
import inspect
import math
import secrets
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import UTC, date, datetime, timedelta
from itertools import pairwise
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

from fastapi import APIRouter, Form, Request
from fastapi.responses import FileResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates

from memoryd.access import AuthenticationError, Principal, authenticate, token_from
from memoryd.api import markdown
from memoryd.audit import read_recent
from memoryd.core import Memory
from memoryd.errors import (
    InvalidInputError,
    MemorydError,
    PermissionDeniedError,
    ReadOnlyError,
)
from memoryd.models import Event, Filters, HistoryEntry, MemoryRecord, Origin, SearchHit, State
from memoryd.scope import AgentFiles, Scope
from memoryd.search.tiers import memory_type as tier_of

HERE = Path(__file__).parent
STATIC_DIR = HERE / "static"
TEMPLATES = Jinja2Templates(directory=HERE / "templates")
COOKIE = "memoryd_key"
#: the double-submit token every dashboard form carries (and a cookie holds: a page on
#: another site can make the browser send the cookie, never read it into a form)
CSRF_COOKIE = "memoryd_csrf"
PAGE_SIZE = 25
AUDIT_PAGE = 50  # requests per page of /ui/audit
AUDIT_KEPT = 1000  # the newest requests the audit pages reach back to
TIERS = {"long_term": "long-term", "short_term": "short-term", "shared": "shared"}
# Scripts only from /ui/static; no inline script, so an injected <script> cannot run.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)

router = APIRouter(prefix="/ui", include_in_schema=False)


def _ts(value: object) -> str:
    """A timestamp (datetime or ISO string, as pipelines and the audit log write them) in UTC."""
    if value is None or value == "":
        return "—"
    if isinstance(value, int | float):
        value = datetime.fromtimestamp(value, UTC)
    elif isinstance(value, str):
        text = value
        try:
            value = datetime.fromisoformat(text)
        except ValueError:
            return text
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            value = value.astimezone(UTC)
        return value.strftime("%Y-%m-%d %H:%M:%S")
    return str(value)


TEMPLATES.env.filters["ts"] = _ts
TEMPLATES.env.filters["md"] = markdown.to_html  # Markdown, raw HTML off
TEMPLATES.env.filters["plain"] = markdown.to_plain  # one-line previews


# -- who is asking, and what they may see ----------------------------------------------------
def spans(memory: Memory, principal: Principal, user: str | None, agent: str | None) -> list[Scope]:
    """The scopes a page reads: the key's narrowed by the page's, as :meth:`Scope.spans
    <memoryd.scope.Scope.spans>` decides (``None``: any); the page merges their answers."""
    return memory.scope(principal, user, agent).spans()


def shared_categories(memory: Memory) -> list[str]:
    """Categories every agent of a user sees in search (``memory_type`` "shared")."""
    return list(memory.settings.search.shared_categories)


# -- the filter bar every list page shares ----------------------------------------------------
@dataclass
class Query:
    """The filters of the search and browse pages, parsed from the query string."""

    q: str = ""
    user: str = ""
    agent: str = ""
    category: str = ""
    tier: str = ""
    origin: str = ""
    since: str = ""
    until: str = ""
    state: str = "active"
    mode: str = "hybrid"
    top_k: int = 10
    min: str = "0.1"  # least relevance a hit needs (before recency decay is blended in)
    page: int = 1

    @classmethod
    def parse(cls, params: Iterable[tuple[str, str]]) -> Query:
        names = {f.name for f in fields(cls)}
        raw = {k: v.strip() for k, v in params if k in names and v.strip()}
        query = cls()
        for name, value in raw.items():
            if name not in ("top_k", "page"):
                setattr(query, name, value)
        for name, low, high in (("top_k", 1, 100), ("page", 1, 100_000)):
            value = raw.get(name, "")
            if value:
                try:  # not str.isdigit(): "²" is a digit to it, and int() refuses it
                    number = int(value) if value.isascii() else None
                except ValueError:
                    number = None
                if number is None or not low <= number <= high:
                    raise InvalidInputError(
                        f"{name} must be a whole number from {low} to {high}, not {value!r}",
                        f"pick a {name} between {low} and {high}",
                    )
                setattr(query, name, number)
        if query.tier and query.tier not in TIERS:
            raise InvalidInputError(
                f"unknown tier {query.tier!r}", f"use one of {', '.join(TIERS)} or leave it empty"
            )
        if query.origin and query.origin not in {o.value for o in Origin}:
            raise InvalidInputError(
                f"unknown origin {query.origin!r}",
                f"use one of {', '.join(o.value for o in Origin)} or leave it empty",
            )
        if query.state not in ("active", "deleted", "archived", "all"):
            raise InvalidInputError(
                f"unknown state {query.state!r}", "use active, deleted, archived or all"
            )
        if query.mode not in ("hybrid", "vector", "keyword"):
            raise InvalidInputError(f"unknown mode {query.mode!r}", "use hybrid, vector or keyword")
        _relevance(query.min)  # refused now, before any search runs
        return query

    @property
    def min_relevance(self) -> float:
        return _relevance(self.min)

    def filters(self, memory: Memory) -> Filters:
        """Everything but user and agent, which come from :func:`spans`."""
        states = {
            "active": [State.ACTIVE],
            "deleted": [State.DELETED],
            "archived": [State.ARCHIVED],
            "all": [],
        }[self.state]
        categories = [self.category] if self.category else None
        if self.tier == "shared":  # as the API does: no shared category matches nothing
            shared = shared_categories(memory)
            categories = [c for c in shared if not categories or c in categories] or [""]
        f = Filters(
            categories=categories,
            origins=[Origin(self.origin)] if self.origin else None,
            states=states,
            created_after=_day(self.since, "since"),
            created_before=_day(self.until, "until", next_day=True),
            long_term_only=self.tier == "long_term",
            short_term_only=self.tier == "short_term",
        )
        if f.created_after and f.created_before and f.created_after >= f.created_before:
            raise InvalidInputError(
                f"the date range {self.since} to {self.until} is empty",
                "put the earlier date in 'from' and the later one in 'to'",
            )
        return f

    def link(self, **changes: Any) -> str:
        """This query with some fields changed, as a query string (defaults left out)."""
        new = replace(self, **changes)
        default = Query()
        pairs = [
            (f.name, getattr(new, f.name))
            for f in fields(self)
            if getattr(new, f.name) != getattr(default, f.name)
        ]
        return "?" + urlencode(pairs) if pairs else "?"

    @property
    def active_filters(self) -> int:
        return sum(
            bool(v) for v in (self.user, self.agent, self.category, self.tier, self.origin)
        ) + bool(self.since or self.until)


def _relevance(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        number = -1.0
    if not 0.0 <= number <= 1.0:
        raise InvalidInputError(
            f"min relevance must be a number from 0 to 1, not {value!r}",
            "0 shows every hit; 0.1 to 0.3 hides hits that rank on recency alone",
        )
    return number


def _day(value: str, name: str, *, next_day: bool = False) -> datetime | None:
    if not value:
        return None
    try:
        day = date.fromisoformat(value)
    except ValueError:
        raise InvalidInputError(
            f"{name} date {value!r} is not a date", "use the date picker or YYYY-MM-DD"
        ) from None
    start = datetime(day.year, day.month, day.day, tzinfo=UTC)
    if next_day and day == date.max:
        return None  # "until 9999-12-31" is no upper bound (and the day after overflows)
    return start + timedelta(days=1) if next_day else start


# -- reads across a scope (the scopes Scope.spans gives, answers merged) ------------------------
def count_in(scopes: Sequence[Scope], f: Filters) -> int:
    return sum(s.count(f) for s in scopes)


def counts_in(scopes: Sequence[Scope], column: str, f: Filters) -> dict[str, int]:
    totals: dict[str, int] = {}
    for scope in scopes:
        for key, n in scope.count(f, by=column).items():
            totals[key] = totals.get(key, 0) + n
    return dict(sorted(totals.items(), key=lambda kv: (-kv[1], kv[0])))


def list_in(scopes: Sequence[Scope], f: Filters, *, limit: int, offset: int) -> list[MemoryRecord]:
    """One page, newest first, merged over the scopes."""
    if len(scopes) == 1:
        return scopes[0].page(f, limit=limit, offset=offset)
    merged: list[MemoryRecord] = []
    for scope in scopes:
        merged.extend(scope.page(f, limit=offset + limit))
    merged.sort(key=lambda r: r.created_at, reverse=True)
    return merged[offset : offset + limit]


def search_in(memory: Memory, principal: Principal, query: Query, f: Filters) -> list[SearchHit]:
    """The best hits over the scopes the key spans (each with the owner-chunk rule)."""
    hits: dict[str, SearchHit] = {}
    for scope in spans(memory, principal, query.user or None, query.agent or None):
        for hit in scope.hits(
            query.q, top_k=query.top_k, min_score=query.min_relevance, filters=f, mode=query.mode
        ):
            if hit.id not in hits or hits[hit.id].score < hit.score:
                hits[hit.id] = hit
    return sorted(hits.values(), key=lambda h: -h.score)[: query.top_k]


# -- overview aggregates --------------------------------------------------------------------------
def overview_data(memory: Memory, scopes: Sequence[Scope]) -> dict[str, Any]:
    active = Filters()
    by_tier = {
        "long-term": count_in(scopes, active.model_copy(update={"long_term_only": True})),
        "short-term": count_in(scopes, active.model_copy(update={"short_term_only": True})),
    }
    shared = shared_categories(memory)
    shared_count = (
        count_in(scopes, active.model_copy(update={"categories": shared})) if shared else 0
    )
    by_state = counts_in(scopes, "state", Filters(states=[]))
    return {
        "total": by_state.get(State.ACTIVE.value, 0),
        "by_state": by_state,
        "by_user": counts_in(scopes, "user_id", active),
        "by_agent": _named(counts_in(scopes, "agent_id", active), "(no agent)"),
        "by_category": _named(counts_in(scopes, "category", active), "(none)"),
        "by_origin": counts_in(scopes, "origin", active),
        "by_tier": by_tier,
        "shared": shared_count,
        "growth": growth(memory, scopes),
        # a conversation added with inference shows once: its facts, not its evidence turns
        "latest": list_in(
            scopes, active.model_copy(update={"evidence_turns": False}), limit=5, offset=0
        ),
    }


def _named(counts: dict[str, int], empty: str) -> dict[str, int]:
    return {(k or empty): v for k, v in counts.items()}


def growth(memory: Memory, scopes: Sequence[Scope], *, max_buckets: int = 60) -> dict[str, Any]:
    """Memories created per day (per week or month over longer spans), and the running total.

    Counted with one grouped ``counts_by`` per bucket on the indexed ``created_at``
    (at most ``max_buckets``), so no store method is needed for it: about 0.2 s
    at 20k memories on SQLite.
    """
    everything = Filters(states=[])
    firsts = [s.page(everything, limit=1, oldest_first=True) for s in scopes]
    starts = [r[0].created_at for r in firsts if r]
    if not starts:
        return {"unit": "day", "labels": [], "active": [], "removed": [], "total": []}
    start = min(starts).astimezone(UTC).date()
    end = memory.clock().astimezone(UTC).date()
    end = max(end, start)
    span = (end - start).days + 1
    unit = "day" if span <= max_buckets else ("week" if span <= max_buckets * 7 else "month")
    edges = _bucket_edges(start, end, unit)
    labels: list[str] = []
    active: list[int] = []
    removed: list[int] = []
    for lo, hi in pairwise(edges):
        window = everything.model_copy(update={"created_after": lo, "created_before": hi})
        by_state = counts_in(scopes, "state", window)  # one query per bucket and scope
        labels.append(_bucket_label(lo, unit))
        active.append(by_state.get(State.ACTIVE.value, 0))
        removed.append(sum(n for state, n in by_state.items() if state != State.ACTIVE.value))
    running = 0  # the first bucket holds the oldest memory
    total: list[int] = []
    for n in active:
        running += n
        total.append(running)
    return {"unit": unit, "labels": labels, "active": active, "removed": removed, "total": total}


def _bucket_edges(start: date, end: date, unit: str) -> list[datetime]:
    def at(d: date) -> datetime:
        return datetime(d.year, d.month, d.day, tzinfo=UTC)

    if unit == "day":
        days = [start + timedelta(days=i) for i in range((end - start).days + 2)]
        return [at(d) for d in days]
    if unit == "week":
        first = start - timedelta(days=start.weekday())
        weeks = math.ceil(((end - first).days + 1) / 7)
        return [at(first + timedelta(weeks=i)) for i in range(weeks + 1)]
    edges = []
    y, m = start.year, start.month
    while (y, m) <= (end.year, end.month):
        edges.append(at(date(y, m, 1)))
        y, m = (y + 1, 1) if m == 12 else (y, m + 1)
    edges.append(at(date(y, m, 1)))
    return edges


def _bucket_label(edge: datetime, unit: str) -> str:
    if unit == "month":
        return edge.strftime("%b %Y")
    prefix = "wk of " if unit == "week" else ""
    return prefix + edge.strftime("%b %d").replace(" 0", " ")


def chart(
    kind: str, counts: dict[str, int], label: str = "memories", *, horizontal: bool = False
) -> dict[str, Any]:
    """A chart spec ui.js turns into a Chart.js chart (no inline script needed)."""
    return {
        "type": kind,
        "indexAxis": "y" if horizontal else "x",
        "labels": list(counts),
        "datasets": [{"label": label, "data": list(counts.values())}],
    }


# -- history ---------------------------------------------------------------------------------------
@dataclass
class TimelineItem:
    entry: HistoryEntry
    diff: list[tuple[str, str]] = field(default_factory=list)
    meta_changes: list[tuple[str, Any, Any]] = field(default_factory=list)


def timeline(entries: Sequence[HistoryEntry]) -> list[TimelineItem]:
    """Newest first, each UPDATE with a word diff and the metadata keys it changed."""
    items = []
    for entry in entries:
        item = TimelineItem(entry)
        changed_text = entry.old_text is not None and entry.new_text != entry.old_text
        if entry.event == Event.UPDATE and changed_text and entry.new_text:
            item.diff = word_diff(entry.old_text or "", entry.new_text)
        old, new = entry.old_metadata or {}, entry.new_metadata or {}
        if entry.event == Event.UPDATE and old != new:
            item.meta_changes = [
                (k, old.get(k), new.get(k))
                for k in sorted(set(old) | set(new))
                if old.get(k) != new.get(k)
            ]
        items.append(item)
    return items[::-1]


def word_diff(old: str, new: str) -> list[tuple[str, str]]:
    """``[(op, text)]`` with op in ``same``, ``del``, ``ins``: what an edit changed, word by word."""
    a, b = old.split(" "), new.split(" ")
    out: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(("same", " ".join(a[i1:i2])))
            continue
        if op in ("delete", "replace"):
            out.append(("del", " ".join(a[i1:i2])))
        if op in ("insert", "replace"):
            out.append(("ins", " ".join(b[j1:j2])))
    return out


@dataclass
class SourceView:
    """A chunk's cited lines as ``(number, text)``, or why they cannot be shown."""

    lines: list[tuple[int, str]] = field(default_factory=list)
    note: str | None = None


def source_lines(memory: Memory, principal: Principal, record: MemoryRecord) -> SourceView | None:
    """The cited lines of the record's Markdown file, read through the agent's files
    (:meth:`Scope.files`), which refuse paths that leave the workspace, so the
    dashboard never opens a file a record merely names."""
    src = record.source
    if src is None:
        return None
    if record.agent_id is None:
        return SourceView(note="Open the cited file to see these lines.")
    start = src.start_line or 1
    count = (src.end_line or start) - start + 1 if src.start_line else None
    try:
        files = memory.scope(principal, record.user_id, record.agent_id).files()
        piece = files.read(src.path, start, count)
    except MemorydError as exc:  # a path the workspace refuses: say so instead of the lines
        return SourceView(note=f"Cannot show the lines: {exc.message}.")
    if piece.missing:
        return SourceView(note=f"{src.path} no longer exists in the workspace of {files.agent_id}.")
    return SourceView(lines=[(start + n, line) for n, line in enumerate(piece.text.split("\n"))])


# -- pipelines and audit (rendered from what their owners record) ------------------------------
def pipeline_status(
    memory: Memory, principal: Principal, scheduler: Any = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every registered pipeline (schedule, next run, last run) and the recorded runs,
    newest first, as ``GET /v1/pipelines`` shows them to this caller
    (:meth:`~memoryd.scope.WorkspaceAccess.pipelines`: notes and errors to admin keys
    only, other keys the runs of the agents they may use), each run with its error
    first among its errors, for the table."""
    keep = memory.settings.pipelines.keep_runs
    status = memory.scope(principal).workspaces().pipelines(scheduler, limit=keep)
    return status["pipelines"], _runs(status["runs"])


def _runs(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for run in runs:
        errors = [str(e) for e in run.get("errors") or []]
        if run.get("error") and str(run["error"]) not in errors:
            errors.insert(0, str(run["error"]))
        out.append({**run, "errors": errors, "notes": [str(n) for n in run.get("notes") or []]})
    return out


@dataclass
class DreamReport:
    """One ``## Dream`` section of an agent's ``DREAMS.md`` (written by the dream pipeline)."""

    agent: str
    title: str
    lines: list[str]


def dream_reports(memory: Memory, principal: Principal, *, per_agent: int = 3) -> list[DreamReport]:
    """The newest dream reports of each workspace agent the principal may access.

    ``DREAMS.md`` is the people-facing review surface (seed 002); it is read through
    the agent's files (:meth:`Scope.files`), which keep every read inside the workspace.
    """
    reports: list[DreamReport] = []
    for agent in memory.scope(principal).workspaces().agents():
        try:
            text = memory.scope(principal, agent_id=agent).files().dreams().text
        except MemorydError as exc:  # e.g. a DREAMS.md symlinked out of the workspace
            reports.append(DreamReport(agent, f"{AgentFiles.DREAMS} cannot be read", [str(exc)]))
            continue
        sections: list[DreamReport] = []
        for line in text.splitlines():
            if line.startswith("## "):
                sections.append(DreamReport(agent, line[3:].strip(), []))
            elif sections and line.strip():
                sections[-1].lines.append(line.strip().removeprefix("- "))
        dreams = [s for s in sections if s.title.lower().startswith("dream")]
        reports.extend(dreams[-per_agent:][::-1])
    return reports


def audit_entries(memory: Memory, limit: int, *, include_ui: bool = False) -> list[dict[str, Any]]:
    """Recent requests, newest first. The dashboard's own page and asset loads are left
    out unless asked for, so the API traffic is not buried under them."""
    entries = read_recent(memory.settings, limit * 4 if not include_ui else limit)
    if not include_ui:
        entries = [e for e in entries if not str(e.get("path") or "").startswith("/ui")]
    return entries[:limit]


def latency_summary(entries: Sequence[dict[str, Any]]) -> dict[str, Any]:
    latencies = sorted(
        float(e["latency_ms"]) for e in entries if isinstance(e.get("latency_ms"), int | float)
    )
    if not latencies:
        return {"count": len(entries), "p50": None, "p95": None, "max": None, "errors": 0}
    p95 = latencies[min(len(latencies) - 1, math.ceil(0.95 * len(latencies)) - 1)]
    return {
        "count": len(entries),
        "p50": statistics.median(latencies),
        "p95": p95,
        "max": latencies[-1],
        "errors": sum(1 for e in entries if int(e.get("status") or 0) >= 400),
    }


# -- rendering ----------------------------------------------------------------------------------
def _memory(request: Request) -> Memory:
    mem: Memory = request.app.state.memory
    return mem


def _principal(request: Request) -> Principal:
    return authenticate(_memory(request).settings, token_from(request))


def _auth_on(request: Request) -> bool:
    return bool(_memory(request).settings.auth.keys)


def render(
    request: Request,
    template: str,
    context: dict[str, Any],
    *,
    principal: Principal | None = None,
    status_code: int = 200,
) -> Response:
    mem = _memory(request)
    token = request.cookies.get(CSRF_COOKIE) or secrets.token_urlsafe(24)
    base = {
        "csrf": token,
        "principal": principal,
        "auth_on": _auth_on(request),
        "now": mem.clock(),
        "tiers": TIERS,
        "origins": [o.value for o in Origin],
        "nav": template.split(".")[0],
    }
    response = TEMPLATES.TemplateResponse(
        request, template, {**base, **context}, status_code=status_code
    )
    if request.cookies.get(CSRF_COOKIE) != token:
        _set_cookie(request, response, CSRF_COOKIE, token, path="/ui")
    _secure(response)
    return response


def _set_cookie(
    request: Request, response: Response, name: str, value: str, *, path: str, **kw: Any
) -> None:
    """A cookie scripts cannot read and other sites' requests never carry."""
    response.set_cookie(
        name,
        value,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path=path,
        **kw,
    )


def _secure(response: Response) -> None:
    response.headers["Content-Security-Policy"] = CSP
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "same-origin"
    response.headers["Cache-Control"] = "no-store"


def _error_page(request: Request, exc: MemorydError, principal: Principal | None) -> Response:
    titles = {401: "Sign in needed", 403: "Not allowed", 404: "Not found", 422: "Check the input"}
    return render(
        request,
        "error.html",
        {"error": exc, "title": titles.get(exc.status_code, "Something went wrong")},
        principal=principal,
        status_code=exc.status_code,
    )


def page(handler: Callable[..., Response], *, form: bool = False) -> Callable[..., Response]:
    """Resolve the principal, check same-origin writes, and turn memoryd errors into pages.

    The handler takes ``(request, principal, **params)``; FastAPI sees the same
    signature without ``principal`` (and, for a ``form`` page, with the form's
    ``csrf`` token, checked before the handler runs). Only ``MemorydError`` is
    caught: it carries the message and hint a person needs. Anything else is a
    bug and surfaces.
    """
    signature = inspect.signature(handler)

    @functools.wraps(handler)
    def wrapper(**params: Any) -> Response:
        request: Request = params.pop("request")
        token = params.pop("csrf", "")
        try:
            principal = _principal(request)
        except AuthenticationError:
            target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
            response = _redirect(f"/ui/login?{urlencode({'next': target})}")
            if request.cookies.get(COOKIE):
                response.delete_cookie(COOKIE, path="/")
            return response
        try:
            if request.method == "POST":
                _same_origin(request)
                _check_csrf(request, token)
            return handler(request, principal, **params)
        except MemorydError as exc:
            return _error_page(request, exc, principal)

    public = [p for name, p in signature.parameters.items() if name != "principal"]
    if form:
        csrf = inspect.Parameter("csrf", inspect.Parameter.KEYWORD_ONLY, default=Form(""))
        public.append(csrf.replace(annotation=str))
    setattr(wrapper, "__signature__", signature.replace(parameters=public))  # noqa: B010
    return wrapper


def form_page(handler: Callable[..., Response]) -> Callable[..., Response]:
    """:func:`page` for a form's POST: the form's ``csrf`` token must match its cookie."""
    return page(handler, form=True)


def _check_csrf(request: Request, token: str) -> None:
    cookie = request.cookies.get(CSRF_COOKIE, "")
    if not cookie or not token or not hmac.compare_digest(cookie.encode(), token.encode()):
        raise PermissionDeniedError(
            "this form's security token is missing or out of date",
            "reload the page and submit the form again",
        )


def _same_origin(request: Request) -> None:
    """Refuse form posts from other sites (the login cookie is SameSite=Strict as well)."""
    origin = request.headers.get("origin") or request.headers.get("referer")
    if origin and urlsplit(origin).netloc != request.headers.get("host", ""):
        raise PermissionDeniedError(
            "this form was posted from another site", "open the dashboard directly and try again"
        )


def _redirect(url: str) -> Response:
    response = RedirectResponse(url, status_code=303)
    _secure(response)
    return response


# -- pages ------------------------------------------------------------------------------------------
@router.get("", response_model=None)
@router.get("/", response_model=None)
@page
def overview(request: Request, principal: Principal) -> Response:
    mem = _memory(request)
    data = overview_data(mem, spans(mem, principal, None, None))
    g = data["growth"]
    charts = {
        "growth": {
            "type": "bar",
            "labels": g["labels"],
            "datasets": [
                {"label": "added, still active", "data": g["active"], "stack": "new"},
                {"label": "added, since deleted", "data": g["removed"], "stack": "new"},
                {"label": "active total", "data": g["total"], "type": "line", "yAxisID": "y2"},
            ],
        },
        "tier": chart("doughnut", data["by_tier"]),
        "origin": chart("doughnut", data["by_origin"]),
        "agent": chart("bar", dict(list(data["by_agent"].items())[:10]), horizontal=True),
        "category": chart("bar", dict(list(data["by_category"].items())[:10]), horizontal=True),
    }
    return render(request, "overview.html", {"data": data, "charts": charts}, principal=principal)


def _choices(mem: Memory, principal: Principal) -> dict[str, list[str]]:
    """Values for the filter dropdowns, from what exists in the principal's scope."""
    scopes = spans(mem, principal, None, None)
    active = Filters()
    return {
        "users": [u for u in counts_in(scopes, "user_id", active) if u],
        "agents": [a for a in counts_in(scopes, "agent_id", active) if a],
        "categories": [c for c in counts_in(scopes, "category", active) if c],
    }


@router.get("/search", response_model=None)
@page
def search(request: Request, principal: Principal) -> Response:
    mem = _memory(request)
    query = Query.parse(request.query_params.multi_items())
    hits: list[SearchHit] | None = None
    if query.q:
        hits = search_in(mem, principal, query, query.filters(mem))
    return render(
        request,
        "search.html",
        {
            "query": query,
            "hits": hits,
            "types": {h.id: memory_type(mem, h) for h in hits or []},
            # shared-pool hits from agents outside the key's scope: shown, not openable (as the API)
            "openable": {h.id for h in hits or [] if mem.scope(principal).sees(h.record)},
            "choices": _choices(mem, principal),
        },
        principal=principal,
    )


@router.get("/memories", response_model=None)
@page
def browse(request: Request, principal: Principal) -> Response:
    mem = _memory(request)
    query = Query.parse(request.query_params.multi_items())
    # a conversation added with inference shows once: its turns (the facts' evidence)
    # are listed when the origin filter asks for turns
    f = query.filters(mem).model_copy(update={"evidence_turns": query.origin == "turn"})
    scopes = spans(mem, principal, query.user or None, query.agent or None)
    total = count_in(scopes, f)
    pages = max(1, math.ceil(total / PAGE_SIZE))
    query.page = min(query.page, pages)
    records = list_in(scopes, f, limit=PAGE_SIZE, offset=(query.page - 1) * PAGE_SIZE)
    return render(
        request,
        "browse.html",
        {
            "query": query,
            "records": records,
            "types": {r.id: memory_type(mem, r) for r in records},
            "total": total,
            "pages": pages,
            "choices": _choices(mem, principal),
        },
        principal=principal,
    )


NOTICES = {
    "updated": "Saved. The old text is kept in the history below.",
    "deleted": "Deleted. It no longer appears in search or lists; restore it any time below.",
    "restored": "Restored. It is back in search and lists.",
}


@router.get("/memory/{memory_id}", response_model=None)
@page
def memory_page(request: Request, principal: Principal, memory_id: str) -> Response:
    return _memory_view(request, principal, memory_id)


def _memory_view(
    request: Request,
    principal: Principal,
    memory_id: str,
    *,
    error: MemorydError | None = None,
    draft: str | None = None,
) -> Response:
    mem = _memory(request)
    record = mem.scope(principal).record(memory_id, include_deleted=True)
    return render(
        request,
        "memory.html",
        {
            "record": record,
            "timeline": timeline(mem.history(record.id)),
            "lines": source_lines(mem, principal, record),
            "notice": NOTICES.get(request.query_params.get("notice", "")),
            "error": error,
            "draft": record.text if draft is None else draft,
            "confirm_delete": request.query_params.get("confirm") == "delete",
            "memory_type": memory_type(mem, record),
            # a workspace chunk mirrors its file: no edit or delete offered (Memory refuses)
            "read_only": record.origin == Origin.CHUNK,
        },
        principal=principal,
        status_code=error.status_code if error else 200,
    )


def memory_type(memory: Memory, record: MemoryRecord | SearchHit) -> str:
    """What search calls this memory: ``long_term``, ``short_term`` or ``shared``."""
    if isinstance(record, SearchHit):
        return record.memory_type or tier_of(record.record, shared_categories(memory))
    return tier_of(record, shared_categories(memory))


@router.post("/memory/{memory_id}/edit", response_model=None)
@form_page
def edit(
    request: Request,
    principal: Principal,
    memory_id: str,
    text: str = Form(""),
    category: str = Form(""),
) -> Response:
    scope = _memory(request).scope(principal)
    record = scope.record(memory_id, include_deleted=True)
    category = category.strip()
    metadata = {"category": category or None} if category != (record.category or "") else None
    new_text = text if text != record.text else None
    if new_text is None and metadata is None:
        return _redirect(f"/ui/memory/{record.id}")
    try:
        scope.update(record.id, new_text, metadata, reason="edited in the dashboard")
    except (InvalidInputError, ReadOnlyError) as exc:  # shown next to the form, draft kept
        return _memory_view(request, principal, memory_id, error=exc, draft=text)
    return _redirect(f"/ui/memory/{record.id}?notice=updated")


@router.post("/memory/{memory_id}/delete", response_model=None)
@form_page
def delete(request: Request, principal: Principal, memory_id: str) -> Response:
    scope = _memory(request).scope(principal)
    record = scope.record(memory_id, include_deleted=True)
    try:
        scope.delete(record.id, reason="dashboard")
    except ReadOnlyError as exc:  # a file excerpt: the page says which file to edit
        return _memory_view(request, principal, memory_id, error=exc)
    return _redirect(f"/ui/memory/{record.id}?notice=deleted")


@router.post("/memory/{memory_id}/restore", response_model=None)
@form_page
def restore(request: Request, principal: Principal, memory_id: str) -> Response:
    scope = _memory(request).scope(principal)
    record = scope.record(memory_id, include_deleted=True)
    scope.restore(record.id)
    return _redirect(f"/ui/memory/{record.id}?notice=restored")


@router.get("/pipelines", response_model=None)
@page
def pipelines(request: Request, principal: Principal) -> Response:
    scheduler = getattr(request.app.state, "pipeline_scheduler", None)
    specs, runs = pipeline_status(_memory(request), principal, scheduler)
    return render(
        request,
        "pipelines.html",
        {
            "runs": runs[:50],
            "pipelines": specs,
            "scheduler": scheduler is not None,
            "details": principal.admin,
            "dreams": dream_reports(_memory(request), principal),
        },
        principal=principal,
    )


@router.get("/audit", response_model=None)
@page
def audit(request: Request, principal: Principal) -> Response:
    principal.require_admin()
    include_ui = request.query_params.get("ui") == "1"
    entries = audit_entries(_memory(request), AUDIT_KEPT, include_ui=include_ui)
    pages = max(1, math.ceil(len(entries) / AUDIT_PAGE))
    try:
        number = min(max(1, int(request.query_params.get("page", "1"))), pages)
    except ValueError:
        number = 1
    shown = entries[(number - 1) * AUDIT_PAGE : number * AUDIT_PAGE]
    oldest_first = shown[::-1]
    latency_chart = {
        "type": "line",
        "labels": [_ts(e.get("ts"))[11:19] for e in oldest_first],
        "datasets": [
            {"label": "latency (ms)", "data": [e.get("latency_ms") for e in oldest_first]}
        ],
    }
    return render(
        request,
        "audit.html",
        {
            "entries": shown,
            "page": number,
            "pages": pages,
            "total": len(entries),
            "include_ui": include_ui,
            "summary": latency_summary(entries),
            "chart": latency_chart,
        },
        principal=principal,
    )


# -- sign in -----------------------------------------------------------------------------------------
def _safe_next(value: str | None) -> str:
    """Only paths inside the dashboard: never an open redirect to another site."""
    if value and value.startswith("/ui") and not value.startswith("//"):
        return value
    return "/ui"


@router.get("/login", response_model=None)
def login_form(request: Request) -> Response:
    if not _auth_on(request):
        return _redirect("/ui")
    return render(request, "login.html", {"next": _safe_next(request.query_params.get("next"))})


@router.post("/login", response_model=None)
def login(
    request: Request, key: str = Form(""), next: str = Form("/ui"), csrf: str = Form("")
) -> Response:
    target = _safe_next(next)
    key = key.strip()
    try:
        _same_origin(request)
        _check_csrf(request, csrf)
        authenticate(_memory(request).settings, key or None)
    except (AuthenticationError, PermissionDeniedError) as exc:
        return render(
            request, "login.html", {"next": target, "error": exc}, status_code=exc.status_code
        )
    response = _redirect(target)
    _set_cookie(request, response, COOKIE, key, path="/", max_age=60 * 60 * 24 * 30)
    return response


@router.post("/logout", response_model=None)
def logout(request: Request, csrf: str = Form("")) -> Response:
    try:
        _same_origin(request)
        _check_csrf(request, csrf)
    except PermissionDeniedError as exc:
        return _error_page(request, exc, None)
    response = _redirect("/ui/login" if _auth_on(request) else "/ui")
    response.delete_cookie(COOKIE, path="/")
    return response


# -- static files ---------------------------------------------------------------------------------
@router.get("/static/{path:path}", response_model=None)
def static(path: str) -> Response:
    """The dashboard's CSS/JS and the vendored libraries; nothing outside ``static/``."""
    root = STATIC_DIR.resolve()
    target = (root / path).resolve()
    if not target.is_relative_to(root) or not target.is_file():
        return Response("not found", status_code=404, media_type="text/plain")
    return FileResponse(target, headers={"Cache-Control": "public, max-age=3600"})
