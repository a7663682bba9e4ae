from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from leaderboard.core.services.entrants import entrant_default
from leaderboard.core.services.tokens import token_create


class Command(BaseCommand):
    help = "Print a new API token for USERNAME (use it as 'Authorization: Token KEY')."

    def add_arguments(self, parser):
        parser.add_argument("username", help="the account the token acts as")
        parser.add_argument("--create", action="store_true",
                            help="create the user if missing (no password, no email: it counts as verified)")
        parser.add_argument("--staff", action="store_true", help="make the user staff (organiser)")
        parser.add_argument("--name", default="command line", help="a label for the token")

    def handle(self, *args, username, create, staff, name, **options):
        User = get_user_model()
        user = User.objects.filter(username=username).first()
        if user is None:
            if not create:
                raise CommandError(f"no user {username!r}; add --create to create one")
            user = User.objects.create_user(username=username)
        if staff and not user.is_staff:
            user.is_staff = True
            user.save(update_fields=["is_staff"])
        entrant_default(user)
        _, key = token_create(user=user, name=name)
        self.stdout.write(key)
