import ctypes
import logging.config
import os

from celery import Celery
from celery.signals import setup_logging, task_postrun, task_prerun, worker_init, worker_process_init, worker_ready
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
    from leaderboard.core.liveness import worker_task_started  # noqa: PLC0415 -- models: the Celery app is imported before Django is set up

    worker_task_started(task_id or "")


@task_postrun.connect
def _task_request_id_done(task_id=None, **kwargs):
    from leaderboard.core.liveness import worker_task_finished  # noqa: PLC0415 -- models: the Celery app is imported before Django is set up

    request_id_var.set("-")
    worker_task_finished(task_id or "")


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


# The worker's node name (celery worker --hostname), for the heartbeats of its pool processes, and
# whether it consumes the scoring queue: only a scoring worker beats, so that a notifications worker
# alive beside a dead scoring one does not keep /readyz's worker check and the heartbeat age fresh.
_node: dict = {"hostname": "", "scores": True}


@worker_init.connect
def _before_forking(sender=None, **kwargs):
    # The worker's main process, before it forks its pool: pool processes inherit what it
    # does here, and a replacement for a killed one is ready at once.
    # - the allocator setting (the solo pool scores in this very process);
    # - the kinds with numpy, scipy and pandas, imported once here rather than in each pool
    #   process's start-up: under load that import took 13.6 s, past the limit for a new pool
    #   process to report ready, and Celery killed and replaced it, forever (issue 19).
    # - scipy.stats, which the properties kind's Spearman imports only when it first ranks
    #   (scoring/metrics_properties.py), so that web processes start without it.
    import scipy.stats  # noqa: PLC0415, F401 -- see above: pool processes inherit it instead of importing it on their first score

    from scoring.kinds import kind_names  # noqa: PLC0415 -- numpy, scipy, pandas: the worker needs them, not every process that imports the Celery app

    keep_freed_memory()
    kind_names()
    _node["hostname"] = getattr(sender, "hostname", "") or ""
    _node["scores"] = settings.CELERY_TASK_DEFAULT_QUEUE in sender.app.amqp.queues.consume_from


@worker_process_init.connect
def _pool_process_heartbeat(**kwargs):
    # Each prefork pool process beats from its own thread, busy or idle (leaderboard/core/liveness.py).
    from leaderboard.core.liveness import worker_beat_start  # noqa: PLC0415 -- models: the Celery app is imported before Django is set up

    if _node["scores"]:
        worker_beat_start(hostname=_node["hostname"], every=settings.WORKER_HEARTBEAT_SECONDS)


@worker_ready.connect
def _solo_heartbeat(sender=None, **kwargs):
    # The solo and thread pools run tasks in the worker's own process: it beats itself.
    from celery.concurrency.prefork import TaskPool as PreforkPool  # noqa: PLC0415 -- only a worker's main process asks which pool it runs

    from leaderboard.core.liveness import worker_beat_start  # noqa: PLC0415 -- models: the Celery app is imported before Django is set up

    if _node["scores"] and not isinstance(getattr(sender, "pool", None), PreforkPool):
        worker_beat_start(hostname=_node["hostname"] or getattr(sender, "hostname", ""),
                          every=settings.WORKER_HEARTBEAT_SECONDS)
