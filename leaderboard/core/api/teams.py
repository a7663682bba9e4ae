"""API of teams: create and list a benchmark's teams, invite, accept or decline, leave.

The same services as the team page (``leaderboard/core/services/teams.py``); a refusal is a
409 (or 403, 404) whose message says why, with the merge rule's arithmetic when it is that.
"""
from __future__ import annotations

from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import permissions, status
from rest_framework.response import Response
from rest_framework.views import APIView

from scoring.errors import RowError

from leaderboard.core import selectors
from leaderboard.core.api import serializers as s
from leaderboard.core.api.errors import error_response
from leaderboard.core.models import Team, TeamInvite
from leaderboard.core.services.answers import SubmissionRejected
from leaderboard.core.services.teams import invite_accept, invite_decline, team_create, team_invite, team_leave

REFUSALS = {400: s.ErrorsSerializer, 403: s.ErrorsSerializer, 404: s.ErrorsSerializer, 409: s.ErrorsSerializer}


def _text_field(request, name: str):
    """A string field of the JSON or form body, or a 400 Response naming it."""
    value = request.data.get(name) if hasattr(request.data, "get") else None
    if not isinstance(value, str) or not value.strip():
        return None, error_response([RowError(f"give {name} as a non-empty string", column=name)], 400)
    return value.strip(), None


def _team(request, pk) -> Team:
    """A team of a benchmark the caller may see (404 otherwise)."""
    team = (Team.objects.select_related("entrant", "benchmark")
            .filter(benchmark__in=selectors.benchmarks_for(request.user), pk=pk).first())
    if team is None:
        raise Http404(f"no team {pk}: it does not exist, or its benchmark is not open to you "
                      "(GET /api/benchmarks/{slug}/teams/ lists a benchmark's teams)")
    return team


class TeamListCreate(APIView):
    permission_classes = [permissions.IsAuthenticatedOrReadOnly]

    @extend_schema(responses=s.TeamSerializer(many=True), summary="The benchmark's teams with their members")
    def get(self, request, slug):
        return Response(selectors.teams_of(selectors.benchmark_for(request.user, slug)))

    @extend_schema(request=s.TeamCreateSerializer, responses={201: s.TeamSerializer, **REFUSALS},
                   summary="Create a team; the caller is its first member (409 when already in a team here)")
    def post(self, request, slug):
        b = selectors.benchmark_for(request.user, slug)
        name, error = _text_field(request, "name")
        if error:
            return error
        try:
            team = team_create(user=request.user, benchmark=b, name=name)
        except SubmissionRejected as exc:
            return error_response(exc.errors, exc.status)
        return Response(selectors.team_view(team, viewer=request.user), status=status.HTTP_201_CREATED)


class TeamDetail(APIView):
    permission_classes = [permissions.AllowAny]

    @extend_schema(responses={200: s.TeamSerializer, 404: s.ErrorsSerializer},
                   summary="One team: members; for its members also the pending invites and the audit log")
    def get(self, request, pk):
        return Response(selectors.team_view(_team(request, pk), viewer=request.user))


class TeamInviteCreate(APIView):
    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(request=s.InviteCreateSerializer, responses={201: s.InviteCreatedSerializer, **REFUSALS},
                   summary="Invite a user to the team (members only)")
    def post(self, request, pk):
        team = _team(request, pk)
        username, error = _text_field(request, "username")
        if error:
            return error
        try:
            invite = team_invite(team=team, by=request.user, username=username)
        except SubmissionRejected as exc:
            return error_response(exc.errors, exc.status)
        return Response({"id": invite.pk}, status=status.HTTP_201_CREATED)


class TeamLeave(APIView):
    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(request=None, responses={200: s.TeamSerializer, **REFUSALS},
                   summary="Leave the team: from now on your uploads to its benchmark are your own")
    def post(self, request, pk):
        team = _team(request, pk)
        try:
            team_leave(team=team, user=request.user)
        except SubmissionRejected as exc:
            return error_response(exc.errors, exc.status)
        return Response(selectors.team_view(team, viewer=request.user))


class InviteList(APIView):
    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(responses=s.InviteSerializer(many=True), summary="Your pending invites")
    def get(self, request):
        return Response(selectors.invites_for(request.user))


def _invite_id(request, pk) -> int:
    if not TeamInvite.objects.filter(user=request.user, pk=pk).exists():
        raise Http404(f"no invite {pk} of yours: it does not exist, or it was sent to someone else "
                      "(GET /api/invites/ lists your pending invites)")
    return int(pk)


class InviteAccept(APIView):
    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(request=None, responses={200: s.TeamSerializer, **REFUSALS},
                   summary="Join the invite's team (409 saying why when it cannot be: full, past the merge "
                           "deadline, already in a team, or over the merge allowance, with the arithmetic)")
    def post(self, request, pk):
        try:
            team = invite_accept(invite_id=_invite_id(request, pk), user=request.user)
        except SubmissionRejected as exc:
            return error_response(exc.errors, exc.status)
        return Response(selectors.team_view(team, viewer=request.user))


class InviteDecline(APIView):
    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(request=None, responses={200: s.InviteDeclinedSerializer, **REFUSALS},
                   summary="Decline the invite")
    def post(self, request, pk):
        invite_id = _invite_id(request, pk)
        try:
            invite_decline(invite_id=invite_id, user=request.user)
        except SubmissionRejected as exc:
            return error_response(exc.errors, exc.status)
        return Response({"id": invite_id, "status": "declined"})
