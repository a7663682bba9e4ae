"""django-allauth adapted to the site: a new account gets its first entrant (named after it),
an address longer than the database column is a form error, not a server error, a username
may not start as a deleted account's names do (``deleted-``, ``former-entrant-``), and an
account's last address cannot be removed (an account with no address on record counts as
one made by staff, which may upload without verifying: removing an unverified sign-up's only
address would lift the refusal). A mail server that cannot be reached is said on the page, not a
server error."""
from __future__ import annotations

import logging
import unicodedata

from allauth.account.adapter import DefaultAccountAdapter
from allauth.account.models import EmailAddress
from allauth.core import context as allauth_context
from django import forms
from django.contrib import messages
from django.contrib.auth import get_user_model

from leaderboard.core.services.entrants import (
    DELETED_ENTRANT_PREFIX,
    DELETED_USERNAME_PREFIX,
    entrant_default,
    reserved_name_problem,
)

log = logging.getLogger("leaderboard.accounts")

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

    def send_mail(self, template_prefix: str, email: str, context: dict) -> None:
        """Send, or, when the mail server cannot be reached or refuses, say so on the next page: the
        sign-up, reset or change is done and its mail can be asked for again (it was a server error
        after the account was made, and signing up again said the username was taken)."""
        try:
            super().send_mail(template_prefix, email, context)
        except OSError as exc:  # smtplib's errors, refused connections and timeouts
            log.warning("could not mail %s (%s): %s: %s", email, template_prefix, type(exc).__name__, exc)
            request = getattr(allauth_context, "request", None)
            if request is not None:
                messages.error(request, f"We could not send the mail to {email} just now (the mail server did not "
                                        "take it). Try again in a few minutes: the verification link can be sent "
                                        "again from your email page, a reset link from this page.")

    def save_user(self, request, user, form, commit=True):
        user = super().save_user(request, user, form, commit=commit)
        if commit:
            entrant_default(user)
        return user
