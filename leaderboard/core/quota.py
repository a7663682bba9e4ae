"""The daily submission limit: a domain rule enforced in the database."""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.db.models import F
from django.utils import timezone

from leaderboard.core.models import Benchmark, DailyQuota


@dataclass
class QuotaExceeded(Exception):
    limit: int
    reset_at: dt.datetime

    @property
    def retry_after_seconds(self) -> int:
        return max(1, int((self.reset_at - timezone.now()).total_seconds()) + 1)

    @property
    def message(self) -> str:
        return (
            f"Daily limit reached: {self.limit} accepted submissions per UTC day on this benchmark, "
            f"shared by all your entrants. It resets at {self.reset_at:%Y-%m-%d %H:%M} UTC "
            f"(in {_human_duration(self.retry_after_seconds)})."
        )


def _human_duration(seconds: int) -> str:
    hours, rest = divmod(seconds, 3600)
    minutes = rest // 60
    return f"{hours} h {minutes} min" if hours else f"{max(minutes, 1)} min"


def utc_day(at: dt.datetime | None = None) -> dt.date:
    return (at or timezone.now()).astimezone(dt.timezone.utc).date()


def next_reset(at: dt.datetime | None = None) -> dt.datetime:
    day = utc_day(at)
    return dt.datetime.combine(day + dt.timedelta(days=1), dt.time.min, tzinfo=dt.timezone.utc)


def quota_consume(*, user, benchmark: Benchmark) -> int:
    """Take one submission from today's allowance; return how many remain.

    Must run inside the transaction that stores the submission, so a rollback
    gives the slot back. Raises QuotaExceeded when none is left.
    """
    day = utc_day()
    limit = benchmark.daily_limit
    # Make sure today's row exists; concurrent inserts collapse on the unique constraint.
    DailyQuota.objects.bulk_create(
        [DailyQuota(user=user, benchmark=benchmark, day=day, used=0)], ignore_conflicts=True
    )
    # The conditional UPDATE is the lock: on PostgreSQL concurrent updaters queue
    # on the row and re-check used < limit after the holder commits; SQLite runs
    # one writer at a time. Never count-then-insert.
    taken = DailyQuota.objects.filter(user=user, benchmark=benchmark, day=day, used__lt=limit).update(
        used=F("used") + 1
    )
    if not taken:
        raise QuotaExceeded(limit=limit, reset_at=next_reset())
    used = DailyQuota.objects.filter(user=user, benchmark=benchmark, day=day).values_list("used", flat=True)[0]
    return max(0, limit - used)


def quota_refund(*, user_id: int, benchmark_id: int, day: dt.date) -> None:
    """Give back a slot taken by a submission that failed on the server's side."""
    DailyQuota.objects.filter(user_id=user_id, benchmark_id=benchmark_id, day=day, used__gt=0).update(
        used=F("used") - 1
    )


def quota_remaining(*, user, benchmark: Benchmark) -> int:
    if not getattr(user, "is_authenticated", False):
        return benchmark.daily_limit
    used = (
        DailyQuota.objects.filter(user=user, benchmark=benchmark, day=utc_day())
        .values_list("used", flat=True)
        .first()
    ) or 0
    return max(0, benchmark.daily_limit - used)
