"""Teams: life (create, invite, accept, decline, leave, with the audit log), refusals that say why,
Kaggle's merge rule worked by hand, and the team as the entrant on every kind's boards."""
from __future__ import annotations

import datetime as dt
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import IntegrityError, transaction
from django.utils import timezone

from leaderboard.core import selectors
from leaderboard.core.models import (
    DailyQuota,
    Entrant,
    LeaderboardRow,
    StandingRow,
    Submission,
    TeamEvent,
    TeamMembership,
)
from leaderboard.core.quota import QuotaExceeded, quota_remaining, utc_day
from leaderboard.core.services.answers import SubmissionRejected
from leaderboard.core.services.round_engine import (
    round_close,
    round_open,
    round_truth_load,
    round_version_score,
    stakes_load,
)
from leaderboard.core.services.submissions import submission_score
from leaderboard.core.services.teams import invite_accept, merge_allowance, team_create, team_invite, team_leave
from leaderboard.core.services.uploads import submission_create
from tests.conftest import MINI_ROWS, submission_csv, write_properties_bundle


def _upload(user, benchmark, **kwargs):
    return submission_create(user=user, benchmark=benchmark, data=submission_csv(MINI_ROWS), filename="p.csv",
                             **kwargs).submission


def _join(team, user, by):
    invite = team_invite(team=team, by=by, username=user.username)
    return invite_accept(invite_id=invite.pk, user=user)


def test_team_life_through_the_api(api_for, users, mini_benchmark):
    owner, member, outsider = api_for("owner"), api_for("member"), api_for("outsider")
    made = owner.post("/api/benchmarks/mini-props/teams/", {"name": "Ab Initio"}, format="json")
    assert made.status_code == 201
    team = made.json()
    assert (team["name"], team["members"], team["benchmark"]) == ("Ab Initio", ["owner"], "mini-props")
    assert owner.post("/api/benchmarks/mini-props/teams/", {"name": "Second"}, format="json").status_code == 409
    assert outsider.post(f"/api/teams/{team['id']}/invites/", {"username": "member"}, format="json").status_code == 403
    invited = owner.post(f"/api/teams/{team['id']}/invites/", {"username": "member"}, format="json")
    assert invited.status_code == 201
    assert owner.post(f"/api/teams/{team['id']}/invites/", {"username": "nobody"}, format="json").status_code == 404
    pending = member.get("/api/invites/").json()
    assert [(i["id"], i["team"], i["benchmark"], i["invited_by"]) for i in pending] == [
        (invited.json()["id"], "Ab Initio", "mini-props", "owner")]
    assert outsider.post(f"/api/invites/{pending[0]['id']}/accept/").status_code == 404  # not theirs
    joined = member.post(f"/api/invites/{pending[0]['id']}/accept/")
    assert joined.status_code == 200 and joined.json()["members"] == ["owner", "member"]
    assert member.post(f"/api/invites/{pending[0]['id']}/accept/").json()["detail"] == "this invite was accepted already"
    # Outsider is invited and declines.
    second = owner.post(f"/api/teams/{team['id']}/invites/", {"username": "outsider"}, format="json").json()
    assert outsider.post(f"/api/invites/{second['id']}/decline/").json() == {"id": second["id"], "status": "declined"}
    assert outsider.get("/api/invites/").json() == []
    listed = api_for("outsider").get("/api/benchmarks/mini-props/teams/").json()
    assert [(t["name"], t["members"]) for t in listed] == [("Ab Initio", ["owner", "member"])]
    # Members see the audit log; others see the members only.
    detail = member.get(f"/api/teams/{team['id']}/").json()
    assert [e["kind"] for e in detail["events"]] == ["created", "joined", "invited", "joined", "invited", "declined"]
    assert "events" not in outsider.get(f"/api/teams/{team['id']}/").json()
    left = owner.post(f"/api/teams/{team['id']}/leave/")
    assert left.status_code == 200 and left.json()["members"] == ["member"]
    assert owner.post(f"/api/teams/{team['id']}/leave/").status_code == 404
    kinds = list(TeamEvent.objects.order_by("at", "id").values_list("kind", "user__username"))
    assert kinds[-1] == ("left", "owner")


