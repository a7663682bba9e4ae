"""API of webhooks: register, list, remove; every attempt of one; redeliver.

The same services as the notification settings page (``leaderboard/core/services/notifications.py``)
and the same reads (``leaderboard/core/delivery.py``). A caller sees only their own webhooks.
"""
from __future__ import annotations

from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import permissions, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from scoring.errors import RowError

from leaderboard.core import delivery
from leaderboard.core.api import serializers as s
from leaderboard.core.api.errors import error_response
from leaderboard.core.models import Webhook, WebhookDelivery
from leaderboard.core.services.answers import SubmissionRejected
from leaderboard.core.services.notifications import EVENTS, delivery_redeliver, webhook_create, webhook_remove

REFUSALS = {400: s.ErrorsSerializer, 404: s.ErrorsSerializer, 409: s.ErrorsSerializer}


class WebhookCreateSerializer(serializers.Serializer):
    url = serializers.CharField(help_text="https:// (or http://) URL that receives the POSTs")
    secret = serializers.CharField(required=False, help_text="16 to 200 characters; left out, one is made "
                                                             "and returned once")
    events = serializers.ListField(child=serializers.ChoiceField(choices=EVENTS))


class WebhookCreatedSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    url = serializers.CharField()
    events = serializers.ListField(child=serializers.CharField())
    secret = serializers.CharField(required=False, help_text="only when the server made it")


class WebhookSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    url = serializers.CharField()
    events = serializers.ListField(child=serializers.CharField())
    active = serializers.BooleanField()
    disabled_at = serializers.DateTimeField(allow_null=True)
    disabled_reason = serializers.CharField(allow_blank=True)
    created_at = serializers.DateTimeField()


class AttemptSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    delivery = serializers.IntegerField(help_text="the delivery's id, for redeliver")
    event = serializers.CharField()
    event_id = serializers.CharField(help_text="the payload's id and X-Leaderboard-Delivery")
    status_code = serializers.IntegerField(allow_null=True)
    attempt = serializers.IntegerField()
    ok = serializers.BooleanField()
    delivered_at = serializers.DateTimeField(help_text="when this attempt was made")
    error = serializers.CharField(allow_blank=True)
    duration_ms = serializers.IntegerField()
    state = serializers.CharField(help_text="the delivery's: pending, delivered or failed")
    next_attempt_at = serializers.DateTimeField(allow_null=True)


class RedeliveredSerializer(serializers.Serializer):
    delivery = serializers.IntegerField()
    state = serializers.CharField()


def _own_webhook(request, pk) -> Webhook:
    hook = Webhook.objects.filter(pk=pk, user=request.user).first()
    if hook is None:
        raise Http404(f"no webhook {pk} of yours: it does not exist, or it belongs to another account "
                      "(GET /api/webhooks/ lists yours)")
    return hook


def _view(hook: Webhook) -> dict:
    return {"id": hook.pk, "url": hook.url, "events": hook.events, "active": hook.is_active,
            "disabled_at": hook.disabled_at, "disabled_reason": hook.disabled_reason, "created_at": hook.created_at}


class WebhookListCreate(APIView):
    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(responses=WebhookSerializer(many=True), summary="The caller's webhooks")
    def get(self, request):
        return Response([_view(h) for h in Webhook.objects.filter(user=request.user).order_by("created_at", "id")])

    @extend_schema(request=WebhookCreateSerializer, responses={201: WebhookCreatedSerializer, **REFUSALS},
                   summary="Register a webhook: signed POSTs of the events named")
    def post(self, request):
        data = request.data if hasattr(request.data, "get") else {}
        events = data.getlist("events") if hasattr(data, "getlist") else data.get("events")
        secret = data.get("secret")
        if secret is not None and not isinstance(secret, str):  # a number or a list is not taken as its text
            return error_response([RowError("secret: give it as a string of 16 to 200 characters (or leave it "
                                            "out and one is made)", column="secret")], 400)
        try:
            hook = webhook_create(user=request.user, url=str(data.get("url") or ""), events=events,
                                  secret=secret or None)
        except SubmissionRejected as exc:
            return error_response(exc.errors, exc.status)
        body = {"id": hook.pk, "url": hook.url, "events": hook.events}
        if not secret:
            body["secret"] = hook.secret
        return Response(body, status=status.HTTP_201_CREATED)


class WebhookDetail(APIView):
    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(responses={200: WebhookSerializer, 404: s.ErrorsSerializer}, summary="One of the caller's webhooks")
    def get(self, request, pk):
        return Response(_view(_own_webhook(request, pk)))

    @extend_schema(request=None, responses={204: None, 404: s.ErrorsSerializer}, summary="Remove a webhook and its log")
    def delete(self, request, pk):
        webhook_remove(webhook=_own_webhook(request, pk))
        return Response(status=status.HTTP_204_NO_CONTENT)


class WebhookDeliveries(APIView):
    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(responses={200: AttemptSerializer(many=True), 404: s.ErrorsSerializer},
                   summary="Every attempt (newest first, at most 500): event, status_code, attempt, "
                           "delivered_at, error")
    def get(self, request, pk):
        hook = _own_webhook(request, pk)
        return Response(delivery.webhook_attempts(hook, limit=500))


class WebhookRedeliver(APIView):
    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(request=None, responses={202: RedeliveredSerializer, 404: s.ErrorsSerializer},
                   summary="Send a delivery again now, whatever became of it")
    def post(self, request, pk, delivery_id):
        hook = _own_webhook(request, pk)
        found = WebhookDelivery.objects.filter(pk=delivery_id, webhook=hook).first()
        if found is None:
            raise Http404(f"webhook {pk} has no delivery {delivery_id} (GET /api/webhooks/{pk}/deliveries/ "
                          "lists its attempts, each with its delivery)")
        delivery_redeliver(delivery=found)
        return Response({"delivery": found.pk, "state": WebhookDelivery.State.PENDING}, status=status.HTTP_202_ACCEPTED)
