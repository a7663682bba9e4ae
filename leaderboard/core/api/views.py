"""API views: one per action, each calling the same services and selectors as the pages."""
from __future__ import annotations

import functools
from datetime import datetime

from django.conf import settings
from django.db import connection, transaction
from django.http import Http404, HttpResponse, QueryDict
from django.urls import reverse
from django.utils.cache import patch_vary_headers
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, PolymorphicProxySerializer, extend_schema
from rest_framework import permissions, status
from rest_framework.exceptions import ParseError, ValidationError
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from scoring.errors import RowError

from leaderboard.core import selectors, throttles
from leaderboard.core.api import serializers as s
from leaderboard.core.api.errors import error_response
from leaderboard.core.api.parsers import CheckedJSONParser, InputRejected
from leaderboard.core.boardcache import SERVED, cached_read, public_read, public_read_keys
from leaderboard.core.csvexport import csv_response
from leaderboard.core.models import Benchmark, Entrant, Submission, TeamMembership
from leaderboard.core.quota import QuotaExceeded, quota_remaining
from leaderboard.core.records import record_refusal
from leaderboard.core.services.accounts import upload_refusal
from leaderboard.core.services.answers import SubmissionRejected
from leaderboard.core.services.idempotency import idempotency_key_check
from leaderboard.core.services.predictions import STORE_RETRY_AFTER_SECONDS, UPLOAD_BODY_KEYS, predictions_source
from leaderboard.core.services.rounds import current_rounds, round_takes_submissions, submissions_refusal
from leaderboard.core.services.submissions import submission_select
from leaderboard.core.services.uploads import submission_create
from leaderboard.core.services.verify import benchmark_verify
from leaderboard.core.throttles import ScopedHeadersThrottle


def _benchmark(request, slug: str) -> Benchmark:
    return selectors.benchmark_for(request.user, slug)


def _round_dict(round_):
    if round_ is None:
        return None
    return {"number": round_.number, "title": str(round_), "status": round_.status, "opens_at": round_.opens_at,
            "closes_at": round_.closes_at, "resolves_at": round_.resolves_at}


def benchmark_summary(request, b: Benchmark) -> dict:
    return {"slug": b.slug, "title": b.title, "kind": b.kind, "daily_limit": b.daily_limit,
            "url": request.build_absolute_uri(reverse("api-benchmark", args=[b.slug]))}


def submission_urls(request, sub: Submission) -> dict:
    """``url``: the submission in the API, as every answer names it (the upload's 202 too); ``page_url``: its page."""
    return {"url": request.build_absolute_uri(reverse("api-submission", args=[sub.pk])),
            "page_url": request.build_absolute_uri(reverse("submission_detail", args=[sub.pk]))}


def submission_dict(request, sub: Submission, *, standing: bool = False,
                    listed: selectors.ListedSubmission | None = None) -> dict:
    """A submission as the API shows it; ``standing``: with ``leaderboard`` (where it stands, and why);
    ``listed``: its scores as ``selectors.submissions_page`` read them for a whole page."""
    if sub.benchmark.kind_impl.is_round_kind:
        return round_submission_dict(request, sub, history=listed.history if listed is not None else None)
    scores = listed.scores if listed is not None else selectors.submission_scores(sub, viewer=request.user)
    out = {
        "id": sub.pk, "benchmark": sub.benchmark.slug, "entrant": sub.entrant.name, "uploaded_by": sub.user.username,
        "status": sub.status, "status_reason": sub.status_reason, "scores": scores, "errors": sub.errors, "audit_hash": sub.audit_hash,
        "original_name": sub.original_name, "size": sub.size, "is_selected": sub.is_selected,
        "note": own_note(request, sub), "late": sub.late,
        "provisional": bool(sub.truth_version is not None and not sub.truth_version.is_final),
        "truth_version": sub.truth_version.version if sub.truth_version is not None else None,
        "created_at": sub.received_at, "started_at": sub.started_at, "scored_at": sub.scored_at,
        **submission_urls(request, sub),
    }
    if standing:
        out["leaderboard"] = selectors.submission_standing(sub, viewer=request.user)
    return out


