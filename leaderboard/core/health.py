"""What /readyz and /metrics read: the database, the cache, the broker's queues, the workers.

Every check answers ``{"ok": bool, ...}`` with what it measured or the error
that stopped it, and never raises: a dead dependency is a result, not a 500.
Each is bounded in time (the broker gets one quick retry, Redis its socket
timeouts), so a probe of a dead service answers within seconds.
"""
from __future__ import annotations

import time
from typing import Any

from celery import current_app as app
from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache
from django.db import connection

from leaderboard.core import liveness

# Broker probes try once more after a failure, then give up (Celery's own default retries for 4 s).
_BROKER_PROBE = {"max_retries": 1, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.2}


def _error(exc: BaseException) -> str:
    """The error as one short line: its class and the first line of its message."""
    message = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)


def database_check() -> dict[str, Any]:
    """One ``SELECT 1`` on the default database."""
    started = time.perf_counter()
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:
        if not connection.in_atomic_block:
            connection.close()  # the next request opens a new connection rather than reuse a broken one
        return {"ok": False, "error": _error(exc)}
    return {"ok": True, "vendor": connection.vendor, "ms": _ms(started)}


def cache_check() -> dict[str, Any]:
    """Redis answers PING (asked directly: the cache's in-memory fallback would hide an outage), or the
    file cache stores and returns a value."""
    started = time.perf_counter()
    cache = caches["default"]
    try:
        if isinstance(cache, RedisCache):
            cache._cache.get_client(None, write=True).ping()
            backend = "redis"
        else:
            probe = f"readyz:{time.time_ns()}"
            cache.set(probe, "1", 30)
            if cache.get(probe) != "1":
                raise RuntimeError("a value stored in the cache did not come back")
            cache.delete(probe)
            backend = type(cache).__name__
    except Exception as exc:
        return {"ok": False, "error": _error(exc)}
    return {"ok": True, "backend": backend, "ms": _ms(started)}


def broker_queues() -> list[str]:
    """The queues workers consume: Celery's default queue and every queue the app declares or routes to."""
    names = {app.conf.task_default_queue, *app.amqp.queues.keys()}
    routes = app.conf.task_routes
    if isinstance(routes, dict):
        names.update(r["queue"] for r in routes.values() if isinstance(r, dict) and r.get("queue"))
    return sorted(n for n in names if n)


def broker_check() -> dict[str, Any]:
    """Connect to the broker and count the messages waiting in each queue (``depth``).

    Through kombu's channel API (``queue_declare`` answers the message count), so
    the count is right for whatever transport the broker URL names: Redis, or the
    embedded broker of a laptop install.
    """
    started = time.perf_counter()
    try:
        with app.connection_for_read(connect_timeout=2, transport_options=_BROKER_PROBE) as conn:
            channel = conn.default_channel
            depth = {}
            for queue in broker_queues():
                # Not passive: kombu's Redis transport calls an empty queue (no list key) missing.
                depth[queue] = int(channel.queue_declare(queue=queue, durable=True, auto_delete=False).message_count)
    except Exception as exc:
        return {"ok": False, "error": _error(exc)}
    return {"ok": True, "transport": conn.transport_cls, "depth": depth, "ms": _ms(started)}


def worker_check(*, database_ok: bool = True) -> dict[str, Any]:
    """Some worker process wrote its heartbeat (``leaderboard/core/liveness.py``) within ``WORKER_STALL_SECONDS``."""
    if not database_ok:
        return {"ok": False, "error": "unknown: the heartbeats are in the database, which does not answer"}
    limit = settings.WORKER_STALL_SECONDS
    try:
        age = liveness.worker_heartbeat_age_seconds()
    except Exception as exc:
        return {"ok": False, "error": _error(exc)}
    if age is None:
        return {"ok": False, "heartbeat_age_seconds": None, "error": "no worker has ever written a heartbeat"}
    out: dict[str, Any] = {"ok": age <= limit, "heartbeat_age_seconds": round(age, 1)}
    if not out["ok"]:
        out["error"] = f"the newest worker heartbeat is {age:.0f} s old (limit {limit:.0f} s)"
    return out


def oldest_queued_seconds() -> float | None:
    """How long the oldest queued submission has waited (``liveness.oldest_queued_seconds``); None on error."""
    try:
        return round(liveness.oldest_queued_seconds(), 1)
    except Exception:
        return None


def readiness_checks() -> dict[str, dict[str, Any]]:
    """Every check /readyz reports (and /metrics' ``leaderboard_check_ok``), by name."""
    checks = {"database": database_check(), "cache": cache_check(), "broker": broker_check()}
    checks["worker"] = worker_check(database_ok=checks["database"]["ok"])
    return checks
