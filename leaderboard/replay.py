"""The commonest public reads answered before Django's middleware, from the whole stack's own answer (issue 26).

Scripts and dashboards poll a board's JSON (``GET /api/benchmarks/<slug>/leaderboard/``) and visitors
open a benchmark's page (``GET /b/<slug>/``) without signing in, and most of what such a read cost
was Django itself: building the request, fourteen middleware, resolving the URL, for an answer that
is the same bytes for everyone until the board changes. ``PublicReplay`` wraps the WSGI application
(``leaderboard/wsgi.py``). The first time a request of a given shape (the same path, query, host,
scheme, proxy headers, ``Accept`` and ``Accept-Encoding``) is answered from a public cache entry
(``boardcache.public_read``: the board API's fast path, the anonymous page cache; the view leaves
the entry in the environ, ``boardcache.SERVED``), it keeps what the whole stack sent: the status,
every header (content security policy, frame options, ``Vary``, ``Allow``, the client version,
gzip's encoding...) and the body as encoded. A later request of that shape is then

1. for the board API, counted by its own throttle, in the single Redis round trip that also reads
   the board's generation (``api.views.board_read_counted``, what the view's fast path calls);
2. checked against the public entry as the view would read it (``public_read``: current, cached
   for everyone, its visibility decided when it was stored), which must be the one that was kept;
3. sent what was kept, with the headers that belong to one request made afresh: ``X-Request-ID``
   (made before the first step, so that every line logged meanwhile carries it, and kept in the
   environ for Django when the replay hands the request on) and ``RateLimit-*``; the answer is
   counted in ``/metrics``.

Anything else goes to Django unchanged: another path or method; a request carrying credentials, a
cookie, a body or any header outside ``_IGNORED`` and ``_KEYED``; a throttle refusal (Django refuses
it again without counting it, and words the 429); a board that changed (Django answers, counted once:
the throttle marks the request in its environ, and its answer is kept in place of the old one).
Django's gzip adds random bytes to each compressed answer against BREACH, which guesses a secret from
the sizes of answers that reflect the attacker's input beside it; these answers hold no secret (a
page is kept only if it has no CSRF token and set no cookie), so a replay sends one compressed copy
until the board changes.

A process keeps at most ``_ENTRIES`` answers and ``_BYTES`` bytes of them, the least recently replayed
dropped first, and none larger than ``_LARGEST``.
"""
from __future__ import annotations

import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.http.request import HttpHeaders

from leaderboard.core.api.views import board_read_counted
from leaderboard.core.boardcache import SERVED, public_read
from leaderboard.core.metrics import http_observe
from leaderboard.core.middleware import ratelimit_headers, request_id_start
from leaderboard.core.throttles import prefetched

# The reads replayed: the path, and whether the board API's throttle counts them.
_ROUTES = ((re.compile(r"/api/benchmarks/([-a-zA-Z0-9_]+)/leaderboard/\Z"), True),
           (re.compile(r"/b/([-a-zA-Z0-9_]+)/\Z"), False))
# Headers that differ from one request to the next: never kept, made afresh for each replay.
_PER_REQUEST = frozenset({"x-request-id", "ratelimit-limit", "ratelimit-remaining", "ratelimit-reset"})
# Request headers the answer may depend on: part of what a replay must agree on (with the path, the
# query, the scheme and the server's name and port, and the proxy's HTTPS header: ``_keyed``).
_KEYED = ("HTTP_HOST", "HTTP_ACCEPT", "HTTP_ACCEPT_ENCODING", "HTTP_X_FORWARDED_HOST", "HTTP_X_FORWARDED_PORT",
          "HTTP_X_FORWARDED_PROTO")
# Request headers nothing on these paths reads but the throttle (the client's address, read afresh) and
# the request id (browsers send the rest): a request carrying any header outside these two lists goes
# to Django.
_IGNORED = frozenset({
    "HTTP_USER_AGENT", "HTTP_CONNECTION", "HTTP_X_REQUEST_ID", "HTTP_X_FORWARDED_FOR", "HTTP_X_REAL_IP",
    "HTTP_REFERER", "HTTP_CACHE_CONTROL", "HTTP_PRAGMA", "HTTP_ACCEPT_LANGUAGE", "HTTP_DNT", "HTTP_TE",
    "HTTP_KEEP_ALIVE", "HTTP_UPGRADE_INSECURE_REQUESTS", "HTTP_PRIORITY", "HTTP_SEC_GPC", "HTTP_SEC_FETCH_DEST",
    "HTTP_SEC_FETCH_MODE", "HTTP_SEC_FETCH_SITE", "HTTP_SEC_FETCH_USER", "HTTP_SEC_CH_UA", "HTTP_SEC_CH_UA_MOBILE",
    "HTTP_SEC_CH_UA_PLATFORM"})
# What one process keeps: at most this many answers and this many bytes (the bodies kept and the public
# entries' values they were made of, which a kept answer holds in memory), and no answer larger than
# ``_LARGEST``. A board page of a thousand rows is about a megabyte: by count alone, a client asking for
# 128 such pages under made-up query parameters had each process hold a few hundred megabytes.
_ENTRIES = 128
_BYTES = 32 * 1024 * 1024
_LARGEST = 4 * 1024 * 1024


