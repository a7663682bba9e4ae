import os

from celery import Celery
from celery.signals import worker_process_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")

app = Celery("leaderboard")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["leaderboard.core"])


@worker_process_init.connect
def _warm_up(**kwargs):
    # Import the kinds (numpy, scipy, pandas) when a pool process starts, not
    # during the first upload it scores.
    from scoring.kinds import kind_names

    kind_names()
