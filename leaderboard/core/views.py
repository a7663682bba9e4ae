"""Server-rendered pages. Thin: they call the same services and selectors as the API."""
from __future__ import annotations

import codecs
import copy
import sys
from functools import lru_cache, wraps
from importlib import import_module
from typing import Any

import markdown
import nh3
from allauth.account.views import SignupView
from allauth.core import ratelimit
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import REDIRECT_FIELD_NAME, get_user_model, logout
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AnonymousUser
from django.contrib.auth.views import LoginView, LogoutView
from django.contrib.messages.storage import default_storage
from django.core.exceptions import BadRequest
from django.http import Http404, HttpResponse, HttpResponseBadRequest, HttpResponseServerError, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.templatetags.static import static
from django.urls import NoReverseMatch, reverse
from django.utils.cache import add_never_cache_headers, patch_vary_headers
from django.utils.decorators import method_decorator
from django.utils.safestring import mark_safe
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods
from rest_framework.throttling import ScopedRateThrottle

from leaderboard.core import delivery, presentation, selectors
from leaderboard.core.boardcache import (
    SERVED,
    cached_read,
    caching,
    current_generation,
    public_read,
    public_read_keys,
    public_store,
    single_flight,
)
from leaderboard.core.csvexport import csv_response
from leaderboard.core.forms import AccountDeleteForm, EntrantForm, InviteForm, SubmitForm, TeamForm, TokenForm
from leaderboard.core.models import (
    NOTE_MAX_CHARS,
    ApiToken,
    Benchmark,
    Entrant,
    NotificationEvent,
    Submission,
    Team,
    TeamInvite,
    Webhook,
    WebhookDelivery,
)
from leaderboard.core.outage import answers_503, outage_response
from leaderboard.core.personal import BoardFind, Splice, find_me, personal_page, prefetch
from leaderboard.core.quota import QuotaExceeded, next_reset, quota_remaining
from leaderboard.core.records import record_refusal
from leaderboard.core.services.accounts import account_delete, upload_refusal
from leaderboard.core.services.answers import SubmissionRejected
from leaderboard.core.services.casedata import round_caseset
from leaderboard.core.services.entrants import entrant_create, entrant_default, team_of
from leaderboard.core.services.fairplay import fairplay_report
from leaderboard.core.services.notifications import (
    delivery_redeliver,
    mail_preference_set,
    mail_preferences,
    webhook_create,
    webhook_enable,
    webhook_remove,
)
from leaderboard.core.services.predictions import STORE_RETRY_AFTER_SECONDS, predictions_source
from leaderboard.core.services.rounds import round_takes_submissions, submissions_refusal
from leaderboard.core.services.submissions import late_round, submission_select, submission_selectable_by
from leaderboard.core.services.teams import invite_accept, invite_decline, team_create, team_invite, team_leave
from leaderboard.core.services.tokens import token_create, token_revoke
from leaderboard.core.services.uploads import submission_create
from leaderboard.core.services.verify import benchmark_verify
from leaderboard.core.throttles import LoginThrottle, SignupThrottle


@lru_cache(maxsize=256)
def render_markdown(text: str) -> str:
    """Markdown to sanitised HTML; the same texts (descriptions, format help) come back on every
    page view, so the result is kept (keyed by the text itself)."""
    return nh3.clean(markdown.markdown(text or "", extensions=["tables", "fenced_code"]))


def submissions_left(n: int) -> str:
    return f"{n} submission{'' if n == 1 else 's'} left today"


def _benchmark(request, slug: str) -> Benchmark:
    return selectors.benchmark_for(request.user, slug)


def benchmark_list(request):
    benchmarks = selectors.benchmarks_visible(request.user)
    return render(request, "core/benchmark_list.html", {"benchmarks": benchmarks})


# The cookies that make a request someone's: the session (a login, a CSRF token kept there) and the
# messages waiting for the visitor (django.contrib.messages' cookie storage is named "messages").
_PERSONAL_COOKIES = (settings.SESSION_COOKIE_NAME, "messages")


def _anonymous_request(request) -> bool:
    return (request.method == "GET" and "HTTP_AUTHORIZATION" not in request.META
            and not any(name in request.COOKIES for name in _PERSONAL_COOKIES))


def _personal_request(request) -> bool:
    """A GET that may be answered from the shared page (``personal.personal_page``): a session, no
    Authorization and no messages cookie (what the view would show is not in the shared page)."""
    return (request.method == "GET" and "HTTP_AUTHORIZATION" not in request.META
            and settings.SESSION_COOKIE_NAME in request.COOKIES and "messages" not in request.COOKIES)


def _shareable_page(request, response) -> bool:
    """Whether the page rendered is what any anonymous visitor gets: no cookie set (a CSRF token, a
    session), no CSRF token used, no message shown, nobody logged in."""
    storage = getattr(request, "_messages", None)
    return (response.status_code == 200 and not response.streaming and not response.cookies
            and not request.META.get("CSRF_COOKIE_NEEDS_UPDATE") and not request.user.is_authenticated
            and not (storage is not None and storage._queued_messages))


# How long a request waits for another thread rendering the same shared page before rendering its own.
SHARED_RENDER_WAIT = 10.0


def _shared_response(hit: tuple) -> HttpResponse:
    """The stored anonymous page ``hit`` (``public_read``'s entry) as an answer."""
    response = HttpResponse(hit[0], content_type=hit[1])
    patch_vary_headers(response, ("Cookie",))  # as the page rendered (it looked at the session)
    return response


