"""Serve the site as production does, on one machine: web server, scoring worker and beat, watched.

Three child processes, each in its own process group:

- web: gunicorn with threaded workers and timeouts (``leaderboard/gunicorn_conf.py``);
  with ``--dev``, Django's development server with code reloading instead;
- worker: a Celery worker consuming the scoring queue;
- beat: Celery beat, which runs the periodic sweep (outbox, dead workers, stuck work);
- notifier: a second Celery worker, one process, consuming the ``notifications`` queue (mail and
  webhooks), so that a round of 10,000 entrants being notified never holds up scoring.

serve watches them. If the worker or beat exits, it says so loudly and starts
it again. A worker that is running but makes no progress is restarted the same
way: no heartbeat from any of its processes for ``WORKER_STALL_SECONDS`` (60 s),
or a queued submission waiting that long while it takes no task
(``leaderboard/core/liveness.py``). If one keeps dying (``MAX_RESTARTS`` times
within ``RESTART_WINDOW`` seconds) or the web server exits, serve stops everything and exits non-zero:
it never serves on without a worker. Ctrl-C (SIGINT) or SIGTERM stops all
three in order (web first, then beat, then the worker, which finishes its
task) and exits 0; a second Ctrl-C kills what is left at once. If serve itself
is killed, the children get SIGTERM from the kernel (Linux).
"""
from __future__ import annotations

import ctypes
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.db import DatabaseError, close_old_connections
from django.utils import timezone

from leaderboard.core.liveness import worker_stalled

MAX_RESTARTS = 3
RESTART_WINDOW = 60.0
POLL_SECONDS = 0.2
STALL_CHECK_SECONDS = 5.0
STOP_GRACE = {"web": 25.0, "beat": 10.0, "worker": 30.0, "notifier": 30.0}
ROLE_NAMES = {"web": "web server", "worker": "scoring worker", "beat": "beat scheduler (periodic sweep)",
              "notifier": "notifications worker (mail and webhooks)"}


