"""Notifications: every event once, signed webhooks to a real receiver on 127.0.0.1, retries,
no redirects, no private addresses unless allowed, mail to a real SMTP server with an unsubscribe
link that works logged out, the API and the pages."""
from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
from urllib.parse import urlsplit

import pytest
from django.utils import timezone

from leaderboard.core.delivery import notifications_dispatch
from leaderboard.core.models import (
    MailDelivery,
    NotificationEvent,
    Submission,
    Webhook,
    WebhookAttempt,
    WebhookDelivery,
)
from leaderboard.core.services.benchmarks import benchmark_rescore, benchmark_reveal
from leaderboard.core.services.notifications import EVENTS, mail_preference_set, webhook_create
from leaderboard.core.services.round_engine import (
    round_close,
    round_open,
    round_truth_load,
    round_version_score,
)
from leaderboard.core.services.rounds import round_set_status
from leaderboard.core.services.submissions import submission_score, submissions_sweep_stuck
from leaderboard.core.services.uploads import submission_create
from tests.conftest import MINI_ROWS, submission_csv
from tests.support.receiver import start_receiver
from tests.support.signals import SignalsRound, signals_benchmark

SECRET = "a-secret-of-the-owner-0123456789"


@pytest.fixture
def receiver():
    r = start_receiver()
    yield r
    r.close()


@pytest.fixture
def allow_local(settings):
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = True
    settings.WEBHOOK_RETRY_BASE_SECONDS = 0  # a retry falls due at once: the next sweep sends it


def upload_static(user, benchmark, **kw):
    sub = submission_create(user=user, benchmark=benchmark, data=submission_csv(MINI_ROWS, **kw),
                            filename="p.csv").submission
    submission_score(submission_id=sub.pk)
    return Submission.objects.get(pk=sub.pk)


def score_latest(round_):
    from leaderboard.core.models import TruthVersion

    tv = TruthVersion.objects.filter(round=round_).order_by("-version").first()
    assert round_version_score(round_id=round_.pk, version=tv.version) == "scored"


def test_each_event_is_delivered_once_with_a_signature_that_verifies(db, users, mini_benchmark, tmp_path,
                                                                     receiver, allow_local):
    owner = users["owner"]
    webhook_create(user=owner, url=receiver.url, events=list(EVENTS), secret=SECRET)

    # A static benchmark: scored, failed (its worker died three times), closed, revealed.
    scored = upload_static(owner, mini_benchmark)
    dying = submission_create(user=owner, benchmark=mini_benchmark, data=submission_csv(MINI_ROWS),
                              filename="p.csv").submission
    Submission.objects.filter(pk=dying.pk).update(status="scoring", attempts=3,
                                                  heartbeat_at=timezone.now() - dt.timedelta(hours=1))
    submissions_sweep_stuck()
    round_set_status(round_=scored.round, status="closed")
    benchmark_reveal(benchmark=mini_benchmark)

    # A round benchmark: opened, closed, interim, resolved (and the round submission scored).
    bench = signals_benchmark(tmp_path)
    gen = SignalsRound(60, seed=3)
    round_ = round_open(benchmark=bench, data=gen.universe_csv(), filename="u.csv")
    round_sub = submission_create(user=owner, benchmark=bench, data=gen.submission_csv(gen.predictions(0.5, 1)),
                                  filename="p.csv").submission
    round_close(round_=round_)
    round_truth_load(round_=round_, data=gen.truth_csv(gen.target(2.0, 5)), filename="t.csv", final=False,
                     as_of=dt.date(2026, 1, 5))
    score_latest(round_)
    round_truth_load(round_=round_, data=gen.truth_csv(gen.target(1.0, 6)), filename="t.csv", final=True)
    score_latest(round_)

    notifications_dispatch()
    notifications_dispatch()  # the sweep again: nothing twice
    got = receiver.wait(10)
    events = sorted(receiver.events())
    assert events == sorted(["submission.scored", "submission.failed", "round.closed", "benchmark.revealed",
                             "round.opened", "round.closed", "round.interim", "submission.scored",
                             "round.resolved"])
    ids = [r.json["id"] for r in got]
    assert len(set(ids)) == len(ids)
    for r in got:
        assert r.signature_ok(SECRET), r.headers
        assert r.headers["X-Leaderboard-Event"] == r.json["event"]
        assert r.headers["X-Leaderboard-Delivery"] == r.json["id"]
        assert abs(int(r.headers["X-Leaderboard-Timestamp"]) - timezone.now().timestamp()) < 60
        assert set(r.json) == {"id", "event", "created_at", "data"}
    by_event = {(r.json["event"], r.json["data"].get("submission")): r.json["data"] for r in got}
    static = by_event[("submission.scored", scored.pk)]
    assert (static["benchmark"], static["status"]) == ("mini-props", "scored")
    assert set(static["scores"]) == {"public", "private"}  # revealed by the time it was sent
    assert by_event[("submission.failed", dying.pk)]["status"] == "failed"
    round_result = by_event[("submission.scored", round_sub.pk)]
    assert round_result["round"] == 1 and "corr" in round_result["scores"]
    resolved = by_event[("round.resolved", None)]
    assert (resolved["benchmark"], resolved["round"], resolved["version"]) == ("sig", 1, 2)
    assert by_event[("round.interim", None)]["version"] == 1
    assert not any(r.signature_ok("another-secret-entirely-000000") for r in got)


