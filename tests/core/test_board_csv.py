"""The whole board as CSV (``?format=csv`` on every board API) and the "Download CSV" link of every board page."""
from __future__ import annotations

import csv
import io
import re

import pytest

from leaderboard.core.models import Entrant
from leaderboard.core.services.submissions import submission_score
from leaderboard.core.services.uploads import submission_create
from tests.conftest import MINI_ROWS, submission_csv
from tests.core.test_boards import fill_board
from tests.core.test_round_pages import rounds  # noqa: F401  -- a fixture, used by name


def _csv(resp) -> list[dict]:
    assert resp.status_code == 200, resp.content[:300]
    assert resp["Content-Type"].startswith("text/csv") and "attachment" in resp["Content-Disposition"]
    return list(csv.DictReader(io.StringIO(resp.content.decode())))


def _link(html: str) -> str:
    """The href of the page's "Download CSV" link of its board."""
    match = re.search(r'data-role="board-csv" href="([^"]+)"', html)
    assert match, "the page links its board's CSV"
    return match.group(1).replace("&amp;", "&")


def test_board_csv_is_the_whole_board_not_a_page(mini_benchmark, client):
    fill_board(mini_benchmark, 1250)  # more than the largest page (1,000) and than one read of the export
    rows = _csv(client.get("/api/benchmarks/mini-props/leaderboard/?format=csv"))
    assert len(rows) == 1250
    assert [r["rank"] for r in rows] == [str(i) for i in range(1, 1251)]
    # fill_board gives entrant e<i> the score 1250 - i: e0 first, e1249 last.
    assert (rows[0]["entrant"], rows[0]["score"]) == ("e0", "1250.0")
    assert (rows[-1]["entrant"], rows[-1]["score"]) == ("e1249", "1.0")
    assert list(rows[0])[:3] == ["rank", "entrant", "score"]
    assert {"submissions", "submission_id", "audit_hash", "provisional", "updated_at"} <= set(rows[0])
    # Paging parameters do not cut it.
    assert len(_csv(client.get("/api/benchmarks/mini-props/leaderboard/?format=csv&page=2&page_size=10"))) == 1250


def test_board_csv_neutralises_entrant_names_a_spreadsheet_would_run(mini_benchmark, client):
    fill_board(mini_benchmark, 3)
    Entrant.objects.filter(name="e0").update(name='=HYPERLINK("http://x.test","y")')
    Entrant.objects.filter(name="e1").update(name="@SUM(A1)")
    rows = _csv(client.get("/api/benchmarks/mini-props/leaderboard/?format=csv"))
    assert [r["entrant"] for r in rows] == ["'=HYPERLINK(\"http://x.test\",\"y\")", "'@SUM(A1)", "e2"]


def test_board_csv_of_a_real_board_has_a_column_per_metric(mini_benchmark, client, users):
    sub = submission_create(user=users["owner"], benchmark=mini_benchmark, data=submission_csv(MINI_ROWS),
                            filename="p.csv").submission
    assert submission_score(submission_id=sub.pk) == "scored"
    json_row = client.get("/api/benchmarks/mini-props/leaderboard/").json()["rows"][0]
    csv_row = _csv(client.get("/api/benchmarks/mini-props/leaderboard/?format=csv"))[0]
    assert csv_row["entrant"] == json_row["entrant"] and csv_row["submission_id"] == str(sub.pk)
    for name, value in json_row["metrics"].items():
        if name != "score":
            assert float(csv_row[name]) == pytest.approx(value), name


@pytest.mark.parametrize("path", ["/api/benchmarks/mini-props/leaderboard/?format=xml",
                                  "/api/benchmarks/mini-props/leaderboard/?format=CSV"])
def test_board_csv_unknown_format_is_refused(mini_benchmark, client, path):
    resp = client.get(path)
    assert resp.status_code == 400 and resp.json()["errors"][0]["column"] == "format"


def test_board_page_links_its_whole_board_as_csv(mini_benchmark, client):
    fill_board(mini_benchmark, 150)
    link = _link(client.get("/b/mini-props/?page=2").content.decode())
    assert link == "/api/benchmarks/mini-props/leaderboard/?split=public&format=csv"
    assert len(_csv(client.get(link))) == 150


def test_round_board_and_standings_pages_link_their_csv(client, rounds):  # noqa: F811  -- the fixture above
    bench, r1, r2, subs = rounds
    standings_link = _link(client.get(f"/b/{bench.slug}/").content.decode())
    standings = _csv(client.get(standings_link))
    json_rows = client.get(f"/api/benchmarks/{bench.slug}/leaderboard/").json()["rows"]
    assert [r["entrant"] for r in standings] == [r["entrant"] for r in json_rows]
    assert [r["rounds"] for r in standings] == ["1"] * len(json_rows)

    round_link = _link(client.get(f"/b/{bench.slug}/rounds/1/").content.decode())
    assert round_link == f"/api/benchmarks/{bench.slug}/rounds/1/leaderboard/?format=csv"
    board = _csv(client.get(round_link))
    json_board = client.get(f"/api/benchmarks/{bench.slug}/rounds/1/leaderboard/").json()["rows"]
    assert [(r["rank"], r["entrant"]) for r in board] == [(str(r["rank"]), r["entrant"]) for r in json_board]
    assert {"corr", "mmc", "provisional", "as_of", "audit_hash"} <= set(board[0])
    assert [float(r["corr"]) for r in board] == pytest.approx([r["metrics"]["corr"] for r in json_board])
