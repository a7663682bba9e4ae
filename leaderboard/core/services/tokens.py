"""API tokens: only the SHA-256 of each key is stored; the key is shown once, when created."""
from __future__ import annotations

import hashlib
import secrets

from leaderboard.core.models import ApiToken


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def token_create(*, user, name: str = "") -> tuple[ApiToken, str]:
    """Create a token; returns it and the key, which is shown once and never stored."""
    key = secrets.token_hex(20)
    token = ApiToken.objects.create(user=user, name=name[:80], prefix=key[:8], key_hash=hash_key(key))
    return token, key
