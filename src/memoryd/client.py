"""One interface to memory, local or remote, speaking the API's JSON shapes.

:class:`MemoryClient` talks to a running ``memoryd serve`` over HTTP (the
``/memory/*`` routes); :class:`LocalBackend` runs the same operations on a
:class:`~memoryd.core.Memory` in this process. Both answer with the dicts of
:mod:`memoryd.api.shapes`, so the CLI prints the same thing either way and
``memoryd search --url ...`` is ``memoryd search`` against another machine.

Errors come back as the named memoryd errors the server raised (message and
hint intact), so a remote failure reads like a local one.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any, Protocol
from urllib.parse import quote

import httpx

from memoryd import errors
from memoryd.errors import MemorydError, UpstreamError
from memoryd.models import Filters
from memoryd.search.intent import Intent, analyse


class MemoryBackend(Protocol):
    def add(
        self,
        text: str | None = None,
        *,
        messages: Sequence[dict[str, Any]] | None = None,
        user_id: str,
        agent_id: str | None = None,
        run_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        infer: bool = True,
        prompt: str | None = None,
    ) -> builtins.list[dict[str, Any]]: ...

    def search(
        self,
        query: str,
        *,
        user_id: str,
        agent_id: str | None = None,
        run_id: str | None = None,
        top_k: int = 5,
        min_score: float | None = None,
        time_decay: bool = True,
        mode: str = "hybrid",
        include_archived: bool = False,
        categories: Sequence[str] | None = None,
    ) -> builtins.list[dict[str, Any]]: ...

    def search_combined(
        self,
        query: str,
        *,
        user_id: str,
        agent_id: str | None = None,
        long_term_top_k: int = 5,
        short_term_top_k: int = 5,
        recent_days: int = 7,
        min_score: float | None = None,
        time_decay: bool = True,
        mode: str = "hybrid",
        categories: Sequence[str] | None = None,
    ) -> builtins.list[dict[str, Any]]: ...

    def intent(self, query: str) -> Intent:
        """What the query is after (``--smart``): the server's LLM when it is local and
        configured, else rules."""
        ...

    def list(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        category: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> dict[str, Any]: ...

    def get(self, memory_id: str) -> dict[str, Any]: ...
    def update(
        self, memory_id: str, text: str | None = None, metadata: dict[str, Any] | None = None
    ) -> dict[str, Any]: ...
    def delete(self, memory_id: str) -> dict[str, Any]: ...
    def restore(self, memory_id: str) -> dict[str, Any]: ...
    def history(self, memory_id: str) -> builtins.list[dict[str, Any]]: ...
    def reset(
        self, *, user_id: str, agent_id: str | None = None, run_id: str | None = None
    ) -> int: ...
    def close(self) -> None: ...


class MemoryClient:
    """HTTP client for a running memoryd."""

    def __init__(self, url: str, api_key: str | None = None, timeout: float = 300.0) -> None:
        self.url = url.rstrip("/")
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

    @staticmethod
    def _drop_none(data: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in data.items() if v is not None}

    # -- operations ---------------------------------------------------------------------------
    def health(self) -> dict[str, Any]:
        result: dict[str, Any] = self._call("GET", "/health")
        return result

    def add(
        self,
        text: str | None = None,
        *,
        messages: Sequence[dict[str, Any]] | None = None,
        user_id: str,
        agent_id: str | None = None,
        run_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        infer: bool = True,
        prompt: str | None = None,
    ) -> builtins.list[dict[str, Any]]:
        payload = self._drop_none(
            {
                "text": text,
                "messages": list(messages) if messages is not None else None,
                "user_id": user_id,
                "agent_id": agent_id,
                "run_id": run_id,
                "metadata": metadata,
                "infer": infer,
                "custom_extraction_prompt": prompt,
            }
        )
        results: builtins.list[dict[str, Any]] = self._call("POST", "/memory/add", json=payload)[
            "results"
        ]
        return results

    def search(
        self,
        query: str,
        *,
        user_id: str,
        agent_id: str | None = None,
        run_id: str | None = None,
        top_k: int = 5,
        min_score: float | None = None,
        time_decay: bool = True,
        mode: str = "hybrid",
        include_archived: bool = False,
        categories: Sequence[str] | None = None,
    ) -> builtins.list[dict[str, Any]]:
        payload = self._drop_none(
            {
                "query": query,
                "user_id": user_id,
                "agent_id": agent_id,
                "run_id": run_id,
                "top_k": top_k,
                "min_score": min_score,
                "time_decay": time_decay,
                "mode": mode,
                "include_archived": include_archived,
                "filters": {"categories": list(categories)} if categories else None,
            }
        )
        results: builtins.list[dict[str, Any]] = self._call("POST", "/memory/search", json=payload)[
            "results"
        ]
        return results

    def search_combined(
        self,
        query: str,
        *,
        user_id: str,
        agent_id: str | None = None,
        long_term_top_k: int = 5,
        short_term_top_k: int = 5,
        recent_days: int = 7,
        min_score: float | None = None,
        time_decay: bool = True,
        mode: str = "hybrid",
        categories: Sequence[str] | None = None,
    ) -> builtins.list[dict[str, Any]]:
        payload = self._drop_none(
            {
                "query": query,
                "user_id": user_id,
                "agent_id": agent_id,
                "long_term_top_k": long_term_top_k,
                "short_term_top_k": short_term_top_k,
                "recent_days": recent_days,
                "min_score": min_score,
                "time_decay": time_decay,
                "mode": mode,
                "filters": {"categories": list(categories)} if categories else None,
            }
        )
        results: builtins.list[dict[str, Any]] = self._call(
            "POST", "/memory/search_combined", json=payload
        )["results"]
        return results

    def intent(self, query: str) -> Intent:
        return analyse(query)  # the server's LLM is not offered over HTTP: rules

    def list(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        category: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> dict[str, Any]:
        params = self._drop_none(
            {
                "user_id": user_id,
                "agent_id": agent_id,
                "run_id": run_id,
                "category": category,
                "limit": limit,
                "offset": offset,
            }
        )
        page = self._call("GET", "/memory/list", params=params)
        return {"results": page["results"], "total": page["total"]}

    def get(self, memory_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._call("GET", f"/memory/{_quote(memory_id)}")["result"]
        return result

    def update(
        self, memory_id: str, text: str | None = None, metadata: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        payload = self._drop_none({"memory_id": memory_id, "text": text, "metadata": metadata})
        result: dict[str, Any] = self._call("PUT", "/memory/update", json=payload)["result"]
        return result

    def delete(self, memory_id: str) -> dict[str, Any]:
        self._call("DELETE", f"/memory/{_quote(memory_id)}")
        return {"id": memory_id, "deleted": True}

    def restore(self, memory_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._call("POST", f"/memory/restore/{_quote(memory_id)}")[
            "result"
        ]
        return result

    def history(self, memory_id: str) -> builtins.list[dict[str, Any]]:
        results: builtins.list[dict[str, Any]] = self._call(
            "GET", f"/memory/history/{_quote(memory_id)}"
        )["results"]
        return results

    def reset(self, *, user_id: str, agent_id: str | None = None, run_id: str | None = None) -> int:
        params = self._drop_none({"user_id": user_id, "agent_id": agent_id, "run_id": run_id})
        return int(self._call("DELETE", "/memory/reset", params=params)["deleted"])


class LocalBackend:
    """The same operations on a :class:`~memoryd.core.Memory` in this process."""

    def __init__(self, memory: Any) -> None:
        from memoryd.core import Memory

        self.memory: Memory = memory
        self._shared = memory.settings.search.shared_categories

    def close(self) -> None:
        self.memory.close()

    def add(
        self,
        text: str | None = None,
        *,
        messages: Sequence[dict[str, Any]] | None = None,
        user_id: str,
        agent_id: str | None = None,
        run_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        infer: bool = True,
        prompt: str | None = None,
    ) -> builtins.list[dict[str, Any]]:
        from memoryd.api.shapes import event_out

        events = self.memory.add(
            text,
            messages=messages,
            user_id=user_id,
            agent_id=agent_id,
            run_id=run_id,
            metadata=metadata,
            infer=infer,
            prompt=prompt,
            actor="cli",
        )
        return [event_out(e) for e in events]

    def search(
        self,
        query: str,
        *,
        user_id: str,
        agent_id: str | None = None,
        run_id: str | None = None,
        top_k: int = 5,
        min_score: float | None = None,
        time_decay: bool = True,
        mode: str = "hybrid",
        include_archived: bool = False,
        categories: Sequence[str] | None = None,
    ) -> builtins.list[dict[str, Any]]:
        from memoryd.api.shapes import hit_out

        hits = self.memory.search(
            query,
            user_id=user_id,
            agent_id=agent_id,
            run_id=run_id,
            top_k=top_k,
            min_score=min_score,
            time_decay=time_decay,
            mode=mode,
            include_archived=include_archived,
            filters=Filters(categories=list(categories)) if categories else None,
        )
        return [hit_out(h) for h in hits]

    def search_combined(
        self,
        query: str,
        *,
        user_id: str,
        agent_id: str | None = None,
        long_term_top_k: int = 5,
        short_term_top_k: int = 5,
        recent_days: int = 7,
        min_score: float | None = None,
        time_decay: bool = True,
        mode: str = "hybrid",
        categories: Sequence[str] | None = None,
    ) -> builtins.list[dict[str, Any]]:
        from memoryd.api.shapes import hit_out

        combined = self.memory.search_combined(
            query,
            user_id=user_id,
            agent_id=agent_id,
            long_term_top_k=long_term_top_k,
            short_term_top_k=short_term_top_k,
            recent_days=recent_days,
            min_score=min_score,
            time_decay=time_decay,
            mode=mode,
            filters=Filters(categories=list(categories)) if categories else None,
        )
        return [hit_out(h) for h in combined.results]

    def intent(self, query: str) -> Intent:
        return analyse(query, self.memory.llm)

    def list(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        category: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> dict[str, Any]:
        from memoryd.api.shapes import record_out

        f = Filters(
            user_id=user_id,
            agent_id=agent_id,
            run_id=run_id,
            categories=[category] if category else None,
        )
        records = self.memory.list(filters=f, limit=limit, offset=offset)
        return {
            "results": [record_out(r, self._shared) for r in records],
            "total": self.memory.count(f),
        }

    def get(self, memory_id: str) -> dict[str, Any]:
        from memoryd.api.shapes import record_out

        return record_out(self.memory.get(memory_id), self._shared)

    def update(
        self, memory_id: str, text: str | None = None, metadata: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        from memoryd.api.shapes import record_out

        record = self.memory.update(memory_id, text, metadata=metadata, actor="cli")
        return record_out(record, self._shared)

    def delete(self, memory_id: str) -> dict[str, Any]:
        record = self.memory.delete(memory_id, actor="cli")
        return {"id": record.id, "deleted": True}

    def restore(self, memory_id: str) -> dict[str, Any]:
        from memoryd.api.shapes import record_out

        return record_out(self.memory.restore(memory_id, actor="cli"), self._shared)

    def history(self, memory_id: str) -> builtins.list[dict[str, Any]]:
        from memoryd.api.shapes import history_out

        return [history_out(h) for h in self.memory.history(memory_id)]

    def reset(self, *, user_id: str, agent_id: str | None = None, run_id: str | None = None) -> int:
        return self.memory.reset(user_id=user_id, agent_id=agent_id, run_id=run_id)


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
