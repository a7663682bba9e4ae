"""Token authentication against hashed API tokens (``Authorization: Token KEY``)."""
from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions

# token_create is re-exported: the tests and benchmark scripts create their tokens through it.
from leaderboard.core.services.tokens import token_create as token_create
from leaderboard.core.services.tokens import token_for_key, token_used


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
        token = token_for_key(key)
        if token is None or not token.user.is_active:
            raise exceptions.AuthenticationFailed("Invalid or revoked token; create a new one on your profile page.")
        token_used(token=token)
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
