"""The round engine through its services: open, uploads, close, stakes, truth versions, standings.

Scores are checked against numerai-tools 0.7.2 computed here, independently.
"""
from __future__ import annotations

import datetime as dt
import warnings

import numerai_tools.scoring as ref
import numpy as np
import pandas as pd
import pytest
from django.utils import timezone

from leaderboard.core import selectors
from leaderboard.core.models import Case, Entrant, Round, RoundScore, StandingRow, Submission, TruthVersion
from leaderboard.core.services.answers import SubmissionRejected
from leaderboard.core.services.entrants import entrant_flag
from leaderboard.core.services.round_engine import (
    round_close,
    round_open,
    round_truth_load,
    round_version_score,
    rounds_close_due,
    stakes_load,
)
from leaderboard.core.services.uploads import submission_create
from tests.support.signals import SignalsRound, signals_benchmark


@pytest.fixture
def bench(db, tmp_path):
    return signals_benchmark(tmp_path)


def upload(user, bench, data, entrant=None, **kw):
    return submission_create(user=user, benchmark=bench, data=data, filename="p.csv", entrant=entrant, **kw).submission


def score_latest(round_):
    tv = TruthVersion.objects.filter(round=round_).order_by("-version").first()
    assert round_version_score(round_id=round_.pk, version=tv.version) == "scored"
    return tv


def test_round_open_refuses_a_bad_universe_and_creates_nothing(bench):
    bad = b"id,feature_a,size\nA,1.0,3\nA,x,2\n,2.0,1\n"
    with pytest.raises(SubmissionRejected) as info:
        round_open(benchmark=bench, data=bad, filename="u.csv")
    found = {(e.row, e.column) for e in info.value.errors}
    assert {(1, "size"), } <= found  # unexpected column named on the header row
    bad = b"id,feature_a\nA,1.0\nA,x\n,2.0\n"
    with pytest.raises(SubmissionRejected) as info:
        round_open(benchmark=bench, data=bad, filename="u.csv")
    assert {(e.row, e.column) for e in info.value.errors} == {(3, "id"), (3, "feature_a"), (4, "id")}
    assert all(e.file == "u.csv" for e in info.value.errors)
    assert not Round.objects.filter(benchmark=bench).exists()


def test_round_uploads_replace_and_refuse(bench, users):
    gen = SignalsRound(60, seed=1)
    round_ = round_open(benchmark=bench, data=gen.universe_csv(), filename="u.csv",
                        closes_at=timezone.now() + dt.timedelta(days=3))
    assert (round_.number, round_.status, round_.universe_size) == (1, "open", 60)
    assert Case.objects.filter(round=round_).count() == 60
    first = upload(users["owner"], bench, gen.submission_csv(gen.predictions(1, 1)))
    second = upload(users["owner"], bench, gen.submission_csv(gen.predictions(1, 2)))
    first.refresh_from_db()
    assert (first.status, first.is_counted, second.status, second.is_counted) == ("accepted", False, "accepted", True)
    assert first.replaced_at is not None
    assert second.array.rows == 60 and len(bytes(second.array.data)) == 60 * 8

    # Every problem by row and column: a word, out of range, an unknown id, a duplicate, a missing id.
    values = gen.predictions(1, 3)
    lines = gen.submission_csv(values).decode().splitlines()
    lines[2] = lines[2].split(",")[0] + ",high"
    lines[3] = lines[3].split(",")[0] + ",1.5"
    lines[4] = "nobody,0.5"
    lines[5] = lines[6]
    with pytest.raises(SubmissionRejected) as info:
        upload(users["member"], bench, ("\n".join(lines) + "\n").encode())
    got = {(e.row, e.column) for e in info.value.errors}
    assert {(3, "prediction"), (4, "prediction"), (5, "id"), (7, "id")} <= got
    assert any(e.row is None and gen.ids[3] in e.message for e in info.value.errors)  # row 5's id is missing
    assert info.value.status == 400

    # Someone else's entrant is not yours to submit for.
    with pytest.raises(SubmissionRejected) as info:
        upload(users["member"], bench, gen.submission_csv(values), entrant="owner")
    assert info.value.errors[0].column == "entrant"

    round_close(round_=round_)
    with pytest.raises(SubmissionRejected) as info:
        upload(users["member"], bench, gen.submission_csv(values))
    assert info.value.status == 409 and "no next round is scheduled" in info.value.errors[0].message
    closed = Round.objects.get(pk=round_.pk)
    assert closed.closes_at <= timezone.now() and f"closed at {closed.closes_at:%Y-%m-%d %H:%M}" in str(info.value)


