from django.urls import path

from . import views

urlpatterns = [
    path("ops/ping/", views.WorkerPingView.as_view(), name="ops-ping"),
]