def anonymous_page_cache(view):
    """The whole page an anonymous visitor gets, from one cache read per request while the benchmark's
    boards are unchanged (``boardcache.public_read``), and never for anyone else.

    Served only to a GET with no session, messages or Authorization; stored only when rendering it
    left nothing personal in it (``_shareable_page``), the benchmark is one anyone may see, and for no
    longer than until its rounds' next opening or deadline (``selectors.board_shareable_seconds``).
    A signed-in visitor gets the same page with their own parts rendered into it, where the view
    stored how (``request.personal_splice``; ``personal.personal_page``), else the view's page; when
    no anonymous visitor has asked for it since the board last changed, it is rendered as one would
    get it first (``_as_anonymous``) and stored.
    """
    def render_shared(request, slug, parts, *, only_to_store: bool = False):
        """The view's page for ``request`` (anonymous), stored for anyone when nothing personal is in it:
        ``(response, the stored entry or None)``. ``only_to_store``: not rendered at all (``(None,
        None)``) when the cache cannot keep it (turned off, Redis unreachable), as nobody would read it."""
        b = _benchmark(request, slug)
        generation = current_generation(b.pk)  # before the page reads the database
        if generation is None and only_to_store:
            return None, None
        response = view(request, slug)
        if generation is not None and _shareable_page(request, response):
            seconds = selectors.board_shareable_seconds(b.pk, slug)
            if seconds >= 1:
                entry = (response.content, response["Content-Type"], getattr(request, "personal_splice", None))
                public_store(b.pk, slug, parts, generation, entry, seconds=seconds)
                return response, entry
        return response, None

    @wraps(view)
    def wrapper(request, slug):
        parts = ("page", request.build_absolute_uri())
        if not _anonymous_request(request):
            if _personal_request(request):  # a signed-in visitor: the shared page with their parts in it
                prefetched = prefetch(request, public_read_keys(slug))
                hit = public_read(slug, parts, prefetched)
                if hit is None and caching() and request.user.is_authenticated:  # none yet: the anonymous one
                    try:
                        first, built = single_flight(parts, lambda: public_read(slug, parts) or render_shared(
                            _as_anonymous(request), slug, parts, only_to_store=True)[1], wait=SHARED_RENDER_WAIT)
                        hit = built if first else public_read(slug, parts, prefetched)
                    except Http404:  # not a page anyone may see: the view answers this visitor
                        hit = None
                if hit is not None and len(hit) > 2 and hit[2] is not None:
                    response = personal_page(request, hit[0], hit[1], hit[2], prefetched=prefetched)
                    if response is not None:
                        return response
            return view(request, slug)

        def shared():  # rendered and stored, unless another thread stored it since this one looked
            again = public_read(slug, parts)
            return _shared_response(again) if again is not None else render_shared(request, slug, parts)[0]

        hit = public_read(slug, parts)
        if hit is None and caching():  # a miss: one thread renders and stores it, the others read that
            first, built = single_flight(parts, shared, wait=SHARED_RENDER_WAIT)
            if first:
                return built
            hit = public_read(slug, parts)
        if hit is not None:
            request.META[SERVED] = (parts, hit)  # what the replay before Django may answer next time
            return _shared_response(hit)
        return render_shared(request, slug, parts)[0]  # nothing stored (not shareable, cache off): its own

    return wrapper


def _as_anonymous(request):
    """A copy of ``request`` as an anonymous visitor makes it: no cookies, session, user or messages of
    the signed-in visitor's (what the copy's view does to them never reaches the real response)."""
    anonymous = copy.copy(request)
    anonymous.COOKIES = {}
    anonymous.META = {k: v for k, v in request.META.items() if k not in ("HTTP_COOKIE", "CSRF_COOKIE")}
    anonymous.user = AnonymousUser()
    anonymous.session = import_module(settings.SESSION_ENGINE).SessionStore()  # empty, never saved
    anonymous._messages = default_storage(anonymous)
    anonymous.personal_splice = None
    return anonymous


@anonymous_page_cache
def benchmark_detail(request, slug):
    b = _benchmark(request, slug)
    paging = _board_paging(request)
    if isinstance(paging, HttpResponse):
        return paging
    if b.kind_impl.is_round_kind:
        return round_benchmark_detail(request, b, paging)
    split = request.GET.get("split") or selectors.default_split(b)
    if split not in ("public", "private") or (split == "private" and not selectors.private_visible(b, request.user)):
        split = "public"
    page_number, page_size = paging
    # The round and whether it has a training set change only through services that drop the cache
    # (a status change, a reloaded bundle); whether it still takes uploads is decided per request.
    round_ = cached_read(b.pk, ("leaderboard-round",), lambda: selectors.leaderboard_round(b))
    has_training = round_ is not None and cached_read(
        b.pk, ("has-training", round_.pk), lambda: round_.cases.filter(split="dev").exists())
    kind = b.kind_impl
    # The board and its table are the same for every viewer allowed this split (the split was checked
    # above), but for the rows the viewer owns, which are part of the table's key.
    where = (round_.pk if round_ else None, split, page_number, page_size)
    fetch = _once(lambda: selectors.leaderboard_page(b, split=split, viewer=request.user, round_=round_,
                                                     page=page_number, page_size=page_size))
    board = _board_summary(b, ("board", *where), fetch)
    columns = presentation.metric_columns(kind, b.config, hidden=selectors.split_counts_hidden(
        benchmark=b, round_=round_, split=split))
    mine = selectors.viewer_entrant_ids(request.user)
    board_html = mark_safe(cached_read(b.pk, ("board-html", *where, _ranks_owned(board, mine)),
                                       lambda: render_to_string("core/leaderboard_table.html", {
                                           "rows": fetch().rows, "past_end": fetch().past_end,
                                           "columns": columns, "mine": mine,
                                           "intervals": kind.metric_intervals,
                                           "cells": presentation.board_cells(fetch().rows, columns,
                                                                             kind.metric_intervals),
                                           "notes": presentation.leaderboard_notes(kind, b.config)})))
    closed = submissions_refusal(b, round_)  # static kinds: the leaderboard round
    late_open = closed is not None and late_round(b) is not None  # past the deadline, still scored
    find = BoardFind.board(round_.pk if round_ else None, split, page_size)
    request.personal_splice = Splice(
        benchmark_id=b.pk, slug=b.slug, daily_limit=b.daily_limit, private_revealed=b.private_revealed, find=find,
        board_count=board.count, owners=tuple(board.rows), submit_template="core/_submit_box.html",
        submit={"closed_message": closed, "late_open": late_open})
    return render(request, "core/benchmark_detail.html", {
        "benchmark": b,
        "kind": kind,
        "description_html": render_markdown(b.description),
        "format_html": render_markdown(kind.format_help(b.config)),
        "board_html": board_html,
        "board": board,
        "find_me": find_me(find, b, mine),
        "split": split,
        "private_visible": selectors.private_visible(b, request.user),
        "columns": columns,
        "ranking_metric": kind.ranking_metric_for(b.config),
        "intervals": kind.metric_intervals,
        "notes": presentation.leaderboard_notes(kind, b.config),
        "round": round_,
        "closed_message": closed,
        "late_open": late_open,
        "has_training": has_training,
        "remaining_today": quota_remaining(user=request.user, benchmark=b) if request.user.is_authenticated else None,
        "resets_at": next_reset(),
    })


