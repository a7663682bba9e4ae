"""The Redis cache, degraded rather than broken while Redis cannot be reached.

The abuse throttles (and anything else using the cache) keep working with
Redis down: each operation that fails on Redis is answered from this process's
memory instead, and for ``RETRY_AFTER_SECONDS`` the process does not try Redis
again, so a dead server costs one failed attempt, not one per request. A log
line says when the fallback starts and when Redis is back. Throttle counts are
then per process rather than shared: limits hold, a little looser.

``throttle_hit``: a rate throttle's whole decision in one round trip (a Lua script, atomic in
Redis), with any other keys the request needs read in the same trip (issue 26: the board API's
answer then costs one Redis call instead of three).
"""
from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import redis
from django.core.cache.backends.locmem import LocMemCache
from django.core.cache.backends.redis import RedisCache, RedisCacheClient

log = logging.getLogger("leaderboard.cache")

RETRY_AFTER_SECONDS = 5.0

# Django makes one cache object per thread; the fallback data and the "Redis is
# down" state are per process (keyed by location), so every thread of a server
# process counts throttles in one place and gives Redis one try per period.
_state_lock = threading.Lock()
_down_until: dict[str, float] = {}
_down_logged: set[str] = set()


def _redis_errors() -> tuple[type[BaseException], ...]:
    return (redis.exceptions.RedisError, OSError)


# A throttle's history as a Redis list of request times, newest first, the rule of DRF's
# SimpleRateThrottle: drop the times at or before now - duration; refuse if as many as the limit
# are left; else record now and keep the list for duration seconds. Replies: allowed (0/1), the
# count after the decision, the oldest time left (a string: Lua would truncate a number), then
# the value of each further key (KEYS[2:]).
_THROTTLE_SCRIPT = """
local key = KEYS[1]
local now, duration, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
while true do
  local last = redis.call('LINDEX', key, -1)
  if not last or tonumber(last) > now - duration then break end
  redis.call('RPOP', key)
end
local count = redis.call('LLEN', key)
local allowed = 0
if count < limit then
  redis.call('LPUSH', key, ARGV[1])
  redis.call('EXPIRE', key, math.ceil(duration))
  count = count + 1
  allowed = 1
end
local reply = {allowed, count, redis.call('LINDEX', key, -1) or false}
for i = 2, #KEYS do reply[#reply + 1] = redis.call('GET', KEYS[i]) end
return reply
"""
HISTORY_SUFFIX = ":times"
_THROTTLE_SHA = hashlib.sha1(_THROTTLE_SCRIPT.encode()).hexdigest()  # the name Redis gives the script


def _straight(client: redis.Redis, send: Callable[[redis.Connection], Any]) -> Any:
    """``send(connection)`` on a connection of ``client``'s pool, past redis-py's command layer (its
    retry wrapper, observability hooks and reply callbacks, which cost about as much CPU as the round
    trip itself: issue 26). A connection that failed mid-command is closed rather than given back
    with a reply half read."""
    pool = client.connection_pool
    connection = pool.get_connection()
    try:
        return send(connection)
    except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError):
        connection.disconnect()
        raise
    finally:
        pool.release(connection)


def _throttle_script(client: redis.Redis, keys: list[str], args: list) -> list:
    """The throttle script's reply, sent as EVALSHA (``_straight``: this runs on every throttled
    request), and loaded first if Redis does not have it (a restarted server, ``SCRIPT FLUSH``)."""
    def send(connection: redis.Connection) -> list:
        try:
            connection.send_command("EVALSHA", _THROTTLE_SHA, len(keys), *keys, *args)
            return connection.read_response()
        except redis.exceptions.NoScriptError:
            connection.send_command("SCRIPT", "LOAD", _THROTTLE_SCRIPT)
            connection.read_response()
            connection.send_command("EVALSHA", _THROTTLE_SHA, len(keys), *keys, *args)
            return connection.read_response()

    return _straight(client, send)


class ThrottleHit:
    """``throttle_hit``'s answer: allowed, the requests counted in the window after it, the oldest
    one's time (None when none), and the value of each key asked for (None: not in the cache)."""

    __slots__ = ("allowed", "count", "oldest", "values")

    def __init__(self, allowed: bool, count: int, oldest: float | None, values: dict[str, object]) -> None:
        self.allowed, self.count, self.oldest, self.values = allowed, count, oldest, values