def test_a_member_uploads_as_the_team_and_every_member_sees_and_selects(api_for, client, users, mini_benchmark):
    team = team_create(user=users["owner"], benchmark=mini_benchmark, name="Ab Initio")
    _join(team, users["member"], users["owner"])
    sub = _upload(users["member"], mini_benchmark)
    submission_score(submission_id=sub.pk)
    assert sub.entrant_id == team.entrant_id
    # Naming one's own entrant is refused while in the team, saying why.
    with pytest.raises(SubmissionRejected) as err:
        _upload(users["member"], mini_benchmark, entrant="member")
    assert err.value.status == 409 and "in team Ab Initio" in err.value.errors[0].message
    owner = api_for("owner")
    listed = owner.get("/api/benchmarks/mini-props/submissions/").json()["rows"]
    assert [(s["id"], s["entrant"], s["uploaded_by"]) for s in listed] == [(sub.pk, "Ab Initio", "member")]
    assert owner.get(f"/api/submissions/{sub.pk}/").status_code == 200
    assert owner.post(f"/api/submissions/{sub.pk}/select/").status_code == 200
    assert api_for("outsider").post(f"/api/submissions/{sub.pk}/select/").status_code == 404
    rows = selectors.leaderboard_rows(mini_benchmark)
    assert [r.entrant.name for r in rows] == ["Ab Initio"]
    client.force_login(users["owner"])
    assert "by member" in client.get("/submissions/").content.decode()


def test_a_member_who_left_no_longer_chooses_the_teams_final_submission(api_for, users, mini_benchmark):
    team = team_create(user=users["owner"], benchmark=mini_benchmark, name="Ab Initio")
    _join(team, users["member"], users["owner"])
    first, second = _upload(users["member"], mini_benchmark), _upload(users["owner"], mini_benchmark)
    for sub in (first, second):
        submission_score(submission_id=sub.pk)
    owner, member = api_for("owner"), api_for("member")
    assert owner.post(f"/api/submissions/{second.pk}/select/").status_code == 200
    assert member.post(f"/api/teams/{team.pk}/leave/").status_code == 200
    # The upload was theirs, but the team's final choice is the team's business now.
    refused = member.post(f"/api/submissions/{first.pk}/select/")
    assert refused.status_code == 403
    assert refused.json()["detail"] == ("only the members of team Ab Initio may choose its final submission: "
                                        "you are not in the team any more")
    assert list(Submission.objects.filter(is_selected=True).values_list("pk", flat=True)) == [second.pk]
    assert owner.post(f"/api/submissions/{first.pk}/select/").status_code == 200


def test_refusals_say_why_full_team_and_past_the_deadline(tmp_path, users):
    import json

    from leaderboard.core.services.benchmarks import benchmark_load_bundle

    bundle = write_properties_bundle(tmp_path / "b", MINI_ROWS, slug="small-teams")
    meta = json.loads((bundle / "benchmark.json").read_text())
    meta.update(team_size_max=2, team_merge_deadline=(timezone.now() + dt.timedelta(hours=1)).isoformat())
    (bundle / "benchmark.json").write_text(json.dumps(meta))
    benchmark = benchmark_load_bundle(bundle).benchmark
    team = team_create(user=users["owner"], benchmark=benchmark, name="Pair")
    _join(team, users["member"], users["owner"])
    with pytest.raises(SubmissionRejected) as err:
        team_invite(team=team, by=users["owner"], username="outsider")
    assert err.value.errors[0].message == ("team Pair is full: 2 of at most 2 members "
                                           "(team_size_max of small-teams)")
    team_leave(team=team, user=users["member"])
    invite = team_invite(team=team, by=users["owner"], username="outsider")
    benchmark.team_merge_deadline = timezone.now() - dt.timedelta(minutes=1)
    benchmark.save()
    with pytest.raises(SubmissionRejected) as err:
        invite_accept(invite_id=invite.pk, user=users["outsider"])
    assert err.value.status == 409
    assert err.value.errors[0].message.startswith("no one can join a team any more: the team merge deadline of "
                                                  "small-teams passed at ")
    with pytest.raises(SubmissionRejected, match="no new team can form"):
        team_create(user=users["member"], benchmark=benchmark, name="Late")


