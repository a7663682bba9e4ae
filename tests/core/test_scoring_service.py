"""Scoring through the service: values, leaderboard rules, reveal, truth changes, failures and the sweep."""
from __future__ import annotations

import datetime as dt
import math
import shutil

import pytest
from django.utils import timezone
from scipy.stats import spearmanr

from leaderboard.core import selectors
from leaderboard.core.models import LeaderboardRow, Score, Submission, TruthVersion
from leaderboard.core.quota import quota_remaining
from leaderboard.core.services.benchmarks import benchmark_load_bundle, benchmark_reveal
from leaderboard.core.services.rounds import round_set_status
from leaderboard.core.services.submissions import submission_score, submission_select, submissions_sweep_stuck
from leaderboard.core.services.uploads import submission_create
from tests.conftest import MINI_ROWS, submission_csv, write_properties_bundle
from tests.support.admin_forms import benchmark_change_form

PUBLIC = [r for r in MINI_ROWS if r["split"] == "public"]
PRIVATE = [r for r in MINI_ROWS if r["split"] == "private"]


@pytest.fixture
def accept(django_capture_on_commit_callbacks):
    """Submit and let the (eager) scoring task run when the transaction commits."""

    def run(user, benchmark, data: bytes, **kw):
        with django_capture_on_commit_callbacks(execute=True):
            accepted = submission_create(user=user, benchmark=benchmark, data=data, filename="p.csv", **kw)
        return Submission.objects.get(pk=accepted.submission.pk)

    return run


def scores(sub, split):
    return dict(Score.objects.filter(submission=sub, split=split).values_list("metric", "value"))


def expected_split(rows, a, b):
    """0.6 x mean Spearman(A, B) + 0.4 x recall@ceil(10%) on A, computed independently with scipy."""
    true_a = [r["A"] for r in rows]
    true_b = [r["B"] for r in rows]
    rho = (spearmanr(true_a, a).statistic + spearmanr(true_b, b).statistic) / 2
    k = math.ceil(0.1 * len(rows))
    top_true = set(sorted(range(len(rows)), key=lambda i: -true_a[i])[:k])
    top_pred = set(sorted(range(len(rows)), key=lambda i: -a[i])[:k])
    recall = len(top_true & top_pred) / k
    return 0.6 * rho + 0.4 * recall, rho, recall


def test_scores_equal_an_independent_computation(mini_benchmark, users, accept):
    a = [2.0, 1.0, 4.0, 3.0, 7.0, 5.0, 6.0, 9.0, 10.0, 8.0]
    b = [9.5, 8.0, 6.0, 7.0, 5.5, 3.0, 4.0, 1.0, 2.0, 0.0]
    sub = accept(users["owner"], mini_benchmark, submission_csv(MINI_ROWS, a=a, b=b))
    assert sub.status == "scored", sub.status_reason
    for split, rows, idx in (("public", PUBLIC, slice(0, 7)), ("private", PRIVATE, slice(7, 10))):
        score, rho, recall = expected_split(rows, a[idx], b[idx])
        got = scores(sub, split)
        assert got["score"] == pytest.approx(score, abs=1e-12)
        assert got["spearman"] == pytest.approx(rho, abs=1e-12)
        assert got["recall"] == pytest.approx(recall, abs=1e-12)
    # Worked by hand for the public split: ranks of A differ by swaps (0,1), (2,3) and the cycle 4->6->5,
    # sum d^2 = 1+1+1+1+4+1+1 = 10, rho_A = 1 - 6*10/(7*48) = 0.8214...; the top true A (ab06) is predicted
    # third, so recall = 0.
    assert scores(sub, "public")["spearman:A"] == pytest.approx(1 - 60 / 336, abs=1e-12)
    assert scores(sub, "public")["recall:A"] == 0.0
    assert sub.truth_version.version == 1
    assert sub.scored_at >= sub.started_at >= sub.received_at
    assert [e.status for e in sub.events.all()] == ["queued", "scoring", "scored"]


def test_leaderboard_ranks_best_public_score_ties_to_earlier(mini_benchmark, users, accept):
    perfect = submission_csv(MINI_ROWS)
    worse = submission_csv(MINI_ROWS, a=[r["A"] * -1 for r in MINI_ROWS])
    first = accept(users["owner"], mini_benchmark, perfect)
    accept(users["owner"], mini_benchmark, worse)
    accept(users["member"], mini_benchmark, perfect)
    rows = selectors.leaderboard_rows(mini_benchmark, split="public")
    assert [(r.rank, r.entrant.name, r.submissions_count) for r in rows] == [(1, "owner", 2), (2, "member", 1)]
    assert rows[0].submission_id == first.pk
    assert rows[0].score == pytest.approx(1.0)


