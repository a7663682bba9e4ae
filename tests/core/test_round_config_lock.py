"""A round benchmark's config once its rounds have truth: keys that decide scores or ranks are fixed.

Reloading a bundle that changes ``rank_by`` after a round was scored would leave past boards and
standings saying one metric while their scores are another's (and ``lb verify-round`` failing on
every past round): ``load_benchmark`` refuses it, names the key and says what to do instead.
"""
from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from leaderboard.core.models import Benchmark
from leaderboard.core.services.benchmarks import BundleError, benchmark_load_bundle
from leaderboard.core.services.round_engine import round_close, round_open, round_truth_load, round_version_score
from leaderboard.core.services.uploads import submission_create
from tests.support.admin_forms import benchmark_change_form
from tests.support.signals import SignalsRound, signals_benchmark


def write_bundle(tmp_path, config, *, title="Signals test"):
    bundle = tmp_path / "sig"
    bundle.mkdir(parents=True, exist_ok=True)
    (bundle / "benchmark.json").write_text(json.dumps({
        "slug": "sig", "title": title, "kind": "signals", "description": "Generated rounds.",
        "daily_limit": 50, "config": config}))
    return bundle


def resolved_round(bench, users):
    gen = SignalsRound(80, seed=5)
    round_ = round_open(benchmark=bench, data=gen.universe_csv(), filename="u.csv")
    for name, skill in (("owner", 1.0), ("member", 0.1)):
        submission_create(user=users[name], benchmark=bench, data=gen.submission_csv(gen.predictions(skill, 7)),
                          filename="p.csv")
    round_close(round_=round_)
    tv = round_truth_load(round_=round_, data=gen.truth_csv(gen.target(1.0, 9)), filename="t.csv", final=True)
    assert round_version_score(round_id=round_.pk, version=tv.version) == "scored"
    return round_


def boards():
    api = APIClient()
    board = api.get("/api/benchmarks/sig/rounds/1/leaderboard/").json()
    standings = api.get("/api/benchmarks/sig/leaderboard/").json()
    return board, standings


def test_rank_by_cannot_change_once_a_round_is_scored(tmp_path, users):
    bench = signals_benchmark(tmp_path, config={"rank_by": "corr"})
    resolved_round(bench, users)
    before = boards()
    assert before[0]["ranking_metric"] == before[1]["ranking_metric"] == "corr"
    assert before[0]["rows"] and all(r["score"] == r["metrics"]["corr"] for r in before[0]["rows"])

    with pytest.raises(BundleError) as info:
        benchmark_load_bundle(write_bundle(tmp_path, {"rank_by": "mmc"}, title="Renamed"))
    [error] = info.value.errors
    assert (error.file, error.column) == ("benchmark.json", "config.rank_by")
    assert '"corr"' in error.message and '"mmc"' in error.message
    assert "round 1 " in error.message and "another slug" in error.message

    bench = Benchmark.objects.get(slug="sig")
    assert (bench.title, bench.config["rank_by"]) == ("Signals test", "corr")  # nothing written
    assert boards() == before


def test_an_upload_limit_still_changes_after_truth(tmp_path, users):
    bench = signals_benchmark(tmp_path)
    resolved_round(bench, users)
    benchmark_load_bundle(write_bundle(tmp_path, {"max_upload_bytes": 2048}))
    bench = Benchmark.objects.get(slug="sig")
    assert (bench.config["max_upload_bytes"], bench.config["rank_by"]) == (2048, "corr")


def test_rank_by_changes_before_any_truth(tmp_path, users):
    bench = signals_benchmark(tmp_path)
    gen = SignalsRound(40, seed=3)
    round_ = round_open(benchmark=bench, data=gen.universe_csv(), filename="u.csv")
    submission_create(user=users["owner"], benchmark=bench, data=gen.submission_csv(gen.predictions(1.0, 1)),
                      filename="p.csv")
    round_close(round_=round_)
    benchmark_load_bundle(write_bundle(tmp_path, {"rank_by": "mmc", "standings_window": 5}))
    bench = Benchmark.objects.get(slug="sig")
    assert (bench.config["rank_by"], bench.config["standings_window"]) == ("mmc", 5)


def test_the_admin_refuses_the_same_change_and_allows_a_free_key(tmp_path, users, client):
    bench = signals_benchmark(tmp_path)
    resolved_round(bench, users)
    before = boards()
    client.force_login(users["organiser"])
    url = f"/admin/core/benchmark/{bench.pk}/change/"
    resp = client.post(url, benchmark_change_form(bench, dict(bench.config, rank_by="mmc")))
    assert resp.status_code == 200  # the form again, with the error
    page = resp.content.decode()
    assert "config.rank_by" in page and "another slug" in page
    assert Benchmark.objects.get(pk=bench.pk).config["rank_by"] == "corr"
    assert boards() == before

    resp = client.post(url, benchmark_change_form(bench, {"rank_by": "corr", "max_upload_bytes": 4096}))
    assert resp.status_code == 302
    config = Benchmark.objects.get(pk=bench.pk).config
    assert (config["rank_by"], config["max_upload_bytes"], config["standings_window"]) == ("corr", 4096, 20)


def test_the_admin_refuses_a_change_of_kind_as_a_bundle_does(tmp_path, users, client):
    bench = signals_benchmark(tmp_path)
    resolved_round(bench, users)
    before = boards()
    client.force_login(users["organiser"])
    form = dict(benchmark_change_form(bench, bench.config), kind="ranking")
    resp = client.post(f"/admin/core/benchmark/{bench.pk}/change/", form)
    assert resp.status_code == 200 and "cannot change its kind" in resp.content.decode()
    assert Benchmark.objects.get(pk=bench.pk).kind == "signals"
    assert boards() == before
