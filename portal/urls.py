from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from . import health, metrics, oidc, views
from .api.exceptions import api_not_found
from .api.views import MeView

api_v1 = [
    path("me/", MeView.as_view(), name="me"),
    path("", include("workflows.api.urls")),
    path("", include("provisioning.api.urls")),
    path("", include("portal.api.urls")),
    path("", include("chargeback.api.urls")),
    path("", include("register.api.urls")),  # platform decision register
]

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("metrics", metrics.metrics_view, name="metrics"),
    path("admin/", admin.site.urls),
    path("accounts/login/", oidc.LoginView.as_view(), name="login"),
    path("oidc/", include(oidc.urlpatterns)),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/tokens/", views.token_list, name="tokens"),
    path("accounts/tokens/<int:pk>/revoke/", views.token_revoke, name="token-revoke"),
    path("api/v1/", include(api_v1)),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # The split view serves Swagger UI's start-up script as a file (?script), not inline: the CSP allows no inline script.
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="swagger-ui"),
    path("", include("chargeback.urls")),
    path("", include("register.urls")),  # platform decision register
    path("", include("provisioning.urls")),  # the capacity page
    re_path(r"^api/", api_not_found),
    path("", include("workflows.urls")),
]

handler403 = "portal.error_pages.permission_denied"
handler500 = "portal.error_pages.server_error"
