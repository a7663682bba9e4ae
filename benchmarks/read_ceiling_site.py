"""Settings and URLconf of benchmarks/read_ceiling.py only: the site plus a bare view (never in production).

``/bench/bare/<name>`` answers the bytes of the file ``<name>`` in ``BENCH_BARE_DIR`` (read once, then
kept in memory), as ``application/json`` for ``*.json`` and HTML otherwise: the framework's ceiling
for the same bytes in the same gunicorn processes, through the same middleware.

With ``BENCH_VIEWER_MEMO`` set (``read_ceiling.py --viewer-memo``), each process makes the signed-in
page's viewer query once per session and keeps the answer (``memoise_viewer``): what a cache of the
viewer's row could gain at most. Not the site as it is: a kept answer would miss a changed password,
team or quota.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

from leaderboard.settings import *  # noqa: F403 -- the site's settings, with only the URLconf replaced

ROOT_URLCONF = __name__
handler400 = "leaderboard.core.views.bad_request"
handler500 = "leaderboard.core.views.server_error"


@lru_cache(maxsize=16)
def _bare_bytes(name: str) -> bytes:
    return (Path(os.environ["BENCH_BARE_DIR"]) / Path(name).name).read_bytes()


def bare(request, name: str):
    from django.http import HttpResponse

    content_type = "application/json" if name.endswith(".json") else "text/html; charset=utf-8"
    return HttpResponse(_bare_bytes(name), content_type=content_type)


def memoise_viewer() -> tuple[list[int], Callable[[], None]]:
    """``personal._session_viewer`` answering from this process's memory after its first call for a
    session and benchmark (the session is still read, as it would have to be). Returns a one-item list
    counting the answers from memory, and what puts the real function back."""
    from django.contrib.auth import HASH_SESSION_KEY

    from leaderboard.core import personal

    real = personal._session_viewer
    memo: dict = {}
    served = [0]

    def memoised(request, benchmark):
        key = (request.session.session_key, benchmark and benchmark.pk)
        found = memo.get(key)
        if found is None or request.session.get(HASH_SESSION_KEY) is None:
            found = memo[key] = real(request, benchmark)
            return found
        request.user = request._cached_user = found[0]
        served[0] += 1
        return found

    personal._session_viewer = memoised
    return served, lambda: setattr(personal, "_session_viewer", real)


def __getattr__(name: str):
    # The URLconf is read at the first request, long after settings: only then may it import the site's URLs.
    if name != "urlpatterns":
        raise AttributeError(name)
    from django.urls import path

    from leaderboard import urls

    if os.environ.get("BENCH_VIEWER_MEMO"):
        memoise_viewer()
    patterns = globals()["urlpatterns"] = [path("bench/bare/<str:name>", bare), *urls.urlpatterns]  # made once
    return patterns
