"""Settings and URLconf of benchmarks/read_ceiling.py only: the site plus a bare view (never in production).

``/bench/bare/<name>`` answers the bytes of the file ``<name>`` in ``BENCH_BARE_DIR`` (read once, then
kept in memory), as ``application/json`` for ``*.json`` and HTML otherwise: the framework's ceiling
for the same bytes in the same gunicorn processes, through the same middleware.
"""
from __future__ import annotations

import os
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


def __getattr__(name: str):
    # The URLconf is read at the first request, long after settings: only then may it import the site's URLs.
    if name != "urlpatterns":
        raise AttributeError(name)
    from django.urls import path

    from leaderboard import urls

    return [path("bench/bare/<str:name>", bare), *urls.urlpatterns]
