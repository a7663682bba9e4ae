"""One way in for predictions (``services/predictions.py``): the page's upload form, the API's
multipart file, its JSON body, a JSON form field, the dry run on both surfaces and round uploads
read and refuse an upload alike."""
from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from leaderboard.core.models import Benchmark, Submission
from tests.support.impact import DEV_PREDICTIONS, write_impact_bundle


@pytest.fixture
def catalysts(db, tmp_path):
    call_command("load_benchmark", str(write_impact_bundle(tmp_path / "b", config={"max_upload_bytes": 2000})),
                 stdout=StringIO())
    return Benchmark.objects.get(slug="catalysts")


def _csv(predictions) -> bytes:
    lines = ["case_id,predicted_impact,confidence"]
    lines += [f"{p['case_id']},{p['predicted_impact']},{p.get('confidence', '')}" for p in predictions]
    return ("\n".join(lines) + "\n").encode()


def test_predictions_dry_run_reads_a_json_form_field_as_uploads_do(catalysts, api_for):
    """The same three dev predictions as a JSON body, as JSON text in a form field and as a file:
    the dry run scores all three alike (2 of 3 exact, by the table in tests/support/impact.py)."""
    client = api_for("owner")
    answers = [
        client.post("/api/benchmarks/catalysts/verify/", {"predictions": DEV_PREDICTIONS}, format="json"),
        client.post("/api/benchmarks/catalysts/verify/", {"predictions": json.dumps(DEV_PREDICTIONS)},
                    format="multipart"),
        client.post("/api/benchmarks/catalysts/verify/", {"file": SimpleUploadedFile("p.csv", _csv(DEV_PREDICTIONS))},
                    format="multipart"),
    ]
    assert [a.status_code for a in answers] == [200, 200, 200], [a.json() for a in answers]
    assert [a.json()["metrics"]["exact_match_accuracy"] for a in answers] == pytest.approx([200 / 3] * 3)


def test_predictions_bad_json_text_is_refused_alike_by_upload_and_dry_run(catalysts, api_for):
    client = api_for("owner")
    bad = json.dumps([{"case_id": "d1", "predicted_impact": "positive\u0000"}])
    answers = [client.post(f"/api/benchmarks/catalysts/{path}/", {"predictions": bad}, format="multipart")
               for path in ("submissions", "verify")]
    assert [a.status_code for a in answers] == [400, 400]
    errors = [a.json()["errors"] for a in answers]
    assert errors[0] == errors[1]
    assert (errors[0][0]["row"], errors[0][0]["column"]) == (1, "predicted_impact")
    assert "U+0000" in errors[0][0]["message"]
    nothing = [client.post(f"/api/benchmarks/catalysts/{path}/", {"entrant": ""}, format="multipart")
               for path in ("submissions", "verify")]
    assert [a.status_code for a in nothing] == [400, 400]
    assert nothing[0].json()["errors"] == nothing[1].json()["errors"]
    assert not Submission.objects.exists()


def test_predictions_an_oversized_file_is_refused_alike_everywhere(catalysts, api_for, client, users):
    """2,000 bytes is this benchmark's cap: every surface answers 413 with the same message."""
    big = _csv(DEV_PREDICTIONS * 60)
    assert len(big) > 2000
    message = f"the file is {len(big):,} bytes; the limit is 2,000 bytes"
    api = api_for("owner")
    for path in ("submissions", "verify"):
        resp = api.post(f"/api/benchmarks/catalysts/{path}/", {"file": SimpleUploadedFile("p.csv", big)},
                        format="multipart")
        assert resp.status_code == 413 and resp.json()["errors"][0]["message"] == message, path
    client.force_login(users["owner"])
    for path in ("submit", "verify"):
        resp = client.post(f"/b/catalysts/{path}/", {"file": SimpleUploadedFile("p.csv", big)})
        assert resp.status_code == 413 and message in resp.content.decode(), path
    assert not Submission.objects.exists()
