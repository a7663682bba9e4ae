"""Public boards served from the cache: never stale after a score lands, nothing of one viewer shown to
another, and a page's query count that does not move at 100,000 submissions."""
from __future__ import annotations

import datetime as dt
import re

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from leaderboard.core.boardcache import boards_changed
from leaderboard.core.models import Entrant, LeaderboardRow, Round, Submission
from leaderboard.core.services.submissions import submission_score
from leaderboard.core.services.uploads import submission_create
from tests.conftest import MINI_ROWS, submission_csv

PAGE = "/b/mini-props/"
API = "/api/benchmarks/mini-props/leaderboard/"


def _queries(client, url):
    with CaptureQueriesContext(connection) as ctx:
        resp = client.get(url)
    assert resp.status_code == 200, resp.content[:300]
    return resp, [q["sql"] for q in ctx.captured_queries]


def _board_reads(sqls) -> list[str]:
    return [q for q in sqls if "core_leaderboardrow" in q]


def _upload(user, benchmark, a):
    sub = submission_create(user=user, benchmark=benchmark, data=submission_csv(MINI_ROWS, a=a),
                            filename="p.csv").submission
    submission_score(submission_id=sub.pk)  # done already where the upload's transaction committed (eager task)
    return sub


@pytest.mark.django_db(transaction=True)
def test_board_cache_serves_repeat_reads_and_a_landed_score_shows_at_once(mini_benchmark, users, client):
    # Predicting A exactly: a perfect Spearman and recall, score 1.0 (0.6 x 1 + 0.4 x 1).
    _upload(users["owner"], mini_benchmark, None)
    first, _ = _queries(client, API)
    assert [(r["entrant"], r["score"]) for r in first.json()["rows"]] == [("owner", pytest.approx(1.0))]
    _queries(client, PAGE)

    again, sqls = _queries(client, API)
    assert again.content == first.content and _board_reads(sqls) == []  # from the cache
    page, sqls = _queries(client, PAGE)
    assert _board_reads(sqls) == [] and "owner" in page.content.decode()

    # member's upload predicts A in reverse order: Spearman -1 on A; it lands below owner.
    _upload(users["member"], mini_benchmark, [r["A"] for r in reversed(MINI_ROWS)])
    assert Submission.objects.get(user=users["member"]).status == "scored"
    after, sqls = _queries(client, API)
    assert [r["entrant"] for r in after.json()["rows"]] == ["owner", "member"] and _board_reads(sqls)
    html = client.get(PAGE).content.decode()
    assert re.findall(r'data-entrant="([^"]+)"', html) == ["owner", "member"]


def test_board_cache_never_shows_one_viewers_row_marks_or_name_to_another(mini_benchmark, users, client):
    _upload(users["owner"], mini_benchmark, None)
    _upload(users["member"], mini_benchmark, [r["A"] for r in reversed(MINI_ROWS)])

    def mine(html):
        return re.findall(r'<tr id="rank-\d+" class="mine" data-entrant="([^"]+)"', html)

    client.force_login(users["owner"])
    html = client.get(PAGE).content.decode()
    assert mine(html) == ["owner"] and 'title="Signed in">owner<' in html
    client.force_login(users["member"])
    html = client.get(PAGE).content.decode()
    assert mine(html) == ["member"] and 'title="Signed in">member<' in html and 'Signed in">owner<' not in html
    client.force_login(users["outsider"])
    html = client.get(PAGE).content.decode()
    assert mine(html) == [] and 'title="Signed in">outsider<' in html
    client.logout()
    html = client.get(PAGE).content.decode()
    assert mine(html) == [] and "Signed in" not in html


def _bulk(benchmark, entrants: int, per_entrant: int, start: int) -> None:
    """``entrants`` new entrants with ``per_entrant`` scored submissions each and a board row."""
    owner, _ = get_user_model().objects.get_or_create(username="bulk")
    round_ = Round.objects.get(benchmark=benchmark)
    base = timezone.now() - dt.timedelta(days=1)
    made = Entrant.objects.bulk_create([Entrant(owner=owner, name=f"bulk-{start + i}") for i in range(entrants)])
    subs = Submission.objects.bulk_create([  # each entrant's latest, the one on the board
        Submission(benchmark=benchmark, round=round_, entrant=e, user=owner, original_name="p.csv", size=1,
                   audit_hash=f"{start + i:064x}", status="scored",
                   received_at=base + dt.timedelta(seconds=(i + 1) * per_entrant - 1))
        for i, e in enumerate(made)], batch_size=5000)
    _earlier_copies(subs, per_entrant - 1)
    last = {s.entrant_id: s for s in subs}
    LeaderboardRow.objects.bulk_create([
        LeaderboardRow(round=round_, split="public", entrant=e, submission=last[e.pk], score=i / entrants,
                       metrics={"score": i / entrants}, submissions_count=per_entrant, order_missing=False,
                       order_value=-i / entrants, order_at=last[e.pk].received_at)
        for i, e in enumerate(made)], batch_size=5000)
    boards_changed(benchmark.pk)  # as the services that write board rows do


def _earlier_copies(subs: list, copies: int) -> None:
    """``copies`` more of each submission in ``subs``, 1, 2, ... seconds before it, by one INSERT ...
    SELECT: 100,000 rows through the ORM took most of a minute."""
    if copies < 1:
        return
    fields = [f for f in Submission._meta.concrete_fields if not f.primary_key]
    at = Submission._meta.get_field("received_at").column
    earlier = ("s.{at} - n.j * INTERVAL '1 second'" if connection.vendor == "postgresql"
               else "strftime('%%Y-%%m-%%d %%H:%%M:%%f', s.{at}, '-' || n.j || ' seconds')").format(at=at)
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    values = ", ".join(earlier if f.column == at else f"s.{connection.ops.quote_name(f.column)}" for f in fields)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {Submission._meta.db_table} ({columns}) "
            f"WITH RECURSIVE n(j) AS (SELECT 1 UNION ALL SELECT j + 1 FROM n WHERE j < %s) "
            f"SELECT {values} FROM {Submission._meta.db_table} s CROSS JOIN n WHERE s.id BETWEEN %s AND %s",
            [copies, min(sub.pk for sub in subs), max(sub.pk for sub in subs)])


def test_board_cache_query_count_is_the_same_at_100000_submissions(mini_benchmark, users, client):
    urls = [PAGE, f"{PAGE}?page=3", API, f"{API}?page=3&page_size=50"]
    client.force_login(users["member"])
    _bulk(mini_benchmark, 400, 1, start=0)
    Entrant.objects.filter(name="bulk-350").update(owner=users["member"])  # "find me" has a row to find
    small = {}
    for url in urls:
        boards_changed(mini_benchmark.pk)
        small[url] = (_queries(client, url)[1], _queries(client, url)[1])  # cold, then from the cache

    _bulk(mini_benchmark, 1000, 100, start=400)  # 100,000 more submissions, 1,400 entrants on the board
    assert Submission.objects.filter(benchmark=mini_benchmark).count() == 100_400
    for url in urls:
        boards_changed(mini_benchmark.pk)
        cold, warm = _queries(client, url)[1], _queries(client, url)[1]
        assert len(cold) == len(small[url][0]) <= 16, (url, cold)
        assert len(warm) == len(small[url][1]) < len(cold), (url, warm)
        assert _board_reads(warm) == [], warm  # the viewer's "find me" is kept with the board too
