"""The board API's anonymous read and the anonymous benchmark page answered before Django
(``leaderboard/replay.py``), through the site's real WSGI application as gunicorn calls it.

What a client sees must not change: the replayed answer is the whole stack's, byte for byte and header for
header but for its own request id and rate-limit count; every request is counted once by the throttle and
a refusal is still a 429; a board that changed, or a benchmark hidden since, is never answered from an
older replay; requests carrying anything the answer could depend on that a replay does not agree on go to
Django. Whether an answer was replayed is seen by counting the requests that reach Django's application.
"""
from __future__ import annotations

import gzip
import json
import logging

import pytest
from django.core.wsgi import get_wsgi_application
from django.test import Client

from leaderboard.core import cache as resilient_cache
from leaderboard.core.metrics import HTTP_RESPONSES
from leaderboard.core.throttles import VisitorRateThrottle
from leaderboard.logconfig import RequestIdFilter
from leaderboard.replay import PublicReplay
from tests.core.test_board_cache import _upload
from tests.support.wsgi import wsgi_get

API = "/api/benchmarks/mini-props/leaderboard/"
PER_REQUEST = {"x-request-id", "ratelimit-remaining", "ratelimit-reset"}

pytestmark = pytest.mark.django_db(transaction=True)


class Site:
    """The WSGI application as ``leaderboard/wsgi.py`` builds it, counting what reaches Django's."""

    def __init__(self, **replay) -> None:
        django_app = get_wsgi_application()
        self.to_django = 0

        def counted(environ, start_response):
            self.to_django += 1
            return django_app(environ, start_response)

        self.app = PublicReplay(counted, **replay)

    def get(self, path: str = API, query: str = "", address: str = "10.9.0.1", method: str = "GET", **headers):
        status, response_headers, body = wsgi_get(self.app, path, query=query, address=address, method=method,
                                                  **headers)
        return Answer(int(status.split()[0]), response_headers, body)


class Answer:
    def __init__(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
        self.status, self.body = status, body
        self.headers = {name.lower(): value for name, value in headers}
        assert len(self.headers) == len(headers), headers  # no header twice

    def json(self):
        raw = gzip.decompress(self.body) if self.headers.get("content-encoding") == "gzip" else self.body
        return json.loads(raw)

    def steady_headers(self) -> dict[str, str]:
        return {k: v for k, v in self.headers.items() if k not in PER_REQUEST}


def _entrants(answer: Answer) -> list[str]:
    return [row["entrant"] for row in answer.json()["rows"]]


def test_a_replayed_answer_is_the_whole_stacks_and_each_read_is_counted_once(mini_benchmark, users, settings,
                                                                              django_assert_num_queries):
    _upload(users["owner"], mini_benchmark, None)
    site = Site()
    limit = int(settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]["anon"].split("/")[0])
    learned = [site.get(address="10.9.1.1") for _ in range(2)]  # builds the board, then the view's fast answer
    assert site.to_django == 2
    with django_assert_num_queries(0):
        replayed = [site.get(address="10.9.1.1", HTTP_X_REQUEST_ID="trace-0123456789") for _ in range(3)]
    assert site.to_django == 2, "the repeated reads were answered before Django"

    whole_stack = Client().get(API, REMOTE_ADDR="10.9.1.2")  # Django's test client: never the replay
    assert whole_stack.status_code == 200
    for answer in (*learned, *replayed):
        assert answer.status == 200
        assert answer.body == whole_stack.content
        assert answer.steady_headers() == {k.lower(): v for k, v in whole_stack.headers.items()
                                           if k.lower() not in PER_REQUEST}
    assert _entrants(replayed[-1]) == ["owner"]
    # One count per read, learned or replayed; the id a proxy passed is kept, a new one made otherwise.
    assert [int(a.headers["ratelimit-remaining"]) for a in (*learned, *replayed)] == [limit - n for n in range(1, 6)]
    assert {a.headers["x-request-id"] for a in replayed} == {"trace-0123456789"}
    assert learned[0].headers["x-request-id"] != learned[1].headers["x-request-id"]


