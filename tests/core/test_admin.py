"""Organiser actions in the admin: truth upload, reveal, rescore, de-identify."""
from __future__ import annotations

from django.core.files.uploadedfile import SimpleUploadedFile

from leaderboard.core.models import Benchmark, Round, Score, Submission, TruthVersion
from leaderboard.core.services.uploads import submission_create
from tests.conftest import MINI_ROWS, submission_csv, write_properties_bundle


def _scored(benchmark, user, capture):
    with capture(execute=True):
        return submission_create(user=user, benchmark=benchmark, data=submission_csv(MINI_ROWS),
                                 filename="p.csv").submission


def test_admin_truth_upload_makes_a_version_and_rescores(client, users, mini_benchmark, tmp_path,
                                                         django_capture_on_commit_callbacks):
    sub = _scored(mini_benchmark, users["owner"], django_capture_on_commit_callbacks)
    client.force_login(users["organiser"])
    changed = [dict(r, A=-r["A"]) for r in MINI_ROWS]
    csv_bytes = (write_properties_bundle(tmp_path / "new", changed) / "cases.csv").read_bytes()
    url = f"/admin/core/benchmark/{mini_benchmark.pk}/truth/"
    round_ = Round.objects.get(benchmark=mini_benchmark)
    with django_capture_on_commit_callbacks(execute=True):
        resp = client.post(url, {"file": SimpleUploadedFile("cases.csv", csv_bytes), "note": "sign fix",
                                 "round": round_.pk}, follow=True)
    assert "Truth version 2 stored; 1 submission(s) queued for rescoring." in resp.content.decode()
    version = TruthVersion.objects.get(round=round_, version=2)
    assert version.note == "sign fix" and version.created_by == users["organiser"]
    sub.refresh_from_db()
    assert sub.status == "scored" and sub.truth_version == version
    assert Score.objects.get(submission=sub, split="public", metric="spearman:A").value == -1.0

    # The same file again changes nothing; a broken file lists its problems and changes nothing.
    resp = client.post(url, {"file": SimpleUploadedFile("cases.csv", csv_bytes), "round": round_.pk}, follow=True)
    assert "The truth is unchanged (still version 2)." in resp.content.decode()
    broken = csv_bytes.replace(b"ab03,3,public,-4.0", b"ab03,3,public,lots")
    resp = client.post(url, {"file": SimpleUploadedFile("cases.csv", broken), "round": round_.pk})
    assert resp.status_code == 200 and "row 5" in resp.content.decode() and "lots" in resp.content.decode()
    assert TruthVersion.objects.filter(round=round_).count() == 2


def test_admin_reveal_and_rescore_actions(client, users, mini_benchmark, django_capture_on_commit_callbacks):
    sub = _scored(mini_benchmark, users["owner"], django_capture_on_commit_callbacks)
    client.force_login(users["organiser"])
    # Refused while submissions are open, with the reason; then the round is closed and it works.
    resp = client.post("/admin/core/benchmark/", {"action": "reveal_private", "_selected_action": [mini_benchmark.pk]},
                       follow=True)
    assert "not revealed: submissions to Mini Props are open with no deadline" in resp.content.decode()
    assert not Benchmark.objects.get().private_revealed
    round_ = Round.objects.get(benchmark=mini_benchmark)
    resp = client.post("/admin/core/round/", {"action": "close_rounds", "_selected_action": [round_.pk]}, follow=True)
    assert "is now closed" in resp.content.decode()
    client.post("/admin/core/benchmark/", {"action": "reveal_private", "_selected_action": [mini_benchmark.pk]})
    assert Benchmark.objects.get().private_revealed
    assert client.get("/api/benchmarks/mini-props/leaderboard/").json()["split"] == "private"
    with django_capture_on_commit_callbacks(execute=True):
        client.post("/admin/core/benchmark/", {"action": "rescore", "_selected_action": [mini_benchmark.pk]})
    sub.refresh_from_db()
    assert sub.status == "scored"
    assert [e.reason for e in sub.events.all()][-3:] == [
        "rescoring requested by an organiser", "scoring (attempt 1)", "scored against truth version 1"]
    client.post("/admin/core/benchmark/", {"action": "hide_private", "_selected_action": [mini_benchmark.pk]})
    assert not Benchmark.objects.get().private_revealed


def test_admin_is_for_staff_only(client, users, mini_benchmark):
    client.force_login(users["owner"])
    resp = client.get(f"/admin/core/benchmark/{mini_benchmark.pk}/truth/")
    assert resp.status_code == 302 and "/admin/login/" in resp["Location"]
    assert not Submission.objects.exists()


def _admin_datetime(prefix: str, at) -> dict:
    return {f"{prefix}_0": f"{at:%Y-%m-%d}", f"{prefix}_1": f"{at:%H:%M:%S}"}


