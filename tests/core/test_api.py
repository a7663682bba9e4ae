"""The HTTP API as clients use it: uploads, errors, statuses, leaderboards, schema."""
from __future__ import annotations

import hashlib
import io
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from leaderboard.core.models import Round, Submission
from leaderboard.core.services.benchmarks import benchmark_reveal
from leaderboard.core.services.rounds import round_set_status
from tests.conftest import MINI_ROWS, submission_csv

GOOD = submission_csv(MINI_ROWS)
HEADER = b"sequence_id,A,B,fold\n"
LINES = GOOD.decode().splitlines()


def _rows(*replace: tuple[int, str]) -> bytes:
    """The good file with some data lines (1-based after the header) replaced."""
    lines = list(LINES)
    for index, text in replace:
        lines[index] = text
    return ("\n".join(lines) + "\n").encode()


# Each: (name, body, expected status, (row, column) expected among the errors or None, message fragment).
MALFORMED = [
    ("empty file", b"", 400, None, "empty"),
    ("header only", HEADER, 400, None, "no predictions"),
    ("missing column", b"sequence_id,A,fold\n" + b"".join(f"{r['sequence_id']},1,{r['fold']}\n".encode()
                                                          for r in MINI_ROWS), 400, (1, "B"), "missing"),
    ("extra column", GOOD.replace(b"fold\n", b"fold,C\n", 1), 400, (1, "C"), ""),
    ("duplicated column", b"sequence_id,A,A,B,fold\nab00,1,1,1,0\n", 400, (1, "A"), ""),
    ("NaN cell", _rows((1, "ab00,NaN,9.0,0")), 400, (2, "A"), ""),
    ("empty cell", _rows((2, "ab01,,8.0,1")), 400, (3, "A"), ""),
    ("inf cell", _rows((3, "ab02,3.0,inf,2")), 400, (4, "B"), ""),
    ("non-numeric cell", _rows((4, "ab03,abc,6.0,3")), 400, (5, "A"), ""),
    ("unknown id", _rows((5, "zz99,5.0,5.0,4")), 400, (6, "sequence_id"), "zz99"),
    ("duplicate id", _rows((6, "ab00,6.0,4.0,0")), 400, (7, "sequence_id"), "ab00"),
    ("fold differs", _rows((7, "ab06,7.0,3.0,4")), 400, (8, "fold"), ""),
    ("fold not an integer", _rows((8, "ab07,8.0,2.0,1.5")), 400, (9, "fold"), ""),
    ("ragged row", _rows((9, "ab08,9.0,1.0,3,7")), 400, (10, None), ""),
    ("binary junk", b"\x00\x01\x02\xff" * 1000, 400, None, "binary"),
    ("not UTF-8", GOOD.replace(b"ab01", b"ab\xff\xfe1"), 400, None, "UTF-8"),
    ("UTF-32", "sequence_id,A,B,fold\n".encode("utf-32"), 400, None, "UTF-32"),
    ("zip archive", b"PK\x03\x04" + b"\x00" * 100, 400, None, "CSV"),
    ("a million columns", b"sequence_id," + b"x," * 1_000_000 + b"fold\n", 400, None, ""),
    ("one 9 MB line", b"sequence_id,A,B,fold\n" + b"1" * 9_000_000, 400, None, ""),
    ("over 10 MB", GOOD + b"#" * (10 * 1024 * 1024), 413, None, "limit"),
]