def _once(fetch):
    """``fetch`` run at most once (a board page read for both a summary and a table that missed)."""
    done: list[Any] = []

    def run():
        if not done:
            done.append(fetch())
        return done[0]

    return run


def _board_summary(b: Benchmark, parts: tuple, fetch) -> selectors.BoardPage:
    """The page's pager (count, page) and who owns each row, from the cache; ``rows`` hold
    ``(rank, owner_id)`` only: the table itself is cached already rendered."""
    def build():
        page = fetch()
        return page.count, page.page, page.page_size, [(r.rank, r.entrant_id) for r in page.rows]

    count, page, page_size, owners = cached_read(b.pk, parts, build)
    return selectors.BoardPage(rows=owners, count=count, page=page, page_size=page_size)


def _board_paging(request) -> tuple[int, int] | HttpResponse:
    """``(page, page_size)`` of a board page, or the 400 page naming the bad value (DEBUG on or off)."""
    try:
        return selectors.board_paging(request.GET)
    except selectors.BoardParamError as exc:
        return bad_request(request, BadRequest(str(exc)))


def _ranks_owned(board: selectors.BoardPage, mine: set[int]) -> tuple[int, ...]:
    """The ranks on this page of the viewer's own entrants and teams (marked in the table)."""
    return tuple(rank for rank, entrant_id in board.rows if entrant_id in mine)


def _track(request, kind) -> str | HttpResponse:
    """The board's track (``?track=``, default the kind's first), or the 400 page naming the tracks, as the
    API refuses an unknown one: a page must not show one track's board under another's name."""
    track = request.GET.get("track", "") or (kind.tracks[0] if kind.tracks else "")
    if track and track not in kind.tracks:
        known = f"one of {', '.join(kind.tracks)}" if kind.tracks else "this benchmark has no tracks"
        return bad_request(request, BadRequest(f"unknown track {track!r}: {known}"))
    return track


def round_benchmark_detail(request, b: Benchmark, paging: tuple[int, int]):
    """A round benchmark: the standings across resolved rounds and every round with its status."""
    kind = b.kind_impl
    track = _track(request, kind)
    if isinstance(track, HttpResponse):
        return track
    page_number, page_size = paging
    where = (track, page_number, page_size)
    fetch = _once(lambda: selectors.standings_page(b, track=track, page=page_number, page_size=page_size))
    board = _board_summary(b, ("standings", *where), fetch)
    columns = list(kind.standings_metrics(b.config))
    mine = selectors.viewer_entrant_ids(request.user)
    board_html = mark_safe(cached_read(b.pk, ("standings-html", *where, _ranks_owned(board, mine)),
                                       lambda: render_to_string("core/round_board_table.html", {
                                           "rows": presentation.board_cells(fetch().rows, columns),
                                           "past_end": fetch().past_end,
                                           "columns": columns, "standings": True, "mine": mine,
                                           "unranked": kind.has_comparison_sets,
                                           "empty": "No round is resolved yet: the standings appear once the "
                                                    "first final truth is scored."})))
    rounds = selectors.rounds_of(b)
    open_ids = set(selectors.rounds_open(b).values_list("pk", flat=True))
    current = selectors.current_round(b)
    open_rounds = [r for r in rounds if r.pk in open_ids]
    find = BoardFind.standings(track, page_size)
    request.personal_splice = Splice(
        benchmark_id=b.pk, slug=b.slug, daily_limit=b.daily_limit, private_revealed=b.private_revealed, find=find,
        board_count=board.count, owners=tuple(board.rows), submit_template="core/_round_submit_box.html",
        submit={"open_round": open_rounds[0].number if open_rounds else None,
                "open_rounds_text": _rounds_text(open_rounds)})
    return render(request, "core/round_benchmark_detail.html", {
        "current": current, "universe": universe_link(kind, current) if current else None,
        "benchmark": b, "kind": kind, "track": track,
        "description_html": render_markdown(b.description),
        "format_html": render_markdown(kind.format_help(b.config)),
        "board": board, "board_html": board_html, "columns": columns,
        "find_me": find_me(find, b, mine),
        "note": kind.leaderboard_note(b.config),
        "rounds": rounds, "open_rounds": open_rounds, "open_round": open_rounds[0].number if open_rounds else None,
        "open_rounds_text": _rounds_text(open_rounds),
        "remaining_today": quota_remaining(user=request.user, benchmark=b) if request.user.is_authenticated else None,
    })


def _rounds_text(rounds) -> str:
    """"round 3", "round 3 or 4", "round 3, 4 or 5": what the submit button offers."""
    numbers = [str(n) for n in sorted(r.number for r in rounds)]
    if len(numbers) < 2:
        return f"round {numbers[0]}" if numbers else ""
    return f"round {', '.join(numbers[:-1])} or {numbers[-1]}"


def round_detail(request, slug, number):
    """A round: status and countdown, universe download, audit hashes after close, the board
    (provisional values dated), the interim chart of the kind's chart metrics, notes."""
    b = _benchmark(request, slug)
    kind = b.kind_impl
    if not kind.is_round_kind:
        raise Http404("this benchmark has no rounds")
    round_ = selectors.round_of(b, number)
    if round_ is None:
        raise Http404("no such round")
    paging = _board_paging(request)
    if isinstance(paging, HttpResponse):
        return paging
    page_number, page_size = paging
    board = selectors.round_board_page(round_, page=page_number, page_size=page_size)
    columns = list(kind.board_metrics(b.config))
    # The chart draws the top entrants of the board and the viewer's own.
    top = [r.entrant.name for r in selectors.round_board_page(round_, page=1, page_size=8, ranges=False).rows]
    mine_ids = selectors.viewer_entrant_ids(request.user)
    mine = list(Entrant.objects.filter(pk__in=mine_ids).order_by("name", "id").values_list("name", flat=True))
    drawn = top + [m for m in mine if m not in top]
    history = selectors.round_history(round_, entrant_names=drawn)
    reference = kind.chart_reference(b.config)
    charts = [c for c in (presentation.interim_chart(history, kind.metric(m), entrants=drawn, reference=reference)
                          for m in kind.chart_metrics(b.config)) if c]
    return render(request, "core/round_detail.html", {
        "benchmark": b, "kind": kind, "round": round_,
        "board": board, "columns": columns, "mine": mine_ids,
        "rows": presentation.board_cells(board.rows, columns, withheld=kind.withheld_metrics(b.config)),
        "find_me": selectors.round_board_find(round_, request.user, page_size=page_size),
        "versions": selectors.round_truth_versions(round_),
        "audit": selectors.round_audit(round_),
        "record_ready": record_refusal(round_) is None,
        "charts": charts,
        "notes": list((round_.data or {}).get("notes", [])),
        "kind_template": kind.round_template,
        "kind_public": selectors.round_public(round_),
        "universe": universe_link(kind, round_),
        # A kind whose provisional boards do not rank (portfolio): the order the rows come in is said.
        "ranks_withheld": any(r.rank is None for r in board.rows),
    })