def test_in_another_team_is_refused_and_the_database_keeps_one_team_per_benchmark(users, mini_benchmark):
    first = team_create(user=users["owner"], benchmark=mini_benchmark, name="First")
    second = team_create(user=users["outsider"], benchmark=mini_benchmark, name="Second")
    one = team_invite(team=first, by=users["owner"], username="member")
    two = team_invite(team=second, by=users["outsider"], username="member")
    invite_accept(invite_id=one.pk, user=users["member"])
    with pytest.raises(SubmissionRejected) as err:
        invite_accept(invite_id=two.pk, user=users["member"])
    assert err.value.errors[0].message == "member is already in team First on mini-props; leave it first"
    # Whatever a service does, the database refuses a second membership on one benchmark.
    with pytest.raises(IntegrityError), transaction.atomic():
        TeamMembership.objects.create(team=second, user=users["member"], benchmark=mini_benchmark)
    assert TeamMembership.objects.filter(user=users["member"]).count() == 1


def _upload_days_ago(user, benchmark, days: int):
    """An upload as if made ``days`` ago: today's counter is left as it was before it."""
    counters = {q.pk: q.used for q in DailyQuota.objects.all()}
    sub = _upload(user, benchmark)
    Submission.objects.filter(pk=sub.pk).update(received_at=timezone.now() - dt.timedelta(days=days))
    for q in DailyQuota.objects.all():
        DailyQuota.objects.filter(pk=q.pk).update(used=counters.get(q.pk, 0) if days else q.used)


def test_merge_rule_worked_by_hand(tmp_path, users):
    """Daily limit 2. Team T: 2 uploads yesterday, 2 today (first upload yesterday). Joiner J: 2 uploads
    alone yesterday, 1 today. Merged: 4 + 3 = 7 uploads; days since the merged team's first upload,
    yesterday and today = 2; allowance 2 x 2 = 4 < 7: refused. A second joiner K with 1 upload alone
    three days ago: first day = three days ago, days = 4, allowance 8; 4 + 1 = 5 <= 8: joins."""
    from leaderboard.core.services.benchmarks import benchmark_load_bundle

    benchmark = benchmark_load_bundle(write_properties_bundle(tmp_path / "m", MINI_ROWS, slug="merge",
                                                              daily_limit=2)).benchmark
    owner, joiner, late = users["owner"], users["member"], users["outsider"]
    team = team_create(user=owner, benchmark=benchmark, name="T")
    for days in (1, 1, 0, 0):
        _upload_days_ago(owner, benchmark, days)
    for days in (1, 1, 0):
        _upload_days_ago(joiner, benchmark, days)
    yesterday = utc_day() - dt.timedelta(days=1)
    invite = team_invite(team=team, by=owner, username="member")
    with pytest.raises(SubmissionRejected) as err:
        invite_accept(invite_id=invite.pk, user=joiner)
    assert err.value.status == 409
    assert err.value.errors[0].message == (
        "joining would break the merge rule: your 3 accepted uploads alone plus team T's 4 make 7; the allowance "
        f"is the daily limit 2 x 2 days since the merged team's first upload on {yesterday:%Y-%m-%d} "
        "(today included) = 4")
    assert merge_allowance(daily_limit=2, first_day=yesterday, today=utc_day()) == (2, 4)

    _upload_days_ago(late, benchmark, 3)
    invite_accept(invite_id=team_invite(team=team, by=owner, username="outsider").pk, user=late)
    merged = TeamEvent.objects.get(team=team, kind="merged")
    assert "your 1 accepted upload alone plus team T's 4 make 5" in merged.detail
    assert f"2 x 4 days since the merged team's first upload on {utc_day() - dt.timedelta(days=3):%Y-%m-%d}" \
        in merged.detail
    # K's upload moved to the team (the round is open); the board has one row, the team's.
    assert Submission.objects.filter(user=late, entrant=team.entrant).count() == 1
    for sub in Submission.objects.filter(benchmark=benchmark):
        submission_score(submission_id=sub.pk)
    assert {r.entrant.name for r in selectors.leaderboard_rows(benchmark)} == {"T", "member"}