def test_round_upload_past_closes_at_is_refused_before_the_job_closes_it(bench, users):
    gen = SignalsRound(30, seed=2)
    round_ = round_open(benchmark=bench, data=gen.universe_csv(), filename="u.csv",
                        closes_at=timezone.now() + dt.timedelta(hours=1))
    Round.objects.filter(pk=round_.pk).update(closes_at=timezone.now() - dt.timedelta(seconds=1))
    with pytest.raises(SubmissionRejected) as info:
        upload(users["owner"], bench, gen.submission_csv(gen.predictions(1, 1)))
    assert info.value.status == 409 and "closed at" in info.value.errors[0].message
    assert rounds_close_due() == 1
    assert Round.objects.get(pk=round_.pk).status == "closed"



def test_upload_to_a_round_past_closes_at_names_the_round_still_open(bench, users):
    """Past its closes_at (before the job closes it) a round refuses uploads with a 409 that says
    once when it closed and which round is open now, not that no next round is scheduled."""
    gen = SignalsRound(30, seed=2)
    late = round_open(benchmark=bench, data=gen.universe_csv(), filename="u.csv",
                      closes_at=timezone.now() + dt.timedelta(hours=1))
    round_open(benchmark=bench, data=gen.universe_csv(), filename="u2.csv")  # round 2, open
    Round.objects.filter(pk=late.pk).update(closes_at=timezone.now() - dt.timedelta(seconds=1))
    with pytest.raises(SubmissionRejected) as info:
        upload(users["owner"], bench, gen.submission_csv(gen.predictions(1, 1)), round_number=1)
    message = info.value.errors[0].message
    assert info.value.status == 409 and message.count("closed at") == 1, message
    assert "open now: round 2" in message and "no next round" not in message
    # Alone and past its deadline, it still says that no next round is scheduled, once.
    Round.objects.filter(benchmark=bench, number=2).update(closes_at=timezone.now() - dt.timedelta(seconds=1))
    with pytest.raises(SubmissionRejected) as info:
        upload(users["owner"], bench, gen.submission_csv(gen.predictions(1, 1)), round_number=2)
    message = info.value.errors[0].message
    assert message.count("closed at") == 1 and "no next round is scheduled" in message, message

def test_an_empty_open_round_is_never_the_current_round(bench, users):
    gen = SignalsRound(30, seed=3)
    real = round_open(benchmark=bench, data=gen.universe_csv(), filename="u.csv")
    Round.objects.create(benchmark=bench, number=2, status="open")  # added by hand, no universe
    assert selectors.current_round(bench) == real
    assert upload(users["owner"], bench, gen.submission_csv(gen.predictions(1, 1))).round == real


