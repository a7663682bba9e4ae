"""Abuse throttles beyond DRF's defaults. The daily submission limit is a domain rule, not one of these.

All key on the client address DRF's ``get_ident`` returns, which reads
X-Forwarded-For only behind ``TRUSTED_PROXY_COUNT`` proxies of ours
(settings ``NUM_PROXIES``), so a client cannot pick a new address per request.
"""
import math

from rest_framework.throttling import ScopedRateThrottle, SimpleRateThrottle


def ratelimit_note(request, *, limit: int, remaining: int, reset_seconds: int) -> None:
    """Leave a throttle's verdict on the request for ``RateLimitHeadersMiddleware`` (``RateLimit-Limit``,
    ``-Remaining``, ``-Reset``). With several throttles on one request, the one with the fewest left is told."""
    http_request = getattr(request, "_request", request)  # DRF's Request wraps the one middleware sees
    previous = getattr(http_request, "ratelimit", None)
    if previous is None or remaining < previous[1]:
        http_request.ratelimit = (limit, remaining, reset_seconds)


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


class ScopedHeadersThrottle(RateLimitHeadersMixin, ScopedRateThrottle):
    """DRF's scoped throttle (the view's ``throttle_scope``: upload, verify) with the RateLimit headers."""


class _AddressThrottle(SimpleRateThrottle):
    def get_cache_key(self, request, view):
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}


class LoginThrottle(_AddressThrottle):
    """Per client address, for the browser login form."""

    scope = "login"


class SignupThrottle(_AddressThrottle):
    """Per client address, for the sign-up form: accounts are how the daily limit is shared out."""

    scope = "signup"


class VisitorRateThrottle(RateLimitHeadersMixin, SimpleRateThrottle):
    """DRF's ``anon`` and ``user`` throttles as one: a signed-in user is counted per account at
    the ``user`` rate, anyone else per address at the ``anon`` rate.

    The same limits and cache keys as the pair, but one cache read and one write per
    request: with both installed every anonymous request was counted twice (the user
    throttle falls back to the address), four cache round trips on every public read.
    """

    scope = "anon"

    def allow_request(self, request, view):
        self.scope = "user" if request.user and request.user.is_authenticated else "anon"
        self.rate = self.get_rate()
        self.num_requests, self.duration = self.parse_rate(self.rate)
        return super().allow_request(request, view)

    def get_cache_key(self, request, view):
        if self.scope == "user":
            ident = request.user.pk
        else:
            ident = self.get_ident(request)
        return self.cache_format % {"scope": self.scope, "ident": ident}
