"""What services answer: ``Accepted`` (an upload stored, or one already stored answered again)
and ``SubmissionRejected``, the one application error (``scoring.errors.ValidationFailed``)
under the name services use."""
from __future__ import annotations

from dataclasses import dataclass

from scoring.errors import ValidationFailed

from leaderboard.core.models import Submission

# The one application error (scoring.errors.ValidationFailed), under the name services use:
# the request cannot be accepted; ``status`` is the HTTP status to answer with.
SubmissionRejected = ValidationFailed


@dataclass
class Accepted:
    submission: Submission
    remaining_today: int
    # True when an Idempotency-Key matched an earlier upload: nothing new was stored or counted.
    replayed: bool = False
