"""Entrants: the names a user competes under (the first is created with the account,
``account_create``), and a team's one entrant on its benchmark.

An upload names one of its user's own entrants, or none for the first; a member of a team
uploads as the team on that team's benchmark, always (``entrant_resolve``).
"""
from __future__ import annotations

import unicodedata
from typing import cast

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction

from scoring.errors import RowError

from leaderboard.core.inputs import BadInput, text_check, text_problem
from leaderboard.core.models import Entrant, Team
from leaderboard.core.services.answers import SubmissionRejected

ENTRANT_NAME_MAX = cast(int, Entrant._meta.get_field("name").max_length)


def account_create(*, username: str, email: str, password: str):
    """A new participant's account (the password hashed) and its first entrant, in one transaction.
    The caller has validated the three (the signup form: a free username, a password the
    validators accept)."""
    with transaction.atomic():
        user = get_user_model()(username=username, email=email)
        user.set_password(password)
        user.save()
        entrant_default(user)
    return user


def entrant_default(user) -> Entrant:
    """The user's first entrant, created (named after the user) if they have none.

    Safe under concurrency: two requests creating it at once collapse on the
    unique name, and the loser reads the winner's row. A username longer than
    an entrant name may be is shortened.
    """
    entrant = Entrant.objects.filter(owner=user, team__isnull=True).order_by("created_at", "id").first()
    if entrant is not None:
        return entrant
    for suffix in range(1, 100):
        tail = "" if suffix == 1 else f"-{suffix}"
        name = user.username[:ENTRANT_NAME_MAX - len(tail)] + tail
        try:
            with transaction.atomic():
                return Entrant.objects.create(owner=user, name=name)
        except IntegrityError:
            mine = Entrant.objects.filter(owner=user, team__isnull=True).order_by("created_at", "id").first()
            if mine is not None:
                return mine
    raise RuntimeError(f"could not find a free entrant name for {user.username!r}")


# A deleted account's entrants are renamed former-entrant-<id> and its username becomes deleted-<id>-<hex>
# (services/accounts.py): names that start so are kept for them, so that no one poses as a deleted account
# or takes, ahead of time, the name a deletion is to give (which made the deletion fail).
DELETED_ENTRANT_PREFIX = "former-entrant-"
DELETED_USERNAME_PREFIX = "deleted-"


# Characters that draw nothing (or reorder what is drawn) in a name: Unicode's format characters (zero-width
# space and joiners, soft hyphen, the bidirectional overrides and isolates, the byte-order mark) and the
# blank Hangul fillers. "al\u200bice" reads as "alice" on every board while the name check sees another name.
_INVISIBLE_LETTERS = frozenset("\u115f\u1160\u3164\uffa0")
# The zero-width non-joiner and joiner are part of writing some names (Persian words; emoji such as
# U+1F469 U+200D U+1F4BB): allowed between two characters that are not ASCII, never beside an ASCII one.
_JOINERS = frozenset("\u200c\u200d")


def invisible_name_problem(name: str) -> str | None:
    """Why ``name`` may not be chosen (it holds a character that is not seen, or that reorders the
    text around it, so it could pass for another entrant's name), or None."""
    for i, char in enumerate(name):
        if char in _JOINERS and 0 < i < len(name) - 1 and not (name[i - 1].isascii() or name[i + 1].isascii()):
            continue  # joining what it stands between, as in an emoji sequence or Persian script
        if unicodedata.category(char) == "Cc":  # the C1 controls (U+0080-U+009F; the C0 ones are refused before)
            return f"contains the control character U+{ord(char):04X}; remove it"
        if unicodedata.category(char) == "Cf" or char in _INVISIBLE_LETTERS:
            return (f"contains the invisible character U+{ord(char):04X}, which would let the name pass for "
                    "another; remove it")
    return None


def reserved_name_problem(name: str, *, prefix: str = DELETED_ENTRANT_PREFIX) -> str | None:
    """Why ``name`` may not be chosen (it starts as a deleted account's names do), or None."""
    if name.strip().lower().startswith(prefix):
        return f"names starting with {prefix!r} are kept for deleted accounts; choose another"
    return None


