"""How long scoring takes, as histograms every worker adds to and /metrics reads (``TimingBucket``).

A worker records one observation after its work has committed, in a short
statement of its own: one UPDATE of one row (``count + 1``, ``seconds + s``),
so concurrent workers queue on that row for microseconds and never inside their
scoring transaction. A failure to record is logged and never fails the scoring;
an unreachable database is one line through ``outage_report`` (no traceback),
like every other outage the worker meets.
"""
from __future__ import annotations

import logging
import math
from collections import defaultdict

from django.db import IntegrityError, transaction
from django.db.models import F

from leaderboard.core.models import TimingBucket
from leaderboard.core.outage import is_database_outage, outage_report

log = logging.getLogger("leaderboard.timings")

# Upper bounds in seconds. One submission of a static kind scores in well under a second;
# a whole round (every counted submission against one truth version) in seconds to minutes.
BUCKETS: dict[str, tuple[float, ...]] = {
    "scoring": (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300),
    "round_scoring": (1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600),
}


def bound_label(bound: float) -> str:
    """A bound as Prometheus writes ``le``: ``0.5``, ``1.0``, ``+Inf``."""
    return "+Inf" if math.isinf(bound) else repr(float(bound))


def _bucket_for(metric: str, seconds: float) -> str:
    for bound in BUCKETS[metric]:
        if seconds <= bound:
            return bound_label(bound)
    return "+Inf"


def timing_record(*, metric: str, kind: str, seconds: float) -> None:
    """Add one observation of ``seconds`` to the histogram ``metric`` ("scoring", "round_scoring") for ``kind``."""
    le = _bucket_for(metric, seconds)
    try:
        rows = TimingBucket.objects.filter(metric=metric, kind=kind, le=le)
        if rows.update(count=F("count") + 1, seconds=F("seconds") + seconds):
            return
        try:
            with transaction.atomic():
                TimingBucket.objects.create(metric=metric, kind=kind, le=le, count=1, seconds=seconds)
        except IntegrityError:  # another worker made the row first
            rows.update(count=F("count") + 1, seconds=F("seconds") + seconds)
    except Exception as exc:
        if is_database_outage(exc):
            outage_report(exc, doing=f"a {metric} time not recorded")
        else:
            log.exception("could not record a %s time of %.3f s for %s", metric, seconds, kind)


def timing_histograms(metric: str) -> dict[str, tuple[list[tuple[str, int]], float]]:
    """Per kind: the cumulative buckets ``[(le, count), ..., ("+Inf", total count)]`` and the sum of seconds."""
    counts: dict[str, dict[str, int]] = defaultdict(dict)
    sums: dict[str, float] = defaultdict(float)
    for kind, le, count, seconds in (TimingBucket.objects.filter(metric=metric).order_by()
                                     .values_list("kind", "le", "count", "seconds")):
        counts[kind][le] = count
        sums[kind] += seconds
    out = {}
    for kind, by_bound in sorted(counts.items()):
        running, buckets = 0, []
        for label in map(bound_label, BUCKETS[metric]):
            running += by_bound.get(label, 0)
            buckets.append((label, running))
        buckets.append(("+Inf", sum(by_bound.values())))  # rows of bounds no longer listed count here
        out[kind] = (buckets, sums[kind])
    return out