def test_a_rescore_that_changes_nothing_sends_nothing(db, users, mini_benchmark, receiver, allow_local):
    webhook_create(user=users["owner"], url=receiver.url, events=["submission.scored"], secret=SECRET)
    sub = upload_static(users["owner"], mini_benchmark)
    notifications_dispatch()
    assert len(receiver.wait(1)) == 1
    benchmark_rescore(benchmark=mini_benchmark)
    submission_score(submission_id=sub.pk)
    assert Submission.objects.get(pk=sub.pk).status == "scored"
    notifications_dispatch()
    assert NotificationEvent.objects.filter(kind="submission.scored").count() == 1
    assert len(receiver.requests) == 1


def _attempts(hook):
    return list(WebhookAttempt.objects.filter(delivery__webhook=hook).order_by("attempt")
                .values_list("attempt", "status_code", "ok"))


def test_a_500_and_a_timeout_are_retried_until_delivered(db, users, mini_benchmark, settings, allow_local):
    settings.WEBHOOK_TIMEOUT_SECONDS = 0.5
    receiver = start_receiver([500, ("sleep", 1.5), 200])
    try:
        hook = webhook_create(user=users["owner"], url=receiver.url, events=["submission.scored"], secret=SECRET)
        upload_static(users["owner"], mini_benchmark)
        notifications_dispatch()
        assert _attempts(hook) == [(1, 500, False)]
        notifications_dispatch()
        assert _attempts(hook) == [(1, 500, False), (2, None, False)]
        timeout_error = WebhookAttempt.objects.get(attempt=2).error
        assert "no answer within 0.5 s" in timeout_error
        notifications_dispatch()
        assert _attempts(hook) == [(1, 500, False), (2, None, False), (3, 200, True)]
        assert WebhookDelivery.objects.get().state == "delivered"
        notifications_dispatch()
        assert len(receiver.requests) == 3
    finally:
        receiver.close()


def test_backoff_is_exponential_and_stops_after_eight_attempts(db, users, mini_benchmark, settings, allow_local):
    settings.WEBHOOK_RETRY_BASE_SECONDS = 60
    receiver = start_receiver([500] * 20)
    try:
        hook = webhook_create(user=users["owner"], url=receiver.url, events=["submission.scored"], secret=SECRET)
        upload_static(users["owner"], mini_benchmark)
        waits = []
        for _ in range(10):
            before = timezone.now()
            notifications_dispatch()
            d = WebhookDelivery.objects.get()
            if d.state != "pending":
                break
            waits.append(round((d.next_attempt_at - before).total_seconds() / 60))
            WebhookDelivery.objects.filter(pk=d.pk).update(next_attempt_at=timezone.now())  # time passes
        assert waits == [1, 3, 9, 27, 81, 243, 729]  # minutes: about 18 hours over 8 attempts
        assert (d.state, d.attempts, len(receiver.requests)) == ("failed", 8, 8)
        assert Webhook.objects.get(pk=hook.pk).failing_since is not None
    finally:
        receiver.close()


