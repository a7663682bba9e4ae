from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "leaderboard.core"
    label = "core"
    verbose_name = "Leaderboard"

    def ready(self) -> None:
        # Register the Celery tasks in every process: the services publish them by name
        # (leaderboard.core.taskqueue), and where tasks run eagerly (the tests) Celery runs the one
        # registered under that name.
        from leaderboard.core import tasks  # noqa: F401, PLC0415 -- needs the app registry, which is ready only now
