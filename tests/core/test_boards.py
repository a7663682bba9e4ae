"""Boards: paged, ranks derived from the stored order key, rows refreshed per entrant."""
from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from leaderboard.core import selectors
from leaderboard.core.boardcache import boards_changed
from leaderboard.core.models import Entrant, LeaderboardRow, Round, Submission
from leaderboard.core.services.submissions import submission_score
from leaderboard.core.services.uploads import submission_create
from tests.conftest import MINI_ROWS, submission_csv


def fill_board(benchmark, n: int, *, start: int = 0) -> list[Entrant]:
    """``n`` entrants with one row each, scores n-1 .. 0 (entrant e0 best), created directly."""
    owner, _ = get_user_model().objects.get_or_create(username="board-filler")
    round_ = Round.objects.get(benchmark=benchmark)
    base = timezone.now() - dt.timedelta(days=1)
    entrants = Entrant.objects.bulk_create(
        [Entrant(owner=owner, name=f"e{start + i}") for i in range(n)], batch_size=1000)
    subs = Submission.objects.bulk_create([
        Submission(benchmark=benchmark, round=round_, entrant=e, user=owner, original_name="p.csv", size=1,
                   audit_hash=f"{i:064x}", status="scored", received_at=base + dt.timedelta(seconds=i))
        for i, e in enumerate(entrants)], batch_size=1000)
    LeaderboardRow.objects.bulk_create([
        LeaderboardRow(round=round_, split="public", entrant=e, submission=s, score=float(n - i),
                       metrics={"score": float(n - i)}, submissions_count=1, order_missing=False,
                       order_value=-float(n - i), order_at=s.received_at)
        for i, (e, s) in enumerate(zip(entrants, subs))], batch_size=1000)
    boards_changed(benchmark.pk)  # as the services that write board rows do
    return entrants


def test_board_api_pages_with_count_and_next(mini_benchmark, client):
    fill_board(mini_benchmark, 250)
    first = client.get("/api/benchmarks/mini-props/leaderboard/").json()
    assert first["count"] == 250 and len(first["rows"]) == 100 and first["page_size"] == 100
    assert [r["rank"] for r in first["rows"][:3]] == [1, 2, 3] and first["rows"][0]["entrant"] == "e0"
    assert first["next"].endswith("/api/benchmarks/mini-props/leaderboard/?page=2&page_size=100")
    third = client.get(first["next"].replace("page=2", "page=3")).json()
    assert [r["rank"] for r in third["rows"]] == list(range(201, 251)) and third["next"] is None
    assert third["rows"][-1]["entrant"] == "e249"
    big = client.get("/api/benchmarks/mini-props/leaderboard/?page_size=1000").json()
    assert len(big["rows"]) == 250 and big["next"] is None
    beyond = client.get("/api/benchmarks/mini-props/leaderboard/?page=9").json()
    assert beyond["rows"] == [] and beyond["count"] == 250


@pytest.mark.parametrize("query, column", [("page_size=1001", "page_size"), ("page_size=0", "page_size"),
                                           ("page=0", "page"), ("page=x", "page")])
def test_board_api_refuses_bad_paging(mini_benchmark, client, query, column):
    resp = client.get(f"/api/benchmarks/mini-props/leaderboard/?{query}")
    assert resp.status_code == 400 and resp.json()["errors"][0]["column"] == column


def test_board_ties_go_to_the_earlier_submission_and_missing_values_last(mini_benchmark):
    entrants = fill_board(mini_benchmark, 4)
    # e3 ties with e1 (score 3) but submitted later; e2 has no value.
    LeaderboardRow.objects.filter(entrant=entrants[3]).update(score=3.0, order_value=-3.0)
    LeaderboardRow.objects.filter(entrant=entrants[2]).update(score=None, order_missing=True, order_value=0.0)
    rows = selectors.leaderboard_rows(mini_benchmark)
    assert [(r.rank, r.entrant.name) for r in rows] == [(1, "e0"), (2, "e1"), (3, "e3"), (4, "e2")]
    qs = LeaderboardRow.objects.filter(split="public")
    assert [selectors.board_rank(qs, LeaderboardRow.BOARD_ORDER, r) for r in rows] == [1, 2, 3, 4]


def test_board_page_finds_the_viewer(mini_benchmark, client, users):
    fill_board(mini_benchmark, 300)
    Entrant.objects.filter(name="e234").update(owner=users["member"])
    client.force_login(users["member"])
    html = client.get("/b/mini-props/").content.decode()
    assert 'data-role="find-me" href="?split=public&amp;page=3#rank-235"' in html
    assert html.count("<tr id=\"rank-") == 100
    page3 = client.get("/b/mini-props/?split=public&page=3").content.decode()
    assert 'id="rank-235" class="mine"' in page3
    assert 'aria-current="page">3<' in page3


