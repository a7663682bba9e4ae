"""Heartbeats: proof, written to the database every few seconds, that a long task's worker is alive.

The sweep (``submissions_sweep_stuck``) requeues work whose heartbeat went
stale: a worker that died mid-task is noticed within seconds, while a healthy
task, however long, keeps beating and is never taken from its worker. Any
long task can use it (``with heartbeat(lambda: Model.objects.filter(...).update(...))``).
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from django.db import connection, connections

log = logging.getLogger("leaderboard.heartbeat")


@contextmanager
def heartbeat(beat: Callable[[], object], *, every: float) -> Iterator[None]:
    """Call ``beat`` every ``every`` seconds from a background thread while the block runs.

    Does nothing inside an outer transaction (the claim it would prove is not
    visible to the sweep yet, and the beat would wait on the caller's own row
    lock), or when ``every`` is 0.
    """
    if every <= 0 or connection.in_atomic_block:
        yield
        return
    stop = threading.Event()

    def run() -> None:
        try:
            while not stop.wait(every):
                try:
                    beat()
                except Exception:
                    log.exception("heartbeat failed; the sweep may requeue this work")
        finally:
            connections.close_all()  # this thread's own connections

    thread = threading.Thread(target=run, name="heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=every + 10)