def universe_link(kind, round_) -> dict:
    """What a round's universe download says: the rows of its file (``universe_size`` counts the ids the
    kind adds beside them, portfolio's CASH) and those added ids."""
    implicit = list(kind.implicit_universe_ids)
    return {"rows": max(round_.universe_size - len(implicit), 0), "implicit": implicit}


def comparison_sets(request, slug):
    """A round benchmark's comparison sets per track (the fair ranking surface), with the
    all-available history beside them as context."""
    b = _benchmark(request, slug)
    kind = b.kind_impl
    if not getattr(kind, "has_comparison_sets", False):
        raise Http404("this benchmark has no comparison sets")
    track = _track(request, kind)
    if isinstance(track, HttpResponse):
        return track
    paging = _board_paging(request)
    if isinstance(paging, HttpResponse):
        return paging
    page_number, page_size = paging
    view = selectors.comparison_sets_view(b, track=track, page=page_number, page_size=page_size)
    score, ret = kind.metric(kind.ranking_metric_for(b.config)), kind.metric("return")

    def cells(row: dict) -> dict:
        return {**row, "score_text": presentation.format_cell(row["score"], score.fmt),
                "return_text": presentation.format_cell(row["return_sum"], ret.fmt),
                "oracle_text": presentation.format_cell(row["oracle_sum"], ret.fmt)}

    sets = [{**s, "number": i, "rows": [cells(r) for r in s["rows"]],
             "oracle_text": presentation.format_cell(s["oracle_sum"], ret.fmt)}
            for i, s in enumerate(view["sets"], start=1)]
    return render(request, "core/kinds/portfolio_comparison_sets.html", {
        "benchmark": b, "kind": kind, "track": track, "sets": sets,
        "history": [cells(h) for h in view["history"]], "updated_at": view["updated_at"],
        "page": page_number, "page_size": page_size, "has_next": view["has_next"],
    })


def benchmark_example(request, slug):
    b = _benchmark(request, slug)
    round_ = selectors.leaderboard_round(b)
    if round_ is None:
        raise Http404("this benchmark has no round yet")
    filename, data = b.kind_impl.example_submission(round_caseset(round_), b.config)
    response = HttpResponse(data, content_type="text/csv" if filename.endswith(".csv") else "application/json")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def benchmark_cases(request, slug):
    b = _benchmark(request, slug)
    round_ = selectors.leaderboard_round(b)
    cases = selectors.round_cases(b, round_, viewer=request.user)
    if request.GET.get("format") == "csv":
        return csv_response([{"case_id": c["external_id"], "split": c["split"], **c["public"]} for c in cases],
                            f"{b.slug}-cases.csv")
    return render(request, "core/benchmark_cases.html", {
        "benchmark": b, "cases": cases, "columns": presentation.case_list_columns(cases),
        "dev_count": sum(1 for c in cases if c["split"] == "dev"),
        "test_count": sum(1 for c in cases if c["split"] == selectors.HIDDEN_SPLIT_LABEL)})


def benchmark_training(request, slug):
    """The training set as CSV: the dev cases with their labels (the same rows as the API's)."""
    b = _benchmark(request, slug)
    rows = selectors.training_rows(b, selectors.leaderboard_round(b))
    return csv_response(rows, f"{b.slug}-training.csv")


def case_detail(request, slug, case_id):
    """One case: its de-identified text and redaction mark; with ``?submission=ID``, that
    submission's debug row for the case when the viewer may see it on the submission page
    and the case is public (no row exists for an unresolved case). Truth of a private case
    is never shown here, to anyone; the original text only to staff."""
    b = _benchmark(request, slug)
    sub = None
    submission_param = request.GET.get("submission", "")
    if request.user.is_authenticated and submission_param.isascii() and submission_param.isdigit() \
            and len(submission_param) < 19:
        sub = (Submission.objects.visible_to(request.user).select_related("benchmark", "round")
               .filter(benchmark=b, pk=int(submission_param)).first())
    case = selectors.round_case(sub.round if sub else selectors.leaderboard_round(b), case_id)
    if case is None:
        raise Http404("no such case")
    public = dict(case.public)
    previous_id, next_id = selectors.case_neighbours(case)
    visible = selectors.case_truth_visible(benchmark=b, round_=case.round, split=case.split, viewer=request.user)
    return render(request, "core/case_detail.html", {
        "benchmark": b,
        "case": case,
        "text": public.pop("text", None),
        "redaction": public.pop("redaction", None),
        "attributes": [(k, v) for k, v in public.items() if not _long_text(v)],
        "long_attributes": [(k, v) for k, v in public.items() if _long_text(v)],
        "split": selectors.split_label(case.split, visible=visible),
        "truth": selectors.case_truth(b, case, viewer=request.user),
        "sub": sub,
        "row": selectors.submission_case_row(sub, case, viewer=request.user) if sub else None,
        "previous_id": previous_id,
        "next_id": next_id,
        # Staff only: what de-identification started from and what it replaced.
        "original_text": case.private.get("original_text") if request.user.is_staff else None,
        "deid": case.private.get("deid") if request.user.is_staff else None,
    })


def _long_text(value) -> bool:
    """An attribute too long for a line of the case page's header (a chain sequence)."""
    return isinstance(value, str) and len(value) > 40


