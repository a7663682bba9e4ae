"""Server-rendered pages: each works, and its query count does not grow with the data."""
from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test.utils import CaptureQueriesContext

from leaderboard.core import selectors
from leaderboard.core.models import ApiToken, Entrant, Submission
from leaderboard.core.services.submissions import submission_score
from leaderboard.core.services.uploads import submission_create
from tests.conftest import MINI_ROWS, submission_csv


def _scored_entrants(benchmark, n: int, start: int = 0):
    User = get_user_model()
    for i in range(start, start + n):
        user = User.objects.create_user(f"p{i}")
        a = [r["A"] + (j * i) % 3 for j, r in enumerate(MINI_ROWS)]
        sub = submission_create(user=user, benchmark=benchmark, data=submission_csv(MINI_ROWS, a=a),
                                filename="p.csv").submission
        submission_score(submission_id=sub.pk)


def _queries(client, url) -> int:
    with CaptureQueriesContext(connection) as ctx:
        resp = client.get(url)
    assert resp.status_code == 200, resp.content[:300]
    return len(ctx.captured_queries)


@pytest.mark.parametrize("url", ["/", "/b/mini-props/", "/api/benchmarks/mini-props/leaderboard/",
                                 "/api/benchmarks/"])
def test_pages_leaderboard_queries_do_not_grow_with_entrants(client, mini_benchmark, url):
    _scored_entrants(mini_benchmark, 2)
    few = _queries(client, url)
    _scored_entrants(mini_benchmark, 10, start=2)
    many = _queries(client, url)
    assert many == few, f"{url}: {few} queries with 2 entrants, {many} with 12"
    assert many <= 12


def test_pages_my_submissions_queries_do_not_grow(client, mini_benchmark, users):
    client.force_login(users["owner"])
    for _ in range(2):
        sub = submission_create(user=users["owner"], benchmark=mini_benchmark, data=submission_csv(MINI_ROWS),
                                filename="p.csv").submission
        submission_score(submission_id=sub.pk)
    few = _queries(client, "/submissions/")
    for _ in range(3):
        sub = submission_create(user=users["owner"], benchmark=mini_benchmark, data=submission_csv(MINI_ROWS),
                                filename="p.csv").submission
        submission_score(submission_id=sub.pk)
    many = _queries(client, "/submissions/")
    assert many == few and many <= 12
    detail = _queries(client, f"/submissions/{sub.pk}/")
    assert detail <= 20


def test_pages_leaderboard_shows_entrants_in_rank_order(client, mini_benchmark):
    _scored_entrants(mini_benchmark, 3)
    ranked = [r.entrant.name for r in selectors.leaderboard_rows(mini_benchmark)]
    assert sorted(ranked) == ["p0", "p1", "p2"]
    html = client.get("/b/mini-props/").content.decode()
    positions = [html.index(f">{name}<") for name in ranked]
    assert positions == sorted(positions)
    assert "Download an example file" in html or "example" in html.lower()


def test_pages_submit_form_shows_errors_by_row_and_column_and_remaining(client, mini_benchmark, users):
    client.force_login(users["owner"])
    page = client.get("/b/mini-props/submit/").content.decode()
    assert "5" in page and "remaining" in page.lower()
    bad = submission_csv(MINI_ROWS).replace(b"ab03,4.0", b"ab03,oops")
    resp = client.post("/b/mini-props/submit/", {"file": SimpleUploadedFile("bad.csv", bad)})
    assert resp.status_code == 400
    html = resp.content.decode()
    assert "oops" in html and ">5<" in html.replace(" ", "")  # row 5 of the file named in the table
    resp = client.post("/b/mini-props/submit/", {"file": SimpleUploadedFile("ok.csv", submission_csv(MINI_ROWS))})
    assert resp.status_code == 302
    sub = Submission.objects.get()
    assert resp["Location"] == f"/submissions/{sub.pk}/"


def test_pages_submit_past_the_limit_says_when_it_resets(client, mini_benchmark, users):
    client.force_login(users["owner"])
    for _ in range(5):
        client.post("/b/mini-props/submit/", {"file": SimpleUploadedFile("ok.csv", submission_csv(MINI_ROWS))})
    resp = client.post("/b/mini-props/submit/", {"file": SimpleUploadedFile("ok.csv", submission_csv(MINI_ROWS))})
    assert resp.status_code == 429 and int(resp["Retry-After"]) > 0
    assert "resets at" in resp.content.decode()


def test_pages_submission_detail_is_private_to_its_owner(client, mini_benchmark, users):
    sub = submission_create(user=users["owner"], benchmark=mini_benchmark, data=submission_csv(MINI_ROWS),
                            filename="p.csv").submission
    client.force_login(users["outsider"])
    assert client.get(f"/submissions/{sub.pk}/").status_code == 404
    client.force_login(users["owner"])
    html = client.get(f"/submissions/{sub.pk}/").content.decode()
    assert sub.audit_hash in html and "queued" in html