def test_a_redirect_is_not_followed(db, users, mini_benchmark, allow_local):
    receiver = start_receiver([("redirect", "/elsewhere")])
    try:
        hook = webhook_create(user=users["owner"], url=receiver.url, events=["submission.scored"], secret=SECRET)
        upload_static(users["owner"], mini_benchmark)
        notifications_dispatch()
        assert [r.path for r in receiver.requests] == ["/hook"]
        (attempt,) = WebhookAttempt.objects.filter(delivery__webhook=hook)
        assert attempt.status_code == 302 and not attempt.ok and "not followed" in attempt.error
        assert WebhookDelivery.objects.get().state == "pending"  # retried later, to the same URL
    finally:
        receiver.close()


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_a_private_address_is_refused_unless_allowed(db, users, mini_benchmark, receiver, settings, host):
    settings.DEBUG = False
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = False
    url = receiver.url.replace("127.0.0.1", host)
    hook = webhook_create(user=users["owner"], url=url, events=["submission.scored"], secret=SECRET)
    upload_static(users["owner"], mini_benchmark)
    notifications_dispatch()
    (attempt,) = WebhookAttempt.objects.filter(delivery__webhook=hook)
    assert attempt.status_code is None and "loopback" in attempt.error and "WEBHOOK_ALLOW_PRIVATE_NETWORKS" in attempt.error
    assert receiver.requests == []
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = True
    WebhookDelivery.objects.update(next_attempt_at=timezone.now())
    notifications_dispatch()
    assert len(receiver.requests) == 1


def test_a_webhook_failing_for_a_day_is_disabled_and_its_owner_mailed(db, users, mini_benchmark, settings,
                                                                      allow_local, smtp_server):
    owner = users["owner"]
    owner.email = "owner@example.org"
    owner.save()
    mail_preference_set(user=owner, kind="submission.scored", email=False)
    receiver = start_receiver([503] * 5)
    try:
        hook = webhook_create(user=owner, url=receiver.url, events=["submission.scored"], secret=SECRET)
        upload_static(owner, mini_benchmark)
        notifications_dispatch()
        Webhook.objects.filter(pk=hook.pk).update(failing_since=timezone.now() - dt.timedelta(hours=25))
        notifications_dispatch()
        hook.refresh_from_db()
        assert not hook.is_active and "HTTP 503" in hook.disabled_reason
        (message,) = smtp_server.wait_for("owner@example.org")
        assert "webhook disabled" in message.subject and receiver.url in message.subject
        sent = len(receiver.requests)
        upload_static(owner, mini_benchmark, a=[float(i) for i in range(10)])
        notifications_dispatch()
        assert len(receiver.requests) == sent  # nothing goes to a disabled webhook
    finally:
        receiver.close()


def test_mail_has_text_html_scores_rank_and_an_unsubscribe_link_that_works_logged_out(
        db, users, mini_benchmark, smtp_server, client):
    owner = users["owner"]
    owner.email = "owner@example.org"
    owner.save()
    sub = upload_static(owner, mini_benchmark)
    notifications_dispatch()
    (message,) = smtp_server.wait_for("owner@example.org")
    assert f"submission #{sub.pk}" in message.subject and "is scored" in message.subject
    html = message.message.get_body(preferencelist=("html",)).get_content()
    text = message.text
    # The truth itself as predictions: Spearman 1 on both properties, recall 1: score 1.
    assert "public: " in text and " score 1," in text and "Rank on the public leaderboard: 1 of 1." in text
    assert f"/submissions/{sub.pk}/" in text and f"/submissions/{sub.pk}/" in html
    assert "private" not in text.split("Rank")[0]  # the private split is not revealed
    unsubscribe = next(link for link in message.links() if "/notifications/unsubscribe/" in link)
    assert str(message.message["List-Unsubscribe"]).strip() == f"<{unsubscribe}>"
    assert unsubscribe in html
    page = client.get(urlsplit(unsubscribe).path)  # no session: logged out
    assert page.status_code == 200 and b"no longer be mailed" in page.content
    upload_static(owner, mini_benchmark, a=[float(i) for i in range(10)])
    notifications_dispatch()
    assert len(smtp_server.to("owner@example.org")) == 1
    forged = client.get("/notifications/unsubscribe/not-a-token/")
    assert forged.status_code == 400