@login_required
@require_http_methods(["GET", "POST"])
def submit(request, slug):
    """The upload form. A refusal that is not about the file (the daily limit, the deadline)
    is a banner saying when uploads are possible again, not a row of the error table."""
    b = _benchmark(request, slug)
    entrant_default(request.user)
    team = team_of(request.user, b)
    entrants = ([] if team else
                list(Entrant.objects.filter(owner=request.user, team__isnull=True).order_by("created_at", "id")))
    form = SubmitForm(request.POST or None, request.FILES or None, entrants=entrants, note_max_chars=NOTE_MAX_CHARS)
    open_rounds = ([r for r in selectors.rounds_open(b) if round_takes_submissions(r)]
                   if b.kind_impl.is_round_kind else [])
    errors, status, retry_after, limit, closed = [], 200, None, None, submissions_refusal(b)
    late = None
    if closed and late_round(b) is not None:  # past the deadline, still scored: marked late, never ranked
        late, closed = closed, None
    unverified = upload_refusal(request.user)
    if request.method == "POST" and unverified:
        status = 403
    elif request.method == "POST" and closed:
        status = 409
    elif request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        try:
            source = predictions_source(benchmark=b, upload=upload)
            accepted = submission_create(user=request.user, benchmark=b, **source.as_kwargs(),
                                         entrant=form.cleaned_data.get("entrant") or None,
                                         round_number=form.cleaned_data.get("round") or None,
                                         note=form.cleaned_data.get("note", ""))
        except SubmissionRejected as exc:
            status = exc.status
            if exc.status == 409:  # the round closed meanwhile, or the team changed
                closed = "; ".join(e.message for e in exc.errors)
            elif exc.status == 403:
                unverified = "; ".join(e.message for e in exc.errors)
            else:
                errors = [e.as_dict() for e in exc.errors]
                if exc.status == 503:  # the upload could not be stored (disk full): try again later
                    retry_after = STORE_RETRY_AFTER_SECONDS
        except QuotaExceeded as exc:
            limit, status, retry_after = exc, 429, exc.retry_after_seconds
        else:
            sub = accepted.submission
            waiting = (f"it is accepted for round {sub.round.number} and counts as {sub.entrant.name}'s submission; "
                       "it is scored when the round's truth arrives" if sub.status == Submission.Status.ACCEPTED
                       else "it is queued for scoring")
            messages.success(request, f"Received {upload.name}: {waiting}. "
                                      f"{submissions_left(accepted.remaining_today).capitalize()}.")
            return redirect("submission_detail", pk=accepted.submission.pk)
    elif request.method == "POST":
        status = 400
    response = render(request, "core/submit.html", {
        "benchmark": b,
        "form": form,
        "errors": errors,
        "json_upload": bool(errors) and _json_upload(request.FILES.get("file")),
        "limit": limit,
        "closed_message": closed,
        "late_message": late,
        "unverified": unverified,
        "team": team,
        "resets_at": next_reset(),
        "remaining_today": quota_remaining(user=request.user, benchmark=b),
        "format_html": render_markdown(b.kind_impl.format_help(b.config)),
        "verify_available": b.kind_impl.verify_available(b.config),
        # A round upload waits for its round's truth: the button says only what it does now.
        "scored_on_upload": not b.kind_impl.is_round_kind,
        "current": selectors.current_round(b) if b.kind_impl.is_round_kind else None,
        # Several rounds taking uploads (a weekly and a monthly one): the form names one, as the API's
        # ``round`` field; the round asked for (?round=N, the round page's button) is chosen.
        "open_rounds": open_rounds,
        "chosen_round": (form.data.get("round") if form.is_bound else request.GET.get("round", "")) or "",
    }, status=status)
    if retry_after is not None:
        response["Retry-After"] = str(retry_after)
    return response


@login_required
@require_http_methods(["GET", "POST"])
def verify_page(request, slug):
    """The dry run in the browser: metrics and per-case results of an upload, nothing saved or counted.
    A GET (the address typed or reopened, or the login a lapsed session went through) goes to the
    submit page, whose form posts here."""
    b = _benchmark(request, slug)
    if request.method != "POST":
        return redirect("submit", slug=b.slug)
    kind = b.kind_impl
    upload = request.FILES.get("file")
    errors, result, status = [], None, 200
    throttle = ScopedRateThrottle()  # the API's verify rate, shared with the endpoint
    if not throttle.allow_request(request, _VerifyScope):  # type: ignore[arg-type]  # the throttle reads only its scope
        errors, status = [{"row": None, "column": None,
                           "message": f"too many dry runs; try again in {int(throttle.wait() or 60)} s"}], 429
    elif upload is None:
        errors, status = [{"row": None, "column": "file", "message": "choose a file to check"}], 400
    else:
        try:
            result = benchmark_verify(benchmark=b, **predictions_source(benchmark=b, upload=upload).as_kwargs())
        except SubmissionRejected as exc:
            errors, status = [e.as_dict() for e in exc.errors], exc.status
    context = {"benchmark": b, "errors": errors, "filename": upload.name if upload else "",
               "json_upload": bool(errors) and _json_upload(upload)}
    if result is not None:
        rows = [dict(r, split="dev") for r in result["results"]]  # verify scores dev cases only
        context.update({
            "metrics": result["metrics"],
            # The ignored counts are said in a sentence below the panels, not as metrics.
            "panels": presentation.split_panels(kind, b.config, {"dev": {
                k: v for k, v in result["metrics"].items() if not k.startswith("cases_ignored")}}, rows),
            "case_table": presentation.case_table(
                kind, rows, config=b.config, case_url=lambda cid: _case_url(b.slug, cid)),
        })
    return render(request, "core/verify_result.html", context, status=status)


def _json_upload(upload) -> bool:
    """Whether an uploaded file is read as JSON (its name, else its first character, as the kinds
    decide): its problems' rows are then positions in a list, not lines under a header."""
    if upload is None:
        return False
    name = (upload.name or "").lower()
    if name.endswith(".json"):
        return True
    if name.endswith(".csv"):
        return False
    upload.seek(0)
    head = upload.read(64).removeprefix(codecs.BOM_UTF8).lstrip()[:1]
    return head in (b"{", b"[")


class _VerifyScope:
    throttle_scope = "verify"


def _case_url(slug: str, case_id: str, query: str = "") -> str | None:
    try:
        return reverse("case_detail", args=[slug, case_id]) + query
    except NoReverseMatch:  # an id no URL can carry (a slash): shown without a link
        return None


@login_required
def my_submissions(request):
    subs = list(selectors.submissions_for(request.user)[:200])
    headline = selectors.submissions_headline(subs, viewer=request.user)
    for sub in subs:
        sub.headline = headline.get(sub.pk)
    return render(request, "core/my_submissions.html", {"submissions": subs})


# The per-case table of a submission page: longer tables are filtered and paged on the server.
CASE_PAGE_SIZE = 200


