"""Round boards and standings carry their 95% interval and rank range, built with the board."""
from __future__ import annotations

import numpy as np
import pytest

from scoring.metrics_uncertainty import board_seed

from leaderboard.core.models import LeaderboardRow, RoundScore, StandingRow, TruthVersion
from leaderboard.core.services.round_engine import round_close, round_open, round_truth_load, round_version_score
from leaderboard.core.services.uploads import submission_create
from tests.support.signals import SignalsRound, signals_benchmark


def _upload(user, bench, data):
    return submission_create(user=user, benchmark=bench, data=data, filename="p.csv").submission


def _resolve(bench, users, gen, seed, skill):
    round_ = round_open(benchmark=bench, data=gen.universe_csv(), filename="u.csv")
    for name, s in skill.items():
        _upload(users[name], bench, gen.submission_csv(gen.predictions(s, seed + len(name))))
    round_close(round_=round_)
    round_truth_load(round_=round_, data=gen.truth_csv(gen.target(1.0, seed)), filename="t.csv", final=True)
    tv = TruthVersion.objects.filter(round=round_).order_by("-version").first()
    assert round_version_score(round_id=round_.pk, version=tv.version) == "scored"
    return round_, tv


def test_round_board_and_standings_carry_intervals_and_rank_ranges(tmp_path, users, client):
    bench = signals_benchmark(tmp_path)
    finals = []
    for seed in (40, 41, 42):
        round_, tv = _resolve(bench, users, SignalsRound(80, seed=seed), seed, {"owner": 1.0, "member": 0.05})
        finals.append(tv)
    # The round board: each row's corr lies in its interval; its rank range, worked from the intervals.
    rows = {r.entrant.name: r for r in LeaderboardRow.objects.filter(round=round_)}
    expected = {}
    for name, r in rows.items():
        assert r.interval_low <= r.score <= r.interval_high
        others = [o for o in rows.values() if o is not r]
        ahead = sum(1 for o in others if o.interval_low > r.interval_high)
        behind = sum(1 for o in others if o.interval_high < r.interval_low)
        expected[name] = [1 + ahead, len(rows) - behind]
        assert r.rank_range == expected[name]
    api = client.get(f"/api/benchmarks/{bench.slug}/rounds/{round_.number}/leaderboard/").json()["rows"]
    assert {r["entrant"]: r["rank_range"] for r in api} == expected
    assert {r["entrant"]: r["interval"] for r in api} == {n: r.interval for n, r in rows.items()}

    # The standings: the interval of each entrant's mean corr, resampling its rounds, as a loop does it.
    standing = {r.entrant.name: r for r in StandingRow.objects.filter(benchmark=bench)}
    seed = board_seed("standings", "corr", 20, 1, 2, 3)
    draws = np.random.default_rng(seed).integers(0, 3, size=(1000, 3))
    for name, row in standing.items():
        per_round = [RoundScore.objects.get(truth_version=tv, submission__entrant__owner=users[name],
                                            submission__is_counted=True).metrics["corr"] for tv in finals[::-1]]
        means = [sum(per_round[j] for j in picks) / 3 for picks in draws]
        assert row.interval == pytest.approx(list(np.quantile(means, [0.025, 0.975])), abs=1e-12)
    api = client.get(f"/api/benchmarks/{bench.slug}/leaderboard/").json()["rows"]
    assert {r["entrant"] for r in api if r["rank_range"]} == {"owner", "member"}


def test_round_board_ranked_by_mmc_carries_intervals_and_rank_ranges(tmp_path, users, client):
    bench = signals_benchmark(tmp_path, slug="sigmmc", config={"rank_by": "mmc"})
    round_, _tv = _resolve(bench, users, SignalsRound(80, seed=7), 7, {"owner": 1.0, "member": 0.05})
    rows = list(LeaderboardRow.objects.filter(round=round_))
    assert len(rows) == 2
    for r in rows:
        assert r.interval_low is not None and r.interval_low < r.interval_high
        assert r.rank_range is not None and 1 <= r.rank_range[0] <= r.rank_range[1] <= 2
    api = client.get(f"/api/benchmarks/{bench.slug}/rounds/{round_.number}/leaderboard/").json()["rows"]
    assert all(r["interval"] and r["rank_range"] for r in api)
