"""Portfolio rounds on the site, without a worker: what the pages and the API show while a round is
open, pending and resolved; the example file; the per-option table; the schema."""
from __future__ import annotations

import datetime as dt
import json

import pytest
from rest_framework.test import APIClient

from leaderboard.core.models import TruthVersion
from leaderboard.core.services.round_engine import round_close, round_open, round_truth_load, round_version_score
from leaderboard.core.services.uploads import submission_create
from tests.support.portfolio import portfolio_benchmark, portfolio_json, prices_csv, universe_csv
from tests.support.signals import signals_benchmark

START = {"ALPHA": 80.0, "BRAVO": 25.0, "SP500": 5000.0}


def scored(round_):
    for tv in TruthVersion.objects.filter(round=round_, scored_at__isnull=True).order_by("version"):
        round_version_score(round_id=round_.pk, version=tv.version)


@pytest.fixture
def bench(db, tmp_path):
    return portfolio_benchmark(tmp_path)


def test_open_round_hides_the_portfolios_until_close(bench, users, client):
    r = round_open(benchmark=bench, data=universe_csv(START), filename="o.csv", track="weekly")
    sub = submission_create(user=users["owner"], benchmark=bench, filename="p.json",
                            data=portfolio_json({"ALPHA": 100}, 0.9, "secret sauce")).submission
    html = client.get(f"/b/{bench.slug}/rounds/1/").content.decode()
    assert "secret sauce" not in html and sub.audit_hash not in html
    assert "Shown when the round closes" in html and 'data-option="ALPHA"' in html  # start prices are public
    details = APIClient().get(f"/api/benchmarks/{bench.slug}/rounds/1/").json()["details"]
    assert details["portfolios"] == [] and [o["option"] for o in details["options"]] == [
        "ALPHA", "BRAVO", "SP500", "CASH"]
    round_close(round_=r)
    html = client.get(f"/b/{bench.slug}/rounds/1/").content.decode()
    assert "secret sauce" in html and sub.audit_hash in html


def test_round_needs_a_track(bench):
    from leaderboard.core.services.answers import SubmissionRejected

    with pytest.raises(SubmissionRejected) as info:
        round_open(benchmark=bench, data=universe_csv(START), filename="o.csv")
    assert info.value.errors[0].column == "track"


def test_example_file_is_a_valid_upload(bench, users, client):
    round_open(benchmark=bench, data=universe_csv(START), filename="o.csv", track="monthly")
    resp = client.get(f"/b/{bench.slug}/example/")
    assert resp["Content-Type"] == "application/json"
    body = json.loads(resp.content)
    assert sum(a["percent"] for a in body["allocations"]) == pytest.approx(100)
    accepted = submission_create(user=users["member"], benchmark=bench, data=resp.content, filename="e.json")
    assert accepted.submission.status == "accepted" and accepted.submission.is_counted


def test_resolved_submission_page_shows_each_options_contribution(bench, users, client):
    r = round_open(benchmark=bench, data=universe_csv(START), filename="o.csv", track="weekly")
    sub = submission_create(user=users["owner"], benchmark=bench, filename="p.json",
                            data=portfolio_json({"ALPHA": 25, "BRAVO": 50, "CASH": 25})).submission
    round_close(round_=r)
    # ALPHA 80 -> 88 (+10%), BRAVO 25 -> 24 (-4%): return 0.25 x 10% + 0.5 x -4% = +0.50%
    round_truth_load(round_=r, data=prices_csv({"ALPHA": 88, "BRAVO": 24, "SP500": 5050}), filename="f.csv",
                     final=True)
    scored(r)
    client.force_login(users["owner"])
    html = client.get(f"/submissions/{sub.pk}/").content.decode()
    for text in ("+2.500%", "-2.000%", "+10.00%", "-4.00%", "+0.50%"):
        assert text in html, text
    rows = APIClient()
    rows.force_authenticate(users["owner"])
    cases = rows.get(f"/api/submissions/{sub.pk}/cases/").json()
    table = cases["rows"] if isinstance(cases, dict) else cases
    assert sum(row["contribution"] or 0 for row in table) == pytest.approx(0.005)