def own_note(request, sub: Submission) -> str | None:
    """The upload's note for the account that uploaded it; None for anyone else (staff and teammates too)."""
    return sub.note if sub.user_id == request.user.pk else None


def round_submission_dict(request, sub: Submission, *, history: list[dict] | None = None) -> dict:
    """A round submission: ``scores`` are those of the latest scored truth version (provisional
    until the final one, dated by ``as_of``); ``history`` every version (read here unless given); ``counted``."""
    if history is None:
        history = selectors.submission_round_scores(sub)
    latest = history[-1] if history else None
    return {
        "id": sub.pk, "benchmark": sub.benchmark.slug, "entrant": sub.entrant.name, "uploaded_by": sub.user.username,
        "status": sub.status, "status_reason": sub.status_reason, "round": sub.round.number, "counted": sub.is_counted,
        "replaced_at": sub.replaced_at, "repeat": sub.is_repeat,
        "scores": {"public": latest["metrics"]} if latest else {},
        "provisional": bool(latest and latest["interim"]), "as_of": latest["as_of"] if latest else None,
        "truth_version": latest["version"] if latest else None, "history": history,
        "errors": sub.errors, "audit_hash": sub.audit_hash, "original_name": sub.original_name, "size": sub.size,
        "note": own_note(request, sub), "is_selected": False, "late": False, "created_at": sub.received_at, "started_at": sub.started_at,
        "scored_at": sub.scored_at, **submission_urls(request, sub),
    }


class Me(APIView):
    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(responses=s.MeSerializer, summary="Who the token belongs to: username, whether it may upload, "
                                                     "its entrants and teams")
    def get(self, request):
        user = request.user
        refusal = upload_refusal(user)
        return Response({
            "username": user.username, "is_staff": user.is_staff, "can_upload": refusal is None,
            "upload_refusal": refusal,
            "entrants": list(Entrant.objects.filter(owner=user, team__isnull=True).order_by("created_at", "id")
                             .values_list("name", flat=True)),
            "teams": [{"id": m.team_id, "name": m.team.entrant.name, "benchmark": m.benchmark.slug}
                      for m in TeamMembership.objects.filter(user=user).select_related("team__entrant", "benchmark")
                      .order_by("benchmark__slug", "id")],
        })


class BenchmarkList(APIView):
    permission_classes = [permissions.AllowAny]

    @extend_schema(responses=s.BenchmarkListItemSerializer(many=True),
                   summary="The benchmarks, each with its current round and the number of the round open now")
    def get(self, request):
        benchmarks = selectors.benchmarks_visible(request.user)
        current = current_rounds(benchmarks)
        return Response([benchmark_summary(request, b) | {
            "current_round": _round_dict(current.get(b.pk)),
            "open_round": current[b.pk].number if b.pk in current and round_takes_submissions(current[b.pk]) else None,
        } for b in benchmarks])


class BenchmarkDetail(APIView):
    permission_classes = [permissions.AllowAny]

    @extend_schema(responses=s.BenchmarkDetailSerializer, summary="One benchmark, its config and current round")
    def get(self, request, slug):
        b = _benchmark(request, slug)
        kind = b.kind_impl
        round_ = selectors.leaderboard_round(b)
        refusal = submissions_refusal(b)
        data = benchmark_summary(request, b) | {
            "description": b.description,
            "credit": b.credit,
            "config": kind.public_config(b.config),
            "ranking_metric": kind.ranking_metric,
            "metrics": [{"name": m.name, "label": m.label, "higher_is_better": m.higher_is_better}
                        for m in kind.metric_specs(b.config)],
            "current_round": _round_dict(selectors.current_round(b)),
            "accepting_submissions": refusal is None,
            "closes_at": round_.closes_at if round_ is not None and round_.is_permanent else None,
            "closed_reason": refusal,
            "private_revealed": b.private_revealed,
            # A static benchmark's commitment (published at its close) and, after the reveal, its record.
            "commitment": (round_.commitment or None) if round_ is not None and round_.is_permanent else None,
            "audit_url": (request.build_absolute_uri(reverse("api-round-committed", args=[b.slug, round_.number]))
                          if round_ is not None and round_.is_permanent and round_.commitment else None),
            "record_url": (request.build_absolute_uri(reverse("api-round-record", args=[b.slug, round_.number]))
                           if round_ is not None and round_.is_permanent and not record_refusal(round_) else None),
            "remaining_today": quota_remaining(user=request.user, benchmark=b) if request.user.is_authenticated else None,
            "format": kind.format_help(b.config),
        }
        return Response(data)


