"""Exceptions: every failure of a call is a ``LeaderboardError``.

HTTP errors carry the server's ``errors`` list (``row``, ``column``,
``message``) and its ``detail``; the class says what happened, so scripts can
catch exactly what they handle:

- ``InvalidRequest`` (400, 422) and its ``PayloadTooLarge`` (413): a rejected file or request
- ``AuthenticationFailed`` (401), ``PermissionDenied`` (403), ``NotFound`` (404)
- ``Conflict`` (409): no round open, a closed round, a reused idempotency key
- ``RateLimited`` (429) and its ``DailyLimitReached``: ``retry_after`` and ``reset_at``
- ``ServerError`` (5xx)

``NetworkError`` is a failure to get any answer (after the retries that were
safe); ``WaitTimeout`` is ``Client.wait`` running out of time; ``NoOpenRound``
is asking for the open round of a benchmark that has none.

``OutdatedClientWarning`` is a warning, not an error: the server says it supports
only newer clients.
"""
from __future__ import annotations

import datetime as dt
import email.utils
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ErrorItem:
    """One problem the server found: ``row`` counts file lines with the header as row 1."""

    message: str
    row: int | None = None
    column: str | None = None

    @classmethod
    def from_json(cls, item: Any) -> ErrorItem:
        if not isinstance(item, dict):
            return cls(message=str(item))
        row = item.get("row")
        return cls(message=str(item.get("message", "")), row=row if isinstance(row, int) else None,
                   column=item.get("column"))

    def __str__(self) -> str:
        where = []
        if self.row is not None:
            where.append(f"row {self.row}")
        if self.column:
            where.append(f"column {self.column}")
        return f"{', '.join(where)}: {self.message}" if where else self.message


class LeaderboardError(Exception):
    """Base class of every error the client raises."""


class ApiError(LeaderboardError):
    """The server answered with an error status."""

    def __init__(self, status: int, detail: str, errors: list[ErrorItem] | None = None, *,
                 body: Any = None, headers: dict[str, str] | None = None, method: str = "", url: str = ""):
        self.status = status
        self.detail = detail
        self.errors = list(errors or [])
        self.body = body
        self.headers = dict(headers or {})
        self.method = method
        self.url = url
        super().__init__(self._text())

    def _text(self) -> str:
        lines = [f"{self.status}: {self.detail}"]
        if len(self.errors) > 1 or (self.errors and str(self.errors[0]) != self.detail):
            lines.extend(f"  {e}" for e in self.errors)
        return "\n".join(lines)


class InvalidRequest(ApiError):
    """400/422: the server rejected the request or the file; ``errors`` names every problem."""


class PayloadTooLarge(InvalidRequest):
    """413: the file is over the benchmark's size limit."""


class AuthenticationFailed(ApiError):
    """401: no token, or an invalid or revoked one."""


class PermissionDenied(ApiError):
    """403: the token's user may not do this (staff actions, unrevealed private boards)."""


class NotFound(ApiError):
    """404: no such benchmark, round or submission (or not yours)."""


class Conflict(ApiError):
    """409: not possible in the current state (no round open, round closed, key reused)."""


class ServerError(ApiError):
    """5xx: the server failed; retried first where that was safe."""


class RateLimited(ApiError):
    """429: too many requests. ``retry_after`` in seconds; ``reset_at`` when to try again (UTC)."""

    def __init__(self, *args: Any, retry_after: float | None = None, reset_at: dt.datetime | None = None,
                 **kwargs: Any):
        self.retry_after = retry_after
        self.reset_at = reset_at
        super().__init__(*args, **kwargs)


class DailyLimitReached(RateLimited):
    """429 past the benchmark's daily submission limit; ``reset_at`` is when the UTC day resets."""


class NetworkError(LeaderboardError):
    """No answer from the server (connection refused, reset, timed out), after any safe retries."""

    def __init__(self, message: str, *, method: str = "", url: str = "", attempts: int = 1):
        self.method = method
        self.url = url
        self.attempts = attempts
        super().__init__(message)


class WaitTimeout(LeaderboardError):
    """``Client.wait`` gave up; ``submission`` is the last status seen."""

    def __init__(self, submission: Any, timeout: float):
        self.submission = submission
        self.timeout = timeout
        super().__init__(f"submission {submission.id} is still {submission.status} after {timeout:g} s")


class NoOpenRound(LeaderboardError):
    """The benchmark has no open round (asked for 'the open round' without a number)."""


class OutdatedClientWarning(UserWarning):
    """The server supports only clients newer than this one (its ``X-Min-Client-Version``)."""


_BY_STATUS: dict[int, type[ApiError]] = {
    400: InvalidRequest, 401: AuthenticationFailed, 403: PermissionDenied, 404: NotFound, 409: Conflict,
    413: PayloadTooLarge, 422: InvalidRequest, 429: RateLimited,
}


def parse_retry_after(value: str | None, *, now: dt.datetime | None = None) -> float | None:
    """Retry-After as seconds: either delta-seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    now = now or dt.datetime.now(dt.timezone.utc)
    return max(0.0, (when - now).total_seconds())


def parse_datetime(value: Any) -> dt.datetime | None:
    if not value or not isinstance(value, str):
        return None
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.timezone.utc)


def error_from_response(status: int, body: Any, headers: dict[str, str], *, text: str = "", reason: str = "",
                        method: str = "", url: str = "") -> ApiError:
    """The exception for an error answer, from its status, parsed JSON body (or None) and headers."""
    errors: list[ErrorItem] = []
    detail = ""
    if isinstance(body, dict):
        raw = body.get("errors")
        if isinstance(raw, list):
            errors = [ErrorItem.from_json(item) for item in raw]
        detail = str(body.get("detail") or "")
    if not detail and errors:
        detail = errors[0].message
    if not detail:  # not the API's error shape (a proxy's page, an unknown path): say what was asked
        detail = reason or _first_line(text) or f"HTTP {status}"
        if url:
            detail += f" ({method} {url})" if method else f" ({url})"
    if not errors:
        errors = [ErrorItem(detail)]
    cls = _BY_STATUS.get(status) or (ServerError if status >= 500 else ApiError)
    common = {"body": body, "headers": headers, "method": method, "url": url}
    if cls is RateLimited:
        lower = {k.lower(): v for k, v in headers.items()}
        retry_after = parse_retry_after(lower.get("retry-after"))
        reset_at = parse_datetime(body.get("reset_at")) if isinstance(body, dict) else None
        if reset_at is not None:
            return DailyLimitReached(status, detail, errors, retry_after=retry_after, reset_at=reset_at, **common)
        if retry_after is not None:
            reset_at = dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=retry_after)
        return RateLimited(status, detail, errors, retry_after=retry_after, reset_at=reset_at, **common)
    return cls(status, detail, errors, **common)


def _first_line(text: str) -> str:
    for line in (text or "").splitlines():
        line = line.strip()
        if line and not line.startswith("<"):
            return line[:200]
    return ""
