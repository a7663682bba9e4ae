"""gunicorn settings, shared by `manage.py serve` (so `make demo`) and the production stack.

    gunicorn -c python:leaderboard.gunicorn_conf --bind 0.0.0.0:8000

Threaded workers (gthread): a request waiting on the database or a slow client
holds one thread, not a whole process, and the worker's heartbeat to the
arbiter goes on meanwhile. In production a buffering proxy (nginx,
docs/deploy.md) stands in front, so slow uploads never reach a thread at all.
Command-line options override these values.
"""
import os
import shutil
import tempfile

from gunicorn.glogging import Logger

from leaderboard.env import envbool, envchoice, envint, envstr
from leaderboard.logconfig import logging_config

wsgi_app = "leaderboard.wsgi:application"
worker_class = "gthread"
workers = envint("WEB_WORKERS", 2)
threads = envint("WEB_THREADS", 8)
# A worker whose main loop is silent this long is killed and replaced.
timeout = envint("WEB_TIMEOUT", 60)
# On shutdown or reload, requests in flight get this long to finish.
graceful_timeout = envint("WEB_GRACEFUL_TIMEOUT", 20)
# Idle keep-alive connections are closed after this many seconds.
keepalive = 5
# Limits on the request head (the body is capped by Django and by the proxy).
limit_request_line = 8190
limit_request_fields = 100
limit_request_field_size = 8190
# No control socket (gunicorn 25.1+ makes one at ~/.gunicorn/gunicorn.ctl, shared
# by every instance of the user); older versions ignore the setting.
control_socket_disable = True

# Logs: the format of every other process (plain or JSON lines on stderr); the
# access line ends with the request id the site returned in X-Request-ID.
logconfig_dict = logging_config(fmt=envchoice("LOG_FORMAT", "plain", ("plain", "json")),
                                level=envstr("LOG_LEVEL", "INFO").upper())
accesslog = "-" if envbool("WEB_ACCESS_LOG", True) else None
access_log_format = '%(h)s "%(r)s" %(s)s %(b)s %(M)sms rid=%({x-request-id}o)s'


class SiteLogger(Logger):
    """gunicorn's logger, writing the access line only when ``accesslog`` is set: with a
    ``logconfig_dict`` (ours, for every other line) gunicorn otherwise builds and writes it for every
    request whatever ``accesslog`` says, so ``WEB_ACCESS_LOG=false`` changed nothing."""

    def access(self, resp, req, environ, request_time):
        if self.cfg.accesslog:
            super().access(resp, req, environ, request_time)


logger_class = SiteLogger

# /metrics counts HTTP answers in every worker process and adds them up: prometheus-client's
# multiprocess mode, through files in a folder the workers share. Set here, in the master,
# before any worker imports prometheus-client: a fresh folder per gunicorn (PROMETHEUS_MULTIPROC_DIR
# if given, emptied at start), removed on exit if made here.
_made_metrics_dir = not envstr("PROMETHEUS_MULTIPROC_DIR")
if _made_metrics_dir:
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="leaderboard-metrics-")


def on_starting(server):
    folder = os.environ["PROMETHEUS_MULTIPROC_DIR"]
    os.makedirs(folder, exist_ok=True)
    for name in os.listdir(folder):
        if name.endswith(".db"):
            os.remove(os.path.join(folder, name))


def child_exit(server, worker):
    from prometheus_client import multiprocess  # noqa: PLC0415 -- gunicorn reads this file before the site: keep its start light

    multiprocess.mark_process_dead(worker.pid)


def on_exit(server):
    if _made_metrics_dir:
        shutil.rmtree(os.environ["PROMETHEUS_MULTIPROC_DIR"], ignore_errors=True)