PAGING_PARAMETERS = [s.PagingQuerySerializer]

FORMAT_PARAMETER = OpenApiParameter("format", str, enum=["json", "csv"], description="json (default) or csv")
BOARD_FORMAT_PARAMETER = OpenApiParameter("format", str, enum=["json", "csv"],
                                          description="csv: the whole board (every row, not paged) as CSV")
# A list of rows as JSON, or the same rows as CSV with ?format=csv.
ROWS_OR_CSV = {(200, "application/json"): {"type": "array", "items": {"type": "object"}}, (200, "text/csv"): bytes}


def wants_csv(request) -> bool:
    """``?format=csv``; absent or ``json`` is JSON; anything else is a 400 naming the parameter."""
    value = request.query_params.get("format")
    if value not in (None, "json", "csv"):
        raise ValidationError({"format": "format must be 'json' or 'csv'"})
    return value == "csv"


# The query parameters a board's ``next`` link carries over (others do not change the answer).
BOARD_PARAMETERS = ("split", "track")


def page_url(request, page: selectors.BoardPage, number: int | None) -> str | None:
    """The absolute URL of page ``number`` of this answer (its board parameters kept), or None."""
    if number is None:
        return None
    query = QueryDict(mutable=True)
    for name in BOARD_PARAMETERS:
        if name in request.query_params:
            query[name] = request.query_params[name]
    query["page"] = str(number)
    query["page_size"] = str(page.page_size)
    return request.build_absolute_uri(f"{request.path}?{query.urlencode()}")


def board_data(request, page: selectors.BoardPage, rows: list[dict], **extra) -> dict:
    """Every board answers alike: its ``rows`` for the page, ``count`` (all rows) and ``next`` (a URL or null)."""
    return {**extra, "count": page.count, "next": page_url(request, page, page.next_page), "page": page.page,
            "page_size": page.page_size, "rows": rows}


def link_header(request, page: selectors.BoardPage) -> str:
    """RFC 8288 ``Link``: the ``first``, ``prev``, ``next`` and ``last`` pages that exist."""
    links = (("first", 1), ("prev", page.previous_page), ("next", page.next_page), ("last", page.pages))
    return ", ".join(f'<{page_url(request, page, n)}>; rel="{rel}"' for rel, n in links if n is not None)


def _board_parts(request, params=None) -> tuple:
    # The board's own parameters and the address it is asked at (``next`` is an absolute URL).
    params = request.query_params if params is None else params
    return ("api-board", request.build_absolute_uri(request.path),
            *(params.get(name) for name in (*BOARD_PARAMETERS, "page", "page_size")))


def cached_board_answer(request, benchmark: Benchmark, build, *, public_split: str | None = None) -> HttpResponse:
    """A public board's JSON from the cache (``leaderboard/core/boardcache.py``), built by ``build()`` on a miss.

    Call it only once the viewer may see the board. ``public_split``: the split the answer shows, when
    the same answer is what anyone may be given (``public_board_answer`` then answers it from the
    cache alone while the benchmark is published and that split visible to everyone).
    """
    body = cached_read(benchmark.pk, _board_parts(request), lambda: JSONRenderer().render(build()),
                       public_slug=benchmark.slug if public_split is not None else None,
                       public=lambda: selectors.board_shareable_seconds(benchmark.pk, benchmark.slug,
                                                                        private=public_split == "private"))
    return HttpResponse(body, content_type="application/json")


BOARD_CSV_PAGE = 1000