def _die_with_parent() -> None:
    """In the child, before exec: SIGTERM when serve dies, whatever the way (Linux prctl)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:
        pass


@dataclass
class Child:
    role: str
    argv: list[str]
    proc: subprocess.Popen | None = None
    started_at: float = 0.0
    started_wall: datetime | None = None
    deaths: deque = field(default_factory=deque)

    @property
    def name(self) -> str:
        return ROLE_NAMES[self.role]

    def start(self) -> None:
        self.proc = subprocess.Popen(self.argv, start_new_session=True, preexec_fn=_die_with_parent)
        self.started_at = time.monotonic()
        self.started_wall = timezone.now()

    def signal(self, signum: int, *, group: bool = False) -> None:
        if self.proc is None:
            return
        try:
            if group:
                os.killpg(self.proc.pid, signum)
            elif self.proc.poll() is None:
                self.proc.send_signal(signum)
        except (ProcessLookupError, PermissionError):
            pass


class Command(BaseCommand):
    help = ("Serve the site on ADDRPORT under gunicorn, with a Celery worker and beat beside it, watched; "
            "Ctrl-C stops all three. --dev: Django's development server with code reloading instead of gunicorn.")

    def add_arguments(self, parser):
        parser.add_argument("addrport", nargs="?", default=f"127.0.0.1:{os.environ.get('PORT', '8000')}")
        parser.add_argument("--dev", action="store_true",
                            help="Django's development server (reloads on code changes) instead of gunicorn")
        parser.add_argument("--workers", type=int, default=None,
                            help="gunicorn worker processes (default: WEB_WORKERS, 2)")
        parser.add_argument("--threads", type=int, default=None,
                            help="threads per gunicorn worker (default: WEB_THREADS, 8)")
        parser.add_argument("--concurrency", type=int, default=2, help="Celery worker pool processes")

    def handle(self, *args, addrport, dev, workers, threads, concurrency, **options):
        if ":" not in addrport:
            addrport = f"127.0.0.1:{addrport}"
        py = sys.executable
        if dev:
            web = [py, "manage.py", "runserver", addrport]
        else:
            web = [py, "-m", "gunicorn", "-c", "python:leaderboard.gunicorn_conf", "--bind", addrport]
            if workers:
                web += ["--workers", str(workers)]
            if threads:
                web += ["--threads", str(threads)]
        # The worker's node name, under which its processes write their heartbeats.
        self.worker_node = f"serve-{os.getpid()}@{socket.gethostname()}"
        # With JSON logs, no banners: every line on stderr is then one JSON object.
        celery = [py, "-m", "celery", "-A", "leaderboard", *(["--quiet"] if settings.LOG_FORMAT == "json" else [])]
        self.children = [
            Child("web", web),
            Child("beat", [*celery, "beat", "--schedule", str(settings.CELERY_BEAT_SCHEDULE_FILENAME)]),
            Child("worker", [*celery, "worker", "--queues", "scoring",
                             "--concurrency", str(concurrency), "--without-gossip", "--without-mingle",
                             "--hostname", self.worker_node]),
            Child("notifier", [*celery, "worker", "--queues", "notifications", "--concurrency", "1",
                               "--without-gossip", "--without-mingle",
                               "--hostname", f"notify-{os.getpid()}@{socket.gethostname()}"]),
        ]
        if not settings.DEBUG:
            # With DEBUG off, pages name the hashed files of collectstatic's manifest.
            call_command("collectstatic", "--noinput", verbosity=0)
            self.say("static files collected (DEBUG is off)")
        self.stopping = 0
        signal.signal(signal.SIGINT, self._on_signal)
        signal.signal(signal.SIGTERM, self._on_signal)
        for child in self.children:
            child.start()
            self.say(f"{child.name} started, pid {child.proc.pid}")
        self.say(f"serving http://{addrport}/ ({'development server' if dev else 'gunicorn'}); Ctrl-C stops all")
        code = self.watch()
        self.stop_all()
        sys.exit(code)

    # -- output -----------------------------------------------------------------
    # With LOG_FORMAT=json every line on stderr is one JSON object, serve's own included.
    def say(self, message: str) -> None:
        if settings.LOG_FORMAT == "json":
            logging.getLogger("leaderboard.serve").info("serve: %s", message)
            return
        self.stderr.write(f"serve: {message}", style_func=lambda x: x)
        self.stderr.flush()

    def shout(self, lines: list[str]) -> None:
        if settings.LOG_FORMAT == "json":
            logging.getLogger("leaderboard.serve").error("serve: %s", " ".join(lines))
            return
        bar = "!" * 78
        self.stderr.write("\n".join([bar, *[f"serve: {line}" for line in lines], bar]),
                          style_func=self.style.ERROR)
        self.stderr.flush()

    # -- signals and watching ------------------------------------------------------
    def _on_signal(self, signum, frame) -> None:
        self.stopping += 1
        if self.stopping > 1:
            self.say("second interrupt: killing what is left")
            for child in self.children:
                child.signal(signal.SIGKILL, group=True)

    def watch(self) -> int:
        next_stall_check = time.monotonic() + STALL_CHECK_SECONDS
        while not self.stopping:
            time.sleep(POLL_SECONDS)
            for child in self.children:
                if self.stopping or child.proc.poll() is None:
                    continue
                code = child.proc.returncode
                how = f"was killed by {signal.Signals(-code).name}" if code < 0 else f"exited with code {code}"
                if child.role == "web":
                    self.shout([f"the {child.name} (pid {child.proc.pid}) {how}.",
                                "Stopping the worker and beat too."])
                    return 1
                # Whatever the dead process left in its group (pool processes) goes with it.
                child.signal(signal.SIGKILL, group=True)
                if not self.restart(child, how):
                    return 1
            if not self.stopping and time.monotonic() >= next_stall_check:
                next_stall_check = time.monotonic() + STALL_CHECK_SECONDS
                worker = next(c for c in self.children if c.role == "worker")
                why = self.stalled(worker)
                if why:
                    self.shout([f"the {worker.name} (pid {worker.proc.pid}) makes no progress: {why}.",
                                "Stopping it to start a new one."])
                    self.stop_child(worker, grace=10.0)
                    if not self.restart(worker, "made no progress"):
                        return 1
        return 0

    def stalled(self, worker: Child) -> str | None:
        """Why the running worker makes no progress, from the heartbeats in the database; None if it does.

        A database serve cannot read says nothing about the worker (it cannot beat either): no restart.
        """
        if worker.proc.poll() is not None or worker.started_wall is None:
            return None
        try:
            close_old_connections()
            return worker_stalled(hostname=self.worker_node, since=worker.started_wall,
                                  limit=settings.WORKER_STALL_SECONDS)
        except DatabaseError:
            return None

    def restart(self, child: Child, how: str) -> bool:
        """Start ``child`` again after it died (or was stopped); False when it died too often: stop the site."""
        now = time.monotonic()
        child.deaths.append(now)
        while child.deaths and now - child.deaths[0] > RESTART_WINDOW:
            child.deaths.popleft()
        if len(child.deaths) > MAX_RESTARTS:
            self.shout([f"the {child.name} (pid {child.proc.pid}) {how}, "
                        f"{len(child.deaths)} times within {RESTART_WINDOW:.0f} s.",
                        "Stopping the site: it must not take uploads that nothing would score."])
            return False
        old = child.proc.pid
        child.start()
        self.say(f"{child.name} started, pid {child.proc.pid}")
        self.shout([f"the {child.name} (pid {old}) {how}.",
                    f"Restarted it as pid {child.proc.pid} "
                    f"(restart {len(child.deaths)} of at most {MAX_RESTARTS} within {RESTART_WINDOW:.0f} s)."
                    + (" Uploads wait in the queue meanwhile; none is lost." if child.role == "worker"
                       else " The sweep resumes with it.")])
        return True

    def stop_child(self, child: Child, *, grace: float) -> None:
        """SIGTERM (a worker hands back the tasks it holds), then SIGKILL to its whole group after ``grace`` s."""
        child.signal(signal.SIGTERM)
        child.signal(signal.SIGCONT, group=True)  # a stopped process must run to see the SIGTERM
        deadline = time.monotonic() + grace
        while child.proc.poll() is None and time.monotonic() < deadline and self.stopping < 2:
            time.sleep(POLL_SECONDS)
        child.signal(signal.SIGKILL, group=True)
        child.proc.wait()

    def stop_all(self) -> None:
        for role in ("web", "beat", "worker"):
            child = next(c for c in self.children if c.role == role)
            if child.proc is None or child.proc.poll() is not None:
                child.signal(signal.SIGKILL, group=True)
                continue
            self.say(f"stopping the {child.name} (pid {child.proc.pid})"
                     + (": it finishes the task in hand" if role == "worker" else ""))
            if role == "web" and "runserver" in child.argv:
                child.signal(signal.SIGTERM, group=True)  # the reloader and its server
            else:
                child.signal(signal.SIGTERM)
            deadline = time.monotonic() + STOP_GRACE[role]
            while child.proc.poll() is None and time.monotonic() < deadline and self.stopping < 2:
                time.sleep(POLL_SECONDS)
            if child.proc.poll() is None:
                self.say(f"the {child.name} did not stop in time; killing it")
            child.signal(signal.SIGKILL, group=True)  # stragglers of its group, if any
            child.proc.wait()
        self.say("stopped")
