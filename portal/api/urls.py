from django.urls import path
from rest_framework.routers import SimpleRouter

from . import views

router = SimpleRouter()
router.register("tokens", views.ApiTokenViewSet, basename="api-token")

urlpatterns = [
    path("ops/ping/", views.WorkerPingView.as_view(), name="ops-ping"),
    *router.urls,
]