def test_private_ranking_uses_selected_submission_after_reveal(mini_benchmark, users, accept, api_for):
    perfect = submission_csv(MINI_ROWS)
    # Perfect on public, reversed on private for A.
    tricky_a = [r["A"] if r["split"] == "public" else -r["A"] for r in MINI_ROWS]
    best = accept(users["owner"], mini_benchmark, perfect)
    tricky = accept(users["member"], mini_benchmark, submission_csv(MINI_ROWS, a=tricky_a))
    lower = accept(users["member"], mini_benchmark, submission_csv(MINI_ROWS, a=[-x for x in tricky_a]))
    client = api_for("outsider")
    url = f"/api/benchmarks/{mini_benchmark.slug}/leaderboard/"
    assert client.get(url, {"split": "private"}).status_code == 403
    public = client.get(url).json()
    assert public["split"] == "public"
    assert [r["entrant"] for r in public["rows"]] == ["owner", "member"]
    assert public["rows"][1]["submission_id"] == tricky.pk  # best public of member (ties go to the earlier)

    submission_select(submission=lower, user=users["member"])
    round_set_status(round_=lower.round, status="closed")
    benchmark_reveal(benchmark=mini_benchmark)
    private = client.get(url).json()
    assert private["split"] == "private"
    by_name = {r["entrant"]: r for r in private["rows"]}
    assert by_name["member"]["submission_id"] == lower.pk
    assert by_name["owner"]["submission_id"] == best.pk
    assert by_name["member"]["score"] == pytest.approx(scores(lower, "private")["score"])


def test_truth_change_rescores_and_leaderboard_follows(mini_bundle, users, accept, django_capture_on_commit_callbacks,
                                                       tmp_path):
    benchmark = benchmark_load_bundle(mini_bundle).benchmark
    sub = accept(users["owner"], benchmark, submission_csv(MINI_ROWS))
    assert scores(sub, "public")["score"] == pytest.approx(1.0)

    # The organiser corrects truth: A of the public cases reversed.
    changed = [dict(r, A=-r["A"]) if r["split"] == "public" else r for r in MINI_ROWS]
    corrected = write_properties_bundle(tmp_path / "corrected", changed)
    with django_capture_on_commit_callbacks(execute=True):
        report = benchmark_load_bundle(corrected)
    assert report.truth_changed and report.truth_version == 2 and report.requeued == 1
    sub.refresh_from_db()
    assert sub.status == "scored" and sub.truth_version.version == 2
    expected, _, _ = expected_split(changed[:7], [r["A"] for r in PUBLIC], [r["B"] for r in PUBLIC])
    assert scores(sub, "public")["score"] == pytest.approx(expected, abs=1e-12)
    assert set(Score.objects.filter(submission=sub).values_list("truth_version__version", flat=True)) == {2}
    row = LeaderboardRow.objects.get(split="public", entrant=sub.entrant)
    assert row.score == pytest.approx(expected, abs=1e-12)

    # Loading the same bundle again changes nothing.
    shutil.copytree(corrected, tmp_path / "again")
    report = benchmark_load_bundle(tmp_path / "again")
    assert not report.truth_changed and report.requeued == 0
    assert TruthVersion.objects.filter(round__benchmark=benchmark).count() == 2


def test_config_change_rescores_and_leaderboard_follows(mini_bundle, users, accept,
                                                        django_capture_on_commit_callbacks, tmp_path):
    benchmark = benchmark_load_bundle(mini_bundle).benchmark
    a = [r["A"] * 0.5 + (i % 3) for i, r in enumerate(MINI_ROWS)]
    b = [r["B"] + (i % 4) for i, r in enumerate(MINI_ROWS)]
    sub = accept(users["owner"], benchmark, submission_csv(MINI_ROWS, a=a, b=b))
    # The organiser reweighs the score to Spearman alone: score = 1 x mean Spearman + 0 x recall.
    reweighed = write_properties_bundle(tmp_path / "reweighed", MINI_ROWS,
                                        extra_config={"weights": {"spearman": 1.0, "recall": 0.0}})
    with django_capture_on_commit_callbacks(execute=True):
        report = benchmark_load_bundle(reweighed)
    assert not report.truth_changed and report.requeued == 1
    sub.refresh_from_db()
    n = len(PUBLIC)
    expected = (spearmanr(a[:n], [r["A"] for r in PUBLIC]).statistic
                + spearmanr(b[:n], [r["B"] for r in PUBLIC]).statistic) / 2
    assert sub.status == "scored"
    assert scores(sub, "public")["score"] == pytest.approx(expected, abs=1e-12)
    assert LeaderboardRow.objects.get(split="public", entrant=sub.entrant).score == pytest.approx(expected, abs=1e-12)
    # The same bundle again: nothing to rescore.
    shutil.copytree(reweighed, tmp_path / "again")
    assert benchmark_load_bundle(tmp_path / "again").requeued == 0


