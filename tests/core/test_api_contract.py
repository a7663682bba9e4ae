"""The API keeps the promises of its OpenAPI schema: schemathesis, every check, against a live gunicorn.

The server runs the production configuration (gunicorn, ``DEBUG=false``) on the test database, with a
static benchmark (impact: uploads, the dry run, per-case rows) and a round benchmark with an open round,
so every operation meets real resources as well as made-up ones. Requests carry a participant's token,
so the upload endpoints are exercised; staff actions answer that token with 403, as declared.
"""
from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from django.conf import settings

from leaderboard.core.api.auth import token_create
from leaderboard.core.models import StandingRow
from leaderboard.core.services.benchmarks import benchmark_load_bundle
from leaderboard.core.services.round_engine import round_close, round_open, round_truth_load
from leaderboard.core.services.teams import team_create, team_invite
from leaderboard.core.services.uploads import submission_create
from tests.support.impact import PREDICTIONS, write_impact_bundle
from tests.support.openapi import api_schema
from tests.support.server import start_gunicorn
from tests.support.signals import SignalsRound, signals_benchmark
from tests.support.worker import stop_worker

pytestmark = pytest.mark.django_db(transaction=True)

# Bounded: examples per operation, and a fixed seed so a failure in CI reproduces locally.
MAX_EXAMPLES = 12
SEED = 20261123

# The file or rows an upload carries follow the benchmark's kind (its `format`), which a schema shared by
# every kind cannot spell out: a schema-valid body that breaks the kind's rules is answered 400 with every
# problem named (docs/api.md). Only these operations may answer a schema-valid request with 400.
CONFIG = """
[[operations]]
include-path-regex = "^/api/benchmarks/\\\\{{slug\\\\}}/"
parameters = {{ slug = "{slug}", n = 1 }}

[[operations]]
include-path-regex = "^/api/submissions/"
parameters = {{ id = {submission} }}

[[operations]]
include-path-regex = "^/api/benchmarks/\\\\{{slug\\\\}}/(submissions|verify|teams)/$"
include-method = "POST"
checks.positive_data_acceptance.expected-statuses = ["2xx", "400", "401", "403", "404", "409", "429"]

# Teams: a team and an invite of the caller's; creating, inviting, accepting and leaving twice is a 409
# (already in a team, already answered) or a 403/404 (not a member, no such user) saying why.
[[operations]]
include-path-regex = "^/api/teams/"
parameters = {{ id = {team} }}
checks.positive_data_acceptance.expected-statuses = ["2xx", "400", "403", "404", "409"]

[[operations]]
include-path-regex = "^/api/invites/\\\\{{id\\\\}}/"
parameters = {{ id = {invite} }}
checks.positive_data_acceptance.expected-statuses = ["2xx", "400", "403", "404", "409"]

# A board's track is any text to the schema, but the benchmark's kind knows its own (portfolio: weekly,
# monthly; others none): another name is a 400 naming the track, as the uploads' bad values are.
[[operations]]
include-path-regex = "^/api/benchmarks/\\\\{{slug\\\\}}/leaderboard/$"
include-method = "GET"
checks.positive_data_acceptance.expected-statuses = ["2xx", "400", "401", "403", "404", "409", "429"]
"""


def _get(url: str, headers: dict | None = None):
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.headers, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.headers, err.read()


@pytest.fixture
def live_api(tmp_path, users):
    static = benchmark_load_bundle(write_impact_bundle(tmp_path / "catalysts")).benchmark
    rounds = signals_benchmark(tmp_path)
    # Round 1 resolved (a board, standings, history), round 2 open for uploads.
    gen = SignalsRound(50, seed=3)
    first = round_open(benchmark=rounds, data=gen.universe_csv(), filename="universe.csv", user=users["organiser"])
    for i, name in enumerate(("owner", "member")):
        submission_create(user=users[name], benchmark=rounds, data=gen.submission_csv(gen.predictions(0.5, i)),
                          filename="p.csv")
    round_close(round_=first)
    round_truth_load(round_=first, data=gen.truth_csv(gen.target(1.0, 1)), filename="t.csv", final=True,
                     user=users["organiser"])
    round_open(benchmark=rounds, data=gen.universe_csv(), filename="universe.csv", user=users["organiser"])
    assert StandingRow.objects.filter(benchmark=rounds).count() == 2  # the standings have rows to check
    sub = submission_create(user=users["owner"], benchmark=static, predictions=PREDICTIONS).submission
    team = team_create(user=users["member"], benchmark=static, name="Contract Team")
    invite = team_invite(team=team, by=users["member"], username="owner")
    _, key = token_create(user=users["owner"])
    proc, base = start_gunicorn(workers=1, threads=4, env_overrides={
        "DEBUG": "false", "SECRET_KEY": "contract-test", "ALLOWED_HOSTS": "127.0.0.1",
        "MEDIA_ROOT": str(settings.MEDIA_ROOT),  # the test's uploads (the universe file)
        # Abuse throttles stay on (their 429 is declared) but high enough not to hide the operations.
        "THROTTLE_ANON": "100000/min", "THROTTLE_USER": "100000/min", "THROTTLE_UPLOAD": "100000/min",
        "THROTTLE_VERIFY": "100000/min"})
    try:
        yield {"base": base, "key": key, "static": static.slug, "rounds": rounds.slug, "submission": sub.pk,
               "team": team.pk, "invite": invite.pk}
    finally:
        log = stop_worker(proc)
        if "Traceback" in log:
            print(log[-6000:])