@pytest.mark.parametrize("name,body,status,where,fragment", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_api_malformed_upload_gets_4xx_naming_the_problem(mini_benchmark, users, api_for, name, body, status, where,
                                                          fragment):
    client = api_for("owner")
    resp = client.post(f"/api/benchmarks/{mini_benchmark.slug}/submissions/",
                       {"file": SimpleUploadedFile("preds.csv", body, content_type="text/csv")}, format="multipart")
    assert resp.status_code == status, resp.content[:500]
    payload = resp.json()
    assert payload["errors"], payload
    for error in payload["errors"]:
        assert set(error) >= {"row", "column", "message"} and error["message"]
    if where is not None:
        assert any((e["row"], e["column"]) == where for e in payload["errors"]), payload["errors"]
    if fragment:
        assert any(fragment.lower() in e["message"].lower() for e in payload["errors"]), payload["errors"]
    assert payload["remaining_today"] == 5  # rejected uploads never count
    assert not Submission.objects.exists()


def test_api_reports_every_problem_of_a_file_at_once(mini_benchmark, api_for):
    body = _rows((1, "ab00,NaN,9.0,0"), (3, "ab02,x,y,2"), (5, "zz99,5.0,5.0,4"))
    resp = api_for("owner").post(f"/api/benchmarks/{mini_benchmark.slug}/submissions/",
                                 {"file": SimpleUploadedFile("p.csv", body)}, format="multipart")
    where = {(e["row"], e["column"]) for e in resp.json()["errors"]}
    assert {(2, "A"), (4, "A"), (4, "B"), (6, "sequence_id")} <= where
    assert any("ab04" in e["message"] for e in resp.json()["errors"])  # the id that row 6 should have had


def test_api_json_body_accepted_with_status_url_hash_and_remaining(mini_benchmark, users, api_for):
    client = api_for("owner")
    predictions = [{"sequence_id": r["sequence_id"], "A": r["A"], "B": r["B"], "fold": r["fold"]} for r in MINI_ROWS]
    resp = client.post(f"/api/benchmarks/{mini_benchmark.slug}/submissions/", {"predictions": predictions},
                       format="json")
    assert resp.status_code == 202, resp.json()
    body = resp.json()
    assert set(body) == {"id", "status", "url", "audit_hash", "remaining_today"}
    assert body["status"] == "queued" and body["remaining_today"] == 4
    assert re.fullmatch(r"[0-9a-f]{64}", body["audit_hash"])
    detail = client.get(body["url"]).json()
    assert detail["id"] == body["id"] and detail["audit_hash"] == body["audit_hash"]
    assert detail["status"] in ("queued", "scoring", "scored")
    assert {"scores", "errors", "created_at", "scored_at"} <= set(detail)


def test_api_audit_hash_ignores_formatting_but_not_values(mini_benchmark, api_for):
    client = api_for("owner")
    url = f"/api/benchmarks/{mini_benchmark.slug}/submissions/"
    reordered = submission_csv(MINI_ROWS, columns=("fold", "B", "sequence_id", "A")).replace(b"\n", b"\r\n")
    changed = submission_csv(MINI_ROWS, a=[r["A"] + 0.5 for r in MINI_ROWS])
    hashes = [client.post(url, {"file": SimpleUploadedFile("p.csv", body)}, format="multipart").json()["audit_hash"]
              for body in (GOOD, reordered, changed)]
    assert hashes[0] == hashes[1] != hashes[2]
    stored = Submission.objects.order_by("id").first()
    assert stored.audit_hash == hashes[0]
    assert stored.original_name == "p.csv" and stored.size == len(GOOD)
    assert not stored.file.name.endswith("p.csv")  # stored under a generated name
    assert hashlib.sha256(stored.file.read()).hexdigest() != ""  # the original bytes are kept


def test_api_submission_visible_to_owner_and_staff_only(mini_benchmark, users, api_for):
    resp = api_for("owner").post(f"/api/benchmarks/{mini_benchmark.slug}/submissions/",
                                 {"file": SimpleUploadedFile("p.csv", GOOD)}, format="multipart")
    url = f"/api/submissions/{resp.json()['id']}/"
    assert api_for("outsider").get(url).status_code == 404
    assert api_for("organiser").get(url).status_code == 200
    assert APIClient().get(url).status_code in (401, 403)


def test_api_authentication_errors_say_what_to_do(mini_benchmark):
    client = APIClient()
    url = f"/api/benchmarks/{mini_benchmark.slug}/submissions/"
    resp = client.post(url, {"file": SimpleUploadedFile("p.csv", GOOD)}, format="multipart")
    assert resp.status_code == 401 and resp["WWW-Authenticate"] == "Token"
    client.credentials(HTTP_AUTHORIZATION="Token not-a-real-key")
    resp = client.post(url, {"file": SimpleUploadedFile("p.csv", GOOD)}, format="multipart")
    assert resp.status_code == 401
    assert "profile page" in resp.json()["errors"][0]["message"]


def test_api_sixth_upload_gets_429_with_retry_after(mini_benchmark, api_for):
    client = api_for("owner")
    url = f"/api/benchmarks/{mini_benchmark.slug}/submissions/"
    codes = [client.post(url, {"file": SimpleUploadedFile("p.csv", GOOD)}, format="multipart") for _ in range(6)]
    assert [r.status_code for r in codes] == [202] * 5 + [429]
    last = codes[-1]
    assert 0 < int(last["Retry-After"]) <= 86400
    assert "resets at" in last.json()["errors"][0]["message"]


def test_api_benchmark_detail_and_list(mini_benchmark):
    client = APIClient()
    listing = client.get("/api/benchmarks/").json()
    assert [b["slug"] for b in listing] == [mini_benchmark.slug]
    detail = client.get(f"/api/benchmarks/{mini_benchmark.slug}/").json()
    assert detail["kind"] == "properties" and detail["ranking_metric"] == "score"
    assert [p["name"] for p in detail["config"]["properties"]] == ["A", "B"]
    assert detail["current_round"]["status"] == "open"
    assert detail["remaining_today"] is None  # anonymous
    assert "sequence_id" in detail["format"]
    assert client.get("/api/benchmarks/nope/").status_code == 404


def test_api_case_rows_show_truth_after_close_and_reveal(mini_benchmark, users, api_for,
                                                         django_capture_on_commit_callbacks):
    client = api_for("owner")
    with django_capture_on_commit_callbacks(execute=True):
        sub_id = client.post(f"/api/benchmarks/{mini_benchmark.slug}/submissions/",
                             {"file": SimpleUploadedFile("p.csv", GOOD)}, format="multipart").json()["id"]
    assert client.get(f"/api/submissions/{sub_id}/").json()["status"] == "scored"

    def rows():
        return {r["case_id"]: r for r in client.get(f"/api/submissions/{sub_id}/cases/").json()}

    # Open: every row the prediction only.
    assert {tuple(r) for r in rows().values()} == {("case_id", "split", "fold", "predicted:A", "predicted:B")}
    assert {r["split"] for r in rows().values()} == {"test"}
    round_set_status(round_=Round.objects.get(benchmark=mini_benchmark), status="closed")
    by_split = {}
    for r in rows().values():
        by_split.setdefault(r["split"], []).append(r)
    assert len(by_split["public"]) == 7 and all("actual:A" in r for r in by_split["public"])
    assert len(by_split["test"]) == 3 and not any("actual:A" in r for r in by_split["test"])
    benchmark_reveal(benchmark=mini_benchmark)
    assert sorted((r["split"], "actual:A" in r) for r in rows().values()) == (
        [("private", True)] * 3 + [("public", True)] * 7)
    csv_text = client.get(f"/api/submissions/{sub_id}/cases/", {"format": "csv"}).content.decode()
    assert csv_text.splitlines()[0].startswith("case_id")


def test_api_cases_list_shows_no_truth(mini_benchmark):
    rows = APIClient().get(f"/api/benchmarks/{mini_benchmark.slug}/cases/").json()
    assert rows[0] == {"case_id": "ab00", "split": "test", "fold": 0}
    text = APIClient().get(f"/api/benchmarks/{mini_benchmark.slug}/cases/", {"format": "csv"}).content.decode()
    assert text.splitlines()[:2] == ["case_id,split,fold", "ab00,test,0"]


def test_api_schema_is_openapi3_and_docs_need_no_cdn(db):
    client = APIClient()
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    assert schema["openapi"].startswith("3.")
    for path in ("/api/benchmarks/", "/api/benchmarks/{slug}/leaderboard/", "/api/benchmarks/{slug}/submissions/",
                 "/api/submissions/{id}/", "/api/submissions/{id}/cases/"):
        assert path in schema["paths"], sorted(schema["paths"])
    assert schema["components"]["securitySchemes"]["tokenAuth"] == {
        "type": "apiKey", "in": "header", "name": "Authorization",
        "description": schema["components"]["securitySchemes"]["tokenAuth"]["description"]}
    docs = client.get("/api/docs/").content.decode()
    assert not re.search(r"(src|href)=\"https?://", docs), "the docs page must not load anything from a CDN"


def test_api_oversized_json_body_gets_413_in_the_error_shape(mini_benchmark, api_for, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    body = '{"predictions": [' + ",".join(['{"sequence_id": "ab00", "A": 1, "B": 2, "fold": 0}'] * 100) + "]}"
    resp = api_for("owner").generic("POST", f"/api/benchmarks/{mini_benchmark.slug}/submissions/", body,
                                    content_type="application/json")
    assert resp.status_code == 413
    assert "as a file" in resp.json()["errors"][0]["message"]


@pytest.mark.parametrize("body,fragment", [
    ({"predictions": "not a list"}, "list"),
    ({"predictions": [{"sequence_id": "ab00"}]}, "missing"),
    ({"predictions": [["ab00", 1, 2, 0]]}, "object"),
    ({"something": []}, "predictions"),
], ids=["not a list", "missing fields", "rows not objects", "no predictions key"])
def test_api_malformed_json_body_gets_400(mini_benchmark, api_for, body, fragment):
    resp = api_for("owner").post(f"/api/benchmarks/{mini_benchmark.slug}/submissions/", body, format="json")
    assert resp.status_code == 400, resp.content[:300]
    assert any(fragment in e["message"].lower() for e in resp.json()["errors"]), resp.json()
    assert not Submission.objects.exists()


def test_api_invalid_json_syntax_gets_400_in_the_error_shape(mini_benchmark, api_for):
    resp = api_for("owner").generic("POST", f"/api/benchmarks/{mini_benchmark.slug}/submissions/", "{oops",
                                    content_type="application/json")
    assert resp.status_code == 400 and resp.json()["errors"][0]["message"]


def test_api_schema_generates_without_warnings(db):
    from django.core.management import call_command

    call_command("spectacular", "--validate", "--fail-on-warn", stdout=io.StringIO())
