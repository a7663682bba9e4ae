"""Abuse (issue 14, point 3): sign-up throttled per address; a forged X-Forwarded-For buys nothing.

Before: 25 accounts from one address in 7 s, each with its own 5 uploads a day;
and the login throttle keyed on whatever X-Forwarded-For the client sent, so a
random value per request made it unlimited.
"""
from __future__ import annotations

import random

import pytest
from django.contrib.auth import get_user_model

from leaderboard.core.throttles import LoginThrottle, SignupThrottle


def _limit(throttle) -> int:
    return int(throttle().get_rate().split("/")[0])


def _random_address() -> str:
    return ".".join(str(random.randint(1, 254)) for _ in range(4))


def _signup(client, n: int, **headers) -> int:
    return client.post("/accounts/signup/", {"username": f"sock{n}", "email": f"sock{n}@example.org", "password1": "a-long-passphrase-9",
                                             "password2": "a-long-passphrase-9"}, **headers).status_code


def test_abuse_signup_is_throttled_per_address(client, db):
    limit = _limit(SignupThrottle)
    codes = []
    for n in range(limit + 1):
        client.logout()
        codes.append(_signup(client, n, REMOTE_ADDR="203.0.113.7"))
    assert codes == [302] * limit + [429]
    assert get_user_model().objects.filter(username__startswith="sock").count() == limit
    client.logout()
    resp = client.post("/accounts/signup/", {"username": "sockx"}, REMOTE_ADDR="203.0.113.7")
    assert resp.status_code == 429 and int(resp["Retry-After"]) > 0
    assert "Too many sign-ups" in resp.content.decode()
    assert _signup(client, 99, REMOTE_ADDR="198.51.100.1") == 302  # another address is not affected


def test_abuse_random_forwarded_for_does_not_bypass_the_login_throttle(client, users):
    limit = _limit(LoginThrottle)
    codes = [client.post("/accounts/login/", {"username": "owner", "password": "wrong"},
                         HTTP_X_FORWARDED_FOR=_random_address()).status_code for _ in range(limit + 1)]
    assert codes == [200] * limit + [429]


def test_abuse_the_admin_login_is_throttled_with_the_login_form(client, users):
    # /admin/login/ takes any account's password and was not throttled at all: 25 wrong guesses at the
    # organiser's password in a row were all answered, so the login form's limit could be walked around.
    limit = _limit(LoginThrottle)
    codes = [client.post("/admin/login/", {"username": "organiser", "password": f"guess-{n}"},
                         REMOTE_ADDR="203.0.113.7").status_code for n in range(limit + 1)]
    assert codes == [200] * limit + [429]
    refused = client.post("/admin/login/", {"username": "organiser", "password": "pw-organiser-123"},
                          REMOTE_ADDR="203.0.113.7")
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    assert "Too many login attempts" in refused.content.decode()
    assert "_auth_user_id" not in client.session  # the right password, refused unread: not logged in
    # One budget for both forms: the user's login form is refused from that address too...
    assert client.post("/accounts/login/", {"username": "organiser", "password": "pw-organiser-123"},
                       REMOTE_ADDR="203.0.113.7").status_code == 429
    # ... and another address logs in to the admin.
    other = client.post("/admin/login/?next=/admin/", {"username": "organiser", "password": "pw-organiser-123",
                                                       "next": "/admin/"}, REMOTE_ADDR="198.51.100.1")
    assert other.status_code == 302 and other["Location"] == "/admin/"
    assert client.get("/admin/", REMOTE_ADDR="198.51.100.1").status_code == 200


def test_abuse_random_forwarded_for_does_not_bypass_the_signup_throttle(client, db):
    limit = _limit(SignupThrottle)
    codes = []
    for n in range(limit + 1):
        client.logout()
        codes.append(_signup(client, n, HTTP_X_FORWARDED_FOR=_random_address()))
    assert codes[-1] == 429


def test_abuse_behind_one_trusted_proxy_the_address_is_the_one_the_proxy_saw(client, users, settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}  # TRUSTED_PROXY_COUNT=1
    limit = _limit(LoginThrottle)
    # The client forges the left part; the proxy appends the address it saw (always the same here).
    codes = [client.post("/accounts/login/", {"username": "owner", "password": "wrong"},
                         REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR=f"{_random_address()}, 203.0.113.9").status_code
             for _ in range(limit + 1)]
    assert codes == [200] * limit + [429]
    # Another client behind the same proxy has its own allowance.
    other = client.post("/accounts/login/", {"username": "owner", "password": "wrong"},
                        REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="198.51.100.20")
    assert other.status_code == 200


@pytest.mark.parametrize("count,expected", [("0", 0), ("2", 2)])
def test_abuse_trusted_proxy_count_comes_from_the_environment(monkeypatch, count, expected):
    import importlib

    import leaderboard.settings as project_settings

    monkeypatch.setenv("TRUSTED_PROXY_COUNT", count)
    try:
        reloaded = importlib.reload(project_settings)
        assert reloaded.TRUSTED_PROXY_COUNT == expected
        assert reloaded.REST_FRAMEWORK["NUM_PROXIES"] == expected
    finally:
        monkeypatch.delenv("TRUSTED_PROXY_COUNT")
        importlib.reload(project_settings)


def test_abuse_api_reads_limited_per_address_anonymous_and_per_account_signed_in(api_for, monkeypatch):
    # Small rates so the limits are reached in a few requests.
    from rest_framework.test import APIClient

    from leaderboard.core.throttles import VisitorRateThrottle

    monkeypatch.setattr(VisitorRateThrottle, "THROTTLE_RATES",
                        {**VisitorRateThrottle.THROTTLE_RATES, "anon": "3/min", "user": "5/min"})
    anonymous = APIClient()
    codes = [anonymous.get("/api/benchmarks/", REMOTE_ADDR="203.0.113.7").status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]
    refused = anonymous.get("/api/benchmarks/", REMOTE_ADDR="203.0.113.7")
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    assert refused.json()["detail"]  # JSON, saying why
    assert anonymous.get("/api/benchmarks/", REMOTE_ADDR="198.51.100.1").status_code == 200  # another address

    # Signed in from the exhausted address: counted per account, at the user rate.
    owner = api_for("owner")
    codes = [owner.get("/api/benchmarks/", REMOTE_ADDR="203.0.113.7").status_code for _ in range(6)]
    assert codes == [200] * 5 + [429]
    # Another account from the same address has its own allowance.
    assert api_for("member").get("/api/benchmarks/", REMOTE_ADDR="203.0.113.7").status_code == 200