def test_a_changed_board_or_a_hidden_benchmark_is_never_answered_from_an_older_replay(mini_benchmark, users):
    _upload(users["owner"], mini_benchmark, None)
    site = Site()
    for _ in range(3):
        site.get()
    assert _entrants(site.get()) == ["owner"] and site.to_django == 2

    _upload(users["member"], mini_benchmark, [10.0 - i for i in range(10)])
    after = site.get()
    assert sorted(_entrants(after)) == ["member", "owner"]
    assert after.body == Client().get(API, REMOTE_ADDR="10.9.2.2").content
    site.get()
    django_before = site.to_django
    assert sorted(_entrants(site.get())) == ["member", "owner"] and site.to_django == django_before  # replayed anew

    for _ in range(3):
        assert site.get("/b/mini-props/").status == 200  # the page replayed too
    mini_benchmark.is_published = False
    mini_benchmark.save()
    hidden = site.get()
    assert hidden.status == 404 and "rows" not in hidden.json()
    assert site.get("/b/mini-props/").status == 404


def test_gzip_answers_replay_the_same_board_compressed(mini_benchmark, users):
    _upload(users["owner"], mini_benchmark, None)
    site = Site()
    plain = site.get()
    zipped = [site.get(HTTP_ACCEPT_ENCODING="gzip, deflate, br") for _ in range(3)]
    assert site.to_django == 2  # the plain read built the board; the first compressed read was learned
    for answer in zipped:
        assert answer.headers["content-encoding"] == "gzip"
        assert gzip.decompress(answer.body) == plain.body
        assert int(answer.headers["content-length"]) == len(answer.body)
        assert "Accept-Encoding" in answer.headers["vary"]


def test_the_throttle_still_refuses_with_its_429(mini_benchmark, users, monkeypatch):
    monkeypatch.setattr(VisitorRateThrottle, "THROTTLE_RATES", {**VisitorRateThrottle.THROTTLE_RATES, "anon": "4/min"})
    _upload(users["owner"], mini_benchmark, None)
    site = Site()
    answers = [site.get(address="10.9.4.1") for _ in range(6)]
    assert [a.status for a in answers] == [200, 200, 200, 200, 429, 429]
    assert answers[3].headers["ratelimit-remaining"] == "0"
    assert "retry-after" in answers[4].headers and "throttled" in json.dumps(answers[4].json()).lower()
    assert site.get(address="10.9.4.2").status == 200  # another client is counted apart


def test_replayed_reads_count_clients_by_the_address_the_throttle_trusts(mini_benchmark, users, monkeypatch,
                                                                        settings):
    """Behind one trusted proxy the client is the last X-Forwarded-For address; with none (the default) a
    client cannot pick a new address per request by sending the header."""
    monkeypatch.setattr(VisitorRateThrottle, "THROTTLE_RATES", {**VisitorRateThrottle.THROTTLE_RATES, "anon": "3/min"})
    _upload(users["owner"], mini_benchmark, None)
    site = Site()
    spoofed = [site.get(address="10.9.5.1", HTTP_X_FORWARDED_FOR=f"203.0.113.{i}") for i in range(5)]
    assert [a.status for a in spoofed] == [200, 200, 200, 429, 429]

    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}
    proxy = "10.9.5.2"
    first = [site.get(address=proxy, HTTP_X_FORWARDED_FOR="198.51.100.7") for _ in range(4)]
    assert [a.status for a in first] == [200, 200, 200, 429]
    assert site.get(address=proxy, HTTP_X_FORWARDED_FOR="198.51.100.8").status == 200
    assert site.to_django == 5  # the first two reads (built, then kept) and the three refusals; the rest replayed


@pytest.mark.parametrize("extra", [
    {"HTTP_COOKIE": "sessionid=abc"},
    {"HTTP_COOKIE": "theme=dark"},
    {"HTTP_AUTHORIZATION": "Token not-a-token"},
    {"HTTP_IF_NONE_MATCH": '"x"'},
    {"HTTP_ACCEPT": "text/html"},
    {"method": "HEAD"},
    {"query": "format=csv"},
], ids=["session", "cookie", "token", "conditional", "html", "head", "csv"])
def test_requests_a_replay_does_not_fit_go_to_django(mini_benchmark, users, extra):
    _upload(users["owner"], mini_benchmark, None)
    site = Site()
    for _ in range(3):
        site.get()
    before = site.to_django
    site.get(**extra)
    site.get(**extra)
    assert site.to_django == before + 2