def test_mail_defaults_round_resolved_on_interim_off(db, users, tmp_path, smtp_server):
    owner = users["owner"]
    owner.email = "owner@example.org"
    owner.save()
    bench = signals_benchmark(tmp_path)
    gen = SignalsRound(60, seed=3)
    round_ = round_open(benchmark=bench, data=gen.universe_csv(), filename="u.csv")
    submission_create(user=owner, benchmark=bench, data=gen.submission_csv(gen.predictions(0.5, 1)), filename="p.csv")
    round_close(round_=round_)
    round_truth_load(round_=round_, data=gen.truth_csv(gen.target(2.0, 5)), filename="t.csv", final=False,
                     as_of=dt.date(2026, 1, 5))
    score_latest(round_)
    round_truth_load(round_=round_, data=gen.truth_csv(gen.target(1.0, 6)), filename="t.csv", final=True)
    score_latest(round_)
    notifications_dispatch()
    (message,) = smtp_server.wait_for("owner@example.org")
    assert "round 1 is resolved" in message.subject
    assert "owner (submission #" in message.text and "rank 1 of 1" in message.text and "corr" in message.text
    assert MailDelivery.objects.count() == 1


def test_webhook_api_add_list_deliveries_redeliver_remove(db, users, api_for, mini_benchmark, receiver,
                                                          allow_local):
    api = api_for("owner")
    bad = api.post("/api/webhooks/", {"url": "ftp://x", "events": ["nope"]}, format="json")
    assert bad.status_code == 400 and "url" in bad.json()["errors"][0]["message"]
    made = api.post("/api/webhooks/", {"url": receiver.url, "events": ["submission.scored"]}, format="json")
    assert made.status_code == 201
    hook_id, secret = made.json()["id"], made.json()["secret"]
    assert [h["url"] for h in api.get("/api/webhooks/").json()] == [receiver.url]
    assert api_for("member").get(f"/api/webhooks/{hook_id}/deliveries/").status_code == 404
    upload_static(users["owner"], mini_benchmark)
    notifications_dispatch()
    (row,) = api.get(f"/api/webhooks/{hook_id}/deliveries/").json()
    assert (row["event"], row["status_code"], row["attempt"], row["error"]) == ("submission.scored", 200, 1, "")
    assert receiver.requests[0].signature_ok(secret)
    again = api.post(f"/api/webhooks/{hook_id}/deliveries/{row['delivery']}/redeliver/")
    assert again.status_code == 202
    notifications_dispatch()
    assert [r["attempt"] for r in api.get(f"/api/webhooks/{hook_id}/deliveries/").json()] == [2, 1]
    assert receiver.requests[0].json["id"] == receiver.requests[1].json["id"]
    assert api.delete(f"/api/webhooks/{hook_id}/").status_code == 204
    assert api.get("/api/webhooks/").json() == []


