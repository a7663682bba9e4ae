"""Logging for every process (web, worker, beat, gunicorn): one format, a request id on every line.

A leaf module (no Django import): ``leaderboard/settings.py`` builds ``LOGGING``
from it, ``leaderboard/celery.py`` applies that to Celery's processes, and
``leaderboard/gunicorn_conf.py`` hands the same dictionary to gunicorn.

Lines go to stderr, as plain text or, with ``LOG_FORMAT=json``, one JSON
object per line. Each carries the id of the request (or task) it was written
for: the middleware sets it per request (and returns it in ``X-Request-ID``),
the Celery signals per task.
"""
from __future__ import annotations

import datetime as dt
import json
import logging
import os
import threading
from contextvars import ContextVar

# The id of the request or task the current thread works for; "-" outside one.
# Set, not reset, per request: a gthread worker thread serves one request at a
# time, and gunicorn's access line written after the response keeps the id.
request_id_var: ContextVar[str] = ContextVar("request_id", default="-")


class RequestIdFilter(logging.Filter):
    """Adds ``record.request_id`` (from the context) to every record it sees."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not getattr(record, "request_id", None):
            record.request_id = request_id_var.get()
        return True


class QuietRoutineFilter(logging.Filter):
    """Drops Celery's INFO lines about the periodic jobs (sent, received, succeeded: several a minute).

    The jobs say themselves when they did something (``leaderboard.submissions``
    "sweep: ...", ``leaderboard.rounds`` "round N closed at its closes_at",
    "sweep: N truth versions requeued", ``leaderboard.notifications`` "notifications: ...");
    with LOG_LEVEL=DEBUG the sweep also says when it found nothing.
    """

    ROUTINE = ("sweep_stuck_submissions", "sweep-stuck-submissions", "sweep_round_versions",
               "sweep-round-versions", "close_due_rounds", "close-due-rounds",
               "notifications.sweep", "sweep-notifications")

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno != logging.INFO or not record.name.startswith("celery"):
            return True
        message = record.getMessage()
        return not any(word in message for word in self.ROUTINE)


class RepeatedTracebackFilter(logging.Filter):
    """Writes the traceback of one cause once per ``window`` seconds, not once per occurrence.

    A cause is the logger, the exception's type and the line that raised it. Within
    the window a repeat keeps its line (with its request id) but not its traceback,
    which the formatters replace by a note pointing at the one shown; after
    ``max_lines`` repeats the rest of the window is dropped and counted. The next
    full traceback of that cause says how many were left out. Only the console's
    lines are thinned: the record itself is not changed, so Sentry (when set up)
    still receives every error whole.
    """

    def __init__(self, window: float = 60.0, max_lines: int = 20):
        super().__init__()
        self.window, self.max_lines = window, max_lines
        self._lock = threading.Lock()
        self._seen: dict[tuple, list] = {}  # cause -> [shown at, repeats written, repeats dropped]

    @staticmethod
    def _cause(record: logging.LogRecord) -> tuple:
        exc_type, _, tb = record.exc_info or (None, None, None)
        where = ("", 0)
        while tb is not None:
            where = (tb.tb_frame.f_code.co_filename, tb.tb_lineno)
            tb = tb.tb_next
        return record.name, getattr(exc_type, "__qualname__", str(exc_type)), where

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.exc_info or record.exc_info[0] is None:
            return True
        cause = self._cause(record)
        now = record.created
        with self._lock:
            seen = self._seen.get(cause)
            if seen is None or now - seen[0] >= self.window:
                if len(self._seen) > 1000:  # forget causes quiet for a window
                    self._seen = {k: v for k, v in self._seen.items() if now - v[0] < self.window}
                if seen is not None and seen[1] + seen[2]:
                    record.traceback_repeats = (f"this traceback repeated {seen[1] + seen[2]} times in the "
                                                f"{self.window:.0f} s after the last one shown")
                self._seen[cause] = [now, 0, 0]
                return True
            if seen[1] >= self.max_lines:
                seen[2] += 1
                return False
            seen[1] += 1
            shown = dt.datetime.fromtimestamp(seen[0], tz=dt.timezone.utc).strftime("%H:%M:%S")
        exc_type = cause[1]
        record.traceback_omitted = (f"{exc_type} at {os.path.basename(cause[2][0])}:{cause[2][1]}; its traceback "
                                    f"was logged at {shown} UTC and is shown once per {self.window:.0f} s")
        return True


def _without_traceback(record: logging.LogRecord, format_it) -> str:
    """``format_it(record)`` as if the record had no exception attached (the record is restored after)."""
    saved = record.exc_info, record.exc_text
    record.exc_info = record.exc_text = None
    try:
        return format_it(record)
    finally:
        record.exc_info, record.exc_text = saved


class PlainFormatter(logging.Formatter):
    """The plain line; a repeated traceback (``RepeatedTracebackFilter``) becomes a note on the line."""

    def format(self, record: logging.LogRecord) -> str:
        omitted = getattr(record, "traceback_omitted", None)
        if omitted:
            return _without_traceback(record, super().format) + f" [{omitted}]"
        line = super().format(record)
        repeats = getattr(record, "traceback_repeats", None)
        return f"{line}\n[{repeats}]" if repeats else line
class DatabaseOutageFilter(logging.Filter):
    """Drops django.request's line for a 503 answered because the database is unreachable.

    ``leaderboard/core/outage.py`` logs those itself, one line per kind of failure per minute,
    instead of one line (and a traceback) per request.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.name == "django.request"
                    and getattr(getattr(record, "request", None), "database_outage", False))


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, request_id, and the traceback if any."""

    def format(self, record: logging.LogRecord) -> str:
        out = {
            "time": dt.datetime.fromtimestamp(record.created, tz=dt.timezone.utc).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", None) or request_id_var.get(),
            "process": record.process,
        }
        status = getattr(record, "status_code", None)
        if status is not None:
            out["status"] = status
        request = getattr(record, "request", None)
        if request is not None and hasattr(request, "path"):  # django.request passes the request
            out["method"] = getattr(request, "method", None)
            out["path"] = request.path
        if record.exc_info:
            out["exc_type"] = record.exc_info[0].__name__ if record.exc_info[0] else None
            omitted = getattr(record, "traceback_omitted", None)
            if omitted:
                out["traceback_omitted"] = omitted
            else:
                out["traceback"] = self.formatException(record.exc_info)
            if getattr(record, "traceback_repeats", None):
                out["traceback_repeats"] = record.traceback_repeats  # type: ignore[attr-defined]
        if record.stack_info:
            out["stack"] = self.formatStack(record.stack_info)
        return json.dumps(out, default=str)


PLAIN_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"


def logging_config(*, fmt: str = "plain", level: str = "INFO") -> dict:
    """A ``logging.config.dictConfig`` dictionary; ``fmt`` is "plain" or "json"."""

    def logger(lvl: str = "INFO") -> dict:
        return {"handlers": ["console"], "level": lvl, "propagate": False}

    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"request_id": {"()": "leaderboard.logconfig.RequestIdFilter"},
                    "quiet_routine": {"()": "leaderboard.logconfig.QuietRoutineFilter"},
                    "repeated_tracebacks": {"()": "leaderboard.logconfig.RepeatedTracebackFilter"},
                    "database_outage": {"()": "leaderboard.logconfig.DatabaseOutageFilter"}},
        "formatters": {
            "plain": {"()": "leaderboard.logconfig.PlainFormatter", "fmt": PLAIN_FORMAT},
            "json": {"()": "leaderboard.logconfig.JsonFormatter"},
        },
        "handlers": {
            "console": {"class": "logging.StreamHandler", "formatter": "json" if fmt == "json" else "plain",
                        "filters": ["request_id", "quiet_routine", "database_outage", "repeated_tracebacks"],
                        "stream": "ext://sys.stderr"},
        },
        "root": {"handlers": ["console"], "level": "WARNING"},
        "loggers": {
            "leaderboard": logger(level),
            # django.request logs every unhandled exception with its traceback (ERROR)
            # and 4xx answers (WARNING); django.server is runserver's request line.
            "django": logger("INFO"),
            "django.server": logger("INFO"),
            "celery": logger("INFO"),
            "gunicorn.error": logger("INFO"),
            "gunicorn.access": logger("INFO"),
        },
    }