def board_csv_line(row: dict) -> dict:
    """A board row as one CSV line: its ``metrics`` spread into a column each (after ``score``; a metric
    named like a column already there, the ranking metric as ``score``, keeps that column), times in ISO 8601."""
    out: dict = {}
    for key, value in row.items():
        if key == "metrics":
            out.update({name: v for name, v in value.items() if name not in row})
        elif key in ("interval", "rank_range"):  # [low, high]: a column each, empty when not computed
            low, high = value if value is not None else (None, None)
            out[f"{key}_low"], out[f"{key}_high"] = low, high
        else:
            out[key] = value.isoformat() if isinstance(value, datetime) else value
    return out


def board_csv_answer(filename: str, read_page, shape) -> HttpResponse:
    """The whole board as CSV (``?format=csv``): every row, not paged, cells a spreadsheet would run as a
    formula neutralised (``leaderboard/core/csvexport.py``).

    ``read_page(page, page_size, board)`` is the board's selector (``board``: the previous page's
    ``BoardPage.board``, so the whole board's intervals are read once); ``shape(page)`` its API rows. Read in pages of
    ``BOARD_CSV_PAGE`` inside one transaction, REPEATABLE READ on PostgreSQL (SQLite's read transaction is a
    snapshot already), so a score landing meanwhile cannot shift a row from one page to the next.
    """
    lines: list[dict] = []
    outermost = not connection.in_atomic_block  # inside one already (a test's), its snapshot stands
    with transaction.atomic():
        if outermost and connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        number: int | None = 1
        board = None
        while number is not None:
            page = read_page(number, BOARD_CSV_PAGE, board)
            lines.extend(board_csv_line(row) for row in shape(page))
            number, board = page.next_page, page.board
    return csv_response(lines, filename)


def public_board_answer(request, slug: str) -> HttpResponse | None:
    """The board answer anyone may be given, from one cache read and no query (none more when the throttle
    read the board's generation: ``Leaderboard.throttle_reads``); None: not cached here yet."""
    body = public_read(slug, _board_parts(request), throttles.prefetched(request))
    return None if body is None else HttpResponse(body, content_type="application/json")


_JSON_ACCEPTS = frozenset({"", "*/*", "application/json"})


def board_read_counted(request, slug: str) -> bool:
    """Count a public read of the board ``slug`` with ``Leaderboard``'s throttles, in one Redis round trip
    that also reads the board's generation (``throttles.prefetched``). False: refused (the full view
    refuses it again, a refusal is not counted, and words the 429), or the board is not one this process
    can answer from the cache. A request counted here is not counted again by the full view.

    ``request``: Django's, or anything with its ``META`` and ``user`` (the replay's before Django). A
    request refused here once is not asked again (the full view decides, and words the 429)."""
    meta = request.META
    if meta.get(_REFUSED):
        return False
    keys = public_read_keys(slug)
    if not keys:
        return False
    view = _ThrottleReads(keys)
    if all(throttle_class().allow_request(request, view)  # type: ignore[arg-type]  # reads only throttle_reads
           for throttle_class in Leaderboard.throttle_classes):
        return True
    meta[_REFUSED] = True
    return False


# In the request's environ: ``board_read_counted`` refused it already (the replay before Django did).
_REFUSED = "leaderboard.board_read_refused"


def _fast_public_board(request, slug: str) -> HttpResponse | None:
    """``Leaderboard``'s answer to a plain JSON read of a board cached for everyone (no credentials, no
    session, no ``format``), from the throttle's one Redis round trip, which also reads the board's
    generation, without DRF's per-request machinery (issue 26): the same bytes, throttle and headers
    as the full view. None: the full view answers (a refusal, a miss; a request counted here by the
    throttle is not counted again there)."""
    if (request.method != "GET" or "HTTP_AUTHORIZATION" in request.META or "format" in request.GET
            or settings.SESSION_COOKIE_NAME in request.COOKIES
            or not {a.strip().lower() for a in request.META.get("HTTP_ACCEPT", "").split(",")} <= _JSON_ACCEPTS
            or not board_read_counted(request, slug)):
        return None
    parts = _board_parts(request, request.GET)
    body = public_read(slug, parts, throttles.prefetched(request))
    if body is None:
        return None
    request.META[SERVED] = (parts, body)
    response = HttpResponse(body, content_type="application/json")
    response["Allow"] = _LEADERBOARD_ALLOW
    patch_vary_headers(response, ("Accept",))
    return response


