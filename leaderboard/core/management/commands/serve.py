"""Run the web server and a Celery worker (with the periodic sweep) together; Ctrl-C stops both."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

from django.core.management import call_command
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Serve the site on ADDRPORT with an asynchronous scoring worker beside it."

    def add_arguments(self, parser):
        parser.add_argument("addrport", nargs="?", default=f"127.0.0.1:{os.environ.get('PORT', '8000')}")
        parser.add_argument("--concurrency", type=int, default=2)

    def handle(self, *args, addrport, concurrency, **options):
        worker = subprocess.Popen([
            sys.executable, "-m", "celery", "-A", "leaderboard", "worker", "--beat", "--loglevel", "INFO",
            "--concurrency", str(concurrency), "--queues", "scoring", "--without-gossip", "--without-mingle",
        ])
        try:
            call_command("runserver", addrport, use_reloader=False)
        finally:
            worker.send_signal(signal.SIGTERM)
            try:
                worker.wait(timeout=15)
            except subprocess.TimeoutExpired:
                worker.kill()
