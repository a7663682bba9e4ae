import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")
django_application = get_wsgi_application()

# Import the views, the API and the kinds now, when a server process starts,
# rather than during the first request it answers.
from django.urls import get_resolver  # noqa: E402

from scoring.kinds import kind_names  # noqa: E402

from leaderboard.replay import PublicReplay  # noqa: E402

get_resolver().url_patterns  # noqa: B018 -- reading it imports the URLconf: the views and the API
kind_names()

# The commonest public reads answered from the whole stack's own earlier answer (issue 26).
application = PublicReplay(django_application)