def test_settings_page_saves_mail_choices_and_lists_webhooks(db, users, client, receiver, allow_local,
                                                             mini_benchmark):
    client.force_login(users["owner"])
    page = client.get("/notifications/")
    assert page.status_code == 200 and b'name="mail_submission.scored" checked' in page.content
    assert b'name="mail_round.interim" checked' not in page.content
    client.post("/notifications/", {"action": "mail", "mail_round.interim": "on"})
    page = client.get("/notifications/")
    assert b'name="mail_round.interim" checked' in page.content
    assert b'name="mail_submission.scored" checked' not in page.content
    added = client.post("/notifications/", {"action": "add_webhook", "url": receiver.url,
                                            "events": ["submission.scored"]})
    assert added.status_code == 200 and b"Webhook added" in added.content
    assert "no-store" in added["Cache-Control"]  # the secret is on it, once: no browser or proxy keeps it
    refused = client.post("/notifications/", {"action": "add_webhook", "url": "not a url", "events": []})
    assert refused.status_code == 400 and b"webhook URL starts with https://" in refused.content
    upload_static(users["owner"], mini_benchmark)
    notifications_dispatch()
    hook = Webhook.objects.get(user=users["owner"])
    profile = client.get("/accounts/profile/")
    assert receiver.url.encode() in profile.content and b"submission.scored" in profile.content
    log = client.get(f"/notifications/webhooks/{hook.pk}/")
    assert log.status_code == 200 and b"Redeliver" in log.content and b">200<" in log.content
    delivery = WebhookDelivery.objects.get()
    client.post(f"/notifications/webhooks/{hook.pk}/", {"delivery": delivery.pk})
    notifications_dispatch()
    assert len(receiver.requests) == 2


def test_signature_matches_the_documented_formula():
    from leaderboard.core.webhookhttp import signature

    body = json.dumps({"id": "x"}).encode()
    expected = hmac.new(b"k" * 16, b"1700000000." + body, hashlib.sha256).hexdigest()
    assert signature("k" * 16, 1700000000, body) == f"sha256={expected}"


def _team_of_two(users, benchmark):
    """``owner``'s team on ``benchmark`` with ``member`` in it; everyone has an address."""
    from leaderboard.core.services.teams import invite_accept, team_create, team_invite

    for name in ("owner", "member", "outsider"):
        users[name].email = f"{name}@example.org"
        users[name].save()
    team = team_create(user=users["owner"], benchmark=benchmark, name="the-team")
    invite_accept(invite_id=team_invite(team=team, by=users["owner"], username="member").pk, user=users["member"])
    return team


def test_a_teams_submission_is_told_to_every_member_once(db, users, mini_benchmark, smtp_server, receiver,
                                                          allow_local):
    """The team is the entrant: a teammate's upload is told to every member, by mail and to their
    webhooks, once each, and worded as the team's to those who did not upload it; nobody outside the
    team hears of it."""
    team = _team_of_two(users, mini_benchmark)
    webhook_create(user=users["owner"], url=receiver.url, events=["submission.scored"], secret=SECRET)
    sub = upload_static(users["member"], mini_benchmark)
    assert sub.entrant_id == team.entrant_id
    notifications_dispatch()
    notifications_dispatch()  # the sweep again: nothing twice
    (to_member,) = smtp_server.wait_for("member@example.org")
    (to_owner,) = smtp_server.wait_for("owner@example.org")
    assert f"] Your submission #{sub.pk} to " in to_member.subject
    assert f"] Your team the-team's submission #{sub.pk} to " in to_owner.subject
    assert "Rank on the public leaderboard: 1 of 1." in to_owner.text and f"/submissions/{sub.pk}/" in to_owner.text
    got = receiver.wait(1)
    assert [(r.json["event"], r.json["data"]["submission"]) for r in got] == [("submission.scored", sub.pk)]
    assert got[0].signature_ok(SECRET)
    assert smtp_server.to("outsider@example.org") == [] and MailDelivery.objects.count() == 2


