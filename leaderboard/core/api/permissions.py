"""Named permissions of the API (beside DRF's own)."""
from __future__ import annotations

from rest_framework import permissions


class IsStaff(permissions.BasePermission):
    """Organisers only (``is_staff``)."""

    message = "only organisers (staff tokens) may do this"

    def has_permission(self, request, view):
        return bool(request.user and request.user.is_authenticated and request.user.is_staff)
