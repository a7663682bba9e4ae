"""The daily limit: 5 accepted per user per benchmark per UTC day, shared by entrants, enforced atomically."""
from __future__ import annotations

import datetime as dt
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from django.db import connection
from django.utils import timezone

from leaderboard.core.models import DailyQuota, Entrant, Submission
from leaderboard.core.quota import QuotaExceeded, day_start, next_reset, quota_remaining
from leaderboard.core.services.answers import SubmissionRejected
from leaderboard.core.services.uploads import submission_create
from tests.conftest import MINI_ROWS, submission_csv


def _submit(user, benchmark, **kw):
    return submission_create(user=user, benchmark=benchmark, data=submission_csv(MINI_ROWS), filename="p.csv", **kw)


def test_quota_sixth_submission_refused_with_reset_time(mini_benchmark, users):
    remaining = [_submit(users["owner"], mini_benchmark).remaining_today for _ in range(5)]
    assert remaining == [4, 3, 2, 1, 0]
    with pytest.raises(QuotaExceeded) as info:
        _submit(users["owner"], mini_benchmark)
    reset = next_reset()
    assert info.value.reset_at == reset
    assert reset.hour == 0 and reset.tzinfo is not None
    assert f"{reset:%Y-%m-%d %H:%M} UTC" in info.value.message
    assert 0 < info.value.retry_after_seconds <= 86400
    assert Submission.objects.filter(user=users["owner"]).count() == 5


def test_a_quota_day_starts_and_resets_at_utc_midnight():
    utc = dt.timezone.utc
    assert day_start(dt.date(2026, 3, 1)) == dt.datetime(2026, 3, 1, 0, 0, tzinfo=utc)
    # 23:30 on 1 March at UTC+2 is 21:30 UTC, still 1 March: the limit resets at 2 March 00:00 UTC.
    late_evening = dt.datetime(2026, 3, 1, 23, 30, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert next_reset(late_evening) == dt.datetime(2026, 3, 2, 0, 0, tzinfo=utc)
    # 00:30 on 1 March at UTC-5 is 05:30 UTC on 1 March: the same reset.
    early_morning = dt.datetime(2026, 3, 1, 0, 30, tzinfo=dt.timezone(dt.timedelta(hours=-5)))
    assert next_reset(early_morning) == dt.datetime(2026, 3, 2, 0, 0, tzinfo=utc)
    # The last day of a year resets on the first of the next.
    assert next_reset(dt.datetime(2026, 12, 31, 12, 0, tzinfo=utc)) == dt.datetime(2027, 1, 1, tzinfo=utc)


def test_quota_shared_by_all_entrants_of_a_user(mini_benchmark, users):
    second = Entrant.objects.create(owner=users["owner"], name="owner-second-model")
    for _ in range(3):
        _submit(users["owner"], mini_benchmark)
    for _ in range(2):
        _submit(users["owner"], mini_benchmark, entrant=second.name)
    with pytest.raises(QuotaExceeded):
        _submit(users["owner"], mini_benchmark, entrant=second.pk)
    # Another user is not affected.
    assert _submit(users["member"], mini_benchmark).remaining_today == 4


def test_quota_not_taken_by_rejected_upload(mini_benchmark, users):
    with pytest.raises(SubmissionRejected):
        submission_create(user=users["owner"], benchmark=mini_benchmark, data=b"sequence_id,A\nab00,1\n",
                          filename="bad.csv")
    assert quota_remaining(user=users["owner"], benchmark=mini_benchmark) == 5


def test_quota_resets_on_the_next_utc_day(mini_benchmark, users):
    yesterday = timezone.now().date() - dt.timedelta(days=1)
    DailyQuota.objects.create(user=users["owner"], benchmark=mini_benchmark, day=yesterday, used=5)
    assert quota_remaining(user=users["owner"], benchmark=mini_benchmark) == 5
    assert _submit(users["owner"], mini_benchmark).remaining_today == 4


def test_quota_limit_comes_from_the_benchmark(mini_benchmark, users):
    mini_benchmark.daily_limit = 2
    mini_benchmark.save()
    _submit(users["owner"], mini_benchmark)
    _submit(users["owner"], mini_benchmark)
    with pytest.raises(QuotaExceeded):
        _submit(users["owner"], mini_benchmark)


@pytest.mark.django_db(transaction=True)
def test_quota_fifty_concurrent_threads_accept_exactly_five(mini_bundle, users):
    """Each thread has its own connection and transaction: the real database arbitrates."""
    from leaderboard.core.services.benchmarks import benchmark_load_bundle

    benchmark = benchmark_load_bundle(mini_bundle).benchmark
    user = users["owner"]
    barrier = threading.Barrier(50)

    def attempt(_):
        try:
            barrier.wait()
            return "ok" if _submit(user, benchmark) else "?"
        except QuotaExceeded:
            return "limit"
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=50) as pool:
        outcomes = list(pool.map(attempt, range(50)))
    assert outcomes.count("ok") == 5, outcomes
    assert outcomes.count("limit") == 45, outcomes
    assert Submission.objects.filter(user=user).count() == 5
    assert DailyQuota.objects.get(user=user, benchmark=benchmark).used == 5


def test_quota_refused_upload_leaves_no_file_behind(mini_benchmark, users, settings):
    # The file is written before the transaction that takes the quota (no lock held while the disk
    # writes); a refused upload's copy is deleted again.
    for _ in range(5):
        _submit(users["owner"], mini_benchmark)
    with pytest.raises(QuotaExceeded):
        _submit(users["owner"], mini_benchmark)
    stored = sorted(p.relative_to(settings.MEDIA_ROOT).as_posix() for p in Path(settings.MEDIA_ROOT).rglob("*")
                    if p.is_file() and "submissions" in p.parts)
    assert stored == sorted(s.file.name for s in Submission.objects.filter(user=users["owner"]))
    assert len(stored) == 5
