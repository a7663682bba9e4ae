"""The session engine with Redis (``SESSION_ENGINE``): Django's ``cached_db``, whose session can also
come from a cache read the request makes anyway.

A signed-in benchmark page reads its board's generation from the cache before anything else
(``views.anonymous_page_cache``); reading the session in the same round trip (``prefetch_key``,
``prefetched``) saves one of the page's few round trips (issue 26). What is read is what
``cached_db`` would read itself: the same key in the same cache, and a miss (None) still goes to the
database. Session keys, data and expiry are ``cached_db``'s, so sessions made before this engine was
named stay valid.
"""
from __future__ import annotations

from django.conf import settings
from django.contrib.sessions.backends import cached_db


class SessionStore(cached_db.SessionStore):
    _prefetched: dict | None = None

    def prefetch_key(self, alias: str = "default") -> str | None:
        """The cache key this session's data is read from, when that is in the cache ``alias`` and
        there is a session to read (a key in the cookie); else None."""
        if self.session_key is None or settings.SESSION_CACHE_ALIAS != alias:
            return None
        return self.cache_key

    def prefetched(self, data: dict | None) -> None:
        """What the cache held at ``prefetch_key()``, read by the caller: the next ``load`` uses it
        instead of reading the cache again (None: ``load`` reads as always)."""
        self._prefetched = data

    def load(self):
        data, self._prefetched = self._prefetched, None
        return data if data is not None else super().load()
