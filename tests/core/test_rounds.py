"""Round status: one function moves it; closed rounds take no submissions; resolving needs final truth."""
from __future__ import annotations

import pytest

from leaderboard.core.models import Round, TruthVersion
from leaderboard.core.services.answers import SubmissionRejected
from leaderboard.core.services.rounds import round_set_status
from leaderboard.core.services.uploads import submission_create
from tests.conftest import MINI_ROWS, submission_csv


@pytest.fixture
def weekly(mini_benchmark):
    """A second, non-permanent round of the mini benchmark with the same cases' truth."""
    permanent = Round.objects.get(benchmark=mini_benchmark)
    permanent.is_permanent = False
    permanent.save()
    return permanent


def test_round_close_stops_submissions_and_reopen_allows_them(weekly, users):
    round_set_status(round_=weekly, status="closed")
    weekly.refresh_from_db()
    assert weekly.status == "closed" and weekly.closes_at is not None
    with pytest.raises(SubmissionRejected) as info:
        submission_create(user=users["owner"], benchmark=weekly.benchmark, data=submission_csv(MINI_ROWS),
                          filename="p.csv")
    assert info.value.status == 409 and "no round open" in info.value.errors[0].message
    TruthVersion.objects.filter(round=weekly).delete()  # a round with truth never reopens (the test below)
    round_set_status(round_=weekly, status="open")
    assert submission_create(user=users["owner"], benchmark=weekly.benchmark, data=submission_csv(MINI_ROWS),
                             filename="p.csv").remaining_today == 4


def test_round_resolve_needs_final_truth_and_is_final(weekly):
    round_set_status(round_=weekly, status="closed")
    TruthVersion.objects.filter(round=weekly).update(is_final=False)
    with pytest.raises(SubmissionRejected, match="final truth"):
        round_set_status(round_=weekly, status="resolved")
    TruthVersion.objects.filter(round=weekly).update(is_final=True)
    round_set_status(round_=weekly, status="resolved")
    with pytest.raises(SubmissionRejected, match="cannot become open"):
        round_set_status(round_=weekly, status="open")


def test_round_permanent_round_closes_and_never_reopens(mini_benchmark, users):
    permanent = Round.objects.get(benchmark=mini_benchmark)
    round_set_status(round_=permanent, status="closed")
    permanent.refresh_from_db()
    assert permanent.status == "closed" and permanent.closes_at is not None
    with pytest.raises(SubmissionRejected) as info:
        submission_create(user=users["owner"], benchmark=mini_benchmark, data=submission_csv(MINI_ROWS),
                          filename="p.csv")
    assert info.value.status == 409
    assert f"closed at {permanent.closes_at:%Y-%m-%d %H:%M} UTC" in info.value.errors[0].message
    with pytest.raises(SubmissionRejected, match="stays closed"):
        round_set_status(round_=permanent, status="open")


@pytest.mark.parametrize("final", [False, True], ids=["interim", "final"])
def test_round_with_any_truth_version_never_reopens_whatever_asks(weekly, users, client, final):
    """Issue 19, item 6: uploads after the returns are public. Refused in the service, so the admin's
    Reopen action (and any other path) is refused too, and the round stays closed with no deadline change."""
    round_set_status(round_=weekly, status="closed")
    TruthVersion.objects.filter(round=weekly).update(is_final=final)
    closes_at = Round.objects.get(pk=weekly.pk).closes_at
    with pytest.raises(SubmissionRejected) as info:
        round_set_status(round_=weekly, status="open")
    kind = "final" if final else "interim"
    assert info.value.status == 409
    assert f"cannot reopen: truth version 1 ({kind}) is loaded" in info.value.errors[0].message

    client.force_login(users["organiser"])
    response = client.post("/admin/core/round/", {"action": "reopen_rounds", "_selected_action": [weekly.pk]},
                           follow=True)
    assert f"cannot reopen: truth version 1 ({kind}) is loaded" in response.content.decode()
    weekly.refresh_from_db()
    assert weekly.status == "closed" and weekly.closes_at == closes_at
    with pytest.raises(SubmissionRejected):
        submission_create(user=users["owner"], benchmark=weekly.benchmark, data=submission_csv(MINI_ROWS),
                          filename="p.csv")
