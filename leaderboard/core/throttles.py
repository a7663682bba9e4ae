"""Abuse throttles beyond DRF's defaults. The daily submission limit is a domain rule, not one of these.

All key on the client address DRF's ``get_ident`` returns, which reads
X-Forwarded-For only behind ``TRUSTED_PROXY_COUNT`` proxies of ours
(settings ``NUM_PROXIES``), so a client cannot pick a new address per request.
"""
from rest_framework.throttling import SimpleRateThrottle


class _AddressThrottle(SimpleRateThrottle):
    def get_cache_key(self, request, view):
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}


class LoginThrottle(_AddressThrottle):
    """Per client address, for the browser login form."""

    scope = "login"


class SignupThrottle(_AddressThrottle):
    """Per client address, for the sign-up form: accounts are how the daily limit is shared out."""

    scope = "signup"


class VisitorRateThrottle(SimpleRateThrottle):
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