class _ThrottleReads:
    """The view a fast-path throttle sees: only the keys to read in its round trip."""

    def __init__(self, keys: tuple[str, ...]) -> None:
        self.keys = keys

    def throttle_reads(self, request) -> tuple[str, ...]:
        return self.keys


def paging_or_error(request):
    """``(page, page_size)``, or a 400 Response naming the bad parameter."""
    try:
        return selectors.board_paging(request.query_params), None
    except selectors.BoardParamError as exc:
        return None, error_response([RowError(str(exc), column=exc.column)], 400)


def leaderboard_rows(page: selectors.BoardPage) -> list[dict]:
    return [{"rank": r.rank, "entrant": r.entrant.name, "score": r.score, "metrics": r.metrics,
             "submissions": r.submissions_count, "submission_id": r.submission_id,
             "audit_hash": r.submission.audit_hash, "provisional": r.provisional,
             "interval": r.interval, "rank_range": r.rank_range, "updated_at": r.updated_at} for r in page.rows]


def standings_rows(page: selectors.BoardPage) -> list[dict]:
    return [{"rank": r.rank, "entrant": r.entrant.name, "score": r.score, "metrics": r.metrics,
             "rounds": r.rounds, "interval": r.interval, "rank_range": r.rank_range,
             "updated_at": r.updated_at} for r in page.rows]


class Leaderboard(APIView):
    permission_classes = [permissions.AllowAny]

    @classmethod
    def as_view(cls, **initkwargs):
        """The view, answering what it can from the cache alone first (``_fast_public_board``)."""
        full = super().as_view(**initkwargs)

        def view(request, *args, **kwargs):
            answer = _fast_public_board(request, kwargs["slug"])
            return answer if answer is not None else full(request, *args, **kwargs)

        return functools.wraps(full)(view)  # cls, initkwargs, csrf_exempt: the schema and Django see the view

    def throttle_reads(self, request) -> tuple[str, ...]:
        """Read by the throttle in its round trip: what ``public_board_answer`` needs (``AtomicRateThrottle``)."""
        return public_read_keys(self.kwargs["slug"])

    @extend_schema(
        parameters=[OpenApiParameter("split", str, enum=["public", "private"],
                                     description="private only after the organiser's reveal"),
                    OpenApiParameter("track", str, description="round benchmarks with tracks (portfolio: weekly, "
                                                               "monthly); default: the first track"),
                    *PAGING_PARAMETERS],
        responses={(200, "application/json"): PolymorphicProxySerializer(
                       "LeaderboardOrStandings", [s.LeaderboardSerializer, s.StandingsSerializer],
                       resource_type_field_name=None),
                   (200, "text/csv"): bytes,
                   400: s.ErrorsSerializer, 403: s.ErrorsSerializer},
        summary="Ranked leaderboard rows (standings across resolved rounds for round benchmarks)",
    )
    def get(self, request, slug):
        cached = None if wants_csv(request) else public_board_answer(request, slug)  # the cache holds JSON only
        if cached is not None:
            return cached
        b = _benchmark(request, slug)
        paging, error = paging_or_error(request)
        if error:
            return error
        kind = b.kind_impl
        split = request.query_params.get("split")
        if split not in (None, "public", "private"):
            return error_response([RowError("split must be 'public' or 'private'", column="split")], 400)
        if kind.is_round_kind:  # standings across resolved rounds
            track = request.query_params.get("track", "") or (kind.tracks[0] if kind.tracks else "")
            if track and track not in kind.tracks:
                return error_response([RowError(f"unknown track {track!r}", column="track")], 400)

            if wants_csv(request):
                return board_csv_answer(
                    f"{b.slug}-standings{'-' + track if track else ''}.csv",
                    lambda number, size, board: selectors.standings_page(b, track=track, page=number, page_size=size,
                                                                         board=board),
                    standings_rows)

            def standings():
                page = selectors.standings_page(b, track=track, page=paging[0], page_size=paging[1])
                return board_data(request, page, standings_rows(page),
                                  benchmark=b.slug, track=track, ranking_metric=kind.ranking_metric_for(b.config))

            return cached_board_answer(request, b, standings, public_split="public")
        split = split or selectors.default_split(b)
        if split == "private" and not selectors.private_visible(b, request.user):
            return error_response([RowError("the private leaderboard is not revealed yet", column="split")], 403)

        if wants_csv(request):
            return board_csv_answer(
                f"{b.slug}-leaderboard-{split}.csv",
                lambda number, size, board: selectors.leaderboard_page(b, split=split, viewer=request.user,
                                                                       page=number, page_size=size, board=board),
                leaderboard_rows)

        def board():
            page = selectors.leaderboard_page(b, split=split, viewer=request.user, page=paging[0],
                                              page_size=paging[1])
            return board_data(request, page, leaderboard_rows(page),
                              benchmark=b.slug, split=split, ranking_metric=b.kind_impl.ranking_metric_for(b.config))

        return cached_board_answer(request, b, board, public_split=split)


