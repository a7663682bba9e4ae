"""Browser fixtures: headless system Chromium driven by Playwright, and a real scoring worker.

Chromium missing: the browser tests are skipped with the reason locally, and fail
when CI=true (a CI run must never pass by skipping them).
"""
from __future__ import annotations

import os
import shutil

import pytest

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
VIEWPORT = {"width": 1280, "height": 900}


def _unavailable(reason: str):
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason}; CI=true, so the browser tests must run", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def chromium():
    """One headless Chromium per test module.

    Module scope, not session: while Playwright's sync API is active an event
    loop is set in this thread, and Django's ORM refuses to run beside one
    unless DJANGO_ALLOW_ASYNC_UNSAFE is set (safe here: the loop is idle while
    test code runs). Both end with the module, so later tests run as usual.
    """
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the playwright package is not installed (pip install -e '.[dev]')")
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)) and not shutil.which(CHROMIUM):
        _unavailable(f"Chromium not found at {CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)")
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            try:
                yield browser
            finally:
                browser.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture
def page(chromium):
    """A fresh browser context (no cookies) and page per test.

    ``page.console_errors`` collects script errors and failed sub-resources
    (a missing stylesheet, a failing poll); a page answered with a 4xx on
    purpose (a rejected upload) is not one.
    """
    context = chromium.new_context(viewport=VIEWPORT)
    context.set_default_timeout(15_000)
    pg = context.new_page()
    pg.console_errors = []

    def on_console(msg):
        if msg.type == "error" and not msg.text.startswith("Failed to load resource"):
            pg.console_errors.append(msg.text)

    def on_response(response):
        if response.status >= 400 and response.request.resource_type != "document":
            pg.console_errors.append(f"{response.status} {response.url}")

    pg.on("console", on_console)
    pg.on("response", on_response)
    pg.on("pageerror", lambda exc: pg.console_errors.append(str(exc)))
    try:
        yield pg
    finally:
        context.close()


@pytest.fixture
def scoring_worker(transactional_db):
    """A real Celery worker process consuming the scoring queue of this test's database.

    Slowed by SCORING_DELAY_SECONDS so a page has time to show the status
    change happen (queued/scoring -> scored) rather than find it done.
    """
    from tests.support.worker import purge_broker, start_worker, stop_worker, wait_until_ready

    purge_broker()
    proc = start_worker({"SCORING_DELAY_SECONDS": "1.5"})
    try:
        wait_until_ready(proc)
        yield proc
    finally:
        # Printed, so pytest shows it beside a failure (captured output is hidden otherwise).
        print("---- scoring worker log (tail) ----\n" + stop_worker(proc)[-4000:])
