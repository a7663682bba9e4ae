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
"""
from __future__ import annotations

import hashlib
import uuid
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


def cached_read(benchmark_id: int, parts: tuple, build: Callable[[], Any]) -> Any:
    """``build()``, or what it returned for the same ``parts`` since the benchmark's boards last changed.

    One round trip on a hit: the generation and the entry are read together, and the entry is
    used only if it was built under the current generation (it carries the one it was built under).
    """
    if settings.BOARD_CACHE_SECONDS <= 0 or not _usable():
        return build()
    generation_key = _generation_key(benchmark_id)
    key = f"boards:{benchmark_id}:read:{hashlib.sha256(repr(parts).encode()).hexdigest()[:32]}"
    found = cache.get_many([generation_key, key])
    generation = found.get(generation_key) or board_generation(benchmark_id)
    if generation is None:  # the cache refused the write (full, or failing): read through
        return build()
    stored = found.get(key)
    if stored is not None and stored[0] == generation:
        return stored[1]
    # The generation was read before the database: a board changed meanwhile has a newer one, so
    # what is stored here under the older generation is never served after that change.
    value = build()
    cache.set(key, (generation, value), settings.BOARD_CACHE_SECONDS)
    return value
