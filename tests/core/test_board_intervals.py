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


def test_large_mcwnm_board_resamples_over_the_partners_the_close_stored(tmp_path, users, monkeypatch,
                                                                         django_capture_on_commit_callbacks):
    """Above the exact budget MCWNM's interval resamples each row's maximum over its nearest partners:
    the close finds them with MCWNM itself and stores them, and the resolve's interval reads them
    rather than searching every pair again. Worked by hand: the stored partner is each row's most
    correlated other; marked to be its least correlated one, the board's interval follows it."""
    from scipy import stats
    from scipy.special import ndtri

    from scoring.kinds import signals

    from leaderboard.core.models import RoundTruthFreeScores

    monkeypatch.setattr(signals, "MCWNM_INTERVAL_BUDGET", 0)  # 3 submissions are now "too many" for every pair
    monkeypatch.setattr(signals, "MCWNM_MAX_PARTNERS", 1)
    bench = signals_benchmark(tmp_path, config={"rank_by": "mcwnm"})
    gen = SignalsRound(60, seed=7)
    round_ = round_open(benchmark=bench, data=gen.universe_csv(), filename="u.csv")
    preds = {name: gen.predictions(skill, 50 + i) for i, (name, skill) in
             enumerate({"owner": 0.9, "member": 0.6, "outsider": 0.0}.items())}
    subs = {name: _upload(users[name], bench, gen.submission_csv(p)) for name, p in preds.items()}
    with django_capture_on_commit_callbacks(execute=True):  # the close's task runs at once
        round_close(round_=round_)

    order = sorted(subs, key=lambda name: subs[name].pk)  # stored in the order of the submissions' ids
    z = []
    for name in order:
        g = ndtri((stats.rankdata(preds[name]) - 0.5) / len(preds[name]))
        z.append((g - g.mean()) / g.std())
    corr = np.array([[np.mean(a * b) if i != j else -np.inf for j, b in enumerate(z)] for i, a in enumerate(z)])
    stored = RoundTruthFreeScores.objects.get(round=round_)
    assert stored.metrics == ["mcwnm", "apcwnm", "mcwnm_partner_1"]
    data = np.frombuffer(bytes(stored.data)).reshape(3, 3)
    assert list(data[:, 2]) == [float(np.argmax(row)) for row in corr]

    farthest = [min((j for j in range(3) if j != i), key=lambda j: corr[i, j]) for i in range(3)]
    marked = data.copy()
    marked[:, 2] = farthest
    RoundTruthFreeScores.objects.filter(round=round_).update(data=marked.tobytes())
    round_truth_load(round_=round_, data=gen.truth_csv(gen.target(1.0, 3)), filename="t.csv", final=True)
    tv = TruthVersion.objects.get(round=round_)
    assert round_version_score(round_id=round_.pk, version=tv.version) == "scored"

    draws = np.random.default_rng(board_seed(bench.slug, round_.number, round_.track, tv.version)).integers(
        0, 60, size=(1000, 60))
    for i, name in enumerate(order):
        partner = z[farthest[i]]
        means = [np.mean(z[i][picks] * partner[picks]) for picks in draws]
        row = LeaderboardRow.objects.get(round=round_, entrant__owner=users[name])
        assert row.interval == pytest.approx(list(np.quantile(means, [0.025, 0.975])), abs=1e-12)


def _ranges_by_hand(rows) -> dict[int, tuple[int, int]]:
    """Each row's rank range from the definition, pair by pair: best is one more than the rows whose
    interval lies wholly above its own, worst is the board's size less the rows wholly below it."""
    pks = [pk for pk, _, _ in rows]
    lo, hi = np.array([r[1] for r in rows]), np.array([r[2] for r in rows])
    above = (lo[None, :] > hi[:, None]).sum(axis=1)  # [i, j]: j's interval wholly above i's
    below = (hi[None, :] < lo[:, None]).sum(axis=1)
    return {pk: (1 + int(a), len(rows) - int(b)) for pk, a, b in zip(pks, above, below, strict=True)}


