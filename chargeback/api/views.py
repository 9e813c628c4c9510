"""Thin API views: validate the query, call one selector or service, serialize (or stream the CSV)."""
from __future__ import annotations

from django.http import StreamingHttpResponse
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.renderers import BaseRenderer, BrowsableAPIRenderer, JSONRenderer
from rest_framework.permissions import BasePermission, IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from portal.roles import sees_all_teams

from .. import budget_services, budgets, selectors, services
from ..exporters import csv_filename, csv_lines
from ..filtersets import RateCardFilterSet, UsageIntervalFilterSet
from .serializers import (
    AdjustmentSerializer,
    BudgetDetailSerializer,
    BudgetInputSerializer,
    BudgetSerializer,
    ClosedPeriodSerializer,
    ClosePeriodInputSerializer,
    HardwareCreditSerializer,
    RateCardSerializer,
    ReportQueryInputSerializer,
    ReportSerializer,
    UsageCollectionSerializer,
    UsageIntervalSerializer,
)


class CSVRenderer(BaseRenderer):
    """Lets `?format=csv` through content negotiation; the view streams the body itself."""

    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return data if isinstance(data, (bytes, str)) else b""


def report_csv_response(*, user, params: ReportQueryInputSerializer, now=None) -> StreamingHttpResponse:
    data = params.validated_data
    query = selectors.report_query(user=user, start=data["start"], end=data["end"], group_by=data["group_by"],
                                   now=now, filters=params.filters())
    lines = csv_lines(selectors.report_iter(query), columns=query.columns, shown=query.csv_columns,
                      start=data["start"], end=data["end"])
    response = StreamingHttpResponse(lines, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{csv_filename(start=data["start"], end=data["end"])}"'
    return response


class ReportView(APIView):
    renderer_classes = [JSONRenderer, BrowsableAPIRenderer, CSVRenderer]

    @extend_schema(
        parameters=[ReportQueryInputSerializer],
        responses={200: ReportSerializer, (200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description="CSV")},
        summary="GPU-hours and cost for a period, grouped; format=csv streams the same rows as CSV",
    )
    def get(self, request):
        params = ReportQueryInputSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        data = params.validated_data
        if data["format"] == "csv":
            return report_csv_response(user=request.user, params=params)
        now = timezone.now()
        rows = selectors.report_rows(user=request.user, start=data["start"], end=data["end"],
                                     group_by=data["group_by"], now=now, filters=params.filters())
        body = {"start": data["start"], "end": data["end"], "group_by": selectors.ordered_group_by(data["group_by"]),
                "generated_at": now, "rows": rows, "total": selectors.report_total(rows),
                "allocation_mismatches": selectors.allocation_mismatches(user=request.user, start=data["start"],
                                                                         end=data["end"])}
        return Response(ReportSerializer(body).data)


@extend_schema_view(list=extend_schema(summary="Rate cards: price per GPU-equivalent-hour by GPU model and strategy"))
class RateCardViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    """Rate cards, effective-dated (edited by the platform team and finance in the admin)."""

    serializer_class = RateCardSerializer
    filterset_class = RateCardFilterSet

    def get_queryset(self):
        return selectors.rate_card_list()


@extend_schema_view(list=extend_schema(summary="The metered usage intervals behind the report, with their flags"))
class UsageIntervalViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    """The metered intervals behind the report, one per pod (or segment); engineers see their teams'."""

    serializer_class = UsageIntervalSerializer
    filterset_class = UsageIntervalFilterSet

    def get_queryset(self):
        return selectors.interval_list(user=self.request.user)


@extend_schema_view(list=extend_schema(summary="Adjustments: late data booked into the next open month"))
class AdjustmentViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    serializer_class = AdjustmentSerializer

    def get_queryset(self):
        return selectors.adjustment_list(user=self.request.user)


@extend_schema_view(list=extend_schema(summary="Hardware-fault credits: failed runs on unhealthy devices, given back"))
class HardwareCreditViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    """Credits for GPU time lost to hardware faults, with the reason; finance reverses them in the admin."""

    serializer_class = HardwareCreditSerializer

    def get_queryset(self):
        return selectors.credit_list(user=self.request.user)


@extend_schema_view(list=extend_schema(summary="Closed months and their recorded totals"))
class ClosedPeriodViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    serializer_class = ClosedPeriodSerializer
    lookup_field = "month"

    def get_queryset(self):
        return selectors.closed_period_list()

    @extend_schema(request=ClosePeriodInputSerializer, responses={201: ClosedPeriodSerializer},
                   summary="Close a month (finance, platform): its lines are frozen from now on")
    def create(self, request):
        data = ClosePeriodInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        period = services.period_close(month=data.validated_data["month"], user=request.user)
        return Response(ClosedPeriodSerializer(period).data, status=status.HTTP_201_CREATED)


class SeesAllTeams(BasePermission):
    message = "Only finance and the platform team see this."

    def has_permission(self, request, view):
        return sees_all_teams(request.user)


@extend_schema_view(list=extend_schema(summary="Usage collection passes: counts, flags, errors (finance, platform)"))
class UsageCollectionViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    """Ingestion passes and what they changed (finance and platform)."""

    serializer_class = UsageCollectionSerializer
    permission_classes = [IsAuthenticated, SeesAllTeams]

    def get_queryset(self):
        return selectors.collection_list()



@extend_schema_view(
    list=extend_schema(summary="Budgets of the teams you see, newest month first (platform sets them; finance and "
                               "the team read)"),
    retrieve=extend_schema(summary="One budget with this month's forecast: spent, running work, pending approvals"),
)
class BudgetViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    serializer_class = BudgetDetailSerializer

    def get_serializer_class(self):
        return BudgetSerializer if self.action == "list" else BudgetDetailSerializer

    def get_queryset(self):
        return budgets.budget_list(user=self.request.user)

    @extend_schema(request=BudgetInputSerializer, responses={201: BudgetDetailSerializer},
                   summary="Set a team's budget for a month (platform team)")
    def create(self, request):
        data = BudgetInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        budget = budget_services.budget_create(user=request.user, **data.validated_data)
        return Response(BudgetDetailSerializer(budget).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=BudgetInputSerializer, responses={200: BudgetDetailSerializer},
                   summary="Change a budget (platform team); only the fields given change")
    def partial_update(self, request, pk=None):
        budget = self.get_object()
        data = BudgetInputSerializer(data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        budget = budget_services.budget_update(user=request.user, budget=budget, **data.validated_data)
        return Response(BudgetDetailSerializer(budget).data)

    @extend_schema(responses={204: None}, summary="Delete a budget (platform team)")
    def destroy(self, request, pk=None):
        budget_services.budget_delete(user=request.user, budget=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)