def test_find_me_follows_the_board_and_the_viewers_entrants(mini_benchmark, client, users):
    """"Find me" is kept with the board (no query while it is unchanged) but never goes stale: a board
    change moves it, and so does an entrant the viewer gains; a viewer with none gets no link."""
    fill_board(mini_benchmark, 300)
    Entrant.objects.filter(name="e234").update(owner=users["member"])
    client.force_login(users["member"])
    assert 'href="?split=public&amp;page=3#rank-235"' in client.get("/b/mini-props/").content.decode()
    with CaptureQueriesContext(connection) as again:
        assert 'href="?split=public&amp;page=3#rank-235"' in client.get("/b/mini-props/").content.decode()
    assert not [q for q in again.captured_queries if "COUNT(" in q["sql"]]  # the rank was not counted again

    Entrant.objects.filter(name="e40").update(owner=users["member"])  # say, a team the viewer joined
    assert 'href="?split=public&amp;page=1#rank-41"' in client.get("/b/mini-props/").content.decode()

    LeaderboardRow.objects.filter(entrant__name="e234").update(score=1000.0, order_value=-1000.0)
    boards_changed(mini_benchmark.pk)  # as the services that write board rows do
    assert 'href="?split=public&amp;page=1#rank-1"' in client.get("/b/mini-props/").content.decode()

    client.force_login(users["outsider"])
    assert 'data-role="find-me"' not in client.get("/b/mini-props/").content.decode()


@pytest.mark.parametrize("url", ["/b/mini-props/", "/b/mini-props/?page=2&page_size=10",
                                 "/api/benchmarks/mini-props/leaderboard/",
                                 "/api/benchmarks/mini-props/leaderboard/?page=2&page_size=20"])
def test_board_queries_do_not_grow_with_the_board(mini_benchmark, client, users, url):
    client.force_login(users["member"])
    fill_board(mini_benchmark, 30)
    Entrant.objects.filter(name="e25").update(owner=users["member"])
    with CaptureQueriesContext(connection) as few:
        assert client.get(url).status_code == 200
    fill_board(mini_benchmark, 3000, start=30)
    Entrant.objects.filter(name="e2500").update(owner=users["member"])
    with CaptureQueriesContext(connection) as many:
        assert client.get(url).status_code == 200
    assert len(many) == len(few) and len(many) <= 16, [q["sql"][:120] for q in many.captured_queries]


def test_board_scoring_touches_only_its_entrants_row(mini_benchmark, users):
    perfect = submission_csv(MINI_ROWS)
    worse = submission_csv(MINI_ROWS, a=[-r["A"] for r in MINI_ROWS])

    def accept(user, data):
        sub = submission_create(user=user, benchmark=mini_benchmark, data=data, filename="p.csv").submission
        assert submission_score(submission_id=sub.pk) == "scored"
        return sub

    accept(users["owner"], worse)
    first_member = accept(users["member"], perfect)
    owner_row = LeaderboardRow.objects.get(split="public", entrant__owner=users["owner"])
    member_row = LeaderboardRow.objects.get(split="public", entrant__owner=users["member"])
    accept(users["owner"], perfect)  # owner improves: its row changes, member's does not
    assert LeaderboardRow.objects.get(pk=member_row.pk).updated_at == member_row.updated_at
    owner_after = LeaderboardRow.objects.get(pk=owner_row.pk)
    assert owner_after.updated_at > owner_row.updated_at and owner_after.submissions_count == 2
    # Same best score: the member's earlier submission keeps rank 1.
    assert [(r.rank, r.entrant.owner.username) for r in selectors.leaderboard_rows(mini_benchmark)] == [
        (1, "member"), (2, "owner")]
    assert LeaderboardRow.objects.get(pk=member_row.pk).submission_id == first_member.pk


def test_board_page_past_the_last_says_so_and_links_the_last_page(mini_benchmark, client):
    """An old link or a typed page number after the last page: the board has rows, so the page must not
    say there are none yet ("Be the first"); it says the page is past the end and links the last one."""
    fill_board(mini_benchmark, 150)  # two pages of 100
    html = client.get("/b/mini-props/?split=public&page=5").content.decode()
    assert "150 rows" in html
    assert "No scored submissions" not in html and "Be the first" not in html
    assert "past the last page" in html
    assert 'href="?split=public&amp;page=2#leaderboard" data-role="last-page"' in html
    last = client.get("/b/mini-props/?split=public&page=2").content.decode()
    assert last.count('<tr id="rank-') == 50 and 'data-role="last-page"' not in last


def test_empty_board_page_still_invites_the_first_upload(mini_benchmark, client):
    html = client.get("/b/mini-props/?page=3").content.decode()
    assert "No scored submissions on this split yet" in html and "past the last page" not in html
