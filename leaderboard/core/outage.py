"""A database that cannot be reached: 503 with Retry-After, one log line per failure class per minute.

While PostgreSQL (or the SQLite file) is unreachable every page and API call
that needs it fails the same way. Instead of a 500 and a traceback each, the
answer is 503 with ``Retry-After`` (JSON under ``/api/``, a short page
elsewhere), and each web process logs one WARNING line per kind of failure per
``LOG_EVERY_SECONDS``, counting the failures it did not log. Nothing is kept
between requests, so the first request after the database returns is answered
normally (``CONN_HEALTH_CHECKS`` drops connections the outage broke).

A conflict between transactions is no outage: PostgreSQL broke off one transaction
(a deadlock, a serialization failure, a lock not obtained in time: SQLSTATE
40P01, 40001, 55P03) and is answering. The participant gets the same fair 503
with ``Retry-After`` ("try again"), but the line for the operator names what it
was, as an ERROR with the traceback: two requests taking the same locks in
opposite orders is a bug to fix. SQLite's "database is locked" (another writer
held the file past the busy timeout) is an outage line that says "busy".

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
CONFLICT_MESSAGE = ("Another request was changing the same data at the same moment, so this one was stopped "
                    "before it finished. Try again in a few seconds.")
# SQLSTATEs of a transaction PostgreSQL broke off to let another go on (psycopg's DeadlockDetected,
# SerializationFailure, LockNotAvailable): the database is there; a retry clears them.
CONFLICTS = {"40P01": "deadlock detected", "40001": "serialization failure", "55P03": "lock not available"}

_lock = threading.Lock()
_last_logged: dict[str, float] = {}
_unlogged: dict[str, int] = {}


def database_conflict(exc: BaseException | None) -> str | None:
    """What a conflict between transactions is (``"deadlock detected (SQLSTATE 40P01)"``) when ``exc``,
    or the driver's error Django wrapped in it, is one of ``CONFLICTS``; else None."""
    for _ in range(3):  # Django's error, psycopg's as its cause
        if exc is None:
            break
        code = getattr(exc, "sqlstate", None) or getattr(exc, "pgcode", None)
        if isinstance(code, str) and code in CONFLICTS:
            return f"{CONFLICTS[code]} (SQLSTATE {code})"
        exc = exc.__cause__
    return None


def is_database_outage(exc: BaseException | None) -> bool:
    """A failure to reach or talk to the database (not a constraint, a bad query, or a conflict
    between transactions: ``database_conflict``)."""
    return isinstance(exc, (OperationalError, InterfaceError)) and database_conflict(exc) is None


def answers_503(exc: BaseException | None) -> bool:
    """Is the fair answer to ``exc`` a 503 with Retry-After: an outage, or a conflict a retry clears?"""
    return is_database_outage(exc) or database_conflict(exc) is not None


def _failure_class(exc: BaseException) -> str:
    cause = exc.__cause__
    return f"{type(exc).__name__}" + (f" ({type(cause).__module__}.{type(cause).__name__})" if cause else "")


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [""])[0][:300]


def outage_report(exc: BaseException, *, doing: str) -> None:
    """Log ``exc`` (and what is ``doing`` about it) unless a failure of its class, met doing the same,
    was logged in the last ``LOG_EVERY_SECONDS``; then only count it. A conflict between transactions
    (``database_conflict``) is a bug, not an outage: an ERROR with its traceback, every time."""
    conflict = database_conflict(exc)
    if conflict is not None:
        log.error("%s, not an outage: this transaction conflicted with another one (a bug to fix if they take "
                  "the same locks in opposite orders), %s: %s", conflict, doing, _first_line(exc), exc_info=exc)
        return
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
    first_line = _first_line(exc)
    # SQLite's file held by another writer past the busy timeout: busy, not gone.
    what = "database busy" if "database is locked" in first_line else "database unreachable"
    log.warning("%s, %s: %s: %s%s", what, doing, kind, first_line,
                f" ({skipped} more such failures since the last line)" if skipped else "")


def outage_response(request, exc: BaseException) -> HttpResponse:
    """The 503 for ``request`` (JSON under /api/, a page elsewhere); logs through ``outage_report``."""
    outage_report(exc, doing="answering 503")
    request.database_outage = True  # django.request's line for this answer is dropped
    request_id = getattr(request, "request_id", "-")
    conflict = database_conflict(exc) is not None
    message = CONFLICT_MESSAGE if conflict else MESSAGE
    response: HttpResponse
    if request.path.startswith("/api/"):
        response = JsonResponse({"detail": message, "errors": [{"row": None, "column": None, "message": message}],
                                 "request_id": request_id}, status=503)
    else:
        response = HttpResponse(render_to_string("503.html", {"message": message, "request_id": request_id,
                                                            "conflict": conflict}),
                                status=503)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    response["Cache-Control"] = "no-store"
    return response


class DatabaseUnavailableMiddleware:
    """A view or template that cannot reach the database, or whose transaction PostgreSQL broke off in
    a conflict, answers 503 (``outage_response``), not 500."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if answers_503(exception):
            return outage_response(request, exception)
        return None