def test_joining_brings_todays_uploads_into_the_team_limit_and_leaving_keeps_yours(tmp_path, users):
    from leaderboard.core.services.benchmarks import benchmark_load_bundle

    benchmark = benchmark_load_bundle(write_properties_bundle(tmp_path / "q", MINI_ROWS, slug="quota",
                                                              daily_limit=3)).benchmark
    team = team_create(user=users["owner"], benchmark=benchmark, name="Q")
    _upload(users["owner"], benchmark)
    _upload(users["member"], benchmark)  # alone, today
    _join(team, users["member"], users["owner"])
    assert quota_remaining(user=users["member"], benchmark=benchmark) == 1  # 3 - (1 team + 1 brought along)
    _upload(users["member"], benchmark)
    with pytest.raises(QuotaExceeded) as err:
        _upload(users["owner"], benchmark)
    assert "shared by the members of team Q" in err.value.message
    team_leave(team=team, user=users["member"])
    # Alone again: their own row counts the 1 upload alone and the 1 made for the team today.
    assert quota_remaining(user=users["member"], benchmark=benchmark) == 1
    assert DailyQuota.objects.get(team=team).used == 3


def test_leaving_and_joining_again_does_not_count_the_teams_uploads_twice(tmp_path, users):
    from leaderboard.core.services.benchmarks import benchmark_load_bundle

    benchmark = benchmark_load_bundle(write_properties_bundle(tmp_path / "r", MINI_ROWS, slug="rejoin",
                                                              daily_limit=5)).benchmark
    team = team_create(user=users["owner"], benchmark=benchmark, name="R")
    _join(team, users["member"], users["owner"])
    _upload(users["member"], benchmark)
    _upload(users["member"], benchmark)
    assert quota_remaining(user=users["owner"], benchmark=benchmark) == 3
    team_leave(team=team, user=users["member"])
    _join(team, users["member"], users["owner"])
    # The team uploaded 2 today, both already on its count: 5 - 2 = 3 left, for either member.
    assert quota_remaining(user=users["owner"], benchmark=benchmark) == 3
    assert quota_remaining(user=users["member"], benchmark=benchmark) == 3
    for _ in range(3):
        _upload(users["owner"], benchmark)
    with pytest.raises(QuotaExceeded):
        _upload(users["member"], benchmark)


def _round_team(benchmark, users):
    team = team_create(user=users["owner"], benchmark=benchmark, name=f"Robin {benchmark.kind}")
    _join(team, users["member"], users["owner"])
    return team


