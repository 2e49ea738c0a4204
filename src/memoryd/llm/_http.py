"""One POST with retries, shared by the HTTP providers.

Timeouts, connection errors, 429 and 5xx are retried (``retries`` extra
attempts, short backoff); any other 4xx is not, since asking again will not
help. Every failure becomes an :class:`UpstreamError` that names the endpoint
and the setting to check, and never contains the API key or the prompt.
"""

from __future__ import annotations

import time
from typing import Any

import httpx

from memoryd.errors import UpstreamError

_RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}


def post_json(
    client: httpx.Client,
    path: str,
    payload: dict[str, Any],
    *,
    what: str,
    settings_prefix: str,
    retries: int,
    backoff_s: float = 0.5,
) -> dict[str, Any]:
    """POST ``payload`` and return the decoded JSON object of a 2xx answer."""
    attempts = max(1, retries + 1)
    last = ""
    for attempt in range(attempts):
        if attempt:
            time.sleep(backoff_s * attempt)
        try:
            response = client.post(path, json=payload)
        except httpx.TimeoutException:
            last = f"timed out after {client.timeout.read}s"
            continue
        except httpx.TransportError as exc:
            last = f"could not be reached ({type(exc).__name__})"
            continue
        if response.status_code in _RETRY_STATUS:
            last = f"answered HTTP {response.status_code}"
            continue
        if response.status_code >= 400:
            raise UpstreamError(
                f"{what} at {client.base_url} answered HTTP {response.status_code}: "
                f"{_excerpt(response)}",
                f"check {settings_prefix}BASE_URL, __MODEL and __API_KEY; nothing was stored",
            )
        try:
            data = response.json()
        except ValueError:
            raise UpstreamError(
                f"{what} at {client.base_url} answered something that is not JSON",
                f"check that {settings_prefix}BASE_URL points at the API itself",
            ) from None
        if not isinstance(data, dict):
            raise UpstreamError(
                f"{what} at {client.base_url} answered JSON that is not an object",
                f"check that {settings_prefix}BASE_URL speaks the expected protocol",
            )
        return data
    raise UpstreamError(
        f"{what} at {client.base_url} {last} ({attempts} attempt{'s' if attempts > 1 else ''})",
        f"nothing was stored; retry later, or raise {settings_prefix}TIMEOUT_S / __RETRIES",
    )


def _excerpt(response: httpx.Response, limit: int = 300) -> str:
    text = response.text.strip().replace("\n", " ")
    return text[:limit] + ("…" if len(text) > limit else "")
