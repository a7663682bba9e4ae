"""Threads a test starts: what each leaves open when it ends."""
from __future__ import annotations

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
