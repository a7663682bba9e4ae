"""API of round benchmarks: rounds (public reads, staff actions), round boards and history."""
from __future__ import annotations

from django.http import FileResponse, Http404, StreamingHttpResponse
from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import permissions, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from scoring.errors import RowError

from leaderboard.core import selectors
from leaderboard.core.api import serializers as s
from leaderboard.core.api.errors import error_response
from leaderboard.core.api.permissions import IsStaff
from leaderboard.core.api.views import (
    BOARD_FORMAT_PARAMETER,
    FORMAT_PARAMETER,
    PAGING_PARAMETERS,
    board_csv_answer,
    board_csv_line,
    board_data,
    cached_board_answer,
    csv_response,
    paging_or_error,
    wants_csv,
)
from leaderboard.core.inputs import aware_datetime_from_text, date_from_text
from leaderboard.core.models import Round
from leaderboard.core.records import record_filename, record_pending, record_refusal, record_stream
from leaderboard.core.services.answers import SubmissionRejected
from leaderboard.core.services.round_engine import round_close, round_open, round_truth_load, stakes_load, with_article


def _round_kind_benchmark(request, slug):
    b = selectors.benchmark_for(request.user, slug)
    if not b.kind_impl.is_round_kind:
        raise Http404(f"{b.slug} is {with_article(b.kind)} benchmark: it has no rounds")
    return b


def _round(request, slug, n) -> Round:
    b = _round_kind_benchmark(request, slug)
    round_ = selectors.round_of(b, n)
    if round_ is None:
        raise Http404(f"{slug} has no round {n}")
    return round_


def round_summary(request, r: Round) -> dict:
    return {"number": r.number, "status": r.status, "track": r.track, "opens_at": r.opens_at,
            "closes_at": r.closes_at, "submissions": getattr(r, "submission_count", None),
            "universe_size": r.universe_size,
            "url": request.build_absolute_uri(reverse("api-round", args=[r.benchmark.slug, r.number]))}


def round_detail(request, r: Round) -> dict:
    return round_summary(request, r) | {
        "universe_name": r.universe_name, "universe_sha256": r.universe_sha256,
        "universe_url": request.build_absolute_uri(reverse("api-round-universe", args=[r.benchmark.slug, r.number])),
        "truth_versions": [{"version": v.version, "interim": not v.is_final, "as_of": v.as_of,
                            "scored": v.scored_at is not None, "scoring_failed": v.scoring_gave_up_at is not None}
                           for v in selectors.round_truth_versions(r)],
        "audit": selectors.round_audit(r),
        "commitment": r.commitment or None,
        "record_url": (None if record_refusal(r) else request.build_absolute_uri(
            reverse("api-round-record", args=[r.benchmark.slug, r.number]))),
        "notes": list((r.data or {}).get("notes", [])),
        "details": selectors.round_public(r),
    }


def _refused(exc: SubmissionRejected) -> Response:
    return error_response(exc.errors, exc.status)


class RoundList(APIView):
    parser_classes = [MultiPartParser, FormParser]

    def get_permissions(self):
        return [IsStaff()] if self.request.method == "POST" else [permissions.AllowAny()]

    @extend_schema(responses=s.RoundListItemSerializer(many=True), summary="The rounds of a round benchmark")
    def get(self, request, slug):
        b = _round_kind_benchmark(request, slug)
        return Response([round_summary(request, r) for r in selectors.rounds_of(b)])

    @extend_schema(request={"multipart/form-data": s.RoundOpenSerializer},
                   responses={201: s.RoundDetailSerializer, 400: s.ErrorsSerializer, 403: s.ErrorsSerializer},
                   summary="Open the next round with a universe (staff)")
    def post(self, request, slug):
        b = _round_kind_benchmark(request, slug)
        upload = request.FILES.get("universe")
        if upload is None:
            return error_response([RowError("send the universe file (multipart field 'universe')",
                                            column="universe")], 400)
        closes_at = None
        if request.data.get("closes_at"):
            closes_at = aware_datetime_from_text(request.data["closes_at"])
            if closes_at is None:
                return error_response([RowError("closes_at must be an ISO 8601 time with a zone",
                                                column="closes_at")], 400)
        try:
            r = round_open(benchmark=b, data=upload.read(), filename=upload.name, closes_at=closes_at,
                           track=request.data.get("track", ""), user=request.user)
        except SubmissionRejected as exc:
            return _refused(exc)
        opened = selectors.round_of(b, r.number)
        assert opened is not None  # just opened
        return Response(round_detail(request, opened), status=status.HTTP_201_CREATED)


class RoundDetail(APIView):
    permission_classes = [permissions.AllowAny]

    @extend_schema(responses=s.RoundDetailSerializer, summary="One round: truth versions, audit list after close")
    def get(self, request, slug, n):
        return Response(round_detail(request, _round(request, slug, n)))