IDEMPOTENCY_KEY_PARAMETERS = [
    OpenApiParameter(
        "Idempotency-Key", str, location=OpenApiParameter.HEADER, required=False, pattern=r"^[!-~]{1,128}$",
        description="Up to 128 printable ASCII characters (a UUID is a good choice), new for each upload. "
                    "Resending the same upload with the same key, after a lost answer, returns the first answer "
                    "(same id) and uses no second daily slot; the same key with a different upload is a 409.",
    ),
    OpenApiParameter("Idempotent-Replayed", str, location=OpenApiParameter.HEADER, response=[202], enum=["true"],
                     description="Present when the answer is that of an earlier upload with the same key."),
]


def _allowed_methods(view_class) -> str:
    """The Allow header DRF gives the view (its ``allowed_methods`` once set up: HEAD where GET is)."""
    view = view_class()
    view.setup(None)
    return ", ".join(view.allowed_methods)


_LEADERBOARD_ALLOW = _allowed_methods(Leaderboard)


class SubmissionCreateOrList(APIView):
    permission_classes = [permissions.IsAuthenticated]
    parser_classes = [MultiPartParser, FormParser, CheckedJSONParser]
    throttle_scope = "upload"

    def get_throttles(self):
        # The upload scope guards POST only; listing uses the default throttles.
        if self.request.method == "POST":
            return [ScopedHeadersThrottle()]
        return super().get_throttles()

    @extend_schema(parameters=PAGING_PARAMETERS,
                   responses={200: s.SubmissionPageSerializer, 400: s.ErrorsSerializer},
                   summary="Your submissions to a benchmark (and your teams'), newest first, paged like the boards "
                           "(also a Link header: first, prev, next, last)")
    def get(self, request, slug):
        b = _benchmark(request, slug)
        paging, error = paging_or_error(request)
        if error:
            return error
        page = selectors.submissions_page(request.user, benchmark=b, page=paging[0], page_size=paging[1])
        data = board_data(request, page, [submission_dict(request, row.submission, listed=row) for row in page.rows],
                          benchmark=b.slug)
        data["previous"] = page_url(request, page, page.previous_page)
        return Response(data, headers={"Link": link_header(request, page)})

    @extend_schema(
        request={"multipart/form-data": s.SubmissionFileSerializer, "application/json": s.SubmissionJsonSerializer},
        parameters=IDEMPOTENCY_KEY_PARAMETERS,
        responses={202: s.SubmissionAcceptedSerializer, 400: s.ErrorsSerializer,
                   403: OpenApiResponse(s.ErrorsSerializer, description="the account's email address is not verified yet"),
                   409: s.ErrorsSerializer,
                   413: s.ErrorsSerializer, 429: OpenApiResponse(s.ErrorsSerializer, description="daily limit reached; see Retry-After")},
        summary="Upload a submission",
    )
    def post(self, request, slug):
        b = _benchmark(request, slug)
        try:
            request.data  # noqa: B018 -- parsed here, so that a body that cannot be read is answered below
        except (ParseError, InputRejected) as exc:
            remaining = quota_remaining(user=request.user, benchmark=b)
            errors = exc.errors if isinstance(exc, InputRejected) else [RowError(str(exc.detail))]
            return error_response(errors, status.HTTP_400_BAD_REQUEST,
                                  headers=daily_headers(b.daily_limit, remaining), remaining_today=remaining)
        entrant = request.data.get("entrant") if hasattr(request.data, "get") else None
        round_number = request.data.get("round") if hasattr(request.data, "get") else None
        kwargs = {"round_number": round_number} if round_number not in (None, "") else {}
        note = request.data.get("note") if hasattr(request.data, "get") else None
        try:
            key = request.headers.get("Idempotency-Key")
            key = idempotency_key_check(key) if key is not None else None
            source = _predictions_source(request, b)
            accepted = submission_create(user=request.user, benchmark=b, entrant=entrant, idempotency_key=key,
                                         note=note, **source.as_kwargs(), **kwargs)
        except SubmissionRejected as exc:
            remaining = quota_remaining(user=request.user, benchmark=b)
            headers = daily_headers(b.daily_limit, remaining)
            if exc.status == 503:  # the upload could not be stored (disk full): try again later
                headers["Retry-After"] = str(STORE_RETRY_AFTER_SECONDS)
            return error_response(exc.errors, exc.status, headers=headers, remaining_today=remaining)
        except QuotaExceeded as exc:
            return error_response([RowError(exc.message)], status.HTTP_429_TOO_MANY_REQUESTS,
                                  headers={"Retry-After": str(exc.retry_after_seconds),
                                           **daily_headers(exc.limit, 0)},
                                  remaining_today=0, reset_at=exc.reset_at.isoformat())
        headers = daily_headers(b.daily_limit, accepted.remaining_today)
        if accepted.replayed:
            headers["Idempotent-Replayed"] = "true"
        sub = accepted.submission
        answer = {"id": sub.pk, "status": sub.status,
                  "url": request.build_absolute_uri(reverse("api-submission", args=[sub.pk])),
                  "audit_hash": sub.audit_hash, "remaining_today": accepted.remaining_today}
        if b.kind_impl.is_round_kind:
            answer |= {"round": sub.round.number, "counted": sub.is_counted}
        return Response(answer, status=status.HTTP_202_ACCEPTED, headers=headers)