def test_api_json_body_is_the_portfolio(bench, users, api_for):
    round_open(benchmark=bench, data=universe_csv(START), filename="o.csv", track="weekly")
    api = api_for("owner")
    body = {"allocations": [{"option": "ALPHA", "percent": 40}, {"option": "CASH", "percent": 60}],
            "confidence": 0.3, "rationale": "body"}
    resp = api.post(f"/api/benchmarks/{bench.slug}/submissions/", body, format="json")
    assert resp.status_code == 202 and resp.json()["counted"] is True
    repeat = api.post(f"/api/benchmarks/{bench.slug}/submissions/", body | {"repeat": True}, format="json")
    assert repeat.status_code == 202 and repeat.json()["counted"] is False
    wrapped = api.post(f"/api/benchmarks/{bench.slug}/submissions/", {"predictions": body}, format="json")
    assert wrapped.status_code == 202
    bad = api.post(f"/api/benchmarks/{bench.slug}/submissions/", body | {"rationale": "x" * 5000}, format="json")
    assert bad.status_code == 400 and bad.json()["errors"][0]["column"] == "rationale"


def test_comparison_sets_only_for_portfolio_and_declared_in_the_schema(db, tmp_path, bench):
    api = APIClient()
    sig = signals_benchmark(tmp_path)
    assert api.get(f"/api/benchmarks/{sig.slug}/comparison-sets/").status_code == 404
    assert api.get(f"/b/{sig.slug}/comparison-sets/").status_code == 404
    empty = api.get(f"/api/benchmarks/{bench.slug}/comparison-sets/").json()
    assert (empty["track"], empty["sets"], empty["history"]) == ("weekly", [], [])
    schema = api.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    op = schema["paths"]["/api/benchmarks/{slug}/comparison-sets/"]["get"]
    ref = op["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
    assert {"sets", "history", "track", "next"} <= set(schema["components"]["schemas"][ref]["properties"])


def resolved_round(bench, n_models: int, number: int) -> None:
    """A weekly round with models ``model0`` .. ``model{n-1}`` (ALPHA 0-90 %, the rest cash), resolved."""
    from django.contrib.auth import get_user_model

    r = round_open(benchmark=bench, data=universe_csv(START), filename="o.csv", track="weekly")
    for i in range(n_models):
        user, _ = get_user_model().objects.get_or_create(username=f"model{i}")
        submission_create(user=user, benchmark=bench, filename="p.json",
                          data=portfolio_json({"ALPHA": 10 * (i % 10), "CASH": 100 - 10 * (i % 10)}, 0.5, "r"))
    round_close(round_=r)
    round_truth_load(round_=r, data=prices_csv({"ALPHA": 84, "BRAVO": 26, "SP500": 5050}), filename="f.csv",
                     final=False, as_of=dt.date(2026, 1, number))
    round_truth_load(round_=r, data=prices_csv({"ALPHA": 88, "BRAVO": 24, "SP500": 5050}), filename="f.csv",
                     final=True)
    scored(r)


def test_round_and_comparison_pages_take_the_same_queries_for_more_models(bench, client):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def count(path: str) -> int:
        with CaptureQueriesContext(connection) as queries:
            assert client.get(path).status_code == 200
        return len(queries)

    resolved_round(bench, 3, 1)
    few = (count(f"/b/{bench.slug}/rounds/1/"), count(f"/b/{bench.slug}/comparison-sets/"))
    resolved_round(bench, 12, 2)
    many = (count(f"/b/{bench.slug}/rounds/2/"), count(f"/b/{bench.slug}/comparison-sets/"))
    assert many == few and max(many) <= 25, (few, many)


def test_pending_submission_page_says_withheld_not_na(bench, users, client):
    r = round_open(benchmark=bench, data=universe_csv(START), filename="o.csv", track="weekly")
    sub = submission_create(user=users["owner"], benchmark=bench, filename="p.json",
                            data=portfolio_json({"ALPHA": 50, "CASH": 50})).submission
    round_close(round_=r)
    # ALPHA 80 -> 84: +5% x 0.5 = +2.50% provisional; the rest waits for the final prices.
    round_truth_load(round_=r, data=prices_csv({"ALPHA": 84, "BRAVO": 25, "SP500": 5000}), filename="i.csv",
                     final=False, as_of=dt.date(2026, 6, 1))
    scored(r)
    client.force_login(users["owner"])
    html = client.get(f"/submissions/{sub.pk}/").content.decode()
    assert "+2.50%" in html and html.count(">withheld<") == 4
    board = client.get(f"/b/{bench.slug}/rounds/1/").content.decode()
    assert board.count(">withheld<") == 4 and "Withheld until the final truth" in board


def test_standings_api_defaults_to_the_first_track(bench, users):
    r = round_open(benchmark=bench, data=universe_csv(START), filename="o.csv", track="weekly")
    submission_create(user=users["owner"], benchmark=bench, filename="p.json", data=portfolio_json({"BRAVO": 100}))
    round_close(round_=r)
    round_truth_load(round_=r, data=prices_csv({"ALPHA": 88, "BRAVO": 24, "SP500": 5050}), filename="f.csv",
                     final=True)
    scored(r)
    api = APIClient()
    weekly = api.get(f"/api/benchmarks/{bench.slug}/leaderboard/").json()
    assert weekly["track"] == "weekly" and [row["entrant"] for row in weekly["rows"]] == ["owner"]
    # BRAVO 25 -> 24: -4% against an oracle of +10% (ALPHA 80 -> 88): -40 over its one round.
    assert weekly["rows"][0]["score"] == pytest.approx(-40.0) and weekly["rows"][0]["rounds"] == 1
    assert api.get(f"/api/benchmarks/{bench.slug}/leaderboard/?track=monthly").json()["rows"] == []


def test_the_data_credit_is_on_every_page_of_the_benchmark_and_in_the_api(db, tmp_path, users, client):
    credit = ("Data from [Source](https://example.org/data), CC BY 4.0 <script>alert(1)</script> "
              "<img src=x onerror=alert(1)>")
    bench = portfolio_benchmark(tmp_path, slug="credited")
    bench.credit = credit
    bench.save()
    round_open(benchmark=bench, data=universe_csv(START), filename="o.csv", track="weekly")
    for path in ("/b/credited/", "/b/credited/rounds/1/", "/b/credited/comparison-sets/?track=weekly"):
        html = client.get(path).content.decode()
        footer = html[html.index('data-role="credit"'):html.index("</footer>")]
        assert '<a href="https://example.org/data"' in footer and "CC BY 4.0" in footer, path
        assert "<script" not in footer and "<img" not in footer and "onerror" not in footer, path
    assert APIClient().get("/api/benchmarks/credited/").json()["credit"] == credit
    other = portfolio_benchmark(tmp_path, slug="uncredited")
    assert 'data-role="credit"' not in client.get(f"/b/{other.slug}/").content.decode()



def test_comparison_sets_download_whole_as_csv(bench, client):
    """``?format=csv``: every row of every set in one file (not paged), a line per set and model with the
    set's rounds, the same values as the JSON; the page links to it."""
    import csv
    import io

    resolved_round(bench, 3, 1)
    resolved_round(bench, 5, 2)  # model3 and model4 join: a second set, over round 2 only
    api = f"/api/benchmarks/{bench.slug}/comparison-sets/?track=weekly"
    sets = APIClient().get(f"{api}&page_size=1000").json()["sets"]
    assert [len(one["rows"]) for one in sets] == [3, 5]
    answer = APIClient().get(f"{api}&format=csv&page_size=2")  # paging does not apply to the file
    assert answer.status_code == 200 and answer["Content-Type"].startswith("text/csv")
    assert f'filename="{bench.slug}-weekly-comparison-sets.csv"' in answer["Content-Disposition"]
    reader = csv.DictReader(io.StringIO(answer.content.decode()))
    lines = list(reader)
    assert reader.fieldnames == ["set", "rounds", "rank", "entrant", "score", "return_sum", "oracle_sum",
                                 "interval_low", "interval_high", "rank_range_low", "rank_range_high"]
    assert [(int(x["set"]), x["rounds"], int(x["rank"]), x["entrant"]) for x in lines] == [
        (number, " ".join(str(n) for n in one["rounds"]), row["rank"], row["entrant"])
        for number, one in enumerate(sets, start=1) for row in one["rows"]]
    for line, row in zip(lines, [row for one in sets for row in one["rows"]], strict=True):
        for name in ("score", "return_sum", "oracle_sum"):
            assert (float(line[name]) if line[name] else None) == row[name], name
        assert [float(line["interval_low"]), float(line["interval_high"])] == row["interval"]
        assert [int(line["rank_range_low"]), int(line["rank_range_high"])] == row["rank_range"]
    html = client.get(f"/b/{bench.slug}/comparison-sets/?track=weekly").content.decode()
    assert f'data-role="sets-csv" href="{api.replace("&", "&amp;")}&amp;format=csv"' in html
    assert APIClient().get(f"{api}&format=xml").status_code == 400


def test_a_set_with_no_shared_round_ranks_nobody_on_the_page_the_api_and_the_csv(bench, users, client):
    """owner completes round 1 only, member round 2 only: the second set (owner, member) has no round both
    completed, so neither has a score, and neither is ranked (null rank, "–" on the page, an empty CSV cell)."""
    import csv
    import io

    for name in ("owner", "member"):  # round 1, then round 2
        r = round_open(benchmark=bench, data=universe_csv(START), filename="o.csv", track="weekly")
        submission_create(user=users[name], benchmark=bench, filename="p.json",
                          data=portfolio_json({"ALPHA": 50, "CASH": 50}, 0.5, "r"))
        round_close(round_=r)
        round_truth_load(round_=r, data=prices_csv({"ALPHA": 88, "BRAVO": 24, "SP500": 5050}), filename="f.csv",
                         final=True)
        scored(r)
    api = f"/api/benchmarks/{bench.slug}/comparison-sets/?track=weekly"
    first, second = APIClient().get(api).json()["sets"]
    # Set 1: owner alone over round 1 (ALPHA +10% is the oracle; half of it: 100 x 5% / 10% = 50), ranked 1.
    assert [(row["rank"], row["entrant"], row["score"]) for row in first["rows"]] == [(1, "owner", 50.0)]
    assert second["rounds"] == []
    assert [(row["rank"], row["entrant"], row["score"]) for row in second["rows"]] == [
        (None, "owner", None), (None, "member", None)]
    lines = list(csv.DictReader(io.StringIO(APIClient().get(f"{api}&format=csv").content.decode())))
    assert [(x["set"], x["rank"], x["entrant"]) for x in lines] == [
        ("1", "1", "owner"), ("2", "", "owner"), ("2", "", "member")]
    html = client.get(f"/b/{bench.slug}/comparison-sets/?track=weekly").content.decode()
    section = html.split('id="set-2"', 1)[1].split("</section>", 1)[0]
    ranks = [cell.split("</td>", 1)[0] for cell in section.split('<td class="num rank">')[1:]]
    assert len(ranks) == 2 and all("–" in cell and "None" not in cell for cell in ranks)


def test_a_page_asked_for_a_track_the_benchmark_lacks_says_so(bench, client, tmp_path):
    # As the API answers 400 "unknown track": never the weekly board under a tab the visitor did not ask for.
    round_open(benchmark=bench, data=universe_csv(START), filename="o.csv", track="weekly")
    for path in (f"/b/{bench.slug}/?track=yearly", f"/b/{bench.slug}/comparison-sets/?track=yearly"):
        resp = client.get(path)
        assert resp.status_code == 400, path
        assert "unknown track &#x27;yearly&#x27;: one of weekly, monthly" in resp.content.decode(), path
    for path in (f"/b/{bench.slug}/?track=monthly", f"/b/{bench.slug}/comparison-sets/", f"/b/{bench.slug}/"):
        assert client.get(path).status_code == 200, path
    signals = signals_benchmark(tmp_path, slug="no-tracks")
    resp = client.get(f"/b/{signals.slug}/?track=weekly")
    assert resp.status_code == 400 and "this benchmark has no tracks" in resp.content.decode()


def test_the_upload_page_lets_a_browser_choose_between_the_weekly_and_the_monthly_round(bench, users, client):
    """CapitalBench opens a weekly and a monthly round on the same day: both are open at once. The
    browser form must name the round as the API's ``round`` field does, or no browser upload is
    possible while both are open (the service refuses an upload naming none)."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from leaderboard.core.models import Submission

    round_open(benchmark=bench, data=universe_csv(START), filename="w.csv", track="weekly")
    round_open(benchmark=bench, data=universe_csv({**START, "CHARLIE": 9.0}), filename="m.csv", track="monthly")
    client.force_login(users["owner"])

    # The round page's Submit button names its round; the upload form offers both, that one chosen.
    round_page = client.get(f"/b/{bench.slug}/rounds/2/").content.decode()
    assert f'href="/b/{bench.slug}/submit/?round=2"' in round_page
    form = client.get(f"/b/{bench.slug}/submit/?round=2").content.decode()
    assert 'name="round"' in form
    assert '<option value="1">Round 1 (weekly)' in form and '<option value="2" selected>Round 2 (monthly)' in form
    benchmark_page = client.get(f"/b/{bench.slug}/").content.decode()
    assert "Submit to round 1 or 2" in benchmark_page

    def upload(**fields):
        return client.post(f"/b/{bench.slug}/submit/", {
            "file": SimpleUploadedFile("p.json", portfolio_json({"CHARLIE": 60, "CASH": 40})), **fields})

    resp = upload(round="2")
    assert resp.status_code == 302
    sub = Submission.objects.get(user=users["owner"])
    assert (sub.round.number, sub.round.track, sub.is_counted) == (2, "monthly", True)
    # CHARLIE is not in the weekly round's universe: naming round 1 is checked against its own options.
    resp = upload(round="1")
    assert resp.status_code == 400 and "unknown option" in resp.content.decode()
    # Naming none while both are open: refused, and the page offers the choice it asks for.
    resp = upload()
    assert resp.status_code == 400
    assert "several rounds are open" in resp.content.decode() and 'name="round"' in resp.content.decode()
    assert Submission.objects.filter(user=users["owner"]).count() == 1
