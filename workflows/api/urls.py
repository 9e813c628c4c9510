from django.urls import path
from portal.api.routers import PortalRouter

from . import backstage, views

router = PortalRouter()
router.register("requests", views.RequestViewSet, basename="request")
router.register("policy/versions", views.PolicyVersionViewSet, basename="policy-version")

urlpatterns = [
    path("intake/questionnaire/", views.QuestionnaireView.as_view(), name="questionnaire"),
    path("intake/preview/", views.PreviewView.as_view(), name="preview"),
    path("policy/", views.PolicyView.as_view(), name="policy"),
    path("backstage/entities/", backstage.BackstageEntitiesView.as_view(), name="backstage-entities"),
    *router.urls,
]
