"""Bad input answered with a 4xx (or a command error) that names the problem (issue 19, item 5)."""
from __future__ import annotations

import pytest


@pytest.mark.parametrize("query, says", [
    ("page=0", "page must be between 1 and 1,000,000; got 0"),
    ("page=-3", "page must be between 1 and 1,000,000; got -3"),
    ("page=99999999999999999999", "page must be between 1 and 1,000,000"),
    ("page=abc", "page must be a whole number; got &#x27;abc&#x27;"),
    ("page_size=0", "page_size must be between 1 and 1,000; got 0"),
])
def test_bad_input_board_page_paging_is_a_400_naming_it(mini_benchmark, client, query, says):
    response = client.get(f"/b/{mini_benchmark.slug}/?{query}")
    assert response.status_code == 400
    assert says in response.content.decode()
    api = client.get(f"/api/benchmarks/{mini_benchmark.slug}/leaderboard/?{query}")
    assert api.status_code == 400 and api.json()["errors"][0]["column"] == query.split("=")[0]


def test_bad_input_round_board_pages_refuse_bad_paging(tmp_path, client, db):
    from tests.support.ranking import ranking_benchmark

    benchmark = ranking_benchmark(tmp_path)
    response = client.get(f"/b/{benchmark.slug}/?page=0")
    assert response.status_code == 400 and "page must be between 1" in response.content.decode()


def test_bad_input_dates_that_do_not_exist_are_refused_by_name(tmp_path, db, api_for):
    """`truth_load --as-of 2026-13-45` ended in a raw ValueError; the API's as_of and closes_at in a 500."""
    from io import StringIO

    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.core.management import CommandError, call_command

    from leaderboard.core.services.rounds import round_set_status
    from tests.support.signals import SignalsRound, signals_benchmark

    benchmark = signals_benchmark(tmp_path)
    gen = SignalsRound(20, seed=3)
    universe = tmp_path / "u.csv"
    universe.write_bytes(gen.universe_csv())
    truth = tmp_path / "t.csv"
    truth.write_bytes(gen.truth_csv(gen.target(1, 1)))
    with pytest.raises(CommandError, match=r"--closes-at '2026-02-30T10:00:00Z' is not an ISO 8601 time"):
        call_command("round_open", benchmark.slug, str(universe), "--closes-at", "2026-02-30T10:00:00Z")
    call_command("round_open", benchmark.slug, str(universe), stdout=StringIO(), stderr=StringIO())
    round_set_status(round_=benchmark.rounds.get(number=1), status="closed")
    with pytest.raises(CommandError, match=r"--as-of '2026-13-45' is not a date YYYY-MM-DD that exists"):
        call_command("truth_load", benchmark.slug, "1", str(truth), "--interim", "--as-of", "2026-13-45")

    staff = api_for("organiser")
    resp = staff.post(f"/api/benchmarks/{benchmark.slug}/rounds/1/truth/", {
        "file": SimpleUploadedFile("t.csv", truth.read_bytes()), "interim": "true", "as_of": "2026-13-45"},
        format="multipart")
    assert resp.status_code == 400 and resp.json()["errors"][0]["column"] == "as_of"
    assert "'2026-13-45'" in resp.json()["detail"]
    resp = staff.post(f"/api/benchmarks/{benchmark.slug}/rounds/", {
        "universe": SimpleUploadedFile("u.csv", gen.universe_csv()), "closes_at": "2026-02-30T10:00:00Z"},
        format="multipart")
    assert resp.status_code == 400 and resp.json()["errors"][0]["column"] == "closes_at"
