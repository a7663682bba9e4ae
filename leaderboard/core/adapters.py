"""django-allauth adapted to the site: a new account gets its first entrant (named after it),
an address longer than the database column is a form error, not a server error, a username
may not start as a deleted account's names do (``deleted-``, ``former-entrant-``), and an
account's last address cannot be removed (an account with no address on record counts as
one made by staff, which may upload without verifying: removing an unverified sign-up's only
address would lift the refusal)."""
from __future__ import annotations

import unicodedata

from allauth.account.adapter import DefaultAccountAdapter
from allauth.account.models import EmailAddress
from django import forms
from django.contrib.auth import get_user_model

from leaderboard.core.services.entrants import (
    DELETED_ENTRANT_PREFIX,
    DELETED_USERNAME_PREFIX,
    entrant_default,
    reserved_name_problem,
)

EMAIL_MAX_LENGTH: int = get_user_model()._meta.get_field("email").max_length or 254


class AccountAdapter(DefaultAccountAdapter):
    def clean_email(self, email: str) -> str:
        if len(email) > EMAIL_MAX_LENGTH:
            raise forms.ValidationError(f"An email address has at most {EMAIL_MAX_LENGTH} characters.")
        return super().clean_email(email)

    def clean_username(self, username, shallow=False):
        # Folded as Django folds the usernames it makes (NFKC): "ｂob" in full-width letters is "bob".
        username = unicodedata.normalize("NFKC", username)
        for prefix in (DELETED_ENTRANT_PREFIX, DELETED_USERNAME_PREFIX):
            problem = reserved_name_problem(username, prefix=prefix)
            if problem:
                raise forms.ValidationError(f"Usernames starting with {prefix!r} are kept for deleted accounts; "
                                            "choose another.")
        return super().clean_username(username, shallow=shallow)

    def can_delete_email(self, email_address) -> bool:
        if email_address.pk and not EmailAddress.objects.filter(user_id=email_address.user_id).exclude(
                pk=email_address.pk).exists():
            return False
        return super().can_delete_email(email_address)

    def save_user(self, request, user, form, commit=True):
        user = super().save_user(request, user, form, commit=commit)
        if commit:
            entrant_default(user)
        return user