def test_team_boards_in_every_kind(tmp_path, users):
    from leaderboard.core.services.benchmarks import benchmark_load_bundle
    from tests.support.impact import PREDICTIONS, write_impact_bundle
    from tests.support.portfolio import portfolio_benchmark, portfolio_json, prices_csv, universe_csv
    from tests.support.ranking import RankingRound, ranking_benchmark
    from tests.support.signals import SignalsRound, signals_benchmark

    organiser = users["organiser"]
    # Static kinds: both members upload; one row, the team's, counting both uploads.
    props = benchmark_load_bundle(write_properties_bundle(tmp_path / "p", MINI_ROWS, slug="p")).benchmark
    impact = benchmark_load_bundle(write_impact_bundle(tmp_path / "i", slug="i")).benchmark
    for benchmark, upload in ((props, {"data": submission_csv(MINI_ROWS), "filename": "p.csv"}),
                              (impact, {"predictions": PREDICTIONS})):
        _round_team(benchmark, users)
        for who in ("owner", "member"):
            sub = submission_create(user=users[who], benchmark=benchmark, **upload).submission
            submission_score(submission_id=sub.pk)
        rows = LeaderboardRow.objects.filter(round__benchmark=benchmark, split="public")
        assert [(r.entrant.name, r.submissions_count) for r in rows] == [(f"Robin {benchmark.kind}", 2)]

    # Round kinds: the member's later upload replaces the owner's as the team's counted one; the round
    # board and the standings show the team.
    gen = SignalsRound(60, seed=5)
    ranks = RankingRound(60, seed=6)
    start = {"AAA": 10.0, "BBB": 20.0, "SP500": 100.0}
    cases = [
        (signals_benchmark(tmp_path), gen.universe_csv(), lambda i: gen.submission_csv(gen.predictions(0.5, i)),
         gen.truth_csv(gen.target(0.5, 1)), ""),
        (ranking_benchmark(tmp_path), ranks.universe_csv(), lambda i: ranks.submission_csv(ranks.predictions(0.5, i)),
         ranks.truth_csv(ranks.returns(0.5, 2)), ""),
        (portfolio_benchmark(tmp_path), universe_csv(start),
         lambda i: portfolio_json({"AAA": 60 + i, "BBB": 40 - i}), prices_csv({"AAA": 11.0, "BBB": 19.0, "SP500": 101.0}),
         "weekly"),
    ]
    for benchmark, universe, submission, truth, track in cases:
        team = _round_team(benchmark, users)
        round_ = round_open(benchmark=benchmark, data=universe, filename="u.csv", track=track, user=organiser)
        ids = [submission_create(user=users[who], benchmark=benchmark, data=submission(i), filename="s.csv")
               .submission.pk for i, who in enumerate(("owner", "member"))]
        counted = list(Submission.objects.filter(round=round_, is_counted=True).values_list("pk", "entrant_id"))
        assert counted == [(ids[1], team.entrant_id)], benchmark.kind
        round_close(round_=round_)
        # The team owns the model's stake: the stakes file names the team (stakes: signals rounds only).
        if benchmark.kind == "signals":
            assert stakes_load(round_=round_, data=f"entrant,stake\n{team.entrant.name},12.5\n".encode()) == 1
        version = round_truth_load(round_=round_, data=truth, filename="t.csv", final=True, user=organiser)
        assert round_version_score(round_id=round_.pk, version=version.version) == "scored"
        board = list(LeaderboardRow.objects.filter(round=round_).values_list("entrant__name", "submission_id"))
        assert board == [(team.entrant.name, ids[1])], benchmark.kind
        standings = list(StandingRow.objects.filter(benchmark=benchmark).values_list("entrant__name", "rounds"))
        assert standings == [(team.entrant.name, 1)], benchmark.kind
        if benchmark.kind == "portfolio":
            sets = selectors.comparison_sets_view(benchmark, track="weekly")["sets"]
            assert [r["entrant"] for s in sets for r in s["rows"]] == ["Robin portfolio"]


def test_team_page_creates_invites_and_answers(client, users, mini_benchmark):
    client.force_login(users["owner"])
    page = client.get("/b/mini-props/team/")
    assert page.status_code == 200 and "Create a team" in page.content.decode()
    client.post("/b/mini-props/team/", {"action": "create", "name": "Pagers"})
    client.post("/b/mini-props/team/", {"action": "invite", "username": "member"})
    html = client.get("/b/mini-props/team/").content.decode()
    assert "Your team: Pagers" in html and "Invited, no answer yet: member" in html
    client.force_login(users["member"])
    profile = client.get("/accounts/profile/").content.decode()
    assert "Team invitations" in profile and "Pagers" in profile
    invite_id = selectors.invites_for(users["member"])[0]["id"]
    answered = client.post(f"/invites/{invite_id}/answer/", {"action": "accept"}, follow=True)
    assert "You joined team Pagers" in answered.content.decode()
    submit = client.get("/b/mini-props/submit/").content.decode()
    assert "Submitting as team <strong>Pagers</strong>" in submit
    resp = client.post("/b/mini-props/submit/", {"file": SimpleUploadedFile("p.csv", submission_csv(MINI_ROWS))})
    assert resp.status_code == 302
    assert Submission.objects.get().entrant.name == "Pagers"
    # Refusals come back as a message on the page.
    client.force_login(users["owner"])
    again = client.post("/b/mini-props/team/", {"action": "create", "name": "Other"}, follow=True)
    assert "you are already in a team on mini-props" in again.content.decode()