def reference_scores(preds: pd.DataFrame, target: pd.Series, stakes: pd.Series, bm: list[str],
                     features: pd.DataFrame) -> pd.DataFrame:
    """numerai-tools 0.7.2, one submission at a time (as DESIGN.md defines each metric)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ranked = ref.gaussian(ref.tie_kept_rank(preds))
        mm = (ranked[stakes.index] * stakes).sum(axis=1) / stakes.sum()
        bmm = (ranked[bm] * stakes[bm]).sum(axis=1) / stakes[bm].sum()
        out = {}
        for col in preds.columns:
            one = preds[[col]]
            others = [c for c in preds.columns if c != col]
            pair = [ref.pearson_correlation(ranked[col], ranked[o]) for o in others]
            out[col] = {
                "corr": ref.numerai_corr(one, target).iloc[0],
                "mmc": ref.correlation_contribution(one, mm, target).iloc[0],
                "bmc": ref.correlation_contribution(one, bmm, target).iloc[0],
                "fnc": ref.feature_neutral_corr(one, features, target).iloc[0],
                "cwmm": ref.numerai_corr(one, mm.rename("mm"), target_pow15=False).iloc[0],
                "mcwnm": max(pair), "apcwnm": float(np.mean(pair)),
            }
    return pd.DataFrame(out).T


def test_round_lifecycle_scores_equal_numerai_tools_and_history_is_kept(bench, users):
    gen = SignalsRound(300, seed=4)
    round_ = round_open(benchmark=bench, data=gen.universe_csv(), filename="u.csv")
    subs = {
        "owner": upload(users["owner"], bench, gen.submission_csv(gen.predictions(0.8, 10))),
        "member": upload(users["member"], bench, gen.submission_csv(gen.predictions(0.3, 11))),
        "outsider": upload(users["outsider"], bench, gen.submission_csv(gen.predictions(0.0, 12))),
    }
    entrant_flag(name="member", benchmark_model=True)
    stakes_load(round_=round_, data=b"entrant,stake\nowner,100\nmember,50.5\noutsider,0\n")
    with pytest.raises(SubmissionRejected, match="still open"):
        round_truth_load(round_=round_, data=gen.truth_csv(gen.target(1, 1)), filename="t.csv", final=True)
    round_close(round_=round_)

    targets = [gen.target(3.0, 20), gen.target(2.0, 21), gen.target(1.0, 22)]
    round_truth_load(round_=round_, data=gen.truth_csv(targets[0]), filename="t1.csv", final=False,
                     as_of=dt.date(2026, 1, 5))
    v1 = score_latest(round_)
    round_truth_load(round_=round_, data=gen.truth_csv(targets[1]), filename="t2.csv", final=False,
                     as_of=dt.date(2026, 1, 6))
    score_latest(round_)
    assert Submission.objects.get(pk=subs["owner"].pk).status == "accepted"
    board = selectors.leaderboard_rows(bench, round_=round_)
    assert all(r.provisional and r.as_of == dt.date(2026, 1, 6) for r in board)
    round_truth_load(round_=round_, data=gen.truth_csv(targets[2]), filename="t3.csv", final=True)
    v3 = score_latest(round_)
    assert round_version_score(round_id=round_.pk, version=v3.version) is None  # idempotent

    round_.refresh_from_db()
    assert round_.status == "resolved"
    preds = pd.DataFrame({u: gen.predictions(s, seed) for u, s, seed in
                          (("owner", 0.8, 10), ("member", 0.3, 11), ("outsider", 0.0, 12))}, index=gen.ids)
    stakes = pd.Series({"owner": 100.0, "member": 50.5, "outsider": 0.0})
    for tv, target in ((v1, targets[0]), (v3, targets[2])):
        want = reference_scores(preds, pd.Series(target, index=gen.ids, name="target"), stakes, ["member"],
                                gen.features_frame())
        for user, sub in subs.items():
            got = RoundScore.objects.get(submission=sub, truth_version=tv).metrics
            for metric in want.columns:
                assert got[metric] == pytest.approx(want.loc[user, metric], abs=1e-9), (user, metric)
    assert RoundScore.objects.filter(submission=subs["owner"]).count() == 3  # every version kept
    owner = Submission.objects.get(pk=subs["owner"].pk)
    assert owner.status == "scored" and owner.truth_version_id == v3.pk
    board = selectors.leaderboard_rows(bench, round_=round_)
    assert [r.provisional for r in board] == [False] * 3
    assert [r.entrant.name for r in board] == sorted(
        subs, key=lambda u: -RoundScore.objects.get(submission=subs[u], truth_version=v3).metrics["corr"])
    standings = {r.entrant.name: r for r in StandingRow.objects.filter(benchmark=bench)}
    assert standings["owner"].rounds == 1
    assert standings["owner"].score == pytest.approx(
        RoundScore.objects.get(submission=subs["owner"], truth_version=v3).metrics["corr"])


def test_standings_are_the_mean_over_the_window(tmp_path, users):
    bench = signals_benchmark(tmp_path, config={"standings_window": 2})
    finals = []
    for number, seed in enumerate((30, 31, 32), start=1):
        gen = SignalsRound(80, seed=seed)
        round_ = round_open(benchmark=bench, data=gen.universe_csv(), filename="u.csv")
        upload(users["owner"], bench, gen.submission_csv(gen.predictions(1.0, seed)))
        if number != 2:
            upload(users["member"], bench, gen.submission_csv(gen.predictions(0.2, seed + 1)))
        round_close(round_=round_)
        round_truth_load(round_=round_, data=gen.truth_csv(gen.target(1.0, seed)), filename="t.csv", final=True)
        finals.append(score_latest(round_))

    def corr(user, tv):
        return RoundScore.objects.get(truth_version=tv, submission__entrant__owner=users[user],
                                      submission__is_counted=True).metrics["corr"]

    rows = {r.entrant.name: r for r in StandingRow.objects.filter(benchmark=bench)}
    assert rows["owner"].rounds == 2
    assert rows["owner"].score == pytest.approx((corr("owner", finals[1]) + corr("owner", finals[2])) / 2)
    # member skipped round 2: its last two rounds are 1 and 3
    assert rows["member"].rounds == 2
    assert rows["member"].score == pytest.approx((corr("member", finals[0]) + corr("member", finals[2])) / 2)


def test_stakes_load_names_bad_rows_and_is_refused_once_resolved(bench, users):
    gen = SignalsRound(30, seed=5)
    round_ = round_open(benchmark=bench, data=gen.universe_csv(), filename="u.csv")
    Entrant.objects.create(owner=users["owner"], name="alpha")
    with pytest.raises(SubmissionRejected) as info:
        stakes_load(round_=round_, data=b"entrant,stake\nalpha,-1\nghost,3\nalpha,x\n")
    assert {(e.row, e.column) for e in info.value.errors} == {(2, "stake"), (3, "entrant"), (4, "entrant"),
                                                             (4, "stake")}
    assert stakes_load(round_=round_, data=b"entrant,stake\nalpha,2.5\n") == 1
    upload(users["owner"], bench, gen.submission_csv(gen.predictions(1, 1)), entrant="alpha")
    round_close(round_=round_)
    round_truth_load(round_=round_, data=gen.truth_csv(gen.target(1, 1)), filename="t.csv", final=True)
    score_latest(round_)
    with pytest.raises(SubmissionRejected, match="resolved"):
        stakes_load(round_=round_, data=b"entrant,stake\nalpha,3\n")


def test_a_version_claimed_but_never_scored_is_requeued_by_the_sweep(bench, users, settings,
                                                                     django_capture_on_commit_callbacks):
    from leaderboard.core.services.round_engine import round_versions_sweep

    gen = SignalsRound(40, seed=6)
    round_ = round_open(benchmark=bench, data=gen.universe_csv(), filename="u.csv")
    upload(users["owner"], bench, gen.submission_csv(gen.predictions(1, 1)))
    round_close(round_=round_)
    with django_capture_on_commit_callbacks(execute=False):  # the enqueue is lost
        tv = round_truth_load(round_=round_, data=gen.truth_csv(gen.target(1, 1)), filename="t.csv", final=True)
    # A worker claimed it and died before committing.
    TruthVersion.objects.filter(pk=tv.pk).update(scoring_claimed_at=timezone.now() - dt.timedelta(minutes=10))
    assert round_versions_sweep(now=timezone.now() - dt.timedelta(minutes=20)) == 0  # not stalled long enough then
    with django_capture_on_commit_callbacks(execute=True):  # eager tasks in tests: the task runs at once
        assert round_versions_sweep() == 1
    tv.refresh_from_db()
    assert tv.scored_at is not None
    assert Round.objects.get(pk=round_.pk).status == "resolved"
    assert round_versions_sweep() == 0


def test_extra_target_columns_give_extra_correlations(tmp_path, users):
    bench = signals_benchmark(tmp_path, slug="sig60", config={"extra_targets": ["target_60"], "rank_by": "corr_target_60"})
    gen = SignalsRound(150, seed=12)
    round_ = round_open(benchmark=bench, data=gen.universe_csv(), filename="u.csv")
    sub = upload(users["owner"], bench, gen.submission_csv(gen.predictions(0.7, 3)))
    upload(users["member"], bench, gen.submission_csv(gen.predictions(0.2, 4)))
    round_close(round_=round_)
    t20, t60 = gen.target(1.0, 1), gen.target(0.5, 2)
    with pytest.raises(SubmissionRejected) as info:  # the configured column is required
        round_truth_load(round_=round_, data=gen.truth_csv(t20), filename="t.csv", final=True)
    assert info.value.errors[0].column == "target_60"
    round_truth_load(round_=round_, data=gen.truth_csv(t20, target_60=t60), filename="t.csv", final=True)
    tv = score_latest(round_)
    got = RoundScore.objects.get(submission=sub, truth_version=tv).metrics
    one = pd.DataFrame({"p": gen.predictions(0.7, 3)}, index=gen.ids)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert got["corr"] == pytest.approx(ref.numerai_corr(one, pd.Series(t20, index=gen.ids, name="t")).iloc[0],
                                            abs=1e-12)
        assert got["corr_target_60"] == pytest.approx(
            ref.numerai_corr(one, pd.Series(t60, index=gen.ids, name="t")).iloc[0], abs=1e-12)
    row = selectors.leaderboard_rows(bench, round_=round_)[0]
    assert row.score == max(RoundScore.objects.filter(truth_version=tv).values_list("metrics__corr_target_60",
                                                                                      flat=True))



def test_extra_target_scores_when_the_main_target_leaves_ids_out(tmp_path, users):
    """An empty target cell means no target for that id (organisers.md); with an extra target
    column covering other ids, the version is still scored, each column over its own ids. The
    expected values are numerai-tools' on the ids each column has."""
    bench = signals_benchmark(tmp_path, slug="sig60b", config={"extra_targets": ["target_60"],
                                                                 "rank_by": "corr_target_60"})
    gen = SignalsRound(150, seed=13)
    round_ = round_open(benchmark=bench, data=gen.universe_csv(), filename="u.csv")
    sub = upload(users["owner"], bench, gen.submission_csv(gen.predictions(0.7, 5)))
    upload(users["member"], bench, gen.submission_csv(gen.predictions(0.2, 6)))
    round_close(round_=round_)
    t20, t60 = gen.target(1.0, 7), gen.target(0.5, 8)
    t20[::15] = np.nan  # 10 of 150 ids without the main target
    round_truth_load(round_=round_, data=gen.truth_csv(t20, target_60=t60), filename="t.csv", final=True)
    tv = score_latest(round_)
    assert Round.objects.get(pk=round_.pk).status == "resolved"
    got = RoundScore.objects.get(submission=sub, truth_version=tv).metrics
    one = pd.DataFrame({"p": gen.predictions(0.7, 5)}, index=gen.ids)
    main = pd.Series(t20, index=gen.ids, name="t").dropna()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert got["corr"] == pytest.approx(ref.numerai_corr(one.loc[main.index], main).iloc[0], abs=1e-12)
        assert got["corr_target_60"] == pytest.approx(
            ref.numerai_corr(one, pd.Series(t60, index=gen.ids, name="t")).iloc[0], abs=1e-12)
    assert got["mmc"] is not None and got["fnc"] is not None