@login_required
def submission_detail(request, pk):
    sub = get_object_or_404(
        Submission.objects.visible_to(request.user).select_related("benchmark", "entrant", "truth_version", "round"),
        pk=pk,
    )
    b = sub.benchmark
    if b.kind_impl.is_round_kind:
        return round_submission_detail(request, sub)
    scores = selectors.submission_scores(sub, viewer=request.user)
    case_rows = selectors.submission_case_rows(sub, viewer=request.user)
    open_ = round_takes_submissions(sub.round)
    return render(request, "core/submission_detail.html", {
        "sub": sub,
        "benchmark": b,
        "panels": presentation.split_panels(b.kind_impl, b.config, scores, case_rows),
        "standing": selectors.submission_standing(sub, viewer=request.user),
        "case_table": presentation.case_table(
            b.kind_impl, case_rows, config=b.config, case_url=lambda cid: _case_url(b.slug, cid, f"?submission={sub.pk}"),
            query=request.GET, page_size=CASE_PAGE_SIZE),
        "hidden_rows": sum(1 for r in case_rows if r.get("split") == selectors.HIDDEN_SPLIT_LABEL),
        "round_open": open_,
        "events": list(sub.events.order_by("at", "id")),
        "can_select": (sub.status == Submission.Status.SCORED and open_
                       and submission_selectable_by(sub, request.user)),
    })


def round_submission_detail(request, sub: Submission):
    """A round submission: counted or replaced, its scores per truth version (provisional ones
    dated), and after resolution the per-id debug table (computed now from its stored array)."""
    b = sub.benchmark
    kind = b.kind_impl
    columns = list(kind.board_metrics(b.config))
    history = selectors.submission_round_scores(sub)
    withheld = set(kind.withheld_metrics(b.config))
    rows = selectors.round_submission_case_rows(sub, viewer=request.user) if sub.is_counted else None
    table = None
    if rows:
        table = {"columns": kind.case_columns(b.config),
                 "rows": [[presentation.format_cell(r.get(c.key), c.fmt) for c in kind.case_columns(b.config)]
                          for r in rows]}
    replaced_by = None
    if not sub.is_counted and not sub.is_repeat:
        replaced_by = (Submission.objects.filter(round=sub.round, entrant=sub.entrant, is_counted=True)
                       .values_list("pk", flat=True).first())
    return render(request, "core/round_submission_detail.html", {
        "sub": sub, "benchmark": b, "kind": kind, "columns": columns,
        "history": [{"point": p, "cells": [
            "withheld" if p["interim"] and c.name in withheld and p["metrics"].get(c.name) is None
            else presentation.format_cell(p["metrics"].get(c.name), c.fmt) for c in columns]} for p in history],
        "case_table": table, "case_promise": kind.case_table_promise(b.config), "replaced_by": replaced_by,
        "events": list(sub.events.order_by("at", "id")),
    })


@login_required
@require_http_methods(["GET", "POST"])
def submission_select_view(request, pk):
    sub = get_object_or_404(Submission.objects.of_participant(request.user)
                            .select_related("benchmark", "entrant", "round"), pk=pk)
    if request.method != "POST":  # as verify_page: back to the page whose button posts here
        return redirect("submission_detail", pk=sub.pk)
    try:
        submission_select(submission=sub, user=request.user)
        messages.success(request, f"Submission #{sub.pk} is now {sub.entrant.name}'s final choice.")
    except SubmissionRejected as exc:
        messages.error(request, "; ".join(e.message for e in exc.errors))
    return redirect("submission_detail", pk=sub.pk)


def _throttled(request, throttle, template: str, context: dict, *, say: str | None = None):
    """The form page again with 429 and Retry-After, when ``throttle`` refuses this client address.
    The template says so from ``throttled`` (the wait in seconds); one that does not know it (the
    admin's own) is given ``say``, formatted with ``{wait}`` and ``{s}``, as an error message."""
    if throttle.allow_request(request, None):
        return None
    wait = int(throttle.wait() or 60)
    if say is not None:
        messages.error(request, say.format(wait=wait, s="" if wait == 1 else "s"))
    response = render(request, template, {**context, "throttled": wait}, status=429)
    response["Retry-After"] = str(wait)
    return response


@method_decorator(require_http_methods(["GET", "POST"]), name="dispatch")
class ThrottledSignupView(SignupView):
    """django-allauth's sign-up (username, a unique email, a password; the verification link is
    mailed) behind the per-address sign-up throttle; a form with errors answers 400."""

    template_name = "account/signup.html"

    def post(self, request, *args, **kwargs):
        refused = _throttled(request, SignupThrottle(), self.template_name, {"form": self.get_form_class()()})
        if refused is not None:
            return refused
        return super().post(request, *args, **kwargs)

    def form_invalid(self, form):
        response = super().form_invalid(form)
        response.status_code = 400
        return response


class LogoutPage(LogoutView):
    """Log out (POST, the navigation's button). Django's view answers a GET, an address typed or a link
    followed, with a blank 405; here it is a page with the button (logging out on a GET would let any
    site log a visitor out), or, for a visitor not logged in, the home page."""

    http_method_names = ["get", "post", "options"]

    def get(self, request, *args, **kwargs):
        if not request.user.is_authenticated:
            return redirect(settings.LOGOUT_REDIRECT_URL)
        return render(request, "account/logout.html")


@method_decorator(require_http_methods(["GET", "POST"]), name="dispatch")
class ThrottledLoginView(LoginView):
    """Django's login view behind the per-address login throttle."""

    def post(self, request, *args, **kwargs):
        refused = _throttled(request, LoginThrottle(), "registration/login.html", {"form": self.get_form()})
        if refused is not None:
            return refused
        return super().post(request, *args, **kwargs)


def admin_login(request):
    """The admin's login form behind the same per-address throttle as ``/accounts/login/`` (one budget
    for both): it takes any account's password, so unthrottled it let anyone guess the organisers'
    passwords without limit. A refusal is the admin's form again, saying when to try next, with 429."""
    if request.method == "POST":
        refused = _throttled(request, LoginThrottle(), "admin/login.html", {
            **admin.site.each_context(request), "title": "Log in", "form": AdminAuthenticationForm(request),
            "username": "",
            "app_path": request.get_full_path(), REDIRECT_FIELD_NAME: request.GET.get(REDIRECT_FIELD_NAME, "")},
            say="Too many login attempts from your address. Try again in {wait} second{s}.")
        if refused is not None:
            return refused
    return admin.site.login(request)


