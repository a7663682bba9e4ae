"""What API clients rely on beyond single answers: an upload's note, one's submissions paged like the boards
(``previous`` and a ``Link`` header, bounded queries), the open round in the benchmark list, the RateLimit and
daily-quota headers, and the version handshake's ``X-Min-Client-Version``."""
from __future__ import annotations

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test.utils import CaptureQueriesContext

from leaderboard.core.models import DailyQuota, Round, Submission
from leaderboard.core.services.rounds import round_set_status
from leaderboard.core.services.submissions import submission_score
from leaderboard.core.services.teams import invite_accept, team_create, team_invite
from tests.conftest import MINI_ROWS, submission_csv

GOOD = submission_csv(MINI_ROWS)
JSON_ROWS = [{k: r[k] for k in ("sequence_id", "A", "B", "fold")} for r in MINI_ROWS]


def _url(benchmark) -> str:
    return f"/api/benchmarks/{benchmark.slug}/submissions/"


def _upload(client, benchmark, **fields):
    return client.post(_url(benchmark), {"file": SimpleUploadedFile("p.csv", GOOD), **fields}, format="multipart")


def test_api_note_from_a_form_field_or_a_json_body_is_shown_to_its_uploader_alone(mini_benchmark, api_for):
    owner = api_for("owner")
    first = _upload(owner, mini_benchmark, note="  ridge, alpha=0.3  ")
    second = owner.post(_url(mini_benchmark), {"predictions": JSON_ROWS, "note": "the same as JSON"}, format="json")
    assert first.status_code == second.status_code == 202
    mine = owner.get(f"/api/submissions/{first.json()['id']}/").json()
    assert mine["note"] == "ridge, alpha=0.3"  # surrounding blanks dropped
    listed = owner.get(_url(mini_benchmark)).json()["rows"]
    assert [s["note"] for s in listed] == ["the same as JSON", "ridge, alpha=0.3"]
    # Staff see the submission, never the note.
    assert api_for("organiser").get(f"/api/submissions/{first.json()['id']}/").json()["note"] is None
    assert Submission.objects.get(pk=first.json()["id"]).note == "ridge, alpha=0.3"


def test_api_note_is_hidden_from_teammates(mini_benchmark, users, api_for):
    team = team_create(user=users["owner"], benchmark=mini_benchmark, name="Two")
    invite = team_invite(team=team, by=users["owner"], username="member")
    invite_accept(invite_id=invite.pk, user=users["member"])
    sub_id = _upload(api_for("member"), mini_benchmark, note="member's idea").json()["id"]
    seen = api_for("owner").get(f"/api/submissions/{sub_id}/").json()
    assert seen["uploaded_by"] == "member" and seen["note"] is None
    assert api_for("member").get(f"/api/submissions/{sub_id}/").json()["note"] == "member's idea"


def test_api_note_over_1000_characters_is_refused_and_counts_nothing(mini_benchmark, users, api_for):
    owner = api_for("owner")
    resp = _upload(owner, mini_benchmark, note="x" * 1001)
    assert resp.status_code == 400
    (error,) = resp.json()["errors"]
    assert error["column"] == "note" and "1,001 characters" in error["message"] and "1,000" in error["message"]
    assert resp["X-Daily-Remaining"] == "5" and resp.json()["remaining_today"] == 5
    assert not Submission.objects.exists() and not DailyQuota.objects.filter(used__gt=0).exists()
    assert _upload(owner, mini_benchmark, note="y" * 1000).status_code == 202  # exactly the cap is fine


def test_pages_note_from_the_form_shown_on_the_uploader_pages_only(mini_benchmark, users, client):
    client.force_login(users["owner"])
    resp = client.post(f"/b/{mini_benchmark.slug}/submit/",
                       {"file": SimpleUploadedFile("p.csv", GOOD), "note": "first try <b>bold</b>"})
    assert resp.status_code == 302, resp.content.decode()[-2000:]
    detail = client.get(resp["Location"]).content.decode()
    assert "first try &lt;b&gt;bold&lt;/b&gt;" in detail and "only you see it" in detail
    assert "first try &lt;b&gt;" in client.get("/submissions/").content.decode()
    too_long = client.post(f"/b/{mini_benchmark.slug}/submit/",
                           {"file": SimpleUploadedFile("p.csv", GOOD), "note": "z" * 1001})
    assert too_long.status_code == 400 and "at most 1000 characters" in too_long.content.decode()
    client.force_login(users["organiser"])
    assert "first try" not in client.get(resp["Location"]).content.decode()


