"""Public reads of boards served from the cache, dropped the moment a board changes.

Every cached read of a benchmark (a board page's summary, its rendered table,
the board API's JSON) is stored with the benchmark's *generation* at the time,
a random token kept in the cache, and served only while that is still current. A service that changes what a board shows
(a score landing on a row, a round's board or standings rewritten, a round's
status, a reveal, a reloaded bundle) calls ``boards_changed`` inside its
transaction; the generation is replaced then and again when that transaction
commits, so the next read misses and is built from the database. A read that began before the
commit used the old generation and stores under it: nothing can bring an old
board back under the new one. Entries also expire after ``BOARD_CACHE_SECONDS``
(a backstop for edits made outside the services, e.g. in the admin).

The cache is Redis in production and the file cache of the data folder
otherwise: both are shared by the web processes and the workers, which is what
makes a worker's refresh visible to every web process at once. While Redis is
unreachable (``ResilientRedisCache`` answers from each process's memory) reads
bypass the cache rather than trust a generation only one process saw.

Only what every viewer sees alike is cached; per-viewer parts (the viewer's own
row marked, "find me", the daily count, the navigation) are computed per
request or are part of the key (``mine``: the ranks on the page the viewer owns).
``BOARD_CACHE_SECONDS=0`` reads every board from the database (benchmarks/latency.py compares).

Public entries (``public_read``): what anyone may see alike (the board API's answer of a published
benchmark, the whole page as an anonymous visitor gets it) is stored with the benchmark's slug, and
answered by slug from one cache round trip without touching the database: the slug's benchmark id is
learned by each process the first time it builds such an entry, and the entry is served only while
the benchmark's generation is the one it was built under. Whether anyone may see it is decided after
the generation was read (``public``), so a benchmark hidden or unpublished meanwhile (every save of a
benchmark calls ``boards_changed``: ``CoreConfig.ready``) is never served from an older entry.
"""
from __future__ import annotations

import hashlib
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import transaction


def _generation_key(benchmark_id: int) -> str:
    return f"boards:{benchmark_id}:generation"


def _usable() -> bool:
    is_down = getattr(cache, "_is_down", None)
    return not (is_down and is_down())


def board_generation(benchmark_id: int) -> str:
    key = _generation_key(benchmark_id)
    generation = cache.get(key)
    if generation is None:
        cache.add(key, uuid.uuid4().hex, None)  # add: a concurrent bump wins over a first read
        generation = cache.get(key)
    return generation


def _bump(benchmark_id: int) -> None:
    cache.set(_generation_key(benchmark_id), uuid.uuid4().hex, None)


def boards_changed(benchmark_id: int) -> None:
    """Drop every cached read of the benchmark now and again when the current transaction commits.

    Now: the transaction's own later reads see its change. On commit: a read by
    another connection between the two bumps saw the board before the change
    and may have cached it under the first new generation; the second drops it.
    """
    _bump(benchmark_id)
    transaction.on_commit(lambda: _bump(benchmark_id))


def _read_key(benchmark_id: int, parts: tuple) -> str:
    return f"boards:{benchmark_id}:read:{hashlib.sha256(repr(parts).encode()).hexdigest()[:32]}"


# slug -> benchmark id, per process: learned when a public entry is stored, so that a public read
# finds the benchmark's generation without asking the database. A slug given to another benchmark
# later is caught by the slug stored in the entry and by the generation (a save bumps it).
_benchmark_ids: dict[str, int] = {}


def caching() -> bool:
    """Whether reads are cached now: not turned off (``BOARD_CACHE_SECONDS=0``), the cache reachable."""
    return settings.BOARD_CACHE_SECONDS > 0 and _usable()


def cached_read(benchmark_id: int, parts: tuple, build: Callable[[], Any], *, public_slug: str | None = None,
                public: Callable[[], float] | None = None, prefetched: dict[str, Any] | None = None,
                keep_here: bool = False) -> Any:
    """``build()``, or what it returned for the same ``parts`` since the benchmark's boards last changed.

    One round trip on a hit: the generation and the entry are read together, and the entry is
    used only if it was built under the current generation (it carries the one it was built under).
    With ``public_slug``, the entry is also one ``public_read(public_slug, parts)`` answers, for as
    many seconds as ``public()`` (asked after the generation was read) says anyone may be given it.

    ``prefetched``: the generation already read by this request (``public_read_keys``), used instead
    of reading it again. ``keep_here``: the value is also kept in this process's memory (small values
    asked on every page view of one visitor: "find me"); with the generation prefetched, a value kept
    under it is answered with no round trip at all.
    """
    if not caching():
        return build()
    generation_key = _generation_key(benchmark_id)
    key = _read_key(benchmark_id, parts)
    known = prefetched.get(generation_key) if prefetched is not None else None
    if known is not None:
        if keep_here:
            kept = _lru_get(_kept, key)
            if kept is not None and kept[0] == known:
                return kept[1]
        found = {generation_key: known, key: cache.get(key)}
    else:
        found = cache.get_many([generation_key, key])
    generation = found.get(generation_key) or board_generation(benchmark_id)
    if generation is None:  # the cache refused the write (full, or failing): read through
        return build()
    stored = found.get(key)
    if stored is not None and stored[0] == generation:
        if public_slug is not None and stored[2:3] == (public_slug,):
            _benchmark_ids[public_slug] = benchmark_id  # another process stored it: public reads here too
        if keep_here:
            _lru_put(_kept, key, (generation, stored[1]), _KEPT_ENTRIES)
        return stored[1]

    def build_and_store() -> Any:
        # The generation was read before the database: a board changed meanwhile has a newer one, so
        # what is stored here under the older generation is never served after that change.
        value = build()
        seconds = public() if public_slug is not None and public is not None else 0
        if seconds >= 1 and public_slug is not None:
            public_store(benchmark_id, public_slug, parts, generation, value, seconds=seconds)
        else:
            cache.set(key, (generation, value, None), settings.BOARD_CACHE_SECONDS)
        return value

    # A board that changed is missed by every reader at once: one thread of the process builds it.
    first, value = single_flight((key, generation), build_and_store, wait=BUILD_WAIT_SECONDS)
    if not first:  # built by another thread meanwhile: what it stored, else built here after all
        stored = cache.get(key)
        value = stored[1] if stored is not None and stored[0] == generation else build_and_store()
    if keep_here:
        _lru_put(_kept, key, (generation, value), _KEPT_ENTRIES)
    return value