@login_required
@require_http_methods(["GET", "POST"])
def profile(request):
    entrant_default(request.user)
    new_key = None
    token_form, entrant_form = TokenForm(), EntrantForm()
    if request.method == "POST":
        action = request.POST.get("action")
        if action == "create_token":
            token_form = TokenForm(request.POST)
            if token_form.is_valid():
                _, new_key = token_create(user=request.user, name=token_form.cleaned_data["name"])
        elif action == "revoke_token":
            revoked = token_revoke(user=request.user, token_id=request.POST.get("token", ""))
            messages.success(request, "Token revoked." if revoked else "That token was already gone.")
            return redirect("profile")
        elif action == "create_entrant":
            entrant_form = EntrantForm(request.POST)
            if entrant_form.is_valid():
                try:
                    entrant_create(owner=request.user, **entrant_form.cleaned_data)
                    messages.success(request, f"Entrant {entrant_form.cleaned_data['name']!r} created.")
                    return redirect("profile")
                except SubmissionRejected as exc:
                    entrant_form.add_error("name", exc.errors[0].message)
    response = render(request, "core/profile.html", {
        "tokens": list(ApiToken.objects.filter(user=request.user).order_by("-created_at", "-id")),
        "entrants": list(Entrant.objects.filter(owner=request.user, team__isnull=True).order_by("created_at", "id")),
        "teams": list(Team.objects.filter(memberships__user=request.user).select_related("entrant", "benchmark")
                      .order_by("benchmark__title", "id")),
        "invites": selectors.invites_for(request.user),
        "addresses": selectors.email_addresses(request.user),
        "unverified": upload_refusal(request.user),
        "new_key": new_key,
        "webhooks": _webhooks_with_attempts(request.user, per_hook=3),
        "token_form": token_form,
        "entrant_form": entrant_form,
    }, status=400 if token_form.errors or entrant_form.errors else 200)
    if new_key is not None:
        # The key is shown this once: no browser or proxy may keep the page (Back would show it again).
        add_never_cache_headers(response)
    return response


@login_required
@require_http_methods(["GET", "POST"])
def account_delete_view(request):
    """Delete the account after the password is given again (``account_delete`` says what stays)."""
    form = AccountDeleteForm(request.POST or None, user=request.user)
    # The password check is allauth's "reauthenticate" (ACCOUNT_RATE_LIMITS, per account): unlimited, it let
    # whoever held a logged-in session guess the account's password here.
    if request.method == "POST" and not ratelimit.consume(request, action="reauthenticate", user=request.user):
        form = AccountDeleteForm(user=request.user)
        messages.error(request, "Too many password attempts for this account. Try again in a minute.")
        response = render(request, "account/account_delete.html", {"form": form}, status=429)
        response["Retry-After"] = "60"
        return response
    if request.method == "POST" and form.is_valid():
        username = request.user.username
        account_delete(user=request.user)
        logout(request)
        messages.success(request, f"The account {username} is deleted. Its entrants stay on past boards under "
                                  "neutral names; its tokens no longer work.")
        return redirect("benchmark_list")
    return render(request, "account/account_delete.html", {"form": form}, status=400 if form.errors else 200)


def _answer(request, fail_to: str, action, success: str):
    """Run a team service; a refusal becomes an error message. Always back to ``fail_to``."""
    try:
        action()
        messages.success(request, success)
    except SubmissionRejected as exc:
        messages.error(request, "; ".join(e.message for e in exc.errors))
    return redirect(fail_to)


@require_http_methods(["GET", "POST"])
def team_page(request, slug):
    """The benchmark's teams; for a signed-in user, their team (members, invites, the audit log,
    invite and leave) or the form to create one, and their invites to this benchmark's teams."""
    b = _benchmark(request, slug)
    team = team_of(request.user, b) if request.user.is_authenticated else None
    here = reverse("team_page", args=[b.slug])
    team_form, invite_form = TeamForm(), InviteForm()
    if request.method == "POST":
        if not request.user.is_authenticated:
            return redirect(f"{reverse('login')}?next={here}")
        action = request.POST.get("action")
        if action == "create":
            team_form = TeamForm(request.POST)
            if team_form.is_valid():
                name = team_form.cleaned_data["name"]
                return _answer(request, here, lambda: team_create(user=request.user, benchmark=b, name=name),
                               f"Team {name} created: your uploads to {b.title} now count for it.")
        elif action == "invite" and team is not None:
            invite_form = InviteForm(request.POST)
            if invite_form.is_valid():
                who = invite_form.cleaned_data["username"]
                return _answer(request, here, lambda: team_invite(team=team, by=request.user, username=who),
                               f"Invited {who}: they answer on their profile or this page.")
        elif action == "leave" and team is not None:
            return _answer(request, here, lambda: team_leave(team=team, user=request.user),
                           f"You left team {team.entrant.name}; your next uploads to {b.title} are your own.")
    return render(request, "core/team.html", {
        "benchmark": b, "team": selectors.team_view(team, viewer=request.user) if team else None,
        "teams": selectors.teams_of(b), "team_form": team_form, "invite_form": invite_form,
        "invites": selectors.invites_for(request.user, benchmark=b) if request.user.is_authenticated else [],
        "remaining_today": quota_remaining(user=request.user, benchmark=b) if request.user.is_authenticated else None,
    }, status=400 if team_form.errors or invite_form.errors else 200)


@login_required
@require_http_methods(["GET", "POST"])
def invite_answer(request, pk):
    """Accept or decline an invite (``action``), then back to the team page of its benchmark (at
    once for a GET, as verify_page)."""
    invite = get_object_or_404(TeamInvite.objects.select_related("team__entrant", "team__benchmark"),
                               pk=pk, user=request.user)
    back = reverse("team_page", args=[invite.team.benchmark.slug])
    if request.method != "POST":
        return redirect(back)
    name = invite.team.entrant.name
    if request.POST.get("action") == "accept":
        return _answer(request, back, lambda: invite_accept(invite_id=invite.pk, user=request.user),
                       f"You joined team {name}: your uploads to {invite.team.benchmark.title} now count for it.")
    return _answer(request, back, lambda: invite_decline(invite_id=invite.pk, user=request.user),
                   f"You declined the invite to team {name}.")


