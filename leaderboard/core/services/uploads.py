"""The one door of an upload, for the pages, the API and the commands alike.

``submission_create`` names the entrant, answers an upload sent again with its
``Idempotency-Key`` from the stored submission, then hands a static kind's upload to
``submissions.static_submission_create`` (queued for scoring) and a round kind's to
``round_engine.round_submission_create`` (stored against the open round's universe, scored
when its truth arrives).
"""
from __future__ import annotations

from typing import Any

from scoring.errors import RowError, json_shown, json_type

from leaderboard.core.models import NOTE_MAX_CHARS, Benchmark
from leaderboard.core.services.accounts import upload_refusal
from leaderboard.core.services.answers import Accepted, SubmissionRejected
from leaderboard.core.services.entrants import entrant_resolve
from leaderboard.core.services.idempotency import idempotency_fingerprint, idempotent_replay
from leaderboard.core.services.round_engine import round_submission_create
from leaderboard.core.services.submissions import static_submission_create


def submission_create(
    *,
    user,
    benchmark: Benchmark,
    data: bytes | None = None,
    filename: str = "",
    predictions: Any = None,
    entrant: str | int | None = None,
    idempotency_key: str | None = None,
    round_number: int | str | None = None,
    note: Any = "",
) -> Accepted:
    """Validate an upload (file bytes or a JSON ``predictions`` list, as ``predictions_source``
    reads them from a request) and store it: queued for scoring (a static kind), or accepted
    for its round (a round kind, ``round_number`` naming it when several are open).

    An account whose email address is not verified yet is refused (403, saying so). A member
    of a team on the benchmark uploads as the team (``entrant_resolve``).

    Validation happens before the daily limit is touched, so rejected uploads
    never count. The limit is taken in the same transaction that stores the
    submission; scoring is enqueued when that transaction commits.

    With an ``idempotency_key`` (see ``idempotency_key_check``), an upload the
    same user already sent with that key is answered from the stored
    submission (``replayed``) and neither stored nor counted again; the key
    with a different upload is refused (409).

    ``note``: the uploader's words about the upload (at most ``NOTE_MAX_CHARS``
    characters; longer is a 400 naming ``note``), stored with it and shown to the
    uploader alone. It is not part of what an idempotency key fingerprints.
    """
    refusal = upload_refusal(user)
    if refusal is not None:
        raise SubmissionRejected([RowError(refusal)], status=403)
    note = note_check(note)
    ent = entrant_resolve(user, entrant, benchmark=benchmark)
    fingerprint = ""
    if idempotency_key is not None:
        fingerprint = idempotency_fingerprint(benchmark=benchmark, entrant=ent, round_number=round_number,
                                              data=data, predictions=predictions)
        replay = idempotent_replay(user=user, key=idempotency_key, fingerprint=fingerprint)
        if replay is not None:
            return replay
    if benchmark.kind_impl.is_round_kind:  # rounds with a universe: validated, stored, scored when truth arrives
        return round_submission_create(user=user, benchmark=benchmark, data=data, filename=filename,
                                       predictions=predictions, entrant=ent, round_number=round_number,
                                       idempotency_key=idempotency_key, idempotency_fingerprint=fingerprint,
                                       note=note)
    if round_number not in (None, ""):
        # Not ignored: a client naming a round means one; a static benchmark has none to name.
        raise SubmissionRejected([RowError(f"round {json_shown(round_number, 20)}: {benchmark.slug} is not a round "
                                           "benchmark; leave 'round' out", column="round")])
    return static_submission_create(user=user, benchmark=benchmark, data=data, filename=filename,
                                    predictions=predictions, entrant=ent, idempotency_key=idempotency_key,
                                    idempotency_fingerprint=fingerprint, note=note)


def note_check(note: Any) -> str:
    """An upload's ``note`` as stored: text of at most ``NOTE_MAX_CHARS`` characters, surrounding
    blanks dropped. Raises SubmissionRejected (400, column ``note``) saying what to shorten or fix."""
    if note is None:
        return ""
    if not isinstance(note, str):
        raise SubmissionRejected([RowError(f"note must be text (a JSON string), not {json_type(note)}", column="note")])
    note = note.strip()
    if len(note) > NOTE_MAX_CHARS:
        raise SubmissionRejected([RowError(
            f"note is {len(note):,} characters long; at most {NOTE_MAX_CHARS:,} are kept: shorten it",
            column="note")])
    if "\x00" in note or any(0xD800 <= ord(c) <= 0xDFFF for c in note):
        raise SubmissionRejected([RowError("note holds a NUL or an unpaired surrogate character; remove it",
                                           column="note")])
    return note
