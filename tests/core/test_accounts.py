"""Accounts people can trust: sign-up with a verified email before a first upload, password
reset and email change by mailed links, account deletion. Every mail goes through a real SMTP
server in the test process (``smtp_server``), and the links in it are followed."""
from __future__ import annotations

import re
from urllib.parse import urlsplit

from allauth.account.models import EmailAddress
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from rest_framework.test import APIClient

from leaderboard.core.api.auth import token_create
from leaderboard.core.models import ApiToken, Entrant, LeaderboardRow, Submission
from leaderboard.core.services.submissions import submission_score
from leaderboard.core.services.uploads import submission_create
from tests.conftest import MINI_ROWS, submission_csv

PASSWORD = "a-long-passphrase-9"


def _path(url: str) -> str:
    return urlsplit(url).path


def _signup(client, username="ada", email="ada@example.org"):
    return client.post("/accounts/signup/", {"username": username, "email": email, "password1": PASSWORD,
                                             "password2": PASSWORD})


def _token_client(user) -> APIClient:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token_create(user=user)[1]}")
    return api


def _upload(api, slug="mini-props"):
    return api.post(f"/api/benchmarks/{slug}/submissions/",
                    {"file": SimpleUploadedFile("p.csv", submission_csv(MINI_ROWS))}, format="multipart")


def _confirm(client, mail) -> None:
    (link,) = [u for u in mail.links() if "/accounts/confirm-email/" in u]
    page = client.get(_path(link))
    assert page.status_code == 200 and "Confirm your email address" in page.content.decode()
    assert client.post(_path(link)).status_code == 302


def test_signup_mails_a_link_and_uploads_wait_for_it(client, smtp_server, mini_benchmark):
    resp = _signup(client)
    assert resp.status_code == 302
    user = get_user_model().objects.get(username="ada")
    assert Entrant.objects.filter(owner=user, name="ada").exists()
    (mail,) = smtp_server.wait_for("ada@example.org")
    assert "[Leaderboard]" in mail.subject

    # Before the link: browsing and downloads are open, uploads are refused by every surface with the reason.
    assert client.get("/b/mini-props/").status_code == 200
    assert client.get("/b/mini-props/example/").status_code == 200
    assert client.get("/b/mini-props/cases/?format=csv").status_code == 200
    page = client.get("/b/mini-props/submit/").content.decode()
    assert "Verify your email address to upload" in page and "ada@example.org" in page
    browser = client.post("/b/mini-props/submit/", {"file": SimpleUploadedFile("p.csv", submission_csv(MINI_ROWS))})
    assert browser.status_code == 403
    api = _token_client(user)
    refused = _upload(api)
    assert refused.status_code == 403
    assert refused.json()["detail"].startswith("verify your email address first: open the link we mailed to "
                                               "ada@example.org")
    assert Submission.objects.count() == 0

    _confirm(client, mail)
    assert EmailAddress.objects.get(user=user).verified
    assert _upload(api).status_code == 202


def test_signup_needs_a_unique_email(client, smtp_server, db):
    assert _signup(client, email="").status_code == 400
    assert _signup(client, email="not-an-address").status_code == 400
    assert _signup(client).status_code == 302
    client.logout()
    taken = _signup(client, username="grace", email="ADA@example.org")  # the same address in other case
    assert taken.status_code == 400 and "already" in taken.content.decode()
    assert list(get_user_model().objects.values_list("username", flat=True)) == ["ada"]


def test_password_reset_by_mailed_link(client, smtp_server, db):
    _signup(client)
    client.logout()
    smtp_server.messages.clear()
    resp = client.post("/accounts/password/reset/", {"email": "ada@example.org"})
    assert resp.status_code == 302 and client.get(resp["Location"]).status_code == 200
    (mail,) = smtp_server.wait_for("ada@example.org")
    (link,) = [u for u in mail.links() if "/accounts/password/reset/key/" in u]
    form = client.get(_path(link), follow=True)  # the key moves into the session, out of the address bar
    assert "Choose a new password" in form.content.decode()
    done = client.post(form.redirect_chain[-1][0], {"password1": "a-new-passphrase-7", "password2": "a-new-passphrase-7"})
    assert done.status_code == 302
    assert client.post("/accounts/login/", {"username": "ada", "password": PASSWORD}).status_code == 200  # refused
    assert client.post("/accounts/login/", {"username": "ada", "password": "a-new-passphrase-7"}).status_code == 302
    client.logout()  # the address logs in as well as the username
    assert client.post("/accounts/login/", {"username": "ada@example.org",
                                            "password": "a-new-passphrase-7"}).status_code == 302
    # The link works once.
    client.logout()
    again = client.get(_path(link), follow=True)
    assert "This link no longer works" in again.content.decode()