def test_pages_signup_login_logout(client, db):
    resp = client.post("/accounts/signup/", {"username": "newbie", "email": "newbie@example.org", "password1": "a-long-passphrase-9",
                                             "password2": "a-long-passphrase-9"})
    assert resp.status_code == 302
    assert Entrant.objects.filter(owner__username="newbie", name="newbie").exists()
    client.post("/accounts/logout/")
    assert client.get("/accounts/profile/").status_code == 302
    resp = client.post("/accounts/login/", {"username": "newbie", "password": "a-long-passphrase-9"})
    assert resp.status_code == 302
    assert client.get("/accounts/profile/").status_code == 200


def test_pages_logout_opened_by_address_shows_its_button_and_logs_out_only_on_post(users):
    """/accounts/logout/ typed or followed as a link answered a blank 405 (Django's LogoutView takes POST
    only). It is now a page with the Log out button; the GET itself logs nobody out (a link on another site
    could), and a visitor not logged in goes home."""
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    assert client.get("/accounts/logout/")["Location"] == "/"
    client.force_login(users["member"])
    page = client.get("/accounts/logout/")
    html = page.content.decode()
    assert page.status_code == 200 and "You are logged in as <strong>member</strong>" in html
    assert client.get("/accounts/profile/").status_code == 200  # still logged in
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1)
    assert client.post("/accounts/logout/", {"csrfmiddlewaretoken": token}).status_code == 302
    assert client.get("/accounts/profile/").status_code == 302  # logged out


def test_pages_profile_creates_shows_once_and_revokes_tokens(client, users):
    client.force_login(users["owner"])
    created = client.post("/accounts/profile/", {"action": "create_token", "name": "laptop"})
    html = created.content.decode()
    # The one page that shows the key may not be kept by the browser (Back showed the key again) or a proxy.
    assert "no-store" in created["Cache-Control"] and "private" in created["Cache-Control"]
    assert "no-store" not in client.get("/accounts/profile/").get("Cache-Control", "")  # only that answer
    token = ApiToken.objects.get(user=users["owner"])
    key = re.search(rf"\b{token.prefix}[0-9a-f]{{32}}\b", html).group(0)
    assert "laptop" in html
    assert key not in client.get("/accounts/profile/").content.decode()  # shown once
    client.post("/accounts/profile/", {"action": "revoke_token", "token": token.pk})
    assert not ApiToken.objects.exists()


def test_pages_profile_creates_a_second_entrant(client, users):
    client.force_login(users["owner"])
    client.post("/accounts/profile/", {"action": "create_entrant", "name": "owner-gbm", "description": "trees"})
    assert list(Entrant.objects.filter(owner=users["owner"]).values_list("name", flat=True)) == ["owner", "owner-gbm"]
    resp = client.post("/accounts/profile/", {"action": "create_entrant", "name": "OWNER-gbm"})
    assert "taken" in resp.content.decode()


def test_pages_example_file_and_cases_download(client, mini_benchmark, users):
    resp = client.get("/b/mini-props/example/")
    assert resp.status_code == 200
    client.force_login(users["owner"])
    upload = client.post("/b/mini-props/submit/", {"file": SimpleUploadedFile("example.csv", resp.content)})
    assert upload.status_code == 302, "the example file must itself be a valid submission"
    cases = client.get("/b/mini-props/cases/")
    assert cases.status_code == 200 and "ab09" in cases.content.decode()
    assert client.get("/b/mini-props/cases/?format=csv").content.decode().startswith("case_id,split,fold")


def test_pages_admin_lists_every_model(client, users, mini_benchmark):
    client.force_login(users["organiser"])
    for model in ("benchmark", "round", "case", "truthversion", "truthvalue", "entrant", "stake", "submission",
                  "score", "caseresult", "leaderboardrow", "dailyquota", "apitoken", "submissionevent"):
        assert client.get(f"/admin/core/{model}/").status_code == 200, model
    assert client.get(f"/admin/core/benchmark/{mini_benchmark.pk}/truth/").status_code == 200


def test_pages_login_is_throttled_per_address(client, users):
    from leaderboard.core.throttles import LoginThrottle

    limit = int(LoginThrottle().get_rate().split("/")[0])
    codes = [client.post("/accounts/login/", {"username": "owner", "password": "wrong"}).status_code
             for _ in range(limit + 1)]
    assert codes[:limit] == [200] * limit  # the form again, with its error
    assert codes[-1] == 429
    resp = client.post("/accounts/login/", {"username": "owner", "password": "pw-owner-123"})
    assert resp.status_code == 429 and int(resp["Retry-After"]) > 0


def test_pages_submit_over_the_size_cap_says_the_limit(client, users, tmp_path):
    from leaderboard.core.services.benchmarks import benchmark_load_bundle
    from tests.conftest import write_properties_bundle

    benchmark = benchmark_load_bundle(write_properties_bundle(
        tmp_path / "small", MINI_ROWS, slug="tiny-cap", extra_config={"max_upload_bytes": 1024})).benchmark
    client.force_login(users["owner"])
    big = submission_csv(MINI_ROWS) + b"\n" * 1000
    resp = client.post(f"/b/{benchmark.slug}/submit/", {"file": SimpleUploadedFile("p.csv", big)})
    assert resp.status_code == 413
    assert f"the file is {len(big):,} bytes; the limit is 1,024 bytes" in resp.content.decode()
    assert not Submission.objects.exists()
