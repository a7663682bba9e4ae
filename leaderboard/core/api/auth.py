"""Token authentication against hashed API tokens (``Authorization: Token KEY``)."""
from __future__ import annotations

from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions

from leaderboard.core.models import ApiToken
from leaderboard.core.services.tokens import hash_key, token_create  # noqa: F401  (token_create: kept importable here)


class TokenAuthentication(authentication.BaseAuthentication):
    keyword = "Token"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].lower() not in (b"token", b"bearer"):
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("Send the header as 'Authorization: Token KEY'.")
        try:
            key = header[1].decode()
        except UnicodeError:
            raise exceptions.AuthenticationFailed("The token contains invalid characters.") from None
        token = ApiToken.objects.select_related("user").filter(key_hash=hash_key(key)).first()
        if token is None or not token.user.is_active:
            raise exceptions.AuthenticationFailed("Invalid or revoked token; create a new one on your profile page.")
        now = timezone.now()
        if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 60:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        return token.user, token

    def authenticate_header(self, request):
        return self.keyword


class TokenScheme(OpenApiAuthenticationExtension):
    """Describes the token header in the OpenAPI schema (the docs page's Authorize button)."""

    target_class = "leaderboard.core.api.auth.TokenAuthentication"
    name = "tokenAuth"

    def get_security_definition(self, auto_schema):
        return {"type": "apiKey", "in": "header", "name": "Authorization",
                "description": "`Token KEY`, with a key from your profile page or `manage.py apitoken`."}