def test_deleting_a_members_account_leaves_the_team_with_its_name_and_uploads(users, mini_benchmark):
    from leaderboard.core.services.accounts import account_delete
    from leaderboard.core.services.entrants import entrant_default

    team = team_create(user=users["owner"], benchmark=mini_benchmark, name="Survivors")
    _join(team, users["member"], users["owner"])
    sub = _upload(users["member"], mini_benchmark)
    pending = team_invite(team=team, by=users["member"], username="outsider")
    entrant_default(users["member"])  # their own entrant, beside the team's
    account_delete(user=users["member"])
    assert list(TeamMembership.objects.filter(team=team).values_list("user__username", flat=True)) == ["owner"]
    assert TeamEvent.objects.filter(team=team).order_by("-at", "-id").values_list("kind", flat=True)[0] == "left"
    team.entrant.refresh_from_db()
    assert team.entrant.name == "Survivors" and Submission.objects.get(pk=sub.pk).entrant_id == team.entrant_id
    assert Entrant.objects.get(owner=users["member"], team__isnull=True).name.startswith("former-entrant-")
    pending.refresh_from_db()
    assert pending.status == "pending"  # the invite was the outsider's to answer, not the deleted member's


def test_team_page_and_api_queries_do_not_grow_with_the_teams(client, api_for, users, mini_benchmark):
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def counts():
        client.force_login(users["owner"])
        with CaptureQueriesContext(connection) as page:
            assert client.get("/b/mini-props/team/").status_code == 200
        with CaptureQueriesContext(connection) as api:
            assert client.get("/api/benchmarks/mini-props/teams/").status_code == 200
        return len(page), len(api)

    team = team_create(user=users["owner"], benchmark=mini_benchmark, name="Mine")
    _join(team, users["member"], users["owner"])
    few = counts()
    for i in range(10):
        user = get_user_model().objects.create_user(f"u{i}", password="pw-u-12345")
        if i < 3:  # pending invites on the member's view of the team
            team_invite(team=team, by=users["owner"], username=f"u{i}")
        team_create(user=user, benchmark=mini_benchmark, name=f"Team {i}")
    assert counts() == few


def test_joining_a_team_closes_the_invites_of_other_teams_of_that_benchmark(api_for, users, mini_benchmark, tmp_path):
    owner, member, outsider = api_for("owner"), api_for("member"), api_for("outsider")
    from leaderboard.core.services.benchmarks import benchmark_load_bundle

    benchmark_load_bundle(write_properties_bundle(tmp_path / "o", MINI_ROWS, slug="other-props"))
    a = owner.post("/api/benchmarks/mini-props/teams/", {"name": "Team A"}, format="json").json()
    b = outsider.post("/api/benchmarks/mini-props/teams/", {"name": "Team B"}, format="json").json()
    elsewhere = owner.post("/api/benchmarks/other-props/teams/", {"name": "Team C"}, format="json").json()
    to_a = owner.post(f"/api/teams/{a['id']}/invites/", {"username": "member"}, format="json").json()
    to_b = outsider.post(f"/api/teams/{b['id']}/invites/", {"username": "member"}, format="json").json()
    to_c = owner.post(f"/api/teams/{elsewhere['id']}/invites/", {"username": "member"}, format="json").json()
    assert member.post(f"/api/invites/{to_a['id']}/accept/").status_code == 200
    # B's invite is no longer offered (team C is on another benchmark: still pending), and B sees why.
    assert [i["id"] for i in member.get("/api/invites/").json()] == [to_c["id"]]
    refused = member.post(f"/api/invites/{to_b['id']}/accept/")
    assert refused.status_code == 409
    assert refused.json()["detail"] == "member is already in team Team A on mini-props; leave it first"
    team_b = outsider.get(f"/api/teams/{b['id']}/").json()
    assert team_b["invites"] == []
    assert team_b["events"][-1]["kind"] == "declined" and "joined team Team A" in team_b["events"][-1]["detail"]
    # Creating a team closes them too; B may invite the member again once they are free.
    assert member.post(f"/api/teams/{a['id']}/leave/").status_code == 200
    again = outsider.post(f"/api/teams/{b['id']}/invites/", {"username": "member"}, format="json").json()
    assert member.post("/api/benchmarks/mini-props/teams/", {"name": "Team D"}, format="json").status_code == 201
    assert [i["id"] for i in member.get("/api/invites/").json()] == [to_c["id"]]
    assert member.post(f"/api/invites/{again['id']}/accept/").json()["detail"] == (
        "member is already in team Team D on mini-props; leave it first")


