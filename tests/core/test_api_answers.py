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


def _file():
    return SimpleUploadedFile("p.csv", submission_csv(MINI_ROWS), content_type="text/csv")