def fairplay_page(request, slug):
    """Staff only (404 for anyone else): the benchmark's identical uploads and correlated pairs;
    ``?threshold=`` (above 0, at most 1) looks below or above the configured one."""
    if not request.user.is_staff:
        raise Http404("no such page")
    b = _benchmark(request, slug)
    threshold, error = settings.FAIRPLAY_CORRELATION_THRESHOLD, None
    if request.GET.get("threshold"):
        try:
            threshold = float(request.GET["threshold"])
            if not 0 < threshold <= 1:
                raise ValueError
        except ValueError:
            threshold, error = settings.FAIRPLAY_CORRELATION_THRESHOLD, "the threshold is a number above 0, at most 1"
    report = fairplay_report(b, threshold=threshold)
    kind = b.kind_impl
    return render(request, "core/fairplay.html", {
        "benchmark": b, "report": report, "error": error, "default_threshold": settings.FAIRPLAY_CORRELATION_THRESHOLD,
        "standings_rule": kind.leaderboard_note(b.config) if kind.is_round_kind else None,
    }, status=400 if error else 200)


def favicon(request):
    """``/favicon.ico``, which browsers ask of pages that name no icon (the admin's, the API's): the site's icon."""
    return redirect(static("core/favicon.svg"), permanent=True)


def bad_request(request, exception=None):
    """A 400 page that says what was wrong with the request (a ``BadRequest`` raised by a view says it)."""
    message = str(exception) if isinstance(exception, BadRequest) and str(exception) else (
        "The request could not be understood.")
    return HttpResponseBadRequest(render_to_string("400.html", {"message": message}))


def server_error(request):
    """The answer to an unhandled exception, which django.request has logged with its traceback.

    JSON for the API, a short page otherwise; both name the request id, which
    the log line carries too, so a report can be matched to its traceback.
    """
    failure = sys.exc_info()[1]  # Django calls this handler while it handles the exception
    if failure is not None and answers_503(failure):  # in a middleware: 503 like the views' (leaderboard/core/outage.py)
        return outage_response(request, failure)
    request_id = getattr(request, "request_id", "-")
    message = f"Server error. If you report it, quote the request id {request_id}."
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": message, "errors": [{"row": None, "column": None, "message": message}],
                             "request_id": request_id}, status=500)
    try:
        html: str = render_to_string("500.html", {"request_id": request_id})
    except Exception:  # the error may be in the templates themselves
        html = f"<!doctype html><title>Server error</title><h1>Server error</h1><p>{message}</p>"
    return HttpResponseServerError(html)


# -- notifications ---------------------------------------------------------------------

def _webhooks_with_attempts(user, *, per_hook: int) -> list[dict]:
    return [{"hook": hook, "attempts": delivery.webhook_attempts(hook, limit=per_hook)}
            for hook in Webhook.objects.filter(user=user).order_by("created_at", "id")]


@login_required
@require_http_methods(["GET", "POST"])
def notification_settings(request):
    """Which events are mailed, and the account's webhooks (add, remove, enable again)."""
    errors: list[str] = []
    created = None
    if request.method == "POST":
        action = request.POST.get("action")
        try:
            if action == "mail":
                for kind in NotificationEvent.Kind.values:
                    mail_preference_set(user=request.user, kind=kind, email=request.POST.get(f"mail_{kind}") == "on")
                messages.success(request, "Mail settings saved.")
                return redirect("notification_settings")
            if action == "add_webhook":
                created = webhook_create(user=request.user, url=request.POST.get("url", ""),
                                         events=request.POST.getlist("events"),
                                         secret=request.POST.get("secret") or None)
            elif action in ("remove_webhook", "enable_webhook"):
                hook = get_object_or_404(Webhook, pk=_posted_id(request, "webhook"), user=request.user)
                if action == "remove_webhook":
                    webhook_remove(webhook=hook)
                    messages.success(request, f"Webhook {hook.url} removed.")
                else:
                    webhook_enable(webhook=hook)
                    messages.success(request, f"Webhook {hook.url} enabled again.")
                return redirect("notification_settings")
        except SubmissionRejected as exc:
            errors = [e.message for e in exc.errors]
    prefs = mail_preferences(request.user)
    response = render(request, "notifications/settings.html", {
        "kinds": [(k, label, prefs[k]) for k, label in NotificationEvent.Kind.choices],
        "webhooks": _webhooks_with_attempts(request.user, per_hook=5),
        "errors": errors, "created": created, "has_email": bool(request.user.email),
        "form": request.POST if errors else {},
        # A refused webhook keeps the events chosen, not the defaults a first visit offers.
        "form_events": (request.POST.getlist("events") if errors and request.POST.get("action") == "add_webhook"
                        else None),
    }, status=400 if errors else 200)
    if created is not None:
        add_never_cache_headers(response)  # the secret is shown this once, as a new API token is
    return response


@login_required
@require_http_methods(["GET", "POST"])
def webhook_deliveries(request, pk):
    """Every attempt of one of the viewer's webhooks, newest first; redeliver any delivery."""
    hook = get_object_or_404(Webhook, pk=pk, user=request.user)
    if request.method == "POST":
        found = get_object_or_404(WebhookDelivery, pk=_posted_id(request, "delivery"), webhook=hook)
        delivery_redeliver(delivery=found)
        messages.success(request, f"Delivery {found.pk} queued to be sent again.")
        return redirect("webhook_deliveries", pk=hook.pk)
    return render(request, "notifications/deliveries.html", {
        "hook": hook, "attempts": delivery.webhook_attempts(hook, limit=500)})


def _posted_id(request, name: str) -> int:
    """The id a form posts as ``name``; 0 (which names nothing, so a 404) for anything that is not one."""
    value = request.POST.get(name, "")
    return int(value) if value.isascii() and value.isdigit() and len(value) < 19 else 0


@csrf_exempt  # one-click unsubscribe from a mail program (RFC 8058) posts without a session
@require_http_methods(["GET", "POST"])
def notifications_unsubscribe(request, token):
    """The link in every mail: stops mail for that kind of event, logged in or not."""
    found = delivery.unsubscribe_read(token)
    if found is None:
        return render(request, "notifications/unsubscribed.html", {"bad": True}, status=400)
    user_id, kind = found
    user = get_object_or_404(get_user_model(), pk=user_id)
    mail_preference_set(user=user, kind=kind, email=request.POST.get("resubscribe") == "1")
    return render(request, "notifications/unsubscribed.html", {
        "kind_label": NotificationEvent.Kind(kind).label, "resubscribed": request.POST.get("resubscribe") == "1",
        "token": token})