def test_a_config_edited_in_the_admin_rescores_as_a_bundle_does(mini_bundle, users, accept, client,
                                                                 django_capture_on_commit_callbacks):
    benchmark = benchmark_load_bundle(mini_bundle).benchmark
    a = [r["A"] * 0.5 + (i % 3) for i, r in enumerate(MINI_ROWS)]
    b = [r["B"] + (i % 4) for i, r in enumerate(MINI_ROWS)]
    sub = accept(users["owner"], benchmark, submission_csv(MINI_ROWS, a=a, b=b))
    client.force_login(users["organiser"])
    config = dict(benchmark.config, weights={"spearman": 1.0, "recall": 0.0})
    with django_capture_on_commit_callbacks(execute=True):
        resp = client.post(f"/admin/core/benchmark/{benchmark.pk}/change/", benchmark_change_form(benchmark, config))
    assert resp.status_code == 302
    sub.refresh_from_db()
    n = len(PUBLIC)  # score = 1 x mean Spearman + 0 x recall, worked with scipy
    expected = (spearmanr(a[:n], [r["A"] for r in PUBLIC]).statistic
                + spearmanr(b[:n], [r["B"] for r in PUBLIC]).statistic) / 2
    assert sub.status == "scored"
    assert scores(sub, "public")["score"] == pytest.approx(expected, abs=1e-12)
    assert LeaderboardRow.objects.get(split="public", entrant=sub.entrant).score == pytest.approx(expected, abs=1e-12)


def test_a_config_change_that_decides_no_score_rescores_nothing(mini_bundle, users, accept, client, tmp_path,
                                                                django_capture_on_commit_callbacks):
    # An organiser raises the upload limit and takes late submissions: no score can change, so no
    # submission goes back to the queue (nor gets a "config changed" line in its history), by bundle or admin.
    benchmark = benchmark_load_bundle(mini_bundle).benchmark
    sub = accept(users["owner"], benchmark, submission_csv(MINI_ROWS))
    history = list(sub.events.values_list("id", flat=True))
    loosened = write_properties_bundle(tmp_path / "loosened", MINI_ROWS, extra_config={
        "max_upload_bytes": 2 * 1024 * 1024, "late_submissions": True})
    with django_capture_on_commit_callbacks(execute=True):
        report = benchmark_load_bundle(loosened)
    assert report.requeued == 0
    benchmark.refresh_from_db()
    assert benchmark.config["max_upload_bytes"] == 2 * 1024 * 1024 and benchmark.config["late_submissions"] is True
    client.force_login(users["organiser"])
    config = dict(benchmark.config, max_upload_bytes=3 * 1024 * 1024)
    with django_capture_on_commit_callbacks(execute=True):
        resp = client.post(f"/admin/core/benchmark/{benchmark.pk}/change/", benchmark_change_form(benchmark, config))
    assert resp.status_code == 302
    benchmark.refresh_from_db()
    assert benchmark.config["max_upload_bytes"] == 3 * 1024 * 1024
    sub.refresh_from_db()
    assert sub.status == "scored" and list(sub.events.values_list("id", flat=True)) == history
    # A key that decides scores still rescores.
    reweighed = write_properties_bundle(tmp_path / "reweighed", MINI_ROWS, extra_config={
        "max_upload_bytes": 3 * 1024 * 1024, "late_submissions": True, "weights": {"spearman": 1.0, "recall": 0.0}})
    with django_capture_on_commit_callbacks(execute=True):
        assert benchmark_load_bundle(reweighed).requeued == 1


def test_an_admin_config_that_cannot_score_the_stored_cases_is_refused_as_a_bundle_is(
        mini_bundle, users, accept, client, tmp_path, django_capture_on_commit_callbacks):
    # The private split has 3 cases: with recall_k 'floor' its top 10% is int(0.1 x 3) = 0 cases. A bundle
    # saying so is refused; the admin must refuse it too, not rescore every submission into a failure.
    benchmark = benchmark_load_bundle(mini_bundle).benchmark
    sub = accept(users["owner"], benchmark, submission_csv(MINI_ROWS))
    floor = write_properties_bundle(tmp_path / "floor", MINI_ROWS, extra_config={"recall_k": "floor"})
    with pytest.raises(Exception, match="= 0 cases"):
        benchmark_load_bundle(floor)
    client.force_login(users["organiser"])
    config = dict(benchmark.config, recall_k="floor")
    with django_capture_on_commit_callbacks(execute=True):
        resp = client.post(f"/admin/core/benchmark/{benchmark.pk}/change/", benchmark_change_form(benchmark, config))
    assert resp.status_code == 200 and "= 0 cases" in resp.content.decode()
    benchmark.refresh_from_db()
    assert benchmark.config["recall_k"] == "ceil"
    sub.refresh_from_db()
    assert sub.status == "scored" and LeaderboardRow.objects.filter(submission=sub, split="public").exists()


