"""Boards carry each row's 95% interval (stored with the row) and rank range (derived when the board is
read, from every row's score and interval): round boards, standings and static boards alike."""
from __future__ import annotations

import re

import numpy as np
import pytest

from scoring.metrics_uncertainty import board_seed

from leaderboard.core.models import LeaderboardRow, RoundScore, StandingRow, TruthVersion
from leaderboard.core.services.round_engine import round_close, round_open, round_truth_load, round_version_score
from leaderboard.core.services.uploads import submission_create
from tests.support.ranges import ranges_by_hand
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
    assert {r["entrant"]: r["rank_range"] for r in api} == ranges_by_hand(
        {name: (r.score, r.interval_low, r.interval_high) for name, r in standing.items()})


def test_round_board_ranked_by_mmc_carries_intervals_and_rank_ranges(tmp_path, users, client):
    bench = signals_benchmark(tmp_path, slug="sigmmc", config={"rank_by": "mmc"})
    round_, _tv = _resolve(bench, users, SignalsRound(80, seed=7), 7, {"owner": 1.0, "member": 0.05})
    rows = list(LeaderboardRow.objects.filter(round=round_))
    assert len(rows) == 2
    for r in rows:
        assert r.interval_low is not None and r.interval_low < r.interval_high
    api = client.get(f"/api/benchmarks/{bench.slug}/rounds/{round_.number}/leaderboard/").json()["rows"]
    assert all(r["interval"] for r in api)
    assert {r["entrant"]: r["rank_range"] for r in api} == ranges_by_hand(
        {r.entrant.name: (r.score, r.interval_low, r.interval_high) for r in rows})


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


def _board_by_hand(benchmark) -> dict[str, list[int] | None]:
    """Every row of the public board, its rank range from the definition (tests/support/ranges.py)."""
    return ranges_by_hand({name: (score, low, high) for name, score, low, high in LeaderboardRow.objects.filter(
        round__benchmark=benchmark, split="public").values_list("entrant__name", "score", "interval_low",
                                                                  "interval_high")})


def _api_ranges(client, slug: str) -> dict[str, list[int] | None]:
    """Every row's ``rank_range`` as a reader of the board API gets it, following ``next`` page by page."""
    out: dict[str, list[int] | None] = {}
    url: str | None = f"/api/benchmarks/{slug}/leaderboard/?page_size=1000"
    while url:
        answer = client.get(url).json()
        out.update({r["entrant"]: r["rank_range"] for r in answer["rows"]})
        url = answer["next"]
    return out


def _page_ranges(html: str) -> dict[str, str]:
    """entrant -> the "could rank ..." text of each row of a board page."""
    return dict(re.findall(
        r'data-entrant="([^"]+)">.*?<span class="rank-range[^>]*>(could rank [0-9-]+)</span>', html, re.S))


def _text(rank_range: list[int]) -> str:
    best, worst = rank_range
    return f"could rank {best}" if best == worst else f"could rank {best}-{worst}"


def test_a_new_leader_moves_every_rank_range_a_reader_gets(mini_benchmark, client):
    """Every row of a 2,101-row board, read through the API (three pages), the CSV and a page of the
    site, carries the rank range its definition gives; a new entrant above everyone moves nearly every
    row's range, and the next read shows each moved, though no other row was written."""
    import csv
    import io

    from django.db import connection
    from django.db.models import F
    from django.test.utils import CaptureQueriesContext

    from leaderboard.core.boardcache import boards_changed
    from tests.core.test_boards import fill_board

    fill_board(mini_benchmark, 2100)  # scores 2100 .. 1
    board = LeaderboardRow.objects.filter(round__benchmark=mini_benchmark, split="public")
    board.update(interval_low=F("score") - 1.5, interval_high=F("score") + 1.5)  # neighbours overlap
    boards_changed(mini_benchmark.pk)
    expected = _board_by_hand(mini_benchmark)
    # By hand: rows within 3 of each other overlap. e0 (2100): 2097 and up overlap it -> 1-4; e1000 (1100):
    # 997 rows score 1104 or more (surely ahead), 1096 rows 1096 or less (surely behind) -> 998-1004.
    assert expected["e0"] == [1, 4] and expected["e1000"] == [998, 1004] and expected["e2099"] == [2097, 2100]
    assert _api_ranges(client, mini_benchmark.slug) == expected

    leader = fill_board(mini_benchmark, 1, start=2100)[0]
    board.filter(entrant=leader).update(score=10_000.0, order_value=-10_000.0, interval_low=9_999.0,
                                        interval_high=10_001.0)
    boards_changed(mini_benchmark.pk)  # as the services that write board rows do
    expected = _board_by_hand(mini_benchmark)
    assert expected["e2100"] == [1, 1] and expected["e1000"] == [999, 1005]  # one place down
    assert _api_ranges(client, mini_benchmark.slug) == expected

    with CaptureQueriesContext(connection) as queries:
        answer = client.get(f"/api/benchmarks/{mini_benchmark.slug}/leaderboard/?format=csv")
    lines = list(csv.DictReader(io.StringIO(answer.content.decode())))
    assert len(lines) == 2101
    # Three pages of 1,000 rows, one read of the board's intervals: each page reuses the first's.
    intervals = '"core_leaderboardrow"."score" AS "score", "core_leaderboardrow"."interval_low" AS "interval_low"'
    assert len([q for q in queries.captured_queries if intervals in q["sql"]]) == 1
    assert {line["entrant"]: [int(line["rank_range_low"]), int(line["rank_range_high"])] for line in lines} == expected
    for page in (1, 11, 22):
        shown = _page_ranges(client.get(f"/b/{mini_benchmark.slug}/?page={page}").content.decode())
        assert len(shown) == (100 if page < 22 else 1)
        assert shown == {name: _text(expected[name]) for name in shown}