def test_a_static_boards_rank_ranges_follow_a_new_leader_in_one_update(mini_benchmark):
    """A new entrant above everyone moves every row's range: each is rewritten to what the definition
    gives, by one UPDATE however many rows move (``bulk_update``'s batches of CASE per row took 2.7 s
    a scored upload on a board of 10,000)."""
    from django.db import connection, transaction
    from django.db.models import F
    from django.test.utils import CaptureQueriesContext

    from leaderboard.core.models import Round
    from leaderboard.core.services.leaderboards import leaderboard_ranges_refresh
    from tests.core.test_boards import fill_board

    fill_board(mini_benchmark, 2100)  # more than bulk_update's batch of 2,000
    round_ = Round.objects.get(benchmark=mini_benchmark)
    board = LeaderboardRow.objects.filter(round=round_, split="public")
    board.update(interval_low=F("score") - 1.5, interval_high=F("score") + 1.5)  # neighbours overlap
    with transaction.atomic():
        leaderboard_ranges_refresh(round_, "public", higher_is_better=True)
    rows = list(board.values_list("pk", "interval_low", "interval_high"))
    assert {pk: (b, w) for pk, b, w in board.values_list("pk", "rank_best", "rank_worst")} == _ranges_by_hand(rows)

    leader = fill_board(mini_benchmark, 1, start=2100)[0]
    board.filter(entrant=leader).update(score=10_000.0, interval_low=9_999.0, interval_high=10_001.0)
    with transaction.atomic(), CaptureQueriesContext(connection) as queries:
        moved = leaderboard_ranges_refresh(round_, "public", higher_is_better=True)
    updates = [q["sql"] for q in queries.captured_queries if "UPDATE" in q["sql"]]  # SQLite: "2101 times: UPDATE"
    assert moved == 2101 and len(updates) == 1
    rows = list(board.values_list("pk", "interval_low", "interval_high"))
    stored = {pk: (b, w) for pk, b, w in board.values_list("pk", "rank_best", "rank_worst")}
    assert stored == _ranges_by_hand(rows)
    assert stored[board.get(entrant=leader).pk] == (1, 1)


def test_an_upload_that_does_not_change_the_board_row_leaves_the_ranges_alone(mini_benchmark, users):
    """Rank ranges depend on the rows' scores and intervals only: an upload worse than the entrant's
    best scores without reading the whole board again; one that beats it moves the ranges."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from leaderboard.core.services.submissions import submission_score
    from tests.conftest import MINI_ROWS, submission_csv

    def scored(user, a) -> list[str]:
        sub = submission_create(user=user, benchmark=mini_benchmark, data=submission_csv(MINI_ROWS, a=a),
                                filename="p.csv").submission  # inside the test's transaction: not scored yet
        with CaptureQueriesContext(connection) as queries:
            submission_score(submission_id=sub.pk)
        reads = '"core_leaderboardrow"."interval_low" AS "interval_low"'  # the ranges' own read (values_list)
        return [q["sql"] for q in queries.captured_queries if reads in q["sql"]]

    reverse = [float(11 - i) for i in range(len(MINI_ROWS))]
    assert scored(users["member"], None)  # a new row: the ranges are read and written
    assert scored(users["owner"], reverse)
    assert not scored(users["owner"], reverse[:-2] + [1.0, 2.0][::-1])  # no better than its best: untouched
    assert scored(users["owner"], None)  # now its best: its row and the ranges move
    rows = LeaderboardRow.objects.filter(round__benchmark=mini_benchmark, split="public")
    stored = {pk: (b, w) for pk, b, w in rows.values_list("pk", "rank_best", "rank_worst")}
    by_hand = _ranges_by_hand([(pk, min(s, lo), max(s, hi)) for pk, s, lo, hi
                               in rows.values_list("pk", "score", "interval_low", "interval_high")])
    assert stored == by_hand
