"""A :class:`~memoryd.scope.Scope` on a running ``memoryd serve``, over HTTP.

:class:`MemoryClient` has the scope's operations, with the same arguments, and
answers with the same :mod:`memoryd.shapes` models, parsed from the
``/memory/*`` routes' JSON. So ``memoryd search --url ...`` is ``memoryd search``
against another machine: the CLI holds either a local scope
(``memory.scope(...)``) or this client, and calls the same methods. An operation
with options takes its signature from ``Scope`` itself (:func:`_forwards`), so an
option is written once; its body turns the arguments into the route's request.

Errors come back as the named memoryd errors the server raised (message and
hint intact), so a remote failure reads like a local one.
"""

from __future__ import annotations

import builtins
import functools
import inspect
from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, TypeVar
from urllib.parse import quote

import httpx

from memoryd import errors
from memoryd.errors import InvalidInputError, MemorydError, UpstreamError
from memoryd.scope import Scope
from memoryd.search.intent import Intent, analyse
from memoryd.shapes import Combined, Deleted, EventOut, FilterSpec, HistoryOut, HitOut, MemoryOut
from memoryd.shapes import Page as PageOut

P = ParamSpec("P")
R = TypeVar("R")


def _forwards(
    op: Callable[Concatenate[Scope, P], R],
) -> Callable[
    [Callable[[MemoryClient, dict[str, Any]], R]], Callable[Concatenate[MemoryClient, P], R]
]:
    """The client's ``op``, with the scope's signature (written once, in ``Scope``): the
    decorated body gets every argument by name, defaults filled in, to send as it is."""
    signature = inspect.signature(op)

    def wrap(
        send: Callable[[MemoryClient, dict[str, Any]], R],
    ) -> Callable[Concatenate[MemoryClient, P], R]:
        @functools.wraps(op)
        def call(client: MemoryClient, /, *args: P.args, **kwargs: P.kwargs) -> R:
            bound = signature.bind(None, *args, **kwargs)
            bound.apply_defaults()
            named = dict(bound.arguments)
            del named["self"]
            return send(client, named)

        return call

    return wrap


