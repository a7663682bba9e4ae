"""The Redis cache, degraded rather than broken while Redis cannot be reached.

The abuse throttles (and anything else using the cache) keep working with
Redis down: each operation that fails on Redis is answered from this process's
memory instead, and for ``RETRY_AFTER_SECONDS`` the process does not try Redis
again, so a dead server costs one failed attempt, not one per request. A log
line says when the fallback starts and when Redis is back. Throttle counts are
then per process rather than shared: limits hold, a little looser.
"""
from __future__ import annotations

import logging
import threading
import time

from django.core.cache.backends.locmem import LocMemCache
from django.core.cache.backends.redis import RedisCache

log = logging.getLogger("leaderboard.cache")

RETRY_AFTER_SECONDS = 5.0


def _redis_errors() -> tuple[type[BaseException], ...]:
    import redis

    return (redis.exceptions.RedisError, OSError)


class ResilientRedisCache(RedisCache):
    def __init__(self, server, params):
        super().__init__(server, params)
        fallback_params = {k: v for k, v in params.items() if k in ("TIMEOUT", "KEY_PREFIX", "VERSION", "KEY_FUNCTION")}
        fallback_params["OPTIONS"] = {"MAX_ENTRIES": 10_000}
        self._fallback = LocMemCache(f"redis-fallback-{id(self)}", fallback_params)
        self._errors = _redis_errors()
        self._down_until = 0.0
        self._down = False
        self._state_lock = threading.Lock()

    def _failed(self, exc: BaseException) -> None:
        with self._state_lock:
            self._down_until = time.monotonic() + RETRY_AFTER_SECONDS
            if not self._down:
                self._down = True
                log.warning("Redis cache unreachable (%s: %s); this process answers from its own memory "
                            "and tries Redis again every %.0f s", type(exc).__name__, exc, RETRY_AFTER_SECONDS)

    def _worked(self) -> None:
        if self._down:
            with self._state_lock:
                if self._down:
                    self._down = False
                    log.warning("Redis cache reachable again")


def _resilient(name: str):
    redis_method = getattr(RedisCache, name)

    def method(self, *args, **kwargs):
        if time.monotonic() < self._down_until:
            return getattr(self._fallback, name)(*args, **kwargs)
        try:
            result = redis_method(self, *args, **kwargs)
        except self._errors as exc:
            self._failed(exc)
            return getattr(self._fallback, name)(*args, **kwargs)
        self._worked()
        return result

    method.__name__ = name
    method.__doc__ = redis_method.__doc__
    return method


for _name in ("add", "get", "set", "touch", "delete", "get_many", "has_key", "incr", "set_many", "delete_many",
              "clear"):
    setattr(ResilientRedisCache, _name, _resilient(_name))
