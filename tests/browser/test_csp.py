"""The Content-Security-Policy allows no inline script or style, and the pages still work under it.

Chromium reports every blocked script, style element or style attribute as a console error
("Refused to ..."), which ``page.console_errors`` collects; the other browser tests assert none on
their pages (submission, case table, round page and chart), this one on the rest.
"""
from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from leaderboard.core.models import Case
from leaderboard.core.services.benchmarks import benchmark_load_bundle
from tests.conftest import MINI_ROWS, write_properties_bundle

pytestmark = [pytest.mark.browser]


def test_csp_header_is_sent_and_the_api_docs_admin_and_pages_run_under_it(live_server, page, transactional_db,
                                                                          tmp_path):
    benchmark_load_bundle(write_properties_bundle(tmp_path / "mini", MINI_ROWS))
    get_user_model().objects.create_superuser("boss", password="boss-password-1")
    base = live_server.url

    response = page.goto(f"{base}/")
    policy = response.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "style-src 'self'" in policy and "unsafe-inline" not in policy

    # The API docs: Swagger UI starts from a static script and lists the operations.
    page.goto(f"{base}/api/docs/")
    page.wait_for_selector(".opblock-summary-path", timeout=20_000)
    assert page.locator(".opblock").count() >= 20

    for path in ("/", "/b/mini-props/", "/accounts/login/", "/accounts/signup/"):
        page.goto(f"{base}{path}")
        assert page.locator("link[rel=stylesheet]").count() >= 1

    page.goto(f"{base}/admin/login/")
    page.fill("input[name=username]", "boss")
    page.fill("input[name=password]", "boss-password-1")
    page.click("input[type=submit]")
    page.wait_for_url(f"{base}/admin/")
    page.goto(f"{base}/admin/core/benchmark/")
    page.wait_for_selector("#result_list")
    # A case's texts wrap by a class of the admin's own stylesheet, not an inline style.
    page.goto(f"{base}/admin/core/case/{Case.objects.order_by('pk').first().pk}/change/")
    assert page.locator("pre.wrapped").first.evaluate("e => getComputedStyle(e).whiteSpace") == "pre-wrap"
    # The account and team pages (django-allauth's among them) and the staff's fair-play page, signed in.
    for path in ("/accounts/password/reset/", "/accounts/email/", "/accounts/password/change/", "/accounts/delete/",
                 "/accounts/profile/", "/b/mini-props/team/", "/b/mini-props/fair-play/", "/admin/core/team/"):
        assert page.goto(f"{base}{path}").status == 200, path

    assert page.console_errors == [], page.console_errors
