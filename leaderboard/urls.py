from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from leaderboard.core import views

urlpatterns = [
    path("", views.benchmark_list, name="benchmark_list"),
    path("favicon.ico", views.favicon, name="favicon"),
    path("b/<slug:slug>/", views.benchmark_detail, name="benchmark_detail"),
    path("b/<slug:slug>/submit/", views.submit, name="submit"),
    path("b/<slug:slug>/rounds/<int:number>/", views.round_detail, name="round_detail"),
    path("b/<slug:slug>/comparison-sets/", views.comparison_sets, name="comparison_sets"),
    path("b/<slug:slug>/verify/", views.verify_page, name="verify"),
    path("b/<slug:slug>/example/", views.benchmark_example, name="benchmark_example"),
    path("b/<slug:slug>/cases/", views.benchmark_cases, name="benchmark_cases"),
    path("b/<slug:slug>/training/", views.benchmark_training, name="benchmark_training"),
    path("b/<slug:slug>/cases/<str:case_id>/", views.case_detail, name="case_detail"),
    path("submissions/", views.my_submissions, name="my_submissions"),
    path("submissions/<int:pk>/", views.submission_detail, name="submission_detail"),
    path("submissions/<int:pk>/select/", views.submission_select_view, name="submission_select"),
    path("b/<slug:slug>/team/", views.team_page, name="team_page"),
    path("b/<slug:slug>/fair-play/", views.fairplay_page, name="fairplay"),
    path("invites/<int:pk>/answer/", views.invite_answer, name="invite_answer"),
    # Ours first: sign-up and login behind the per-address throttles; then django-allauth's
    # (email verification, password reset and change, email change).
    path("accounts/signup/", views.ThrottledSignupView.as_view(), name="signup"),
    path("accounts/login/", views.ThrottledLoginView.as_view(), name="login"),
    path("accounts/logout/", views.LogoutPage.as_view(), name="logout"),
    path("accounts/profile/", views.profile, name="profile"),
    path("notifications/", views.notification_settings, name="notification_settings"),
    path("notifications/webhooks/<int:pk>/", views.webhook_deliveries, name="webhook_deliveries"),
    path("notifications/unsubscribe/<str:token>/", views.notifications_unsubscribe, name="notifications_unsubscribe"),
    path("accounts/delete/", views.account_delete_view, name="account_delete"),
    path("accounts/", include("allauth.urls")),
    path("api/", include("leaderboard.core.api.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    # The admin's login behind the login form's throttle (one budget for both), then the admin.
    path("admin/login/", views.admin_login, name="admin_login"),
    path("admin/", admin.site.urls),
]

handler400 = "leaderboard.core.views.bad_request"
handler500 = "leaderboard.core.views.server_error"