def daily_headers(limit: int, remaining: int) -> dict[str, str]:
    """The daily upload quota on an upload's answer: ``X-Daily-Limit`` (accepted uploads per UTC day,
    shared by a team) and ``X-Daily-Remaining`` (what is left today)."""
    return {"X-Daily-Limit": str(limit), "X-Daily-Remaining": str(remaining)}


def _predictions_source(request, b: Benchmark, *, body_keys: tuple[str, ...] = UPLOAD_BODY_KEYS):
    """The request's multipart ``file`` or its ``predictions`` (a JSON body, or JSON text in a form field)."""
    body_is_json = request.content_type.startswith("application/json")
    size = int(request.META.get("CONTENT_LENGTH") or 0) if body_is_json else None
    return predictions_source(benchmark=b, upload=request.FILES.get("file"), body=request.data,
                              body_is_json=body_is_json, body_size=size, body_keys=body_keys)


def _own_submission(request, pk) -> Submission:
    """The submission, if the caller may see it (its owner, a member of its team, staff); otherwise a 404 that
    says so in the API's error shape, the same whether it does not exist or is someone else's."""
    qs = Submission.objects.visible_to(request.user).select_related("benchmark", "entrant", "truth_version", "round",
                                                                   "user")
    return _submission_or_404(qs, pk)


