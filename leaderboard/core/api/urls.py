from django.urls import path

from leaderboard.core.api import rounds, teams, views

urlpatterns = [
    path("benchmarks/", views.BenchmarkList.as_view(), name="api-benchmarks"),
    path("benchmarks/<slug:slug>/", views.BenchmarkDetail.as_view(), name="api-benchmark"),
    path("benchmarks/<slug:slug>/leaderboard/", views.Leaderboard.as_view(), name="api-leaderboard"),
    path("benchmarks/<slug:slug>/cases/", views.BenchmarkCases.as_view(), name="api-cases"),
    path("benchmarks/<slug:slug>/training/", views.BenchmarkTraining.as_view(), name="api-training"),
    path("benchmarks/<slug:slug>/submissions/", views.SubmissionCreateOrList.as_view(), name="api-submissions"),
    path("benchmarks/<slug:slug>/verify/", views.Verify.as_view(), name="api-verify"),
    path("benchmarks/<slug:slug>/rounds/", rounds.RoundList.as_view(), name="api-rounds"),
    path("benchmarks/<slug:slug>/rounds/<int:n>/", rounds.RoundDetail.as_view(), name="api-round"),
    path("benchmarks/<slug:slug>/rounds/<int:n>/universe/", rounds.RoundUniverse.as_view(), name="api-round-universe"),
    path("benchmarks/<slug:slug>/rounds/<int:n>/record/", rounds.RoundRecord.as_view(), name="api-round-record"),
    path("benchmarks/<slug:slug>/rounds/<int:n>/close/", rounds.RoundClose.as_view(), name="api-round-close"),
    path("benchmarks/<slug:slug>/rounds/<int:n>/stakes/", rounds.RoundStakes.as_view(), name="api-round-stakes"),
    path("benchmarks/<slug:slug>/rounds/<int:n>/truth/", rounds.RoundTruth.as_view(), name="api-round-truth"),
    path("benchmarks/<slug:slug>/rounds/<int:n>/leaderboard/", rounds.RoundLeaderboard.as_view(),
         name="api-round-leaderboard"),
    path("benchmarks/<slug:slug>/rounds/<int:n>/history/", rounds.RoundHistory.as_view(), name="api-round-history"),
    path("benchmarks/<slug:slug>/comparison-sets/", rounds.ComparisonSets.as_view(), name="api-comparison-sets"),
    path("benchmarks/<slug:slug>/teams/", teams.TeamListCreate.as_view(), name="api-teams"),
    path("teams/<int:pk>/", teams.TeamDetail.as_view(), name="api-team"),
    path("teams/<int:pk>/invites/", teams.TeamInviteCreate.as_view(), name="api-team-invites"),
    path("teams/<int:pk>/leave/", teams.TeamLeave.as_view(), name="api-team-leave"),
    path("invites/", teams.InviteList.as_view(), name="api-invites"),
    path("invites/<int:pk>/accept/", teams.InviteAccept.as_view(), name="api-invite-accept"),
    path("invites/<int:pk>/decline/", teams.InviteDecline.as_view(), name="api-invite-decline"),
    path("submissions/<int:pk>/", views.SubmissionDetail.as_view(), name="api-submission"),
    path("submissions/<int:pk>/cases/", views.SubmissionCases.as_view(), name="api-submission-cases"),
    path("submissions/<int:pk>/select/", views.SubmissionSelect.as_view(), name="api-submission-select"),
]
