from django.urls import path

from . import views

app_name = "capacity"
urlpatterns = [
    path("capacity/", views.capacity_page, name="page"),
]