class RoundUniverse(APIView):
    permission_classes = [permissions.AllowAny]

    @extend_schema(responses={(200, "text/csv"): bytes}, summary="The round's universe, as the organiser uploaded it")
    def get(self, request, slug, n):
        r = _round(request, slug, n)
        if not r.universe:
            raise Http404("this round has no universe file")
        response = FileResponse(r.universe.open("rb"), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{r.benchmark.slug}-round-{r.number}-universe.csv"'
        return response


class RoundCommitted(APIView):
    permission_classes = [permissions.AllowAny]

    @extend_schema(responses={200: s.CommittedListSerializer, 409: s.ErrorsSerializer},
                   summary="After close: the commitment and the list it covers (a static benchmark's round too)")
    def get(self, request, slug, n):
        b = selectors.benchmark_for(request.user, slug)
        r = selectors.round_of(b, n)
        if r is None:
            raise Http404(f"{slug} has no round {n}")
        listed = selectors.round_committed(r)
        if listed is None:
            return error_response([RowError(f"round {r.number} has published no commitment yet: it does when "
                                            "submissions close")], 409)
        return Response({"round": r.number, "commitment": r.commitment, "audit": listed})


class RoundRecord(APIView):
    permission_classes = [permissions.AllowAny]

    @extend_schema(responses={(200, "application/zip"): bytes, 409: s.ErrorsSerializer},
                   summary="The round's record (after the final truth; a static benchmark's round 1 after the "
                           "reveal): a zip anyone can rescore with leaderboard-scoring (lb verify-round)")
    def get(self, request, slug, n):
        b = selectors.benchmark_for(request.user, slug)
        r = selectors.round_of(b, n)
        if r is None:
            raise Http404(f"{slug} has no round {n}")
        refusal = record_refusal(r) or record_pending(r)
        if refusal:
            return error_response([RowError(refusal)], 409)
        response = StreamingHttpResponse(record_stream(r), content_type="application/zip")
        response["Content-Disposition"] = f'attachment; filename="{record_filename(r)}"'
        return response


class RoundClose(APIView):
    permission_classes = [IsStaff]

    @extend_schema(request=None, responses={200: s.RoundDetailSerializer, 409: s.ErrorsSerializer},
                   summary="Close the round (staff)")
    def post(self, request, slug, n):
        r = _round(request, slug, n)
        try:
            round_close(round_=r)
        except SubmissionRejected as exc:
            return _refused(exc)
        closed = selectors.round_of(r.benchmark, n)
        assert closed is not None  # the round found above
        return Response(round_detail(request, closed))


class RoundStakes(APIView):
    permission_classes = [IsStaff]
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(request={"multipart/form-data": s.FileSerializer},
                   responses={200: {"type": "object"}, 400: s.ErrorsSerializer, 409: s.ErrorsSerializer},
                   summary="Replace the round's stakes from a CSV entrant,stake (staff; signals rounds only, else 400)")
    def post(self, request, slug, n):
        r = _round(request, slug, n)
        upload = request.FILES.get("file")
        if upload is None:
            return error_response([RowError("send the stakes CSV (multipart field 'file')", column="file")], 400)
        try:
            count = stakes_load(round_=r, data=upload.read(), filename=upload.name)
        except SubmissionRejected as exc:
            return _refused(exc)
        return Response({"round": r.number, "stakes": count})


# The spellings DRF's BooleanField takes (lower-cased); an empty or absent field is false.
INTERIM_TRUE = ("1", "true", "t", "yes", "y", "on")
INTERIM_FALSE = ("", "0", "false", "f", "no", "n", "off")


class RoundTruth(APIView):
    permission_classes = [IsStaff]
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(request={"multipart/form-data": s.RoundTruthSerializer},
                   responses={202: s.TruthVersionSerializer, 400: s.ErrorsSerializer, 409: s.ErrorsSerializer},
                   summary="A new truth version (final, or interim with as_of); scored asynchronously (staff)")
    def post(self, request, slug, n):
        r = _round(request, slug, n)
        upload = request.FILES.get("file")
        if upload is None:
            return error_response([RowError("send the truth file (multipart field 'file')", column="file")], 400)
        # A final version resolves the round for good: only a value read as true or false decides.
        raw = str(request.data.get("interim", ""))
        flag = raw.strip().lower()
        if flag not in INTERIM_TRUE + INTERIM_FALSE:
            return error_response([RowError(f"interim must be true or false; got {raw[:40]!r}",
                                            column="interim")], 400)
        interim = flag in INTERIM_TRUE
        as_of = None
        if request.data.get("as_of"):
            as_of = date_from_text(request.data["as_of"])
            if as_of is None:
                return error_response([RowError(f"as_of must be a date YYYY-MM-DD that exists; got "
                                                f"{str(request.data['as_of'])[:40]!r}", column="as_of")], 400)
        try:
            v = round_truth_load(round_=r, data=upload.read(), filename=upload.name, final=not interim, as_of=as_of,
                                 user=request.user)
        except SubmissionRejected as exc:
            return _refused(exc)
        return Response({"version": v.version, "interim": not v.is_final, "as_of": v.as_of, "scored": False},
                        status=status.HTTP_202_ACCEPTED)


def round_board_rows(page) -> list[dict]:
    return [{"rank": r.rank, "entrant": r.entrant.name, "score": r.score, "metrics": r.metrics,
             "provisional": r.provisional, "as_of": r.as_of, "audit_hash": r.submission.audit_hash,
             "interval": r.interval, "rank_range": r.rank_range if r.rank is not None else None,
             "updated_at": r.updated_at} for r in page.rows]


class RoundLeaderboard(APIView):
    permission_classes = [permissions.AllowAny]

    @extend_schema(parameters=[*PAGING_PARAMETERS, BOARD_FORMAT_PARAMETER],
                   responses={(200, "application/json"): s.RoundBoardSerializer, (200, "text/csv"): bytes,
                              400: s.ErrorsSerializer},
                   summary="The round's board: provisional values carry the date of their snapshot")
    def get(self, request, slug, n):
        r = _round(request, slug, n)
        paging, error = paging_or_error(request)
        if error:
            return error
        if wants_csv(request):
            return board_csv_answer(f"{r.benchmark.slug}-round-{r.number}-board.csv",
                                    lambda number, size, board: selectors.round_board_page(
                                        r, page=number, page_size=size, board=board),
                                    round_board_rows)

        def board():
            page = selectors.round_board_page(r, page=paging[0], page_size=paging[1])
            return board_data(request, page, round_board_rows(page), round=r.number,
                              ranking_metric=r.benchmark.kind_impl.ranking_metric_for(r.benchmark.config))

        return cached_board_answer(request, r.benchmark, board)


class RoundHistory(APIView):
    permission_classes = [permissions.AllowAny]

    @extend_schema(parameters=[OpenApiParameter("entrant", str, many=True, description="only these entrants"),
                               FORMAT_PARAMETER],
                   responses={(200, "application/json"): s.HistorySerializer, (200, "text/csv"): bytes}, summary="Every entrant's scores per truth version")
    def get(self, request, slug, n):
        r = _round(request, slug, n)
        names = request.query_params.getlist("entrant") or None
        history = selectors.round_history(r, entrant_names=names)
        if wants_csv(request):
            rows = [{"entrant": e["entrant"], "version": p["version"], "as_of": p["as_of"], "interim": p["interim"],
                     **p["metrics"]} for e in history for p in e["points"]]
            return csv_response(rows, f"{r.benchmark.slug}-round-{r.number}-history.csv")
        return Response({"round": r.number, "entrants": history})


class ComparisonSets(APIView):
    permission_classes = [permissions.AllowAny]

    @extend_schema(parameters=[OpenApiParameter("track", str, description="default: the kind's first track"),
                               *PAGING_PARAMETERS, BOARD_FORMAT_PARAMETER],
                   responses={(200, "application/json"): s.ComparisonSetsSerializer, (200, "text/csv"): bytes,
                              400: s.ErrorsSerializer},
                   summary="Comparison sets of a track: ranked rows per set, all-available history as context "
                           "(?format=csv: every row of every set, not paged)")
    def get(self, request, slug):
        b = _round_kind_benchmark(request, slug)
        kind = b.kind_impl
        if not kind.has_comparison_sets:
            raise Http404(f"{b.slug} is {with_article(b.kind)} benchmark: it has no comparison sets")
        track = request.query_params.get("track") or kind.tracks[0]
        if track not in kind.tracks:
            return error_response([RowError(f"unknown track {track!r}; one of {', '.join(kind.tracks)}",
                                            column="track")], 400)
        if wants_csv(request):  # every set whole: a line per (set, model), the set's rounds in each
            sets = selectors.comparison_sets_view(b, track=track, page_size=None)["sets"]
            first = ("rank", "entrant", "score", "return_sum", "oracle_sum")  # then the interval, rank range
            lines = [board_csv_line({"set": number, "rounds": " ".join(str(n) for n in one["rounds"]),
                                     **{name: row.get(name) for name in first}, **row})
                     for number, one in enumerate(sets, start=1) for row in one["rows"]]
            return csv_response(lines, f"{b.slug}-{track}-comparison-sets.csv")
        paging, error = paging_or_error(request)
        if error:
            return error
        view = selectors.comparison_sets_view(b, track=track, page=paging[0], page_size=paging[1])
        next_url = None
        if view["has_next"]:
            query = request.query_params.copy()
            query["page"], query["page_size"] = str(paging[0] + 1), str(paging[1])
            next_url = request.build_absolute_uri(f"{request.path}?{query.urlencode()}")
        return Response({"benchmark": b.slug, "track": track, "updated_at": view["updated_at"], "page": paging[0],
                         "page_size": paging[1], "next": next_url, "sets": view["sets"], "history": view["history"]})