def current_generation(benchmark_id: int) -> str | None:
    """The benchmark's generation, to read before building a ``public_store`` entry; None: do not cache."""
    if not caching():
        return None
    return board_generation(benchmark_id)


def public_store(benchmark_id: int, slug: str, parts: tuple, generation: str, value: Any, *,
                 seconds: float | None = None) -> None:
    """Store ``value`` for ``public_read(slug, parts)``: call only for what anyone may see, built after
    ``generation`` was read. Kept at most ``seconds`` (default and cap: ``BOARD_CACHE_SECONDS``)."""
    timeout = settings.BOARD_CACHE_SECONDS if seconds is None else min(seconds, settings.BOARD_CACHE_SECONDS)
    if timeout < 1:
        return
    cache.set(_read_key(benchmark_id, parts), (generation, value, slug, time.time() + int(timeout)), int(timeout))
    _benchmark_ids[slug] = benchmark_id


# The public entries this process served last, by key: (generation, value, slug, expires at). A read
# then asks the cache for the generation only (a few bytes) instead of the whole entry (a page is
# about 110 KB), and serves the copy while the generation is the one it was stored under.
_LOCAL_ENTRIES = 64
_local: OrderedDict[str, tuple] = OrderedDict()
# What ``cached_read(keep_here=True)`` kept, by key: (generation, value).
_KEPT_ENTRIES = 4096
_kept: OrderedDict[str, tuple] = OrderedDict()
_local_lock = threading.Lock()


def _lru_get(entries: OrderedDict[str, tuple], key: str) -> tuple | None:
    with _local_lock:
        entry = entries.get(key)
        if entry is not None:
            entries.move_to_end(key)
        return entry


def _lru_put(entries: OrderedDict[str, tuple], key: str, entry: tuple, size: int) -> None:
    with _local_lock:
        entries[key] = entry
        entries.move_to_end(key)
        while len(entries) > size:
            entries.popitem(last=False)


# How long a read waits for another thread of its process building the same entry before building it too.
BUILD_WAIT_SECONDS = 5.0
# Builds under way in this process, by key: the threads that ask for the same key meanwhile wait.
_building: dict[tuple, threading.Event] = {}


def single_flight(key: tuple, build: Callable[[], Any], *, wait: float) -> tuple[bool, Any]:
    """``(True, build())`` for the first thread of this process to ask for ``key``; a thread asking
    while that build runs gets ``(False, None)`` once it has finished (or after ``wait`` seconds),
    and reads the cache again. A board that changed is missed by every reader of every process at
    once, and a page or a board's JSON takes tens of milliseconds to build: one thread of each
    process builds it and the rest are served what it stored, instead of each building the same
    (``cached_read``, ``views.anonymous_page_cache``; issue 26)."""
    with _local_lock:
        running = _building.get(key)
        if running is None:
            running = _building[key] = threading.Event()
            first = True
        else:
            first = False
    if not first:
        running.wait(wait)
        return False, None
    try:
        return True, build()
    finally:
        with _local_lock:
            _building.pop(key, None)
        running.set()


# In a request's environ: ``(parts, value)`` of the public entry its answer was made of, left by the view
# that answered from ``public_read`` alone; the replay before Django learns from it (leaderboard/replay.py).
SERVED = "leaderboard.public_served"


def public_read_keys(slug: str) -> tuple[str, ...]:
    """The cache keys ``public_read(slug, ...)`` reads first (the benchmark's generation), for a caller
    that reads them in a round trip it makes anyway (the throttle's) and passes them as ``prefetched``."""
    benchmark_id = _benchmark_ids.get(slug)
    if benchmark_id is None or settings.BOARD_CACHE_SECONDS <= 0:
        return ()
    return (_generation_key(benchmark_id),)


def public_read(slug: str, parts: tuple, prefetched: dict[str, Any] | None = None) -> Any:
    """What was stored for ``parts`` of the benchmark ``slug`` for anyone to see, if still current; else None.

    One cache round trip and no database query: for a slug this process has not seen stored yet,
    None (the caller builds the answer, which stores it). An entry this process served before is
    kept in its memory (``_local``): then only the generation is read, or none at all when
    ``prefetched`` holds it (``public_read_keys``, read by this request's throttle).
    """
    benchmark_id = _benchmark_ids.get(slug)
    if benchmark_id is None or not caching():
        return None
    generation_key = _generation_key(benchmark_id)
    key = _read_key(benchmark_id, parts)
    local = _lru_get(_local, key)
    if local is not None and local[2] == slug and time.time() < local[3]:
        current = (prefetched[generation_key] if prefetched is not None and generation_key in prefetched
                   else cache.get(generation_key))
        if current == local[0]:
            return local[1]
    found = cache.get_many([generation_key, key])
    stored = found.get(key)
    generation = found.get(generation_key)
    if stored is None or generation is None or stored[0] != generation or stored[2:3] != (slug,):
        return None
    if len(stored) == 4:
        _lru_put(_local, key, stored, _LOCAL_ENTRIES)
    return stored[1]
