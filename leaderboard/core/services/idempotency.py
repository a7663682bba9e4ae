"""Idempotent uploads: an upload sent again with the same ``Idempotency-Key`` is answered from the
submission stored the first time, neither stored nor counted again; the key with a different
upload is refused (409). Static and round uploads share it."""
from __future__ import annotations

import hashlib
import json
import logging
from typing import Any

from django.db import IntegrityError

from scoring.errors import RowError

from leaderboard.core.models import Benchmark, Entrant, Submission
from leaderboard.core.quota import QuotaExceeded, quota_remaining
from leaderboard.core.services.answers import Accepted, SubmissionRejected

log = logging.getLogger("leaderboard.submissions")

IDEMPOTENCY_KEY_MAX_LENGTH = 128


def idempotency_key_check(key: str) -> str:
    """The key if it is 1-128 printable ASCII characters without spaces; else a 400."""
    if not 1 <= len(key) <= IDEMPOTENCY_KEY_MAX_LENGTH or any(not 0x21 <= ord(c) <= 0x7E for c in key):
        raise SubmissionRejected([RowError(
            f"Idempotency-Key must be 1 to {IDEMPOTENCY_KEY_MAX_LENGTH} printable ASCII characters without "
            "spaces (a UUID is a good choice)", column="Idempotency-Key")])
    return key


def idempotency_fingerprint(*, benchmark: Benchmark, entrant: Entrant, data: bytes | None, predictions: Any,
                             round_number: int | str | None = None) -> str:
    """What a keyed upload asked for (benchmark, entrant, round and the bytes or the JSON sent), hashed."""
    digest = hashlib.sha256(f"{benchmark.pk}:{entrant.pk}:{'' if round_number is None else round_number}:".encode())
    if data is not None:
        digest.update(b"file:" + data)
    else:
        digest.update(b"json:" + json.dumps(predictions, sort_keys=True, separators=(",", ":"), default=str).encode())
    return digest.hexdigest()


class IdempotencyCollision:
    """Turns a lost race between two uploads with the same key into the winner's answer.

    Concurrent retries both miss the first lookup; the second one's insert then
    fails on the unique (user, idempotency_key) constraint, or on the daily
    limit if the first took the last slot. Its transaction is rolled back
    (the slot given back) and ``replay`` holds the stored submission's answer.
    """

    def __init__(self, *, user, key: str | None, fingerprint: str):
        self.user, self.key, self.fingerprint = user, key, fingerprint
        self.replay: Accepted | None = None

    def __enter__(self) -> IdempotencyCollision:
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if self.key is None or exc_type is None or not issubclass(exc_type, (IntegrityError, QuotaExceeded)):
            return False
        self.replay = idempotent_replay(user=self.user, key=self.key, fingerprint=self.fingerprint)
        if self.replay is not None:
            log.info("a concurrent retry with the same Idempotency-Key stored submission %s first (%s); "
                     "answering with it", self.replay.submission.pk, exc_type.__name__)
        return self.replay is not None


def idempotent_replay(*, user, key: str, fingerprint: str) -> Accepted | None:
    """The answer to a repeated upload with ``key``, or None when the key is new."""
    sub = Submission.objects.filter(user=user, idempotency_key=key).select_related("benchmark").first()
    if sub is None:
        return None
    if sub.idempotency_fingerprint != fingerprint:
        raise SubmissionRejected([RowError(
            f"this Idempotency-Key was already used for a different upload (submission {sub.pk}); "
            "use a new key for a new upload", column="Idempotency-Key")], status=409)
    return Accepted(submission=sub, remaining_today=quota_remaining(user=user, benchmark=sub.benchmark),
                    replayed=True)