def test_api_my_submissions_page_like_the_boards_with_previous_and_a_link_header(mini_benchmark, api_for):
    owner = api_for("owner")
    ids = [_upload(owner, mini_benchmark).json()["id"] for _ in range(5)]
    newest_first = ids[::-1]
    first = owner.get(_url(mini_benchmark), {"page_size": 2})
    body = first.json()
    assert body["count"] == 5 and body["page"] == 1 and body["page_size"] == 2 and body["previous"] is None
    assert [s["id"] for s in body["rows"]] == newest_first[:2]
    assert body["next"] == f"http://testserver{_url(mini_benchmark)}?page=2&page_size=2"
    links = {rel: url for url, rel in re.findall(r'<([^>]+)>; rel="(\w+)"', first["Link"])}
    assert links == {"first": f"http://testserver{_url(mini_benchmark)}?page=1&page_size=2",
                     "next": body["next"], "last": f"http://testserver{_url(mini_benchmark)}?page=3&page_size=2"}
    middle = owner.get(body["next"]).json()
    assert [s["id"] for s in middle["rows"]] == newest_first[2:4]
    assert middle["previous"] == links["first"]
    last = owner.get(middle["next"])
    assert [s["id"] for s in last.json()["rows"]] == newest_first[4:] and last.json()["next"] is None
    assert 'rel="next"' not in last["Link"] and 'rel="prev"' in last["Link"]
    bad = owner.get(_url(mini_benchmark), {"page_size": 5000})
    assert bad.status_code == 400 and bad.json()["errors"][0]["column"] == "page_size"


def test_api_my_submissions_queries_do_not_grow_with_the_page(mini_benchmark, api_for):
    owner = api_for("owner")

    def queries() -> int:
        with CaptureQueriesContext(connection) as ctx:
            assert owner.get(_url(mini_benchmark)).status_code == 200
        return len(ctx.captured_queries)

    def scored_upload() -> None:
        submission_score(submission_id=_upload(owner, mini_benchmark).json()["id"])  # scores to read

    scored_upload()
    one = queries()
    for _ in range(4):
        scored_upload()
    assert Submission.objects.filter(status="scored").count() == 5
    assert queries() == one


def test_api_benchmark_list_names_the_open_round(mini_benchmark, api_for):
    client = api_for("outsider")
    (listed,) = client.get("/api/benchmarks/").json()
    assert listed["open_round"] == 1 and listed["current_round"]["number"] == 1
    round_set_status(round_=Round.objects.get(benchmark=mini_benchmark), status=Round.Status.CLOSED)
    (listed,) = client.get("/api/benchmarks/").json()
    assert listed["open_round"] is None and listed["current_round"] is None


def test_api_ratelimit_and_daily_headers(mini_benchmark, api_for, settings):
    anonymous = api_for("outsider").__class__()  # an APIClient with no token: the anon rate
    first, second = anonymous.get("/api/benchmarks/"), anonymous.get("/api/benchmarks/")
    anon_limit = int(settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]["anon"].split("/")[0])
    assert first["RateLimit-Limit"] == str(anon_limit)
    assert (int(first["RateLimit-Remaining"]), int(second["RateLimit-Remaining"])) == (anon_limit - 1, anon_limit - 2)
    assert 0 < int(first["RateLimit-Reset"]) <= 60  # the window is a minute

    owner = api_for("owner")
    uploads = [_upload(owner, mini_benchmark) for _ in range(6)]
    # Of the two throttles on an upload, the upload scope (120/min) has fewer left than the user's (1200/min).
    assert uploads[0]["RateLimit-Limit"] == "120" and uploads[0]["RateLimit-Remaining"] == "119"
    assert [(r.status_code, r["X-Daily-Limit"], r["X-Daily-Remaining"]) for r in uploads] == [
        (202, "5", "4"), (202, "5", "3"), (202, "5", "2"), (202, "5", "1"), (202, "5", "0"), (429, "5", "0")]


