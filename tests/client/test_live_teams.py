"""``lb team ...`` and the client's team methods, installed as a participant installs them, against the
real site (gunicorn on the test database; teams need no worker)."""
from __future__ import annotations

import csv
import io
import json
from types import SimpleNamespace

import pytest
from allauth.account.models import EmailAddress
from django.contrib.auth import get_user_model
from django.db import connection

from leaderboard.core.api.auth import token_create
from leaderboard.core.models import Submission, TeamMembership
from leaderboard.core.services.benchmarks import benchmark_load_bundle
from tests.conftest import MINI_ROWS, submission_csv, write_properties_bundle

SLUG = "team-props"


@pytest.fixture
def site(transactional_db, tmp_path):
    from tests.support.server import start_gunicorn
    from tests.support.worker import stop_worker

    benchmark = benchmark_load_bundle(write_properties_bundle(tmp_path / "bundle", MINI_ROWS, slug=SLUG)).benchmark
    User = get_user_model()
    tokens = {name: token_create(user=User.objects.create_user(name, password=f"pw-{name}-123"))[1]
              for name in ("alice", "bob", "carol")}
    # carol signed up and has not opened her verification link yet.
    EmailAddress.objects.create(user=User.objects.get(username="carol"), email="carol@example.org",
                                verified=False, primary=True)
    (tmp_path / "good.csv").write_bytes(submission_csv(MINI_ROWS))
    server, base = start_gunicorn(workers=1, threads=4, env_overrides={"CELERY_TASK_ALWAYS_EAGER": "true"})
    try:
        yield SimpleNamespace(url=base, tokens=tokens, benchmark=benchmark, dir=tmp_path)
    finally:
        print("---- gunicorn log (tail) ----\n" + stop_worker(server)[-3000:])


def _lb(venv_run, site, who, *argv):
    result = venv_run(["lb", *argv], env={"LEADERBOARD_URL": site.url, "LEADERBOARD_TOKEN": site.tokens[who]},
                      cwd=site.dir)
    return SimpleNamespace(code=result.returncode, out=result.stdout.decode(), err=result.stderr.decode())


def test_live_lb_team_life(site, venv_run):
    made = _lb(venv_run, site, "alice", "team", "create", SLUG, "Two Cats")
    assert made.code == 0, made.err
    team_id = int(made.out.split()[2].rstrip(":"))
    assert made.out == f"created team {team_id}: Two Cats on {SLUG}; your uploads there count for it\n"
    again = _lb(venv_run, site, "alice", "team", "create", SLUG, "Three Cats")
    assert again.code == 5 and f"you are already in a team on {SLUG}" in again.err

    invited = _lb(venv_run, site, "alice", "team", "invite", str(team_id), "bob")
    assert invited.code == 0, invited.err
    invite_id = int(invited.out.split("(invite ")[1].split(")")[0])
    assert _lb(venv_run, site, "carol", "team", "invite", str(team_id), "bob").code == 8  # not a member: 403
    pending = json.loads(_lb(venv_run, site, "bob", "team", "invites", "--format", "json").out)
    assert [(i["id"], i["team"], i["benchmark"], i["invited_by"]) for i in pending] == [
        (invite_id, "Two Cats", SLUG, "alice")]
    joined = _lb(venv_run, site, "bob", "team", "accept", str(invite_id))
    assert joined.out == f"joined team {team_id}: Two Cats on {SLUG} (alice, bob)\n", joined.err

    listed = _lb(venv_run, site, "carol", "team", "list", SLUG, "--format", "csv")
    assert list(csv.reader(io.StringIO(listed.out))) == [["id", "name", "members"], [str(team_id), "Two Cats",
                                                                                      "alice, bob"]]
    shown = _lb(venv_run, site, "bob", "team", "show", str(team_id)).out.splitlines()
    assert shown[:2] == [f"team {team_id}: Two Cats on {SLUG}", "members: alice, bob"]
    assert [line.split()[3] for line in shown[2:]] == ["created", "joined", "invited", "joined"]

    upload = _lb(venv_run, site, "bob", "submit", SLUG, "good.csv")
    assert upload.code == 0, upload.err
    connection.close()
    assert Submission.objects.get().entrant.name == "Two Cats"

    left = _lb(venv_run, site, "bob", "team", "leave", str(team_id))
    assert left.out == f"left team {team_id}: Two Cats; your next uploads to {SLUG} are your own\n"
    connection.close()
    assert list(TeamMembership.objects.values_list("user__username", flat=True)) == ["alice"]


def test_live_unverified_account_upload_exits_8_naming_the_reason(site, venv_run):
    refused = _lb(venv_run, site, "carol", "submit", SLUG, "good.csv")
    assert refused.code == 8 and refused.out == ""
    assert "verify your email address first: open the link we mailed to carol@example.org" in refused.err
    assert "(HTTP 403)" in refused.err
    # Browsing and downloads stay open.
    assert _lb(venv_run, site, "carol", "leaderboard", SLUG).code == 0