def test_an_extra_target_with_no_value_says_why_its_correlation_is_null(tmp_path, users, client):
    """organisers.md: a metric the round cannot give is null, "the round's notes say why". The notes
    named BMC and FNC but said nothing of corr_target_60 when the truth's target_60 column was empty."""
    from rest_framework.test import APIClient

    bench = signals_benchmark(tmp_path, slug="sig60c", config={"extra_targets": ["target_60"]})
    gen = SignalsRound(40, seed=15)
    round_ = round_open(benchmark=bench, data=gen.universe_csv(), filename="u.csv")
    upload(users["owner"], bench, gen.submission_csv(gen.predictions(0.7, 5)))
    round_close(round_=round_)
    truth = "id,target,target_60\n" + "".join(f"{c},{float(t)!r},\n" for c, t in zip(gen.ids, gen.target(1.0, 7)))
    round_truth_load(round_=round_, data=truth.encode(), filename="t.csv", final=True)
    score_latest(round_)
    answer = APIClient().get(f"/api/benchmarks/{bench.slug}/rounds/1/").json()
    row = APIClient().get(f"/api/benchmarks/{bench.slug}/rounds/1/leaderboard/").json()["rows"][0]
    assert row["metrics"]["corr_target_60"] is None and row["metrics"]["corr"] is not None
    why = "The truth has no target_60 value for any id: corr_target_60 is not available."
    assert why in answer["notes"]
    assert why in client.get(f"/b/{bench.slug}/rounds/1/").content.decode()


