"""The FOCUS export over HTTP: validate the period, stream the CSV (chargeback.focus)."""
from __future__ import annotations

from django.conf import settings
from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.renderers import JSONRenderer
from rest_framework.views import APIView

from portal.api.fields import CharField, IntegerField
from provisioning.choices import Strategy

from ..focus.columns import DEFAULT_VERSION, VERSIONS
from ..focus.export import focus_csv_lines, focus_filename
from ..focus.query import focus_columns, focus_provider, focus_query, focus_rows
from ..periods import period_error
from .views import CSVRenderer


class FocusQueryInputSerializer(serializers.Serializer):
    start = serializers.DateField(input_formats=["%Y-%m-%d"], help_text="first day, YYYY-MM-DD (00:00 UTC, included)")
    end = serializers.DateField(input_formats=["%Y-%m-%d"], help_text="day after the last, YYYY-MM-DD (excluded)")
    version = serializers.ChoiceField(
        choices=VERSIONS, required=False, default=DEFAULT_VERSION,
        help_text="FOCUS version of the columns: 1.0 (what the FinOps Foundation's validator checks), or 1.1 / 1.2 "
                  "with the columns they add")
    team = CharField(required=False, help_text="only this team (slug)")
    cost_center = CharField(required=False)
    cluster = CharField(required=False)
    strategy = serializers.ChoiceField(choices=Strategy.values, required=False)
    gpu_model = CharField(required=False)
    request = IntegerField(required=False, min_value=1)

    def validate(self, data):
        error = period_error(data["start"], data["end"], max_days=settings.CHARGEBACK_MAX_REPORT_DAYS)
        if error:
            raise serializers.ValidationError({"end": [error]})
        return data

    def filters(self) -> dict:
        return {k: self.validated_data[k] for k in ("team", "cost_center", "cluster", "strategy", "gpu_model", "request")
                if k in self.validated_data}


class FocusExportView(APIView):
    renderer_classes = [JSONRenderer, CSVRenderer]

    @extend_schema(
        parameters=[FocusQueryInputSerializer],
        responses={(200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description="FOCUS CSV")},
        summary="The ledger as a FOCUS dataset (CSV, streamed): one row per charge line, the teams you see",
    )
    def get(self, request):
        params = FocusQueryInputSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        data = params.validated_data
        query = focus_query(user=request.user, start=data["start"], end=data["end"], filters=params.filters())
        names = focus_columns(data["version"])
        lines = focus_csv_lines(focus_rows(query, version=data["version"], provider=focus_provider()), columns=names)
        response = StreamingHttpResponse(lines, content_type="text/csv; charset=utf-8")
        filename = focus_filename(start=data["start"], end=data["end"], version=data["version"])
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        return response
