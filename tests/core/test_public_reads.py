"""Public reads answered from the cache alone (issue 26): the board API and the anonymous benchmark page
come from one cache read without a query, are the same bytes as when built, show a board change or a
benchmark hidden on the very next request, and never give one visitor another's page."""
from __future__ import annotations

import datetime as dt
import os
import re
import time

import pytest
from django.core.cache import cache
from django.utils import timezone

from leaderboard.core import selectors
from leaderboard.core.models import Round, Submission
from tests.conftest import MINI_ROWS
from tests.core.test_board_cache import _upload
from tests.support.threads import at_once

PAGE = "/b/mini-props/"
API = "/api/benchmarks/mini-props/leaderboard/"

pytestmark = pytest.mark.django_db(transaction=True)


def _uncached(client, url, settings):
    settings.BOARD_CACHE_SECONDS = 0
    try:
        return client.get(url)
    finally:
        settings.BOARD_CACHE_SECONDS = 300


def test_public_reads_cached_board_api_is_the_uncached_answer_from_no_query(
        mini_benchmark, users, client, settings, django_assert_num_queries):
    _upload(users["owner"], mini_benchmark, None)
    built = client.get(API)  # builds the answer and stores it for anyone
    assert built.status_code == 200 and [r["entrant"] for r in built.json()["rows"]] == ["owner"]
    with django_assert_num_queries(0):
        cached = client.get(API)
    assert cached.status_code == 200 and cached["Content-Type"] == "application/json"
    uncached = _uncached(client, API, settings)
    assert cached.content == built.content == uncached.content
    # Other parameters are other answers: page 2 of 1-row pages is empty, and is not page 1.
    assert client.get(f"{API}?page_size=1&page=2").json()["rows"] == []
    with django_assert_num_queries(0):
        assert client.get(API).content == built.content


def test_public_reads_board_change_shows_on_the_next_request(mini_benchmark, users, client):
    _upload(users["owner"], mini_benchmark, None)
    for _ in range(3):  # built, then from the cache, then from this process's copy of it
        assert [r["entrant"] for r in client.get(API).json()["rows"]] == ["owner"]
        html = client.get(PAGE).content.decode()
        assert re.findall(r'data-entrant="([^"]+)"', html) == ["owner"]
    # member predicts A in reverse order (Spearman -1 on A): below owner, on the next request of each.
    _upload(users["member"], mini_benchmark, [r["A"] for r in reversed(MINI_ROWS)])
    assert Submission.objects.get(user=users["member"]).status == "scored"
    assert [r["entrant"] for r in client.get(API).json()["rows"]] == ["owner", "member"]
    html = client.get(PAGE).content.decode()
    assert re.findall(r'data-entrant="([^"]+)"', html) == ["owner", "member"]


def test_public_reads_benchmark_unpublished_is_gone_on_the_next_request(mini_benchmark, users, client):
    _upload(users["owner"], mini_benchmark, None)
    for url in (API, PAGE):
        for _ in range(3):  # built, then from the cache, then from this process's copy of it
            assert client.get(url).status_code == 200
    mini_benchmark.is_published = False
    mini_benchmark.save()  # as the admin does: no service involved
    for url in (API, PAGE):
        assert client.get(url).status_code == 404, url
    # Staff still see it; what they see is not stored for anyone else.
    client.force_login(users["organiser"])
    assert client.get(PAGE).status_code == 200 and client.get(API).status_code == 200
    client.logout()
    for url in (API, PAGE):
        assert client.get(url).status_code == 404, url
    mini_benchmark.is_published = True
    mini_benchmark.save()
    assert client.get(API).status_code == 200


def test_public_reads_private_split_shared_only_once_revealed(mini_benchmark, users, client):
    _upload(users["owner"], mini_benchmark, None)
    client.force_login(users["organiser"])  # staff may read the private board before the reveal
    assert client.get(f"{API}?split=private").status_code == 200
    client.logout()
    assert client.get(f"{API}?split=private").status_code == 403  # not served from the staff's answer
    assert client.get(f"{API}?split=private").status_code == 403


def test_public_reads_anonymous_page_never_shows_a_logged_in_page_or_the_reverse(mini_benchmark, users, client):
    _upload(users["owner"], mini_benchmark, None)
    anonymous = client.get(PAGE)
    assert "Log in" in anonymous.content.decode() and "csrftoken" not in anonymous.cookies
    assert client.get(PAGE).content == anonymous.content  # from the cache, the same bytes
    client.force_login(users["owner"])
    html = client.get(PAGE).content.decode()
    assert 'title="Signed in">owner<' in html and "csrfmiddlewaretoken" in html
    client.force_login(users["member"])
    html = client.get(PAGE).content.decode()
    assert 'title="Signed in">member<' in html and "owner<" not in html.split("</header>")[0]
    client.logout()
    html = client.get(PAGE).content.decode()
    assert "Signed in" not in html and "csrfmiddlewaretoken" not in html and html == anonymous.content.decode()