def test_email_change_is_verified_at_the_new_address_before_it_replaces_the_old(client, smtp_server, db):
    _signup(client)
    _confirm(client, smtp_server.wait_for("ada@example.org")[0])
    smtp_server.messages.clear()
    resp = client.post("/accounts/email/", {"action_add": "", "email": "ada@lab.example.org"})
    assert resp.status_code == 302
    user = get_user_model().objects.get(username="ada")
    assert user.email == "ada@example.org"  # unchanged until the new address is verified
    (mail,) = smtp_server.wait_for("ada@lab.example.org")
    _confirm(client, mail)
    user.refresh_from_db()
    assert user.email == "ada@lab.example.org"
    assert list(EmailAddress.objects.filter(user=user).values_list("email", "verified", "primary")) == [
        ("ada@lab.example.org", True, True)]
    # The old address is told, so a stolen session cannot quietly take the account.
    (notice,) = smtp_server.wait_for("ada@example.org")
    assert "email" in notice.subject.lower()


def test_deleting_an_account_keeps_its_entrants_on_boards_under_a_neutral_name(client, smtp_server, mini_benchmark,
                                                                                users):
    owner = users["owner"]
    sub = submission_create(user=owner, benchmark=mini_benchmark, data=submission_csv(MINI_ROWS), filename="p.csv")
    submission_score(submission_id=sub.submission.pk)
    row = LeaderboardRow.objects.get(submission=sub.submission, split="public")
    entrant = row.entrant
    _, key = token_create(user=owner)
    client.force_login(owner)
    assert client.get("/b/mini-props/").content.decode().count(">owner<") >= 1
    assert client.post("/accounts/delete/", {"password": "wrong"}).status_code == 400
    assert client.post("/accounts/delete/", {"password": "pw-owner-123"}).status_code == 302
    owner.refresh_from_db()
    assert not owner.is_active and owner.username.startswith(f"deleted-{owner.pk}-") and owner.email == ""
    assert ApiToken.objects.filter(user=owner).count() == 0
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert api.get("/api/benchmarks/").status_code == 401  # the token died
    assert client.post("/accounts/login/", {"username": "owner", "password": "pw-owner-123"}).status_code == 200
    board = APIClient().get("/api/benchmarks/mini-props/leaderboard/").json()["rows"]
    assert [(r["entrant"], r["score"]) for r in board] == [(f"former-entrant-{entrant.pk}", row.score)]
    assert "owner" not in client.get("/b/mini-props/").content.decode().split("<tbody>")[1].split("</tbody>")[0]


def test_accounts_made_by_staff_and_demo_users_may_upload(mini_benchmark, db, capsys):
    call_command("apitoken", "scripted", "--create")
    key = capsys.readouterr().out.strip()
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert _upload(api).status_code == 202
    made = get_user_model().objects.create_user("by-admin", email="x@example.org", password="pw-admin-123")
    assert _upload(_token_client(made)).status_code == 202


def test_unverified_links_say_where_to_resend(client, smtp_server, db):
    _signup(client)
    html = client.get("/accounts/profile/").content.decode()
    assert "Verify your email address to upload" in html and "not verified" in html
    resent = client.post("/accounts/email/", {"action_send": "", "email": "ada@example.org"})
    assert resent.status_code == 302
    # allauth sends at most one confirmation per address every few minutes: the first was the sign-up's.
    assert len(smtp_server.wait_for("ada@example.org")) == 1
    assert re.search(r"confirm", smtp_server.to("ada@example.org")[0].text, re.I)


def test_social_login_is_off_by_default_and_the_environment_switches_it_on(client, db, settings):
    import os
    import subprocess
    import sys
    from pathlib import Path

    assert "allauth.socialaccount" not in settings.INSTALLED_APPS
    assert client.get("/accounts/github/login/").status_code == 404
    assert "Or log in with" not in client.get("/accounts/login/").content.decode()
    code = ("import django; django.setup(); from django.conf import settings; from django.urls import reverse; "
            "print(reverse('github_login'), settings.SOCIALACCOUNT_PROVIDERS['github']['APPS'][0]['client_id'])")
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "leaderboard.settings", "SOCIAL_LOGIN_PROVIDERS": "github",
           "SOCIAL_LOGIN_GITHUB_CLIENT_ID": "the-id", "SOCIAL_LOGIN_GITHUB_SECRET": "the-secret"}
    out = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[2], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["/accounts/github/login/", "the-id"]
    del env["SOCIAL_LOGIN_GITHUB_SECRET"]
    refused = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[2], env=env,
                             capture_output=True, text=True, timeout=120)
    assert "set SOCIAL_LOGIN_GITHUB_CLIENT_ID and SOCIAL_LOGIN_GITHUB_SECRET too" in refused.stderr


