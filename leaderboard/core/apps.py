from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "leaderboard.core"
    label = "core"
    verbose_name = "Leaderboard"