def test_a_host_not_allowed_is_djangos_400(mini_benchmark, users):
    _upload(users["owner"], mini_benchmark, None)
    site = Site()
    for _ in range(3):
        site.get()
    assert site.get(HTTP_HOST="evil.example").status == 400


def test_replayed_answers_are_counted_in_metrics(mini_benchmark, users):
    _upload(users["owner"], mini_benchmark, None)
    site = Site()
    for _ in range(3):
        site.get()
    counter = HTTP_RESPONSES.labels(status="2xx")
    before = counter._value.get()
    for _ in range(4):
        site.get()
    assert site.to_django == 2
    assert counter._value.get() == before + 4


PAGE = "/b/mini-props/"
BROWSER = {"HTTP_ACCEPT": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
           "HTTP_ACCEPT_LANGUAGE": "en-GB,en;q=0.9", "HTTP_SEC_FETCH_MODE": "navigate", "HTTP_SEC_FETCH_DEST": "document",
           "HTTP_UPGRADE_INSECURE_REQUESTS": "1"}


def test_the_anonymous_benchmark_page_is_replayed_until_its_board_changes(mini_benchmark, users):
    _upload(users["owner"], mini_benchmark, None)
    site = Site()
    learned = [site.get(PAGE, **BROWSER) for _ in range(2)]  # rendered and stored, then answered from the cache
    replayed = [site.get(PAGE, **BROWSER) for _ in range(3)]
    assert site.to_django == 2
    whole_stack = Client().get(PAGE, HTTP_ACCEPT=BROWSER["HTTP_ACCEPT"])
    for answer in (*learned, *replayed):
        assert answer.status == 200 and answer.body == whole_stack.content
        assert answer.steady_headers() == {k.lower(): v for k, v in whole_stack.headers.items()
                                           if k.lower() not in PER_REQUEST}
        assert "set-cookie" not in answer.headers and "ratelimit-limit" not in answer.headers
    assert b">owner<" in replayed[-1].body and b">member<" not in replayed[-1].body

    _upload(users["member"], mini_benchmark, [10.0 - i for i in range(10)])
    after = site.get(PAGE, **BROWSER)
    assert b">member<" in after.body and after.body == Client().get(PAGE).content

    signed_in = Client()
    signed_in.force_login(users["owner"])
    cookie = "; ".join(f"{k}={m.value}" for k, m in signed_in.cookies.items())
    before = site.to_django
    mine = site.get(PAGE, HTTP_COOKIE=cookie, **BROWSER)
    assert site.to_django == before + 1 and b'title="Signed in">owner<' in mine.body  # never the shared page