def test_removing_the_only_unverified_address_does_not_lift_the_upload_refusal(client, smtp_server, mini_benchmark):
    # A participant who cannot (or will not) open the link tries the email page's remove action on
    # their one address: with no address on record the account would look like one made by staff.
    _signup(client)
    user = get_user_model().objects.get(username="ada")
    page = client.post("/accounts/email/", {"action_remove": "", "email": "ada@example.org"}, follow=True)
    assert "You cannot remove your primary email address (ada@example.org)" in page.content.decode()
    assert list(EmailAddress.objects.filter(user=user).values_list("email", "verified")) == [
        ("ada@example.org", False)]
    refused = _upload(_token_client(user))
    assert refused.status_code == 403 and "verify your email address first" in refused.json()["detail"]
    assert Submission.objects.count() == 0


def test_a_staff_made_account_stays_verified_after_its_owner_opens_the_email_page_or_resets_the_password(
        client, smtp_server, mini_benchmark):
    # Made in the admin (or createsuperuser) with an address: it may upload, and keeps that right when
    # its owner looks at their email page or resets a forgotten password (no link was ever mailed).
    made = get_user_model().objects.create_user("by-admin", email="Kim@Example.org", password=PASSWORD)
    api = _token_client(made)
    assert _upload(api).status_code == 202
    assert client.post("/accounts/login/", {"username": "by-admin", "password": PASSWORD}).status_code == 302
    page = client.get("/accounts/email/").content.decode()
    assert "waiting for its link" not in page and "verified" in page
    client.logout()
    assert client.post("/accounts/password/reset/", {"email": "kim@example.org"}).status_code == 302
    (mail,) = smtp_server.wait_for("kim@example.org")
    assert "/accounts/password/reset/key/" in " ".join(mail.links())
    assert _upload(api).status_code == 202
    assert list(EmailAddress.objects.filter(user=made).values_list("verified", "primary")) == [(True, True)]


def test_no_one_can_take_the_name_a_deleted_accounts_entrant_gets_or_pose_as_a_deleted_account(
        client, smtp_server, mini_benchmark, users, api_for):
    # The owner's entrant becomes former-entrant-<id> when they delete their account. A participant who
    # took that name first (an entrant, a team or a username) made the deletion fail with a server error.
    owner = users["owner"]
    sub = submission_create(user=owner, benchmark=mini_benchmark, data=submission_csv(MINI_ROWS), filename="p.csv")
    entrant = sub.submission.entrant
    squat = f"Former-Entrant-{entrant.pk}"
    team = api_for("member").post("/api/benchmarks/mini-props/teams/", {"name": squat}, format="json")
    assert team.status_code == 400 and "former-entrant-" in team.json()["detail"]
    client.force_login(users["member"])
    page = client.post("/accounts/profile/", {"action": "create_entrant", "name": squat, "description": ""})
    assert "former-entrant-" in page.content.decode()
    client.logout()
    for name in (f"former-entrant-{entrant.pk}", "deleted-3-0a1b2c3d"):
        refused = _signup(client, username=name, email=f"{name}@example.org")
        assert refused.status_code == 400 and "kept for deleted accounts" in refused.content.decode(), name
    assert not Entrant.objects.filter(name__istartswith="former-entrant-").exists()
    # Even with such a name already there (made before this rule, or by staff), the deletion goes through.
    Entrant.objects.create(owner=users["member"], name=f"former-entrant-{entrant.pk}")
    client.force_login(owner)
    assert client.post("/accounts/delete/", {"password": "pw-owner-123"}).status_code == 302
    entrant.refresh_from_db()
    assert entrant.name.startswith(f"former-entrant-{entrant.pk}-")
    assert not get_user_model().objects.get(pk=owner.pk).is_active


def test_a_lookalike_in_full_width_letters_is_the_same_name(client, smtp_server, mini_benchmark, users, api_for):
    # "ｏwner" (a full-width o) reads as "owner" on every board: Django folds such names (NFKC) for the
    # accounts it makes; sign-up, entrants and teams did not, so anyone could pose as another entrant.
    from leaderboard.core.services.entrants import entrant_default

    entrant_default(users["owner"])  # the entrant "owner" on the boards
    refused = _signup(client, username="\uff4fwner", email="lookalike@example.org")
    assert refused.status_code == 400 and "already exists" in refused.content.decode()
    team = api_for("member").post("/api/benchmarks/mini-props/teams/", {"name": "\uff4fwner"}, format="json")
    assert team.status_code == 409 and "is taken" in team.json()["detail"]
    made = api_for("member").post("/api/benchmarks/mini-props/teams/", {"name": "Ｔｅａｍ ９"}, format="json")
    assert made.status_code == 201 and made.json()["name"] == "Team 9"
    assert not get_user_model().objects.filter(username__icontains="wner").exclude(pk=users["owner"].pk).exists()


