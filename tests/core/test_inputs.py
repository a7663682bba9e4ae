"""Hostile input is answered 4xx naming the field, never 500 (issue 14, point 6).

NUL and other control characters, lone surrogates, JSON nested 1,000 deep and
over-long fields used to reach PostgreSQL (which refuses a NUL in any string)
or Python's recursive JSON decoder. These requests are the ones from the issue.
"""
from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile

from leaderboard.core.models import Entrant, Submission
from tests.conftest import MINI_ROWS, submission_csv
from tests.support.impact import PREDICTIONS, write_impact_bundle

DEEP = "[" * 1000 + "]" * 1000


@pytest.fixture
def impact(db, tmp_path):
    from leaderboard.core.services.benchmarks import benchmark_load_bundle

    return benchmark_load_bundle(write_impact_bundle(tmp_path / "impact")).benchmark


def _errors(resp) -> list[dict]:
    assert resp["Content-Type"].startswith("application/json"), resp.content[:300]
    return resp.json()["errors"]


@pytest.mark.parametrize("path", [
    "/b/mini-props/cases/x%00y/",          # the request, no login needed
    "/b/mini-props/cases/x%01y/",
    "/b/mini-props/cases/%7F/",
    "/b/mini-props/%00/",
    "/submissions/1%00/",
])
def test_inputs_control_character_in_a_page_path_is_404(client, mini_benchmark, path):
    assert client.get(path).status_code == 404


def test_inputs_control_character_in_an_api_path_is_404_json(client, mini_benchmark):
    resp = client.get("/api/benchmarks/mini-props/cases/%00/")
    assert resp.status_code == 404 and _errors(resp)


@pytest.mark.parametrize("query", ["split=%00", "format=c%00sv", "submission=%00", "x%00=1"])
def test_inputs_nul_in_a_query_parameter_is_400(client, api_for, mini_benchmark, query):
    page = client.get(f"/b/mini-props/?{query}")
    assert page.status_code == 400
    api = api_for("owner").get(f"/api/benchmarks/mini-props/leaderboard/?{query}")
    assert api.status_code == 400 and "control character U+0000" in _errors(api)[0]["message"]


def test_inputs_case_page_with_a_non_ascii_digit_submission_id_is_not_a_500(client, users, mini_benchmark):
    client.force_login(users["owner"])
    assert client.get("/b/mini-props/cases/ab00/?submission=%C2%B2").status_code == 200  # "²".isdigit()


@pytest.mark.parametrize("entrant", ["own\x00er", "own\x1ber", "\ud800", "x" * 81])
def test_inputs_bad_entrant_in_a_json_upload_is_400_naming_entrant(api_for, impact, entrant):
    body = json.dumps({"predictions": PREDICTIONS, "entrant": entrant})  # \u escapes for NUL and surrogates
    resp = api_for("owner").generic("POST", "/api/benchmarks/catalysts/submissions/", body,
                                    content_type="application/json")
    assert resp.status_code == 400, resp.content[:300]
    assert _errors(resp)[0]["column"] == "entrant"
    assert not Submission.objects.exists()


@pytest.mark.parametrize("entrant", ["own\x00er", "x" * 81, "²"])
def test_inputs_bad_entrant_in_a_multipart_upload_is_400_naming_entrant(api_for, mini_benchmark, entrant):
    resp = api_for("owner").post(
        "/api/benchmarks/mini-props/submissions/",
        {"file": SimpleUploadedFile("p.csv", submission_csv(MINI_ROWS)), "entrant": entrant}, format="multipart")
    assert resp.status_code == 400, resp.content[:300]
    assert _errors(resp)[0]["column"] == "entrant"
    assert not Submission.objects.exists()


