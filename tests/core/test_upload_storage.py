"""An upload the server cannot write to its media folder (the disk is full, read-only, or the folder
is not a folder): 503 with Retry-After and a message naming the cause, through the API and the form,
with nothing stored or counted. It was a bare 500 "Internal Server Error", which the `lb` client
reported as a server bug and a participant could not tell from a rejected file."""
from __future__ import annotations

import os

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from tests.conftest import MINI_ROWS, submission_csv


@pytest.fixture
def unwritable_media(settings, tmp_path):
    """The media folder's ``submissions`` is a regular file: the operating system refuses to make
    the folders under it, as a full or read-only disk refuses the file (chmod does not stop root)."""
    media = tmp_path / "unwritable-media"
    media.mkdir()
    (media / "submissions").write_text("not a folder")
    settings.MEDIA_ROOT = media
    return media


def _files_under(path) -> list[str]:
    return sorted(os.path.join(d, f) for d, _, files in os.walk(path) for f in files)


def test_upload_storage_full_disk_is_a_503_through_the_api_and_nothing_counts(mini_benchmark, api_for,
                                                                           unwritable_media):
    from leaderboard.core.models import Submission

    resp = api_for("owner").post(f"/api/benchmarks/{mini_benchmark.slug}/submissions/",
                                 {"file": SimpleUploadedFile("p.csv", submission_csv(MINI_ROWS))}, format="multipart")
    assert resp.status_code == 503, resp.content
    assert int(resp["Retry-After"]) > 0
    body = resp.json()
    assert body["errors"][0]["column"] == "file"
    assert body["detail"].startswith("the server could not store your file just now")
    assert "nothing was stored or counted against your daily limit" in body["detail"]
    assert body["remaining_today"] == mini_benchmark.daily_limit
    assert not Submission.objects.exists()
    assert _files_under(unwritable_media) == [str(unwritable_media / "submissions")]


def test_upload_storage_full_disk_in_the_browser_shows_the_reason(client, users, mini_benchmark, unwritable_media):
    from leaderboard.core.models import Submission

    client.force_login(users["owner"])
    resp = client.post(f"/b/{mini_benchmark.slug}/submit/",
                       {"file": SimpleUploadedFile("p.csv", submission_csv(MINI_ROWS))})
    assert resp.status_code == 503
    assert int(resp["Retry-After"]) > 0
    html = resp.content.decode()
    assert "the server could not store your file just now" in html
    assert "Internal Server Error" not in html
    assert not Submission.objects.exists()
