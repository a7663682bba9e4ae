"""django-allauth adapted to the site: a new account gets its first entrant (named after it),
and an address longer than the database column is a form error, not a server error."""
from __future__ import annotations

from allauth.account.adapter import DefaultAccountAdapter
from django import forms
from django.contrib.auth import get_user_model

from leaderboard.core.services.entrants import entrant_default

EMAIL_MAX_LENGTH: int = get_user_model()._meta.get_field("email").max_length or 254


class AccountAdapter(DefaultAccountAdapter):
    def clean_email(self, email: str) -> str:
        if len(email) > EMAIL_MAX_LENGTH:
            raise forms.ValidationError(f"An email address has at most {EMAIL_MAX_LENGTH} characters.")
        return super().clean_email(email)

    def save_user(self, request, user, form, commit=True):
        user = super().save_user(request, user, form, commit=commit)
        if commit:
            entrant_default(user)
        return user
