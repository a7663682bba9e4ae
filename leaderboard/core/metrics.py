"""/metrics: the site's numbers in Prometheus' text format, built with prometheus-client.

Two sources:

- read when scraped, so every process (and every machine) shows the same
  numbers: submissions by status and the scoring-time histograms from the
  database, each queue's depth from the broker, the worker heartbeat's age and
  the oldest queued submission, and whether each /readyz check passes;
- counted by the web process that answered: HTTP answers by status class and
  their durations. Under gunicorn, its worker processes share these through
  prometheus-client's multiprocess mode (``PROMETHEUS_MULTIPROC_DIR``, set by
  ``leaderboard/gunicorn_conf.py``), so any worker's /metrics adds up all of them.
"""
from __future__ import annotations

import math
import time

from django.conf import settings
from django.core.cache import cache
from django.db.models import Count
from prometheus_client import CollectorRegistry, Counter, Histogram, disable_created_metrics
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.exposition import choose_encoder
from prometheus_client.multiprocess import MultiProcessCollector

from leaderboard.core import health, liveness
from leaderboard.core.models import Submission, SubmissionEvent
from leaderboard.core.services.timings import timing_histograms

disable_created_metrics()  # no *_created series beside every counter and histogram

# Counted by the process that answered (no registry: each scrape builds its own, below).
HTTP_RESPONSES = Counter("leaderboard_http_responses", "HTTP answers by status class (2xx, 3xx, 4xx, 5xx)",
                         ["status"], registry=None)
HTTP_SECONDS = Histogram("leaderboard_http_request_seconds", "Time from the request reaching the site to its answer",
                         buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60), registry=None)

_SUBMISSIONS_SEEN = "metrics:submissions_total"


def http_observe(status_code: int, seconds: float) -> None:
    HTTP_RESPONSES.labels(status=f"{status_code // 100}xx").inc()
    HTTP_SECONDS.observe(seconds)


def submissions_by_status() -> dict[str, int]:
    """How many times a submission entered each status (its audit trail), never going down.

    A counter: rescoring or a requeue counts again, and a whole round scored with its final
    truth counts each of its submissions. Deleting submissions deletes their events; the
    last value shown is kept until the count passes it, so Prometheus never sees a reset.
    """
    fresh = dict.fromkeys(Submission.Status.values, 0)
    fresh.update(SubmissionEvent.objects.order_by().values_list("status").annotate(n=Count("id"))
                 .values_list("status", "n"))
    seen = cache.get(_SUBMISSIONS_SEEN) or {}
    out = {status: max(count, seen.get(status, 0)) for status, count in fresh.items()}
    if out != seen:
        cache.set(_SUBMISSIONS_SEEN, out, None)
    return out


class SiteCollector:
    """The numbers read at scrape time (module docstring)."""

    def collect(self):
        checks = health.readiness_checks()
        up = GaugeMetricFamily("leaderboard_check_ok", "1 when the /readyz check passes, else 0", labels=["check"])
        for name, result in checks.items():
            up.add_metric([name], 1.0 if result["ok"] else 0.0)
        yield up

        depth = GaugeMetricFamily("leaderboard_queue_depth", "Messages waiting in the broker's queue",
                                  labels=["queue"])
        for queue, count in checks["broker"].get("depth", {}).items():
            depth.add_metric([queue], count)
        yield depth

        if not checks["database"]["ok"]:
            return  # the rest lives in the database
        age = liveness.worker_heartbeat_age_seconds()
        yield GaugeMetricFamily("leaderboard_worker_heartbeat_age_seconds",
                                "Seconds since the newest heartbeat of any worker process (+Inf: none ever beat)",
                                value=math.inf if age is None else age)
        yield GaugeMetricFamily("leaderboard_oldest_queued_seconds",
                                "How long the oldest queued submission has waited (0: none waits)",
                                value=liveness.oldest_queued_seconds())
        submissions = CounterMetricFamily("leaderboard_submissions", "Times a submission entered each status",
                                          labels=["status"])
        for status, count in submissions_by_status().items():
            submissions.add_metric([status], count)
        yield submissions

        for metric, name, doc in (
                ("scoring", "leaderboard_scoring_seconds", "Time to score one submission (static kinds)"),
                ("round_scoring", "leaderboard_round_scoring_seconds",
                 "Time to score a whole round against one truth version (round kinds)")):
            family = HistogramMetricFamily(name, doc, labels=["kind"])
            for kind, (buckets, total) in timing_histograms(metric).items():
                family.add_metric([kind], buckets, sum_value=total)
            yield family

    def describe(self):
        return []  # collected afresh at every scrape


def metrics_exposition(accept: str = "") -> tuple[bytes, str]:
    """The whole exposition, read now, and its content type: Prometheus' text format, or OpenMetrics
    when the scraper's ``Accept`` header asks for it."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SiteCollector())
    folder = settings.PROMETHEUS_MULTIPROC_DIR
    if folder:
        MultiProcessCollector(registry, path=folder)
    else:
        registry.register(HTTP_RESPONSES)
        registry.register(HTTP_SECONDS)
    encode, content_type = choose_encoder(accept)
    return encode(registry), content_type


# /healthz, /readyz and /metrics (leaderboard/core/probes.py): machines' questions about the site, not
# answers to its users. Left out of the HTTP series: an unready /readyz is a 503 every few seconds for as
# long as a worker is down, which would page LeaderboardServerErrors (pointing at django.request lines
# that do not exist: that 503 is not logged) beside LeaderboardNoWorker, which says what is wrong.
PROBE_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})


class HttpMetricsMiddleware:
    """Counts every answer by status class and times it (outermost but for the request id); the probes
    (``PROBE_PATHS``) are not counted."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if (request.path_info.rstrip("/") or "/") in PROBE_PATHS:
            return self.get_response(request)
        started = time.perf_counter()
        response = self.get_response(request)
        http_observe(response.status_code, time.perf_counter() - started)
        return response
