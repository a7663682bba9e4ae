"""Late submissions: after closes_at a benchmark with late_submissions scores uploads, marks them late
and never ranks them; rows of every board carry an interval and a rank range."""
from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from leaderboard.core.models import LeaderboardRow, Round, Submission
from leaderboard.core.quota import QuotaExceeded
from leaderboard.core.services.answers import SubmissionRejected
from leaderboard.core.services.uploads import submission_create
from tests.conftest import MINI_ROWS, submission_csv


def _submit(user, benchmark, **kw):
    return submission_create(user=user, benchmark=benchmark, data=submission_csv(MINI_ROWS, **kw), filename="p.csv")


def _close(benchmark):
    Round.objects.filter(benchmark=benchmark).update(closes_at=timezone.now() - dt.timedelta(minutes=1))


@pytest.mark.django_db(transaction=True)
def test_late_upload_scored_marked_late_and_never_ranked(mini_benchmark, users, client):
    on_time = _submit(users["owner"], mini_benchmark).submission
    mini_benchmark.config = {**mini_benchmark.config, "late_submissions": True}
    mini_benchmark.save(update_fields=["config"])
    _close(mini_benchmark)
    # A perfect-rank upload after the deadline: accepted, scored, marked late ...
    late = _submit(users["member"], mini_benchmark, a=[r["A"] for r in MINI_ROWS],
                   b=[r["B"] for r in MINI_ROWS]).submission
    late.refresh_from_db()
    on_time.refresh_from_db()
    assert (late.status, late.late, on_time.late) == ("scored", True, False)
    # ... and never on the board: only the on-time entrant is ranked.
    board = LeaderboardRow.objects.filter(round=late.round, split="public")
    assert list(board.values_list("submission_id", flat=True)) == [on_time.pk]
    client.force_login(users["member"])
    assert client.get(f"/api/submissions/{late.pk}/").json()["late"] is True
    assert ">late</span>" in client.get(f"/submissions/{late.pk}/").content.decode()
    rows = client.get(f"/api/benchmarks/{mini_benchmark.slug}/leaderboard/").json()["rows"]
    assert [r["entrant"] for r in rows] == [on_time.entrant.name]
    assert rows[0]["rank_range"] == [1, 1] and len(rows[0]["interval"]) == 2


@pytest.mark.django_db(transaction=True)
def test_a_late_upload_says_it_is_not_listed_because_it_is_late(mini_benchmark, users, client):
    # On time: a poor upload (reversed ranks), listed. Late: the perfect one, scored better, never listed.
    on_time = _submit(users["owner"], mini_benchmark, a=[r["A"] for r in reversed(MINI_ROWS)],
                      b=[r["B"] for r in reversed(MINI_ROWS)]).submission
    mini_benchmark.config = {**mini_benchmark.config, "late_submissions": True}
    mini_benchmark.save(update_fields=["config"])
    _close(mini_benchmark)
    late = _submit(users["owner"], mini_benchmark).submission
    client.force_login(users["owner"])
    standing = client.get(f"/api/submissions/{late.pk}/").json()["leaderboard"]
    public = next(s for s in standing if s["split"] == "public")
    assert public["listed"] is False
    # Why: it came after the deadline, not that another of the entrant's submissions is better.
    assert "deadline" in public["reason"] and "late" in public["reason"], public["reason"]
    assert f"#{on_time.pk}" not in public["reason"]
    assert "after the deadline" in client.get(f"/submissions/{late.pk}/").content.decode()


@pytest.mark.django_db(transaction=True)
def test_late_upload_after_the_round_was_closed_and_revealed(mini_benchmark, users, client):
    from django.core.management import call_command

    _submit(users["owner"], mini_benchmark)
    mini_benchmark.config = {**mini_benchmark.config, "late_submissions": True}
    mini_benchmark.save(update_fields=["config"])
    call_command("round_close", mini_benchmark.slug, "1")
    call_command("reveal", mini_benchmark.slug)
    late = _submit(users["member"], mini_benchmark).submission
    late.refresh_from_db()
    assert (late.status, late.late) == ("scored", True)
    assert late.scores.filter(split="private").exists()  # its owner sees how it would have done
    assert not LeaderboardRow.objects.filter(submission=late).exists()


@pytest.mark.django_db(transaction=True)
def test_late_uploads_count_against_the_daily_limit(mini_benchmark, users):
    mini_benchmark.config = {**mini_benchmark.config, "late_submissions": True}
    mini_benchmark.daily_limit = 2
    mini_benchmark.save(update_fields=["config", "daily_limit"])
    _close(mini_benchmark)
    _submit(users["owner"], mini_benchmark)
    _submit(users["owner"], mini_benchmark)
    with pytest.raises((QuotaExceeded, SubmissionRejected)):
        _submit(users["owner"], mini_benchmark)
    assert Submission.objects.filter(late=True).count() == 2


@pytest.mark.django_db(transaction=True)
def test_without_late_submissions_the_deadline_refuses(mini_benchmark, users):
    _close(mini_benchmark)
    with pytest.raises(SubmissionRejected) as exc:
        _submit(users["owner"], mini_benchmark)
    assert exc.value.status == 409


@pytest.mark.parametrize("late_submissions", [True, False])
@pytest.mark.django_db(transaction=True)
def test_an_upload_straddling_the_deadline(mini_benchmark, users, monkeypatch, late_submissions):
    """Checked while the round was open, stored once the deadline had passed (the deadline falls while
    its file is written): with late submissions it is taken late, as it would be a moment later, not
    refused; without, it is refused, as every upload after the deadline is."""
    from leaderboard.core.services import submissions

    mini_benchmark.config = {**mini_benchmark.config, "late_submissions": late_submissions}
    mini_benchmark.save(update_fields=["config"])
    real_store = submissions.upload_file_store

    def store_while_the_deadline_passes(data, filename):
        _close(mini_benchmark)
        return real_store(data, filename)

    monkeypatch.setattr(submissions, "upload_file_store", store_while_the_deadline_passes)
    if not late_submissions:
        with pytest.raises(SubmissionRejected) as exc:
            _submit(users["owner"], mini_benchmark)
        assert exc.value.status == 409 and not Submission.objects.exists()
        return
    sub = _submit(users["owner"], mini_benchmark).submission
    sub.refresh_from_db()
    assert (sub.status, sub.late) == ("scored", True)
    assert not LeaderboardRow.objects.filter(submission=sub).exists()
