"""A person in a real browser, at 1280 and at 390 px: sign up, open the mailed link, upload; create a
team, invite, accept from the invitation, upload as the team. The mail goes through a real SMTP server
in this process; the site is the live server, the browser headless Chromium. Screenshots go to
data/test/people/ for a look by eye."""
from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.contrib.auth import get_user_model

from leaderboard.core.models import LeaderboardRow, Submission
from leaderboard.core.services.benchmarks import benchmark_load_bundle
from leaderboard.demo import properties as demo
from tests.browser.test_narrow_screen import _CULPRITS, _width

pytestmark = pytest.mark.browser

PASSWORD = "correct-horse-battery"
SHOTS = Path(__file__).resolve().parents[2] / "data" / "test" / "people"
WIDTHS = [1280, 390]


@pytest.fixture
def site(transactional_db, tmp_path):
    bundle = demo.write_bundle(tmp_path / "bundle")
    benchmark = benchmark_load_bundle(bundle).benchmark
    valid = demo.baseline_submissions(bundle)["moe_baseline"]
    (tmp_path / "predictions.csv").write_bytes(valid)
    return benchmark, tmp_path / "predictions.csv"


@pytest.fixture(params=WIDTHS, ids=[f"{w}px" for w in WIDTHS])
def sized(request, chromium):
    """A fresh context at the width the test runs at; errors of scripts and sub-resources collected."""
    width = request.param
    context = chromium.new_context(viewport={"width": width, "height": 900}, device_scale_factor=1)
    context.set_default_timeout(15_000)
    page = context.new_page()
    page.width = width
    page.errors = []
    page.on("pageerror", lambda exc: page.errors.append(str(exc)))
    page.on("console", lambda msg: page.errors.append(msg.text) if msg.type == "error"
            and not msg.text.startswith("Failed to load resource") else None)
    try:
        yield page
    finally:
        context.close()


def _fits(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}-{page.width}.png"), full_page=True)
    if page.width < 1000:
        assert _width(page) <= page.width, (name, page.evaluate(_CULPRITS, page.width))


def _login(page, base, username):
    page.goto(f"{base}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORD)
    page.click("form.form button[type=submit]")
    page.wait_for_url(f"{base}/")


def _upload(page, base, slug, path) -> None:
    page.goto(f"{base}/b/{slug}/submit/")
    page.set_input_files("input[type=file]", str(path))
    page.click("#submit-form button[type=submit]")
    page.wait_for_url(re.compile(r".*/submissions/\d+/$"))


def test_sign_up_verify_and_first_upload(live_server, sized, smtp_server, site):
    benchmark, predictions = site
    page, base = sized, live_server.url
    page.goto(f"{base}/")
    page.click("a:has-text('Sign up')")
    page.fill("input[name=username]", "ada")
    page.fill("input[name=email]", "ada@example.org")
    page.fill("input[name=password1]", PASSWORD)
    page.fill("input[name=password2]", PASSWORD)
    _fits(page, "signup")
    page.click("#signup-form button[type=submit]")
    page.wait_for_url(f"{base}/")
    assert page.locator(".nav-user").inner_text() == "ada"

    # Before the link: the submit page says why uploads wait, and the button is off.
    page.goto(f"{base}/b/{benchmark.slug}/submit/")
    assert "Verify your email address to upload" in page.locator("#unverified").inner_text()
    assert page.locator("#submit-form button[type=submit]").first.is_disabled()
    _fits(page, "submit-unverified")

    (mail,) = smtp_server.wait_for("ada@example.org")
    (link,) = [u for u in mail.links() if "/accounts/confirm-email/" in u]
    page.goto(base + urlsplit(link).path)
    assert "ada@example.org" in page.locator("#email-confirm").inner_text()
    _fits(page, "confirm")
    page.click("#email-confirm button[type=submit]")
    page.wait_for_load_state("load")

    _upload(page, base, benchmark.slug, predictions)
    sub = Submission.objects.get(user__username="ada")
    assert page.url == f"{base}/submissions/{sub.pk}/"
    _fits(page, "first-upload")
    assert page.errors == [], page.errors


def test_team_creation_invitation_and_a_team_upload(live_server, sized, site):
    benchmark, predictions = site
    page, base = sized, live_server.url
    User = get_user_model()
    User.objects.create_user("ada", password=PASSWORD)
    User.objects.create_user("grace", password=PASSWORD)

    _login(page, base, "ada")
    page.goto(f"{base}/b/{benchmark.slug}/")
    page.click("a:has-text('Teams')")
    page.fill("#create-team input[name=name]", "Lovelace Lab")
    _fits(page, "team-create")
    page.click("#create-team button[type=submit]")
    page.wait_for_selector("#my-team")
    page.fill("#invite-form input[name=username]", "grace")
    page.click("#invite-form button[type=submit]")
    page.wait_for_selector(".msg-success")
    assert "Invited, no answer yet: grace" in page.locator("#my-team").inner_text()
    _fits(page, "team-page")
    page.click("form.inline button:has-text('Log out')")

    _login(page, base, "grace")
    page.goto(f"{base}/accounts/profile/")
    invites = page.locator("#invites")
    assert "Lovelace Lab" in invites.inner_text()
    _fits(page, "profile-invite")
    invites.locator("button:has-text('Accept')").click()
    page.wait_for_selector("#my-team")
    assert "You joined team Lovelace Lab" in page.locator(".messages").inner_text()
    assert "ada, grace" in page.locator("#my-team").inner_text()

    page.goto(f"{base}/b/{benchmark.slug}/submit/")
    assert "Submitting as team Lovelace Lab" in page.locator("#team-note").inner_text()
    _fits(page, "team-submit")
    _upload(page, base, benchmark.slug, predictions)
    sub = Submission.objects.get(user__username="grace")
    assert sub.entrant.name == "Lovelace Lab"

    page.goto(f"{base}/b/{benchmark.slug}/")
    row = page.locator("table.leaderboard tr[data-entrant='Lovelace Lab']")
    row.wait_for()
    assert "mine" in (row.get_attribute("class") or "")  # a member's own team is marked
    assert LeaderboardRow.objects.filter(entrant=sub.entrant, split="public").exists()
    _fits(page, "team-board")
    assert page.errors == [], page.errors


def test_profile_tokens_table_stays_inside_its_card(live_server, sized, transactional_db):
    """The API tokens card is half the page at 1280 px: with times kept on one line the table ran 13 px past
    the card's border, its Revoke button sticking out of the card. On a phone it made the page scroll
    sideways (498 px at 390); there it scrolls in its own frame."""
    from leaderboard.core.services.tokens import token_create, token_used

    page, base = sized, live_server.url
    user = get_user_model().objects.create_user("tok", password=PASSWORD, email="tok@example.org")
    token, _ = token_create(user=user, name="command line")
    token_used(token=token)
    _login(page, base, "tok")
    page.goto(f"{base}/accounts/profile/")
    frame_past_card, table_scrolls = page.evaluate("""() => {
      const table = document.querySelector('table.tokens'), card = table.closest('.card');
      const frame = table.parentElement;
      return [frame.getBoundingClientRect().right - card.getBoundingClientRect().right,
              frame.scrollWidth > frame.clientWidth]; }""")
    _fits(page, "profile-tokens")
    assert frame_past_card <= -1, frame_past_card  # inside the card's border
    if page.width >= 1000:
        assert not table_scrolls  # the whole row, Revoke included, in view
    assert not page.errors