@pytest.mark.parametrize("body", ['{"predictions": [', '{"predictions": [], "note": "a\\u0000b"}'])
def test_an_upload_whose_body_cannot_be_read_still_tells_the_daily_quota(mini_benchmark, api_for, body):
    owner = api_for("owner")
    assert _upload(owner, mini_benchmark).status_code == 202  # 4 of 5 left
    resp = owner.post(_url(mini_benchmark), body, content_type="application/json")
    assert resp.status_code == 400 and resp.json()["errors"]
    # docs/api.md: every answer to an upload (202, 400, 409, 429) carries the quota; nothing was counted.
    assert (resp["X-Daily-Limit"], resp["X-Daily-Remaining"], resp.json()["remaining_today"]) == ("5", "4", 4)


def test_api_answers_carry_the_oldest_client_they_serve(mini_benchmark, client, settings):
    settings.MIN_CLIENT_VERSION = "0.3.1"
    assert client.get("/api/benchmarks/")["X-Min-Client-Version"] == "0.3.1"
    assert client.get("/api/no-such-thing/")["X-Min-Client-Version"] == "0.3.1"  # errors too
    assert "X-Min-Client-Version" not in client.get("/")


@pytest.mark.parametrize("note", [["a", "list"], "nul\x00inside"])
def test_api_note_that_is_not_plain_text_is_refused(mini_benchmark, api_for, note):
    resp = api_for("owner").post(_url(mini_benchmark), {"predictions": JSON_ROWS, "note": note}, format="json")
    assert resp.status_code == 400 and resp.json()["errors"][0]["column"] == "note"


@pytest.mark.parametrize("note, json_type", [(["a", "list"], "array"), (5, "number"), (True, "boolean"),
                                             ({"a": 1}, "object")])
def test_api_note_of_another_json_type_is_named_in_json_words(mini_benchmark, api_for, note, json_type):
    resp = api_for("owner").post(_url(mini_benchmark), {"predictions": JSON_ROWS, "note": note}, format="json")
    assert resp.status_code == 400
    assert resp.json()["errors"][0]["message"] == f"note must be text (a JSON string), not {json_type}"


def test_api_note_on_a_portfolio_json_body_and_a_round_submission(tmp_path, api_for):
    from leaderboard.core.services.round_engine import round_open
    from tests.support.portfolio import portfolio, portfolio_benchmark, universe_csv

    benchmark = portfolio_benchmark(tmp_path)
    round_open(benchmark=benchmark, data=universe_csv({"ALPHA": 100.0, "SP500": 5000.0}), filename="u.csv",
               track="weekly")
    owner = api_for("owner")
    resp = owner.post(_url(benchmark), {**portfolio({"ALPHA": 60, "CASH": 40}), "note": "sixty-forty"},
                      format="json")
    assert resp.status_code == 202, resp.json()
    shown = owner.get(f"/api/submissions/{resp.json()['id']}/").json()
    assert shown["status"] == "accepted" and shown["note"] == "sixty-forty"
    assert owner.get(_url(benchmark)).json()["rows"][0]["note"] == "sixty-forty"


def test_api_me_says_who_the_token_belongs_to(mini_benchmark, users, api_for):
    team = team_create(user=users["owner"], benchmark=mini_benchmark, name="Two")
    me = api_for("owner").get("/api/me/").json()
    assert me["username"] == "owner" and me["is_staff"] is False and me["can_upload"] is True
    assert me["teams"] == [{"id": team.pk, "name": "Two", "benchmark": mini_benchmark.slug}]
    assert api_for("organiser").get("/api/me/").json()["is_staff"] is True
    assert api_for("owner").__class__().get("/api/me/").status_code == 401
