"""The project's URLs plus /boom/ and /api/boom/, which raise: an unhandled exception on demand."""
from django.urls import include, path


class BoomError(RuntimeError):
    pass


def boom(request):
    raise BoomError("boom, for the logging test")


urlpatterns = [path("boom/", boom), path("api/boom/", boom), path("", include("leaderboard.urls"))]
handler500 = "leaderboard.core.views.server_error"
