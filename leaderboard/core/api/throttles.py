"""Abuse throttles beyond DRF's defaults. The daily submission limit is a domain rule, not one of these."""
from rest_framework.throttling import SimpleRateThrottle


class LoginThrottle(SimpleRateThrottle):
    """Per client address, for the browser login and sign-up forms."""

    scope = "login"

    def get_cache_key(self, request, view):
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}
