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
    "sweep: N truth versions requeued"); with LOG_LEVEL=DEBUG the sweep also says
    when it found nothing.
    """

    ROUTINE = ("sweep_stuck_submissions", "sweep-stuck-submissions", "sweep_round_versions",
               "sweep-round-versions", "close_due_rounds", "close-due-rounds")

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno != logging.INFO or not record.name.startswith("celery"):
            return True
        message = record.getMessage()
        return not any(word in message for word in self.ROUTINE)


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
            out["traceback"] = self.formatException(record.exc_info)
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
                    "database_outage": {"()": "leaderboard.logconfig.DatabaseOutageFilter"}},
        "formatters": {
            "plain": {"format": PLAIN_FORMAT},
            "json": {"()": "leaderboard.logconfig.JsonFormatter"},
        },
        "handlers": {
            "console": {"class": "logging.StreamHandler", "formatter": "json" if fmt == "json" else "plain",
                        "filters": ["request_id", "quiet_routine", "database_outage"], "stream": "ext://sys.stderr"},
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
