from django.urls import path
from .routers import PortalRouter

from . import views

router = PortalRouter()
router.register("tokens", views.ApiTokenViewSet, basename="api-token")

urlpatterns = [
    path("ops/ping/", views.WorkerPingView.as_view(), name="ops-ping"),
    path("teams/<slug:slug>/webhook/", views.TeamWebhookView.as_view(), name="team-webhook"),
    path("teams/<slug:slug>/webhook/rotate-secret/", views.TeamWebhookSecretRotateView.as_view(),
         name="team-webhook-rotate-secret"),
    *router.urls,
]