def test_admin_shows_a_submission_but_never_edits_its_status(client, users, mini_benchmark,
                                                             django_capture_on_commit_callbacks):
    sub = _scored(mini_benchmark, users["owner"], django_capture_on_commit_callbacks)
    client.force_login(users["organiser"])
    page = client.get(f"/admin/core/submission/{sub.pk}/change/")
    assert page.status_code == 200 and sub.audit_hash in page.content.decode()
    assert 'name="status"' not in page.content.decode()  # shown as text, not a field
    # A hand-made POST changes nothing: the status moves only in submission_set_status.
    resp = client.post(f"/admin/core/submission/{sub.pk}/change/", {
        "status": "failed", "status_reason": "edited by hand", "is_selected": "on", "is_counted": ""})
    assert resp.status_code == 403
    sub.refresh_from_db()
    assert (sub.status, sub.is_selected) == ("scored", False)
    assert client.get("/admin/core/submission/add/").status_code == 403
    assert [e.reason for e in sub.events.all()][-1] == "scored against truth version 1"
    # Records the services derive are shown, never added by hand.
    for model in ("score", "caseresult", "leaderboardrow", "submissionevent", "truthversion", "dailyquota", "stake"):
        assert client.get(f"/admin/core/{model}/").status_code == 200, model
        assert client.get(f"/admin/core/{model}/add/").status_code == 403, model


def test_admin_shows_a_submission_but_never_its_uploaders_note(client, users, mini_benchmark):
    sub = submission_create(user=users["owner"], benchmark=mini_benchmark, data=submission_csv(MINI_ROWS),
                            filename="p.csv", note="tried the wider window, private to me").submission
    client.force_login(users["organiser"])
    page = client.get(f"/admin/core/submission/{sub.pk}/change/").content.decode()
    assert sub.audit_hash in page
    # Staff see the submission, never its note (docs/api.md), in the admin as on the site and the API.
    assert "wider window" not in page
    assert "wider window" not in client.get(f"/submissions/{sub.pk}/").content.decode()


def test_admin_adds_no_round_and_moves_status_and_deadline_through_the_services(client, users, mini_benchmark):
    import datetime as dt

    from django.utils import timezone

    round_ = Round.objects.get(benchmark=mini_benchmark)
    client.force_login(users["organiser"])
    # No round is added by hand, neither on its own page nor among the benchmark's rounds.
    assert client.get("/admin/core/round/add/").status_code == 403
    resp = client.post("/admin/core/round/add/", {"benchmark": mini_benchmark.pk, "number": 2, "status": "open"})
    assert resp.status_code == 403
    page = client.get(f"/admin/core/benchmark/{mini_benchmark.pk}/change/").content.decode()
    assert 'name="rounds-MAX_NUM_FORMS" value="0"' in page or 'name="rounds-TOTAL_FORMS"' not in page
    assert Round.objects.filter(benchmark=mini_benchmark).count() == 1

    # The round's page: status and the fields that define it are shown, not editable.
    page = client.get(f"/admin/core/round/{round_.pk}/change/").content.decode()
    for field in ("status", "number", "benchmark", "is_permanent"):
        assert f'name="{field}"' not in page, field
    later = (timezone.now() + dt.timedelta(days=10)).replace(microsecond=0)
    resp = client.post(f"/admin/core/round/{round_.pk}/change/", {
        "title": "the one round", "status": "resolved", "number": 7, **_admin_datetime("opens_at", round_.opens_at),
        **_admin_datetime("closes_at", later)})
    assert resp.status_code == 302
    round_.refresh_from_db()
    assert (round_.title, round_.status, round_.number, round_.closes_at) == ("the one round", "open", 1, later)
    # Closing by the action (round_close): the deadline becomes the moment it closed.
    before = timezone.now()
    client.post("/admin/core/round/", {"action": "close_rounds", "_selected_action": [round_.pk]})
    round_.refresh_from_db()
    assert round_.status == "closed" and before <= round_.closes_at <= timezone.now()


def test_admin_flags_benchmark_models_through_entrant_flag(client, users, db):
    from leaderboard.core.models import Entrant
    from leaderboard.core.services.entrants import entrant_default

    entrant = entrant_default(users["owner"])
    client.force_login(users["organiser"])
    assert 'name="is_benchmark_model"' not in client.get(f"/admin/core/entrant/{entrant.pk}/change/").content.decode()
    resp = client.post("/admin/core/entrant/", {"action": "flag_benchmark_model", "_selected_action": [entrant.pk]},
                       follow=True)
    assert "1 entrant(s) now benchmark models." in resp.content.decode()
    assert Entrant.objects.get(pk=entrant.pk).is_benchmark_model is True
    client.post("/admin/core/entrant/", {"action": "unflag_benchmark_model", "_selected_action": [entrant.pk]})
    assert Entrant.objects.get(pk=entrant.pk).is_benchmark_model is False



