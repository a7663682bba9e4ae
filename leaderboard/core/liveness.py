"""Is scoring alive? Worker heartbeats and the age of the oldest queued submission.

Every process of a scoring worker (each pool process of a prefork worker; a solo
worker itself; not a notifications-only worker, leaderboard/celery.py) writes a ``WorkerHeartbeat`` row every ``WORKER_HEARTBEAT_SECONDS``
from a thread of its own, busy or idle. The rows are in the database, so the
readings below are the same whichever broker carries the tasks (Redis, or the
embedded SQLite one), and any process can take them: ``/readyz`` and ``/metrics``
report them, ``manage.py serve`` restarts its worker when ``worker_stalled``
says it makes no progress.

Readings:

- ``worker_heartbeat_age_seconds()``: seconds since the newest heartbeat of any
  worker (or of one node), None when none ever beat.
- ``oldest_queued_seconds()``: how long the oldest submission still ``queued``
  has waited, 0 when none waits.
- ``worker_stalled(hostname=..., since=..., limit=...)``: why one worker node
  makes no progress, or None.
"""
from __future__ import annotations

import logging
import os
import threading
import time
from datetime import datetime, timedelta

from django.db import close_old_connections
from django.db.models import Max, Min
from django.utils import timezone

from leaderboard.core.models import Submission, WorkerHeartbeat

log = logging.getLogger("leaderboard.liveness")

# Rows of processes gone for this long are deleted when a process starts beating.
FORGET_AFTER = timedelta(days=1)


# -- readings -----------------------------------------------------------------------------
def worker_heartbeat_age_seconds(*, hostname: str | None = None) -> float | None:
    """Seconds since the newest heartbeat of any worker process (of node ``hostname`` if given).

    None when no worker process ever beat (none started, or the rows were forgotten).
    """
    rows = WorkerHeartbeat.objects.all()
    if hostname is not None:
        rows = rows.filter(hostname=hostname)
    newest = rows.aggregate(newest=Max("beat_at"))["newest"]
    return None if newest is None else max(0.0, (timezone.now() - newest).total_seconds())


def oldest_queued_seconds(*, handed_to_broker: bool = False) -> float:
    """How long the oldest submission in status ``queued`` has waited (since it became queued), 0 if none.

    ``handed_to_broker``: only submissions whose task reached the broker (``enqueued_at`` set), the
    ones a consuming worker would take; without it the outbox (not yet handed over) counts too.
    """
    rows = Submission.objects.filter(status=Submission.Status.QUEUED)
    if handed_to_broker:
        rows = rows.filter(enqueued_at__isnull=False)
    oldest = rows.aggregate(oldest=Min("status_changed_at"))["oldest"]
    return 0.0 if oldest is None else max(0.0, (timezone.now() - oldest).total_seconds())


def worker_stalled(*, hostname: str, since: datetime, limit: float) -> str | None:
    """Why the worker node ``hostname``, started at ``since``, makes no progress; None while it does.

    Stalled: no process of it has beaten for ``limit`` seconds (none got going, or all hang),
    or a submission handed to the broker has waited longer than ``limit`` while none of its
    processes has started a task for that long (it does not consume). A worker is given
    ``limit`` seconds from its start before either is judged.
    """
    now = timezone.now()
    if (now - since).total_seconds() < limit:
        return None
    fresh_after = now - timedelta(seconds=limit)
    rows = list(WorkerHeartbeat.objects.filter(hostname=hostname, beat_at__gte=since)
                .values("beat_at", "busy_since", "last_task_at"))
    newest = max((r["beat_at"] for r in rows), default=None)
    if newest is None or newest < fresh_after:
        quiet = (now - (newest or since)).total_seconds()
        return (f"no heartbeat from any of its processes for {quiet:.0f} s "
                f"(limit {limit:.0f} s): none got going, or all of them hang")
    alive = [r for r in rows if r["beat_at"] >= fresh_after]
    if any(r["busy_since"] is not None for r in alive):
        return None  # working on a task; a long one keeps its own heartbeat
    last_task = max((r["last_task_at"] for r in alive if r["last_task_at"] is not None), default=since)
    idle = (now - max(last_task, since)).total_seconds()
    if idle <= limit:
        return None
    waited = oldest_queued_seconds(handed_to_broker=True)
    if waited > limit:
        return (f"a submission handed to the broker has waited {waited:.0f} s and the worker "
                f"has taken no task for {idle:.0f} s (limit {limit:.0f} s): it does not consume")
    return None


# -- writing (in worker processes) ----------------------------------------------------------
class _Beat:
    """This process's heartbeat thread and what it reports."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running: dict[str, datetime] = {}  # task id -> started at
        self.last_task_at: datetime | None = None
        self.thread: threading.Thread | None = None
        self.pid = 0

    def task_started(self, task_id: str) -> None:
        with self.lock:
            self.running[task_id] = self.last_task_at = timezone.now()

    def task_finished(self, task_id: str) -> None:
        with self.lock:
            self.running.pop(task_id, None)
            self.last_task_at = timezone.now()

    def start(self, *, hostname: str, every: float) -> None:
        """Beat now and every ``every`` seconds from a daemon thread, for the life of this process."""
        if every <= 0 or (self.thread is not None and self.pid == os.getpid()):
            return
        # After a fork the parent's thread is gone and its tasks are not ours.
        self.pid, self.running, self.last_task_at = os.getpid(), {}, None
        name = f"{hostname}/{self.pid}"[:255]
        self.thread = threading.Thread(target=self._run, args=(hostname, name, every),
                                       name="worker-heartbeat", daemon=True)
        self.thread.start()

    def _run(self, hostname: str, name: str, every: float) -> None:
        failing = False
        first = True
        while True:
            try:
                close_old_connections()  # drop a connection a database outage broke
                self._write(hostname, name, forget_old=first)
                first = False
                if failing:
                    log.warning("worker heartbeat written again (%s)", name)
                failing = False
            except Exception as exc:
                if not failing:  # one line per outage, not one per beat
                    log.warning("worker heartbeat not written (%s): %s: %s", name, type(exc).__name__, exc)
                failing = True
            time.sleep(every)

    def _write(self, hostname: str, name: str, *, forget_old: bool) -> None:
        now = timezone.now()
        with self.lock:
            busy_since = min(self.running.values(), default=None)
            last_task_at = self.last_task_at
        if forget_old:
            WorkerHeartbeat.objects.filter(beat_at__lt=now - FORGET_AFTER).delete()
        updated = WorkerHeartbeat.objects.filter(name=name).update(
            beat_at=now, busy_since=busy_since, last_task_at=last_task_at)
        if not updated:
            WorkerHeartbeat.objects.update_or_create(name=name, defaults={
                "hostname": hostname[:255], "pid": self.pid, "started_at": now, "beat_at": now,
                "busy_since": busy_since, "last_task_at": last_task_at})


_beat = _Beat()
worker_beat_start = _beat.start
worker_task_started = _beat.task_started
worker_task_finished = _beat.task_finished
