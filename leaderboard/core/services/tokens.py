"""API tokens: only the SHA-256 of each key is stored; the key is shown once, when created."""
from __future__ import annotations

import datetime as dt
import hashlib
import secrets

from django.utils import timezone

from leaderboard.core.models import ApiToken

# How stale ``last_used_at`` may get: a busy client does not write its token's row on every request.
LAST_USED_RESOLUTION = dt.timedelta(seconds=60)


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def token_create(*, user, name: str = "") -> tuple[ApiToken, str]:
    """Create a token; returns it and the key, which is shown once and never stored."""
    key = secrets.token_hex(20)
    token = ApiToken.objects.create(user=user, name=name[:80], prefix=key[:8], key_hash=hash_key(key))
    return token, key


def token_for_key(key: str) -> ApiToken | None:
    """The token whose key is ``key``, with its user, or None."""
    return ApiToken.objects.select_related("user").filter(key_hash=hash_key(key)).first()


def token_used(*, token: ApiToken) -> None:
    """Record that ``token`` was just used (at most once a minute: ``LAST_USED_RESOLUTION``)."""
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)


def token_revoke(*, user, token_id: str) -> bool:
    """Delete ``user``'s token ``token_id`` (its primary key as sent); False when there was none
    (already revoked, another user's, or not an id at all)."""
    if not (token_id.isascii() and token_id.isdigit() and len(token_id) < 19):
        return False
    deleted, _ = ApiToken.objects.filter(user=user, pk=int(token_id)).delete()
    return deleted > 0