class ReusingRedisCacheClient(RedisCacheClient):
    """Django's Redis client wrapper, keeping its ``redis.Redis`` objects instead of building one an operation.

    Django makes a new ``redis.Redis`` (over the same connection pool) for every cache operation:
    0.31 ms a GET against 0.11 ms with one kept (issue 26), and a public read makes three or four.
    A ``redis.Redis`` takes a connection from its pool for each command, so one per pool is safe
    to share; Django's cache object (and with it this wrapper) is per thread anyway.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._clients: dict[int, redis.Redis] = {}

    def get_client(self, key=None, *, write=False):
        # Django's own internals, which its stubs leave out: the pool chosen as Django chooses it.
        index = self._get_connection_pool_index(write)  # type: ignore[attr-defined]
        client = self._clients.get(index)
        if client is None:
            pool = self._get_connection_pool(write)  # type: ignore[attr-defined]
            client = self._clients[index] = self._client(connection_pool=pool)  # type: ignore[attr-defined]
        return client


class ResilientRedisCache(RedisCache):
    def __init__(self, server, params):
        super().__init__(server, params)
        self._class = ReusingRedisCacheClient
        self._location = server if isinstance(server, str) else ",".join(server)
        fallback_params = {k: v for k, v in params.items() if k in ("TIMEOUT", "KEY_PREFIX", "VERSION", "KEY_FUNCTION")}
        fallback_params["OPTIONS"] = {"MAX_ENTRIES": 10_000}
        # LocMemCache instances of one name share their data within the process.
        self._fallback = LocMemCache(f"redis-fallback:{self._location}", fallback_params)
        self._errors = _redis_errors()

    def _is_down(self) -> bool:
        return time.monotonic() < _down_until.get(self._location, 0.0)

    def _failed(self, exc: BaseException) -> None:
        with _state_lock:
            _down_until[self._location] = time.monotonic() + RETRY_AFTER_SECONDS
            if self._location not in _down_logged:
                _down_logged.add(self._location)
                log.warning("Redis cache unreachable (%s: %s); this process answers from its own memory "
                            "and tries Redis again every %.0f s", type(exc).__name__, exc, RETRY_AFTER_SECONDS)

    def throttle_hit(self, key: str, *, now: float, duration: int, limit: int,
                     read: tuple[str, ...] = ()) -> ThrottleHit | None:
        """Record a request against ``key``'s history (at most ``limit`` in ``duration`` seconds) and
        read the keys ``read``, in one atomic round trip. None while Redis cannot be reached: the
        caller decides from the process's memory as before (``_fallback``)."""
        if self._is_down():
            return None
        client = self._cache.get_client(key, write=True)
        # Our own keys: no memcached-style check. The history is a list under its own name, never the
        # pickled list DRF's read and write keep under ``key`` (the fallback's, or a version before this).
        keys = [self.make_key(key) + HISTORY_SUFFIX, *(self.make_key(k) for k in read)]
        try:
            allowed, count, oldest, *values = _throttle_script(client, keys, [repr(now), duration, limit])
        except self._errors as exc:
            self._failed(exc)
            return None
        self._worked()
        loads = self._cache._serializer.loads  # type: ignore[attr-defined]  # Django's own, not in its stubs
        return ThrottleHit(bool(allowed), int(count), float(oldest) if oldest is not None else None,
                           {k: None if v is None else loads(v) for k, v in zip(read, values, strict=True)})

    def get_many(self, keys, version=None):
        """Django's ``get_many`` (the cache's own keys, values unpickled, misses left out), its MGET sent
        ``_straight``: a signed-in page reads its board's generation and its session with it."""
        if self._is_down():
            return self._fallback.get_many(keys, version=version)
        made = {self.make_and_validate_key(key, version=version): key for key in keys}
        if not made:
            return {}
        try:
            values = _straight(self._cache.get_client(None), lambda connection: (
                connection.send_command("MGET", *made), connection.read_response())[1])
        except self._errors as exc:
            self._failed(exc)
            return self._fallback.get_many(keys, version=version)
        self._worked()
        loads = self._cache._serializer.loads  # type: ignore[attr-defined]  # Django's own, not in its stubs
        return {made[key]: loads(value) for key, value in zip(made, values, strict=True) if value is not None}

    def _worked(self) -> None:
        if self._location in _down_logged:
            with _state_lock:
                if self._location in _down_logged:
                    _down_logged.discard(self._location)
                    log.warning("Redis cache reachable again")


def _resilient(name: str):
    redis_method = getattr(RedisCache, name)

    def method(self, *args, **kwargs):
        if self._is_down():
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


for _name in ("add", "get", "set", "touch", "delete", "has_key", "incr", "set_many", "delete_many",
              "clear"):
    setattr(ResilientRedisCache, _name, _resilient(_name))