def test_a_scored_upload_writes_only_its_own_entrants_board_rows(mini_benchmark, users, client):
    """A new entrant taking the lead moves the rank range of every row below it, yet its scored upload
    writes only its own rows (one per split) and leaves every other row as it was, on a board of any
    size: the ranges are derived when the board is read. (Stored, they were rewritten on nearly every
    row of the board by each such upload: 273 ms at 10,060 entrants.)"""
    from django.db import connection
    from django.db.models import F
    from django.db.models.expressions import RawSQL
    from django.test.utils import CaptureQueriesContext

    from leaderboard.core.boardcache import boards_changed
    from leaderboard.core.services.submissions import submission_score
    from tests.conftest import MINI_ROWS, submission_csv
    from tests.core.test_boards import fill_board

    fill_board(mini_benchmark, 600)
    board = LeaderboardRow.objects.filter(round__benchmark=mini_benchmark)
    # Scores 0.3, 0.2995 .. 0.0005, each within 0.0012: four neighbours on each side overlap (by hand:
    # e0 could rank 1-5), all below a perfect upload's 1.0.
    board.update(score=F("score") / 2000, order_value=-F("score") / 2000,
                 interval_low=F("score") / 2000 - 0.0012, interval_high=F("score") / 2000 + 0.0012)
    boards_changed(mini_benchmark.pk)
    before = _board_by_hand(mini_benchmark)
    assert before["e0"] == [1, 5]

    table = LeaderboardRow._meta.db_table
    columns = [f.attname for f in LeaderboardRow._meta.concrete_fields]

    def others():
        rows = board.exclude(entrant__owner=users["member"]).order_by("pk")
        if connection.vendor == "postgresql":  # a row written again, even to the same values, moves
            return list(rows.annotate(ctid=RawSQL(f'"{table}".ctid::text', [])).values_list("ctid", *columns))
        return list(rows.values_list(*columns))

    untouched = others()
    sub = submission_create(user=users["member"], benchmark=mini_benchmark, data=submission_csv(MINI_ROWS),
                            filename="p.csv").submission  # inside the test's transaction: not scored yet
    with CaptureQueriesContext(connection) as queries:
        assert submission_score(submission_id=sub.pk) == "scored"
    writes = [q["sql"] for q in queries.captured_queries
              if re.search(rf'\b(INSERT INTO|UPDATE|DELETE FROM) "?{table}\b', q["sql"])]
    mine = board.filter(entrant__owner=users["member"])
    assert sorted(mine.values_list("split", flat=True)) == ["private", "public"]
    assert len(writes) == 2 and all(w.startswith("INSERT") for w in writes), writes
    assert others() == untouched

    after = _api_ranges(client, mini_benchmark.slug)  # the reader sees every range move all the same
    assert after == _board_by_hand(mini_benchmark)
    new = mine.get(split="public")
    assert new.score == 1.0 and new.interval_low < 0.3 < new.interval_high and after[new.entrant.name][0] == 1
    # Its interval (7 public cases) reaches down into the board: it is surely behind no row, so every
    # row's worst rank moves one place down (e0: 1-5 to 1-6), and the rows wholly below its interval
    # move their best too; none of them was written.
    assert after["e0"] == [1, 6] and all(after[name][1] == worst + 1 for name, (_, worst) in before.items())