def test_inputs_json_nested_1000_deep_is_400_on_submissions_and_verify(api_for, impact):
    client = api_for("owner")
    for path in ("/api/benchmarks/catalysts/submissions/", "/api/benchmarks/catalysts/verify/"):
        for body in (DEEP, '{"predictions": ' + DEEP + "}"):
            resp = client.generic("POST", path, body, content_type="application/json")
            assert resp.status_code == 400, (path, resp.content[:300])
            assert "levels deep; at most 20 allowed" in _errors(resp)[0]["message"]
    # The same as a multipart field carrying JSON text.
    resp = client.post("/api/benchmarks/catalysts/submissions/", {"predictions": DEEP}, format="multipart")
    assert resp.status_code == 400 and _errors(resp)[0]["column"] == "predictions"
    assert not Submission.objects.exists()


@pytest.mark.parametrize("value,fragment", [("c1\x00", "U+0000"), ("\ud83d", "lone surrogate U+D83D"),
                                            ("c\x07", "U+0007")])
def test_inputs_control_characters_inside_predictions_name_the_row_and_column(api_for, impact, value, fragment):
    predictions = [dict(p) for p in PREDICTIONS]
    predictions[2]["case_id"] = value
    body = json.dumps({"predictions": predictions})  # \u escapes: valid JSON, bad text
    resp = api_for("owner").generic("POST", "/api/benchmarks/catalysts/submissions/", body,
                                    content_type="application/json")
    assert resp.status_code == 400, resp.content[:300]
    error = _errors(resp)[0]
    assert (error["row"], error["column"]) == (3, "case_id") and fragment in error["message"]


def test_inputs_control_character_in_a_json_key_is_400(api_for, impact):
    resp = api_for("owner").generic("POST", "/api/benchmarks/catalysts/verify/",
                                    '{"predictions": [], "a\\u0000b": 1}', content_type="application/json")
    assert resp.status_code == 400 and "a key contains" in _errors(resp)[0]["message"]


def test_inputs_nul_in_an_uploaded_file_name_is_dropped(api_for, mini_benchmark):
    resp = api_for("owner").post("/api/benchmarks/mini-props/submissions/",
                                 {"file": SimpleUploadedFile("pre\x00ds.csv", submission_csv(MINI_ROWS))},
                                 format="multipart")
    assert resp.status_code == 202, resp.content[:300]
    assert "\x00" not in Submission.objects.get().original_name


def test_inputs_signup_with_the_longest_username_gets_a_shortened_entrant(client, db):
    username = "u" * 150  # Django allows 150; an entrant name at most 80
    resp = client.post("/accounts/signup/", {"username": username, "email": "longest@example.org", "password1": "a-long-passphrase-9",
                                             "password2": "a-long-passphrase-9"})
    assert resp.status_code == 302
    assert Entrant.objects.get(owner__username=username).name == "u" * 80


def test_inputs_signup_with_an_overlong_email_is_400(client, db):
    resp = client.post("/accounts/signup/", {"username": "newbie", "email": "a" * 250 + "@example.org",
                                             "password1": "a-long-passphrase-9", "password2": "a-long-passphrase-9"})
    assert resp.status_code == 400
    assert not get_user_model().objects.filter(username="newbie").exists()


@pytest.mark.parametrize("field,value", [("name", "bad\x00name"), ("name", "n" * 81),
                                         ("description", "d" * 301), ("description", "nul\x00")])
def test_inputs_profile_entrant_form_refuses_bad_fields_with_400(client, users, field, value):
    client.force_login(users["owner"])
    data = {"action": "create_entrant", "name": "fine-name", "description": ""} | {field: value}
    assert client.post("/accounts/profile/", data).status_code == 400
    assert not Entrant.objects.filter(owner=users["owner"], name="fine-name").exists()


@pytest.mark.parametrize("token", ["abc", "²", "9" * 30, "1\x00"])
def test_inputs_profile_revoke_with_a_malformed_token_id_is_not_a_500(client, users, token):
    client.force_login(users["owner"])
    assert client.post("/accounts/profile/", {"action": "revoke_token", "token": token}).status_code == 302
