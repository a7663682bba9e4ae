"""The one place an upload becomes predictions, for the pages and the API alike.

An upload is a file (the page's form, the API's multipart ``file``) or a JSON
body ``{"predictions": [...]}`` (or that list as JSON text in a form field); a kind
whose submission is a JSON object (portfolio) may take the body itself.
``predictions_source`` reads either, refusing an oversized file before it is
read and JSON the database could not hold; ``predictions_parse`` hands it to the
kind, against a static round's cases or a round's universe. Uploads
(``static_submission_create``, ``round_submission_create``) and the dry run
(``benchmark_verify``) all go through both, and both uploads store the file's
name (``display_name``) and the kind's payload (``payload_check``) as checked here.
"""
from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.core.files.base import ContentFile

from scoring.csvfile import too_large_message
from scoring.errors import RowError, ValidationFailed

from leaderboard.core.inputs import BadInput, bad_input_errors, json_loads_checked, json_strings_check, text_problem
from leaderboard.core.models import Benchmark, Submission
from leaderboard.core.services.answers import SubmissionRejected

log = logging.getLogger("leaderboard.submissions")

# A disk that refused an upload (full, read-only): the 503's Retry-After.
STORE_RETRY_AFTER_SECONDS = 60

NOTHING_SENT = "send a file (multipart field 'file') or a JSON body with 'predictions'"


@dataclass(frozen=True)
class PredictionsSource:
    """What was sent: a file's bytes and name, or the decoded JSON ``predictions``."""

    data: bytes | None = None
    filename: str = ""
    predictions: Any = None

    def as_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of ``submission_create`` and ``benchmark_verify``."""
        return {"data": self.data, "filename": self.filename, "predictions": self.predictions}


# The top-level keys of a JSON body holding ``predictions`` (an upload; the dry run takes the first only).
UPLOAD_BODY_KEYS = ("predictions", "entrant", "round", "note")


def upload_size_check(*, benchmark: Benchmark, size: int, column: str = "file", what: str = "the file") -> None:
    """Refuse (413) an upload over the benchmark's cap; call it before reading a file into memory."""
    cap = benchmark.kind_impl.max_upload_bytes(benchmark.config)
    if size > cap:
        raise ValidationFailed([RowError(too_large_message(size, cap, what=what), column=column)], status=413)


def predictions_source(*, benchmark: Benchmark, upload=None, body: Any = None, body_is_json: bool = False,
                       body_size: int | None = None, body_keys: tuple[str, ...] = UPLOAD_BODY_KEYS
                       ) -> PredictionsSource:
    """The upload as sent: ``upload`` (a Django uploaded file) if given, else ``body["predictions"]``.

    A ``predictions`` form field (``body_is_json`` False) carries JSON text,
    decoded with the checks the API's JSON parser applies to a body. A JSON body
    (``body_size`` bytes) has the same size cap as a file, and holds no top-level
    key but ``body_keys``. Raises ValidationFailed: 413 over the size cap, 400
    naming the field for bad JSON, an unknown key, or when nothing was sent.
    """
    if upload is not None:
        upload_size_check(benchmark=benchmark, size=upload.size)
        return PredictionsSource(data=upload.read(), filename=upload.name or "")
    if body_is_json and body_size is not None:
        upload_size_check(benchmark=benchmark, size=body_size, column="predictions", what="the JSON body")
    if isinstance(body, Mapping) and "predictions" in body:
        unknown = [str(key) for key in body if key not in body_keys] if body_is_json else []
        if unknown:
            raise ValidationFailed([RowError(
                f"unknown key {key[:40]!r} in the JSON body; it may hold {', '.join(body_keys)}", column=key[:40])
                for key in unknown[:20]])
        predictions = body["predictions"]
        if isinstance(predictions, str) and not body_is_json:
            upload_size_check(benchmark=benchmark, size=len(predictions.encode()), column="predictions",
                              what="the predictions field")
            try:
                predictions = json_loads_checked(predictions, field="predictions")
            except BadInput as exc:
                raise ValidationFailed(bad_input_errors(exc)) from None
        return PredictionsSource(predictions=predictions)
    keys = benchmark.kind_impl.json_submission_keys
    if body_is_json and isinstance(body, Mapping) and keys and set(body) & set(keys):
        # A kind whose submission is a JSON object (portfolio) takes the body itself.
        return PredictionsSource(predictions={k: v for k, v in body.items()
                                               if k not in ("entrant", "round", "note")})
    raise ValidationFailed([RowError(NOTHING_SENT, column="file")])


def predictions_parse(*, benchmark: Benchmark, source: PredictionsSource, cases=None, universe=None) -> Any:
    """The kind's parsed submission: validated against ``cases`` (a static round's CaseSet) or a
    round's ``universe``. Raises ValidationFailed with every problem (400; 413 over the cap)."""
    kind = benchmark.kind_impl
    config = benchmark.config
    if source.data is not None:
        upload_size_check(benchmark=benchmark, size=len(source.data))
        if universe is not None:
            return kind.parse_round_submission(source.data, filename=source.filename, universe=universe,
                                               config=config)
        return kind.parse_submission(source.data, filename=source.filename, cases=cases, config=config)
    if source.predictions is not None:
        if universe is not None:
            return kind.parse_round_json(source.predictions, universe=universe, config=config)
        return kind.parse_json_predictions(source.predictions, cases=cases, config=config)
    raise ValidationFailed([RowError(NOTHING_SENT, column="file")])


def payload_check(payload: Any) -> None:
    """Refuse (400) a stored payload the database cannot hold: a kind may keep free text
    (a rationale), and PostgreSQL refuses NUL and lone surrogates in JSON."""
    try:
        json_strings_check(payload, max_depth=64)
    except BadInput as exc:
        raise SubmissionRejected([RowError(f"{exc.where}: {exc.message}" if exc.where else exc.message,
                                           column=exc.where)]) from None


def display_name(filename: str) -> str:
    """The participant's file name as shown back: control characters dropped, at most 255 characters."""
    name = "".join(ch for ch in (filename or "") if not text_problem(ch, allow_newlines=False))
    return name.strip()[:255] or "upload"


def upload_file_store(data: bytes, filename: str) -> str:
    """Write an upload's bytes under a generated name (``Submission.file``) and return the name.

    Called before the transaction that stores the submission, so the database's write lock
    (on SQLite the whole file's) is never held while the disk takes the bytes; whoever
    calls it deletes the file (``upload_file_discard``) if that transaction does not commit.
    A disk that is full or read-only refuses the upload with 503 (``STORE_RETRY_AFTER_SECONDS``)
    naming the reason, with nothing stored or counted, rather than a bare 500; the operator gets an
    ERROR line with the cause.
    """
    field = Submission._meta.get_field("file")
    name = field.generate_filename(Submission(), filename or "upload")  # unique: a fresh uuid
    try:
        return field.storage.save(name, ContentFile(data))
    except OSError as exc:
        with contextlib.suppress(OSError):
            field.storage.delete(name)  # what a full disk took of it
        log.error("could not store an upload under %s (%s: %s); uploads are refused with 503 until it "
                  "takes files again", getattr(field.storage, "location", "the media storage"), type(exc).__name__, exc.strerror or exc)
        raise SubmissionRejected([RowError(
            f"the server could not store your file just now ({exc.strerror or type(exc).__name__}); nothing "
            "was stored or counted against your daily limit. Try again later; the organisers have been told.",
            column="file")], status=503) from None


def upload_file_discard(name: str) -> None:
    """Delete a file ``upload_file_store`` wrote for a submission that was not stored."""
    Submission._meta.get_field("file").storage.delete(name)
