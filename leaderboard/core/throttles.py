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