def test_a_resolved_rounds_mail_lists_the_teams_model_for_every_member(db, users, tmp_path, smtp_server):
    """A round the team's model took part in is told to every member, with the team's submission, its
    rank and scores, whoever uploaded it."""
    bench = signals_benchmark(tmp_path)
    gen = SignalsRound(60, seed=3)
    round_ = round_open(benchmark=bench, data=gen.universe_csv(), filename="u.csv")
    _team_of_two(users, bench)
    sub = submission_create(user=users["member"], benchmark=bench, data=gen.submission_csv(gen.predictions(0.5, 1)),
                            filename="p.csv").submission
    round_close(round_=round_)
    round_truth_load(round_=round_, data=gen.truth_csv(gen.target(1.0, 6)), filename="t.csv", final=True)
    score_latest(round_)
    notifications_dispatch()
    for name in ("owner", "member"):
        (message,) = smtp_server.wait_for(f"{name}@example.org")
        assert "round 1 is resolved" in message.subject, name
        assert f"the-team (submission #{sub.pk}): rank 1 of 1" in message.text and "corr" in message.text, name
    assert smtp_server.to("outsider@example.org") == []


def test_a_deleted_accounts_webhooks_hear_nothing_more(db, users, client, tmp_path, receiver, allow_local):
    owner, member = users["owner"], users["member"]
    webhook_create(user=owner, url=receiver.url.replace("/hook", "/owner"), events=["round.opened"], secret=SECRET)
    webhook_create(user=member, url=receiver.url, events=["round.opened"], secret=SECRET)
    client.force_login(owner)
    assert client.post("/accounts/delete/", {"password": "pw-owner-123"}).status_code == 302
    bench = signals_benchmark(tmp_path)
    round_open(benchmark=bench, data=SignalsRound(60, seed=4).universe_csv(), filename="u.csv")
    notifications_dispatch()
    receiver.wait(1)
    notifications_dispatch()
    # The member still hears of the round; the deleted account's URL is never called again.
    assert [(r.path, r.json["event"]) for r in receiver.requests] == [("/hook", "round.opened")]
    assert not Webhook.objects.filter(user=owner).exists()


def test_a_webhook_url_with_non_ascii_characters_is_delivered_and_never_stops_the_others(
        db, users, tmp_path, receiver, allow_local):
    mine = webhook_create(user=users["owner"], url=receiver.url.replace("/hook", "/café hooks"),
                          events=["round.opened"], secret=SECRET)
    other = webhook_create(user=users["member"], url=receiver.url, events=["round.opened"], secret=SECRET)
    bench = signals_benchmark(tmp_path)
    round_open(benchmark=bench, data=SignalsRound(60, seed=5).universe_csv(), filename="u.csv")
    notifications_dispatch()
    receiver.wait(2)
    notifications_dispatch()
    # The path goes out percent-encoded (RFC 3986), as a browser would send it; each attempt is logged once.
    assert sorted(r.path for r in receiver.requests) == ["/caf%C3%A9%20hooks", "/hook"]
    assert all(r.signature_ok(SECRET) for r in receiver.requests)
    assert _attempts(mine) == [(1, 200, True)] and _attempts(other) == [(1, 200, True)]


def test_each_post_of_a_batch_is_signed_and_logged_when_it_is_sent(db, users, api_for, tmp_path, allow_local,
                                                                   settings):
    # Nine webhooks, one batch, eight sending threads: the first eight receivers take 2.5 s to answer,
    # so the ninth POST leaves about 2.5 s after the batch began. A receiver with a replay window
    # compares X-Leaderboard-Timestamp with its own clock: each one must be the time of its own POST,
    # and each attempt's delivered_at the time that attempt was made.
    settings.WEBHOOK_TIMEOUT_SECONDS = 10
    receiver = start_receiver([("sleep", 2.5)] * 8)
    try:
        hooks = [webhook_create(user=users["owner"], url=f"{receiver.url}?n={i}", events=["round.opened"],
                                secret=SECRET) for i in range(9)]
        bench = signals_benchmark(tmp_path)
        round_open(benchmark=bench, data=SignalsRound(60, seed=5).universe_csv(), filename="u.csv")
        notifications_dispatch()
        requests = receiver.wait(9)
        assert len(requests) == 9 and all(r.signature_ok(SECRET) for r in requests)
        arrivals = sorted(r.received_at for r in requests)
        assert arrivals[-1] - arrivals[0] >= 2  # the ninth did go out late
        for r in requests:  # whole unix seconds: a stamp is a second (and the trip) behind
            assert 0 <= r.received_at - int(r.headers["X-Leaderboard-Timestamp"]) < 2, r.path
        api = api_for("owner")
        for hook in hooks:
            (row,) = api.get(f"/api/webhooks/{hook.pk}/deliveries/").json()
            (r,) = [r for r in requests if r.path == urlsplit(hook.url).path + "?" + urlsplit(hook.url).query]
            made = dt.datetime.fromisoformat(row["delivered_at"].replace("Z", "+00:00")).timestamp()
            assert abs(made - r.received_at) < 1.5, (hook.url, row["delivered_at"])
            assert abs(WebhookDelivery.objects.get(webhook=hook).delivered_at.timestamp() - r.received_at) < 1.5
    finally:
        receiver.close()