def test_admin_saves_a_closed_rounds_page_whose_deadline_was_not_touched(client, users, mini_benchmark):
    """Closing stamps the deadline with the moment it closed, to the microsecond; the page shows
    it to the second. Saving the page with the deadline as shown is no attempt to move it."""
    round_ = Round.objects.get(benchmark=mini_benchmark)
    client.force_login(users["organiser"])
    client.post("/admin/core/round/", {"action": "close_rounds", "_selected_action": [round_.pk]})
    closed_at = Round.objects.get(pk=round_.pk).closes_at
    page = client.get(f"/admin/core/round/{round_.pk}/change/").content.decode()
    assert f'value="{closed_at:%H:%M:%S}"' in page  # what the organiser sees and sends back
    resp = client.post(f"/admin/core/round/{round_.pk}/change/", {
        "title": "final round", **_admin_datetime("opens_at", round_.opens_at),
        **_admin_datetime("closes_at", closed_at)})
    assert resp.status_code == 302
    saved = Round.objects.get(pk=round_.pk)
    assert saved.title == "final round" and saved.closes_at == closed_at


def test_admin_cannot_rewrite_a_closed_rounds_published_commitment(client, users, mini_benchmark,
                                                                  django_capture_on_commit_callbacks):
    """The commitment is published at close for anyone to check the round against: the round's
    admin page shows it but does not let an organiser type another one in."""
    _scored(mini_benchmark, users["owner"], django_capture_on_commit_callbacks)
    round_ = Round.objects.get(benchmark=mini_benchmark)
    client.force_login(users["organiser"])
    client.post("/admin/core/round/", {"action": "close_rounds", "_selected_action": [round_.pk]})
    published = client.get(f"/api/benchmarks/mini-props/rounds/{round_.number}/committed/").json()["commitment"]
    assert len(published) == 64

    page = client.get(f"/admin/core/round/{round_.pk}/change/").content.decode()
    assert 'name="commitment"' not in page and published in page
    forged = "0" * 64
    resp = client.post(f"/admin/core/round/{round_.pk}/change/", {
        "title": "renamed", "commitment": forged, **_admin_datetime("opens_at", round_.opens_at),
        **_admin_datetime("closes_at", Round.objects.get(pk=round_.pk).closes_at)})
    assert resp.status_code == 302, resp.context["adminform"].form.errors
    assert client.get(f"/api/benchmarks/mini-props/rounds/{round_.number}/committed/").json()["commitment"] == published
    assert Round.objects.get(pk=round_.pk).title == "renamed"


def test_admin_never_deletes_a_submission_the_published_commitment_lists(client, users, mini_benchmark,
                                                                         django_capture_on_commit_callbacks):
    """Deleting an upload after the close would make the round's commitment unverifiable (lb verify-round
    fails) and take its entrant off the board: neither the delete page nor the list action offers it."""
    sub = _scored(mini_benchmark, users["owner"], django_capture_on_commit_callbacks)
    round_ = Round.objects.get(benchmark=mini_benchmark)
    client.force_login(users["organiser"])
    client.post("/admin/core/round/", {"action": "close_rounds", "_selected_action": [round_.pk]})
    committed = client.get(f"/api/benchmarks/mini-props/rounds/{round_.number}/committed/").json()

    assert client.get(f"/admin/core/submission/{sub.pk}/delete/").status_code == 403
    assert client.post(f"/admin/core/submission/{sub.pk}/delete/", {"post": "yes"}).status_code == 403
    listing = client.get("/admin/core/submission/").content.decode()
    assert 'value="delete_selected"' not in listing
    client.post("/admin/core/submission/", {"action": "delete_selected", "_selected_action": [sub.pk], "post": "yes"})
    assert Submission.objects.filter(pk=sub.pk).exists()
    assert client.get(f"/api/benchmarks/mini-props/rounds/{round_.number}/committed/").json() == committed
    assert client.get("/api/benchmarks/mini-props/leaderboard/").json()["count"] == 1


def test_admin_round_page_links_its_universe_to_a_download_that_works(client, users, tmp_path):
    """The round's admin page links the universe file; following the link gives the file
    (uploads are not served under /media/, so a plain file-field link answered 404)."""
    import re

    from leaderboard.core.services.round_engine import round_open
    from tests.support.portfolio import portfolio_benchmark, universe_csv

    bench = portfolio_benchmark(tmp_path)
    round_ = round_open(benchmark=bench, data=universe_csv({"ALPHA": 100.0, "SP500": 4000.0}),
                        filename="options.csv", track="weekly")
    client.force_login(users["organiser"])
    page = client.get(f"/admin/core/round/{round_.pk}/change/").content.decode()
    field = page.split("field-universe", 1)[1].split("field-universe_name", 1)[0]
    links = re.findall(r'<a href="([^"]+)"', field)
    assert links, "no link to the universe on the round's admin page"
    download = client.get(links[0])
    assert download.status_code == 200
    body = b"".join(download.streaming_content) if download.streaming else download.content
    assert b"ALPHA" in body and b"SP500" in body
