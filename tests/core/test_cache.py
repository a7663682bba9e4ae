"""The Redis cache with Redis unreachable: answers from process memory, shared by threads, never raises."""
from __future__ import annotations

import logging
import threading

from leaderboard.core import cache as resilient
from leaderboard.core.cache import ResilientRedisCache
from tests.support.server import free_port


def _unreachable() -> tuple[ResilientRedisCache, str]:
    location = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    return ResilientRedisCache(location, {"OPTIONS": {"socket_connect_timeout": 0.5}}), location


def test_cache_with_redis_unreachable_falls_back_and_logs_once(caplog):
    cache, location = _unreachable()
    with caplog.at_level(logging.WARNING, logger="leaderboard.cache"):
        assert cache.get("missing", "default") == "default"
        cache.set("k", 41, 60)
        assert cache.incr("k") == 42
        assert cache.add("k", 0) is False and cache.get_many(["k"]) == {"k": 42}
        cache.delete("k")
        assert cache.get("k") is None
    warnings = [r.getMessage() for r in caplog.records if r.name == "leaderboard.cache"]
    assert len(warnings) == 1 and "Redis cache unreachable" in warnings[0]
    resilient._down_until.pop(location, None)
    resilient._down_logged.discard(location)


def test_cache_fallback_is_shared_by_the_threads_of_a_process():
    # Django builds one cache object per thread: throttle counts must still add up per process.
    cache, location = _unreachable()
    cache.set("throttle_login_1.2.3.4", ["t1"], 60)
    seen = []
    other_thread = threading.Thread(target=lambda: seen.append(
        ResilientRedisCache(location, {"OPTIONS": {"socket_connect_timeout": 0.5}}).get("throttle_login_1.2.3.4")))
    other_thread.start()
    other_thread.join()
    assert seen == [["t1"]]
    resilient._down_until.pop(location, None)
    resilient._down_logged.discard(location)