@pytest.mark.parametrize("secret", [12345678901234567890, ["a-secret-of-the-owner-0123456789"],
                                    {"key": "a-secret-of-the-owner-0123456789"}, True])
def test_a_webhook_secret_that_is_not_a_string_is_refused(db, users, api_for, receiver, allow_local, secret):
    api = api_for("owner")
    refused = api.post("/api/webhooks/", {"url": receiver.url, "events": ["round.opened"], "secret": secret},
                       format="json")
    assert refused.status_code == 400
    (error,) = refused.json()["errors"]
    assert error["column"] == "secret" and "string" in error["message"]
    assert not Webhook.objects.exists()
    made = api.post("/api/webhooks/", {"url": receiver.url, "events": ["round.opened"], "secret": SECRET},
                    format="json")
    assert made.status_code == 201 and "secret" not in made.json()
    assert Webhook.objects.get().secret == SECRET


def test_a_refused_webhook_form_keeps_what_was_typed(db, users, client):
    """After a refusal the form shows the URL, secret and events as sent: not the default events,
    which a user fixing only the secret would otherwise subscribe to without noticing."""
    import re

    client.force_login(users["owner"])
    refused = client.post("/notifications/", {"action": "add_webhook", "url": "https://example.org/my-hook",
                                              "secret": "short", "events": ["round.opened", "round.closed"]})
    assert refused.status_code == 400 and b"16 to 200 characters" in refused.content
    form = refused.content.decode().split('id="webhook-form"', 1)[1].split("</form>", 1)[0]
    checked = re.findall(r'<input type="checkbox" name="events" value="([\w.]+)" checked', form)
    assert checked == ["round.opened", "round.closed"]
    assert 'value="https://example.org/my-hook"' in form
    assert re.search(r'name="secret"[^>]*value="short"', form)
    assert not Webhook.objects.filter(user=users["owner"]).exists()

    # A first visit still offers the defaults.
    form = client.get("/notifications/").content.decode().split('id="webhook-form"', 1)[1]
    checked = re.findall(r'<input type="checkbox" name="events" value="([\w.]+)" checked', form)
    assert checked == ["submission.scored", "round.resolved"]


def test_an_unpublished_benchmarks_events_reach_only_those_who_may_see_it(db, users, tmp_path, receiver,
                                                                           allow_local, settings):
    # An organiser prepares a benchmark hidden from participants ("published": false): a participant's
    # webhook subscribed to every event must not learn of its slug, rounds or deadlines.
    webhook_create(user=users["owner"], url=receiver.url.replace("/hook", "/participant"), events=list(EVENTS),
                   secret=SECRET)
    webhook_create(user=users["organiser"], url=receiver.url.replace("/hook", "/staff"), events=list(EVENTS),
                   secret=SECRET)
    bench = signals_benchmark(tmp_path, slug="hidden-sig")
    bench.is_published = False
    bench.save(update_fields=["is_published"])
    round_ = round_open(benchmark=bench, data=SignalsRound(60, seed=5).universe_csv(), filename="u.csv")
    round_close(round_=round_)
    notifications_dispatch()
    receiver.wait(2)
    notifications_dispatch()
    assert sorted((r.path, r.json["event"]) for r in receiver.requests) == [
        ("/staff", "round.closed"), ("/staff", "round.opened")]
    assert not WebhookDelivery.objects.filter(webhook__user=users["owner"]).exists()


