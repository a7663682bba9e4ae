"""The daily submission limit: a domain rule enforced in the database."""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.db import connection
from django.db.models import F
from django.utils import timezone

from leaderboard.core.models import Benchmark, DailyQuota, Team, TeamMembership


@dataclass
class QuotaExceeded(Exception):
    limit: int
    reset_at: dt.datetime
    shared_by: str = "all your entrants"

    @property
    def retry_after_seconds(self) -> int:
        return max(1, int((self.reset_at - timezone.now()).total_seconds()) + 1)

    @property
    def message(self) -> str:
        return (
            f"Daily limit reached: {self.limit} accepted submissions per UTC day on this benchmark, "
            f"shared by {self.shared_by}. It resets at {self.reset_at:%Y-%m-%d %H:%M} UTC "
            f"(in {_human_duration(self.retry_after_seconds)})."
        )


def _human_duration(seconds: int) -> str:
    hours, rest = divmod(seconds, 3600)
    minutes = rest // 60
    return f"{hours} h {minutes} min" if hours else f"{max(minutes, 1)} min"


def utc_day(at: dt.datetime | None = None) -> dt.date:
    return (at or timezone.now()).astimezone(dt.timezone.utc).date()


def day_start(day: dt.date) -> dt.datetime:
    """The moment the quota day ``day`` begins: its midnight, UTC."""
    return dt.datetime.combine(day, dt.time.min, tzinfo=dt.timezone.utc)


def next_reset(at: dt.datetime | None = None) -> dt.datetime:
    return day_start(utc_day(at) + dt.timedelta(days=1))


def _holder(*, user_id: int | None, team_id: int | None) -> dict:
    """Whose row counts: the team's when the upload is a team's, else the user's own."""
    return {"team_id": team_id} if team_id is not None else {"user_id": user_id}


def quota_consume(*, user, benchmark: Benchmark, team: Team | None = None) -> int:
    """Take one submission from today's allowance of ``user`` (competing alone) or of ``team``
    (every member's uploads together); return how many remain.

    Must run inside the transaction that stores the submission, so a rollback
    gives the slot back. Raises QuotaExceeded when none is left.
    """
    day = utc_day()
    limit = benchmark.daily_limit
    holder = _holder(user_id=user.pk, team_id=team.pk if team is not None else None)
    # Make sure today's row exists; concurrent inserts collapse on the unique constraint.
    DailyQuota.objects.bulk_create([DailyQuota(benchmark=benchmark, day=day, used=0, **holder)],
                                   ignore_conflicts=True)
    # The conditional UPDATE is the lock: on PostgreSQL concurrent updaters queue
    # on the row and re-check used < limit after the holder commits; SQLite runs
    # one writer at a time. Never count-then-insert.
    taken = DailyQuota.objects.filter(benchmark=benchmark, day=day, used__lt=limit, **holder).update(
        used=F("used") + 1
    )
    if not taken:
        shared = (f"the members of team {team.entrant.name}" if team is not None else "all your entrants")
        raise QuotaExceeded(limit=limit, reset_at=next_reset(), shared_by=shared)
    used = DailyQuota.objects.filter(benchmark=benchmark, day=day, **holder).values_list("used", flat=True)[0]
    return max(0, limit - used)


def quota_add(*, benchmark: Benchmark, day: dt.date, used: int, user_id: int | None = None,
              team_id: int | None = None) -> None:
    """Count ``used`` more uploads on one row (a member joining or leaving a team brings them along)."""
    if used <= 0:
        return
    holder = _holder(user_id=user_id, team_id=team_id)
    DailyQuota.objects.bulk_create([DailyQuota(benchmark=benchmark, day=day, used=0, **holder)],
                                   ignore_conflicts=True)
    DailyQuota.objects.filter(benchmark=benchmark, day=day, **holder).update(used=F("used") + used)


def quota_used(*, benchmark: Benchmark, day: dt.date, user_id: int | None = None, team_id: int | None = None) -> int:
    return DailyQuota.objects.filter(benchmark=benchmark, day=day, **_holder(user_id=user_id, team_id=team_id)
                                     ).values_list("used", flat=True).first() or 0


def quota_refund(*, user_id: int, benchmark_id: int, day: dt.date, team_id: int | None = None) -> None:
    """Give back a slot taken by a submission that failed on the server's side (the team's, for a team's)."""
    DailyQuota.objects.filter(benchmark_id=benchmark_id, day=day, used__gt=0,
                              **_holder(user_id=user_id, team_id=team_id)).update(used=F("used") - 1)


def quota_remaining(*, user, benchmark: Benchmark) -> int:
    """What ``user`` may still upload today: their team's allowance when they are in a team of the benchmark."""
    if not getattr(user, "is_authenticated", False):
        return benchmark.daily_limit
    # One query: the team's row when the user is in a team of the benchmark, else their own (at most
    # one matches). Written out: it runs on every signed-in page view, and building it through the
    # ORM cost more CPU than the query itself (issue 26).
    with connection.cursor() as cursor:
        cursor.execute(QUOTA_USED_SQL, quota_used_params(user_id=user.pk, benchmark_id=benchmark.pk))
        row = cursor.fetchone()
    return remaining_of(benchmark.daily_limit, row[0] if row else None)


def remaining_of(daily_limit: int, used: int | None) -> int:
    """Uploads left today under ``daily_limit`` with ``used`` counted (None: no row yet, nothing used)."""
    return max(0, daily_limit - (used or 0))


def quota_used_params(*, user_id: int, benchmark_id: int) -> dict:
    """The parameters of ``QUOTA_USED_SQL``: today's row of the user (or their team) on the benchmark."""
    return {"benchmark": benchmark_id, "user": user_id, "day": connection.ops.adapt_datefield_value(utc_day())}


# What ``user`` (or their team) used today on ``benchmark``: at most one row (``quota_remaining``).
QUOTA_USED_SQL = (
    f"SELECT q.used FROM {DailyQuota._meta.db_table} q WHERE q.benchmark_id = %(benchmark)s AND q.day = %(day)s"
    f" AND (q.team_id IN (SELECT m.team_id FROM {TeamMembership._meta.db_table} m"
    f" WHERE m.user_id = %(user)s AND m.benchmark_id = %(benchmark)s)"
    f" OR (q.user_id = %(user)s AND q.team_id IS NULL AND NOT EXISTS (SELECT 1 FROM {TeamMembership._meta.db_table} m"
    f" WHERE m.user_id = %(user)s AND m.benchmark_id = %(benchmark)s)))")
