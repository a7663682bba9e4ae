"""One rule each, read the same by every surface: which benchmarks a viewer may see
(``selectors.benchmarks_for``) and which round is current (``rounds_open`` / ``current_round``)."""
from __future__ import annotations

import datetime as dt
import json

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from leaderboard.core import selectors
from leaderboard.core.models import Round
from leaderboard.core.services.benchmarks import benchmark_load_bundle
from leaderboard.core.services.round_engine import round_open
from leaderboard.core.services.uploads import submission_create
from tests.conftest import MINI_ROWS, write_properties_bundle
from tests.support.signals import SignalsRound, signals_benchmark


@pytest.fixture
def hidden(db, tmp_path):
    """A properties benchmark loaded unpublished (``"published": false``)."""
    directory = write_properties_bundle(tmp_path / "h", MINI_ROWS, slug="hidden-props")
    meta = json.loads((directory / "benchmark.json").read_text())
    (directory / "benchmark.json").write_text(json.dumps(meta | {"published": False}))
    return benchmark_load_bundle(directory).benchmark


PAGES = ["/b/hidden-props/", "/b/hidden-props/cases/", "/b/hidden-props/training/", "/b/hidden-props/submit/"]
API = ["/api/benchmarks/hidden-props/", "/api/benchmarks/hidden-props/leaderboard/",
       "/api/benchmarks/hidden-props/cases/", "/api/benchmarks/hidden-props/submissions/"]


def test_selectors_an_unpublished_benchmark_is_hidden_from_all_but_staff(hidden, mini_benchmark, users, client,
                                                                        api_for):
    assert hidden.is_published is False
    client.force_login(users["owner"])
    assert [client.get(url).status_code for url in PAGES] == [404] * len(PAGES)
    assert "hidden-props" not in client.get("/").content.decode()
    owner = api_for("owner")
    assert [owner.get(url).status_code for url in API] == [404] * len(API)
    assert [b["slug"] for b in owner.get("/api/benchmarks/").json()] == ["mini-props"]
    assert [b["slug"] for b in APIClient().get("/api/benchmarks/").json()] == ["mini-props"]

    client.force_login(users["organiser"])
    assert [client.get(url).status_code for url in PAGES] == [200] * len(PAGES)
    assert "hidden-props" in client.get("/").content.decode()
    staff = api_for("organiser")
    assert [staff.get(url).status_code for url in API] == [200] * len(API)
    assert sorted(b["slug"] for b in staff.get("/api/benchmarks/").json()) == ["hidden-props", "mini-props"]
    assert list(selectors.benchmarks_for(users["owner"])) == [mini_benchmark]


def test_selectors_an_open_round_without_universe_is_nowhere_current(db, tmp_path, users, client, api_for):
    bench = signals_benchmark(tmp_path)
    gen = SignalsRound(30, seed=3)
    real = round_open(benchmark=bench, data=gen.universe_csv(), filename="u.csv",
                      closes_at=timezone.now() + dt.timedelta(days=2))
    Round.objects.create(benchmark=bench, number=2, status="open")  # added by hand, no universe
    assert selectors.current_round(bench) == real
    assert list(selectors.rounds_open(bench)) == [real]
    assert APIClient().get("/api/benchmarks/sig/").json()["current_round"]["number"] == 1
    page = client.get("/b/sig/").content.decode()
    assert "round 1 open" in page and "round 2 open" not in page
    resp = api_for("owner").post("/api/benchmarks/sig/submissions/", {"file": _upload(gen)}, format="multipart")
    assert resp.status_code == 202 and resp.json()["round"] == 1
    sub = submission_create(user=users["member"], benchmark=bench, data=gen.submission_csv(gen.predictions(1, 2)),
                            filename="p.csv").submission
    assert sub.round == real


def _upload(gen):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile("p.csv", gen.submission_csv(gen.predictions(1, 1)))