def test_a_deactivated_account_hears_of_nothing(db, users, tmp_path, receiver, allow_local):
    # Staff deactivate an account (is_active off, the admin's way to stop one): its webhooks, still
    # listed, must stop firing; an active account's go on.
    webhook_create(user=users["owner"], url=receiver.url.replace("/hook", "/stopped"), events=list(EVENTS),
                   secret=SECRET)
    webhook_create(user=users["organiser"], url=receiver.url.replace("/hook", "/active"), events=list(EVENTS),
                   secret=SECRET)
    users["owner"].is_active = False
    users["owner"].save(update_fields=["is_active"])
    bench = signals_benchmark(tmp_path, slug="deact-sig")
    round_open(benchmark=bench, data=SignalsRound(60, seed=5).universe_csv(), filename="u.csv")
    notifications_dispatch()
    receiver.wait(1)
    notifications_dispatch()
    assert [(r.path, r.json["event"]) for r in receiver.requests] == [("/active", "round.opened")]
    assert not WebhookDelivery.objects.filter(webhook__user=users["owner"]).exists()


@pytest.mark.parametrize(("url", "says"), [
    ("https://exa mple.org/hook", "contains a space"),
    ("https://example.org/hook\r\nX-Injected: 1", "control character U+000D"),
    ("https://example.org/ho\tok", "control character U+0009"),
])
def test_a_webhook_url_that_can_never_be_called_as_shown_is_refused(db, users, api_for, url, says):
    # A typo'd host or a pasted line break was registered (201) and then failed at every delivery,
    # or was called at another URL than the one listed.
    resp = api_for("owner").post("/api/webhooks/", {"url": url, "events": ["round.opened"]}, format="json")
    assert resp.status_code == 400, resp.content
    assert resp.json()["errors"][0]["column"] == "url" and says in resp.json()["detail"]
    assert not Webhook.objects.exists()


@pytest.mark.parametrize("value", ["abc", "1.5", "-", "99999999999999999999999"])
def test_a_settings_form_naming_no_webhook_or_delivery_is_a_404_not_a_server_error(db, users, client, value):
    hook = webhook_create(user=users["owner"], url="https://example.org/hook", events=["round.opened"], secret=SECRET)
    client.force_login(users["owner"])
    client.raise_request_exception = False
    for action in ("remove_webhook", "enable_webhook"):
        assert client.post("/notifications/", {"action": action, "webhook": value}).status_code == 404
    assert client.post(f"/notifications/webhooks/{hook.pk}/", {"delivery": value}).status_code == 404
    assert Webhook.objects.filter(pk=hook.pk).exists()


def test_no_notification_mail_goes_to_an_address_never_verified(db, users, mini_benchmark, smtp_server):
    # Anyone may sign up with someone else's address and join a team: the address's owner, who never
    # opened the link, got the team's results mailed to them.
    from allauth.account.models import EmailAddress

    _team_of_two(users, mini_benchmark)
    EmailAddress.objects.create(user=users["member"], email="member@example.org", primary=True, verified=False)
    sub = upload_static(users["owner"], mini_benchmark)
    notifications_dispatch()
    (to_owner,) = smtp_server.wait_for("owner@example.org")
    assert f"] Your submission #{sub.pk} to " in to_owner.subject
    assert smtp_server.to("member@example.org") == []
    assert list(MailDelivery.objects.values_list("user__username", flat=True)) == ["owner"]
    # Once verified, the member hears of the team's next result.
    EmailAddress.objects.filter(user=users["member"]).update(verified=True)
    upload_static(users["owner"], mini_benchmark)
    notifications_dispatch()
    assert len(smtp_server.wait_for("member@example.org")) == 1
