import ctypes
import logging.config
import os

from celery import Celery
from celery.signals import setup_logging, task_postrun, task_prerun, worker_init, worker_process_init
from django.conf import settings

from leaderboard.logconfig import request_id_var

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")

app = Celery("leaderboard")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["leaderboard.core"])


@setup_logging.connect
def _logging(**kwargs):
    # Worker and beat log like the web server (settings.LOGGING: plain or JSON
    # lines on stderr, with a request id), not in Celery's own format.
    logging.config.dictConfig(settings.LOGGING)


@task_prerun.connect
def _task_request_id(task_id=None, task=None, **kwargs):
    # Lines written while a task runs carry the id of the request that enqueued
    # it (a header set by the outbox), else the task's own id.
    enqueued_by = getattr(task.request, "lb_request_id", None) if task is not None else None
    request_id_var.set(enqueued_by if enqueued_by and enqueued_by != "-" else f"task-{task_id}")


@task_postrun.connect
def _task_request_id_done(**kwargs):
    request_id_var.set("-")


def keep_freed_memory() -> None:
    """Let this process reuse the memory it frees instead of handing it back to the system.

    Whole-round scoring allocates and frees arrays of a few MB per chunk of submissions,
    on a thread pool. With glibc's defaults many of them are fresh mmaps, or heap that is
    trimmed on free, so every chunk faults its pages in again: on the benchmark round's
    FNC pass that was 131,000 page faults and 1.4 s of its 5 s CPU (a virtual machine
    makes faults dear). Arrays below 32 MB now come from the heap, and freed heap is
    kept (up to 1 GB); larger arrays are still mapped and unmapped. No-op without glibc.
    """
    try:
        libc = ctypes.CDLL("libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return
    m_trim_threshold, m_mmap_threshold = -1, -3
    mallopt(m_mmap_threshold, 32 * 1024 * 1024)
    mallopt(m_trim_threshold, 1024 * 1024 * 1024)


@worker_init.connect
def _allocator(**kwargs):
    # The worker's main process (the solo pool scores in it); pool processes forked from it
    # inherit the setting.
    keep_freed_memory()


@worker_process_init.connect
def _warm_up(**kwargs):
    # Import the kinds (numpy, scipy, pandas) when a pool process starts, not
    # during the first upload it scores.
    from scoring.kinds import kind_names  # noqa: PLC0415 -- the kinds bring numpy, scipy, pandas: a pool process needs them, not every process that imports the Celery app

    kind_names()