def test_a_name_with_an_invisible_character_cannot_pass_for_another(client, smtp_server, mini_benchmark, users,
                                                                    api_for):
    # "ow\u200bner" (a zero-width space inside) and "\u202erenwo" (a right-to-left override: drawn as
    # "owner") both read as "owner" on every board, yet were taken as new names for a team or an entrant.
    from leaderboard.core.services.entrants import entrant_default

    entrant_default(users["owner"])  # the entrant "owner" on the boards
    for name in ("ow\u200bner", "\u202erenwo", "owner\u2060", "\ufeffowner", "own\u00ader", "ow\u3164ner"):
        team = api_for("member").post("/api/benchmarks/mini-props/teams/", {"name": name}, format="json")
        assert team.status_code == 400, (name, team.status_code)
        assert "contains the invisible character U+" in team.json()["detail"], name
        client.force_login(users["member"])
        page = client.post("/accounts/profile/", {"action": "create_entrant", "name": name, "description": ""})
        assert page.status_code == 400 and "invisible character" in page.content.decode(), name
    # A C1 control (U+0085 is a line break to some programs, U+009B starts a terminal escape) neither.
    for name in ("owner\u0085x", "\u009b31mowner"):
        team = api_for("member").post("/api/benchmarks/mini-props/teams/", {"name": name}, format="json")
        assert team.status_code == 400 and "the control character U+" in team.json()["detail"], name
    assert Entrant.objects.filter(owner=users["member"]).count() == Entrant.objects.filter(
        owner=users["member"], name__regex=r"^[ -~]+$").count()  # nothing made of those names
    # Letters of any script and the spaces between words are still names.
    made = api_for("member").post("/api/benchmarks/mini-props/teams/", {"name": "Équipe Ørsted 東京"}, format="json")
    assert made.status_code == 201 and made.json()["name"] == "Équipe Ørsted 東京"
    # The joiners that writing needs, between characters that are not ASCII: an emoji sequence, Persian.
    for name in ("coders \U0001f469\u200d\U0001f4bb", "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645"):
        entrant = client.post("/accounts/profile/", {"action": "create_entrant", "name": name, "description": ""})
        assert entrant.status_code == 302 and Entrant.objects.filter(name=name).exists(), name
    refused = api_for("outsider").post("/api/benchmarks/mini-props/teams/", {"name": "ow\u200dner"}, format="json")
    assert refused.status_code == 400 and "U+200D" in refused.json()["detail"]


def test_the_delete_page_is_no_place_to_guess_a_password(client, users):
    # The delete page checks the account's password; it took any number of guesses, so whoever held a
    # logged-in session (a shared computer) could find the password there. Now it counts as allauth's
    # other password re-entries do: ten a minute per account (ACCOUNT_RATE_LIMITS "reauthenticate").
    client.force_login(users["member"])
    codes = [client.post("/accounts/delete/", {"password": f"guess-{n}"}).status_code for n in range(10)]
    assert codes == [400] * 10
    refused = client.post("/accounts/delete/", {"password": "pw-member-123"})
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    assert "Too many password attempts" in refused.content.decode()
    assert get_user_model().objects.get(pk=users["member"].pk).is_active  # the right password, not read
    # Another account is not affected.
    client.force_login(users["outsider"])
    assert client.post("/accounts/delete/", {"password": "pw-outsider-123"}).status_code == 302
    assert not get_user_model().objects.get(pk=users["outsider"].pk).is_active


def test_a_mail_server_that_cannot_be_reached_is_said_on_the_page_not_a_server_error(client, db, settings):
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = "127.0.0.1", port, 2
    client.raise_request_exception = False
    signed = _signup(client)
    assert signed.status_code == 302
    page = client.get(signed["Location"]).content.decode()
    assert "We could not send the mail to ada@example.org just now" in page
    assert get_user_model().objects.filter(username="ada").count() == 1
    client.logout()
    reset = client.post("/accounts/password/reset/", {"email": "ada@example.org"}, follow=True)
    assert reset.status_code == 200 and "We could not send the mail to ada@example.org" in reset.content.decode()
