"""Accounts: whether an account may upload yet, marking an address verified, deleting an account.

Sign-up, the verification mail, password reset and email change are django-allauth's
(``leaderboard/core/adapters.py`` adapts it). An account made by sign-up has an email
address on record and may upload once one is verified. Accounts made by staff (the admin,
``createsuperuser``, ``apitoken --create``, the demo) have no address to verify and count
as verified.
"""
from __future__ import annotations

import re
import secrets

from allauth.account.models import EmailAddress
from django.contrib.auth import get_user_model
from django.db import transaction

from leaderboard.core.boardcache import boards_changed
from leaderboard.core.models import (
    ApiToken,
    Entrant,
    LeaderboardRow,
    StandingRow,
    TeamEvent,
    TeamInvite,
    Webhook,
)
from leaderboard.core.services.entrants import DELETED_ENTRANT_PREFIX, DELETED_USERNAME_PREFIX
from leaderboard.core.services.teams import teams_leave_all


def upload_refusal(user) -> str | None:
    """Why ``user`` may not upload yet (an address on record, none verified), or None."""
    addresses = list(EmailAddress.objects.filter(user=user).order_by("-primary", "id").values_list("email", "verified"))
    if not addresses or any(verified for _, verified in addresses):
        return None
    return (f"verify your email address first: open the link we mailed to {addresses[0][0]} "
            "(or send a new one from /accounts/email/). Browsing and downloads stay open meanwhile.")


def email_address_synced(address: EmailAddress) -> None:
    """A staff-made account's address, recorded by allauth when its owner first opens the email page,
    resets the password or logs in: it counts as verified, as the account did before (nobody mailed a
    link to open). Such a row is allauth's sync of ``user.email`` (neither primary nor verified, the
    account's only one); a sign-up's or an email change's address is never that and stays unverified."""
    if address.verified or address.primary:
        return
    user = address.user
    if (user.email or "").strip().lower() != address.email.strip().lower():
        return
    if EmailAddress.objects.filter(user_id=user.pk).exclude(pk=address.pk).exists():
        return
    EmailAddress.objects.filter(pk=address.pk).update(verified=True, primary=True)
    address.verified = address.primary = True


def email_mark_verified(*, user, email: str) -> None:
    """Record ``email`` as the user's verified primary address (demo users, staff tools)."""
    user.email = email
    get_user_model().objects.filter(pk=user.pk).update(email=email)
    EmailAddress.objects.update_or_create(user=user, email=email, defaults={"verified": True, "primary": True})


def account_delete(*, user) -> None:
    """Delete an account as far as its history allows.

    What it did stays where others rely on it: its entrants stay on past boards under a
    neutral name (``former-entrant-<id>``), its submissions and scores stay. What is
    personal goes: the username becomes ``deleted-<id>-<random>``; email addresses,
    names and the password go (which also ends every session); API tokens are deleted;
    its webhooks (with their logs) are removed; the account can no longer log in; it leaves its teams (an audit event of each) and
    its pending invites are declined; the audit logs of the teams it was in or invited to name it by its new name.
    """
    with transaction.atomic():
        user = get_user_model().objects.select_for_update().get(pk=user.pk)
        teams_leave_all(user)
        entrants = list(Entrant.objects.filter(owner=user, team__isnull=True).values_list("pk", flat=True))
        for pk in entrants:
            name = f"{DELETED_ENTRANT_PREFIX}{pk}"
            if Entrant.objects.filter(name__iexact=name).exclude(pk=pk).exists():  # taken before names were kept
                name = f"{name}-{secrets.token_hex(3)}"
            Entrant.objects.filter(pk=pk).update(name=name, description="")
        ApiToken.objects.filter(user=user).delete()
        Webhook.objects.filter(user=user).delete()  # with their deliveries: no event goes out any more
        EmailAddress.objects.filter(user=user).delete()
        old_name = user.username
        user.username = f"{DELETED_USERNAME_PREFIX}{user.pk}-{secrets.token_hex(4)}"
        _team_logs_renamed(user, old_name, user.username)
        user.email = user.first_name = user.last_name = ""
        user.is_active = False
        user.set_unusable_password()
        user.save()
        shown = set(LeaderboardRow.objects.filter(entrant_id__in=entrants).values_list("round__benchmark_id", flat=True))
        shown |= set(StandingRow.objects.filter(entrant_id__in=entrants).values_list("benchmark_id", flat=True))
        for benchmark_id in sorted(shown):
            boards_changed(benchmark_id)  # the boards show the new names at once


def _team_logs_renamed(user, old: str, new: str) -> None:
    """Every audit line of the teams ``user`` was in, invited to or invited others to that names
    them (``old invited bob``, ``accepted old's invite``, ``old left``) names them ``new`` instead."""
    teams = set(TeamEvent.objects.filter(user=user).values_list("team_id", flat=True))
    teams |= set(TeamInvite.objects.filter(user=user).values_list("team_id", flat=True))
    teams |= set(TeamInvite.objects.filter(invited_by=user).values_list("team_id", flat=True))
    # The name as a whole word: not inside a longer username (those are letters, digits and @.+-_).
    pattern = re.compile(rf"(?<![\w.@+-]){re.escape(old)}(?![\w@+-])(?!\.[\w@+-])")
    for pk, detail in TeamEvent.objects.filter(team_id__in=teams, detail__contains=old).values_list("pk", "detail"):
        renamed = pattern.sub(new, detail)
        if renamed != detail:
            TeamEvent.objects.filter(pk=pk).update(detail=renamed)