def _submission_or_404(qs, pk) -> Submission:
    sub = qs.filter(pk=pk).first()
    if sub is None:
        raise Http404(f"no submission {pk} of yours: it does not exist, or it belongs to another participant "
                      "(GET /api/benchmarks/{slug}/submissions/ lists yours)")
    return sub


class SubmissionDetail(APIView):
    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(responses=s.SubmissionSerializer, summary="A submission's status and scores (owner or staff)")
    def get(self, request, pk):
        return Response(submission_dict(request, _own_submission(request, pk), standing=True))


class SubmissionCases(APIView):
    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(
        parameters=[FORMAT_PARAMETER],
        responses=ROWS_OR_CSV | {409: s.ErrorsSerializer},
        summary="Per-case debug rows the owner may see",
    )
    def get(self, request, pk):
        sub = _own_submission(request, pk)
        if sub.benchmark.kind_impl.is_round_kind:
            rows = selectors.round_submission_case_rows(sub, viewer=request.user)
            if rows is None:
                return error_response([RowError("per-id results are shown once the round is resolved")], 409)
        else:
            rows = selectors.submission_case_rows(sub, viewer=request.user)
        if wants_csv(request):
            return csv_response(rows, f"submission-{sub.pk}-cases.csv")
        return Response(rows)


class SubmissionSelect(APIView):
    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(request=None, responses={200: s.SubmissionSerializer, 409: s.ErrorsSerializer},
                   summary="Select this submission as the entrant's final one")
    def post(self, request, pk):
        sub = _submission_or_404(Submission.objects.of_participant(request.user)
                                 .select_related("benchmark", "entrant", "round"), pk)
        try:
            submission_select(submission=sub, user=request.user)
        except SubmissionRejected as exc:
            return error_response(exc.errors, exc.status)
        return Response(submission_dict(request, sub))


class Verify(APIView):
    """The dry run: metrics and per-case results for the dev cases; nothing saved or counted."""

    permission_classes = [permissions.IsAuthenticated]
    parser_classes = [CheckedJSONParser, MultiPartParser, FormParser]
    throttle_classes = [ScopedHeadersThrottle]
    throttle_scope = "verify"

    @extend_schema(
        request={"application/json": s.VerifyJsonSerializer, "multipart/form-data": s.VerifyFileSerializer},
        responses={200: s.VerifySerializer, 400: s.ErrorsSerializer, 403: s.ErrorsSerializer,
                   409: s.ErrorsSerializer},
        summary="Score predictions of the dev cases without saving them (kind impact)",
    )
    def post(self, request, slug):
        b = _benchmark(request, slug)
        try:
            result = benchmark_verify(benchmark=b, **_predictions_source(request, b, body_keys=("predictions",)
                                                                         ).as_kwargs())
        except SubmissionRejected as exc:
            return error_response(exc.errors, exc.status)
        return Response(result)


class BenchmarkCases(APIView):
    permission_classes = [permissions.AllowAny]

    @extend_schema(
        parameters=[FORMAT_PARAMETER],
        responses=ROWS_OR_CSV,
        summary="The cases of the current round: id, split (dev, or test while a ranked case's truth is "
                "hidden) and the public inputs; never truth",
    )
    def get(self, request, slug):
        b = _benchmark(request, slug)
        rows = [{"case_id": c["external_id"], "split": c["split"], **c["public"]}
                for c in selectors.round_cases(b, selectors.leaderboard_round(b), viewer=request.user)]
        if wants_csv(request):
            return csv_response(rows, f"{b.slug}-cases.csv")
        return Response(rows)


class BenchmarkTraining(APIView):
    permission_classes = [permissions.AllowAny]

    @extend_schema(
        parameters=[FORMAT_PARAMETER],
        responses=ROWS_OR_CSV,
        summary="The training set: the dev cases with their public inputs and their truth (labels)",
    )
    def get(self, request, slug):
        b = _benchmark(request, slug)
        rows = selectors.training_rows(b, selectors.leaderboard_round(b))
        if wants_csv(request):
            return csv_response(rows, f"{b.slug}-training.csv")
        return Response(rows)
