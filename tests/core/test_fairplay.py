"""The staff's fair-play page: identical uploads, correlated pairs within a split or a round; the
standings' minimum number of rounds."""
from __future__ import annotations

import numpy as np
from django.contrib.auth import get_user_model

from leaderboard.core.models import StandingRow, Submission
from leaderboard.core.services.fairplay import fairplay_report
from leaderboard.core.services.round_engine import round_close, round_open, round_truth_load, round_version_score
from leaderboard.core.services.submissions import submission_score
from leaderboard.core.services.teams import team_create
from leaderboard.core.services.uploads import submission_create
from tests.conftest import MINI_ROWS, submission_csv
from tests.support.signals import SignalsRound, signals_benchmark


def _scored(user, benchmark, **values):
    sub = submission_create(user=user, benchmark=benchmark, data=submission_csv(MINI_ROWS, **values),
                            filename="p.csv").submission
    submission_score(submission_id=sub.pk)
    return sub


def test_fairplay_static_lists_identical_uploads_and_correlated_pairs(client, users, mini_benchmark):
    rng = np.random.default_rng(0)
    truth_a = [r["A"] for r in MINI_ROWS]
    first = _scored(users["owner"], mini_benchmark)
    copy = _scored(users["outsider"], mini_benchmark)  # the same file from another account
    _scored(users["member"], mini_benchmark, a=[2 * v + 1 for v in truth_a],
            b=[2 * r["B"] + 1 for r in MINI_ROWS])  # a linear copy: another hash, correlation 1
    third = get_user_model().objects.create_user("honest", password="pw-honest-123")
    _scored(third, mini_benchmark, a=list(rng.permutation(truth_a)), b=list(rng.normal(size=10)))
    _scored(users["owner"], mini_benchmark)  # the same owner again: never a pair with itself
    assert first.audit_hash == copy.audit_hash

    report = fairplay_report(mini_benchmark)
    assert [(g.audit_hash, [e["entrant"] for e in g.entrants]) for g in report.identical] == [
        (first.audit_hash, ["owner", "outsider"])]
    # Public split (7 cases x 2 properties) and private split (3 x 2): the three copies pair up, the honest
    # entrant pairs with nobody.
    assert sorted((p.scope, p.a, p.b, round(p.correlation, 9)) for p in report.correlated) == [
        ("private split", "member", "outsider", 1.0), ("private split", "member", "owner", 1.0),
        ("private split", "outsider", "owner", 1.0), ("public split", "member", "outsider", 1.0),
        ("public split", "member", "owner", 1.0), ("public split", "outsider", "owner", 1.0)]

    client.force_login(users["owner"])
    assert client.get("/b/mini-props/fair-play/").status_code == 404  # staff only
    client.force_login(users["organiser"])
    html = client.get("/b/mini-props/fair-play/").content.decode()
    assert first.audit_hash[:12] in html and "honest" not in html.split('id="correlated"')[1]
    assert "public split: 4 entrants, 14 values each" in html
    assert client.get("/b/mini-props/fair-play/?threshold=2").status_code == 400


def test_fairplay_round_pairs_and_the_standings_minimum(client, tmp_path, users):
    benchmark = signals_benchmark(tmp_path, config={"standings_min_rounds": 2})
    gen = SignalsRound(300, seed=11)
    team = team_create(user=users["member"], benchmark=benchmark, name="Copycats")
    base = gen.predictions(0.6, 1)
    near = np.clip(base + 0.002 * np.random.default_rng(2).standard_normal(len(base)), 0, 1)
    for number, uploads in ((1, {"owner": base, "member": near}),
                            (2, {"owner": base, "member": gen.predictions(0.3, 5), "outsider": gen.predictions(0.2, 6)})):
        round_ = round_open(benchmark=benchmark, data=gen.universe_csv(), filename="u.csv", user=users["organiser"])
        for who, values in uploads.items():
            submission_create(user=users[who], benchmark=benchmark, data=gen.submission_csv(values), filename="s.csv")
        round_close(round_=round_)
        version = round_truth_load(round_=round_, data=gen.truth_csv(gen.target(0.5, number)), filename="t.csv",
                                   final=True, user=users["organiser"])
        round_version_score(round_id=round_.pk, version=version.version)
        if number == 1:
            assert StandingRow.objects.filter(benchmark=benchmark).count() == 0  # one round is not enough
    # Two resolved rounds: owner and the team qualify; outsider has one round and waits.
    assert sorted(StandingRow.objects.filter(benchmark=benchmark).values_list("entrant__name", "rounds")) == [
        ("Copycats", 2), ("owner", 2)]
    report = fairplay_report(benchmark)
    assert [(p.scope, p.a, p.b, p.common) for p in report.correlated] == [("round 1", "Copycats", "owner", 300)]
    expected = np.corrcoef(base, near)[0, 1]
    assert abs(report.correlated[0].correlation - expected) < 1e-9
    assert report.identical == []
    client.force_login(users["organiser"])
    html = client.get(f"/b/{benchmark.slug}/fair-play/").content.decode()
    assert "once it has 2 resolved rounds (standings_min_rounds)" in html
    assert "once it has 2 resolved rounds" in client.get(f"/b/{benchmark.slug}/").content.decode()
    assert Submission.objects.filter(entrant=team.entrant).count() == 2
