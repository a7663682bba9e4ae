"""`make demo` shows late submissions: an ended copy of the antibody benchmark with on-time entries
ranked and bob's upload after the deadline scored, marked late and not ranked; loading twice changes nothing."""
from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model

from leaderboard.core.management.commands.demo_setup import late_demo_load
from leaderboard.core.models import LeaderboardRow, Submission
from leaderboard.core.services.accounts import email_mark_verified
from leaderboard.core.services.entrants import entrant_default
from leaderboard.demo import properties as properties_demo


@pytest.mark.django_db(transaction=True)
def test_demo_has_an_ended_benchmark_with_a_late_upload_scored_and_never_ranked(tmp_path, client):
    bob = get_user_model().objects.create_user("bob", password="pw-bob-123")
    email_mark_verified(user=bob, email="bob@example.org")
    entrant_default(bob)
    benchmark = late_demo_load(tmp_path / "late")
    assert benchmark.slug == properties_demo.LATE_SLUG
    subs = Submission.objects.filter(benchmark=benchmark)
    late = subs.get(late=True)
    assert (late.user, late.status) == (bob, "scored")
    on_time = subs.filter(late=False)
    assert on_time.count() == 3 and set(on_time.values_list("status", flat=True)) == {"scored"}
    board = LeaderboardRow.objects.filter(round=late.round, split="public")
    assert set(board.values_list("submission_id", flat=True)) == set(on_time.values_list("pk", flat=True))

    # What a new user sees: the deadline has passed, the late upload says so.
    closed = "closed at 2025-06-30 23:59 UTC; late submissions are still scored, marked late and never ranked"
    assert closed in client.get(f"/b/{benchmark.slug}/").content.decode()
    client.force_login(bob)
    page = client.get(f"/b/{benchmark.slug}/").content.decode()
    assert f'href="/b/{benchmark.slug}/submit/" data-role="submit-late">Submit late</a>' in page
    assert ">late</span>" in client.get(f"/submissions/{late.pk}/").content.decode()

    # Idempotent: a second run loads the same closed bundle and submits nothing.
    again = late_demo_load(tmp_path / "late")
    assert again.pk == benchmark.pk and Submission.objects.filter(benchmark=benchmark).count() == 4
    meta = json.loads((tmp_path / "late" / "benchmark.json").read_text())
    assert meta["closes_at"] == properties_demo.LATE_CLOSED_AT and meta["config"]["late_submissions"] is True
