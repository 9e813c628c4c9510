from django.urls import path

from . import views

app_name = "chargeback"
urlpatterns = [
    path("chargeback/", views.report, name="report"),
    path("chargeback/teams/<slug:slug>/", views.team_report, name="team-report"),
]
