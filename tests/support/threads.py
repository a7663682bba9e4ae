"""Threads a test starts: what each leaves open when it ends."""
from __future__ import annotations

import threading

from django.core.cache import caches
from django.db import connections


def release_thread_connections() -> None:
    """Close the calling thread's database connections and its caches' Redis connections. A server's
    threads live as long as it does; a test's end with it, and their sockets, left to the garbage
    collector, would raise ResourceWarnings inside whichever later test it happens to run in."""
    connections.close_all()
    for backend in caches.all(initialized_only=True):
        client = backend.__dict__.get("_cache")  # Django's Redis client wrapper, once it was made
        for pool in getattr(client, "_pools", {}).values():
            pool.disconnect()


def at_once(count: int, call) -> dict[int, object]:
    """``call(i)`` for i in 0..count-1, each in its own thread, all released together; their answers by
    i (waiting at most 30 s for each). Each thread releases its connections as it ends."""
    gate, answers = threading.Barrier(count), {}

    def one(i: int) -> None:
        try:
            gate.wait()
            answers[i] = call(i)
        finally:
            release_thread_connections()

    threads = [threading.Thread(target=one, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return answers