def test_closing_computes_the_pairwise_metrics_once_and_every_version_reads_them(
        bench, users, django_capture_on_commit_callbacks):
    """MCWNM and APCWNM depend on the counted submissions alone: the close computes them (a task on
    commit), each truth version's scoring reads them, and values stored for another set of
    submissions are never used."""
    from leaderboard.core.models import RoundTruthFreeScores

    gen = SignalsRound(120, seed=14)
    round_ = round_open(benchmark=bench, data=gen.universe_csv(), filename="u.csv")
    spec = (("owner", 0.8, 40), ("member", 0.5, 41), ("outsider", 0.0, 42))
    subs = {u: upload(users[u], bench, gen.submission_csv(gen.predictions(s, seed))) for u, s, seed in spec}
    with django_capture_on_commit_callbacks(execute=True):  # eager tasks in tests: the task runs at once
        round_close(round_=round_)
    stored = RoundTruthFreeScores.objects.get(round=round_)
    assert stored.metrics == ["mcwnm", "apcwnm"]

    ranked = ref.gaussian(ref.tie_kept_rank(pd.DataFrame(
        {u: gen.predictions(s, seed) for u, s, seed in spec}, index=gen.ids)))
    corr = ranked.corr().to_numpy().copy()
    np.fill_diagonal(corr, np.nan)
    want = {u: (np.nanmax(corr[i]), np.nanmean(corr[i])) for i, u in enumerate(ranked.columns)}
    values = np.frombuffer(bytes(stored.data)).reshape(3, 2)  # submissions in id order
    for i, user in enumerate(sorted(subs, key=lambda u: subs[u].pk)):
        assert values[i] == pytest.approx(want[user], abs=1e-12)

    # What the version's scoring shows is what was stored: mark the stored values to see them come through.
    marked = values.copy()
    marked[:, 0] = [0.11, 0.22, 0.33]
    RoundTruthFreeScores.objects.filter(round=round_).update(data=marked.tobytes())
    round_truth_load(round_=round_, data=gen.truth_csv(gen.target(1, 1)), filename="t1.csv", final=False,
                     as_of=dt.date(2026, 1, 5))
    v1 = score_latest(round_)
    by_id = sorted(subs.values(), key=lambda s: s.pk)
    assert [RoundScore.objects.get(submission=s, truth_version=v1).metrics["mcwnm"] for s in by_id] == [0.11, 0.22, 0.33]

    # Values stored for another set of counted submissions are ignored, computed again and replaced.
    RoundTruthFreeScores.objects.filter(round=round_).update(key="0" * 64)
    round_truth_load(round_=round_, data=gen.truth_csv(gen.target(1, 2)), filename="t2.csv", final=True)
    v2 = score_latest(round_)
    for user, sub in subs.items():
        got = RoundScore.objects.get(submission=sub, truth_version=v2).metrics
        assert (got["mcwnm"], got["apcwnm"]) == pytest.approx(want[user], abs=1e-12)
    assert np.array_equal(np.frombuffer(bytes(RoundTruthFreeScores.objects.get(round=round_).data)).reshape(3, 2),
                          values)


