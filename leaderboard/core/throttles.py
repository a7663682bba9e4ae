"""Abuse throttles beyond DRF's defaults. The daily submission limit is a domain rule, not one of these.

All key on the client address DRF's ``get_ident`` returns, which reads
X-Forwarded-For only behind ``TRUSTED_PROXY_COUNT`` proxies of ours
(settings ``NUM_PROXIES``), so a client cannot pick a new address per request.

On Redis every throttle here decides in one round trip (``AtomicRateThrottle``), and a view may
name cache keys to read in the same trip (``throttle_reads``): the board API reads its board's
generation that way, so a cached answer costs one Redis call.
"""
import math

from rest_framework.throttling import ScopedRateThrottle, SimpleRateThrottle

# What throttles leave for later steps of the same request, in its WSGI environ (``request.META``), so
# that they hold from the board replay before Django (``leaderboard/core/api/replay.py``) to the view:
RATELIMIT = "leaderboard.ratelimit"  # (limit, remaining, reset seconds), for the RateLimit-* headers
PASSED = "leaderboard.throttles_passed"  # the throttle keys this request was counted under already
PREFETCHED = "leaderboard.cache_prefetched"  # {key: value} of the cache keys a view asked to read


def _meta(request) -> dict:
    return getattr(request, "_request", request).META  # DRF's Request wraps the one middleware sees


def ratelimit_note(request, *, limit: int, remaining: int, reset_seconds: int) -> None:
    """Leave a throttle's verdict on the request for ``ApiHeadersMiddleware`` (``RateLimit-Limit``,
    ``-Remaining``, ``-Reset``). With several throttles on one request, the one with the fewest left is told."""
    meta = _meta(request)
    previous = meta.get(RATELIMIT)
    if previous is None or remaining < previous[1]:
        meta[RATELIMIT] = (limit, remaining, reset_seconds)


def prefetched(request) -> dict | None:
    """The values of the keys the view's ``throttle_reads`` named, read in the throttle's round trip."""
    return _meta(request).get(PREFETCHED)


class AtomicRateThrottle(SimpleRateThrottle):
    """DRF's ``SimpleRateThrottle`` (the same rule, limits, keys and ``wait``), deciding in one atomic
    round trip where the cache offers it (``ResilientRedisCache.throttle_hit``) instead of a read and
    a write: concurrent requests of one client can no longer both pass on the same count. Elsewhere
    (the file cache of the embedded default, Redis unreachable) DRF's own read and write.

    A view with ``throttle_reads(request) -> tuple of cache keys`` has them read in the same trip;
    their values are left on the request for the view (``prefetched``)."""

    num_requests: int  # set by SimpleRateThrottle.__init__ (or per request), which DRF's stubs leave out
    duration: int

    def allow_request(self, request, view):
        if self.rate is None:
            return True
        self.key = self.get_cache_key(request, view)
        if self.key is None:
            return True
        meta = _meta(request)
        if self.key in meta.get(PASSED, ()):
            return True  # counted once already (the board replay or the board API's fast path, then its full view)
        allowed = self._decide(request, view, meta)
        if allowed:
            meta[PASSED] = (*meta.get(PASSED, ()), self.key)
        return allowed

    def _decide(self, request, view, meta: dict) -> bool:
        hit_of = getattr(self.cache, "throttle_hit", None)
        hit = None
        if hit_of is not None:
            reads = getattr(view, "throttle_reads", None)
            read = tuple(reads(request)) if reads is not None else ()
            self.now = self.timer()
            hit = hit_of(self.key, now=self.now, duration=self.duration, limit=self.num_requests, read=read)
        if hit is None:  # not Redis, or Redis unreachable: DRF's read and write (the fallback cache)
            return super().allow_request(request, view)
        # What ``wait`` and the RateLimit headers read of a history: its length and its oldest time.
        self.history = [hit.oldest] * hit.count if hit.oldest is not None else []
        if read:
            meta[PREFETCHED] = hit.values
        return hit.allowed


class RateLimitHeadersMixin:
    """For a ``SimpleRateThrottle``: after deciding, note the limit, what is left and when the oldest
    counted request leaves the window, from the history the throttle has just read (no cache call more)."""

    def allow_request(self, request, view):
        allowed = super().allow_request(request, view)  # type: ignore[misc]  # a mixin of SimpleRateThrottle
        history = getattr(self, "history", None)  # unset when the throttle does not apply (no rate, no key)
        if history is not None:
            reset = math.ceil(history[-1] + self.duration - self.now) if history else 0  # type: ignore[attr-defined]
            ratelimit_note(request, limit=self.num_requests,  # type: ignore[attr-defined]
                           remaining=max(0, self.num_requests - len(history)),  # type: ignore[attr-defined]
                           reset_seconds=max(0, reset))
        return allowed


class _AtomicScopedRateThrottle(ScopedRateThrottle, AtomicRateThrottle):
    pass


class ScopedHeadersThrottle(RateLimitHeadersMixin, _AtomicScopedRateThrottle):
    """DRF's scoped throttle (the view's ``throttle_scope``: upload, verify) with the RateLimit headers."""


class _AddressThrottle(AtomicRateThrottle):
    def get_cache_key(self, request, view):
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}


class LoginThrottle(_AddressThrottle):
    """Per client address, for the browser login form."""

    scope = "login"


class SignupThrottle(_AddressThrottle):
    """Per client address, for the sign-up form: accounts are how the daily limit is shared out."""

    scope = "signup"


class VisitorRateThrottle(RateLimitHeadersMixin, AtomicRateThrottle):
    """DRF's ``anon`` and ``user`` throttles as one: a signed-in user is counted per account at
    the ``user`` rate, anyone else per address at the ``anon`` rate.

    The same limits and cache keys as the pair, but one cache round trip per request on Redis
    (``AtomicRateThrottle``): with both installed every anonymous request was counted twice (the
    user throttle falls back to the address), four cache round trips on every public read.
    """

    scope = "anon"

    def allow_request(self, request, view):
        self.scope = "user" if request.user and request.user.is_authenticated else "anon"
        self.rate = self.get_rate()
        self.num_requests, self.duration = self.parse_rate(self.rate)  # type: ignore[assignment]  # a rate is set
        return super().allow_request(request, view)

    def get_cache_key(self, request, view):
        if self.scope == "user":
            ident = request.user.pk
        else:
            ident = self.get_ident(request)
        return self.cache_format % {"scope": self.scope, "ident": ident}