def entrant_create(*, owner, name: str, description: str = "") -> Entrant:
    """A new entrant; 400 for a bad name, 409 when the name (ignoring case) is taken.

    The unique index decides, so two concurrent creations of one name give one
    entrant and one 409, never an error.
    """
    # Folded as Django folds usernames (NFKC): "ｂob" in full-width letters is "bob", whose name may be taken.
    name = unicodedata.normalize("NFKC", name).strip()
    if not name:
        raise SubmissionRejected([RowError("an entrant needs a name", column="name")])
    try:
        text_check(name, field="name", max_length=ENTRANT_NAME_MAX)
        text_check(description, field="description", max_length=Entrant._meta.get_field("description").max_length,
                   allow_newlines=True)
    except BadInput as exc:
        raise SubmissionRejected([RowError(f"the {exc.where} {exc.message}", column=exc.where)]) from None
    reserved = reserved_name_problem(name) or invisible_name_problem(name)
    if reserved:
        raise SubmissionRejected([RowError(f"the name {name!r}: {reserved}", column="name")])
    taken = SubmissionRejected([RowError(f"the name {name!r} is taken", column="name")], status=409)
    if Entrant.objects.filter(name__iexact=name).exists():
        raise taken
    try:
        with transaction.atomic():
            return Entrant.objects.create(owner=owner, name=name, description=description)
    except IntegrityError:
        raise taken from None


def team_of(user, benchmark) -> Team | None:
    """The team ``user`` competes in on ``benchmark``, or None (competing alone)."""
    if benchmark is None:
        return None
    return Team.objects.select_related("entrant").filter(memberships__user=user, benchmark=benchmark).first()


def entrant_resolve(user, entrant: str | int | None, *, benchmark=None) -> Entrant:
    """The entrant an upload counts for: on a benchmark where ``user`` is in a team, the team's
    (naming anything else is a 409 saying so); otherwise the one of the user's own entrants
    named (by name or id), or their first."""
    team = team_of(user, benchmark)
    if team is not None:
        if entrant in (None, "") or str(entrant) in (team.entrant.name, str(team.entrant_id)):
            return team.entrant
        where = (f"you compete on {benchmark.slug} in team {team.entrant.name}: your uploads there count for the "
                 f"team (send no entrant, or {team.entrant.name!r})")
        text = str(entrant)
        own = Entrant.objects.filter(owner=user, team__isnull=True)
        if isinstance(entrant, (str, int)) and not isinstance(entrant, bool) and (
                own.filter(name=text).exists()
                or (text.isascii() and text.isdigit() and len(text) < 19 and own.filter(pk=int(text)).exists())):
            message = f"{where}; to upload as {entrant!r} leave the team first"
        else:
            message = f"you own no entrant called {entrant!r}; {where}"
        raise SubmissionRejected([RowError(message, column="entrant")], status=409)
    if entrant in (None, ""):
        return entrant_default(user)
    if isinstance(entrant, bool) or not isinstance(entrant, (str, int)):
        raise SubmissionRejected([RowError("entrant must be the name or id of one of your entrants",
                                           column="entrant")])
    text = str(entrant)
    problem = text_problem(text, allow_newlines=False)
    if problem or len(text) > ENTRANT_NAME_MAX:
        reason = problem or f"is {len(text):,} characters long; names have at most {ENTRANT_NAME_MAX}"
        raise SubmissionRejected([RowError(f"entrant {reason}", column="entrant")])
    qs = Entrant.objects.filter(owner=user, team__isnull=True)
    found = qs.filter(pk=int(text)).first() if text.isascii() and text.isdigit() and len(text) < 19 else None
    found = found or qs.filter(name=text).first()
    if found is None:
        raise SubmissionRejected(
            [RowError(f"you own no entrant called {entrant!r}", column="entrant")], status=400
        )
    return found


def entrant_flag(*, name: str, benchmark_model: bool) -> Entrant:
    """Mark (or unmark) an entrant as a benchmark model: it counts in the benchmark meta model."""
    entrant = Entrant.objects.filter(name=name).first()
    if entrant is None:
        raise SubmissionRejected([RowError(f"no entrant is called {name!r}", column="entrant")], status=404)
    Entrant.objects.filter(pk=entrant.pk).update(is_benchmark_model=benchmark_model)
    entrant.is_benchmark_model = benchmark_model
    return entrant