class MemoryClient:
    """HTTP client for a running memoryd, acting as ``user_id`` (and ``agent_id``)."""

    def __init__(
        self,
        url: str,
        api_key: str | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        timeout: float = 300.0,
    ) -> None:
        self.url = with_scheme(url).rstrip("/")
        self.user_id = user_id
        self.agent_id = agent_id
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(base_url=self.url, headers=headers, timeout=timeout)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> MemoryClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- transport ----------------------------------------------------------------------------
    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            raise UpstreamError(
                f"cannot reach memoryd at {self.url} ({type(exc).__name__})",
                "start it with `memoryd serve`, or check --url / MEMORYD_URL",
            ) from None
        try:
            body = response.json()
        except ValueError:
            body = None
        if response.status_code >= 400:
            raise _error_from(response.status_code, body, self.url)
        if body is None:
            raise UpstreamError(
                f"{self.url}{path} did not answer JSON", "check that --url points at memoryd"
            )
        return body

    def _scoped(self, **data: Any) -> dict[str, Any]:
        """``data`` with this client's user and agent; None values left out."""
        data = {"user_id": self.user_id, "agent_id": self.agent_id, **data}
        return {k: v for k, v in data.items() if v is not None}

    # -- the scope's operations ---------------------------------------------------------------
    def health(self) -> dict[str, Any]:
        result: dict[str, Any] = self._call("GET", "/health")
        return result

    @_forwards(Scope.add)
    def add(self, args: dict[str, Any]) -> builtins.list[EventOut]:
        metadata, category, event_at = args["metadata"], args["category"], args["event_at"]
        if category is not None:
            metadata = {**(metadata or {}), "category": category}
        payload = self._scoped(
            text=args["text"],
            texts=args["texts"],
            messages=args["messages"],
            run_id=args["run_id"],
            metadata=metadata,
            infer=args["infer"],
            custom_extraction_prompt=args["prompt"],
            timestamp=event_at.isoformat() if event_at else None,
        )
        body = self._call("POST", "/memory/add", json=payload)
        return [EventOut.model_validate(e) for e in body["results"]]

    @_forwards(Scope.update)
    def update(self, args: dict[str, Any]) -> MemoryOut:
        payload = {k: v for k, v in args.items() if v is not None}
        body = self._call("PUT", "/memory/update", json=payload)
        return MemoryOut.model_validate(body["result"])

    @_forwards(Scope.delete)
    def delete(self, args: dict[str, Any]) -> Deleted:
        memory_id, reason = args["memory_id"], args["reason"]
        params = {"reason": reason} if reason else None
        self._call("DELETE", f"/memory/{_quote(memory_id)}", params=params)
        return Deleted(id=memory_id)

    def restore(self, memory_id: str) -> MemoryOut:
        body = self._call("POST", f"/memory/restore/{_quote(memory_id)}")
        return MemoryOut.model_validate(body["result"])

    @_forwards(Scope.reset)
    def reset(self, args: dict[str, Any]) -> int:
        return int(self._call("DELETE", "/memory/reset", params=self._scoped(**args))["deleted"])

    def get(self, memory_id: str) -> MemoryOut:
        return MemoryOut.model_validate(self._call("GET", f"/memory/{_quote(memory_id)}")["result"])

    def history(self, memory_id: str) -> builtins.list[HistoryOut]:
        body = self._call("GET", f"/memory/history/{_quote(memory_id)}")
        return [HistoryOut.model_validate(h) for h in body["results"]]

    @_forwards(Scope.list)
    def list(self, args: dict[str, Any]) -> PageOut:
        spec = args["filters"] or FilterSpec()
        categories = [c for c in [spec.category, *(spec.categories or [])] if c]
        origins = [o for o in [spec.origin, *(spec.origins or [])] if o]
        if (
            len(categories) > 1
            or len(origins) > 1
            or spec.created_after
            or spec.created_before
            or spec.where
        ):
            raise InvalidInputError(
                "GET /memory/list filters by one category, one origin and a memory_type",
                "list one category at a time, or use search for the other filters",
            )
        params = self._scoped(
            run_id=args["run_id"],
            category=categories[0] if categories else None,
            origin=origins[0] if origins else None,
            memory_type=spec.memory_type,
            limit=args["limit"],
            offset=args["offset"],
            include_turns=args["include_turns"] or None,
        )
        page = self._call("GET", "/memory/list", params=params)
        return PageOut.model_validate(page)

    @_forwards(Scope.search)
    def search(self, args: dict[str, Any]) -> builtins.list[HitOut]:
        body = self._call("POST", "/memory/search", json=self._search_body(args))
        return [HitOut.model_validate(h) for h in body["results"]]

    @_forwards(Scope.search_combined)
    def search_combined(self, args: dict[str, Any]) -> Combined:
        body = self._call("POST", "/memory/search_combined", json=self._search_body(args))
        return Combined.model_validate(body)

    def _search_body(self, args: dict[str, Any]) -> dict[str, Any]:
        """A search's every argument as the route's field of the same name, scoped."""
        as_of = args.get("as_of")
        return self._scoped(
            **{
                **args,
                "filters": _filters(args["filters"]),
                "as_of": as_of.isoformat() if as_of is not None else None,
            }
        )

    def intent(self, query: str) -> Intent:
        """What the query is after: rules (the server's LLM is not offered over HTTP)."""
        return analyse(query)


def with_scheme(url: str) -> str:
    """``url``, with ``http://`` in front when it names no scheme (``127.0.0.1:8230``)."""
    url = url.strip()
    return url if "://" in url else f"http://{url}"


def _filters(spec: FilterSpec | None) -> dict[str, Any] | None:
    return spec.model_dump(mode="json", exclude_none=True) or None if spec else None


def _quote(memory_id: str) -> str:
    return quote(memory_id, safe="")


def _error_from(status: int, body: Any, url: str) -> MemorydError:
    """The named memoryd error a server answer stands for."""
    if isinstance(body, dict) and "detail" in body:
        name = str(body.get("error", ""))
        cls = getattr(errors, name, None)
        detail = body["detail"] if isinstance(body["detail"], str) else str(body["detail"])
        hint = body.get("hint")
        if isinstance(cls, type) and issubclass(cls, MemorydError):
            return cls(detail, hint)
        if status in (401, 403):
            return errors.PermissionDeniedError(detail, hint or "check --key / MEMORYD_API_KEY")
        return MemorydError(detail, hint)
    return UpstreamError(f"memoryd at {url} answered HTTP {status}", "check the server's log")