def test_a_member_naming_someone_elses_entrant_is_told_it_is_not_theirs(api_for, users, mini_benchmark):
    from leaderboard.core.services.entrants import entrant_create

    team = team_create(user=users["owner"], benchmark=mini_benchmark, name="Ab Initio")
    _join(team, users["member"], users["owner"])
    entrant_create(owner=users["outsider"], name="carol")
    entrant_create(owner=users["member"], name="mine")
    member = api_for("member")

    def upload(entrant):
        return member.post("/api/benchmarks/mini-props/submissions/", {
            "file": SimpleUploadedFile("p.csv", submission_csv(MINI_ROWS), content_type="text/csv"),
            "entrant": entrant}, format="multipart")

    refused = upload("carol")
    assert refused.status_code == 409
    detail = refused.json()["detail"]
    assert "you own no entrant called 'carol'" in detail and "leave the team" not in detail
    assert refused.json()["errors"][0]["column"] == "entrant"
    own = upload("mine").json()["detail"]  # their own: leaving the team is the way
    assert "in team Ab Initio" in own and "to upload as 'mine' leave the team first" in own
    assert not Submission.objects.filter(user=users["member"]).exists()


def test_a_deleted_accounts_name_is_gone_from_its_teams_audit_log(api_for, users, mini_benchmark):
    # Deleting an account promises its name is no longer shown: the team page and API showed it on,
    # in every audit line written while it was a member ("zelda-q invited ...", "zelda-q left").
    from django.contrib.auth import get_user_model

    from leaderboard.core.services.accounts import account_delete

    zelda = get_user_model().objects.create_user("zelda-q", password="pw-zelda-123")
    team = team_create(user=zelda, benchmark=mini_benchmark, name="Survivors")
    _join(team, users["owner"], zelda)
    team_invite(team=team, by=zelda, username="member")
    account_delete(user=zelda)
    zelda.refresh_from_db()
    shown = api_for("owner").get(f"/api/teams/{team.pk}/").json()
    assert [(e["kind"], e["user"]) for e in shown["events"]][-1] == ("left", zelda.username)
    assert "zelda-q" not in json.dumps(shown)
    assert zelda.username in " ".join(e["detail"] for e in shown["events"])
    invite = api_for("member").get("/api/invites/").json()
    assert [i["invited_by"] for i in invite] == [zelda.username]


def test_invite_answer_and_select_addresses_opened_by_get_lead_back_to_their_pages(client, users, mini_benchmark):
    """The invite's Accept and a submission's "make final" buttons post to addresses of their own; opened
    with a GET (after logging in again, a lapsed session having sent the form to the login page) they
    answered a blank 405. They now lead to the page holding the button, and change nothing."""
    team = team_create(user=users["owner"], benchmark=mini_benchmark, name="Getters")
    invite = team_invite(team=team, by=users["owner"], username="member")
    client.force_login(users["member"])
    resp = client.get(f"/invites/{invite.pk}/answer/")
    assert resp.status_code == 302 and resp["Location"] == "/b/mini-props/team/"
    invite.refresh_from_db()
    assert invite.status == "pending"
    sub = _upload(users["member"], mini_benchmark)
    resp = client.get(f"/submissions/{sub.pk}/select/")
    assert resp.status_code == 302 and resp["Location"] == f"/submissions/{sub.pk}/"
    sub.refresh_from_db()
    assert not sub.is_selected
    client.force_login(users["outsider"])  # someone else's: still not found
    assert client.get(f"/submissions/{sub.pk}/select/").status_code == 404
    assert client.get(f"/invites/{invite.pk}/answer/").status_code == 404
