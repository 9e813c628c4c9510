from django.urls import path

from . import views

app_name = "web"
urlpatterns = [
    path("", views.home, name="home"),
    path("approvals/", views.approval_queue, name="approval-queue"),
    path("requests/", views.request_list, name="request-list"),
    path("requests/new/", views.request_new, name="request-new"),
    path("requests/preview/", views.request_preview, name="request-preview"),
    path("requests/<int:pk>/", views.request_detail, name="request-detail"),
    path("requests/<int:pk>/live/", views.request_live, name="request-live"),
    path("requests/<int:pk>/cancel/", views.request_cancel, name="request-cancel"),
    path("requests/<int:pk>/extend-lease/", views.request_lease_extend, name="request-lease-extend"),
]