def test_api_contract_unrouted_api_paths_and_wrong_methods_answer_json(live_api):
    base = live_api["base"]
    for path in ("/api/no-such-thing/", "/api/benchmarks/catalysts/nope/", "/api/submissions/abc/"):
        status, headers, body = _get(base + path)
        assert status == 404 and headers["Content-Type"] == "application/json", (path, body[:200])
        assert json.loads(body)["errors"][0]["message"].startswith("no such API address")
    req = urllib.request.Request(f"{base}/api/benchmarks/", method="DELETE")
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, timeout=10)
    assert err.value.code == 405 and err.value.headers["Content-Type"] == "application/json"
    assert err.value.headers["Allow"] == "GET, HEAD, OPTIONS"
    assert json.loads(err.value.read())["detail"] == 'Method "DELETE" not allowed.'


@pytest.mark.parametrize("benchmark", ["static", "rounds"])
def test_api_contract_schemathesis_every_check_passes(live_api, tmp_path, benchmark):
    """Once with the benchmark-scoped operations on the impact benchmark, once on the round benchmark."""
    config = tmp_path / "schemathesis.toml"
    config.write_text(CONFIG.format(slug=live_api[benchmark], submission=live_api["submission"],
                                    team=live_api["team"], invite=live_api["invite"]))
    run = subprocess.run(
        [str(Path(sys.executable).with_name("st")), "--config-file", str(config), "run",
         f"{live_api['base']}/api/schema/", "--checks", "all", "--max-examples", str(MAX_EXAMPLES),
         "--seed", str(SEED), "--workers", "1", "--no-shrink", "--request-timeout", "30",
         "--header", f"Authorization: Token {live_api['key']}", "--warnings", "off"],
        cwd=tmp_path, capture_output=True, text=True, timeout=900)  # its cache folder stays out of the repo
    out = run.stdout + run.stderr
    assert run.returncode == 0, out[-12000:]
    document = api_schema().raw_schema
    operations = sum(1 for item in document["paths"].values() for method in item
                     if method in ("get", "post", "put", "patch", "delete"))
    assert f"Tested: {operations}" in out, out[-3000:]  # every operation of the schema ran


def test_api_contract_hook_refuses_answers_the_schema_does_not_declare():
    """The check every test's API answers go through (tests/support/openapi.py) catches each kind of drift."""
    from django.http import HttpResponse, JsonResponse

    from tests.support.openapi import ApiContractViolation, check_api_response

    error = {"detail": "x", "errors": [{"row": None, "column": None, "message": "x"}]}
    check_api_response("GET", "/api/benchmarks/", JsonResponse([], safe=False))
    check_api_response("GET", "/api/benchmarks/nope/", JsonResponse(error, status=404))
    check_api_response("GET", "/api/no-route/", JsonResponse(error, status=404))
    bad = [
        ("GET", "/api/benchmarks/", JsonResponse([{"slug": "a"}], safe=False)),  # fields missing
        ("GET", "/api/benchmarks/", JsonResponse(error, status=418)),  # status not declared
        ("GET", "/api/benchmarks/x/", JsonResponse({"detail": "x"}, status=404)),  # not the error body
        ("GET", "/api/benchmarks/", HttpResponse("<p>hi</p>")),  # media type not declared
        ("GET", "/api/no-route/", HttpResponse("<h1>Not Found</h1>", status=404)),  # HTML 404
    ]
    for method, path, response in bad:
        with pytest.raises(ApiContractViolation):
            check_api_response(method, path, response)


def test_api_contract_every_operation_declares_the_outage_503():
    """A database that cannot be reached answers every API call 503 with Retry-After (INTERFACE.md); the
    schema listed 400 ... 429 but no 503, so a client built from it did not know to wait and retry."""
    from django.db import OperationalError
    from django.test import RequestFactory

    from leaderboard.core.outage import outage_response
    from tests.support.openapi import api_schema, check_api_response

    operations = list(api_schema().get_all_operations())
    assert len(operations) > 30
    for result in operations:
        op = result.ok()
        assert "503" in op.definition.raw["responses"], op.label
    for method, path in (("GET", "/api/benchmarks/"), ("POST", "/api/benchmarks/x/submissions/"),
                         ("GET", "/api/submissions/7/cases/")):
        request = getattr(RequestFactory(), method.lower())(path)
        response = outage_response(request, OperationalError("connection refused"))
        assert response.status_code == 503 and int(response["Retry-After"]) > 0
        check_api_response(method, path, response)