def test_scoring_twice_is_a_no_op(mini_benchmark, users, accept):
    sub = accept(users["owner"], mini_benchmark, submission_csv(MINI_ROWS))
    before = list(Score.objects.filter(submission=sub).values_list("pk", flat=True))
    assert submission_score(submission_id=sub.pk) is None
    assert list(Score.objects.filter(submission=sub).values_list("pk", flat=True)) == before
    assert submission_score(submission_id=10**9) is None  # a deleted submission is logged and skipped


def test_server_error_retries_then_fails_with_reason_and_refund(mini_benchmark, users, accept, monkeypatch,
                                                                  settings):
    settings.SCORING_MAX_ATTEMPTS = 2
    kind_cls = type(mini_benchmark.kind_impl)

    def broken(self, *args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(kind_cls, "score", broken)
    sub = accept(users["owner"], mini_benchmark, submission_csv(MINI_ROWS))
    sub.refresh_from_db()
    assert sub.status == "failed"
    assert sub.attempts == 2
    assert "server error" in sub.status_reason and "disk on fire" in sub.status_reason
    assert "does not count against your daily limit" in sub.status_reason
    assert [e.status for e in sub.events.all()] == ["queued", "scoring", "queued", "scoring", "failed"]
    assert not sub.counts_against_limit
    assert quota_remaining(user=users["owner"], benchmark=mini_benchmark) == 5


def test_sweep_requeues_stuck_then_fails_out_of_attempts(mini_benchmark, users, settings,
                                                         django_capture_on_commit_callbacks):
    settings.SCORING_STUCK_AFTER_SECONDS = 60
    settings.SCORING_MAX_ATTEMPTS = 2
    accepted = submission_create(user=users["owner"], benchmark=mini_benchmark, data=submission_csv(MINI_ROWS),
                                 filename="p.csv")  # never enqueued: on_commit does not run here
    old = timezone.now() - dt.timedelta(minutes=5)
    Submission.objects.filter(pk=accepted.submission.pk).update(status="scoring", attempts=1, status_changed_at=old)
    with django_capture_on_commit_callbacks(execute=True):
        assert submissions_sweep_stuck() == {"published": 0, "requeued": 1, "failed": 0}
    sub = Submission.objects.get(pk=accepted.submission.pk)
    assert sub.status == "scored"  # the requeued task ran (eagerly) and finished
    assert sub.attempts == 2

    accepted = submission_create(user=users["owner"], benchmark=mini_benchmark, data=submission_csv(MINI_ROWS),
                                 filename="p.csv")
    Submission.objects.filter(pk=accepted.submission.pk).update(status="scoring", attempts=2, status_changed_at=old)
    assert submissions_sweep_stuck() == {"published": 0, "requeued": 0, "failed": 1}
    sub = Submission.objects.get(pk=accepted.submission.pk)
    assert sub.status == "failed" and "gave up after 2 scoring attempts" in sub.status_reason
    assert quota_remaining(user=users["owner"], benchmark=mini_benchmark) == 4  # the failed one was refunded


def test_rescore_that_fails_takes_the_old_scores_off_the_leaderboard(mini_bundle, users, accept, tmp_path,
                                                                     django_capture_on_commit_callbacks):
    benchmark = benchmark_load_bundle(mini_bundle).benchmark
    sub = accept(users["owner"], benchmark, submission_csv(MINI_ROWS))
    assert LeaderboardRow.objects.filter(submission=sub).exists()
    # The organiser adds a case: the stored submission no longer covers every sequence.
    extra = MINI_ROWS + [{"sequence_id": "ab10", "fold": 0, "split": "public", "A": 11.0, "B": 0.1}]
    with django_capture_on_commit_callbacks(execute=True):
        benchmark_load_bundle(write_properties_bundle(tmp_path / "more", extra))
    sub.refresh_from_db()
    assert sub.status == "failed" and "no longer valid" in sub.status_reason
    assert any("ab10" in e["message"] for e in sub.errors)
    assert not Score.objects.filter(submission=sub).exists()
    assert not LeaderboardRow.objects.filter(submission=sub).exists()
    assert quota_remaining(user=users["owner"], benchmark=benchmark) == 5  # not the participant's fault