def test_public_reads_anonymous_page_cache_hit_is_the_page_as_built(mini_benchmark, users, client, settings):
    _upload(users["owner"], mini_benchmark, None)
    built = client.get(f"{PAGE}?page_size=10")
    hit = client.get(f"{PAGE}?page_size=10")
    uncached = _uncached(client, f"{PAGE}?page_size=10", settings)
    assert hit.content == built.content == uncached.content
    for header in ("Content-Type", "Vary", "Content-Security-Policy", "X-Frame-Options"):
        assert hit.get(header) == built.get(header), header


def test_public_reads_page_with_messages_or_a_session_is_neither_served_nor_stored(mini_benchmark, users, client):
    _upload(users["owner"], mini_benchmark, None)
    client.force_login(users["owner"])
    client.logout()  # an anonymous visitor with a session cookie of their own
    client.cookies["sessionid"] = "not-a-session"
    client.get(PAGE)
    client.cookies.pop("sessionid")
    client.cookies["messages"] = "x"
    client.get(PAGE)
    client.cookies.pop("messages")
    # Nothing of those two requests was stored: no page entry exists yet.
    from leaderboard.core import boardcache

    assert boardcache.public_read("mini-props", ("page", "http://testserver/b/mini-props/")) is None
    client.get(PAGE)
    assert boardcache.public_read("mini-props", ("page", "http://testserver/b/mini-props/")) is not None


def test_public_reads_shared_no_longer_than_the_rounds_next_deadline(mini_benchmark):
    round_ = Round.objects.get(benchmark=mini_benchmark)
    assert selectors.board_shareable_seconds(mini_benchmark.pk, "mini-props") == float("inf")
    round_.closes_at = timezone.now() + dt.timedelta(seconds=90)
    round_.save()
    assert 80 < selectors.board_shareable_seconds(mini_benchmark.pk, "mini-props") <= 90
    assert selectors.board_shareable_seconds(mini_benchmark.pk, "other-slug") == 0
    assert selectors.board_shareable_seconds(mini_benchmark.pk, "mini-props", private=True) == 0


@pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="the Redis cache only")
def test_public_reads_redis_client_is_kept_between_operations(db):
    cache.set("probe", 1)
    assert cache.get("probe") == 1
    wrapper = cache._cache
    assert wrapper.get_client(write=True) is wrapper.get_client(write=True)
    assert wrapper.get_client() is wrapper.get_client()


def test_public_reads_a_missed_page_is_rendered_once_for_visitors_arriving_together(
        mini_benchmark, users, monkeypatch):
    """The board changed and six visitors, anonymous and signed in, ask for its page at once: one
    thread renders it (``boardcache.single_flight``) while the others wait for it and are answered
    what it stored, each the page they would have got."""
    import threading

    from django.test import Client

    from leaderboard.core.boardcache import boards_changed

    _upload(users["owner"], mini_benchmark, None)
    real = selectors.board_shareable_seconds
    stored = []

    def slow_store(*args, **kwargs):  # reached once per render whose page is stored: make it take a while
        stored.append(threading.get_ident())
        time.sleep(0.5)
        return real(*args, **kwargs)

    monkeypatch.setattr(selectors, "board_shareable_seconds", slow_store)
    boards_changed(mini_benchmark.pk)
    clients = [Client() for _ in range(6)]
    for client in clients[3:]:
        client.force_login(users["member"])
    pages = at_once(len(clients), lambda i: clients[i].get(PAGE))
    assert len(stored) == 1, stored
    assert sorted(pages) == list(range(6)) and all(page.status_code == 200 for page in pages.values())
    assert len({pages[i].content for i in range(3)}) == 1 and b"Signed in" not in pages[0].content
    assert all(b'title="Signed in">member<' in pages[i].content for i in range(3, 6))


def test_public_reads_a_missed_board_answer_is_built_once_for_readers_arriving_together(
        mini_benchmark, users, monkeypatch):
    """After a board change six API readers ask for the board at once: its JSON is built by one thread
    (``cached_read`` through ``single_flight``) and every reader gets the same answer."""
    import threading

    from django.test import Client
    from rest_framework.renderers import JSONRenderer

    from leaderboard.core.boardcache import boards_changed

    _upload(users["owner"], mini_benchmark, None)
    real, built = JSONRenderer.render, []

    def slow_render(self, *args, **kwargs):  # the board's JSON, built: make it take a while
        built.append(threading.get_ident())
        time.sleep(0.5)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(JSONRenderer, "render", slow_render)
    boards_changed(mini_benchmark.pk)
    answers = at_once(6, lambda i: Client().get(API, REMOTE_ADDR=f"10.9.0.{i + 1}"))
    assert len(built) == 1, built
    assert sorted(answers) == list(range(6)) and all(a.status_code == 200 for a in answers.values())
    assert len({a.content for a in answers.values()}) == 1 and b'"owner"' in answers[0].content
