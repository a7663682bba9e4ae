from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "leaderboard.core"
    label = "core"
    verbose_name = "Leaderboard"

    def ready(self) -> None:
        # Register the Celery tasks in every process: the services publish them by name
        # (leaderboard.core.taskqueue), and where tasks run eagerly (the tests) Celery runs the one
        # registered under that name.
        # Every save or deletion of a benchmark drops its cached boards and pages (boardcache): the
        # admin edits a benchmark (published or not, its title, its slug) without a service, and a
        # public answer is served from the cache alone, so it must not outlive such a change.
        from django.db.models.signals import post_delete, post_save  # noqa: PLC0415 -- kept beside their one use

        from leaderboard.core import tasks  # noqa: F401, PLC0415 -- needs the app registry, which is ready only now

        post_save.connect(_benchmark_changed, sender="core.Benchmark", dispatch_uid="boards-benchmark-saved")
        post_delete.connect(_benchmark_changed, sender="core.Benchmark", dispatch_uid="boards-benchmark-deleted")
        # A staff-made account's address, which allauth records unverified the first time its owner
        # opens the email page or resets the password, stays verified as the account was.
        post_save.connect(_email_address_saved, sender="account.EmailAddress", dispatch_uid="staff-address-synced")


def _benchmark_changed(sender, instance, **kwargs) -> None:
    from leaderboard.core.boardcache import boards_changed  # noqa: PLC0415 -- the cache needs settings loaded

    boards_changed(instance.pk)


def _email_address_saved(sender, instance, created, **kwargs) -> None:
    if created:
        from leaderboard.core.services.accounts import email_address_synced  # noqa: PLC0415 -- needs the app registry

        email_address_synced(instance)