def _route(path: str) -> tuple[str, bool] | None:
    """The benchmark's slug and whether the throttle counts the read, for a path replayed; else None."""
    for pattern, throttled in _ROUTES:
        match = pattern.match(path)
        if match is not None:
            return match.group(1), throttled
    return None


class _Entry(NamedTuple):
    slug: str
    throttled: bool
    parts: tuple  # the public entry's parts the view read (``public_read``)
    served: Any  # the public entry's value the answer was made of
    status: str
    headers: list[tuple[str, str]]  # without ``_PER_REQUEST``
    body: bytes  # as sent (gzip-compressed when the client accepted it)
    size: int  # the bytes it holds (``_size``)


def _size(body: bytes, served: Any) -> int:
    """The bytes an answer kept holds: its body, and the public entry's value (bytes, or a page's
    ``(content, content type, splice)``) unless that is the body itself."""
    value = served[0] if isinstance(served, tuple) and served and isinstance(served[0], bytes) else served
    return len(body) + (len(value) if isinstance(value, bytes) and value is not body else 0)


class _Visitor:
    """What the throttle reads of a request: its environ, and who asks (nobody signed in: no cookie,
    no credentials reach a replay)."""

    user = AnonymousUser()

    def __init__(self, environ: dict) -> None:
        self.META = environ

    @property
    def headers(self) -> HttpHeaders:  # DRF's ``get_ident`` reads X-Forwarded-For there
        return HttpHeaders(self.META)


class PublicReplay:
    """WSGI middleware: ``PublicReplay(django_application)``; see the module's docstring."""

    def __init__(self, app: Callable, *, max_entries: int = _ENTRIES, max_bytes: int = _BYTES,
                 largest: int = _LARGEST) -> None:
        self.app = app
        self.max_entries, self.max_bytes, self.largest = max_entries, max_bytes, min(largest, max_bytes)
        proxy = getattr(settings, "SECURE_PROXY_SSL_HEADER", None)
        self._keyed = ("PATH_INFO", "SCRIPT_NAME", "QUERY_STRING", "wsgi.url_scheme", "SERVER_NAME", "SERVER_PORT",
                       *_KEYED, *((proxy[0],) if proxy and proxy[0] not in _KEYED else ()))
        self._known = frozenset(self._keyed) | _IGNORED
        self._entries: OrderedDict[tuple, _Entry] = OrderedDict()
        self._bytes = 0  # the sizes of the entries kept
        self._lock = threading.Lock()

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        key = self._key(environ)
        if key is None:
            return self.app(environ, start_response)
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
        if entry is None:
            return self._learn(key, environ, start_response)
        started = time.perf_counter()
        request_id = request_id_start(environ)  # first: a line logged from here on is this request's
        try:
            if entry.throttled:
                visitor = _Visitor(environ)
                if not board_read_counted(visitor, entry.slug):
                    return self.app(environ, start_response)  # refused: Django's full view words the 429
                value = public_read(entry.slug, entry.parts, prefetched(visitor))
            else:
                value = public_read(entry.slug, entry.parts)
        except Exception:  # Django answers, and reports it with its request id (counted once)
            return self.app(environ, start_response)
        if value is None or not (value is entry.served or value == entry.served):
            return self._learn(key, environ, start_response)  # counted once: the throttle marked the environ
        start_response(entry.status, [*entry.headers, *ratelimit_headers(environ),
                                      ("X-Request-ID", request_id)])
        http_observe(200, time.perf_counter() - started)
        return [entry.body]

    def _key(self, environ: dict) -> tuple | None:
        """What a request this may answer must agree on with the one whose answer was kept; None: not one."""
        if environ.get("REQUEST_METHOD") != "GET" or environ.get("CONTENT_LENGTH") not in (None, "", "0"):
            return None
        if _route(environ.get("PATH_INFO", "")) is None:
            return None
        known = self._known
        for name in environ:
            if name.startswith("HTTP_") and name not in known:
                return None
        return tuple(environ.get(name) for name in self._keyed)

    def _learn(self, key: tuple, environ: dict, start_response: Callable) -> Iterable[bytes]:
        """Django's answer, kept to replay when it was made of a public entry."""
        seen: list = []

        def capture(status: str, headers: list[tuple[str, str]], exc_info=None):
            seen[:] = [status, headers]
            return start_response(status, headers, exc_info) if exc_info else start_response(status, headers)

        result = self.app(environ, capture)
        served = environ.get(SERVED)
        if (served is None or not seen or not seen[0].startswith("200 ")
                or any(name.lower() == "set-cookie" for name, _ in seen[1])):
            return result
        try:
            body = b"".join(result)
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()
        slug, throttled = _route(environ["PATH_INFO"])  # type: ignore[misc]  # matched in _key
        size = _size(body, served[1])
        entry = _Entry(slug, throttled, served[0], served[1], seen[0],
                       [(n, v) for n, v in seen[1] if n.lower() not in _PER_REQUEST], body, size)
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old.size
            if size <= self.largest:
                self._entries[key] = entry
                self._bytes += size
                while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
                    self._bytes -= self._entries.popitem(last=False)[1].size
        return [body]
