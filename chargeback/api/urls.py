from django.urls import path
from rest_framework.routers import SimpleRouter

from . import focus_views, request_views, views

router = SimpleRouter()
router.register("chargeback/rate-cards", views.RateCardViewSet, basename="rate-card")
router.register("chargeback/intervals", views.UsageIntervalViewSet, basename="usage-interval")
router.register("chargeback/adjustments", views.AdjustmentViewSet, basename="adjustment")
router.register("chargeback/credits", views.HardwareCreditViewSet, basename="hardware-credit")
router.register("chargeback/closed-periods", views.ClosedPeriodViewSet, basename="closed-period")
router.register("chargeback/collections", views.UsageCollectionViewSet, basename="usage-collection")
router.register("chargeback/budgets", views.BudgetViewSet, basename="budget")
# /requests/{id}/rightsizing/: beside intake's request routes, under the same name (request-rightsizing).
router.register("requests", request_views.RequestRightsizingViewSet, basename="request")

urlpatterns = [
    path("chargeback/report/", views.ReportView.as_view(), name="chargeback-report"),
    path("chargeback/focus/", focus_views.FocusExportView.as_view(), name="chargeback-focus"),
    *router.urls,
]
