"""API answers a script relies on: one `url` per submission everywhere, a 404 that says what was not found."""
from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from tests.conftest import MINI_ROWS, submission_csv


def test_api_submission_url_is_the_same_in_the_upload_answer_the_list_and_the_detail(mini_benchmark, api_for):
    client = api_for("owner")
    upload = client.post(f"/api/benchmarks/{mini_benchmark.slug}/submissions/",
                         {"file": _file()}, format="multipart").json()
    listed = client.get(f"/api/benchmarks/{mini_benchmark.slug}/submissions/").json()["rows"][0]
    detail = client.get(upload["url"]).json()
    assert upload["url"] == listed["url"] == detail["url"]
    assert upload["url"] == f"http://testserver/api/submissions/{upload['id']}/"
    assert listed["page_url"] == detail["page_url"] == f"http://testserver/submissions/{upload['id']}/"


@pytest.mark.parametrize("path", ["/api/submissions/{pk}/", "/api/submissions/{pk}/cases/"])
def test_api_404_of_a_submission_says_what_was_not_found(mini_benchmark, api_for, path):
    owner, outsider = api_for("owner"), api_for("outsider")
    pk = owner.post(f"/api/benchmarks/{mini_benchmark.slug}/submissions/", {"file": _file()},
                    format="multipart").json()["id"]
    for client, asked in ((outsider, pk), (owner, pk + 1000)):  # someone else's, and one that does not exist
        resp = client.get(path.format(pk=asked))
        assert resp.status_code == 404
        body = resp.json()
        assert body["detail"].startswith(f"no submission {asked} of yours")
        assert body["errors"] == [{"row": None, "column": None, "message": body["detail"]}]
        assert "matches the given query" not in body["detail"]
    resp = outsider.post(f"/api/submissions/{pk}/select/")
    assert resp.status_code == 404 and resp.json()["detail"].startswith(f"no submission {pk} of yours")


def test_api_404_of_an_invite_a_webhook_a_delivery_or_a_team_says_what_was_not_found(
        mini_benchmark, api_for, settings):
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = True
    owner, member, outsider = api_for("owner"), api_for("member"), api_for("outsider")
    team = owner.post(f"/api/benchmarks/{mini_benchmark.slug}/teams/", {"name": "Crew"}, format="json").json()
    invite = owner.post(f"/api/teams/{team['id']}/invites/", {"username": "member"}, format="json").json()["id"]
    hook = owner.post("/api/webhooks/", {"url": "http://127.0.0.1:9/hook", "events": ["round.opened"]},
                      format="json").json()["id"]
    asked = [  # (client, method, path, what the answer must begin with): someone else's, and none at all
        (outsider, "post", f"/api/invites/{invite}/accept/", f"no invite {invite} of yours"),
        (outsider, "post", f"/api/invites/{invite}/decline/", f"no invite {invite} of yours"),
        (member, "post", f"/api/invites/{invite + 1000}/accept/", f"no invite {invite + 1000} of yours"),
        (member, "get", f"/api/webhooks/{hook}/", f"no webhook {hook} of yours"),
        (owner, "delete", f"/api/webhooks/{hook + 1000}/", f"no webhook {hook + 1000} of yours"),
        (member, "get", f"/api/webhooks/{hook}/deliveries/", f"no webhook {hook} of yours"),
        (member, "post", f"/api/webhooks/{hook}/deliveries/1/redeliver/", f"no webhook {hook} of yours"),
        (owner, "post", f"/api/webhooks/{hook}/deliveries/999/redeliver/", f"webhook {hook} has no delivery 999"),
        (owner, "get", f"/api/teams/{team['id'] + 1000}/", f"no team {team['id'] + 1000}"),
        (outsider, "post", f"/api/teams/{team['id'] + 1000}/leave/", f"no team {team['id'] + 1000}"),
    ]
    for client, method, path, begins in asked:
        resp = getattr(client, method)(path)
        body = resp.json()
        assert resp.status_code == 404, path
        assert body["detail"].startswith(begins), (path, body["detail"])
        assert body["errors"] == [{"row": None, "column": None, "message": body["detail"]}]
    assert member.get("/api/webhooks/").json() == [] and owner.get(f"/api/webhooks/{hook}/").status_code == 200


def _file():
    return SimpleUploadedFile("p.csv", submission_csv(MINI_ROWS), content_type="text/csv")


@pytest.mark.parametrize("path", ["", "leaderboard/", "leaderboard/?format=csv", "cases/", "teams/", "rounds/1/"])
def test_api_404_of_a_benchmark_names_the_slug_asked(mini_benchmark, api_for, path):
    """A mistyped slug (`lb leaderboard antibody-developabilty`) answered Django's "No Benchmark matches the
    given query.", which names neither the slug nor where the benchmarks are listed."""
    client = api_for("owner")
    resp = client.get(f"/api/benchmarks/mini-prop/{path}")
    assert resp.status_code == 404
    detail = resp.json()["detail"]
    assert detail == "no benchmark 'mini-prop': GET /api/benchmarks/ lists them"
    upload = client.post("/api/benchmarks/mini-prop/submissions/", {"file": _file()}, format="multipart")
    assert upload.status_code == 404 and upload.json()["detail"] == detail


def test_api_404_of_an_unpublished_benchmark_reads_as_one_that_does_not_exist(mini_benchmark, api_for):
    mini_benchmark.is_published = False
    mini_benchmark.save()
    resp = api_for("owner").get(f"/api/benchmarks/{mini_benchmark.slug}/leaderboard/")
    assert resp.status_code == 404
    assert resp.json()["detail"] == f"no benchmark '{mini_benchmark.slug}': GET /api/benchmarks/ lists them"