def test_what_a_process_keeps_is_bounded_in_bytes_not_only_in_answers(mini_benchmark, users):
    """A client asking for many pages under made-up query parameters (each a page of its own, a large
    board's about a megabyte) must not make each process hold 128 of them: the bytes kept are bounded."""
    _upload(users["owner"], mini_benchmark, None)
    one = Site()
    for _ in range(2):
        one.get(PAGE, query="v=0", **BROWSER)
    (kept,) = one.app._entries.values()
    size = kept.size
    assert size == len(kept.body) > 5_000  # the body is the public entry's content, held once

    site = Site(max_bytes=3 * size + size // 2)
    for i in range(8):
        for _ in range(2):  # rendered and stored, then kept
            assert site.get(PAGE, query=f"v={i}", **BROWSER).status == 200
    entries = list(site.app._entries.values())
    assert len(entries) == 3 and site.app._bytes == sum(e.size for e in entries) <= 3 * size + size // 2
    before = site.to_django
    site.get(PAGE, query="v=7", **BROWSER)
    assert site.to_django == before  # the latest are replayed
    site.get(PAGE, query="v=0", **BROWSER)
    assert site.to_django == before + 1  # the oldest made room

    small = Site(largest=size - 1)  # an answer larger than that is never kept
    for _ in range(4):
        small.get(PAGE, query="v=0", **BROWSER)
    assert small.to_django == 4 and not small.app._entries


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.addFilter(RequestIdFilter())  # as the site's handlers: the request id of the line
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_a_line_logged_while_a_replay_decides_carries_that_requests_id(mini_benchmark, users):
    """The throttle's round trip logs when Redis is unreachable and when it is back: the line must name
    the request that hit it (the id its answer carries), never the one the thread answered before."""
    from django.core.cache import cache

    if not hasattr(cache, "throttle_hit"):
        pytest.skip("Redis only: the file cache of the embedded default has no outage state to report")
    _upload(users["owner"], mini_benchmark, None)
    site = Site()
    for _ in range(3):
        site.get(address="10.9.8.1")
    handler = _Records()
    logger = logging.getLogger("leaderboard.cache")
    logger.addHandler(handler)
    location = cache._location
    try:
        with resilient_cache._state_lock:  # as after an outage: the next call that works says so
            resilient_cache._down_logged.add(location)
        answer = site.get(address="10.9.8.1")
    finally:
        logger.removeHandler(handler)
        resilient_cache._down_logged.discard(location)
    assert answer.status == 200 and site.to_django == 2  # replayed
    assert [(r.getMessage(), r.request_id) for r in handler.records] == [
        ("Redis cache reachable again", answer.headers["x-request-id"])]

    # Handed on to Django (the board changed), the request keeps the one id it was given first.
    _upload(users["member"], mini_benchmark, [10.0 - i for i in range(10)])
    handler.records.clear()
    logger.addHandler(handler)
    try:
        with resilient_cache._state_lock:
            resilient_cache._down_logged.add(location)
        relearned = site.get(address="10.9.8.1")
    finally:
        logger.removeHandler(handler)
        resilient_cache._down_logged.discard(location)
    assert relearned.status == 200 and site.to_django == 3
    assert [r.request_id for r in handler.records] == [relearned.headers["x-request-id"]]


def test_a_refused_read_is_decided_once_before_django_and_once_by_its_full_view(mini_benchmark, users, monkeypatch):
    """The replay's refusal is not asked again by the view's fast path: the full view decides once more
    (a refusal is not counted) and words the 429, two round trips in all."""
    from django.core.cache import cache

    if not hasattr(cache, "throttle_hit"):
        pytest.skip("Redis only: the file cache has no throttle script")
    monkeypatch.setattr(VisitorRateThrottle, "THROTTLE_RATES", {**VisitorRateThrottle.THROTTLE_RATES, "anon": "3/min"})
    _upload(users["owner"], mini_benchmark, None)
    site = Site()
    assert [site.get(address="10.9.7.1").status for _ in range(3)] == [200, 200, 200]
    sent = []
    real = resilient_cache._throttle_script
    monkeypatch.setattr(resilient_cache, "_throttle_script", lambda *a: sent.append(1) or real(*a))
    refused = site.get(address="10.9.7.1")
    assert refused.status == 429 and "retry-after" in refused.headers
    assert len(sent) == 2


def test_an_error_while_a_replay_decides_is_djangos_error_answer(mini_benchmark, users, settings):
    """A cache value this version cannot read (left by another version, say) is not a bare server error:
    Django answers it as any failure, with the request id and the API's JSON."""
    from django.core.cache import cache

    if not hasattr(cache, "throttle_hit"):
        pytest.skip("Redis only")
    # A 500 is no answer the schema declares: this test looks at it without the suite's schema check.
    settings.MIDDLEWARE = [m for m in settings.MIDDLEWARE if m != "tests.support.openapi.SchemaCheckedResponses"]
    _upload(users["owner"], mini_benchmark, None)
    site = Site()
    for _ in range(3):
        site.get()
    raw = cache._cache.get_client(None, write=True)
    generation = cache.make_key(f"boards:{mini_benchmark.pk}:generation")
    assert raw.get(generation) is not None
    raw.set(generation, b"\x80\x05not a pickle")
    failed = site.get(HTTP_X_REQUEST_ID="trace-unreadable-1")
    assert failed.status == 500
    assert failed.headers["x-request-id"] == "trace-unreadable-1"
    assert failed.json()["request_id"] == "trace-unreadable-1"
