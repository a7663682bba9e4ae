"""A database that cannot be reached: 503 with Retry-After, one log line per failure class per minute.

While PostgreSQL (or the SQLite file) is unreachable every page and API call
that needs it fails the same way. Instead of a 500 and a traceback each, the
answer is 503 with ``Retry-After`` (JSON under ``/api/``, a short page
elsewhere), and each web process logs one WARNING line per kind of failure per
``LOG_EVERY_SECONDS``, counting the failures it did not log. Nothing is kept
between requests, so the first request after the database returns is answered
normally (``CONN_HEALTH_CHECKS`` drops connections the outage broke).

Two doors lead here: ``DatabaseUnavailableMiddleware`` for failures in views and
templates, and ``views.server_error`` (the 500 handler) for failures in other
middleware (a session read, say). Both mark the request, so django.request's own
line for the answer is dropped (``leaderboard.logconfig.DatabaseOutageFilter``).
"""
from __future__ import annotations

import logging
import threading
import time

from django.db import InterfaceError, OperationalError
from django.http import HttpResponse, JsonResponse
from django.template.loader import render_to_string

log = logging.getLogger("leaderboard.outage")

RETRY_AFTER_SECONDS = 10
LOG_EVERY_SECONDS = 60.0
# A scoring task that found the database unreachable runs again this much later (leaderboard/core/tasks.py).
TASK_RETRY_SECONDS = 10
MESSAGE = "The database cannot be reached at the moment; nothing was changed. Try again in a few seconds."

_lock = threading.Lock()
_last_logged: dict[str, float] = {}
_unlogged: dict[str, int] = {}


def is_database_outage(exc: BaseException | None) -> bool:
    """A failure to reach or talk to the database (not a constraint or a bad query)."""
    return isinstance(exc, (OperationalError, InterfaceError))


def _failure_class(exc: BaseException) -> str:
    cause = exc.__cause__
    return f"{type(exc).__name__}" + (f" ({type(cause).__module__}.{type(cause).__name__})" if cause else "")


def outage_report(exc: BaseException, *, doing: str) -> None:
    """Log ``exc`` (and what is ``doing`` about it) unless a failure of its class, met doing the same,
    was logged in the last ``LOG_EVERY_SECONDS``; then only count it."""
    kind = _failure_class(exc)
    key = f"{kind} {doing}"
    now = time.monotonic()
    with _lock:
        last = _last_logged.get(key)
        if last is not None and now - last < LOG_EVERY_SECONDS:
            _unlogged[key] = _unlogged.get(key, 0) + 1
            return
        _last_logged[key] = now
        skipped = _unlogged.pop(key, 0)
    first_line = (str(exc).strip().splitlines() or [""])[0][:300]
    log.warning("database unreachable, %s: %s: %s%s", doing, kind, first_line,
                f" ({skipped} more such failures since the last line)" if skipped else "")


def outage_response(request, exc: BaseException) -> HttpResponse:
    """The 503 for ``request`` (JSON under /api/, a page elsewhere); logs through ``outage_report``."""
    outage_report(exc, doing="answering 503")
    request.database_outage = True  # django.request's line for this answer is dropped
    request_id = getattr(request, "request_id", "-")
    response: HttpResponse
    if request.path.startswith("/api/"):
        response = JsonResponse({"detail": MESSAGE, "errors": [{"row": None, "column": None, "message": MESSAGE}],
                                 "request_id": request_id}, status=503)
    else:
        response = HttpResponse(render_to_string("503.html", {"message": MESSAGE, "request_id": request_id}),
                                status=503)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    response["Cache-Control"] = "no-store"
    return response


class DatabaseUnavailableMiddleware:
    """A view or template that cannot reach the database answers 503 (``outage_response``), not 500."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if is_database_outage(exception):
            return outage_response(request, exception)
        return None
