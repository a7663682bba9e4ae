from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from leaderboard.core import views

urlpatterns = [
    path("", views.benchmark_list, name="benchmark_list"),
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
    path("accounts/signup/", views.signup, name="signup"),
    path("accounts/login/", views.ThrottledLoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/profile/", views.profile, name="profile"),
    path("api/", include("leaderboard.core.api.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    path("admin/", admin.site.urls),
]

handler400 = "leaderboard.core.views.bad_request"
handler500 = "leaderboard.core.views.server_error"