def test_a_version_whose_scoring_keeps_failing_is_given_up_with_its_reason(bench, users, client, settings, monkeypatch,
                                                                          django_capture_on_commit_callbacks):
    """A truth its kind cannot score (a fault in the scoring: every attempt raises) was claimed, failed
    and requeued by the sweep for ever, its round showing "scoring…" and its submissions "waiting".
    After SCORING_MAX_ATTEMPTS it is given up: the sweep leaves it, the page and API say so, and a
    truth loaded again scores the round."""
    from leaderboard.core import tasks
    from leaderboard.core.services.round_engine import round_versions_sweep

    gen = SignalsRound(40, seed=6)
    round_ = round_open(benchmark=bench, data=gen.universe_csv(), filename="u.csv")
    sub = upload(users["owner"], bench, gen.submission_csv(gen.predictions(1, 1)))
    round_close(round_=round_)
    with django_capture_on_commit_callbacks(execute=False):
        tv = round_truth_load(round_=round_, data=gen.truth_csv(gen.target(1, 1)), filename="t.csv", final=True)

    def broken(self, inputs, config):
        raise RuntimeError("cannot score this truth")

    kind_class = type(bench.kind_impl)
    monkeypatch.setattr(kind_class, "score_round_version", broken)
    later = timezone.now() + dt.timedelta(hours=1)  # past every stall limit of the sweep
    for attempt in range(1, settings.SCORING_MAX_ATTEMPTS + 1):
        with pytest.raises(RuntimeError):
            tasks.score_round_version(round_id=round_.pk, version=tv.version)
        tv.refresh_from_db()
        assert (tv.scoring_attempts, tv.scoring_claimed_at, tv.scoring_gave_up_at) == (attempt, None, None)
        assert tv.scoring_error == "RuntimeError: cannot score this truth"
    with django_capture_on_commit_callbacks(execute=True):  # the sweep's requeue runs at once
        assert round_versions_sweep(now=later) == 1
    tv.refresh_from_db()
    assert tv.scored_at is None and tv.scoring_gave_up_at is not None
    assert tv.scoring_error == ("gave up after 3 scoring attempts; the last one failed: "
                                "RuntimeError: cannot score this truth")
    assert round_versions_sweep(now=later) == 0  # never again
    sub.refresh_from_db()
    assert sub.status == "accepted" and "truth version 1 failed" in sub.status_reason
    page = client.get(f"/b/{bench.slug}/rounds/{round_.number}/").content.decode()
    assert "v1 final · scoring failed" in page and "failed after 3 attempts" in page
    assert "cannot score this truth" not in page  # the error is the organiser's (log, admin), not the public's
    detail = client.get(f"/api/benchmarks/{bench.slug}/rounds/{round_.number}/").json()
    assert [(v["version"], v["scored"], v["scoring_failed"]) for v in detail["truth_versions"]] == [(1, False, True)]

    # The cause fixed, the truth loaded again scores the round.
    monkeypatch.undo()
    with django_capture_on_commit_callbacks(execute=True):
        round_truth_load(round_=round_, data=gen.truth_csv(gen.target(1, 1)), filename="t.csv", final=True)
    sub.refresh_from_db()
    assert sub.status == "scored" and Round.objects.get(pk=round_.pk).status == "resolved"
